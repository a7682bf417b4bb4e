/*
 * twin_jacobi_mpi — samples/jacobi.c over MPI ranks, written by hand
 * against plain Vulkan, shaderc and MPI-3.1, without hplvk: the baseline
 * that samples/twins/count_lines.sh counts for jacobi over ranks, i.e. what
 * a user writes for the same kernel on one device per rank.
 *
 *   mpiexec -n <ranks> twin_jacobi_mpi [rows [cols [steps [host_budget]]]]
 *                                                  default 512 512 100 3e8
 *
 * Each rank owns a block of rows, split as hplvk splits rows over one
 * device per rank in rank order (min(rows, ranks) parts that differ by at
 * most one row, the larger first; here every rank needs a row), and keeps
 * it in device memory with one halo row above and one below. Each step runs
 * the sample's kernel expression over the rank's rows; before each step
 * after the first, the ranks swap the boundary rows of the last step with
 * their neighbours by MPI_Sendrecv through a host-visible staging buffer
 * (copied there by the step's command buffer, copied into the halo rows by
 * the next one's). Step 0 warms up (on a GPU it runs again for 500 ms:
 * samples/sample_warm.h); steps 1 .. steps-1, the exchanges before them
 * included, are timed from a barrier to the last rank's end. Rank 0
 * gathers the grid (MPI_Gatherv), prints its checksum line (the sample's:
 * FNV-1a of the grid's bytes, so that ctest compares the two) and checks it
 * against the host reference as the sample does (jacobi_host.h, shared with
 * the sample: size, arguments, start grid, host check, RESULT line).
 *
 * Device: TWIN_DEVICE=<index> (among the physical devices) or TWIN_DEVICE=cpu
 * (the first CPU device, e.g. Lavapipe); by default the GPU of index
 * (node-local rank mod number of GPUs) among the discrete and integrated
 * GPUs, else the first CPU device.
 *
 * With HPLVK_VALIDATION=1 it enables the Khronos validation layer with
 * synchronization validation, and any message of the layer on any rank
 * fails the run. A failed Vulkan or MPI call aborts the job (MPI_Abort):
 * its neighbours would otherwise wait for it forever.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "twin_jacobi_mpi"

#include <mpi.h>
#include <shaderc/shaderc.h>
#include <vulkan/vulkan.h>

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_warm.h"

static char ranks_field[32]; /* " ranks=<n>": the RESULT line's last field */
#define SAMPLE_RESULT_TAIL() ranks_field
#define JACOBI_OTHER_CHECKS "" /* no check but the host's */
#include "jacobi_host.h"

/* The sample's kernel on plain GLSL over a rank's block: local rows 0 and
 * nloc + 1 are the halos, local row l (1 .. nloc) is global row row0 + l - 1.
 * Workgroups of 2 rows x 128 columns, x along the columns, as hplvk runs a
 * 2-D domain; the bounds check returns invocations past the block. */
static const char *jacobi_src =
    "#version 450\n"
    "layout(local_size_x = 128, local_size_y = 2) in;\n"
    "layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };\n"
    "layout(std430, set = 0, binding = 1) writeonly buffer Dst { float dst[]; };\n"
    "layout(push_constant) uniform Block { uint rows; uint cols; uint row0; uint nloc; } p;\n"
    "void main() {\n"
    "    uint c = gl_GlobalInvocationID.x, l = gl_GlobalInvocationID.y + 1u;\n"
    "    if (c >= p.cols || l > p.nloc)\n"
    "        return;\n"
    "    uint r = p.row0 + l - 1u, i = l * p.cols + c;\n"
    "    if (r == 0u || r == p.rows - 1u || c == 0u || c == p.cols - 1u) {\n"
    "        dst[i] = src[i];\n"
    "        return;\n"
    "    }\n"
    "    precise float s = ((src[i - p.cols] + src[i + p.cols]) + src[i - 1u]) + src[i + 1u];\n"
    "    precise float v = 0.25 * s;\n"
    "    dst[i] = v;\n"
    "}\n";

