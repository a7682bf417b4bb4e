/* The transfer lane: large copies between the host storage and device
 * buffers on the device's dedicated transfer queue, so that the copy engine
 * moves data while the compute queue runs kernels. Each copy is its own
 * submission on the lane's timeline, after the compute work it must follow
 * (a wait on the compute timeline: same VkDevice, no host in between).
 * - Uploads (access.c): the operation that reads one waits on the lane's
 *   timeline in its compute submission (hpl__batch_begin_after); coherence
 *   sees the operation's compute point, which comes after its uploads.
 * - Downloads (transfer.c): coherence records the lane's point (the lane
 *   timeline, coherence.h); whoever needs the host copy waits for it: the
 *   host, the progress thread, or the device's own compute queue (a later
 *   kernel that overwrites what the download reads).
 *
 * HPLVK_TRANSFER_LANE: "auto" (default; a lane where the device has a
 * dedicated transfer queue), "off", or "shared" (a lane with its own
 * timeline on the compute queue itself: no overlap, but every path of the
 * lane runs, for tests on devices with one queue). */
#include "lane.h"

#include "events.h"
#include "ring.h"
#include "submit.h"
#include "submitter.h"
#include "vk.h"

#include <stdlib.h>
#include <string.h>

typedef enum lane_mode { LANE_AUTO, LANE_OFF, LANE_SHARED } lane_mode;

static int lane_mode_of(lane_mode *mode)
{
    const char *env = getenv("HPLVK_TRANSFER_LANE");
    *mode = LANE_AUTO;
    if (!env || !strcmp(env, "auto"))
        return HPL_OK;
    if (!strcmp(env, "off"))
        *mode = LANE_OFF;
    else if (!strcmp(env, "shared"))
        *mode = LANE_SHARED;
    else
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "HPLVK_TRANSFER_LANE='%.40s' is not auto, off or shared", env);
    return HPL_OK;
}

/* Timestamps must mean the same on both queues: the event log times
 * uploads on the lane with the device's one query pool. */
static bool timestamps_match(const hpl__device *d, uint32_t family)
{
    VkQueueFamilyProperties qf[HPL_MAX_QUEUE_FAMILIES];
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d->physical, &n, NULL);
    n = HPL__MIN(n, HPL_MAX_QUEUE_FAMILIES);
    vkGetPhysicalDeviceQueueFamilyProperties(d->physical, &n, qf);
    return family < n && d->queue_family < n && qf[family].timestampValidBits == qf[d->queue_family].timestampValidBits;
}

int hpl__lane_open(hpl__device *d)
{
    hpl__lane *l = &d->xfer;
    lane_mode mode;
    int rc = lane_mode_of(&mode);
    if (rc != HPL_OK || mode == LANE_OFF)
        return rc;
    if (mode == LANE_SHARED) {
        l->queue = d->queue;
        l->family = d->queue_family;
        l->shared = true;
    } else if (d->transfer_queue && timestamps_match(d, d->transfer_family)) {
        l->queue = d->transfer_queue;
        l->family = d->transfer_family;
    } else {
        return HPL_OK;
    }
    VkCommandPoolCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = l->family};
    VkResult r = vkCreateCommandPool(d->device, &ci, NULL, &l->ring.pool);
    rc = r == VK_SUCCESS ? hpl__timeline_create(d, false, &l->timeline)
                         : hpl__vk_error(r, "vkCreateCommandPool (transfer lane)");
    if (rc == HPL_OK)
        rc = hpl__timeline_create(d, false, &l->gate);
    l->on = rc == HPL_OK;
    return rc;
}

void hpl__lane_close(hpl__device *d)
{
    hpl__lane *l = &d->xfer;
    hpl__ring_destroy(d->device, &l->ring);
    if (l->timeline)
        vkDestroySemaphore(d->device, l->timeline, NULL);
    if (l->gate)
        vkDestroySemaphore(d->device, l->gate, NULL);
    memset(l, 0, sizeof *l);
}

int hpl__lane_begin(hpl__device *d, VkCommandBuffer *cb)
{
    pthread_mutex_lock(&d->batch_lock);
    hpl__cmd *cmd = NULL;
    int rc = hpl__ring_begin(d->device, &d->xfer.ring, hpl__semaphore_value(d, d->xfer.timeline), &cmd);
    pthread_mutex_unlock(&d->batch_lock);
    if (rc != HPL_OK)
        return rc;
    /* Orders these copies after the lane's earlier ones (same regions); a
     * transfer queue knows only the transfer stage. */
    VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                         .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                         .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    vkCmdPipelineBarrier(cmd->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0, NULL, 0,
                         NULL);
    *cb = cmd->cb;
    d->xfer.open = cmd;
    return HPL_OK;
}

int hpl__lane_submit(hpl__device *d, uint64_t after, uint64_t gate, uint64_t *value)
{
    hpl__lane *l = &d->xfer;
    hpl__cmd *cmd = l->open;
    l->open = NULL;
    hpl__barrier_to_host(cmd->cb); /* downloads */
    VkResult r = vkEndCommandBuffer(cmd->cb);
    if (r != VK_SUCCESS) {
        cmd->value = 0;
        return hpl__vk_error(r, "vkEndCommandBuffer (transfer lane)");
    }
    pthread_mutex_lock(&d->batch_lock);
    /* The compute work it follows must be on the queue first. */
    int rc = after > d->submitted ? hpl__batch_flush_locked(d) : HPL_OK;
    hpl__submission s = {.queue = l->queue,
                         .cb = cmd->cb,
                         .signal = l->timeline,
                         .value = l->submitted + 1,
                         .stage = VK_PIPELINE_STAGE_TRANSFER_BIT};
    if (after)
        hpl__submission_wait(&s, d->timeline, after, NULL); /* same FIFO, earlier */
    if (gate)
        hpl__submission_wait(&s, l->gate, gate, NULL);
    if (rc == HPL_OK) {
        /* Refused, the value is signalled from the host all the same
         * (submitter.c), and the device is lost. */
        r = hpl__submit(d, &s);
        __atomic_store_n(&l->submitted, s.value, __ATOMIC_RELEASE); /* read without the lock too */
        cmd->value = s.value;
        hpl__events_submitted(d, hpl__lane_point(d, s.value));
        d->stats.transfer_submissions++;
        *value = s.value;
        if (r != VK_SUCCESS)
            rc = hpl__vk_error(r, "vkQueueSubmit (transfer lane)");
    } else {
        cmd->value = 0;
    }
    pthread_mutex_unlock(&d->batch_lock);
    return rc;
}

bool hpl__lane_after(hpl_context *ctx, const hpl__device *d, const hpl__point *points, int count, uint64_t *after)
{
    for (int i = 0; i < count; i++) {
        const hpl__point *p = &points[i];
        if (p->timeline == d->index)
            *after = HPL__MAX(*after, p->value);
        else if (p->timeline != HPL__LANE + d->index && p->value && hpl__timeline_completed(ctx, p->timeline) < p->value)
            return false; /* (the lane's own work is earlier on its queue) */
    }
    return true;
}
