/* The same kernel, y = a*x + b, on every element type (float, double, int,
 * uint, int64_t, uint64_t), checked exactly (the values are chosen so that
 * every result is exact, with or without fused multiply-add); scalars of
 * every type interleaved with arrays in one argument block; 2-D and 3-D
 * arrays of several types. */
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 3001

static const struct {
    hpl_type type;
    const char *glsl;
    size_t size;
} types[] = {
    {HPL_FLOAT32, "float", 4}, {HPL_FLOAT64, "double", 8},  {HPL_INT32, "int", 4},
    {HPL_UINT32, "uint", 4},   {HPL_INT64, "int64_t", 8},   {HPL_UINT64, "uint64_t", 8},
};

static hpl_kernel axpb_kernel(hpl_context *ctx, const char *t)
{
    char src[512];
    snprintf(src, sizeof src,
             "#include <hplvk.glsl>\n"
             "hpl_args { hpl_in(%s, 1) x; hpl_out(%s, 1) y; %s a; %s b; };\n"
             "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = a * hpl_at(x, i) + b; }\n",
             t, t, t, t);
    return th_kernel(ctx, src);
}

/* Host data and reference for one type; returns the scalars as hpl_args. */
static void make_case(hpl_type type, void *x, void *ref, hpl_arg *a, hpl_arg *b)
{
    switch (type) {
    case HPL_FLOAT32: {
        float *px = x, *pr = ref, va = 1.5f, vb = -2.25f;
        for (int i = 0; i < N; i++) {
            px[i] = (float)(i % 1000) * 0.5f - 250.0f;
            pr[i] = va * px[i] + vb;
        }
        *a = hpl_f32(va);
        *b = hpl_f32(vb);
        break;
    }
    case HPL_FLOAT64: { /* needs more than float's 24 bits of mantissa */
        double *px = x, *pr = ref, va = 3.0, vb = 0.125;
        for (int i = 0; i < N; i++) {
            px[i] = 1073741824.0 + (double)i + 0.25;
            pr[i] = va * px[i] + vb;
        }
        *a = hpl_f64(va);
        *b = hpl_f64(vb);
        break;
    }
    case HPL_INT32: {
        int32_t *px = x, *pr = ref, va = -3, vb = 7;
        for (int i = 0; i < N; i++) {
            px[i] = i * 1000 - 500000;
            pr[i] = va * px[i] + vb;
        }
        *a = hpl_i32(va);
        *b = hpl_i32(vb);
        break;
    }
    case HPL_UINT32: { /* wraps modulo 2^32 */
        uint32_t *px = x, *pr = ref, va = 2654435761u, vb = 0xfffffff0u;
        for (int i = 0; i < N; i++) {
            px[i] = (uint32_t)i * 40503u;
            pr[i] = va * px[i] + vb;
        }
        *a = hpl_u32(va);
        *b = hpl_u32(vb);
        break;
    }
    case HPL_INT64: {
        int64_t *px = x, *pr = ref, va = -(INT64_C(1) << 33) + 3, vb = (INT64_C(1) << 40) + 5;
        for (int i = 0; i < N; i++) {
            px[i] = (int64_t)i - 2000;
            pr[i] = va * px[i] + vb;
        }
        *a = hpl_i64(va);
        *b = hpl_i64(vb);
        break;
    }
    case HPL_UINT64: { /* wraps modulo 2^64 */
        uint64_t *px = x, *pr = ref, va = 0x100000001ull, vb = 0xffffffff00000000ull;
        for (int i = 0; i < N; i++) {
            px[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull;
            pr[i] = va * px[i] + vb;
        }
        *a = hpl_u64(va);
        *b = hpl_u64(vb);
        break;
    }
    default:
        break;
    }
}

static void print_elem(char *buf, size_t n, hpl_type type, const void *p, int i)
{
    switch (type) {
    case HPL_FLOAT32: snprintf(buf, n, "%.9g", ((const float *)p)[i]); break;
    case HPL_FLOAT64: snprintf(buf, n, "%.17g", ((const double *)p)[i]); break;
    case HPL_INT32: snprintf(buf, n, "%" PRId32, ((const int32_t *)p)[i]); break;
    case HPL_UINT32: snprintf(buf, n, "%" PRIu32, ((const uint32_t *)p)[i]); break;
    case HPL_INT64: snprintf(buf, n, "%" PRId64, ((const int64_t *)p)[i]); break;
    case HPL_UINT64: snprintf(buf, n, "%" PRIu64, ((const uint64_t *)p)[i]); break;
    default: snprintf(buf, n, "?"); break;
    }
}

static void axpb_all_types(hpl_context *ctx, const hpl_device_info *info)
{
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        hpl_type type = types[t].type;
        const char *name = types[t].glsl;
        CHECK(hpl_type_size(type) == types[t].size, "hpl_type_size(%s) = %zu", name, hpl_type_size(type));
        CHECK(strcmp(hpl_type_name(type), name) == 0, "hpl_type_name(%d) = \"%s\", want \"%s\"", type,
              hpl_type_name(type), name);
        if ((type == HPL_FLOAT64 && !info->float64) || ((type == HPL_INT64 || type == HPL_UINT64) && !info->int64)) {
            th_note("SKIPPED %s: the device reports no %s support", name, type == HPL_FLOAT64 ? "float64" : "int64");
            continue;
        }
        size_t es = types[t].size;
        void *x = malloc(es * N), *ref = malloc(es * N), *got = malloc(es * N);
        hpl_arg a, b;
        make_case(type, x, ref, &a, &b);
        hpl_kernel k = axpb_kernel(ctx, name);
        hpl_array ax = th_array(ctx, type, N, 0, 0), ay = th_array(ctx, type, N, 0, 0);
        CHECK_OK(hpl_array_write(ctx, ax, x, es * N));
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(ax), hpl_arr(ay), a, b)));
        if (CHECK_OK(hpl_array_read(ctx, ay, got, es * N))) {
            int bad = 0, first = -1;
            for (int i = 0; i < N; i++)
                if (memcmp((char *)got + es * i, (char *)ref + es * i, es) != 0 && bad++ == 0)
                    first = i;
            char g[64] = "", w[64] = "";
            if (first >= 0) {
                print_elem(g, sizeof g, type, got, first);
                print_elem(w, sizeof w, type, ref, first);
            }
            CHECK(bad == 0, "%s: y = a*x + b: %d wrong, first y[%d]=%s want %s", name, bad, first, g, w);
        }
        /* Reflection reports the element type of every argument. */
        hpl_arg_info ai;
        for (int i = 0; i < 4; i++)
            if (CHECK_OK(hpl_kernel_get_arg_info(ctx, k, i, &ai)))
                CHECK(ai.type == type, "%s kernel: argument %d has type %s", name, i, hpl_type_name(ai.type));
        CHECK_OK(hpl_array_destroy(ctx, ax));
        CHECK_OK(hpl_array_destroy(ctx, ay));
        CHECK_OK(hpl_kernel_destroy(ctx, k));
        free(x);
        free(ref);
        free(got);
    }
}

