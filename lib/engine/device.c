/* Physical devices, logical devices, their queues and per-device objects.
 * Devices hplvk creates (hpl__devices_open) and the application's
 * (interop.c) share everything after the VkDevice exists:
 * hpl__device_setup. */
#include "device.h"

#include "bounds.h"
#include "copy.h"
#include "devspec.h"
#include "lane.h"
#include "memory.h"
#include "ring.h"
#include "submitter.h"
#include "timestamps.h"
#include "transfer.h"
#include "validate.h"
#include "vk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hpl_device_type device_type(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return HPL_DEVICE_CPU;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return HPL_DEVICE_DISCRETE_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return HPL_DEVICE_INTEGRATED_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return HPL_DEVICE_VIRTUAL_GPU;
    default:
        return HPL_DEVICE_OTHER;
    }
}

static bool has_extension(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
    VkExtensionProperties *ext = hpl__calloc(n, sizeof *ext);
    if (!ext)
        return false;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ext);
    bool found = false;
    for (uint32_t i = 0; i < n && !found; i++)
        found = !strcmp(ext[i].extensionName, name);
    hpl__free(ext);
    return found;
}

/* About how many loop iterations an invocation runs before the driver
 * ends its loops early (0: no limit known). llvmpipe (Lavapipe) counts
 * every loop of an invocation against one budget of 65535 and leaves them
 * silently when it runs out (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS;
 * tests/test_loop_limit checks it). */
static uint32_t loop_limit(const VkPhysicalDeviceDriverProperties *driver)
{
    return driver->driverID == VK_DRIVER_ID_MESA_LLVMPIPE ? 65535u : 0u;
}

void hpl__physical_info(VkPhysicalDevice pd, uint32_t index, hpl_device_info *out)
{
    VkPhysicalDeviceDriverProperties driver = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceMaintenance4Properties m4 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES,
                                                 .pNext = &subgroup};
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
                                                 .pNext = &m4};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    vkGetPhysicalDeviceProperties(pd, &props.properties);
    bool has_m4 = props.properties.apiVersion >= VK_API_VERSION_1_3 || has_extension(pd, "VK_KHR_maintenance4");
    if (!has_m4)
        m3.pNext = &subgroup;
    if (props.properties.apiVersion >= VK_API_VERSION_1_2 || has_extension(pd, "VK_KHR_driver_properties"))
        subgroup.pNext = &driver;
    vkGetPhysicalDeviceProperties2(pd, &props);
    const VkPhysicalDeviceLimits *lim = &props.properties.limits;

    VkPhysicalDeviceFeatures features;
    vkGetPhysicalDeviceFeatures(pd, &features);
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(pd, &mem);

    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", props.properties.deviceName);
    out->type = device_type(props.properties.deviceType);
    out->physical_index = index;
    out->vendor_id = props.properties.vendorID;
    out->device_id = props.properties.deviceID;
    out->api_version = props.properties.apiVersion;
    out->heap_count = HPL__MIN(mem.memoryHeapCount, HPL_MAX_HEAPS);
    for (uint32_t h = 0; h < out->heap_count; h++) {
        out->heaps[h].size = mem.memoryHeaps[h].size;
        out->heaps[h].device_local = mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
    }
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties qf[HPL_MAX_QUEUE_FAMILIES];
    nq = HPL__MIN(nq, HPL_MAX_QUEUE_FAMILIES);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
    out->queue_family_count = nq;
    for (uint32_t q = 0; q < nq; q++) {
        VkQueueFlags f = qf[q].queueFlags;
        out->queue_families[q].count = qf[q].queueCount;
        out->queue_families[q].flags = (f & VK_QUEUE_GRAPHICS_BIT ? HPL_QUEUE_GRAPHICS : 0) |
                                       (f & VK_QUEUE_COMPUTE_BIT ? HPL_QUEUE_COMPUTE : 0) |
                                       /* graphics/compute queues can always transfer */
                                       (f & (VK_QUEUE_TRANSFER_BIT | VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)
                                            ? HPL_QUEUE_TRANSFER
                                            : 0);
    }
    uint64_t max_alloc = m3.maxMemoryAllocationSize;
    out->max_buffer_size = has_m4 ? HPL__MIN(max_alloc, m4.maxBufferSize) : max_alloc;
    out->max_workgroup_invocations = lim->maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; i++)
        out->max_workgroup_count[i] = lim->maxComputeWorkGroupCount[i];
    out->subgroup_size = subgroup.subgroupSize;
    out->max_loop_iterations = loop_limit(&driver);
    out->float64 = features.shaderFloat64;
    out->int64 = features.shaderInt64;
    out->host_import = has_extension(pd, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
}

