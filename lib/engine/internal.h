/* The runtime's shared structures: context, devices, arrays, kernels. */
#ifndef HPL_INTERNAL_H
#define HPL_INTERNAL_H

#include "cache.h"
#include "coherence.h"
#include "common.h"
#include "handle.h"
#include "push.h"
#include "reflect.h"

#include <pthread.h>
#include "hplvk_vulkan.h" /* <vulkan/vulkan.h> and the interop types */

/* ---- devices ---------------------------------------------------------- */

typedef struct hpl__cmd {
    VkCommandBuffer cb;
    uint64_t value; /* timeline value of its last submission; 0: never submitted */
    uint32_t block; /* the first of a block (allocated together, freed together): its size; else 0 */
} hpl__cmd;

/* Command buffers of one queue, reused once their timeline value is
 * reached: cmds[next] is the oldest. Each hpl__cmd stays where it was
 * made (cmds holds pointers): growing the ring moves none, so an open
 * batch's survives a reservation. */
typedef struct hpl__ring {
    VkCommandPool pool;
    hpl__cmd **cmds;
    uint32_t count, next;
} hpl__ring;

/* The transfer lane (lane.c): uploads on the device's dedicated transfer
 * queue, each its own submission signalling the lane's timeline, so that
 * they overlap kernels on the compute queue; the operation that needs an
 * upload waits on that timeline in its compute submission. */
typedef struct hpl__lane {
    bool on;
    bool shared;      /* on the compute queue itself (HPLVK_TRANSFER_LANE=shared, for tests) */
    VkQueue queue;
    uint32_t family;
    VkSemaphore timeline;
    uint64_t submitted; /* written under the device's batch_lock, atomically: read without it too */
    /* Signalled by the progress thread once work of other devices a lane
     * submission waits for is done (a download into host rows another
     * device still reads): like the compute queue's gate. */
    VkSemaphore gate;
    uint64_t gate_requested;
    hpl__ring ring;
    hpl__cmd *open; /* being recorded (hpl__lane_begin .. hpl__lane_submit) */
} hpl__lane;

/* Host-visible slots of a device's own memory through which its transfers
 * of host storage it cannot import go (staging.c), one chunk per slot. */
#define HPL__STAGING_SLOTS 3
typedef struct hpl__staging {
    VkBuffer buffer; /* the slots, one after the other; made at first use */
    VkDeviceMemory memory;
    VkDeviceAddress address; /* of the buffer, on devices that copy by kernel; else 0 */
    uint8_t *map;
    VkDeviceSize slot_bytes;
    uint64_t free_at[HPL__STAGING_SLOTS]; /* the device's timeline value after which a slot is free */
    uint32_t next;
} hpl__staging;

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

/* One submission of a device's work: a command buffer signalling value on
 * a timeline after waits (submitter.c). */
#define HPL__SUBMIT_MAX_WAITS (3 + HPL__MAX_DEVICES)
typedef struct hpl__submission {
    VkQueue queue;
    VkCommandBuffer cb;
    VkSemaphore signal;
    uint64_t value;
    uint32_t wait_count;
    VkPipelineStageFlags stage; /* of every wait */
    VkSemaphore waits[HPL__SUBMIT_MAX_WAITS];
    uint64_t wait_values[HPL__SUBMIT_MAX_WAITS];
    /* The other device whose compute timeline a wait is on (peer.c), NULL
     * for none: submitter.c submits after that device's signal of it. */
    struct hpl__device *producers[HPL__SUBMIT_MAX_WAITS];
} hpl__submission;
typedef struct hpl__submitter hpl__submitter;
static inline void hpl__submission_wait(hpl__submission *s, VkSemaphore semaphore, uint64_t value,
                                        struct hpl__device *producer)
{
    s->producers[s->wait_count] = producer;
    s->waits[s->wait_count] = semaphore;
    s->wait_values[s->wait_count++] = value;
}

/* A calibration point of a device clock: device tick (extended past the
 * tick's valid bits) and the host's CLOCK_MONOTONIC at the same moment. */
typedef struct hpl__clock_point {
    uint64_t ticks, ns;
} hpl__clock_point;

/* GPU timestamps of the event log (timestamps.c): a query pool used as
 * pairs (begin and end of one command), made when the log is first turned
 * on, reset on the host, and the calibration of the device clock against the
 * host's. The pending list is events.c's: events recorded into commands not
 * submitted yet. */
typedef struct hpl__timestamps {
    bool host_reset;      /* hostQueryReset enabled at device creation */
    bool calibrated_ext;  /* VK_EXT_calibrated_timestamps enabled */
    bool supported;       /* the compute queue writes timestamps and queries reset on the host */
    uint64_t mask;        /* valid bits of a tick */
    double period;        /* ns per tick */
    PFN_vkGetCalibratedTimestampsEXT get_calibrated; /* NULL: calibrate by a submission */
    VkQueryPool pool;     /* VK_NULL_HANDLE until the log is first turned on */
    uint32_t *free_pairs; /* stack of free query pairs */
    uint32_t free_count;
    hpl__clock_point *points; /* calibration points, in tick order */
    uint32_t point_count, point_capacity;
    uint64_t error_ns; /* bound of the tick-to-host conversion error */
    uint64_t *pending; /* serials of events recorded, not submitted yet */
    uint32_t pending_count, pending_capacity;
    struct hpl__events *log; /* the context's log, while it exists */
} hpl__timestamps;

