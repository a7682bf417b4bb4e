/* eval: check the arguments, bring missing data to the device, fill the
 * argument block, record the dispatches, submit, and record in each array's
 * coherence state what the kernel read and wrote. Never waits for a device. */
#include "embedded.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* ---- copies of regions ------------------------------------------------ */

#define COPY_BATCH 64

typedef struct copy_batch {
    VkCommandBuffer cb;
    VkBuffer src, dst;
    VkBufferCopy regions[COPY_BATCH];
    uint32_t count;
} copy_batch;

static void batch_flush(copy_batch *b)
{
    if (b->count)
        vkCmdCopyBuffer(b->cb, b->src, b->dst, b->count, b->regions);
    b->count = 0;
}

static void batch_add(copy_batch *b, VkDeviceSize src, VkDeviceSize dst, VkDeviceSize size)
{
    if (b->count && b->regions[b->count - 1].srcOffset + b->regions[b->count - 1].size == src &&
        b->regions[b->count - 1].dstOffset + b->regions[b->count - 1].size == dst) {
        b->regions[b->count - 1].size += size; /* contiguous with the last run */
        return;
    }
    if (b->count == COPY_BATCH)
        batch_flush(b);
    b->regions[b->count++] = (VkBufferCopy){src, dst, size};
}

/* Records the copy of every box of region between two buffers holding the
 * whole array at byte offsets src_base and dst_base. A box spanning whole
 * trailing dimensions is one run; otherwise one run per row (or per row of
 * each plane). */
static void record_region_copy(VkCommandBuffer cb, const hpl__array *a, const hpl__region *region, VkBuffer src,
                               VkDeviceSize src_base, VkBuffer dst, VkDeviceSize dst_base)
{
    copy_batch b = {.cb = cb, .src = src, .dst = dst};
    VkDeviceSize esize = hpl_type_size(a->type);
    const uint64_t *n = a->dims;
    for (uint32_t i = 0; i < region->count; i++) {
        const hpl__box *x = &region->boxes[i];
        bool full2 = x->lo[2] == 0 && x->hi[2] == n[2];
        bool full1 = full2 && x->lo[1] == 0 && x->hi[1] == n[1];
        if (full1) {
            VkDeviceSize first = x->lo[0] * n[1] * n[2] * esize;
            batch_add(&b, src_base + first, dst_base + first, (x->hi[0] - x->lo[0]) * n[1] * n[2] * esize);
            continue;
        }
        for (uint64_t i0 = x->lo[0]; i0 < x->hi[0]; i0++) {
            if (full2) {
                VkDeviceSize first = (i0 * n[1] + x->lo[1]) * n[2] * esize;
                batch_add(&b, src_base + first, dst_base + first, (x->hi[1] - x->lo[1]) * n[2] * esize);
                continue;
            }
            for (uint64_t i1 = x->lo[1]; i1 < x->hi[1]; i1++) {
                VkDeviceSize first = ((i0 * n[1] + i1) * n[2] + x->lo[2]) * esize;
                batch_add(&b, src_base + first, dst_base + first, (x->hi[2] - x->lo[2]) * esize);
            }
        }
    }
    batch_flush(&b);
}

/* ---- moving data between memories ------------------------------------- */

/* Copies t->region from device memory t->src into the host storage, as its
 * own submission on that device. */
static int stage_to_host(hpl_context *ctx, hpl__array *a, const hpl__transfer *t)
{
    int s = t->src - 1;
    hpl__device *d = &ctx->devices[s];
    int rc = hpl__array_ensure_import(ctx, a, s);
    if (rc != HPL_OK)
        return rc;
    /* Writing the host copy: wait for its writer and for every device still
     * reading it. */
    hpl__point waits[HPL__MAX_DEVICES];
    int n = hpl__coherence_wait_points(&a->coherence, HPL__HOST, true, waits, 0);
    uint64_t gate;
    hpl__cmd *cmd;
    rc = hpl__cmd_begin(d, &cmd);
    if (rc != HPL_OK)
        return rc;
    rc = hpl__gate_for(ctx, d, waits, n, &gate);
    if (rc != HPL_OK) {
        hpl__cmd_abandon(d, cmd);
        return rc;
    }
    const hpl__array_copy *c = &a->copies[s];
    record_region_copy(cmd->cb, a, &t->region, c->buffer, 0, c->host_buffer, c->host_offset);
    hpl__point at;
    rc = hpl__cmd_submit(ctx, d, cmd, gate, &at);
    if (rc == HPL_OK && !hpl__coherence_did_transfer(&a->coherence, t, at))
        rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    return rc;
}

