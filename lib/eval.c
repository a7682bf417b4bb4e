/* eval: check the arguments, bring missing data to the device, fill the
 * argument block, record the dispatches, submit, and record in each array's
 * coherence state what the kernel read and wrote. Never waits for a device. */
#include "access.h"
#include "embedded.h"

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

static int domain_of(const hpl_launch *launch, const hpl__reflection *r, const view *views, uint64_t global[3])
{
    bool given = launch->global[0] || launch->global[1] || launch->global[2];
    if (given) {
        /* Like array extents: leading non-zero entries, zeros after them. */
        for (int i = 0; i < 3; i++) {
            if (launch->global[i] == 0)
                for (int j = i + 1; j < 3; j++)
                    if (launch->global[j])
                        return hpl__fail(HPL_ERROR_DIMENSIONS, "launch.global[%d] is 0 but launch.global[%d] is %llu", i,
                                         j, (unsigned long long)launch->global[j]);
            global[i] = launch->global[i] ? launch->global[i] : 1;
        }
    } else {
        int first = -1;
        for (int i = 0; i < r->arg_count && first < 0; i++)
            if (r->args[i].kind == HPL_ARG_ARRAY)
                first = i;
        if (first < 0)
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                             "launch.global is zero and the kernel has no array argument to take the domain from");
        for (int i = 0; i < 3; i++)
            global[i] = i < views[first].ndims ? views[first].dims[i] : 1;
    }
    for (int i = 0; i < 3; i++)
        if (global[i] > UINT32_MAX)
            return hpl__fail(HPL_ERROR_TOO_LARGE, "launch.global[%d] = %llu exceeds 2^32-1", i,
                             (unsigned long long)global[i]);
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

