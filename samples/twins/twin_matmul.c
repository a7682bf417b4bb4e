/*
 * twin_matmul — samples/matmul.c's product through hand-written Vulkan and
 * shaderc, with no hplvk at all: the baseline of what the library costs
 * (the same kernel, no library) and of what it saves writing (this file's
 * length against matmul.c's). One device, whole matrices.
 *
 *   twin_matmul [n [reps]]        n x n x n (default 256)
 *   twin_matmul M N K [reps]      C is M x N, A is M x K, B is K x N
 *
 * What does not touch a device is matmul_host.h's, shared with matmul.c:
 * the kernel (with plain descriptors and push constants where matmul's has
 * the hplvk arguments), its tile sets (MATMUL_TILES), the arguments, the
 * fixed-seed inputs, the check of C and the RESULT line. This file is the
 * Vulkan: the device is the first discrete GPU, else the first integrated
 * one, else the first device. A and B go to device-local buffers through a
 * staging buffer; the kernel, compiled by shaderc, runs once to warm up,
 * then `reps` times (default 3), each a submission of a recorded dispatch
 * timed with its fence wait; the best is reported as GFLOP/s. C comes back
 * through the staging buffer.
 *
 * With HPLVK_VALIDATION=1 (as under ctest) it enables
 * VK_LAYER_KHRONOS_validation with synchronization validation; every
 * message the layer sends is printed and fails the run.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "twin_matmul"
#include <shaderc/shaderc.h>
#include <vulkan/vulkan.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matmul_host.h"

/* In functions returning bool: report a failing Vulkan call, return false. */
#define VK_TRY(call)                                                                    \
    do {                                                                                \
        VkResult vr_ = (call);                                                          \
        if (vr_ != VK_SUCCESS) {                                                        \
            fprintf(stderr, SAMPLE_NAME ": %s failed: VkResult %d\n", #call, (int)vr_); \
            return false;                                                               \
        }                                                                               \
    } while (0)

/* ---- Vulkan: instance, device, validation ------------------------------ */

typedef struct vk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
} vk_buffer;

typedef struct vk_state {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    vk_buffer a, b, c, staging;
    void *staging_map;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    VkDescriptorSet set;
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;
    VkFence fence;
} vk_state;

static int validation_messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                            VkDebugUtilsMessageTypeFlagsEXT types,
                                                            const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                            void *user)
{
    (void)severity, (void)types, (void)user;
    fprintf(stderr, SAMPLE_NAME ": validation layer: %s\n", data->pMessage);
    validation_messages++;
    return VK_FALSE;
}

static bool validation_wanted(void)
{
    const char *v = getenv("HPLVK_VALIDATION");
    return v && *v && strcmp(v, "0") != 0;
}

static bool create_instance(vk_state *vk, bool validate)
{
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = &sync};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = SAMPLE_NAME,
                             .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = validate ? &features : NULL,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = validate ? 1 : 0,
                               .ppEnabledLayerNames = layers,
                               .enabledExtensionCount = validate ? 1 : 0,
                               .ppEnabledExtensionNames = extensions};
    VK_TRY(vkCreateInstance(&ci, NULL, &vk->instance));
    if (!validate)
        return true;
    PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(vk->instance, "vkCreateDebugUtilsMessengerEXT");
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity =
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation_message};
    if (!create_messenger) {
        fprintf(stderr, SAMPLE_NAME ": vkCreateDebugUtilsMessengerEXT missing\n");
        return false;
    }
    VK_TRY(create_messenger(vk->instance, &mci, NULL, &vk->messenger));
    return true;
}

/* The first discrete GPU, else the first integrated GPU, else device 0. */
static bool pick_physical_device(vk_state *vk)
{
    VkPhysicalDevice list[16];
    uint32_t count = 16;
    VkResult vr = vkEnumeratePhysicalDevices(vk->instance, &count, list);
    if ((vr != VK_SUCCESS && vr != VK_INCOMPLETE) || count == 0) {
        fprintf(stderr, SAMPLE_NAME ": no Vulkan device (VkResult %d)\n", (int)vr);
        return false;
    }
    const VkPhysicalDeviceType preferred[] = {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU,
                                              VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU};
    vk->physical = list[0];
    for (int p = 1; p >= 0; p--)
        for (uint32_t i = count; i-- > 0;) {
            VkPhysicalDeviceProperties props;
            vkGetPhysicalDeviceProperties(list[i], &props);
            if (props.deviceType == preferred[p])
                vk->physical = list[i];
        }
    vkGetPhysicalDeviceProperties(vk->physical, &vk->props);
    return true;
}

