#define _POSIX_C_SOURCE 200809L /* pthread_condattr_setclock */
/* The progress thread: links timelines of devices that share no semaphores.
 * Work on device B that needs work on device A is submitted at once, waiting
 * on B's gate semaphore; this thread waits for A's timeline and then signals
 * B's gate, so the user's thread never waits inside eval. It also runs a
 * device's watch once the work before it is done: an action the request
 * carries (submit.c's submits the device's open batch, so that batched work
 * never waits for the user's next call).
 *
 * Requests are kept per device and kind: each gate's requests (a device's
 * compute queue's gate, and its transfer lane's) in a queue, served in
 * order (its gate's values must increase, and a later value would open
 * the work of an earlier one), and its one watch (submit.c keeps at most
 * one: flush_watched). Each look serves every queue
 * head whose points are reached, whatever the other heads wait for: a gate
 * never waits behind a watch for a busy device, nor behind another
 * device's gate. A look reads every device's timeline (vkWaitSemaphores
 * cannot wait across VkDevices). With nothing to serve, the thread spins
 * for SPIN_NS after the last change, as a host wait does (most waits are
 * for one short kernel), then blocks in vkWaitSemaphores on one device's
 * timeline, until a value a head needs there, for an eighth of the time
 * waited so far (NAP_MIN_NS to NAP_MAX_NS): heads waiting on other devices,
 * and new requests, are looked at by then. (A new request cannot end that
 * wait: only a wait for any of several semaphores, one of them signalled by
 * the request, could, and Lavapipe (Mesa 22.3) spins through such a wait,
 * taking a core from its own kernels.) Under validation (see vk.c) it
 * never blocks in vkWaitSemaphores: it naps on its condition variable,
 * which a new request ends. */
#include "progress.h"

#include "vk.h"

#include <sched.h>
#include <string.h>
#include <time.h>

typedef struct request {
    uint64_t serial;     /* enqueue order */
    uint64_t gate_value; /* gate requests */
    hpl__progress_fn fn; /* watches: their action */
    void *arg;
    int count;
    hpl__point points[HPL__MAX_TIMELINES];
} request;

/* A device's gate requests, oldest first: a ring. */
typedef struct gate_queue {
    request *items;
    uint32_t head, count, capacity;
} gate_queue;

/* What a look found to do for one device. */
typedef struct action {
    uint64_t gate_value; /* signal the gate with it; 0: none */
    hpl__progress_fn fn; /* the watch's action, fn(arg); NULL: none */
    void *arg;
    hpl__device *failed; /* a device a served request waited for, which failed */
} action;

struct hpl__progress {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    gate_queue gates[HPL__MAX_TIMELINES]; /* per gate: a device's compute queue's (its index), its lane's */
    request watch[HPL__MAX_DEVICES];
    bool watching[HPL__MAX_DEVICES]; /* watch[i] is pending */
    uint32_t count;                  /* requests pending */
    uint64_t enqueued;               /* requests ever enqueued: a new one restarts the spin */
    bool poll;                       /* validation: never block in vkWaitSemaphores */
    bool stop;
    hpl_context *ctx;
};

/* Spin this long after the last change before blocking (vk.c's). */
#define SPIN_NS 50000u
/* Bounds of a wait's timeout (an eighth of the time waited): the longest a
 * new request, or a head waiting on another device, goes unseen. */
#define NAP_MIN_NS 20000u
#define NAP_MAX_NS 1000000u

/* The value each timeline reached (both of each device: coherence.h);
 * UINT64_MAX for a failed device: its points count as reached, so that no
 * gate stays shut (the error is recorded when serving). */
static void look(const hpl__progress *p, uint64_t *done)
{
    for (int i = 0; i < p->ctx->device_count; i++) {
        hpl__device *d = &p->ctx->devices[i];
        bool failed = hpl__device_error(d);
        done[i] = failed ? UINT64_MAX : hpl__device_completed(d);
        done[HPL__LANE + i] = failed ? UINT64_MAX : d->xfer.on ? hpl__semaphore_value(d, d->xfer.timeline) : 0;
    }
}

