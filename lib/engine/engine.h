/* The engine's shared structures: devices, arrays (roots, views, their
 * buffers), kernels as the engine runs them, the context; and the state of
 * a device or timeline that any thread may read. */
#ifndef HPL_ENGINE_H
#define HPL_ENGINE_H

#include "cache.h"
#include "coherence.h"
#include "common.h"
#include "handle.h"
#include "partition.h"
#include "push.h"
#include "reflect.h"
#include "ring.h"

#include <pthread.h>
#include "hplvk_transport.h"
#include "hplvk_vulkan.h" /* <vulkan/vulkan.h> and the interop types */

/* ---- devices ---------------------------------------------------------- */

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

typedef struct hpl__submitter hpl__submitter; /* submitter.h */

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

/* ---- contexts over ranks ---------------------------------------------- */

struct hpl__array;
struct hpl__kernel;

/* A context that spans ranks (hplvk_transport.h, api/span.c): its devices
 * are every rank's, in rank order; ctx->devices are this rank's own, global
 * devices first .. first + ctx->device_count - 1. */
typedef struct hpl__span {
    hpl_transport transport;
    int rank, ranks;
    int device_count; /* of all ranks */
    int first;        /* global index of this rank's device 0 */
    int owner[HPL__MAX_DEVICES];            /* the rank of each global device */
    hpl_device_info info[HPL__MAX_DEVICES]; /* of each global device */
    uint64_t sent_bytes, sent_count, received_bytes, received_count; /* boxes to and from other ranks */
    uint64_t chunk; /* span.c: bytes per message of a large move (HPLVK_RANK_CHUNK); 0: whole */
    uint64_t origin_ns; /* the earliest rank's host clock when the ranks joined: ts 0 of every rank's trace */
    /* api/span.c's work, called through here by the files it builds on
     * (context.c, array.c, eval.c), which never name span.c. */
    int (*eval)(hpl_context *ctx, struct hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                size_t nargs, const hpl__part *given); /* given: NULL, or a piece per device (plans) */
    int (*array_init)(hpl_context *ctx, struct hpl__array *root, int rc); /* root NULL when rc says why not */
    void (*array_free)(struct hpl__array *root);
    int (*host_access)(hpl_context *ctx, struct hpl__array *a, hpl_access mode);
    int (*host_wrote)(hpl_context *ctx, struct hpl__array *a);
    void (*free)(hpl_context *ctx);
} hpl__span;

/* This rank's index of global device g of a context over ranks, or -1 when
 * another rank holds it. */
static inline int hpl__span_local(const hpl__span *s, int g)
{
    return s->owner[g] == s->rank ? g - s->first : -1;
}

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
    struct hpl__rank_state *ranks; /* where it is valid across ranks (rank_state.h); NULL: one process */
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
    hpl__span *span;          /* the ranks it spans (span.c); NULL: this process alone */
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

#define HPL__LOCK(ctx) pthread_mutex_lock(&(ctx)->lock)
#define HPL__UNLOCK(ctx) pthread_mutex_unlock(&(ctx)->lock)

#endif
