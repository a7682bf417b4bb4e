/* Batched submission (chapter 4c, hpl_device_stats.operations/submissions),
 * proven against the test's own model and host computations. A busy device
 * is made with a "spin" kernel whose run time is calibrated first (300 ms or
 * more, whatever the device), so that what follows is recorded while
 * the device is certainly busy:
 *   - 200 dependent evals behind the spin share a handful of submissions
 *     (not one each), and the exact integer chain x = 3x + k is right;
 *   - batched work is submitted without any host call: after the spin, the
 *     submissions counter grows by itself (the progress thread flushes) and
 *     hpl_stats shows the chain done without a wait;
 *   - an eval on device 1 that needs device 0's batched result gets it (the
 *     batch is flushed for the other device), in a 2-device ping-pong;
 *   - an idle device gets a lone eval at once: one operation, one
 *     submission;
 *   - a gate does not wait behind another device's flush watch: with
 *     device 0 busy for long and a batch behind it, device 1's copy of
 *     device 2's data is done while device 0's batch is still unsubmitted. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#define N 4096
#define CHAIN 200

/* `launch.global` invocations loop 50 000 times each: long on any device
 * when there are enough of them. (Mesa 22.3's llvmpipe ends a kernel's loops
 * after 65 535 iterations in all per invocation: length comes from the
 * number of invocations.) Every invocation writes one of y's 64 elements:
 * the values do not matter. */
static const char *spin_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 1) y; };\n"
    "void main() { uint i = hpl_global_id.x; float v = float(i);\n"
    "    for (uint k = 0u; k < 50000u; k++) v = v * 0.999 + 0.5;\n"
    "    hpl_at(y, i % 64u) = v; }\n";

static const char *chain_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 3u + k; }\n";

/* y = x + 1 (ping-pong between devices) */
static const char *inc_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) x; hpl_out(uint, 1) y; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i) + 1u; }\n";

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static hpl_device_stats stats_of(hpl_context *ctx, int device)
{
    hpl_stats s = {0};
    CHECK_OK(hpl_stats_get(ctx, &s));
    return s.device[device];
}

/* Milliseconds of one spin eval on device 0, the least of two runs (a
 * loaded machine only ever makes a run look longer). */
static double spin_ms(hpl_context *ctx, hpl_kernel spin, hpl_array y, uint32_t size)
{
    double best = 1e30;
    for (int r = 0; r < 2; r++) {
        double t0 = now_ms();
        CHECK_OK(hpl_eval(ctx, spin, &(hpl_launch){.global = {size}}, HPL_ARGS(hpl_arr(y))));
        CHECK_OK(hpl_array_wait(ctx, y));
        double t = now_ms() - t0;
        best = t < best ? t : best;
    }
    return best;
}

/* The domain that makes the spin kernel run at least `ms` on device 0. */
static uint32_t calibrate(hpl_context *ctx, hpl_kernel spin, hpl_array y, double ms)
{
    /* The first eval makes the pipeline: not part of the kernel's time. */
    spin_ms(ctx, spin, y, 64);
    uint32_t size = 64;
    for (;;) {
        double t = spin_ms(ctx, spin, y, size);
        if (t >= ms || size >= (1u << 30))
            return size;
        double grow = t < ms / 16 ? 16.0 : ms / t * 1.5;
        size = size * grow >= (double)(1u << 30) ? 1u << 30 : (uint32_t)(size * grow);
    }
}

static void expect_chain(hpl_context *ctx, hpl_array x, const char *what)
{
    const uint32_t *p = th_access(ctx, x, HPL_READ);
    uint64_t bad = 0;
    for (uint32_t i = 0; p && i < N; i++) {
        uint32_t v = i;
        for (uint32_t k = 0; k < CHAIN; k++)
            v = v * 3u + k;
        bad += p[i] != v;
    }
    CHECK(p && bad == 0, "%s: %" PRIu64 " of %d elements wrong", what, bad, N);
}

static void fill_index(hpl_context *ctx, hpl_array x)
{
    uint32_t *p = th_access(ctx, x, HPL_WRITE);
    for (uint32_t i = 0; p && i < N; i++)
        p[i] = i;
}

