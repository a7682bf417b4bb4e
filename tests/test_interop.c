/* Vulkan interop (hplvk_vulkan.h). The test is an application with Vulkan
 * code of its own: its VkInstance (the validation layer with synchronization
 * validation, and a debug messenger that fails the test on any message),
 * its VkDevices on Lavapipe (on the first GPU with TH_DEVICE_KIND=gpu0), its
 * compute shaders (tests/interop_*.comp, compiled by glslc at build time)
 * and one queue per device, shared with hplvk through the queue lock
 * callbacks. On them:
 *   - a context with separate device memory: eval k1 (x = 2x + 1), acquire
 *     x, the application's dispatch (x += 10, through a descriptor set bound
 *     at an aligned offset) waiting on hplvk's timeline and signalling its
 *     own, release, eval k2 (x = 3x), host read: every element checked;
 *   - a subarray of a 2-D array inside the array's buffer (offset != 0,
 *     strides of the whole array) and one in a buffer of its own box, the
 *     application's dispatch through buffer device addresses;
 *   - HPL_READ of x and HPL_WRITE of y at once (y = x + 10 by the
 *     application): nothing fetched for y, x's host copy still valid after
 *     (no transfer when the host reads it), a host read of x allowed during
 *     the READ acquisition; evals, host access, prefetches (to the device
 *     and to the host) and destroy that would race refused with a message
 *     naming the acquisition; all fine after release;
 *   - a subarray with a ghost part acquired, all of it written by the
 *     application's work, held back by a gate the host opens later: the
 *     ghost elements hold one value, through a subarray, the whole array
 *     and a kernel alike;
 *   - the same on a zero-copy context (the device works on the host's copy:
 *     the buffer is the imported host storage), made without create_info;
 *   - two VkDevices as two hplvk devices: a split eval, each part acquired on
 *     its device and changed by the application there, a split eval after;
 *     an eval on part 1 allowed while part 0 is acquired, one on the whole
 *     array refused;
 *   - errors: wrong device index, NULL out, bad access, release without
 *     acquire, a context on a VkDevice made without bufferDeviceAddress (and
 *     a create_info without VK_EXT_external_memory_host) naming what is
 *     missing, malformed hpl_vulkan_desc;
 *   - hplvk called the queue lock around its submissions, balanced;
 *   - after every hpl_context_destroy the application's devices and instance
 *     still work: its own dispatch on its own buffer at the end. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "hplvk_vulkan.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const uint32_t add_spv[] =
#include "interop_add.spv.h"
    ;
static const uint32_t desc_spv[] =
#include "interop_desc.spv.h"
    ;

#define N 1000
#define R 40 /* 2-D arrays: rows, columns */
#define C 24

/* ---- the application's Vulkan ------------------------------------------ */

static atomic_int vk_messages;
static pthread_mutex_t queue_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_int hplvk_submits; /* queue_lock calls by hplvk */
static atomic_int lock_depth;    /* hplvk's lock minus unlock calls */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)severity, (void)type, (void)user;
    /* The 1.3.239 layer's known timeline-state timeout, which hplvk demotes
     * too (lib/api/context.c): a layer bug, not a misuse. */
    if (data->pMessageIdName && !strcmp(data->pMessageIdName, "UNASSIGNED-VkSemaphore-state-timeout"))
        return VK_FALSE;
    atomic_fetch_add(&vk_messages, 1);
    CHECK(false, "Vulkan debug message: %s", data->pMessage);
    return VK_FALSE;
}

static void lock_queue(void *user, VkQueue queue)
{
    (void)queue;
    pthread_mutex_lock(user);
    atomic_fetch_add(&hplvk_submits, 1);
    atomic_fetch_add(&lock_depth, 1);
}

static void unlock_queue(void *user, VkQueue queue)
{
    (void)queue;
    atomic_fetch_sub(&lock_depth, 1);
    pthread_mutex_unlock(user);
}

typedef struct app_device {
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    VkDevice device;
    VkQueue queue;
    uint32_t family;
    /* How it was made (create_info for hplvk points here: never copied). */
    float priority;
    VkDeviceQueueCreateInfo queue_ci;
    VkPhysicalDeviceVulkan12Features v12;
    VkPhysicalDeviceFeatures2 features;
    const char *extensions[1];
    VkDeviceCreateInfo ci;
    /* Its own objects. */
    VkSemaphore timeline;
    uint64_t value; /* last value signalled */
    VkCommandPool pool;
    VkDescriptorSetLayout set_layout;
    VkDescriptorPool descriptor_pool;
    VkPipelineLayout add_layout, desc_layout;
    VkPipeline add_pipeline, desc_pipeline;
} app_device;

static VkInstance instance;
static VkDebugUtilsMessengerEXT messenger;
static app_device apps[2];

static bool vk_ok(VkResult r, const char *what)
{
    return CHECK(r == VK_SUCCESS, "%s: VkResult %d", what, (int)r);
}

static void make_instance(void)
{
    static const char *layer = "VK_LAYER_KHRONOS_validation";
    static const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
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
        .pfnUserCallback = on_message};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "test_interop",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = &mci,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = 1,
                               .ppEnabledLayerNames = &layer,
                               .enabledExtensionCount = 1,
                               .ppEnabledExtensionNames = &ext};
    if (!vk_ok(vkCreateInstance(&ci, NULL, &instance), "vkCreateInstance (with the validation layer)"))
        exit(th_finish(NULL));
    mci.pNext = NULL;
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
    vk_ok(create ? create(instance, &mci, NULL, &messenger) : VK_ERROR_EXTENSION_NOT_PRESENT,
          "vkCreateDebugUtilsMessengerEXT");
}

/* The physical device th_devices("cpu0") names: the first CPU device, or
 * with TH_DEVICE_KIND=gpuN the Nth GPU. */
