/* The event log: every kernel, copy and host wait of a context, with the
 * GPU begin and end times of the commands (timestamps.c). The trace
 * (trace.c) writes it as a file; other library code (load balancers) reads
 * it to time kernels:
 *
 *   hpl__events_enable(ctx, true);                 // a user of the log
 *   uint64_t from = hpl__events_next_serial(ctx);
 *   ... evals ...
 *   hpl__events_each(ctx, from, fn, user);         // the completed ones, in record order
 *   hpl__events_forget(ctx, hpl__events_next_serial(ctx));
 *   hpl__events_enable(ctx, false);
 *
 * The log records only while it has a user; off, each hook costs one test.
 * A device event belongs to the value of its queue's timeline (the compute
 * queue's, or the transfer lane's) its commands are submitted under
 * (hpl__events_submitted), whenever that happens, and completes once that
 * timeline reaches it: results are read then, lazily, never
 * waited for (a reader that needs every event waits for the work first,
 * hpl__wait_idle or the points it cares about). All functions run with the
 * context lock held.
 *
 * The contract with submission (submit.c, access.c, lane.c): the commands
 * recorded on a queue of device d since the last hpl__events_submitted(d,
 * ..) for that queue run as the work `at` the next call for it names (the point hpl__op_submit or
 * hpl__cmd_submit returned, submitted then or later: a batch); if they will
 * never run, hpl__events_abandon(d) says so. A begin timestamp is written
 * once every earlier command of the queue has completed, so events need no
 * submission of their own. */
#ifndef HPL_EVENTS_H
#define HPL_EVENTS_H

#include "engine.h"

struct hpl__subkernel;
typedef struct hpl__events hpl__events;

/* PLAN: a plan's search ended (a host event spanning the search).
 * MESSAGE: a box sent to or received from another rank (a context over
 * ranks), from its posting to the end of the wait for its exchange. */
typedef enum hpl__event_kind {
    HPL__EVENT_KERNEL,
    HPL__EVENT_COPY,
    HPL__EVENT_WAIT,
    HPL__EVENT_PLAN,
    HPL__EVENT_MESSAGE
} hpl__event_kind;

typedef enum hpl__event_state {
    HPL__EVENT_RECORDED,  /* in commands not submitted yet */
    HPL__EVENT_SUBMITTED, /* value known, not complete */
    HPL__EVENT_DONE,      /* times known */
    HPL__EVENT_DROPPED,   /* never ran (its commands were abandoned) */
} hpl__event_state;

typedef enum hpl__copy_direction {
    HPL__COPY_TO_DEVICE,    /* host storage -> device buffer */
    HPL__COPY_TO_HOST,      /* device buffer -> host storage */
    HPL__COPY_WITHIN,       /* between buffers of one device */
    HPL__COPY_HOST_TO_HOST, /* a zero-copy device copying inside the host storage */
} hpl__copy_direction;

/* An array a kernel takes, and how. */
typedef struct hpl__event_array {
    uint32_t name; /* hpl__events_name */
    hpl_access access;
} hpl__event_array;

#define HPL__NO_PAIR UINT32_MAX
#define HPL__EVENT_BOXES 8 /* boxes of a copy's region kept */

typedef struct hpl__event {
    uint64_t serial; /* record order, from 1 */
    hpl__event_kind kind;
    hpl__event_state state;
    int device;      /* where it runs; HPL__NO_DEVICE: a host wait */
    int queue;       /* on the device: 0 the compute queue, 1 the transfer lane (lane.c) */
    uint32_t thread; /* the host thread that recorded it (1, 2, ... in order of first use) */
    uint32_t name;   /* kernel, or array copied (hpl__events_name) */
    uint64_t value;  /* value of its queue's timeline */
    uint64_t recorded_ns; /* host time when it was recorded */
    /* gpu_time: extended device ticks of its begin and end timestamps (see
     * hpl__events_times); else host times: a wait's own, a device event's
     * recording and the moment its completion was seen (device without
     * timestamps, or all of its query pairs in use). */
    bool gpu_time;
    uint64_t begin, end;
    uint32_t pair; /* its timestamp queries while in flight */
    union {
        struct {
            uint64_t offset[3], size[3]; /* its box of the domain */
            uint64_t global[3];          /* the whole eval's domain */
            uint32_t local[3];
            uint32_t array_count;
            hpl__event_array *arrays;
        } kernel;
        struct {
            uint64_t bytes;
            uint32_t boxes;        /* of the region copied */
            uint32_t kernel_boxes; /* of them, moved by the copy kernel (copy.c) */
            hpl__copy_direction direction;
            int src_device, dst_device; /* HPL__NO_DEVICE: the host storage */
            hpl__box bounds;            /* of the region (destination coordinates) */
            hpl__box *region;           /* its first HPL__EVENT_BOXES boxes (NULL: none kept) */
        } copy;
        struct {
            int point_count;
            hpl__point *points; /* what it waited for */
        } wait;
        struct {
            char *text; /* hpl_plan_describe's line */
        } plan;
        struct {
            int peer;    /* the other rank */
            bool send;   /* else a receive */
            uint64_t bytes;
            hpl__box box; /* of the array (name) */
        } message;
    } u;
} hpl__event;

/* ---- readers -------------------------------------------------------------- */

