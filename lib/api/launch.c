/* Planning an eval: from hpl_eval's launch and arguments to its subkernels,
 * one per device of the eval. A plain eval is the one-part case (its device
 * is launch.device); an annotated one, or one given a device list, has a
 * part per device. Everything that can fail on bad input fails here, before
 * anything runs (dispatch.c runs the subkernels). Messages name the argument
 * or launch field at fault. */
#include "launch.h"

#include "api.h"
#include "partition.h"
#include "subkernel.h"
#include "submit.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- arguments -------------------------------------------------------- */

void hpl__arg_view_set(hpl__arg_view *v, hpl__array *a)
{
    *v = (hpl__arg_view){.array = a,
                         .at = {.root = a->root, .box = a->box, .owned = a->owned},
                         .type = a->type,
                         .ndims = a->ndims,
                         .dims = {a->dims[0], a->dims[1], a->dims[2]}};
}

static const char *access_name(hpl_access a)
{
    return a == HPL_READ ? "hpl_in" : a == HPL_WRITE ? "hpl_out" : "hpl_inout";
}

static const char *scalar_maker(hpl_type t)
{
    static const char *const makers[] = {"f32", "f32", "f64", "i32", "u32", "i64", "u64"};
    return (unsigned)t < HPL__ARRAY_LEN(makers) ? makers[t] : "f32";
}

static const char *article(hpl_type t)
{
    return hpl_type_name(t)[0] == 'i' ? "an" : "a"; /* an int, an int64_t, an invalid */
}

static int args_check(hpl_context *ctx, const hpl__reflection *r, const hpl_arg *args, size_t nargs, hpl__arg_view *views)
{
    if (nargs != (size_t)r->arg_count)
        return hpl__fail(HPL_ERROR_ARGUMENT_MISMATCH, "the kernel takes %d argument%s but %zu %s given", r->arg_count,
                         r->arg_count == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
    for (int i = 0; i < r->arg_count; i++) {
        const hpl_arg_info *want = &r->args[i];
        const hpl_arg *got = &args[i];
        if (got->kind != HPL_ARG_ARRAY && got->kind != HPL_ARG_SCALAR)
            return hpl__fail(HPL_ERROR_ARGUMENT_MISMATCH, "argument %d (%s) has kind %d: build it with hpl_arr() or hpl_f32() etc.",
                             i, want->name, (int)got->kind);
        if (got->kind != want->kind)
            return hpl__fail(HPL_ERROR_ARGUMENT_MISMATCH, "argument %d (%s): the kernel expects %s but %s was given", i,
                             want->name, want->kind == HPL_ARG_ARRAY ? "an array" : "a scalar",
                             got->kind == HPL_ARG_ARRAY ? "an array" : "a scalar");
        if (got->kind == HPL_ARG_SCALAR) {
            if (hpl_type_size(got->type) == 0)
                return hpl__fail(HPL_ERROR_ARGUMENT_MISMATCH,
                                 "argument %d (%s) has type %d, which is not an hpl_type: build it with hpl_%s() etc.",
                                 i, want->name, (int)got->type, scalar_maker(want->type));
            if (got->type != want->type)
                return hpl__fail(HPL_ERROR_ARGUMENT_MISMATCH, "argument %d (%s): the kernel expects %s %s scalar but %s %s was given",
                                 i, want->name, article(want->type), hpl_type_name(want->type), article(got->type),
                                 hpl_type_name(got->type));
            continue;
        }
        hpl__array *a = NULL;
        int rc = hpl__array_get(ctx, got->value.array, &a);
        if (rc != HPL_OK) {
            char where[96];
            snprintf(where, sizeof where, "argument %d (%s)", i, want->name);
            hpl__error_prefix(where);
            return rc;
        }
        hpl__arg_view_set(&views[i], a);
        if (a->type != want->type || a->ndims != want->ndims)
            return hpl__fail(HPL_ERROR_ARGUMENT_MISMATCH,
                             "argument %d (%s): the kernel expects %s(%s, %d) but array '%s' is %d-D %s", i, want->name,
                             access_name(want->access), hpl_type_name(want->type), want->ndims, a->name, a->ndims,
                             hpl_type_name(a->type));
        for (int d = 0; d < a->ndims; d++)
            if (a->dims[d] > UINT32_MAX)
                return hpl__fail(HPL_ERROR_TOO_LARGE, "argument %d (%s): dimension %d of array '%s' exceeds 2^32-1", i,
                                 want->name, d, a->name);
    }
    return HPL_OK;
}

/* ---- geometry --------------------------------------------------------- */

/* A domain given as extents: leading non-zero entries, zeros after them
 * (like array extents). */
static int domain_given(const uint64_t given[3], const char *what, uint64_t global[3])
{
    for (int i = 0; i < 3; i++) {
        if (given[i] == 0)
            for (int j = i + 1; j < 3; j++)
                if (given[j])
                    return hpl__fail(HPL_ERROR_DIMENSIONS, "%s[%d] is 0 but %s[%d] is %llu", what, i, what, j,
                                     (unsigned long long)given[j]);
        global[i] = given[i] ? given[i] : 1;
    }
    for (int i = 0; i < 3; i++)
        if (global[i] > UINT32_MAX)
            return hpl__fail(HPL_ERROR_TOO_LARGE, "%s[%d] = %llu exceeds 2^32-1", what, i,
                             (unsigned long long)global[i]);
    return HPL_OK;
}

static bool any_nonzero(const uint64_t v[3])
{
    return v[0] || v[1] || v[2];
}

/* The eval's whole domain: launch.global, else the first array argument's
 * extents. */
static int domain_of(const hpl_launch *launch, const hpl__reflection *r, const hpl__arg_view *views, uint64_t global[3])
{
    if (any_nonzero(launch->global))
        return domain_given(launch->global, "launch.global", global);
    int first = -1;
    for (int i = 0; i < r->arg_count && first < 0; i++)
        if (r->args[i].kind == HPL_ARG_ARRAY)
            first = i;
    if (first < 0)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "launch.global is zero and the kernel has no array argument to take the domain from");
    for (int i = 0; i < 3; i++)
        global[i] = i < views[first].ndims ? views[first].dims[i] : 1;
    return HPL_OK;
}

