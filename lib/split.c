/* Multi-device evals by annotation (hplvk.h section 7b): the devices, the
 * parts of each annotated argument, one subkernel per part, and the parts
 * as subarrays afterwards (hpl_array_part). */
#include "launch.h"
#include "partition.h"

#include <stdio.h>
#include <string.h>

typedef struct split {
    int devices[HPL__MAX_DEVICES]; /* the eval's devices, in part order */
    int device_count;
    int first;                     /* first annotated argument, or -1 */
    int dim;                       /* the domain's split dimension */
    uint64_t whole[3];             /* the whole domain */
    hpl__part parts[HPL__MAX_DEVICES];
    int part_count;
} split;

bool hpl__eval_is_split(const hpl_launch *launch, const hpl_arg *args, size_t nargs)
{
    if (launch->device_count)
        return true;
    for (size_t i = 0; i < nargs; i++)
        if (args[i].part.on)
            return true;
    return false;
}

/* The context's GPUs, or all its devices when it has none. */
static int default_devices(const hpl_context *ctx, int *out)
{
    int n = 0;
    for (int i = 0; i < ctx->device_count; i++)
        if (ctx->devices[i].info.type & HPL_DEVICE_GPU)
            out[n++] = i;
    for (int i = 0; n == 0 && i < ctx->device_count; i++)
        out[i] = i;
    return n ? n : ctx->device_count;
}

static int devices_of(const hpl_context *ctx, const hpl_launch *launch, split *sp)
{
    if (launch->device_count == 0) {
        sp->device_count = default_devices(ctx, sp->devices);
        return HPL_OK;
    }
    if (launch->device_count < 0 || launch->device_count > HPL_MAX_DEVICES)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "launch.device_count is %d: give 1 to %d devices",
                         launch->device_count, HPL_MAX_DEVICES);
    if (launch->device)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "launch.device is %d and launch.devices lists %d: give one or the other", launch->device,
                         launch->device_count);
    for (int i = 0; i < launch->device_count; i++) {
        int d = launch->devices[i];
        if (d < 0 || d >= ctx->device_count)
            return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "launch.devices[%d] is %d, which does not exist (the context has %d device%s)",
                             i, d, ctx->device_count, ctx->device_count == 1 ? "" : "s");
        for (int j = 0; j < i; j++)
            if (launch->devices[j] == d)
                return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "launch.devices lists device %d twice (entries %d and %d)",
                                 d, j, i);
        sp->devices[i] = d;
    }
    sp->device_count = launch->device_count;
    return HPL_OK;
}

/* Annotations name a dimension the array has, a non-negative overlap, and
 * arrays only; nothing is written that every device would write. */
static int check_annotations(const hpl__reflection *r, const hpl_arg *args, const hpl__arg_view *views, split *sp)
{
    sp->first = -1;
    for (int i = 0; i < r->arg_count; i++) {
        const hpl_partition *p = &args[i].part;
        const char *name = r->args[i].name;
        if (!p->on) {
            if (args[i].kind == HPL_ARG_ARRAY && (r->args[i].access & HPL_WRITE) && sp->device_count > 1)
                return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                                 "argument %d (%s): the kernel writes array '%s', which is not partitioned, so each of "
                                 "the %d devices would write all of it: annotate it with hpl_part()",
                                 i, name, views[i].array->name, sp->device_count);
            continue;
        }
        if (args[i].kind != HPL_ARG_ARRAY)
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                             "argument %d (%s) is a scalar: only array arguments can be partitioned", i, name);
        if (p->dim < 0 || p->dim >= views[i].ndims)
            return hpl__fail(HPL_ERROR_DIMENSIONS, "argument %d (%s): partition dimension %d, but array '%s' is %d-D",
                             i, name, p->dim, views[i].array->name, views[i].ndims);
        if (p->overlap < 0)
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "argument %d (%s): overlap %lld is negative", i, name,
                             (long long)p->overlap);
        if (sp->first < 0)
            sp->first = i;
    }
    return HPL_OK;
}

/* Every annotated array has as many elements along its split dimension as
 * the domain along its own, so that parts line up. */
static int check_alignment(const hpl__reflection *r, const hpl_arg *args, const hpl__arg_view *views, const split *sp)
{
    uint64_t n = sp->whole[sp->dim];
    for (int i = 0; i < r->arg_count; i++) {
        const hpl_partition *p = &args[i].part;
        if (p->on && views[i].dims[p->dim] != n)
            return hpl__fail(HPL_ERROR_DIMENSIONS,
                             "argument %d (%s): array '%s' has %llu elements along its partition dimension %d but the "
                             "domain has %llu along dimension %d: their parts would not line up",
                             i, r->args[i].name, views[i].array->name, (unsigned long long)views[i].dims[p->dim],
                             p->dim, (unsigned long long)n, sp->dim);
    }
    return HPL_OK;
}

