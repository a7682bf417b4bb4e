/* The driver refuses a submission, and every wait on it ends with an error
 * that names it; the context is still destroyed cleanly (no hang, no leak,
 * nothing freed under work still on its way). The refusal is made here:
 * this program defines vkQueueSubmit, which the library's calls reach
 * before the loader's (test_driver_refuses does the same with
 * vkAllocateMemory).
 *   1. A loop of evals on two devices, its second submission refused: with
 *      a submit thread per device (HPLVK_SUBMIT_THREAD=1) and without (0,
 *      the default), an eval or the read after fails with
 *      HPL_ERROR_DEVICE_LOST, the read never returns the failed device's
 *      rows as if computed, later evals on it fail, and hpl_finish reports
 *      the failure. Again with the submissions let through after the
 *      refusal 20 ms late each, the array and kernel destroyed while they
 *      may still wait in the other device's submit thread.
 *   2. The host already blocked in vkWaitSemaphores (validation off: under
 *      validation the library polls), the refusal made 300 ms later by the
 *      submit thread: the thread signals the value that will never come, and
 *      the read returns the error within seconds.
 *   3. HPLVK_SUBMIT_THREAD=2 makes hpl_context_create fail, naming it.
 *   4. Each submission of a two-device stencil refused in turn, with and
 *      without submit threads and a transfer lane, on separate VkDevices
 *      and on queues of one, the refusal at once and 30 ms late: a read
 *      either fails or returns exactly the host's values (the grid, the
 *      second device's rows alone, sums that device made from all rows).
 * A watchdog fails the test when a run hangs. Afterwards a new context on
 * the same devices computes correctly. */
#define _GNU_SOURCE
#include "harness.h"
#include "sweep.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 1 << 16, STEPS = 20 };

static pthread_mutex_t arm_lock = PTHREAD_MUTEX_INITIALIZER;
static int let_through = -1; /* submissions to let through before refusing one; < 0: none */
static int delay_ms;         /* before returning the refusal */
static int slow_ms;          /* before each submission let through after the refusal */
static bool refused_one;     /* since arm() */
static atomic_int refused, passed;

VKAPI_ATTR VkResult VKAPI_CALL vkQueueSubmit(VkQueue queue, uint32_t count, const VkSubmitInfo *submits,
                                             VkFence fence)
{
    static PFN_vkQueueSubmit real;
    if (!real)
        real = (PFN_vkQueueSubmit)dlsym(RTLD_NEXT, "vkQueueSubmit");
    pthread_mutex_lock(&arm_lock);
    bool refuse = let_through == 0;
    if (let_through >= 0)
        let_through--;
    int delay = delay_ms, slow = refused_one ? slow_ms : 0;
    refused_one |= refuse;
    pthread_mutex_unlock(&arm_lock);
    if (!refuse) {
        if (slow)
            usleep((useconds_t)slow * 1000u);
        atomic_fetch_add(&passed, 1);
        return real(queue, count, submits, fence);
    }
    if (delay)
        usleep((useconds_t)delay * 1000u);
    atomic_fetch_add(&refused, 1);
    return VK_ERROR_DEVICE_LOST;
}

static void arm(int after, int delay, int slow)
{
    pthread_mutex_lock(&arm_lock);
    let_through = after;
    delay_ms = delay;
    slow_ms = slow;
    refused_one = false;
    pthread_mutex_unlock(&arm_lock);
}

static const char *step_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_inout(uint, 1) x; };\n"
                              "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 3u + 1u; }\n";

static hpl_context *open_two(bool validation)
{
    hpl_context_desc desc = {.devices = th_devices("cpu:2"), .zero_copy = HPL_ZERO_COPY_OFF};
    if (validation)
        return th_context_desc(&desc);
    th_prepare_desc(&desc);
    desc.validation = false;
    /* The test environment's HPLVK_VALIDATION=1 would turn it on all the same. */
    const char *env = getenv("HPLVK_VALIDATION");
    char saved[16] = "";
    if (env)
        snprintf(saved, sizeof saved, "%s", env);
    unsetenv("HPLVK_VALIDATION");
    hpl_context *ctx = NULL;
    int rc = hpl_context_create(&desc, &ctx);
    if (env)
        setenv("HPLVK_VALIDATION", saved, 1);
    if (!CHECK_OK(rc))
        exit(1);
    return ctx;
}

/* Steps x (split over both devices) until one fails; returns the first
 * failure's code (HPL_OK: none). */
