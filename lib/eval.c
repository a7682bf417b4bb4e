/* eval: check the arguments, bring missing data to the device, fill the
 * argument block, record the dispatches, submit, and record in each array's
 * coherence state what the kernel read and wrote. Never waits for a device.
 * The subkernel machinery here also runs multi-device evals (split.c) and
 * the library's own kernels (builtin.c). */
#include "events.h"
#include "ghost_check.h"
#include "launch.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- arguments -------------------------------------------------------- */


hpl__arg_view hpl__arg_view_of(hpl__array *a)
{
    hpl__arg_view v = {.array = a, .at = hpl__view_of(a), .type = a->type, .ndims = a->ndims};
    memcpy(v.dims, a->dims, sizeof v.dims);
    return v;
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

int hpl__args_check(hpl_context *ctx, const hpl__reflection *r, const hpl_arg *args, size_t nargs, hpl__arg_view *views)
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
        views[i] = hpl__arg_view_of(a);
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

/* Writes n bytes at byte off of an argument block of size bytes. Reflection
 * puts every field inside the block, subkernel_submit checks it again and
 * hpl__args_alloc refuses blocks over HPL__ARG_RANGE: a write that would
 * still land outside is dropped, never made. */
static void put(uint8_t *block, uint32_t size, uint64_t off, const void *src, size_t n)
{
    if (off <= size && n <= size - off)
        memcpy(block + off, src, n);
}

static void put_u32s(uint8_t *block, uint32_t size, uint64_t off, const uint64_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t x = (uint32_t)v[i];
        put(block, size, off + 4u * (uint64_t)i, &x, 4);
    }
}

/* The kernel's extents of view v. A word view (fill) runs the innermost
 * dimension first: {n_last * words, n_(last-1), n_(last-2)}. */
void hpl__kernel_dims(const hpl__arg_view *v, uint64_t dims[3])
{
    int last = v->at.root->ndims - 1;
    for (int i = 0; i < 3; i++) {
        int d = v->words ? last - i : i;
        dims[i] = d >= 0 ? v->dims[d] * (v->words && i == 0 ? v->words : 1) : 1;
    }
}

/* The kernel's element strides of view v bound to its memory on device. */
static void kernel_strides(const hpl__arg_view *v, int device, uint64_t stride[3])
{
    hpl__box b = hpl__layout_of(v->at.root, v->slot, device).box;
    uint64_t s[3] = {(b.hi[1] - b.lo[1]) * (b.hi[2] - b.lo[2]), b.hi[2] - b.lo[2], 1};
    int last = v->at.root->ndims - 1;
    for (int i = 0; i < 3; i++) {
        int d = v->words ? last - i : i;
        stride[i] = !v->words ? s[i] : d < 0 ? 0 : i == 0 ? 1 : s[d] * v->words;
    }
}

/* The argument's fields relative to its element 0 (first): part and owned
 * boxes, half-open. */
static void put_box(uint8_t *block, uint32_t size, const hpl__array_layout *l, int lo_field, const hpl__box *box,
                    const uint64_t first[3], int n)
{
    uint64_t lo[3], hi[3];
    for (int d = 0; d < 3; d++) {
        lo[d] = box->lo[d] - first[d];
        hi[d] = box->hi[d] - first[d];
    }
    put_u32s(block, size, l->field[lo_field], lo, n);
    put_u32s(block, size, l->field[lo_field + 1], hi, n);
}

/* Fills the argument block. An array's pointer is the address of the
 * argument's element 0, so that a part of a multi-device eval is indexed in
 * the whole argument's coordinates (the pointer may then lie before the
 * memory holding the part; 64-bit addresses wrap consistently). */