/* The library's local size: up to 256 invocations within the device's
 * limits. Arrays are row-major, so the domain's last extended dimension
 * runs along contiguous elements: it gets up to 64 first, so that a
 * subgroup's invocations read consecutive elements (a few memory
 * transactions instead of one per row: 3-4x the rate of a 16 x 16 group
 * on an H200's stencils, samples/bench/RESULTS.md); the rest is given out by
 * doubling the dimensions the domain extends in (round-robin, x first).
 * {1, 3000000} gets {1, 256}, a square {2, 128}, a cube {2, 2, 64}. */
/* The domain's last dimension that extends (more than one position); 0
 * for a point. Row-major arrays are contiguous along it. */
static int last_extended(const uint64_t global[3])
{
    int inner = 0;
    for (int i = 0; i < 3; i++)
        if (global[i] > 1)
            inner = i;
    return inner;
}

static void choose_local(const hpl__device *d, const uint64_t global[3], uint32_t local[3])
{
    const VkPhysicalDeviceLimits *lim = &d->props.limits;
    uint32_t budget = HPL__MIN(256u, lim->maxComputeWorkGroupInvocations);
    uint32_t total = 1;
    local[0] = local[1] = local[2] = 1;
    int inner = last_extended(global);
    while (total * 2 <= HPL__MIN(budget, 64u) && local[inner] < global[inner] &&
           local[inner] * 2 <= lim->maxComputeWorkGroupSize[inner]) {
        local[inner] *= 2;
        total *= 2;
    }
    for (bool grew = true; grew;) {
        grew = false;
        for (int i = 0; i < 3; i++) {
            if (total * 2 <= budget && local[i] < global[i] && local[i] * 2 <= lim->maxComputeWorkGroupSize[i]) {
                local[i] *= 2;
                total *= 2;
                grew = true;
            }
        }
    }
}

/* The dispatch's order (hplvk.glsl's hplvk_walk). Workgroups run x
 * fastest: with x along a 2-D grid's rows a dispatch walks down columns,
 * and an H200 ran a Jacobi step on 3.6 GiB grids 3x slower that way (11.5
 * against 3.6-4.0 ms; 1.1x at 1.5 GiB; samples/bench/RESULTS.md). When the
 * library chooses the local size and the kernel cannot see the swap, the
 * domain's last extended dimension, contiguous in a row-major array,
 * becomes the dispatch's x, if it is at least a subgroup long and the
 * swapped local size fits the device. */
