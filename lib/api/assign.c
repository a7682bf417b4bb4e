/* Assignment between (sub)arrays and fill with a scalar, on a device
 * (asynchronous) or on the host. */
#include "api.h"

#include "access.h"
#include "acquired.h"
#include "copy.h"
#include "events.h"
#include "inflight.h"

#include <string.h>

/* Resolves `where` for an operation whose destination is a. */
static int where_of(hpl_context *ctx, const hpl__array *a, int where, int *out)
{
    if (where == HPL_WHERE_LAST_USED)
        where = a->last_where;
    if (where != HPL_ON_HOST && (where < 0 || where >= ctx->device_count))
        return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE,
                         "where = %d is neither a device (the context has %d) nor HPL_ON_HOST or HPL_WHERE_LAST_USED",
                         where, ctx->device_count);
    *out = where;
    return HPL_OK;
}

/* ---- fill ------------------------------------------------------------- */

typedef struct fill_job {
    uint8_t *host;
    const void *value;
    size_t esize;
} fill_job;

static void fill_run(void *user, uint64_t from, uint64_t to, uint64_t count)
{
    (void)from;
    fill_job *j = user;
    uint8_t *p = j->host + to * j->esize;
    for (uint64_t k = 0; k < count; k++)
        memcpy(p + k * j->esize, j->value, j->esize);
}

static void fill_host(hpl__array *a, const void *value)
{
    const hpl__box *whole = &a->root->coherence.whole;
    fill_job j = {.host = a->root->host, .value = value, .esize = hpl_type_size(a->type)};
    hpl__box_runs(&a->owned, whole, whole, hpl__no_shift, fill_run, &j);
}

/* Fills at `where`, this process's device index or HPL_ON_HOST. */
static int fill_at(hpl_context *ctx, hpl_array handle, const void *value, int where)
{
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc != HPL_OK)
        return rc;
    if (where != HPL_ON_HOST) {
        rc = hpl__fill_on_device(ctx, a, value, where);
        if (rc == HPL_OK)
            a->last_where = where;
        return rc;
    }
    rc = hpl__acquired_check(ctx, a->root, &a->owned, HPL_WRITE);
    if (rc == HPL_OK)
        rc = hpl__host_sync(ctx, a->root, &a->owned, false, true);
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, handle, &a); /* the wait released the lock */
    if (rc == HPL_OK) {
        fill_host(a, value);
        rc = hpl__host_written(a);
    }
    return rc;
}

/* On a context over ranks: the rank of device `where` fills (every rank
 * its host for HPL_ON_HOST), and the others forget the owned box. */
static int fill_span(hpl_context *ctx, hpl_array handle, hpl__array *a, const void *value, int where)
{
    int local = -1, owner = -1;
    uint64_t bits = 0;
    memcpy(&bits, value, HPL__MIN(sizeof bits, hpl_type_size(a->type)));
    int rc = hpl__span_where(ctx, a, where, &where, &local, &owner);
    rc = hpl__span_agree(ctx, rc, a, "hpl_array_fill(0x%llx, where %d)", (unsigned long long)bits, where);
    if (rc == HPL_OK && local != -1)
        rc = fill_at(ctx, handle, value, local);
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK)
        rc = hpl__span_wrote(ctx, a, owner);
    if (rc == HPL_OK)
        a->last_where = where;
    return rc;
}

static int fill_locked(hpl_context *ctx, hpl_array handle, const void *value, int where)
{
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK && ctx->span)
        return fill_span(ctx, handle, a, value, where);
    if (rc == HPL_OK)
        rc = where_of(ctx, a, where, &where);
    return rc == HPL_OK ? fill_at(ctx, handle, value, where) : rc;
}