static void write_args(uint8_t *block, const hpl__op *op, const hpl__reflection *r, const hpl_arg *args,
                       const hpl__arg_view *views)
{
    const uint32_t size = r->args_size;
    memset(block, 0, size);
    for (int i = 0; i < r->arg_count; i++) {
        const hpl_arg_info *info = &r->args[i];
        if (info->kind == HPL_ARG_SCALAR) {
            put(block, size, info->offset, &args[i].value, HPL__MIN(hpl_type_size(info->type), sizeof args[i].value));
            continue;
        }
        const hpl__arg_view *v = &views[i];
        const hpl__array_layout *l = &r->layout[i];
        const hpl__box *whole = v->is_part ? &v->whole : &v->at.box;
        uint64_t address = hpl__op_address(op, v->at.root, v->slot, whole->lo);
        uint64_t dims[3], stride[3];
        hpl__kernel_dims(v, dims);
        kernel_strides(v, op->device->index, stride);
        int n = v->words ? 3 : v->ndims;
        put(block, size, l->field[HPL__FIELD_POINTER], &address, 8);
        put_u32s(block, size, l->field[HPL__FIELD_DIMS], dims, n);
        put_u32s(block, size, l->field[HPL__FIELD_STRIDE], stride, n);
        put_u32s(block, size, l->field[HPL__FIELD_ORIGIN], whole->lo, n);
        if (v->words) { /* the library's word views: all of it present and owned */
            hpl__box all = {.lo = {0, 0, 0}, .hi = {dims[0], dims[1], dims[2]}};
            put_box(block, size, l, HPL__FIELD_PART_LO, &all, all.lo, n);
            put_box(block, size, l, HPL__FIELD_OWNED_LO, &all, all.lo, n);
        } else {
            put_box(block, size, l, HPL__FIELD_PART_LO, &v->at.box, whole->lo, n);
            put_box(block, size, l, HPL__FIELD_OWNED_LO, &v->at.owned, whole->lo, n);
        }
    }
}

/* ---- geometry --------------------------------------------------------- */

/* A domain given as extents: leading non-zero entries, zeros after them
 * (like array extents). */
int hpl__domain_given(const uint64_t given[3], const char *what, uint64_t global[3])
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

bool hpl__any_nonzero(const uint64_t v[3])
{
    return v[0] || v[1] || v[2];
}

/* The eval's whole domain: launch.global, else the first array argument's
 * extents. */
int hpl__domain_of(const hpl_launch *launch, const hpl__reflection *r, const hpl__arg_view *views, uint64_t global[3])
{
    if (hpl__any_nonzero(launch->global))
        return hpl__domain_given(launch->global, "launch.global", global);
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


typedef struct push_block {
    uint32_t base[4], domain[4], offset[4], global[4];
} push_block;

/* Big domains exceed maxComputeWorkGroupCount: run them as several
 * dispatches, each told its first invocation through the push constants. */
static void record_dispatches(VkCommandBuffer cb, const hpl__subkernel *s, const uint64_t whole[3])
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
void hpl__subkernel_init(hpl__subkernel *s, hpl__device *device, const hpl__kernel *kernel)
{
    memset(s, 0, offsetof(hpl__subkernel, views));
    s->device = device;
    s->variant = (hpl__variant *)hpl__kernel_variant_for(kernel, device);
    memset(s->views, 0, (size_t)s->variant->reflection.arg_count * sizeof s->views[0]);
    s->kernel_name = kernel->name;
}

int hpl__subkernel_setup(hpl_context *ctx, hpl__subkernel *s, const uint32_t given_local[3])
{
    int rc = check_device(s->variant, s->device);
    if (rc == HPL_OK)
        rc = local_of(given_local, &s->variant->reflection, s->device, s->global, s->local);
    return rc == HPL_OK ? hpl__pipeline_get(ctx, s->variant, s->device, s->local, &s->pipeline) : rc;
}

static int subkernel_bind(hpl__subkernel *s)
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
static int subkernel_submit(hpl__subkernel *s, const hpl_arg *args, const uint64_t whole[3])
{
    const hpl__reflection *r = &s->variant->reflection;
    hpl__device *d = s->device;
    hpl__arg_chunk *chunk = NULL;
    uint32_t offset = 0;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    /* Every argument inside the block write_args fills (reflection's promise). */
    int rc = hpl__args_fit(r, r->args_size, HPL_ERROR_INTERNAL, "the block size reflection found");
    if (rc == HPL_OK && r->args_size)
        rc = hpl__args_alloc(d, r->args_size, &chunk, &offset);
    if (rc == HPL_OK)
        rc = hpl__op_record(&s->op, &cb);
    if (rc != HPL_OK)
        return rc;
    hpl__ghost_check ghosts;
    rc = hpl__ghost_check_begin(s->op.ctx, s, cb, &ghosts);
    if (rc != HPL_OK) {
        hpl__point at;
        hpl__batch_end(s->op.ctx, d, &at); /* only the fetches were recorded */
        hpl__ghost_check_free(d, &ghosts);
        return rc;
    }
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipeline);
    if (chunk) {
        write_args(chunk->map + offset, &s->op, r, args, s->views);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &chunk->set, 1,
                                &offset);
    }
    hpl__events_kernel_begin(s->op.ctx, s, cb, whole);
    record_dispatches(cb, s, whole);
    hpl__events_kernel_end(s->op.ctx, d, cb);
    hpl__ghost_check_after(d, cb, &ghosts);
    hpl__point at;
    rc = hpl__op_submit(&s->op, &at);
    int checked = hpl__ghost_check_end(s->op.ctx, d, s->kernel_name, &ghosts, rc == HPL_OK ? &at : NULL);
    rc = rc == HPL_OK ? checked : rc;
    if (rc == HPL_OK && chunk)
        chunk->last_value = at.value;
    for (int i = 0; rc == HPL_OK && i < r->arg_count; i++)
        if (s->views[i].array)
            s->views[i].array->last_where = d->index;
    return rc;
}