static VkPhysicalDevice pick_physical(void)
{
    const char *spec = th_devices("cpu0");
    bool gpu = !strncmp(spec, "gpu", 3);
    int nth = atoi(spec + 3);
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance, &n, NULL);
    VkPhysicalDevice list[16];
    n = n > 16 ? 16 : n;
    vkEnumeratePhysicalDevices(instance, &n, list);
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(list[i], &p);
        bool is_gpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                      p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                      p.deviceType == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
        bool wanted = gpu ? is_gpu : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
        if (wanted && nth-- == 0)
            return list[i];
    }
    CHECK(false, "no physical device for '%s'", spec);
    exit(th_finish(NULL));
}

static uint32_t compute_family(VkPhysicalDevice pd)
{
    uint32_t n = 0;
    VkQueueFamilyProperties qf[16];
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    n = n > 16 ? 16 : n;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, qf);
    for (uint32_t i = 0; i < n; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            return i;
    return 0;
}

/* A VkDevice with what hplvk needs (address: bufferDeviceAddress too), and
 * the optional 64-bit features where supported. */
static bool make_device(app_device *ad, VkPhysicalDevice pd, bool address)
{
    memset(ad, 0, sizeof *ad);
    ad->physical = pd;
    vkGetPhysicalDeviceProperties(pd, &ad->props);
    ad->family = compute_family(pd);
    ad->priority = 1.0f;
    ad->queue_ci = (VkDeviceQueueCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                             .queueFamilyIndex = ad->family,
                                             .queueCount = 1,
                                             .pQueuePriorities = &ad->priority};
    VkPhysicalDeviceFeatures supported;
    vkGetPhysicalDeviceFeatures(pd, &supported);
    ad->v12 = (VkPhysicalDeviceVulkan12Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                                 .timelineSemaphore = VK_TRUE,
                                                 .bufferDeviceAddress = address};
    ad->features = (VkPhysicalDeviceFeatures2){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &ad->v12};
    ad->features.features.shaderInt64 = supported.shaderInt64;
    ad->features.features.shaderFloat64 = supported.shaderFloat64;
    ad->extensions[0] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    ad->ci = (VkDeviceCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                  .pNext = &ad->features,
                                  .queueCreateInfoCount = 1,
                                  .pQueueCreateInfos = &ad->queue_ci,
                                  .enabledExtensionCount = 1,
                                  .ppEnabledExtensionNames = ad->extensions};
    if (!vk_ok(vkCreateDevice(pd, &ad->ci, NULL, &ad->device), "vkCreateDevice"))
        return false;
    vkGetDeviceQueue(ad->device, ad->family, 0, &ad->queue);
    return true;
}

static VkPipeline make_pipeline(app_device *ad, const uint32_t *spv, size_t bytes, VkPipelineLayout layout)
{
    VkShaderModuleCreateInfo mci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = bytes, .pCode = spv};
    VkShaderModule module = VK_NULL_HANDLE;
    VkPipeline p = VK_NULL_HANDLE;
    if (!vk_ok(vkCreateShaderModule(ad->device, &mci, NULL, &module), "vkCreateShaderModule"))
        return p;
    VkComputePipelineCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                       .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                 .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                                 .module = module,
                                                 .pName = "main"},
                                       .layout = layout};
    vk_ok(vkCreateComputePipelines(ad->device, VK_NULL_HANDLE, 1, &pci, NULL, &p), "vkCreateComputePipelines");
    vkDestroyShaderModule(ad->device, module, NULL);
    return p;
}

typedef struct add_push {
    uint64_t src, dst;
    uint32_t n0, n1, src_s0, src_s1, dst_s0, dst_s1, add;
} add_push;
#define ADD_PUSH_SIZE 44u /* the shader's block: no tail padding */

typedef struct desc_push {
    uint32_t first, count, add;
} desc_push;

/* The application's own objects on its device: a timeline, a command pool,
 * the two pipelines. */
static void make_objects(app_device *ad)
{
    VkSemaphoreTypeCreateInfo type = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
    vk_ok(vkCreateSemaphore(ad->device, &sci, NULL, &ad->timeline), "vkCreateSemaphore");
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .queueFamilyIndex = ad->family};
    vk_ok(vkCreateCommandPool(ad->device, &pci, NULL, &ad->pool), "vkCreateCommandPool");
    VkDescriptorSetLayoutBinding binding = {.binding = 0,
                                            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                            .descriptorCount = 1,
                                            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 1,
                                           .pBindings = &binding};
    vk_ok(vkCreateDescriptorSetLayout(ad->device, &lci, NULL, &ad->set_layout), "vkCreateDescriptorSetLayout");
    VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 64};
    VkDescriptorPoolCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 64,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &size};
    vk_ok(vkCreateDescriptorPool(ad->device, &dci, NULL, &ad->descriptor_pool), "vkCreateDescriptorPool");
    VkPushConstantRange add_range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = ADD_PUSH_SIZE};
    VkPipelineLayoutCreateInfo add_ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                         .pushConstantRangeCount = 1,
                                         .pPushConstantRanges = &add_range};
    vk_ok(vkCreatePipelineLayout(ad->device, &add_ci, NULL, &ad->add_layout), "vkCreatePipelineLayout");
    VkPushConstantRange desc_range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = sizeof(desc_push)};
    VkPipelineLayoutCreateInfo desc_ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                          .setLayoutCount = 1,
                                          .pSetLayouts = &ad->set_layout,
                                          .pushConstantRangeCount = 1,
                                          .pPushConstantRanges = &desc_range};
    vk_ok(vkCreatePipelineLayout(ad->device, &desc_ci, NULL, &ad->desc_layout), "vkCreatePipelineLayout");
    ad->add_pipeline = make_pipeline(ad, add_spv, sizeof add_spv, ad->add_layout);
    ad->desc_pipeline = make_pipeline(ad, desc_spv, sizeof desc_spv, ad->desc_layout);
}