/* Scalars of every type interleaved with arrays: the argument block's
 * std140 layout (8-byte alignment of doubles and 64-bit integers) must be
 * what the library packs. */
static const char *mixed_src =
    "#include <hplvk.glsl>\n"
    "hpl_args {\n"
    "    float f;\n"
    "    hpl_out(double, 1) out_d;\n"
    "    double d;\n"
    "    int i;\n"
    "    hpl_in(uint, 1) in_u;\n"
    "    int64_t l;\n"
    "    uint u;\n"
    "    uint64_t ul;\n"
    "    float f2;\n"
    "    hpl_out(uint64_t, 1) out_l;\n"
    "};\n"
    "void main() {\n"
    "    if (hpl_global_id.x != 0) return;\n"
    "    hpl_at(out_d, 0) = double(f); hpl_at(out_d, 1) = d; hpl_at(out_d, 2) = double(i);\n"
    "    hpl_at(out_d, 3) = double(l); hpl_at(out_d, 4) = double(u); hpl_at(out_d, 5) = double(f2);\n"
    "    hpl_at(out_d, 6) = double(hpl_at(in_u, 0)); hpl_at(out_d, 7) = double(hpl_at(in_u, 1));\n"
    "    hpl_at(out_l, 0) = ul; hpl_at(out_l, 1) = uint64_t(l); hpl_at(out_l, 2) = uint64_t(d);\n"
    "}\n";

