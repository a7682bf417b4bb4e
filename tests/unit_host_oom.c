/* Each host allocation of the library during sweep.h's two-device workload
 * refused in turn (lib/base/util.c: hpl__fault_host_alloc), with and
 * without submit threads and a transfer lane: every call returns success
 * or HPL_ERROR_OUT_OF_HOST_MEMORY, nothing hangs, crashes, leaks (the ASan
 * build) or trips validation, a read that succeeds where every call
 * before it did returns the host's values, and a step that failed changed
 * no array (an eval split over devices takes what its subkernels record
 * with before the first records: command buffers, cross-device waits,
 * argument blocks; a halos-first eval's interiors find everything in place
 * after their bands ran). (A unit test: it reaches the library's internal
 * fault hook.) */
#include "common.h"
#include "harness.h"
#include "sweep.h"

#include <stdio.h>
#include <stdlib.h>

/* The countdown the next run starts from. */
static int start;

static void arm(void)
{
    __atomic_store_n(&hpl__fault_host_alloc, start, __ATOMIC_RELAXED);
}

/* Allocations made since arm(). */
static int used_since(int start)
{
    int left = __atomic_load_n(&hpl__fault_host_alloc, __ATOMIC_RELAXED);
    return left < 0 ? start + 1 : start - left;
}

/* One run, the allocation `refuse_at` on refused (< 0: none); returns the
 * number of allocations it made. */
static int sweep_run(const char *config, int refuse_at)
{
    hpl_context *ctx = th_context_desc(
        &(hpl_context_desc){.devices = th_devices("cpu:2"), .zero_copy = HPL_ZERO_COPY_OFF});
    start = refuse_at < 0 ? 1 << 30 : refuse_at;
    sweep_result r;
    sweep_workload(ctx, (sweep_hooks){.arm = arm}, &r);
    int finish_rc = hpl_finish(ctx);
    int used = used_since(start);
    __atomic_store_n(&hpl__fault_host_alloc, -1, __ATOMIC_RELAXED);
    char what[160];
    snprintf(what, sizeof what, "%s, allocation %d refused", config, refuse_at);
    static const int allowed[] = {HPL_ERROR_OUT_OF_HOST_MEMORY, 0};
    sweep_check(what, &r, allowed);
    sweep_check_unchanged(what, &r);
    CHECK(sweep_rc_allowed(finish_rc, allowed), "%s: hpl_finish returned %s", what, hpl_error_string(finish_rc));
    hpl_context_destroy(ctx);
    sweep_run_ended();
    return used;
}

int main(void)
{
    sweep_watchdog_start();
    sweep_reference();
    sweep_each("host allocations", sweep_run);
    sweep_watchdog_stop();
    return th_finish(NULL);
}
