/*
 * bench_vk.h — what the benchmark programs (bench_*.c) share: the
 * hand-written Vulkan of their baselines, medians of timed rounds, and a
 * data pattern (with hplvk kernels that write and check it) that proves
 * every copy they time.
 *
 * Every benchmark runs hplvk and a hand-written Vulkan baseline in ONE
 * process, on the same physical device (matched by name, vendor, device id
 * and, among identical devices, the physical index hplvk reports), in
 * interleaved rounds, so that a slow phase of a shared machine hits both
 * alike. This header is the baseline side:
 *   - the loader is opened with dlopen and every function fetched through
 *     vkGetInstanceProcAddr / vkGetDeviceProcAddr, so the programs link
 *     against nothing but hplvk (and libc);
 *   - device functions live in a table per VkDevice (bvk_device.vk), since
 *     a pointer from vkGetDeviceProcAddr belongs to the device it came from
 *     and bench_exchange opens two;
 *   - with HPLVK_VALIDATION=1 the baseline enables VK_LAYER_KHRONOS_validation
 *     with synchronization validation too, and a debug messenger counts every
 *     warning and error (bvk_messages): a run with any is not verified.
 *
 * Header-only (static functions) like sample_util.h, which it includes:
 * define SAMPLE_NAME and _POSIX_C_SOURCE >= 200809L (dlopen, sysconf)
 * before including it, and include it before any other header.
 */
#ifndef HPLVK_BENCH_VK_H
#define HPLVK_BENCH_VK_H

#include "sample_util.h"

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* ======================================================================
 * Checks, clocks, medians
 * ====================================================================== */

/* In functions returning bool: report a failing hplvk call and return false. */
#define BENCH_HPL(call)                                                                                      \
    do {                                                                                                     \
        int rc_ = (call);                                                                                    \
        if (rc_ != HPL_OK) {                                                                                 \
            fprintf(stderr, SAMPLE_NAME ": %s failed: %s: %s\n", #call, hpl_error_name(rc_), hpl_last_error()); \
            return false;                                                                                    \
        }                                                                                                    \
    } while (0)

/* In functions returning bool: report a failing Vulkan call and return false. */
#define BENCH_VK(call)                                                                                       \
    do {                                                                                                     \
        VkResult vr_ = (call);                                                                               \
        if (vr_ != VK_SUCCESS) {                                                                             \
            fprintf(stderr, SAMPLE_NAME ": %s failed: VkResult %d\n", #call, (int)vr_);                     \
            return false;                                                                                    \
        }                                                                                                    \
    } while (0)

#define BENCH_MIB (1024.0 * 1024.0)

static inline double bench_now_us(void)
{
    return sample_now_ms() * 1e3;
}

/* HPLVK_VALIDATION=1 (anything but empty and "0"): the library enables the
 * layer, and so does the baseline. Timings are then not representative and
 * the benchmarks shrink their defaults. */
static inline bool bench_validation_env(void)
{
    const char *v = getenv("HPLVK_VALIDATION");
    return v && *v && strcmp(v, "0") != 0;
}

/* Physical memory of the host, bytes (0 if unknown). */
static inline uint64_t bench_host_ram(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* The largest device-local heap of an hplvk device. */
static inline uint64_t bench_device_heap(const hpl_device_info *info)
{
    uint64_t best = 0;
    for (uint32_t i = 0; i < info->heap_count && i < HPL_MAX_HEAPS; i++)
        if (info->heaps[i].device_local && info->heaps[i].size > best)
            best = info->heaps[i].size;
    return best;
}

/* Whether a run of `bytes` per copy fits: within max_buffer (the smallest
 * largest buffer of the devices used), 4 copies within the device heap
 * `heap`, and host_need bytes within half the host's memory. Prints the
 * reason when it does not. */
static inline bool bench_size_fits(uint64_t bytes, uint64_t max_buffer, uint64_t heap, uint64_t host_need)
{
    uint64_t ram = bench_host_ram();
    const char *why = bytes > max_buffer          ? "larger than the device's largest buffer"
                      : heap && 4 * bytes > heap  ? "4 copies exceed the device's local heap"
                      : ram && host_need > ram / 2 ? "its copies exceed half the host's memory"
                                                   : NULL;
    if (why)
        printf("  %5.0f MiB  skipped: %s\n", (double)bytes / BENCH_MIB, why);
    return why == NULL;
}

typedef struct bench_stat {
    double median, min, max;
} bench_stat;

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median, fastest and slowest of n values (zeros when n < 1). */
static inline bench_stat bench_stats(const double *v, int n)
{
    bench_stat r = {0, 0, 0};
    double *s = n > 0 ? malloc((size_t)n * sizeof *s) : NULL;
    if (!s)
        return r;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, bench_cmp_double);
    r.min = s[0];
    r.max = s[n - 1];
    r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return r;
}

/* "ok" / "MISSED" for a ratio against a target: at least `target` when
 * at_least, else at most. */
static inline const char *bench_verdict(double ratio, double target, bool at_least)
{
    if (!(ratio > 0.0))
        return "n/a";
    return (at_least ? ratio >= target : ratio <= target) ? "ok" : "MISSED";
}

/* ======================================================================
 * Data that proves itself: a pattern the host, hplvk kernels and the
 * baselines all compute, so that a fast path that moves the wrong bytes
 * (or none) cannot pass
 * ====================================================================== */

/* Element i of the pattern of round `seed`: a multiplicative hash of the
 * index, so that data at a wrong offset is caught, not only stale data. */
static inline uint32_t bench_pattern(uint64_t i, uint32_t seed)
{
    return ((uint32_t)i * 2654435761u) ^ seed;
}

static inline void bench_fill(uint32_t *p, uint64_t n, uint32_t seed)
{
    for (uint64_t i = 0; i < n; i++)
        p[i] = bench_pattern(i, seed);
}

/* Elements that differ from the pattern; the first few are reported. */
static inline uint64_t bench_mismatches(const char *what, const uint32_t *p, uint64_t n, uint32_t seed)
{
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != bench_pattern(i, seed) && bad++ < 3)
            fprintf(stderr, SAMPLE_NAME ": %s: element %" PRIu64 " = 0x%08x, expected 0x%08x\n", what, i, p[i],
                    bench_pattern(i, seed));
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": %s: %" PRIu64 " of %" PRIu64 " elements wrong\n", what, bad, n);
    return bad;
}

