/*
 * bench_pipeline — chunked pipelines through hplvk: do the uploads of later
 * chunks overlap the kernels of earlier ones (upload, compute), and do the
 * downloads of earlier chunks overlap the kernels of later ones (compute,
 * download)?
 *
 *   bench_pipeline [mib [chunks [rounds [iters]]]]
 *       mib     input size in MiB (default 256 on a GPU, 16 otherwise, 1
 *               under validation)
 *       chunks  chunks (default 16, 4 under validation)
 *       rounds  rounds (default 5, 1 under validation)
 *       iters   LCG steps per element in the kernel; 0 (the default, except
 *               under validation: 8) calibrates it so that all kernels take
 *               about as long as all uploads
 *
 * A uint32 input x and output y on device 0 (zero copy off, so that
 * Lavapipe keeps a device copy of its own and data really moves), each cut
 * into `chunks` subarrays. Per chunk k one eval on device 0 reads x_k and
 * writes y_k = f(x_k), f = `iters` steps of v = v * 1664525 + 1013904223
 * per element (integer arithmetic: exact everywhere; the host checks every
 * element against the closed form of the composed steps). Timed, each up to
 * hpl_finish:
 *   copies   the host wrote x (untimed); hpl_array_prefetch(x_k, 0) for
 *            every chunk: the uploads alone
 *   kernels  the same evals with x already on device 0: the kernels alone
 *   total    the host wrote x again (untimed); the evals: each must upload
 *            its chunk first, and the uploads of chunk k+1.. may run while
 *            the kernel of chunk k does
 * and the other way round, x staying on device 0:
 *   copies   the evals ran (untimed), y is on device 0 only;
 *            hpl_array_prefetch(y_k, HPL_ON_HOST) for every chunk: the
 *            downloads alone
 *   total    per chunk the eval, then hpl_array_prefetch(y_k, HPL_ON_HOST):
 *            the download of chunk k may run while the kernel of chunk k+1
 *            does
 * Each must move exactly what it should (hpl_stats), and y is checked after
 * every run that writes it.
 * Target (issue 15): upload total <= 1.15x max(copies, kernels); the
 * download pipeline's ratio is printed beside it (information). Also
 * printed: total / (copies + kernels), 1.0 when nothing overlapped.
 *
 * Rounds interleave the five; the table gives milliseconds of the median
 * round. The RESULT line gives total's median (time_ms) and the input's
 * GB/s through it (rate); verified when every check passed and no
 * validation message came (HPLVK_VALIDATION=1). The exit status is non-zero
 * when not verified; a missed target is printed, not an error.
 */
#define _POSIX_C_SOURCE 200809L
#define SAMPLE_NAME "bench_pipeline"
#include "bench_vk.h"

#define TARGET 1.15 /* total / max(copies, kernels), at most */
#define LCG_A 1664525u
#define LCG_C 1013904223u

static const char *lcg_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) x; hpl_out(uint, 1) y; uint iters; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x;\n"
    "    uint v = hpl_at(x, i);\n"
    "    for (uint k = 0u; k < iters; k++)\n"
    "        v = v * 1664525u + 1013904223u;\n"
    "    hpl_at(y, i) = v;\n"
    "}\n";

typedef struct config {
    uint64_t mib;
    int chunks, rounds;
    uint32_t iters;
    bool validation;
} config;

typedef struct pipeline {
    hpl_context *ctx;
    hpl_kernel k;
    hpl_array x, y, *xs, *ys; /* the arrays and their chunks */
    int chunks;
    uint64_t n;               /* elements */
    uint32_t iters;
    bool made_k, made_x, made_y;
} pipeline;

/* ======================================================================
 * The three runs
 * ====================================================================== */

/* y = f(x) for every chunk, one eval each, on device 0. */
static bool evals(pipeline *p)
{
    static const hpl_launch dev0 = {.device = 0};
    for (int c = 0; c < p->chunks; c++)
        BENCH_HPL(hpl_eval(p->ctx, p->k, &dev0, HPL_ARGS(hpl_arr(p->xs[c]), hpl_arr(p->ys[c]), hpl_u32(p->iters))));
    return true;
}

static bool host_writes_x(pipeline *p, uint32_t seed)
{
    uint32_t *x;
    BENCH_HPL(hpl_array_access(p->ctx, p->x, HPL_WRITE, (void **)&x));
    bench_fill(x, p->n, seed);
    return true;
}

