/* Batched submission (chapter 4c, hpl_device_stats.operations/submissions),
 * proven against the test's own model and host computations. A busy device
 * is one held by work that cannot complete until the test says so
 * (tests/hold.h: a unit test for that, it needs the VkDevice), so that
 * what follows is recorded while the device is certainly busy, whatever
 * the machine's load:
 *   - 200 dependent evals behind the held work share one submission per 64
 *     operations, and the exact integer chain x = 3x + k is right;
 *   - batched work is submitted without any host call: once the hold ends,
 *     the submissions counter grows by one by itself (the progress thread
 *     flushes) and hpl_stats shows the chain done without a wait;
 *   - an eval on device 1 that needs device 0's batched result gets it (the
 *     batch is flushed for the other device), in a 2-device ping-pong
 *     recorded while device 0 is held;
 *   - an idle device gets a lone eval at once: one operation, one
 *     submission;
 *   - a gate does not wait behind another device's flush watch: with
 *     device 0 held and a batch behind it, device 1's copy of device 2's
 *     data is done while device 0's batch is still unsubmitted (were the
 *     gate served behind the watch, the copy would wait for the hold: a
 *     watchdog ends it after WATCHDOG_S and the check fails).
 * The only clock is a bound on waits that must end (WATCHDOG_S): a
 * failure, never a success, depends on it. */
#define _POSIX_C_SOURCE 200809L
#include "hold.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#define N 4096
#define CHAIN 200
#define WATCHDOG_S 120

static const char *chain_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 3u + k; }\n";

/* y = x + 1 (ping-pong between devices) */
static const char *inc_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) x; hpl_out(uint, 1) y; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i) + 1u; }\n";

static hpl_device_stats stats_of(hpl_context *ctx, int device)
{
    hpl_stats s = {0};
    CHECK_OK(hpl_stats_get(ctx, &s));
    return s.device[device];
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

/* An array whose newest data is on `device`, to hold that device with. */
static hpl_array held_array(hpl_context *ctx, int device)
{
    hpl_array h = th_array(ctx, HPL_UINT32, 64, 0, 0);
    CHECK_OK(hpl_array_prefetch(ctx, h, device));
    CHECK_OK(hpl_finish(ctx));
    return h;
}

/* Ends a hold after WATCHDOG_S unless the test got there first: a wait
 * that would otherwise never end returns, and the test reports it. */
typedef struct watchdog {
    hold *h;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    bool done, fired;
} watchdog;

static void *watchdog_run(void *arg)
{
    watchdog *w = arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WATCHDOG_S;
    pthread_mutex_lock(&w->lock);
    while (!w->done && pthread_cond_timedwait(&w->done_cond, &w->lock, &until) == 0)
        ;
    w->fired = !w->done;
    pthread_mutex_unlock(&w->lock);
    if (w->fired)
        hold_release(w->h);
    return NULL;
}

static void watchdog_start(watchdog *w, hold *h)
{
    *w = (watchdog){.h = h};
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->done_cond, NULL);
    CHECK(pthread_create(&w->thread, NULL, watchdog_run, w) == 0, "pthread_create");
}

/* Stops the watchdog; returns whether it had to end the hold. */
static bool watchdog_stop(watchdog *w)
{
    pthread_mutex_lock(&w->lock);
    w->done = true;
    pthread_cond_signal(&w->done_cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->done_cond);
    return w->fired;
}

/* Device 0 held with an eval batched behind it: the progress thread
 * watches for device 0 to idle to submit that batch, which cannot happen
 * while the hold lasts. Then z = w on device 1, with w's newest data on
 * device 2 only: device 1's copies wait on its gate, which the progress
 * thread opens once device 2's copies are done. Were requests served in
 * order, the gate would wait for device 0's flush watch: z would come only
 * once device 0 idled, after the hold (the watchdog's). Not where devices
 * 0 and 1 are queues of one VkDevice: there device 1's work may queue
 * behind device 0's held work itself. */
