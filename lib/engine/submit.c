/* Batches of operations on a device's timeline (their command buffers:
 * ring.c; the vkQueueSubmit itself: submitter.c), and host waits for
 * timeline points.
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
#include "submit.h"

#include "events.h"
#include "progress.h"
#include "ring.h"
#include "submitter.h"
#include "vk.h"

#include <stdio.h>
#include <string.h>

VkResult hpl__timeline_wait(hpl__device *d, uint64_t value)
{
    if (value > hpl__device_submitted(d) && hpl__batch_flush(d) != HPL_OK)
        return VK_ERROR_DEVICE_LOST;
    return hpl__semaphore_wait(d, d->timeline, value);
}

VkResult hpl__point_wait(hpl_context *ctx, hpl__point p)
{
    hpl__device *d = hpl__timeline_device(ctx, p.timeline);
    /* The lane submits at once: nothing of it waits in a batch. */
    return hpl__timeline_is_lane(p.timeline) ? hpl__semaphore_wait(d, d->xfer.timeline, p.value)
                                             : hpl__timeline_wait(d, p.value);
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

int hpl__device_reserve(hpl_context *ctx, hpl__device *d, uint32_t n)
{
    pthread_mutex_lock(&d->batch_lock);
    int rc = hpl__ring_reserve(d->device, &d->ring, hpl__device_completed(d), n);
    if (rc == HPL_OK && d->xfer.on)
        rc = hpl__ring_reserve(d->device, &d->xfer.ring, hpl__semaphore_value(d, d->xfer.timeline), n);
    pthread_mutex_unlock(&d->batch_lock);
    /* (The lane's own gate is asked for only by downloads, which operations
     * make while they plan, before this.) */
    return rc == HPL_OK ? hpl__progress_reserve(ctx, d->index, n) : rc;
}

void hpl__device_trim(hpl__device *d, uint32_t keep)
{
    pthread_mutex_lock(&d->batch_lock);
    /* The one begun ahead goes too (reset: a buffer still recording cannot
     * be begun again): that head start matters for a busy device only. */
    if (d->ring.count > keep && d->batch_next && vkResetCommandBuffer(d->batch_next->cb, 0) == VK_SUCCESS) {
        d->batch_next->value = 0;
        d->batch_next = NULL;
    }
    hpl__ring_trim(d->device, &d->ring, hpl__device_completed(d), keep);
    if (d->xfer.on)
        hpl__ring_trim(d->device, &d->xfer.ring, hpl__semaphore_value(d, d->xfer.timeline), keep);
    pthread_mutex_unlock(&d->batch_lock);
}

/* Begins d's next batch command buffer ahead of time, while the host waits
 * for d anyway: vkBeginCommandBuffer (~1 us on NVIDIA) then leaves the
 * round trip of the next operation, which records straight into it. Only
 * with no batch open (one begun ahead is enough). It
 * stays in the recording state, taken from the ring like any batch's, until
 * a batch uses it; the pool's destruction frees it if none does. Nothing is
 * recorded into it here: hpl__batch_begin_after records the first barrier
 * as into any fresh one. A failure only costs the head start. */