/* create_logical enables each of these features wherever the device
 * supports it; subgroup operations need no enabling. */
uint32_t hpl__physical_features(VkPhysicalDevice pd)
{
    VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &v12};
    vkGetPhysicalDeviceFeatures2(pd, &f);
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    vkGetPhysicalDeviceProperties2(pd, &p);
    uint32_t have = 0;
    have |= f.features.shaderFloat64 ? HPL__FEATURE_FLOAT64 : 0;
    have |= f.features.shaderInt64 ? HPL__FEATURE_INT64 : 0;
    have |= f.features.shaderInt16 ? HPL__FEATURE_INT16 : 0;
    have |= v12.shaderInt8 ? HPL__FEATURE_INT8 : 0;
    have |= v12.shaderFloat16 ? HPL__FEATURE_FLOAT16 : 0;
    have |= v12.storageBuffer8BitAccess ? HPL__FEATURE_STORAGE8 : 0;
    have |= v12.uniformAndStorageBuffer8BitAccess ? HPL__FEATURE_UNIFORM_STORAGE8 : 0;
    have |= v12.scalarBlockLayout ? HPL__FEATURE_SCALAR_LAYOUT : 0;
    if (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) {
        static const struct {
            VkSubgroupFeatureFlags vk;
            uint32_t feature;
        } ops[] = {
            {VK_SUBGROUP_FEATURE_BASIC_BIT, HPL__FEATURE_SUBGROUP_BASIC},
            {VK_SUBGROUP_FEATURE_VOTE_BIT, HPL__FEATURE_SUBGROUP_VOTE},
            {VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, HPL__FEATURE_SUBGROUP_ARITHMETIC},
            {VK_SUBGROUP_FEATURE_BALLOT_BIT, HPL__FEATURE_SUBGROUP_BALLOT},
            {VK_SUBGROUP_FEATURE_SHUFFLE_BIT, HPL__FEATURE_SUBGROUP_SHUFFLE},
            {VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, HPL__FEATURE_SUBGROUP_SHUFFLE_RELATIVE},
            {VK_SUBGROUP_FEATURE_CLUSTERED_BIT, HPL__FEATURE_SUBGROUP_CLUSTERED},
            {VK_SUBGROUP_FEATURE_QUAD_BIT, HPL__FEATURE_SUBGROUP_QUAD},
        };
        for (size_t i = 0; i < HPL__ARRAY_LEN(ops); i++)
            have |= sg.supportedOperations & ops[i].vk ? ops[i].feature : 0;
    }
    return have;
}

/* The compute queue family (compute-only preferred: it is what compute
 * work gets on GPUs that have one). */
static uint32_t compute_family_of(const hpl_device_info *info)
{
    uint32_t compute = UINT32_MAX;
    for (uint32_t q = 0; q < info->queue_family_count; q++) {
        uint32_t f = info->queue_families[q].flags;
        if ((f & HPL_QUEUE_COMPUTE) && (compute == UINT32_MAX || !(f & HPL_QUEUE_GRAPHICS)))
            compute = q;
    }
    return compute;
}

/* A transfer-only family, or -1: the first, unless `share` logical devices
 * need a queue each and a later one has more of them (an H200 has 2, 7 and
 * 1 in three such families). */
