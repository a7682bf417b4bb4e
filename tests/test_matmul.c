/* 2-D matrix product C = A * B (hpl_at2, 2-D global domain) against a host
 * reference in double precision; non-square sizes; default and explicit
 * global domain, library-chosen and given local size. */
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *matmul_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 2) c; hpl_in(float, 2) a; hpl_in(float, 2) b; int p; };\n"
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    float s = 0.0;\n"
    "    for (int k = 0; k < p; k++) s += hpl_at2(a, id.x, k) * hpl_at2(b, k, id.y);\n"
    "    hpl_at2(c, id.x, id.y) = s;\n"
    "}\n";

/* The same product using dims/stride from the kernel ABI instead of a
 * scalar: checks x.dims and x.stride for 2-D arrays. */
static const char *matmul_dims_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 2) a; hpl_in(float, 2) b; hpl_out(float, 2) c; hpl_out(uint, 1) info; };\n"
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    float s = 0.0;\n"
    "    for (uint k = 0; k < a.dims.y; k++) s += hpl_at2(a, id.x, k) * hpl_at2(b, k, id.y);\n"
    "    hpl_at2(c, id.x, id.y) = s;\n"
    "    if (id.x == 0 && id.y == 0) {\n"
    "        hpl_at(info, 0) = a.dims.x; hpl_at(info, 1) = a.dims.y;\n"
    "        hpl_at(info, 2) = c.stride.x; hpl_at(info, 3) = c.stride.y;\n"
    "        hpl_at(info, 4) = hpl_global_size.x; hpl_at(info, 5) = hpl_global_size.y;\n"
    "        hpl_at(info, 6) = hpl_domain_size.x; hpl_at(info, 7) = hpl_domain_size.y;\n"
    "        hpl_at(info, 8) = a.origin.x; hpl_at(info, 9) = a.origin.y;\n"
    "        hpl_at(info, 10) = hpl_subkernel_offset.x; hpl_at(info, 11) = hpl_subkernel_offset.y;\n"
    "    }\n"
    "}\n";

static double check_product(const float *c, const float *a, const float *b, int m, int p, int n, const char *what)
{
    double worst = 0;
    int wi = 0, wj = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < p; k++) {
                ref += (double)a[i * p + k] * (double)b[k * n + j];
                mag += fabs((double)a[i * p + k] * (double)b[k * n + j]);
            }
            double err = fabs((double)c[i * n + j] - ref) / (mag > 0 ? mag : 1.0);
            if (!(err <= worst)) { /* also catches NaN */
                worst = isnan(err) ? INFINITY : err;
                wi = i;
                wj = j;
            }
        }
    CHECK(worst < 1e-5, "%s: relative error %g at C[%d][%d] (got %g)", what, worst, wi, wj, c[wi * n + wj]);
    return worst;
}

static void run(hpl_context *ctx, int m, int p, int n)
{
    float *ha = malloc(sizeof(float) * m * p), *hb = malloc(sizeof(float) * p * n);
    for (int i = 0; i < m * p; i++)
        ha[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    for (int i = 0; i < p * n; i++)
        hb[i] = (float)((i * 53) % 97) / 40.0f - 1.2f;

    hpl_array a = th_array(ctx, HPL_FLOAT32, m, p, 0);
    hpl_array b = th_array(ctx, HPL_FLOAT32, p, n, 0);
    hpl_array c = th_array(ctx, HPL_FLOAT32, m, n, 0);
    CHECK_OK(hpl_array_write(ctx, a, ha, sizeof(float) * m * p));
    CHECK_OK(hpl_array_write(ctx, b, hb, sizeof(float) * p * n));
    float *hc = malloc(sizeof(float) * m * n);
    char what[128];

    /* Default domain: the first array argument's dimensions (c: m x n). */
    hpl_kernel k = th_kernel(ctx, matmul_src);
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(c), hpl_arr(a), hpl_arr(b), hpl_i32(p))));
    if (CHECK_OK(hpl_array_read(ctx, c, hc, sizeof(float) * m * n))) {
        snprintf(what, sizeof what, "%dx%d * %dx%d, default domain", m, p, p, n);
        check_product(hc, ha, hb, m, p, n, what);
    }

    /* Explicit 2-D global domain and an 8x8 local size (m, n not multiples). */
    float *pc = th_access(ctx, c, HPL_WRITE);
    if (pc)
        for (int i = 0; i < m * n; i++)
            pc[i] = NAN;
    CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){.global = {m, n}, .local = {8, 8}},
                      HPL_ARGS(hpl_arr(c), hpl_arr(a), hpl_arr(b), hpl_i32(p))));
    if (CHECK_OK(hpl_array_read(ctx, c, hc, sizeof(float) * m * n))) {
        snprintf(what, sizeof what, "%dx%d * %dx%d, global {%d,%d}, local {8,8}", m, p, p, n, m, n);
        check_product(hc, ha, hb, m, p, n, what);
    }

    /* dims/stride seen by the kernel. */
    hpl_kernel kd = th_kernel(ctx, matmul_dims_src);
    hpl_array info = th_array(ctx, HPL_UINT32, 12, 0, 0);
    uint32_t sentinel = 0xdeadbeefu; /* hpl_out is not fetched, but a kernel that wrote nothing shows */
    CHECK_OK(hpl_array_fill(ctx, info, &sentinel, 0));
    CHECK_OK(hpl_eval(ctx, kd, &(hpl_launch){.global = {m, n}},
                      HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_arr(c), hpl_arr(info))));
    if (CHECK_OK(hpl_array_read(ctx, c, hc, sizeof(float) * m * n))) {
        snprintf(what, sizeof what, "%dx%d * %dx%d via a.dims", m, p, p, n);
        check_product(hc, ha, hb, m, p, n, what);
    }
    uint32_t hi[12];
    if (CHECK_OK(hpl_array_read(ctx, info, hi, sizeof hi))) {
        CHECK(hi[0] == (uint32_t)m && hi[1] == (uint32_t)p, "a.dims = (%u,%u), want (%d,%d)", hi[0], hi[1], m, p);
        CHECK(hi[2] == (uint32_t)n && hi[3] == 1, "c.stride = (%u,%u), want (%d,1) (row-major)", hi[2], hi[3], n);
        CHECK(hi[4] == (uint32_t)m && hi[5] == (uint32_t)n, "hpl_global_size = (%u,%u), want (%d,%d)", hi[4],
              hi[5], m, n);
        CHECK(hi[6] == (uint32_t)m && hi[7] == (uint32_t)n, "hpl_domain_size = (%u,%u), want (%d,%d)", hi[6],
              hi[7], m, n);
        CHECK(hi[8] == 0 && hi[9] == 0, "a.origin = (%u,%u) for a whole array, want (0,0)", hi[8], hi[9]);
        CHECK(hi[10] == 0 && hi[11] == 0, "hpl_subkernel_offset = (%u,%u) on one device, want (0,0)", hi[10], hi[11]);
    }

    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_kernel_destroy(ctx, kd));
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_array_destroy(ctx, c));
    CHECK_OK(hpl_array_destroy(ctx, info));
    free(ha);
    free(hb);
    free(hc);
}

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    run(ctx, 67, 45, 83);
    run(ctx, 1, 300, 1);   /* a dot product as a 1x1 domain */
    run(ctx, 128, 64, 96);
    run(ctx, 3, 1, 257);   /* outer product */
    return th_finish(ctx);
}