/* The same pattern on a device: `stamp` writes it into a 1-D uint array,
 * `check` counts the elements that differ from it (atomically, into the
 * one-element array `bad`). */
typedef struct bench_kernels {
    hpl_kernel stamp, check;
    hpl_array bad;
    bool made;
} bench_kernels;

static const char bench_stamp_src[] =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) a; uint seed; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(a, i) = (i * 2654435761u) ^ seed; }\n";
static const char bench_check_src[] =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) a; hpl_inout(uint, 1) bad; uint seed; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x;\n"
    "    if (hpl_at(a, i) != ((i * 2654435761u) ^ seed))\n"
    "        atomicAdd(hpl_at(bad, 0), 1u);\n"
    "}\n";

static inline bool bench_kernels_create(hpl_context *ctx, bench_kernels *k)
{
    BENCH_HPL(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = bench_stamp_src, .name = "stamp"}},
                                &k->stamp));
    BENCH_HPL(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = bench_check_src, .name = "check"}},
                                &k->check));
    BENCH_HPL(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {1}, .name = "bad"}, &k->bad));
    k->made = true;
    return true;
}

static inline bool bench_kernels_destroy(hpl_context *ctx, bench_kernels *k)
{
    if (!k->made)
        return true;
    k->made = false;
    BENCH_HPL(hpl_kernel_destroy(ctx, k->stamp));
    BENCH_HPL(hpl_kernel_destroy(ctx, k->check));
    BENCH_HPL(hpl_array_destroy(ctx, k->bad));
    return true;
}

/* Writes the pattern of `seed` into `a` on `device` and waits for it: that
 * device's copy becomes the only valid one. */
static inline bool bench_stamp(hpl_context *ctx, const bench_kernels *k, hpl_array a, uint32_t seed, int device)
{
    const hpl_launch launch = {.device = device};
    BENCH_HPL(hpl_eval(ctx, k->stamp, &launch, HPL_ARGS(hpl_arr(a), hpl_u32(seed))));
    BENCH_HPL(hpl_array_wait(ctx, a));
    return true;
}

/* True when `a` holds the pattern of `seed` on `device` (checked there, by
 * a kernel: what it reads is what that device's copy holds). */
static inline bool bench_check(hpl_context *ctx, const bench_kernels *k, hpl_array a, uint32_t seed, int device,
                        const char *what)
{
    const hpl_launch launch = {.device = device};
    uint32_t bad = 0;
    BENCH_HPL(hpl_array_write(ctx, k->bad, &bad, sizeof bad));
    BENCH_HPL(hpl_eval(ctx, k->check, &launch, HPL_ARGS(hpl_arr(a), hpl_arr(k->bad), hpl_u32(seed))));
    BENCH_HPL(hpl_array_read(ctx, k->bad, &bad, sizeof bad));
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": %s: %u elements wrong on device %d\n", what, bad, device);
    return bad == 0;
}

/* True when device `device` moved exactly `to_device` bytes in and
 * `to_host` bytes out since the last hpl_stats_reset. */
static inline bool bench_moved(hpl_context *ctx, int device, uint64_t to_device, uint64_t to_host, const char *what)
{
    hpl_stats st;
    BENCH_HPL(hpl_stats_get(ctx, &st));
    const hpl_device_stats *s = &st.device[device];
    if (s->to_device_bytes == to_device && s->to_host_bytes == to_host)
        return true;
    fprintf(stderr,
            SAMPLE_NAME ": %s: device %d moved %" PRIu64 " bytes in and %" PRIu64 " out, expected %" PRIu64
                        " and %" PRIu64 "\n",
            what, device, s->to_device_bytes, s->to_host_bytes, to_device, to_host);
    return false;
}

/* ======================================================================
 * Vulkan: function tables
 * ====================================================================== */

#define BVK_GLOBAL_FUNCS(X) X(CreateInstance) X(EnumerateInstanceVersion) X(EnumerateInstanceLayerProperties)
#define BVK_INSTANCE_FUNCS(X)                                                                                \
    X(DestroyInstance) X(EnumeratePhysicalDevices) X(GetPhysicalDeviceProperties)                            \
    X(GetPhysicalDeviceProperties2) X(GetPhysicalDeviceQueueFamilyProperties)                                \
    X(GetPhysicalDeviceMemoryProperties) X(EnumerateDeviceExtensionProperties) X(CreateDevice)              \
    X(GetDeviceProcAddr) X(GetPhysicalDeviceExternalSemaphoreProperties)
#define BVK_DEBUG_FUNCS(X) X(CreateDebugUtilsMessengerEXT) X(DestroyDebugUtilsMessengerEXT)
#define BVK_DEVICE_FUNCS(X)                                                                                  \
    X(DestroyDevice) X(GetDeviceQueue) X(DeviceWaitIdle) X(CreateBuffer) X(DestroyBuffer)                    \
    X(GetBufferMemoryRequirements) X(AllocateMemory) X(FreeMemory) X(BindBufferMemory) X(MapMemory)         \
    X(CreateShaderModule) X(DestroyShaderModule) X(CreateDescriptorSetLayout)                               \
    X(DestroyDescriptorSetLayout) X(CreatePipelineLayout) X(DestroyPipelineLayout)                          \
    X(CreateComputePipelines) X(DestroyPipeline) X(CreateDescriptorPool) X(DestroyDescriptorPool)           \
    X(AllocateDescriptorSets) X(UpdateDescriptorSets) X(CreateCommandPool) X(DestroyCommandPool)            \
    X(FreeCommandBuffers)                                                                                    \
    X(AllocateCommandBuffers) X(BeginCommandBuffer) X(EndCommandBuffer) X(CmdBindPipeline)                  \
    X(CmdBindDescriptorSets) X(CmdPushConstants) X(CmdDispatch) X(CmdPipelineBarrier) X(CmdCopyBuffer)      \
    X(CmdFillBuffer)                                                                                         \
    X(CreateFence) X(DestroyFence) X(ResetFences) X(WaitForFences) X(GetFenceStatus) X(QueueSubmit)         \
    X(CreateSemaphore) X(DestroySemaphore) X(WaitSemaphores) X(GetSemaphoreCounterValue)                  \
    X(SignalSemaphore) X(CreateQueryPool) X(DestroyQueryPool) X(CmdResetQueryPool) X(CmdWriteTimestamp)     \
    X(GetQueryPoolResults)
