/*
 * twin_game_of_life — samples/game_of_life.c written by hand against plain
 * Vulkan and shaderc, without hplvk: the baseline that
 * samples/twins/count_lines.sh counts, i.e. what a user writes for the same
 * kernel on ONE device.
 *
 *   twin_game_of_life [rows [cols [steps [host_budget]]]]   default 512 512 100 3e8
 *
 * The same computation as game_of_life.c (same kernel, cells, borders and
 * start grid, same warm-up step and timed steps), on the first physical
 * device (TWIN_DEVICE=<index> picks another). What both programs need
 * identically, and not from their device API, is in life_host.h: the
 * kernel's main(), the arguments, the start grid, the host check, the clock
 * and the RESULT line. Everything Vulkan is in this file on purpose:
 * instance, device, buffers and memory, staging upload, run-time
 * compilation, pipeline, descriptor sets, command buffers with barriers,
 * fences, readback and cleanup. It includes neither hplvk.h nor
 * sample_util.h (which includes hplvk.h).
 *
 * With HPLVK_VALIDATION=1 (as ctest runs every sample) it enables the
 * Khronos validation layer with synchronization validation, and any message
 * of the layer fails the run. The result must equal, bit for bit, the
 * host's computation of the same steps (past host_budget cell updates:
 * bands of rows at the grid's edges).
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "twin_game_of_life"

#include <shaderc/shaderc.h>
#include <vulkan/vulkan.h>

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "life_host.h"

/* life_host.h's kernel on plain GLSL: the grids are two storage buffers,
 * their size a push constant. The workgroups are the ones hplvk runs for a
 * 2-D domain: 2 rows x 128 columns, with the dispatch's x along the columns
 * (its fastest-starting dimension: the GPU walks the grid row by row, and a
 * subgroup reads 32 consecutive cells of a row); the kernel's bounds check
 * returns the invocations past the grid's edge. */
static const char *life_src =
    "#version 450\n"
    "layout(local_size_x = 128, local_size_y = 2) in;\n"
    "layout(std430, set = 0, binding = 0) readonly buffer Src { int src[]; };\n"
    "layout(std430, set = 0, binding = 1) writeonly buffer Dst { int dst[]; };\n"
    "layout(push_constant) uniform Size { uint rows; uint cols; } size;\n"
    "#define ROWS size.rows\n"
    "#define COLS size.cols\n"
    "#define CELL gl_GlobalInvocationID.yx\n"
    "#define SRC(r, c) src[(r) * size.cols + (c)]\n"
    "#define DST(r, c) dst[(r) * size.cols + (c)]\n" LIFE_KERNEL_MAIN;

#define LOCAL_COLS 128u /* the kernel's local_size_x */
#define LOCAL_ROWS 2u   /* and local_size_y */

/* In functions returning bool: report a failing Vulkan call and return false. */
#define VK_TRY(call)                                                                                         \
    do {                                                                                                     \
        VkResult vr_ = (call);                                                                               \
        if (vr_ != VK_SUCCESS) {                                                                             \
            fprintf(stderr, SAMPLE_NAME ": %s failed: VkResult %d\n", #call, (int)vr_);                     \
            return false;                                                                                    \
        }                                                                                                    \
    } while (0)

/* ======================================================================
 * The Vulkan side
 * ====================================================================== */

/* Every object of the run; zero (VK_NULL_HANDLE) until created, so that
 * twin_destroy can release whatever exists after a failure anywhere. */
typedef struct twin {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    uint32_t family; /* a queue family with compute */
    VkDevice device;
    VkQueue queue;
    VkBuffer grid[2], staging;
    VkDeviceMemory grid_memory[2], staging_memory;
    int32_t *mapped; /* the staging buffer, mapped for the whole run */
    VkDeviceSize bytes;
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkPipeline pipeline;
    VkDescriptorPool descriptor_pool;
    VkDescriptorSet sets[2]; /* sets[i]: reads grid[i], writes grid[1 - i] */
    VkCommandPool command_pool;
    VkCommandBuffer cmd;
    VkFence fence;
} twin;

/* Messages of the validation layer; a run with any is not verified. They
 * may come from the driver's threads, hence atomic. */
static atomic_int validation_messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                    VkDebugUtilsMessageTypeFlagsEXT types,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)types;
    (void)user;
    fprintf(stderr, SAMPLE_NAME ": vulkan validation %s: %s\n",
            severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning", data->pMessage);
    atomic_fetch_add(&validation_messages, 1);
    return VK_FALSE;
}

