/*
 * hplvk.h — run one GLSL compute kernel on Vulkan devices (GPUs and the CPU
 * through Mesa's Lavapipe) with arrays that stay coherent across every device
 * memory and the host, without writing any Vulkan.
 *
 * This header is the manual. Chapters:
 *   1. Versions and errors        5. Kernels (host side)
 *   2. Contexts and threading     6. Kernels (GLSL side, <hplvk.glsl>),
 *   3. Devices                       6c. bounds checks
 *                                 7. eval: running a kernel
 *   4. Arrays, host access,       8. Environment variables
 *      subarrays, statistics      9. Traces
 *                                10. Contexts over ranks (MPI)
 * Vulkan interop (a context on the application's own VkDevices, and the
 * application's Vulkan work on arrays' buffers) is in <hplvk_vulkan.h>.
 *
 * A complete program:
 *
 *   hpl_context *ctx;
 *   hpl_context_create(&(hpl_context_desc){0}, &ctx);
 *   hpl_array a, b;
 *   hpl_array_create(ctx, &(hpl_array_desc){ .type = HPL_FLOAT32, .dims = {n} }, &a);
 *   hpl_array_create(ctx, &(hpl_array_desc){ .type = HPL_FLOAT32, .dims = {n} }, &b);
 *   float *pa;
 *   hpl_array_access(ctx, a, HPL_WRITE, (void **)&pa);     // fill a on the host
 *   for (size_t i = 0; i < n; i++) pa[i] = (float)i;
 *   hpl_kernel k;
 *   hpl_kernel_create(ctx, &(hpl_kernel_desc){ .source.glsl =
 *       "#include <hplvk.glsl>\n"
 *       "hpl_args { hpl_in(float, 1) a; hpl_out(float, 1) b; float s; };\n"
 *       "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = s * hpl_at(a, i); }\n" }, &k);
 *   hpl_eval(ctx, k, &(hpl_launch){0}, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_f32(2.0f)));
 *   const float *pb;
 *   hpl_array_access(ctx, b, HPL_READ, (void **)&pb);      // waits for the kernel
 *   hpl_context_destroy(ctx);
 *
 * Conventions: every function that can fail returns an int that is HPL_OK (0)
 * or a negative hpl_result; hpl_last_error() then holds a message naming the
 * problem. Description structs are zero-initialised and every zero field
 * means "the default". On failure a function leaves its out-parameters
 * untouched and the library state as it was, unless it says otherwise.
 */
#ifndef HPLVK_H
#define HPLVK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(HPLVK_BUILDING)
#define HPL_API __attribute__((visibility("default")))
#else
#define HPL_API
#endif

/* ======================================================================
 * 1. Versions and errors
 * ====================================================================== */

#define HPLVK_VERSION_MAJOR 0
#define HPLVK_VERSION_MINOR 2
#define HPLVK_VERSION_PATCH 0
/* Compare with HPLVK_MAKE_VERSION(0, 2, 0). */
#define HPLVK_MAKE_VERSION(major, minor, patch) (((major) << 16) | ((minor) << 8) | (patch))
#define HPLVK_VERSION HPLVK_MAKE_VERSION(HPLVK_VERSION_MAJOR, HPLVK_VERSION_MINOR, HPLVK_VERSION_PATCH)

/* The version of the library loaded at run time (HPLVK_VERSION of its build). */
HPL_API uint32_t hpl_version(void);

/* X(NAME, code, description): the one list of error codes. */
#define HPL_RESULT_LIST(X)                                                                 \
    X(OK, 0, "success")                                                                    \
    X(ERROR_INVALID_ARGUMENT, -1, "invalid argument")                                      \
    X(ERROR_INVALID_HANDLE, -2, "invalid or destroyed handle (use after free?)")          \
    X(ERROR_OUT_OF_HOST_MEMORY, -3, "out of host memory")                                  \
    X(ERROR_OUT_OF_DEVICE_MEMORY, -4, "out of device memory")                              \
    X(ERROR_NO_DEVICE, -5, "no usable Vulkan device")                                      \
    X(ERROR_UNKNOWN_DEVICE, -6, "unknown device")                                          \
    X(ERROR_DIMENSIONS, -7, "bad array dimensions")                                        \
    X(ERROR_COMPILE, -8, "kernel compile error")                                           \
    X(ERROR_KERNEL_SIGNATURE, -9, "kernel signature not supported")                        \
    X(ERROR_ARGUMENT_MISMATCH, -10, "kernel arguments do not match the kernel")            \
    X(ERROR_UNSUPPORTED, -11, "not supported by the device")                               \
    X(ERROR_IO, -12, "file could not be read or written")                                             \
    X(ERROR_DEVICE_LOST, -13, "device lost")                                               \
    X(ERROR_VULKAN, -14, "Vulkan call failed")                                             \
    X(ERROR_TOO_LARGE, -15, "too large for the device")                                    \
    X(ERROR_INTERNAL, -16, "internal error")                                               \
    X(ERROR_OUT_OF_RANGE, -17, "range outside the array")                                  \
    X(ERROR_KERNEL_OUT_OF_BOUNDS, -18, "a kernel accessed an element outside its part")   \
    X(ERROR_TRANSPORT, -19, "a message between ranks failed")                              \
    X(ERROR_RANKS_DIFFER, -20, "the ranks made different collective calls")

typedef enum hpl_result {
#define HPL__RESULT_ENUM(name, code, text) HPL_##name = code,
    HPL_RESULT_LIST(HPL__RESULT_ENUM)
#undef HPL__RESULT_ENUM
} hpl_result;

/* Static description of a code ("out of device memory"); never NULL. */
HPL_API const char *hpl_error_string(int code);
/* The code's name ("HPL_ERROR_OUT_OF_DEVICE_MEMORY"); never NULL. */
HPL_API const char *hpl_error_name(int code);
/* The message of the last failing call made by this thread, naming the
 * problem ("hpl_array_create: dims[1] is 0"). Thread-local; valid until the
 * thread's next failing call. "" when no call failed yet. */
HPL_API const char *hpl_last_error(void);

/* ======================================================================
 * 2. Contexts and threading
 * ======================================================================
 *
 * A context owns the opened devices and every object created in it. Two
 * contexts are independent: all they share is the counter that numbers
 * them and the table in which plan handles are looked up (chapter 7c).
 *
 * Threading contract: every function taking a context may be called from
 * several threads at once, except hpl_context_destroy, the context's last
 * call: no other call on it may be running or come after it. Calls on one
 * context are serialised internally; a call waiting for the devices (an
 * eval's check of writes outside owned boxes under validation, section 7b,
 * included) does not block the other threads' calls.
 * Host programs see sequential consistency in the order in which their calls
 * on the context return. A pointer returned by hpl_array_access() is valid
 * until the next call, from any thread, that touches that array (an eval that
 * takes it, another access, hpl_array_destroy). Two threads that use the same
 * array must order those uses themselves. hpl_last_error() is per thread.
 *
 * Each context runs a progress thread (cross-device waits) and, with
 * HPLVK_SUBMIT_THREAD=1 (chapter 8), a submit thread per device: a call
 * records a device's work and hands its submission over (vkQueueSubmit
 * costs ~4.5 us on NVIDIA's driver), so the submissions of a multi-device
 * step overlap each other and the recording of the next device's work.
 */

typedef struct hpl_context hpl_context;
struct hpl_vulkan_desc; /* <hplvk_vulkan.h> */

typedef enum hpl_log_level { HPL_LOG_DEBUG = 0, HPL_LOG_INFO, HPL_LOG_WARNING, HPL_LOG_ERROR } hpl_log_level;

/* Receives the library's warnings (an unwritable cache, say) and, with
 * validation on, every message of the validation layer. */
typedef void (*hpl_log_fn)(void *user, hpl_log_level level, const char *message);

typedef struct hpl_context_desc {
    /* Which devices to open, in order; HPLVK_DEVICES syntax (chapter 8).
     * NULL: the HPLVK_DEVICES environment variable, else the default: every
     * GPU, or the CPU device when there is no GPU. */
    const char *devices;
    /* Enable VK_LAYER_KHRONOS_validation with synchronization validation;
     * its messages go to `log` at level HPL_LOG_ERROR. Also turned on by
     * HPLVK_VALIDATION=1. */
    bool validation;
    /* NULL: messages of level WARNING and above go to stderr. */
    hpl_log_fn log;
    void *log_user;
    /* Directory for the SPIR-V and pipeline caches. NULL: HPLVK_CACHE_DIR,
     * else $XDG_CACHE_HOME/hplvk, else $HOME/.cache/hplvk. */
    const char *cache_dir;
    /* Do not read or write any cache on disk. Also HPLVK_CACHE_DIR="off". */
    bool no_disk_cache;
    /* Bytes of array storage each device may hold. When an allocation would
     * pass it, the least recently used buffers are evicted (their only valid
     * data saved to the host first). 0: HPLVK_DEVICE_MEMORY_LIMIT (chapter
     * 8; read only then), else the device's local heap. */
    uint64_t device_memory_limit;
    /* Zero-copy devices work on the host's copy of every array: no transfer
     * at all (hpl_device_info.zero_copy). Only a device that shares memory
     * with the host (the CPU, integrated GPUs) can be one.
     * HPL_ZERO_COPY_AUTO (0): such a device is zero-copy when its device list
     * entry says "+zc" ("cpu+zc,cpu:2": device 0 zero-copy, devices 1 and 2
     * with memories of their own), or when its physical device is opened
     * only once ("cpu"); the logical devices of a physical device opened
     * several times ("cpu:4") otherwise keep separate copies, which is their
     * purpose. Zero means AUTO unless HPLVK_ZERO_COPY=0/1 says OFF/ON. */
    int zero_copy; /* hpl_zero_copy */
    /* NULL: hplvk creates its own Vulkan instance and devices. Else the
     * application's VkInstance, VkDevices and queues, on which the context
     * is made (Vulkan interop: <hplvk_vulkan.h>, which declares struct
     * hpl_vulkan_desc and says what changes; `devices` must then be NULL). */
    const struct hpl_vulkan_desc *vulkan;
    /* Check every kernel's accesses on every device (chapter 6c), not only
     * on CPU and zero-copy devices. Also HPLVK_BOUNDS_CHECK=1, and always
     * under validation. */
    bool bounds_check;
    /* Operations (as hpl_device_stats.operations counts them) each device
     * may have recorded and not completed before a call that records more
     * waits (chapter 7, "Work in flight"), 1 to 65536. 0:
     * HPLVK_MAX_IN_FLIGHT (chapter 8), else 1024. */
    uint32_t max_in_flight;
} hpl_context_desc;

typedef enum hpl_zero_copy {
    HPL_ZERO_COPY_AUTO = 0,
    HPL_ZERO_COPY_ON = 1,  /* every device that shares memory with the host, replicas too */
    HPL_ZERO_COPY_OFF = 2, /* separate device copies everywhere; a "+zc" entry is then an error */
} hpl_zero_copy;

/* Creates a context and opens its devices. desc may be NULL (all defaults).
 * Fails with HPL_ERROR_NO_DEVICE when no device matches, with
 * HPL_ERROR_UNKNOWN_DEVICE when the device list names one that is not there,
 * and with HPL_ERROR_INVALID_ARGUMENT for a malformed device list (an empty
 * entry, a bad count or modifier), "+zc" on a device that cannot be
 * zero-copy or with zero copy OFF, max_in_flight over 65536, and a malformed
 * environment variable of chapter 8; the message names the entry or the
 * variable and its value.
 * With hpl_context_desc.vulkan, also with HPL_ERROR_INVALID_ARGUMENT for a
 * malformed description and HPL_ERROR_UNSUPPORTED for a device lacking what
 * hplvk needs (<hplvk_vulkan.h>, chapter V1). */
HPL_API int hpl_context_create(const hpl_context_desc *desc, hpl_context **out);
/* Waits for all work, destroys every array, kernel and plan still alive,
 * saves the pipeline caches and closes the devices. NULL is ignored. The
 * application joins (or otherwise stops) every thread using the context
 * first (chapter 2). A context made on the application's Vulkan objects
 * (hpl_context_desc.vulkan) destroys only hplvk's own objects on them, never
 * the instance, the devices or queues. A destroyed context is gone like
 * memory given to free(): any later call with the pointer is undefined
 * (nothing detects it), and so is destroying it while a call on it, or on
 * one of its plans or runners, runs in another thread. What it made stays
 * refused everywhere else: its array and kernel handles by every other
 * context (HPL_ERROR_INVALID_HANDLE, "another context"), its plans by every
 * plan call (HPL_ERROR_INVALID_HANDLE, "destroyed with its context"). */
