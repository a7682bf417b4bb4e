/* The event log (events.h): recording at the hooks, completion read
 * lazily from the devices' timelines and timestamp queries, names interned. */
#include "events.h"

#include "subkernel.h"
#include "timestamps.h"
#include "vk.h"

#include <stdatomic.h>
#include <string.h>

#define POLL_EVERY 64u /* events recorded between two reads of completed ones */

struct hpl__events {
    hpl__event *list; /* list[i] has serial base + i */
    size_t count, capacity;
    uint64_t base;
    size_t scan; /* list[0 .. scan) are all complete */
    int users;
    uint64_t keep_from; /* forget keeps serials >= this */
    uint32_t since_poll;
    uint64_t lost, host_timed;
    /* interned names: names[0] is "" */
    char **names;
    uint32_t name_count, name_capacity;
    uint32_t *slots; /* open addressing: name index + 1, 0 empty */
    uint32_t slot_count;
};

/* ---- names ---------------------------------------------------------------- */

static uint32_t hash_of(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static bool grow_slots(hpl__events *log)
{
    uint32_t n = log->slot_count ? 2 * log->slot_count : 64;
    uint32_t *slots = hpl__calloc(n, sizeof *slots);
    if (!slots)
        return false;
    for (uint32_t i = 1; i < log->name_count; i++) {
        uint32_t k = hash_of(log->names[i]) & (n - 1);
        while (slots[k])
            k = (k + 1) & (n - 1);
        slots[k] = i + 1;
    }
    hpl__free(log->slots);
    log->slots = slots;
    log->slot_count = n;
    return true;
}

/* The name's index (0, "", when it cannot be stored). */
static uint32_t intern(hpl__events *log, const char *name)
{
    if (!name || !*name)
        return 0;
    if (2 * (log->name_count + 1) > log->slot_count && !grow_slots(log))
        return 0;
    uint32_t k = hash_of(name) & (log->slot_count - 1);
    for (; log->slots[k]; k = (k + 1) & (log->slot_count - 1))
        if (!strcmp(log->names[log->slots[k] - 1], name))
            return log->slots[k] - 1;
    if (log->name_count == log->name_capacity) {
        uint32_t cap = 2 * log->name_capacity;
        char **names = hpl__realloc(log->names, cap * sizeof *names);
        if (!names)
            return 0;
        log->names = names;
        log->name_capacity = cap;
    }
    char *copy = hpl__strdup(name);
    if (!copy)
        return 0;
    log->names[log->name_count] = copy;
    log->slots[k] = ++log->name_count;
    return log->name_count - 1;
}

const char *hpl__events_name(const hpl_context *ctx, uint32_t name)
{
    const hpl__events *log = ctx->events;
    return log && name < log->name_count ? log->names[name] : "";
}

/* ---- the log -------------------------------------------------------------- */

static hpl__events *log_create(void)
{
    hpl__events *log = hpl__calloc(1, sizeof *log);
    if (log)
        log->names = hpl__calloc(16, sizeof *log->names);
    if (log && log->names)
        log->names[0] = hpl__strdup("");
    if (!log || !log->names || !log->names[0]) {
        if (log)
            hpl__free(log->names);
        hpl__free(log);
        return NULL;
    }
    log->name_count = 1;
    log->name_capacity = 16;
    log->base = 1;
    log->keep_from = UINT64_MAX;
    return log;
}

static void event_free(hpl__event *e)
{
    if (e->kind == HPL__EVENT_KERNEL)
        hpl__free(e->u.kernel.arrays);
    else if (e->kind == HPL__EVENT_COPY)
        hpl__free(e->u.copy.region);
    else if (e->kind == HPL__EVENT_WAIT)
        hpl__free(e->u.wait.points);
    else if (e->kind == HPL__EVENT_PLAN)
        hpl__free(e->u.plan.text);
}

void hpl__events_destroy(hpl_context *ctx)
{
    hpl__events *log = ctx->events;
    if (!log)
        return;
    for (int i = 0; i < ctx->device_count; i++)
        ctx->devices[i].timestamps.log = NULL;
    for (size_t i = 0; i < log->count; i++)
        event_free(&log->list[i]);
    for (uint32_t i = 0; i < log->name_count; i++)
        hpl__free(log->names[i]);
    hpl__free(log->names);
    hpl__free(log->slots);
    hpl__free(log->list);
    hpl__free(log);
    ctx->events = NULL;
    ctx->events_on = false;
}

static hpl__event *find(hpl__events *log, uint64_t serial)
{
    return serial >= log->base && serial - log->base < log->count ? &log->list[serial - log->base] : NULL;
}

static bool complete(const hpl__event *e)
{
    return e->state == HPL__EVENT_DONE || e->state == HPL__EVENT_DROPPED;
}

/* A host thread's number: 1 for the first thread that records an event. */
static uint32_t thread_number(void)
{
    static atomic_uint next = 1;
    static _Thread_local uint32_t number;
    if (!number)
        number = atomic_fetch_add(&next, 1);
    return number;
}

static hpl__event *add(hpl_context *ctx, hpl__event_kind kind, int device)
{
    hpl__events *log = ctx->events;
    if (++log->since_poll >= POLL_EVERY)
        hpl__events_poll(ctx);
    if (log->count == log->capacity) {
        size_t cap = log->capacity ? 2 * log->capacity : 256;
        hpl__event *list = hpl__realloc(log->list, cap * sizeof *list);
        if (!list) {
            log->lost++;
            return NULL;
        }
        log->list = list;
        log->capacity = cap;
    }
    hpl__event *e = &log->list[log->count];
    memset(e, 0, sizeof *e);
    e->serial = log->base + log->count++;
    e->kind = kind;
    e->device = device;
    e->thread = thread_number();
    e->recorded_ns = hpl__now_ns();
    e->pair = HPL__NO_PAIR;
    e->state = device == HPL__NO_DEVICE ? HPL__EVENT_DONE : HPL__EVENT_RECORDED;
    return e;
}

/* A new event of commands being recorded into cb on d: pending until its
 * submission, with its begin timestamp written when a query pair is free. */
static hpl__event *device_event(hpl_context *ctx, hpl__device *d, hpl__event_kind kind, VkCommandBuffer cb)
{
    hpl__events *log = ctx->events;
    hpl__timestamps *t = &d->timestamps;
    hpl__event *e = add(ctx, kind, d->index);
    if (!e)
        return NULL;
    e->queue = d->xfer.open && cb == d->xfer.open->cb;
    if (t->pending_count == t->pending_capacity) {
        uint32_t cap = t->pending_capacity ? 2 * t->pending_capacity : 16;
        uint64_t *p = hpl__realloc(t->pending, cap * sizeof *p);
        if (!p) {
            e->state = HPL__EVENT_DROPPED;
            log->lost++;
            return NULL;
        }
        t->pending = p;
        t->pending_capacity = cap;
    }
    t->pending[t->pending_count++] = e->serial;
    if (!t->supported)
        return e;
    if (!t->free_count)
        hpl__events_poll(ctx); /* pairs of completed events come back */
    if (hpl__timestamps_take(d, &e->pair))
        hpl__timestamps_write(d, cb, e->pair, false);
    else
        log->host_timed++;
    return e;
}

static void end_stamp(hpl__device *d, VkCommandBuffer cb, const hpl__event *e)
{
    if (e->pair != HPL__NO_PAIR)
        hpl__timestamps_write(d, cb, e->pair, true);
}

/* ---- hooks ----------------------------------------------------------------- */

void hpl__events_kernel_begin_(hpl_context *ctx, const hpl__subkernel *s, VkCommandBuffer cb, const uint64_t whole[3])
{
    hpl__event *e = device_event(ctx, s->device, HPL__EVENT_KERNEL, cb);
    if (!e)
        return;
    e->name = intern(ctx->events, s->kernel_name);
    memcpy(e->u.kernel.offset, s->offset, sizeof s->offset);
    memcpy(e->u.kernel.size, s->global, sizeof s->global);
    memcpy(e->u.kernel.global, whole, sizeof e->u.kernel.global);
    memcpy(e->u.kernel.local, s->local, sizeof s->local);
    const hpl__reflection *r = &s->variant->reflection;
    e->u.kernel.arrays = hpl__calloc((size_t)r->arg_count, sizeof *e->u.kernel.arrays);
    for (int i = 0; e->u.kernel.arrays && i < r->arg_count; i++)
        if (s->views[i].array)
            e->u.kernel.arrays[e->u.kernel.array_count++] =
                (hpl__event_array){intern(ctx->events, s->views[i].at.root->name), r->args[i].access};
}

void hpl__events_kernel_end_(hpl__device *d, VkCommandBuffer cb)
{
    hpl__timestamps *t = &d->timestamps;
    hpl__event *e = t->pending_count && t->log ? find(t->log, t->pending[t->pending_count - 1]) : NULL;
    if (e && e->kind == HPL__EVENT_KERNEL)
        end_stamp(d, cb, e);
}

static void keep_region(hpl__event *e, const hpl__region *region)
{
    hpl__box *b = &e->u.copy.bounds;
    for (uint32_t i = 0; i < region->count; i++)
        for (int d = 0; d < 3; d++) {
            b->lo[d] = i ? HPL__MIN(b->lo[d], region->boxes[i].lo[d]) : region->boxes[i].lo[d];
            b->hi[d] = i ? HPL__MAX(b->hi[d], region->boxes[i].hi[d]) : region->boxes[i].hi[d];
        }
    uint32_t n = HPL__MIN(region->count, HPL__EVENT_BOXES);
    e->u.copy.region = n ? hpl__malloc(n * sizeof *e->u.copy.region) : NULL;
    if (e->u.copy.region)
        memcpy(e->u.copy.region, region->boxes, n * sizeof *e->u.copy.region);
}

/* A copy recorded on d moves between d's buffers and the host storage
 * (imported into d), whatever the array (an assignment's source is another
 * root than the one named). */
static int memory_device(const hpl__device *d, int slot)
{
    return slot == HPL__HOST ? HPL__NO_DEVICE : d->index;
}

hpl__event *hpl__events_copy_begin_(hpl_context *ctx, hpl__device *d, VkCommandBuffer cb, const hpl__array *root,
                                    const hpl__region *region, int src, int dst)
{
    hpl__event *e = device_event(ctx, d, HPL__EVENT_COPY, cb);
    if (!e)
        return NULL;
    e->name = intern(ctx->events, root->name);
    e->u.copy.bytes = hpl__region_volume(region) * hpl_type_size(root->type);
    e->u.copy.boxes = region->count;
    keep_region(e, region);
    e->u.copy.src_device = memory_device(d, src);
    e->u.copy.dst_device = memory_device(d, dst);
    e->u.copy.direction = src == HPL__HOST && dst == HPL__HOST ? HPL__COPY_HOST_TO_HOST
                          : src == HPL__HOST                   ? HPL__COPY_TO_DEVICE
                          : dst == HPL__HOST                   ? HPL__COPY_TO_HOST
                                                               : HPL__COPY_WITHIN;
    return e;
}

void hpl__events_copy_end_(hpl__device *d, VkCommandBuffer cb, const hpl__event *e)
{
    if (e)
        end_stamp(d, cb, e);
}

void hpl__events_submitted_(hpl__device *d, hpl__point at)
{
    hpl__timestamps *t = &d->timestamps;
    int queue = hpl__timeline_is_lane(at.timeline);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < t->pending_count; i++) {
        hpl__event *e = t->log ? find(t->log, t->pending[i]) : NULL;
        if (e && e->queue != queue) {
            t->pending[kept++] = t->pending[i]; /* the other queue's, submitted later */
        } else if (e && e->state == HPL__EVENT_RECORDED) {
            e->value = at.value;
            e->state = HPL__EVENT_SUBMITTED;
        }
    }
    t->pending_count = kept;
}

