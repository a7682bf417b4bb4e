/*
 * bench_eval — what one eval costs through hplvk, next to the same kernel
 * through hand-written Vulkan, in one run on the same device.
 *
 *   bench_eval [n [evals [latency_iters [rounds]]]]
 *       n              floats in the array (default 4096)
 *       evals          dependent evals of each throughput run (default 1000)
 *       latency_iters  eval+wait round trips of each latency run (default 200)
 *       rounds         rounds of all runs (default 5)
 *
 * The kernel is x = x * a + b in place over n floats (a = 1, b = 0.5, so the
 * result after E evals is exactly x0 + E/2 for any E below ~16 million).
 *
 * hplvk (device 0 of the default devices; local size 64, as the baseline):
 *   (a) latency     hpl_eval + hpl_array_wait, averaged over latency_iters
 *   (b) throughput  `evals` hpl_eval calls back to back, then hpl_finish
 *   (c) host cost   the time spent inside the hpl_eval calls of (b)
 * Hand-written Vulkan 1.2 (below; same physical device, matched by name,
 * vendor and device id; one storage buffer in device-local memory; the
 * command buffer recorded once and reused):
 *   (a) latency     vkQueueSubmit + vkWaitForFences ("vk_fence_wait"), and
 *                   + a spin on vkGetFenceStatus ("vk_fence_spin")
 *   (b) throughput  "vk_submit_each": `evals` vkQueueSubmit of the one
 *                   command buffer (barrier + dispatch), a fence on the last;
 *                   "vk_one_cmdbuf": one command buffer holding `evals`
 *                   barrier + dispatch pairs (recorded beforehand, untimed),
 *                   one submit, one fence wait
 *   (c) host cost   the time spent inside vkQueueSubmit in vk_submit_each
 * Both paths are set up and warmed up first and live side by side (an idle
 * hplvk context costs no CPU); then `rounds` rounds run every measurement
 * once, in turn, so that a slow phase of this shared 2-core machine hits all
 * of them alike. The table gives per-eval microseconds (median of the rounds,
 * and the fastest and slowest round) and hplvk's median over the
 * hand-written one's. The RESULT line gives hplvk's median throughput in
 * evals/s (time_ms: that round's `evals` evals) and is verified when both
 * paths' arrays equal the host's computation and no validation message came.
 *
 * Validation: with HPLVK_VALIDATION=1 hplvk's context enables the layer; the
 * hand-written path then enables VK_LAYER_KHRONOS_validation (with
 * synchronization validation) too, and a debug messenger fails the run on any
 * warning or error. Under validation the defaults drop to 100 evals, 20
 * round trips and one round (timings are not meaningful there anyway).
 * (The layer of Vulkan SDK 1.3.239 tracks the baseline's descriptor accesses
 * but reports no hazard between two dispatches writing the same buffer, and
 * cannot see hplvk's accesses through buffer device addresses at all: it
 * checks transfers and API use, not the compute->compute barriers.)
 *
 * The Vulkan loader is opened with dlopen and every function is fetched
 * through vkGetInstanceProcAddr / vkGetDeviceProcAddr, so this file links
 * against nothing but hplvk (and libc).
 */
#define _POSIX_C_SOURCE 200809L
#define VK_NO_PROTOTYPES
#include <hplvk.h>
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOCAL_SIZE 64
static const float kA = 1.0f, kB = 0.5f;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static float initial_value(uint64_t i) { return (float)(i % 1024); }

/* Checks x == x0 + evals * b exactly; returns the number of wrong elements. */
static uint64_t check(const char *who, const float *x, uint64_t n, uint64_t evals)
{
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        /* x*1 + 0.5 repeated is exact while the values stay below 2^23. */
        float want = initial_value(i) + (float)((double)evals * (double)kB);
        if (x[i] != want) {
            if (bad < 5)
                fprintf(stderr, "bench_eval: %s: x[%" PRIu64 "] = %.9g, expected %.9g\n", who, i, (double)x[i],
                        (double)want);
            bad++;
        }
    }
    return bad;
}

/* ======================================================================
 * The hplvk path
 * ====================================================================== */

static const char *hpl_kernel_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(float, 1) x; float a; float b; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * a + b; }\n";

static int hpl_log_errors;
static void hpl_log(void *user, hpl_log_level level, const char *message)
{
    (void)user;
    if (level >= HPL_LOG_WARNING)
        fprintf(stderr, "hplvk %s: %s\n", level >= HPL_LOG_ERROR ? "error" : "warning", message);
    if (level >= HPL_LOG_ERROR)
        hpl_log_errors++;
}

typedef struct config {
    uint64_t n;
    int warmup, lat_iters, evals, rounds;
    bool validation;
} config;

typedef struct device_match {
    char name[256];
    uint32_t physical_index, vendor_id, device_id;
} device_match;