HPL_API void hpl_context_destroy(hpl_context *ctx);
/* Waits until every eval and transfer submitted so far has completed.
 * Returns the first error that surfaced asynchronously since the last call
 * (device lost, out of memory in a lazy transfer), then forgets it. A device
 * that failed (lost, or the driver refused a submission) stays failed: every
 * later hpl_finish, eval on it and access to an array it holds fails with
 * HPL_ERROR_DEVICE_LOST, naming it. So does a device whose work waited for
 * the failed one's (its results would come from work that never ran): no
 * read returns such rows as computed. Whatever failed, every wait ends, and
 * a destroy still waits until no submitted work uses what it frees. Then
 * gives back what work no longer running held beyond a small reserve
 * (chapter 7, "Work in flight"). */
HPL_API int hpl_finish(hpl_context *ctx);

/* ======================================================================
 * 3. Devices
 * ======================================================================
 *
 * A context's devices are numbered 0..hpl_device_count()-1. Each is a logical
 * device: its own VkDevice with its own memory, a compute queue and, where the
 * hardware has one, a dedicated transfer queue. One physical device may be
 * opened as several logical devices (HPLVK_DEVICES=cpu:4); data between them
 * then really moves, through the host, as between separate GPUs. Separate
 * VkDevices of one GPU time-share it (a context switch each time the GPU
 * turns from one to another); with HPLVK_LOGICAL_DEVICES=queues they are
 * instead queues of one VkDevice, each with its own memory still, and run
 * side by side where the GPU's compute family has a queue for each
 * (hpl_device_info.shares_vkdevice; else, as on Lavapipe's one queue, each
 * has its own VkDevice). A device
 * that shares memory with the host may instead be zero-copy, working on the
 * host's copy of every array; "cpu+zc,cpu:2" mixes both on one CPU, as a
 * machine with an integrated GPU and discrete GPUs would
 * (hpl_context_desc.zero_copy).
 */

typedef enum hpl_device_type {
    HPL_DEVICE_CPU = 1 << 0,
    HPL_DEVICE_DISCRETE_GPU = 1 << 1,
    HPL_DEVICE_INTEGRATED_GPU = 1 << 2,
    HPL_DEVICE_VIRTUAL_GPU = 1 << 3,
    HPL_DEVICE_OTHER = 1 << 4,
    HPL_DEVICE_GPU = HPL_DEVICE_DISCRETE_GPU | HPL_DEVICE_INTEGRATED_GPU | HPL_DEVICE_VIRTUAL_GPU,
    HPL_DEVICE_ANY = 0x1f,
} hpl_device_type;

typedef enum hpl_queue_flags {
    HPL_QUEUE_GRAPHICS = 1 << 0,
    HPL_QUEUE_COMPUTE = 1 << 1,
    HPL_QUEUE_TRANSFER = 1 << 2,
} hpl_queue_flags;

#define HPL_MAX_HEAPS 16
#define HPL_MAX_QUEUE_FAMILIES 16

typedef struct hpl_device_info {
    char name[256];
    hpl_device_type type;
    uint32_t physical_index; /* index among the Vulkan physical devices */
    uint32_t replica;        /* which logical device of that physical one (0 for the first) */
    uint32_t vendor_id, device_id;
    uint32_t api_version;    /* VK_MAKE_API_VERSION encoding */
    uint32_t heap_count;
    struct {
        uint64_t size;
        bool device_local;
    } heaps[HPL_MAX_HEAPS];
    uint32_t queue_family_count;
    struct {
        uint32_t flags; /* hpl_queue_flags */
        uint32_t count;
    } queue_families[HPL_MAX_QUEUE_FAMILIES];
    bool dedicated_transfer_queue; /* a transfer-only queue was opened */
    uint64_t max_buffer_size;      /* largest single array on this device, bytes */
    uint32_t max_workgroup_invocations;
    uint32_t max_workgroup_count[3];
    uint32_t subgroup_size;
    /* 0, or about how many loop iterations an invocation of a kernel runs
     * before the driver ends its loops early, without a word: 65535 on
     * Lavapipe (llvmpipe), counting every loop of the invocation together
     * (a loop of 200000 runs 65535 and the kernel goes on with wrong
     * values; nesting loops does not help). A kernel for such a device
     * gives each invocation less work: more invocations, or several
     * evals. */
    uint32_t max_loop_iterations;
    bool float64, int64;           /* double / 64-bit integer arrays usable */
    bool host_import;              /* VK_EXT_external_memory_host: transfers DMA from host arrays
                                    * (else, or under HPLVK_HOST_IMPORT=0, they are staged:
                                    * hpl_device_stats.staged_bytes) */
    bool zero_copy;                /* kernels work on the host's copy (hpl_context_desc.zero_copy, "+zc") */
    bool bounds_checked;           /* its kernels' accesses are checked (chapter 6c): CPU and
                                    * zero-copy devices always, every device under validation,
                                    * hpl_context_desc.bounds_check or HPLVK_BOUNDS_CHECK=1 */
    bool shares_vkdevice;          /* on queues of a VkDevice that other logical devices of its physical
                                    * device use too (HPLVK_LOGICAL_DEVICES=queues, chapter 8) */
    uint64_t memory_limit;         /* bytes of arrays it may hold (hpl_context_desc.device_memory_limit) */
    int rank;                      /* the rank that opened it (a context over ranks, chapter 10); else 0 */
} hpl_device_info;

/* Number of devices opened in the context (at least 1); in a context over
 * ranks (chapter 10), every rank's, in rank order. */
HPL_API int hpl_device_count(hpl_context *ctx);
HPL_API int hpl_device_get_info(hpl_context *ctx, int device, hpl_device_info *out);
/* The index of the nth (0-based) opened device whose type is in type_mask,
 * or HPL_ERROR_UNKNOWN_DEVICE when there is none. */
HPL_API int hpl_device_find(hpl_context *ctx, uint32_t type_mask, int nth);
/* Every Vulkan physical device on the machine, opened or not. */
HPL_API int hpl_physical_device_count(hpl_context *ctx);
HPL_API int hpl_physical_device_get_info(hpl_context *ctx, int index, hpl_device_info *out);

/* ======================================================================
 * 4. Arrays and host access
 * ======================================================================
 *
 * An array has 1 to 3 dimensions, row-major, dimension 0 the slowest (the one
 * that multi-device partitioning splits). Behind it the library keeps copies
 * in the host and in any device that used it, and moves only what is missing,
 * only when it is needed: to a device when a kernel there reads it, to the
 * host when the host reads it. A write makes every other copy invalid. One
 * exception moves bytes earlier, never more of them in a loop: what other
 * devices read from a device goes to the host with that device's next
 * kernel that writes it (pushes, chapter 7b).
 *
 * Host storage is either the user's (desc.host) or the library's. The
 * library's is allocated on first need, page-aligned and zero-filled.
 * User storage must stay alive until hpl_array_destroy() returns, and the
 * user must touch it ONLY through hpl_array_access(): the library cannot see
 * plain writes, and devices may be reading it (DMA) or writing it at any
 * time between calls. Both kinds are imported into devices that support
 * VK_EXT_external_memory_host, so a transfer is one DMA.
 */

typedef enum hpl_type {
    HPL_TYPE_INVALID = 0,
    HPL_FLOAT32,
    HPL_FLOAT64,
    HPL_INT32,
    HPL_UINT32,
    HPL_INT64,
    HPL_UINT64,
    HPL_TYPE_COUNT_
} hpl_type;

/* Size in bytes of one element (0 for an invalid type). */
HPL_API size_t hpl_type_size(hpl_type type);
/* GLSL name of the type ("float", "int64_t"); "invalid" for an invalid one. */
HPL_API const char *hpl_type_name(hpl_type type);

/* Handles (hpl_array, hpl_kernel) are opaque 64-bit ids that belong to the
 * context that made them. Any call given a handle that is not live in its
 * context fails with HPL_ERROR_INVALID_HANDLE and changes nothing, and the
 * message says why: a zero-initialised handle (id 0 is never valid), a
 * handle of another context (alive or destroyed: no two contexts of one
 * process share handles), or a stale one (its object was destroyed; a
 * destroyed object's handle never becomes valid again). */
typedef struct hpl_array {
    uint64_t id;
} hpl_array;

typedef struct hpl_array_desc {
    hpl_type type;
    /* Extents; the number of dimensions is the number of leading non-zero
     * entries (dims = {n} is 1-D). dims[0] == 0, a zero followed by a
     * non-zero, or a total size that overflows is HPL_ERROR_DIMENSIONS. */
    uint64_t dims[3];
    /* User storage of dims[0]*dims[1]*dims[2] elements, or NULL. */
    void *host;
    /* Name used in messages; NULL: "array#<id>". Copied. */
    const char *name;
} hpl_array_desc;

typedef enum hpl_access {
    HPL_READ = 1,
    HPL_WRITE = 2,
    HPL_READ_WRITE = HPL_READ | HPL_WRITE,
} hpl_access;

HPL_API int hpl_array_create(hpl_context *ctx, const hpl_array_desc *desc, hpl_array *out);
/* Waits for pending work that uses the array (so user storage may be freed
 * right after), then releases the array's memory everywhere. */
HPL_API int hpl_array_destroy(hpl_context *ctx, hpl_array array);

typedef struct hpl_array_info {
    hpl_type type;
    int ndims;
    uint64_t dims[3];   /* unused dimensions are 1 */
    uint64_t count;     /* elements */
    uint64_t bytes;     /* count * element size (a subarray's own elements) */
    const char *name;   /* valid while the array lives */
    /* Subarrays (section 4b); for an array: parent and root are the array
     * itself, origin 0, owned the whole array. */
    bool is_subarray;
    hpl_array parent, root;
    uint64_t origin[3];         /* first element, in the root's coordinates */
    uint64_t owned_first[3];    /* owned box, inclusive, in the array's own */
    uint64_t owned_last[3];     /* coordinates (0 = its first element) */
    uint64_t owned_count;       /* elements in the owned box; 0 for a part that
                                 * misses its array's owned box (it owns
                                 * nothing; owned_first/last are then 0) */
    uint64_t host_stride[3];    /* element strides of the pointer hpl_array_access returns */
    bool contiguous;            /* its elements are one run in the root */
} hpl_array_info;
HPL_API int hpl_array_get_info(hpl_context *ctx, hpl_array array, hpl_array_info *out);

/* Host access: returns in *out a pointer to the array's first element in
 * host memory, valid until the next call that touches the array. Element
 * (i, j, k) is at p[i * host_stride[0] + j * host_stride[1] + k]; for an
 * array that is plain row-major order, for a subarray the strides are its
 * root's (hpl_array_info.host_stride).
 *   HPL_READ        waits until the newest data of the (sub)array is on the
 *                   host (only as long as that takes; only its own elements
 *                   move); devices keep their copies.
 *   HPL_WRITE       fetches nothing; waits only for device work still using
 *                   the host storage; the (sub)array's owned box counts as
 *                   written and every device copy of it becomes invalid.
 *   HPL_READ_WRITE  both.
 * A subarray with a ghost part (an owned box smaller than itself): HPL_WRITE
 * also brings the ghost part to the host, as context; write only the owned
 * box on the host.
 * Returns an error that surfaced asynchronously in work on this array (and
 * then forgets it); *out is left untouched then. */
HPL_API int hpl_array_access(hpl_context *ctx, hpl_array array, hpl_access mode, void **out);
/* Copies between the (sub)array and a dense row-major host buffer of `bytes`
 * (must equal hpl_array_info.bytes): host access plus a copy of each row. */
HPL_API int hpl_array_read(hpl_context *ctx, hpl_array array, void *dst, size_t bytes);
HPL_API int hpl_array_write(hpl_context *ctx, hpl_array array, const void *src, size_t bytes);
/* Waits until no submitted work reads or writes the array; returns (then
 * forgets) an asynchronous error of the array's work. */
HPL_API int hpl_array_wait(hpl_context *ctx, hpl_array array);

/* Hints. Neither is ever needed for correct results.
 * hpl_array_prefetch: starts bringing the newest data of the (sub)array to
 * device `where` (allocating its buffer there), or to the host with
 * HPL_ON_HOST, and returns without waiting for it (only past the bound on
 * work in flight, chapter 7): an eval there later finds it present, and the
 * copy overlaps whatever the caller does meanwhile. Ordered like an eval
 * that reads the array on that device.
 * hpl_array_discard: the (sub)array's owned elements become undefined in
 * every memory, at once: the next eval writing them fetches nothing, an
 * eviction saves nothing, and a read before any write sees unspecified
 * values. Work already submitted is unaffected. */
