/* Operations on one device: bindings, fetches, coherence after. See access.h. */
#include "access.h"

#include "acquired.h"
#include "config.h"
#include "copy.h"
#include "events.h"
#include "lane.h"
#include "residency.h"
#include "storage.h"
#include "submit.h"
#include "transfer.h"

#include <stdlib.h>
#include <string.h>

void hpl__op_join(hpl__op *op, hpl_context *ctx, int device)
{
    /* Bindings are cleared as they are taken (binding_for): an op is 20 KiB,
     * clearing all of it cost more than the rest of an eval's host work. */
    op->ctx = ctx;
    op->device = &ctx->devices[device];
    op->binding_count = 0;
    op->wait_count = 0;
    op->pushes = false;
    op->prepared = op->submitted = false;
}

void hpl__op_init(hpl__op *op, hpl_context *ctx, int device)
{
    hpl__op_join(op, ctx, device);
    hpl__operation_begin(ctx);
}

static hpl__binding *binding_for(hpl__op *op, hpl__array *root, int slot)
{
    for (int i = 0; i < op->binding_count; i++)
        if (op->bindings[i].root == root && op->bindings[i].slot == slot)
            return &op->bindings[i];
    if (op->binding_count == HPL__MAX_BINDINGS)
        return NULL;
    hpl__binding *b = &op->bindings[op->binding_count++];
    memset(b, 0, sizeof *b);
    b->root = root;
    b->slot = slot;
    hpl__region_init(&b->read);
    hpl__region_init(&b->written);
    hpl__region_init(&b->ghost);
    hpl__region_init(&b->push.region);
    return b;
}

static bool add_ghost(hpl__region *ghost, const hpl__box *box, const hpl__box *owned)
{
    hpl__region g;
    hpl__region_init(&g);
    bool ok = hpl__region_set_box(&g, box) && hpl__region_subtract_box(&g, owned) && hpl__region_add(ghost, &g);
    hpl__region_free(&g);
    return ok;
}

int hpl__op_bind(hpl__op *op, const hpl__view *view, hpl_access access, int *slot)
{
    return hpl__op_bind_within(op, view, view, access, slot);
}

int hpl__op_bind_within(hpl__op *op, const hpl__view *view, const hpl__view *touched, hpl_access access, int *slot)
{
    int rc = hpl__acquired_check(op->ctx, view->root, &view->box, access);
    if (rc == HPL_OK)
        rc = hpl__array_memory_for(op->ctx, view->root, op->device->index, &view->box, slot);
    if (rc != HPL_OK)
        return rc;
    hpl__binding *b = binding_for(op, view->root, *slot);
    if (!b)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "more than %d arrays in one operation", HPL__MAX_BINDINGS);
    bool ok = true;
    if (access & HPL_READ) {
        b->reads = true;
        ok = hpl__region_add_box(&b->read, &touched->box);
    }
    if (access & HPL_WRITE) {
        b->writes = true;
        ok = ok && hpl__region_add_box(&b->written, &touched->owned);
        if (ok && !hpl__box_contains(&view->owned, &touched->box))
            ok = add_ghost(&b->ghost, &touched->box, &view->owned);
    }
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

/* Ghost elements the kernel may overwrite here, valid nowhere else, go to
 * the host first: the write must not lose them. */
static int save_ghost(hpl__op *op, hpl__binding *b)
{
    hpl__coherence *c = &b->root->coherence;
    hpl__transfer save = {.src = b->slot, .dst = HPL__HOST};
    hpl__region_init(&save.region);
    int rc = hpl__coherence_only_here(c, b->slot, &b->ghost, &save.region)
                 ? HPL_OK
                 : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (rc == HPL_OK && !hpl__region_empty(&save.region))
        rc = hpl__stage_to_host(op->ctx, b->root, &save);
    hpl__region_free(&save.region);
    return rc;
}

/* Is step t of b's plan a copy into b's memory recorded in the operation's
 * own command buffer? Copies into the host storage (from another device)
 * were submitted on their source device by hpl__op_prepare: for a binding
 * of a zero-copy device (b->slot is the host storage) none is recorded here,
 * and no buffer of another device ever enters this device's commands. */
static bool recorded_here(const hpl__binding *b, const hpl__transfer *t)
{
    return t->dst == b->slot && t->dst != HPL__HOST;
}

/* The points b's part of the operation waits for, per region: the writers
 * of what moves in (at its source) and of what it reads; the writers and
 * readers of what it writes (copies recorded here, the kernel's writes).
 * Work on other parts of the same memory is not waited for. The ghost part
 * of a written view counts as written (the kernel may scribble there): in a
 * device's own memory here; in the host storage when the operation was
 * prepared (ghost_waits). */
