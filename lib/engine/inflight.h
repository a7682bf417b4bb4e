/* The bound on work in flight, and giving back what a burst grew
 * (inflight.c). */
#ifndef HPL_INFLIGHT_H
#define HPL_INFLIGHT_H

#include "engine.h"

/* Reads the bound (hpl_context_desc.max_in_flight, else
 * HPLVK_MAX_IN_FLIGHT, else the default) once the devices are open. */
int hpl__inflight_configure(hpl_context *ctx, uint32_t desc_max);
/* Operations recorded on d and not completed (the context lock held). */
uint64_t hpl__inflight_count(hpl__device *d);
/* At the start of a call that records work (the context lock held, no
 * operation begun): waits while a device has max_in_flight operations in
 * flight or more, until it has fewer, releasing the lock meanwhile (look
 * handles up after it). Fails only when a device fails meanwhile. */
int hpl__inflight_wait(hpl_context *ctx);
/* Gives back what bursts of work grew and no longer use: command buffers,
 * argument chunks, FIFO room (hpl_finish). */
void hpl__inflight_trim(hpl_context *ctx);

#endif