HPL_API int hpl_array_prefetch(hpl_context *ctx, hpl_array array, int where);
HPL_API int hpl_array_discard(hpl_context *ctx, hpl_array array);

/* Where fill and assignment run: a device index, or */
#define HPL_WHERE_LAST_USED (-1) /* where the destination was last used (HPL's whereLastUsage) */
#define HPL_ON_HOST (-2)         /* on the host, by the calling thread */

/* Sets every element of the (sub)array's owned box to *value (one element of
 * the array's type). On a device, asynchronously: that device's copy becomes
 * the only valid one. On the host, at once. */
HPL_API int hpl_array_fill(hpl_context *ctx, hpl_array array, const void *value, int where);
/* Assignment dst = src between (sub)arrays of the same element type and
 * extents, wherever their data is (HPL's a = b). Runs at `where`: on a
 * device it is a device-local copy, asynchronous like eval, fetching first
 * what of src is missing there; on the host it copies at once. dst's owned
 * box counts as written. src and dst may be parts of one array, but they
 * must not overlap (HPL_ERROR_INVALID_ARGUMENT). */
HPL_API int hpl_array_assign(hpl_context *ctx, hpl_array dst, hpl_array src, int where);

/* Reductions (HDArray's HDArrayReduce): *result (one element of the array's
 * type) = the sum, product, minimum or maximum of every element of the
 * (sub)array. Each device reduces the parts whose newest data it holds, the
 * host the rest, and the host combines: nothing moves but one partial value
 * per work-group. Waits for the result. Integer sums and products wrap
 * modulo 2^bits; float and double sums add in a different order than a loop
 * would (compensated, then pairwise, on devices; in double on the host):
 * expect an error of a few ulps times log2(count) relative to the sum of
 * magnitudes. With NaNs, min and max are unspecified. */
typedef enum hpl_reduction {
    HPL_REDUCE_SUM = 1,
    HPL_REDUCE_PRODUCT,
    HPL_REDUCE_MIN,
    HPL_REDUCE_MAX,
} hpl_reduction;
HPL_API int hpl_array_reduce(hpl_context *ctx, hpl_array array, hpl_reduction op, void *result);

/* ======================================================================
 * 4b. Subarrays
 * ======================================================================
 *
 * A subarray is a view of a box of an array: inclusive ranges per
 * dimension. It is not a copy: writing it changes its parent, and it goes
 * wherever an array goes (kernel argument, host access, fill, assignment).
 * A kernel sees it as a whole array of its own extents (index 0 at its
 * first element), through the strides of its parent (x.stride in GLSL), so
 * a column block costs no packing; x.origin is its place in the root.
 * Subarrays nest; their coordinates are always relative to their parent.
 *
 *   hpl_array rows, block;
 *   hpl_subarray(ctx, m, HPL_RANGES({10, 19}, HPL_ALL), &rows);   // rows 10..19
 *   hpl_subarray(ctx, m, HPL_RANGES(HPL_ALL, {0, 7}), &block);    // columns 0..7
 *
 * Asking again for the same box (and owned box) of the same parent returns
 * the same subarray. hpl_array_destroy of a subarray forgets the view and
 * the subarrays made from it (never their data: their handles become
 * invalid); destroying an array destroys its subarrays with it.
 *
 * Owned boxes and ghost regions. hplvk departs here from HPL on purpose. In
 * HPL, overlapping subarrays each keep their own possibly stale copy of the
 * overlap (the ghost region), refreshed by hand. In hplvk a subarray may be
 * created with an owned box (its interior): a write through it, by a kernel
 * or an assignment, writes only the owned box, and the next read of the
 * rest (the ghost part) fetches it from wherever it is valid (another
 * device's owned box, say). Stencils then need no halo-exchange code: give
 * each part its interior as owned box.
 * Without an owned box the whole subarray counts as written, and two writes
 * whose boxes overlap are ordered in program order: never lost.
 *
 * Writes into the ghost part. A kernel that writes only the owned box
 * (x.owned_lo .. x.owned_hi, chapter 6) gives the same result on every
 * device list. A ghost element a kernel writes holds afterwards either the
 * value it had before the eval or the value written, on every kind of
 * device; which one is unspecified. (The write is discarded where the
 * library holds a valid copy of the element in another memory: always on a
 * device with memory of its own; a zero-copy device, chapter 3, writes the
 * host's copy, so there it stays where that copy was the only one.) Either
 * way it is one value: every later read sees the same, through the array
 * or any subarray, on the host or on a device, with or without hpl_finish
 * before it, and the kernel never overwrites a later write of the element.
 * Validation does not report such writes. It does report a subkernel of a
 * multi-device eval that writes a neighbour's elements (section 7b), which
 * the neighbour writes in the same eval; a kernel that writes only at its
 * own position never does (each subkernel runs over the part it owns).
 *
 * hpl_array_write of a subarray with a ghost part stores only the owned
 * box: the ghost elements of the source buffer are ignored (they are the
 * neighbours').
 *
 * Placement. On a device, a subarray lives inside a buffer of its root
 * already there (bound at an offset), else gets a buffer of its own box.
 * Data moves per region: only the missing elements of the box an access
 * needs, from the cheapest memory holding them (another buffer on the same
 * device, then the host, then another device through the host).
 */

/* Inclusive range of indices of one dimension. */
typedef struct hpl_range {
    uint64_t first, last;
} hpl_range;
#define HPL_END UINT64_MAX    /* as `last`: the parent's last index */
#define HPL_ALL {0, HPL_END}  /* the whole dimension */
/* HPL_RANGES({2, 5}, HPL_ALL) expands to the (count, ranges) parameters. */
#define HPL_RANGES(...) \
    (int)(sizeof((hpl_range[]){__VA_ARGS__}) / sizeof(hpl_range)), ((const hpl_range[]){__VA_ARGS__})

/* The subarray of `parent` given by one range per dimension of the parent
 * (nranges must equal its number of dimensions: HPL_ERROR_DIMENSIONS). A
 * range outside the parent, or with first > last, is HPL_ERROR_OUT_OF_RANGE.
 * The subarray has the parent's number of dimensions and element type. */
HPL_API int hpl_subarray(hpl_context *ctx, hpl_array parent, int nranges, const hpl_range *ranges, hpl_array *out);
/* Same, with an owned box: `owned` gives nranges inclusive ranges in the
 * parent's coordinates, inside `ranges` (HPL_ERROR_OUT_OF_RANGE otherwise). */
HPL_API int hpl_subarray_owned(hpl_context *ctx, hpl_array parent, int nranges, const hpl_range *ranges,
                               const hpl_range *owned, hpl_array *out);
/* The subarrays the user created directly in `parent` and has not destroyed,
 * in creation order (HPL's getSubarray(i)); a part of a multi-device eval
 * is listed once hpl_array_part() has returned it. */
HPL_API int hpl_subarray_count(hpl_context *ctx, hpl_array parent);
HPL_API int hpl_subarray_get(hpl_context *ctx, hpl_array parent, int index, hpl_array *out);

/* ======================================================================
 * 4c. Statistics
 * ======================================================================
 *
 * What the coherence engine moved, per device, since the context was made
 * or the last hpl_stats_reset(). A copy between two devices counts as
 * to_host on the source and to_device on the destination (it goes through
 * the host); a large one moves in chunks (HPLVK_EXCHANGE_CHUNK, chapter 8),
 * each a copy and an operation of its own on both devices. Zero-copy
 * devices move nothing. */

typedef struct hpl_device_stats {
    uint64_t to_device_bytes, to_device_count; /* host -> device */
    uint64_t to_host_bytes, to_host_count;     /* device -> host (reads, pushes, saves before eviction) */
    uint64_t local_bytes, local_count;         /* within the device (between buffers, assignment) */
    uint64_t evictions, evicted_bytes;         /* buffers freed to make room */
    uint64_t resident_bytes, peak_bytes;       /* array storage held now, and at most */
    uint64_t operations;  /* kernels, copy groups and assignments recorded for the device */
    uint64_t submissions; /* compute queue submissions carrying them: operations recorded
                           * with no host wait between them share submissions (batching) */
    uint64_t transfer_submissions; /* copies between the host and the device submitted on
                                    * its dedicated transfer queue, overlapping kernels:
                                    * uploads of 4 MiB or more per operation, downloads of
                                    * 4 MiB or more (HPLVK_TRANSFER_LANE) */
    uint64_t copy_kernels; /* boxes of those transfers (and of assignments) moved by the
                            * copy kernel rather than as one copy region per contiguous
                            * run: boxes of many short runs (HPLVK_STRIDED_COPY) */
    uint64_t staged_bytes; /* of to_device/to_host_bytes, those copied through staging
                            * slots, chunk by chunk, because the device could not import
                            * the host storage (no VK_EXT_external_memory_host, a pointer
                            * the driver refuses, a file mapping, or HPLVK_HOST_IMPORT=0): slower than
                            * one DMA, still overlapping memcpy and DMA */
    uint64_t stray_invocations; /* kernel invocations that accessed elements outside the part
                                 * they were given, stopped by bounds checks (chapter 6c) */
} hpl_device_stats;

typedef struct hpl_stats {
    int device_count;
    hpl_device_stats device[16];
    hpl_device_stats total; /* sums (resident/peak: sums of the devices') */
    /* A context over ranks (chapter 10): bytes and boxes this rank sent to
     * and received from the other ranks (array elements only; device[]
     * counts this rank's own devices, numbered from 0). */
    uint64_t rank_sent_bytes, rank_sent_count;
    uint64_t rank_received_bytes, rank_received_count;
} hpl_stats;

HPL_API int hpl_stats_get(hpl_context *ctx, hpl_stats *out);
/* Zeroes the counters (resident_bytes stays; peak restarts from it). */
HPL_API int hpl_stats_reset(hpl_context *ctx);

/* ======================================================================
 * 5. Kernels (host side)
 * ======================================================================
 *
 * A kernel is a GLSL compute shader (text or file) or SPIR-V words. GLSL is
 * compiled with shaderc; a missing #version means "#version 460". Compiled
 * SPIR-V and pipelines are cached on disk (chapter 8), so the second run of a
 * program compiles nothing.
 *
 * Arguments are learned from the SPIR-V: the members of the `hpl_args` block
 * in declaration order (chapter 6). Arrays carry their element type, number
 * of dimensions and access (read-only, write-only, read-write from the
 * NonWritable/NonReadable decorations); scalars their type and offset. A
 * write-only array is not fetched before the kernel runs (HPL's rule): the
 * kernel must write all of it — all of its owned box, for a subarray with
 * one and for each part of a multi-device eval (a subkernel writes the part
 * its device owns; the halo is the neighbours' and is refreshed from them). SPIR-V given directly follows the same ABI
 * (any compiler, as long as it declares the block as <hplvk.glsl> does).
 *
 * Variants: a kernel may carry other sources for some device types (a CPU
 * and a GPU version, as in the Controllers paper). Every variant must declare
 * the same arguments; eval picks the first variant whose device_types
 * includes the device's type, the generic source otherwise.
 *
 * Kernels are untrusted input. Every module (SPIR-V words, a .spv file, a
 * cache entry, shaderc's own output) is validated before anything else reads
 * it: by SPIRV-Tools for Vulkan 1.2 (SPIR-V up to 1.5, relaxed block layout;
 * scalar block layout where the device has it), then by rules drivers rely
 * on: capabilities only those of compute kernels on the features hplvk
 * enables (Shader, Matrix, Float16/64, Int8/16/64, 8-bit storage, physical
 * storage buffer addresses, subgroup operations), alignments powers of two,
 * Uniform and push constant variables blocks, no logical pointers inside
 * structs or arrays, WorkgroupSize a uvec3, an entry point name in UTF-8. An
 * invalid module is HPL_ERROR_KERNEL_SIGNATURE with SPIRV-Tools' message and
 * the kernel's name. The argument block holds at most 16 KiB: an argument
 * that ends past byte 16384 is HPL_ERROR_KERNEL_SIGNATURE naming it. What
 * depends on the device is checked when a pipeline is made (at the first
 * eval on the device): the features the capabilities need
 * (HPL_ERROR_UNSUPPORTED), the argument block against maxUniformBufferRange
 * and shared variables against maxComputeSharedMemorySize
 * (HPL_ERROR_TOO_LARGE). Valid SPIR-V can still be more than a driver
 * handles (Mesa refuses some valid control flow): eval then fails with
 * HPL_ERROR_VULKAN naming the device.
 */