/* Only with VK_EXT_external_memory_host. */
#define BVK_IMPORT_FUNCS(X) X(GetMemoryHostPointerPropertiesEXT)
/* Only with VK_EXT_calibrated_timestamps (bvk_device.no_calibration NULL). */
#define BVK_CALIBRATION_FUNCS(X) X(GetCalibratedTimestampsEXT)
/* Only with VK_KHR_external_semaphore_fd (bvk_device.semaphore_fd). */
#define BVK_SEMAPHORE_FD_FUNCS(X) X(GetSemaphoreFdKHR) X(ImportSemaphoreFdKHR)

#define BVK_MEMBER(name) PFN_vk##name name;

typedef struct bvk_instance {
    void *loader;
    PFN_vkGetInstanceProcAddr get_proc;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    bool validation;
    struct {
        BVK_GLOBAL_FUNCS(BVK_MEMBER)
        BVK_INSTANCE_FUNCS(BVK_MEMBER)
        BVK_DEBUG_FUNCS(BVK_MEMBER)
        /* NULL when no driver has VK_EXT_calibrated_timestamps. */
        PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT GetPhysicalDeviceCalibrateableTimeDomainsEXT;
    } vk;
} bvk_instance;

typedef struct bvk_device {
    const bvk_instance *inst;
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory;
    VkDevice device;
    VkQueue queue;
    uint32_t family;
    VkQueueFlags family_flags;
    bool host_import;               /* VK_EXT_external_memory_host enabled */
    VkDeviceSize import_alignment;  /* minImportedHostPointerAlignment */
    uint32_t timestamp_bits;        /* the queue family's timestampValidBits */
    /* Why the queue's timestamps cannot be put on the host's CLOCK_MONOTONIC
     * (bvk_calibration_missing); NULL: VK_EXT_calibrated_timestamps enabled. */
    const char *no_calibration;
    bool semaphore_fd;              /* VK_KHR_external_semaphore_fd enabled, opaque-fd timelines */
    VkCommandPool pool;
    VkFence fence;
    struct {
        BVK_DEVICE_FUNCS(BVK_MEMBER)
        BVK_IMPORT_FUNCS(BVK_MEMBER)
        BVK_CALIBRATION_FUNCS(BVK_MEMBER)
        BVK_SEMAPHORE_FD_FUNCS(BVK_MEMBER)
    } vk;
} bvk_device;

#undef BVK_MEMBER

/* Which physical device an hplvk device is. */
typedef struct bvk_match {
    char name[256];
    uint32_t physical_index, vendor_id, device_id;
} bvk_match;

static inline bvk_match bvk_match_of(const hpl_device_info *info)
{
    bvk_match m;
    memcpy(m.name, info->name, sizeof m.name);
    m.name[sizeof m.name - 1] = '\0';
    m.physical_index = info->physical_index;
    m.vendor_id = info->vendor_id;
    m.device_id = info->device_id;
    return m;
}

/* The queue a baseline wants: a compute-only family, else any compute one
 * (kernels); or a transfer-only family (the copy engines), else as for
 * compute (copies). */
typedef enum bvk_queue_kind { BVK_QUEUE_COMPUTE, BVK_QUEUE_TRANSFER } bvk_queue_kind;

/* Validation messages of the baseline; a run with any is not verified. */
static atomic_int bvk_messages;

static inline VKAPI_ATTR VkBool32 VKAPI_CALL bvk_debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                         VkDebugUtilsMessageTypeFlagsEXT types,
                                                         const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)types;
    (void)user;
    fprintf(stderr, SAMPLE_NAME ": vulkan validation %s: %s\n",
            severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
            data && data->pMessage ? data->pMessage : "(no message)");
    atomic_fetch_add(&bvk_messages, 1);
    return VK_FALSE;
}

/* Reports the baseline's validation messages; true when there were none. */
static inline bool bvk_clean(void)
{
    int n = atomic_load(&bvk_messages);
    if (n)
        fprintf(stderr, SAMPLE_NAME ": %d validation messages on the hand-written Vulkan path\n", n);
    return n == 0;
}

/* ======================================================================
 * Vulkan: instance and devices
 * ====================================================================== */

