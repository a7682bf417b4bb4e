/*
 * bench_ramp — how a device's speed follows its load. GPUs idle at low
 * clocks and raise them only after being busy a while (sample_warm.h); a
 * load balancer that times devices while one of them waits for another
 * times it at whatever clock that waiting leaves it. This measures, on
 * device 0, one kernel of fixed work timed eval + finish by the host:
 *
 *   ramp  from idle, the kernel back to back: each one's time as the
 *         clocks rise (the first run is the cold start's);
 *   hold  warm, then idle for 1 ms .. 3 s, then one kernel: how long a
 *         device keeps its clocks without work;
 *   duty  the kernel, then idle for (1/duty - 1) times what it took, over
 *         and over: the speed a device settles at when it is busy only that
 *         fraction of the time (a GPU waiting for a CPU in a search), from
 *         warm (duty falling) and from cold (duty rising).
 *
 *   bench_ramp [compute|memory [n [iters [phase_ms]]]]
 *       compute: n invocations, each `iters` steps of v = v * m + c on a
 *       value read from memory (defaults: GPU 1<<20 x 16384, CPU 4096 x
 *       256); memory: the same kernel with iters 0 over n floats (GPU
 *       1<<28, 1 GiB each way; CPU 1<<18). phase_ms: how long each ramp and
 *       duty phase runs (GPU 1500, CPU 200, under validation 40).
 *
 * Times are the host's around hpl_eval + hpl_finish (some 17 us above the
 * kernel on an H200: the defaults run for milliseconds). Each figure is
 * also given over the best time of the whole run (x_best). The output of
 * the last run is checked against a double-precision host computation at
 * up to 4096 elements (relative 1e-4). RESULT: time_ms the best kernel,
 * rate the ms of back-to-back runs after which no run took 1.25x the best
 * (the ramp's length).
 */
#define _POSIX_C_SOURCE 200809L
#define SAMPLE_NAME "bench_ramp"
#include "bench_vk.h" /* its medians and validation switch (and sample_util.h) */

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *ramp_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) a; hpl_out(float, 1) b; uint iters; float m; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x;\n"
    "    float v = hpl_at(a, i);\n"
    "    for (uint k = 0u; k < iters; k++)\n"
    "        v = v * m + 0.5;\n"
    "    hpl_at(b, i) = v * 2.0 + 1.0;\n"
    "}\n";

#define RAMP_M 0.9f   /* contracting: float rounding stays within a few ulps of the double steps */
#define CHECKED 4096u /* elements checked against the host */

typedef struct ramp {
    hpl_context *ctx;
    hpl_kernel k;
    hpl_array a, b;
    uint64_t n;
    uint32_t iters;
    double phase_ms, best_ms;
} ramp;

static float input_at(uint64_t i)
{
    return (float)(i % 1000u) * 0.01f;
}

/* One run, eval to finish, in host ms. */
static int run_once(ramp *r, double *ms)
{
    double t0 = sample_now_ms();
    SAMPLE_TRY(hpl_eval(r->ctx, r->k, &(hpl_launch){.global = {r->n}},
                        HPL_ARGS(hpl_arr(r->a), hpl_arr(r->b), hpl_u32(r->iters), hpl_f32(RAMP_M))));
    SAMPLE_TRY(hpl_finish(r->ctx));
    *ms = sample_now_ms() - t0;
    r->best_ms = fmin(r->best_ms, *ms);
    return HPL_OK;
}

static void idle_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6)};
    nanosleep(&ts, NULL);
}

/* Back to back for `ms`. */
static int busy_for(ramp *r, double ms)
{
    double t0 = sample_now_ms(), one;
    while (sample_now_ms() - t0 < ms)
        SAMPLE_TRY(run_once(r, &one));
    return HPL_OK;
}

typedef struct sample_point {
    double at_ms, ms;
} sample_point;

/* From idle, back to back for phase_ms: every run's time, in pts (at most
 * cap); *count how many. */
