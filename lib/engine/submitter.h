/* Queue submission (submitter.c): a device's submit thread, and what
 * stands in for a refused submission. */
#ifndef HPL_SUBMITTER_H
#define HPL_SUBMITTER_H

#include "engine.h"

/* One submission of a device's work: a command buffer signalling value on
 * a timeline after waits (submitter.c). */
#define HPL__SUBMIT_MAX_WAITS (3 + HPL__MAX_DEVICES)
typedef struct hpl__submission {
    VkQueue queue;
    VkCommandBuffer cb;
    VkSemaphore signal;
    uint64_t value;
    uint32_t wait_count;
    VkPipelineStageFlags stage; /* of every wait */
    VkSemaphore waits[HPL__SUBMIT_MAX_WAITS];
    uint64_t wait_values[HPL__SUBMIT_MAX_WAITS];
    /* The other device whose compute timeline a wait is on (peer.c), NULL
     * for none: submitter.c submits after that device's signal of it. */
    struct hpl__device *producers[HPL__SUBMIT_MAX_WAITS];
} hpl__submission;
static inline void hpl__submission_wait(hpl__submission *s, VkSemaphore semaphore, uint64_t value,
                                        struct hpl__device *producer)
{
    s->producers[s->wait_count] = producer;
    s->waits[s->wait_count] = semaphore;
    s->wait_values[s->wait_count++] = value;
}

/* Starts each device's (HPLVK_SUBMIT_THREAD), once the devices exist. */
int hpl__submitters_start(hpl_context *ctx);
/* Submits what each FIFO holds, then ends the threads; before any device
 * closes. */
void hpl__submitters_stop(hpl_context *ctx);
/* Submits s on its queue: hands it to d's submit thread, or submits it at
 * once without one. Under d's batch lock for the device's own timelines, so
 * that values reach each queue in order. The value is signalled whatever
 * happens: a refused submission marks d lost, and its value and every later
 * one are signalled from the host (by the thread, started then where there
 * was none). Returns VK_SUCCESS once handed over, or what the driver
 * returned when it refused at once. */
VkResult hpl__submit(hpl__device *d, const hpl__submission *s);
/* Returns once d's submit thread has made every submission handed to it:
 * before the application may wait for one of its values on the same queue
 * (a wait on a queue for a signal behind it there never ends). */
void hpl__submit_drain(hpl__device *d);
/* Frees d's FIFO when it is empty and holds room for more than `keep`
 * (inflight.c, once work is done). */
void hpl__submit_trim(hpl__device *d, uint32_t keep);
/* What d's first failed vkQueueSubmit returned (VK_SUCCESS: none). */
VkResult hpl__submit_failure(const hpl__device *d);
/* vkQueueSubmit on queue (one of d's) inside d's queue lock, and the
 * application's when it gave one. */
VkResult hpl__queue_submit_on(hpl__device *d, VkQueue queue, uint32_t count, const VkSubmitInfo *submits,
                              VkFence fence);

#endif