static bool validation_requested(void)
{
    const char *v = getenv("HPLVK_VALIDATION");
    return v && *v && strcmp(v, "0") != 0;
}

/* A Vulkan 1.2 instance; with validation, the Khronos layer with
 * synchronization validation and a messenger that counts its messages (the
 * same messenger chained to vkCreateInstance sees the instance's own). */
static bool create_instance(twin *t, bool validation)
{
    const char *layer = "VK_LAYER_KHRONOS_validation";
    const char *extension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = &sync};
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .pNext = &features,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = SAMPLE_NAME,
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = validation ? &mci : NULL,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = validation ? 1 : 0,
                               .ppEnabledLayerNames = &layer,
                               .enabledExtensionCount = validation ? 1 : 0,
                               .ppEnabledExtensionNames = &extension};
    VK_TRY(vkCreateInstance(&ci, NULL, &t->instance));
    if (!validation)
        return true;
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(t->instance, "vkCreateDebugUtilsMessengerEXT");
    mci.pNext = NULL;
    VK_TRY(create ? create(t->instance, &mci, NULL, &t->messenger) : VK_ERROR_EXTENSION_NOT_PRESENT);
    return true;
}

/* The first physical device, or the one TWIN_DEVICE names by index, and its
 * first queue family with compute. */
static bool pick_device(twin *t)
{
    VkPhysicalDevice all[16];
    uint32_t count = 16;
    VkResult r = vkEnumeratePhysicalDevices(t->instance, &count, all);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE)
        VK_TRY(r);
    const char *env = getenv("TWIN_DEVICE");
    uint32_t index = env ? (uint32_t)strtoul(env, NULL, 0) : 0;
    if (index >= count) {
        fprintf(stderr, SAMPLE_NAME ": no physical device %u (%u found)\n", index, count);
        return false;
    }
    t->physical = all[index];
    vkGetPhysicalDeviceProperties(t->physical, &t->props);
    VkQueueFamilyProperties families[16];
    uint32_t nfamilies = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(t->physical, &nfamilies, families);
    for (t->family = 0; t->family < nfamilies; t->family++)
        if (families[t->family].queueFlags & VK_QUEUE_COMPUTE_BIT)
            return true;
    fprintf(stderr, SAMPLE_NAME ": %s has no compute queue\n", t->props.deviceName);
    return false;
}

static bool create_device(twin *t)
{
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = t->family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &priority};
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qci};
    VK_TRY(vkCreateDevice(t->physical, &ci, NULL, &t->device));
    vkGetDeviceQueue(t->device, t->family, 0, &t->queue);
    return true;
}

/* Does the grid fit the device's limits (one storage buffer per grid, one
 * workgroup per 2 x 128 cells) and the kernel's 32-bit indices? */
static bool fits_device(const twin *t, life_size sz)
{
    const VkPhysicalDeviceLimits *lim = &t->props.limits;
    bool ok = sz.rows * sz.cols <= UINT32_MAX && t->bytes <= lim->maxStorageBufferRange &&
              (sz.cols + LOCAL_COLS - 1) / LOCAL_COLS <= lim->maxComputeWorkGroupCount[0] &&
              (sz.rows + LOCAL_ROWS - 1) / LOCAL_ROWS <= lim->maxComputeWorkGroupCount[1];
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": a %" PRIu64 " x %" PRIu64 " grid is past %s's limits\n", sz.rows, sz.cols,
                t->props.deviceName);
    return ok;
}