#define LOCAL_COLS 128u /* the kernel's local_size_x */
#define LOCAL_ROWS 2u   /* and local_size_y */

/* Report a failed call and end the whole job: a rank that stops alone
 * would leave its neighbours waiting for its halo rows. */
static void die(const char *what, const char *why)
{
    fprintf(stderr, SAMPLE_NAME ": %s failed: %s\n", what, why);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#define VK_CHECK(call)                                                                \
    do {                                                                              \
        VkResult vr_ = (call);                                                        \
        if (vr_ != VK_SUCCESS) {                                                      \
            char why_[32];                                                            \
            snprintf(why_, sizeof why_, "VkResult %d", (int)vr_);                     \
            die(#call, why_);                                                         \
        }                                                                             \
    } while (0)

#define MPI_CHECK(call)                                                               \
    do {                                                                              \
        int mr_ = (call);                                                             \
        if (mr_ != MPI_SUCCESS) {                                                     \
            char why_[MPI_MAX_ERROR_STRING];                                          \
            int len_ = 0;                                                             \
            MPI_Error_string(mr_, why_, &len_);                                       \
            die(#call, why_);                                                         \
        }                                                                             \
    } while (0)

/* The staging buffer: the block (upload and readback), then four rows. */
enum { SEND_TOP, SEND_BOTTOM, RECV_TOP, RECV_BOTTOM };

/* Every object of a rank's run; zero until created. */
typedef struct twin {
    int rank, ranks, up, down; /* up, down: the neighbours, or MPI_PROC_NULL */
    uint64_t row0, nloc;       /* the rank's first global row and row count */
    MPI_Datatype row_type;     /* one row of floats */
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    uint32_t family;
    VkDevice device;
    VkQueue queue;
    VkBuffer grid[2], staging;
    VkDeviceMemory grid_memory[2], staging_memory;
    float *mapped;
    VkDeviceSize bytes, row_bytes; /* the block with its halos; one row */
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkPipeline pipeline;
    VkDescriptorPool descriptor_pool;
    VkDescriptorSet sets[2]; /* sets[i]: reads grid[i], writes grid[1 - i] */
    VkCommandPool command_pool;
    VkCommandBuffer cmd[3]; /* cmd[i]: a step reading grid[i]; cmd[2]: upload, readback */
    VkFence fence;
} twin;

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
 * synchronization validation and a messenger that counts its messages. */
static void create_instance(twin *t, bool validation)
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
    VK_CHECK(vkCreateInstance(&ci, NULL, &t->instance));
    if (!validation)
        return;
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(t->instance, "vkCreateDebugUtilsMessengerEXT");
    mci.pNext = NULL;
    VK_CHECK(create ? create(t->instance, &mci, NULL, &t->messenger) : VK_ERROR_EXTENSION_NOT_PRESENT);
}

/* The rank's rank among those of its node (MPI-3 shared-memory split). */
static int node_rank(void)
{
    MPI_Comm node;
    int rank = 0;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_CHECK(MPI_Comm_rank(node, &rank));
    MPI_CHECK(MPI_Comm_free(&node));
    return rank;
}

/* The physical device (see the top of the file) and its first queue
 * family with compute. */
static void pick_device(twin *t)
{
    VkPhysicalDevice all[16];
    uint32_t count = 16, gpus = 0, cpu = UINT32_MAX, index = UINT32_MAX;
    VkResult r = vkEnumeratePhysicalDevices(t->instance, &count, all);
    VK_CHECK(r == VK_INCOMPLETE ? VK_SUCCESS : r);
    VkPhysicalDeviceProperties props[16];
    for (uint32_t i = 0; i < count; i++) {
        vkGetPhysicalDeviceProperties(all[i], &props[i]);
        gpus += props[i].deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                props[i].deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
        if (props[i].deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && cpu == UINT32_MAX)
            cpu = i;
    }
    const char *env = getenv("TWIN_DEVICE");
    int local = node_rank();
    if (env && strcmp(env, "cpu") == 0)
        index = cpu;
    else if (env)
        index = (uint32_t)strtoul(env, NULL, 0);
    else if (gpus == 0)
        index = cpu;
    else
        for (uint32_t i = 0, k = 0; i < count && index == UINT32_MAX; i++)
            if (props[i].deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                props[i].deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU)
                index = k++ == (uint32_t)local % gpus ? i : UINT32_MAX;
    if (index >= count)
        die("pick_device", env ? "no such physical device (TWIN_DEVICE)" : "no GPU and no CPU device");
    t->physical = all[index];
    t->props = props[index];
    VkQueueFamilyProperties families[16];
    uint32_t nfamilies = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(t->physical, &nfamilies, families);
    for (t->family = 0; t->family < nfamilies; t->family++)
        if (families[t->family].queueFlags & VK_QUEUE_COMPUTE_BIT)
            return;
    die("pick_device", "the device has no compute queue");
}

static void create_device(twin *t)
{
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = t->family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &priority};
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qci};
    VK_CHECK(vkCreateDevice(t->physical, &ci, NULL, &t->device));
    vkGetDeviceQueue(t->device, t->family, 0, &t->queue);
}

