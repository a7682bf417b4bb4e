/* The progress thread (progress.c): opens a device's gate once work of
 * other devices it waits for is done, and submits a device's open batch
 * once the device's work before it is done. */
#ifndef HPL_PROGRESS_H
#define HPL_PROGRESS_H

#include "engine.h"

int hpl__progress_start(hpl_context *ctx);
void hpl__progress_stop(hpl_context *ctx);
typedef enum hpl__progress_kind {
    HPL__PROGRESS_GATE,  /* signal a gate with gate_value: `device` is a timeline (coherence.h),
                          * the device's index for its compute gate, HPL__LANE + it for its lane's */
    HPL__PROGRESS_FLUSH, /* submit the device's open batch */
} hpl__progress_kind;
/* Once every point is reached, does `kind` for device: requests are served
 * in the order their points are reached, a device's gate requests in the
 * order they came (their values increase). A device has one flush watch
 * pending at most: another one meanwhile is dropped (hpl__batch_watched
 * flushes the batch then anyway). */
int hpl__progress_enqueue(hpl_context *ctx, hpl__progress_kind kind, int device, uint64_t gate_value,
                          const hpl__point *points, int count);
/* Room for n more gate requests of `timeline`: that many enqueues of them
 * after it cannot fail. */
int hpl__progress_reserve(hpl_context *ctx, int timeline, uint32_t n);
/* Frees the gate queues that are empty and hold room for more than `keep`
 * (inflight.c, once work is done). */
void hpl__progress_trim(hpl_context *ctx, uint32_t keep);

#endif
