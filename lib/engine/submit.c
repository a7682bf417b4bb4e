#define _POSIX_C_SOURCE 200809L /* nanosleep */
/* Command buffers from a reusable ring, submission on a device's timeline,
 * batches of operations, and host waits for timeline points.
 *
 * Batches: the operations recorded on a device (evals, copies) go into one
 * open command buffer, each after a full barrier, and reach the queue in
 * one submission: at once when the device is idle or the operation pushes
 * rows another device will wait for (hpl__batch_end_now), else when the
 * device idles (the progress thread flushes it), when the batch is full,
 * when a host wait or another device needs its work, or when an operation must
 * wait for another device (a gate, or that device's timeline where this one
 * imported it (peer.c), holds back the whole submission). Every
 * operation of a batch gets the timeline value the batch will signal.
 * Nothing here waits inside eval: a command buffer still in flight is never
 * waited for, a new one is made. */
#include "events.h"

#include <sched.h>
#include <string.h>
#include <time.h>

/* Under validation, the 1.3.239 layer deadlocks for 10 s when one thread
 * reads a timeline (it waits for its state while holding its lock) and
 * another signals one (KhronosGroup/Vulkan-ValidationLayers#4649, fixed
 * upstream by #8519). With validation on, those calls are serialised by one
 * lock and host waits poll instead of blocking in vkWaitSemaphores. Without
 * validation semaphore_lock is NULL and nothing changes. */
uint64_t hpl__semaphore_value(hpl__device *d, VkSemaphore semaphore)
{
    uint64_t value = 0;
    if (d->semaphore_lock)
        pthread_mutex_lock(d->semaphore_lock);
    VkResult r = vkGetSemaphoreCounterValue(d->device, semaphore, &value);
    if (d->semaphore_lock)
        pthread_mutex_unlock(d->semaphore_lock);
    return r == VK_SUCCESS ? value : 0;
}

uint64_t hpl__device_completed(hpl__device *d)
{
    return hpl__semaphore_value(d, d->timeline);
}

void hpl__gate_signal(hpl__device *d, bool lane, uint64_t value)
{
    VkSemaphoreSignalInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                .semaphore = lane ? d->xfer.gate : d->gate,
                                .value = value};
    if (d->semaphore_lock)
        pthread_mutex_lock(d->semaphore_lock);
    vkSignalSemaphore(d->device, &si);
    if (d->semaphore_lock)
        pthread_mutex_unlock(d->semaphore_lock);
}

/* Spin this long before blocking: a blocking wait costs ~20 us more than a
 * spin on NVIDIA (DESIGN.md §4), and most waits for one kernel are short. */
#define SPIN_NS 50000u

/* Blocks until semaphore (of d) reaches value, spinning first. */
static VkResult semaphore_wait(hpl__device *d, VkSemaphore semaphore, uint64_t value)
{
    uint64_t until = hpl__now_ns() + SPIN_NS;
    while (d->semaphore_lock || hpl__now_ns() < until) {
        if (hpl__semaphore_value(d, semaphore) >= value)
            return VK_SUCCESS;
        if (d->error)
            return VK_ERROR_DEVICE_LOST;
        if (hpl__now_ns() < until)
            sched_yield();
        else
            nanosleep(&(struct timespec){0, 20000}, NULL); /* validation only: poll */
    }
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1,
                              .pSemaphores = &semaphore,
                              .pValues = &value};
    return vkWaitSemaphores(d->device, &wi, UINT64_MAX);
}

VkResult hpl__timeline_wait(hpl__device *d, uint64_t value)
{
    if (value > d->submitted && hpl__batch_flush(d) != HPL_OK)
        return VK_ERROR_DEVICE_LOST;
    return semaphore_wait(d, d->timeline, value);
}

uint64_t hpl__timeline_completed(hpl_context *ctx, int timeline)
{
    hpl__device *d = hpl__timeline_device(ctx, timeline);
    return hpl__timeline_is_lane(timeline) ? hpl__semaphore_value(d, d->xfer.timeline) : hpl__device_completed(d);
}

