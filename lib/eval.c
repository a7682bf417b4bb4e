/* eval: check the arguments, bring missing data to the device, fill the
 * argument block, record the dispatches, submit, and record in each array's
 * coherence state what the kernel read and wrote. Never waits for a device. */
#include "access.h"
#include "embedded.h"
#include "partition.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- arguments -------------------------------------------------------- */

/* How the kernel sees an array argument: the (sub)array's type and extents,
 * through the strides of the memory holding it; the fill kernel views an
 * array as 32-bit words instead. */
typedef struct view {
    hpl__array *array;
    hpl__view at;      /* what it touches, root coordinates */
    hpl_type type;
    int ndims;
    uint64_t dims[3];
    uint32_t words;    /* fill: words per element (word view, see fill_view) */
    int slot;          /* the memory it is bound to on the device */
} view;

static view view_of(hpl__array *a)
{
    view v = {.array = a, .at = hpl__view_of(a), .type = a->type, .ndims = a->ndims};
    memcpy(v.dims, a->dims, sizeof v.dims);
    return v;
}

static const char *access_name(hpl_access a)
{
    return a == HPL_READ ? "hpl_in" : a == HPL_WRITE ? "hpl_out" : "hpl_inout";
}

static const char *article(hpl_type t)
{
    return hpl_type_name(t)[0] == 'i' ? "an" : "a"; /* an int, an int64_t, an invalid */
}

static int check_args(hpl_context *ctx, const hpl__reflection *r, const hpl_arg *args, size_t nargs, view *views)
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
            if (got->type != want->type)
                return hpl__fail(HPL_ERROR_ARGUMENT_MISMATCH, "argument %d (%s): the kernel expects %s %s scalar but %s %s was given",
                                 i, want->name, article(want->type), hpl_type_name(want->type), article(got->type),
                                 hpl_type_name(got->type));
            continue;
        }
        hpl__array *a = NULL;
        int rc = hpl__array_get(ctx, got->value.array, &a);
        if (rc != HPL_OK) {
            hpl__fail(rc, "argument %d (%s): array handle %#x is not a live array (destroyed or never created)", i,
                      want->name, got->value.array.id);
            return rc;
        }
        views[i] = view_of(a);
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

static void put_u32s(uint8_t *dst, const uint64_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t x = (uint32_t)v[i];
        memcpy(dst + 4 * i, &x, 4);
    }
}

/* The kernel's extents of view v. A word view (fill) runs the innermost
 * dimension first: {n_last * words, n_(last-1), n_(last-2)}. */
static void kernel_dims(const view *v, uint64_t dims[3])
{
    int last = v->at.root->ndims - 1;
    for (int i = 0; i < 3; i++) {
        int d = v->words ? last - i : i;
        dims[i] = d >= 0 ? v->dims[d] * (v->words && i == 0 ? v->words : 1) : 1;
    }
}

/* The kernel's element strides of view v bound to its memory on device. */
static void kernel_strides(const view *v, int device, uint64_t stride[3])
{
    hpl__box b = hpl__layout_of(v->at.root, v->slot, device).box;
    uint64_t s[3] = {(b.hi[1] - b.lo[1]) * (b.hi[2] - b.lo[2]), b.hi[2] - b.lo[2], 1};
    int last = v->at.root->ndims - 1;
    for (int i = 0; i < 3; i++) {
        int d = v->words ? last - i : i;
        stride[i] = !v->words ? s[i] : d < 0 ? 0 : i == 0 ? 1 : s[d] * v->words;
    }
}