static void mixed_scalars(hpl_context *ctx)
{
    hpl_kernel k = th_kernel(ctx, mixed_src);
    CHECK(hpl_kernel_arg_count(ctx, k) == 10, "mixed kernel: %d arguments, want 10", hpl_kernel_arg_count(ctx, k));
    hpl_array od = th_array(ctx, HPL_FLOAT64, 8, 0, 0);
    hpl_array iu = th_array(ctx, HPL_UINT32, 2, 0, 0);
    hpl_array ol = th_array(ctx, HPL_UINT64, 3, 0, 0);
    uint32_t in[2] = {4000000000u, 77u};
    CHECK_OK(hpl_array_write(ctx, iu, in, sizeof in));
    float f = 1.5f, f2 = -0.5f;
    double d = 1099511627776.25; /* 2^40 + 0.25 */
    int32_t i = -7;
    int64_t l = -(INT64_C(1) << 45) - 3;
    uint32_t u = 3000000000u;
    uint64_t ul = 0xfedcba9876543210ull;
    /* One-element domain; the default would be out_d's 8 elements, also fine. */
    CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){.global = {1}},
                      HPL_ARGS(hpl_f32(f), hpl_arr(od), hpl_f64(d), hpl_i32(i), hpl_arr(iu), hpl_i64(l), hpl_u32(u),
                               hpl_u64(ul), hpl_f32(f2), hpl_arr(ol))));
    double gd[8];
    uint64_t gl[3];
    if (CHECK_OK(hpl_array_read(ctx, od, gd, sizeof gd)) && CHECK_OK(hpl_array_read(ctx, ol, gl, sizeof gl))) {
        const double want[8] = {f, d, i, (double)l, u, f2, in[0], in[1]};
        static const char *what[8] = {"float f", "double d", "int i", "int64_t l", "uint u", "float f2", "in_u[0]",
                                      "in_u[1]"};
        for (int j = 0; j < 8; j++)
            CHECK(gd[j] == want[j], "mixed scalars: %s arrived as %.17g, want %.17g", what[j], gd[j], want[j]);
        CHECK(gl[0] == ul, "mixed scalars: uint64_t ul arrived as %" PRIx64 ", want %" PRIx64, gl[0], ul);
        CHECK(gl[1] == (uint64_t)l, "mixed scalars: int64_t l arrived as %" PRIx64 ", want %" PRIx64, gl[1],
              (uint64_t)l);
        CHECK(gl[2] == (uint64_t)d, "mixed scalars: uint64_t(d) = %" PRIu64 ", want %" PRIu64, gl[2], (uint64_t)d);
    }
    CHECK_OK(hpl_array_destroy(ctx, od));
    CHECK_OK(hpl_array_destroy(ctx, iu));
    CHECK_OK(hpl_array_destroy(ctx, ol));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

/* 2-D and 3-D arrays: default domain = the first array's dimensions. */
static const char *idx3_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(int, 3) o; hpl_in(int64_t, 3) x; hpl_out(uint, 1) info; };\n"
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    hpl_at3(o, id.x, id.y, id.z) = int(id.x * 10000u + id.y * 100u + id.z) - int(hpl_at3(x, id.x, id.y, id.z));\n"
    "    if (all(equal(id, uvec3(0)))) {\n"
    "        hpl_at(info, 0) = o.dims.x; hpl_at(info, 1) = o.dims.y; hpl_at(info, 2) = o.dims.z;\n"
    "        hpl_at(info, 3) = o.stride.x; hpl_at(info, 4) = o.stride.y; hpl_at(info, 5) = o.stride.z;\n"
    "        hpl_at(info, 6) = hpl_global_size.x; hpl_at(info, 7) = hpl_global_size.y;\n"
    "        hpl_at(info, 8) = hpl_global_size.z;\n"
    "    }\n"
    "}\n";