void hpl__events_abandon_(hpl__device *d)
{
    hpl__timestamps *t = &d->timestamps;
    for (uint32_t i = 0; t->log && i < t->pending_count; i++) {
        hpl__event *e = find(t->log, t->pending[i]);
        if (e && e->state == HPL__EVENT_RECORDED) {
            e->state = HPL__EVENT_DROPPED;
            if (e->pair != HPL__NO_PAIR)
                hpl__timestamps_give(d, e->pair); /* never submitted: free at once */
            e->pair = HPL__NO_PAIR;
        }
    }
    t->pending_count = 0;
}

void hpl__events_wait_(hpl_context *ctx, const hpl__point *points, int count, uint64_t since)
{
    hpl__event *e = add(ctx, HPL__EVENT_WAIT, HPL__NO_DEVICE);
    if (!e)
        return;
    e->begin = since;
    e->end = hpl__now_ns();
    e->u.wait.points = hpl__calloc((size_t)HPL__MAX(count, 1), sizeof *e->u.wait.points);
    for (int i = 0; e->u.wait.points && i < count; i++)
        if (points[i].value)
            e->u.wait.points[e->u.wait.point_count++] = points[i];
    hpl__events_poll(ctx); /* what it waited for is done: host-timed events end now, not later */
}

void hpl__events_plan(hpl_context *ctx, uint64_t since, const char *text)
{
    hpl__event *e = ctx->events_on ? add(ctx, HPL__EVENT_PLAN, HPL__NO_DEVICE) : NULL;
    if (!e)
        return;
    e->begin = since;
    e->end = hpl__now_ns();
    e->u.plan.text = hpl__strdup(text);
}

