#define _POSIX_C_SOURCE 200809L /* nanosleep */
/* Vulkan calls with hplvk's conventions, for every layer above the pure
 * logic: a VkResult as an hplvk error, timeline semaphores, the values the
 * devices' timelines reached, and host waits on them. */
#include "vk.h"

#include <sched.h>
#include <time.h>

/* The name of an error a Vulkan call can return, for messages; NULL for
 * one not listed (its number is printed instead). */
static const char *result_name(VkResult r)
{
    switch (r) {
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_UNKNOWN: return "VK_ERROR_UNKNOWN";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_INVALID_EXTERNAL_HANDLE: return "VK_ERROR_INVALID_EXTERNAL_HANDLE";
    case VK_ERROR_FRAGMENTATION: return "VK_ERROR_FRAGMENTATION";
    case VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS: return "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS";
    case VK_ERROR_NOT_PERMITTED_KHR: return "VK_ERROR_NOT_PERMITTED_KHR";
    default: return NULL;
    }
}

int hpl__vk_error(VkResult r, const char *what)
{
    switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", what);
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
        return hpl__fail(HPL_ERROR_OUT_OF_DEVICE_MEMORY, "%s: out of device memory", what);
    case VK_ERROR_DEVICE_LOST:
        return hpl__fail(HPL_ERROR_DEVICE_LOST, "%s: device lost", what);
    default:
        if (result_name(r))
            return hpl__fail(HPL_ERROR_VULKAN, "%s failed (%s)", what, result_name(r));
        return hpl__fail(HPL_ERROR_VULKAN, "%s failed (VkResult %d)", what, (int)r);
    }
}

int hpl__timeline_create(hpl__device *d, bool exportable, VkSemaphore *out)
{
    /* peer.c imports an exportable one into the other devices of its GPU. */
    VkExportSemaphoreCreateInfo export = {.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                          .handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkSemaphoreTypeCreateInfo type = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .pNext = exportable ? &export : NULL,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
    VkResult r = vkCreateSemaphore(d->device, &ci, NULL, out);
    return r == VK_SUCCESS ? HPL_OK : hpl__vk_error(r, "vkCreateSemaphore");
}

/* Under validation, the 1.3.239 layer deadlocks for 10 s when one thread
 * reads a timeline (it waits for its state while holding its lock) and
 * another signals one (KhronosGroup/Vulkan-ValidationLayers#4649, fixed
 * upstream by #8519). With validation on, those calls are serialised by one
 * lock and host waits poll instead of blocking in vkWaitSemaphores. Without
 * validation semaphore_lock is NULL and nothing changes. */
VkResult hpl__semaphore_get(hpl__device *d, VkSemaphore semaphore, uint64_t *value)
{
    *value = 0;
    if (d->semaphore_lock)
        pthread_mutex_lock(d->semaphore_lock);
    VkResult r = vkGetSemaphoreCounterValue(d->device, semaphore, value);
    if (d->semaphore_lock)
        pthread_mutex_unlock(d->semaphore_lock);
    return r;
}

uint64_t hpl__semaphore_value(hpl__device *d, VkSemaphore semaphore)
{
    uint64_t value;
    return hpl__semaphore_get(d, semaphore, &value) == VK_SUCCESS ? value : 0;
}

void hpl__semaphore_signal(hpl__device *d, VkSemaphore semaphore, uint64_t value)
{
    VkSemaphoreSignalInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                .semaphore = semaphore,
                                .value = value};
    if (d->semaphore_lock)
        pthread_mutex_lock(d->semaphore_lock);
    vkSignalSemaphore(d->device, &si);
    if (d->semaphore_lock)
        pthread_mutex_unlock(d->semaphore_lock);
}

uint64_t hpl__device_completed(hpl__device *d)
{
    return hpl__semaphore_value(d, d->timeline);
}

void hpl__gate_signal(hpl__device *d, bool lane, uint64_t value)
{
    hpl__semaphore_signal(d, lane ? d->xfer.gate : d->gate, value);
}

uint64_t hpl__timeline_completed(hpl_context *ctx, int timeline)
{
    hpl__device *d = hpl__timeline_device(ctx, timeline);
    return hpl__timeline_is_lane(timeline) ? hpl__semaphore_value(d, d->xfer.timeline) : hpl__device_completed(d);
}

/* Spin this long before blocking: a blocking wait costs ~20 us more than a
 * spin on NVIDIA (DESIGN.md §4), and most waits for one kernel are short. */
#define SPIN_NS 50000u

/* Blocks until semaphore (of d) reaches value, spinning first; with
 * heed_failure, a device that failed meanwhile (its submit thread signals
 * what will not run: submitter.c) fails the wait at once. */
static VkResult semaphore_wait_until(hpl__device *d, VkSemaphore semaphore, uint64_t value, bool heed_failure)
{
    uint64_t until = hpl__now_ns() + SPIN_NS;
    while (d->semaphore_lock || hpl__now_ns() < until) {
        if (heed_failure && __atomic_load_n(&d->error, __ATOMIC_ACQUIRE))
            return VK_ERROR_DEVICE_LOST;
        uint64_t reached;
        VkResult r = hpl__semaphore_get(d, semaphore, &reached);
        if (r != VK_SUCCESS || reached >= value) /* a failed device's thread sets the error before its signal */
            return r == VK_SUCCESS && heed_failure && __atomic_load_n(&d->error, __ATOMIC_ACQUIRE)
                       ? VK_ERROR_DEVICE_LOST
                       : r;
        if (hpl__now_ns() < until)
            sched_yield();
        else
            nanosleep(&(struct timespec){0, 20000}, NULL); /* validation only: poll */
    }
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1,
                              .pSemaphores = &semaphore,
                              .pValues = &value};
    VkResult r = vkWaitSemaphores(d->device, &wi, UINT64_MAX);
    return r == VK_SUCCESS && heed_failure && __atomic_load_n(&d->error, __ATOMIC_ACQUIRE) ? VK_ERROR_DEVICE_LOST
                                                                                          : r;
}

VkResult hpl__semaphore_wait(hpl__device *d, VkSemaphore semaphore, uint64_t value)
{
    return semaphore_wait_until(d, semaphore, value, true);
}

VkResult hpl__semaphore_settle(hpl__device *d, VkSemaphore semaphore, uint64_t value)
{
    return semaphore_wait_until(d, semaphore, value, false);
}