static int walk_of(const hpl__reflection *r, const hpl__device *d, const uint64_t global[3], const uint32_t local[3])
{
    int inner = last_extended(global);
    if (!r->walkable || inner == 0 || global[inner] < 32)
        return 0;
    for (int i = 0; i < 3; i++)
        if (local[i] > d->props.limits.maxComputeWorkGroupSize[hpl__walk_dim(inner, i)])
            return 0;
    return inner;
}

/* The local size (in the domain's order) and the walk; `chose`: the
 * library chose the size. */
static int local_of(const uint32_t given_local[3], const hpl__reflection *r, const hpl__device *d,
                    const uint64_t global[3], uint32_t local[3], bool *chose)
{
    bool given = given_local[0] || given_local[1] || given_local[2];
    bool declared = r->local_size[0] * r->local_size[1] * r->local_size[2] > 1;
    if (given) {
        for (int i = 0; i < 3; i++)
            local[i] = given_local[i] ? given_local[i] : 1;
        if (!r->local_size_choosable && memcmp(local, r->local_size, sizeof r->local_size))
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "launch.local {%u,%u,%u} differs from the kernel's fixed local size {%u,%u,%u}",
                             local[0], local[1], local[2], r->local_size[0], r->local_size[1], r->local_size[2]);
    } else if (declared || !r->local_size_choosable) {
        memcpy(local, r->local_size, sizeof r->local_size);
    } else {
        choose_local(d, global, local);
        *chose = true;
    }
    const VkPhysicalDeviceLimits *lim = &d->props.limits;
    uint64_t total = (uint64_t)local[0] * local[1] * local[2];
    for (int i = 0; i < 3; i++)
        if (local[i] > lim->maxComputeWorkGroupSize[i])
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "local size %u in dimension %d exceeds device %s's limit %u",
                             local[i], i, d->info.name, lim->maxComputeWorkGroupSize[i]);
    if (total > lim->maxComputeWorkGroupInvocations)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "local size {%u,%u,%u} has %llu invocations; device %s allows %u",
                         local[0], local[1], local[2], (unsigned long long)total, d->info.name,
                         lim->maxComputeWorkGroupInvocations);
    return HPL_OK;
}

/* ---- one subkernel ------------------------------------------------------ */

static int check_device(const hpl__variant *v, const hpl__device *d)
{
    if (v->reflection.needs_float64 && !d->info.float64)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "the kernel uses double but device %s lacks shaderFloat64",
                         d->info.name);
    if (v->reflection.needs_int64 && !d->info.int64)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "the kernel uses 64-bit integers but device %s lacks shaderInt64",
                         d->info.name);
    return hpl__device_check(d);
}

void hpl__subkernel_init(hpl__subkernel *s, hpl__device *device, const hpl__kernel *kernel)
{
    memset(s, 0, offsetof(hpl__subkernel, views));
    s->device = device;
    s->variant = (hpl__variant *)hpl__kernel_variant_for(kernel, device);
    memset(s->views, 0, (size_t)s->variant->reflection.arg_count * sizeof s->views[0]);
    s->kernel_name = kernel->name;
    s->kernel_id = kernel->id;
}

int hpl__subkernel_setup(hpl_context *ctx, hpl__subkernel *s, const uint32_t given_local[3])
{
    bool chose = false;
    int rc = check_device(s->variant, s->device);
    if (rc == HPL_OK)
        rc = local_of(given_local, &s->variant->reflection, s->device, s->global, s->local, &chose);
    if (rc != HPL_OK)
        return rc;
    s->walk = chose ? walk_of(&s->variant->reflection, s->device, s->global, s->local) : 0;
    uint32_t dispatch_local[3];
    for (int i = 0; i < 3; i++)
        dispatch_local[hpl__walk_dim(s->walk, i)] = s->local[i];
    return hpl__pipeline_get(ctx, s->variant, s->device, dispatch_local, s->walk, &s->pipeline);
}

/* ---- devices and parts -------------------------------------------------- */

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

