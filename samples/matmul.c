/*
 * matmul — C = A * B on device 0 of the default devices, one invocation per
 * element of C over a 2-D domain, indexing with hpl_at2.
 *
 *   matmul [n]            n x n x n (default 256)
 *   matmul M N K          C is M x N, A is M x K, B is K x N
 *
 * One eval warms up (compile or cache load, pipeline, uploads); then `reps`
 * evals are each timed with the wait for C, and the best is reported as
 * GFLOP/s (2*M*N*K flops). C is checked against a host product in double
 * precision with a relative tolerance: |C - ref| <= (K + 2) * FLT_EPSILON *
 * sum_k |A[i][k]| |B[k][j]| (the bound for float summation), for every element
 * when M*N*K <= 2^28, else for 4096 pseudo-random elements.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "matmul"
#include "sample_util.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* id.x runs over the rows of C (dimension 0), id.y over its columns. */
static const char *kernel_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 2) c; hpl_in(float, 2) a; hpl_in(float, 2) b; };\n"
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    uint K = a.dims.y;\n"
    "    float s = 0.0;\n"
    "    for (uint k = 0; k < K; k++) s += hpl_at2(a, id.x, k) * hpl_at2(b, k, id.y);\n"
    "    hpl_at2(c, id.x, id.y) = s;\n"
    "}\n";

/* No libm needed. */
static double absd(double x) { return x < 0.0 ? -x : x; }

/* Small deterministic generator: values in [-1, 1). */
static uint32_t rng_state = 12345u;
static float rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)(rng_state >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        int rc_ = (call);                                                                            \
        if (rc_ != HPL_OK) {                                                                         \
            fprintf(stderr, "matmul: %s failed: %s: %s\n", #call, hpl_error_name(rc_), hpl_last_error()); \
            goto done;                                                                               \
        }                                                                                            \
    } while (0)

int main(int argc, char **argv)
{
    uint64_t M = 256, N = 256, K = 256;
    if (argc == 2) {
        M = N = K = strtoull(argv[1], NULL, 0);
    } else if (argc == 4) {
        M = strtoull(argv[1], NULL, 0);
        N = strtoull(argv[2], NULL, 0);
        K = strtoull(argv[3], NULL, 0);
    } else if (argc != 1) {
        M = 0;
    }
    if (M == 0 || N == 0 || K == 0) {
        fprintf(stderr, "usage: %s [n | M N K]\n", argv[0]);
        return 2;
    }

    const int reps = 3;
    char devname[300] = "none";
    double best = 0.0;
    int verified = 0;
    hpl_context *ctx = NULL;
    float *ha = NULL, *hb = NULL;
    hpl_array a, b, c;
    hpl_kernel k;

    ha = malloc(M * K * sizeof *ha);
    hb = malloc(K * N * sizeof *hb);
    if (!ha || !hb) {
        fprintf(stderr, "matmul: out of host memory\n");
        goto done;
    }
    for (uint64_t i = 0; i < M * K; i++)
        ha[i] = rnd();
    for (uint64_t i = 0; i < K * N; i++)
        hb[i] = rnd();

    CHECK(hpl_context_create(&(hpl_context_desc){.log = sample_log}, &ctx));
    CHECK(sample_device_list(ctx, &(int){0}, 1, devname, sizeof devname));

    CHECK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {M, K}, .name = "A"}, &a));
    CHECK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {K, N}, .name = "B"}, &b));
    CHECK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {M, N}, .name = "C"}, &c));
    CHECK(hpl_array_write(ctx, a, ha, M * K * sizeof *ha));
    CHECK(hpl_array_write(ctx, b, hb, K * N * sizeof *hb));
    CHECK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = kernel_src, .name = "matmul"}}, &k));

    /* The domain is C's shape (the first array argument): M x N. */
    const hpl_launch launch = {.global = {M, N}};
    CHECK(hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_arr(c), hpl_arr(a), hpl_arr(b))));
    CHECK(hpl_array_wait(ctx, c));
    for (int r = 0; r < reps; r++) {
        double t0 = sample_now_ms();
        CHECK(hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_arr(c), hpl_arr(a), hpl_arr(b))));
        CHECK(hpl_array_wait(ctx, c));
        double t = sample_now_ms() - t0;
        if (r == 0 || t < best)
            best = t;
    }

    const float *pc;
    CHECK(hpl_array_access(ctx, c, HPL_READ, (void **)&pc));
    const int full = (double)M * (double)N * (double)K <= (double)(1u << 28);
    const uint64_t checks = full ? M * N : 4096;
    const double tol = (double)(K + 2) * FLT_EPSILON;
    uint64_t bad = 0;
    double worst = 0.0;
    for (uint64_t t = 0; t < checks; t++) {
        uint64_t i, j;
        if (full) {
            i = t / N;
            j = t % N;
        } else {
            rng_state = rng_state * 1664525u + 1013904223u;
            i = ((uint64_t)rng_state * 2654435761u) % M;
            rng_state = rng_state * 1664525u + 1013904223u;
            j = ((uint64_t)rng_state * 2654435761u) % N;
        }
        double ref = 0.0, mag = 0.0;
        for (uint64_t kk = 0; kk < K; kk++) {
            double p = (double)ha[i * K + kk] * (double)hb[kk * N + j];
            ref += p;
            mag += absd(p);
        }
        double err = absd((double)pc[i * N + j] - ref) / (mag > 0.0 ? mag : 1.0);
        if (err > worst)
            worst = err;
        if (!(err <= tol)) {
            if (bad < 5)
                fprintf(stderr, "matmul: C[%" PRIu64 "][%" PRIu64 "] = %.8g, expected %.8g\n", i, j, (double)pc[i * N + j],
                        ref);
            bad++;
        }
    }
    fprintf(stderr, "matmul: checked %" PRIu64 " elements, worst relative error %.3g (tolerance %.3g), %" PRIu64 " wrong\n",
            checks, worst, tol, bad);
    CHECK(hpl_finish(ctx));
    verified = sample_log_clean() && bad == 0;

done:
    hpl_context_destroy(ctx);
    free(ha);
    free(hb);
    double gflops = best > 0.0 ? 2.0 * (double)M * (double)N * (double)K / (best * 1e-3) / 1e9 : 0.0;
    printf("RESULT name=matmul devices=%s size=%" PRIu64 "x%" PRIu64 "x%" PRIu64 " time_ms=%.3f rate=%.4gGFLOP/s verified=%s\n",
           devname, M, N, K, best, gflops, verified ? "yes" : "no");
    return verified ? 0 : 1;
}
