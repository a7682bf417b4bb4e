/* An operation on one device (a kernel, an assignment): the memories it
 * touches, what must move there first, and what it makes valid after.
 *
 *   hpl__op op;  hpl__op_init(&op, ctx, device);
 *   hpl__op_bind(&op, &view, HPL_READ, &slot);     // for each view
 *   hpl__op_prepare(&op);                          // plans, stages
 *   hpl__op_record(&op, &cb);                      // waits, joins the device's batch: fetches + barrier
 *   ... record the work into cb ...
 *   hpl__op_record_pushes(&op, cb);                // an eval's kernel: rows to send on (push.h)
 *   hpl__op_submit(&op, &at);                      // ends it, records coherence
 *   hpl__op_settle(&op);                           // once the eval's other operations are submitted too
 *   hpl__op_release(&op);                          // always
 */
#ifndef HPL_ACCESS_H
#define HPL_ACCESS_H

#include "engine.h"

/* One memory of one root the operation uses. */
typedef struct hpl__binding {
    hpl__array *root;
    int slot;
    bool reads, writes;
    hpl__region read;    /* what the operation reads */
    hpl__region written; /* what counts as written: owned boxes */
    hpl__region ghost;   /* written boxes outside their owned box */
    hpl__transfer push;  /* written rows sent to the host after the work (push.h) */
    hpl__transfer_plan plan;
} hpl__binding;

#define HPL__MAX_BINDINGS 32

typedef struct hpl__op {
    hpl_context *ctx;
    hpl__device *device;
    hpl__binding bindings[HPL__MAX_BINDINGS];
    int binding_count;
    hpl__point waits[HPL__MAX_TIMELINES];
    int wait_count;
    bool pushes; /* an eval's kernel on one of several devices: learns and pushes (push.h) */
    hpl__point at; /* hpl__op_submit's */
    bool prepared, submitted; /* hpl__op_release: copies recorded that no coherence state knows */
} hpl__op;

/* Starts an operation: the buffers it binds stay pinned (not evicted) until
 * the next operation starts. */
void hpl__op_init(hpl__op *op, hpl_context *ctx, int device);
/* Starts an operation that is part of the one the last hpl__op_init began
 * (the subkernels of one eval): their buffers stay pinned together. */
void hpl__op_join(hpl__op *op, hpl_context *ctx, int device);
/* Chooses (allocating if needed) the memory through which the device
 * accesses the view; *slot gets it. */
int hpl__op_bind(hpl__op *op, const hpl__view *view, hpl_access access, int *slot);
/* The same for an operation that touches only part of the view (one phase
 * of a halos-first subkernel): the memory is chosen for all of `view`, but
 * the operation reads touched->box, writes touched->owned, and may scribble
 * on touched->box outside view->owned (its ghost). */
int hpl__op_bind_within(hpl__op *op, const hpl__view *view, const hpl__view *touched, hpl_access access, int *slot);
/* Plans what each memory lacks, submits the copies that go to the host
 * first, saves ghost parts valid nowhere else, and gathers the points the
 * ghost parts in the host storage wait for. */
int hpl__op_prepare(hpl__op *op);
/* Gathers the points the operation waits for (per region, from the
 * coherence state as it is now: after every prepare of the eval) and starts
 * it in the device's batch after them, with the fetches recorded and a
 * barrier after them. */
int hpl__op_record(hpl__op *op, VkCommandBuffer *cb);
/* After the work of an operation that pushes: a barrier and the copies of
 * the rows hpl__op_prepare chose to push (none: nothing recorded). */
void hpl__op_record_pushes(hpl__op *op, VkCommandBuffer cb);
/* Ends the operation (its point: *at) and records what moved, what was read
 * and what was written. */
int hpl__op_submit(hpl__op *op, hpl__point *at);
/* After hpl__op_submit of this operation and of every other operation of
 * the same eval (the subkernels recorded after it must not wait for it):
 * records what it may have written outside owned boxes in the host storage
 * (a zero-copy device's ghost parts, hpl__coherence_did_scribble). Nothing
 * for an operation that was not submitted. */
int hpl__op_settle(hpl__op *op);
void hpl__op_release(hpl__op *op);
/* The device address of element `first` (root coordinates) of memory slot. */
VkDeviceAddress hpl__op_address(const hpl__op *op, hpl__array *root, int slot, const uint64_t first[3]);

/* Reads HPLVK_PUSH (context creation): whether devices push the rows
 * others read from them with the work that writes them (push.h). */
int hpl__push_configure(hpl_context *ctx);

#endif