static int phase_ramp(ramp *r, sample_point *pts, int cap, int *count)
{
    double t0 = sample_now_ms();
    int n = 0;
    while (n < cap && sample_now_ms() - t0 < r->phase_ms) {
        double at = sample_now_ms() - t0;
        SAMPLE_TRY(run_once(r, &pts[n].ms));
        pts[n++].at_ms = at;
    }
    *count = n;
    return HPL_OK;
}

/* The kernel at `duty` for phase_ms: the median of the second half's runs. */
static int phase_duty(ramp *r, double duty, double *median)
{
    double t0 = sample_now_ms(), times[4096];
    int n = 0, from = -1;
    while (n < 4096 && sample_now_ms() - t0 < r->phase_ms) {
        if (from < 0 && sample_now_ms() - t0 >= r->phase_ms / 2)
            from = n;
        SAMPLE_TRY(run_once(r, &times[n]));
        idle_ms(times[n] * (1.0 / duty - 1.0));
        n++;
    }
    from = from < 0 ? n - 1 : from;
    *median = n > 0 ? bench_stats(times + from, n - from).median : 0.0;
    return HPL_OK;
}

/* The last run's b against the host's steps in double. */
static bool check(ramp *r)
{
    const float *b;
    if (hpl_array_access(r->ctx, r->b, HPL_READ, (void **)&b) != HPL_OK)
        return false;
    uint64_t stride = r->n > CHECKED ? r->n / CHECKED : 1, bad = 0;
    for (uint64_t i = 0; i < r->n; i += stride) {
        double v = input_at(i);
        for (uint32_t k = 0; k < r->iters; k++)
            v = v * (double)RAMP_M + 0.5;
        double want = v * 2.0 + 1.0;
        if (fabs((double)b[i] - want) > 1e-4 * fabs(want)) {
            if (bad++ < 5)
                fprintf(stderr, "bench_ramp: b[%" PRIu64 "] = %.9g, host %.9g\n", i, (double)b[i], want);
        }
    }
    return bad == 0;
}

static int setup(ramp *r)
{
    SAMPLE_TRY(hpl_array_create(r->ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {r->n}, .name = "a"}, &r->a));
    SAMPLE_TRY(hpl_array_create(r->ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {r->n}, .name = "b"}, &r->b));
    SAMPLE_TRY(hpl_kernel_create(r->ctx, &(hpl_kernel_desc){.source = {.glsl = ramp_src, .name = "ramp"}}, &r->k));
    float *a;
    SAMPLE_TRY(hpl_array_access(r->ctx, r->a, HPL_WRITE, (void **)&a));
    for (uint64_t i = 0; i < r->n; i++)
        a[i] = input_at(i);
    /* Compile, upload and make b's storage, then let the device idle. */
    double ms;
    return run_once(r, &ms);
}

static const double idles_ms[] = {1, 3, 10, 30, 100, 300, 1000, 3000};
static const double duties[] = {0.5, 0.2, 0.1, 0.05, 0.02};
#define COUNT(a) (int)(sizeof(a) / sizeof(a)[0])

static int measure(ramp *r, double *settled_ms)
{
    static sample_point pts[8192];
    int count = 0;
    double cold = fmin(3000, 2 * r->phase_ms);
    idle_ms(cold);
    SAMPLE_TRY(phase_ramp(r, pts, COUNT(pts), &count));

    double hold[COUNT(idles_ms)];
    for (int i = 0; i < COUNT(idles_ms); i++) {
        SAMPLE_TRY(busy_for(r, fmin(300, r->phase_ms)));
        idle_ms(fmin(idles_ms[i], cold));
        SAMPLE_TRY(run_once(r, &hold[i]));
    }
    double down[COUNT(duties)], up[COUNT(duties)];
    SAMPLE_TRY(busy_for(r, fmin(300, r->phase_ms)));
    for (int i = 0; i < COUNT(duties); i++)
        SAMPLE_TRY(phase_duty(r, duties[i], &down[i]));
    idle_ms(cold);
    for (int i = COUNT(duties) - 1; i >= 0; i--)
        SAMPLE_TRY(phase_duty(r, duties[i], &up[i]));

    /* Printed after the runs, to give each over the best of them all. */
    double best = r->best_ms, next = 0;
    *settled_ms = 0;
    for (int i = 0; i < count; i++) {
        if (pts[i].ms >= 1.25 * best)
            *settled_ms = pts[i].at_ms + pts[i].ms;
        if (i < 10 || pts[i].at_ms >= next || i == count - 1) {
            printf("ramp  at_ms=%8.1f run %4d kernel_ms=%.3f x_best=%.2f\n", pts[i].at_ms, i, pts[i].ms,
                   pts[i].ms / best);
            next = pts[i].at_ms + r->phase_ms / 30;
        }
    }
    for (int i = 0; i < COUNT(idles_ms); i++)
        printf("hold  idle_ms=%6.0f kernel_ms=%.3f x_best=%.2f\n", fmin(idles_ms[i], cold), hold[i], hold[i] / best);
    for (int i = 0; i < COUNT(duties); i++)
        printf("duty  %.2f from warm kernel_ms=%.3f x_best=%.2f  from cold kernel_ms=%.3f x_best=%.2f\n", duties[i],
               down[i], down[i] / best, up[i], up[i] / best);
    return HPL_OK;
}