#define HPL__ARG_CHUNK_SIZE (64u * 1024u)
/* HPL__ARG_RANGE (reflect.h): the descriptor range, the largest argument block. */

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
    /* HPLVK_LOGICAL_DEVICES=queues (device.c): logical devices of one GPU
     * on queues of one VkDevice. The device that made the VkDevice made
     * queue_share compute queues (1 when it runs alone) and
     * transfer_queue_count transfer ones; the others run on queue number
     * info.replica of each and have guest set. */
    uint32_t queue_share, transfer_queue_count;
    bool guest;

    uint32_t local_memory_type;   /* arrays */
    uint32_t upload_memory_type;  /* argument blocks: host-visible, coherent */
    VkDeviceSize import_alignment;
    VkDeviceSize import_max_bytes; /* the largest VkBuffer (maxBufferSize) an import may make */
    bool host_import;
    PFN_vkGetMemoryHostPointerPropertiesEXT get_host_pointer_props;

    /* Timeline of the compute queue: value n is the n-th submission. */
    VkSemaphore timeline;
    uint64_t submitted; /* written under batch_lock, atomically: hpl__device_submitted reads it without */
    uint64_t kernel_ns; /* host time (coarse) its last kernel was recorded (0: none yet), under
                           the context lock: how long it has idled, for the plans' warm clocks */
    /* Host-signalled timeline the progress thread advances when work this
     * device waits for on other devices is done. */
    VkSemaphore gate;
    uint64_t gate_requested;
    /* Peer timelines (peer.c): other devices' timelines imported here, so
     * that work waits on them directly, with no progress thread between. */
    bool peer_export;                      /* its own timeline can be exported (opaque fd) */
    VkSemaphore peer[HPL__MAX_DEVICES];    /* device i's timeline, or VK_NULL_HANDLE */
    uint64_t batch_peer[HPL__MAX_DEVICES]; /* value of peer[i] the open batch waits for; 0: none */

    hpl__ring ring; /* of the compute queue */
    hpl__lane xfer;
    hpl__staging staging; /* staging.c: for host storage it cannot import */

    /* The open batch (submit.c): operations recorded, not yet submitted; it
     * will signal timeline value submitted + 1. batch_lock guards it, the
     * ring and `submitted` against the progress thread, which flushes it
     * when the device idles; it is never held while waiting. At most one of
     * batch and batch_next is set, and the ring only grows while neither
     * is (both point into it). */
    pthread_mutex_t batch_lock;
    bool batch_lock_made;
    hpl__cmd *batch;      /* NULL: none open */
    hpl__cmd *batch_next; /* begun ahead during a host wait, for the next batch; NULL: none */
    uint64_t batch_gate;  /* gate value the batch waits for; 0: none */
    uint64_t batch_xfer;  /* transfer lane value the batch waits for; 0: none */
    uint32_t batch_ops;   /* operations recorded in it */
    bool flush_watched;   /* a progress request will flush it when the device idles */
    bool recording;       /* an operation is being recorded into it: not submittable */
    bool flush_deferred;  /* a flush came while recording: submit at its end */
    /* Work in flight (inflight.c), under the context lock: operations
     * recorded on the device in all, those known completed (a lower
     * bound), and op_marks[v & op_mark_mask] the operations recorded when
     * timeline value v was submitted (written under batch_lock), for the
     * last op_mark_mask + 1 values. */
    uint64_t ops_recorded, ops_retired;
    uint64_t *op_marks;
    uint64_t op_mark_mask;

    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkDescriptorPool descriptor_pool;
    hpl__arg_chunk *chunks;
    uint32_t chunk_count, chunk_current;

    VkPipelineCache pipeline_cache;
    /* Set from any thread (the progress and submit threads too), read
     * from any: only through hpl__device_fail(_after) and
     * hpl__device_error / hpl__device_failed_after. */
    int error;        /* sticky: device lost */
    int failed_after; /* 1 + the index of the device whose failure voided this one's work; 0: none */
    hpl__submitter *submitter; /* submitter.c; NULL before the context is made */

    uint32_t features; /* HPL__FEATURE_* enabled on the VkDevice (validate.h) */
    /* The VkDevice and its queues are the application's (interop.c): never
     * destroyed or idled by hplvk; submissions take the application's lock. */
    bool borrowed;
    hpl_vulkan_queue_lock_fn queue_lock, queue_unlock; /* NULL: no lock */
    void *queue_lock_user;

    bool zero_copy;        /* kernels use the host storage directly */
    /* Bounds checks (bounds.c): its kernels run with hplvk_checks set to
     * this (HPL__CHECKS_*) and report stray accesses in `report`
     * (host-visible, mapped). */
    uint32_t bounds_checks;
    VkBuffer report_buffer;
    VkDeviceMemory report_memory;
    uint32_t *report;
    VkDeviceAddress report_address;
    /* Boxes of many short runs move by a kernel (copy.c): its pipelines for
     * 4- and 16-byte units; imports and staging slots get device addresses. */
    bool copy_kernel;
    VkPipeline copy_pipeline[2];
    bool zero_copy_asked;  /* its device list entry carries +zc */
    char entry[48];        /* that entry, for messages ("" for the default list) */
    uint64_t memory_limit; /* bytes of array instances it may hold */
    hpl_device_stats stats;
    /* Set only under validation: see hpl__validation_lock in context.c. */
    pthread_mutex_t *semaphore_lock;
    hpl__timestamps timestamps;
} hpl__device;

/* ---- arrays ----------------------------------------------------------- */

/* A device buffer holding a box of a root array, dense row-major over the
 * box: one memory of the root's coherence state. */
typedef struct hpl__instance {
    int slot; /* coherence memory */
    int device;
    hpl__box box;
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceAddress address;
    uint64_t bytes;
    uint64_t last_use; /* ctx->clock at its last use: least recently used goes first */
    uint64_t pinned;   /* == ctx->operation while an operation needs it */
} hpl__instance;

/* The root's host storage imported into a device (one DMA per transfer). */
typedef struct hpl__import {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize offset;     /* of the first element inside buffer */
    VkDeviceAddress address; /* of the first element; zero-copy devices and those that copy by kernel */
    bool staged;             /* cannot be imported: transfers go through staging.c */
} hpl__import;

/* The application's hold on a view's memory on a device, from
 * hpl_array_vulkan_acquire to hpl_array_vulkan_release (acquire.c). */