#define HCHECK(call)                                                                                 \
    do {                                                                                             \
        int rc_ = (call);                                                                            \
        if (rc_ != HPL_OK) {                                                                         \
            fprintf(stderr, "bench_eval: %s failed: %s: %s\n", #call, hpl_error_name(rc_), hpl_last_error()); \
            return false;                                                                            \
        }                                                                                            \
    } while (0)

typedef struct hpath {
    hpl_context *ctx;
    hpl_array x;
    hpl_kernel k;
    bool have_x, have_k;
    uint64_t evals_done;
} hpath;

static int h_eval(hpath *h)
{
    static const hpl_launch launch = {.local = {LOCAL_SIZE, 1, 1}, .device = 0};
    int rc = hpl_eval(h->ctx, h->k, &launch, HPL_ARGS(hpl_arr(h->x), hpl_f32(kA), hpl_f32(kB)));
    if (rc == HPL_OK)
        h->evals_done++;
    return rc;
}

static bool h_setup(const config *cfg, hpath *h, device_match *dev)
{
    HCHECK(hpl_context_create(&(hpl_context_desc){.log = hpl_log}, &h->ctx));
    hpl_device_info info;
    HCHECK(hpl_device_get_info(h->ctx, 0, &info));
    memcpy(dev->name, info.name, sizeof dev->name);
    dev->name[sizeof dev->name - 1] = '\0';
    dev->physical_index = info.physical_index;
    dev->vendor_id = info.vendor_id;
    dev->device_id = info.device_id;

    HCHECK(hpl_array_create(h->ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {cfg->n}, .name = "x"}, &h->x));
    h->have_x = true;
    float *px;
    HCHECK(hpl_array_access(h->ctx, h->x, HPL_WRITE, (void **)&px));
    for (uint64_t i = 0; i < cfg->n; i++)
        px[i] = initial_value(i);
    HCHECK(hpl_kernel_create(h->ctx, &(hpl_kernel_desc){.source = {.glsl = hpl_kernel_src, .name = "axpb"}}, &h->k));
    h->have_k = true;
    for (int i = 0; i < cfg->warmup; i++) {
        HCHECK(h_eval(h));
        HCHECK(hpl_array_wait(h->ctx, h->x));
    }
    for (int i = 0; i < cfg->evals; i++)
        HCHECK(h_eval(h));
    HCHECK(hpl_finish(h->ctx));
    return true;
}

/* (a) latency: eval, then wait for the array. */
static bool h_latency(hpath *h, int iters, double *us)
{
    double t0 = now_us();
    for (int i = 0; i < iters; i++) {
        HCHECK(h_eval(h));
        HCHECK(hpl_array_wait(h->ctx, h->x));
    }
    *us = (now_us() - t0) / iters;
    return true;
}

/* (b) throughput, and (c) the time inside hpl_eval. */
static bool h_throughput(hpath *h, int evals, double *us, double *host_us)
{
    double inside = 0.0;
    double t0 = now_us();
    for (int i = 0; i < evals; i++) {
        double c0 = now_us();
        int rc = h_eval(h);
        inside += now_us() - c0;
        HCHECK(rc);
    }
    HCHECK(hpl_finish(h->ctx));
    *us = (now_us() - t0) / evals;
    *host_us = inside / evals;
    return true;
}

static bool h_verify(const config *cfg, hpath *h)
{
    float *host = malloc(cfg->n * sizeof *host);
    if (!host) {
        fprintf(stderr, "bench_eval: out of host memory\n");
        return false;
    }
    int rc = hpl_array_read(h->ctx, h->x, host, cfg->n * sizeof *host);
    uint64_t bad = rc == HPL_OK ? check("hplvk", host, cfg->n, h->evals_done) : 1;
    free(host);
    HCHECK(rc);
    return bad == 0;
}

/* Destroys what it created, checking each call. */
static bool h_teardown(hpath *h)
{
    bool ok = true;
    if (h->have_k && hpl_kernel_destroy(h->ctx, h->k) != HPL_OK) {
        fprintf(stderr, "bench_eval: hpl_kernel_destroy failed: %s\n", hpl_last_error());
        ok = false;
    }
    if (h->have_x && hpl_array_destroy(h->ctx, h->x) != HPL_OK) {
        fprintf(stderr, "bench_eval: hpl_array_destroy failed: %s\n", hpl_last_error());
        ok = false;
    }
    if (h->ctx && hpl_finish(h->ctx) != HPL_OK) {
        fprintf(stderr, "bench_eval: hpl_finish failed: %s\n", hpl_last_error());
        ok = false;
    }
    hpl_context_destroy(h->ctx);
    memset(h, 0, sizeof *h);
    return ok;
}

/* ======================================================================
 * The hand-written Vulkan path
 * ====================================================================== */

/* The baseline kernel, compiled with
 *   glslc --target-env=vulkan1.2 -mfmt=c axpb.comp
 * (shaderc 2023.2, spirv-tools 2022.4) from:
 *
 *   #version 450
 *   layout(local_size_x = 64) in;
 *   layout(binding = 0) buffer Data { float x[]; };
 *   layout(push_constant) uniform Push { uint n; float a; float b; };
 *   void main()
 *   {
 *       uint i = gl_GlobalInvocationID.x;
 *       if (i < n)
 *           x[i] = x[i] * a + b;
 *   }
 */