/* A kernel handle: an opaque 64-bit id of its context (see hpl_array). */
typedef struct hpl_kernel {
    uint64_t id;
} hpl_kernel;

typedef struct hpl_kernel_source {
    const char *glsl;          /* GLSL text, or */
    const char *path;          /* a GLSL file (.comp/.glsl) or a SPIR-V file (.spv), or */
    const uint32_t *spirv;     /* SPIR-V words */
    size_t spirv_words;
    /* Name used as the file name in compile errors; default: path or "kernel". */
    const char *name;
} hpl_kernel_source;

#define HPL_MAX_VARIANTS 4
typedef struct hpl_kernel_variant {
    uint32_t device_types; /* hpl_device_type mask; 0 ends the list */
    hpl_kernel_source source;
} hpl_kernel_variant;

typedef struct hpl_kernel_desc {
    hpl_kernel_source source;                  /* the generic version (required) */
    hpl_kernel_variant variants[HPL_MAX_VARIANTS];
    /* NULL-terminated "NAME" or "NAME=VALUE" strings for the preprocessor. */
    const char *const *defines;
    /* NULL-terminated directories searched by #include "file". A kernel read
     * from a file searches that file's directory first (the working directory
     * for a bare name such as "saxpy.comp"). */
    const char *const *include_dirs;
} hpl_kernel_desc;

/* Compiles (or loads from the cache) every variant and reflects its
 * arguments. A compile error is HPL_ERROR_COMPILE with "file:line: message"
 * in hpl_last_error(). */
HPL_API int hpl_kernel_create(hpl_context *ctx, const hpl_kernel_desc *desc, hpl_kernel *out);
HPL_API int hpl_kernel_destroy(hpl_context *ctx, hpl_kernel kernel);

typedef enum hpl_arg_kind { HPL_ARG_NONE = 0, HPL_ARG_ARRAY, HPL_ARG_SCALAR } hpl_arg_kind;

typedef struct hpl_arg_info {
    char name[64];
    hpl_arg_kind kind;
    hpl_type type;
    int ndims;          /* arrays */
    hpl_access access;  /* arrays: what the kernel does with it */
    uint32_t offset;    /* byte offset in the argument block */
} hpl_arg_info;

HPL_API int hpl_kernel_arg_count(hpl_context *ctx, hpl_kernel kernel);
HPL_API int hpl_kernel_get_arg_info(hpl_context *ctx, hpl_kernel kernel, int index, hpl_arg_info *out);
/* The local size the kernel declares (its layout(local_size_*) or 1,1,1), and
 * whether the library chooses it (the kernel declares none). A kernel built
 * on <hplvk.glsl> takes a launch.local other than its declared size; raw
 * SPIR-V with a fixed size does not. */
HPL_API int hpl_kernel_get_local_size(hpl_context *ctx, hpl_kernel kernel, uint32_t out[3], bool *choosable);

/* ======================================================================
 * 6. Kernels (GLSL side): #include <hplvk.glsl>
 * ======================================================================
 *
 *   #include <hplvk.glsl>
 *   hpl_args {                       // the arguments, in call order
 *       hpl_out(float, 2) c;         // write-only 2-D float array
 *       hpl_in(float, 2) a;          // read-only
 *       hpl_in(float, 2) b;
 *       hpl_inout(int, 1) hist;      // read-write 1-D int array
 *       int p;                       // scalars: one per declaration
 *   };
 *   void main() {
 *       uvec3 id = hpl_global_id;    // position in this eval's domain
 *       float s = 0.0;
 *       for (int k = 0; k < p; k++) s += hpl_at2(a, id.x, k) * hpl_at2(b, k, id.y);
 *       hpl_at2(c, id.x, id.y) = s;
 *   }
 *
 * Element types: float, double, int, uint, int64_t, uint64_t.
 * For an array argument x (an N-D array, N = 1..3), in the coordinates of
 * the argument as passed to hpl_eval (index 0 at its first element):
 *   hpl_at(x, i), hpl_at2(x, i, j), hpl_at3(x, i, j, k)   element (an lvalue)
 *   x.dims     extents (uint for 1-D, uvecN otherwise)
 *   x.stride   element strides per dimension (x.stride.x for dimension 0)
 *   x.origin   position of x's first element in its whole array (subarrays)
 *   x.p        a buffer reference to element x.part_lo (the first present
 *              on this device): element i is x.p.v[(i - x.part_lo) *
 *              x.stride] (what hpl_at computes; SPIR-V written without
 *              <hplvk.glsl> indexes the same way)
 *   x.part_lo, x.part_hi    the elements present on this device, half-open:
 *              all of x, or in a multi-device eval this device's part with
 *              its halo (section 7b); only these may be read
 *   x.owned_lo, x.owned_hi  the elements this device owns, half-open: all of
 *              x (its owned box for a subarray with one), or this device's
 *              part without the halo; only these may be written
 *   hpl_owns(x, i), hpl_owns2(x, i, j), hpl_owns3(x, i, j, k)   inside the owned box?
 *   hpl_part_at(x, i) .. hpl_part_at3, hpl_part_dims(x): HPL's part-local
 *              view, index 0 at x.part_lo, extents x.part_hi - x.part_lo
 * Launch geometry:
 *   hpl_global_id         (uvec3) position in the eval's whole domain
 *   hpl_global_size       (uvec3) the eval's whole domain
 *   hpl_domain_size       (uvec3) the same (what a one-device kernel sees)
 *   hpl_subkernel_offset  (uvec3) first position of this subkernel's box of
 *                         the domain (0 unless the eval is split over devices)
 *   hpl_subkernel_size    (uvec3) the size of that box
 *   hpl_dispatch_base     (uvec3) first invocation of this dispatch within
 *                         the box (big boxes run as several dispatches)
 * Math:
 *   double hpl_log_f64(double x)   the natural logarithm in double precision
 *                         (GLSL's log() takes float only): fdlibm's, within
 *                         1 ulp where the device's double arithmetic is IEEE
 *                         (0.83 ulp measured on Lavapipe, tests/test_log_f64.c);
 *                         log(+-0) = -Inf, log(x < 0) = NaN, subnormals
 *                         included. Needs shaderFloat64
 *                         (hpl_device_info.float64) only in kernels that call it.
 * So a kernel written for one device runs split unchanged: in a split eval
 * each subkernel runs over the positions its device owns, hpl_global_id
 * still names the whole domain's position, and x is indexed like the whole
 * array, halo reads included.
 * Invocations past the domain's edge never run the kernel: the prelude wraps
 * main() and returns early for them. A kernel that uses barrier() must not
 * let invocations leave early: #define HPL_NO_MASK before the #include and
 * test hpl_in_domain() itself.
 * Local size: declare none and the library chooses one from the device
 * (gl_WorkGroupSize still works): up to 256 invocations, up to 64 of them
 * along the domain's last dimension that extends (consecutive elements of
 * a row-major array, so a subgroup's reads coalesce): {2, 128} for a 2-D
 * domain, {256} for a 1-D one. Or declare layout(local_size_x = ...) in;
 * which the library then keeps unless the launch gives another.
 * Walk order: a GPU starts workgroups x first, and a dispatch whose x runs
 * down a grid's rows walks it column by column (3x slower on an H200 at
 * 3.6 GiB grids). So when the library chooses the local size, a 2-D or
 * 3-D domain whose last dimension has 32 or more positions is dispatched
 * with that dimension as the dispatch's x, and the local size swapped with
 * it: {128, 2} workgroups for a 2-D domain, whose subgroups read 32
 * consecutive elements of one row. hpl_global_id, hpl_in_domain and
 * hpl_at are unchanged: the kernel cannot tell, and the library makes
 * sure of it: a kernel that reads gl_LocalInvocationID,
 * gl_LocalInvocationIndex, gl_WorkGroupID, gl_NumWorkGroups or
 * gl_WorkGroupSize runs in the domain's order. Which invocations share a
 * subgroup is not promised either way.
 */

/* ======================================================================
 * 6c. Bounds checks: kernels that stray outside their part
 * ======================================================================
 *
 * A kernel may touch only the elements of each argument present on its
 * device: x.part_lo .. x.part_hi (all of x on one device; in a split eval
 * the device's part and its halo). A first port often strays: a symmetric
 * rank-k update with A split by rows also reads row j of A; a covariance
 * writing c[j][i] beside c[i][j] writes rows of other devices; a kernel
 * written for HPL's part-local indexing reads hpl_at(x, 0) as its part's
 * first row. Such an access would read or write memory that is not the
 * part's: another device's rows never fetched, another array's buffer, or,
 * on the CPU, the process's own heap.
 *
 * On a device that checks, hpl_at(), hpl_at2(), hpl_at3() (and the
 * hpl_part_at() forms, built on them) make no access outside the part: a
 * stray access goes to the part's first element instead (x.part_lo), so a
 * stray read gives that element and a stray write may overwrite it; nothing
 * outside the part is touched. Each invocation that strayed is counted,
 * and the next call that waits for the work (hpl_finish, a host access:
 * hpl_array_access, hpl_array_read, hpl_array_wait, a reduction) fails
 * with HPL_ERROR_KERNEL_OUT_OF_BOUNDS and a message naming the kernel and
 * the device and saying what to do (replicate the argument, widen its
 * halo, split another way, index like the whole array); under validation
 * it also names whether the kernel read or wrote, the argument (those of
 * the kernel's arguments it can be, by type, dimensions and access) and
 * its array, the element (in the argument's coordinates) and the part's
 * bounds. The
 * message is also logged at HPL_LOG_ERROR, and
 * hpl_device_stats.stray_invocations counts the invocations. The arrays
 * the kernel wrote then hold unspecified values; the context stays usable,
 * and each stray is reported once.
 *
 * Which devices check (hpl_device_info.bounds_checked):
 *   - CPU devices and zero-copy devices, always: their parts are the
 *     process's memory, which a stray write must never corrupt;
 *   - every device under validation (HPLVK_VALIDATION=1,
 *     hpl_context_desc.validation), with hpl_context_desc.bounds_check, or
 *     with HPLVK_BOUNDS_CHECK=1: a mode to leave on in production. It costs
 *     a compare and a select per access, measured per sample by
 *     samples/bench/bench_bounds.sh (figures in README, Benchmarks).
 * Elsewhere (a GPU, without those) the checks compile away and a stray
 * access is undefined: it may read or overwrite other arrays in that GPU's
 * memory (never the host's: such a GPU works on device memory of its own).
 * Checks cover accesses through hpl_at*; a kernel indexing x.p.v[] itself,
 * or SPIR-V not compiled with this <hplvk.glsl> (its specialization
 * constant hplvk_checks, id 1001), runs unchecked on every device. Index
 * expressions passed to hpl_at* are evaluated more than once: give them no
 * side effects.
 */

/* ======================================================================
 * 7. eval: running a kernel
 * ====================================================================== */

/* How an array argument is split over the devices of a multi-device eval
 * (section 7b); zero: not split (replicated on every device). */
typedef struct hpl_partition {
    bool on;
    int dim;         /* the dimension split: 0 is the first (rows of a 2-D array) */
    int64_t overlap; /* halo elements on each side of each part */
} hpl_partition;

typedef struct hpl_arg {
    hpl_arg_kind kind;
    hpl_type type; /* scalars */
    union {
        hpl_array array;
        float f32;
        double f64;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
    } value;
    hpl_partition part; /* arrays only */
} hpl_arg;

static inline hpl_arg hpl_arr(hpl_array a) { hpl_arg r = {HPL_ARG_ARRAY, HPL_TYPE_INVALID, {.array = a}, {0}}; return r; }
static inline hpl_arg hpl_f32(float v) { hpl_arg r = {HPL_ARG_SCALAR, HPL_FLOAT32, {.f32 = v}, {0}}; return r; }
static inline hpl_arg hpl_f64(double v) { hpl_arg r = {HPL_ARG_SCALAR, HPL_FLOAT64, {.f64 = v}, {0}}; return r; }
static inline hpl_arg hpl_i32(int32_t v) { hpl_arg r = {HPL_ARG_SCALAR, HPL_INT32, {.i32 = v}, {0}}; return r; }
static inline hpl_arg hpl_u32(uint32_t v) { hpl_arg r = {HPL_ARG_SCALAR, HPL_UINT32, {.u32 = v}, {0}}; return r; }
static inline hpl_arg hpl_i64(int64_t v) { hpl_arg r = {HPL_ARG_SCALAR, HPL_INT64, {.i64 = v}, {0}}; return r; }
static inline hpl_arg hpl_u64(uint64_t v) { hpl_arg r = {HPL_ARG_SCALAR, HPL_UINT64, {.u64 = v}, {0}}; return r; }
/* Annotations (HPL's PART1(a, k)): array a split along dimension dim into one
 * part per device, each part extended by `overlap` halo elements on each
 * side. */
