/* The progress thread (progress.c): opens a device's gate once work of
 * other devices it waits for is done, and runs a device's watch (an action
 * its requester gave) once the device's work before it is done. */
#ifndef HPL_PROGRESS_H
#define HPL_PROGRESS_H

#include "engine.h"

int hpl__progress_start(hpl_context *ctx);
/* Serves every queued request, then ends the thread. */
void hpl__progress_stop(hpl_context *ctx);
/* What a watch does once its points are reached, on the progress thread
 * (no lock of the progress thread held): submit.c's flush of a batch. */
typedef void (*hpl__progress_fn)(void *arg);
/* Once every point is reached, the progress thread signals gate `timeline`
 * (coherence.h: a device's index for its compute gate, HPL__LANE + it for
 * its lane's) with value. Requests are served in the order their points are
 * reached, a gate's requests in the order they came (their values
 * increase). */
int hpl__progress_gate(hpl_context *ctx, int timeline, uint64_t value, const hpl__point *points, int count);
/* Once every point is reached, calls fn(arg) for device, in the order of
 * the other requests as above. A device has one watch pending at most:
 * another one meanwhile is dropped (the pending one's action then covers
 * it: submit.c's flushes the batch as it is then). */
int hpl__progress_watch(hpl_context *ctx, int device, const hpl__point *points, int count, hpl__progress_fn fn,
                        void *arg);
/* Room for n more gate requests of `timeline`: that many enqueues of them
 * after it cannot fail. */
int hpl__progress_reserve(hpl_context *ctx, int timeline, uint32_t n);
/* Frees the gate queues that are empty and hold room for more than `keep`
 * (inflight.c, once work is done). */
void hpl__progress_trim(hpl_context *ctx, uint32_t keep);

#endif