/* Every element of y is f(pattern of `seed`): the composed steps are one
 * affine map v -> a*v + c (mod 2^32), computed once. */
static bool verify_y(pipeline *p, uint32_t seed, const char *what)
{
    uint32_t a = 1, c = 0;
    for (uint32_t i = 0; i < p->iters; i++) {
        a *= LCG_A;
        c = c * LCG_A + LCG_C;
    }
    const uint32_t *y;
    BENCH_HPL(hpl_array_access(p->ctx, p->y, HPL_READ, (void **)&y));
    uint64_t bad = 0;
    for (uint64_t i = 0; i < p->n; i++) {
        uint32_t want = a * bench_pattern(i, seed) + c;
        if (y[i] != want && bad++ < 3)
            fprintf(stderr, SAMPLE_NAME ": %s: y[%" PRIu64 "] = 0x%08x, expected 0x%08x\n", what, i, y[i], want);
    }
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": %s: %" PRIu64 " of %" PRIu64 " elements wrong\n", what, bad, p->n);
    return bad == 0;
}

/* The uploads alone: every chunk of x prefetched to device 0. */
static bool run_copies(pipeline *p, uint32_t seed, double *us)
{
    if (!host_writes_x(p, seed))
        return false;
    BENCH_HPL(hpl_stats_reset(p->ctx));
    double t0 = bench_now_us();
    for (int c = 0; c < p->chunks; c++)
        BENCH_HPL(hpl_array_prefetch(p->ctx, p->xs[c], 0));
    BENCH_HPL(hpl_finish(p->ctx));
    *us = bench_now_us() - t0;
    return bench_moved(p->ctx, 0, p->n * 4, 0, "copies");
}

/* The kernels alone: x is already on device 0, so nothing moves. */
static bool run_kernels(pipeline *p, double *us)
{
    BENCH_HPL(hpl_stats_reset(p->ctx));
    double t0 = bench_now_us();
    if (!evals(p))
        return false;
    BENCH_HPL(hpl_finish(p->ctx));
    *us = bench_now_us() - t0;
    return bench_moved(p->ctx, 0, 0, 0, "kernels");
}

/* The pipeline: the host wrote x, so each eval uploads its chunk. */
static bool run_total(pipeline *p, uint32_t seed, double *us)
{
    if (!host_writes_x(p, seed))
        return false;
    BENCH_HPL(hpl_stats_reset(p->ctx));
    double t0 = bench_now_us();
    if (!evals(p))
        return false;
    BENCH_HPL(hpl_finish(p->ctx));
    *us = bench_now_us() - t0;
    return bench_moved(p->ctx, 0, p->n * 4, 0, "total") && verify_y(p, seed, "total");
}

/* The downloads alone: y, just written on device 0 (untimed), prefetched to
 * the host chunk by chunk. x is on device 0 already (the kernels run). */
static bool run_down_copies(pipeline *p, uint32_t seed, double *us)
{
    if (!evals(p))
        return false;
    BENCH_HPL(hpl_finish(p->ctx));
    BENCH_HPL(hpl_stats_reset(p->ctx));
    double t0 = bench_now_us();
    for (int c = 0; c < p->chunks; c++)
        BENCH_HPL(hpl_array_prefetch(p->ctx, p->ys[c], HPL_ON_HOST));
    BENCH_HPL(hpl_finish(p->ctx));
    *us = bench_now_us() - t0;
    return bench_moved(p->ctx, 0, 0, p->n * 4, "download copies") && verify_y(p, seed, "download copies");
}

/* The download pipeline: each eval, then its chunk of y to the host. */
static bool run_down_total(pipeline *p, uint32_t seed, double *us)
{
    static const hpl_launch dev0 = {.device = 0};
    BENCH_HPL(hpl_stats_reset(p->ctx));
    double t0 = bench_now_us();
    for (int c = 0; c < p->chunks; c++) {
        BENCH_HPL(hpl_eval(p->ctx, p->k, &dev0, HPL_ARGS(hpl_arr(p->xs[c]), hpl_arr(p->ys[c]), hpl_u32(p->iters))));
        BENCH_HPL(hpl_array_prefetch(p->ctx, p->ys[c], HPL_ON_HOST));
    }
    BENCH_HPL(hpl_finish(p->ctx));
    *us = bench_now_us() - t0;
    return bench_moved(p->ctx, 0, 0, p->n * 4, "download total") && verify_y(p, seed, "download total");
}