static void write_args(uint8_t *block, const hpl__op *op, const hpl__reflection *r, const hpl_arg *args,
                       const view *views)
{
    memset(block, 0, r->args_size);
    for (int i = 0; i < r->arg_count; i++) {
        const hpl_arg_info *info = &r->args[i];
        if (info->kind == HPL_ARG_SCALAR) {
            memcpy(block + info->offset, &args[i].value, hpl_type_size(info->type));
            continue;
        }
        const view *v = &views[i];
        const hpl__array_layout *l = &r->layout[i];
        uint64_t address = hpl__op_address(op, v->at.root, v->slot, v->at.box.lo);
        uint64_t dims[3], stride[3];
        kernel_dims(v, dims);
        kernel_strides(v, op->device->index, stride);
        int n = v->words ? 3 : v->ndims;
        memcpy(block + l->pointer, &address, 8);
        put_u32s(block + l->dims, dims, n);
        put_u32s(block + l->stride, stride, n);
        put_u32s(block + l->origin, v->at.box.lo, n);
    }
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
static int domain_of(const hpl_launch *launch, const hpl__reflection *r, const view *views, uint64_t global[3])
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

/* The library's local size: up to 256 invocations, given out by doubling
 * the dimensions the domain really extends in (round-robin, x first), within
 * the device's limits; {1, 3000000} gets {1, 256}, a square 16 x 16. */
static void choose_local(const hpl__device *d, const uint64_t global[3], uint32_t local[3])
{
    const VkPhysicalDeviceLimits *lim = &d->props.limits;
    uint32_t budget = HPL__MIN(256u, lim->maxComputeWorkGroupInvocations);
    uint32_t total = 1;
    local[0] = local[1] = local[2] = 1;
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

static int local_of(const uint32_t given_local[3], const hpl__reflection *r, const hpl__device *d,
                    const uint64_t global[3], uint32_t local[3])
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

/* ---- subkernels -------------------------------------------------------- */

/* The work of one device: a whole single-device eval, or one part of a
 * multi-device one. */
typedef struct subkernel {
    hpl__device *device;
    hpl__variant *variant;
    uint64_t global[3]; /* its domain */
    uint64_t offset[3]; /* where its domain starts in the whole eval's */
    uint32_t local[3];
    VkPipeline pipeline;
    view views[HPL__MAX_ARGS];
    hpl__op op;
} subkernel;

typedef struct push_block {
    uint32_t base[4], domain[4], offset[4], global[4];
} push_block;

/* Big domains exceed maxComputeWorkGroupCount: run them as several
 * dispatches, each told its first invocation through the push constants. */
static void record_dispatches(VkCommandBuffer cb, const subkernel *s, const uint64_t whole[3])
{
    const hpl__device *d = s->device;
    push_block push = {0};
    uint64_t groups[3], step[3];
    for (int i = 0; i < 3; i++) {
        push.domain[i] = (uint32_t)s->global[i];
        push.offset[i] = (uint32_t)s->offset[i];
        push.global[i] = (uint32_t)whole[i];
        groups[i] = (s->global[i] + s->local[i] - 1) / s->local[i];
        step[i] = d->props.limits.maxComputeWorkGroupCount[i];
    }
    for (uint64_t z = 0; z < groups[2]; z += step[2]) {
        for (uint64_t y = 0; y < groups[1]; y += step[1]) {
            for (uint64_t x = 0; x < groups[0]; x += step[0]) {
                push.base[0] = (uint32_t)(x * s->local[0]);
                push.base[1] = (uint32_t)(y * s->local[1]);
                push.base[2] = (uint32_t)(z * s->local[2]);
                vkCmdPushConstants(cb, d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
                vkCmdDispatch(cb, (uint32_t)HPL__MIN(step[0], groups[0] - x), (uint32_t)HPL__MIN(step[1], groups[1] - y),
                              (uint32_t)HPL__MIN(step[2], groups[2] - z));
            }
        }
    }
}

static int check_device(const hpl__variant *v, const hpl__device *d)
{
    if (v->reflection.needs_float64 && !d->info.float64)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "the kernel uses double but device %s lacks shaderFloat64",
                         d->info.name);
    if (v->reflection.needs_int64 && !d->info.int64)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "the kernel uses 64-bit integers but device %s lacks shaderInt64",
                         d->info.name);
    return d->error;
}

/* Checks s's device and local size and gets its pipeline. */
static int subkernel_setup(hpl_context *ctx, subkernel *s, const uint32_t given_local[3])
{
    int rc = check_device(s->variant, s->device);
    if (rc == HPL_OK)
        rc = local_of(given_local, &s->variant->reflection, s->device, s->global, s->local);
    return rc == HPL_OK ? hpl__pipeline_get(ctx, s->variant, s->device, s->local, &s->pipeline) : rc;
}

static int subkernel_bind(subkernel *s)
{
    const hpl__reflection *r = &s->variant->reflection;
    int rc = HPL_OK;
    for (int i = 0; rc == HPL_OK && i < r->arg_count; i++)
        if (s->views[i].array)
            rc = hpl__op_bind(&s->op, &s->views[i].at, r->args[i].access, &s->views[i].slot);
    return rc;
}

/* Records s's fetches and dispatches and submits them (after its op was
 * bound and prepared). */
static int subkernel_submit(subkernel *s, const hpl_arg *args, const uint64_t whole[3])
{
    const hpl__reflection *r = &s->variant->reflection;
    hpl__device *d = s->device;
    hpl__arg_chunk *chunk = NULL;
    uint32_t offset = 0;
    hpl__cmd *cmd = NULL;
    int rc = r->args_size ? hpl__args_alloc(d, r->args_size, &chunk, &offset) : HPL_OK;
    if (rc == HPL_OK)
        rc = hpl__op_record(&s->op, &cmd);
    if (rc != HPL_OK)
        return rc;
    vkCmdBindPipeline(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipeline);
    if (chunk) {
        write_args(chunk->map + offset, &s->op, r, args, s->views);
        vkCmdBindDescriptorSets(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &chunk->set, 1,
                                &offset);
    }
    record_dispatches(cmd->cb, s, whole);
    hpl__point at;
    rc = hpl__op_submit(&s->op, cmd, &at);
    if (rc == HPL_OK && chunk)
        chunk->last_value = at.value;
    for (int i = 0; rc == HPL_OK && i < r->arg_count; i++)
        if (s->views[i].array)
            s->views[i].array->last_where = d->index;
    return rc;
}

/* Runs one subkernel as an operation of its own. */
static int subkernel_run(hpl_context *ctx, subkernel *s, const hpl_arg *args, const uint64_t whole[3])
{
    hpl__op_init(&s->op, ctx, s->device->index);
    int rc = subkernel_bind(s);
    if (rc == HPL_OK)
        rc = hpl__op_prepare(&s->op);
    if (rc == HPL_OK)
        rc = subkernel_submit(s, args, whole);
    hpl__op_release(&s->op);
    return rc;
}

/* Does subkernel a write what subkernel b reads or writes (same root,
 * overlapping boxes)? Writes count over their owned boxes: what a kernel
 * writes in its halo is discarded, never seen by another device. */
static bool writes_into(const subkernel *a, const subkernel *b)
{
    const hpl__reflection *ra = &a->variant->reflection, *rb = &b->variant->reflection;
    for (int i = 0; i < ra->arg_count; i++) {
        const view *w = &a->views[i];
        if (!w->array || !(ra->args[i].access & HPL_WRITE))
            continue;
        for (int j = 0; j < rb->arg_count; j++) {
            const view *t = &b->views[j];
            const hpl__box *touched = rb->args[j].access & HPL_READ ? &t->at.box : &t->at.owned;
            hpl__box both;
            if (t->array && t->at.root == w->at.root && hpl__box_intersect(&w->at.owned, touched, &both))
                return true;
        }
    }
    return false;
}

static bool any_conflict(const subkernel *s, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && writes_into(&s[i], &s[j]))
                return true;
    return false;
}