/* Runs one subkernel as an operation of its own. */
int hpl__subkernel_run(hpl_context *ctx, hpl__subkernel *s, const hpl_arg *args, const uint64_t whole[3])
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
static bool writes_into(const hpl__subkernel *a, const hpl__subkernel *b)
{
    const hpl__reflection *ra = &a->variant->reflection, *rb = &b->variant->reflection;
    for (int i = 0; i < ra->arg_count; i++) {
        const hpl__arg_view *w = &a->views[i];
        if (!w->array || !(ra->args[i].access & HPL_WRITE))
            continue;
        for (int j = 0; j < rb->arg_count; j++) {
            const hpl__arg_view *t = &b->views[j];
            const hpl__box *touched = rb->args[j].access & HPL_READ ? &t->at.box : &t->at.owned;
            hpl__box both;
            if (t->array && t->at.root == w->at.root && hpl__box_intersect(&w->at.owned, touched, &both))
                return true;
        }
    }
    return false;
}

static bool any_conflict(const hpl__subkernel *s, int n)
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
/* Does a zero-copy subkernel write an argument with a ghost part? Under
 * validation such subkernels run in device order, so that the check of
 * their ghost writes does not see the owner's concurrent writes. */
static bool ghost_on_shared_memory(const hpl__subkernel *s, int n)
{
    for (int i = 0; i < n; i++) {
        const hpl__reflection *r = &s[i].variant->reflection;
        for (int a = 0; s[i].device->zero_copy && a < r->arg_count; a++)
            if (s[i].views[a].is_part && (r->args[a].access & HPL_WRITE) &&
                !hpl__box_equal(&s[i].views[a].at.box, &s[i].views[a].at.owned))
                return true;
    }
    return false;
}

int hpl__subkernels_run(hpl_context *ctx, hpl__subkernel *s, int n, const hpl_arg *args, const uint64_t whole[3])
{
    int rc = HPL_OK;
    if (n == 1 || any_conflict(s, n) || (ctx->validation && ghost_on_shared_memory(s, n))) {
        for (int i = 0; rc == HPL_OK && i < n; i++)
            rc = hpl__subkernel_run(ctx, &s[i], args, whole);
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
    hpl__device *d = &ctx->devices[launch->device];
    hpl__subkernel s;
    hpl__subkernel_init(&s, d, k);
    int rc = hpl__args_check(ctx, &s.variant->reflection, args, nargs, s.views);
    if (rc == HPL_OK)
        rc = hpl__domain_of(launch, &s.variant->reflection, s.views, s.global);
    if (rc == HPL_OK)
        rc = hpl__subkernel_setup(ctx, &s, launch->local);
    return rc == HPL_OK ? hpl__subkernel_run(ctx, &s, args, s.global) : rc;
}

/* ---- hpl_eval ---------------------------------------------------------- */

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
        rc = hpl__eval_is_split(launch, args, nargs) ? hpl__eval_split(ctx, k, launch, args, nargs)
                                           : eval_single(ctx, k, launch, args, nargs);
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