/* ======================================================================
 * Calibration: iters such that the kernels take as long as the copies
 * ====================================================================== */

static bool kernels_at(pipeline *p, uint32_t iters, double *us)
{
    double a, b;
    p->iters = iters;
    if (!run_kernels(p, &a) || !run_kernels(p, &b))
        return false;
    *us = a < b ? a : b;
    return true;
}

/* Grows iters by 4x until the kernels take longer than the copies, then
 * interpolates between the last two points (kernel time is linear in
 * iters once arithmetic dominates). */
static bool calibrate(pipeline *p, double copies_us)
{
    uint32_t lo = 1, hi = 1;
    double t_lo, t_hi;
    if (!kernels_at(p, 1, &t_hi))
        return false;
    t_lo = t_hi;
    while (t_hi < copies_us && hi < (1u << 24)) {
        lo = hi;
        t_lo = t_hi;
        hi *= 4;
        if (!kernels_at(p, hi, &t_hi))
            return false;
    }
    double frac = t_hi > t_lo ? (copies_us - t_lo) / (t_hi - t_lo) : 1.0;
    frac = frac < 0.0 ? 0.0 : frac > 1.0 ? 1.0 : frac;
    p->iters = lo + (uint32_t)(frac * (double)(hi - lo));
    if (p->iters < 1)
        p->iters = 1;
    return true;
}

/* ======================================================================
 * Setup and main
 * ====================================================================== */

static bool pipeline_create(hpl_context *ctx, const config *cfg, pipeline *p)
{
    p->ctx = ctx;
    p->chunks = cfg->chunks;
    p->n = (cfg->mib << 20) / 4;
    p->iters = cfg->iters;
    p->xs = calloc((size_t)p->chunks, sizeof *p->xs);
    p->ys = calloc((size_t)p->chunks, sizeof *p->ys);
    if (!p->xs || !p->ys) {
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
        return false;
    }
    BENCH_HPL(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = lcg_src, .name = "lcg"}}, &p->k));
    p->made_k = true;
    BENCH_HPL(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {p->n}, .name = "x"}, &p->x));
    p->made_x = true;
    BENCH_HPL(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {p->n}, .name = "y"}, &p->y));
    p->made_y = true;
    for (int c = 0; c < p->chunks; c++) {
        uint64_t lo = 0, hi = 0;
        sample_part_rows(p->n, p->chunks, c, &lo, &hi); /* chunks <= n: every chunk has elements */
        BENCH_HPL(hpl_subarray(ctx, p->x, HPL_RANGES({lo, hi - 1}), &p->xs[c]));
        BENCH_HPL(hpl_subarray(ctx, p->y, HPL_RANGES({lo, hi - 1}), &p->ys[c]));
    }
    return true;
}

/* Destroying an array destroys its chunks with it. */
static bool pipeline_destroy(pipeline *p)
{
    bool ok = true;
    if (p->made_k && hpl_kernel_destroy(p->ctx, p->k) != HPL_OK)
        ok = false;
    if (p->made_x && hpl_array_destroy(p->ctx, p->x) != HPL_OK)
        ok = false;
    if (p->made_y && hpl_array_destroy(p->ctx, p->y) != HPL_OK)
        ok = false;
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": teardown failed: %s\n", hpl_last_error());
    free(p->xs);
    free(p->ys);
    memset(p, 0, sizeof *p);
    return ok;
}

static bool parse(int argc, char **argv, const hpl_device_info *info, config *cfg)
{
    cfg->validation = bench_validation_env();
    cfg->mib = cfg->validation ? 1 : (info->type & HPL_DEVICE_GPU) ? 256 : 16;
    cfg->chunks = cfg->validation ? 4 : 16;
    cfg->rounds = cfg->validation ? 1 : 5;
    cfg->iters = cfg->validation ? 8 : 0;
    uint64_t iters = cfg->iters;
    if (argc > 1 && !sample_arg_u64("mib", argv[1], UINT64_MAX, &cfg->mib))
        return false;
    if (argc > 2 && !sample_arg_int("chunks", argv[2], &cfg->chunks))
        return false;
    if (argc > 3 && !sample_arg_int("rounds", argv[3], &cfg->rounds))
        return false;
    if (argc > 4 && !sample_arg_u64("iters", argv[4], UINT32_MAX, &iters))
        return false;
    cfg->iters = (uint32_t)iters;
    return argc <= 5 && cfg->mib >= 1 && cfg->mib <= (UINT32_MAX / 4 >> 20) && cfg->chunks >= 1 &&
           (uint64_t)cfg->chunks <= (cfg->mib << 20) / 4 && cfg->rounds >= 1 && cfg->rounds <= 1000;
}