/* Runs the subkernels of one eval. Independent ones (the usual case) are
 * all planned before any is submitted, so that what one device must send to
 * another (halos) is queued on it before its own kernel: the devices then
 * run side by side. Subkernels where one writes what another touches run
 * one after the other, in device order, each planned after the previous. */
static int subkernels_run(hpl_context *ctx, subkernel *s, int n, const hpl_arg *args, const uint64_t whole[3])
{
    int rc = HPL_OK;
    if (n == 1 || any_conflict(s, n)) {
        for (int i = 0; rc == HPL_OK && i < n; i++)
            rc = subkernel_run(ctx, &s[i], args, whole);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        if (i == 0)
            hpl__op_init(&s[i].op, ctx, s[i].device->index);
        else
            hpl__op_join(&s[i].op, ctx, s[i].device->index);
    }
    for (int i = 0; rc == HPL_OK && i < n; i++)
        rc = subkernel_bind(&s[i]);
    for (int i = 0; rc == HPL_OK && i < n; i++)
        rc = hpl__op_prepare(&s[i].op);
    for (int i = 0; rc == HPL_OK && i < n; i++)
        rc = subkernel_submit(&s[i], args, whole);
    for (int i = 0; i < n; i++)
        hpl__op_release(&s[i].op);
    return rc;
}