static bool reached(const request *r, const uint64_t *done)
{
    for (int i = 0; i < r->count; i++)
        if (done[r->points[i].timeline] < r->points[i].value)
            return false;
    return true;
}

/* The first device r waited for that failed (NULL: none). */
static hpl__device *failed_of(const hpl__progress *p, const request *r)
{
    for (int i = 0; i < r->count; i++) {
        hpl__device *d = hpl__timeline_device(p->ctx, r->points[i].timeline);
        if (hpl__device_error(d))
            return d;
    }
    return NULL;
}

/* Takes device's requests whose points are reached: the gate request at
 * the head of its queue, and its watch. Returns whether any. (One
 * gate value per look: signalling only the last of several reached ones
 * would do, but the validation layer 1.3.239 then reports
 * VUID-VkSemaphoreSignalInfo-value-03259, a signal above a pending one: it
 * seems to take the queued waits for the skipped values for signals.) */
static bool take(hpl__progress *p, int gate, const uint64_t *done, action *a)
{
    gate_queue *q = &p->gates[gate];
    *a = (action){0};
    if (q->count && reached(&q->items[q->head], done)) {
        const request *r = &q->items[q->head];
        a->gate_value = r->gate_value;
        a->failed = failed_of(p, r);
        q->head = (q->head + 1) % q->capacity;
        q->count--;
        p->count--;
    }
    if (gate < HPL__MAX_DEVICES && p->watching[gate] && reached(&p->watch[gate], done)) {
        a->fn = p->watch[gate].fn;
        a->arg = p->watch[gate].arg;
        a->failed = a->failed ? a->failed : failed_of(p, &p->watch[gate]);
        p->watching[gate] = false;
        p->count--;
    }
    return a->gate_value || a->fn;
}

static void serve(hpl__progress *p, int gate, const action *a)
{
    hpl_context *ctx = p->ctx;
    hpl__device *d = hpl__timeline_device(ctx, gate);
    /* Still open the gate so that the waiting device does not hang; its
     * work computes from what never ran, so it fails too, before the gate
     * opens (a wait that sees its values reached then sees the failure). */
    if (a->failed) {
        hpl__context_record_error(ctx, hpl__device_error(a->failed));
        if (a->gate_value)
            hpl__device_fail_after(d, a->failed);
    }
    if (a->gate_value)
        hpl__gate_signal(d, hpl__timeline_is_lane(gate), a->gate_value);
    if (a->fn)
        a->fn(a->arg);
}

/* Serves what is reached (p->lock held, released while serving: serving
 * takes batch_lock, which enqueuers hold while taking p->lock). Returns
 * whether it served anything. */
static bool serve_reached(hpl__progress *p, const uint64_t *done)
{
    action actions[HPL__MAX_TIMELINES];
    bool any = false;
    for (int i = 0; i < p->ctx->device_count; i++) {
        any |= take(p, i, done, &actions[i]);
        any |= take(p, HPL__LANE + i, done, &actions[HPL__LANE + i]);
    }
    if (!any)
        return false;
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->ctx->device_count; i++) {
        serve(p, i, &actions[i]);
        serve(p, HPL__LANE + i, &actions[HPL__LANE + i]);
    }
    pthread_mutex_lock(&p->lock);
    return true;
}

/* The oldest request among the heads: gate heads first (other devices'
 * queues wait for them), else watches. NULL when there is none. */
static const request *oldest_head(const hpl__progress *p)
{
    const request *oldest = NULL;
    for (int t = 0; t < HPL__MAX_TIMELINES; t++) {
        const gate_queue *q = &p->gates[t];
        if (q->count && (!oldest || q->items[q->head].serial < oldest->serial))
            oldest = &q->items[q->head];
    }
    for (int i = 0; !oldest && i < p->ctx->device_count; i++)
        if (p->watching[i])
            oldest = &p->watch[i];
    return oldest;
}

