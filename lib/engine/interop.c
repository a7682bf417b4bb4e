/* Vulkan interop, device side: a context on the application's VkInstance,
 * VkDevices and queues (hplvk_vulkan.h, chapter V1). Each device is checked
 * for what hplvk needs, then set up like a device hplvk created
 * (hpl__device_setup) but marked borrowed: hplvk never destroys it nor idles
 * its queues, and submits inside the application's queue lock. */
#include "device.h"
#include "validate.h"

#include <stdio.h>
#include <string.h>

/* What the application's VkDeviceCreateInfo enabled, as far as hplvk cares. */
typedef struct enabled {
    bool timeline, address, host_import;
    uint32_t features; /* HPL__FEATURE_* that need enabling */
} enabled;

static void read_core(const VkPhysicalDeviceFeatures *f, enabled *e)
{
    e->features |= f->shaderFloat64 ? HPL__FEATURE_FLOAT64 : 0;
    e->features |= f->shaderInt64 ? HPL__FEATURE_INT64 : 0;
    e->features |= f->shaderInt16 ? HPL__FEATURE_INT16 : 0;
}

static void read_v12(const VkPhysicalDeviceVulkan12Features *v, enabled *e)
{
    e->timeline |= v->timelineSemaphore;
    e->address |= v->bufferDeviceAddress;
    e->features |= v->shaderInt8 ? HPL__FEATURE_INT8 : 0;
    e->features |= v->shaderFloat16 ? HPL__FEATURE_FLOAT16 : 0;
    e->features |= v->storageBuffer8BitAccess ? HPL__FEATURE_STORAGE8 : 0;
    e->features |= v->uniformAndStorageBuffer8BitAccess ? HPL__FEATURE_UNIFORM_STORAGE8 : 0;
    e->features |= v->scalarBlockLayout ? HPL__FEATURE_SCALAR_LAYOUT : 0;
}

/* One structure of the pNext chain: the Vulkan 1.2 block, or the
 * structures of the extensions it absorbed. */
static void read_struct(const VkBaseInStructure *s, enabled *e)
{
    switch (s->sType) {
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2:
        read_core(&((const VkPhysicalDeviceFeatures2 *)s)->features, e);
        break;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES:
        read_v12((const VkPhysicalDeviceVulkan12Features *)s, e);
        break;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
        e->timeline |= ((const VkPhysicalDeviceTimelineSemaphoreFeatures *)s)->timelineSemaphore;
        break;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES:
        e->address |= ((const VkPhysicalDeviceBufferDeviceAddressFeatures *)s)->bufferDeviceAddress;
        break;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SCALAR_BLOCK_LAYOUT_FEATURES:
        if (((const VkPhysicalDeviceScalarBlockLayoutFeatures *)s)->scalarBlockLayout)
            e->features |= HPL__FEATURE_SCALAR_LAYOUT;
        break;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES: {
        const VkPhysicalDevice8BitStorageFeatures *f = (const VkPhysicalDevice8BitStorageFeatures *)s;
        e->features |= f->storageBuffer8BitAccess ? HPL__FEATURE_STORAGE8 : 0;
        e->features |= f->uniformAndStorageBuffer8BitAccess ? HPL__FEATURE_UNIFORM_STORAGE8 : 0;
        break;
    }
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
        const VkPhysicalDeviceShaderFloat16Int8Features *f = (const VkPhysicalDeviceShaderFloat16Int8Features *)s;
        e->features |= f->shaderInt8 ? HPL__FEATURE_INT8 : 0;
        e->features |= f->shaderFloat16 ? HPL__FEATURE_FLOAT16 : 0;
        break;
    }
    default:
        break;
    }
}

/* Without a create_info, the required features count as enabled (the
 * extension is checked through its entry point later) and the optional
 * ones as not: assuming too little costs kernels, too much is invalid. */
static enabled read_create_info(const VkDeviceCreateInfo *ci)
{
    enabled e = {0};
    if (!ci)
        return (enabled){.timeline = true, .address = true, .host_import = true};
    if (ci->pEnabledFeatures)
        read_core(ci->pEnabledFeatures, &e);
    for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext)
        read_struct(s, &e);
    for (uint32_t i = 0; i < ci->enabledExtensionCount; i++) {
        const char *name = ci->ppEnabledExtensionNames[i];
        e.host_import |= name && !strcmp(name, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    }
    return e;
}

static int physical_index(const hpl_context *ctx, VkPhysicalDevice pd)
{
    for (int i = 0; i < ctx->physical_count; i++)
        if (ctx->physical[i] == pd)
            return i;
    return -1;
}

static bool family_created(const VkDeviceCreateInfo *ci, uint32_t family)
{
    for (uint32_t i = 0; ci && i < ci->queueCreateInfoCount; i++)
        if (ci->pQueueCreateInfos[i].queueFamilyIndex == family && ci->pQueueCreateInfos[i].queueCount > 0)
            return true;
    return !ci;
}

