/* Running subkernels (launch.c plans them; builtin.c makes its own): bind
 * each argument's memory, bring what is missing, fill the argument block,
 * record the dispatches, submit, and record in each array's coherence state
 * what the kernel read and wrote. Never waits for a device (except the
 * ghost check under validation). */
#include "access.h"
#include "bounds.h"
#include "copy.h"
#include "events.h"
#include "ghost_check.h"
#include "memory.h"
#include "partition.h"
#include "subkernel.h"
#include "submit.h"

#include <string.h>

/* ---- the argument block ------------------------------------------------ */

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

/* Fills the argument block. An array's pointer is the address of its first
 * element present on the device (part_lo: element 0 unless it is a part of
 * a multi-device eval), and <hplvk.glsl> indexes from there (i - part_lo),
 * so that every offset a kernel adds to it lies inside the memory holding
 * the part. A pointer to element 0 lay before that memory, and the H200
 * faulted (device lost) once a part's offsets from it passed 4 GiB: its
 * compiler adds a 32-bit index's byte offset in 32 bits (2026-11-25, arrays
 * of 4.2 and 5 GiB over two and three logical devices). */
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
        uint64_t address = hpl__op_address(op, v->at.root, v->slot, v->at.box.lo);
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

/* ---- dispatches --------------------------------------------------------- */

/* hplvk.glsl's hplvk_push: the geometry, then for bounds checks the
 * device's report and the kernel's handle. */
typedef struct push_block {
    uint32_t base[4], domain[4], offset[4], global[4];
    uint64_t report, kernel;
} push_block;
_Static_assert(sizeof(push_block) == HPL__PUSH_BYTES, "the prelude's push constants");

/* Big domains exceed maxComputeWorkGroupCount: run them as several
 * dispatches, each told its first invocation through the push constants.
 * Everything is in the domain's order but the group counts, which go to
 * the dispatch's dimensions under the subkernel's walk. */
