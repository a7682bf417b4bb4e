/* Transfer statistics: counted per device where copies are recorded,
 * read and reset by hpl_stats_get / hpl_stats_reset. */
#include "transfer.h"

#include <string.h>

void hpl__count_transfer(hpl_context *ctx, const hpl__array *root, const hpl__transfer *t)
{
    const hpl__coherence *c = &root->coherence;
    uint64_t bytes = hpl__region_volume(&t->region) * hpl_type_size(root->type);
    if (t->src == HPL__HOST) {
        hpl_device_stats *s = &ctx->devices[c->mem[t->dst].device].stats;
        s->to_device_bytes += bytes;
        s->to_device_count++;
    } else if (t->dst == HPL__HOST) {
        hpl_device_stats *s = &ctx->devices[c->mem[t->src].device].stats;
        s->to_host_bytes += bytes;
        s->to_host_count++;
    } else {
        hpl_device_stats *s = &ctx->devices[c->mem[t->src].device].stats;
        s->local_bytes += bytes;
        s->local_count++;
    }
}

int hpl_stats_get(hpl_context *ctx, hpl_stats *out)
{
    if (!ctx || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_stats_get: %s is NULL", !ctx ? "ctx" : "out");
    HPL__LOCK(ctx);
    memset(out, 0, sizeof *out);
    out->device_count = ctx->device_count;
    hpl_device_stats *t = &out->total;
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__device *d = &ctx->devices[i];
        pthread_mutex_lock(&d->batch_lock); /* the progress thread counts submissions */
        out->device[i] = d->stats;
        pthread_mutex_unlock(&d->batch_lock);
        const hpl_device_stats *s = &out->device[i];
        t->to_device_bytes += s->to_device_bytes;
        t->to_device_count += s->to_device_count;
        t->to_host_bytes += s->to_host_bytes;
        t->to_host_count += s->to_host_count;
        t->local_bytes += s->local_bytes;
        t->local_count += s->local_count;
        t->evictions += s->evictions;
        t->evicted_bytes += s->evicted_bytes;
        t->resident_bytes += s->resident_bytes;
        t->peak_bytes += s->peak_bytes;
        t->operations += s->operations;
        t->stray_invocations += s->stray_invocations;
        t->submissions += s->submissions;
        t->transfer_submissions += s->transfer_submissions;
        t->staged_bytes += s->staged_bytes;
        t->copy_kernels += s->copy_kernels;
    }
    if (ctx->span) {
        out->rank_sent_bytes = ctx->span->sent_bytes;
        out->rank_sent_count = ctx->span->sent_count;
        out->rank_received_bytes = ctx->span->received_bytes;
        out->rank_received_count = ctx->span->received_count;
    }
    HPL__UNLOCK(ctx);
    return HPL_OK;
}

int hpl_stats_reset(hpl_context *ctx)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_stats_reset: ctx is NULL");
    HPL__LOCK(ctx);
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__device *d = &ctx->devices[i];
        pthread_mutex_lock(&d->batch_lock);
        hpl_device_stats *s = &d->stats;
        *s = (hpl_device_stats){.resident_bytes = s->resident_bytes, .peak_bytes = s->resident_bytes};
        pthread_mutex_unlock(&d->batch_lock);
    }
    if (ctx->span)
        ctx->span->sent_bytes = ctx->span->sent_count = ctx->span->received_bytes = ctx->span->received_count = 0;
    HPL__UNLOCK(ctx);
    return HPL_OK;
}
