/*
 * twin_matmul — samples/matmul.c's tiled kernel through hand-written Vulkan
 * and shaderc, with no hplvk at all: the baseline of what the library costs
 * (the same kernel, no library) and of what it saves writing (this file's
 * length against matmul.c's). One device, whole matrices.
 *
 *   twin_matmul [n [reps]]        n x n x n (default 256)
 *   twin_matmul M N K [reps]      C is M x N, A is M x K, B is K x N
 *
 * The device is the first discrete GPU, else the first integrated one, else
 * the first device. A and B go to device-local buffers through a staging
 * buffer; the kernel (matmul.c's, with explicit bindings and push constants
 * instead of the hplvk prelude, compiled by shaderc with the same tile
 * defines: 128 x 128 x 8, 8 x 8 per invocation, or MATMUL_TILES) runs once
 * to warm up, then `reps` times (default 3), each a submission of a
 * recorded dispatch timed with its fence wait; the best is reported as
 * GFLOP/s. C comes back through the staging buffer and is checked like
 * matmul's: |C - ref| <= (K + 2) * FLT_EPSILON * sum_k |A[i][k] B[k][j]|
 * against a double-precision host product, every element when M*N*K <=
 * 2^28, else every row at 64 columns.
 *
 * With HPLVK_VALIDATION=1 (as under ctest) it enables
 * VK_LAYER_KHRONOS_validation with synchronization validation; every
 * message the layer sends is printed and fails the run.
 */
#define _POSIX_C_SOURCE 199309L
#include <shaderc/shaderc.h>
#include <vulkan/vulkan.h>

#include <float.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NAME "twin_matmul"

/* matmul.c's kernel; the part's rows are all of C's (row_end = M), and the
 * vec4 views are second declarations of the same bindings. */