VkResult hpl__point_wait(hpl_context *ctx, hpl__point p)
{
    hpl__device *d = hpl__timeline_device(ctx, p.timeline);
    /* The lane submits at once: nothing of it waits in a batch. */
    return hpl__timeline_is_lane(p.timeline) ? semaphore_wait(d, d->xfer.timeline, p.value)
                                             : hpl__timeline_wait(d, p.value);
}

static int ring_grow(VkDevice dev, hpl__ring *ring, hpl__cmd **out)
{
    hpl__cmd *cmds = hpl__realloc(ring->cmds, (ring->count + 1) * sizeof *cmds);
    if (!cmds)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for a command buffer");
    ring->cmds = cmds;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = ring->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkCommandBuffer cb;
    VkResult r = vkAllocateCommandBuffers(dev, &ai, &cb);
    if (r != VK_SUCCESS)
        return hpl__vk_error(r, "vkAllocateCommandBuffers");
    /* Insert just before the oldest: the youngest place in the ring. */
    uint32_t at = ring->next;
    memmove(&ring->cmds[at + 1], &ring->cmds[at], (ring->count - at) * sizeof *cmds);
    ring->cmds[at] = (hpl__cmd){cb, 0};
    ring->count++;
    ring->next = (at + 1) % ring->count;
    *out = &ring->cmds[at];
    return HPL_OK;
}

int hpl__ring_begin(VkDevice dev, hpl__ring *ring, uint64_t done, hpl__cmd **out)
{
    /* Buffers complete in submission order: the oldest is the one after the
     * last taken, so one look usually finds a free one. */
    hpl__cmd *cmd = NULL;
    for (uint32_t i = 0; i < ring->count && !cmd; i++) {
        uint32_t k = (ring->next + i) % ring->count;
        if (ring->cmds[k].value <= done && ring->cmds[k].value != UINT64_MAX) {
            cmd = &ring->cmds[k];
            ring->next = (k + 1) % ring->count;
        }
        if (ring->cmds[k].value > done && ring->cmds[k].value != UINT64_MAX)
            break; /* the oldest in flight is not done: the rest are younger */
    }
    if (!cmd) {
        int rc = ring_grow(dev, ring, &cmd);
        if (rc != HPL_OK)
            return rc;
    }
    cmd->value = UINT64_MAX; /* recording: not free */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = vkBeginCommandBuffer(cmd->cb, &bi);
    if (r != VK_SUCCESS) {
        cmd->value = 0;
        return hpl__vk_error(r, "vkBeginCommandBuffer");
    }
    *out = cmd;
    return HPL_OK;
}

void hpl__ring_destroy(VkDevice dev, hpl__ring *ring)
{
    if (ring->pool)
        vkDestroyCommandPool(dev, ring->pool, NULL);
    hpl__free(ring->cmds);
    memset(ring, 0, sizeof *ring);
}

/* The command buffer of a new batch (d->batch_lock held): the one a host
 * wait began ahead (batch_prepare), else a free one of the ring, begun. */
static int cmd_begin(hpl__device *d, hpl__cmd **out)
{
    if (d->batch_next) {
        *out = d->batch_next;
        d->batch_next = NULL;
        return HPL_OK;
    }
    return hpl__ring_begin(d->device, &d->ring, hpl__device_completed(d), out);
}

/* Begins d's next batch command buffer ahead of time, while the host waits
 * for d anyway: vkBeginCommandBuffer (~1 us on NVIDIA) then leaves the
 * round trip of the next operation, which records straight into it. Only
 * with no batch open (the ring grows only then: batch would dangle). It
 * stays in the recording state, taken from the ring like any batch's, until
 * a batch uses it; the pool's destruction frees it if none does. Nothing is
 * recorded into it here: hpl__batch_begin_after records the first barrier
 * as into any fresh one. A failure only costs the head start. */