static void destroy_device(app_device *ad)
{
    if (!ad->device)
        return;
    vkDeviceWaitIdle(ad->device);
    vkDestroyPipeline(ad->device, ad->add_pipeline, NULL);
    vkDestroyPipeline(ad->device, ad->desc_pipeline, NULL);
    vkDestroyPipelineLayout(ad->device, ad->add_layout, NULL);
    vkDestroyPipelineLayout(ad->device, ad->desc_layout, NULL);
    vkDestroyDescriptorPool(ad->device, ad->descriptor_pool, NULL);
    vkDestroyDescriptorSetLayout(ad->device, ad->set_layout, NULL);
    vkDestroyCommandPool(ad->device, ad->pool, NULL);
    vkDestroySemaphore(ad->device, ad->timeline, NULL);
    vkDestroyDevice(ad->device, NULL);
    memset(ad, 0, sizeof *ad);
}

/* A command buffer of its own (the pool frees them all at the end: the
 * application never waits on the host while hplvk runs). */
static VkCommandBuffer app_begin(app_device *ad)
{
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = ad->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkCommandBuffer cb = VK_NULL_HANDLE;
    vk_ok(vkAllocateCommandBuffers(ad->device, &ai, &cb), "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vk_ok(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
    return cb;
}

/* Non-zero: the next submission also waits for ad's timeline to reach this
 * value, which the host signals (app_open_gate). */
static uint64_t app_gate;

/* Submits cb on the shared queue (inside the queue lock) waiting for the
 * buffers' hplvk points; returns the value of ad's timeline it signals. */
static uint64_t app_submit(app_device *ad, VkCommandBuffer cb, const hpl_vulkan_buffer *const *bufs, int n)
{
    vk_ok(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    VkSemaphore waits[3];
    uint64_t values[3];
    VkPipelineStageFlags stages[3] = {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT};
    uint32_t w = 0;
    if (app_gate) {
        waits[w] = ad->timeline;
        values[w++] = app_gate;
    }
    for (int i = 0; i < n; i++) {
        if (!bufs[i]->timeline)
            continue;
        if (w && waits[w - 1] == bufs[i]->timeline) { /* one wait per semaphore: the later value */
            values[w - 1] = values[w - 1] > bufs[i]->wait_value ? values[w - 1] : bufs[i]->wait_value;
            continue;
        }
        waits[w] = bufs[i]->timeline;
        values[w++] = bufs[i]->wait_value;
    }
    uint64_t signal = ++ad->value;
    VkTimelineSemaphoreSubmitInfo ti = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .waitSemaphoreValueCount = w,
                                        .pWaitSemaphoreValues = values,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &signal};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ti,
                       .waitSemaphoreCount = w,
                       .pWaitSemaphores = waits,
                       .pWaitDstStageMask = stages,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &cb,
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &ad->timeline};
    pthread_mutex_lock(&queue_mutex);
    vk_ok(vkQueueSubmit(ad->queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
    pthread_mutex_unlock(&queue_mutex);
    return signal;
}

/* dst = src + add over n0 x n1 elements, through device addresses. */
static uint64_t app_add(app_device *ad, const hpl_vulkan_buffer *src, const hpl_vulkan_buffer *dst, uint32_t n0,
                        uint32_t n1, uint32_t add)
{
    add_push p = {.src = src->address,
                  .dst = dst->address,
                  .n0 = n0,
                  .n1 = n1,
                  .src_s0 = (uint32_t)src->stride[0],
                  .src_s1 = (uint32_t)src->stride[1],
                  .dst_s0 = (uint32_t)dst->stride[0],
                  .dst_s1 = (uint32_t)dst->stride[1],
                  .add = add};
    VkCommandBuffer cb = app_begin(ad);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ad->add_pipeline);
    vkCmdPushConstants(cb, ad->add_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, ADD_PUSH_SIZE, &p);
    vkCmdDispatch(cb, (n0 * n1 + 63) / 64, 1, 1);
    const hpl_vulkan_buffer *bufs[2] = {src, dst};
    return app_submit(ad, cb, bufs, 2);
}

/* b's `count` elements (1-D, contiguous) += add, through a descriptor set:
 * bound at b's offset rounded down to minStorageBufferOffsetAlignment. */
static uint64_t app_add_desc(app_device *ad, const hpl_vulkan_buffer *b, uint32_t count, uint32_t add)
{
    VkDeviceSize align = ad->props.limits.minStorageBufferOffsetAlignment;
    VkDeviceSize at = b->offset / align * align;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = ad->descriptor_pool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &ad->set_layout};
    VkDescriptorSet set = VK_NULL_HANDLE;
    vk_ok(vkAllocateDescriptorSets(ad->device, &ai, &set), "vkAllocateDescriptorSets");
    VkDescriptorBufferInfo info = {.buffer = b->buffer, .offset = at, .range = b->offset - at + b->range};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = set,
                              .descriptorCount = 1,
                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              .pBufferInfo = &info};
    vkUpdateDescriptorSets(ad->device, 1, &w, 0, NULL);
    desc_push p = {.first = (uint32_t)((b->offset - at) / sizeof(uint32_t)), .count = count, .add = add};
    VkCommandBuffer cb = app_begin(ad);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ad->desc_pipeline);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ad->desc_layout, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(cb, ad->desc_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p, &p);
    vkCmdDispatch(cb, (count + 63) / 64, 1, 1);
    const hpl_vulkan_buffer *bufs[1] = {b};
    return app_submit(ad, cb, bufs, 1);
}

typedef struct gate {
    app_device *ad;
    uint64_t value;
} gate;

/* Signals the gate from the host a moment later (on its own thread). */
static void *open_gate(void *arg)
{
    const gate *g = arg;
    nanosleep(&(struct timespec){0, 300000000}, NULL);
    VkSemaphoreSignalInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                .semaphore = g->ad->timeline,
                                .value = g->value};
    vk_ok(vkSignalSemaphore(g->ad->device, &si), "vkSignalSemaphore");
    return NULL;
}