static bool parse(int argc, char **argv, bool gpu, ramp *r)
{
    bool memory = argc > 1 && strcmp(argv[1], "memory") == 0;
    if (argc > 1 && !memory && strcmp(argv[1], "compute") != 0) {
        fprintf(stderr, "bench_ramp: the kernel '%s' is neither compute nor memory\n", argv[1]);
        return false;
    }
    r->n = memory ? (gpu ? 1u << 28 : 1u << 18) : (gpu ? 1u << 20 : 4096u);
    uint64_t iters = memory ? 0 : (gpu ? 16384u : 256u);
    r->phase_ms = bench_validation_env() ? 40 : gpu ? 1500 : 200;
    uint64_t phase = (uint64_t)r->phase_ms;
    if (argc > 5) {
        fprintf(stderr, "bench_ramp: %d arguments, at most 4\n", argc - 1);
        return false;
    }
    if ((argc > 2 && (!sample_arg_u64("n", argv[2], UINT32_MAX, &r->n) || r->n == 0)) ||
        (argc > 3 && !sample_arg_u64("iters", argv[3], UINT32_MAX, &iters)) ||
        (argc > 4 && (!sample_arg_u64("phase_ms", argv[4], 600000, &phase) || phase == 0)))
        return false;
    r->iters = (uint32_t)iters;
    r->phase_ms = (double)phase;
    return true;
}

int main(int argc, char **argv)
{
    ramp r = {.best_ms = INFINITY};
    char devname[300] = "none";
    double settled = 0;
    bool verified = false, parsed = false;
    int rc = hpl_context_create(&(hpl_context_desc){.log = sample_log}, &r.ctx);
    if (rc == HPL_OK) {
        hpl_device_info info;
        rc = hpl_device_get_info(r.ctx, 0, &info);
        parsed = rc == HPL_OK && parse(argc, argv, (info.type & HPL_DEVICE_GPU) != 0, &r);
        if (rc == HPL_OK && !parsed) {
            fprintf(stderr, "usage: %s [compute|memory [n [iters [phase_ms]]]]\n", argv[0]);
            hpl_context_destroy(r.ctx);
            return 2;
        }
    }
    if (rc == HPL_OK)
        rc = sample_device_list(r.ctx, &(int){0}, 1, devname, sizeof devname);
    if (rc == HPL_OK)
        rc = setup(&r);
    if (rc == HPL_OK)
        rc = measure(&r, &settled);
    if (rc == HPL_OK)
        verified = check(&r) && hpl_finish(r.ctx) == HPL_OK && sample_log_clean();
    else
        fprintf(stderr, "bench_ramp: %s: %s\n", hpl_error_name(rc), hpl_last_error());
    hpl_context_destroy(r.ctx);
    printf("RESULT name=bench_ramp devices=%s size=%" PRIu64 "x%" PRIu32 " time_ms=%.3f rate=%.1fms_ramp verified=%s\n",
           devname, r.n, r.iters, r.best_ms, settled, verified ? "yes" : "no");
    return verified ? 0 : 1;
}
