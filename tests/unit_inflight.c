/* Bounded work in flight (hplvk.h chapter 7, "Work in flight"), on a device
 * held back by a timeline semaphore the test signals itself (the wait of
 * an application's Vulkan work, submit.c: hpl__submit_after_external), so
 * that nothing the device is given completes until the test says so,
 * whatever the machine's speed:
 *   - with max_in_flight 8, a thread's evals stop inside hpl_eval once the
 *     device has 8 operations in flight (the hold counts as one), and after
 *     every call the device has at most 8; once the hold ends they all run,
 *     and the array holds what they computed;
 *   - a device that fails while a call waits ends the wait with its error:
 *     the call fails with HPL_ERROR_DEVICE_LOST naming the device;
 *   - a burst of 2000 evals, each its own submission, grows the command
 *     buffer ring and the argument chunks of the held device; hpl_finish
 *     gives them back down to the reserve (64 command buffers, 4 chunks);
 *   - a bound that is not a whole number from 1 to 65536, from
 *     HPLVK_MAX_IN_FLIGHT or hpl_context_desc, fails hpl_context_create
 *     naming it.
 * (A unit test: it holds a device and reads its counts through the
 * library's internals.) */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "inflight.h"
#include "submit.h"
#include "vk.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { N = 256, MAX = 8, CALLS = 3 * MAX, BURST = 2000 };

static const char *inc_src = "#include <hplvk.glsl>\n"
                             "hpl_args { hpl_inout(uint, 1) x; };\n"
                             "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) + 1u; }\n";

/* Eight arrays: an argument block of several hundred bytes, so that a
 * burst fills argument chunks (64 KiB each) quickly. */
static const char *wide_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_inout(uint, 1) x; hpl_in(uint, 3) a; hpl_in(uint, 3) b; "
                              "hpl_in(uint, 3) c; hpl_in(uint, 3) d; hpl_in(uint, 3) e; hpl_in(uint, 3) f; "
                              "hpl_in(uint, 3) g; };\n"
                              "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) + 1u; }\n";

/* Holds device d back: its later work waits for *hold to reach 1. */
static void hold_device(hpl_context *ctx, hpl__device *d, VkSemaphore *hold)
{
    CHECK_OK(hpl__timeline_create(d, false, hold));
    hpl__point at;
    HPL__LOCK(ctx);
    CHECK_OK(hpl__submit_after_external(ctx, d, *hold, 1, &at));
    HPL__UNLOCK(ctx);
}

static uint64_t in_flight(hpl_context *ctx, hpl__device *d)
{
    HPL__LOCK(ctx);
    uint64_t n = hpl__inflight_count(d);
    HPL__UNLOCK(ctx);
    return n;
}

typedef struct evals {
    hpl_context *ctx;
    hpl_kernel k;
    hpl_array x;
    atomic_int returned; /* calls that returned */
    atomic_bool done;
    int rc;              /* the first failure */
    char message[512];   /* its message */
    uint64_t most;       /* operations in flight on device 0 after a call, at most */
} evals;

static void *run_evals(void *arg)
{
    evals *e = arg;
    for (int i = 0; i < CALLS && e->rc == HPL_OK; i++) {
        e->rc = hpl_eval(e->ctx, e->k, NULL, HPL_ARGS(hpl_arr(e->x)));
        if (e->rc != HPL_OK)
            snprintf(e->message, sizeof e->message, "%s", hpl_last_error());
        uint64_t n = in_flight(e->ctx, &e->ctx->devices[0]);
        e->most = n > e->most ? n : e->most;
        atomic_fetch_add(&e->returned, 1);
    }
    atomic_store(&e->done, true);
    return NULL;
}

static void nap_ms(int ms)
{
    nanosleep(&(struct timespec){0, ms * 1000000L}, NULL);
}

/* Returns once the thread has made `calls` calls and then either ended or
 * made no call for half a second (it waits inside hpl_eval: the device is
 * held); the calls it had made then. */
static int wait_stuck(evals *e, int calls)
{
    while (atomic_load(&e->returned) < calls && !atomic_load(&e->done))
        nap_ms(1);
    int seen = atomic_load(&e->returned), still = 0;
    while (!atomic_load(&e->done) && still < 500) {
        nap_ms(1);
        int now = atomic_load(&e->returned);
        still = now == seen ? still + 1 : 0;
        seen = now;
    }
    return seen;
}