/* ---- single-device evals ----------------------------------------------- */

static int eval_single(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args, size_t nargs)
{
    if (launch->device < 0 || launch->device >= ctx->device_count)
        return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "launch.device %d does not exist (the context has %d device%s)",
                         launch->device, ctx->device_count, ctx->device_count == 1 ? "" : "s");
    subkernel s = {.device = &ctx->devices[launch->device]};
    s.variant = (hpl__variant *)hpl__kernel_variant_for(k, s.device);
    int rc = check_args(ctx, &s.variant->reflection, args, nargs, s.views);
    if (rc == HPL_OK)
        rc = domain_of(launch, &s.variant->reflection, s.views, s.global);
    if (rc == HPL_OK)
        rc = subkernel_setup(ctx, &s, launch->local);
    return rc == HPL_OK ? subkernel_run(ctx, &s, args, s.global) : rc;
}

/* ---- multi-device evals (section 7b) ----------------------------------- */

typedef struct split {
    int devices[HPL__MAX_DEVICES]; /* the eval's devices, in part order */
    int device_count;
    int first;                     /* first annotated argument, or -1 */
    int dim;                       /* the domain's split dimension */
    uint64_t overlap;              /* the domain's overlap */
    uint64_t whole[3];             /* the whole domain */
    hpl__part parts[HPL__MAX_DEVICES];
    int part_count;
} split;

static bool is_multi(const hpl_launch *launch, const hpl_arg *args, size_t nargs)
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
static int check_annotations(const hpl__reflection *r, const hpl_arg *args, const view *views, split *sp)
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
static int check_alignment(const hpl__reflection *r, const hpl_arg *args, const view *views, const split *sp)
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
static view part_view(const view *whole, const hpl_partition *p, int parts, int index)
{
    view v = *whole;
    hpl__box owned, halo;
    hpl__partition_box(&whole->at.box, p->dim, parts, index, (uint64_t)p->overlap, &owned, &halo);
    v.at.box = halo;
    if (!hpl__box_intersect(&owned, &whole->at.owned, &v.at.owned))
        v.at.owned = (hpl__box){.lo = {halo.lo[0], halo.lo[1], halo.lo[2]}, .hi = {halo.lo[0], halo.lo[1], halo.lo[2]}};
    for (int d = 0; d < v.ndims; d++)
        v.dims[d] = halo.hi[d] - halo.lo[d];
    return v;
}

/* Subkernel i: device, variant, domain, views. */
static int subkernel_make(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                          const view *views, const split *sp, int i, subkernel *s)
{
    memset(s, 0, offsetof(subkernel, op));
    s->device = &ctx->devices[sp->devices[i]];
    s->variant = (hpl__variant *)hpl__kernel_variant_for(k, s->device);
    const hpl__reflection *r = &s->variant->reflection;
    memcpy(s->global, sp->whole, sizeof s->global);
    s->global[sp->dim] = sp->parts[i].halo_hi - sp->parts[i].halo_lo;
    s->offset[sp->dim] = sp->parts[i].halo_lo;
    const uint32_t *local = launch->local;
    if (launch->domains) {
        char what[64];
        snprintf(what, sizeof what, "launch.domains[%d].global", i);
        int rc = any_nonzero(launch->domains[i].global) ? domain_given(launch->domains[i].global, what, s->global)
                                                         : HPL_OK;
        if (rc != HPL_OK)
            return rc;
        const uint32_t *own = launch->domains[i].local;
        if (own[0] || own[1] || own[2])
            local = own;
    }
    for (int a = 0; a < r->arg_count; a++)
        s->views[a] = args[a].part.on ? part_view(&views[a], &args[a].part, sp->part_count, i) : views[a];
    return subkernel_setup(ctx, s, local);
}

/* Remembers each annotated array's split for hpl_array_part(). */
static void remember_parts(const hpl__reflection *r, const hpl_arg *args, const view *views, const split *sp)
{
    for (int i = 0; i < r->arg_count; i++) {
        if (!args[i].part.on)
            continue;
        hpl__array *a = views[i].array;
        a->split = (hpl__split){.count = sp->part_count, .dim = args[i].part.dim, .overlap = (uint64_t)args[i].part.overlap};
        memcpy(a->split.devices, sp->devices, sizeof a->split.devices);
    }
}