static void record_box(VkCommandBuffer cb, const hpl__subkernel *s, const uint64_t whole[3])
{
    const hpl__device *d = s->device;
    push_block push = {.report = d->report_address, .kernel = s->kernel_id};
    uint64_t groups[3], step[3];
    const int w = s->walk;
    for (int i = 0; i < 3; i++) {
        push.domain[i] = (uint32_t)s->global[i];
        push.offset[i] = (uint32_t)s->offset[i];
        push.global[i] = (uint32_t)whole[i];
        groups[i] = (s->global[i] + s->local[i] - 1) / s->local[i];
        step[i] = d->props.limits.maxComputeWorkGroupCount[hpl__walk_dim(w, i)];
    }
    for (uint64_t z = 0; z < groups[2]; z += step[2]) {
        for (uint64_t y = 0; y < groups[1]; y += step[1]) {
            for (uint64_t x = 0; x < groups[0]; x += step[0]) {
                push.base[0] = (uint32_t)(x * s->local[0]);
                push.base[1] = (uint32_t)(y * s->local[1]);
                push.base[2] = (uint32_t)(z * s->local[2]);
                uint32_t count[3] = {(uint32_t)HPL__MIN(step[0], groups[0] - x),
                                     (uint32_t)HPL__MIN(step[1], groups[1] - y),
                                     (uint32_t)HPL__MIN(step[2], groups[2] - z)};
                vkCmdPushConstants(cb, d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
                vkCmdDispatch(cb, count[hpl__walk_dim(w, 0)], count[hpl__walk_dim(w, 1)], count[hpl__walk_dim(w, 2)]);
            }
        }
    }
}

/* The subkernel's dispatches, each a kernel in the trace: its domain, or
 * the rows of its phase (a box of their own: hpl_subkernel_offset and
 * hpl_subkernel_size describe them). */
static void record_dispatches(hpl_context *ctx, VkCommandBuffer cb, hpl__subkernel *s, const uint64_t whole[3])
{
    if (!s->row_ranges) {
        hpl__events_kernel_begin(ctx, s, cb, whole);
        record_box(cb, s, whole);
        hpl__events_kernel_end(ctx, s->device, cb);
        return;
    }
    int dim = s->rows_dim;
    uint64_t offset = s->offset[dim], global = s->global[dim];
    for (int i = 0; i < s->row_ranges; i++) {
        s->offset[dim] = s->rows[i][0];
        s->global[dim] = s->rows[i][1] - s->rows[i][0];
        hpl__events_kernel_begin(ctx, s, cb, whole);
        record_box(cb, s, whole);
        hpl__events_kernel_end(ctx, s->device, cb);
    }
    s->offset[dim] = offset;
    s->global[dim] = global;
}

/* ---- running ------------------------------------------------------------ */

/* What a phase of subkernel s touches of part view v (split along its
 * dimension adim, `reach` halo elements each side): the rows of the
 * phase's range r of the domain, which are elements whole.lo + r of the
 * argument, and `reach` beyond them for reads (hplvk.h: under halos_first
 * a row reads at most the argument's overlap away). */
static hpl__view phase_touch(const hpl__arg_view *v, int adim, const uint64_t r[2], uint64_t reach)
{
    hpl__view t = v->at;
    uint64_t lo = v->whole.lo[adim] + r[0], hi = v->whole.lo[adim] + r[1];
    t.box.lo[adim] = HPL__MAX(t.box.lo[adim], lo - HPL__MIN(lo, reach));
    t.box.hi[adim] = HPL__MIN(t.box.hi[adim], hi + HPL__MIN(UINT64_MAX - hi, reach));
    t.owned.lo[adim] = HPL__MAX(t.owned.lo[adim], lo);
    t.owned.hi[adim] = HPL__MIN(t.owned.hi[adim], hi);
    return t;
}

static int view_bind(hpl__subkernel *s, const hpl_arg *arg, int i)
{
    hpl__arg_view *v = &s->views[i];
    hpl_access access = s->variant->reflection.args[i].access;
    if (!s->row_ranges || !v->is_part)
        return hpl__op_bind(&s->op, &v->at, access, &v->slot);
    int rc = HPL_OK;
    if (s->reads_whole_part && (access & HPL_READ))
        rc = hpl__op_bind(&s->op, &v->at, HPL_READ, &v->slot);
    for (int k = 0; rc == HPL_OK && k < s->row_ranges; k++) {
        hpl__view t = phase_touch(v, arg->part.dim, s->rows[k], (uint64_t)arg->part.overlap);
        rc = hpl__op_bind_within(&s->op, &v->at, &t, access, &v->slot);
    }
    return rc;
}

static int subkernel_bind(hpl__subkernel *s, const hpl_arg *args)
{
    const hpl__reflection *r = &s->variant->reflection;
    const hpl_arg *a = s->args ? s->args : args;
    int rc = HPL_OK;
    for (int i = 0; rc == HPL_OK && i < r->arg_count; i++)
        if (s->views[i].array)
            rc = view_bind(s, a ? &a[i] : NULL, i); /* (a plan's runner passes its own) */
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
        write_args(chunk->map + offset, &s->op, r, s->args ? s->args : args, s->views);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &chunk->set, 1,
                                &offset);
    }
    record_dispatches(s->op.ctx, cb, s, whole);
    hpl__bounds_barrier(d, cb);
    d->kernel_ns = hpl__now_coarse_ns();
    hpl__ghost_check_after(d, cb, &ghosts);
    hpl__op_record_pushes(&s->op, cb);
    hpl__point at;
    rc = hpl__op_submit(&s->op, &at);
    /* Stamped before the ghost check, whose wait lets other threads' evals
     * allocate blocks meanwhile: in this chunk (with later values), or in
     * new ones (d->chunks may move). */
    if (chunk)
        chunk->last_value = HPL__MAX(chunk->last_value, at.value);
    int checked = hpl__ghost_check_end(s->op.ctx, d, s->kernel_name, &ghosts, rc == HPL_OK ? &at : NULL);
    rc = rc == HPL_OK ? checked : rc;
    for (int i = 0; rc == HPL_OK && i < r->arg_count; i++)
        if (s->views[i].array)
            s->views[i].array->last_where = d->index;
    return rc;
}

