/*
 * matmul_rows — C = A x B split by rows over every device of the context
 * with one eval, the paper's fig. 5: eval(mxProduct)(PART1(c), PART1(a), b, P).
 *
 *   matmul_rows [m [n [p]]]     C is m x n, A is m x p, B is p x n
 *                               (default 301 257 253: m divisible by none
 *                               of 2, 3, 4, 5, 6, 8)
 *
 * C and A are split by rows (hpl_part1(c, 0), hpl_part1(a, 0)): device i
 * gets rows of both, the parts differing by at most one row, the larger
 * first; B is not annotated, so every device gets all of it. With m below
 * the device count the last devices get no part and run nothing. Prints
 * which rows each device got (hpl_array_part), and checks that against the
 * partition rule of section 7b.
 *
 * One eval warms up (compile, uploads); then `reps` evals are each timed
 * with the wait for C, and the best is reported as GFLOP/s (2*m*n*p
 * flops). C, read back whole (the library gathers the parts), is checked
 * against a host product in double precision with a relative tolerance:
 * |C - ref| <= (p + 2) * FLT_EPSILON * sum_k |A[i][k]| |B[k][j]| (the bound
 * for float summation), every element when m*n*p <= 2^28, else every row
 * at 64 columns.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "matmul_rows"
#include "sample_util.h"

#include <float.h>
#include <stdlib.h>

/* Each subkernel's domain is its part of c (the first argument): id.x a
 * row of the part, which is the same row of its part of a. */
static const char *mxproduct_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 2) c; hpl_in(float, 2) a; hpl_in(float, 2) b; int p; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x, j = hpl_global_id.y;\n"
    "    float s = 0.0;\n"
    "    for (uint k = 0u; k < uint(p); k++) s += hpl_at2(a, i, k) * hpl_at2(b, k, j);\n"
    "    hpl_at2(c, i, j) = s;\n"
    "}\n";

typedef struct mm_size {
    uint64_t m, n, p;
} mm_size;

static double absd(double x) { return x < 0.0 ? -x : x; }

/* Fixed-seed values in [-1, 1), the same on every run. */
static void fill_random(float *x, uint64_t count, uint32_t seed)
{
    for (uint64_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

typedef struct mm_data {
    float *a, *b, *c; /* host copies: A, B, and C as read back */
} mm_data;

static int make_arrays(hpl_context *ctx, const mm_data *h, mm_size sz, hpl_array *a, hpl_array *b, hpl_array *c)
{
    SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {sz.m, sz.p}, .name = "A"}, a));
    SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {sz.p, sz.n}, .name = "B"}, b));
    SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {sz.m, sz.n}, .name = "C"}, c));
    SAMPLE_TRY(hpl_array_write(ctx, *a, h->a, sz.m * sz.p * sizeof(float)));
    SAMPLE_TRY(hpl_array_write(ctx, *b, h->b, sz.p * sz.n * sizeof(float)));
    return HPL_OK;
}

/* One warm-up eval, then `reps` timed ones; *best_ms the fastest. */
static int run_evals(hpl_context *ctx, hpl_kernel k, hpl_array a, hpl_array b, hpl_array c, mm_size sz, int reps,
                     double *best_ms)
{
    const hpl_launch all = sample_launch(ctx);
    for (int r = -1; r < reps; r++) {
        double t0 = sample_now_ms();
        SAMPLE_TRY(hpl_eval(ctx, k, &all, HPL_ARGS(hpl_part1(c, 0), hpl_part1(a, 0), hpl_arr(b), hpl_i32((int32_t)sz.p))));
        SAMPLE_TRY(hpl_array_wait(ctx, c));
        double t = sample_now_ms() - t0;
        if (r == 0 || (r > 0 && t < *best_ms))
            *best_ms = t;
    }
    return HPL_OK;
}

/* Prints which rows of C each device got and checks them against the
 * partition rule: *parts_ok false on any difference. */
static int report_parts(hpl_context *ctx, hpl_array c, mm_size sz, const int *devices, int ndev, bool *parts_ok)
{
    int count = hpl_array_part_count(ctx, c);
    int want = sz.m < (uint64_t)ndev ? (int)sz.m : ndev;
    *parts_ok = count == want;
    if (count != want)
        fprintf(stderr, SAMPLE_NAME ": C has %d parts, expected %d\n", count, want);
    for (int i = 0; i < count; i++) {
        hpl_array part;
        hpl_array_info info;
        int device = -1;
        uint64_t lo = 0, hi = 0;
        SAMPLE_TRY(hpl_array_part(ctx, c, i, &part, &device));
        SAMPLE_TRY(hpl_array_get_info(ctx, part, &info));
        printf("part %d: device %d, rows %" PRIu64 "..%" PRIu64 " (%" PRIu64 " x %" PRIu64 " at (%" PRIu64 ", %" PRIu64
               "))\n",
               i, device, info.origin[0], info.origin[0] + info.dims[0] - 1, info.dims[0], info.dims[1],
               info.origin[0], info.origin[1]);
        bool ok = sample_part_rows(sz.m, ndev, i, &lo, &hi) && device == devices[i] && info.origin[0] == lo &&
                  info.dims[0] == hi - lo && info.origin[1] == 0 && info.dims[1] == sz.n;
        if (!ok)
            fprintf(stderr, SAMPLE_NAME ": part %d should be rows %" PRIu64 "..%" PRIu64 " x %" PRIu64 " on device %d\n",
                    i, lo, hi - 1, sz.n, devices[i]);
        *parts_ok = *parts_ok && ok;
    }
    for (int i = count; i < ndev; i++)
        printf("device %d: no part (%" PRIu64 " rows for %d devices)\n", devices[i], sz.m, ndev);
    return HPL_OK;
}

