/* Moving regions of arrays from device memories to the host storage: one
 * DMA into the storage imported into the device, or staged (staging.c). */
#include "events.h"

/* ---- device to host ---------------------------------------------------- */

/* Does d's transfer lane take download t, whose host side waits for
 * `waits`? A large one (the shared lane of the tests: any) whose waits are
 * all on d (or done): the lane then waits on d's compute timeline only, up
 * to *after, where the writers of its source are. Work of other devices
 * goes through the compute queue's gate. */
static bool lane_takes_download(hpl_context *ctx, hpl__device *d, hpl__array *root, const hpl__transfer *t,
                                const hpl__point *waits, int n, uint64_t *after)
{
    uint64_t bytes = hpl__region_volume(&t->region) * hpl_type_size(root->type);
    if (!d->xfer.on || (bytes < HPL__LANE_MIN_BYTES && !d->xfer.shared))
        return false;
    hpl__layout from = hpl__layout_of(root, t->src, d->index), to = hpl__layout_of(root, HPL__HOST, d->index);
    if (hpl__copy_by_kernel(d, root, &t->region, &from, &to))
        return false; /* the lane's queue runs no kernels */
    hpl__point writers[HPL__MAX_TIMELINES];
    int w = hpl__coherence_wait_points(&root->coherence, t->src, &t->region, false, writers, 0);
    *after = 0;
    return hpl__lane_after(ctx, d, waits, n, after) && hpl__lane_after(ctx, d, writers, w, after);
}

/* Records download t (source on d) into cb. */
static void record_download(hpl_context *ctx, hpl__device *d, VkCommandBuffer cb, hpl__array *root,
                            const hpl__transfer *t)
{
    hpl__layout from = hpl__layout_of(root, t->src, d->index), to = hpl__layout_of(root, HPL__HOST, d->index);
    hpl__record_copy_logged(ctx, d, cb, root, &t->region, t->src, HPL__HOST, &from, &to, hpl__no_shift);
}

/* Download t on d's transfer lane, after d's compute work up to `after`. */
static int lane_download(hpl_context *ctx, hpl__device *d, hpl__array *root, const hpl__transfer *t, uint64_t after,
                         hpl__point *at)
{
    VkCommandBuffer cb;
    int rc = hpl__lane_begin(d, &cb);
    if (rc != HPL_OK)
        return rc;
    record_download(ctx, d, cb, root, t);
    uint64_t value = 0;
    rc = hpl__lane_submit(d, after, &value);
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
    if (lane_takes_download(ctx, d, root, t, waits, n, &after)) {
        rc = lane_download(ctx, d, root, t, after, &at);
    } else {
        VkCommandBuffer cb;
        rc = hpl__batch_begin(ctx, d, waits, n, &cb);
        if (rc != HPL_OK)
            return rc;
        record_download(ctx, d, cb, root, t);
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