static int transfer_family_of(const hpl_device_info *info, uint32_t share)
{
    int transfer = -1;
    for (uint32_t q = 0; q < info->queue_family_count; q++) {
        if (info->queue_families[q].flags != HPL_QUEUE_TRANSFER)
            continue;
        uint32_t have = transfer < 0 ? 0 : info->queue_families[transfer].count;
        if (transfer < 0 || (have < share && info->queue_families[q].count > have))
            transfer = (int)q;
    }
    return transfer;
}

static int find_memory_type(const VkPhysicalDeviceMemoryProperties *mp, VkMemoryPropertyFlags want,
                            VkMemoryPropertyFlags avoid)
{
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        if ((f & want) == want && !(f & avoid))
            return (int)i;
    }
    return -1;
}

/* The compute queue number `slot` of d's VkDevice, and its transfer queue
 * of that number when the VkDevice has one. */
static void take_queues(hpl__device *d, uint32_t slot)
{
    vkGetDeviceQueue(d->device, d->queue_family, slot, &d->queue);
    if (slot < d->transfer_queue_count) {
        vkGetDeviceQueue(d->device, d->transfer_family, slot, &d->transfer_queue);
        d->info.dedicated_transfer_queue = true;
    }
}

/* The VkDevice, with `share` queues of the compute family (one for each
 * logical device that runs on it: HPLVK_LOGICAL_DEVICES=queues) and as many
 * of the transfer family as it has, up to that. */
static int create_logical(hpl__device *d, uint32_t compute_family, int transfer_family, uint32_t share)
{
    float priorities[HPL__MAX_DEVICES];
    for (int i = 0; i < HPL__MAX_DEVICES; i++)
        priorities[i] = 1.0f;
    d->transfer_queue_count =
        transfer_family >= 0 ? HPL__MIN(share, d->info.queue_families[transfer_family].count) : 0;
    VkDeviceQueueCreateInfo queues[2] = {
        {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
         .queueFamilyIndex = compute_family,
         .queueCount = share,
         .pQueuePriorities = priorities},
        {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
         .queueFamilyIndex = (uint32_t)transfer_family,
         .queueCount = d->transfer_queue_count,
         .pQueuePriorities = priorities},
    };
    VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 supported = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &v12};
    vkGetPhysicalDeviceFeatures2(d->physical, &supported);
    if (!v12.timelineSemaphore || !v12.bufferDeviceAddress)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "device %s lacks %s", d->info.name,
                         !v12.timelineSemaphore ? "timeline semaphores" : "buffer device addresses");

    VkPhysicalDeviceVulkan12Features enable12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                                 .timelineSemaphore = VK_TRUE,
                                                 .bufferDeviceAddress = VK_TRUE,
                                                 .scalarBlockLayout = v12.scalarBlockLayout,
                                                 .shaderInt8 = v12.shaderInt8,
                                                 .shaderFloat16 = v12.shaderFloat16,
                                                 .storageBuffer8BitAccess = v12.storageBuffer8BitAccess,
                                                 .uniformAndStorageBuffer8BitAccess =
                                                     v12.uniformAndStorageBuffer8BitAccess,
                                                 .hostQueryReset = v12.hostQueryReset};
    VkPhysicalDeviceFeatures2 enable = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &enable12};
    enable.features.shaderFloat64 = supported.features.shaderFloat64;
    enable.features.shaderInt64 = supported.features.shaderInt64;
    enable.features.shaderInt16 = supported.features.shaderInt16;

    const char *extensions[3];
    uint32_t ext_count = 0;
    if (d->info.host_import)
        extensions[ext_count++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    if (d->peer_export) /* peer.c: other devices of this GPU wait on its timeline */
        extensions[ext_count++] = VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME;
    /* The event log's GPU timestamps (timestamps.c). */
    d->timestamps.host_reset = v12.hostQueryReset;
    d->timestamps.calibrated_ext = has_extension(d->physical, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
    if (d->timestamps.calibrated_ext)
        extensions[ext_count++] = VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = &enable,
                             .queueCreateInfoCount = transfer_family >= 0 ? 2 : 1,
                             .pQueueCreateInfos = queues,
                             .enabledExtensionCount = ext_count,
                             .ppEnabledExtensionNames = extensions};
    VkResult r = vkCreateDevice(d->physical, &ci, NULL, &d->device);
    if (r != VK_SUCCESS)
        return hpl__vk_error(r, "vkCreateDevice");
    d->features = hpl__physical_features(d->physical); /* each enabled above where supported */
    d->queue_family = compute_family;
    d->transfer_family = transfer_family >= 0 ? (uint32_t)transfer_family : 0;
    d->queue_share = share;
    d->info.shares_vkdevice = share > 1;
    take_queues(d, 0);
    return HPL_OK;
}