static inline bool bvk_layer_present(bvk_instance *in, const char *layer)
{
    uint32_t count = 0;
    BENCH_VK(in->vk.EnumerateInstanceLayerProperties(&count, NULL));
    VkLayerProperties *props = calloc(count ? count : 1, sizeof *props);
    if (!props)
        return false;
    bool found = false;
    if (in->vk.EnumerateInstanceLayerProperties(&count, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < count; i++)
            found = found || strcmp(props[i].layerName, layer) == 0;
    free(props);
    return found;
}

static inline void bvk_instance_destroy(bvk_instance *in)
{
    if (in->messenger)
        in->vk.DestroyDebugUtilsMessengerEXT(in->instance, in->messenger, NULL);
    if (in->instance)
        in->vk.DestroyInstance(in->instance, NULL);
    if (in->loader)
        dlclose(in->loader);
    memset(in, 0, sizeof *in);
}

/* A Vulkan 1.2 instance; with `validation`, the Khronos layer with
 * synchronization validation and a messenger counting into bvk_messages. */
static inline bool bvk_instance_create(bvk_instance *in, bool validation)
{
    memset(in, 0, sizeof *in);
    in->validation = validation;
    in->loader = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!in->loader) {
        fprintf(stderr, SAMPLE_NAME ": dlopen(libvulkan.so.1): %s\n", dlerror());
        return false;
    }
    /* POSIX allows this conversion of dlsym's result; ISO C does not. */
    *(void **)&in->get_proc = dlsym(in->loader, "vkGetInstanceProcAddr");
    if (!in->get_proc) {
        fprintf(stderr, SAMPLE_NAME ": libvulkan.so.1 has no vkGetInstanceProcAddr\n");
        return false;
    }
#define BVK_LOAD(name)                                                                                       \
    if (!(in->vk.name = (PFN_vk##name)in->get_proc(inst, "vk" #name))) {                                     \
        fprintf(stderr, SAMPLE_NAME ": no vk%s\n", #name);                                                   \
        return false;                                                                                        \
    }
    VkInstance inst = VK_NULL_HANDLE;
    BVK_GLOBAL_FUNCS(BVK_LOAD)

    uint32_t loader_version = 0;
    BENCH_VK(in->vk.EnumerateInstanceVersion(&loader_version));
    if (loader_version < VK_API_VERSION_1_2) {
        fprintf(stderr, SAMPLE_NAME ": the Vulkan loader is older than 1.2\n");
        return false;
    }
    const char *layers[1] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[2] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    VkValidationFeatureEnableEXT enables[1] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = bvk_debug_callback,
    };
    VkValidationFeaturesEXT vf = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .pNext = &mci, /* also catches messages of vkCreateInstance / vkDestroyInstance */
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = enables,
    };
    if (validation && !bvk_layer_present(in, layers[0])) {
        fprintf(stderr, SAMPLE_NAME ": HPLVK_VALIDATION=1 but %s is not installed\n", layers[0]);
        return false;
    }
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = SAMPLE_NAME,
        .apiVersion = VK_API_VERSION_1_2,
    };
    VkInstanceCreateInfo ici = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validation ? &vf : NULL,
        .pApplicationInfo = &app,
        .enabledLayerCount = validation ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = validation ? 2 : 0,
        .ppEnabledExtensionNames = exts,
    };
    BENCH_VK(in->vk.CreateInstance(&ici, NULL, &in->instance));
    inst = in->instance;
    BVK_INSTANCE_FUNCS(BVK_LOAD)
    if (validation) {
        BVK_DEBUG_FUNCS(BVK_LOAD)
        BENCH_VK(in->vk.CreateDebugUtilsMessengerEXT(in->instance, &mci, NULL, &in->messenger));
    }
    in->vk.GetPhysicalDeviceCalibrateableTimeDomainsEXT = (PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)
        in->get_proc(inst, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT");
#undef BVK_LOAD
    return true;
}

/* The physical device `m` names: same name, vendor and device id; among
 * identical ones, the one at hplvk's physical index. */
static inline bool bvk_find_physical(const bvk_instance *in, const bvk_match *m, VkPhysicalDevice *out)
{
    uint32_t count = 0;
    BENCH_VK(in->vk.EnumeratePhysicalDevices(in->instance, &count, NULL));
    VkPhysicalDevice *pds = calloc(count ? count : 1, sizeof *pds);
    if (!pds)
        return false;
    VkResult r = in->vk.EnumeratePhysicalDevices(in->instance, &count, pds);
    int pick = -1;
    for (uint32_t i = 0; r == VK_SUCCESS && i < count; i++) {
        VkPhysicalDeviceProperties p;
        in->vk.GetPhysicalDeviceProperties(pds[i], &p);
        if (strcmp(p.deviceName, m->name) != 0 || p.vendorID != m->vendor_id || p.deviceID != m->device_id)
            continue;
        if (pick < 0 || i == m->physical_index)
            pick = (int)i;
    }
    if (pick >= 0)
        *out = pds[pick];
    free(pds);
    BENCH_VK(r);
    if (pick < 0)
        fprintf(stderr, SAMPLE_NAME ": no Vulkan physical device named \"%s\" (vendor 0x%x, device 0x%x)\n", m->name,
                m->vendor_id, m->device_id);
    return pick >= 0;
}

