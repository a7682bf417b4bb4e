/* The runtime's shared structures: context, devices, arrays, kernels. */
#ifndef HPL_INTERNAL_H
#define HPL_INTERNAL_H

#include "cache.h"
#include "coherence.h"
#include "common.h"
#include "handle.h"
#include "reflect.h"

#include <pthread.h>
#include <vulkan/vulkan.h>

/* ---- devices ---------------------------------------------------------- */

typedef struct hpl__cmd {
    VkCommandBuffer cb;
    uint64_t value; /* timeline value of its last submission; 0: never submitted */
} hpl__cmd;

/* A chunk of host-visible memory holding kernel argument blocks, bound as
 * one dynamic uniform buffer; reused once the work that used it is done. */
typedef struct hpl__arg_chunk {
    VkBuffer buffer;
    VkDeviceMemory memory;
    uint8_t *map;
    VkDescriptorSet set;
    VkDeviceSize used;
    uint64_t last_value; /* timeline value of the last work reading it */
} hpl__arg_chunk;

#define HPL__ARG_CHUNK_SIZE (64u * 1024u)
#define HPL__ARG_RANGE 4096u /* descriptor range: the largest argument block */
#define HPL__PUSH_SIZE 64u

typedef struct hpl__device {
    int index;
    hpl_device_info info;
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory_props;
    VkDevice device;
    VkQueue queue; /* compute */
    uint32_t queue_family;
    VkQueue transfer_queue; /* dedicated transfer queue or VK_NULL_HANDLE */
    uint32_t transfer_family;

    uint32_t local_memory_type;   /* arrays */
    uint32_t upload_memory_type;  /* argument blocks: host-visible, coherent */
    VkDeviceSize import_alignment;
    bool host_import;
    PFN_vkGetMemoryHostPointerPropertiesEXT get_host_pointer_props;

    /* Timeline of the compute queue: value n is the n-th submission. */
    VkSemaphore timeline;
    uint64_t submitted;
    /* Host-signalled timeline the progress thread advances when work this
     * device waits for on other devices is done. */
    VkSemaphore gate;
    uint64_t gate_requested;

    VkCommandPool command_pool;
    hpl__cmd *cmds;
    uint32_t cmd_count, cmd_next; /* ring: cmd_next is the oldest */

    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkDescriptorPool descriptor_pool;
    hpl__arg_chunk *chunks;
    uint32_t chunk_count, chunk_current;

    VkPipelineCache pipeline_cache;
    int error; /* sticky: device lost */
    /* Set only under validation: see hpl__validation_lock in context.c. */
    pthread_mutex_t *semaphore_lock;
} hpl__device;

/* ---- arrays ----------------------------------------------------------- */

typedef struct hpl__array_copy {
    VkBuffer buffer; /* the array on the device */
    VkDeviceMemory memory;
    VkDeviceAddress address;
    VkBuffer host_buffer; /* the host storage imported into the device */
    VkDeviceMemory host_memory;
    VkDeviceSize host_offset; /* of the first element inside host_buffer */
} hpl__array_copy;

typedef struct hpl__array {
    hpl_type type;
    int ndims;
    uint64_t dims[3];
    uint64_t count, bytes;
    char *name;
    uint8_t *host;
    bool host_owned;      /* mmap'd by the library */
    size_t host_map_size;
    hpl__coherence coherence;
    hpl__array_copy copies[HPL__MAX_DEVICES];
    int error; /* asynchronous error of work on this array, returned once */
} hpl__array;

/* ---- kernels ---------------------------------------------------------- */

typedef struct hpl__pipeline {
    int device;
    uint32_t local[3];
    VkPipeline pipeline;
} hpl__pipeline;

typedef struct hpl__variant {
    uint32_t device_types; /* 0: the generic version */
    uint32_t *spirv;
    size_t words;
    hpl__reflection reflection;
    VkShaderModule modules[HPL__MAX_DEVICES];
    hpl__pipeline *pipelines;
    uint32_t pipeline_count;
} hpl__variant;

typedef struct hpl__kernel {
    hpl__variant variants[1 + HPL_MAX_VARIANTS]; /* [0] generic */
    int variant_count;
    char *name;
} hpl__kernel;

/* ---- context ---------------------------------------------------------- */

typedef struct hpl__progress hpl__progress;