/* Does the block fit the device's limits and the kernel's 32-bit indices? */
static void check_fits(const twin *t, grid_size sz)
{
    const VkPhysicalDeviceLimits *lim = &t->props.limits;
    if ((t->nloc + 2) * sz.cols > UINT32_MAX || t->bytes > lim->maxStorageBufferRange ||
        (sz.cols + LOCAL_COLS - 1) / LOCAL_COLS > lim->maxComputeWorkGroupCount[0] ||
        (t->nloc + LOCAL_ROWS - 1) / LOCAL_ROWS > lim->maxComputeWorkGroupCount[1])
        die("check_fits", "the rank's block is past the device's limits");
}

static int find_memory_type(const twin *t, uint32_t type_bits, VkMemoryPropertyFlags flags)
{
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(t->physical, &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((type_bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & flags) == flags)
            return (int)i;
    return -1;
}

/* A buffer with its own memory: of `want` flags if there is such a type,
 * else of `need` flags. */
static void create_buffer(twin *t, VkDeviceSize size, VkBufferUsageFlags usage, VkMemoryPropertyFlags want,
                          VkMemoryPropertyFlags need, VkBuffer *buffer, VkDeviceMemory *memory)
{
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = usage,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VK_CHECK(vkCreateBuffer(t->device, &bci, NULL, buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(t->device, *buffer, &req);
    int type = find_memory_type(t, req.memoryTypeBits, want);
    if (type < 0)
        type = find_memory_type(t, req.memoryTypeBits, need);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = (uint32_t)type};
    VK_CHECK(type < 0 ? VK_ERROR_OUT_OF_DEVICE_MEMORY : vkAllocateMemory(t->device, &ai, NULL, memory));
    VK_CHECK(vkBindBufferMemory(t->device, *buffer, *memory, 0));
}

/* Two device-local blocks and a host-visible, coherent staging buffer
 * (the block, then the four halo rows) mapped for the whole run. */
static void create_buffers(twin *t)
{
    const VkBufferUsageFlags grid_usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (int i = 0; i < 2; i++)
        create_buffer(t, t->bytes, grid_usage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &t->grid[i],
                      &t->grid_memory[i]);
    create_buffer(t, t->bytes + 4 * t->row_bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                  host, host, &t->staging, &t->staging_memory);
    VK_CHECK(vkMapMemory(t->device, t->staging_memory, 0, VK_WHOLE_SIZE, 0, (void **)&t->mapped));
}

/* GLSL to SPIR-V with shaderc, then the shader module. */
static void create_module(twin *t)
{
    shaderc_compiler_t compiler = shaderc_compiler_initialize();
    shaderc_compile_options_t options = shaderc_compile_options_initialize();
    if (!compiler || !options)
        die("shaderc_compiler_initialize", "out of memory");
    shaderc_compile_options_set_target_env(options, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
    shaderc_compilation_result_t result = shaderc_compile_into_spv(compiler, jacobi_src, strlen(jacobi_src),
                                                                   shaderc_compute_shader, "jacobi.comp", "main", options);
    if (shaderc_result_get_compilation_status(result) != shaderc_compilation_status_success)
        die("shaderc_compile_into_spv", shaderc_result_get_error_message(result));
    VkShaderModuleCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = shaderc_result_get_length(result),
                                   .pCode = (const uint32_t *)shaderc_result_get_bytes(result)};
    VK_CHECK(vkCreateShaderModule(t->device, &ci, NULL, &t->module));
    shaderc_result_release(result);
    shaderc_compile_options_release(options);
    shaderc_compiler_release(compiler);
}

/* Two storage buffers (binding 0 read, 1 written); the block as push
 * constants. */
static void create_pipeline(twin *t)
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
    VK_CHECK(vkCreateDescriptorSetLayout(t->device, &sci, NULL, &t->set_layout));
    VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = 4 * sizeof(uint32_t)};
    VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &t->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &push};
    VK_CHECK(vkCreatePipelineLayout(t->device, &lci, NULL, &t->pipeline_layout));
    VkComputePipelineCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = t->module,
                  .pName = "main"},
        .layout = t->pipeline_layout};
    VK_CHECK(vkCreateComputePipelines(t->device, VK_NULL_HANDLE, 1, &pci, NULL, &t->pipeline));
}

