/* Moving regions of arrays from device memories to the host storage: one
 * DMA into the storage imported into the device, or staged (staging.c). */
#include "transfer.h"

#include "copy.h"
#include "events.h"
#include "lane.h"
#include "storage.h"
#include "submit.h"

/* ---- device to host ---------------------------------------------------- */

/* Does d's transfer lane take download t? A large one (the shared lane of
 * the tests: any), and a small one that the compute queue would run after
 * work it does not need: its source's writers (on d: a device memory is
 * touched by d's timelines only) are followed there by later work, such
 * as the interior of a halos-first eval after the bands it copies. The
 * lane waits on d's compute timeline up to *after, where the writers are;
 * the host side's waits on other devices go through the lane's gate
 * (lane_download). */
static bool lane_takes_download(hpl_context *ctx, hpl__device *d, hpl__array *root, const hpl__transfer *t,
                                uint64_t *after)
{
    if (!d->xfer.on)
        return false;
    hpl__layout from = hpl__layout_of(root, t->src, d->index), to = hpl__layout_of(root, HPL__HOST, d->index);
    if (hpl__copy_by_kernel(d, root, &t->region, &from, &to))
        return false; /* the lane's queue runs no kernels */
    hpl__point writers[HPL__MAX_TIMELINES];
    int w = hpl__coherence_wait_points(&root->coherence, t->src, &t->region, false, writers, 0);
    *after = 0;
    if (!hpl__lane_after(ctx, d, writers, w, after))
        return false;
    uint64_t bytes = hpl__region_volume(&t->region) * hpl_type_size(root->type);
    return bytes >= HPL__LANE_MIN_BYTES || d->xfer.shared || *after < hpl__device_recorded(d);
}

void hpl__record_download(hpl_context *ctx, hpl__device *d, VkCommandBuffer cb, hpl__array *root,
                          const hpl__transfer *t)
{
    hpl__layout from = hpl__layout_of(root, t->src, d->index), to = hpl__layout_of(root, HPL__HOST, d->index);
    hpl__record_copy_logged(ctx, d, cb, root, &t->region, t->src, HPL__HOST, &from, &to, hpl__no_shift);
}

/* Download t on d's transfer lane, after d's compute work up to `after`
 * and the host side's waits (`waits`, of any device). */
static int lane_download(hpl_context *ctx, hpl__device *d, hpl__array *root, const hpl__transfer *t, uint64_t after,
                         const hpl__point *waits, int n, hpl__point *at)
{
    uint64_t gate = 0;
    int rc = hpl__lane_gate_for(ctx, d, waits, n, &after, &gate);
    VkCommandBuffer cb;
    if (rc == HPL_OK)
        rc = hpl__lane_begin(d, &cb);
    if (rc != HPL_OK)
        return rc;
    hpl__record_download(ctx, d, cb, root, t);
    uint64_t value = 0;
    rc = hpl__lane_submit(d, after, gate, &value);
    *at = hpl__lane_point(d, value);
    return rc;
}

int hpl__stage_to_host(hpl_context *ctx, hpl__array *root, const hpl__transfer *t)
{
    int s = root->coherence.mem[t->src].device;
    hpl__device *d = &ctx->devices[s];
    int rc = hpl__host_storage_import(ctx, root, s);
    if (rc != HPL_OK)
        return rc;
    if (root->imports[s].staged)
        return hpl__staged_download(ctx, root, t);
    /* Writing the host copy's region: wait for the work that writes or
     * reads it there. On the compute queue, the source's writers are
     * earlier on the queue. */
    hpl__point waits[HPL__MAX_TIMELINES];
    int n = hpl__coherence_wait_points(&root->coherence, HPL__HOST, &t->region, true, waits, 0);
    hpl__point at;
    uint64_t after;
    if (lane_takes_download(ctx, d, root, t, &after)) {
        rc = lane_download(ctx, d, root, t, after, waits, n, &at);
    } else {
        VkCommandBuffer cb;
        rc = hpl__batch_begin(ctx, d, waits, n, &cb);
        if (rc != HPL_OK)
            return rc;
        hpl__record_download(ctx, d, cb, root, t);
        rc = hpl__batch_end(ctx, d, &at);
    }
    if (rc != HPL_OK)
        return rc;
    hpl__count_transfer(ctx, root, t);
    return hpl__coherence_did_transfer(&root->coherence, t, at)
               ? HPL_OK
               : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

int hpl__fetch_to_host(hpl_context *ctx, hpl__array *root, const hpl__region *region)
{
    hpl__transfer_plan plan = {0};
    int rc = hpl__coherence_plan_read(&root->coherence, HPL__HOST, region, &plan)
                 ? HPL_OK
                 : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (int i = 0; rc == HPL_OK && i < plan.count; i++)
        rc = hpl__stage_to_host(ctx, root, &plan.steps[i]);
    hpl__transfer_plan_free(&plan);
    return rc;
}