static int run_steps(hpl_context *ctx, hpl_kernel k, hpl_array x)
{
    hpl_launch both = {.devices = {0, 1}, .device_count = 2};
    for (int s = 0; s < STEPS; s++) {
        int rc = hpl_eval(ctx, k, &both, HPL_ARGS(hpl_part1(x, 0)));
        if (rc != HPL_OK)
            return rc;
    }
    return HPL_OK;
}

/* 1 and 2: a refusal `after` submissions from the first step on, the
 * submissions let through after it each `slow` ms late. */
static void refusal(const char *what, bool validation, int after, int delay, int slow)
{
    th_note("%s", what);
    hpl_context *ctx = open_two(validation);
    hpl_kernel k = th_kernel(ctx, step_src);
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
    CHECK_OK(hpl_array_fill(ctx, x, &(uint32_t){1}, HPL_ON_HOST));
    /* Both devices hold their parts before the refusal. */
    CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){.devices = {0, 1}, .device_count = 2}, HPL_ARGS(hpl_part1(x, 0))));
    CHECK_OK(hpl_finish(ctx));
    int before = atomic_load(&refused);
    arm(after, delay, slow);
    double t0 = th_now();
    int eval_rc = run_steps(ctx, k, x);
    static uint32_t host[N];
    int read_rc = hpl_array_read(ctx, x, host, sizeof host);
    char last_error[512];
    snprintf(last_error, sizeof last_error, "%s", hpl_last_error());
    double seconds = th_now() - t0;
    CHECK(atomic_load(&refused) == before + 1, "%s: %d submissions refused, want 1", what,
          atomic_load(&refused) - before);
    CHECK(eval_rc == HPL_ERROR_DEVICE_LOST || (eval_rc == HPL_OK && read_rc == HPL_ERROR_DEVICE_LOST),
          "%s: eval %s, read %s", what, hpl_error_string(eval_rc), hpl_error_string(read_rc));
    CHECK(read_rc != HPL_OK, "%s: the read succeeded after a refused submission", what);
    if (read_rc == HPL_ERROR_DEVICE_LOST)
        CHECK(th_contains(last_error, "submission") || th_contains(last_error, "vkQueueSubmit"),
              "%s: the read's error does not name the refused submission: %s", what, last_error);
    /* A bound for a wait that never ends (the library has no timeout of
     * its own), not for speed: the failure comes out at once. */
    CHECK(seconds < 120.0, "%s: the failure took %.1f s to come out", what, seconds);
    CHECK_FAILS(run_steps(ctx, k, x), HPL_ERROR_DEVICE_LOST, "failed earlier");
    CHECK(hpl_finish(ctx) != HPL_OK, "%s: hpl_finish reported nothing", what);
    /* Freed while the other device's work may still be on its way to the
     * queue (slow): each destroy waits for it (validation names a pipeline
     * or buffer freed under it). */
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    hpl_context_destroy(ctx);
    arm(-1, 0, 0);
    sweep_run_ended();
}

/* 4. Each submission of sweep.h's workload refused in turn. A refusal in
 * a submit thread comes out later than the eval that made the submission,
 * so any call may report it; one made before the grid's read fails it. */
static int refusals(void)
{
    return atomic_load(&refused);
}

/* One run, the submission `refuse_at` on refused (< 0: none), `delay` ms
 * late; returns the number of submissions it made. */
static int sweep_run(const char *config, bool validation, int delay, int refuse_at)
{
    hpl_context *ctx = open_two(validation);
    int refused0 = atomic_load(&refused), passed0 = atomic_load(&passed);
    arm(refuse_at, delay, 0);
    sweep_result r;
    sweep_workload(ctx, (sweep_hooks){.faults = refusals}, &r);
    int finish_rc = hpl_finish(ctx);
    char what[256];
    snprintf(what, sizeof what, "%s, submission %d refused", config, refuse_at);
    static const int allowed[] = {HPL_ERROR_DEVICE_LOST, 0};
    sweep_check(what, &r, allowed);
    if (r.faults_before_grid_read > refused0)
        CHECK(r.grid_rc == HPL_ERROR_DEVICE_LOST, "%s: the grid's read returned %s", what,
              hpl_error_string(r.grid_rc));
    else
        CHECK(r.steps_rc == HPL_OK && r.grid_rc == HPL_OK, "%s: nothing refused before the grid's read: %s, read %s",
              what, hpl_error_string(r.steps_rc), hpl_error_string(r.grid_rc));
    if (atomic_load(&refused) > refused0)
        CHECK(finish_rc != HPL_OK, "%s: hpl_finish reported nothing", what);
    hpl_context_destroy(ctx);
    arm(-1, 0, 0);
    sweep_run_ended();
    return atomic_load(&passed) - passed0 + (atomic_load(&refused) - refused0);
}