int hpl__fetch_to_host(hpl_context *ctx, hpl__array *a)
{
    hpl__transfer_plan plan;
    int rc = hpl__coherence_plan_read(&a->coherence, HPL__HOST, &a->coherence.whole_region, &plan)
                 ? HPL_OK
                 : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (int i = 0; rc == HPL_OK && i < plan.count; i++)
        rc = stage_to_host(ctx, a, &plan.steps[i]);
    hpl__transfer_plan_free(&plan);
    return rc;
}

/* ---- one eval --------------------------------------------------------- */

/* An array as the kernel sees it. */
typedef struct binding {
    hpl__array *array;
    hpl_access access; /* union of every argument using the array */
    hpl__transfer_plan plan;
} binding;

typedef struct eval_state {
    hpl__device *device;
    int mem; /* device index + 1 */
    binding bindings[HPL__MAX_ARGS];
    int binding_count;
    hpl__point waits[HPL__MAX_DEVICES];
    int wait_count;
} eval_state;

static binding *bind_array(eval_state *st, hpl__array *a, hpl_access access)
{
    for (int i = 0; i < st->binding_count; i++) {
        if (st->bindings[i].array == a) {
            st->bindings[i].access |= access;
            return &st->bindings[i];
        }
    }
    binding *b = &st->bindings[st->binding_count++];
    memset(b, 0, sizeof *b);
    b->array = a;
    b->access = access;
    return b;
}

/* Plans and starts what must move so the device holds every array the
 * kernel reads; allocates device storage for every array. */
static int prepare_binding(hpl_context *ctx, eval_state *st, binding *b)
{
    hpl__array *a = b->array;
    int rc = hpl__array_ensure_device(ctx, a, st->device->index);
    if (rc != HPL_OK || !(b->access & HPL_READ))
        return rc;
    if (!hpl__coherence_plan_read(&a->coherence, st->mem, &a->coherence.whole_region, &b->plan))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (int i = 0; rc == HPL_OK && i < b->plan.count; i++) {
        const hpl__transfer *t = &b->plan.steps[i];
        if (t->dst == HPL__HOST)
            rc = stage_to_host(ctx, a, t);
        else
            rc = hpl__array_ensure_import(ctx, a, st->device->index);
    }
    if (rc == HPL_OK && b->plan.count)
        st->wait_count = hpl__coherence_wait_points(&a->coherence, HPL__HOST, false, st->waits, st->wait_count);
    return rc;
}

static void record_fetches(const eval_state *st, VkCommandBuffer cb)
{
    int dev = st->device->index;
    for (int i = 0; i < st->binding_count; i++) {
        const binding *b = &st->bindings[i];
        const hpl__array_copy *c = &b->array->copies[dev];
        for (int s = 0; s < b->plan.count; s++)
            if (b->plan.steps[s].dst == st->mem)
                record_region_copy(cb, b->array, &b->plan.steps[s].region, c->host_buffer, c->host_offset, c->buffer,
                                   0);
    }
}

/* After the submission: host->device copies done at `at`, reads and writes
 * of the kernel recorded. */
static int commit(eval_state *st, hpl__point at)
{
    bool ok = true;
    for (int i = 0; i < st->binding_count; i++) {
        binding *b = &st->bindings[i];
        hpl__coherence *c = &b->array->coherence;
        for (int s = 0; s < b->plan.count; s++)
            if (b->plan.steps[s].dst == st->mem)
                ok &= hpl__coherence_did_transfer(c, &b->plan.steps[s], at);
        if (b->access & HPL_READ)
            hpl__coherence_did_read(c, st->mem, at);
        if (b->access & HPL_WRITE)
            ok &= hpl__coherence_did_write(c, st->mem, &c->whole_region, at);
    }
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory recording an eval");
}

static void release_bindings(eval_state *st)
{
    for (int i = 0; i < st->binding_count; i++)
        hpl__transfer_plan_free(&st->bindings[i].plan);
}

/* ---- arguments -------------------------------------------------------- */

/* How the kernel sees an array argument: normally the array's own type and
 * shape; internal kernels (fill) may view it differently. */
typedef struct view {
    hpl_type type;
    int ndims;
    uint64_t dims[3];
} view;