void hpl__events_message_(hpl_context *ctx, const hpl__array *root, int peer, bool send, const hpl__box *box)
{
    hpl__event *e = add(ctx, HPL__EVENT_MESSAGE, HPL__NO_DEVICE);
    if (!e)
        return;
    e->name = intern(ctx->events, root->name);
    e->begin = e->recorded_ns;
    e->end = 0; /* until hpl__events_messages_end */
    e->u.message.peer = peer;
    e->u.message.send = send;
    e->u.message.bytes = hpl__box_volume(box) * hpl_type_size(root->type);
    e->u.message.box = *box;
}

void hpl__events_messages_end_(hpl_context *ctx, uint64_t from)
{
    hpl__events *log = ctx->events;
    uint64_t now = hpl__now_ns();
    for (uint64_t s = HPL__MAX(from, log->base); s - log->base < log->count; s++) {
        hpl__event *e = find(log, s);
        if (e->kind == HPL__EVENT_MESSAGE && e->end == 0)
            e->end = now;
    }
}

/* ---- completion -------------------------------------------------------------- */

/* e's timeline value is reached: read its timestamps. */
static void finish(hpl_context *ctx, hpl__event *e, uint64_t now)
{
    hpl__device *d = &ctx->devices[e->device];
    if (e->pair == HPL__NO_PAIR) {
        e->begin = e->recorded_ns;
        e->end = now;
        e->state = HPL__EVENT_DONE;
        return;
    }
    /* A pair not written although its work is done belongs to commands
     * that never ran (a submission that failed): drop the event. */
    e->gpu_time = hpl__timestamps_read(d, e->pair, e->recorded_ns, &e->begin, &e->end);
    e->state = e->gpu_time ? HPL__EVENT_DONE : HPL__EVENT_DROPPED;
    hpl__timestamps_give(d, e->pair);
    e->pair = HPL__NO_PAIR;
}