static inline hpl_arg hpl_part(hpl_array a, int dim, int64_t overlap)
{
    hpl_arg r = hpl_arr(a);
    r.part.on = true;
    r.part.dim = dim;
    r.part.overlap = overlap;
    return r;
}
static inline hpl_arg hpl_part1(hpl_array a, int64_t overlap) { return hpl_part(a, 0, overlap); }

/* HPL_ARGS(a, b, c) expands to the two trailing parameters of hpl_eval. */
#define HPL_ARGS(...) ((const hpl_arg[]){__VA_ARGS__}), (sizeof((hpl_arg[]){__VA_ARGS__}) / sizeof(hpl_arg))

#define HPL_MAX_DEVICES 16 /* devices of one context, and of one eval */

/* One subkernel's domains in a multi-device eval; zeros take the defaults. */
typedef struct hpl_domain {
    uint64_t global[3];
    uint32_t local[3];
} hpl_domain;

typedef struct hpl_launch {
    /* Global domain; zeros: the first array argument's dimensions. In a
     * multi-device eval, the whole eval's domain (split as section 7b says). */
    uint64_t global[3];
    /* Local domain; zeros: the kernel's declared size, else the library's
     * choice for the device. In a multi-device eval, every subkernel's. */
    uint32_t local[3];
    /* Device index; 0 is the context's first device. */
    int device;
    /* Multi-device evals (section 7b): the devices to split the kernel over,
     * in part order, each at most once. device_count 0 with an annotated
     * argument: the default devices. */
    int devices[HPL_MAX_DEVICES];
    int device_count;
    /* Multi-device evals: NULL (an even split), or one share per device of
     * the eval (launch.devices, or the default devices), each finite and
     * >= 0, not all 0: the split dimension of the domain is cut in
     * proportion, on multiples of local[dim] when local is given. A device
     * whose part is empty runs nothing and is not a part (hpl_array_part).
     * Not with `domains`. */
    const double *shares;
    /* NULL, or one entry per device of the eval (in their order; an eval on
     * launch.device alone has one): that subkernel's own global and local
     * domains (HPL's vector modifiers);
     * global starts where the subkernel's part of the whole domain starts.
     * Domains are not checked against the arrays, on one device or several:
     * a kernel must not index past its arguments' x.dims. */
    const hpl_domain *domains;
    /* Multi-device evals of stencils: each device first runs the rows its
     * neighbours read as halos, then the rest, and the halos move while the
     * rest runs (section 7b, "Halos first"). The kernel promises that a row
     * writes only itself and reads at most the overlap away. Ignored on one
     * device, without an overlap, and with `domains`. */
    bool halos_first;
} hpl_launch;

/* Work in flight. A call that records work (hpl_eval, hpl_plan_eval,
 * hpl_array_fill, hpl_array_assign, hpl_array_prefetch) returns once it is
 * recorded, before the devices run it, so a program that never waits could
 * queue without end, and what queued work holds (command buffers, argument
 * blocks, the driver's recorded commands) with it. Each device may have
 * hpl_context_desc.max_in_flight operations recorded and not completed (1024
 * unless HPLVK_MAX_IN_FLIGHT says otherwise; operations as
 * hpl_device_stats.operations counts them: an eval is one per device it runs
 * on, and a move of data one on the device that copies): before such a call
 * records anything, while a device has that many or more, the calling thread
 * waits for that device's oldest work until it has fewer. The wait is a host
 * wait like hpl_array_wait's: it submits what it waits for, and other
 * threads may use the context meanwhile. A call never waits in the middle of
 * its own work: what it records itself may take a device past the bound (an
 * eval one operation per device it runs on, and one for each move of its
 * data). A device that failed is not waited for; one that fails during the
 * wait ends it, and the call fails with HPL_ERROR_DEVICE_LOST naming it,
 * having recorded nothing. 1 makes every call wait for all earlier work of
 * every device (for debugging). Deep enough to keep a GPU busy, the default
 * costs nothing to a program whose devices keep up. hpl_finish, once the
 * work is done, gives back what a burst of work grew beyond a small reserve
 * (command buffers, argument blocks, queues). */

/* Runs `kernel` over the launch's domain on its device, or split over
 * several (section 7b). Returns as soon as the work is recorded and
 * submitted: it waits for a device only past the bound on work in flight
 * (above). Data missing on the device moves there first; later evals and
 * host accesses wait only for what they need.
 * Arguments are checked against the kernel (count, kind, element type,
 * dimensions: HPL_ERROR_ARGUMENT_MISMATCH naming the argument); on any error
 * nothing runs and no array changes: an eval split over several devices
 * takes the memory all of its subkernels record with before the first
 * records. Two exceptions: subkernels that must run one after the other
 * (section 7b) and run out of host or device memory between them may leave
 * the eval run on some of its devices; and running out of host memory while
 * noting what a submitted kernel wrote (only where an array's valid parts
 * are more than a few boxes) leaves that array unknown. The arrays the eval
 * writes then hold unspecified values; every other array is as it was.
 * launch may be NULL (all defaults). */
HPL_API int hpl_eval(hpl_context *ctx, hpl_kernel kernel, const hpl_launch *launch, const hpl_arg *args,
                     size_t nargs);

/* ======================================================================
 * 7b. Several devices: subkernels by annotation
 * ======================================================================
 *
 * An eval whose launch lists devices, or that has an annotated argument,
 * runs one subkernel per device (HPL's subkernels, paper 000 section 3.2):
 *
 *   // C = A x B by rows on every default device (the paper's fig. 5)
 *   hpl_eval(ctx, mxproduct, NULL, HPL_ARGS(hpl_part1(c, 0), hpl_part1(a, 0), hpl_arr(b), hpl_i32(p)));
 *   // a stencil step on devices 0..3, one halo row on each side
 *   hpl_eval(ctx, life, &(hpl_launch){.devices = {0, 1, 2, 3}, .device_count = 4},
 *            HPL_ARGS(hpl_part1(in, 1), hpl_part1(out, 1)));
 *
 * Devices: launch.devices, or the default devices when device_count is 0:
 * the context's GPUs, or all its devices when it has no GPU.
 *
 * Parts: hpl_part(a, dim, k) splits a's dimension dim (n elements) over the
 * D devices into parts that differ by at most one element, the larger
 * first, in device order (n = 5, D = 4: 2, 1, 1, 1). When n < D, the last
 * D - n devices get no part and run nothing. Part i of every annotated
 * array goes to device i. Each part is extended by k halo elements on each
 * side, clamped at the array's edges; its owned box is the part without the
 * halo. Arrays not annotated are replicated (each subkernel sees the whole
 * array); a multi-device eval may not write one (it would be written by
 * every device: HPL_ERROR_INVALID_ARGUMENT). Scalars pass by value to every
 * subkernel and cannot be annotated.
 *
 * Domains: the whole domain is launch.global, else the first array
 * argument's extents. It is split along the first annotated argument's
 * dimension (dimension 0 when none is annotated) into parts like the
 * arrays', without overlap: each subkernel runs over the positions its
 * device owns, and hpl_global_id is the position in the whole domain.
 * Every annotated array must have as many elements along its split
 * dimension as the domain along the split one, so that parts line up
 * (HPL_ERROR_DIMENSIONS otherwise). launch.domains[i] gives subkernel i a
 * domain size of its own, starting where its part of the whole domain
 * starts.
 *
 * The kernel indexes each argument like the whole argument (chapter 6): the
 * single-device kernel is the multi-device kernel. x.part_lo .. x.part_hi
 * are the elements present on its device (its part with the halo) and
 * x.owned_lo .. x.owned_hi those it owns; hpl_part_at() gives HPL's
 * part-local view (index 0 at the part's first element, halo included).
 *
 * The rule for writes: a subkernel writes only the elements its device
 * owns. A write into the halo (a neighbour's elements) would be discarded
 * on a device with its own memory and race with the owner on a zero-copy
 * device, so results would depend on the device list; with validation on
 * (HPLVK_VALIDATION=1), such writes are reported as errors naming the
 * kernel, the array and the first element. A part of an owned subarray
 * that misses the subarray's owned box owns nothing (hpl_array_info's
 * owned_count 0).
 *
 * Halos refresh themselves: a subkernel's write makes only its owned box
 * valid. At the next read of a part, the halo elements another device wrote
 * are fetched, only those, from wherever they are valid. A stencil with
 * hpl_part1(in, 1), hpl_part1(out, 1), in and out swapped each step, needs
 * no exchange code, and per step only halo rows cross between devices
 * (HPL's fig. A.16 exchanges them by hand).
 *
 * Pushes. The rows other devices read from a device's memory (halo rows,
 * blocks another device read) are sent to the host by that device's next
 * kernel that writes them, in the same submission, right after the
 * kernel, instead of at the read: the reader's eval then finds them on the
 * host, and a stencil step is one submission per device, not two (the
 * download of step i's rows cannot join step i + 1's kernel, which waits
 * for the neighbour). What a device pushes is learned from the reads since
 * it last wrote those rows, and a write takes them out again: rows read
 * once and then only rewritten are pushed once. In a loop that reads what
 * the previous eval wrote, the same bytes move as without pushes, at the
 * write instead of at the read (a window counted by hpl_stats, chapter 4c,
 * sees them there). Not pushed: more than 8 MiB of one argument (that goes
 * device to device in pipelined chunks at the read), into host storage the
 * device cannot import, and anything with HPLVK_PUSH=0 (chapter 8). Plain
 * evals on one device of several push too.
 *
 * Subkernels that touch disjoint elements run concurrently on their
 * devices. If one subkernel writes elements another reads (an in-place
 * stencil), they run in device order, which a kernel must not rely on any
 * more than on the order of work-groups.
 *
 * Halos first (launch.halos_first). Without it, a device's kernel runs its
 * whole part, and the halo rows a neighbour needs for the next eval leave
 * only when it ends: on a fine grid that hop, not the kernels, sets the pace.
 * With it, each device runs its part in two submissions: first the bands
 * next to its neighbours (as many rows as the widest overlap of the
 * annotated arguments, w), then the interior between them. A neighbour's
 * copy of a band waits for the band alone, so the halos cross while the
 * interior runs; the next eval's bands wait for them, its interiors for
 * nothing from another device. The kernel promises what a stencil does:
 * the invocations of a row (position i along the split dimension) write
 * only element i of each split argument along it, and read at most that
 * argument's overlap away from i. A kernel that breaks it gets undefined
 * results. Each range runs as a subkernel of its own (hpl_subkernel_offset
 * and hpl_subkernel_size give its rows; hpl_global_id is unchanged), and
 * is a kernel of its own in the trace. The bands' submission also brings
 * in what the interior reads, so nothing the interior needs can fail once
 * the bands ran. A part of at most 2w rows (w at an edge) runs whole.
 * Evals that must run in device order (one subkernel writes what another
 * touches) run as without it.
 *
 * After an annotated eval, each part is a subarray (with the part's owned
 * box) that hpl_array_part() returns (HPL's getSubarray(i)); a host read of
 * the whole array gathers the parts lazily. A part becomes one of the
 * array's listed subarrays (hpl_subarray_count) the first time
 * hpl_array_part() returns it, once.
 */

/* The number of parts of `array` made by the last annotated eval that split
 * it (0: none has). */
HPL_API int hpl_array_part_count(hpl_context *ctx, hpl_array array);
/* Part `index` of that eval as a subarray (owned box: the part without its
 * halo), and the device it went to (device may be NULL). */
HPL_API int hpl_array_part(hpl_context *ctx, hpl_array array, int index, hpl_array *part, int *device);

