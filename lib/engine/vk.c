/* Vulkan calls with hplvk's conventions, for every layer above the pure
 * logic: a VkResult as an hplvk error, and submissions inside the
 * application's queue lock (interop). */
#include "internal.h"

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

VkResult hpl__queue_submit(hpl__device *d, uint32_t count, const VkSubmitInfo *submits)
{
    return hpl__queue_submit_on(d, d->queue, count, submits);
}

VkResult hpl__queue_submit_on(hpl__device *d, VkQueue queue, uint32_t count, const VkSubmitInfo *submits)
{
    if (d->queue_lock)
        d->queue_lock(d->queue_lock_user, queue);
    VkResult r = vkQueueSubmit(queue, count, submits, VK_NULL_HANDLE);
    if (d->queue_unlock)
        d->queue_unlock(d->queue_lock_user, queue);
    return r;
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