/* The first memory type among `type_bits` with all of `flags`, or -1. */
static int find_memory_type(const twin *t, uint32_t type_bits, VkMemoryPropertyFlags flags)
{
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(t->physical, &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((type_bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & flags) == flags)
            return (int)i;
    return -1;
}

/* A buffer of t->bytes with its own memory: of `want` flags if there is
 * such a type, else of `need` flags. */
static bool create_buffer(twin *t, VkBufferUsageFlags usage, VkMemoryPropertyFlags want, VkMemoryPropertyFlags need,
                          VkBuffer *buffer, VkDeviceMemory *memory)
{
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = t->bytes,
                              .usage = usage,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VK_TRY(vkCreateBuffer(t->device, &bci, NULL, buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(t->device, *buffer, &req);
    int type = find_memory_type(t, req.memoryTypeBits, want);
    if (type < 0)
        type = find_memory_type(t, req.memoryTypeBits, need);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = (uint32_t)type};
    VK_TRY(type < 0 ? VK_ERROR_OUT_OF_DEVICE_MEMORY : vkAllocateMemory(t->device, &ai, NULL, memory));
    VK_TRY(vkBindBufferMemory(t->device, *buffer, *memory, 0));
    return true;
}

/* Two device-local grids, and one host-visible, coherent staging buffer
 * (upload and readback) mapped for the whole run. */
static bool create_buffers(twin *t)
{
    const VkBufferUsageFlags grid_usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (int i = 0; i < 2; i++)
        if (!create_buffer(t, grid_usage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &t->grid[i], &t->grid_memory[i]))
            return false;
    if (!create_buffer(t, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, host, host,
                       &t->staging, &t->staging_memory))
        return false;
    VK_TRY(vkMapMemory(t->device, t->staging_memory, 0, VK_WHOLE_SIZE, 0, (void **)&t->mapped));
    return true;
}

/* GLSL to SPIR-V with shaderc, then the shader module. */
static bool create_module(twin *t)
{
    shaderc_compiler_t compiler = shaderc_compiler_initialize();
    shaderc_compile_options_t options = shaderc_compile_options_initialize();
    shaderc_compilation_result_t result = NULL;
    bool ok = compiler && options;
    if (ok) {
        shaderc_compile_options_set_target_env(options, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
        result = shaderc_compile_into_spv(compiler, life_src, strlen(life_src), shaderc_compute_shader, "life.comp",
                                          "main", options);
        ok = shaderc_result_get_compilation_status(result) == shaderc_compilation_status_success;
        if (!ok)
            fprintf(stderr, SAMPLE_NAME ": shaderc: %s\n", shaderc_result_get_error_message(result));
    }
    if (ok) {
        VkShaderModuleCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                       .codeSize = shaderc_result_get_length(result),
                                       .pCode = (const uint32_t *)shaderc_result_get_bytes(result)};
        VkResult r = vkCreateShaderModule(t->device, &ci, NULL, &t->module);
        if (r != VK_SUCCESS)
            fprintf(stderr, SAMPLE_NAME ": vkCreateShaderModule failed: VkResult %d\n", (int)r);
        ok = r == VK_SUCCESS;
    }
    shaderc_result_release(result);
    shaderc_compile_options_release(options);
    shaderc_compiler_release(compiler);
    return ok;
}

/* Two storage buffers (binding 0 read, 1 written) and the grid size as
 * push constants. */
static bool create_pipeline(twin *t)
{
    VkDescriptorSetLayoutBinding bindings[2];
    for (uint32_t i = 0; i < 2; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                                     .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                     .descriptorCount = 1,
                                                     .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 2,
                                           .pBindings = bindings};
    VK_TRY(vkCreateDescriptorSetLayout(t->device, &sci, NULL, &t->set_layout));
    VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = 2 * sizeof(uint32_t)};
    VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &t->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &push};
    VK_TRY(vkCreatePipelineLayout(t->device, &lci, NULL, &t->pipeline_layout));
    VkComputePipelineCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = t->module,
                  .pName = "main"},
        .layout = t->pipeline_layout};
    VK_TRY(vkCreateComputePipelines(t->device, VK_NULL_HANDLE, 1, &pci, NULL, &t->pipeline));
    return true;
}

/* The grids ping-pong: sets[i] reads grid[i] and writes grid[1 - i]. */
static bool create_descriptor_sets(twin *t)
{
    VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 4};
    VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 2,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &size};
    VK_TRY(vkCreateDescriptorPool(t->device, &pci, NULL, &t->descriptor_pool));
    VkDescriptorSetLayout layouts[2] = {t->set_layout, t->set_layout};
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = t->descriptor_pool,
                                      .descriptorSetCount = 2,
                                      .pSetLayouts = layouts};
    VK_TRY(vkAllocateDescriptorSets(t->device, &ai, t->sets));
    VkDescriptorBufferInfo info[4];
    VkWriteDescriptorSet writes[4];
    for (int k = 0; k < 4; k++) {
        int set = k / 2, binding = k % 2;
        info[k] = (VkDescriptorBufferInfo){.buffer = t->grid[(set + binding) % 2], .range = VK_WHOLE_SIZE};
        writes[k] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                           .dstSet = t->sets[set],
                                           .dstBinding = (uint32_t)binding,
                                           .descriptorCount = 1,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           .pBufferInfo = &info[k]};
    }
    vkUpdateDescriptorSets(t->device, 4, writes, 0, NULL);
    return true;
}