static bool create_device(vk_state *vk)
{
    VkQueueFamilyProperties families[32];
    uint32_t count = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &count, families);
    vk->family = UINT32_MAX;
    for (uint32_t i = 0; i < count && vk->family == UINT32_MAX; i++)
        if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            vk->family = i;
    if (vk->family == UINT32_MAX) {
        fprintf(stderr, SAMPLE_NAME ": %s has no compute queue\n", vk->props.deviceName);
        return false;
    }
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = vk->family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &priority};
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qci};
    VK_TRY(vkCreateDevice(vk->physical, &ci, NULL, &vk->device));
    vkGetDeviceQueue(vk->device, vk->family, 0, &vk->queue);
    return true;
}

/* ---- Vulkan: buffers and memory ---------------------------------------- */

/* A memory type allowed by `bits` with all of `want`, else with `fallback`. */
static bool find_memory_type(const vk_state *vk, uint32_t bits, VkMemoryPropertyFlags want,
                             VkMemoryPropertyFlags fallback, uint32_t *out)
{
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(vk->physical, &mp);
    for (int pass = 0; pass < 2; pass++) {
        VkMemoryPropertyFlags flags = pass == 0 ? want : fallback;
        for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
            if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & flags) == flags) {
                *out = i;
                return true;
            }
    }
    fprintf(stderr, SAMPLE_NAME ": no memory type with flags 0x%x\n", (unsigned)fallback);
    return false;
}

static bool create_buffer(vk_state *vk, VkDeviceSize bytes, VkBufferUsageFlags usage, bool host_visible,
                          vk_buffer *out)
{
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = bytes, .usage = usage,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VK_TRY(vkCreateBuffer(vk->device, &bci, NULL, &out->buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->device, out->buffer, &req);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size};
    if (!find_memory_type(vk, req.memoryTypeBits, host_visible ? host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT
                                                               : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                          host_visible ? host : 0, &mai.memoryTypeIndex))
        return false;
    VK_TRY(vkAllocateMemory(vk->device, &mai, NULL, &out->memory));
    VK_TRY(vkBindBufferMemory(vk->device, out->buffer, out->memory, 0));
    return true;
}

/* A, B, C on the device, and one staging buffer as large as the largest. */
static bool create_buffers(vk_state *vk, mm_size sz)
{
    const VkDeviceSize a_bytes = (VkDeviceSize)sz.m * sz.k * 4, b_bytes = (VkDeviceSize)sz.k * sz.n * 4,
                       c_bytes = (VkDeviceSize)sz.m * sz.n * 4;
    VkDeviceSize most = a_bytes > b_bytes ? a_bytes : b_bytes;
    most = most > c_bytes ? most : c_bytes;
    const VkBufferUsageFlags storage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    if (!create_buffer(vk, a_bytes, storage | VK_BUFFER_USAGE_TRANSFER_DST_BIT, false, &vk->a) ||
        !create_buffer(vk, b_bytes, storage | VK_BUFFER_USAGE_TRANSFER_DST_BIT, false, &vk->b) ||
        !create_buffer(vk, c_bytes, storage | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, false, &vk->c) ||
        !create_buffer(vk, most, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, true,
                       &vk->staging))
        return false;
    VK_TRY(vkMapMemory(vk->device, vk->staging.memory, 0, VK_WHOLE_SIZE, 0, &vk->staging_map));
    return true;
}

/* ---- Vulkan: the pipeline ----------------------------------------------- */

/* The kernel's SPIR-V for tile set t. */
static bool compile_kernel(mm_tiles t, shaderc_compilation_result_t *out)
{
    char source[MM_KERNEL_SOURCE_CAP];
    if (!mm_kernel_source(source, sizeof source, MM_VULKAN_DESCRIPTORS, t, false))
        return false;
    shaderc_compiler_t compiler = shaderc_compiler_initialize();
    shaderc_compile_options_t opts = shaderc_compile_options_initialize();
    if (!compiler || !opts) {
        fprintf(stderr, SAMPLE_NAME ": shaderc could not start\n");
        shaderc_compile_options_release(opts);
        shaderc_compiler_release(compiler);
        return false;
    }
    shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
    *out = shaderc_compile_into_spv(compiler, source, strlen(source), shaderc_compute_shader, SAMPLE_NAME ".comp",
                                    "main", opts);
    shaderc_compile_options_release(opts);
    shaderc_compiler_release(compiler);
    if (shaderc_result_get_compilation_status(*out) != shaderc_compilation_status_success) {
        fprintf(stderr, SAMPLE_NAME ": compile error: %s\n", shaderc_result_get_error_message(*out));
        shaderc_result_release(*out);
        return false;
    }
    return true;
}