/* The blocks ping-pong: sets[i] reads grid[i] and writes grid[1 - i]. */
static void create_descriptor_sets(twin *t)
{
    VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 4};
    VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 2,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &size};
    VK_CHECK(vkCreateDescriptorPool(t->device, &pci, NULL, &t->descriptor_pool));
    VkDescriptorSetLayout layouts[2] = {t->set_layout, t->set_layout};
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = t->descriptor_pool,
                                      .descriptorSetCount = 2,
                                      .pSetLayouts = layouts};
    VK_CHECK(vkAllocateDescriptorSets(t->device, &ai, t->sets));
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
}

static void create_commands(twin *t)
{
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = t->family};
    VK_CHECK(vkCreateCommandPool(t->device, &pci, NULL, &t->command_pool));
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = t->command_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 3};
    VK_CHECK(vkAllocateCommandBuffers(t->device, &ai, t->cmd));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_CHECK(vkCreateFence(t->device, &fci, NULL, &t->fence));
}

/* The rank's rows, its neighbours and one row as an MPI type. */
static void split_rows(twin *t, grid_size sz)
{
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &t->rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &t->ranks));
    uint64_t r = (uint64_t)t->rank, base = sz.rows / (uint64_t)t->ranks, extra = sz.rows % (uint64_t)t->ranks;
    t->row0 = r * base + jacobi_min(r, extra);
    t->nloc = base + (r < extra);
    t->up = t->rank > 0 ? t->rank - 1 : MPI_PROC_NULL;
    t->down = t->rank + 1 < t->ranks ? t->rank + 1 : MPI_PROC_NULL;
    t->row_bytes = sz.cols * sizeof(float);
    t->bytes = (t->nloc + 2) * t->row_bytes;
    MPI_CHECK(MPI_Type_contiguous((int)sz.cols, MPI_FLOAT, &t->row_type));
    MPI_CHECK(MPI_Type_commit(&t->row_type));
}

static void twin_create(twin *t, grid_size sz)
{
    split_rows(t, sz);
    create_instance(t, validation_requested());
    pick_device(t);
    create_device(t);
    check_fits(t, sz);
    create_buffers(t);
    create_module(t);
    create_pipeline(t);
    create_descriptor_sets(t);
    create_commands(t);
}