static const uint32_t axpb_spirv[] =
{
    0x07230203, 0x00010500, 0x000d000b, 0x00000034, 0x00000000, 0x00020011, 0x00000001, 0x0006000b,
    0x00000001, 0x4c534c47, 0x6474732e, 0x3035342e, 0x00000000, 0x0003000e, 0x00000000, 0x00000001,
    0x0008000f, 0x00000005, 0x00000004, 0x6e69616d, 0x00000000, 0x0000000b, 0x00000014, 0x00000021,
    0x00060010, 0x00000004, 0x00000011, 0x00000040, 0x00000001, 0x00000001, 0x00030003, 0x00000002,
    0x000001c2, 0x000a0004, 0x475f4c47, 0x4c474f4f, 0x70635f45, 0x74735f70, 0x5f656c79, 0x656e696c,
    0x7269645f, 0x69746365, 0x00006576, 0x00080004, 0x475f4c47, 0x4c474f4f, 0x6e695f45, 0x64756c63,
    0x69645f65, 0x74636572, 0x00657669, 0x00040005, 0x00000004, 0x6e69616d, 0x00000000, 0x00030005,
    0x00000008, 0x00000069, 0x00080005, 0x0000000b, 0x475f6c67, 0x61626f6c, 0x766e496c, 0x7461636f,
    0x496e6f69, 0x00000044, 0x00040005, 0x00000012, 0x68737550, 0x00000000, 0x00040006, 0x00000012,
    0x00000000, 0x0000006e, 0x00040006, 0x00000012, 0x00000001, 0x00000061, 0x00040006, 0x00000012,
    0x00000002, 0x00000062, 0x00030005, 0x00000014, 0x00000000, 0x00040005, 0x0000001f, 0x61746144,
    0x00000000, 0x00040006, 0x0000001f, 0x00000000, 0x00000078, 0x00030005, 0x00000021, 0x00000000,
    0x00040047, 0x0000000b, 0x0000000b, 0x0000001c, 0x00050048, 0x00000012, 0x00000000, 0x00000023,
    0x00000000, 0x00050048, 0x00000012, 0x00000001, 0x00000023, 0x00000004, 0x00050048, 0x00000012,
    0x00000002, 0x00000023, 0x00000008, 0x00030047, 0x00000012, 0x00000002, 0x00040047, 0x0000001e,
    0x00000006, 0x00000004, 0x00050048, 0x0000001f, 0x00000000, 0x00000023, 0x00000000, 0x00030047,
    0x0000001f, 0x00000002, 0x00040047, 0x00000021, 0x00000022, 0x00000000, 0x00040047, 0x00000021,
    0x00000021, 0x00000000, 0x00040047, 0x00000033, 0x0000000b, 0x00000019, 0x00020013, 0x00000002,
    0x00030021, 0x00000003, 0x00000002, 0x00040015, 0x00000006, 0x00000020, 0x00000000, 0x00040020,
    0x00000007, 0x00000007, 0x00000006, 0x00040017, 0x00000009, 0x00000006, 0x00000003, 0x00040020,
    0x0000000a, 0x00000001, 0x00000009, 0x0004003b, 0x0000000a, 0x0000000b, 0x00000001, 0x0004002b,
    0x00000006, 0x0000000c, 0x00000000, 0x00040020, 0x0000000d, 0x00000001, 0x00000006, 0x00030016,
    0x00000011, 0x00000020, 0x0005001e, 0x00000012, 0x00000006, 0x00000011, 0x00000011, 0x00040020,
    0x00000013, 0x00000009, 0x00000012, 0x0004003b, 0x00000013, 0x00000014, 0x00000009, 0x00040015,
    0x00000015, 0x00000020, 0x00000001, 0x0004002b, 0x00000015, 0x00000016, 0x00000000, 0x00040020,
    0x00000017, 0x00000009, 0x00000006, 0x00020014, 0x0000001a, 0x0003001d, 0x0000001e, 0x00000011,
    0x0003001e, 0x0000001f, 0x0000001e, 0x00040020, 0x00000020, 0x0000000c, 0x0000001f, 0x0004003b,
    0x00000020, 0x00000021, 0x0000000c, 0x00040020, 0x00000024, 0x0000000c, 0x00000011, 0x0004002b,
    0x00000015, 0x00000027, 0x00000001, 0x00040020, 0x00000028, 0x00000009, 0x00000011, 0x0004002b,
    0x00000015, 0x0000002c, 0x00000002, 0x0004002b, 0x00000006, 0x00000031, 0x00000040, 0x0004002b,
    0x00000006, 0x00000032, 0x00000001, 0x0006002c, 0x00000009, 0x00000033, 0x00000031, 0x00000032,
    0x00000032, 0x00050036, 0x00000002, 0x00000004, 0x00000000, 0x00000003, 0x000200f8, 0x00000005,
    0x0004003b, 0x00000007, 0x00000008, 0x00000007, 0x00050041, 0x0000000d, 0x0000000e, 0x0000000b,
    0x0000000c, 0x0004003d, 0x00000006, 0x0000000f, 0x0000000e, 0x0003003e, 0x00000008, 0x0000000f,
    0x0004003d, 0x00000006, 0x00000010, 0x00000008, 0x00050041, 0x00000017, 0x00000018, 0x00000014,
    0x00000016, 0x0004003d, 0x00000006, 0x00000019, 0x00000018, 0x000500b0, 0x0000001a, 0x0000001b,
    0x00000010, 0x00000019, 0x000300f7, 0x0000001d, 0x00000000, 0x000400fa, 0x0000001b, 0x0000001c,
    0x0000001d, 0x000200f8, 0x0000001c, 0x0004003d, 0x00000006, 0x00000022, 0x00000008, 0x0004003d,
    0x00000006, 0x00000023, 0x00000008, 0x00060041, 0x00000024, 0x00000025, 0x00000021, 0x00000016,
    0x00000023, 0x0004003d, 0x00000011, 0x00000026, 0x00000025, 0x00050041, 0x00000028, 0x00000029,
    0x00000014, 0x00000027, 0x0004003d, 0x00000011, 0x0000002a, 0x00000029, 0x00050085, 0x00000011,
    0x0000002b, 0x00000026, 0x0000002a, 0x00050041, 0x00000028, 0x0000002d, 0x00000014, 0x0000002c,
    0x0004003d, 0x00000011, 0x0000002e, 0x0000002d, 0x00050081, 0x00000011, 0x0000002f, 0x0000002b,
    0x0000002e, 0x00060041, 0x00000024, 0x00000030, 0x00000021, 0x00000016, 0x00000022, 0x0003003e,
    0x00000030, 0x0000002f, 0x000200f9, 0x0000001d, 0x000200f8, 0x0000001d, 0x000100fd, 0x00010038,
};

typedef struct push_t {
    uint32_t n;
    float a, b;
} push_t;

/* Every Vulkan function used, fetched at run time. */
#define VK_GLOBAL_FUNCS(X)                                                                           \
    X(vkCreateInstance)                                                                              \
    X(vkEnumerateInstanceVersion)                                                                    \
    X(vkEnumerateInstanceLayerProperties)
#define VK_INSTANCE_FUNCS(X)                                                                         \
    X(vkDestroyInstance)                                                                             \
    X(vkEnumeratePhysicalDevices)                                                                    \
    X(vkGetPhysicalDeviceProperties)                                                                 \
    X(vkGetPhysicalDeviceQueueFamilyProperties)                                                      \
    X(vkGetPhysicalDeviceMemoryProperties)                                                           \
    X(vkCreateDevice)                                                                                \
    X(vkGetDeviceProcAddr)
#define VK_DEBUG_FUNCS(X)                                                                            \
    X(vkCreateDebugUtilsMessengerEXT)                                                                \
    X(vkDestroyDebugUtilsMessengerEXT)
