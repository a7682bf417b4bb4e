/* Vulkan calls with hplvk's conventions, for every layer above the pure
 * logic: a VkResult as an hplvk error, and submissions inside the
 * application's queue lock (interop). */
#include "internal.h"

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
