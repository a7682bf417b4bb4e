/* Each device-memory allocation of sweep.h's two-device workload refused in
 * turn (arrays' memory, staging, imports of host memory): the library
 * evicts and retries, stages instead of importing, or fails the call with
 * an error that names memory; it never hangs, crashes or trips validation,
 * and a read that succeeds where every call before it did returns exactly
 * the host's values. A step that fails changes no array: the reads return
 * the host's values with that step left out. With and without submit
 * threads and a transfer lane.
 * The refusals are made here: this program defines vkAllocateMemory, which
 * the library's calls reach before the loader's (as in
 * test_driver_refuses). */
#define _GNU_SOURCE
#include "harness.h"
#include "sweep.h"

#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_int let_through = -1; /* allocations to let through before refusing one; < 0: none */
static atomic_int made, refused;

VKAPI_ATTR VkResult VKAPI_CALL vkAllocateMemory(VkDevice device, const VkMemoryAllocateInfo *info,
                                                const VkAllocationCallbacks *allocator, VkDeviceMemory *memory)
{
    static PFN_vkAllocateMemory real;
    if (!real)
        real = (PFN_vkAllocateMemory)dlsym(RTLD_NEXT, "vkAllocateMemory");
    int left = atomic_load(&let_through);
    while (left >= 0 && !atomic_compare_exchange_weak(&let_through, &left, left - 1))
        ;
    if (left == 0) {
        atomic_fetch_add(&refused, 1);
        return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    }
    atomic_fetch_add(&made, 1);
    return real(device, info, allocator, memory);
}

static int refusals(void)
{
    return atomic_load(&refused);
}

/* One run, the allocation `refuse_at` on refused (< 0: none); returns the
 * number of allocations it asked for. */
static int sweep_run(const char *config, int refuse_at)
{
    hpl_context *ctx = th_context_desc(
        &(hpl_context_desc){.devices = th_devices("cpu:2"), .zero_copy = HPL_ZERO_COPY_OFF});
    int made0 = atomic_load(&made), refused0 = atomic_load(&refused);
    atomic_store(&let_through, refuse_at);
    sweep_result r;
    sweep_workload(ctx, (sweep_hooks){.faults = refusals}, &r);
    int finish_rc = hpl_finish(ctx);
    atomic_store(&let_through, -1);
    char what[192];
    snprintf(what, sizeof what, "%s, allocation %d refused", config, refuse_at);
    static const int allowed[] = {HPL_ERROR_OUT_OF_DEVICE_MEMORY, 0};
    sweep_check(what, &r, allowed);
    CHECK(sweep_rc_allowed(finish_rc, allowed), "%s: hpl_finish returned %s", what, hpl_error_string(finish_rc));
    sweep_check_unchanged(what, &r);
    if (atomic_load(&refused) == refused0)
        CHECK(r.steps_rc == HPL_OK && r.column_rc == HPL_OK && r.grid_rc == HPL_OK && finish_rc == HPL_OK,
              "%s: nothing refused, yet %s, %s, %s, %s", what, hpl_error_string(r.steps_rc),
              hpl_error_string(r.column_rc), hpl_error_string(r.grid_rc), hpl_error_string(finish_rc));
    hpl_context_destroy(ctx);
    sweep_run_ended();
    return atomic_load(&made) - made0 + (atomic_load(&refused) - refused0);
}

int main(void)
{
    sweep_watchdog_start();
    sweep_reference();
    sweep_each("device allocations", sweep_run);
    sweep_watchdog_stop();
    return th_finish(NULL);
}
