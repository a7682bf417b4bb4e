/* Holding a device for tests that need it busy, deterministically (unit
 * tests: it takes the VkDevice from engine.h). The application's "read"
 * of a (sub)array, released (hpl_array_vulkan_release) with a timeline
 * semaphore of the test that only the host signals: a point pending on the
 * device's queue that cannot complete before hold_release, and everything
 * submitted there after it waits too. No clock decides what is busy. */
#ifndef HPLVK_TEST_HOLD_H
#define HPLVK_TEST_HOLD_H

#include "engine.h"
#include "harness.h"
#include "hplvk_vulkan.h"

#include <pthread.h>

typedef struct hold {
    hpl_context *ctx;
    int device;
    VkSemaphore semaphore;
    bool released;
} hold;

/* Holds `device` with the application's read of `view` there, complete only
 * once the test signals. */
static inline void hold_begin(hold *h, hpl_context *ctx, int device, hpl_array view)
{
    *h = (hold){.ctx = ctx, .device = device};
    VkSemaphoreTypeCreateInfo type = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
    CHECK(vkCreateSemaphore(ctx->devices[device].device, &ci, NULL, &h->semaphore) == VK_SUCCESS,
          "vkCreateSemaphore");
    hpl_vulkan_buffer b;
    CHECK_OK(hpl_array_vulkan_acquire(ctx, view, device, HPL_READ, &b));
    CHECK_OK(hpl_array_vulkan_release(ctx, view, device, h->semaphore, 1));
}

/* Lets the held work complete (once; from any thread). Under validation
 * hplvk serialises its timeline calls (vk.c): this signal takes the same
 * lock. */
static inline void hold_release(hold *h)
{
    if (__atomic_exchange_n(&h->released, true, __ATOMIC_ACQ_REL))
        return;
    hpl__device *d = &h->ctx->devices[h->device];
    VkSemaphoreSignalInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = h->semaphore, .value = 1};
    if (d->semaphore_lock)
        pthread_mutex_lock(d->semaphore_lock);
    CHECK(vkSignalSemaphore(d->device, &si) == VK_SUCCESS, "vkSignalSemaphore");
    if (d->semaphore_lock)
        pthread_mutex_unlock(d->semaphore_lock);
}

/* After hpl_finish: nothing waits on the semaphore any more. */
static inline void hold_end(hold *h)
{
    hold_release(h);
    CHECK_OK(hpl_finish(h->ctx));
    vkDestroySemaphore(h->ctx->devices[h->device].device, h->semaphore, NULL);
}

#endif