static void gather_waits(hpl__op *op, const hpl__binding *b)
{
    const hpl__coherence *c = &b->root->coherence;
    for (int i = 0; i < b->plan.count; i++) {
        const hpl__transfer *t = &b->plan.steps[i];
        if (t->dst != b->slot)
            continue;
        op->wait_count = hpl__coherence_wait_points(c, t->src, &t->region, false, op->waits, op->wait_count);
        if (recorded_here(b, t))
            op->wait_count = hpl__coherence_wait_points(c, b->slot, &t->region, true, op->waits, op->wait_count);
    }
    if (b->reads)
        op->wait_count = hpl__coherence_wait_points(c, b->slot, &b->read, false, op->waits, op->wait_count);
    if (b->writes)
        op->wait_count = hpl__coherence_wait_points(c, b->slot, &b->written, true, op->waits, op->wait_count);
    /* A push writes the host storage's rows: after the work that reads or
     * writes them there. */
    if (!hpl__region_empty(&b->push.region))
        op->wait_count = hpl__coherence_wait_points(c, HPL__HOST, &b->push.region, true, op->waits, op->wait_count);
    if (b->writes && b->slot != HPL__HOST)
        op->wait_count = hpl__coherence_wait_points(c, b->slot, &b->ghost, true, op->waits, op->wait_count);
}

/* A zero-copy kernel may scribble on the ghost part in the host storage:
 * after every earlier read and write there. Gathered before the eval's
 * subkernels record: a sibling's owned box is this one's ghost, and waiting
 * for the sibling would run the devices one after the other. (Within the
 * eval such writes race with the sibling's: hplvk.h 7b.) */
static void ghost_waits(hpl__op *op, const hpl__binding *b)
{
    if (b->writes && b->slot == HPL__HOST && !hpl__region_empty(&b->ghost))
        op->wait_count =
            hpl__coherence_wait_points(&b->root->coherence, HPL__HOST, &b->ghost, true, op->waits, op->wait_count);
}

/* Pushes larger than this are left to the reader: from 8 MiB a transfer
 * between two devices goes in pipelined chunks (exchange.c), faster than a
 * download after the kernel and an upload after that. */
#define PUSH_MAX_BYTES (8ull << 20)

int hpl__push_configure(hpl_context *ctx)
{
    return hpl__parse_switch("HPLVK_PUSH", getenv("HPLVK_PUSH"), true, "rows move when a device reads them",
                             "a device sends the rows others read from it with the work that writes them", &ctx->push);
}

/* Notes what b reads from other devices' memories (before its transfers
 * change the coherence state) for their next writes: push.h. */