/* One command buffer, re-recorded for each submission, and its fence. */
static bool create_commands(twin *t)
{
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = t->family};
    VK_TRY(vkCreateCommandPool(t->device, &pci, NULL, &t->command_pool));
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = t->command_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VK_TRY(vkAllocateCommandBuffers(t->device, &ai, &t->cmd));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_TRY(vkCreateFence(t->device, &fci, NULL, &t->fence));
    return true;
}

static bool twin_create(twin *t, life_size sz)
{
    t->bytes = sz.rows * sz.cols * sizeof(int32_t);
    return create_instance(t, validation_requested()) && pick_device(t) && fits_device(t, sz) && create_device(t) &&
           create_buffers(t) && create_module(t) && create_pipeline(t) && create_descriptor_sets(t) &&
           create_commands(t);
}

/* Destroys whatever twin_create made, in reverse order, after the device
 * has finished with it (also after a failure half-way). */
static void twin_destroy(twin *t)
{
    if (t->device) {
        vkDeviceWaitIdle(t->device);
        vkDestroyFence(t->device, t->fence, NULL);
        vkDestroyCommandPool(t->device, t->command_pool, NULL); /* frees t->cmd */
        vkDestroyDescriptorPool(t->device, t->descriptor_pool, NULL); /* frees t->sets */
        vkDestroyPipeline(t->device, t->pipeline, NULL);
        vkDestroyPipelineLayout(t->device, t->pipeline_layout, NULL);
        vkDestroyDescriptorSetLayout(t->device, t->set_layout, NULL);
        vkDestroyShaderModule(t->device, t->module, NULL);
        for (int i = 0; i < 2; i++) {
            vkDestroyBuffer(t->device, t->grid[i], NULL);
            vkFreeMemory(t->device, t->grid_memory[i], NULL);
        }
        vkDestroyBuffer(t->device, t->staging, NULL);
        vkFreeMemory(t->device, t->staging_memory, NULL); /* unmaps it */
        vkDestroyDevice(t->device, NULL);
    }
    if (t->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(t->instance, "vkDestroyDebugUtilsMessengerEXT");
        destroy(t->instance, t->messenger, NULL);
    }
    if (t->instance)
        vkDestroyInstance(t->instance, NULL);
}

/* ---- recording and submitting ----------------------------------------- */

/* A global memory barrier: the writes `src_access` of `src_stage` are made
 * visible to `dst_access` of `dst_stage`. Global rather than per buffer:
 * fewer lines, and the same on every driver we know for a single queue. */
static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src_access, .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

static bool begin(twin *t)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VK_TRY(vkBeginCommandBuffer(t->cmd, &bi)); /* resets it: the pool allows it */
    return true;
}

/* Ends the command buffer, submits it and waits for it to finish. */
static bool submit_and_wait(twin *t)
{
    VK_TRY(vkEndCommandBuffer(t->cmd));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &t->cmd};
    VK_TRY(vkResetFences(t->device, 1, &t->fence));
    VK_TRY(vkQueueSubmit(t->queue, 1, &si, t->fence));
    VK_TRY(vkWaitForFences(t->device, 1, &t->fence, VK_TRUE, UINT64_MAX));
    return true;
}

/* Steps first .. last-1: step s reads grid[s % 2] and writes the other.
 * Each dispatch first waits for the writes before it: the upload's, or the
 * step before's (read after write), and the reads of the step before that
 * grid is overwritten (write after read). */