int hpl__device_list_check(int available, const int *devices, int count, const char *what, int *out)
{
    for (int i = 0; i < count; i++) {
        int d = devices[i];
        if (d < 0 || d >= available)
            return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "%s[%d] is %d, which does not exist (the context has %d device%s)",
                             what, i, d, available, available == 1 ? "" : "s");
        for (int j = 0; j < i; j++)
            if (devices[j] == d)
                return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s lists device %d twice (entries %d and %d)", what, d,
                                 j, i);
        out[i] = d;
    }
    return HPL_OK;
}

/* The eval's devices: launch.device for a plain eval, else launch.devices,
 * else the default devices. */
static int devices_of(const hpl_context *ctx, const hpl_launch *launch, bool annotated, hpl__launch_plan *p)
{
    if (launch->device_count == 0 && !annotated) {
        if (launch->device < 0 || launch->device >= ctx->device_count)
            return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "launch.device %d does not exist (the context has %d device%s)",
                             launch->device, ctx->device_count, ctx->device_count == 1 ? "" : "s");
        p->devices[0] = launch->device;
        p->device_count = 1;
        return HPL_OK;
    }
    if (launch->device_count == 0) {
        p->device_count = default_devices(ctx, p->devices);
        return HPL_OK;
    }
    if (launch->device_count < 0 || launch->device_count > HPL_MAX_DEVICES)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "launch.device_count is %d: give 1 to %d devices",
                         launch->device_count, HPL_MAX_DEVICES);
    if (launch->device)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "launch.device is %d and launch.devices lists %d: give one or the other", launch->device,
                         launch->device_count);
    int rc = hpl__device_list_check(ctx->device_count, launch->devices, launch->device_count, "launch.devices", p->devices);
    if (rc != HPL_OK)
        return rc;
    p->device_count = launch->device_count;
    return HPL_OK;
}

/* launch.shares: one per device of the eval, each finite and >= 0, not all
 * 0. The split follows them. */
static int shares_check(const double *shares, hpl__launch_plan *p)
{
    int rc = hpl__shares_check(shares, p->device_count, "launch.shares");
    if (rc == HPL_OK)
        p->shares = shares;
    return rc;
}

static bool any_annotated(const hpl_arg *args, size_t nargs)
{
    for (size_t i = 0; i < nargs; i++)
        if (args[i].part.on)
            return true;
    return false;
}

/* Annotations name a dimension the array has, a non-negative overlap, and
 * arrays only; nothing is written that every device would write. */
static int check_annotations(const hpl__reflection *r, const hpl_arg *args, const hpl__arg_view *views,
                             const hpl__launch_plan *plan, int *first)
{
    *first = -1;
    for (int i = 0; i < r->arg_count; i++) {
        const hpl_partition *p = &args[i].part;
        const char *name = r->args[i].name;
        if (!p->on) {
            if (args[i].kind == HPL_ARG_ARRAY && (r->args[i].access & HPL_WRITE) && plan->device_count > 1)
                return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                                 "argument %d (%s): the kernel writes array '%s', which is not partitioned, so each of "
                                 "the %d devices would write all of it: annotate it with hpl_part()",
                                 i, name, views[i].array->name, plan->device_count);
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
        if (*first < 0)
            *first = i;
    }
    return HPL_OK;
}

/* Every annotated array has as many elements along its split dimension as
 * the domain along its own, so that parts line up. */
static int check_alignment(const hpl__reflection *r, const hpl_arg *args, const hpl__arg_view *views,
                           const hpl__launch_plan *plan)
{
    uint64_t n = plan->whole[plan->dim];
    for (int i = 0; i < r->arg_count; i++) {
        const hpl_partition *p = &args[i].part;
        if (p->on && views[i].dims[p->dim] != n)
            return hpl__fail(HPL_ERROR_DIMENSIONS,
                             "argument %d (%s): array '%s' has %llu elements along its partition dimension %d but the "
                             "domain has %llu along dimension %d: their parts would not line up",
                             i, r->args[i].name, views[i].array->name, (unsigned long long)views[i].dims[p->dim],
                             p->dim, (unsigned long long)n, plan->dim);
    }
    return HPL_OK;
}