static hpl_context *context(uint32_t max_in_flight)
{
    return th_context_desc(&(hpl_context_desc){.devices = th_devices("cpu"), .max_in_flight = max_in_flight});
}

/* A context bounded at MAX whose device 0 is held (*hold signals it) while
 * a thread of its own runs e's evals (*t). */
static hpl_context *start_held(evals *e, VkSemaphore *hold, pthread_t *t)
{
    hpl_context *ctx = context(MAX);
    *e = (evals){.ctx = ctx, .k = th_kernel(ctx, inc_src), .x = th_array(ctx, HPL_UINT32, N, 0, 0)};
    CHECK_OK(hpl_array_fill(ctx, e->x, &(uint32_t){0}, 0));
    CHECK_OK(hpl_finish(ctx));
    hold_device(ctx, &ctx->devices[0], hold);
    pthread_create(t, NULL, run_evals, e);
    return ctx;
}

static void bound_holds(void)
{
    evals e;
    VkSemaphore hold;
    pthread_t t;
    hpl_context *ctx = start_held(&e, &hold, &t);
    hpl__device *d = &ctx->devices[0];
    /* The hold and MAX - 1 evals are in flight: the next call waits. */
    int returned = wait_stuck(&e, MAX - 1);
    hpl__semaphore_signal(d, hold, 1);
    pthread_join(t, NULL);
    printf("held: %d of %d evals returned; after each call, at most %llu operations in flight (bound %d)\n",
           returned, CALLS, (unsigned long long)e.most, MAX);
    CHECK_OK(e.rc);
    CHECK(returned == MAX - 1, "%d evals returned while the device was held, not %d", returned, MAX - 1);
    CHECK(e.most <= MAX, "%llu operations in flight after a call, past the bound of %d", (unsigned long long)e.most,
          MAX);
    const uint32_t *p = th_access(ctx, e.x, HPL_READ);
    int wrong = 0;
    for (int i = 0; p && i < N; i++)
        wrong += p[i] != CALLS;
    CHECK(p && wrong == 0, "%d of %d elements are not %d", wrong, N, CALLS);
    CHECK_OK(hpl_finish(ctx));
    vkDestroySemaphore(d->device, hold, NULL);
    hpl_context_destroy(ctx);
}

static void failure_ends_wait(void)
{
    evals e;
    VkSemaphore hold;
    pthread_t t;
    hpl_context *ctx = start_held(&e, &hold, &t);
    hpl__device *d = &ctx->devices[0];
    wait_stuck(&e, MAX - 1);
    /* As a lost device: failed, then what it was given settles (a failed
     * wait still waits for it: submit.c, settle_points). */
    hpl__device_fail(d, HPL_ERROR_DEVICE_LOST);
    hpl__semaphore_signal(d, hold, 1);
    pthread_join(t, NULL);
    CHECK(e.rc == HPL_ERROR_DEVICE_LOST, "the waiting eval returned %s", hpl_error_name(e.rc));
    CHECK(th_contains(e.message, d->info.name), "the message does not name the device: %s", e.message);
    printf("a failure during the wait: %s\n", e.message);
    vkDeviceWaitIdle(d->device);
    vkDestroySemaphore(d->device, hold, NULL);
    hpl_context_destroy(ctx);
}

/* A burst the held device cannot run, each eval its own submission (as a
 * host wait or another device's need would make it): every one a command
 * buffer, and argument blocks filling chunks. hpl_finish gives back what
 * the burst grew. */