static void least_on(const request *r, int timeline, const uint64_t *done, uint64_t *value)
{
    for (int i = 0; i < r->count; i++)
        if (r->points[i].timeline == timeline && r->points[i].value > done[timeline] && r->points[i].value < *value)
            *value = r->points[i].value;
}

/* What to block on: the timeline of the oldest head's first point not
 * reached, and the least value not reached that a head needs there. False
 * when there is none (a request came after the look). */
static bool block_target(const hpl__progress *p, const uint64_t *done, int *timeline, uint64_t *value)
{
    const request *r = oldest_head(p);
    int i = 0;
    while (r && i < r->count && done[r->points[i].timeline] >= r->points[i].value)
        i++;
    if (!r || i == r->count)
        return false;
    *timeline = r->points[i].timeline;
    *value = UINT64_MAX;
    for (int t = 0; t < HPL__MAX_TIMELINES; t++)
        if (p->gates[t].count)
            least_on(&p->gates[t].items[p->gates[t].head], *timeline, done, value);
    for (int k = 0; k < p->ctx->device_count; k++)
        if (p->watching[k])
            least_on(&p->watch[k], *timeline, done, value);
    return true;
}

/* Waits (p->lock held, released meanwhile) until a timeline reaches value
 * or timeout_ns pass. */
static void block_on(hpl__progress *p, int timeline, uint64_t value, uint64_t timeout_ns)
{
    hpl__device *d = hpl__timeline_device(p->ctx, timeline);
    VkSemaphore semaphore = hpl__timeline_is_lane(timeline) ? d->xfer.timeline : d->timeline;
    pthread_mutex_unlock(&p->lock);
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1,
                              .pSemaphores = &semaphore,
                              .pValues = &value};
    VkResult r = vkWaitSemaphores(d->device, &wi, timeout_ns);
    if (r != VK_SUCCESS && r != VK_TIMEOUT)
        hpl__device_fail(d, r == VK_ERROR_DEVICE_LOST ? HPL_ERROR_DEVICE_LOST : HPL_ERROR_VULKAN); /* serve records it */
    pthread_mutex_lock(&p->lock);
}

/* Waits (p->lock held, released meanwhile) on the condition variable, which
 * a new request signals, for at most timeout_ns. */
static void nap(hpl__progress *p, uint64_t timeout_ns)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + timeout_ns;
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    pthread_cond_timedwait(&p->wake, &p->lock, &until);
}

/* Nothing to serve (p->lock held): spin, then block or nap. `since`: when
 * something last changed. */
static void idle(hpl__progress *p, const uint64_t *done, uint64_t since)
{
    uint64_t waited = hpl__now_ns() - since;
    if (waited < SPIN_NS) {
        pthread_mutex_unlock(&p->lock);
        sched_yield();
        pthread_mutex_lock(&p->lock);
        return;
    }
    uint64_t timeout = HPL__MIN(HPL__MAX(waited / 8, NAP_MIN_NS), NAP_MAX_NS);
    int timeline;
    uint64_t value;
    if (!block_target(p, done, &timeline, &value))
        return;
    if (p->poll)
        nap(p, timeout);
    else
        block_on(p, timeline, value, timeout);
}

static void *run(void *arg)
{
    hpl__progress *p = arg;
    uint64_t done[HPL__MAX_TIMELINES], seen = 0, since = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->count == 0 && !p->stop)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->count == 0)
            break; /* stopping, every request served */
        if (p->enqueued != seen) {
            seen = p->enqueued;
            since = hpl__now_ns();
        }
        pthread_mutex_unlock(&p->lock);
        look(p, done);
        pthread_mutex_lock(&p->lock);
        if (serve_reached(p, done))
            since = hpl__now_ns();
        else if (p->enqueued == seen)
            idle(p, done, since); /* else a request came during the look: look again */
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void destroy(hpl__progress *p)
{
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    for (int t = 0; t < HPL__MAX_TIMELINES; t++)
        hpl__free(p->gates[t].items);
    hpl__free(p);
}