static void batch_prepare(hpl__device *d)
{
    pthread_mutex_lock(&d->batch_lock);
    if (!d->batch && !d->batch_next && !d->error) {
        hpl__cmd *cmd = NULL;
        if (hpl__ring_begin(d->device, &d->ring, hpl__device_completed(d), &cmd) == HPL_OK)
            d->batch_next = cmd;
    }
    pthread_mutex_unlock(&d->batch_lock);
}

/* Everything the library records is a compute dispatch or a copy: a
 * barrier over those two stages orders an operation after the ones before
 * it on the queue (earlier submissions included: a barrier's first scope
 * is everything earlier in submission order). Narrower than ALL_COMMANDS
 * and MEMORY_* access, which cost NVIDIA's driver more per operation.
 * Host writes before a submission need no barrier (vkQueueSubmit makes
 * them visible); the uniform read covers argument blocks. */
void hpl__barrier_all(VkCommandBuffer cb)
{
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                         .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                         .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                                          VK_ACCESS_UNIFORM_READ_BIT};
    vkCmdPipelineBarrier(cb, stages, stages, 0, 1, &b, 0, NULL, 0, NULL);
}

/* Makes device writes (copies into imported host memory) visible to the
 * host once the timeline value of this work is reached. */
void hpl__barrier_to_host(VkCommandBuffer cb)
{
    VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                         .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                         .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &b, 0, NULL, 0,
                         NULL);
}

/* Ends and submits the open batch (d->batch_lock held), waiting also for
 * an external timeline semaphore when `external` is not null. */
static int batch_submit_waiting(hpl__device *d, VkSemaphore external, uint64_t external_value)
{
    hpl__cmd *cmd = d->batch;
    uint64_t gate_value = d->batch_gate, xfer_value = d->batch_xfer;
    uint64_t peer_values[HPL__MAX_DEVICES];
    memcpy(peer_values, d->batch_peer, sizeof peer_values);
    memset(d->batch_peer, 0, sizeof d->batch_peer);
    d->batch = NULL;
    d->batch_gate = 0;
    d->batch_xfer = 0;
    d->batch_ops = 0;
    d->flush_deferred = false;
    hpl__barrier_to_host(cmd->cb);
    VkResult r = vkEndCommandBuffer(cmd->cb);
    if (r != VK_SUCCESS) {
        cmd->value = 0;
        d->error = HPL_ERROR_VULKAN;
        return hpl__vk_error(r, "vkEndCommandBuffer");
    }
    uint64_t signal = d->submitted + 1;
    VkPipelineStageFlags stages[3 + HPL__MAX_DEVICES];
    VkSemaphore waits[3 + HPL__MAX_DEVICES];
    uint64_t values[3 + HPL__MAX_DEVICES];
    uint32_t n = 0;
    if (gate_value) {
        waits[n] = d->gate;
        values[n++] = gate_value;
    }
    if (xfer_value) {
        waits[n] = d->xfer.timeline;
        values[n++] = xfer_value;
    }
    for (int i = 0; i < HPL__MAX_DEVICES; i++) {
        if (peer_values[i]) { /* another device's timeline, imported (peer.c) */
            waits[n] = d->peer[i];
            values[n++] = peer_values[i];
        }
    }
    if (external) {
        waits[n] = external;
        values[n++] = external_value;
    }
    for (uint32_t i = 0; i < n; i++)
        stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkTimelineSemaphoreSubmitInfo ti = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .waitSemaphoreValueCount = n,
                                        .pWaitSemaphoreValues = values,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &signal};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ti,
                       .waitSemaphoreCount = n,
                       .pWaitSemaphores = waits,
                       .pWaitDstStageMask = stages,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &cmd->cb,
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &d->timeline};
    r = hpl__queue_submit(d, 1, &si);
    if (r != VK_SUCCESS) {
        /* The operations recorded in it never run: waits for them must not
         * hang, so the device is marked lost for good. */
        cmd->value = 0;
        d->error = HPL_ERROR_DEVICE_LOST;
        return hpl__vk_error(r, "vkQueueSubmit");
    }
    d->submitted = signal;
    d->stats.submissions++;
    cmd->value = signal;
    return HPL_OK;
}

