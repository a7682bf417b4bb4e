/* Opening and closing the context's devices: hplvk's own (device.c), the
 * application's (interop.c), and the timelines they share (peer.c). */
#ifndef HPL_DEVICE_H
#define HPL_DEVICE_H

#include "engine.h"

/* device.c */
int hpl__devices_open(hpl_context *ctx, const char *spec);
void hpl__devices_close(hpl_context *ctx);
void hpl__physical_info(VkPhysicalDevice pd, uint32_t index, hpl_device_info *out);
/* The HPL__FEATURE_* physical device pd supports. */
uint32_t hpl__physical_features(VkPhysicalDevice pd);
/* First step of opening device d as number `index`: physical device number
 * `physical` of the context, its properties. */
void hpl__device_describe(hpl_context *ctx, hpl__device *d, int index, int physical);
/* Last step, shared by devices hplvk creates and the application's: once
 * d->device, its queue and d->features are set, makes hplvk's objects on it
 * (timelines, command pool, layouts, pipeline cache, memory types). */
int hpl__device_setup(hpl_context *ctx, hpl__device *d);

/* peer.c: devices waiting on each other's timelines directly */
struct hpl__devspec_entry;
/* Should device i of the list make its timeline exportable (another entry
 * opens the same physical device, its driver shares timelines as opaque fds,
 * validation is off, HPLVK_PEER_SEMAPHORES is not 0)? Before it is made. */
bool hpl__peer_wanted(const hpl_context *ctx, const struct hpl__devspec_entry *entries, int count, int i);
/* Once every device exists: imports each exportable timeline into the other
 * devices of its physical device (hpl__device.peer). Failures leave a pair
 * on the gate. */
void hpl__peers_open(hpl_context *ctx);
/* Destroys the imports (each device idle first); before the devices go. */
void hpl__peers_close(hpl_context *ctx);
/* How many other devices' timelines `device` waits on directly. */
int hpl__peer_count(const hpl_context *ctx, int device);

/* interop.c: opens the application's devices (hpl_context_desc.vulkan) as
 * the context's devices, after checking what hplvk needs. */
int hpl__devices_adopt(hpl_context *ctx, const hpl_vulkan_desc *vk);

#endif
