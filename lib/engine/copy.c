/* Copying regions of an array between two layouts: where its elements lie
 * in the host storage (imported into a device) or a device buffer, the runs
 * of contiguous elements of a box, and recording those runs as
 * vkCmdCopyBuffer regions, or copying them on the host. */
#include "internal.h"

#include <string.h>

uint64_t hpl__box_offset(const hpl__box *outer, const uint64_t point[3])
{
    uint64_t n1 = outer->hi[1] - outer->lo[1], n2 = outer->hi[2] - outer->lo[2];
    return ((point[0] - outer->lo[0]) * n1 + (point[1] - outer->lo[1])) * n2 + (point[2] - outer->lo[2]);
}

hpl__layout hpl__layout_of(hpl__array *root, int slot, int device)
{
    if (slot == HPL__HOST) {
        const hpl__import *im = &root->imports[device];
        return (hpl__layout){.buffer = im->buffer, .base = im->offset, .box = root->coherence.whole};
    }
    const hpl__instance *inst = hpl__instance_of(root, slot);
    return (hpl__layout){.buffer = inst->buffer, .base = 0, .box = inst->box};
}

/* ---- recording copies -------------------------------------------------- */

#define COPY_BATCH 64

typedef struct copy_batch {
    VkCommandBuffer cb;
    VkBuffer src, dst;
    VkBufferCopy regions[COPY_BATCH];
    uint32_t count;
} copy_batch;

static void batch_flush(copy_batch *b)
{
    if (b->count)
        vkCmdCopyBuffer(b->cb, b->src, b->dst, b->count, b->regions);
    b->count = 0;
}

static void batch_add(copy_batch *b, VkDeviceSize src, VkDeviceSize dst, VkDeviceSize size)
{
    VkBufferCopy *last = b->count ? &b->regions[b->count - 1] : NULL;
    if (last && last->srcOffset + last->size == src && last->dstOffset + last->size == dst) {
        last->size += size; /* contiguous with the last run */
        return;
    }
    if (b->count == COPY_BATCH)
        batch_flush(b);
    b->regions[b->count++] = (VkBufferCopy){src, dst, size};
}

static uint64_t extent(const hpl__box *b, int d)
{
    return b->hi[d] - b->lo[d];
}

void hpl__box_runs(const hpl__box *x, const hpl__box *src, const hpl__box *dst, const int64_t shift[3],
                   hpl__run_fn fn, void *user)
{
    uint64_t e0 = extent(x, 0), e1 = extent(x, 1), e2 = extent(x, 2);
    bool whole_rows = e2 == extent(src, 2) && e2 == extent(dst, 2);
    bool whole_planes = whole_rows && e1 == extent(src, 1) && e1 == extent(dst, 1);
    uint64_t n0 = whole_planes ? 1 : e0, n1 = whole_rows ? 1 : e1;
    uint64_t run = whole_planes ? e0 * e1 * e2 : whole_rows ? e1 * e2 : e2;
    for (uint64_t i0 = x->lo[0]; i0 < x->lo[0] + n0; i0++) {
        for (uint64_t i1 = x->lo[1]; i1 < x->lo[1] + n1; i1++) {
            uint64_t at[3] = {i0, i1, x->lo[2]};
            uint64_t from[3] = {i0 + (uint64_t)shift[0], i1 + (uint64_t)shift[1], x->lo[2] + (uint64_t)shift[2]};
            fn(user, hpl__box_offset(src, from), hpl__box_offset(dst, at), run);
        }
    }
}

const int64_t hpl__no_shift[3] = {0, 0, 0};

typedef struct host_job {
    const uint8_t *src;
    uint8_t *dst;
    size_t esize;
} host_job;

static void host_run(void *user, uint64_t from, uint64_t to, uint64_t count)
{
    host_job *j = user;
    memcpy(j->dst + to * j->esize, j->src + from * j->esize, count * j->esize);
}

void hpl__host_copy(const hpl__box *x, const uint8_t *src, const hpl__box *src_box, uint8_t *dst,
                    const hpl__box *dst_box, const int64_t shift[3], size_t esize)
{
    host_job j = {.src = src, .dst = dst, .esize = esize};
    hpl__box_runs(x, src_box, dst_box, shift, host_run, &j);
}

typedef struct batch_job {
    copy_batch batch;
    const hpl__layout *src, *dst;
    VkDeviceSize esize;
} batch_job;

static void add_run(void *user, uint64_t from, uint64_t to, uint64_t count)
{
    batch_job *j = user;
    batch_add(&j->batch, j->src->base + from * j->esize, j->dst->base + to * j->esize, count * j->esize);
}

void hpl__record_copy(VkCommandBuffer cb, const hpl__array *root, const hpl__region *region, const hpl__layout *src,
                      const hpl__layout *dst, const int64_t shift[3])
{
    batch_job j = {.batch = {.cb = cb, .src = src->buffer, .dst = dst->buffer},
                   .src = src,
                   .dst = dst,
                   .esize = hpl_type_size(root->type)};
    for (uint32_t i = 0; i < region->count; i++)
        hpl__box_runs(&region->boxes[i], &src->box, &dst->box, shift, add_run, &j);
    batch_flush(&j.batch);
}