/* One descriptor set layout and pipeline layout serve every kernel: the
 * argument block (dynamic uniform buffer) plus the launch push constants. */
static int create_layouts(hpl__device *d)
{
    VkDescriptorSetLayoutBinding binding = {.binding = 0,
                                            .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC,
                                            .descriptorCount = 1,
                                            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 1,
                                           .pBindings = &binding};
    VkResult r = vkCreateDescriptorSetLayout(d->device, &sci, NULL, &d->set_layout);
    if (r != VK_SUCCESS)
        return hpl__vk_error(r, "vkCreateDescriptorSetLayout");
    VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = HPL__PUSH_BYTES};
    VkPipelineLayoutCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &d->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &push};
    r = vkCreatePipelineLayout(d->device, &pci, NULL, &d->pipeline_layout);
    if (r != VK_SUCCESS)
        return hpl__vk_error(r, "vkCreatePipelineLayout");
    VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC, .descriptorCount = 256};
    VkDescriptorPoolCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT, /* args_trim */
                                      .maxSets = 256,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &size};
    r = vkCreateDescriptorPool(d->device, &dci, NULL, &d->descriptor_pool);
    return r == VK_SUCCESS ? HPL_OK : hpl__vk_error(r, "vkCreateDescriptorPool");
}

static hpl__hash pipeline_cache_key(const hpl__device *d)
{
    hpl__hasher h;
    hpl__hasher_init(&h);
    hpl__hasher_add(&h, d->props.pipelineCacheUUID, VK_UUID_SIZE);
    hpl__hasher_add(&h, &d->props.driverVersion, sizeof d->props.driverVersion);
    hpl__hasher_add(&h, &d->props.vendorID, sizeof d->props.vendorID);
    hpl__hasher_add(&h, &d->props.deviceID, sizeof d->props.deviceID);
    return hpl__hasher_done(&h);
}

static int create_pipeline_cache(hpl_context *ctx, hpl__device *d)
{
    void *data = NULL;
    size_t size = 0;
    hpl__cache_load(&ctx->cache, "pipeline", pipeline_cache_key(d), &data, &size);
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = size,
                                    .pInitialData = data};
    VkResult r = vkCreatePipelineCache(d->device, &ci, NULL, &d->pipeline_cache);
    if (r != VK_SUCCESS && data) {
        /* The driver rejected the blob: start empty. */
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = vkCreatePipelineCache(d->device, &ci, NULL, &d->pipeline_cache);
    }
    hpl__free(data);
    return r == VK_SUCCESS ? HPL_OK : hpl__vk_error(r, "vkCreatePipelineCache");
}

static void save_pipeline_cache(hpl_context *ctx, hpl__device *d)
{
    size_t size = 0;
    if (!d->pipeline_cache || vkGetPipelineCacheData(d->device, d->pipeline_cache, &size, NULL) != VK_SUCCESS || !size)
        return;
    void *data = hpl__malloc(size);
    if (data && vkGetPipelineCacheData(d->device, d->pipeline_cache, &size, data) == VK_SUCCESS)
        hpl__cache_store(&ctx->cache, "pipeline", pipeline_cache_key(d), data, size);
    hpl__free(data);
}