static void twin_destroy(twin *t)
{
    VK_CHECK(vkDeviceWaitIdle(t->device));
    vkDestroyFence(t->device, t->fence, NULL);
    vkDestroyCommandPool(t->device, t->command_pool, NULL);
    vkDestroyDescriptorPool(t->device, t->descriptor_pool, NULL);
    vkDestroyPipeline(t->device, t->pipeline, NULL);
    vkDestroyPipelineLayout(t->device, t->pipeline_layout, NULL);
    vkDestroyDescriptorSetLayout(t->device, t->set_layout, NULL);
    vkDestroyShaderModule(t->device, t->module, NULL);
    for (int i = 0; i < 2; i++) {
        vkDestroyBuffer(t->device, t->grid[i], NULL);
        vkFreeMemory(t->device, t->grid_memory[i], NULL);
    }
    vkDestroyBuffer(t->device, t->staging, NULL);
    vkFreeMemory(t->device, t->staging_memory, NULL);
    vkDestroyDevice(t->device, NULL);
    if (t->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(t->instance, "vkDestroyDebugUtilsMessengerEXT");
        destroy(t->instance, t->messenger, NULL);
    }
    vkDestroyInstance(t->instance, NULL);
    MPI_CHECK(MPI_Type_free(&t->row_type));
}

/* ---- recording and submitting ----------------------------------------- */

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src_access, .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Everything before (transfers, steps) done and visible to what follows. */
static void barrier_all(VkCommandBuffer cmd)
{
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    barrier(cmd, stages, VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT, stages,
            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT |
                VK_ACCESS_SHADER_WRITE_BIT);
}

static void begin(VkCommandBuffer cmd)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VK_CHECK(vkBeginCommandBuffer(cmd, &bi));
}

/* Submits a recorded command buffer and waits for it. */
static void submit_and_wait(twin *t, VkCommandBuffer cmd)
{
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    VK_CHECK(vkResetFences(t->device, 1, &t->fence));
    VK_CHECK(vkQueueSubmit(t->queue, 1, &si, t->fence));
    VK_CHECK(vkWaitForFences(t->device, 1, &t->fence, VK_TRUE, UINT64_MAX));
}

/* A copy of one row between the staging buffer's row `slot` and local row
 * `row` of a block. */
static VkBufferCopy staged_row(const twin *t, int slot, uint64_t row, bool to_block)
{
    VkDeviceSize staged = t->bytes + (VkDeviceSize)slot * t->row_bytes, block = row * t->row_bytes;
    return (VkBufferCopy){.srcOffset = to_block ? staged : block, .dstOffset = to_block ? block : staged,
                          .size = t->row_bytes};
}

/* cmd[i], recorded once: the received halo rows into grid[i], the step
 * from grid[i] to grid[1 - i], the new boundary rows out to the staging
 * buffer for the host. */
static void record_step(twin *t, grid_size sz, int i)
{
    VkCommandBuffer cmd = t->cmd[i];
    uint32_t block[4] = {(uint32_t)sz.rows, (uint32_t)sz.cols, (uint32_t)t->row0, (uint32_t)t->nloc};
    begin(cmd);
    barrier_all(cmd);
    VkBufferCopy in[2] = {staged_row(t, RECV_TOP, 0, true), staged_row(t, RECV_BOTTOM, t->nloc + 1, true)};
    vkCmdCopyBuffer(cmd, t->staging, t->grid[i], 2, in);
    barrier_all(cmd);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, t->pipeline);
    vkCmdPushConstants(cmd, t->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof block, block);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, t->pipeline_layout, 0, 1, &t->sets[i], 0, NULL);
    vkCmdDispatch(cmd, (block[1] + LOCAL_COLS - 1) / LOCAL_COLS, (block[3] + LOCAL_ROWS - 1) / LOCAL_ROWS, 1);
    barrier_all(cmd);
    VkBufferCopy out[2] = {staged_row(t, SEND_TOP, 1, false), staged_row(t, SEND_BOTTOM, t->nloc, false)};
    vkCmdCopyBuffer(cmd, t->grid[1 - i], t->staging, 2, out);
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
    VK_CHECK(vkEndCommandBuffer(cmd));
}