/* ---- hplvk contexts on it ---------------------------------------------- */

static hpl_vulkan_device entry_of(const app_device *ad, bool with_create_info)
{
    return (hpl_vulkan_device){.physical = ad->physical,
                               .device = ad->device,
                               .queue = ad->queue,
                               .queue_family = ad->family,
                               .create_info = with_create_info ? &ad->ci : NULL};
}

static hpl_vulkan_desc vulkan_desc(const hpl_vulkan_device *devices, int count)
{
    return (hpl_vulkan_desc){.instance = instance,
                             .devices = devices,
                             .device_count = count,
                             .queue_lock = lock_queue,
                             .queue_unlock = unlock_queue,
                             .queue_lock_user = &queue_mutex};
}

static hpl_context *interop_context(const hpl_vulkan_desc *vk, int zero_copy)
{
    hpl_context_desc desc = {.vulkan = vk, .zero_copy = zero_copy};
    th_prepare_desc(&desc);
    hpl_context *ctx = NULL;
    if (!CHECK_OK(hpl_context_create(&desc, &ctx)))
        return NULL;
    return ctx;
}

static const char *k1_1d = /* x = 2x + 1 */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 2u + 1u; }\n";
static const char *k2_1d = /* x = 3x */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 3u; }\n";
static const char *k1_2d =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 2) x; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(x, id.x, id.y) = hpl_at2(x, id.x, id.y) * 2u + 1u; }\n";
static const char *k2_2d =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 2) x; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(x, id.x, id.y) = hpl_at2(x, id.x, id.y) * 3u; }\n";

static hpl_array iota(hpl_context *ctx, uint64_t d0, uint64_t d1)
{
    hpl_array a = th_array(ctx, HPL_UINT32, d0, d1, 0);
    uint32_t *p = th_access(ctx, a, HPL_WRITE);
    for (uint64_t i = 0; p && i < d0 * (d1 ? d1 : 1); i++)
        p[i] = (uint32_t)i;
    return a;
}

static bool zero_copy_of(hpl_context *ctx, int device)
{
    hpl_device_info info;
    memset(&info, 0, sizeof info);
    CHECK_OK(hpl_device_get_info(ctx, device, &info));
    return info.zero_copy;
}

/* eval k1, the application's x += 10 (descriptor set), eval k2, host read. */
static void basic(hpl_context *ctx, app_device *ad)
{
    hpl_kernel k1 = th_kernel(ctx, k1_1d), k2 = th_kernel(ctx, k2_1d);
    hpl_array x = iota(ctx, N, 0);
    CHECK_OK(hpl_eval(ctx, k1, &(hpl_launch){0}, HPL_ARGS(hpl_arr(x))));
    hpl_vulkan_buffer b;
    memset(&b, 0, sizeof b);
    if (!CHECK_OK(hpl_array_vulkan_acquire(ctx, x, 0, HPL_READ_WRITE, &b)))
        return;
    CHECK(b.buffer && b.timeline && b.wait_value > 0, "buffer %p timeline %p wait_value %" PRIu64, (void *)b.buffer,
          (void *)b.timeline, b.wait_value);
    CHECK(b.range == N * sizeof(uint32_t), "range %" PRIu64, (uint64_t)b.range);
    CHECK(b.stride[0] == 1 && b.stride[1] == 0 && b.stride[2] == 0, "strides %" PRIu64 " %" PRIu64 " %" PRIu64,
          b.stride[0], b.stride[1], b.stride[2]);
    CHECK(b.zero_copy == zero_copy_of(ctx, 0), "zero_copy %d", b.zero_copy);
    CHECK(b.zero_copy || b.offset == 0, "offset %" PRIu64 " in x's own buffer", (uint64_t)b.offset);
    CHECK(b.address % sizeof(uint32_t) == 0, "address %" PRIu64, (uint64_t)b.address);
    uint64_t v = app_add_desc(ad, &b, N, 10);
    CHECK_OK(hpl_array_vulkan_release(ctx, x, 0, ad->timeline, v));
    CHECK_OK(hpl_eval(ctx, k2, NULL, HPL_ARGS(hpl_arr(x))));
    const uint32_t *p = th_access(ctx, x, HPL_READ);
    int bad = 0;
    for (uint32_t i = 0; p && i < N; i++)
        if (p[i] != (2 * i + 1 + 10) * 3 && bad++ < 3)
            CHECK(false, "x[%u] = %u, want %u", i, p[i], (2 * i + 1 + 10) * 3);
    CHECK(p && bad == 0, "%d elements of x wrong", bad);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_kernel_destroy(ctx, k1));
    CHECK_OK(hpl_kernel_destroy(ctx, k2));
}

/* m[i][j] after k1 (on the whole of m, or only inside the subarray), the
 * application's += 10 inside the subarray, and k2. */
static uint32_t want_2d(uint32_t v, bool inside, bool k1_outside)
{
    uint32_t after_k1 = inside || k1_outside ? v * 2 + 1 : v;
    return (after_k1 + (inside ? 10 : 0)) * 3;
}

static void check_2d(hpl_context *ctx, hpl_array m, bool k1_outside, const char *what)
{
    const uint64_t r0 = 3, r1 = 10, c0 = 2, c1 = 9;
    const uint32_t *p = th_access(ctx, m, HPL_READ);
    int bad = 0;
    for (uint32_t i = 0; p && i < R; i++) {
        for (uint32_t j = 0; j < C; j++) {
            bool inside = i >= r0 && i <= r1 && j >= c0 && j <= c1;
            uint32_t want = want_2d(i * C + j, inside, k1_outside);
            if (p[i * C + j] != want && bad++ < 3)
                CHECK(false, "%s: m[%u][%u] = %u, want %u", what, i, j, p[i * C + j], want);
        }
    }
    CHECK(bad == 0, "%s: %d elements wrong", what, bad);
}

