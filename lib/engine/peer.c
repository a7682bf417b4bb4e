/* Peer timelines: work on device B that must wait for work on device A
 * waits on A's timeline itself, imported into B's VkDevice, instead of on
 * B's gate, which the progress thread signals once it has seen A's timeline
 * reach the value. No host thread in between: the hop from A's copy or
 * kernel to B's is the driver's (issue 15). submit.c's gate_for takes the
 * branch for every cross-device wait on such a pair, halos included.
 *
 * Vulkan shares a timeline between VkDevices only as an external semaphore
 * (VK_KHR_external_semaphore_fd), and an opaque fd only between devices of
 * one physical device and driver (same deviceUUID and driverUUID): logical
 * devices of one GPU ("gpu0:2"). Between two GPUs, on drivers without it
 * (Mesa 22.3's Lavapipe has no VK_KHR_external_semaphore_fd) and on the
 * application's devices (interop) the gate stays. Logical devices on
 * queues of one VkDevice (HPLVK_LOGICAL_DEVICES=queues) wait on each
 * other's timelines as they are.
 *
 * Off with validation on: the layer (1.3.239) tracks a timeline's payload
 * per VkSemaphore, so a wait on a value another VkDevice signals looks
 * unresolved to it (false reports, some still open in later layers:
 * KhronosGroup/Vulkan-ValidationLayers#10055, #10211). HPLVK_PEER_SEMAPHORES=0
 * turns it off as well (to compare, or should a driver misbehave). */
#include "device.h"
#include "devspec.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool has_extension(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS)
        return false;
    VkExtensionProperties *ext = hpl__calloc(n ? n : 1, sizeof *ext);
    bool found = false;
    if (ext && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ext) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(ext[i].extensionName, name);
    hpl__free(ext);
    return found;
}

/* Can pd's driver export and import timeline semaphores as opaque fds? */
static bool timeline_fd_supported(VkPhysicalDevice pd)
{
    VkSemaphoreTypeCreateInfo type = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkPhysicalDeviceExternalSemaphoreInfo info = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO,
                                                  .pNext = &type,
                                                  .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkExternalSemaphoreProperties props = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
    vkGetPhysicalDeviceExternalSemaphoreProperties(pd, &info, &props);
    VkExternalSemaphoreFeatureFlags need =
        VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT | VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT;
    return (props.externalSemaphoreFeatures & need) == need &&
           (props.compatibleHandleTypes & VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT);
}

static bool peers_disabled(const hpl_context *ctx)
{
    const char *env = getenv("HPLVK_PEER_SEMAPHORES");
    return ctx->validation || (env && !strcmp(env, "0"));
}

bool hpl__peer_wanted(const hpl_context *ctx, const hpl__devspec_entry *entries, int count, int i)
{
    int opened = 0;
    for (int j = 0; j < count; j++)
        opened += entries[j].physical == entries[i].physical;
    if (opened < 2 || peers_disabled(ctx))
        return false; /* no device it could share its timeline with */
    VkPhysicalDevice pd = ctx->physical[entries[i].physical];
    return has_extension(pd, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME) && timeline_fd_supported(pd);
}

/* An opaque fd carries driver-private state: only a device of the same
 * physical device and driver may import it. */
static bool same_device(const hpl__device *a, const hpl__device *b)
{
    VkPhysicalDeviceIDProperties ida = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceIDProperties idb = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceProperties2 pa = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &ida};
    VkPhysicalDeviceProperties2 pb = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &idb};
    vkGetPhysicalDeviceProperties2(a->physical, &pa);
    vkGetPhysicalDeviceProperties2(b->physical, &pb);
    return !memcmp(ida.deviceUUID, idb.deviceUUID, VK_UUID_SIZE) &&
           !memcmp(ida.driverUUID, idb.driverUUID, VK_UUID_SIZE);
}

/* A's timeline, imported into B as a semaphore of B's (permanently: it is
 * A's payload from then on; B only ever waits on it). */
static bool import_timeline(hpl__device *a, hpl__device *b, VkSemaphore *out)
{
    PFN_vkGetSemaphoreFdKHR get_fd = (PFN_vkGetSemaphoreFdKHR)vkGetDeviceProcAddr(a->device, "vkGetSemaphoreFdKHR");
    PFN_vkImportSemaphoreFdKHR import_fd =
        (PFN_vkImportSemaphoreFdKHR)vkGetDeviceProcAddr(b->device, "vkImportSemaphoreFdKHR");
    int fd = -1;
    VkSemaphoreGetFdInfoKHR gi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
                                  .semaphore = a->timeline,
                                  .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    if (!get_fd || !import_fd || get_fd(a->device, &gi, &fd) != VK_SUCCESS)
        return false;
    VkSemaphoreTypeCreateInfo type = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
    VkSemaphore s = VK_NULL_HANDLE;
    if (vkCreateSemaphore(b->device, &ci, NULL, &s) != VK_SUCCESS) {
        close(fd);
        return false;
    }
    VkImportSemaphoreFdInfoKHR ii = {.sType = VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR,
                                     .semaphore = s,
                                     .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT,
                                     .fd = fd};
    if (import_fd(b->device, &ii) != VK_SUCCESS) {
        close(fd); /* a successful import owns it; a failed one does not */
        vkDestroySemaphore(b->device, s, NULL);
        return false;
    }
    *out = s;
    return true;
}

void hpl__peers_open(hpl_context *ctx)
{
    int pairs = 0, failed = 0;
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__device *a = &ctx->devices[i];
        for (int j = 0; j < ctx->device_count; j++) {
            hpl__device *b = &ctx->devices[j];
            if (j == i)
                continue;
            if (a->device == b->device) {
                /* Queues of one VkDevice (HPLVK_LOGICAL_DEVICES=queues):
                 * A's timeline itself, nothing to import. */
                if (!peers_disabled(ctx)) {
                    b->peer[i] = a->timeline;
                    pairs++;
                }
                continue;
            }
            if (!a->peer_export || !b->peer_export || !same_device(a, b))
                continue;
            /* Any failure leaves the pair on the gate: slower, never wrong. */
            if (import_timeline(a, b, &b->peer[i]))
                pairs++;
            else
                failed++;
        }
    }
    if (pairs || failed)
        hpl__log(&ctx->logger, HPL_LOG_DEBUG,
                 "peer timelines: %d device pairs wait on each other's timeline directly, %d could not", pairs,
                 failed);
}

void hpl__peers_close(hpl_context *ctx)
{
    for (int j = 0; j < ctx->device_count; j++) {
        hpl__device *b = &ctx->devices[j];
        bool any = false;
        for (int i = 0; i < ctx->device_count; i++)
            any = any || b->peer[i];
        if (!any)
            continue;
        /* Its work that waits on them is over before they go. */
        vkDeviceWaitIdle(b->device);
        for (int i = 0; i < ctx->device_count; i++) {
            if (b->peer[i] && b->peer[i] != ctx->devices[i].timeline) /* not A's own */
                vkDestroySemaphore(b->device, b->peer[i], NULL);
            b->peer[i] = VK_NULL_HANDLE;
        }
    }
}

int hpl__peer_count(const hpl_context *ctx, int device)
{
    int n = 0;
    for (int i = 0; i < ctx->device_count; i++)
        n += ctx->devices[device].peer[i] != VK_NULL_HANDLE;
    return n;
}
