/* hpl_eval: plan the subkernels (launch.c: one for a plain eval, one per
 * device for a split one), run them (dispatch.c), and remember how each
 * annotated array was split, for hpl_array_part. */
#include "api.h"

#include "inflight.h"
#include "launch.h"
#include "subkernel.h"

#include <stdio.h>
#include <string.h>

/* Remembers each annotated array's split for hpl_array_part(). */
static void remember_parts(const hpl_arg *args, const hpl__launch_plan *p)
{
    const hpl__subkernel *s = p->subkernels;
    for (int i = 0; i < s[0].variant->reflection.arg_count; i++) {
        if (!args[i].part.on)
            continue;
        hpl__array *a = s[0].views[i].array;
        a->split = (hpl__split){.count = p->count, .dim = args[i].part.dim, .overlap = (uint64_t)args[i].part.overlap};
        memcpy(a->split.devices, p->devices, sizeof a->split.devices);
        for (int j = 0; j < p->count; j++) {
            a->split.lo[j] = p->parts[j].lo;
            a->split.hi[j] = p->parts[j].hi;
        }
    }
}

int hpl__eval_locked(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args, size_t nargs,
                     const hpl__part *given)
{
    hpl__launch_plan p;
    p.subkernels = NULL; /* the rest is the plan's to fill (not cleared: host time per eval) */
    p.shares = NULL;
    p.given = given;
    int rc = hpl__launch_plan_make(ctx, k, launch, args, nargs, &p);
    if (rc == HPL_OK && p.halo_rows)
        rc = hpl__subkernels_run_halos_first(ctx, p.subkernels, p.count, args, p.whole, p.dim, p.halo_rows);
    else if (rc == HPL_OK)
        rc = hpl__subkernels_run(ctx, p.subkernels, p.count, args, p.whole);
    if (rc == HPL_OK && p.annotated)
        remember_parts(args, &p);
    hpl__launch_plan_done(ctx, &p);
    return rc;
}

int hpl__eval_locked_phased(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                            size_t nargs, const hpl__part *given, const hpl__part *first, int (*between)(void *),
                            void *user)
{
    hpl__launch_plan p;
    p.subkernels = NULL;
    p.shares = NULL;
    p.given = given;
    int rc = hpl__launch_plan_make(ctx, k, launch, args, nargs, &p);
    bool phased = rc == HPL_OK && p.annotated && !hpl__subkernels_must_run_in_order(ctx, p.subkernels, p.count);
    if (phased) {
        hpl__phases ph[HPL__MAX_DEVICES];
        for (int i = 0; i < p.count; i++) {
            const hpl__subkernel *sk = &p.subkernels[i];
            uint64_t lo = sk->offset[p.dim], hi = lo + sk->global[p.dim];
            hpl__part f = first[sk->device->index];
            uint64_t a = HPL__MAX(f.lo, lo), b = HPL__MIN(f.hi, hi);
            hpl__phases *q = &ph[i];
            memset(q, 0, sizeof *q);
            if (a < b) {
                q->count[0] = 1;
                q->range[0][0][0] = a;
                q->range[0][0][1] = b;
            } else {
                a = b = hi; /* all of it after */
            }
            if (lo < a) {
                q->range[1][q->count[1]][0] = lo;
                q->range[1][q->count[1]++][1] = a;
            }
            if (b < hi) {
                q->range[1][q->count[1]][0] = b;
                q->range[1][q->count[1]++][1] = hi;
            }
        }
        rc = hpl__subkernels_run_phases(ctx, p.subkernels, p.count, args, p.whole, p.dim, ph, between, user);
    } else {
        int moved = between(user);
        rc = rc == HPL_OK ? moved : rc;
        if (rc == HPL_OK)
            rc = hpl__subkernels_run(ctx, p.subkernels, p.count, args, p.whole);
    }
    if (rc == HPL_OK && p.annotated)
        remember_parts(args, &p);
    hpl__launch_plan_done(ctx, &p);
    return rc;
}

int hpl_eval(hpl_context *ctx, hpl_kernel kernel, const hpl_launch *launch, const hpl_arg *args, size_t nargs)
{
    static const hpl_launch defaults = {0};
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_eval: ctx is NULL");
    if (!launch)
        launch = &defaults;
    HPL__LOCK(ctx);
    hpl__kernel *k = NULL;
    int rc = hpl__inflight_wait(ctx);
    if (rc == HPL_OK)
        rc = hpl__kernel_get(ctx, kernel, &k);
    if (rc == HPL_OK && nargs && !args)
        rc = hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "args is NULL but nargs is %zu", nargs);
    if (rc == HPL_OK)
        rc = ctx->span ? ctx->span->eval(ctx, k, launch, args, nargs, NULL) : hpl__eval_locked(ctx, k, launch, args, nargs, NULL);
    if (rc != HPL_OK) {
        char prefix[128];
        if (k)
            snprintf(prefix, sizeof prefix, "hpl_eval(%s)", k->name);
        else
            snprintf(prefix, sizeof prefix, "hpl_eval"); /* the handle's own message says why */
        hpl__error_prefix(prefix);
    }
    HPL__UNLOCK(ctx);
    return rc;
}

/* ---- parts ------------------------------------------------------------- */

static int part_locked(hpl_context *ctx, hpl_array handle, int index, hpl_array *out, int *device)
{
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc != HPL_OK)
        return rc;
    if (!out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "part is NULL");
    if (a->split.count == 0)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "array '%s' has not been split by an annotated eval", a->name);
    if (index < 0 || index >= a->split.count)
        return hpl__fail(HPL_ERROR_OUT_OF_RANGE, "part %d of array '%s', which has %d part%s", index, a->name,
                         a->split.count, a->split.count == 1 ? "" : "s");
    hpl__arg_view whole;
    hpl__arg_view_set(&whole, a);
    hpl_partition p = {.on = true, .dim = a->split.dim, .overlap = (int64_t)a->split.overlap};
    hpl__arg_view v = hpl__part_view(&whole, &p, a->split.lo[index], a->split.hi[index]);
    hpl__array *s = NULL;
    rc = hpl__subarray_make(ctx, a, &v.at.box, &v.at.owned, &s);
    if (rc != HPL_OK)
        return rc;
    out->id = s->id;
    if (device)
        *device = a->split.devices[index];
    return HPL_OK;
}

int hpl_array_part(hpl_context *ctx, hpl_array array, int index, hpl_array *part, int *device)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_part: ctx is NULL");
    HPL__LOCK(ctx);
    int rc = part_locked(ctx, array, index, part, device);
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_part");
    HPL__UNLOCK(ctx);
    return rc;
}

int hpl_array_part_count(hpl_context *ctx, hpl_array array)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_part_count: ctx is NULL");
    HPL__LOCK(ctx);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, array, &a);
    if (rc == HPL_OK)
        rc = a->split.count;
    else
        hpl__error_prefix("hpl_array_part_count");
    HPL__UNLOCK(ctx);
    return rc;
}