/* Adds (on) or removes (off) a user; the log records while it has one. */
int hpl__events_enable(hpl_context *ctx, bool on);
int hpl__events_users(const hpl_context *ctx);
/* The serial the next event will get. */
uint64_t hpl__events_next_serial(const hpl_context *ctx);
/* Reads the results of completed events (never waits). */
void hpl__events_poll(hpl_context *ctx);
/* Calls fn for each completed event of serial >= from, in record order,
 * with its begin and end in host CLOCK_MONOTONIC ns; returns how many
 * events of those serials are still in flight (after a poll). */
typedef void (*hpl__event_fn)(void *user, const hpl__event *e, uint64_t begin_ns, uint64_t end_ns);
int hpl__events_each(hpl_context *ctx, uint64_t from, hpl__event_fn fn, void *user);
/* The host times of a completed event. */
void hpl__events_times(const hpl_context *ctx, const hpl__event *e, uint64_t *begin_ns, uint64_t *end_ns);
const char *hpl__events_name(const hpl_context *ctx, uint32_t name);
/* Drops completed events of serial < before (not those a running trace
 * still needs: hpl__events_keep). */
void hpl__events_forget(hpl_context *ctx, uint64_t before);
/* Forget keeps events of serial >= from (UINT64_MAX: none). */
void hpl__events_keep(hpl_context *ctx, uint64_t from);
/* Events the log could not hold (out of host memory), and device events
 * that got host times only because every query pair was in use. */
uint64_t hpl__events_lost(const hpl_context *ctx);
uint64_t hpl__events_host_timed(const hpl_context *ctx);
/* Events the log holds now. */
size_t hpl__events_held(const hpl_context *ctx);
/* Frees the log (context destruction, devices idle). */
void hpl__events_destroy(hpl_context *ctx);

/* ---- hooks (where commands are recorded) ------------------------------- */

void hpl__events_kernel_begin_(hpl_context *ctx, const struct hpl__subkernel *s, VkCommandBuffer cb,
                               const uint64_t whole[3]);
void hpl__events_kernel_end_(hpl__device *d, VkCommandBuffer cb);
hpl__event *hpl__events_copy_begin_(hpl_context *ctx, hpl__device *d, VkCommandBuffer cb, const hpl__array *root,
                                    const hpl__region *region, int src, int dst);
void hpl__events_copy_end_(hpl__device *d, VkCommandBuffer cb, const hpl__event *e);
void hpl__events_submitted_(hpl__device *d, hpl__point at);
void hpl__events_abandon_(hpl__device *d);
void hpl__events_wait_(hpl_context *ctx, const hpl__point *points, int count, uint64_t since);
/* A plan's search that began at host time `since` ended: text describes
 * its answer (recorded while the log has a user). */
void hpl__events_plan(hpl_context *ctx, uint64_t since, const char *text);
/* A message of box of root to (send) or from rank peer is posted now; it
 * ends at the next hpl__events_messages_end. */
void hpl__events_message_(hpl_context *ctx, const hpl__array *root, int peer, bool send, const hpl__box *box);
/* The messages recorded since serial `from` (hpl__events_next_serial
 * before them) have arrived or left: they end now. */
void hpl__events_messages_end_(hpl_context *ctx, uint64_t from);
static inline void hpl__events_message(hpl_context *ctx, const hpl__array *root, int peer, bool send,
                                       const hpl__box *box)
{
    if (ctx->events_on)
        hpl__events_message_(ctx, root, peer, send, box);
}
static inline void hpl__events_messages_end(hpl_context *ctx, uint64_t from)
{
    if (ctx->events_on)
        hpl__events_messages_end_(ctx, from);
}

/* Around the dispatches of subkernel s recorded into cb (whole: the eval's
 * domain). */
static inline void hpl__events_kernel_begin(hpl_context *ctx, const struct hpl__subkernel *s, VkCommandBuffer cb,
                                            const uint64_t whole[3])
{
    if (ctx->events_on)
        hpl__events_kernel_begin_(ctx, s, cb, whole);
}
static inline void hpl__events_kernel_end(hpl_context *ctx, hpl__device *d, VkCommandBuffer cb)
{
    if (ctx->events_on)
        hpl__events_kernel_end_(d, cb);
}

/* The commands recorded on d's queue of `at` (a lane point: the transfer
 * lane) since its last submission run as work `at` (the point
 * hpl__op_submit / hpl__cmd_submit / hpl__lane_submit returned). */
static inline void hpl__events_submitted(hpl__device *d, hpl__point at)
{
    if (d->timestamps.pending_count)
        hpl__events_submitted_(d, at);
}
/* The commands recorded on d since its last submission will never run. */
static inline void hpl__events_abandon(hpl__device *d)
{
    if (d->timestamps.pending_count)
        hpl__events_abandon_(d);
}

/* A host wait for points: since = hpl__events_wait_begin() before it. */
static inline uint64_t hpl__events_wait_begin(const hpl_context *ctx)
{
    return ctx->events_on ? hpl__now_ns() : 0;
}
static inline void hpl__events_wait(hpl_context *ctx, const hpl__point *points, int count, uint64_t since)
{
    if (since && ctx->events_on)
        hpl__events_wait_(ctx, points, count, since);
}

#endif