static int batch_submit(hpl__device *d)
{
    return batch_submit_waiting(d, VK_NULL_HANDLE, 0);
}

/* Submits the open batch, or has hpl__batch_end submit it when an
 * operation is being recorded into it (by another thread: the progress
 * thread's flushes). */
int hpl__batch_flush_locked(hpl__device *d)
{
    if (d->recording) {
        d->flush_deferred = true;
        return HPL_OK;
    }
    return d->batch ? batch_submit(d) : HPL_OK;
}

int hpl__batch_flush(hpl__device *d)
{
    pthread_mutex_lock(&d->batch_lock);
    int rc = hpl__batch_flush_locked(d);
    pthread_mutex_unlock(&d->batch_lock);
    return rc;
}

/* Flushes the devices whose open batch holds one of the points, so that
 * what is waited for is submitted. (The transfer lane submits at once.) */
static int flush_for(hpl_context *ctx, const hpl__point *points, int count)
{
    int rc = HPL_OK;
    for (int i = 0; i < count; i++) {
        hpl__device *d = hpl__timeline_device(ctx, points[i].timeline);
        if (!hpl__timeline_is_lane(points[i].timeline) && points[i].value > d->submitted) {
            int r = hpl__batch_flush(d);
            rc = rc == HPL_OK ? r : rc;
        }
    }
    return rc;
}

/* Asks the progress thread to open gate `timeline` (a device's compute
 * gate, or HPL__LANE + it for its lane's) at its next value once `points`
 * are reached; that value goes to *value and *requested. */
static int gate_request(hpl_context *ctx, int timeline, uint64_t *requested, const hpl__point *points, int count,
                        uint64_t *value)
{
    int rc = hpl__progress_enqueue(ctx, HPL__PROGRESS_GATE, timeline, *requested + 1, points, count);
    if (rc == HPL_OK)
        *value = ++*requested;
    return rc;
}

/* The gate value d's next work must wait for so that every point of
 * another timeline is reached first: 0 when all are on d's compute queue
 * (queue order covers them), on d's transfer lane (raising *xfer, a wait d
 * makes itself), done, or in *direct. Requests it from the progress thread.
 * Points on devices whose compute timeline d imported go to *direct instead
 * (one per device): d waits on those timelines themselves. */
static int gate_for(hpl_context *ctx, hpl__device *d, const hpl__point *points, int count, uint64_t *gate_value,
                    hpl__point *direct, int *direct_count, uint64_t *xfer)
{
    hpl__point foreign[HPL__MAX_TIMELINES];
    int n = 0;
    for (int i = 0; i < count; i++) {
        if (points[i].timeline == d->index || points[i].value == 0)
            continue; /* same queue: submission order and the barrier cover it */
        if (hpl__timeline_completed(ctx, points[i].timeline) >= points[i].value)
            continue; /* already done */
        if (points[i].timeline == HPL__LANE + d->index)
            *xfer = HPL__MAX(*xfer, points[i].value);
        else
            n = hpl__points_add(foreign, n, points[i]);
    }
    *gate_value = 0;
    *direct_count = 0;
    if (n == 0)
        return HPL_OK;
    int rc = flush_for(ctx, foreign, n);
    if (rc != HPL_OK)
        return rc;
    /* Peer timelines (peer.c): a foreign point on a device whose timeline d
     * imported is waited on directly, no host thread in between. */
    int gated = 0;
    for (int i = 0; i < n; i++) {
        if (!hpl__timeline_is_lane(foreign[i].timeline) && d->peer[foreign[i].timeline])
            direct[(*direct_count)++] = foreign[i];
        else
            foreign[gated++] = foreign[i];
    }
    if (gated == 0)
        return HPL_OK;
    return gate_request(ctx, d->index, &d->gate_requested, foreign, gated, gate_value);
}