/* A subarray inside its root's buffer (offset != 0, the root's strides),
 * and one in a buffer of its own box; the application's dispatch through
 * device addresses. */
static void subarrays(hpl_context *ctx, app_device *ad)
{
    hpl_kernel k1 = th_kernel(ctx, k1_2d), k2 = th_kernel(ctx, k2_2d);
    bool zc = zero_copy_of(ctx, 0);
    for (int own_buffer = 0; own_buffer < 2; own_buffer++) {
        hpl_array m = iota(ctx, R, C), s;
        CHECK_OK(hpl_subarray(ctx, m, HPL_RANGES({3, 10}, {2, 9}), &s));
        /* The whole array on the device, or only the subarray's box. */
        CHECK_OK(hpl_eval(ctx, k1, NULL, HPL_ARGS(hpl_arr(own_buffer ? s : m))));
        hpl_vulkan_buffer b;
        memset(&b, 0, sizeof b);
        if (!CHECK_OK(hpl_array_vulkan_acquire(ctx, s, 0, HPL_READ_WRITE, &b)))
            continue;
        bool in_root = zc || !own_buffer;
        uint64_t s0 = in_root ? C : 8;
        CHECK(b.stride[0] == s0 && b.stride[1] == 1 && b.stride[2] == 0, "own_buffer %d: strides %" PRIu64 " %" PRIu64,
              own_buffer, b.stride[0], b.stride[1]);
        uint64_t first = in_root ? 3 * C + 2 : 0;
        CHECK(zc || b.offset == first * 4, "own_buffer %d: offset %" PRIu64 ", want %" PRIu64, own_buffer,
              (uint64_t)b.offset, first * 4);
        CHECK(b.range == (7 * s0 + 7 + 1) * 4, "own_buffer %d: range %" PRIu64, own_buffer, (uint64_t)b.range);
        uint64_t v = app_add(ad, &b, &b, 8, 8, 10);
        CHECK_OK(hpl_array_vulkan_release(ctx, s, 0, ad->timeline, v));
        CHECK_OK(hpl_eval(ctx, k2, NULL, HPL_ARGS(hpl_arr(m))));
        check_2d(ctx, m, !own_buffer, own_buffer ? "subarray in a buffer of its own" : "subarray inside m's buffer");
        CHECK_OK(hpl_array_destroy(ctx, m));
    }
    CHECK_OK(hpl_kernel_destroy(ctx, k1));
    CHECK_OK(hpl_kernel_destroy(ctx, k2));
}

/* A subarray with a ghost part acquired with HPL_READ_WRITE, all of it
 * written by the application (+= 1000), its work held back until the host
 * opens a gate: the ghost elements then hold one value (hplvk.h 4b), the
 * same through a subarray of two of them and through the whole array, and
 * the same again in a kernel on the device. */
static void ghost_part(hpl_context *ctx, app_device *ad)
{
    hpl_kernel copy = th_kernel(ctx, "#include <hplvk.glsl>\n"
                                     "hpl_args { hpl_in(uint, 1) x; hpl_out(uint, 1) y; };\n"
                                     "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i); }\n");
    hpl_array x = iota(ctx, N, 0), y = th_array(ctx, HPL_UINT32, 2, 0, 0), s, two;
    CHECK_OK(hpl_subarray_owned(ctx, x, HPL_RANGES({100, 199}), (const hpl_range[]){{110, 189}}, &s));
    CHECK_OK(hpl_subarray(ctx, x, HPL_RANGES({100, 101}), &two));
    hpl_vulkan_buffer b;
    memset(&b, 0, sizeof b);
    if (!CHECK_OK(hpl_array_vulkan_acquire(ctx, s, 0, HPL_READ_WRITE, &b)))
        return;
    gate g = {ad, ++ad->value};
    app_gate = g.value;
    uint64_t v = app_add(ad, &b, &b, 100, 1, 1000);
    app_gate = 0;
    CHECK_OK(hpl_array_vulkan_release(ctx, s, 0, ad->timeline, v));
    pthread_t opener;
    CHECK(pthread_create(&opener, NULL, open_gate, &g) == 0, "pthread_create");
    uint32_t got2[2], whole[N], dev2[2];
    CHECK_OK(hpl_array_read(ctx, two, got2, sizeof got2));
    CHECK_OK(hpl_array_read(ctx, x, whole, sizeof whole));
    pthread_join(opener, NULL);
    CHECK_OK(hpl_eval(ctx, copy, NULL, HPL_ARGS(hpl_arr(two), hpl_arr(y))));
    CHECK_OK(hpl_array_read(ctx, y, dev2, sizeof dev2));
    for (uint32_t i = 0; i < N; i++) {
        bool owned = i >= 110 && i <= 189, ghost = !owned && i >= 100 && i <= 199;
        if (!CHECK(whole[i] == (owned ? i + 1000 : i) || (ghost && whole[i] == i + 1000),
                   "x[%u] = %u after the application's += 1000 on the subarray [100, 199] owning [110, 189]", i,
                   whole[i]))
            break;
    }
    CHECK(got2[0] == whole[100] && got2[1] == whole[101] && dev2[0] == whole[100] && dev2[1] == whole[101],
          "ghost elements 100, 101: %u %u through a subarray, %u %u through the array, %u %u on the device", got2[0],
          got2[1], whole[100], whole[101], dev2[0], dev2[1]);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
    CHECK_OK(hpl_kernel_destroy(ctx, copy));
}