#define VK_DEVICE_FUNCS(X)                                                                           \
    X(vkDestroyDevice)                                                                               \
    X(vkGetDeviceQueue)                                                                              \
    X(vkDeviceWaitIdle)                                                                              \
    X(vkCreateBuffer)                                                                                \
    X(vkDestroyBuffer)                                                                               \
    X(vkGetBufferMemoryRequirements)                                                                 \
    X(vkAllocateMemory)                                                                              \
    X(vkFreeMemory)                                                                                  \
    X(vkBindBufferMemory)                                                                            \
    X(vkMapMemory)                                                                                   \
    X(vkUnmapMemory)                                                                                 \
    X(vkCreateShaderModule)                                                                          \
    X(vkDestroyShaderModule)                                                                         \
    X(vkCreateDescriptorSetLayout)                                                                   \
    X(vkDestroyDescriptorSetLayout)                                                                  \
    X(vkCreatePipelineLayout)                                                                        \
    X(vkDestroyPipelineLayout)                                                                       \
    X(vkCreateComputePipelines)                                                                      \
    X(vkDestroyPipeline)                                                                             \
    X(vkCreateDescriptorPool)                                                                        \
    X(vkDestroyDescriptorPool)                                                                       \
    X(vkAllocateDescriptorSets)                                                                      \
    X(vkUpdateDescriptorSets)                                                                        \
    X(vkCreateCommandPool)                                                                           \
    X(vkDestroyCommandPool)                                                                          \
    X(vkAllocateCommandBuffers)                                                                      \
    X(vkBeginCommandBuffer)                                                                          \
    X(vkEndCommandBuffer)                                                                            \
    X(vkCmdBindPipeline)                                                                             \
    X(vkCmdBindDescriptorSets)                                                                       \
    X(vkCmdPushConstants)                                                                            \
    X(vkCmdDispatch)                                                                                 \
    X(vkCmdPipelineBarrier)                                                                          \
    X(vkCmdCopyBuffer)                                                                               \
    X(vkCreateFence)                                                                                 \
    X(vkDestroyFence)                                                                                \
    X(vkResetFences)                                                                                 \
    X(vkWaitForFences)                                                                               \
    X(vkGetFenceStatus)                                                                              \
    X(vkQueueSubmit)

#define VK_DECLARE(name) static PFN_##name name;
VK_GLOBAL_FUNCS(VK_DECLARE)
VK_INSTANCE_FUNCS(VK_DECLARE)
VK_DEBUG_FUNCS(VK_DECLARE)
VK_DEVICE_FUNCS(VK_DECLARE)
#undef VK_DECLARE
static PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;

typedef struct vkb {
    void *loader;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    uint32_t family;
    VkBuffer buffer, staging;
    VkDeviceMemory buffer_mem, staging_mem;
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkPipeline pipeline;
    VkDescriptorPool descriptor_pool;
    VkDescriptorSet set;
    VkCommandPool command_pool;
    VkCommandBuffer cmd_util, cmd_one, cmd_many;
    VkFence fence;
    float *mapped;          /* the staging buffer */
    uint64_t evals_done;    /* dispatches run so far */
} vkb;

static int vk_messages;
static VKAPI_ATTR VkBool32 VKAPI_CALL vk_debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                        VkDebugUtilsMessageTypeFlagsEXT types,
                                                        const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)types;
    (void)user;
    fprintf(stderr, "bench_eval: vulkan validation %s: %s\n",
            severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
            data && data->pMessage ? data->pMessage : "(no message)");
    vk_messages++;
    return VK_FALSE;
}

#define VCHECK(call)                                                                                 \
    do {                                                                                             \
        VkResult vr_ = (call);                                                                       \
        if (vr_ != VK_SUCCESS) {                                                                     \
            fprintf(stderr, "bench_eval: %s failed: VkResult %d\n", #call, (int)vr_);                \
            return false;                                                                            \
        }                                                                                            \
    } while (0)

static bool find_memory_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits, VkMemoryPropertyFlags want,
                             uint32_t *out)
{
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++)
        if ((bits & (1u << i)) && (mp->memoryTypes[i].propertyFlags & want) == want) {
            *out = i;
            return true;
        }
    return false;
}

static VkResult create_buffer(vkb *v, const VkPhysicalDeviceMemoryProperties *mp, VkDeviceSize size,
                              VkBufferUsageFlags usage, VkMemoryPropertyFlags want, VkBuffer *buf, VkDeviceMemory *mem)
{
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vkCreateBuffer(v->device, &bi, NULL, buf);
    if (r != VK_SUCCESS)
        return r;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(v->device, *buf, &req);
    uint32_t type;
    if (!find_memory_type(mp, req.memoryTypeBits, want, &type)) {
        fprintf(stderr, "bench_eval: no memory type with flags 0x%x\n", (unsigned)want);
        return VK_ERROR_FEATURE_NOT_PRESENT;
    }
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    r = vkAllocateMemory(v->device, &ai, NULL, mem);
    if (r != VK_SUCCESS)
        return r;
    return vkBindBufferMemory(v->device, *buf, *mem, 0);
}

/* Submits one command buffer and waits for it (blocking fence wait). */
static VkResult submit_wait(vkb *v, VkCommandBuffer cmd)
{
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    VkResult r = vkQueueSubmit(v->queue, 1, &si, v->fence);
    if (r != VK_SUCCESS)
        return r;
    r = vkWaitForFences(v->device, 1, &v->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS)
        return r;
    return vkResetFences(v->device, 1, &v->fence);
}

/* Orders the previous dispatch (this or an earlier submission, same queue)
 * before the next one. */
static void cmd_compute_barrier(VkCommandBuffer cmd)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
    };
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                         NULL, 0, NULL);
}