hpl__arg_view hpl__part_view(const hpl__arg_view *whole, const hpl_partition *p, uint64_t lo, uint64_t hi)
{
    hpl__arg_view v = *whole;
    hpl__box owned, halo;
    hpl__part_boxes(&whole->at.box, p->dim, lo, hi, (uint64_t)p->overlap, &owned, &halo);
    v.is_part = true;
    v.whole = whole->at.box;
    v.whole_owned = whole->at.owned;
    v.at.box = halo;
    if (!hpl__box_intersect(&owned, &whole->at.owned, &v.at.owned))
        v.at.owned = (hpl__box){.lo = {halo.lo[0], halo.lo[1], halo.lo[2]}, .hi = {halo.lo[0], halo.lo[1], halo.lo[2]}};
    return v;
}

/* ---- the plan ----------------------------------------------------------- */

/* Views of every part: subkernels 1.. get their device and their parts of
 * subkernel 0's whole views, then subkernel 0 its own (last: the others
 * read its whole views). Replicated arguments stay whole. */
static void make_views(hpl_context *ctx, hpl__kernel *k, const hpl_arg *args, hpl__launch_plan *p)
{
    hpl__subkernel *s = p->subkernels;
    int n = s[0].variant->reflection.arg_count;
    for (int i = p->count - 1; i >= 0; i--) {
        if (i > 0)
            hpl__subkernel_init(&s[i], &ctx->devices[p->devices[i]], k);
        for (int a = 0; a < n; a++)
            if (args[a].part.on)
                s[i].views[a] = hpl__part_view(&s[0].views[a], &args[a].part, p->parts[i].lo, p->parts[i].hi);
            else if (i > 0)
                s[i].views[a] = s[0].views[a];
    }
}

/* Subkernel i's domain (its part of the whole, or launch.domains[i]),
 * local size and pipeline. */
static int make_domain(hpl_context *ctx, const hpl_launch *launch, const hpl__launch_plan *p, const hpl__part *part,
                       int i)
{
    hpl__subkernel *s = &p->subkernels[i];
    memcpy(s->global, p->whole, sizeof s->global);
    s->global[p->dim] = part->hi - part->lo;
    s->offset[p->dim] = part->lo;
    const uint32_t *local = launch->local;
    if (launch->domains) {
        char what[64];
        snprintf(what, sizeof what, "launch.domains[%d].global", i);
        const uint64_t *given = launch->domains[i].global;
        int rc = any_nonzero(given) ? domain_given(given, what, s->global) : HPL_OK;
        if (rc != HPL_OK)
            return rc;
        const uint32_t *own = launch->domains[i].local;
        if (own[0] || own[1] || own[2])
            local = own;
    }
    int rc = hpl__subkernel_setup(ctx, s, local);
    if (rc != HPL_OK && local != launch->local) {
        char what[64];
        snprintf(what, sizeof what, "launch.domains[%d].local", i);
        hpl__error_prefix(what);
    }
    return rc;
}

/* Subkernels live in the context's scratch (HPL__MAX_DEVICES of ~30 KiB,
 * made once, never cleared whole). An eval that waits with the lock
 * released (the ghost check under validation) still holds it: another
 * thread's eval meanwhile gets scratch of its own. */
static int take_scratch(hpl_context *ctx, hpl__subkernel **out)
{
    *out = ctx->subkernels;
    ctx->subkernels = NULL;
    if (!*out && !(*out = hpl__calloc(HPL__MAX_DEVICES, sizeof **out)))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    return HPL_OK;
}

void hpl__launch_plan_done(hpl_context *ctx, hpl__launch_plan *p)
{
    if (!ctx->subkernels)
        ctx->subkernels = p->subkernels;
    else
        hpl__free(p->subkernels);
    p->subkernels = NULL;
}

/* Subkernels for the devices whose piece is not empty, in device order;
 * devices with nothing move behind them (they run nothing). */
static void split_given(const uint64_t (*pieces)[2], hpl__launch_plan *p)
{
    int idle[HPL__MAX_DEVICES], idle_count = 0, all[HPL__MAX_DEVICES];
    memcpy(all, p->devices, sizeof all);
    p->count = 0;
    for (int i = 0; i < p->device_count; i++) {
        if (pieces[i][0] >= pieces[i][1]) {
            idle[idle_count++] = all[i];
            continue;
        }
        p->parts[p->count] = hpl__part_make(p->whole[p->dim], pieces[i][0], pieces[i][1], 0);
        p->devices[p->count++] = all[i];
    }
    memcpy(&p->devices[p->count], idle, (size_t)idle_count * sizeof *idle);
}

