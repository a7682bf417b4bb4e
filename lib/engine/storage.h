/* A root array's memories below the array API (storage.c): its host
 * storage, its imports into devices, its buffers. */
#ifndef HPL_STORAGE_H
#define HPL_STORAGE_H

#include "engine.h"

/* Maps the root's host storage (page-aligned zeros) unless it has some. */
int hpl__host_storage_ensure(hpl__array *root);
/* Imports the host storage (made first if needed) into device: a transfer
 * is then one DMA; on a zero-copy device, kernels use it in place. */
int hpl__host_storage_import(hpl_context *ctx, hpl__array *root, int device);
/* Frees the imports and the storage the library mapped (destruction). */
void hpl__host_storage_free(hpl_context *ctx, hpl__array *root);
/* The device buffer of root that is coherence memory `slot`, or NULL. */
hpl__instance *hpl__instance_of(hpl__array *root, int slot);

#endif