int hpl_array_fill(hpl_context *ctx, hpl_array array, const void *value, int where)
{
    if (!ctx || !value)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_fill: %s is NULL", !ctx ? "ctx" : "value");
    HPL__LOCK(ctx);
    int rc = hpl__inflight_wait(ctx);
    if (rc == HPL_OK)
        rc = fill_locked(ctx, array, value, where);
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_fill");
    HPL__UNLOCK(ctx);
    return rc;
}

/* ---- assignment ------------------------------------------------------- */

static int check_pair(const hpl__array *dst, const hpl__array *src)
{
    if (dst->type != src->type)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "'%s' holds %s but '%s' holds %s", dst->name,
                         hpl_type_name(dst->type), src->name, hpl_type_name(src->type));
    if (dst->ndims != src->ndims || memcmp(dst->dims, src->dims, sizeof dst->dims))
        return hpl__fail(HPL_ERROR_DIMENSIONS, "'%s' is %llux%llux%llu but '%s' is %llux%llux%llu", dst->name,
                         (unsigned long long)dst->dims[0], (unsigned long long)dst->dims[1],
                         (unsigned long long)dst->dims[2], src->name, (unsigned long long)src->dims[0],
                         (unsigned long long)src->dims[1], (unsigned long long)src->dims[2]);
    hpl__box overlap;
    if (dst->root == src->root && hpl__box_intersect(&dst->box, &src->box, &overlap))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "'%s' and '%s' overlap in '%s'", dst->name, src->name,
                         dst->root->name);
    return HPL_OK;
}

/* Element x of dst takes element x + shift of src (root coordinates). */
static void shift_of(const hpl__array *dst, const hpl__array *src, int64_t shift[3])
{
    for (int i = 0; i < 3; i++)
        shift[i] = (int64_t)src->box.lo[i] - (int64_t)dst->box.lo[i];
}

static void assign_host(hpl__array *dst, hpl__array *src)
{
    int64_t shift[3];
    shift_of(dst, src, shift);
    hpl__host_copy(&dst->owned, src->root->host, &src->root->coherence.whole, dst->root->host,
                   &dst->root->coherence.whole, shift, hpl_type_size(dst->type));
}

static int assign_on_host(hpl_context *ctx, hpl_array dst_handle, hpl_array src_handle)
{
    hpl__array *dst = NULL, *src = NULL;
    int rc = hpl__array_get(ctx, src_handle, &src);
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, dst_handle, &dst);
    if (rc == HPL_OK)
        rc = hpl__acquired_check(ctx, src->root, &src->box, HPL_READ);
    if (rc == HPL_OK)
        rc = hpl__acquired_check(ctx, dst->root, &dst->owned, HPL_WRITE);
    if (rc == HPL_OK)
        rc = hpl__host_sync(ctx, src->root, &src->box, true, false);
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, dst_handle, &dst);
    if (rc == HPL_OK)
        rc = hpl__host_sync(ctx, dst->root, &dst->owned, false, true);
    /* The waits released the lock: look both up again; src's host copy is
     * still valid (only this thread's calls could have changed it, and
     * callers order uses of one array themselves). */
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, src_handle, &src);
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, dst_handle, &dst);
    if (rc != HPL_OK)
        return rc;
    assign_host(dst, src);
    return hpl__host_written(dst);
}