static const char *kernel_src =
    "#version 450\n"
    "#extension GL_EXT_control_flow_attributes : require\n"
    "#define THREADS ((MM_BM / MM_TM) * (MM_BN / MM_TN))\n"
    "#define LY (THREADS / MM_BM)\n"
    "#define AS4 (MM_BM / 4 + 1)\n"
    "#define BS4 (MM_BN / 4)\n"
    "#define RM (MM_TM / 4)\n"
    "#define RN (MM_TN / 4)\n"
    "#define LA (MM_BM * MM_BK / 4 / THREADS)\n"
    "#define LB (MM_BK * MM_BN / 4 / THREADS)\n"
    "layout(local_size_x = MM_BM, local_size_y = LY) in;\n"
    "layout(set = 0, binding = 0) readonly buffer A { float a[]; };\n"
    "layout(set = 0, binding = 0) readonly buffer A4 { vec4 a4[]; };\n"
    "layout(set = 0, binding = 1) readonly buffer B { float b[]; };\n"
    "layout(set = 0, binding = 1) readonly buffer B4 { vec4 b4[]; };\n"
    "layout(set = 0, binding = 2) writeonly buffer C { float c[]; };\n"
    "layout(set = 0, binding = 2) writeonly buffer C4 { vec4 c4[]; };\n"
    "layout(push_constant) uniform Sizes { uint M, N, K; };\n"
    "shared vec4 tile_a[MM_BK * AS4];\n"
    "shared vec4 tile_b[MM_BK * BS4];\n"
    "vec4 load_a(uint i, uint k) {\n"
    "    if (i >= M || k >= K) return vec4(0.0);\n"
    "    if (K % 4u == 0u) return a4[(i * K + k) / 4u];\n"
    "    vec4 r = vec4(0.0);\n"
    "    [[unroll]] for (uint t = 0u; t < 4u; t++) if (k + t < K) r[t] = a[i * K + k + t];\n"
    "    return r;\n"
    "}\n"
    "vec4 load_b(uint k, uint j) {\n"
    "    if (k >= K || j >= N) return vec4(0.0);\n"
    "    if (N % 4u == 0u) return b4[(k * N + j) / 4u];\n"
    "    vec4 r = vec4(0.0);\n"
    "    [[unroll]] for (uint t = 0u; t < 4u; t++) if (j + t < N) r[t] = b[k * N + j + t];\n"
    "    return r;\n"
    "}\n"
    "void load_tiles(uint row0, uint col0, uint k0, out vec4 pa[LA], out vec4 pb[LB]) {\n"
    "    uint tid = gl_LocalInvocationIndex;\n"
    "    [[unroll]] for (uint l = 0u; l < LA; l++) {\n"
    "        uint v = tid + l * THREADS;\n"
    "        pa[l] = load_a(row0 + v / (MM_BK / 4), k0 + (v % (MM_BK / 4)) * 4u);\n"
    "    }\n"
    "    [[unroll]] for (uint l = 0u; l < LB; l++) {\n"
    "        uint v = tid + l * THREADS;\n"
    "        pb[l] = load_b(k0 + v / BS4, col0 + (v % BS4) * 4u);\n"
    "    }\n"
    "}\n"
    "void store_tiles(vec4 pa[LA], vec4 pb[LB]) {\n"
    "    uint tid = gl_LocalInvocationIndex;\n"
    "    [[unroll]] for (uint l = 0u; l < LA; l++) {\n"
    "        uint v = tid + l * THREADS, i = v / (MM_BK / 4), k = (v % (MM_BK / 4)) * 4u;\n"
    "        [[unroll]] for (uint q = 0u; q < 4u; q++) tile_a[(k + q) * AS4 + i / 4u][i % 4u] = pa[l][q];\n"
    "    }\n"
    "    [[unroll]] for (uint l = 0u; l < LB; l++) tile_b[gl_LocalInvocationIndex + l * THREADS] = pb[l];\n"
    "}\n"
    "void store_c(uint i, uint j, vec4 v) {\n"
    "    if (i >= M || j >= N) return;\n"
    "    if (N % 4u == 0u) { c4[(i * N + j) / 4u] = v; return; }\n"
    "    [[unroll]] for (uint t = 0u; t < 4u; t++) if (j + t < N) c[i * N + j + t] = v[t];\n"
    "}\n"
    "void main() {\n"
    "    uint tid = gl_LocalInvocationIndex;\n"
    "    uint trow = tid / (MM_BN / MM_TN), tcol = tid % (MM_BN / MM_TN);\n"
    "    uint row0 = gl_WorkGroupID.x * MM_BM, col0 = gl_WorkGroupID.y * MM_BN;\n"
    "    vec4 acc[MM_TM][RN];\n"
    "    [[unroll]] for (uint m = 0u; m < MM_TM; m++)\n"
    "        [[unroll]] for (uint n = 0u; n < RN; n++) acc[m][n] = vec4(0.0);\n"
    "    vec4 pa[LA], pb[LB];\n"
    "    load_tiles(row0, col0, 0u, pa, pb);\n"
    "    for (uint k0 = 0u; k0 < K; k0 += MM_BK) {\n"
    "        barrier();\n"
    "        store_tiles(pa, pb);\n"
    "        barrier();\n"
    "        if (k0 + MM_BK < K) load_tiles(row0, col0, k0 + MM_BK, pa, pb);\n"
    "        [[unroll]] for (uint kk = 0u; kk < MM_BK; kk++) {\n"
    "            vec4 av[RM], bv[RN];\n"
    "            [[unroll]] for (uint r = 0u; r < RM; r++) av[r] = tile_a[kk * AS4 + r * (MM_BM / MM_TM) + trow];\n"
    "            [[unroll]] for (uint n = 0u; n < RN; n++) bv[n] = tile_b[kk * BS4 + n * (MM_BN / MM_TN) + tcol];\n"
    "            [[unroll]] for (uint r = 0u; r < RM; r++)\n"
    "                [[unroll]] for (uint q = 0u; q < 4u; q++)\n"
    "                    [[unroll]] for (uint n = 0u; n < RN; n++) acc[r * 4u + q][n] += av[r][q] * bv[n];\n"
    "        }\n"
    "    }\n"
    "    [[unroll]] for (uint r = 0u; r < RM; r++)\n"
    "        [[unroll]] for (uint q = 0u; q < 4u; q++)\n"
    "            [[unroll]] for (uint n = 0u; n < RN; n++)\n"
    "                store_c(row0 + (r * (MM_BM / MM_TM) + trow) * 4u + q, col0 + (n * (MM_BN / MM_TN) + tcol) * 4u,\n"
    "                        acc[r * 4u + q][n]);\n"
    "}\n";