void hpl__events_poll(hpl_context *ctx)
{
    hpl__events *log = ctx->events;
    if (!log)
        return;
    log->since_poll = 0;
    uint64_t completed[HPL__MAX_TIMELINES];
    bool known[HPL__MAX_TIMELINES] = {false};
    uint64_t now = hpl__now_ns();
    for (int i = 0; i < ctx->device_count; i++)
        hpl__timestamps_refresh(&ctx->devices[i]);
    for (size_t i = log->scan; i < log->count; i++) {
        hpl__event *e = &log->list[i];
        if (e->state != HPL__EVENT_SUBMITTED)
            continue;
        int timeline = e->queue ? HPL__LANE + e->device : e->device;
        if (!known[timeline]) {
            completed[timeline] = hpl__timeline_completed(ctx, timeline);
            known[timeline] = true;
        }
        if (completed[timeline] >= e->value)
            finish(ctx, e, now);
    }
    while (log->scan < log->count && complete(&log->list[log->scan]))
        log->scan++;
}

void hpl__events_times(const hpl_context *ctx, const hpl__event *e, uint64_t *begin_ns, uint64_t *end_ns)
{
    if (!e->gpu_time) {
        *begin_ns = e->begin;
        *end_ns = e->end;
        return;
    }
    const hpl__device *d = &ctx->devices[e->device];
    *begin_ns = hpl__timestamps_to_ns(d, e->begin);
    *end_ns = hpl__timestamps_to_ns(d, e->end);
}