static inline int bvk_pick_family(const VkQueueFamilyProperties *f, uint32_t n, bvk_queue_kind kind)
{
    /* Transfer-only: nothing but transfers (sparse binding and protected
     * memory aside; not a video family that also copies). */
    const VkQueueFlags aside = VK_QUEUE_SPARSE_BINDING_BIT | VK_QUEUE_PROTECTED_BIT;
    if (kind == BVK_QUEUE_TRANSFER)
        for (uint32_t i = 0; i < n; i++)
            if ((f[i].queueFlags & ~aside) == VK_QUEUE_TRANSFER_BIT)
                return (int)i;
    for (uint32_t i = 0; i < n; i++)
        if ((f[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(f[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
            return (int)i;
    for (uint32_t i = 0; i < n; i++)
        if (f[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            return (int)i;
    return -1;
}

static inline bool bvk_has_extension(const bvk_instance *in, VkPhysicalDevice pd, const char *name)
{
    uint32_t count = 0;
    if (in->vk.EnumerateDeviceExtensionProperties(pd, NULL, &count, NULL) != VK_SUCCESS)
        return false;
    VkExtensionProperties *props = calloc(count ? count : 1, sizeof *props);
    bool found = false;
    if (props && in->vk.EnumerateDeviceExtensionProperties(pd, NULL, &count, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < count; i++)
            found = found || strcmp(props[i].extensionName, name) == 0;
    free(props);
    return found;
}

/* Why the timestamps of d's queue cannot be put on the host's
 * CLOCK_MONOTONIC as lib/engine/timestamps.c does (VK_EXT_calibrated_timestamps
 * with the DEVICE and CLOCK_MONOTONIC domains), or NULL when they can. */
static inline const char *bvk_calibration_missing(const bvk_instance *in, const bvk_device *d)
{
    if (d->timestamp_bits == 0 || !(d->props.limits.timestampPeriod > 0.0f))
        return "its queue family has no timestamps";
    if (!bvk_has_extension(in, d->physical, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) ||
        !in->vk.GetPhysicalDeviceCalibrateableTimeDomainsEXT)
        return "no VK_EXT_calibrated_timestamps";
    VkTimeDomainEXT domains[8];
    uint32_t n = 8;
    VkResult r = in->vk.GetPhysicalDeviceCalibrateableTimeDomainsEXT(d->physical, &n, domains);
    bool device = false, monotonic = false;
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n; i++) {
        device = device || domains[i] == VK_TIME_DOMAIN_DEVICE_EXT;
        monotonic = monotonic || domains[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    }
    return device && monotonic ? NULL : "VK_EXT_calibrated_timestamps without the DEVICE and CLOCK_MONOTONIC domains";
}

/* Whether pd's driver exports and imports timeline semaphores as opaque fds
 * (VK_KHR_external_semaphore_fd), as hplvk's peer timelines need. */
static inline bool bvk_timeline_fd(const bvk_instance *in, VkPhysicalDevice pd)
{
    if (!bvk_has_extension(in, pd, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME))
        return false;
    VkSemaphoreTypeCreateInfo type = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkPhysicalDeviceExternalSemaphoreInfo info = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO,
                                                  .pNext = &type,
                                                  .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkExternalSemaphoreProperties props = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
    in->vk.GetPhysicalDeviceExternalSemaphoreProperties(pd, &info, &props);
    const VkExternalSemaphoreFeatureFlags need =
        VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT | VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT;
    return (props.externalSemaphoreFeatures & need) == need &&
           (props.compatibleHandleTypes & VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT);
}

static inline void bvk_device_destroy(bvk_device *d)
{
    if (d->device) {
        d->vk.DeviceWaitIdle(d->device);
        if (d->fence)
            d->vk.DestroyFence(d->device, d->fence, NULL);
        if (d->pool) /* frees its command buffers */
            d->vk.DestroyCommandPool(d->device, d->pool, NULL);
        d->vk.DestroyDevice(d->device, NULL);
    }
    memset(d, 0, sizeof *d);
}

/* A VkDevice on the physical device `m` names, with one queue of `kind`,
 * timeline semaphores, VK_EXT_external_memory_host,
 * VK_EXT_calibrated_timestamps and VK_KHR_external_semaphore_fd where the
 * device has them, a command pool and a fence. */
static inline bool bvk_device_create(const bvk_instance *in, const bvk_match *m, bvk_queue_kind kind, bvk_device *d)
{
    memset(d, 0, sizeof *d);
    d->inst = in;
    if (!bvk_find_physical(in, m, &d->physical))
        return false;
    in->vk.GetPhysicalDeviceProperties(d->physical, &d->props);
    in->vk.GetPhysicalDeviceMemoryProperties(d->physical, &d->memory);
    if (d->props.apiVersion < VK_API_VERSION_1_2) {
        fprintf(stderr, SAMPLE_NAME ": %s supports only Vulkan %u.%u\n", d->props.deviceName,
                VK_API_VERSION_MAJOR(d->props.apiVersion), VK_API_VERSION_MINOR(d->props.apiVersion));
        return false;
    }
    VkQueueFamilyProperties fams[64];
    uint32_t fcount = 0;
    in->vk.GetPhysicalDeviceQueueFamilyProperties(d->physical, &fcount, NULL);
    if (fcount > 64)
        fcount = 64;
    in->vk.GetPhysicalDeviceQueueFamilyProperties(d->physical, &fcount, fams);
    int family = bvk_pick_family(fams, fcount, kind);
    if (family < 0) {
        fprintf(stderr, SAMPLE_NAME ": %s has no compute queue\n", d->props.deviceName);
        return false;
    }
    d->family = (uint32_t)family;
    d->family_flags = fams[family].queueFlags;
    d->timestamp_bits = fams[family].timestampValidBits;
    d->no_calibration = bvk_calibration_missing(in, d);
    d->semaphore_fd = bvk_timeline_fd(in, d->physical);

    d->host_import = bvk_has_extension(in, d->physical, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    if (d->host_import) {
        VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &hp};
        in->vk.GetPhysicalDeviceProperties2(d->physical, &p2);
        d->import_alignment = hp.minImportedHostPointerAlignment;
    }
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = d->family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    /* Timeline semaphores are core (and required) in Vulkan 1.2. */
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .timelineSemaphore = VK_TRUE,
    };
    const char *exts[3];
    uint32_t ext_count = 0;
    if (d->host_import)
        exts[ext_count++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    if (!d->no_calibration)
        exts[ext_count++] = VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
    if (d->semaphore_fd)
        exts[ext_count++] = VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME;
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &f12,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
        .enabledExtensionCount = ext_count,
        .ppEnabledExtensionNames = exts,
    };
    BENCH_VK(in->vk.CreateDevice(d->physical, &dci, NULL, &d->device));
#define BVK_LOAD_DEVICE(name)                                                                                \
    if (!(d->vk.name = (PFN_vk##name)in->vk.GetDeviceProcAddr(d->device, "vk" #name))) {                    \
        fprintf(stderr, SAMPLE_NAME ": no vk%s\n", #name);                                                   \
        return false;                                                                                        \
    }
    BVK_DEVICE_FUNCS(BVK_LOAD_DEVICE)
    if (d->host_import) {
        BVK_IMPORT_FUNCS(BVK_LOAD_DEVICE)
    }
    if (!d->no_calibration) {
        BVK_CALIBRATION_FUNCS(BVK_LOAD_DEVICE)
    }
    if (d->semaphore_fd) {
        BVK_SEMAPHORE_FD_FUNCS(BVK_LOAD_DEVICE)
    }
#undef BVK_LOAD_DEVICE
    d->vk.GetDeviceQueue(d->device, d->family, 0, &d->queue);
    VkCommandPoolCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = d->family,
    };
    BENCH_VK(d->vk.CreateCommandPool(d->device, &pci, NULL, &d->pool));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    BENCH_VK(d->vk.CreateFence(d->device, &fci, NULL, &d->fence));
    return true;
}

/* "compute-only", "transfer-only", "graphics+compute" ...: the baseline's
 * queue family, for the printout. */
static inline const char *bvk_family_kind(const bvk_device *d)
{
    VkQueueFlags f = d->family_flags;
    if (f & VK_QUEUE_GRAPHICS_BIT)
        return "graphics+compute";
    if (f & VK_QUEUE_COMPUTE_BIT)
        return "compute-only";
    return "transfer-only";
}

/* ======================================================================
 * Vulkan: buffers
 * ====================================================================== */

typedef struct bvk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size;
    void *mapped; /* host-visible allocations only */
} bvk_buffer;

/* Among the types in `bits` with every flag of `want`, the one with the
 * fewest other flags: plain device-local memory rather than its
 * host-visible (resizable BAR) twin, say. */
static inline bool bvk_memory_type(const bvk_device *d, uint32_t bits, VkMemoryPropertyFlags want, uint32_t *out)
{
    int best = -1, best_extra = 99;
    for (uint32_t i = 0; i < d->memory.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = d->memory.memoryTypes[i].propertyFlags;
        if (!(bits & (1u << i)) || (f & want) != want)
            continue;
        int extra = __builtin_popcount(f & ~want);
        if (extra < best_extra) {
            best = (int)i;
            best_extra = extra;
        }
    }
    if (best >= 0)
        *out = (uint32_t)best;
    return best >= 0;
}

static inline void bvk_buffer_destroy(const bvk_device *d, bvk_buffer *b)
{
    if (b->buffer)
        d->vk.DestroyBuffer(d->device, b->buffer, NULL);
    if (b->memory) /* unmaps it */
        d->vk.FreeMemory(d->device, b->memory, NULL);
    memset(b, 0, sizeof *b);
}

static inline bool bvk_bind_new_memory(const bvk_device *d, bvk_buffer *b, uint32_t type_bits, VkMemoryPropertyFlags want,
                                const void *import)
{
    VkMemoryRequirements req;
    d->vk.GetBufferMemoryRequirements(d->device, b->buffer, &req);
    uint32_t type;
    /* Imported memory: any type the pointer allows when none has `want`. */
    bool found = bvk_memory_type(d, req.memoryTypeBits & type_bits, want, &type) ||
                 (import && bvk_memory_type(d, req.memoryTypeBits & type_bits, 0, &type));
    if (!found) {
        fprintf(stderr, SAMPLE_NAME ": %s: no memory type with flags 0x%x%s\n", d->props.deviceName, (unsigned)want,
                import ? " can import this host memory" : "");
        return false;
    }
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .pNext = import,
        .allocationSize = import ? b->size : req.size,
        .memoryTypeIndex = type,
    };
    BENCH_VK(d->vk.AllocateMemory(d->device, &ai, NULL, &b->memory));
    BENCH_VK(d->vk.BindBufferMemory(d->device, b->buffer, b->memory, 0));
    return true;
}

/* A buffer of `size` bytes in memory with the `want` flags, mapped when
 * they include HOST_VISIBLE. */
static inline bool bvk_buffer_create(const bvk_device *d, VkDeviceSize size, VkBufferUsageFlags usage,
                              VkMemoryPropertyFlags want, bvk_buffer *b)
{
    memset(b, 0, sizeof *b);
    b->size = size;
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    BENCH_VK(d->vk.CreateBuffer(d->device, &bi, NULL, &b->buffer));
    if (!bvk_bind_new_memory(d, b, ~0u, want, NULL))
        return false;
    if (want & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
        BENCH_VK(d->vk.MapMemory(d->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped));
    return true;
}

/* The host memory [host, host + size) as a transfer buffer of the device
 * (VK_EXT_external_memory_host): host and size must be multiples of
 * d->import_alignment. The memory stays the caller's; free it only after
 * bvk_buffer_destroy. */
static inline bool bvk_buffer_import(const bvk_device *d, void *host, VkDeviceSize size, bvk_buffer *b)
{
    memset(b, 0, sizeof *b);
    b->size = size;
    if (!d->host_import || (uintptr_t)host % d->import_alignment || size % d->import_alignment) {
        fprintf(stderr, SAMPLE_NAME ": cannot import %p (%llu bytes) into %s\n", host, (unsigned long long)size,
                d->props.deviceName);
        return false;
    }
    VkMemoryHostPointerPropertiesEXT hp = {.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    BENCH_VK(d->vk.GetMemoryHostPointerPropertiesEXT(d->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                                                     host, &hp));
    VkExternalMemoryBufferCreateInfo ext = {
        .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
        .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
    };
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .pNext = &ext,
        .size = size,
        .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    BENCH_VK(d->vk.CreateBuffer(d->device, &bi, NULL, &b->buffer));
    VkImportMemoryHostPointerInfoEXT import = {
        .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
        .pHostPointer = host,
    };
    /* Coherent: the host's writes need no flush, the device's no invalidate. */
    return bvk_bind_new_memory(d, b, hp.memoryTypeBits,
                               VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &import);
}

/* ======================================================================
 * Vulkan: commands and synchronisation
 * ====================================================================== */

static inline bool bvk_commands(const bvk_device *d, uint32_t count, VkCommandBuffer *out)
{
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = d->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = count,
    };
    BENCH_VK(d->vk.AllocateCommandBuffers(d->device, &ai, out));
    return true;
}

/* Frees command buffers of bvk_commands (VK_NULL_HANDLE entries are fine). */
static inline void bvk_commands_free(const bvk_device *d, uint32_t count, VkCommandBuffer *cbs)
{
    if (d->device && cbs && count)
        d->vk.FreeCommandBuffers(d->device, d->pool, count, cbs);
}

static inline VkResult bvk_begin(const bvk_device *d, VkCommandBuffer cb, VkCommandBufferUsageFlags flags)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, .flags = flags};
    return d->vk.BeginCommandBuffer(cb, &bi);
}

/* A global memory barrier. */
static inline void bvk_barrier(const bvk_device *d, VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src,
                        VkPipelineStageFlags dst_stage, VkAccessFlags dst)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src, .dstAccessMask = dst};
    d->vk.CmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Orders the transfers before this point (this or an earlier submission on
 * the queue; the host's writes, made visible by the submission itself)
 * before the transfers after it. */
static inline void bvk_transfer_barrier(const bvk_device *d, VkCommandBuffer cb)
{
    const VkAccessFlags rw = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    bvk_barrier(d, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                rw);
}

/* Makes the transfers' writes visible to the host (and to other devices
 * reading the same host memory after the host saw the submission end). */
static inline void bvk_host_barrier(const bvk_device *d, VkCommandBuffer cb)
{
    bvk_barrier(d, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
}

static inline void bvk_copy(const bvk_device *d, VkCommandBuffer cb, VkBuffer src, VkDeviceSize src_offset, VkBuffer dst,
                     VkDeviceSize dst_offset, VkDeviceSize size)
{
    VkBufferCopy region = {.srcOffset = src_offset, .dstOffset = dst_offset, .size = size};
    d->vk.CmdCopyBuffer(cb, src, dst, 1, &region);
}

/* Submits one command buffer (none: cb NULL), signalling the timeline
 * semaphore `signal` to `value` when given, and the fence when given. */
static inline VkResult bvk_submit(const bvk_device *d, VkCommandBuffer cb, VkSemaphore signal, uint64_t value, VkFence fence)
{
    VkTimelineSemaphoreSubmitInfo ts = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .signalSemaphoreValueCount = 1,
        .pSignalSemaphoreValues = &value,
    };
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = signal ? &ts : NULL,
        .commandBufferCount = cb ? 1 : 0,
        .pCommandBuffers = &cb,
        .signalSemaphoreCount = signal ? 1 : 0,
        .pSignalSemaphores = &signal,
    };
    return d->vk.QueueSubmit(d->queue, 1, &si, fence);
}

/* How the host waits for the device: blocking in the driver, spinning on
 * the status, or as hplvk does (lib/engine/submit.c): spin for BVK_SPIN_US, then
 * block (a blocking wait costs ~20 us more than a spin on NVIDIA, DESIGN.md
 * section 4; most waits for one kernel are short). */
typedef enum bvk_wait { BVK_BLOCK, BVK_SPIN, BVK_SPIN_THEN_BLOCK } bvk_wait;
#define BVK_SPIN_US 50.0

/* Submit, then wait on the device's fence and reset it. */
static inline VkResult bvk_submit_wait(const bvk_device *d, VkCommandBuffer cb, bvk_wait mode)
{
    VkResult r = bvk_submit(d, cb, VK_NULL_HANDLE, 0, d->fence);
    if (r != VK_SUCCESS)
        return r;
    double until = mode == BVK_SPIN_THEN_BLOCK ? bench_now_us() + BVK_SPIN_US : 0.0;
    r = VK_NOT_READY;
    if (mode == BVK_SPIN) {
        while ((r = d->vk.GetFenceStatus(d->device, d->fence)) == VK_NOT_READY)
            ;
    }
    while (mode == BVK_SPIN_THEN_BLOCK && (r = d->vk.GetFenceStatus(d->device, d->fence)) == VK_NOT_READY &&
           bench_now_us() < until)
        sched_yield();
    if (r == VK_NOT_READY)
        r = d->vk.WaitForFences(d->device, 1, &d->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS)
        return r;
    return d->vk.ResetFences(d->device, 1, &d->fence);
}

static inline VkResult bvk_timeline_create(const bvk_device *d, VkSemaphore *out)
{
    VkSemaphoreTypeCreateInfo tci = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
        .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
        .initialValue = 0,
    };
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &tci};
    return d->vk.CreateSemaphore(d->device, &sci, NULL, out);
}

static inline VkResult bvk_value(const bvk_device *d, VkSemaphore s, uint64_t *value)
{
    return d->vk.GetSemaphoreCounterValue(d->device, s, value);
}

/* Waits until the timeline semaphore reaches `value`, as hplvk waits: spin
 * for BVK_SPIN_US, then block. Under validation it only polls: the 1.3.239
 * layer stalls for 10 s when one thread blocks on a timeline while another
 * signals one (KhronosGroup/Vulkan-ValidationLayers#4649), and hplvk's
 * threads may do that meanwhile. */
static inline VkResult bvk_wait_value(const bvk_device *d, VkSemaphore s, uint64_t value)
{
    double until = bench_now_us() + BVK_SPIN_US;
    for (;;) {
        uint64_t now = 0;
        VkResult r = bvk_value(d, s, &now);
        if (r != VK_SUCCESS || now >= value)
            return r;
        if (!d->inst->validation && bench_now_us() >= until)
            break;
        if (bench_now_us() < until)
            sched_yield();
        else
            nanosleep(&(struct timespec){0, 20000}, NULL);
    }
    VkSemaphoreWaitInfo wi = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
        .semaphoreCount = 1,
        .pSemaphores = &s,
        .pValues = &value,
    };
    return d->vk.WaitSemaphores(d->device, &wi, UINT64_MAX);
}

/* Submits one command buffer that waits (before any of its commands) for
 * the timeline `wait` to reach wait_value, signalling the timeline `signal`
 * to signal_value. */
static inline VkResult bvk_submit_after(const bvk_device *d, VkCommandBuffer cb, VkSemaphore wait, uint64_t wait_value,
                                        VkSemaphore signal, uint64_t signal_value)
{
    const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkTimelineSemaphoreSubmitInfo ts = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .waitSemaphoreValueCount = 1,
        .pWaitSemaphoreValues = &wait_value,
        .signalSemaphoreValueCount = 1,
        .pSignalSemaphoreValues = &signal_value,
    };
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = &ts,
        .waitSemaphoreCount = 1,
        .pWaitSemaphores = &wait,
        .pWaitDstStageMask = &stage,
        .commandBufferCount = 1,
        .pCommandBuffers = &cb,
        .signalSemaphoreCount = 1,
        .pSignalSemaphores = &signal,
    };
    return d->vk.QueueSubmit(d->queue, 1, &si, VK_NULL_HANDLE);
}

