/* Which buffers each device holds, and eviction (residency.c). */
#ifndef HPL_RESIDENCY_H
#define HPL_RESIDENCY_H

#include "engine.h"

/* Starts an operation: instances pinned for it stay until the next one. */
void hpl__operation_begin(hpl_context *ctx);
/* The coherence memory through which device `device` accesses `box` of root:
 * the host storage on a zero-copy device, else a buffer of root on the device
 * holding the box (allocated, after evicting least recently used unpinned
 * buffers, when there is none). Pins it for the current operation. */
int hpl__array_memory_for(hpl_context *ctx, hpl__array *root, int device, const hpl__box *box, int *slot);
/* Evicts one instance: saves what is valid only there, waits for its work,
 * frees it. Holds the lock throughout. */
int hpl__instance_evict(hpl_context *ctx, hpl__array *root, hpl__instance *inst);
void hpl__instance_free(hpl_context *ctx, hpl__array *root, hpl__instance *inst);
/* Sets each device's memory limit and zero-copy mode (context creation). */
int hpl__devices_configure(hpl_context *ctx, const hpl_context_desc *desc);

#endif