/* ======================================================================
 * 7c. Execution plans: shares, partitioners, load balancing
 * ======================================================================
 *
 * A plan (HPL's ExecutionPlan, paper 000 section 3.3) says how an eval is
 * split over devices: which devices, the share of the work each gets, and
 * how the arguments follow (a partitioner). It can also find the shares
 * itself: a balancer times real runs on the user's data and keeps the
 * fastest distribution, or hands the work out in packages as devices
 * become free.
 *
 *   hpl_plan *plan;
 *   hpl_plan_create(ctx, &(hpl_plan_desc){.balance = HPL_BALANCE_ITERATIVE}, &plan);
 *   for (int step = 0; step < 100; step++)      // the first eval searches
 *       hpl_plan_eval(plan, kernel, NULL, HPL_ARGS(hpl_part1(out, 0), hpl_part1(in, 0), hpl_arr(b)));
 *   hpl_plan_destroy(plan);
 *
 * Devices: desc.devices, or every device of the context when device_count
 * is 0, the CPU included (plain annotated evals leave the CPU out when a GPU
 * is present; a plan is how the CPU joins them, with a share worth its
 * speed).
 *
 * The split. Dimension 0 of the eval's domain (launch.global, else the
 * first array argument's extents) is cut in proportion to the shares, on
 * multiples of launch.local[0] when the launch gives one; a device whose
 * part is empty runs nothing. Without a partitioner the arguments are split
 * like their annotations (section 7b), so an annotated eval becomes a plan
 * eval by changing the call. A partitioner is called once per device with
 * a part, with that part's ranges of the domain (ranges[0] is the part;
 * the other dimensions are whole; inclusive, like hpl_range) and the eval's
 * arguments, and runs the kernel on what the device needs:
 *
 *   // Game of Life (paper 000 fig. A.17): each device reads its rows and one
 *   // halo row above and below, and writes its rows.
 *   static int life_parts(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t n, void *user)
 *   {
 *       uint64_t lo = rg[0].first ? rg[0].first - 1 : 0, hi = rg[0].last + 1 < rows ? rg[0].last + 1 : rows - 1;
 *       hpl_array in, out;
 *       hpl_runner_subarray(r, args[0].value.array, HPL_RANGES({lo, hi}, HPL_ALL), &in);
 *       hpl_runner_subarray(r, args[1].value.array, HPL_RANGES({lo, hi}, HPL_ALL), &out);
 *       return hpl_runner_run(r, HPL_ARGS(hpl_arr(in), hpl_arr(out)));
 *   }
 *
 * A runner subarray is a part of its parent, like the parts of section 7b:
 * the kernel indexes it like the parent (the single-device kernel still
 * runs unchanged), reads only its box (x.part_lo .. x.part_hi), and owns
 * the rows of its box inside the runner's ranges[0] (x.owned_lo ..
 * x.owned_hi): what it writes outside them is not written, and the next
 * reader fetches those elements from their owner. So fig. A.17's
 * overlapping subarrays need no exchange loop. The runner runs the kernel
 * over its ranges of the whole domain (hpl_global_id is the position in
 * the whole domain). Arrays given to hpl_runner_run as they are (not runner
 * subarrays) are what they are: a whole array is replicated, a subarray
 * made with hpl_subarray is indexed from its own first element.
 *
 * Balancers (desc.balance; zero: the shares as given):
 *   EXHAUSTIVE   times every distribution on a grid of `step` (default 5%),
 *                zero shares included, each `reps` times (default 2; the
 *                minimum counts), and keeps the fastest; with three devices
 *                or more it then refines around the best. Over 3 or 4
 *                devices it times every point of a 1% grid near it. Over
 *                more, whose grids are too large (the coarse grid is
 *                widened to at most 6000 points: 1/7 for 8 devices), a
 *                compass search on a 0.1% grid moves work from device to
 *                device while that helps, halving the move down to 0.1%:
 *                a few hundred distributions more for 8 devices.
 *                Distributions that cut the rows (or work-groups) alike,
 *                many when there are few, run until their cut has `reps`
 *                timings; the others take its times without running.
 *   SINGLE_STEP  times the equal split once; shares proportional to the
 *                speed each device showed (HPL's fig. 7). One run.
 *   ITERATIVE    SINGLE_STEP, then while the slowest device takes (1 +
 *                delta) times the fastest (delta default 0.05), a new
 *                distribution from the times measured so far (HPL's fig. 8)
 *                is timed; at most max_iterations (default 10); the
 *                fastest distribution timed is kept.
 *   ADAPTIVE     never stops: each eval runs the distribution solved from
 *                the times of the eval before (CoreTSAR's adaptive
 *                schedule); a device slower than it is worth back_off
 *                evals in a row (default 2) is dropped until reset. Those
 *                times leave out what a split costs around the kernels
 *                (launches, halos, messages between ranks, waiting for
 *                the slowest), so evals 5 to 7 run the split's largest
 *                device alone, and if the host saw them (less the first,
 *                which moves the data) faster than evals 3 and 4, the
 *                others are dropped too (desc.keep_split leaves this
 *                check out). Its evals wait for their runs; once one
 *                device is left, each is a plain eval that returns at
 *                once.
 *   DYNAMIC      within each eval: packages of desc.package rows (default
 *                1/8 of an equal part) go to whichever device is free.
 *   HGUIDED      the same with packages that shrink as the work runs out,
 *                weighted by the device's nominal speed (paper 001).
 *   AUTO_TUNE    HGUIDED that switches to the measured speeds once every
 *                device has finished a package; CPU packages of at least one
 *                work-group per core, GPU packages of at least 5% of the
 *                work or enough groups to fill it. Without desc.shares (no
 *                nominal speeds) every package is its device's minimum
 *                until the speeds are measured.
 *   Beyond the papers, the package balancers learn across evals: the
 *   speeds one eval measured start the next eval of the same kernel over
 *   the same domain (until hpl_plan_reset), and a device does not take a
 *   package it would still be running when the others (at their known
 *   speeds) would have finished all that is left. A device far slower than
 *   the rest (a CPU beside a GPU) then costs one small package in the first
 *   eval; once the speeds say a single device is worth running, each eval
 *   is that device's alone, run as a plain eval that returns at once.
 *   Speeds in rows per second mislead where rows differ in cost (a slow
 *   device that timed itself on cheap rows takes dear ones), so a package
 *   plan's first eval (after creation or hpl_plan_reset) also checks the
 *   scheme against the device that ran the most rows alone, as below for
 *   the searches; if alone is faster, every later eval is that device's
 *   alone, until reset.
 * The searches (EXHAUSTIVE, SINGLE_STEP, ITERATIVE) run during the first
 * plan eval: every candidate is a real run of the eval, timed per device
 * with the device's timestamps, and later evals reuse the answer until
 * hpl_plan_reset. Then the answer and its largest device alone are timed
 * as the host sees them (launches, halos and waiting for the slowest
 * device included, which the per-device times leave out), in turns for a
 * few rounds (2 to 8, some 200 ms: a GPU idle through the search needs
 * load to regain its clocks), and the faster is kept: a plan is never
 * slower than that device alone, even where the work is too small to be
 * worth splitting (desc.keep_split leaves the check out: the papers'
 * schemes as published). The search's last run is the
 * answer's (run once more if need be): the data ends where the answer puts
 * it, as after any eval of the answer. The result stays one eval's:
 * arguments the kernel both reads and writes are saved before the search
 * and restored before each run after the first. desc.time_transfers times
 * each candidate with the copies it needs, from data on the host (each candidate starts with its
 * arguments on the host only, and its written arguments are copied back):
 * the case of a kernel whose data comes from and goes to the host every
 * time; otherwise only the kernels are timed (data that stays on the
 * devices between evals). Package balancers move data per package, lazily,
 * as evals do. A plan eval with a balancer waits for its runs (plain plan
 * evals, later evals of a finished search, and package and ADAPTIVE evals
 * left to one device return at once like hpl_eval).
 * Warm clocks. A GPU idles at low clocks and raises them only after being
 * busy a while: an H200 ran 190 ms of work 5.3x slower before it did, kept
 * its clocks through 1 s without work and lost them when busy 10% of the
 * time or less (samples/bench/bench_ramp). A search's runs wait for their slowest
 * device, so a GPU beside a CPU is busy a few percent of the time, and a
 * search that timed it so would see it 5-6x slower than it runs once the
 * answer keeps it busy, and give the CPU work to match (an EXHAUSTIVE
 * search on the H200 beside Lavapipe timed the GPU alone 4.9-5.6x slow). So
 * before a timed run that gives work to a GPU of the plan that is likely
 * cold (it ran no kernel in the second before the search, or never, or the
 * search kept it busy under 15% of the time for about a second:
 * lib/base/warmth.h), the search runs the eval with the work split evenly
 * over the GPUs, untimed, until 250 ms have passed (once at least). A
 * search that follows other work and keeps its GPUs busy warms nothing up.
 * desc.warm_up: which devices count (GPUs; none; every device);
 * hpl_plan_info.warm_ups and warm_up_ms say what it cost.
 *
 * Handles. An hpl_plan * or hpl_runner * is a value the library looks up
 * on every call, never the object's address (never dereference it). A
 * destroyed plan (hpl_plan_destroy, or with its context) is stale for good:
 * every call given it fails with HPL_ERROR_INVALID_HANDLE, the message
 * saying how it went, and hpl_plan_destroy given it again records that
 * error (hpl_last_error) and changes nothing. A runner is valid during the
 * partitioner call it is given to, and only then: kept and used after the
 * call returned, HPL_ERROR_INVALID_HANDLE. The plan functions may be called
 * from several threads, one eval or reset of a plan at a time: an eval or
 * reset of a plan in an eval (from its own partitioner, or from another
 * thread) fails with HPL_ERROR_INVALID_ARGUMENT. While a plan is in an
 * eval, its partitioner may call hpl_plan_get_info and hpl_plan_describe
 * on it; another thread may not. The plans of every context are looked up
 * in one table of the process, behind one mutex. */

typedef struct hpl_plan hpl_plan;
typedef struct hpl_runner hpl_runner;

typedef enum hpl_balance {
    HPL_BALANCE_NONE = 0, /* the shares as given (NULL: equal) */
    HPL_BALANCE_EXHAUSTIVE,
    HPL_BALANCE_SINGLE_STEP,
    HPL_BALANCE_ITERATIVE,
    HPL_BALANCE_ADAPTIVE,
    HPL_BALANCE_DYNAMIC,
    HPL_BALANCE_HGUIDED,
    HPL_BALANCE_AUTO_TUNE,
} hpl_balance;

/* Runs the kernel for one device's part through `runner`
 * (hpl_runner_subarray, hpl_runner_run); returns HPL_OK or the error of
 * what it called (the plan eval then fails with it, the message prefixed
 * "the partitioner"). An error code returned with no hplvk call of the
 * partitioner's thread failing is the eval's with a message saying so; a
 * value that is no hpl_result is HPL_ERROR_INVALID_ARGUMENT. */
typedef int (*hpl_partitioner)(hpl_runner *runner, const hpl_range ranges[3], const hpl_arg *args, size_t nargs,
                               void *user);

/* A search warms devices up (runs them without timing) before it times
 * them cold: see "Warm clocks" above. */
typedef enum hpl_warm_up {
    HPL_WARM_UP_GPUS = 0, /* GPUs (discrete, integrated, virtual) */
    HPL_WARM_UP_NONE,     /* none: every device timed as it comes (the papers' searches) */
    HPL_WARM_UP_ALL,      /* every device, CPUs too (whose cores also scale their clocks) */
} hpl_warm_up;

/* Zero fields take the defaults. */
typedef struct hpl_plan_desc {
    int devices[HPL_MAX_DEVICES]; /* in part order, each at most once */
    int device_count;             /* 0: every device of the context */
    const double *shares;         /* NULL: equal; else one per device, finite, >= 0, not all 0 (copied):
                                     the distribution (HPL_BALANCE_NONE), or HGUIDED's and AUTO_TUNE's
                                     nominal speeds; not with a search or ADAPTIVE */
    hpl_balance balance;
    double step;         /* EXHAUSTIVE grid: 0.05 */
    int reps;            /* searches: timings per distribution: 2 */
    double delta;        /* ITERATIVE stop, ADAPTIVE back-off margin: 0.05 */
    int max_iterations;  /* ITERATIVE: 10 */
    int back_off;        /* ADAPTIVE: 2 */
    double threshold;    /* SINGLE_STEP, ITERATIVE: seconds a device must save to be given work: 0 */
    uint64_t package;    /* DYNAMIC: rows per package, rounded up to whole work-groups; 0: 1/8 of an
                            equal part */
    bool time_transfers; /* searches: time the copies too, from data on the host */
    bool keep_split;     /* searches, package balancers, ADAPTIVE: no check against the largest device alone */
    hpl_warm_up warm_up; /* searches: which devices are warmed up before they are timed: GPUs */
    hpl_partitioner partitioner; /* NULL: split the arguments like their annotations */
    void *user;                  /* passed to the partitioner */
} hpl_plan_desc;

/* Makes a plan. HPL_ERROR_INVALID_ARGUMENT names a bad field (a device
 * listed twice, a share that is negative or not finite, shares with a
 * balancer, a parameter out of range); HPL_ERROR_UNKNOWN_DEVICE a device
 * that does not exist; HPL_ERROR_UNSUPPORTED when the process's table of
 * plans is full (some million plans alive at once). */