int hpl__lane_gate_for(hpl_context *ctx, hpl__device *d, const hpl__point *points, int count, uint64_t *after,
                       uint64_t *gate)
{
    hpl__point foreign[HPL__MAX_TIMELINES];
    int n = 0;
    for (int i = 0; i < count; i++) {
        if (points[i].timeline == d->index)
            *after = HPL__MAX(*after, points[i].value);
        else if (points[i].timeline != HPL__LANE + d->index && points[i].value &&
                 hpl__timeline_completed(ctx, points[i].timeline) < points[i].value)
            n = hpl__points_add(foreign, n, points[i]); /* (the lane's own work is earlier on its queue) */
    }
    *gate = 0;
    if (n == 0)
        return HPL_OK;
    int rc = flush_for(ctx, foreign, n);
    return rc == HPL_OK ? gate_request(ctx, HPL__LANE + d->index, &d->xfer.gate_requested, foreign, n, gate) : rc;
}

uint64_t hpl__device_recorded(hpl__device *d)
{
    pthread_mutex_lock(&d->batch_lock);
    uint64_t value = d->submitted + (d->batch != NULL);
    pthread_mutex_unlock(&d->batch_lock);
    return value;
}

int hpl__batch_begin(hpl_context *ctx, hpl__device *d, const hpl__point *waits, int count, VkCommandBuffer *cb)
{
    return hpl__batch_begin_after(ctx, d, waits, count, 0, cb);
}

int hpl__batch_begin_after(hpl_context *ctx, hpl__device *d, const hpl__point *waits, int count, uint64_t xfer,
                           VkCommandBuffer *cb)
{
    if (d->error)
        return hpl__fail(d->error, "device %s failed earlier: %s", d->info.name, hpl_error_string(d->error));
    uint64_t gate = 0;
    hpl__point direct[HPL__MAX_TIMELINES];
    int ndirect = 0;
    int rc = gate_for(ctx, d, waits, count, &gate, direct, &ndirect, &xfer);
    if (rc != HPL_OK)
        return rc;
    pthread_mutex_lock(&d->batch_lock);
    /* A wait (gate, peer or transfer lane) holds back all of a submission:
     * what is already recorded goes first, without it. */
    if ((gate || ndirect || xfer > d->batch_xfer) && d->batch)
        rc = batch_submit(d);
    if (rc == HPL_OK && !d->batch)
        rc = cmd_begin(d, &d->batch);
    if (rc == HPL_OK) {
        if (gate)
            d->batch_gate = gate;
        if (xfer)
            d->batch_xfer = xfer;
        for (int i = 0; i < ndirect; i++)
            d->batch_peer[direct[i].timeline] = direct[i].value;
        /* Orders this operation after everything before it on the device:
         * earlier submissions and earlier operations of this batch. */
        hpl__barrier_all(d->batch->cb);
        *cb = d->batch->cb;
        d->recording = true;
    }
    pthread_mutex_unlock(&d->batch_lock);
    return rc;
}

/* Operations per submission at most: a long batch delays the first of them. */
#define BATCH_MAX_OPS 64u

/* Ends the operation being recorded; `now`: submits its batch whether the
 * device is busy or not. */
static int batch_end(hpl_context *ctx, hpl__device *d, hpl__point *at, bool now)
{
    int rc = HPL_OK;
    pthread_mutex_lock(&d->batch_lock);
    *at = (hpl__point){d->index, d->submitted + 1};
    hpl__events_submitted(d, *at);
    d->batch_ops++;
    d->stats.operations++;
    d->recording = false;
    /* An idle device gets the batch at once (latency), and so does one that
     * another device waits for (now); a busy one gets it when it idles (the
     * progress thread watches) or when it is full. */
    bool idle = hpl__device_completed(d) >= d->submitted;
    if (now || idle || d->flush_deferred || d->batch_ops >= BATCH_MAX_OPS) {
        rc = batch_submit(d);
    } else if (!d->flush_watched) {
        hpl__point busy = {d->index, d->submitted};
        rc = hpl__progress_enqueue(ctx, HPL__PROGRESS_FLUSH, d->index, 0, &busy, 1);
        d->flush_watched = rc == HPL_OK;
        if (rc != HPL_OK)
            rc = batch_submit(d);
    }
    pthread_mutex_unlock(&d->batch_lock);
    return rc;
}