static int choose_memory_types(hpl__device *d)
{
    const VkPhysicalDeviceMemoryProperties *mp = &d->memory_props;
    int local = find_memory_type(mp, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    /* Argument blocks: host-visible and coherent, preferably device-local
     * (resizable BAR), else plain host memory. */
    int upload = find_memory_type(mp,
                                  VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                  0);
    if (upload < 0)
        upload = find_memory_type(mp, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0);
    if (local < 0)
        local = find_memory_type(mp, 0, 0);
    if (upload < 0)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "device %s has no host-visible coherent memory", d->info.name);
    d->local_memory_type = (uint32_t)local;
    d->upload_memory_type = (uint32_t)upload;
    return HPL_OK;
}

static void query_import(hpl__device *d)
{
    d->host_import = false;
    if (!d->info.host_import)
        return;
    /* Vulkan 1.3 devices say how large a VkBuffer may be (maintenance4);
     * older ones leave it to vkCreateBuffer. */
    VkPhysicalDeviceMaintenance4Properties m4 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES,
                                                 .maxBufferSize = UINT64_MAX};
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT ext = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT,
        .pNext = d->props.apiVersion >= VK_API_VERSION_1_3 ? &m4 : NULL};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &ext};
    vkGetPhysicalDeviceProperties2(d->physical, &p2);
    d->import_alignment = ext.minImportedHostPointerAlignment;
    d->import_max_bytes = m4.maxBufferSize;
    d->get_host_pointer_props =
        (PFN_vkGetMemoryHostPointerPropertiesEXT)vkGetDeviceProcAddr(d->device, "vkGetMemoryHostPointerPropertiesEXT");
    d->host_import = d->get_host_pointer_props != NULL && d->import_alignment > 0;
}

void hpl__device_describe(hpl_context *ctx, hpl__device *d, int index, int physical)
{
    d->index = index;
    d->physical = ctx->physical[physical];
    d->info = ctx->physical_info[physical];
    vkGetPhysicalDeviceProperties(d->physical, &d->props);
    vkGetPhysicalDeviceMemoryProperties(d->physical, &d->memory_props);
}

int hpl__device_setup(hpl_context *ctx, hpl__device *d)
{
    /* What kernels may use is what the VkDevice enabled, not what the
     * hardware supports (an application's device may enable less). */
    d->info.float64 = d->features & HPL__FEATURE_FLOAT64;
    d->info.int64 = d->features & HPL__FEATURE_INT64;
    int rc = choose_memory_types(d);
    if (rc == HPL_OK) {
        query_import(d);
        hpl__timestamps_open(ctx, d);
        rc = hpl__timeline_create(d, d->peer_export, &d->timeline);
    }
    if (rc == HPL_OK)
        rc = hpl__timeline_create(d, false, &d->gate);
    if (rc == HPL_OK) {
        VkCommandPoolCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                      .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                      .queueFamilyIndex = d->queue_family};
        VkResult r = vkCreateCommandPool(d->device, &ci, NULL, &d->ring.pool);
        rc = r == VK_SUCCESS ? HPL_OK : hpl__vk_error(r, "vkCreateCommandPool");
    }
    if (rc == HPL_OK)
        rc = hpl__lane_open(d);
    if (rc == HPL_OK)
        rc = create_layouts(d);
    if (rc == HPL_OK)
        rc = create_pipeline_cache(ctx, d);
    if (rc == HPL_OK)
        rc = hpl__copy_open(ctx, d);
    return rc;
}

/* HPLVK_LOGICAL_DEVICES (untrusted): "vkdevices" (default) or "queues". */
static int logical_mode(bool *queues)
{
    const char *env = getenv("HPLVK_LOGICAL_DEVICES");
    *queues = env && !strcmp(env, "queues");
    if (env && *env && !*queues && strcmp(env, "vkdevices"))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "HPLVK_LOGICAL_DEVICES='%.40s' is not vkdevices or queues", env);
    return HPL_OK;
}

/* How many compute queues the VkDevice of entries[i], the first logical
 * device of its physical device, makes: one per logical device of that
 * physical device when they share it and its family has that many, else
 * one (each logical device makes its own VkDevice). */