static const char *t2d_src = /* transpose of a 2-D double array */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(double, 2) a; hpl_out(double, 2) t; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(t, id.y, id.x) = hpl_at2(a, id.x, id.y); }\n";

static void shapes(hpl_context *ctx)
{
    enum { D0 = 5, D1 = 7, D2 = 9 };
    hpl_kernel k = th_kernel(ctx, idx3_src);
    hpl_array o = th_array(ctx, HPL_INT32, D0, D1, D2);
    hpl_array x = th_array(ctx, HPL_INT64, D0, D1, D2);
    hpl_array info = th_array(ctx, HPL_UINT32, 9, 0, 0);
    int64_t *px = th_access(ctx, x, HPL_WRITE);
    if (px)
        for (int i = 0; i < D0 * D1 * D2; i++)
            px[i] = i % 13;
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(o), hpl_arr(x), hpl_arr(info))));
    const int32_t *po = th_access(ctx, o, HPL_READ);
    if (po) {
        int bad = 0, fi = -1;
        for (int i = 0; i < D0; i++)
            for (int j = 0; j < D1; j++)
                for (int l = 0; l < D2; l++) {
                    int lin = (i * D1 + j) * D2 + l;
                    if (po[lin] != i * 10000 + j * 100 + l - lin % 13 && bad++ == 0)
                        fi = lin;
                }
        CHECK(bad == 0, "3-D int array {5,7,9}: %d wrong, first linear index %d = %d", bad, fi, fi >= 0 ? po[fi] : 0);
    }
    const uint32_t *pi = th_access(ctx, info, HPL_READ);
    if (pi) {
        CHECK(pi[0] == D0 && pi[1] == D1 && pi[2] == D2, "3-D dims seen by the kernel: %u,%u,%u", pi[0], pi[1], pi[2]);
        CHECK(pi[3] == D1 * D2 && pi[4] == D2 && pi[5] == 1, "3-D strides seen by the kernel: %u,%u,%u, want %d,%d,1",
              pi[3], pi[4], pi[5], D1 * D2, D2);
        CHECK(pi[6] == D0 && pi[7] == D1 && pi[8] == D2, "default 3-D global domain %u,%u,%u, want 5,7,9", pi[6],
              pi[7], pi[8]);
    }
    CHECK_OK(hpl_array_destroy(ctx, o));
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, info));
    CHECK_OK(hpl_kernel_destroy(ctx, k));

    enum { R = 33, C = 70 };
    hpl_kernel kt = th_kernel(ctx, t2d_src);
    hpl_array a = th_array(ctx, HPL_FLOAT64, R, C, 0), t = th_array(ctx, HPL_FLOAT64, C, R, 0);
    double *pa = th_access(ctx, a, HPL_WRITE);
    if (pa)
        for (int i = 0; i < R * C; i++)
            pa[i] = i * 1.0000001;
    CHECK_OK(hpl_eval(ctx, kt, NULL, HPL_ARGS(hpl_arr(a), hpl_arr(t))));
    const double *pt = th_access(ctx, t, HPL_READ);
    if (pt) {
        int bad = 0;
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++)
                bad += pt[j * R + i] != (i * C + j) * 1.0000001;
        CHECK(bad == 0, "2-D double transpose 33x70: %d wrong", bad);
    }
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, t));
    CHECK_OK(hpl_kernel_destroy(ctx, kt));
}

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    hpl_device_info info;
    memset(&info, 0, sizeof info);
    CHECK_OK(hpl_device_get_info(ctx, 0, &info));
    th_note("device 0: %s, float64 %d, int64 %d", info.name, info.float64, info.int64);
    axpb_all_types(ctx, &info);
    if (info.float64 && info.int64)
        mixed_scalars(ctx);
    if (info.int64 && info.float64)
        shapes(ctx);
    return th_finish(ctx);
}