/* HPL_READ of x and HPL_WRITE of y at once: y = x + 10 by the application. */
static void read_and_write(hpl_context *ctx, app_device *ad)
{
    bool zc = zero_copy_of(ctx, 0);
    hpl_kernel k1 = th_kernel(ctx, k1_1d);
    hpl_array x = iota(ctx, N, 0), y = th_array(ctx, HPL_UINT32, N, 0, 0);
    CHECK_OK(hpl_eval(ctx, k1, NULL, HPL_ARGS(hpl_arr(x))));
    th_access(ctx, x, HPL_READ); /* valid on the host and on the device */
    CHECK_OK(hpl_stats_reset(ctx));
    hpl_vulkan_buffer bx, by;
    memset(&bx, 0, sizeof bx);
    memset(&by, 0, sizeof by);
    CHECK_OK(hpl_array_vulkan_acquire(ctx, x, 0, HPL_READ, &bx));
    CHECK_OK(hpl_array_vulkan_acquire(ctx, y, 0, HPL_WRITE, &by));
    hpl_stats st;
    CHECK_OK(hpl_stats_get(ctx, &st));
    CHECK(st.total.to_device_bytes == 0, "acquire moved %" PRIu64 " bytes to the device (x was there, y is written)",
          st.total.to_device_bytes);

    /* What races with the application is refused, and changes nothing. */
    CHECK_FAILS(hpl_eval(ctx, k1, NULL, HPL_ARGS(hpl_arr(x))), HPL_ERROR_INVALID_ARGUMENT, "acquired");
    CHECK_MSG("device 0");
    CHECK_FAILS(hpl_eval(ctx, k1, NULL, HPL_ARGS(hpl_arr(y))), HPL_ERROR_INVALID_ARGUMENT, "for writing");
    void *p = NULL;
    CHECK_FAILS(hpl_array_access(ctx, y, HPL_READ, &p), HPL_ERROR_INVALID_ARGUMENT, "hpl_array_vulkan_release");
    CHECK_FAILS(hpl_array_access(ctx, x, HPL_WRITE, &p), HPL_ERROR_INVALID_ARGUMENT, "acquired");
    CHECK_FAILS(hpl_array_destroy(ctx, y), HPL_ERROR_INVALID_ARGUMENT, "release it before destroying");
    CHECK_FAILS(hpl_array_fill(ctx, x, &(uint32_t){0}, HPL_ON_HOST), HPL_ERROR_INVALID_ARGUMENT, "acquired");
    CHECK_FAILS(hpl_array_vulkan_acquire(ctx, y, 0, HPL_READ, &bx), HPL_ERROR_INVALID_ARGUMENT, "acquired");
    uint32_t sum = 0;
    CHECK_FAILS(hpl_array_reduce(ctx, y, HPL_REDUCE_SUM, &sum), HPL_ERROR_INVALID_ARGUMENT, "acquired");
    CHECK_FAILS(hpl_array_prefetch(ctx, y, 0), HPL_ERROR_INVALID_ARGUMENT, "acquired");
    CHECK_FAILS(hpl_array_prefetch(ctx, y, HPL_ON_HOST), HPL_ERROR_INVALID_ARGUMENT, "acquired");
    CHECK_OK(hpl_array_prefetch(ctx, x, HPL_ON_HOST)); /* a read of x, acquired for reading */
    /* Reading x (acquired for reading) goes on. */
    const uint32_t *px = th_access(ctx, x, HPL_READ);
    CHECK(px && px[5] == 11, "x[5] = %u during the read acquisition", px ? px[5] : 0);

    uint64_t v = app_add(ad, &bx, &by, N, 1, 10);
    CHECK_OK(hpl_array_vulkan_release(ctx, x, 0, ad->timeline, v));
    CHECK_OK(hpl_array_vulkan_release(ctx, y, 0, ad->timeline, v));
    CHECK_FAILS(hpl_array_vulkan_release(ctx, y, 0, ad->timeline, v), HPL_ERROR_INVALID_ARGUMENT, "not acquired");

    CHECK_OK(hpl_stats_reset(ctx));
    px = th_access(ctx, x, HPL_READ);
    CHECK_OK(hpl_stats_get(ctx, &st));
    CHECK(st.total.to_host_bytes == 0, "x's host copy was invalidated by a READ acquisition (%" PRIu64 " bytes moved)",
          st.total.to_host_bytes);
    const uint32_t *py = th_access(ctx, y, HPL_READ);
    CHECK_OK(hpl_stats_get(ctx, &st));
    CHECK(zc || st.total.to_host_bytes == N * sizeof(uint32_t), "y: %" PRIu64 " bytes to the host, want %zu",
          st.total.to_host_bytes, N * sizeof(uint32_t));
    int bad = 0;
    for (uint32_t i = 0; py && i < N; i++)
        if (py[i] != 2 * i + 1 + 10 && bad++ < 3)
            CHECK(false, "y[%u] = %u, want %u", i, py[i], 2 * i + 11);
    CHECK(py && bad == 0, "%d elements of y wrong", bad);
    /* Everything works again after release. */
    CHECK_OK(hpl_eval(ctx, k1, NULL, HPL_ARGS(hpl_arr(y))));
    CHECK_OK(hpl_array_destroy(ctx, y));
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_kernel_destroy(ctx, k1));
}