static uint32_t queue_share(const hpl__devspec_entry *entries, int count, int i, uint32_t compute_family,
                            const hpl_device_info *info, bool queues)
{
    uint32_t n = 0;
    for (int j = 0; j < count; j++)
        n += entries[j].physical == entries[i].physical;
    return queues && n <= info->queue_families[compute_family].count ? n : 1;
}

static void describe_entry(hpl_context *ctx, hpl__device *d, int index, const hpl__devspec_entry *e)
{
    hpl__device_describe(ctx, d, index, e->physical);
    d->info.replica = (uint32_t)e->replica;
    d->zero_copy_asked = e->zero_copy;
    if (e->entry)
        snprintf(d->entry, sizeof d->entry, "%.*s", e->entry_len, e->entry);
}

static int open_device(hpl_context *ctx, int index, const hpl__devspec_entry *entries, int count, bool queues)
{
    hpl__device *d = &ctx->devices[index];
    describe_entry(ctx, d, index, &entries[index]);
    uint32_t compute = compute_family_of(&d->info);
    if (compute == UINT32_MAX)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "device %s has no compute queue", d->info.name);
    uint32_t share = queue_share(entries, count, index, compute, &d->info, queues);
    int rc = create_logical(d, compute, transfer_family_of(&d->info, share), share);
    return rc == HPL_OK ? hpl__device_setup(ctx, d) : rc;
}

/* Device `index` on queues of `host`'s VkDevice, which made one for it. */
static int join_device(hpl_context *ctx, int index, const hpl__devspec_entry *e, const hpl__device *host)
{
    hpl__device *d = &ctx->devices[index];
    describe_entry(ctx, d, index, e);
    d->guest = true;
    d->info.shares_vkdevice = true;
    d->device = host->device;
    d->features = host->features;
    d->queue_family = host->queue_family;
    d->transfer_family = host->transfer_family;
    d->transfer_queue_count = host->transfer_queue_count;
    d->timestamps.host_reset = host->timestamps.host_reset;
    d->timestamps.calibrated_ext = host->timestamps.calibrated_ext;
    take_queues(d, d->info.replica);
    return hpl__device_setup(ctx, d);
}

/* The device opened before `index` whose VkDevice has a queue for it. */
static const hpl__device *queue_host(const hpl_context *ctx, int index, const hpl__devspec_entry *entries)
{
    for (int j = 0; j < index; j++)
        if (entries[j].physical == entries[index].physical && ctx->devices[j].queue_share > 1)
            return &ctx->devices[j];
    return NULL;
}

int hpl__devices_open(hpl_context *ctx, const char *spec)
{
    uint32_t types[64];
    for (int i = 0; i < ctx->physical_count && i < 64; i++)
        types[i] = ctx->physical_info[i].type;
    hpl__devspec_entry entries[HPL__MAX_DEVICES];
    int count = 0;
    bool queues = false;
    int rc = logical_mode(&queues);
    if (rc == HPL_OK)
        rc = hpl__devspec_resolve(spec, HPL__MIN(ctx->physical_count, 64), types, entries, HPL__MAX_DEVICES, &count);
    for (int i = 0; rc == HPL_OK && i < count; i++) {
        ctx->device_count = i + 1; /* so that close cleans up a half-open device */
        pthread_mutex_init(&ctx->devices[i].batch_lock, NULL);
        ctx->devices[i].batch_lock_made = true;
        ctx->devices[i].peer_export = hpl__peer_wanted(ctx, entries, count, i);
        const hpl__device *host = queue_host(ctx, i, entries);
        rc = host ? join_device(ctx, i, &entries[i], host) : open_device(ctx, i, entries, count, queues);
    }
    if (rc == HPL_OK)
        hpl__peers_open(ctx);
    return rc;
}

/* Waits until the device is done with hplvk's work. On the application's
 * device only hplvk's own timelines: its queues may be busy with the
 * application's work, and vkDeviceWaitIdle would need all of them. */