static int local_of(const hpl_launch *launch, const hpl__reflection *r, const hpl__device *d,
                    const uint64_t global[3], uint32_t local[3])
{
    bool given = launch->local[0] || launch->local[1] || launch->local[2];
    bool declared = r->local_size[0] * r->local_size[1] * r->local_size[2] > 1;
    if (given) {
        for (int i = 0; i < 3; i++)
            local[i] = launch->local[i] ? launch->local[i] : 1;
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

typedef struct push_block {
    uint32_t base[4], domain[4], offset[4], global[4];
} push_block;

/* Big domains exceed maxComputeWorkGroupCount: run them as several
 * dispatches, each told its first invocation through the push constants. */
static void record_dispatches(VkCommandBuffer cb, const hpl__device *d, const uint64_t global[3],
                              const uint32_t local[3])
{
    push_block push = {.domain = {(uint32_t)global[0], (uint32_t)global[1], (uint32_t)global[2], 0},
                       .global = {(uint32_t)global[0], (uint32_t)global[1], (uint32_t)global[2], 0}};
    uint64_t groups[3], step[3];
    for (int i = 0; i < 3; i++) {
        groups[i] = (global[i] + local[i] - 1) / local[i];
        step[i] = d->props.limits.maxComputeWorkGroupCount[i];
    }
    for (uint64_t z = 0; z < groups[2]; z += step[2]) {
        for (uint64_t y = 0; y < groups[1]; y += step[1]) {
            for (uint64_t x = 0; x < groups[0]; x += step[0]) {
                push.base[0] = (uint32_t)(x * local[0]);
                push.base[1] = (uint32_t)(y * local[1]);
                push.base[2] = (uint32_t)(z * local[2]);
                vkCmdPushConstants(cb, d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
                vkCmdDispatch(cb, (uint32_t)HPL__MIN(step[0], groups[0] - x), (uint32_t)HPL__MIN(step[1], groups[1] - y),
                              (uint32_t)HPL__MIN(step[2], groups[2] - z));
            }
        }
    }
}

/* ---- the whole eval ---------------------------------------------------- */

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

/* Runs variant v on device d with arguments already checked. */
static int run(hpl_context *ctx, hpl__variant *v, hpl__device *d, const hpl_launch *launch, const hpl_arg *args,
               view *views)
{
    const hpl__reflection *r = &v->reflection;
    uint64_t global[3];
    uint32_t local[3];
    int rc = check_device(v, d);
    if (rc == HPL_OK)
        rc = domain_of(launch, r, views, global);
    if (rc == HPL_OK)
        rc = local_of(launch, r, d, global, local);
    VkPipeline pipeline = VK_NULL_HANDLE;
    if (rc == HPL_OK)
        rc = hpl__pipeline_get(ctx, v, d, local, &pipeline);
    if (rc != HPL_OK)
        return rc;

    hpl__op op;
    hpl__op_init(&op, ctx, d->index);
    for (int i = 0; rc == HPL_OK && i < r->arg_count; i++)
        if (views[i].array)
            rc = hpl__op_bind(&op, &views[i].at, r->args[i].access, &views[i].slot);
    if (rc == HPL_OK)
        rc = hpl__op_prepare(&op);
    hpl__arg_chunk *chunk = NULL;
    uint32_t offset = 0;
    if (rc == HPL_OK && r->args_size)
        rc = hpl__args_alloc(d, r->args_size, &chunk, &offset);
    hpl__cmd *cmd = NULL;
    if (rc == HPL_OK)
        rc = hpl__op_record(&op, &cmd);
    if (rc == HPL_OK) {
        vkCmdBindPipeline(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
        if (chunk) {
            write_args(chunk->map + offset, &op, r, args, views);
            vkCmdBindDescriptorSets(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &chunk->set, 1,
                                    &offset);
        }
        record_dispatches(cmd->cb, d, global, local);
        hpl__point at;
        rc = hpl__op_submit(&op, cmd, &at);
        if (rc == HPL_OK && chunk)
            chunk->last_value = at.value;
    }
    for (int i = 0; rc == HPL_OK && i < r->arg_count; i++)
        if (views[i].array)
            views[i].array->last_where = d->index;
    hpl__op_release(&op);
    return rc;
}

static int eval_locked(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args, size_t nargs)
{
    if (launch->device < 0 || launch->device >= ctx->device_count)
        return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "launch.device %d does not exist (the context has %d device%s)",
                         launch->device, ctx->device_count, ctx->device_count == 1 ? "" : "s");
    if (nargs && !args)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "args is NULL but nargs is %zu", nargs);
    hpl__device *d = &ctx->devices[launch->device];
    hpl__variant *v = (hpl__variant *)hpl__kernel_variant_for(k, d);
    view views[HPL__MAX_ARGS] = {0};
    int rc = check_args(ctx, &v->reflection, args, nargs, views);
    return rc == HPL_OK ? run(ctx, v, d, launch, args, views) : rc;
}

int hpl_eval(hpl_context *ctx, hpl_kernel kernel, const hpl_launch *launch, const hpl_arg *args, size_t nargs)
{
    static const hpl_launch defaults = {0};
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_eval: ctx is NULL");
    HPL__LOCK(ctx);
    hpl__kernel *k = NULL;
    int rc = hpl__kernel_get(ctx, kernel, &k);
    if (rc == HPL_OK)
        rc = eval_locked(ctx, k, launch ? launch : &defaults, args, nargs);
    if (rc != HPL_OK) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, "hpl_eval(%s)", k ? k->name : "?");
        hpl__error_prefix(prefix);
    }
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
    view views[HPL__MAX_ARGS] = {{.array = a, .at = {a->root, a->owned, a->owned}, .type = HPL_UINT32,
                                  .ndims = a->ndims, .words = (uint32_t)(esize / 4)}};
    for (int i = 0; i < 3; i++)
        views[0].dims[i] = a->owned.hi[i] - a->owned.lo[i];
    hpl_launch launch = {.device = device};
    kernel_dims(&views[0], launch.global);
    for (int i = 0; i < 3; i++)
        if (launch.global[i] > UINT32_MAX)
            return hpl__fail(HPL_ERROR_TOO_LARGE, "'%s' is too large to fill on a device (a row of over 2^32 words)",
                             a->name);
    hpl_arg args[4] = {hpl_arr((hpl_array){a->id}), hpl_u32(words[0]), hpl_u32(words[1]),
                       hpl_u32((uint32_t)(esize / 4))};
    return run(ctx, &k->variants[0], &ctx->devices[device], &launch, args, views);
}