static void sweep(const char *thread, const char *lane, const char *logical, bool validation, int delay)
{
    char config[192];
    snprintf(config, sizeof config, "HPLVK_SUBMIT_THREAD=%s HPLVK_TRANSFER_LANE=%s HPLVK_LOGICAL_DEVICES=%s%s, %d ms", thread,
             lane, logical, validation ? "" : ", validation off", delay);
    setenv("HPLVK_SUBMIT_THREAD", thread, 1);
    setenv("HPLVK_TRANSFER_LANE", lane, 1);
    setenv("HPLVK_LOGICAL_DEVICES", logical, 1);
    int total = sweep_run(config, validation, 0, -1);
    th_note("%s: every one of %d submissions refused in turn", config, total);
    CHECK(total >= 2 * SWEEP_STEPS, "%s: %d submissions in %d two-device steps", config, total, SWEEP_STEPS);
    for (int at = 0; at < total; at++)
        sweep_run(config, validation, delay, at);
    unsetenv("HPLVK_TRANSFER_LANE");
    unsetenv("HPLVK_LOGICAL_DEVICES");
}

/* After the failures: a new context computes x right. */
static void still_works(void)
{
    th_note("a new context after the refusals");
    hpl_context *ctx = open_two(true);
    hpl_kernel k = th_kernel(ctx, step_src);
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
    CHECK_OK(hpl_array_fill(ctx, x, &(uint32_t){1}, HPL_ON_HOST));
    CHECK_OK(run_steps(ctx, k, x));
    uint32_t want = 1;
    for (int s = 0; s < STEPS; s++)
        want = want * 3u + 1u;
    static uint32_t host[N];
    CHECK_OK(hpl_array_read(ctx, x, host, sizeof host));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += host[i] != want;
    CHECK(bad == 0, "%d of %d elements differ from %u", bad, N, want);
    hpl_context_destroy(ctx);
}

int main(void)
{
    sweep_watchdog_start();
    setenv("HPLVK_SUBMIT_THREAD", "1", 1);
    refusal("submit thread: the second submission refused", true, 1, 0, 0);
    refusal("submit thread: the second refused, the other device's next ones 20 ms late each", true, 1, 0, 20);
    setenv("HPLVK_SUBMIT_THREAD", "0", 1);
    refusal("no submit thread: the second submission refused", true, 1, 0, 0);
    refusal("no submit thread: the second refused, the next ones 20 ms late each", true, 1, 0, 20);
    setenv("HPLVK_SUBMIT_THREAD", "1", 1);
    refusal("submit thread, validation off: the second refused 300 ms after the host began waiting", false, 1, 300,
            0);
    setenv("HPLVK_SUBMIT_THREAD", "2", 1);
    hpl_context_desc desc = {.devices = th_devices("cpu")};
    th_prepare_desc(&desc);
    hpl_context *bad = NULL;
    CHECK_FAILS(hpl_context_create(&desc, &bad), HPL_ERROR_INVALID_ARGUMENT, "HPLVK_SUBMIT_THREAD='2'");
    sweep_reference();
    /* Separate VkDevices wait for each other through the progress thread's
     * gates; logical devices on queues of one VkDevice wait on each
     * other's timelines directly, but only with validation off (peer.c).
     * A refusal 30 ms late lets the other device's work that waits for it
     * be recorded first, and reach its submit thread. */
    sweep("0", "off", "vkdevices", true, 0);
    sweep("0", "shared", "vkdevices", true, 0);
    sweep("1", "off", "vkdevices", true, 0);
    sweep("1", "shared", "vkdevices", true, 0);
    sweep("1", "off", "vkdevices", true, 30);
    sweep("0", "off", "queues", true, 0);
    sweep("1", "shared", "queues", true, 0);
    sweep("0", "off", "queues", false, 0);
    sweep("1", "off", "queues", false, 0);
    sweep("1", "off", "queues", false, 30);
    unsetenv("HPLVK_SUBMIT_THREAD");
    still_works();
    sweep_watchdog_stop();
    return th_finish(NULL);
}