static void record_steps(twin *t, life_size sz, uint64_t first, uint64_t last)
{
    uint32_t size[2] = {(uint32_t)sz.rows, (uint32_t)sz.cols};
    vkCmdBindPipeline(t->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, t->pipeline);
    vkCmdPushConstants(t->cmd, t->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof size, size);
    for (uint64_t s = first; s < last; s++) {
        barrier(t->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        vkCmdBindDescriptorSets(t->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, t->pipeline_layout, 0, 1, &t->sets[s % 2], 0,
                                NULL);
        vkCmdDispatch(t->cmd, (size[1] + LOCAL_COLS - 1) / LOCAL_COLS, (size[0] + LOCAL_ROWS - 1) / LOCAL_ROWS, 1);
    }
}

/* Warm-up: the start grid through the staging buffer into grid[0], then
 * step 0 (the first use of the pipeline). */
static bool upload_and_warm_up(twin *t, const int32_t *start, life_size sz)
{
    memcpy(t->mapped, start, t->bytes); /* coherent: the submission makes it visible */
    if (!begin(t))
        return false;
    vkCmdCopyBuffer(t->cmd, t->staging, t->grid[0], 1, &(VkBufferCopy){.size = t->bytes});
    record_steps(t, sz, 0, 1);
    return submit_and_wait(t);
}

/* Step 0 again (it reads grid[0] only), in batches, until a GPU runs at
 * its clocks (sample_warm.h); once on a CPU. */
static bool warm_up(twin *t, life_size sz)
{
    double warm_ms = t->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0.0 : SAMPLE_WARM_MS, t0 = life_now_ms();
    unsigned batch = 1;
    do {
        double b0 = life_now_ms();
        if (!begin(t))
            return false;
        for (unsigned i = 0; i < batch; i++)
            record_steps(t, sz, 0, 1);
        if (!submit_and_wait(t))
            return false;
        batch = sample_warm_next(batch, life_now_ms() - b0);
    } while (life_now_ms() - t0 < warm_ms);
    return true;
}

/* The last grid back through the staging buffer. */
static bool read_back(twin *t, life_size sz, int32_t *out)
{
    if (!begin(t))
        return false;
    barrier(t->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    vkCmdCopyBuffer(t->cmd, t->grid[sz.steps % 2], t->staging, 1, &(VkBufferCopy){.size = t->bytes});
    barrier(t->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
    if (!submit_and_wait(t))
        return false;
    memcpy(out, t->mapped, t->bytes);
    return true;
}

/* The whole run: warm-up (upload, step 0, step 0 again on a GPU), steps 1 .. steps-1 in one
 * submission timed up to its fence, readback into `out`. */
static bool run_life(twin *t, const int32_t *start, life_size sz, int32_t *out, double *ms)
{
    if (!upload_and_warm_up(t, start, sz) || !warm_up(t, sz) || !begin(t))
        return false;
    record_steps(t, sz, 1, sz.steps);
    double t0 = life_now_ms();
    if (!submit_and_wait(t))
        return false;
    *ms = life_now_ms() - t0;
    return read_back(t, sz, out);
}

/* The device's name as one token of the RESULT line: spaces become '_',
 * commas are dropped (as the other samples write it). */
static void result_name(const char *name, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; name[i] && j + 1 < cap; i++)
        if (name[i] != ',')
            out[j++] = name[i] == ' ' ? '_' : name[i];
    out[j] = '\0';
}

/* Everything but the RESULT line: the run on the device, from the start
 * in `grid` to the last grid back in it, then the host's check; returns
 * whether the run is verified. */
static bool run_all(life_size sz, int32_t *grid, char *devname, size_t cap, double *ms)
{
    twin t = {0};
    bool ok = twin_create(&t, sz);
    if (t.physical)
        result_name(t.props.deviceName, devname, cap);
    ok = ok && run_life(&t, grid, sz, grid, ms);
    twin_destroy(&t);
    /* One part: the whole grid, from row 0. */
    ok = ok && life_check(grid, sz, (const uint64_t[]){0}, 1);
    int messages = atomic_load(&validation_messages);
    if (messages)
        fprintf(stderr, SAMPLE_NAME ": %d messages from the validation layer\n", messages);
    return ok && messages == 0;
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    life_size sz;
    if (!life_parse_size(argc, argv, &sz))
        return 2;
    int32_t *grid = life_start_grid(sz);
    char devname[256] = "none";
    double ms = 0.0;
    bool verified = grid && run_all(sz, grid, devname, sizeof devname, &ms);
    life_print_result(devname, sz, ms, verified);
    free(grid);
    return verified ? 0 : 1;
}