/* Sets the timeline semaphore `s` to `value` from the host. */
static inline VkResult bvk_signal(const bvk_device *d, VkSemaphore s, uint64_t value)
{
    VkSemaphoreSignalInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = s, .value = value};
    return d->vk.SignalSemaphore(d->device, &si);
}

/* ======================================================================
 * Vulkan: GPU timestamps on the host's clock
 * ====================================================================== */

/* A device tick and the host's CLOCK_MONOTONIC at the same moment, read
 * together by the driver, which bounds its error (deviation_ns). */
typedef struct bvk_clock_point {
    uint64_t ticks, ns, deviation_ns;
} bvk_clock_point;

/* Only where d->no_calibration is NULL. */
static inline VkResult bvk_calibrate(const bvk_device *d, bvk_clock_point *p)
{
    const VkCalibratedTimestampInfoEXT info[2] = {
        {.sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, .timeDomain = VK_TIME_DOMAIN_DEVICE_EXT},
        {.sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, .timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT},
    };
    uint64_t ts[2] = {0, 0};
    VkResult r = d->vk.GetCalibratedTimestampsEXT(d->device, 2, info, ts, &p->deviation_ns);
    p->ticks = ts[0];
    p->ns = ts[1];
    return r;
}

/* Nanoseconds from the point p to the tick `ticks` of a timestamp query
 * (negative before it): the difference of the valid bits, taken as the
 * shorter way round the counter, at the device's nominal period. */