static void gate_beside_flush_watch(hpl_context *ctx, hpl_kernel inc)
{
    const uint64_t n = 1u << 16;
    hpl_array x = th_array(ctx, HPL_UINT32, n, 0, 0), w = th_array(ctx, HPL_UINT32, n, 0, 0);
    hpl_array z = th_array(ctx, HPL_UINT32, n, 0, 0), a = th_array(ctx, HPL_UINT32, N, 0, 0);
    hpl_array b = th_array(ctx, HPL_UINT32, N, 0, 0), held = held_array(ctx, 0);
    uint32_t *px = th_access(ctx, x, HPL_WRITE);
    for (uint64_t i = 0; px && i < n; i++)
        px[i] = (uint32_t)(i * 7u);
    CHECK_OK(hpl_eval(ctx, inc, &(hpl_launch){.device = 2}, HPL_ARGS(hpl_arr(x), hpl_arr(w))));
    CHECK_OK(hpl_eval(ctx, inc, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(a), hpl_arr(b))));
    CHECK_OK(hpl_finish(ctx));
    hold h;
    hold_begin(&h, ctx, 0, held);
    CHECK_OK(hpl_eval(ctx, inc, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(b), hpl_arr(a))));
    hpl_device_stats before = stats_of(ctx, 0);
    watchdog dog;
    watchdog_start(&dog, &h);
    CHECK_OK(hpl_array_assign(ctx, z, w, 1));
    CHECK_OK(hpl_array_wait(ctx, z));
    hpl_device_stats after = stats_of(ctx, 0);
    bool fired = watchdog_stop(&dog);
    printf("gate beside a flush watch: z = w on device 1 from device 2 done %s, device 0's batch %s\n",
           fired ? "only once the hold ended" : "while device 0 was held",
           after.submissions == before.submissions ? "not submitted yet" : "submitted");
    /* Queues of one VkDevice (HPLVK_LOGICAL_DEVICES=queues) may share one
     * VkQueue: device 1's work then waits behind device 0's. */
    hpl_device_info i0, i1;
    bool shared = CHECK_OK(hpl_device_get_info(ctx, 0, &i0)) && CHECK_OK(hpl_device_get_info(ctx, 1, &i1)) &&
                  i0.shares_vkdevice && i1.shares_vkdevice && i0.physical_index == i1.physical_index;
    if (shared)
        printf("note: devices 0 and 1 are queues of one VkDevice: the order of device 0's flush and z is the queue's\n");
    CHECK(shared || (!fired && after.submissions == before.submissions),
          "device 1's gate (on device 2's copies) waited behind device 0's flush watch: z came %s",
          fired ? "only once the hold ended" : "after device 0's batch was submitted");
    hold_end(&h);
    const uint32_t *p = th_access(ctx, z, HPL_READ);
    uint64_t bad = 0;
    for (uint64_t i = 0; p && i < n; i++)
        bad += p[i] != (uint32_t)(i * 7u) + 1u;
    CHECK(p && bad == 0, "z = w (= x + 1) from device 2 to device 1: %" PRIu64 " wrong", bad);
    hpl_array arrays[] = {x, w, z, a, b, held};
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
        CHECK_OK(hpl_array_destroy(ctx, arrays[i]));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    hpl_context *ctx = th_context("cpu:3");
    hpl_kernel chain = th_kernel(ctx, chain_src), inc = th_kernel(ctx, inc_src);
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0), held = held_array(ctx, 0);

    /* A lone eval on an idle device: submitted at once. */
    fill_index(ctx, x);
    CHECK_OK(hpl_finish(ctx));
    hpl_device_stats before = stats_of(ctx, 0);
    CHECK_OK(hpl_eval(ctx, chain, NULL, HPL_ARGS(hpl_arr(x), hpl_u32(0))));
    hpl_device_stats after = stats_of(ctx, 0);
    CHECK(after.operations - before.operations == 1 && after.submissions - before.submissions == 1,
          "a lone eval on an idle device: %" PRIu64 " operations in %" PRIu64 " submissions, want 1 in 1",
          after.operations - before.operations, after.submissions - before.submissions);

    /* The chain behind a held device: one submission per 64 operations,
     * the rest without a host call once the hold ends, exact results. */
    fill_index(ctx, x);
    CHECK_OK(hpl_finish(ctx));
    hold h;
    hold_begin(&h, ctx, 0, held);
    before = stats_of(ctx, 0);
    for (uint32_t k = 0; k < CHAIN; k++)
        CHECK_OK(hpl_eval(ctx, chain, NULL, HPL_ARGS(hpl_arr(x), hpl_u32(k))));
    after = stats_of(ctx, 0);
    uint64_t ops = after.operations - before.operations, subs = after.submissions - before.submissions;
    printf("batching: %d dependent evals recorded behind a held device: %" PRIu64 " operations, %" PRIu64
           " submitted so far\n",
           CHAIN, ops, subs);
    CHECK(ops >= CHAIN, "%" PRIu64 " operations for %d evals", ops, CHAIN);
    /* Full batches (64 operations) go at once; the rest waits for the device. */
    CHECK(subs == ops / 64, "%" PRIu64 " submissions while the device was held for %" PRIu64
          " operations: want one per 64", subs, ops);
    /* No host call but hpl_stats_get: the progress thread submits the rest
     * once the held work completes. */
    hold_release(&h);
    uint64_t done_subs = subs;
    for (int waited_ms = 0; waited_ms < WATCHDOG_S * 1000; waited_ms += 2) {
        after = stats_of(ctx, 0);
        done_subs = after.submissions - before.submissions;
        if (done_subs > subs)
            break;
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    CHECK(done_subs > subs, "the batch behind the held device was never submitted without a host call "
                            "(%" PRIu64 " submissions)", done_subs);
    CHECK(done_subs == subs + 1, "%" PRIu64 " submissions for %" PRIu64 " batched operations, want %" PRIu64,
          done_subs, ops, subs + 1);
    expect_chain(ctx, x, "x = 3x + k, 200 evals behind a held device");
    hold_end(&h);

    /* Across devices: device 0 held, its result needed by device 1, whose
     * result device 0 needs, and so on: every batch reaches the queue
     * (else the read after the hold would never end). */
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0), b = th_array(ctx, HPL_UINT32, N, 0, 0);
    fill_index(ctx, a);
    CHECK_OK(hpl_finish(ctx));
    hold_begin(&h, ctx, 0, held);
    for (int k = 0; k < 10; k++) {
        CHECK_OK(hpl_eval(ctx, inc, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(a), hpl_arr(b))));
        CHECK_OK(hpl_eval(ctx, inc, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(b), hpl_arr(a))));
    }
    hold_release(&h);
    const uint32_t *p = th_access(ctx, a, HPL_READ);
    uint64_t bad = 0;
    for (uint32_t i = 0; p && i < N; i++)
        bad += p[i] != i + 20;
    CHECK(p && bad == 0, "ping-pong of 20 evals over 2 devices behind a held one: %" PRIu64 " wrong", bad);
    hold_end(&h);

    gate_beside_flush_watch(ctx, inc);
    return th_finish(ctx);
}
