/* Moving regions of a root between its memories: device to host
 * (transfer.c), through staging slots (staging.c), device to device
 * (exchange.c), and counting what moved (stats.c). */
#ifndef HPL_TRANSFER_H
#define HPL_TRANSFER_H

#include "engine.h"

/* transfer.c: moving regions between memories */
/* Copies t's region from a device memory to the host storage as its own
 * submission on that device, and records it. */
int hpl__stage_to_host(hpl_context *ctx, hpl__array *root, const hpl__transfer *t);
/* Records download t (source a memory of d) into cb: no waits, no
 * coherence (the caller's). */
void hpl__record_download(hpl_context *ctx, hpl__device *d, VkCommandBuffer cb, hpl__array *root,
                          const hpl__transfer *t);
/* Brings region of root valid into the host storage (submits copies, does
 * not wait). */
int hpl__fetch_to_host(hpl_context *ctx, hpl__array *root, const hpl__region *region);

/* stats.c */
/* Counts transfer step t (of root's elements) in its device's statistics. */
void hpl__count_transfer(hpl_context *ctx, const hpl__array *root, const hpl__transfer *t);

/* staging.c: host transfers through slots of the device's own memory */
/* Reads HPLVK_HOST_IMPORT and HPLVK_STAGING_CHUNK (context creation, before
 * zero-copy is decided: a device that may not import cannot be zero-copy). */
int hpl__staging_configure(hpl_context *ctx);
void hpl__staging_close(hpl__device *d);
/* Runs transfer t between the host storage and a buffer of a device that
 * cannot import it (hpl__host_storage_import set `staged`), chunk by chunk,
 * and records it. Returns when the host side is done: an upload's host
 * region is read, a download's written. */
int hpl__staged_upload(hpl_context *ctx, hpl__array *root, const hpl__transfer *t);
int hpl__staged_download(hpl_context *ctx, hpl__array *root, const hpl__transfer *t);

/* exchange.c: device -> device through the host, chunked and pipelined */
/* Reads HPLVK_EXCHANGE_CHUNK (context creation). */
int hpl__exchange_configure(hpl_context *ctx);
/* The chunk size of a transfer of `bytes` from device a to device b; 0: it
 * goes whole. */
uint64_t hpl__exchange_chunk_bytes(const hpl_context *ctx, const hpl__device *a, const hpl__device *b,
                                   uint64_t bytes);
/* Runs the large device -> device pieces of plan (a step from a device
 * buffer to the host followed by one from the host to another device's
 * buffer, of the same region) at once, in chunks: for each, a copy on the
 * source device and a copy on the destination device that waits for it
 * only, each its own submission. Records them in root's coherence state and
 * statistics and removes them from plan; the destination's later work
 * follows on its queue. */
int hpl__exchange_plan(hpl_context *ctx, hpl__array *root, hpl__transfer_plan *plan);

#endif