/* In functions returning bool: report a failing Vulkan call, return false. */
#define VK_TRY(call)                                                                                         \
    do {                                                                                                     \
        VkResult vr_ = (call);                                                                               \
        if (vr_ != VK_SUCCESS) {                                                                             \
            fprintf(stderr, NAME ": %s failed: VkResult %d\n", #call, (int)vr_);                             \
            return false;                                                                                    \
        }                                                                                                    \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- sizes, tiles, host data, the check ------------------------------- */

typedef struct mm_size {
    uint32_t m, n, k;
} mm_size;

typedef struct mm_tiles {
    unsigned bm, bn, bk, tm, tn;
} mm_tiles;

static unsigned tiles_threads(mm_tiles t) { return (t.bm / t.tm) * (t.bn / t.tn); }

/* matmul.c's rules for tile sets. */
static bool tiles_valid(mm_tiles t, uint32_t max_invocations)
{
    if (!t.bm || !t.bn || !t.bk || !t.tm || !t.tn || t.tm % 4 || t.tn % 4 || t.bk % 4 || t.bm % t.tm ||
        t.bn % t.tn || t.bm % 4)
        return false;
    unsigned threads = tiles_threads(t);
    return threads % t.bm == 0 && threads <= max_invocations && (t.bm * t.bk / 4) % threads == 0 &&
           (t.bk * t.bn / 4) % threads == 0;
}

/* matmul.c's choice: MATMUL_TILES, else 128 x 128 x 8 of 8 x 8, else (a
 * device allowing fewer than 256 invocations) 64 x 64 x 8 of 8 x 8. */
static bool choose_tiles(uint32_t max_invocations, mm_tiles *out)
{
    const mm_tiles default_tiles = {128, 128, 8, 8, 8}, small_tiles = {64, 64, 8, 8, 8};
    const char *env = getenv("MATMUL_TILES");
    if (env && *env) {
        if (sscanf(env, "%u,%u,%u,%u,%u", &out->bm, &out->bn, &out->bk, &out->tm, &out->tn) != 5 ||
            !tiles_valid(*out, max_invocations)) {
            fprintf(stderr, NAME ": MATMUL_TILES=\"%s\" is not a valid BM,BN,BK,TM,TN\n", env);
            return false;
        }
    } else {
        *out = tiles_valid(default_tiles, max_invocations) ? default_tiles : small_tiles;
    }
    printf("tiles: BM %u BN %u BK %u, TM %u TN %u (%u invocations per work-group)\n", out->bm, out->bn, out->bk,
           out->tm, out->tn, tiles_threads(*out));
    return true;
}

/* matmul.c's inputs: fixed-seed values in [-1, 1). */
static void fill_random(float *x, uint64_t count, uint32_t seed)
{
    for (uint64_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

static double absd(double x) { return x < 0.0 ? -x : x; }

static double element_error(const float *a, const float *b, const float *c, mm_size sz, uint64_t i, uint64_t j,
                            double *ref)
{
    double mag = 0.0;
    *ref = 0.0;
    for (uint64_t k = 0; k < sz.k; k++) {
        double prod = (double)a[i * sz.k + k] * (double)b[k * sz.n + j];
        *ref += prod;
        mag += absd(prod);
    }
    return absd((double)c[i * sz.n + j] - *ref) / (mag > 0.0 ? mag : 1.0);
}

static bool check_product(const float *a, const float *b, const float *c, mm_size sz)
{
    const bool full = (double)sz.m * (double)sz.n * (double)sz.k <= (double)(1u << 28);
    const uint64_t col_step = full || sz.n <= 64 ? 1 : sz.n / 64;
    const double tol = (double)(sz.k + 2) * FLT_EPSILON;
    uint64_t bad = 0, checked = 0;
    double worst = 0.0, ref;
    for (uint64_t i = 0; i < sz.m; i++)
        for (uint64_t j = 0; j < sz.n; j += col_step, checked++) {
            double err = element_error(a, b, c, sz, i, j, &ref);
            worst = err > worst ? err : worst;
            if (!(err <= tol) && bad++ < 5)
                fprintf(stderr, NAME ": C[%" PRIu64 "][%" PRIu64 "] = %.8g, expected %.8g\n", i, j,
                        (double)c[i * sz.n + j], ref);
        }
    fprintf(stderr, NAME ": checked %" PRIu64 " elements, worst relative error %.3g (tolerance %.3g), %" PRIu64
                         " wrong\n",
            checked, worst, tol, bad);
    return bad == 0;
}

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
    fprintf(stderr, NAME ": validation layer: %s\n", data->pMessage);
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
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = NAME,
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
        fprintf(stderr, NAME ": vkCreateDebugUtilsMessengerEXT missing\n");
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
        fprintf(stderr, NAME ": no Vulkan device (VkResult %d)\n", (int)vr);
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
        fprintf(stderr, NAME ": %s has no compute queue\n", vk->props.deviceName);
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
    fprintf(stderr, NAME ": no memory type with flags 0x%x\n", (unsigned)fallback);
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

/* The kernel's SPIR-V, compiled with the tile defines. */
static bool compile_kernel(mm_tiles t, shaderc_compilation_result_t *out)
{
    shaderc_compiler_t compiler = shaderc_compiler_initialize();
    shaderc_compile_options_t opts = shaderc_compile_options_initialize();
    if (!compiler || !opts) {
        fprintf(stderr, NAME ": shaderc could not start\n");
        shaderc_compile_options_release(opts);
        shaderc_compiler_release(compiler);
        return false;
    }
    shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
    const char *names[] = {"MM_BM", "MM_BN", "MM_BK", "MM_TM", "MM_TN"};
    const unsigned values[] = {t.bm, t.bn, t.bk, t.tm, t.tn};
    for (int i = 0; i < 5; i++) {
        char value[16];
        snprintf(value, sizeof value, "%u", values[i]);
        shaderc_compile_options_add_macro_definition(opts, names[i], strlen(names[i]), value, strlen(value));
    }
    *out = shaderc_compile_into_spv(compiler, kernel_src, strlen(kernel_src), shaderc_compute_shader, NAME ".comp",
                                    "main", opts);
    shaderc_compile_options_release(opts);
    shaderc_compiler_release(compiler);
    if (shaderc_result_get_compilation_status(*out) != shaderc_compilation_status_success) {
        fprintf(stderr, NAME ": compile error: %s\n", shaderc_result_get_error_message(*out));
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
    double t0 = now_ms();
    VK_TRY(vkQueueSubmit(vk->queue, 1, &si, vk->fence));
    VK_TRY(vkWaitForFences(vk->device, 1, &vk->fence, VK_TRUE, UINT64_MAX));
    if (ms)
        *ms = now_ms() - t0;
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
    bool ok = (sz.m + t.bm - 1) / t.bm <= most[0] && (sz.n + t.bn - 1) / t.bn <= most[1];
    if (!ok)
        fprintf(stderr, NAME ": %" PRIu32 " x %" PRIu32 " needs more work-groups than %s allows\n", sz.m, sz.n,
                vk->props.deviceName);
    return ok;
}

/* Sets up the device, runs the warm-up and `reps` timed products, reads C. */
static bool run_vulkan(vk_state *vk, const float *a, const float *b, float *c, mm_size sz, int reps, double *best_ms)
{
    mm_tiles t;
    if (!create_instance(vk, validation_wanted()) || !pick_physical_device(vk) || !create_device(vk) ||
        !choose_tiles(vk->props.limits.maxComputeWorkGroupInvocations, &t) || !fits_device(vk, sz, t) ||
        !create_buffers(vk, sz) || !create_pipeline(vk, t) || !create_descriptor_set(vk) || !create_commands(vk) ||
        !upload(vk, vk->a.buffer, a, (VkDeviceSize)sz.m * sz.k * 4) ||
        !upload(vk, vk->b.buffer, b, (VkDeviceSize)sz.k * sz.n * 4))
        return false;
    for (int r = -1; r < reps; r++) {
        double ms;
        if (!run_product(vk, sz, t, &ms))
            return false;
        if (r == 0 || (r > 0 && ms < *best_ms))
            *best_ms = ms;
    }
    return download(vk, vk->c.buffer, c, (VkDeviceSize)sz.m * sz.n * 4);
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

/* matmul's arguments: [n [reps]] or M N K [reps]; each size below 2^32 and
 * every matrix's elements within the kernel's uint indexing. */
static bool parse_args(int argc, char **argv, mm_size *sz, int *reps)
{
    uint64_t v[4] = {0}, m = 256, n = 256, k = 256;
    *reps = 3;
    if (argc > 5)
        return false;
    for (int i = 1; i < argc; i++)
        v[i - 1] = strtoull(argv[i], NULL, 0);
    if (argc == 2 || argc == 3)
        m = n = k = v[0];
    if (argc == 4 || argc == 5)
        m = v[0], n = v[1], k = v[2];
    if (argc == 3 || argc == 5)
        *reps = v[argc - 2] > 1000000 ? 1000000 : (int)v[argc - 2];
    *sz = (mm_size){(uint32_t)m, (uint32_t)n, (uint32_t)k};
    return m && n && k && *reps > 0 && m * k <= UINT32_MAX && k * n <= UINT32_MAX && m * n <= UINT32_MAX;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    mm_size sz;
    int reps;
    if (!parse_args(argc, argv, &sz, &reps)) {
        fprintf(stderr, "usage: %s [n [reps]] | M N K [reps] (each matrix below 2^32 elements)\n", argv[0]);
        return 2;
    }
    float *a = malloc((size_t)sz.m * sz.k * 4), *b = malloc((size_t)sz.k * sz.n * 4),
          *c = malloc((size_t)sz.m * sz.n * 4);
    vk_state vk = {0};
    double best = 0.0;
    bool verified = false;
    if (a && b && c) {
        fill_random(a, (uint64_t)sz.m * sz.k, 12345u);
        fill_random(b, (uint64_t)sz.k * sz.n, 67890u);
        verified = run_vulkan(&vk, a, b, c, sz, reps, &best) && check_product(a, b, c, sz);
    } else {
        fprintf(stderr, NAME ": out of host memory\n");
    }
    char device[256] = "none";
    if (vk.physical)
        device_token(vk.props.deviceName, device, sizeof device);
    destroy_all(&vk);
    verified = verified && validation_messages == 0;
    free(a);
    free(b);
    free(c);
    double gflops = best > 0.0 ? 2.0 * (double)sz.m * (double)sz.n * (double)sz.k / (best * 1e-3) / 1e9 : 0.0;
    printf("RESULT name=twin_matmul devices=%s size=%" PRIu32 "x%" PRIu32 "x%" PRIu32
           " time_ms=%.3f rate=%.4gGFLOP/s verified=%s\n",
           device, sz.m, sz.n, sz.k, best, gflops, verified ? "yes" : "no");
    return verified ? 0 : 1;
}
