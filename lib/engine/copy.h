/* Recording copies of a root's elements between layouts (copy.c), logged
 * in the event log when it is on. */
#ifndef HPL_COPY_H
#define HPL_COPY_H

#include "engine.h"
#include "events.h"

/* Where elements of a root live in one buffer: the buffer holds `box` dense
 * row-major from byte `base`, at device address `address` (0: the buffer
 * has none, and copies to or from it are vkCmdCopyBuffer regions). */
typedef struct hpl__layout {
    VkBuffer buffer;
    VkDeviceSize base;
    VkDeviceAddress address;
    hpl__box box;
} hpl__layout;
hpl__layout hpl__layout_of(hpl__array *root, int slot, int device);
/* copy.c: the copy kernel (shaders/copy.comp) for boxes of many short runs,
 * per device: HPLVK_STRIDED_COPY=auto (GPUs), kernel or dma. */
int hpl__copy_open(hpl_context *ctx, hpl__device *d);
void hpl__copy_close(hpl__device *d);
/* Records the copy of `region` (destination coordinates) from src to dst on
 * d's compute queue; element x of dst takes element x + shift of src. Boxes
 * of many short runs go by the copy kernel, the rest as copy regions. */
void hpl__record_copy(hpl__device *d, VkCommandBuffer cb, const hpl__array *root, const hpl__region *region,
                      const hpl__layout *src, const hpl__layout *dst, const int64_t shift[3]);
/* Would hpl__record_copy run a copy kernel for any box of region? Such a
 * copy stays off the transfer lane, whose queue runs no kernels. */
bool hpl__copy_by_kernel(const hpl__device *d, const hpl__array *root, const hpl__region *region,
                         const hpl__layout *src, const hpl__layout *dst);
/* Calls fn for each run of contiguous elements of box x (destination
 * coordinates) between a source and a destination holding boxes src and dst
 * dense row-major; element e of dst takes e + shift of src. Offsets in
 * elements from each box's first element. Whole rows or planes make one run. */
typedef void (*hpl__run_fn)(void *user, uint64_t src_offset, uint64_t dst_offset, uint64_t count);
void hpl__box_runs(const hpl__box *x, const hpl__box *src, const hpl__box *dst, const int64_t shift[3],
                   hpl__run_fn fn, void *user);
/* Host memory version of the same: copies box x from src (holding src_box)
 * to dst (holding dst_box). */
void hpl__host_copy(const hpl__box *x, const uint8_t *src, const hpl__box *src_box, uint8_t *dst,
                    const hpl__box *dst_box, const int64_t shift[3], size_t esize);
extern const int64_t hpl__no_shift[3]; /* {0, 0, 0} */
/* Number of elements of a box and its byte offset inside a layout box. */
uint64_t hpl__box_offset(const hpl__box *outer, const uint64_t point[3]);

/* hpl__record_copy of `region` of root from memory slot src to memory slot
 * dst on device d (HPL__HOST or a buffer of d), logged under root's name
 * (an assignment's destination). The log brackets the copy: it never calls
 * the transfer code itself, which sits above it. */
static inline void hpl__record_copy_logged(hpl_context *ctx, hpl__device *d, VkCommandBuffer cb,
                                           const hpl__array *root, const hpl__region *region, int src, int dst,
                                           const hpl__layout *from, const hpl__layout *to, const int64_t shift[3])
{
    hpl__event *e = ctx->events_on ? hpl__events_copy_begin_(ctx, d, cb, root, region, src, dst) : NULL;
    uint64_t kernels = d->stats.copy_kernels;
    hpl__record_copy(d, cb, root, region, from, to, shift);
    if (e) {
        e->u.copy.kernel_boxes = (uint32_t)(d->stats.copy_kernels - kernels);
        hpl__events_copy_end_(d, cb, e);
    }
}

#endif
