/*
 * hplvk_vulkan.h — Vulkan interop: an hplvk context on the application's own
 * VkInstance, VkDevices and queues, and the application's own Vulkan work on
 * the buffers that hold hplvk arrays, ordered with hplvk's work by timeline
 * semaphores. Programs that write no Vulkan never need this header; it
 * includes <vulkan/vulkan.h> and <hplvk.h>.
 *
 * Chapters:
 *   V1. A context on the application's devices   (hpl_vulkan_desc)
 *   V2. The application's work on an array        (hpl_array_vulkan_acquire/_release)
 *
 * ======================================================================
 * V1. A context on the application's devices
 * ======================================================================
 *
 *   hpl_vulkan_device dev = {.physical = pd, .device = vk_device, .queue = queue,
 *                            .queue_family = family, .create_info = &device_ci};
 *   hpl_vulkan_desc vk = {.instance = vk_instance, .devices = &dev, .device_count = 1,
 *                         .queue_lock = lock, .queue_unlock = unlock, .queue_lock_user = &mutex};
 *   hpl_context *ctx;
 *   hpl_context_create(&(hpl_context_desc){.vulkan = &vk}, &ctx);
 *
 * hplvk device i is hpl_vulkan_desc.devices[i]. hplvk creates only its own
 * objects on them (command pools, timeline semaphores, pipelines, buffers,
 * memory) and destroys only those: hpl_context_destroy leaves the instance,
 * the devices and the queues to the application, which destroys them after
 * it. hplvk never calls vkDeviceWaitIdle or vkQueueWaitIdle on them; it
 * waits for its own timeline semaphores only.
 *
 * What the application's instance and devices must have (checked by
 * hpl_context_create, HPL_ERROR_UNSUPPORTED naming the device entry and
 * the missing feature or extension):
 *   required
 *     - the instance created with VkApplicationInfo.apiVersion >= 1.2 (not
 *       checkable: hplvk calls Vulkan 1.1 and 1.2 commands), and a
 *       physical device of apiVersion >= 1.2;
 *     - the device features timelineSemaphore and bufferDeviceAddress
 *       (VkPhysicalDeviceVulkan12Features, or the
 *       VkPhysicalDeviceTimelineSemaphoreFeatures /
 *       VkPhysicalDeviceBufferDeviceAddressFeatures structures);
 *     - the device extension VK_EXT_external_memory_host: every transfer
 *       between the host and a device is one DMA from host memory imported
 *       into the device (there is no staging path), and a zero-copy device
 *       works on the imported host storage;
 *     - a queue whose family has VK_QUEUE_COMPUTE_BIT.
 *   optional (used when enabled)
 *     - shaderFloat64, shaderInt64, shaderInt16 (VkPhysicalDeviceFeatures),
 *       shaderInt8, shaderFloat16, storageBuffer8BitAccess,
 *       uniformAndStorageBuffer8BitAccess, scalarBlockLayout (Vulkan 1.2
 *       features, or their own structures). Without one, a kernel whose
 *       SPIR-V needs it fails at its first eval on that device
 *       (HPL_ERROR_UNSUPPORTED naming the feature), hpl_device_info.float64
 *       and .int64 say whether double and 64-bit integer kernels can run,
 *       and reductions of those types happen on the host instead.
 * hplvk learns what the device enabled from hpl_vulkan_device.create_info,
 * the VkDeviceCreateInfo the device was created with (its pNext chain and
 * extension names are read during hpl_context_create only). Without it,
 * hplvk takes the required features as enabled (the extension is checked
 * through its entry point) and every optional feature as not enabled.
 * Give it: a device made without a required feature then fails with a
 * message naming it, instead of later with validation errors.
 *
 * Queues. hplvk submits its work to hpl_vulkan_device.queue (transfer_queue
 * is reserved for copies; this release submits nothing there, and
 * hpl_device_info.dedicated_transfer_queue says whether one was given).
 * Vulkan requires the host to
 * serialise vkQueueSubmit on one queue, and Lavapipe, for one, has a single
 * queue, which the application and hplvk must then share. So when the
 * application submits to a queue it gave hplvk, it gives queue_lock and
 * queue_unlock: hplvk calls queue_lock(user, queue) before and
 * queue_unlock(user, queue) after each of its vkQueueSubmit calls on that
 * queue, from any thread: the thread of the hplvk call, or hplvk's own
 * progress thread, at any time while the context exists, also while none
 * of the application's calls into hplvk is running. The application takes
 * the same lock around its own vkQueueSubmit (and vkQueueWaitIdle, ...) on
 * that queue, and must not hold it while calling an hplvk function.
 * queue_lock and queue_unlock are both given or both NULL (then hplvk is
 * the only user of its queues).
 *
 * Other fields of hpl_context_desc keep their meaning, except:
 *   - devices (and HPLVK_DEVICES) must be NULL / are ignored: the devices
 *     are hpl_vulkan_desc.devices, in that order;
 *   - validation (and HPLVK_VALIDATION=1) cannot enable the validation
 *     layer on an instance hplvk did not create: the application enables
 *     VK_LAYER_KHRONOS_validation itself and receives its messages through
 *     its own debug messenger (hplvk makes none). The flag still turns on
 *     hplvk's own checks (writes outside owned boxes, chapter 7b of
 *     hplvk.h) and its workarounds for known bugs of the validation layer
 *     1.3.239 (it serialises its timeline semaphore calls): set it when the
 *     application runs the layer;
 *   - zero_copy AUTO: a device that shares memory with the host is
 *     zero-copy when its VkPhysicalDevice appears once in devices.
 * One VkDevice may appear at most once. Two entries may share a
 * VkPhysicalDevice (two VkDevices on it): they are two hplvk devices with
 * separate memories, as with HPLVK_DEVICES=cpu:2.
 */