static void device_quiet(hpl__device *d)
{
    if (!d->borrowed) {
        vkDeviceWaitIdle(d->device);
        return;
    }
    if (d->timeline && d->submitted)
        hpl__semaphore_settle(d, d->timeline, d->submitted);
    if (d->xfer.on && d->xfer.submitted)
        hpl__semaphore_settle(d, d->xfer.timeline, d->xfer.submitted);
}

static void close_device(hpl_context *ctx, hpl__device *d)
{
    if (d->batch_lock_made)
        pthread_mutex_destroy(&d->batch_lock);
    d->batch_lock_made = false;
    hpl__free(d->op_marks);
    d->op_marks = NULL;
    if (!d->device)
        return;
    device_quiet(d);
    save_pipeline_cache(ctx, d);
    hpl__args_release(d);
    hpl__staging_close(d);
    hpl__timestamps_close(d);
    hpl__copy_close(d);
    hpl__bounds_close(d);
    if (d->pipeline_cache)
        vkDestroyPipelineCache(d->device, d->pipeline_cache, NULL);
    if (d->descriptor_pool)
        vkDestroyDescriptorPool(d->device, d->descriptor_pool, NULL);
    if (d->pipeline_layout)
        vkDestroyPipelineLayout(d->device, d->pipeline_layout, NULL);
    if (d->set_layout)
        vkDestroyDescriptorSetLayout(d->device, d->set_layout, NULL);
    hpl__lane_close(d);
    hpl__ring_destroy(d->device, &d->ring);
    if (d->timeline)
        vkDestroySemaphore(d->device, d->timeline, NULL);
    if (d->gate)
        vkDestroySemaphore(d->device, d->gate, NULL);
    if (!d->borrowed && !d->guest)
        vkDestroyDevice(d->device, NULL);
    memset(d, 0, sizeof *d);
}

void hpl__devices_close(hpl_context *ctx)
{
    hpl__submitters_stop(ctx); /* nothing left to submit, no queue in use */
    hpl__peers_close(ctx); /* imported timelines go before any device */
    /* Last first: a guest's objects go before the VkDevice they are on. */
    for (int i = ctx->device_count - 1; i >= 0; i--)
        close_device(ctx, &ctx->devices[i]);
    ctx->device_count = 0;
}

/* ---- public ----------------------------------------------------------- */

int hpl_device_count(hpl_context *ctx)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_device_count: ctx is NULL");
    return ctx->span ? ctx->span->device_count : ctx->device_count;
}

/* The public device table: every rank's devices in a context over ranks. */
static const hpl_device_info *info_of(const hpl_context *ctx, int device)
{
    return ctx->span ? &ctx->span->info[device] : &ctx->devices[device].info;
}

int hpl_device_get_info(hpl_context *ctx, int device, hpl_device_info *out)
{
    if (!ctx || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_device_get_info: %s is NULL", !ctx ? "ctx" : "out");
    int count = hpl_device_count(ctx);
    if (device < 0 || device >= count)
        return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "hpl_device_get_info: device %d does not exist (the context has %d)",
                         device, count);
    *out = *info_of(ctx, device);
    return HPL_OK;
}

int hpl_device_find(hpl_context *ctx, uint32_t type_mask, int nth)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_device_find: ctx is NULL");
    int seen = 0, count = hpl_device_count(ctx);
    for (int i = 0; i < count; i++)
        if ((info_of(ctx, i)->type & type_mask) && seen++ == nth)
            return i;
    return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "hpl_device_find: there is no device number %d of type mask 0x%x (%d found)",
                     nth, type_mask, seen);
}

int hpl_physical_device_count(hpl_context *ctx)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_physical_device_count: ctx is NULL");
    return ctx->physical_count;
}

int hpl_physical_device_get_info(hpl_context *ctx, int index, hpl_device_info *out)
{
    if (!ctx || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_physical_device_get_info: %s is NULL", !ctx ? "ctx" : "out");
    if (index < 0 || index >= ctx->physical_count)
        return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE,
                         "hpl_physical_device_get_info: physical device %d does not exist (the machine has %d)", index,
                         ctx->physical_count);
    *out = ctx->physical_info[index];
    return HPL_OK;
}