static void errors(hpl_context *ctx)
{
    hpl_array x = th_array(ctx, HPL_UINT32, 16, 0, 0);
    hpl_vulkan_buffer b;
    CHECK_FAILS(hpl_array_vulkan_acquire(ctx, x, 7, HPL_READ, &b), HPL_ERROR_UNKNOWN_DEVICE, "device 7");
    CHECK_FAILS(hpl_array_vulkan_acquire(ctx, x, -1, HPL_READ, &b), HPL_ERROR_UNKNOWN_DEVICE, "device -1");
    CHECK_FAILS(hpl_array_vulkan_acquire(ctx, x, 0, HPL_READ, NULL), HPL_ERROR_INVALID_ARGUMENT, "out is NULL");
    CHECK_FAILS(hpl_array_vulkan_acquire(NULL, x, 0, HPL_READ, &b), HPL_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    CHECK_FAILS(hpl_array_vulkan_acquire(ctx, x, 0, (hpl_access)0, &b), HPL_ERROR_INVALID_ARGUMENT, "access 0");
    CHECK_FAILS(hpl_array_vulkan_acquire(ctx, (hpl_array){0}, 0, HPL_READ, &b), HPL_ERROR_INVALID_HANDLE, "");
    CHECK_FAILS(hpl_array_vulkan_release(ctx, x, 0, VK_NULL_HANDLE, 0), HPL_ERROR_INVALID_ARGUMENT, "not acquired");
    CHECK_FAILS(hpl_array_vulkan_release(ctx, x, 3, VK_NULL_HANDLE, 0), HPL_ERROR_UNKNOWN_DEVICE, "device 3");
    /* A release with no semaphore: the work is complete already. */
    CHECK_OK(hpl_array_vulkan_acquire(ctx, x, 0, HPL_READ, &b));
    CHECK_OK(hpl_array_vulkan_release(ctx, x, 0, VK_NULL_HANDLE, 0));
    CHECK_OK(hpl_array_destroy(ctx, x));
}

static void one_device(app_device *ad, int zero_copy, bool with_create_info, const char *what)
{
    th_note("%s", what);
    hpl_vulkan_device dev = entry_of(ad, with_create_info);
    hpl_vulkan_desc vk = vulkan_desc(&dev, 1);
    int before = atomic_load(&hplvk_submits);
    hpl_context *ctx = interop_context(&vk, zero_copy);
    if (!ctx)
        return;
    hpl_device_info info;
    memset(&info, 0, sizeof info);
    CHECK_OK(hpl_device_get_info(ctx, 0, &info));
    CHECK(hpl_device_count(ctx) == 1 && info.replica == 0 && !info.dedicated_transfer_queue, "%s: count %d replica %u",
          what, hpl_device_count(ctx), info.replica);
    basic(ctx, ad);
    subarrays(ctx, ad);
    read_and_write(ctx, ad);
    ghost_part(ctx, ad);
    errors(ctx);
    hpl_context_destroy(ctx);
    CHECK(atomic_load(&hplvk_submits) > before, "%s: hplvk never took the queue lock", what);
}

/* Two VkDevices on one physical device: two hplvk devices, a split eval,
 * each part changed by the application on its device. */
static void two_devices(void)
{
    th_note("two VkDevices: split evals");
    hpl_vulkan_device devs[2] = {entry_of(&apps[0], true), entry_of(&apps[1], true)};
    hpl_vulkan_desc vk = vulkan_desc(devs, 2);
    hpl_context *ctx = interop_context(&vk, HPL_ZERO_COPY_AUTO);
    if (!ctx)
        return;
    hpl_device_info info;
    memset(&info, 0, sizeof info);
    CHECK_OK(hpl_device_get_info(ctx, 1, &info));
    CHECK(info.replica == 1 && !info.zero_copy, "device 1: replica %u zero_copy %d", info.replica, info.zero_copy);
    hpl_kernel k1 = th_kernel(ctx, k1_1d), k2 = th_kernel(ctx, k2_1d);
    hpl_array x = iota(ctx, N, 0);
    hpl_launch both = {.devices = {0, 1}, .device_count = 2};
    CHECK_OK(hpl_eval(ctx, k1, &both, HPL_ARGS(hpl_part1(x, 0))));
    CHECK(hpl_array_part_count(ctx, x) == 2, "parts %d", hpl_array_part_count(ctx, x));
    hpl_array parts[2];
    hpl_vulkan_buffer b[2];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 2; i++) {
        int dev = -1;
        CHECK_OK(hpl_array_part(ctx, x, i, &parts[i], &dev));
        CHECK(dev == i, "part %d on device %d", i, dev);
        CHECK_OK(hpl_array_vulkan_acquire(ctx, parts[i], i, HPL_READ_WRITE, &b[i]));
    }
    /* Part 1 released at once (no work of the application's on it): hplvk
     * may use it while part 0 is still acquired, not the whole array. */
    CHECK_OK(hpl_array_vulkan_release(ctx, parts[1], 1, VK_NULL_HANDLE, 0));
    CHECK_OK(hpl_eval(ctx, k1, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(parts[1]))));
    CHECK_FAILS(hpl_eval(ctx, k1, &both, HPL_ARGS(hpl_part1(x, 0))), HPL_ERROR_INVALID_ARGUMENT, "acquired");
    CHECK_FAILS(hpl_array_vulkan_release(ctx, parts[0], 1, VK_NULL_HANDLE, 0), HPL_ERROR_INVALID_ARGUMENT,
                "not acquired on device 1");
    /* Part 1 again, now changed by the application on device 1. */
    CHECK_OK(hpl_array_vulkan_acquire(ctx, parts[1], 1, HPL_READ_WRITE, &b[1]));
    for (int i = 0; i < 2; i++) {
        uint64_t v = app_add(&apps[i], &b[i], &b[i], N / 2, 1, 10 + (uint32_t)i);
        CHECK_OK(hpl_array_vulkan_release(ctx, parts[i], i, apps[i].timeline, v));
    }
    CHECK_OK(hpl_eval(ctx, k2, &both, HPL_ARGS(hpl_part1(x, 0))));
    const uint32_t *p = th_access(ctx, x, HPL_READ);
    int bad = 0;
    for (uint32_t i = 0; p && i < N; i++) {
        uint32_t v = 2 * i + 1;
        uint32_t want = i < N / 2 ? (v + 10) * 3 : (v * 2 + 1 + 11) * 3; /* part 1 ran k1 twice */
        if (p[i] != want && bad++ < 3)
            CHECK(false, "split: x[%u] = %u, want %u", i, p[i], want);
    }
    CHECK(p && bad == 0, "split: %d elements wrong", bad);
    hpl_context_destroy(ctx);
}