#ifndef HPLVK_VULKAN_H
#define HPLVK_VULKAN_H

#include <vulkan/vulkan.h>

#include "hplvk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called around hplvk's vkQueueSubmit calls on a shared queue (V1). */
typedef void (*hpl_vulkan_queue_lock_fn)(void *user, VkQueue queue);

/* One device of the application, opened by hplvk as one hplvk device. */
typedef struct hpl_vulkan_device {
    VkPhysicalDevice physical; /* a physical device of hpl_vulkan_desc.instance */
    VkDevice device;           /* created on `physical` */
    VkQueue queue;             /* a queue of queue_family, where hplvk submits its work */
    uint32_t queue_family;     /* has VK_QUEUE_COMPUTE_BIT */
    /* Optional: a queue for copies (reserved: unused by this release);
     * VK_NULL_HANDLE: none. */
    VkQueue transfer_queue;
    uint32_t transfer_family;
    /* Optional: how `device` was created, read during hpl_context_create
     * only, to check the features and extensions hplvk needs (V1). */
    const VkDeviceCreateInfo *create_info;
} hpl_vulkan_device;

/* hpl_context_desc.vulkan: the application's Vulkan objects. */
typedef struct hpl_vulkan_desc {
    VkInstance instance;
    const hpl_vulkan_device *devices; /* hplvk device i is devices[i] */
    int device_count;                 /* 1 .. HPL_MAX_DEVICES */
    hpl_vulkan_queue_lock_fn queue_lock;
    hpl_vulkan_queue_lock_fn queue_unlock;
    void *queue_lock_user;
} hpl_vulkan_desc;

