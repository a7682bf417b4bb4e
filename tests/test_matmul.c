/* 2-D matrix product C = A * B (hpl_at2, 2-D global domain) against a host
 * reference in double precision; non-square sizes; default and explicit
 * global domain, library-chosen and given local size. Then the samples'
 * tiled kernel (samples/matmul_host.h) compiled to accumulate, C += A x B,
 * as SUMMA runs it: over subarrays, one K panel per eval. */
#define _POSIX_C_SOURCE 200809L
#define SAMPLE_NAME "test_matmul"
#include "harness.h"

#include "../samples/matmul_host.h"

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

/* C += A x B by the accumulate kernel: C is m x n with C0 in it, the block
 * rows [r0, r0 + rows) x columns [c0, c0 + cols) of it is updated with
 * A(block rows, K) B(K, block columns) one panel of `kb` columns of A (rows
 * of B) at a time, each panel an eval over three subarrays. Everything
 * outside the block must stay C0. */
typedef struct acc_case {
    uint32_t m, n, k;            /* C m x n, A m x k, B k x n */
    uint32_t r0, rows, c0, cols; /* the block of C */
    uint32_t kb;                 /* panel width */
} acc_case;

static hpl_array sub2(hpl_context *ctx, hpl_array parent, uint64_t r0, uint64_t rows, uint64_t c0, uint64_t cols)
{
    hpl_array s = {0};
    CHECK_OK(hpl_subarray(ctx, parent, HPL_RANGES({r0, r0 + rows - 1}, {c0, c0 + cols - 1}), &s));
    return s;
}

/* The expected C of one element and the bound of its float error. */
static double accumulated(const acc_case *t, const float *a, const float *b, const float *c0, uint32_t i, uint32_t j,
                          double *tol)
{
    bool in_block = i >= t->r0 && i < t->r0 + t->rows && j >= t->c0 && j < t->c0 + t->cols;
    double ref = c0[(size_t)i * t->n + j], mag = fabs(ref);
    for (uint32_t k = 0; in_block && k < t->k; k++) {
        double prod = (double)a[(size_t)i * t->k + k] * (double)b[(size_t)k * t->n + j];
        ref += prod;
        mag += fabs(prod);
    }
    *tol = (t->k + 2) * FLT_EPSILON * mag;
    return ref;
}

static void run_accumulate(hpl_context *ctx, mm_tiles tiles, const acc_case *t)
{
    float *ha = malloc(mm_bytes(t->m, t->k)), *hb = malloc(mm_bytes(t->k, t->n));
    float *hc0 = malloc(mm_bytes(t->m, t->n)), *hc = malloc(mm_bytes(t->m, t->n));
    mm_fill_random(ha, (uint64_t)t->m * t->k, 1u);
    mm_fill_random(hb, (uint64_t)t->k * t->n, 2u);
    mm_fill_random(hc0, (uint64_t)t->m * t->n, 3u);
    char source[MM_KERNEL_SOURCE_CAP];
    hpl_kernel k = th_kernel(ctx, mm_kernel_source(source, sizeof source, MM_HPLVK_ARGS, tiles, true));
    hpl_array a = th_array(ctx, HPL_FLOAT32, t->m, t->k, 0);
    hpl_array b = th_array(ctx, HPL_FLOAT32, t->k, t->n, 0);
    hpl_array c = th_array(ctx, HPL_FLOAT32, t->m, t->n, 0);
    CHECK_OK(hpl_array_write(ctx, a, ha, mm_bytes(t->m, t->k)));
    CHECK_OK(hpl_array_write(ctx, b, hb, mm_bytes(t->k, t->n)));
    CHECK_OK(hpl_array_write(ctx, c, hc0, mm_bytes(t->m, t->n)));
    hpl_array c_blk = sub2(ctx, c, t->r0, t->rows, t->c0, t->cols);
    /* The kernel's domain: the block's rows, LY invocations per BN columns. */
    const uint32_t ly = mm_tiles_threads(tiles) / tiles.bm;
    hpl_launch launch = {.global = {t->rows, (t->cols + tiles.bn - 1) / tiles.bn * ly}};
    for (uint32_t k0 = 0; k0 < t->k; k0 += t->kb) {
        uint32_t width = t->k - k0 < t->kb ? t->k - k0 : t->kb;
        hpl_array a_panel = sub2(ctx, a, t->r0, t->rows, k0, width);
        hpl_array b_panel = sub2(ctx, b, k0, width, t->c0, t->cols);
        CHECK_OK(hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_arr(c_blk), hpl_arr(a_panel), hpl_arr(b_panel))));
        CHECK_OK(hpl_array_destroy(ctx, a_panel));
        CHECK_OK(hpl_array_destroy(ctx, b_panel));
    }
    if (CHECK_OK(hpl_array_read(ctx, c, hc, mm_bytes(t->m, t->n)))) {
        uint64_t bad = 0;
        uint32_t bi = 0, bj = 0;
        double bad_want = 0.0;
        for (uint32_t i = 0; i < t->m; i++)
            for (uint32_t j = 0; j < t->n; j++) {
                double tol, want = accumulated(t, ha, hb, hc0, i, j, &tol);
                if (!(fabs(hc[(size_t)i * t->n + j] - want) <= tol) && bad++ == 0)
                    bi = i, bj = j, bad_want = want;
            }
        CHECK(bad == 0,
              "C += A x B, tiles %ux%u, C %ux%u, block rows %u+%u columns %u+%u, panels of %u: %" PRIu64
              " wrong, first C[%u][%u] = %g, want %g",
              tiles.bm, tiles.bn, t->m, t->n, t->r0, t->rows, t->c0, t->cols, t->kb, bad, bi, bj,
              hc[(size_t)bi * t->n + bj], bad_want);
    }
    CHECK_OK(hpl_array_destroy(ctx, c_blk));
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_array_destroy(ctx, c));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    free(ha);
    free(hb);
    free(hc0);
    free(hc);
}

/* The accumulate kernel with two tile sets: vec4 rows (whole matrices, K
 * and N multiples of 4, panels on multiples of 4), and a block whose rows
 * and columns start at odd places (float loads and stores), panels that do
 * not divide K, several tiles along both dimensions. */
static void test_accumulate(hpl_context *ctx)
{
    hpl_device_info info;
    if (!CHECK_OK(hpl_device_get_info(ctx, 0, &info)))
        return;
    const mm_tiles sets[] = {mm_default_tiles, {32, 32, 8, 4, 4}};
    const acc_case cases[] = {
        {.m = 100, .n = 68, .k = 40, .r0 = 0, .rows = 100, .c0 = 0, .cols = 68, .kb = 16},
        {.m = 150, .n = 157, .k = 37, .r0 = 3, .rows = 140, .c0 = 5, .cols = 141, .kb = 12},
    };
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (mm_tiles_valid(sets[s], info.max_workgroup_invocations))
                run_accumulate(ctx, sets[s], &cases[i]);
}

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    run(ctx, 67, 45, 83);
    run(ctx, 1, 300, 1);   /* a dot product as a 1x1 domain */
    run(ctx, 128, 64, 96);
    run(ctx, 3, 1, 257);   /* outer product */
    test_accumulate(ctx);
    return th_finish(ctx);
}
