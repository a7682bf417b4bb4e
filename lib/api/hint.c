/* Hints from the user: prefetch a (sub)array to where it will be used, and
 * discard contents nobody will read. Neither changes what a later read sees
 * except that discarded elements become undefined. */
#include "api.h"

#include "access.h"
#include "acquired.h"
#include "inflight.h"
#include "rank_state.h"
#include "transfer.h"

/* Prefetch to a device: an operation that only reads the view there, so
 * that its fetches are planned, recorded and ordered exactly like an eval's. */
static int prefetch_to_device(hpl_context *ctx, hpl__array *a, int device)
{
    hpl__op op;
    hpl__op_init(&op, ctx, device);
    hpl__view view = hpl__view_of(a);
    int slot = 0;
    int rc = hpl__op_bind(&op, &view, HPL_READ, &slot);
    if (rc == HPL_OK)
        rc = hpl__op_prepare(&op);
    VkCommandBuffer cb = VK_NULL_HANDLE;
    if (rc == HPL_OK)
        rc = hpl__op_record(&op, &cb);
    if (rc == HPL_OK) {
        hpl__point at;
        rc = hpl__op_submit(&op, &at);
    }
    hpl__op_release(&op);
    if (rc == HPL_OK)
        a->last_where = device;
    return rc;
}

/* Prefetch to the host: its read of the view is refused like a device's
 * while the application's work may write it (an acquisition with
 * HPL_WRITE). */
static int prefetch_to_host(hpl_context *ctx, hpl__array *a)
{
    int rc = hpl__acquired_check(ctx, a->root, &a->box, HPL_READ);
    if (rc != HPL_OK)
        return rc;
    hpl__region r;
    hpl__region_init(&r);
    rc = hpl__region_set_box(&r, &a->box) ? hpl__fetch_to_host(ctx, a->root, &r)
                                          : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    hpl__region_free(&r);
    return rc;
}

/* On a context over ranks: to a device, its rank receives what it lacks
 * first; to the host, each rank prefetches what it holds (a read then
 * brings the rest). */
static int prefetch_span(hpl_context *ctx, hpl_array handle, hpl__array *a, int where)
{
    int local = -1, owner = -1;
    int rc = where == HPL_WHERE_LAST_USED
                 ? hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "where = %d is neither a device nor HPL_ON_HOST", where)
                 : hpl__span_where(ctx, a, where, &where, &local, &owner);
    rc = hpl__span_agree(ctx, rc, a, "hpl_array_prefetch(where %d)", where);
    if (rc == HPL_OK && owner >= 0)
        rc = hpl__span_bring(ctx, a, owner);
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK && local != -1)
        rc = local == HPL_ON_HOST ? prefetch_to_host(ctx, a) : prefetch_to_device(ctx, a, local);
    /* As on one process, a prefetch to a device makes it the last used:
     * on every rank, by its global index. */
    if (rc == HPL_OK && owner >= 0 && hpl__array_get(ctx, handle, &a) == HPL_OK)
        a->last_where = where;
    return rc;
}

static int prefetch_locked(hpl_context *ctx, hpl_array handle, int where)
{
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc != HPL_OK)
        return rc;
    if (ctx->span)
        return prefetch_span(ctx, handle, a, where);
    if (where == HPL_ON_HOST)
        return prefetch_to_host(ctx, a);
    if (where < 0 || where >= ctx->device_count)
        return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "where = %d is neither a device (the context has %d) nor HPL_ON_HOST",
                         where, ctx->device_count);
    return prefetch_to_device(ctx, a, where);
}

int hpl_array_prefetch(hpl_context *ctx, hpl_array array, int where)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_prefetch: ctx is NULL");
    HPL__LOCK(ctx);
    int rc = hpl__inflight_wait(ctx);
    if (rc == HPL_OK)
        rc = prefetch_locked(ctx, array, where);
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_prefetch");
    HPL__UNLOCK(ctx);
    return rc;
}

/* The owned box becomes valid nowhere: no memory fetches it, no eviction
 * saves it, and the next writer of part of it moves nothing. Work already
 * submitted keeps its order: later writers still wait for it. */
static int discard_locked(hpl_context *ctx, hpl_array handle)
{
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (ctx->span) /* on every rank: no rank holds it any more */
        rc = hpl__span_agree(ctx, rc, rc == HPL_OK ? a : NULL, "hpl_array_discard");
    if (rc != HPL_OK)
        return rc;
    hpl__coherence *c = &a->root->coherence;
    hpl__region owned;
    hpl__region_init(&owned);
    bool ok = hpl__region_set_box(&owned, &a->owned);
    for (int m = 0; ok && m < c->count; m++)
        if (c->mem[m].used)
            ok = hpl__coherence_invalidate(c, m, &owned);
    if (ok && a->root->ranks)
        ok = hpl__rank_state_discard(a->root->ranks, &owned);
    hpl__region_free(&owned);
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory discarding '%s'", a->name);
}

int hpl_array_discard(hpl_context *ctx, hpl_array array)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_discard: ctx is NULL");
    HPL__LOCK(ctx);
    int rc = discard_locked(ctx, array);
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_discard");
    HPL__UNLOCK(ctx);
    return rc;
}