/* The entry's handles and queue families, before anything is made. */
static int check_entry(const hpl_context *ctx, const hpl_vulkan_desc *vk, int i, int *physical)
{
    const hpl_vulkan_device *e = &vk->devices[i];
    if (!e->physical || !e->device || !e->queue)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "vulkan->devices[%d].%s is VK_NULL_HANDLE", i,
                         !e->physical ? "physical" : !e->device ? "device" : "queue");
    for (int j = 0; j < i; j++)
        if (vk->devices[j].device == e->device)
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                             "vulkan->devices[%d].device is also vulkan->devices[%d].device: give each VkDevice once", i,
                             j);
    *physical = physical_index(ctx, e->physical);
    if (*physical < 0)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "vulkan->devices[%d].physical is not a physical device of vulkan->instance", i);
    const hpl_device_info *info = &ctx->physical_info[*physical];
    if (e->queue_family >= info->queue_family_count ||
        !(info->queue_families[e->queue_family].flags & HPL_QUEUE_COMPUTE))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "vulkan->devices[%d].queue_family %u is not a compute queue family of %s (which has %u queue famil%s)",
                         i, e->queue_family, info->name, info->queue_family_count,
                         info->queue_family_count == 1 ? "y" : "ies");
    if (e->transfer_queue && e->transfer_family >= info->queue_family_count)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "vulkan->devices[%d].transfer_family %u is not a queue family of %s", i,
                         e->transfer_family, info->name);
    if (!family_created(e->create_info, e->queue_family) ||
        (e->transfer_queue && !family_created(e->create_info, e->transfer_family)))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "vulkan->devices[%d]: create_info has no queue of family %u", i,
                         family_created(e->create_info, e->queue_family) ? e->transfer_family : e->queue_family);
    return HPL_OK;
}

/* The device is Vulkan 1.2 with what hplvk cannot do without. */
static int check_required(const hpl_context *ctx, int i, int physical, const enabled *e, bool described)
{
    const hpl_device_info *info = &ctx->physical_info[physical];
    VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &v12};
    if (info->api_version < VK_API_VERSION_1_2)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "vulkan->devices[%d] (%s) is Vulkan %u.%u; hplvk needs 1.2", i,
                         info->name, VK_API_VERSION_MAJOR(info->api_version), VK_API_VERSION_MINOR(info->api_version));
    vkGetPhysicalDeviceFeatures2(ctx->physical[physical], &f);
    const char *missing = !v12.timelineSemaphore     ? "timelineSemaphore"
                          : !v12.bufferDeviceAddress ? "bufferDeviceAddress"
                                                     : NULL;
    if (missing)
        return hpl__fail(HPL_ERROR_UNSUPPORTED,
                         "vulkan->devices[%d] (%s) does not support the feature %s, which hplvk needs", i, info->name,
                         missing);
    missing = !e->timeline ? "timelineSemaphore" : !e->address ? "bufferDeviceAddress" : NULL;
    if (missing)
        return hpl__fail(HPL_ERROR_UNSUPPORTED,
                         "vulkan->devices[%d] (%s): its create_info does not enable the feature %s "
                         "(VkPhysicalDeviceVulkan12Features.%s), which hplvk needs",
                         i, info->name, missing, missing);
    if (!info->host_import || !e->host_import)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "vulkan->devices[%d] (%s): %s the extension %s, which hplvk needs",
                         i, info->name,
                         !info->host_import ? "the device does not support"
                         : described        ? "its create_info does not enable"
                                            : "the VkDevice does not have",
                         VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    return HPL_OK;
}

/* Makes context device i of vk->devices[i] (physical device `physical`). */
static int adopt(hpl_context *ctx, const hpl_vulkan_desc *vk, int i, int physical, const enabled *e)
{
    const hpl_vulkan_device *entry = &vk->devices[i];
    hpl__device *d = &ctx->devices[i];
    hpl__device_describe(ctx, d, i, physical);
    for (int j = 0; j < i; j++)
        d->info.replica += vk->devices[j].physical == entry->physical;
    snprintf(d->entry, sizeof d->entry, "vulkan->devices[%d]", i);
    d->borrowed = true;
    d->device = entry->device;
    d->queue = entry->queue;
    d->queue_family = entry->queue_family;
    d->transfer_queue = entry->transfer_queue;
    d->transfer_family = entry->transfer_family;
    d->info.dedicated_transfer_queue = entry->transfer_queue != VK_NULL_HANDLE;
    d->queue_lock = vk->queue_lock;
    d->queue_unlock = vk->queue_unlock;
    d->queue_lock_user = vk->queue_lock_user;
    /* Subgroup operations need no enabling: the physical device's (the
     * bits from HPL__FEATURE_SUBGROUP_BASIC up). */
    uint32_t subgroup = ~(HPL__FEATURE_SUBGROUP_BASIC - 1u);
    d->features = hpl__physical_features(d->physical) & (e->features | subgroup);
    int rc = hpl__device_setup(ctx, d);
    if (rc == HPL_OK && !d->host_import)
        rc = check_required(ctx, i, physical, &(enabled){.timeline = true, .address = true}, false);
    return rc;
}

int hpl__devices_adopt(hpl_context *ctx, const hpl_vulkan_desc *vk)
{
    if (!vk->devices || vk->device_count < 1 || vk->device_count > HPL__MAX_DEVICES)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "vulkan->devices %s (device_count %d; 1 to %d devices)",
                         vk->devices ? "has a bad count" : "is NULL", vk->device_count, HPL__MAX_DEVICES);
    if (!vk->queue_lock != !vk->queue_unlock)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "vulkan->queue_lock and queue_unlock must both be given or both NULL");
    int physical[HPL__MAX_DEVICES];
    enabled e[HPL__MAX_DEVICES];
    int rc = HPL_OK;
    /* Every entry is checked before hplvk makes anything on any device. */
    for (int i = 0; rc == HPL_OK && i < vk->device_count; i++) {
        rc = check_entry(ctx, vk, i, &physical[i]);
        e[i] = read_create_info(vk->devices[i].create_info);
        if (rc == HPL_OK)
            rc = check_required(ctx, i, physical[i], &e[i], vk->devices[i].create_info != NULL);
    }
    for (int i = 0; rc == HPL_OK && i < vk->device_count; i++) {
        ctx->device_count = i + 1; /* so that close cleans up a half-open device */
        rc = adopt(ctx, vk, i, physical[i], &e[i]);
    }
    return rc;
}
