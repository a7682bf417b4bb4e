/* Moving regions of arrays from device memories to the host storage: one
 * DMA into the storage imported into the device, or staged (staging.c). */
#include "events.h"

/* ---- device to host ---------------------------------------------------- */

int hpl__stage_to_host(hpl_context *ctx, hpl__array *root, const hpl__transfer *t)
{
    int s = root->coherence.mem[t->src].device;
    hpl__device *d = &ctx->devices[s];
    int rc = hpl__host_storage_import(ctx, root, s);
    if (rc != HPL_OK)
        return rc;
    if (root->imports[s].staged)
        return hpl__staged_download(ctx, root, t);
    /* Writing the host copy's region: wait for the work of other devices
     * that writes or reads it there. The source's own work is earlier on
     * this queue. */
    hpl__point waits[HPL__MAX_DEVICES];
    int n = hpl__coherence_wait_points(&root->coherence, HPL__HOST, &t->region, true, waits, 0);
    VkCommandBuffer cb;
    rc = hpl__batch_begin(ctx, d, waits, n, &cb);
    if (rc != HPL_OK)
        return rc;
    hpl__layout from = hpl__layout_of(root, t->src, s), to = hpl__layout_of(root, HPL__HOST, s);
    hpl__record_copy_logged(ctx, d, cb, root, &t->region, t->src, HPL__HOST, &from, &to, hpl__no_shift);
    hpl__point at;
    rc = hpl__batch_end(ctx, d, &at);
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