/* hpl_context_create refuses what hplvk cannot work with, naming it. */
static void bad_contexts(void)
{
    th_note("contexts that must fail");
    app_device bare;
    if (make_device(&bare, apps[0].physical, false)) {
        hpl_vulkan_device dev = entry_of(&bare, true);
        hpl_vulkan_desc vk = vulkan_desc(&dev, 1);
        hpl_context_desc desc = {.vulkan = &vk};
        th_prepare_desc(&desc);
        hpl_context *ctx = NULL;
        CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_UNSUPPORTED, "bufferDeviceAddress");
        CHECK_MSG("vulkan->devices[0]");
        CHECK(ctx == NULL, "ctx set on failure");
        destroy_device(&bare);
    }
    /* A create_info without the extension (the device has it: hplvk reads
     * only the description). */
    VkDeviceCreateInfo no_ext = apps[0].ci;
    no_ext.enabledExtensionCount = 0;
    hpl_vulkan_device dev = entry_of(&apps[0], true);
    dev.create_info = &no_ext;
    hpl_vulkan_desc vk = vulkan_desc(&dev, 1);
    hpl_context_desc desc = {.vulkan = &vk};
    th_prepare_desc(&desc);
    hpl_context *ctx = NULL;
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_UNSUPPORTED, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);

    dev = entry_of(&apps[0], true);
    desc.devices = "cpu";
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_INVALID_ARGUMENT, "both given");
    desc.devices = NULL;
    vk.instance = VK_NULL_HANDLE;
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_INVALID_ARGUMENT, "vulkan->instance");
    vk.instance = instance;
    dev.queue = VK_NULL_HANDLE;
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_INVALID_ARGUMENT, "devices[0].queue");
    dev = entry_of(&apps[0], true);
    dev.queue_family = 99;
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_INVALID_ARGUMENT, "queue_family 99");
    hpl_vulkan_device twice[2] = {entry_of(&apps[0], true), entry_of(&apps[0], true)};
    vk.devices = twice;
    vk.device_count = 2;
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_INVALID_ARGUMENT, "once");
    vk.device_count = 0;
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_INVALID_ARGUMENT, "device_count 0");
    vk.device_count = 1;
    vk.queue_unlock = NULL;
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_INVALID_ARGUMENT, "queue_unlock");
}

/* After the contexts, the application's device works: its own dispatch on
 * its own buffer, waited for on the host. */
static void still_usable(app_device *ad)
{
    th_note("the application's device after hpl_context_destroy");
    uint32_t n = 0;
    CHECK(vkEnumeratePhysicalDevices(instance, &n, NULL) == VK_SUCCESS && n > 0, "instance unusable");
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = 64 * sizeof(uint32_t),
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT};
    VkBuffer buffer = VK_NULL_HANDLE;
    if (!vk_ok(vkCreateBuffer(ad->device, &bi, NULL, &buffer), "vkCreateBuffer"))
        return;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ad->device, buffer, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(ad->physical, &mp);
    VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = 0;
    while (type < mp.memoryTypeCount &&
           !((req.memoryTypeBits & (1u << type)) && (mp.memoryTypes[type].propertyFlags & want) == want))
        type++;
    VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                       .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .pNext = &flags,
                               .allocationSize = req.size,
                               .memoryTypeIndex = type};
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint32_t *map = NULL;
    if (vk_ok(vkAllocateMemory(ad->device, &ai, NULL, &memory), "vkAllocateMemory") &&
        vk_ok(vkBindBufferMemory(ad->device, buffer, memory, 0), "vkBindBufferMemory") &&
        vk_ok(vkMapMemory(ad->device, memory, 0, VK_WHOLE_SIZE, 0, (void **)&map), "vkMapMemory")) {
        for (uint32_t i = 0; i < 64; i++)
            map[i] = i;
        VkBufferDeviceAddressInfo dai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = buffer};
        hpl_vulkan_buffer mine = {.buffer = buffer, .address = vkGetBufferDeviceAddress(ad->device, &dai), .stride = {1}};
        uint64_t v = app_add(ad, &mine, &mine, 64, 1, 10);
        VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                  .semaphoreCount = 1,
                                  .pSemaphores = &ad->timeline,
                                  .pValues = &v};
        if (vk_ok(vkWaitSemaphores(ad->device, &wi, UINT64_MAX), "vkWaitSemaphores"))
            for (uint32_t i = 0; i < 64; i++)
                CHECK(map[i] == i + 10, "own buffer [%u] = %u", i, map[i]);
    }
    vkDestroyBuffer(ad->device, buffer, NULL);
    vkFreeMemory(ad->device, memory, NULL);
}

int main(void)
{
    make_instance();
    VkPhysicalDevice pd = pick_physical();
    if (!make_device(&apps[0], pd, true) || !make_device(&apps[1], pd, true))
        return th_finish(NULL);
    make_objects(&apps[0]);
    make_objects(&apps[1]);

    one_device(&apps[0], HPL_ZERO_COPY_OFF, true, "one VkDevice, separate memory");
    one_device(&apps[0], HPL_ZERO_COPY_AUTO, false, "one VkDevice, zero copy where it shares memory, no create_info");
    two_devices();
    bad_contexts();
    CHECK(atomic_load(&lock_depth) == 0, "queue lock taken %d more times than released", atomic_load(&lock_depth));
    still_usable(&apps[0]);
    CHECK(atomic_load(&vk_messages) == 0, "%d Vulkan debug messages", atomic_load(&vk_messages));

    destroy_device(&apps[0]);
    destroy_device(&apps[1]);
    PFN_vkDestroyDebugUtilsMessengerEXT destroy =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT");
    if (destroy && messenger)
        destroy(instance, messenger, NULL);
    vkDestroyInstance(instance, NULL);
    return th_finish(NULL);
}