/* Input and output on the device, twice on the host; on a CPU device the
 * device copies are host memory too. */
static bool size_fits(const hpl_device_info *info, uint64_t bytes)
{
    uint64_t heap = bench_device_heap(info), ram = bench_host_ram();
    uint64_t host_need = 2 * bytes + (info->type == HPL_DEVICE_CPU ? 2 * bytes : 0);
    const char *why = bytes > info->max_buffer_size ? "larger than the device's largest buffer"
                      : heap && 2 * bytes > heap    ? "input and output exceed the device's local heap"
                      : ram && host_need > ram / 2  ? "its copies exceed half the host's memory"
                                                    : NULL;
    if (why)
        fprintf(stderr, SAMPLE_NAME ": %" PRIu64 " MiB: %s\n", bytes >> 20, why);
    return why == NULL;
}

enum { M_COPIES, M_KERNELS, M_TOTAL, M_DOWN_COPIES, M_DOWN_TOTAL, M_COUNT };

static bool measure(pipeline *p, const config *cfg, double *m[M_COUNT])
{
    double warm;
    /* Warm-up: compiles the kernel, makes the buffers, touches the pages. */
    bool ok = run_copies(p, 0x5eedu, &warm) && run_kernels(p, &warm);
    if (ok && p->iters == 0) {
        double copies[3];
        for (int i = 0; i < 3 && ok; i++)
            ok = run_copies(p, 0x5eedu, &copies[i]);
        ok = ok && calibrate(p, bench_stats(copies, 3).median);
    }
    for (int r = 0; ok && r < cfg->rounds; r++) {
        uint32_t seed = 0x10000u * (uint32_t)(r + 1);
        ok = run_copies(p, seed, &m[M_COPIES][r]) && run_kernels(p, &m[M_KERNELS][r]) &&
             verify_y(p, seed, "kernels") && run_total(p, ~seed, &m[M_TOTAL][r]) &&
             run_down_copies(p, ~seed, &m[M_DOWN_COPIES][r]) && run_down_total(p, ~seed, &m[M_DOWN_TOTAL][r]);
    }
    return ok;
}

static void report(const pipeline *p, const config *cfg, double *m[M_COUNT], double *total_ms)
{
    static const char *const label[M_COUNT] = {
        "copies   hpl_array_prefetch of every chunk, hpl_finish",
        "kernels  every eval, x already on device 0, hpl_finish",
        "total    every eval, x written by the host, hpl_finish",
        "dcopies  prefetch of every y_k to the host, hpl_finish",
        "dtotal   every eval, then its y_k to the host, hpl_finish",
    };
    bench_stat st[M_COUNT];
    printf("  %-56s %9s %9s %9s\n", "milliseconds", "median", "min", "max");
    for (int i = 0; i < M_COUNT; i++) {
        st[i] = bench_stats(m[i], cfg->rounds);
        printf("  %-56s %9.3f %9.3f %9.3f\n", label[i], st[i].median * 1e-3, st[i].min * 1e-3, st[i].max * 1e-3);
    }
    double longer = st[M_COPIES].median > st[M_KERNELS].median ? st[M_COPIES].median : st[M_KERNELS].median;
    double sum = st[M_COPIES].median + st[M_KERNELS].median;
    double ratio = longer > 0.0 ? st[M_TOTAL].median / longer : 0.0;
    printf("  target (issue 15): total <= %.2fx max(copies, kernels); total / max = %.3f  %s\n", TARGET, ratio,
           bench_verdict(ratio, TARGET, false));
    printf("  total / (copies + kernels) = %.3f (1.0: no overlap at all; %.3f: perfect overlap)\n",
           sum > 0.0 ? st[M_TOTAL].median / sum : 0.0, sum > 0.0 ? longer / sum : 0.0);
    double down_longer = st[M_DOWN_COPIES].median > st[M_KERNELS].median ? st[M_DOWN_COPIES].median
                                                                          : st[M_KERNELS].median;
    double down_sum = st[M_DOWN_COPIES].median + st[M_KERNELS].median;
    printf("  downloads (information): dtotal / max(dcopies, kernels) = %.3f; / sum = %.3f (perfect: %.3f)\n",
           down_longer > 0.0 ? st[M_DOWN_TOTAL].median / down_longer : 0.0,
           down_sum > 0.0 ? st[M_DOWN_TOTAL].median / down_sum : 0.0, down_sum > 0.0 ? down_longer / down_sum : 0.0);
    printf("  uploads %.2f GB/s alone, downloads %.2f GB/s alone; %u LCG steps per element\n",
           st[M_COPIES].median > 0.0 ? (double)(p->n * 4) / (st[M_COPIES].median * 1e3) : 0.0,
           st[M_DOWN_COPIES].median > 0.0 ? (double)(p->n * 4) / (st[M_DOWN_COPIES].median * 1e3) : 0.0, p->iters);
    if (cfg->iters == 0 && p->iters == 1 && st[M_KERNELS].median > 1.5 * st[M_COPIES].median)
        printf("  (the kernels outlast the copies even at one step per element: this device cannot balance them,\n"
               "   so the target says little here)\n");
    *total_ms = st[M_TOTAL].median * 1e-3;
}