HPL_API int hpl_plan_create(hpl_context *ctx, const hpl_plan_desc *desc, hpl_plan **out);
/* A plan with plan's devices and current distribution (the shares it found,
 * as given shares, no balancer) and another partitioner (NULL: by
 * annotation): HPL's copy constructor, for another kernel over the same
 * data. */
HPL_API int hpl_plan_copy(hpl_plan *plan, hpl_partitioner partitioner, void *user, hpl_plan **out);
/* Frees the plan (not its evals' work); its handle is stale from then on.
 * NULL is ignored; a stale or never made plan records
 * HPL_ERROR_INVALID_HANDLE (hpl_last_error) and changes nothing. Called
 * during an eval of the plan (from its partitioner, say), the plan is
 * stale at once, the eval runs to its end and the plan is freed as it
 * returns. A context destroys the plans left on it. */
HPL_API void hpl_plan_destroy(hpl_plan *plan);
/* Runs kernel split as the plan says (searching first when its balancer
 * has not searched yet). launch gives global and local only: its device,
 * devices, shares and domains are the plan's (HPL_ERROR_INVALID_ARGUMENT).
 * Errors as hpl_eval's, a partitioner's own (hpl_partitioner), and
 * HPL_ERROR_INVALID_HANDLE for a stale plan. */
HPL_API int hpl_plan_eval(hpl_plan *plan, hpl_kernel kernel, const hpl_launch *launch, const hpl_arg *args,
                          size_t nargs);
/* Forgets the search's answer (the next eval searches again), and devices
 * ADAPTIVE dropped. */
HPL_API int hpl_plan_reset(hpl_plan *plan);

typedef struct hpl_plan_info {
    hpl_balance balance;
    int device_count;
    int devices[HPL_MAX_DEVICES];
    double shares[HPL_MAX_DEVICES]; /* the distribution the next eval uses (equal before a search) */
    bool searched;                  /* a search has ended (EXHAUSTIVE, SINGLE_STEP, ITERATIVE) */
    int distributions;              /* distinct distributions its search timed */
    int runs;                       /* timed runs its search made: distributions x reps, or fewer
                                       when distributions cut the rows alike (a cut timed reps
                                       times lends its times); ADAPTIVE: evals balanced */
    int iterations;                 /* ITERATIVE: model solves; ADAPTIVE: evals balanced */
    int warm_ups;                   /* times its search warmed devices up (desc.warm_up) */
    double warm_up_ms;              /* host time they took */
    /* The last plan eval: */
    bool in_use[HPL_MAX_DEVICES];   /* the device got work */
    hpl_range ranges[HPL_MAX_DEVICES][3]; /* its part of the domain (package balancers: its first package
                                             to its last); {1, 0} when not in use */
    uint64_t rows[HPL_MAX_DEVICES];       /* rows of dimension 0 it ran */
    int packages[HPL_MAX_DEVICES];        /* package balancers: packages it ran */
    double seconds[HPL_MAX_DEVICES];      /* device time measured (0: not timed: plain plan evals are not) */
} hpl_plan_info;

HPL_API int hpl_plan_get_info(hpl_plan *plan, hpl_plan_info *out);
/* One line: balancer, devices and shares, measured times, what the search
 * cost. Returns the length it needs, like snprintf; buf may be NULL when
 * size is 0. A finished search also puts this line in the trace (chapter
 * 9: a "plan" event on the host track). */
HPL_API int hpl_plan_describe(hpl_plan *plan, char *buf, size_t size);
HPL_API const char *hpl_balance_name(hpl_balance balance);

/* In a partitioner: the subarray `ranges` of parent (in the parent's
 * coordinates, HPL_END allowed) for the runner's device, owning the part of
 * it inside the runner's ranges[0] along dimension 0. The runner destroys
 * the subarrays it made after the run; one that is there already with the
 * same box and owned box (made with hpl_subarray, say) is returned, used
 * as the runner's, and left alive. Errors as hpl_subarray's, and
 * HPL_ERROR_INVALID_ARGUMENT past 16 subarrays for one runner. */
HPL_API int hpl_runner_subarray(hpl_runner *runner, hpl_array parent, int nranges, const hpl_range *ranges,
                                hpl_array *out);
/* Runs the kernel on the runner's device over its ranges with these
 * arguments (once per runner: HPL_ERROR_INVALID_ARGUMENT the second time;
 * annotations do not apply here). The three runner functions fail with
 * HPL_ERROR_INVALID_HANDLE once the runner's partitioner call returned. */
HPL_API int hpl_runner_run(hpl_runner *runner, const hpl_arg *args, size_t nargs);
/* The runner's device (a context device index), or a negative hpl_result. */
HPL_API int hpl_runner_device(const hpl_runner *runner);

/* ======================================================================
 * 8. Environment variables
 * ======================================================================
 *
 * HPLVK_DEVICES   comma-separated list of devices to open, in order (the
 *                 syntax of hpl_context_desc.devices too). Each entry is
 *                     SELECTOR[:COUNT][+zc]
 *                 SELECTOR: cpu (every CPU device), gpu (every GPU, discrete
 *                 ones first), cpuN / gpuN (the Nth, from 0), N (physical
 *                 device N), all (GPUs, then the rest).
 *                 :COUNT opens each selected physical device as COUNT
 *                 logical devices (1..16 in all), each with its own memory.
 *                 +zc makes the entry's devices zero-copy (they work on the
 *                 host's copy of every array; hpl_context_desc.zero_copy):
 *                 only for devices that share memory with the host, and not
 *                 with zero copy OFF (both errors name the entry).
 *                 Spaces around an entry are ignored; an empty entry (a
 *                 leading, trailing or doubled comma, or only spaces) is an
 *                 error. Unset or "": the default (every GPU, else the CPU).
 *                 Examples: "cpu:4", "gpu,cpu", "gpu1,gpu0", "cpu+zc,cpu:2"
 *                 (three logical devices on the CPU: device 0 zero-copy,
 *                 devices 1 and 2 with separate memories), "cpu+zc,gpu0:2".
 * HPLVK_VALIDATION=1   enable the validation layer (see hpl_context_desc).
 *                      "0" (unset or "": the default) leaves it to the
 *                      description; other values make hpl_context_create
 *                      fail.
 * HPLVK_BOUNDS_CHECK   1: check every kernel's accesses on every device
 *                      (chapter 6c); 0 or unset: on CPU and zero-copy
 *                      devices only (and every device under validation).
 * HPLVK_CACHE_DIR      cache directory; "off" disables the disk caches.
 *                      An entry that is corrupt is ignored with a warning;
 *                      one whose SPIR-V fails validation or reflection is
 *                      deleted with a warning naming the file, and the kernel
 *                      is compiled again (and the entry written again).
 * HPLVK_DEVICE_MEMORY_LIMIT   per-device limit of array storage, read when
 *                      hpl_context_desc.device_memory_limit is 0: digits,
 *                      then optionally K, M, G or T (powers of 1024, either
 *                      case, optionally followed by "iB" or "B"): "4096",
 *                      "64M", "1GiB". "0" means the device's heap. Anything
 *                      else (empty, negative, junk after the size, more than
 *                      2^64-1 bytes) makes hpl_context_create fail.
 * HPLVK_ZERO_COPY=0/1  zero copy off / on for every device sharing memory
 *                      with the host, when hpl_context_desc.zero_copy is
 *                      AUTO; other values make hpl_context_create fail.
 * HPLVK_EXCHANGE_CHUNK bytes per chunk of a transfer between two devices
 *                      (through the host: the source copies chunk k+1 out
 *                      while the destination copies chunk k in), same syntax
 *                      as HPLVK_DEVICE_MEMORY_LIMIT: transfers larger than
 *                      it go in chunks of that size; "0" never cuts them.
 *                      Unset: transfers of 8 MiB or more go in 8 or more
 *                      chunks of 2 to 16 MiB, except between two CPU
 *                      devices (whole). A malformed value makes
 *                      hpl_context_create fail.
 * HPLVK_RANK_CHUNK   bytes per message of a move between ranks (contexts
 *                      over a transport with post and wait, as MPI's:
 *                      hplvk_transport.h), same syntax as
 *                      HPLVK_DEVICE_MEMORY_LIMIT: a box larger than it goes
 *                      as row groups along its first dimension of extent
 *                      more than 1, each of about that size (at least one
 *                      row), each sent as soon as the sending rank's host
 *                      storage holds it, so that the next one's download
 *                      overlaps its message; "0" sends boxes whole. Unset
 *                      or "": 1 MiB. Every rank must give the same value.
 *                      A malformed value makes the context's creation fail
 *                      on every rank. hpl_stats counts moves, not pieces.
 * HPLVK_PUSH=0        rows move only when a device or the host reads them:
 *                      devices do not push what others read from them
 *                      with the kernels that write it (chapter 7b). "1"
 *                      (unset or "": the default) pushes; other values
 *                      make hpl_context_create fail.
 * HPLVK_MAX_IN_FLIGHT  operations each device may have recorded and not
 *                      completed before a call that records more waits
 *                      (chapter 7, "Work in flight"), read when
 *                      hpl_context_desc.max_in_flight is 0: a whole number
 *                      from 1 to 65536. Unset or "": 1024. Anything else
 *                      makes hpl_context_create fail.
 * HPLVK_SUBMIT_THREAD=1  a thread per device submits its work (chapter
 *                      2): less of the host's time per eval, not yet
 *                      faster steps where it was measured (one H200).
 *                      "0" (unset or "": the default): the thread that
 *                      records the work submits it. Other values make
 *                      hpl_context_create fail.
 * HPLVK_LOGICAL_DEVICES  how the logical devices of one physical device
 *                      ("gpu0:2") are made: "vkdevices" (unset or "": the
 *                      default) a VkDevice each, which a GPU time-shares
 *                      (a context switch each time it turns from one to
 *                      another: ~210 us a stencil step on an H200);
 *                      "queues" queues of one VkDevice, one compute queue
 *                      each and a transfer queue each while a transfer
 *                      family has enough, each with its own memory still, running
 *                      side by side, when the compute family has a queue
 *                      for each (else a VkDevice each; Lavapipe has one
 *                      queue). hpl_device_info.shares_vkdevice says which.
 *                      Other values make hpl_context_create fail.
 * HPLVK_PEER_SEMAPHORES=0  every wait of one device for another goes
 *                      through the progress thread. Otherwise logical
 *                      devices of one GPU whose driver shares timeline
 *                      semaphores (VK_KHR_external_semaphore_fd), or that
 *                      are queues of one VkDevice, wait on each other's
 *                      timeline directly (never with validation on).
 * HPLVK_STRIDED_COPY  how a copy of a box whose contiguous runs are short
 *                      and many (a column panel of a row-major matrix, a
 *                      strided subarray, a column halo: 16 runs or more,
 *                      each under 64 KiB) moves: "auto" (unset: the
 *                      default) by the library's copy kernel on GPUs, on
 *                      the compute queue, reading and writing both sides
 *                      by device address, and as vkCmdCopyBuffer regions
 *                      (one per run) on CPUs, where a region is a memcpy;
 *                      "kernel" by the kernel on every device (it needs
 *                      shaderInt64: the rest keep regions); "dma" always as
 *                      regions. A region costs NVIDIA's driver 1.8-2.8 us:
 *                      a panel of 16384 rows x 128 floats took 28-49 ms as
 *                      regions and 0.3-0.4 ms by the kernel on an H200
 *                      (samples/bench/bench_strided). A device whose driver
 *                      cannot make the kernel keeps regions and logs a
 *                      warning. Other values make hpl_context_create fail.
 * HPLVK_TRACE=FILE     record a trace of the whole life of every context
 *                      (chapter 9), written by hpl_context_destroy: the
 *                      process's first context writes FILE, the next ones
 *                      FILE with .1, .2, ... before its extension
 *                      ("run.json", "run.1.json"), or after it when it has
 *                      none ("run", "run.1"). A FILE that exists and is not
 *                      a regular file (/dev/null) is written by the first
 *                      context only: no numbered file is made beside it.
 *                      A file that cannot be opened for writing is a
 *                      warning naming the variable, the path and the
 *                      reason, and so is a later context of a FILE that is
 *                      no regular file; such a context runs untraced.
 *                      Unset or "": no trace.
 * HPLVK_TRANSFER_LANE  where copies between the host and a device run:
 *                      "auto" (unset: the default) puts uploads of 4 MiB or
 *                      more per operation, and downloads of 4 MiB or more
 *                      (a host read, hpl_array_prefetch to HPL_ON_HOST, a
 *                      copy on to another device), on the device's
 *                      dedicated transfer queue, where it has one, so that
 *                      they overlap kernels; "off" keeps every copy on the
 *                      compute queue; "shared" gives the compute queue
 *                      itself a transfer lane (its own timeline and
 *                      command buffers) for every such copy: no overlap,
 *                      but every path of the lane runs on a one-queue
 *                      device, for tests. Smaller downloads take the lane
 *                      too when the compute queue holds later work than
 *                      what they copy (the bands of a halos-first eval,
 *                      7b); the lane waits for other devices through a
 *                      gate of its own, which the progress thread opens.
 *                      Other values make hpl_context_create fail.
 */