static inline double bvk_ns_since(const bvk_device *d, const bvk_clock_point *p, uint64_t ticks)
{
    const uint64_t mask = d->timestamp_bits >= 64 ? UINT64_MAX : (1ull << d->timestamp_bits) - 1;
    uint64_t ahead = (ticks - p->ticks) & mask;
    double delta = ahead <= mask / 2 ? (double)ahead : -(double)(((p->ticks - ticks) & mask));
    return delta * (double)d->props.limits.timestampPeriod;
}

/* The tick written into query 0 of `pool`, once its commands completed. */
static inline VkResult bvk_timestamp(const bvk_device *d, VkQueryPool pool, uint64_t *ticks)
{
    return d->vk.GetQueryPoolResults(d->device, pool, 0, 1, sizeof *ticks, ticks, sizeof *ticks,
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
}

/* A pool of one timestamp query. */
static inline VkResult bvk_timestamp_pool(const bvk_device *d, VkQueryPool *pool)
{
    VkQueryPoolCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 1,
    };
    return d->vk.CreateQueryPool(d->device, &ci, NULL, pool);
}

/* ======================================================================
 * Vulkan: a tiny compute kernel, x = x * a + b over n floats
 * ====================================================================== */

/* Compiled with
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
#define BVK_AXPB_LOCAL_SIZE 64
static const uint32_t bvk_axpb_spirv[] = {
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

typedef struct bvk_axpb {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    VkDescriptorSet set;
} bvk_axpb;

typedef struct bvk_axpb_push {
    uint32_t n;
    float a, b;
} bvk_axpb_push;

static inline void bvk_axpb_destroy(const bvk_device *d, bvk_axpb *k)
{
    if (d->device) {
        if (k->pool) /* frees its set */
            d->vk.DestroyDescriptorPool(d->device, k->pool, NULL);
        if (k->pipeline)
            d->vk.DestroyPipeline(d->device, k->pipeline, NULL);
        if (k->layout)
            d->vk.DestroyPipelineLayout(d->device, k->layout, NULL);
        if (k->set_layout)
            d->vk.DestroyDescriptorSetLayout(d->device, k->set_layout, NULL);
        if (k->module)
            d->vk.DestroyShaderModule(d->device, k->module, NULL);
    }
    memset(k, 0, sizeof *k);
}