int hpl__batch_end(hpl_context *ctx, hpl__device *d, hpl__point *at)
{
    return batch_end(ctx, d, at, false);
}

int hpl__batch_end_now(hpl_context *ctx, hpl__device *d, hpl__point *at)
{
    return batch_end(ctx, d, at, true);
}

int hpl__submit_after_external(hpl_context *ctx, hpl__device *d, VkSemaphore semaphore, uint64_t value,
                               hpl__point *at)
{
    (void)ctx;
    pthread_mutex_lock(&d->batch_lock);
    /* What is recorded goes first, without the wait: the application may
     * itself wait for it. */
    int rc = d->batch ? batch_submit(d) : HPL_OK;
    if (rc == HPL_OK)
        rc = cmd_begin(d, &d->batch);
    if (rc == HPL_OK) {
        hpl__barrier_all(d->batch->cb);
        d->stats.operations++;
        *at = (hpl__point){d->index, d->submitted + 1};
        rc = batch_submit_waiting(d, semaphore, value);
    }
    pthread_mutex_unlock(&d->batch_lock);
    return rc;
}

void hpl__batch_watched(hpl__device *d)
{
    pthread_mutex_lock(&d->batch_lock);
    d->flush_watched = false;
    hpl__batch_flush_locked(d); /* an error marks the device; its waiters see it */
    pthread_mutex_unlock(&d->batch_lock);
}

/* Waits for one point. */
static int wait_point(hpl_context *ctx, hpl__point p)
{
    hpl__device *d = hpl__timeline_device(ctx, p.timeline);
    VkResult r = hpl__point_wait(ctx, p);
    if (r == VK_SUCCESS)
        return HPL_OK;
    if (r == VK_ERROR_DEVICE_LOST)
        d->error = HPL_ERROR_DEVICE_LOST;
    return hpl__vk_error(r, "vkWaitSemaphores");
}

int hpl__wait_points_held(hpl_context *ctx, const hpl__point *points, int count)
{
    int rc = HPL_OK;
    for (int i = 0; i < count && rc == HPL_OK; i++)
        if (points[i].value)
            rc = wait_point(ctx, points[i]);
    return rc;
}

int hpl__wait_points(hpl_context *ctx, const hpl__point *points, int count)
{
    bool pending = false;
    for (int i = 0; i < count && !pending; i++)
        pending = points[i].value && hpl__timeline_completed(ctx, points[i].timeline) < points[i].value;
    if (!pending)
        return HPL_OK;
    int rc0 = flush_for(ctx, points, count);
    if (rc0 != HPL_OK)
        return rc0;
    /* With the context lock still held: timestamps.c's calibration uses the
     * command pool under that lock alone. */
    for (int i = 0; i < count; i++)
        if (points[i].value && hpl__timeline_completed(ctx, points[i].timeline) < points[i].value)
            batch_prepare(hpl__timeline_device(ctx, points[i].timeline));
    /* Other threads may use the context while this one waits. */
    uint64_t since = hpl__events_wait_begin(ctx);
    HPL__UNLOCK(ctx);
    int rc = hpl__wait_points_held(ctx, points, count);
    HPL__LOCK(ctx);
    hpl__events_wait(ctx, points, count, since);
    return rc;
}

int hpl__wait_idle(hpl_context *ctx)
{
    hpl__point points[HPL__MAX_TIMELINES];
    int n = 0, rc = HPL_OK;
    for (int i = 0; i < ctx->device_count; i++) {
        int r = hpl__batch_flush(&ctx->devices[i]);
        rc = rc == HPL_OK ? r : rc;
    }
    if (rc != HPL_OK)
        return rc;
    for (int i = 0; i < ctx->device_count; i++) {
        n = hpl__points_add(points, n, (hpl__point){i, ctx->devices[i].submitted});
        n = hpl__points_add(points, n, hpl__lane_point(&ctx->devices[i], ctx->devices[i].xfer.submitted));
    }
    return hpl__wait_points(ctx, points, n);
}
