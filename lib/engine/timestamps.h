/* GPU timestamps of the event log, in host time (timestamps.c). */
#ifndef HPL_TIMESTAMPS_H
#define HPL_TIMESTAMPS_H

#include "engine.h"

/* Learns whether d can time commands (after its logical device exists). */
void hpl__timestamps_open(hpl_context *ctx, hpl__device *d);
void hpl__timestamps_close(hpl__device *d);
/* Makes the query pool (first time) and adds a calibration point. Waits
 * for a tiny submission on devices without VK_EXT_calibrated_timestamps. */
int hpl__timestamps_start(hpl__device *d);
/* Adds a calibration point when the last is older than a second and that
 * costs no wait (VK_EXT_calibrated_timestamps); never waits. */
void hpl__timestamps_refresh(hpl__device *d);
/* Takes a free query pair, reset; false when the device has no timestamps
 * or every pair is in use. */
bool hpl__timestamps_take(hpl__device *d, uint32_t *pair);
void hpl__timestamps_give(hpl__device *d, uint32_t pair);
/* Records the write of the pair's begin (end = false) or end timestamp:
 * the moment every command submitted before it has completed. */
void hpl__timestamps_write(hpl__device *d, VkCommandBuffer cb, uint32_t pair, bool end);
/* Reads a written pair as extended ticks (near_ns: a host time close to
 * when it ran, to extend ticks of fewer than 64 valid bits); false when
 * it is not available. Never waits. */
bool hpl__timestamps_read(hpl__device *d, uint32_t pair, uint64_t near_ns, uint64_t *begin, uint64_t *end);
/* Host CLOCK_MONOTONIC ns of an extended tick. */
uint64_t hpl__timestamps_to_ns(const hpl__device *d, uint64_t ticks);

#endif