/* Parts in proportion to p->shares, on multiples of the local size along
 * the split dimension when the launch gives one, or as p->given says. */
static void split_unevenly(const hpl_launch *launch, hpl__launch_plan *p)
{
    uint64_t pieces[HPL__MAX_DEVICES][2];
    if (p->given) {
        for (int i = 0; i < p->device_count; i++) {
            pieces[i][0] = HPL__MIN(p->given[i].lo, p->whole[p->dim]);
            pieces[i][1] = HPL__MIN(p->given[i].hi, p->whole[p->dim]);
        }
    } else {
        uint64_t cuts[HPL__MAX_DEVICES + 1];
        uint64_t granule = p->dim < 3 && launch->local[p->dim] ? launch->local[p->dim] : 1;
        hpl__partition_cuts(p->whole[p->dim], p->device_count, p->shares, granule, cuts);
        for (int i = 0; i < p->device_count; i++) {
            pieces[i][0] = cuts[i];
            pieces[i][1] = cuts[i + 1];
        }
    }
    split_given((const uint64_t(*)[2])pieces, p);
}

/* Halos first: the bands are as wide as the widest halo, the most rows a
 * neighbour reads of a part and a row reads beyond its own. */
static uint64_t widest_overlap(const hpl_arg *args, size_t nargs)
{
    uint64_t w = 0;
    for (size_t i = 0; i < nargs; i++)
        if (args[i].kind == HPL_ARG_ARRAY && args[i].part.on)
            w = HPL__MAX(w, (uint64_t)args[i].part.overlap);
    return w;
}

/* The checks and views of a split skip a plain eval (one device, nothing
 * annotated), for which they do nothing: host time per eval matters. */
int hpl__launch_plan_make(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                          size_t nargs, hpl__launch_plan *p)
{
    bool annotated = any_annotated(args, nargs);
    p->count = 0;
    p->annotated = false;
    int rc = devices_of(ctx, launch, annotated, p);
    if (rc == HPL_OK && launch->shares && launch->domains)
        rc = hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                       "launch.shares and launch.domains are both given: give the subkernels' domains or the shares "
                       "that cut them, not both");
    if (rc == HPL_OK && launch->shares)
        rc = shares_check(launch->shares, p);
    if (rc == HPL_OK)
        rc = take_scratch(ctx, &p->subkernels);
    if (rc != HPL_OK)
        return rc;
    /* Every variant declares the same arguments: check them once, into
     * subkernel 0's views (the whole arguments until make_views). */
    hpl__subkernel *s = p->subkernels;
    hpl__subkernel_init(&s[0], &ctx->devices[p->devices[0]], k);
    const hpl__reflection *r = &s[0].variant->reflection;
    int first = -1;
    rc = args_check(ctx, r, args, nargs, s[0].views);
    if (rc == HPL_OK && (annotated || p->device_count > 1))
        rc = check_annotations(r, args, s[0].views, p, &first);
    if (rc == HPL_OK)
        rc = domain_of(launch, r, s[0].views, p->whole);
    if (rc != HPL_OK)
        return rc;
    p->annotated = first >= 0;
    p->dim = first >= 0 ? args[first].part.dim : 0;
    rc = first >= 0 ? check_alignment(r, args, s[0].views, p) : HPL_OK;
    if (rc != HPL_OK)
        return rc;
    /* Each subkernel runs over the part of the domain it owns: no halo. */
    if (p->shares || p->given) {
        int was_first = p->devices[0];
        split_unevenly(launch, p);
        /* The first device got nothing: subkernel 0 is the next one's. */
        if (p->devices[0] != was_first) {
            hpl__subkernel_init(&s[0], &ctx->devices[p->devices[0]], k);
            rc = args_check(ctx, &s[0].variant->reflection, args, nargs, s[0].views);
        }
    } else {
        p->count = hpl__partition(p->whole[p->dim], p->device_count, 0, p->parts);
    }
    if (rc == HPL_OK && (first >= 0 || p->count > 1))
        make_views(ctx, k, args, p);
    for (int i = 0; rc == HPL_OK && i < p->count; i++)
        rc = make_domain(ctx, launch, p, &p->parts[i], i);
    p->halo_rows = launch->halos_first && p->count > 1 && !launch->domains ? widest_overlap(args, nargs) : 0;
    return rc;
}