static bool create_pipeline(vk_state *vk, mm_tiles t)
{
    VkDescriptorSetLayoutBinding bindings[3];
    for (uint32_t i = 0; i < 3; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                                     .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                     .descriptorCount = 1,
                                                     .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 3, .pBindings = bindings};
    VK_TRY(vkCreateDescriptorSetLayout(vk->device, &lci, NULL, &vk->set_layout));
    VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = sizeof(mm_size)};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                      .pSetLayouts = &vk->set_layout, .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &push};
    VK_TRY(vkCreatePipelineLayout(vk->device, &pli, NULL, &vk->pipeline_layout));

    shaderc_compilation_result_t spirv;
    if (!compile_kernel(t, &spirv))
        return false;
    VkShaderModuleCreateInfo mci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = shaderc_result_get_length(spirv),
                                    .pCode = (const uint32_t *)shaderc_result_get_bytes(spirv)};
    VkShaderModule module;
    VkResult vr = vkCreateShaderModule(vk->device, &mci, NULL, &module);
    shaderc_result_release(spirv);
    VK_TRY(vr);
    VkComputePipelineCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module, .pName = "main"},
        .layout = vk->pipeline_layout};
    vr = vkCreateComputePipelines(vk->device, VK_NULL_HANDLE, 1, &pci, NULL, &vk->pipeline);
    vkDestroyShaderModule(vk->device, module, NULL);
    VK_TRY(vr);
    return true;
}

static bool create_descriptor_set(vk_state *vk)
{
    VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 3};
    VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 1,
                                      .poolSizeCount = 1, .pPoolSizes = &size};
    VK_TRY(vkCreateDescriptorPool(vk->device, &pci, NULL, &vk->pool));
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = vk->pool, .descriptorSetCount = 1,
                                      .pSetLayouts = &vk->set_layout};
    VK_TRY(vkAllocateDescriptorSets(vk->device, &ai, &vk->set));
    VkDescriptorBufferInfo infos[3] = {{vk->a.buffer, 0, VK_WHOLE_SIZE},
                                       {vk->b.buffer, 0, VK_WHOLE_SIZE},
                                       {vk->c.buffer, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet writes[3];
    for (uint32_t i = 0; i < 3; i++)
        writes[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = vk->set,
                                           .dstBinding = i, .descriptorCount = 1,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           .pBufferInfo = &infos[i]};
    vkUpdateDescriptorSets(vk->device, 3, writes, 0, NULL);
    return true;
}

/* ---- Vulkan: commands ---------------------------------------------------- */

static bool create_commands(vk_state *vk)
{
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = vk->family};
    VK_TRY(vkCreateCommandPool(vk->device, &pci, NULL, &vk->cmd_pool));
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = vk->cmd_pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VK_TRY(vkAllocateCommandBuffers(vk->device, &ai, &vk->cmd));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_TRY(vkCreateFence(vk->device, &fci, NULL, &vk->fence));
    return true;
}

static bool begin_commands(vk_state *vk)
{
    VK_TRY(vkResetCommandBuffer(vk->cmd, 0));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VK_TRY(vkBeginCommandBuffer(vk->cmd, &bi));
    return true;
}

/* Ends the command buffer, submits it and waits for it: *ms the time from
 * the submission to the end of the wait. */
static bool submit_and_wait(vk_state *vk, double *ms)
{
    VK_TRY(vkEndCommandBuffer(vk->cmd));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &vk->cmd};
    double t0 = mm_now_ms();
    VK_TRY(vkQueueSubmit(vk->queue, 1, &si, vk->fence));
    VK_TRY(vkWaitForFences(vk->device, 1, &vk->fence, VK_TRUE, UINT64_MAX));
    if (ms)
        *ms = mm_now_ms() - t0;
    VK_TRY(vkResetFences(vk->device, 1, &vk->fence));
    return true;
}