static void batch_prepare(hpl__device *d)
{
    pthread_mutex_lock(&d->batch_lock);
    if (!d->batch && !d->batch_next && !hpl__device_error(d)) {
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

/* Device i of d's context (the context's devices are one array). */
static hpl__device *sibling(const hpl__device *d, int i)
{
    return (hpl__device *)(d - d->index + i);
}

/* Ends and submits the open batch (d->batch_lock held), waiting also for
 * an external timeline semaphore when `external` is not null. */
static int batch_submit_waiting(hpl__device *d, VkSemaphore external, uint64_t external_value)
{
    hpl__cmd *cmd = d->batch;
    hpl__submission s = {.queue = d->queue,
                         .cb = cmd->cb,
                         .signal = d->timeline,
                         .value = d->submitted + 1,
                         .stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT};
    if (d->batch_gate)
        hpl__submission_wait(&s, d->gate, d->batch_gate, NULL);
    if (d->batch_xfer)
        hpl__submission_wait(&s, d->xfer.timeline, d->batch_xfer, NULL);
    for (int i = 0; i < HPL__MAX_DEVICES; i++)
        if (d->batch_peer[i]) /* another device's timeline, imported (peer.c) */
            hpl__submission_wait(&s, d->peer[i], d->batch_peer[i], sibling(d, i));
    if (external)
        hpl__submission_wait(&s, external, external_value, NULL);
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
        hpl__device_fail(d, HPL_ERROR_VULKAN);
        return hpl__vk_error(r, "vkEndCommandBuffer");
    }
    /* Refused, the operations recorded in it never run, the device is
     * lost for good, and the value is signalled from the host all the same
     * (submitter.c): waits for it must not hang. */
    r = hpl__submit(d, &s);
    d->op_marks[s.value & d->op_mark_mask] = d->ops_recorded;
    __atomic_store_n(&d->submitted, s.value, __ATOMIC_RELEASE); /* read without the lock too */
    d->stats.submissions++;
    cmd->value = s.value;
    return r == VK_SUCCESS ? HPL_OK : hpl__vk_error(r, "vkQueueSubmit");
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
        if (!hpl__timeline_is_lane(points[i].timeline) && points[i].value > hpl__device_submitted(d)) {
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
    int rc = hpl__progress_gate(ctx, timeline, *requested + 1, points, count);
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
/* Work of d that waits for a point of another device that failed would
 * compute from what may never have run (a failed device's values are
 * reached all the same: submitter.c), so d fails too. */
static int check_producers(hpl_context *ctx, hpl__device *d, const hpl__point *points, int count)
{
    for (int i = 0; i < count; i++) {
        hpl__device *p = hpl__timeline_device(ctx, points[i].timeline);
        if (points[i].value && p != d && __atomic_load_n(&p->error, __ATOMIC_ACQUIRE)) {
            hpl__device_fail_after(d, p);
            return hpl__device_check(d);
        }
    }
    return HPL_OK;
}

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
    /* After the look at the values: a failed device sets its error before
     * it signals a value from the host. */
    int rc = check_producers(ctx, d, points, count);
    if (rc != HPL_OK || n == 0)
        return rc;
    rc = flush_for(ctx, foreign, n);
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
    int rc = check_producers(ctx, d, points, count); /* after the look, as gate_for */
    if (rc != HPL_OK || n == 0)
        return rc;
    rc = flush_for(ctx, foreign, n);
    return rc == HPL_OK ? gate_request(ctx, HPL__LANE + d->index, &d->xfer.gate_requested, foreign, n, gate) : rc;
}

const char *hpl__device_failure_cause(const hpl__device *d, char *buf, size_t size)
{
    buf[0] = '\0';
    int after = hpl__device_failed_after(d);
    if (after)
        snprintf(buf, size, " (its work waited for device %.100s, which failed)", sibling(d, after - 1)->info.name);
    else if (hpl__submit_failure(d) != VK_SUCCESS)
        snprintf(buf, size, " (the driver refused a submission)");
    return buf;
}

int hpl__device_check(const hpl__device *d)
{
    int error = __atomic_load_n(&d->error, __ATOMIC_ACQUIRE);
    if (!error)
        return HPL_OK;
    char cause[160];
    return hpl__fail(error, "device %s failed earlier: %s%s", d->info.name, hpl_error_string(error),
                     hpl__device_failure_cause(d, cause, sizeof cause));
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
    int rc = hpl__device_check(d);
    if (rc != HPL_OK)
        return rc;
    uint64_t gate = 0;
    hpl__point direct[HPL__MAX_TIMELINES];
    int ndirect = 0;
    rc = gate_for(ctx, d, waits, count, &gate, direct, &ndirect, &xfer);
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

/* The progress thread's flush of a watched batch (arg: the device), once
 * the work submitted before it is done. */
static void batch_watched(void *arg)
{
    hpl__device *d = arg;
    pthread_mutex_lock(&d->batch_lock);
    d->flush_watched = false;
    hpl__batch_flush_locked(d); /* an error marks the device; its waiters see it */
    pthread_mutex_unlock(&d->batch_lock);
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
    d->ops_recorded++;
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
        rc = hpl__progress_watch(ctx, d->index, &busy, 1, batch_watched, d);
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
        d->ops_recorded++;
        d->stats.operations++;
        *at = (hpl__point){d->index, d->submitted + 1};
        rc = batch_submit_waiting(d, semaphore, value);
    }
    pthread_mutex_unlock(&d->batch_lock);
    return rc;
}

/* Waits for one point. */
static int wait_point(hpl_context *ctx, hpl__point p)
{
    hpl__device *d = hpl__timeline_device(ctx, p.timeline);
    VkResult r = hpl__point_wait(ctx, p);
    if (r == VK_SUCCESS)
        return HPL_OK;
    if (r == VK_ERROR_DEVICE_LOST)
        hpl__device_fail(d, HPL_ERROR_DEVICE_LOST);
    if (hpl__device_failed_after(d)) {
        char cause[160];
        return hpl__fail(HPL_ERROR_DEVICE_LOST, "device %s: its work since did not run%s", d->info.name,
                         hpl__device_failure_cause(d, cause, sizeof cause));
    }
    VkResult failure = hpl__submit_failure(d);
    if (failure != VK_SUCCESS) { /* the driver refused a submission: name it */
        char what[160];
        snprintf(what, sizeof what, "vkQueueSubmit of device %s (its work since did not run)", d->info.name);
        return hpl__vk_error(failure, what);
    }
    return hpl__vk_error(r, "vkWaitSemaphores");
}

/* How far the timeline of point p has been submitted (or, for a failed
 * device's submit thread, signalled from the host): at most that much of
 * it can ever be reached. */
static uint64_t submitted_of(hpl_context *ctx, hpl__point p)
{
    hpl__device *d = hpl__timeline_device(ctx, p.timeline);
    hpl__submit_drain(d);
    pthread_mutex_lock(&d->batch_lock);
    uint64_t value = hpl__timeline_is_lane(p.timeline) ? d->xfer.submitted : d->submitted;
    pthread_mutex_unlock(&d->batch_lock);
    return value;
}

/* After a failed wait: the work waited for may still run, on the devices
 * that did not fail and, on the one that did, what was submitted before.
 * The caller may free what that work uses (a destroy), so this waits for
 * each point as far as it was submitted, whatever failed. It needs nobody
 * else: a failed device's submit thread signals what it will not submit,
 * and the progress thread opens gates on failed devices' points. Only the
 * driver reporting a device lost ends it early. */
static void settle_points(hpl_context *ctx, const hpl__point *points, int count)
{
    for (int i = 0; i < count; i++) {
        if (!points[i].value)
            continue;
        hpl__device *d = hpl__timeline_device(ctx, points[i].timeline);
        VkSemaphore semaphore = hpl__timeline_is_lane(points[i].timeline) ? d->xfer.timeline : d->timeline;
        hpl__semaphore_settle(d, semaphore, HPL__MIN(points[i].value, submitted_of(ctx, points[i])));
    }
}

int hpl__wait_points_held(hpl_context *ctx, const hpl__point *points, int count)
{
    int rc = HPL_OK;
    for (int i = 0; i < count && rc == HPL_OK; i++)
        if (points[i].value)
            rc = wait_point(ctx, points[i]);
    if (rc != HPL_OK)
        settle_points(ctx, points, count);
    return rc;
}

int hpl__wait_points(hpl_context *ctx, const hpl__point *points, int count)
{
    /* A failed device's values may be reached without its work (its
     * submit thread signals them): those are waited for, and fail. */
    bool pending = false;
    for (int i = 0; i < count && !pending; i++)
        pending = points[i].value && (hpl__timeline_completed(ctx, points[i].timeline) < points[i].value ||
                                      hpl__device_error(hpl__timeline_device(ctx, points[i].timeline)));
    if (!pending)
        return HPL_OK;
    /* A failed flush still waits: what was submitted before may be running. */
    int rc = flush_for(ctx, points, count);
    /* With the context lock still held: operations record into the ring's
     * command buffers under that lock alone, and a command pool is used by
     * one thread at a time. */
    for (int i = 0; i < count; i++)
        if (points[i].value && hpl__timeline_completed(ctx, points[i].timeline) < points[i].value)
            batch_prepare(hpl__timeline_device(ctx, points[i].timeline));
    /* Other threads may use the context while this one waits. */
    uint64_t since = hpl__events_wait_begin(ctx);
    HPL__UNLOCK(ctx);
    int waited = hpl__wait_points_held(ctx, points, count);
    HPL__LOCK(ctx);
    hpl__events_wait(ctx, points, count, since);
    return rc != HPL_OK ? rc : waited;
}

int hpl__wait_idle(hpl_context *ctx)
{
    hpl__point points[HPL__MAX_TIMELINES] = {0};
    int n = 0, rc = HPL_OK;
    ctx->unrecorded_work = false; /* (set again by whatever fails meanwhile) */
    for (int i = 0; i < ctx->device_count; i++) {
        int r = hpl__batch_flush(&ctx->devices[i]);
        rc = rc == HPL_OK ? r : rc;
    }
    /* Waits even after a failed flush: callers free what the work uses. */
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__device *d = &ctx->devices[i];
        n = hpl__points_add(points, n, (hpl__point){i, hpl__device_submitted(d)});
        n = hpl__points_add(points, n, hpl__lane_point(d, __atomic_load_n(&d->xfer.submitted, __ATOMIC_ACQUIRE)));
    }
    int waited = hpl__wait_points(ctx, points, n);
    rc = rc == HPL_OK ? waited : rc;
    /* A failed device's values may be reached without its work (its submit
     * thread signals them): the failure is what idle means there. */
    for (int i = 0; rc == HPL_OK && i < ctx->device_count; i++)
        rc = hpl__device_check(&ctx->devices[i]);
    return rc;
}