static void vk_destroy(vkb *v)
{
    if (v->device) {
        vkDeviceWaitIdle(v->device);
        if (v->fence)
            vkDestroyFence(v->device, v->fence, NULL);
        if (v->command_pool) /* frees its command buffers */
            vkDestroyCommandPool(v->device, v->command_pool, NULL);
        if (v->descriptor_pool) /* frees its set */
            vkDestroyDescriptorPool(v->device, v->descriptor_pool, NULL);
        if (v->pipeline)
            vkDestroyPipeline(v->device, v->pipeline, NULL);
        if (v->pipeline_layout)
            vkDestroyPipelineLayout(v->device, v->pipeline_layout, NULL);
        if (v->set_layout)
            vkDestroyDescriptorSetLayout(v->device, v->set_layout, NULL);
        if (v->module)
            vkDestroyShaderModule(v->device, v->module, NULL);
        if (v->staging)
            vkDestroyBuffer(v->device, v->staging, NULL);
        if (v->staging_mem)
            vkFreeMemory(v->device, v->staging_mem, NULL);
        if (v->buffer)
            vkDestroyBuffer(v->device, v->buffer, NULL);
        if (v->buffer_mem)
            vkFreeMemory(v->device, v->buffer_mem, NULL);
        vkDestroyDevice(v->device, NULL);
    }
    if (v->messenger)
        vkDestroyDebugUtilsMessengerEXT(v->instance, v->messenger, NULL);
    if (v->instance)
        vkDestroyInstance(v->instance, NULL);
    if (v->loader)
        dlclose(v->loader);
    memset(v, 0, sizeof *v);
}

static bool vk_setup(const config *cfg, const device_match *dev, vkb *v)
{
    const VkDeviceSize bytes = cfg->n * sizeof(float);

    /* --- loader, instance, messenger --- */
    v->loader = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!v->loader) {
        fprintf(stderr, "bench_eval: dlopen(libvulkan.so.1): %s\n", dlerror());
        return false;
    }
    /* POSIX allows this conversion of dlsym's result; ISO C does not. */
    *(void **)&vkGetInstanceProcAddr = dlsym(v->loader, "vkGetInstanceProcAddr");
    if (!vkGetInstanceProcAddr) {
        fprintf(stderr, "bench_eval: libvulkan.so.1 has no vkGetInstanceProcAddr\n");
        return false;
    }
#define VK_LOAD_GLOBAL(name)                                                                         \
    if (!(name = (PFN_##name)vkGetInstanceProcAddr(NULL, #name))) {                                  \
        fprintf(stderr, "bench_eval: no %s\n", #name);                                               \
        return false;                                                                                   \
    }
    VK_GLOBAL_FUNCS(VK_LOAD_GLOBAL)
#undef VK_LOAD_GLOBAL

    uint32_t loader_version = 0;
    VCHECK(vkEnumerateInstanceVersion(&loader_version));
    if (loader_version < VK_API_VERSION_1_2) {
        fprintf(stderr, "bench_eval: the Vulkan loader is older than 1.2\n");
        return false;
    }

    const char *layers[1] = {"VK_LAYER_KHRONOS_validation"};
    const char *inst_exts[2] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    VkValidationFeatureEnableEXT enables[1] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = vk_debug_callback,
    };
    VkValidationFeaturesEXT vf = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .pNext = &mci, /* also catches messages of vkCreateInstance / vkDestroyInstance */
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = enables,
    };
    if (cfg->validation) {
        uint32_t count = 0;
        VCHECK(vkEnumerateInstanceLayerProperties(&count, NULL));
        VkLayerProperties *props = calloc(count ? count : 1, sizeof *props);
        if (!props)
            return false;
        VkResult r = vkEnumerateInstanceLayerProperties(&count, props);
        bool found = false;
        for (uint32_t i = 0; r == VK_SUCCESS && i < count; i++)
            found = found || strcmp(props[i].layerName, layers[0]) == 0;
        free(props);
        if (!found) {
            fprintf(stderr, "bench_eval: HPLVK_VALIDATION=1 but %s is not installed\n", layers[0]);
            return false;
        }
    }
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "bench_eval",
        .apiVersion = VK_API_VERSION_1_2,
    };
    VkInstanceCreateInfo ici = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = cfg->validation ? &vf : NULL,
        .pApplicationInfo = &app,
        .enabledLayerCount = cfg->validation ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = cfg->validation ? 2 : 0,
        .ppEnabledExtensionNames = inst_exts,
    };
    VCHECK(vkCreateInstance(&ici, NULL, &v->instance));