/* Every earlier access of `src` before every later access of `dst`. */
static void memory_barrier(vk_state *vk, VkPipelineStageFlags src, VkAccessFlags src_access, VkPipelineStageFlags dst,
                           VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src_access,
                          .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(vk->cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* One copy through the staging buffer: host -> staging -> dst. */
static bool upload(vk_state *vk, VkBuffer dst, const float *src, VkDeviceSize bytes)
{
    memcpy(vk->staging_map, src, bytes);
    if (!begin_commands(vk))
        return false;
    vkCmdCopyBuffer(vk->cmd, vk->staging.buffer, dst, 1, &(VkBufferCopy){0, 0, bytes});
    memory_barrier(vk, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    return submit_and_wait(vk, NULL);
}

static bool download(vk_state *vk, VkBuffer src, float *dst, VkDeviceSize bytes)
{
    if (!begin_commands(vk))
        return false;
    memory_barrier(vk, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    vkCmdCopyBuffer(vk->cmd, src, vk->staging.buffer, 1, &(VkBufferCopy){0, 0, bytes});
    memory_barrier(vk, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                   VK_ACCESS_HOST_READ_BIT);
    if (!submit_and_wait(vk, NULL))
        return false;
    memcpy(dst, vk->staging_map, bytes);
    return true;
}

/* One product: C written after the previous product's reads of C. */
static bool run_product(vk_state *vk, mm_size sz, mm_tiles t, double *ms)
{
    if (!begin_commands(vk))
        return false;
    memory_barrier(vk, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT);
    vkCmdBindPipeline(vk->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipeline);
    vkCmdBindDescriptorSets(vk->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipeline_layout, 0, 1, &vk->set, 0, NULL);
    vkCmdPushConstants(vk->cmd, vk->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof sz, &sz);
    vkCmdDispatch(vk->cmd, (sz.m + t.bm - 1) / t.bm, (sz.n + t.bn - 1) / t.bn, 1);
    return submit_and_wait(vk, ms);
}

static void destroy_buffer(vk_state *vk, vk_buffer *b)
{
    vkDestroyBuffer(vk->device, b->buffer, NULL);
    vkFreeMemory(vk->device, b->memory, NULL);
}

static void destroy_all(vk_state *vk)
{
    if (vk->device) {
        vkDeviceWaitIdle(vk->device);
        vkDestroyFence(vk->device, vk->fence, NULL);
        vkDestroyCommandPool(vk->device, vk->cmd_pool, NULL);
        vkDestroyDescriptorPool(vk->device, vk->pool, NULL);
        vkDestroyPipeline(vk->device, vk->pipeline, NULL);
        vkDestroyPipelineLayout(vk->device, vk->pipeline_layout, NULL);
        vkDestroyDescriptorSetLayout(vk->device, vk->set_layout, NULL);
        destroy_buffer(vk, &vk->a);
        destroy_buffer(vk, &vk->b);
        destroy_buffer(vk, &vk->c);
        destroy_buffer(vk, &vk->staging); /* unmapped by the free */
        vkDestroyDevice(vk->device, NULL);
    }
    if (vk->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(vk->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy_messenger)
            destroy_messenger(vk->instance, vk->messenger, NULL);
    }
    vkDestroyInstance(vk->instance, NULL);
}

/* ---- the run ------------------------------------------------------------ */

/* The work-group counts must fit the device's limits. */
static bool fits_device(const vk_state *vk, mm_size sz, mm_tiles t)
{
    const uint32_t *most = vk->props.limits.maxComputeWorkGroupCount;
    bool ok = ((uint64_t)sz.m + t.bm - 1) / t.bm <= most[0] && ((uint64_t)sz.n + t.bn - 1) / t.bn <= most[1];
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": %" PRIu32 " x %" PRIu32 " needs more work-groups than %s allows\n", sz.m, sz.n,
                vk->props.deviceName);
    return ok;
}

/* Sets up the device, runs the warm-up and the timed products, reads C
 * into p->c. */
static bool run_vulkan(vk_state *vk, mm_problem *p)
{
    const mm_size sz = p->size;
    mm_tiles t;
    if (!create_instance(vk, validation_wanted()) || !pick_physical_device(vk) || !create_device(vk) ||
        !mm_choose_tiles(vk->props.limits.maxComputeWorkGroupInvocations, &t) || !fits_device(vk, sz, t) ||
        !create_buffers(vk, sz) || !create_pipeline(vk, t) || !create_descriptor_set(vk) || !create_commands(vk) ||
        !upload(vk, vk->a.buffer, p->a, mm_bytes(sz.m, sz.k)) ||
        !upload(vk, vk->b.buffer, p->b, mm_bytes(sz.k, sz.n)))
        return false;
    bool gpu = vk->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    double warm0 = mm_now_ms();
    for (int run = -1; run < p->reps; run = mm_next_run(run, gpu, warm0)) {
        double ms;
        if (!run_product(vk, sz, t, &ms))
            return false;
        mm_keep_best(p, run, ms);
    }
    return download(vk, vk->c.buffer, p->c, mm_bytes(sz.m, sz.n));
}

/* The RESULT device token: spaces become '_', commas are dropped. */
static void device_token(const char *name, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; name[i] && j + 1 < cap; i++)
        if (name[i] != ',')
            out[j++] = name[i] == ' ' ? '_' : name[i];
    out[j] = '\0';
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    mm_problem p = {0};
    if (!mm_parse_args(argc, argv, &p))
        return 2;
    vk_state vk = {0};
    bool ok = mm_alloc_inputs(&p) && run_vulkan(&vk, &p) && mm_check_product(&p);
    if (vk.physical)
        device_token(vk.props.deviceName, p.devices, sizeof p.devices);
    destroy_all(&vk);
    ok = ok && validation_messages == 0;
    mm_print_result(&p, ok);
    mm_free_inputs(&p);
    return ok ? 0 : 1;
}