static int eval_multi(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args, size_t nargs)
{
    split sp = {0};
    int rc = devices_of(ctx, launch, &sp);
    if (rc != HPL_OK)
        return rc;
    /* Every variant declares the same arguments: check them once. */
    const hpl__reflection *r = &hpl__kernel_variant_for(k, &ctx->devices[sp.devices[0]])->reflection;
    view views[HPL__MAX_ARGS] = {0};
    rc = check_args(ctx, r, args, nargs, views);
    if (rc == HPL_OK)
        rc = check_annotations(r, args, views, &sp);
    if (rc == HPL_OK)
        rc = domain_of(launch, r, views, sp.whole);
    if (rc != HPL_OK)
        return rc;
    if (sp.first >= 0) {
        sp.dim = args[sp.first].part.dim;
        sp.overlap = (uint64_t)args[sp.first].part.overlap;
    }
    rc = check_alignment(r, args, views, &sp);
    if (rc != HPL_OK)
        return rc;
    sp.part_count = hpl__partition(sp.whole[sp.dim], sp.device_count, sp.overlap, sp.parts);
    if (!ctx->subkernels && !(ctx->subkernels = hpl__calloc(HPL__MAX_DEVICES, sizeof(subkernel))))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    subkernel *s = ctx->subkernels;
    for (int i = 0; rc == HPL_OK && i < sp.part_count; i++)
        rc = subkernel_make(ctx, k, launch, args, views, &sp, i, &s[i]);
    if (rc == HPL_OK)
        rc = subkernels_run(ctx, s, sp.part_count, args, sp.whole);
    if (rc == HPL_OK)
        remember_parts(r, args, views, &sp);
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
    int rc = hpl__kernel_get(ctx, kernel, &k);
    if (rc == HPL_OK && nargs && !args)
        rc = hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "args is NULL but nargs is %zu", nargs);
    if (rc == HPL_OK)
        rc = is_multi(launch, args, nargs) ? eval_multi(ctx, k, launch, args, nargs)
                                           : eval_single(ctx, k, launch, args, nargs);
    if (rc != HPL_OK) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, "hpl_eval(%s)", k ? k->name : "?");
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
        return hpl__fail(rc, "array handle %#x is not a live array", handle.id);
    if (!out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "part is NULL");
    if (a->split.count == 0)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "array '%s' has not been split by an annotated eval", a->name);
    if (index < 0 || index >= a->split.count)
        return hpl__fail(HPL_ERROR_OUT_OF_RANGE, "part %d of array '%s', which has %d part%s", index, a->name,
                         a->split.count, a->split.count == 1 ? "" : "s");
    view whole = view_of(a);
    hpl_partition p = {.on = true, .dim = a->split.dim, .overlap = (int64_t)a->split.overlap};
    view v = part_view(&whole, &p, a->split.count, index);
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
        hpl__fail(rc, "hpl_array_part_count: array handle %#x is not a live array", array.id);
    HPL__UNLOCK(ctx);
    return rc;
}

/* ---- fill ------------------------------------------------------------- */

static int fill_kernel(hpl_context *ctx, hpl__kernel **out)
{
    if (!ctx->fill_kernel) {
        hpl_kernel_desc desc = {.source = {.spirv = hpl__fill_spv, .spirv_words = hpl__fill_spv_words, .name = "fill"}};
        int rc = hpl__kernel_create_locked(ctx, &desc, &ctx->fill_kernel);
        if (rc != HPL_OK)
            return rc;
    }
    *out = ctx->fill_kernel;
    return HPL_OK;
}

/* On a device: shaders/fill.comp writes the owned box viewed as 32-bit
 * words, innermost dimension first. */