#define VK_LOAD_INSTANCE(name)                                                                       \
    if (!(name = (PFN_##name)vkGetInstanceProcAddr(v->instance, #name))) {                            \
        fprintf(stderr, "bench_eval: no %s\n", #name);                                               \
        return false;                                                                                   \
    }
    VK_INSTANCE_FUNCS(VK_LOAD_INSTANCE)
    if (cfg->validation) {
        VK_DEBUG_FUNCS(VK_LOAD_INSTANCE)
        VCHECK(vkCreateDebugUtilsMessengerEXT(v->instance, &mci, NULL, &v->messenger));
    }
#undef VK_LOAD_INSTANCE

    /* --- the physical device hplvk's device 0 is --- */
    uint32_t pcount = 0;
    VCHECK(vkEnumeratePhysicalDevices(v->instance, &pcount, NULL));
    VkPhysicalDevice *pds = calloc(pcount ? pcount : 1, sizeof *pds);
    if (!pds)
        return false;
    VkResult pr = vkEnumeratePhysicalDevices(v->instance, &pcount, pds);
    int pick = -1;
    for (uint32_t i = 0; pr == VK_SUCCESS && i < pcount; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(pds[i], &p);
        if (strcmp(p.deviceName, dev->name) != 0 || p.vendorID != dev->vendor_id || p.deviceID != dev->device_id)
            continue;
        if (pick < 0 || i == dev->physical_index) /* same index preferred among identical devices */
            pick = (int)i;
    }
    if (pick >= 0)
        v->physical = pds[pick];
    free(pds);
    VCHECK(pr);
    if (pick < 0) {
        fprintf(stderr, "bench_eval: no Vulkan physical device named \"%s\" (vendor 0x%x, device 0x%x)\n", dev->name,
                dev->vendor_id, dev->device_id);
        return false;
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(v->physical, &props);
    if (props.apiVersion < VK_API_VERSION_1_2) {
        fprintf(stderr, "bench_eval: %s supports only Vulkan %u.%u\n", props.deviceName,
                VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion));
        return false;
    }

    /* A compute queue: a compute-only family if there is one, else the first
     * family with compute. */
    uint32_t fcount = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(v->physical, &fcount, NULL);
    VkQueueFamilyProperties fams[64];
    if (fcount > 64)
        fcount = 64;
    vkGetPhysicalDeviceQueueFamilyProperties(v->physical, &fcount, fams);
    int family = -1;
    for (uint32_t i = 0; i < fcount && family < 0; i++)
        if ((fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(fams[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
            family = (int)i;
    for (uint32_t i = 0; i < fcount && family < 0; i++)
        if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            family = (int)i;
    if (family < 0) {
        fprintf(stderr, "bench_eval: %s has no compute queue\n", props.deviceName);
        return false;
    }
    v->family = (uint32_t)family;

    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = v->family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
    };
    VCHECK(vkCreateDevice(v->physical, &dci, NULL, &v->device));
#define VK_LOAD_DEVICE(name)                                                                         \
    if (!(name = (PFN_##name)vkGetDeviceProcAddr(v->device, #name))) {                                \
        fprintf(stderr, "bench_eval: no %s\n", #name);                                               \
        return false;                                                                                   \
    }
    VK_DEVICE_FUNCS(VK_LOAD_DEVICE)
#undef VK_LOAD_DEVICE
    vkGetDeviceQueue(v->device, v->family, 0, &v->queue);

    /* --- buffers: the array in device-local memory, a host-visible staging
     * buffer for the initial upload and the final read --- */
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(v->physical, &mp);
    VCHECK(create_buffer(v, &mp, bytes,
                         VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                             VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                         VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &v->buffer, &v->buffer_mem));
    VCHECK(create_buffer(v, &mp, bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &v->staging,
                         &v->staging_mem));
    VCHECK(vkMapMemory(v->device, v->staging_mem, 0, VK_WHOLE_SIZE, 0, (void **)&v->mapped));

    /* --- pipeline --- */
    VkShaderModuleCreateInfo smci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = sizeof axpb_spirv,
        .pCode = axpb_spirv,
    };
    VCHECK(vkCreateShaderModule(v->device, &smci, NULL, &v->module));
    VkDescriptorSetLayoutBinding binding = {
        .binding = 0,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .descriptorCount = 1,
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
    };
    VkDescriptorSetLayoutCreateInfo dslci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 1,
        .pBindings = &binding,
    };
    VCHECK(vkCreateDescriptorSetLayout(v->device, &dslci, NULL, &v->set_layout));
    VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = sizeof(push_t)};
    VkPipelineLayoutCreateInfo plci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &v->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &pcr,
    };
    VCHECK(vkCreatePipelineLayout(v->device, &plci, NULL, &v->pipeline_layout));
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage =
            {
                .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = v->module,
                .pName = "main",
            },
        .layout = v->pipeline_layout,
    };
    VCHECK(vkCreateComputePipelines(v->device, VK_NULL_HANDLE, 1, &cpci, NULL, &v->pipeline));

    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 1};
    VkDescriptorPoolCreateInfo dpci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 1,
        .pPoolSizes = &ps,
    };
    VCHECK(vkCreateDescriptorPool(v->device, &dpci, NULL, &v->descriptor_pool));
    VkDescriptorSetAllocateInfo dsai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = v->descriptor_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &v->set_layout,
    };
    VCHECK(vkAllocateDescriptorSets(v->device, &dsai, &v->set));
    VkDescriptorBufferInfo dbi = {.buffer = v->buffer, .offset = 0, .range = VK_WHOLE_SIZE};
    VkWriteDescriptorSet wds = {
        .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
        .dstSet = v->set,
        .dstBinding = 0,
        .descriptorCount = 1,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .pBufferInfo = &dbi,
    };
    vkUpdateDescriptorSets(v->device, 1, &wds, 0, NULL);

    /* --- command buffers and the fence --- */
    VkCommandPoolCreateInfo cpoolci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = v->family,
    };
    VCHECK(vkCreateCommandPool(v->device, &cpoolci, NULL, &v->command_pool));
    VkCommandBuffer cmds[3];
    VkCommandBufferAllocateInfo cbai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = v->command_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 3,
    };
    VCHECK(vkAllocateCommandBuffers(v->device, &cbai, cmds));
    v->cmd_util = cmds[0];
    v->cmd_one = cmds[1];
    v->cmd_many = cmds[2];
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VCHECK(vkCreateFence(v->device, &fci, NULL, &v->fence));

    /* --- initial data: staging -> buffer --- */
    for (uint64_t i = 0; i < cfg->n; i++)
        v->mapped[i] = initial_value(i);
    VkCommandBufferBeginInfo once = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VkBufferCopy region = {.srcOffset = 0, .dstOffset = 0, .size = bytes};
    VCHECK(vkBeginCommandBuffer(v->cmd_util, &once));
    vkCmdCopyBuffer(v->cmd_util, v->staging, v->buffer, 1, &region);
    VkMemoryBarrier up = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
    };
    vkCmdPipelineBarrier(v->cmd_util, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &up, 0,
                         NULL, 0, NULL);
    VCHECK(vkEndCommandBuffer(v->cmd_util));
    VCHECK(submit_wait(v, v->cmd_util));

    /* --- the eval command buffers, recorded once --- */
    const push_t push = {.n = (uint32_t)cfg->n, .a = kA, .b = kB};
    const uint32_t groups = (uint32_t)((cfg->n + LOCAL_SIZE - 1) / LOCAL_SIZE);
    VkCommandBufferBeginInfo reuse = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT, /* pending several times in vk_submit_each */
    };
    VCHECK(vkBeginCommandBuffer(v->cmd_one, &reuse));
    cmd_compute_barrier(v->cmd_one); /* against the previous submission's dispatch */
    vkCmdBindPipeline(v->cmd_one, VK_PIPELINE_BIND_POINT_COMPUTE, v->pipeline);
    vkCmdBindDescriptorSets(v->cmd_one, VK_PIPELINE_BIND_POINT_COMPUTE, v->pipeline_layout, 0, 1, &v->set, 0, NULL);
    vkCmdPushConstants(v->cmd_one, v->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
    vkCmdDispatch(v->cmd_one, groups, 1, 1);
    VCHECK(vkEndCommandBuffer(v->cmd_one));

    VkCommandBufferBeginInfo plain = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VCHECK(vkBeginCommandBuffer(v->cmd_many, &plain));
    vkCmdBindPipeline(v->cmd_many, VK_PIPELINE_BIND_POINT_COMPUTE, v->pipeline);
    vkCmdBindDescriptorSets(v->cmd_many, VK_PIPELINE_BIND_POINT_COMPUTE, v->pipeline_layout, 0, 1, &v->set, 0, NULL);
    vkCmdPushConstants(v->cmd_many, v->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
    for (int i = 0; i < cfg->evals; i++) {
        cmd_compute_barrier(v->cmd_many);
        vkCmdDispatch(v->cmd_many, groups, 1, 1);
    }
    VCHECK(vkEndCommandBuffer(v->cmd_many));

    /* --- warm-up --- */
    for (int i = 0; i < cfg->warmup; i++)
        VCHECK(submit_wait(v, v->cmd_one));
    VCHECK(submit_wait(v, v->cmd_many));
    v->evals_done += (uint64_t)cfg->warmup + (uint64_t)cfg->evals;
    return true;
}

/* (a) latency: submit the recorded command buffer, wait on the fence. */
static bool vk_latency(vkb *v, int iters, bool spin, double *us)
{
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &v->cmd_one};
    double t0 = now_us();
    for (int i = 0; i < iters; i++) {
        VCHECK(vkQueueSubmit(v->queue, 1, &si, v->fence));
        if (spin) {
            VkResult r;
            while ((r = vkGetFenceStatus(v->device, v->fence)) == VK_NOT_READY)
                ;
            VCHECK(r);
        } else {
            VCHECK(vkWaitForFences(v->device, 1, &v->fence, VK_TRUE, UINT64_MAX));
        }
        VCHECK(vkResetFences(v->device, 1, &v->fence));
    }
    *us = (now_us() - t0) / iters;
    v->evals_done += (uint64_t)iters;
    return true;
}