static int assign_on_device(hpl_context *ctx, hpl__array *dst, hpl__array *src, int device)
{
    hpl__op op;
    hpl__op_init(&op, ctx, device);
    hpl__view from = hpl__view_of(src), to = {dst->root, dst->owned, dst->owned};
    int src_slot = 0, dst_slot = 0;
    int rc = hpl__op_bind(&op, &from, HPL_READ, &src_slot);
    if (rc == HPL_OK)
        rc = hpl__op_bind(&op, &to, HPL_WRITE, &dst_slot);
    if (rc == HPL_OK)
        rc = hpl__op_prepare(&op);
    VkCommandBuffer cb = VK_NULL_HANDLE;
    if (rc == HPL_OK)
        rc = hpl__op_record(&op, &cb);
    if (rc == HPL_OK) {
        hpl__layout a = hpl__layout_of(src->root, src_slot, device), b = hpl__layout_of(dst->root, dst_slot, device);
        int64_t shift[3];
        shift_of(dst, src, shift);
        hpl__region region;
        hpl__region_init(&region);
        hpl__region_set_box(&region, &dst->owned); /* one box: inline storage, cannot fail */
        hpl__record_copy_logged(ctx, &ctx->devices[device], cb, dst->root, &region, src_slot, dst_slot, &a, &b, shift);
        hpl__region_free(&region);
        hpl__point at;
        rc = hpl__op_submit(&op, &at);
    }
    if (rc == HPL_OK && dst_slot != HPL__HOST) {
        hpl_device_stats *s = &ctx->devices[device].stats;
        s->local_bytes += hpl__box_volume(&dst->owned) * hpl_type_size(dst->type);
        s->local_count++;
    }
    hpl__op_release(&op);
    return rc;
}

/* On a context over ranks: the rank of device `where` (every rank for
 * HPL_ON_HOST) receives what it lacks of src and assigns; the others
 * forget dst's owned box. */
static int assign_span(hpl_context *ctx, hpl_array dst_handle, hpl_array src_handle, int rc, int where)
{
    hpl__array *dst = NULL, *src = NULL;
    int local = -1, owner = -1;
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, dst_handle, &dst);
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, src_handle, &src);
    if (rc == HPL_OK)
        rc = hpl__span_where(ctx, dst, where, &where, &local, &owner);
    rc = hpl__span_agree(ctx, rc, dst, "hpl_array_assign(where %d, from %llu,%llu,%llu)", where,
                         src ? (unsigned long long)src->box.lo[0] : 0ull, src ? (unsigned long long)src->box.lo[1] : 0ull,
                         src ? (unsigned long long)src->box.lo[2] : 0ull);
    if (rc == HPL_OK)
        rc = hpl__span_bring(ctx, src, owner);
    if (rc == HPL_OK && local != -1) {
        if (local == HPL_ON_HOST) {
            rc = assign_on_host(ctx, dst_handle, src_handle);
        } else if ((rc = hpl__array_get(ctx, dst_handle, &dst)) == HPL_OK &&
                   (rc = hpl__array_get(ctx, src_handle, &src)) == HPL_OK) {
            rc = assign_on_device(ctx, dst, src, local);
        }
    }
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, dst_handle, &dst);
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, src_handle, &src);
    if (rc == HPL_OK)
        rc = hpl__span_wrote(ctx, dst, owner);
    if (rc == HPL_OK)
        dst->last_where = src->last_where = where;
    return rc;
}

static int assign_locked(hpl_context *ctx, hpl_array dst_handle, hpl_array src_handle, int where)
{
    hpl__array *dst = NULL, *src = NULL;
    int rc = hpl__array_get(ctx, dst_handle, &dst);
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, src_handle, &src);
    if (rc == HPL_OK)
        rc = check_pair(dst, src);
    if (ctx->span)
        return assign_span(ctx, dst_handle, src_handle, rc, where);
    if (rc == HPL_OK)
        rc = where_of(ctx, dst, where, &where);
    if (rc != HPL_OK)
        return rc;
    if (where == HPL_ON_HOST)
        return assign_on_host(ctx, dst_handle, src_handle);
    rc = assign_on_device(ctx, dst, src, where);
    if (rc == HPL_OK)
        dst->last_where = src->last_where = where;
    return rc;
}

int hpl_array_assign(hpl_context *ctx, hpl_array dst, hpl_array src, int where)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_assign: ctx is NULL");
    HPL__LOCK(ctx);
    int rc = hpl__inflight_wait(ctx);
    if (rc == HPL_OK)
        rc = assign_locked(ctx, dst, src, where);
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_assign");
    HPL__UNLOCK(ctx);
    return rc;
}