typedef struct hpl__acquisition {
    hpl__handle view; /* the (sub)array acquired */
    int device;
    int slot;         /* its coherence memory: never evicted while held */
    hpl__box box;     /* root coordinates */
    hpl_access access;
} hpl__acquisition;

/* How the last annotated eval split an array (hpl_array_part). */
typedef struct hpl__split {
    int count; /* parts; 0: never split */
    int dim;
    uint64_t overlap;
    int devices[HPL__MAX_DEVICES];
    uint64_t lo[HPL__MAX_DEVICES], hi[HPL__MAX_DEVICES]; /* part i: [lo, hi) along dim, owned */
} hpl__split;

/* An array or a subarray. A subarray is a view of a box of its root; the
 * storage and the coherence state belong to the root. */
typedef struct hpl__array {
    hpl__handle id;
    hpl_type type;
    int ndims;
    uint64_t dims[3]; /* of this view */
    uint64_t count, bytes;
    char *name;
    struct hpl__array *root;   /* itself for an array */
    struct hpl__array *parent; /* NULL for an array */
    hpl__box box;              /* in the root's coordinates */
    hpl__box owned;            /* inside box; box when it has no ghost part */
    hpl__handle *children;     /* ids of subarrays made from it, in creation order */
    uint32_t child_count, child_capacity;
    int last_where; /* device index or HPL_ON_HOST: where it was last used */
    hpl__split split;

    /* Roots only. */
    uint8_t *host;
    bool host_owned; /* mmap'd by the library */
    size_t host_map_size;
    hpl__coherence coherence;
    hpl__push *push; /* push.h: rows devices send when they write them; NULL until an eval of several reads it */
    hpl__instance *instances;
    int instance_count, instance_capacity;
    hpl__import imports[HPL__MAX_DEVICES];
    int error; /* asynchronous error of work on this array, returned once */
    hpl__acquisition *acquired; /* held by the application, oldest first */
    int acquired_count, acquired_capacity;
} hpl__array;

/* An access to a view: what an eval argument, an assignment side or a host
 * access touches. */
typedef struct hpl__view {
    hpl__array *root;
    hpl__box box, owned; /* root coordinates */
} hpl__view;

/* ---- kernels ---------------------------------------------------------- */

typedef struct hpl__pipeline {
    int device;
    uint32_t local[3]; /* in the dispatch's order */
    int walk;
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
    hpl__handle id; /* 0: one of the library's own */
} hpl__kernel;

/* ---- context ---------------------------------------------------------- */

typedef struct hpl__progress hpl__progress;
struct hpl__events;
struct hpl__trace;

struct hpl_context {
    pthread_mutex_t lock;
    hpl__logger logger;
    hpl__cache cache;
    VkInstance instance;
    bool borrowed_instance; /* the application's (hpl_context_desc.vulkan): not destroyed */
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
    bool unrecorded_work; /* an operation failed halfway (hpl__op_release) since the last idle wait */
    struct hpl__kernel *fill_kernel; /* shaders/fill.comp, made on first use */
    struct hpl__kernel *reduce_kernels[HPL_TYPE_COUNT_]; /* shaders/reduce.comp per type */
    struct hpl__plan *plans; /* execution plans not destroyed yet (under plan_handle.c's lock) */
    void *subkernels; /* launch.c's scratch for planned subkernels (HPL__MAX_DEVICES); NULL while an eval holds it */
    bool validation;
    uint64_t clock;     /* LRU clock of instances */
    uint64_t operation; /* serial of the operation being built (pins instances) */
    pthread_mutex_t semaphore_lock; /* see hpl__device.semaphore_lock */
    /* The event log (events.h): hooks cost one test of events_on when off. */
    bool events_on;
    struct hpl__events *events;
    struct hpl__trace *trace; /* trace.c: the trace being recorded, or NULL */
    uint64_t exchange_chunk;  /* exchange.c: HPLVK_EXCHANGE_CHUNK bytes; UINT64_MAX: unset */
    bool push;                /* access.c: devices push what others read from them (HPLVK_PUSH) */
    uint64_t staging_chunk;   /* staging.c: bytes per staging slot (HPLVK_STAGING_CHUNK) */
    uint32_t max_in_flight;   /* inflight.c: operations per device (HPLVK_MAX_IN_FLIGHT) */
};

/* Keeps the first asynchronous error since the last hpl_finish (which
 * takes it). Atomic, without the context lock: the progress thread records
 * errors, and must not wait for a thread that holds the lock while it waits
 * for a gate the progress thread opens. Inline: a call into context.c would
 * make the engine depend on the API above it. */