int hpl__events_each(hpl_context *ctx, uint64_t from, hpl__event_fn fn, void *user)
{
    hpl__events *log = ctx->events;
    if (!log)
        return 0;
    hpl__events_poll(ctx);
    int in_flight = 0;
    size_t first = from > log->base ? (size_t)HPL__MIN(from - log->base, (uint64_t)log->count) : 0;
    for (size_t i = first; i < log->count; i++) {
        const hpl__event *e = &log->list[i];
        if (e->state == HPL__EVENT_DONE) {
            uint64_t begin, end;
            hpl__events_times(ctx, e, &begin, &end);
            fn(user, e, begin, end);
        } else if (!complete(e)) {
            in_flight++;
        }
    }
    return in_flight;
}

void hpl__events_forget(hpl_context *ctx, uint64_t before)
{
    hpl__events *log = ctx->events;
    if (!log)
        return;
    uint64_t limit = HPL__MIN(before, log->keep_from);
    size_t n = 0;
    while (n < log->scan && log->base + n < limit)
        event_free(&log->list[n++]);
    if (n == 0)
        return;
    memmove(log->list, log->list + n, (log->count - n) * sizeof *log->list);
    log->count -= n;
    log->scan -= n;
    log->base += n;
}

void hpl__events_keep(hpl_context *ctx, uint64_t from)
{
    if (ctx->events)
        ctx->events->keep_from = from;
}

/* ---- users ---------------------------------------------------------------- */

int hpl__events_enable(hpl_context *ctx, bool on)
{
    if (!on) {
        if (ctx->events && ctx->events->users > 0)
            ctx->events->users--;
        ctx->events_on = ctx->events && ctx->events->users > 0;
        /* No reader left, none to come for what is logged (a new user
         * starts at the next serial): the completed events go, so that
         * plans timing every eval (ADAPTIVE, packages) do not grow the log
         * for as long as the context lives. */
        if (ctx->events && ctx->events->users == 0)
            hpl__events_forget(ctx, hpl__events_next_serial(ctx));
        return HPL_OK;
    }
    if (!ctx->events && !(ctx->events = log_create()))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the event log");
    int rc = HPL_OK;
    for (int i = 0; rc == HPL_OK && ctx->events->users == 0 && i < ctx->device_count; i++) {
        rc = hpl__timestamps_start(&ctx->devices[i]);
        ctx->devices[i].timestamps.log = ctx->events;
    }
    if (rc != HPL_OK)
        return rc;
    ctx->events->users++;
    ctx->events_on = true;
    return HPL_OK;
}

int hpl__events_users(const hpl_context *ctx)
{
    return ctx->events ? ctx->events->users : 0;
}

uint64_t hpl__events_next_serial(const hpl_context *ctx)
{
    return ctx->events ? ctx->events->base + ctx->events->count : 1;
}

size_t hpl__events_held(const hpl_context *ctx)
{
    return ctx->events ? ctx->events->count : 0;
}

uint64_t hpl__events_lost(const hpl_context *ctx)
{
    return ctx->events ? ctx->events->lost : 0;
}

uint64_t hpl__events_host_timed(const hpl_context *ctx)
{
    return ctx->events ? ctx->events->host_timed : 0;
}