struct hpl_context {
    pthread_mutex_t lock;
    hpl__logger logger;
    hpl__cache cache;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    int physical_count;
    VkPhysicalDevice *physical;
    hpl_device_info *physical_info;
    int device_count;
    hpl__device devices[HPL__MAX_DEVICES];
    hpl__pool arrays;  /* of hpl__array */
    hpl__pool kernels; /* of hpl__kernel */
    hpl__progress *progress;
    int deferred_error; /* first asynchronous error since the last hpl_finish */
    struct hpl__kernel *fill_kernel; /* shaders/fill.comp, made on first use */
    bool validation;
    pthread_mutex_t semaphore_lock; /* see hpl__device.semaphore_lock */
};

/* context.c */
void hpl__context_record_error(hpl_context *ctx, int code);

/* device.c */
int hpl__devices_open(hpl_context *ctx, const char *spec);
void hpl__devices_close(hpl_context *ctx);
int hpl__vk_error(VkResult r, const char *what);
void hpl__physical_info(VkPhysicalDevice pd, uint32_t index, hpl_device_info *out);

/* submit.c: command buffers, submission, completion */
int hpl__cmd_begin(hpl__device *d, hpl__cmd **out);
/* Gives back a command buffer that was begun but will not be submitted. */
void hpl__cmd_abandon(hpl__device *d, hpl__cmd *cmd);
/* Ends and submits cmd; waits (on the device) for gate >= gate_value when
 * gate_value > 0; returns the point of this work in *at. */
int hpl__cmd_submit(hpl_context *ctx, hpl__device *d, hpl__cmd *cmd, uint64_t gate_value, hpl__point *at);
uint64_t hpl__device_completed(hpl__device *d);
/* Signals d's gate from the host (the progress thread). */
void hpl__gate_signal(hpl__device *d, uint64_t value);
/* Blocks until d's timeline reaches value (spin first). */
VkResult hpl__timeline_wait(hpl__device *d, uint64_t value);
/* Host waits for every point (releasing the context lock meanwhile). */
int hpl__wait_points(hpl_context *ctx, const hpl__point *points, int count);
int hpl__wait_idle(hpl_context *ctx);
/* A gate value on device d that becomes signalled once every point not on
 * d is reached (0 when all are on d: queue order covers them). */
int hpl__gate_for(hpl_context *ctx, hpl__device *d, const hpl__point *points, int count, uint64_t *gate_value);
void hpl__barrier_all(VkCommandBuffer cb);
void hpl__barrier_to_host(VkCommandBuffer cb);

/* progress.c */
int hpl__progress_start(hpl_context *ctx);
void hpl__progress_stop(hpl_context *ctx);
int hpl__progress_enqueue(hpl_context *ctx, int device, uint64_t gate_value, const hpl__point *points, int count);

/* memory.c */
int hpl__buffer_create(hpl__device *d, VkDeviceSize size, VkBufferUsageFlags usage, uint32_t memory_type,
                       bool device_address, VkBuffer *buffer, VkDeviceMemory *memory);
int hpl__args_alloc(hpl__device *d, uint32_t size, hpl__arg_chunk **chunk, uint32_t *offset);
void hpl__args_release(hpl__device *d);
int hpl__host_import(hpl__device *d, void *ptr, size_t size, VkBuffer *buffer, VkDeviceMemory *memory,
                     VkDeviceSize *offset);

/* array.c */
int hpl__array_get(hpl_context *ctx, hpl_array handle, hpl__array **out);
int hpl__array_ensure_device(hpl_context *ctx, hpl__array *a, int device);
int hpl__array_ensure_host(hpl_context *ctx, hpl__array *a);
int hpl__array_ensure_import(hpl_context *ctx, hpl__array *a, int device);
void hpl__array_destroy_all(hpl_context *ctx);
void hpl__array_free(hpl_context *ctx, hpl__array *a);

/* kernel.c */
int hpl__kernel_get(hpl_context *ctx, hpl_kernel handle, hpl__kernel **out);
const hpl__variant *hpl__kernel_variant_for(const hpl__kernel *k, const hpl__device *d);
int hpl__pipeline_get(hpl_context *ctx, hpl__variant *v, hpl__device *d, const uint32_t local[3], VkPipeline *out);
void hpl__kernel_destroy_all(hpl_context *ctx);

/* kernel.c */
int hpl__kernel_create_locked(hpl_context *ctx, const hpl_kernel_desc *desc, hpl__kernel **out);

/* eval.c: brings the newest data of the whole array into the host storage
 * (submitting copies on the devices that hold it; does not wait). */
int hpl__fetch_to_host(hpl_context *ctx, hpl__array *a);

#define HPL__LOCK(ctx) pthread_mutex_lock(&(ctx)->lock)
#define HPL__UNLOCK(ctx) pthread_mutex_unlock(&(ctx)->lock)

#endif
