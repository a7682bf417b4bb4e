/*
 * multi_device — c = a + b split by hand over every opened device.
 *
 *   multi_device [n]      n elements in all (default 1<<22)
 *
 * Device d gets one contiguous block of the index range (blocks differ by at
 * most one element) held in its own arrays a_d, b_d, c_d. All evals are
 * submitted first, so the devices run at the same time; then the host
 * gathers every c_d into one result and checks it against the host's sum.
 * Timed: the evals (each uploads its block of a and b) plus the reads of
 * every c_d. With HPLVK_DEVICES=cpu:2 the two blocks go to two logical
 * Lavapipe devices.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "multi_device"
#include "sample_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *kernel_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) a; hpl_in(float, 1) b; hpl_out(float, 1) c; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(c, i) = hpl_at(a, i) + hpl_at(b, i); }\n";

static float value_a(uint64_t i) { return (float)(i % 65536) * 0.5f; }
static float value_b(uint64_t i) { return (float)(i % 4093) * 0.25f; }

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        int rc_ = (call);                                                                            \
        if (rc_ != HPL_OK) {                                                                         \
            fprintf(stderr, "multi_device: %s failed: %s: %s\n", #call, hpl_error_name(rc_), hpl_last_error()); \
            goto done;                                                                               \
        }                                                                                            \
    } while (0)

typedef struct block {
    uint64_t lo, len;
    hpl_array a, b, c;
} block;

int main(int argc, char **argv)
{
    uint64_t n = 1u << 22;
    if (argc > 1) {
        if (!sample_arg_u64("n", argv[1], UINT64_MAX, &n) || n == 0) {
            fprintf(stderr, "usage: %s [n]\n", argv[0]);
            return 2;
        }
    }

    char devnames[4096] = "";
    double ms = 0.0;
    int verified = 0, ndev = 0;
    hpl_context *ctx = NULL;
    block *blocks = NULL;
    float *result = NULL;
    hpl_kernel k;

    CHECK(hpl_context_create(&(hpl_context_desc){.log = sample_log}, &ctx));
    ndev = hpl_device_count(ctx);
    if (ndev < 1) {
        fprintf(stderr, "multi_device: hpl_device_count returned %d: %s\n", ndev, hpl_last_error());
        goto done;
    }
    for (int d = 0; d < ndev; d++) {
        hpl_device_info info;
        CHECK(hpl_device_get_info(ctx, d, &info));
        sample_append_name(devnames, sizeof devnames, info.name);
        fprintf(stderr, "multi_device: device %d: %s (physical %u, replica %u)\n", d, info.name, info.physical_index,
                info.replica);
    }

    blocks = calloc((size_t)ndev, sizeof *blocks);
    result = malloc(n * sizeof *result);
    if (!blocks || !result) {
        fprintf(stderr, "multi_device: out of host memory\n");
        goto done;
    }
    CHECK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = kernel_src, .name = "vector_add"}}, &k));

    /* Blocks that differ by at most one element; with n < devices, some
     * devices get nothing (an array cannot have zero elements). */
    for (int d = 0; d < ndev; d++) {
        block *bl = &blocks[d];
        bl->lo = n / (uint64_t)ndev * (uint64_t)d + ((uint64_t)d < n % (uint64_t)ndev ? (uint64_t)d : n % (uint64_t)ndev);
        bl->len = n / (uint64_t)ndev + ((uint64_t)d < n % (uint64_t)ndev ? 1 : 0);
        if (bl->len == 0)
            continue;
        char name[3][32];
        snprintf(name[0], sizeof name[0], "a_%d", d);
        snprintf(name[1], sizeof name[1], "b_%d", d);
        snprintf(name[2], sizeof name[2], "c_%d", d);
        CHECK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {bl->len}, .name = name[0]}, &bl->a));
        CHECK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {bl->len}, .name = name[1]}, &bl->b));
        CHECK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {bl->len}, .name = name[2]}, &bl->c));
    }

    /* Warm-up: one eval per device (compiles the pipeline on each), with
     * other data so that a stale c cannot pass the check. */
    for (int d = 0; d < ndev; d++) {
        block *bl = &blocks[d];
        if (bl->len == 0)
            continue;
        float *pa, *pb;
        CHECK(hpl_array_access(ctx, bl->a, HPL_WRITE, (void **)&pa));
        for (uint64_t i = 0; i < bl->len; i++)
            pa[i] = -1.0f;
        CHECK(hpl_array_access(ctx, bl->b, HPL_WRITE, (void **)&pb));
        for (uint64_t i = 0; i < bl->len; i++)
            pb[i] = -2.0f;
        CHECK(hpl_eval(ctx, k, &(hpl_launch){.device = d}, HPL_ARGS(hpl_arr(bl->a), hpl_arr(bl->b), hpl_arr(bl->c))));
    }
    CHECK(hpl_finish(ctx));

    /* The measured data, written on the host: each eval uploads its block. */
    for (int d = 0; d < ndev; d++) {
        block *bl = &blocks[d];
        if (bl->len == 0)
            continue;
        float *pa, *pb;
        CHECK(hpl_array_access(ctx, bl->a, HPL_WRITE, (void **)&pa));
        for (uint64_t i = 0; i < bl->len; i++)
            pa[i] = value_a(bl->lo + i);
        CHECK(hpl_array_access(ctx, bl->b, HPL_WRITE, (void **)&pb));
        for (uint64_t i = 0; i < bl->len; i++)
            pb[i] = value_b(bl->lo + i);
    }

    double t0 = sample_now_ms();
    for (int d = 0; d < ndev; d++) {
        block *bl = &blocks[d];
        if (bl->len == 0)
            continue;
        CHECK(hpl_eval(ctx, k, &(hpl_launch){.device = d}, HPL_ARGS(hpl_arr(bl->a), hpl_arr(bl->b), hpl_arr(bl->c))));
    }
    for (int d = 0; d < ndev; d++) {
        block *bl = &blocks[d];
        if (bl->len == 0)
            continue;
        CHECK(hpl_array_read(ctx, bl->c, result + bl->lo, bl->len * sizeof *result));
    }
    ms = sample_now_ms() - t0;

    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        float want = value_a(i) + value_b(i);
        if (result[i] != want) {
            if (bad < 5)
                fprintf(stderr, "multi_device: c[%" PRIu64 "] = %g, expected %g\n", i, (double)result[i], (double)want);
            bad++;
        }
    }
    if (bad)
        fprintf(stderr, "multi_device: %" PRIu64 " of %" PRIu64 " elements wrong\n", bad, n);
    CHECK(hpl_finish(ctx));
    verified = sample_log_clean() && bad == 0;

done:
    hpl_context_destroy(ctx);
    free(blocks);
    free(result);
    double gbs = ms > 0.0 ? 3.0 * (double)n * sizeof(float) / (ms * 1e-3) / 1e9 : 0.0;
    printf("RESULT name=multi_device devices=%s size=%" PRIu64 " time_ms=%.3f rate=%.4gGB/s verified=%s\n",
           devnames[0] ? devnames : "none", n, ms, gbs, verified ? "yes" : "no");
    return verified ? 0 : 1;
}