/* The axpb pipeline with its one storage buffer bound to `buffer`. */
static inline bool bvk_axpb_create(const bvk_device *d, VkBuffer buffer, bvk_axpb *k)
{
    memset(k, 0, sizeof *k);
    VkShaderModuleCreateInfo smci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = sizeof bvk_axpb_spirv,
        .pCode = bvk_axpb_spirv,
    };
    BENCH_VK(d->vk.CreateShaderModule(d->device, &smci, NULL, &k->module));
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
    BENCH_VK(d->vk.CreateDescriptorSetLayout(d->device, &dslci, NULL, &k->set_layout));
    VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = sizeof(bvk_axpb_push)};
    VkPipelineLayoutCreateInfo plci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &k->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &pcr,
    };
    BENCH_VK(d->vk.CreatePipelineLayout(d->device, &plci, NULL, &k->layout));
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = k->module,
                  .pName = "main"},
        .layout = k->layout,
    };
    BENCH_VK(d->vk.CreateComputePipelines(d->device, VK_NULL_HANDLE, 1, &cpci, NULL, &k->pipeline));
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 1};
    VkDescriptorPoolCreateInfo dpci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 1,
        .pPoolSizes = &ps,
    };
    BENCH_VK(d->vk.CreateDescriptorPool(d->device, &dpci, NULL, &k->pool));
    VkDescriptorSetAllocateInfo dsai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = k->pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &k->set_layout,
    };
    BENCH_VK(d->vk.AllocateDescriptorSets(d->device, &dsai, &k->set));
    VkDescriptorBufferInfo dbi = {.buffer = buffer, .offset = 0, .range = VK_WHOLE_SIZE};
    VkWriteDescriptorSet wds = {
        .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
        .dstSet = k->set,
        .dstBinding = 0,
        .descriptorCount = 1,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .pBufferInfo = &dbi,
    };
    d->vk.UpdateDescriptorSets(d->device, 1, &wds, 0, NULL);
    return true;
}

/* Orders the previous dispatch (this or an earlier submission, same queue)
 * before the next one. */
static inline void bvk_compute_barrier(const bvk_device *d, VkCommandBuffer cb)
{
    bvk_barrier(d, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

/* Binds the pipeline and its set and pushes (n, a, b). */
static inline void bvk_axpb_bind(const bvk_device *d, VkCommandBuffer cb, const bvk_axpb *k, uint32_t n, float a, float b)
{
    const bvk_axpb_push push = {.n = n, .a = a, .b = b};
    d->vk.CmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
    d->vk.CmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &k->set, 0, NULL);
    d->vk.CmdPushConstants(cb, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
}

/* A barrier against the previous dispatch, then one dispatch over n. */
static inline void bvk_axpb_dispatch(const bvk_device *d, VkCommandBuffer cb, uint32_t n)
{
    bvk_compute_barrier(d, cb);
    d->vk.CmdDispatch(cb, (n + BVK_AXPB_LOCAL_SIZE - 1) / BVK_AXPB_LOCAL_SIZE, 1, 1);
}

#endif