/* The error of element (i, j) against the double-precision product,
 * relative to sum_k |A[i][k] B[k][j]|. */
static double element_error(const mm_data *h, mm_size sz, uint64_t i, uint64_t j, double *ref)
{
    double mag = 0.0;
    *ref = 0.0;
    for (uint64_t k = 0; k < sz.p; k++) {
        double prod = (double)h->a[i * sz.p + k] * (double)h->b[k * sz.n + j];
        *ref += prod;
        mag += absd(prod);
    }
    return absd((double)h->c[i * sz.n + j] - *ref) / (mag > 0.0 ? mag : 1.0);
}

static bool check_product(const mm_data *h, mm_size sz)
{
    const bool full = (double)sz.m * (double)sz.n * (double)sz.p <= (double)(1u << 28);
    const uint64_t col_step = full || sz.n <= 64 ? 1 : sz.n / 64;
    const double tol = (double)(sz.p + 2) * FLT_EPSILON;
    uint64_t bad = 0, checked = 0;
    double worst = 0.0, ref;
    for (uint64_t i = 0; i < sz.m; i++)
        for (uint64_t j = 0; j < sz.n; j += col_step, checked++) {
            double err = element_error(h, sz, i, j, &ref);
            worst = err > worst ? err : worst;
            if (!(err <= tol) && bad++ < 5)
                fprintf(stderr, SAMPLE_NAME ": C[%" PRIu64 "][%" PRIu64 "] = %.8g, expected %.8g\n", i, j,
                        (double)h->c[i * sz.n + j], ref);
        }
    fprintf(stderr, SAMPLE_NAME ": checked %" PRIu64 " elements, worst relative error %.3g (tolerance %.3g), %" PRIu64
                    " wrong\n",
            checked, worst, tol, bad);
    return bad == 0;
}

/* Runs the product on every device of the context and reads C into h->c. */
static int run_devices(hpl_context *ctx, const int *devices, int ndev, const mm_data *h, mm_size sz, char *devnames,
                       size_t cap, double *best_ms, bool *parts_ok)
{
    hpl_kernel k;
    hpl_array a, b, c;
    SAMPLE_TRY(sample_device_list(ctx, devices, ndev, devnames, cap));
    SAMPLE_TRY(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = mxproduct_src, .name = "mxproduct"}}, &k));
    SAMPLE_TRY(make_arrays(ctx, h, sz, &a, &b, &c));
    SAMPLE_TRY(run_evals(ctx, k, a, b, c, sz, 3, best_ms));
    SAMPLE_TRY(report_parts(ctx, c, sz, devices, ndev, parts_ok));
    SAMPLE_TRY(hpl_array_read(ctx, c, h->c, sz.m * sz.n * sizeof(float)));
    return HPL_OK;
}

/* Everything but the RESULT line; returns whether the run is verified. */
static bool run_all(const mm_data *h, mm_size sz, char *devnames, size_t cap, double *best_ms)
{
    hpl_context *ctx = NULL;
    if (hpl_context_create(&(hpl_context_desc){.log = sample_log}, &ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create failed: %s\n", hpl_last_error());
        return false;
    }
    int devices[HPL_MAX_DEVICES];
    int ndev = sample_devices(ctx, devices);
    bool parts_ok = false;
    bool ok = run_devices(ctx, devices, ndev, h, sz, devnames, cap, best_ms, &parts_ok) == HPL_OK && parts_ok &&
              check_product(h, sz);
    /* An error that surfaced asynchronously fails the run too. */
    ok = hpl_finish(ctx) == HPL_OK && ok;
    hpl_context_destroy(ctx);
    return sample_log_clean() && ok;
}

static bool parse_size(int argc, char **argv, mm_size *sz)
{
    *sz = (mm_size){301, 257, 253};
    uint64_t *v[3] = {&sz->m, &sz->n, &sz->p};
    if (argc > 4)
        return false;
    for (int i = 1; i < argc; i++)
        *v[i - 1] = strtoull(argv[i], NULL, 0);
    /* p travels as an int scalar. */
    return sz->m > 0 && sz->n > 0 && sz->p > 0 && sz->p <= INT32_MAX;
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    mm_size sz;
    if (!parse_size(argc, argv, &sz)) {
        fprintf(stderr, "usage: %s [m [n [p]]]\n", argv[0]);
        return 2;
    }
    mm_data h = {malloc(sz.m * sz.p * sizeof(float)), malloc(sz.p * sz.n * sizeof(float)),
                 malloc(sz.m * sz.n * sizeof(float))};
    char devnames[4096] = "none";
    double best = 0.0;
    bool verified = false;
    if (h.a && h.b && h.c) {
        fill_random(h.a, sz.m * sz.p, 12345u);
        fill_random(h.b, sz.p * sz.n, 67890u);
        verified = run_all(&h, sz, devnames, sizeof devnames, &best);
    } else {
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
    }
    free(h.a);
    free(h.b);
    free(h.c);
    double gflops = best > 0.0 ? 2.0 * (double)sz.m * (double)sz.n * (double)sz.p / (best * 1e-3) / 1e9 : 0.0;
    printf("RESULT name=matmul_rows devices=%s size=%" PRIu64 "x%" PRIu64 "x%" PRIu64
           " time_ms=%.3f rate=%.4gGFLOP/s verified=%s\n",
           devnames, sz.m, sz.n, sz.p, best, gflops, verified ? "yes" : "no");
    return verified ? 0 : 1;
}