static int note_reads(hpl__op *op, hpl__binding *b)
{
    if (!b->reads)
        return HPL_OK;
    if (!b->root->push && !(b->root->push = hpl__push_create()))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    return hpl__push_note_read(b->root->push, &b->root->coherence, op->device->index, b->slot, &b->read)
               ? HPL_OK
               : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

/* Chooses the rows b's work pushes: what other devices read from this one
 * since it last wrote them, where it writes them now; none into host
 * storage the device cannot import, or when they are many. */
static int choose_push(hpl__op *op, hpl__binding *b)
{
    hpl__array *root = b->root;
    int dev = op->device->index;
    if (!b->writes || b->slot == HPL__HOST || !root->push)
        return HPL_OK;
    b->push.src = b->slot;
    b->push.dst = HPL__HOST;
    if (!hpl__push_take(root->push, dev, &b->written, &b->push.region))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (hpl__region_empty(&b->push.region))
        return HPL_OK;
    int rc = HPL_OK;
    if (hpl__region_volume(&b->push.region) * hpl_type_size(root->type) > PUSH_MAX_BYTES)
        hpl__region_clear(&b->push.region);
    else
        rc = hpl__host_storage_import(op->ctx, root, dev);
    if (rc == HPL_OK && root->imports[dev].staged)
        hpl__region_clear(&b->push.region);
    return rc;
}

static int prepare_binding(hpl__op *op, hpl__binding *b)
{
    hpl_context *ctx = op->ctx;
    hpl__coherence *c = &b->root->coherence;
    int dev = op->device->index, rc = op->pushes ? note_reads(op, b) : HPL_OK;
    if (rc != HPL_OK)
        return rc;
    if (b->reads && !hpl__coherence_plan_read(c, b->slot, &b->read, &b->plan))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    /* Large pieces from another device go now, chunked and pipelined. */
    rc = hpl__exchange_plan(ctx, b->root, &b->plan);
    for (int i = 0; rc == HPL_OK && i < b->plan.count; i++) {
        const hpl__transfer *t = &b->plan.steps[i];
        if (t->dst == HPL__HOST) {
            rc = hpl__stage_to_host(ctx, b->root, t); /* from another device */
        } else if (t->src == HPL__HOST) {
            rc = hpl__host_storage_import(ctx, b->root, dev);
            /* Not importable: staged now, in chunks, and done with. */
            if (rc == HPL_OK && b->root->imports[dev].staged) {
                rc = hpl__staged_upload(ctx, b->root, t);
                hpl__transfer_plan_drop(&b->plan, i--, 1);
            }
        }
    }
    if (rc == HPL_OK && b->writes && b->slot != HPL__HOST && !hpl__region_empty(&b->ghost))
        rc = save_ghost(op, b);
    if (rc == HPL_OK && op->pushes)
        rc = choose_push(op, b);
    return rc;
}

int hpl__op_prepare(hpl__op *op)
{
    op->prepared = true;
    op->wait_count = 0;
    int rc = HPL_OK;
    for (int i = 0; rc == HPL_OK && i < op->binding_count; i++)
        rc = prepare_binding(op, &op->bindings[i]);
    for (int i = 0; rc == HPL_OK && i < op->binding_count; i++)
        ghost_waits(op, &op->bindings[i]);
    return rc;
}

static bool fetched_here(const hpl__op *op, const hpl__binding *b, const hpl__transfer *t)
{
    (void)op;
    return recorded_here(b, t);
}

/* Is step t of b's plan an upload the transfer lane can take (a copy from
 * the host storage into a buffer of the device, recorded here, not by the
 * copy kernel: the lane's queue runs no kernels)? */
static bool lane_upload(const hpl__op *op, const hpl__binding *b, const hpl__transfer *t)
{
    if (!recorded_here(b, t) || t->src != HPL__HOST)
        return false;
    if (!op->device->copy_kernel)
        return true;
    hpl__layout from = hpl__layout_of(b->root, t->src, op->device->index);
    hpl__layout to = hpl__layout_of(b->root, t->dst, op->device->index);
    return !hpl__copy_by_kernel(op->device, b->root, &t->region, &from, &to);
}

/* Records the fetches of `op` for which `want(op, b, t)` holds into cb;
 * returns whether it recorded any. */
static bool record_fetches(hpl__op *op, VkCommandBuffer cb,
                           bool (*want)(const hpl__op *, const hpl__binding *, const hpl__transfer *),
                           const hpl__op *skip_lane)
{
    hpl__device *d = op->device;
    bool any = false;
    for (int i = 0; i < op->binding_count; i++) {
        hpl__binding *b = &op->bindings[i];
        for (int s = 0; s < b->plan.count; s++) {
            const hpl__transfer *t = &b->plan.steps[s];
            if (!want(op, b, t) || (skip_lane && lane_upload(op, b, t)))
                continue;
            any = true;
            hpl__layout from = hpl__layout_of(b->root, t->src, d->index);
            hpl__layout to = hpl__layout_of(b->root, t->dst, d->index);
            hpl__record_copy_logged(op->ctx, d, cb, b->root, &t->region, t->src, t->dst, &from, &to, hpl__no_shift);
        }
    }
    return any;
}

/* The transfer lane takes an operation's uploads when it has some and
 * everything the operation waits for is on its own device (or done): the
 * lane then waits on the device's compute timeline only. Work of other
 * devices goes through the compute queue's gate. */
static bool lane_takes(const hpl__op *op, uint64_t *after)
{
    const hpl__device *d = op->device;
    if (!d->xfer.on)
        return false;
    uint64_t bytes = 0;
    for (int i = 0; i < op->binding_count; i++) {
        const hpl__binding *b = &op->bindings[i];
        for (int s = 0; s < b->plan.count; s++)
            if (lane_upload(op, b, &b->plan.steps[s]))
                bytes += hpl__region_volume(&b->plan.steps[s].region) * hpl_type_size(b->root->type);
    }
    /* A small upload goes with its kernel: a second submission and a wait
     * between queues cost more than the overlap gains (the shared lane of
     * the tests takes every upload). */
    if (bytes == 0 || (bytes < HPL__LANE_MIN_BYTES && !d->xfer.shared))
        return false;
    *after = 0;
    return hpl__lane_after(op->ctx, d, op->waits, op->wait_count, after);
}

static int record_lane(hpl__op *op, uint64_t after, uint64_t *xfer)
{
    VkCommandBuffer lane_cb;
    int rc = hpl__lane_begin(op->device, &lane_cb);
    if (rc != HPL_OK)
        return rc;
    record_fetches(op, lane_cb, lane_upload, NULL);
    return hpl__lane_submit(op->device, after, 0, xfer);
}

int hpl__op_record(hpl__op *op, VkCommandBuffer *cb)
{
    hpl__device *d = op->device;
    /* Waits are gathered now, not when planning: the subkernels of one eval
     * are all prepared before any is recorded, and preparing a later one can
     * write the host storage where an earlier one works (a ghost part saved
     * there, held only by the later one's device, that the earlier one owns
     * and writes zero-copy). Per region, the subkernels recorded before this
     * one (independent: hpl__subkernels_run) add no wait. The waits for
     * ghost parts in the host storage came with hpl__op_prepare. */
    for (int i = 0; i < op->binding_count; i++)
        gather_waits(op, &op->bindings[i]);
    uint64_t after = 0, xfer = 0;
    bool lane = lane_takes(op, &after);
    int rc = lane ? record_lane(op, after, &xfer) : HPL_OK;
    if (rc == HPL_OK)
        rc = hpl__batch_begin_after(op->ctx, d, op->waits, op->wait_count, xfer, cb);
    if (rc != HPL_OK)
        return rc;
    /* The work after the fetches reads them; without fetches, the barrier
     * hpl__batch_begin recorded already orders it. */
    if (record_fetches(op, *cb, fetched_here, lane ? op : NULL))
        hpl__barrier_all(*cb);
    return HPL_OK;
}

void hpl__op_record_pushes(hpl__op *op, VkCommandBuffer cb)
{
    hpl__device *d = op->device;
    bool barrier = false;
    for (int i = 0; i < op->binding_count; i++) {
        hpl__binding *b = &op->bindings[i];
        if (hpl__region_empty(&b->push.region))
            continue;
        if (!barrier)
            hpl__barrier_all(cb); /* after the work that wrote them */
        barrier = true;
        hpl__record_download(op->ctx, d, cb, b->root, &b->push);
    }
}

static bool commit_binding(hpl_context *ctx, hpl__binding *b, hpl__point at)
{
    hpl__coherence *c = &b->root->coherence;
    bool ok = true;
    for (int s = 0; s < b->plan.count; s++) {
        const hpl__transfer *t = &b->plan.steps[s];
        if (recorded_here(b, t)) {
            hpl__count_transfer(ctx, b->root, t);
            ok = ok && hpl__coherence_did_transfer(c, t, at);
        }
    }
    if (b->reads)
        hpl__coherence_did_read(c, b->slot, &b->read, at);
    /* A kernel may write its ghost part in its device's memory: discarded,
     * and later copies there come after it. In the host storage: settle. */
    if (b->writes && b->slot != HPL__HOST)
        ok = ok && hpl__coherence_did_scribble(c, b->slot, &b->ghost, at);
    if (b->writes)
        ok = ok && hpl__coherence_did_write(c, b->slot, &b->written, at);
    if (!hpl__region_empty(&b->push.region)) {
        hpl__count_transfer(ctx, b->root, &b->push);
        ok = ok && hpl__coherence_did_transfer(c, &b->push, at);
    }
    return ok;
}

int hpl__op_submit(hpl__op *op, hpl__point *at)
{
    bool pushes = false;
    for (int i = 0; i < op->binding_count && !pushes; i++)
        pushes = !hpl__region_empty(&op->bindings[i].push.region);
    int rc = pushes ? hpl__batch_end_now(op->ctx, op->device, at) : hpl__batch_end(op->ctx, op->device, at);
    if (rc != HPL_OK)
        return rc;
    op->submitted = true;
    op->at = *at;
    bool ok = true;
    for (int i = 0; i < op->binding_count; i++)
        ok = commit_binding(op->ctx, &op->bindings[i], *at) && ok;
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory recording an operation");
}

int hpl__op_settle(hpl__op *op)
{
    bool ok = true;
    for (int i = 0; op->submitted && i < op->binding_count; i++) {
        hpl__binding *b = &op->bindings[i];
        if (b->writes && b->slot == HPL__HOST && !hpl__region_empty(&b->ghost))
            ok = hpl__coherence_did_scribble(&b->root->coherence, HPL__HOST, &b->ghost, op->at) && ok;
    }
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory recording an operation");
}

void hpl__op_release(hpl__op *op)
{
    /* Failed after its copies from other devices were recorded there: they
     * will run, and no array's coherence state knows (array.c waits for
     * everything before it frees one). */
    if (op->prepared && !op->submitted)
        op->ctx->unrecorded_work = true;
    for (int i = 0; i < op->binding_count; i++) {
        hpl__binding *b = &op->bindings[i];
        hpl__transfer_plan_free(&b->plan);
        hpl__region_free(&b->read);
        hpl__region_free(&b->written);
        hpl__region_free(&b->ghost);
        hpl__region_free(&b->push.region);
    }
    op->binding_count = 0;
}

VkDeviceAddress hpl__op_address(const hpl__op *op, hpl__array *root, int slot, const uint64_t first[3])
{
    VkDeviceSize esize = hpl_type_size(root->type);
    if (slot == HPL__HOST)
        return root->imports[op->device->index].address + hpl__box_offset(&root->coherence.whole, first) * esize;
    const hpl__instance *inst = hpl__instance_of(root, slot);
    return inst->address + hpl__box_offset(&inst->box, first) * esize;
}