/* Part `index` of view v split as annotated. */
static hpl__arg_view part_view(const hpl__arg_view *whole, const hpl_partition *p, int parts, int index)
{
    hpl__arg_view v = *whole;
    hpl__box owned, halo;
    hpl__partition_box(&whole->at.box, p->dim, parts, index, (uint64_t)p->overlap, &owned, &halo);
    v.is_part = true;
    v.whole = whole->at.box;
    v.whole_owned = whole->at.owned;
    v.at.box = halo;
    if (!hpl__box_intersect(&owned, &whole->at.owned, &v.at.owned))
        v.at.owned = (hpl__box){.lo = {halo.lo[0], halo.lo[1], halo.lo[2]}, .hi = {halo.lo[0], halo.lo[1], halo.lo[2]}};
    return v;
}

/* Subkernel i: device, variant, domain, views. */
static int subkernel_make(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                          const hpl__arg_view *views, const split *sp, int i, hpl__subkernel *s)
{
    hpl__device *d = &ctx->devices[sp->devices[i]];
    hpl__subkernel_init(s, d, k);
    const hpl__reflection *r = &s->variant->reflection;
    memcpy(s->global, sp->whole, sizeof s->global);
    s->global[sp->dim] = sp->parts[i].hi - sp->parts[i].lo;
    s->offset[sp->dim] = sp->parts[i].lo;
    const uint32_t *local = launch->local;
    if (launch->domains) {
        char what[64];
        snprintf(what, sizeof what, "launch.domains[%d].global", i);
        const uint64_t *given = launch->domains[i].global;
        int rc = hpl__any_nonzero(given) ? hpl__domain_given(given, what, s->global) : HPL_OK;
        if (rc != HPL_OK)
            return rc;
        const uint32_t *own = launch->domains[i].local;
        if (own[0] || own[1] || own[2])
            local = own;
    }
    for (int a = 0; a < r->arg_count; a++)
        s->views[a] = args[a].part.on ? part_view(&views[a], &args[a].part, sp->part_count, i) : views[a];
    int rc = hpl__subkernel_setup(ctx, s, local);
    if (rc != HPL_OK && local != launch->local) {
        char what[64];
        snprintf(what, sizeof what, "launch.domains[%d].local", i);
        hpl__error_prefix(what);
    }
    return rc;
}

/* Remembers each annotated array's split for hpl_array_part(). */
static void remember_parts(const hpl__reflection *r, const hpl_arg *args, const hpl__arg_view *views, const split *sp)
{
    for (int i = 0; i < r->arg_count; i++) {
        if (!args[i].part.on)
            continue;
        hpl__array *a = views[i].array;
        a->split = (hpl__split){.count = sp->part_count, .dim = args[i].part.dim, .overlap = (uint64_t)args[i].part.overlap};
        memcpy(a->split.devices, sp->devices, sizeof a->split.devices);
    }
}

int hpl__eval_split(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args, size_t nargs)
{
    split sp = {0};
    int rc = devices_of(ctx, launch, &sp);
    if (rc != HPL_OK)
        return rc;
    /* Every variant declares the same arguments: check them once. */
    const hpl__reflection *r = &hpl__kernel_variant_for(k, &ctx->devices[sp.devices[0]])->reflection;
    hpl__arg_view views[HPL__MAX_ARGS] = {0};
    rc = hpl__args_check(ctx, r, args, nargs, views);
    if (rc == HPL_OK)
        rc = check_annotations(r, args, views, &sp);
    if (rc == HPL_OK)
        rc = hpl__domain_of(launch, r, views, sp.whole);
    if (rc != HPL_OK)
        return rc;
    if (sp.first >= 0)
        sp.dim = args[sp.first].part.dim;
    rc = check_alignment(r, args, views, &sp);
    if (rc != HPL_OK)
        return rc;
    /* Each subkernel runs over the part of the domain it owns: no halo. */
    sp.part_count = hpl__partition(sp.whole[sp.dim], sp.device_count, 0, sp.parts);
    if (!ctx->subkernels && !(ctx->subkernels = hpl__calloc(HPL__MAX_DEVICES, sizeof(hpl__subkernel))))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    hpl__subkernel *s = ctx->subkernels;
    for (int i = 0; rc == HPL_OK && i < sp.part_count; i++)
        rc = subkernel_make(ctx, k, launch, args, views, &sp, i, &s[i]);
    if (rc == HPL_OK)
        rc = hpl__subkernels_run(ctx, s, sp.part_count, args, sp.whole);
    if (rc == HPL_OK)
        remember_parts(r, args, views, &sp);
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
    hpl__arg_view whole = hpl__arg_view_of(a);
    hpl_partition p = {.on = true, .dim = a->split.dim, .overlap = (int64_t)a->split.overlap};
    hpl__arg_view v = part_view(&whole, &p, a->split.count, index);
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

