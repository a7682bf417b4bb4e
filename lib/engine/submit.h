/* Batches of operations on a device's timeline, and host waits for
 * timeline points (submit.c). */
#ifndef HPL_SUBMIT_H
#define HPL_SUBMIT_H

#include "engine.h"

/* ---- batches ----------------------------------------------------------- */

/* Starts one operation on d that must run after `waits` (points of any
 * device): returns the command buffer to record it into, after a barrier
 * that orders it after all earlier work of d. Work of other devices it
 * waits for is submitted first (their batches flushed). */
int hpl__batch_begin(hpl_context *ctx, hpl__device *d, const hpl__point *waits, int count, VkCommandBuffer *cb);
/* The same, for an operation that also needs the transfer lane's work up
 * to value xfer (0: none). */
int hpl__batch_begin_after(hpl_context *ctx, hpl__device *d, const hpl__point *waits, int count, uint64_t xfer,
                           VkCommandBuffer *cb);
/* hpl__ring_trim for d's rings (its compute queue's and its lane's), the
 * buffer begun ahead included (inflight.c, once work is done). */
void hpl__device_trim(hpl__device *d, uint32_t keep);
/* Room for the next n operations recorded on d (before the first of an
 * eval's subkernels records: on any error nothing runs): a command buffer
 * each on its queue and on its transfer lane, and a gate request each on
 * its queue, so that recording them allocates nothing. */
int hpl__device_reserve(hpl_context *ctx, hpl__device *d, uint32_t n);
/* Ends the operation begun last on d: *at is its point. May submit. Call it
 * also after a failure while recording (what was recorded is harmless:
 * copies of valid data into invalid places). */
int hpl__batch_end(hpl_context *ctx, hpl__device *d, hpl__point *at);
/* The same, submitting d's batch at once even while d is busy: another
 * device waits for this operation (it pushes rows, push.h). Waiting for the
 * device to idle would only hand the submission to whichever comes first,
 * the progress thread or that device's flush, under d's batch lock. */
int hpl__batch_end_now(hpl_context *ctx, hpl__device *d, hpl__point *at);
/* Submits d's open batch, if any. */
int hpl__batch_flush(hpl__device *d);
/* The same, with d->batch_lock held. */
int hpl__batch_flush_locked(hpl__device *d);
/* Submits d's open batch, then one submission that waits (on the device)
 * for an external timeline semaphore of d's VkDevice (the application's) to
 * reach value: *at is its point, after which hplvk's later work on d runs. */
int hpl__submit_after_external(hpl_context *ctx, hpl__device *d, VkSemaphore semaphore, uint64_t value,
                               hpl__point *at);
/* HPL_OK, or d's sticky error ("failed earlier") recorded as this thread's. */
int hpl__device_check(const hpl__device *d);
/* Why d failed, for messages: " (...)" into buf, or "" when unknown. */
const char *hpl__device_failure_cause(const hpl__device *d, char *buf, size_t size);
/* What lane work that must follow `points` waits for: d's compute value
 * (*after, raised), and for points of other devices not reached yet a lane
 * gate value (*gate; 0: none) requested from the progress thread. */
int hpl__lane_gate_for(hpl_context *ctx, hpl__device *d, const hpl__point *points, int count, uint64_t *after,
                       uint64_t *gate);
/* The compute value of d's latest work recorded (submitted or in its open
 * batch). */
uint64_t hpl__device_recorded(hpl__device *d);
void hpl__barrier_all(VkCommandBuffer cb);
void hpl__barrier_to_host(VkCommandBuffer cb);

/* ---- host waits ---------------------------------------------------------- */

/* Blocks until d's timeline reaches value (spin first); fails at once
 * when d failed. */
VkResult hpl__timeline_wait(hpl__device *d, uint64_t value);
/* Blocks until point p is reached (spin first). */
VkResult hpl__point_wait(hpl_context *ctx, hpl__point p);
/* Host waits for every point (releasing the context lock meanwhile). */
int hpl__wait_points(hpl_context *ctx, const hpl__point *points, int count);
/* The same without letting go of the context lock, for a caller in the
 * middle of an operation (staging.c); each device's batch is flushed first
 * where the point is in it. */
int hpl__wait_points_held(hpl_context *ctx, const hpl__point *points, int count);
int hpl__wait_idle(hpl_context *ctx);

#endif