int main(int argc, char **argv)
{
    hpl_context *ctx = NULL;
    hpl_device_info info = {.name = "none"};
    config cfg = {0};
    pipeline p = {0};
    double *m[M_COUNT] = {0}, total_ms = 0.0;
    bool ok = true, measured = false;

    /* Zero copy off: a CPU device opened once would otherwise work on the
     * host's copy, and nothing would be uploaded. */
    int rc = hpl_context_create(&(hpl_context_desc){.log = sample_log, .zero_copy = HPL_ZERO_COPY_OFF}, &ctx);
    if (rc == HPL_OK)
        rc = hpl_device_get_info(ctx, 0, &info);
    if (rc != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": %s: %s\n", hpl_error_name(rc), hpl_last_error());
        ok = false;
    }
    if (ok && !parse(argc, argv, &info, &cfg)) {
        fprintf(stderr, "usage: %s [mib [chunks [rounds [iters]]]]\n", argv[0]);
        hpl_context_destroy(ctx);
        return 2;
    }
    for (int i = 0; i < M_COUNT && ok; i++)
        ok = (m[i] = calloc((size_t)cfg.rounds, sizeof(double))) != NULL;
    ok = ok && size_fits(&info, cfg.mib << 20) && pipeline_create(ctx, &cfg, &p);
    if (ok) {
        printf("bench_pipeline: device 0: %s; hplvk: %s transfer queue; %d round%s, medians%s\n", info.name,
               info.dedicated_transfer_queue ? "a dedicated" : "no dedicated", cfg.rounds, cfg.rounds == 1 ? "" : "s",
               cfg.validation ? " (VALIDATION ON: timings not representative)" : "");
        printf("bench_pipeline: %" PRIu64 " MiB of uint32 in %d chunks (subarrays); per chunk one eval on device 0, "
               "y_k = f(x_k), f = LCG steps per element%s\n",
               cfg.mib, cfg.chunks, cfg.iters ? "" : " (calibrated: kernels alone ~ copies alone)");
        fflush(stdout);
    }
    ok = ok && measure(&p, &cfg, m);
    if (ok)
        report(&p, &cfg, m, &total_ms);
    measured = ok;
    ok = pipeline_destroy(&p) && ok;
    if (ctx && hpl_finish(ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_finish failed: %s\n", hpl_last_error());
        ok = false;
    }
    hpl_context_destroy(ctx);
    for (int i = 0; i < M_COUNT; i++)
        free(m[i]);
    bool verified = ok && measured && sample_log_clean();

    char devname[300] = "";
    sample_append_name(devname, sizeof devname, info.name);
    printf("RESULT name=bench_pipeline devices=%s size=%" PRIu64 " time_ms=%.3f rate=%.2fGB/s verified=%s\n", devname,
           cfg.mib << 20, total_ms, total_ms > 0.0 ? (double)(cfg.mib << 20) / (total_ms * 1e6) : 0.0,
           verified ? "yes" : "no");
    return verified ? 0 : 1;
}
