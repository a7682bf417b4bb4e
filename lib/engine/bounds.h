/* Bounds checks of kernels (hplvk.h chapter 6c): which devices check,
 * their reports (bounds.c). */
#ifndef HPL_BOUNDS_H
#define HPL_BOUNDS_H

#include "engine.h"

/* Bytes of a device's bounds report (hplvk.glsl's hplvk_report_t: 80). */
#define HPL__BOUNDS_REPORT_BYTES 128u
/* Decides which devices check (asked: hpl_context_desc.bounds_check; else
 * HPLVK_BOUNDS_CHECK; validation; CPU and zero-copy devices always) and
 * makes their reports. After hpl__devices_configure. */
int hpl__bounds_configure(hpl_context *ctx, bool asked);
void hpl__bounds_close(hpl__device *d);
/* After a checking device's dispatches: their report writes made visible
 * to the host. Nothing on other devices. */
void hpl__bounds_barrier(const hpl__device *d, VkCommandBuffer cb);
/* Reads and clears the reports of work the host has waited for: the first
 * stray access found is HPL_ERROR_KERNEL_OUT_OF_BOUNDS naming the kernel,
 * the device, the element, the array and the part (also logged as an
 * error); HPL_OK when there is none. Under the context lock. */
int hpl__bounds_poll(hpl_context *ctx);

#endif