/* Device 0 spins for long (two spins' worth in one kernel: a y dimension of
 * 2) with an eval batched behind it: the progress thread watches for device
 * 0 to idle to submit that batch. Then z = w on device 1, with w's newest
 * data on device 2 only: device 2 copies w out (tens of MiB: it takes a
 * while) and device 1's copies wait on its gate, which the progress thread
 * opens once device 2's are done. Were requests served in order, the gate
 * would wait for device 0's flush watch: z would come only once device 0
 * idled and its batch was submitted. Copies only on devices 2 and 1:
 * Lavapipe runs them on each device's queue thread, while the kernels of
 * all its devices share one thread pool (a kernel there would wait for
 * device 0's spin). Not where devices 0 and 1 are queues of one VkDevice:
 * there device 0's spin holds the cores device 1 needs. */
static void gate_beside_flush_watch(hpl_context *ctx, hpl_kernel spin, hpl_kernel inc, uint32_t spin_size)
{
    const uint64_t n = 4u << 20;
    hpl_array y = th_array(ctx, HPL_FLOAT32, 64, 0, 0), x = th_array(ctx, HPL_UINT32, n, 0, 0);
    hpl_array w = th_array(ctx, HPL_UINT32, n, 0, 0), z = th_array(ctx, HPL_UINT32, n, 0, 0);
    uint32_t *px = th_access(ctx, x, HPL_WRITE);
    for (uint64_t i = 0; px && i < n; i++)
        px[i] = (uint32_t)(i * 7u);
    CHECK_OK(hpl_eval(ctx, inc, &(hpl_launch){.device = 2}, HPL_ARGS(hpl_arr(x), hpl_arr(w))));
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_eval(ctx, spin, &(hpl_launch){.global = {spin_size, 2}, .device = 0}, HPL_ARGS(hpl_arr(y))));
    CHECK_OK(hpl_eval(ctx, spin, &(hpl_launch){.global = {64}, .device = 0}, HPL_ARGS(hpl_arr(y))));
    hpl_device_stats before = stats_of(ctx, 0);
    double t0 = now_ms();
    CHECK_OK(hpl_array_assign(ctx, z, w, 1));
    CHECK_OK(hpl_array_wait(ctx, z));
    double waited = now_ms() - t0;
    hpl_device_stats after = stats_of(ctx, 0);
    printf("gate beside a flush watch: z = w on device 1 from device 2 done after %.1f ms, device 0's batch %s\n",
           waited, after.submissions == before.submissions ? "not submitted yet" : "submitted");
    /* Queues of one VkDevice (HPLVK_LOGICAL_DEVICES=queues) share the GPU's
     * cores: device 1's work runs only once device 0's spin leaves them,
     * whatever the progress thread does. */
    hpl_device_info i0, i1;
    bool shared = CHECK_OK(hpl_device_get_info(ctx, 0, &i0)) && CHECK_OK(hpl_device_get_info(ctx, 1, &i1)) &&
                  i0.shares_vkdevice && i1.shares_vkdevice && i0.physical_index == i1.physical_index;
    if (shared)
        printf("note: devices 0 and 1 are queues of one VkDevice: the order of device 0's flush and z is the GPU's\n");
    CHECK(shared || after.submissions == before.submissions,
          "device 1's gate (on device 2's copies) waited behind device 0's flush watch: z came after %.1f ms, "
          "once device 0 idled",
          waited);
    const uint32_t *p = th_access(ctx, z, HPL_READ);
    uint64_t bad = 0;
    for (uint64_t i = 0; p && i < n; i++)
        bad += p[i] != (uint32_t)(i * 7u) + 1u;
    CHECK(p && bad == 0, "z = w (= x + 1) from device 2 to device 1: %" PRIu64 " wrong", bad);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, w));
    CHECK_OK(hpl_array_destroy(ctx, z));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    hpl_context *ctx = th_context("cpu:3");
    hpl_kernel spin = th_kernel(ctx, spin_src), chain = th_kernel(ctx, chain_src), inc = th_kernel(ctx, inc_src);
    hpl_array y = th_array(ctx, HPL_FLOAT32, 64, 0, 0), x = th_array(ctx, HPL_UINT32, N, 0, 0);
    uint32_t spin_size = calibrate(ctx, spin, y, 300.0);

    /* A lone eval on an idle device: submitted at once. */
    fill_index(ctx, x);
    CHECK_OK(hpl_finish(ctx));
    hpl_device_stats before = stats_of(ctx, 0);
    CHECK_OK(hpl_eval(ctx, chain, NULL, HPL_ARGS(hpl_arr(x), hpl_u32(0))));
    hpl_device_stats after = stats_of(ctx, 0);
    CHECK(after.operations - before.operations == 1 && after.submissions - before.submissions == 1,
          "a lone eval on an idle device: %" PRIu64 " operations in %" PRIu64 " submissions, want 1 in 1",
          after.operations - before.operations, after.submissions - before.submissions);

    /* The chain behind a busy device: few submissions, all of them without
     * a host call, exact results. */
    fill_index(ctx, x);
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_eval(ctx, spin, &(hpl_launch){.global = {spin_size}}, HPL_ARGS(hpl_arr(y))));
    before = stats_of(ctx, 0);
    double t0 = now_ms();
    for (uint32_t k = 0; k < CHAIN; k++)
        CHECK_OK(hpl_eval(ctx, chain, NULL, HPL_ARGS(hpl_arr(x), hpl_u32(k))));
    double record_ms = now_ms() - t0;
    after = stats_of(ctx, 0);
    uint64_t ops = after.operations - before.operations, subs = after.submissions - before.submissions;
    printf("batching: %d dependent evals recorded in %.2f ms behind a busy device: %" PRIu64
           " operations, %" PRIu64 " submitted so far\n",
           CHAIN, record_ms, ops, subs);
    CHECK(ops >= CHAIN, "%" PRIu64 " operations for %d evals", ops, CHAIN);
    /* Full batches (64 operations) go at once; the rest waits for the device. */
    CHECK(subs == ops / 64, "%" PRIu64 " submissions while the device was busy for %" PRIu64
          " operations: want one per 64", subs, ops);
    /* No host call but hpl_stats_get: the progress thread submits the rest. */
    uint64_t done_subs = subs;
    for (double w0 = now_ms(); now_ms() - w0 < 20000.0;) {
        after = stats_of(ctx, 0);
        done_subs = after.submissions - before.submissions;
        if (done_subs > subs)
            break;
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    CHECK(done_subs > subs, "the batch behind the busy device was never submitted without a host call "
                            "(%" PRIu64 " submissions)", done_subs);
    CHECK(done_subs == subs + 1, "%" PRIu64 " submissions for %" PRIu64 " batched operations, want %" PRIu64,
          done_subs, ops, subs + 1);
    expect_chain(ctx, x, "x = 3x + k, 200 evals behind a busy device");

    /* Across devices: device 0 busy, its result needed by device 1, whose
     * result device 0 needs, and so on: every batch reaches the queue. */
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0), b = th_array(ctx, HPL_UINT32, N, 0, 0);
    fill_index(ctx, a);
    CHECK_OK(hpl_eval(ctx, spin, &(hpl_launch){.global = {spin_size / 4}}, HPL_ARGS(hpl_arr(y))));
    for (int k = 0; k < 10; k++) {
        CHECK_OK(hpl_eval(ctx, inc, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(a), hpl_arr(b))));
        CHECK_OK(hpl_eval(ctx, inc, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(b), hpl_arr(a))));
    }
    const uint32_t *p = th_access(ctx, a, HPL_READ);
    uint64_t bad = 0;
    for (uint32_t i = 0; p && i < N; i++)
        bad += p[i] != i + 20;
    CHECK(p && bad == 0, "ping-pong of 20 evals over 2 devices behind a busy one: %" PRIu64 " wrong", bad);

    gate_beside_flush_watch(ctx, spin, inc, spin_size);
    return th_finish(ctx);
}