static view view_of(const hpl__array *a)
{
    view v = {.type = a->type, .ndims = a->ndims};
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

static int check_args(hpl_context *ctx, const hpl__reflection *r, const hpl_arg *args, size_t nargs,
                      hpl__array **arrays, view *views)
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
        int rc = hpl__array_get(ctx, got->value.array, &arrays[i]);
        if (rc != HPL_OK) {
            hpl__fail(rc, "argument %d (%s): array handle %#x is not a live array (destroyed or never created)", i,
                      want->name, got->value.array.id);
            return rc;
        }
        const hpl__array *a = arrays[i];
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

static void write_args(uint8_t *block, const hpl__reflection *r, const hpl_arg *args, hpl__array **arrays,
                       const view *views, int device)
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
        uint64_t address = arrays[i]->copies[device].address;
        uint64_t stride[3], origin[3] = {0, 0, 0};
        stride[v->ndims - 1] = 1;
        for (int d = v->ndims - 2; d >= 0; d--)
            stride[d] = stride[d + 1] * v->dims[d + 1];
        memcpy(block + l->pointer, &address, 8);
        put_u32s(block + l->dims, v->dims, v->ndims);
        put_u32s(block + l->stride, stride, v->ndims);
        put_u32s(block + l->origin, origin, v->ndims);
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
               hpl__array **arrays, const view *views)
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

    eval_state st = {.device = d, .mem = d->index + 1};
    for (int i = 0; i < r->arg_count; i++)
        if (arrays[i])
            bind_array(&st, arrays[i], r->args[i].access);
    for (int i = 0; i < st.binding_count && rc == HPL_OK; i++)
        rc = prepare_binding(ctx, &st, &st.bindings[i]);

    hpl__arg_chunk *chunk = NULL;
    uint32_t offset = 0;
    if (rc == HPL_OK && r->args_size)
        rc = hpl__args_alloc(d, r->args_size, &chunk, &offset);
    hpl__cmd *cmd = NULL;
    if (rc == HPL_OK)
        rc = hpl__cmd_begin(d, &cmd);
    uint64_t gate = 0;
    if (rc == HPL_OK)
        rc = hpl__gate_for(ctx, d, st.waits, st.wait_count, &gate);
    if (rc == HPL_OK) {
        record_fetches(&st, cmd->cb);
        hpl__barrier_all(cmd->cb);
        vkCmdBindPipeline(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
        if (chunk) {
            write_args(chunk->map + offset, r, args, arrays, views, d->index);
            vkCmdBindDescriptorSets(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &chunk->set, 1,
                                    &offset);
        }
        record_dispatches(cmd->cb, d, global, local);
        hpl__point at;
        rc = hpl__cmd_submit(ctx, d, cmd, gate, &at);
        if (rc == HPL_OK) {
            if (chunk)
                chunk->last_value = at.value;
            rc = commit(&st, at);
        }
    } else if (cmd) {
        hpl__cmd_abandon(d, cmd);
    }
    release_bindings(&st);
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
    hpl__array *arrays[HPL__MAX_ARGS] = {0};
    view views[HPL__MAX_ARGS];
    int rc = check_args(ctx, &v->reflection, args, nargs, arrays, views);
    return rc == HPL_OK ? run(ctx, v, d, launch, args, arrays, views) : rc;
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

/* The array, viewed as 32-bit words, is written by shaders/fill.comp. */
static int fill_locked(hpl_context *ctx, hpl_array handle, const void *value, int device)
{
    if (device < 0 || device >= ctx->device_count)
        return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "device %d does not exist (the context has %d)", device,
                         ctx->device_count);
    hpl__array *a = NULL;
    hpl__kernel *k = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK)
        rc = fill_kernel(ctx, &k);
    if (rc != HPL_OK)
        return rc;
    uint32_t words[2] = {0, 0};
    size_t esize = hpl_type_size(a->type);
    memcpy(words, value, esize);
    uint64_t count = a->count * (esize / 4);
    if (count > UINT32_MAX)
        return hpl__fail(HPL_ERROR_TOO_LARGE, "array '%s' is too large to fill (over 2^32 words)", a->name);
    hpl__array *arrays[HPL__MAX_ARGS] = {a};
    view views[HPL__MAX_ARGS] = {{.type = HPL_UINT32, .ndims = 1, .dims = {count, 1, 1}}};
    hpl_arg args[4] = {hpl_arr(handle), hpl_u32(words[0]), hpl_u32(words[1]), hpl_u32((uint32_t)(esize / 4))};
    hpl_launch launch = {.device = device};
    return run(ctx, &k->variants[0], &ctx->devices[device], &launch, args, arrays, views);
}

int hpl_array_fill(hpl_context *ctx, hpl_array array, const void *value, int device)
{
    if (!ctx || !value)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_fill: %s is NULL", !ctx ? "ctx" : "value");
    HPL__LOCK(ctx);
    int rc = fill_locked(ctx, array, value, device);
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_fill");
    HPL__UNLOCK(ctx);
    return rc;
}