/* The boundary rows of the last step to the neighbours, theirs into the
 * staging rows that the next step copies into its halo rows. */
static void exchange_halos(twin *t)
{
    float *row[4];
    for (int k = 0; k < 4; k++)
        row[k] = (float *)((char *)t->mapped + t->bytes + (VkDeviceSize)k * t->row_bytes);
    MPI_CHECK(MPI_Sendrecv(row[SEND_TOP], 1, t->row_type, t->up, 0, row[RECV_BOTTOM], 1, t->row_type, t->down, 0,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_CHECK(MPI_Sendrecv(row[SEND_BOTTOM], 1, t->row_type, t->down, 1, row[RECV_TOP], 1, t->row_type, t->up, 1,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

/* The rank's block of the start, halos included (zero past the grid),
 * into grid[0]; its halo rows also into the staging rows step 0 reads. */
static void upload(twin *t, const float *start, grid_size sz)
{
    memset(t->mapped, 0, t->bytes + 4 * t->row_bytes);
    uint64_t first = t->row0 > 0 ? t->row0 - 1 : 0, last = jacobi_min(sz.rows, t->row0 + t->nloc + 1);
    memcpy((char *)t->mapped + (first + 1 - t->row0) * t->row_bytes, start + first * sz.cols,
           (last - first) * t->row_bytes);
    memcpy((char *)t->mapped + t->bytes + RECV_TOP * t->row_bytes, t->mapped, t->row_bytes);
    memcpy((char *)t->mapped + t->bytes + RECV_BOTTOM * t->row_bytes, (char *)t->mapped + t->bytes - t->row_bytes,
           t->row_bytes);
    begin(t->cmd[2]);
    vkCmdCopyBuffer(t->cmd[2], t->staging, t->grid[0], 1, &(VkBufferCopy){.size = t->bytes});
    VK_CHECK(vkEndCommandBuffer(t->cmd[2]));
    submit_and_wait(t, t->cmd[2]);
}

/* The rank's rows of the last step into the staging buffer's start. */
static void read_back(twin *t, grid_size sz)
{
    begin(t->cmd[2]);
    barrier_all(t->cmd[2]);
    vkCmdCopyBuffer(t->cmd[2], t->grid[sz.steps % 2], t->staging, 1,
                    &(VkBufferCopy){.srcOffset = t->row_bytes, .size = t->nloc * t->row_bytes});
    barrier(t->cmd[2], VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
    VK_CHECK(vkEndCommandBuffer(t->cmd[2]));
    submit_and_wait(t, t->cmd[2]);
}

/* The whole run; returns the slowest rank's time of steps 1 .. steps-1
 * on rank 0. Step 0 (it reads grid[0] and the start's halos only) runs
 * again until a GPU is at its clocks (sample_warm.h), once on a CPU. */
static double run_jacobi(twin *t, const float *start, grid_size sz)
{
    upload(t, start, sz);
    record_step(t, sz, 0);
    record_step(t, sz, 1);
    submit_and_wait(t, t->cmd[0]);
    double warm_ms = t->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0.0 : SAMPLE_WARM_MS, w0 = MPI_Wtime();
    do
        submit_and_wait(t, t->cmd[0]);
    while ((MPI_Wtime() - w0) * 1e3 < warm_ms);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    for (uint64_t s = 1; s < sz.steps; s++) {
        exchange_halos(t);
        submit_and_wait(t, t->cmd[s % 2]);
    }
    double ms = (MPI_Wtime() - t0) * 1e3, slowest = 0.0;
    MPI_CHECK(MPI_Reduce(&ms, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    read_back(t, sz);
    return slowest;
}

/* Every rank's rows into `grid` on rank 0. */
static void gather(twin *t, grid_size sz, float *grid)
{
    int *counts = malloc((size_t)t->ranks * sizeof *counts), *displs = malloc((size_t)t->ranks * sizeof *displs);
    if (!counts || !displs)
        die("gather", "out of host memory");
    for (int r = 0; r < t->ranks; r++) {
        uint64_t base = sz.rows / (uint64_t)t->ranks, extra = sz.rows % (uint64_t)t->ranks;
        counts[r] = (int)(base + ((uint64_t)r < extra));
        displs[r] = (int)((uint64_t)r * base + jacobi_min((uint64_t)r, extra));
    }
    MPI_CHECK(MPI_Gatherv(t->mapped, (int)t->nloc, t->row_type, grid, counts, displs, t->row_type, 0, MPI_COMM_WORLD));
    free(counts);
    free(displs);
}

/* Every rank's device name on rank 0, as the RESULT line's device list:
 * spaces become '_', commas are dropped. */
static void device_list(const twin *t, char *out, size_t cap)
{
    char mine[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE] = {0}, *all = malloc((size_t)t->ranks * sizeof mine);
    if (!all)
        die("device_list", "out of host memory");
    for (size_t i = 0, j = 0; t->props.deviceName[i]; i++)
        if (t->props.deviceName[i] != ',')
            mine[j++] = t->props.deviceName[i] == ' ' ? '_' : t->props.deviceName[i];
    MPI_CHECK(MPI_Gather(mine, (int)sizeof mine, MPI_CHAR, all, (int)sizeof mine, MPI_CHAR, 0, MPI_COMM_WORLD));
    size_t used = 0;
    for (int r = 0; t->rank == 0 && r < t->ranks && used < cap; r++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s", r ? "," : "", all + (size_t)r * sizeof mine);
    free(all);
}

/* FNV-1a (64 bits) of the grid's bytes, as the sample prints it. */
static void print_checksum(const float *grid, size_t n)
{
    const unsigned char *p = (const unsigned char *)grid;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    printf("checksum: %016" PRIx64 " (grid, %zu bytes)\n", h, n);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, SAMPLE_NAME ": MPI_Init failed\n");
        return 1;
    }
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    twin t = {0};
    grid_size sz;
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &t.ranks));
    if (!parse_size(argc, argv, &sz) || sz.rows < (uint64_t)t.ranks || sz.rows > INT32_MAX || sz.cols > INT32_MAX) {
        fprintf(stderr, "usage: %s [rows >= 3, >= ranks [cols >= 3 [steps >= 2 [host_budget]]]]\n", argv[0]);
        MPI_CHECK(MPI_Finalize());
        return 2;
    }
    size_t n = sz.rows * sz.cols;
    float *host[4] = {malloc(n * sizeof(float)), NULL, NULL, NULL}; /* start; on rank 0: result, reference */
    twin_create(&t, sz);
    for (int i = 1; i < 4 && t.rank == 0; i++)
        host[i] = malloc(n * sizeof(float));
    if (!host[0] || (t.rank == 0 && (!host[1] || !host[2] || !host[3])))
        die("main", "out of host memory");
    initial_grid(host[0], sz);
    double ms = run_jacobi(&t, host[0], sz);
    gather(&t, sz, host[1]);
    char devnames[4096] = "none";
    device_list(&t, devnames, sizeof devnames);
    twin_destroy(&t);
    bool ok = true;
    if (t.rank == 0) {
        print_checksum(host[1], n * sizeof(float));
        ok = check_host(host[1], host[0], sz, t.ranks, (float *[2]){host[2], host[3]});
    }
    int messages = atomic_load(&validation_messages), mine = ok && messages == 0, all = 0;
    if (messages)
        fprintf(stderr, SAMPLE_NAME ": rank %d: %d messages from the validation layer\n", t.rank, messages);
    MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
    snprintf(ranks_field, sizeof ranks_field, " ranks=%d", t.ranks);
    if (t.rank == 0)
        jacobi_print_result(devnames, sz, ms, all != 0);
    for (int i = 0; i < 4; i++)
        free(host[i]);
    MPI_CHECK(MPI_Finalize());
    return all ? 0 : 1;
}
