/* The transfer lane: uploads on a device's transfer queue (lane.c). */
#ifndef HPL_LANE_H
#define HPL_LANE_H

#include "engine.h"

/* Uploads of an operation smaller than this go in its compute submission
 * (measured on the H200: see samples/bench/RESULTS.md). */
#define HPL__LANE_MIN_BYTES (4u << 20)
/* Opens d's transfer lane when it has a dedicated transfer queue (or when
 * HPLVK_TRANSFER_LANE says so); leaves it off otherwise. */
int hpl__lane_open(hpl__device *d);
void hpl__lane_close(hpl__device *d);
/* Begins a lane command buffer (for uploads). */
int hpl__lane_begin(hpl__device *d, VkCommandBuffer *cb);
/* Submits it after d's compute work up to compute value `after` (0: none;
 * d's open batch is submitted first when it holds that work) and, when
 * `gate` is not 0, after the lane's gate reaches it (hpl__lane_gate_for);
 * *value is its point on the lane's timeline. */
int hpl__lane_submit(hpl__device *d, uint64_t after, uint64_t gate, uint64_t *value);
/* Can work on d's lane that must follow `points` wait for them by waiting
 * on d's compute timeline alone? Raises *after to the compute value it must
 * follow; false when a point of another device is not reached yet (that
 * work goes through the compute queue's gate). */
bool hpl__lane_after(hpl_context *ctx, const hpl__device *d, const hpl__point *points, int count, uint64_t *after);

#endif