static inline void hpl__context_record_error(hpl_context *ctx, int code)
{
    int none = HPL_OK;
    if (code != HPL_OK)
        __atomic_compare_exchange_n(&ctx->deferred_error, &none, code, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* The error hpl__context_record_error kept (HPL_OK: none), forgotten. */
static inline int hpl__context_take_error(hpl_context *ctx)
{
    return __atomic_exchange_n(&ctx->deferred_error, HPL_OK, __ATOMIC_ACQ_REL);
}

/* Marks d failed for good (sticky; every failure path of a device goes
 * through here). Release order: a value signalled from the host after it
 * is seen with the error (submitter.c). */
static inline void hpl__device_fail(hpl__device *d, int code)
{
    __atomic_store_n(&d->error, code, __ATOMIC_RELEASE);
}

/* Marks d failed (if it is not yet) because work it waits for on device
 * `cause` failed: its own work would compute from what never ran. The
 * error is stored last: whoever sees it sees the cause. */
static inline void hpl__device_fail_after(hpl__device *d, const hpl__device *cause)
{
    if (d == cause || __atomic_load_n(&d->error, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&d->failed_after, cause->index + 1, __ATOMIC_RELAXED); /* two threads may both get here */
    hpl__device_fail(d, HPL_ERROR_DEVICE_LOST);
}

/* d's sticky error (0: none), from any thread. Acquire order: whoever sees
 * it sees what the failing thread did before (failed_after included). */
static inline int hpl__device_error(const hpl__device *d)
{
    return __atomic_load_n(&d->error, __ATOMIC_ACQUIRE);
}

/* 1 + the index of the device whose failure voided d's work (0: none);
 * meaningful once hpl__device_error(d) was seen set. */
static inline int hpl__device_failed_after(const hpl__device *d)
{
    return __atomic_load_n(&d->failed_after, __ATOMIC_RELAXED);
}

/* The compute timeline value d submitted last, read without its
 * batch_lock: it only grows, so a value read may be stale (lower), which
 * at worst makes a flush that was not needed. */
static inline uint64_t hpl__device_submitted(const hpl__device *d)
{
    return __atomic_load_n(&d->submitted, __ATOMIC_ACQUIRE);
}

/* vk.c */
/* Records a failed Vulkan call `what` as this thread's error; returns its code. */
int hpl__vk_error(VkResult r, const char *what);
/* A timeline semaphore of d starting at 0; exportable as an opaque fd
 * (peer.c) when asked. */
int hpl__timeline_create(hpl__device *d, bool exportable, VkSemaphore *out);
/* The value a timeline semaphore of d has reached, into *value (0 on failure). */
VkResult hpl__semaphore_get(hpl__device *d, VkSemaphore semaphore, uint64_t *value);
/* The same, 0 on failure. */
uint64_t hpl__semaphore_value(hpl__device *d, VkSemaphore semaphore);
/* Signals a timeline semaphore of d from the host. */
void hpl__semaphore_signal(hpl__device *d, VkSemaphore semaphore, uint64_t value);
/* Blocks until a timeline semaphore of d reaches value (spin first);
 * fails at once when d failed. */
VkResult hpl__semaphore_wait(hpl__device *d, VkSemaphore semaphore, uint64_t value);
/* The same, but even after d failed (what a destroy needs): fails only
 * when the driver does. The value must be submitted or signalled from the
 * host. */
VkResult hpl__semaphore_settle(hpl__device *d, VkSemaphore semaphore, uint64_t value);

/* submitter.c: the submit thread of each device */
/* Starts each device's (HPLVK_SUBMIT_THREAD), once the devices exist. */
int hpl__submitters_start(hpl_context *ctx);
/* Submits what each FIFO holds, then ends the threads; before any device
 * closes. */
void hpl__submitters_stop(hpl_context *ctx);
/* Submits s on its queue: hands it to d's submit thread, or submits it at
 * once without one. Under d's batch lock for the device's own timelines, so
 * that values reach each queue in order. The value is signalled whatever
 * happens: a refused submission marks d lost, and its value and every later
 * one are signalled from the host (by the thread, started then where there
 * was none). Returns VK_SUCCESS once handed over, or what the driver
 * returned when it refused at once. */
VkResult hpl__submit(hpl__device *d, const hpl__submission *s);
/* Returns once d's submit thread has made every submission handed to it:
 * before the application may wait for one of its values on the same queue
 * (a wait on a queue for a signal behind it there never ends). */
void hpl__submit_drain(hpl__device *d);
/* Frees d's FIFO when it is empty and holds room for more than `keep`
 * (inflight.c, once work is done). */
void hpl__submit_trim(hpl__device *d, uint32_t keep);
/* What d's first failed vkQueueSubmit returned (VK_SUCCESS: none). */
VkResult hpl__submit_failure(const hpl__device *d);
/* vkQueueSubmit on queue (one of d's) inside d's queue lock, and the
 * application's when it gave one. */
VkResult hpl__queue_submit_on(hpl__device *d, VkQueue queue, uint32_t count, const VkSubmitInfo *submits,
                              VkFence fence);

/* device.c */
int hpl__devices_open(hpl_context *ctx, const char *spec);
void hpl__devices_close(hpl_context *ctx);
void hpl__physical_info(VkPhysicalDevice pd, uint32_t index, hpl_device_info *out);
/* The HPL__FEATURE_* physical device pd supports. */
uint32_t hpl__physical_features(VkPhysicalDevice pd);
/* First step of opening device d as number `index`: physical device number
 * `physical` of the context, its properties. */
void hpl__device_describe(hpl_context *ctx, hpl__device *d, int index, int physical);
/* Last step, shared by devices hplvk creates and the application's: once
 * d->device, its queue and d->features are set, makes hplvk's objects on it
 * (timelines, command pool, layouts, pipeline cache, memory types). */
int hpl__device_setup(hpl_context *ctx, hpl__device *d);

/* peer.c: devices waiting on each other's timelines directly */
struct hpl__devspec_entry;
/* Should device i of the list make its timeline exportable (another entry
 * opens the same physical device, its driver shares timelines as opaque fds,
 * validation is off, HPLVK_PEER_SEMAPHORES is not 0)? Before it is made. */
bool hpl__peer_wanted(const hpl_context *ctx, const struct hpl__devspec_entry *entries, int count, int i);
/* Once every device exists: imports each exportable timeline into the other
 * devices of its physical device (hpl__device.peer). Failures leave a pair
 * on the gate. */
void hpl__peers_open(hpl_context *ctx);
/* Destroys the imports (each device idle first); before the devices go. */
void hpl__peers_close(hpl_context *ctx);
/* How many other devices' timelines `device` waits on directly. */
int hpl__peer_count(const hpl_context *ctx, int device);

/* interop.c: opens the application's devices (hpl_context_desc.vulkan) as
 * the context's devices, after checking what hplvk needs. */
int hpl__devices_adopt(hpl_context *ctx, const hpl_vulkan_desc *vk);

/* acquired.c: what arrays held by the application (hpl_array_vulkan_acquire) forbid */
/* Fails when an access to `box` of root (root coordinates) would race with
 * the application's work on an acquired buffer. */
int hpl__acquired_check(hpl_context *ctx, const hpl__array *root, const hpl__box *box, hpl_access access);
/* Is memory `slot` of root held by the application (not to be evicted)? */
bool hpl__acquired_holds(const hpl__array *root, int slot);
/* Fails when destroying a (a view, or a root) would free what the
 * application holds. */
int hpl__acquired_check_destroy(hpl_context *ctx, const hpl__array *a);
/* Logs a warning for each acquisition left (context destruction). */
void hpl__acquired_warn_left(hpl_context *ctx);

/* submit.c: batches of operations, submission, completion */
/* Starts one operation on d that must run after `waits` (points of any
 * device): returns the command buffer to record it into, after a barrier
 * that orders it after all earlier work of d. Work of other devices it
 * waits for is submitted first (their batches flushed). */
int hpl__batch_begin(hpl_context *ctx, hpl__device *d, const hpl__point *waits, int count, VkCommandBuffer *cb);
/* The same, for an operation that also needs the transfer lane's work up
 * to value xfer (0: none). */
int hpl__batch_begin_after(hpl_context *ctx, hpl__device *d, const hpl__point *waits, int count, uint64_t xfer,
                           VkCommandBuffer *cb);
/* A free command buffer of ring (of VkDevice dev; `done`: the timeline
 * value its queue reached), begun. */
int hpl__ring_begin(VkDevice dev, hpl__ring *ring, uint64_t done, hpl__cmd **out);
void hpl__ring_destroy(VkDevice dev, hpl__ring *ring);
/* Frees whole blocks of free command buffers (their timeline value `done`
 * reached) while the ring holds more than `keep`. */
void hpl__ring_trim(VkDevice dev, hpl__ring *ring, uint64_t done, uint32_t keep);
/* The same for d's rings (its compute queue's and its lane's), the buffer
 * begun ahead included (inflight.c, once work is done). */
void hpl__device_trim(hpl__device *d, uint32_t keep);
/* Room for the next n operations recorded on d (before the first of an
 * eval's subkernels records: on any error nothing runs): a command buffer
 * each on its queue and on its transfer lane, and a gate request each on
 * its queue, so that recording them allocates nothing. */
int hpl__device_reserve(hpl_context *ctx, hpl__device *d, uint32_t n);
/* Ends the operation begun last on d: *at is its point. May submit. Call it
 * also after a failure while recording (what was recorded is harmless:
 * copies of valid data into invalid places). */
int hpl__batch_end(hpl_context *ctx, hpl__device *d, hpl__point *at);
/* The same, submitting d's batch at once even while d is busy: another
 * device waits for this operation (it pushes rows, push.h). Waiting for the
 * device to idle would only hand the submission to whichever comes first,
 * the progress thread or that device's flush, under d's batch lock. */
int hpl__batch_end_now(hpl_context *ctx, hpl__device *d, hpl__point *at);
/* Submits d's open batch, if any. */
int hpl__batch_flush(hpl__device *d);
/* The same, with d->batch_lock held. */
int hpl__batch_flush_locked(hpl__device *d);
/* The progress thread's flush of a watched batch. */
void hpl__batch_watched(hpl__device *d);
/* Submits d's open batch, then one submission that waits (on the device)
 * for an external timeline semaphore of d's VkDevice (the application's) to
 * reach value: *at is its point, after which hplvk's later work on d runs. */
int hpl__submit_after_external(hpl_context *ctx, hpl__device *d, VkSemaphore semaphore, uint64_t value,
                               hpl__point *at);
uint64_t hpl__device_completed(hpl__device *d);
/* HPL_OK, or d's sticky error ("failed earlier") recorded as this thread's. */
int hpl__device_check(const hpl__device *d);
/* Why d failed, for messages: " (...)" into buf, or "" when unknown. */
const char *hpl__device_failure_cause(const hpl__device *d, char *buf, size_t size);
/* Signals d's gate, or its lane's, from the host (the progress thread). */
void hpl__gate_signal(hpl__device *d, bool lane, uint64_t value);
/* Blocks until d's timeline reaches value (spin first); fails at once
 * when d failed. */
VkResult hpl__timeline_wait(hpl__device *d, uint64_t value);
/* Timelines (coherence.h): the device a timeline belongs to, whether it is
 * the device's transfer lane, the point of lane value v of d. */
static inline hpl__device *hpl__timeline_device(hpl_context *ctx, int timeline)
{
    return &ctx->devices[timeline % HPL__MAX_DEVICES];
}
static inline bool hpl__timeline_is_lane(int timeline)
{
    return timeline >= HPL__LANE;
}
static inline hpl__point hpl__lane_point(const hpl__device *d, uint64_t v)
{
    return (hpl__point){HPL__LANE + d->index, v};
}
/* The value a timeline reached (0 on failure). */
uint64_t hpl__timeline_completed(hpl_context *ctx, int timeline);
/* Blocks until point p is reached (spin first). */
VkResult hpl__point_wait(hpl_context *ctx, hpl__point p);
/* Host waits for every point (releasing the context lock meanwhile). */
int hpl__wait_points(hpl_context *ctx, const hpl__point *points, int count);
/* The same without letting go of the context lock, for a caller in the
 * middle of an operation (staging.c); each device's batch is flushed first
 * where the point is in it. */
int hpl__wait_points_held(hpl_context *ctx, const hpl__point *points, int count);
int hpl__wait_idle(hpl_context *ctx);
void hpl__barrier_all(VkCommandBuffer cb);
void hpl__barrier_to_host(VkCommandBuffer cb);

/* timestamps.c: GPU timestamps of the event log, in host time */
/* Learns whether d can time commands (after its logical device exists). */
void hpl__timestamps_open(hpl_context *ctx, hpl__device *d);
void hpl__timestamps_close(hpl__device *d);
/* Makes the query pool (first time) and adds a calibration point. Waits
 * for a tiny submission on devices without VK_EXT_calibrated_timestamps. */
int hpl__timestamps_start(hpl__device *d);
/* Adds a calibration point when the last is older than a second and that
 * costs no wait (VK_EXT_calibrated_timestamps); never waits. */
void hpl__timestamps_refresh(hpl__device *d);
/* Takes a free query pair, reset; false when the device has no timestamps
 * or every pair is in use. */
bool hpl__timestamps_take(hpl__device *d, uint32_t *pair);
void hpl__timestamps_give(hpl__device *d, uint32_t pair);
/* Records the write of the pair's begin (end = false) or end timestamp:
 * the moment every command submitted before it has completed. */
void hpl__timestamps_write(hpl__device *d, VkCommandBuffer cb, uint32_t pair, bool end);
/* Reads a written pair as extended ticks (near_ns: a host time close to
 * when it ran, to extend ticks of fewer than 64 valid bits); false when
 * it is not available. Never waits. */
bool hpl__timestamps_read(hpl__device *d, uint32_t pair, uint64_t near_ns, uint64_t *begin, uint64_t *end);
/* Host CLOCK_MONOTONIC ns of an extended tick. */
uint64_t hpl__timestamps_to_ns(const hpl__device *d, uint64_t ticks);

/* trace.c: HPLVK_TRACE at context creation (a bad path is a warning), and
 * the trace written and the event log freed at its destruction. */
void hpl__trace_from_env(hpl_context *ctx);
void hpl__trace_at_destroy(hpl_context *ctx);

/* lane.c: the transfer lane */
/* Uploads of an operation smaller than this go in its compute submission
 * (measured on the H200: see samples/RESULTS.md). */
#define HPL__LANE_MIN_BYTES (4u << 20)
/* Opens d's transfer lane when it has a dedicated transfer queue (or when
 * HPLVK_TRANSFER_LANE says so); leaves it off otherwise. */
int hpl__lane_open(hpl__device *d);
void hpl__lane_close(hpl__device *d);
/* Begins a lane command buffer (for uploads). */
int hpl__lane_begin(hpl__device *d, VkCommandBuffer *cb);
/* Submits it after d's compute work up to compute value `after` (0: none;
 * d's open batch is submitted first when it holds that work) and, when
 * `gate` is not 0, after the lane's gate reaches it (hpl__lane_gate_for);
 * *value is its point on the lane's timeline. */
int hpl__lane_submit(hpl__device *d, uint64_t after, uint64_t gate, uint64_t *value);
/* What lane work that must follow `points` waits for: d's compute value
 * (*after, raised), and for points of other devices not reached yet a lane
 * gate value (*gate; 0: none) requested from the progress thread. */
int hpl__lane_gate_for(hpl_context *ctx, hpl__device *d, const hpl__point *points, int count, uint64_t *after,
                       uint64_t *gate);
/* The compute value of d's latest work recorded (submitted or in its open
 * batch). */
uint64_t hpl__device_recorded(hpl__device *d);
/* Can work on d's lane that must follow `points` wait for them by waiting
 * on d's compute timeline alone? Raises *after to the compute value it must
 * follow; false when a point of another device is not reached yet (that
 * work goes through the compute queue's gate). */
bool hpl__lane_after(hpl_context *ctx, const hpl__device *d, const hpl__point *points, int count, uint64_t *after);

/* progress.c */
int hpl__progress_start(hpl_context *ctx);
void hpl__progress_stop(hpl_context *ctx);
typedef enum hpl__progress_kind {
    HPL__PROGRESS_GATE,  /* signal a gate with gate_value: `device` is a timeline (coherence.h),
                          * the device's index for its compute gate, HPL__LANE + it for its lane's */
    HPL__PROGRESS_FLUSH, /* submit the device's open batch */
} hpl__progress_kind;
/* Once every point is reached, does `kind` for device: requests are served
 * in the order their points are reached, a device's gate requests in the
 * order they came (their values increase). A device has one flush watch
 * pending at most: another one meanwhile is dropped (hpl__batch_watched
 * flushes the batch then anyway). */
int hpl__progress_enqueue(hpl_context *ctx, hpl__progress_kind kind, int device, uint64_t gate_value,
                          const hpl__point *points, int count);
/* Room for n more gate requests of `timeline`: that many enqueues of them
 * after it cannot fail. */
int hpl__progress_reserve(hpl_context *ctx, int timeline, uint32_t n);
/* Frees the gate queues that are empty and hold room for more than `keep`
 * (inflight.c, once work is done). */
void hpl__progress_trim(hpl_context *ctx, uint32_t keep);

/* inflight.c: bounded work in flight */
/* Reads the bound (hpl_context_desc.max_in_flight, else
 * HPLVK_MAX_IN_FLIGHT, else the default) once the devices are open. */
int hpl__inflight_configure(hpl_context *ctx, uint32_t desc_max);
/* Operations recorded on d and not completed (the context lock held). */
uint64_t hpl__inflight_count(hpl__device *d);
/* At the start of a call that records work (the context lock held, no
 * operation begun): waits while a device has max_in_flight operations in
 * flight or more, until it has fewer, releasing the lock meanwhile (look
 * handles up after it). Fails only when a device fails meanwhile. */
int hpl__inflight_wait(hpl_context *ctx);
/* Gives back what bursts of work grew and no longer use: command buffers,
 * argument chunks, FIFO room (hpl_finish). */
void hpl__inflight_trim(hpl_context *ctx);

/* memory.c */
int hpl__buffer_create(hpl__device *d, VkDeviceSize size, VkBufferUsageFlags usage, uint32_t memory_type,
                       bool device_address, VkBuffer *buffer, VkDeviceMemory *memory);
int hpl__args_alloc(hpl__device *d, uint32_t size, hpl__arg_chunk **chunk, uint32_t *offset);
/* Makes room for `count` blocks of `size` in d's current chunk, so that
 * that many hpl__args_alloc calls after it cannot fail: an eval allocates
 * before it records anything (on any error nothing runs). */
int hpl__args_reserve(hpl__device *d, uint32_t size, uint32_t count);
void hpl__args_release(hpl__device *d);
/* Frees chunks whose work is done, other than the current one, while d has
 * more than `keep` (inflight.c, once work is done). */
void hpl__args_trim(hpl__device *d, uint32_t keep);
int hpl__host_import(hpl__device *d, void *ptr, size_t size, bool device_address, VkBuffer *buffer,
                     VkDeviceMemory *memory, VkDeviceSize *offset);

/* storage.c: a root's memories, below the array API */
/* Maps the root's host storage (page-aligned zeros) unless it has some. */
int hpl__host_storage_ensure(hpl__array *root);
/* Imports the host storage (made first if needed) into device: a transfer
 * is then one DMA; on a zero-copy device, kernels use it in place. */
int hpl__host_storage_import(hpl_context *ctx, hpl__array *root, int device);
/* Frees the imports and the storage the library mapped (destruction). */
void hpl__host_storage_free(hpl_context *ctx, hpl__array *root);
/* The device buffer of root that is coherence memory `slot`, or NULL. */
hpl__instance *hpl__instance_of(hpl__array *root, int slot);

/* array.c */
/* Makes a root array (hpl_array_create with the lock held). */
int hpl__array_make(hpl_context *ctx, const hpl_array_desc *desc, hpl__array **out);
/* Destroys an array or subarray (hpl_array_destroy with the lock held; the
 * wait for an array's work releases it). */
void hpl__array_drop(hpl_context *ctx, hpl__array *a);
int hpl__array_get(hpl_context *ctx, hpl_array handle, hpl__array **out);
hpl__view hpl__view_of(const hpl__array *a);
void hpl__array_destroy_all(hpl_context *ctx);
/* Readies `box` (NULL: all) of root's host storage for the host: brings it
 * valid there when fetch, and waits for the work the host must wait for
 * before reading it (for_write: before writing it), on that box only.
 * Releases the lock while waiting: look handles up again after. */
int hpl__host_sync(hpl_context *ctx, hpl__array *root, const hpl__box *box, bool fetch, bool for_write);
/* Returns (then forgets) an asynchronous error of root's work, or the
 * error of a failed device that holds it, with a message naming the array
 * (the caller prefixes its own name). */
int hpl__take_error(hpl_context *ctx, hpl__array *root);
/* Records that the host wrote a's owned box. */
int hpl__host_written(hpl__array *a);
/* a's first element in its root's host storage. */
uint8_t *hpl__host_pointer(const hpl__array *a);
/* The subarray of parent with box and owned box (root coordinates): the
 * existing one, else a new one (hpl_subarray, hpl_array_part). */
/* Inclusive ranges relative to parent (one per dimension) as a box in root
 * coordinates; errors name the range at fault. */
int hpl__box_of_ranges(const hpl__array *parent, int nranges, const hpl_range *ranges, hpl__box *out);
int hpl__subarray_make(hpl_context *ctx, hpl__array *parent, const hpl__box *box, const hpl__box *owned,
                       hpl__array **out);

/* transfer.c: moving regions between memories */
/* Where elements of a root live in one buffer: the buffer holds `box` dense
 * row-major from byte `base`, at device address `address` (0: the buffer
 * has none, and copies to or from it are vkCmdCopyBuffer regions). */
typedef struct hpl__layout {
    VkBuffer buffer;
    VkDeviceSize base;
    VkDeviceAddress address;
    hpl__box box;
} hpl__layout;
hpl__layout hpl__layout_of(hpl__array *root, int slot, int device);
/* copy.c: the copy kernel (shaders/copy.comp) for boxes of many short runs,
 * per device: HPLVK_STRIDED_COPY=auto (GPUs), kernel or dma. */
int hpl__copy_open(hpl_context *ctx, hpl__device *d);
void hpl__copy_close(hpl__device *d);
/* Records the copy of `region` (destination coordinates) from src to dst on
 * d's compute queue; element x of dst takes element x + shift of src. Boxes
 * of many short runs go by the copy kernel, the rest as copy regions. */
void hpl__record_copy(hpl__device *d, VkCommandBuffer cb, const hpl__array *root, const hpl__region *region,
                      const hpl__layout *src, const hpl__layout *dst, const int64_t shift[3]);
/* Would hpl__record_copy run a copy kernel for any box of region? Such a
 * copy stays off the transfer lane, whose queue runs no kernels. */
bool hpl__copy_by_kernel(const hpl__device *d, const hpl__array *root, const hpl__region *region,
                         const hpl__layout *src, const hpl__layout *dst);
/* Calls fn for each run of contiguous elements of box x (destination
 * coordinates) between a source and a destination holding boxes src and dst
 * dense row-major; element e of dst takes e + shift of src. Offsets in
 * elements from each box's first element. Whole rows or planes make one run. */
typedef void (*hpl__run_fn)(void *user, uint64_t src_offset, uint64_t dst_offset, uint64_t count);
void hpl__box_runs(const hpl__box *x, const hpl__box *src, const hpl__box *dst, const int64_t shift[3],
                   hpl__run_fn fn, void *user);
/* Host memory version of the same: copies box x from src (holding src_box)
 * to dst (holding dst_box). */
void hpl__host_copy(const hpl__box *x, const uint8_t *src, const hpl__box *src_box, uint8_t *dst,
                    const hpl__box *dst_box, const int64_t shift[3], size_t esize);
extern const int64_t hpl__no_shift[3]; /* {0, 0, 0} */
/* Copies t's region from a device memory to the host storage as its own
 * submission on that device, and records it. */
int hpl__stage_to_host(hpl_context *ctx, hpl__array *root, const hpl__transfer *t);
/* Records download t (source a memory of d) into cb: no waits, no
 * coherence (the caller's). */
void hpl__record_download(hpl_context *ctx, hpl__device *d, VkCommandBuffer cb, hpl__array *root,
                          const hpl__transfer *t);
/* Brings region of root valid into the host storage (submits copies, does
 * not wait). */
int hpl__fetch_to_host(hpl_context *ctx, hpl__array *root, const hpl__region *region);
/* Number of elements of a box and its byte offset inside a layout box. */
uint64_t hpl__box_offset(const hpl__box *outer, const uint64_t point[3]);

/* stats.c */
/* Counts transfer step t (of root's elements) in its device's statistics. */
void hpl__count_transfer(hpl_context *ctx, const hpl__array *root, const hpl__transfer *t);

/* residency.c: which buffers each device holds */
/* Starts an operation: instances pinned for it stay until the next one. */
void hpl__operation_begin(hpl_context *ctx);
/* The coherence memory through which device `device` accesses `box` of root:
 * the host storage on a zero-copy device, else a buffer of root on the device
 * holding the box (allocated, after evicting least recently used unpinned
 * buffers, when there is none). Pins it for the current operation. */
int hpl__array_memory_for(hpl_context *ctx, hpl__array *root, int device, const hpl__box *box, int *slot);
/* Evicts one instance: saves what is valid only there, waits for its work,
 * frees it. Holds the lock throughout. */
int hpl__instance_evict(hpl_context *ctx, hpl__array *root, hpl__instance *inst);
void hpl__instance_free(hpl_context *ctx, hpl__array *root, hpl__instance *inst);
/* Sets each device's memory limit and zero-copy mode (context creation). */
int hpl__devices_configure(hpl_context *ctx, const hpl_context_desc *desc);

/* ---- bounds.c: bounds checks of kernels (hplvk.h chapter 6c) ------------ */

/* Bytes of a device's bounds report (hplvk.glsl's hplvk_report_t: 80). */
#define HPL__BOUNDS_REPORT_BYTES 128u
/* Decides which devices check (asked: hpl_context_desc.bounds_check; else
 * HPLVK_BOUNDS_CHECK; validation; CPU and zero-copy devices always) and
 * makes their reports. After hpl__devices_configure. */
int hpl__bounds_configure(hpl_context *ctx, bool asked);
void hpl__bounds_close(hpl__device *d);
/* After a checking device's dispatches: their report writes made visible
 * to the host. Nothing on other devices. */
void hpl__bounds_barrier(const hpl__device *d, VkCommandBuffer cb);
/* Reads and clears the reports of work the host has waited for: the first
 * stray access found is HPL_ERROR_KERNEL_OUT_OF_BOUNDS naming the kernel,
 * the device, the element, the array and the part (also logged as an
 * error); HPL_OK when there is none. Under the context lock. */
int hpl__bounds_poll(hpl_context *ctx);

/* builtin.c: the library's own kernels */
/* Fills a's owned box with value (one element) on device, asynchronously. */
int hpl__fill_on_device(hpl_context *ctx, hpl__array *a, const void *value, int device);
/* Can device reduce arrays of type (64-bit types need the features)? */
bool hpl__reduce_supported(const hpl__device *d, hpl_type type);
/* Reduces `box` of root on device to `groups` partial values (one per
 * work-group of 256) in partials[first .. first + groups), asynchronously. */
int hpl__reduce_on_device(hpl_context *ctx, hpl__array *root, const hpl__box *box, int device, hpl__array *partials,
                          uint64_t first, uint32_t groups, hpl_reduction op);

/* staging.c: host transfers through slots of the device's own memory */
/* Reads HPLVK_HOST_IMPORT and HPLVK_STAGING_CHUNK (context creation, before
 * zero-copy is decided: a device that may not import cannot be zero-copy). */
int hpl__staging_configure(hpl_context *ctx);
void hpl__staging_close(hpl__device *d);
/* Runs transfer t between the host storage and a buffer of a device that
 * cannot import it (hpl__host_storage_import set `staged`), chunk by chunk,
 * and records it. Returns when the host side is done: an upload's host
 * region is read, a download's written. */
int hpl__staged_upload(hpl_context *ctx, hpl__array *root, const hpl__transfer *t);
int hpl__staged_download(hpl_context *ctx, hpl__array *root, const hpl__transfer *t);

/* access.c: reads HPLVK_PUSH (context creation): whether devices push the
 * rows others read from them with the work that writes them (push.h). */
int hpl__push_configure(hpl_context *ctx);

/* exchange.c: device -> device through the host, chunked and pipelined */
/* Reads HPLVK_EXCHANGE_CHUNK (context creation). */
int hpl__exchange_configure(hpl_context *ctx);
/* The chunk size of a transfer of `bytes` from device a to device b; 0: it
 * goes whole. */
uint64_t hpl__exchange_chunk_bytes(const hpl_context *ctx, const hpl__device *a, const hpl__device *b,
                                   uint64_t bytes);
/* Runs the large device -> device pieces of plan (a step from a device
 * buffer to the host followed by one from the host to another device's
 * buffer, of the same region) at once, in chunks: for each, a copy on the
 * source device and a copy on the destination device that waits for it
 * only, each its own submission. Records them in root's coherence state and
 * statistics and removes them from plan; the destination's later work
 * follows on its queue. */
int hpl__exchange_plan(hpl_context *ctx, hpl__array *root, hpl__transfer_plan *plan);

/* kernel.c */
int hpl__kernel_get(hpl_context *ctx, hpl_kernel handle, hpl__kernel **out);
const hpl__variant *hpl__kernel_variant_for(const hpl__kernel *k, const hpl__device *d);
/* The variant's pipeline on d for a local size (in the dispatch's order) and
 * walk (hplvk.glsl's hplvk_walk; 0 unless the variant is walkable). */
int hpl__pipeline_get(hpl_context *ctx, hpl__variant *v, hpl__device *d, const uint32_t local[3], int walk,
                      VkPipeline *out);
void hpl__kernel_destroy_all(hpl_context *ctx);
/* Retires the plans left on the context: their handles go stale (plan_handle.c). */
void hpl__plans_destroy_all(hpl_context *ctx);
int hpl__kernel_create_locked(hpl_context *ctx, const hpl_kernel_desc *desc, hpl__kernel **out);


#define HPL__LOCK(ctx) pthread_mutex_lock(&(ctx)->lock)
#define HPL__UNLOCK(ctx) pthread_mutex_unlock(&(ctx)->lock)

#endif