/* Runs one subkernel as an operation of its own. */
int hpl__subkernel_run(hpl_context *ctx, hpl__subkernel *s, const hpl_arg *args, const uint64_t whole[3])
{
    hpl__op_init(&s->op, ctx, s->device->index);
    s->op.pushes = ctx->push && ctx->device_count > 1;
    int rc = subkernel_bind(s, args);
    if (rc == HPL_OK)
        rc = hpl__op_prepare(&s->op);
    if (rc == HPL_OK)
        rc = subkernel_submit(s, args, whole);
    int settled = hpl__op_settle(&s->op);
    hpl__op_release(&s->op);
    return rc == HPL_OK ? settled : rc;
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

/* Subkernels where one writes what another touches, and under validation
 * zero-copy ones with ghost parts, run one after the other. */
static bool must_run_in_order(const hpl_context *ctx, const hpl__subkernel *s, int n)
{
    return any_conflict(s, n) || (ctx->validation && ghost_on_shared_memory(s, n));
}

bool hpl__subkernels_must_run_in_order(const hpl_context *ctx, const hpl__subkernel *s, int n)
{
    return n > 1 && must_run_in_order(ctx, s, n);
}

static int run_in_order(hpl_context *ctx, hpl__subkernel *s, int n, const hpl_arg *args, const uint64_t whole[3])
{
    int rc = HPL_OK;
    for (int i = 0; rc == HPL_OK && i < n; i++)
        rc = hpl__subkernel_run(ctx, &s[i], args, whole);
    return rc;
}

/* Room for `count` operations of each of the subkernels s[which[0 .. m - 1]]
 * on its device (argument blocks, command buffers, cross-device waits),
 * taken after they were planned and before any records: one refused
 * allocation must not leave the eval run on some devices and not on
 * others. */
static int reserve(hpl_context *ctx, hpl__subkernel *s, const int *which, int m, uint32_t count)
{
    int rc = HPL_OK;
    for (int k = 0; rc == HPL_OK && k < m; k++)
        rc = hpl__args_reserve(s[which[k]].device, s[which[k]].variant->reflection.args_size, count);
    for (int k = 0; rc == HPL_OK && k < m; k++)
        rc = hpl__device_reserve(ctx, s[which[k]].device, count);
    return rc;
}

/* Runs subkernels s[which[0 .. m - 1]] side by side as the operations of one
 * eval: all planned before any is submitted, with room for `ops` operations
 * each (reserve) taken in between. join: they continue operations begun
 * before (their buffers stay pinned together). */
static int run_side_by_side(hpl_context *ctx, hpl__subkernel *s, const int *which, int m, const hpl_arg *args,
                            const uint64_t whole[3], bool join, uint32_t ops)
{
    for (int k = 0; k < m; k++) {
        if (k == 0 && !join)
            hpl__op_init(&s[which[k]].op, ctx, s[which[k]].device->index);
        else
            hpl__op_join(&s[which[k]].op, ctx, s[which[k]].device->index);
        s[which[k]].op.pushes = ctx->push;
    }
    int rc = HPL_OK;
    for (int k = 0; rc == HPL_OK && k < m; k++)
        rc = subkernel_bind(&s[which[k]], args);
    for (int k = 0; rc == HPL_OK && k < m; k++)
        rc = hpl__op_prepare(&s[which[k]].op);
    if (rc == HPL_OK && ops)
        rc = reserve(ctx, s, which, m, ops);
    for (int k = 0; rc == HPL_OK && k < m; k++)
        rc = subkernel_submit(&s[which[k]], args, whole);
    for (int k = 0; k < m; k++) {
        int settled = hpl__op_settle(&s[which[k]].op);
        rc = rc == HPL_OK ? settled : rc;
        hpl__op_release(&s[which[k]].op);
    }
    return rc;
}

/* Runs the subkernels of one eval. Independent ones (the usual case) are
 * all planned before any is submitted, so that what one device must send to
 * another (halos) is queued on it before its own kernel: the devices then
 * run side by side. Subkernels where one writes what another touches run
 * one after the other, in device order, each planned after the previous. */
int hpl__subkernels_run(hpl_context *ctx, hpl__subkernel *s, int n, const hpl_arg *args, const uint64_t whole[3])
{
    if (n == 1) /* a plain eval: nothing else to order it against */
        return hpl__subkernel_run(ctx, s, args, whole);
    if (must_run_in_order(ctx, s, n))
        return run_in_order(ctx, s, n, args, whole);
    int all[HPL__MAX_DEVICES];
    for (int i = 0; i < n; i++)
        all[i] = i;
    return run_side_by_side(ctx, s, all, n, args, whole, false, 1);
}

/* ---- halos first --------------------------------------------------------- */

/* Runs phase `phase` of the subkernels that have one (their bands, then
 * their interiors) side by side, and submits each device's at once: the
 * band's timeline value is its own, so a neighbour's copy of it waits for
 * it alone. whole_reads: the phase's reads take in all of each part (else
 * the rows it runs and their reach); join: it continues the phase before;
 * ops: the room it reserves per device. */
static int phase_run(hpl_context *ctx, hpl__subkernel *s, int n, const hpl_arg *args, const uint64_t whole[3],
                     const hpl__phases *ph, int dim, int phase, bool whole_reads, bool join, uint32_t ops)
{
    int ran[HPL__MAX_DEVICES] = {0}, m = 0;
    for (int i = 0; i < n; i++) {
        if (!ph[i].count[phase])
            continue;
        s[i].row_ranges = ph[i].count[phase];
        s[i].rows_dim = dim;
        s[i].reads_whole_part = whole_reads;
        memcpy(s[i].rows, ph[i].range[phase], sizeof s[i].rows);
        ran[m++] = i;
    }
    int rc = run_side_by_side(ctx, s, ran, m, args, whole, join, ops);
    for (int k = 0; k < m; k++) {
        s[ran[k]].row_ranges = 0;
        s[ran[k]].reads_whole_part = false;
        int flushed = hpl__batch_flush(s[ran[k]].device);
        rc = rc == HPL_OK ? flushed : rc;
    }
    return rc;
}

int hpl__subkernels_run_halos_first(hpl_context *ctx, hpl__subkernel *s, int n, const hpl_arg *args,
                                    const uint64_t whole[3], int dim, uint64_t w)
{
    if (n < 2 || w == 0)
        return hpl__subkernels_run(ctx, s, n, args, whole);
    if (must_run_in_order(ctx, s, n))
        return run_in_order(ctx, s, n, args, whole);
    hpl__phases ph[HPL__MAX_DEVICES];
    for (int i = 0; i < n; i++)
        hpl__halo_phases(s[i].offset[dim], s[i].offset[dim] + s[i].global[dim], i > 0, i < n - 1, w, &ph[i]);
    /* Every device runs a band (hpl__halo_phases): room for its interior
     * too is taken before the first band records, whose reads take in all
     * of its part, so that the interiors find everything in place. */
    int rc = phase_run(ctx, s, n, args, whole, ph, dim, 0, true, false, 2);
    return rc == HPL_OK ? phase_run(ctx, s, n, args, whole, ph, dim, 1, false, true, 0) : rc;
}

int hpl__subkernels_run_phases(hpl_context *ctx, hpl__subkernel *s, int n, const hpl_arg *args,
                               const uint64_t whole[3], int dim, const hpl__phases *ph, int (*between)(void *),
                               void *user)
{
    int rc = phase_run(ctx, s, n, args, whole, ph, dim, 0, false, false, 1);
    int moved = between(user);
    rc = rc == HPL_OK ? moved : rc;
    return rc == HPL_OK ? phase_run(ctx, s, n, args, whole, ph, dim, 1, false, false, 1) : rc;
}