/* ======================================================================
 * V2. The application's work on an array
 * ======================================================================
 *
 *   hpl_vulkan_buffer b;
 *   hpl_array_vulkan_acquire(ctx, x, 0, HPL_READ_WRITE, &b);    // x's newest data on device 0
 *   // record work on b.buffer at b.offset (or b.address); submit it waiting
 *   // for b.timeline >= b.wait_value, signalling my_timeline = v
 *   hpl_array_vulkan_release(ctx, x, 0, my_timeline, v);       // hplvk orders its work after it
 *   hpl_eval(ctx, k2, NULL, HPL_ARGS(hpl_arr(x)));              // sees the application's writes
 *
 * hpl_array_vulkan_acquire brings the newest data of the (sub)array to
 * `device` (HPL_READ, HPL_READ_WRITE; HPL_WRITE fetches nothing, not even a
 * ghost part: the application must then write all of the owned box, as a
 * kernel's hpl_out argument) into a buffer there (allocated if there is none), submits that
 * work, and returns where the (sub)array lies: *out. The application's work
 * on it must wait (on the device: a semaphore wait in its VkSubmitInfo,
 * VkTimelineSemaphoreSubmitInfo) for out->timeline >= out->wait_value: the
 * data is then there and visible, and every earlier hplvk work that read or
 * wrote it is done. out->timeline is hplvk's, on that device: only wait on
 * it, never signal it.
 *
 * The (sub)array is then *acquired*: until hpl_array_vulkan_release, hplvk
 * keeps that buffer where it is (never evicted or moved), and an hplvk call
 * whose access would race with the application's work fails with
 * HPL_ERROR_INVALID_ARGUMENT naming the array and the device, changing
 * nothing: for an acquisition with HPL_WRITE, any access (eval, fill,
 * assignment, host access, prefetch to a device or to the host, reduction,
 * another acquisition) to elements of the acquired box; for HPL_READ, any
 * write to them. Accesses to other
 * elements of the same array go on as usual (a split eval's other parts,
 * say). hpl_array_destroy of the acquired (sub)array, of one of its
 * ancestors or of its root fails the same way.
 *
 * hpl_array_vulkan_release says the application's work on the buffer is
 * complete once `semaphore` (a timeline semaphore of the application, on
 * the same VkDevice) reaches `value`; VK_NULL_HANDLE: it is complete
 * already (the application waited for it, and its writes are available
 * to hplvk's queue: it ran on that queue, or made them available itself). hplvk submits on its queue one
 * command buffer that waits (on the device) for it, so hplvk's later work,
 * on that device and on others, runs after it. Submit the work that
 * signals (semaphore, value) before releasing: on a queue shared with
 * hplvk, a wait submitted before its signal stalls the queue for good.
 * With HPL_WRITE in the acquisition, the (sub)array's owned box on that
 * device becomes the only valid copy (every other copy of it becomes
 * invalid, as after a kernel that writes it); with HPL_READ alone the
 * application counts as one more reader. A subarray with a ghost part (an
 * owned box smaller than itself) acquired with HPL_READ_WRITE gets its
 * ghost part as context: write only the owned box (what it writes outside
 * is treated as a kernel's writes into the ghost part are, hplvk.h 4b:
 * each such element then holds its value from before or the one written,
 * one value everywhere).
 *
 * The same (sub)array may be acquired several times at once for reading
 * (each release ends one acquisition of that (sub)array and device).
 * hpl_context_destroy and hpl_finish wait for every release's semaphore:
 * signal what you promised. Release every acquisition before
 * hpl_context_destroy (it logs a warning for each one left, and frees the
 * buffers all the same).
 *
 * The buffer. On a device with memory of its own, the buffer holds a box
 * of the (sub)array's root array, dense row-major (hplvk's buffer of the
 * whole array, of the (sub)array, or of a box containing it): element
 * (i, j, k) of the (sub)array is at byte
 *     offset + (i * stride[0] + j * stride[1] + k * stride[2]) * element size
 * (stride[d] for d < ndims; 0 beyond), and at address + the same. On a
 * zero-copy device (hpl_device_info.zero_copy) there is no device copy: the
 * buffer is the root's host storage imported into the device
 * (out->zero_copy), laid out as the whole root array (its
 * hpl_array_info.host_stride), and the application works on the host's
 * copy, like hplvk's own kernels there. The buffer has
 * VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, TRANSFER_SRC, TRANSFER_DST and
 * SHADER_DEVICE_ADDRESS. `offset` is a multiple of the element size but not
 * necessarily of minStorageBufferOffsetAlignment: bind the descriptor at
 * offset rounded down to it and index from there, or use `address`.
 *
 * Timing: acquire returns at once (it waits for no device); it always
 * submits work on `device`, so out->wait_value is a value hplvk has
 * submitted by the time it returns.
 */

typedef struct hpl_vulkan_buffer {
    VkBuffer buffer;
    VkDeviceSize offset;     /* byte offset of the (sub)array's first element in buffer */
    VkDeviceSize range;      /* bytes from offset to the end of its last element */
    VkDeviceAddress address; /* device address of its first element */
    uint64_t stride[3];      /* element strides of dimensions 0 .. ndims-1 in the buffer; 0 beyond */
    bool zero_copy;          /* buffer is the root's host storage (a zero-copy device) */
    VkSemaphore timeline;    /* hplvk's timeline semaphore on the device: wait on it only */
    uint64_t wait_value;     /* the application's work waits for timeline >= wait_value */
} hpl_vulkan_buffer;

/* Acquires (sub)array `array` on `device` for the application's work with
 * `access` (HPL_READ, HPL_WRITE or HPL_READ_WRITE), as V2 says. Fails with
 * HPL_ERROR_UNKNOWN_DEVICE for a device index the context lacks,
 * HPL_ERROR_INVALID_ARGUMENT for a NULL out, a bad access or an access
 * racing with another acquisition, and like an eval when the data cannot
 * be brought there (HPL_ERROR_OUT_OF_DEVICE_MEMORY, ...); *out is untouched
 * then and nothing is acquired. */
HPL_API int hpl_array_vulkan_acquire(hpl_context *ctx, hpl_array array, int device, hpl_access access,
                                     hpl_vulkan_buffer *out);
/* Ends the oldest acquisition of `array` on `device` (V2): the application's
 * work on it is complete once `semaphore` reaches `value`. Fails with
 * HPL_ERROR_INVALID_ARGUMENT when the (sub)array is not acquired there
 * (nothing changes then). */
HPL_API int hpl_array_vulkan_release(hpl_context *ctx, hpl_array array, int device, VkSemaphore semaphore,
                                     uint64_t value);

#ifdef __cplusplus
}
#endif
#endif /* HPLVK_VULKAN_H */