int hpl__progress_start(hpl_context *ctx)
{
    hpl__progress *p = hpl__calloc(1, sizeof *p);
    if (!p)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the progress thread");
    p->ctx = ctx;
    p->poll = ctx->validation;
    pthread_condattr_t ca; /* naps time out on CLOCK_MONOTONIC */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        destroy(p);
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "could not start the progress thread");
    }
    ctx->progress = p;
    return HPL_OK;
}

void hpl__progress_stop(hpl_context *ctx)
{
    hpl__progress *p = ctx->progress;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL); /* it never takes the context lock */
    destroy(p);
    ctx->progress = NULL;
}

/* Room in a gate queue for n more requests (p->lock held); false when out
 * of memory (the queue is as it was). */
static bool gate_room(gate_queue *q, uint32_t n)
{
    void *items = q->items;
    bool ok = hpl__fifo_room(&items, sizeof *q->items, &q->head, q->count, &q->capacity, n);
    q->items = items;
    return ok;
}

/* The tail of a gate queue, grown when full (p->lock held); NULL when out
 * of memory. */
static request *gate_tail(gate_queue *q)
{
    if (!gate_room(q, 1))
        return NULL;
    return &q->items[(q->head + q->count++) % q->capacity];
}

void hpl__progress_trim(hpl_context *ctx, uint32_t keep)
{
    hpl__progress *p = ctx->progress;
    pthread_mutex_lock(&p->lock);
    for (int t = 0; t < HPL__MAX_TIMELINES; t++) {
        gate_queue *q = &p->gates[t];
        if (q->count == 0 && q->capacity > keep) {
            hpl__free(q->items);
            *q = (gate_queue){0};
        }
    }
    pthread_mutex_unlock(&p->lock);
}

int hpl__progress_reserve(hpl_context *ctx, int timeline, uint32_t n)
{
    hpl__progress *p = ctx->progress;
    pthread_mutex_lock(&p->lock);
    bool ok = gate_room(&p->gates[timeline], n);
    pthread_mutex_unlock(&p->lock);
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for a cross-device wait");
}

/* Fills request r (p->lock held) and wakes the thread. */
static void put(hpl__progress *p, request *r, uint64_t gate_value, hpl__progress_fn fn, void *arg,
                const hpl__point *points, int count)
{
    r->serial = p->enqueued;
    r->gate_value = gate_value;
    r->fn = fn;
    r->arg = arg;
    r->count = count;
    memcpy(r->points, points, (size_t)count * sizeof *points);
    p->count++;
    p->enqueued++;
    pthread_cond_signal(&p->wake); /* ends a wait for requests, or a nap */
}

int hpl__progress_gate(hpl_context *ctx, int timeline, uint64_t value, const hpl__point *points, int count)
{
    hpl__progress *p = ctx->progress;
    pthread_mutex_lock(&p->lock);
    request *r = gate_tail(&p->gates[timeline]);
    if (r)
        put(p, r, value, NULL, NULL, points, count);
    pthread_mutex_unlock(&p->lock);
    return r ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for a cross-device wait");
}

int hpl__progress_watch(hpl_context *ctx, int device, const hpl__point *points, int count, hpl__progress_fn fn,
                        void *arg)
{
    hpl__progress *p = ctx->progress;
    pthread_mutex_lock(&p->lock);
    /* One pending already (not done by submit.c): its action covers this one. */
    if (!p->watching[device]) {
        p->watching[device] = true;
        put(p, &p->watch[device], 0, fn, arg, points, count);
    }
    pthread_mutex_unlock(&p->lock);
    return HPL_OK;
}