/* ======================================================================
 * 9. Traces
 * ======================================================================
 *
 * A trace is a picture of the run: every kernel, copy and host wait of a
 * context, on a track per device queue and per host thread, with the times
 * the device itself measured. It is a Chrome trace (JSON Trace Event
 * Format): open it at https://ui.perfetto.dev (Open trace file) or in
 * Chrome's chrome://tracing (Load).
 *
 *   hpl_trace_begin(ctx, "run.json");
 *   ... evals, host accesses ...
 *   hpl_trace_end(ctx);                       // waits for the work, writes run.json
 *
 * or, without changing the program, HPLVK_TRACE=run.json (chapter 8).
 *
 * The file holds {"traceEvents": [...], "otherData": {...}}:
 *   - process 1 is the host, with a thread per host thread that waited
 *     ("host thread N"); process 2 + d is device d, named
 *     "device d (<device name>)", with its thread 1 "compute queue". Their
 *     names are "M" (metadata) events.
 *   - every kernel, copy, wait and plan search is an "X" (complete) event:
 *     "ts" and "dur" in microseconds (three decimals: nanoseconds) of the
 *     host's CLOCK_MONOTONIC, from otherData.origin_ns. "cat" is "kernel",
 *     "copy", "wait", "plan" or "message" (chapter 10). args.seq is the order in which the library recorded them;
 *     device events also carry args.device, args.queue and args.value (the
 *     device timeline value of their submission).
 *   - kernels: "name" is the kernel's (hpl_kernel_source.name, else its
 *     path, else "kernel"; the library's own are "fill" and "reduce");
 *     args.offset and args.size are the box of the domain the subkernel ran
 *     (all of it on one device), args.global the eval's whole domain,
 *     args.local the local size, args.reads and args.writes the names of the
 *     arrays it reads and writes (subarrays by their array's name).
 *   - copies: args.array (the array's name; an assignment's destination),
 *     args.bytes, args.direction ("host to device", "device to host",
 *     "within device", or "host to host" on a zero-copy device), args.src
 *     and args.dst ("host" or "device d"), args.boxes (boxes of the region
 *     copied), args.kernel_boxes (of them, those the copy kernel moved:
 *     HPLVK_STRIDED_COPY; the rest are copy regions), args.bounds and
 *     args.region (its bounding box and its first 8 boxes, each
 *     {"first": [i, j, k], "last": [i, j, k]}, inclusive, in the array's
 *     coordinates; 3 indices whatever its dimensions). Each runs
 *     on the track of the device that executes it: a copy between two
 *     devices is two events, "device to host" on the source and "host to
 *     device" on the destination. Their bytes add up to what hpl_stats_get
 *     counts (plus assignments on zero-copy devices, which hpl_stats_get
 *     leaves out).
 *   - plan searches ("cat" "plan", on the host thread that searched): from
 *     the start of an execution plan's search to its end, args.description
 *     the plan's hpl_plan_describe line (chapter 7c).
 *   - waits: when a host thread waited for device work (a host access, an
 *     array's destruction, hpl_finish, an eviction): args.points lists the
 *     {device, value} it waited for.
 * args.clock is "gpu" for times taken by the device (vkCmdWriteTimestamp:
 * a command's begin is the moment everything before it on its queue had
 * completed, so the events of one queue never overlap and are in
 * submission order) and converted to host time through calibration points
 * (VK_EXT_calibrated_timestamps, or a timed submission where the device
 * lacks it); otherData.devices[d].clock_error_ns bounds that conversion's
 * error. It is "host" for waits, and for device work on a device without
 * timestamps (otherData.devices[d].gpu_timestamps false) or recorded while
 * 4096 of its events were in flight: its time spans from its recording to
 * the moment the library saw it complete. Events are read once complete,
 * never waited for: tracing adds two timestamp writes per command and no
 * wait to hpl_eval. Strings are escaped; bytes of names that are not UTF-8
 * become U+FFFD.
 */

/* Starts recording a trace into the file at `path` (created, or truncated,
 * now; written by hpl_trace_end). Fails with HPL_ERROR_IO when the file
 * cannot be opened for writing (the message names it and says why), with
 * HPL_ERROR_INVALID_ARGUMENT for an empty path or while a trace is being
 * recorded (by this function or HPLVK_TRACE). */
HPL_API int hpl_trace_begin(hpl_context *ctx, const char *path);
/* Stops recording, waits for the work recorded since hpl_trace_begin,
 * writes the trace and closes the file. HPL_ERROR_INVALID_ARGUMENT when no
 * trace is being recorded; HPL_ERROR_IO when writing failed (disk full);
 * an error of the waited work (a lost device) after writing what completed.
 * The trace is over in every case. hpl_context_destroy ends a trace still
 * being recorded. */
HPL_API int hpl_trace_end(hpl_context *ctx);

/* ======================================================================
 * 10. Contexts over ranks (MPI)
 * ======================================================================
 *
 * A context made by hpl_mpi_context_create (<hplvk_mpi.h>, library
 * hplvk_mpi) or hpl_context_create_over (<hplvk_transport.h>) spans the
 * ranks of a communicator: every rank runs the same program, opens only its
 * own devices (its own HPLVK_DEVICES or device list; with none, GPU number
 * n for the rank that is n-th on its machine when the machine has a GPU
 * for each of its ranks, else the default), and
 * sees every rank's devices, numbered in rank order: hpl_device_count,
 * hpl_device_get_info (hpl_device_info.rank) and every device index given
 * to a call (launch.device(s), `where`, plan devices) are global. A
 * context made without a communicator behaves as on one process, also
 * inside an MPI program. At most 16 devices and 16 ranks in all.
 *
 * Collective calls. Every rank makes the same collective calls, in the same
 * order, with the same arguments (the same kernels, extents, annotations,
 * scalars, devices): context creation and destruction, hpl_array_create,
 * hpl_eval, host access (hpl_array_access, _read, _write), hpl_array_fill,
 * _assign, _prefetch, _discard, _reduce, hpl_plan_create, _eval. Local to
 * each rank: kernels, subarrays and parts (views: handles may differ between ranks), stats,
 * info, hpl_array_wait, hpl_finish, hpl_array_destroy. Under validation
 * (hpl_context_desc.validation, HPLVK_VALIDATION=1) the ranks compare
 * each collective call first: one that differs, or that failed on some
 * rank only, fails on every rank with HPL_ERROR_RANKS_DIFFER, the message
 * naming the rank and both calls; nothing has changed then. Without
 * validation such a program is wrong and may wait forever. A rank that
 * dies or exits ends the job (mpirun's status is non-zero).
 *
 * Where data is. Every rank keeps the same record of which rank holds
 * which region of each array valid (in its host storage or a device), so
 * each derives the same moves without asking: a box a rank's devices (or
 * its host) are about to read and do not hold moves from the host storage
 * of the next rank that holds it into this rank's host storage, by one
 * message (a box over HPLVK_RANK_CHUNK bytes by one per group of rows, each
 * sent as soon as it is in the host storage), and only the boxes that are
 * missing (an eval's halo rows, not its parts). hpl_stats counts them, a
 * box each (rank_sent_bytes, _count, rank_received_bytes, _count).
 *
 *   hpl_eval    splits the domain over the eval's devices of every rank as
 *               on one process (launch.shares: one per device of the eval);
 *               each rank runs its own devices' parts after receiving what
 *               they read. An argument written by parts on several ranks
 *               must be annotated (HPL_ERROR_UNSUPPORTED otherwise).
 *               launch.domains does not span ranks (HPL_ERROR_UNSUPPORTED).
 *               launch.halos_first also hides the moves between ranks:
 *               each rank first runs the rows of its parts whose reads it
 *               holds already, then moves what the ranks lack (its
 *               messages going while those rows run), then runs the rows
 *               next to another rank's, in the same eval (a stencil's
 *               interior, its halo, then its edge rows). Under
 *               validation, contexts with a zero-copy device run their
 *               parts one after the other, after the moves. Should the
 *               moves fail, the rows run before them hold their results.
 *   host access every rank's host sees the whole (sub)array: HPL_READ
 *               brings to every rank what it lacks; HPL_WRITE is a write
 *               by every rank alike — every rank must write the same
 *               values, and then every rank holds them (a rank's host
 *               holds what it wrote, read or received, not the whole array
 *               until it reads it: host memory is committed as touched).
 *   fill, assign at a device: its rank receives what it lacks of the source
 *               and runs it; the other ranks no longer hold the owned box.
 *               HPL_ON_HOST: every rank does it on its host.
 *               HPL_WHERE_LAST_USED: the same global device on every rank.
 *   prefetch    to a device: its rank receives what it lacks; to the host:
 *               each rank fetches what it holds (a read brings the rest).
 *   discard     no rank holds the owned box any more.
 *   reduce      each rank reduces what it holds and no rank before it
 *               does; the partial values combine in rank order, so every
 *               rank gets the same result (a float sum may differ from
 *               one process's in its last bits: another order).
 *   hpl_array_part   the parts of the last split, over every rank's
 *               devices (the device it returns is global).
 *   plans       hpl_plan_create and hpl_plan_eval are collective; a plan's
 *               devices are every rank's. Each rank times its own devices;
 *               the ranks share those times, and take the slowest rank's
 *               host times (a step lasts as long as its slowest rank), so
 *               that every rank reaches the same distribution: given
 *               shares, the searches with their alone check and warm-ups,
 *               and ADAPTIVE. A partitioner is called on every rank for
 *               every device's piece (hpl_runner_device: the global
 *               device), so it must be the same code on every rank; each
 *               rank runs its own devices' runners, receiving first what
 *               they read and it lacks (their subarrays' boxes). A
 *               partitioner failing on one rank fails the eval on every
 *               rank (validation on; else the others may wait for it).
 *               The package schemes (DYNAMIC, HGUIDED, AUTO_TUNE) keep
 *               their packages within a rank: the rows go to the ranks in
 *               one block each, by shares — each rank's rows per second
 *               in the plan's last eval, the same numbers on every rank
 *               (at first its devices' given shares, else their count) —
 *               each rank receives what its block reads and it lacks,
 *               hands its block out in packages to its own devices as on
 *               one process, and the ranks then share what each device
 *               ran: hpl_plan_info is the same on every rank (the speeds
 *               hpl_plan_describe shows are this rank's devices'). The
 *               first eval's check against one device alone runs over
 *               every rank and is decided alike.
 *
 * Not across ranks yet (HPL_ERROR_UNSUPPORTED naming the call): a
 * package scheme with a partitioner, Vulkan interop, launch.domains. A trace
 * (chapter 9, hpl_trace_begin or HPLVK_TRACE, the same path on every
 * rank) is written by each rank into its own file, the path with
 * ".rank<r>" before its extension, its host and devices named "rank r
 * ..." as processes of their own (process ids from 100 r), so that the
 * ranks' files show side by side: their times count from one moment, the
 * earliest rank's clock when the context was made (otherData.origin_ns),
 * so that on one machine (one CLOCK_MONOTONIC) the files merge as they
 * are, e.g. jq -s '{traceEvents: map(.traceEvents) | add}' run.rank*.json
 * > run.json (ranks on several machines: each machine's clock). Each box this rank sends or receives (a group of its rows, for
 * a box moved in groups) is a "message" event on the host process, on a
 * track per other rank and way ("sends to rank p", "receives from rank
 * p"), named "send to rank p" or "receive from rank p", from its posting
 * to the end of the wait for its exchange, with args.array, args.peer,
 * args.bytes and args.box ({"first", "last"} as a copy's): their bytes add
 * up to hpl_stats' rank_sent_bytes and rank_received_bytes.
 *
 * Threads. The library calls MPI from the thread that calls it, with the
 * context's lock held, never from threads of its own (<hplvk_mpi.h>).
 */

#ifdef __cplusplus
}
#endif
#endif /* HPLVK_H */