int hpl__fill_on_device(hpl_context *ctx, hpl__array *a, const void *value, int device)
{
    hpl__kernel *k = NULL;
    int rc = fill_kernel(ctx, &k);
    if (rc != HPL_OK)
        return rc;
    uint32_t words[2] = {0, 0};
    size_t esize = hpl_type_size(a->type);
    memcpy(words, value, esize);
    subkernel s = {.device = &ctx->devices[device], .variant = &k->variants[0]};
    view *v = &s.views[0];
    *v = (view){.array = a, .at = {a->root, a->owned, a->owned}, .type = HPL_UINT32, .ndims = a->ndims,
                .words = (uint32_t)(esize / 4)};
    for (int i = 0; i < 3; i++)
        v->dims[i] = a->owned.hi[i] - a->owned.lo[i];
    kernel_dims(v, s.global);
    for (int i = 0; i < 3; i++)
        if (s.global[i] > UINT32_MAX)
            return hpl__fail(HPL_ERROR_TOO_LARGE, "'%s' is too large to fill on a device (a row of over 2^32 words)",
                             a->name);
    static const uint32_t no_local[3] = {0, 0, 0};
    rc = subkernel_setup(ctx, &s, no_local);
    hpl_arg args[4] = {hpl_arr((hpl_array){a->id}), hpl_u32(words[0]), hpl_u32(words[1]),
                       hpl_u32((uint32_t)(esize / 4))};
    return rc == HPL_OK ? subkernel_run(ctx, &s, args, s.global) : rc;
}

/* ---- reductions (the device side; lib/reduce.c has the rest) ------------ */

static int reduce_kernel(hpl_context *ctx, hpl_type type, hpl__kernel **out)
{
    static const struct {
        const uint32_t *spirv;
        const size_t *words;
    } spirv[HPL_TYPE_COUNT_] = {
        [HPL_FLOAT32] = {hpl__reduce_float_spv, &hpl__reduce_float_spv_words},
        [HPL_FLOAT64] = {hpl__reduce_double_spv, &hpl__reduce_double_spv_words},
        [HPL_INT32] = {hpl__reduce_int_spv, &hpl__reduce_int_spv_words},
        [HPL_UINT32] = {hpl__reduce_uint_spv, &hpl__reduce_uint_spv_words},
        [HPL_INT64] = {hpl__reduce_int64_t_spv, &hpl__reduce_int64_t_spv_words},
        [HPL_UINT64] = {hpl__reduce_uint64_t_spv, &hpl__reduce_uint64_t_spv_words},
    };
    if (!ctx->reduce_kernels[type]) {
        hpl_kernel_desc desc = {.source = {.spirv = spirv[type].spirv, .spirv_words = *spirv[type].words,
                                           .name = "reduce"}};
        int rc = hpl__kernel_create_locked(ctx, &desc, &ctx->reduce_kernels[type]);
        if (rc != HPL_OK)
            return rc;
    }
    *out = ctx->reduce_kernels[type];
    return HPL_OK;
}

bool hpl__reduce_supported(const hpl__device *d, hpl_type type)
{
    bool wide = type == HPL_FLOAT64 || type == HPL_INT64 || type == HPL_UINT64;
    return !wide || (type == HPL_FLOAT64 ? d->info.float64 : d->info.int64);
}

/* shaders/reduce.comp over `box` of root on device: `groups` partial values
 * into partials[first ...]. */
int hpl__reduce_on_device(hpl_context *ctx, hpl__array *root, const hpl__box *box, int device, hpl__array *partials,
                          uint64_t first, uint32_t groups, hpl_reduction op)
{
    hpl__kernel *k = NULL;
    int rc = reduce_kernel(ctx, root->type, &k);
    if (rc != HPL_OK)
        return rc;
    subkernel s = {.device = &ctx->devices[device], .variant = &k->variants[0], .global = {(uint64_t)groups * 256, 1, 1}};
    view *x = &s.views[0], *p = &s.views[1];
    *x = (view){.array = root, .at = {root, *box, *box}, .type = root->type, .ndims = 3};
    for (int i = 0; i < 3; i++)
        x->dims[i] = box->hi[i] - box->lo[i];
    hpl__box part = {.lo = {first, 0, 0}, .hi = {first + groups, 1, 1}};
    *p = (view){.array = partials, .at = {partials, part, part}, .type = root->type, .ndims = 1, .dims = {groups, 1, 1}};
    static const uint32_t no_local[3] = {0, 0, 0};
    rc = subkernel_setup(ctx, &s, no_local);
    hpl_arg args[3] = {hpl_arr((hpl_array){root->id}), hpl_arr((hpl_array){partials->id}), hpl_u32((uint32_t)op)};
    return rc == HPL_OK ? subkernel_run(ctx, &s, args, s.global) : rc;
}