/* (b) vk_submit_each, with (c) the time inside vkQueueSubmit. */
static bool vk_submit_each(vkb *v, int evals, double *us, double *host_us)
{
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &v->cmd_one};
    double inside = 0.0;
    double t0 = now_us();
    for (int i = 0; i < evals; i++) {
        double c0 = now_us();
        VkResult r = vkQueueSubmit(v->queue, 1, &si, i == evals - 1 ? v->fence : VK_NULL_HANDLE);
        inside += now_us() - c0;
        VCHECK(r);
    }
    VCHECK(vkWaitForFences(v->device, 1, &v->fence, VK_TRUE, UINT64_MAX));
    *us = (now_us() - t0) / evals;
    *host_us = inside / evals;
    VCHECK(vkResetFences(v->device, 1, &v->fence));
    v->evals_done += (uint64_t)evals;
    return true;
}

/* (b) vk_one_cmdbuf: the command buffer of `evals` dispatches, recorded in
 * vk_setup. */
static bool vk_one_cmdbuf(vkb *v, int evals, double *us)
{
    double t0 = now_us();
    VCHECK(submit_wait(v, v->cmd_many));
    *us = (now_us() - t0) / evals;
    v->evals_done += (uint64_t)evals;
    return true;
}

/* Reads the buffer back through the staging buffer and checks it. */
static bool vk_verify(const config *cfg, vkb *v)
{
    const VkCommandBufferBeginInfo once = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    const VkBufferCopy region = {.srcOffset = 0, .dstOffset = 0, .size = cfg->n * sizeof(float)};
    VCHECK(vkBeginCommandBuffer(v->cmd_util, &once));
    VkMemoryBarrier down = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
    };
    vkCmdPipelineBarrier(v->cmd_util, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &down,
                         0, NULL, 0, NULL);
    vkCmdCopyBuffer(v->cmd_util, v->buffer, v->staging, 1, &region);
    VkMemoryBarrier host = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    vkCmdPipelineBarrier(v->cmd_util, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &host, 0, NULL,
                         0, NULL);
    VCHECK(vkEndCommandBuffer(v->cmd_util));
    VCHECK(submit_wait(v, v->cmd_util));
    return check("vulkan", v->mapped, cfg->n, v->evals_done) == 0;
}

/* ====================================================================== */

static void token_name(const char *in, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && j + 1 < cap; i++) {
        if (in[i] == ',')
            continue;
        out[j++] = in[i] == ' ' ? '_' : in[i];
    }
    out[j] = '\0';
}

/* The measurements, each taken once per round. */
enum {
    M_H_LAT,    /* (a) hplvk eval + wait */
    M_VK_WAIT,  /* (a) vk submit + vkWaitForFences */
    M_VK_SPIN,  /* (a) vk submit + spin on the fence */
    M_H_THR,    /* (b) hplvk evals + finish */
    M_VK_EACH,  /* (b) vk_submit_each */
    M_VK_ONE,   /* (b) vk_one_cmdbuf */
    M_H_HOST,   /* (c) inside hpl_eval */
    M_VK_HOST,  /* (c) inside vkQueueSubmit */
    M_COUNT
};

typedef struct stat {
    double median, min, max;
} stat;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static stat stats(const double *v, int n)
{
    double *s = malloc((size_t)n * sizeof *s);
    stat r = {0, 0, 0};
    if (!s || n < 1) {
        free(s);
        return r;
    }
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    r.min = s[0];
    r.max = s[n - 1];
    r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return r;
}