static void burst_given_back(void)
{
    hpl_context *ctx = context(65536);
    hpl_kernel k = th_kernel(ctx, wide_src);
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0), small = th_array(ctx, HPL_UINT32, 2, 2, 2);
    CHECK_OK(hpl_array_fill(ctx, x, &(uint32_t){0}, 0));
    CHECK_OK(hpl_array_fill(ctx, small, &(uint32_t){0}, 0));
    CHECK_OK(hpl_finish(ctx));
    hpl__device *d = &ctx->devices[0];
    VkSemaphore hold;
    hold_device(ctx, d, &hold);
    int rc = HPL_OK;
    for (int i = 0; i < BURST && rc == HPL_OK; i++) {
        rc = hpl_eval(ctx, k, NULL,
                      HPL_ARGS(hpl_arr(x), hpl_arr(small), hpl_arr(small), hpl_arr(small), hpl_arr(small),
                               hpl_arr(small), hpl_arr(small), hpl_arr(small)));
        if (rc == HPL_OK)
            rc = hpl__batch_flush(d);
    }
    CHECK_OK(rc);
    uint32_t ring = d->ring.count, chunks = d->chunk_count;
    hpl__semaphore_signal(d, hold, 1);
    CHECK_OK(hpl_finish(ctx));
    printf("a burst of %d evals: %u command buffers and %u argument chunks, after hpl_finish %u and %u\n", BURST,
           ring, chunks, d->ring.count, d->chunk_count);
    CHECK(ring >= BURST, "the burst made %u command buffers, not %d or more", ring, BURST);
    CHECK(chunks > 4, "the burst filled %u argument chunks: too few to see them given back", chunks);
    CHECK(d->ring.count <= 64, "%u command buffers are left after hpl_finish", d->ring.count);
    CHECK(d->chunk_count <= 4, "%u argument chunks are left after hpl_finish", d->chunk_count);
    const uint32_t *p = th_access(ctx, x, HPL_READ);
    int wrong = 0;
    for (int i = 0; p && i < N; i++)
        wrong += p[i] != BURST;
    CHECK(p && wrong == 0, "%d of %d elements are not %d", wrong, N, BURST);
    /* Work after the trim finds room again. */
    CHECK_OK(hpl_eval(ctx, k, NULL,
                      HPL_ARGS(hpl_arr(x), hpl_arr(small), hpl_arr(small), hpl_arr(small), hpl_arr(small),
                               hpl_arr(small), hpl_arr(small), hpl_arr(small))));
    p = th_access(ctx, x, HPL_READ);
    CHECK(p && p[0] == BURST + 1 && p[N - 1] == BURST + 1, "after the trim, x[0] is %u", p ? p[0] : 0);
    CHECK_OK(hpl_finish(ctx));
    vkDestroySemaphore(d->device, hold, NULL);
    hpl_context_destroy(ctx);
}

static void bad_bounds(void)
{
    static const char *bad[] = {"0", "65537", "12x", "-3", " 8", "99999999999999999999999"};
    hpl_context *ctx = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("HPLVK_MAX_IN_FLIGHT", bad[i], 1);
        char want[80];
        snprintf(want, sizeof want, "HPLVK_MAX_IN_FLIGHT='%s'", bad[i]);
        CHECK_FAILS(hpl_context_create(&(hpl_context_desc){.devices = th_devices("cpu")}, &ctx),
                    HPL_ERROR_INVALID_ARGUMENT, want);
    }
    /* The description's bound comes first; the variable is not read then. */
    ctx = context(16);
    CHECK(ctx && ctx->max_in_flight == 16, "max_in_flight 16 in the description gave %u", ctx ? ctx->max_in_flight : 0);
    hpl_context_destroy(ctx);
    setenv("HPLVK_MAX_IN_FLIGHT", "300", 1);
    ctx = context(0);
    CHECK(ctx && ctx->max_in_flight == 300, "HPLVK_MAX_IN_FLIGHT=300 gave %u", ctx ? ctx->max_in_flight : 0);
    hpl_context_destroy(ctx);
    unsetenv("HPLVK_MAX_IN_FLIGHT");
    ctx = context(0);
    CHECK(ctx && ctx->max_in_flight == 1024, "the default bound is %u", ctx ? ctx->max_in_flight : 0);
    hpl_context_destroy(ctx);
    CHECK_FAILS(hpl_context_create(&(hpl_context_desc){.devices = th_devices("cpu"), .max_in_flight = 65537}, &ctx),
                HPL_ERROR_INVALID_ARGUMENT, "hpl_context_desc.max_in_flight is 65537");
}

int main(void)
{
    unsetenv("HPLVK_MAX_IN_FLIGHT");
    bound_holds();
    failure_ends_wait();
    burst_given_back();
    bad_bounds();
    return th_finish(NULL);
}
