/* Vulkan calls with hplvk's conventions (vk.c): a VkResult as an hplvk
 * error, timeline semaphores, the values devices' timelines reached, host
 * waits on them. */
#ifndef HPL_VK_H
#define HPL_VK_H

#include "engine.h"

/* Records a failed Vulkan call `what` as this thread's error; returns its code. */
int hpl__vk_error(VkResult r, const char *what);
/* A timeline semaphore of d starting at 0; exportable as an opaque fd
 * (peer.c) when asked. */
int hpl__timeline_create(hpl__device *d, bool exportable, VkSemaphore *out);
/* The value a timeline semaphore of d has reached, into *value (0 on failure). */
VkResult hpl__semaphore_get(hpl__device *d, VkSemaphore semaphore, uint64_t *value);
/* The same, 0 on failure. */
uint64_t hpl__semaphore_value(hpl__device *d, VkSemaphore semaphore);
/* Signals a timeline semaphore of d from the host. */
void hpl__semaphore_signal(hpl__device *d, VkSemaphore semaphore, uint64_t value);
/* Blocks until a timeline semaphore of d reaches value (spin first);
 * fails at once when d failed. */
VkResult hpl__semaphore_wait(hpl__device *d, VkSemaphore semaphore, uint64_t value);
/* The same, but even after d failed (what a destroy needs): fails only
 * when the driver does. The value must be submitted or signalled from the
 * host. */
VkResult hpl__semaphore_settle(hpl__device *d, VkSemaphore semaphore, uint64_t value);
/* The value d's compute timeline reached (0 on failure). */
uint64_t hpl__device_completed(hpl__device *d);
/* The value a timeline reached (0 on failure). */
uint64_t hpl__timeline_completed(hpl_context *ctx, int timeline);
/* Signals d's gate, or its lane's, from the host (the progress thread). */
void hpl__gate_signal(hpl__device *d, bool lane, uint64_t value);

#endif