static void row(const char *label, stat st, const stat *hplvk)
{
    printf("  %-58s %9.2f %9.2f %9.2f", label, st.median, st.min, st.max);
    if (hplvk && st.median > 0.0)
        printf(" %11.2f", hplvk->median / st.median);
    printf("\n");
}

int main(int argc, char **argv)
{
    const char *val = getenv("HPLVK_VALIDATION");
    config cfg = {
        .n = 4096,
        .warmup = 20,
        .lat_iters = 200,
        .evals = 1000,
        .rounds = 5,
        .validation = val && *val && strcmp(val, "0") != 0,
    };
    if (cfg.validation) {
        cfg.warmup = 5;
        cfg.lat_iters = 20;
        cfg.evals = 100;
        cfg.rounds = 1;
    }
    if (argc > 1)
        cfg.n = strtoull(argv[1], NULL, 0);
    if (argc > 2)
        cfg.evals = atoi(argv[2]);
    if (argc > 3)
        cfg.lat_iters = atoi(argv[3]);
    if (argc > 4)
        cfg.rounds = atoi(argv[4]);
    if (argc > 5 || cfg.n == 0 || cfg.n > UINT32_MAX || cfg.evals < 1 || cfg.lat_iters < 1 || cfg.rounds < 1 ||
        cfg.rounds > 1000) {
        fprintf(stderr, "usage: %s [n [evals [latency_iters [rounds]]]]\n", argv[0]);
        return 2;
    }

    device_match dev = {.name = "none"};
    hpath h = {0};
    vkb v = {0};
    double *m[M_COUNT] = {0};
    bool ok = true, measured = false;
    for (int i = 0; i < M_COUNT; i++)
        ok = ok && (m[i] = calloc((size_t)cfg.rounds, sizeof(double))) != NULL;

    ok = ok && h_setup(&cfg, &h, &dev);
    ok = ok && vk_setup(&cfg, &dev, &v);
    for (int r = 0; ok && r < cfg.rounds; r++) {
        ok = h_latency(&h, cfg.lat_iters, &m[M_H_LAT][r]) && vk_latency(&v, cfg.lat_iters, false, &m[M_VK_WAIT][r]) &&
             vk_latency(&v, cfg.lat_iters, true, &m[M_VK_SPIN][r]) &&
             h_throughput(&h, cfg.evals, &m[M_H_THR][r], &m[M_H_HOST][r]) &&
             vk_submit_each(&v, cfg.evals, &m[M_VK_EACH][r], &m[M_VK_HOST][r]) &&
             vk_one_cmdbuf(&v, cfg.evals, &m[M_VK_ONE][r]);
        measured = ok;
    }
    /* Verify both, then tear both down, whatever happened before. */
    bool ok_h = ok && h_verify(&cfg, &h);
    bool ok_v = ok && vk_verify(&cfg, &v);
    ok_h = h_teardown(&h) && ok_h;
    vk_destroy(&v);
    if (hpl_log_errors) {
        fprintf(stderr, "bench_eval: hplvk: %d error messages from the library or the validation layer\n",
                hpl_log_errors);
        ok_h = false;
    }
    if (vk_messages) {
        fprintf(stderr, "bench_eval: %d validation messages on the hand-written Vulkan path\n", vk_messages);
        ok_v = false;
    }

    stat st[M_COUNT] = {{0, 0, 0}};
    for (int i = 0; i < M_COUNT; i++)
        if (m[i] && measured)
            st[i] = stats(m[i], cfg.rounds);

    printf("bench_eval: n=%" PRIu64 " floats, x = x*a + b in place, local size %d; per round: %d round trips, %d evals; "
           "%d rounds%s\n",
           cfg.n, LOCAL_SIZE, cfg.lat_iters, cfg.evals, cfg.rounds,
           cfg.validation ? " (VALIDATION ON: timings not representative)" : "");
    printf("bench_eval: device 0: %s; hand-written path on queue family %u\n", dev.name, v.family);
    printf("  %-58s %9s %9s %9s %11s\n", "microseconds per eval", "median", "min", "max", "hplvk/this");
    printf("(a) latency: one eval, then wait for it\n");
    row("hplvk          hpl_eval + hpl_array_wait", st[M_H_LAT], NULL);
    row("vk_fence_wait  vkQueueSubmit + vkWaitForFences", st[M_VK_WAIT], &st[M_H_LAT]);
    row("vk_fence_spin  vkQueueSubmit + spin on vkGetFenceStatus", st[M_VK_SPIN], &st[M_H_LAT]);
    printf("(b) throughput: %d dependent evals, then one wait\n", cfg.evals);
    row("hplvk          hpl_eval x N + hpl_finish", st[M_H_THR], NULL);
    row("vk_submit_each N vkQueueSubmit (barrier+dispatch), 1 fence", st[M_VK_EACH], &st[M_H_THR]);
    row("vk_one_cmdbuf  1 vkQueueSubmit of N barrier+dispatch", st[M_VK_ONE], &st[M_H_THR]);
    printf("(c) host time inside one call\n");
    row("hplvk          hpl_eval", st[M_H_HOST], NULL);
    row("vk             vkQueueSubmit (in vk_submit_each)", st[M_VK_HOST], &st[M_H_HOST]);
    for (int i = 0; i < M_COUNT; i++)
        free(m[i]);

    char devname[300];
    token_name(dev.name, devname, sizeof devname);
    bool verified = measured && ok_h && ok_v;
    double thr = st[M_H_THR].median;
    printf("RESULT name=bench_eval devices=%s size=%" PRIu64 " time_ms=%.3f rate=%.0fevals/s verified=%s\n", devname,
           cfg.n, thr * cfg.evals * 1e-3, thr > 0.0 ? 1e6 / thr : 0.0, verified ? "yes" : "no");
    return verified ? 0 : 1;
}
