/* Under validation: kernel writes outside owned boxes (hplvk.h section 7b).
 *
 * A subkernel of a multi-device eval may write only the part of each
 * argument its device owns (its domain is that part). A write into a halo
 * is discarded on a device with its own memory and races with the owner on
 * a zero-copy device, so a program breaking the rule gives different
 * results on different device lists. With validation on, a subkernel that
 * writes a part with a halo gets the halo copied aside before and after its
 * dispatches; once it is done the copies are compared, and a difference is
 * reported as an error naming the kernel, the array and the first element
 * written. */
#include "ghost_check.h"

#include "copy.h"
#include "memory.h"
#include "subkernel.h"
#include "submit.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Ghost boxes spanning more than this are not checked (the copies would
 * cost more than validation should). */
#define GHOST_CHECK_MAX_BYTES (64u << 20)

static uint64_t box_volume(const hpl__box *b)
{
    return (b->hi[0] - b->lo[0]) * (b->hi[1] - b->lo[1]) * (b->hi[2] - b->lo[2]);
}

static hpl__box region_bounds(const hpl__region *r)
{
    hpl__box b = r->boxes[0];
    for (uint32_t i = 1; i < r->count; i++)
        for (int d = 0; d < 3; d++) {
            b.lo[d] = HPL__MIN(b.lo[d], r->boxes[i].lo[d]);
            b.hi[d] = HPL__MAX(b.hi[d], r->boxes[i].hi[d]);
        }
    return b;
}

static void record_snapshot(hpl__device *d, VkCommandBuffer cb, hpl__ghost_watch *w, int which)
{
    hpl__layout from = hpl__layout_of(w->root, w->slot, d->index);
    hpl__layout to = {.buffer = w->buffer[which], .base = 0, .box = w->bounds};
    hpl__record_copy(d, cb, w->root, &w->region, &from, &to, hpl__no_shift);
}

static int watch_add(hpl__ghost_check *gc, hpl__device *d, const hpl__arg_view *v)
{
    hpl__ghost_watch *w = &gc->watches[gc->count];
    *w = (hpl__ghost_watch){.root = v->at.root, .slot = v->slot};
    hpl__region_init(&w->region);
    gc->count++; /* from here on hpl__ghost_check_free releases it */
    /* The halo the split added: elements of the argument's owned box that
     * another subkernel owns (an argument's own ghost part keeps the rule of
     * owned subarrays: writes there are not counted). */
    hpl__box halo;
    if (hpl__box_intersect(&v->at.box, &v->whole_owned, &halo) &&
        (!hpl__region_set_box(&w->region, &halo) || !hpl__region_subtract_box(&w->region, &v->at.owned)))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (hpl__region_empty(&w->region)) {
        hpl__region_free(&w->region);
        gc->count--;
        return HPL_OK;
    }
    w->bounds = region_bounds(&w->region);
    uint64_t bytes = box_volume(&w->bounds) * hpl_type_size(w->root->type);
    if (bytes > GHOST_CHECK_MAX_BYTES) {
        hpl__region_free(&w->region);
        gc->count--;
        return HPL_OK;
    }
    w->bytes = bytes;
    for (int i = 0; i < 2; i++) {
        VkBuffer buffer;
        VkDeviceMemory memory;
        int rc = hpl__buffer_create(d, bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, d->upload_memory_type, false,
                                    &buffer, &memory);
        if (rc != HPL_OK)
            return rc;
        w->buffer[i] = buffer;
        w->memory[i] = memory;
        if (vkMapMemory(d->device, memory, 0, VK_WHOLE_SIZE, 0, &w->map[i]) != VK_SUCCESS)
            return hpl__fail(HPL_ERROR_VULKAN, "vkMapMemory failed for a ghost-write check");
        memset(w->map[i], 0, bytes); /* elements outside the region compare equal */
    }
    return HPL_OK;
}

int hpl__ghost_check_begin(hpl_context *ctx, const hpl__subkernel *s, VkCommandBuffer cb, hpl__ghost_check *gc)
{
    gc->count = 0;
    if (!ctx->validation)
        return HPL_OK;
    const hpl__reflection *r = &s->variant->reflection;
    int rc = HPL_OK;
    for (int a = 0; rc == HPL_OK && a < r->arg_count; a++) {
        const hpl__arg_view *v = &s->views[a];
        if (v->array && v->is_part && (r->args[a].access & HPL_WRITE) && !hpl__box_equal(&v->at.box, &v->at.owned))
            rc = watch_add(gc, s->device, v);
    }
    for (int i = 0; rc == HPL_OK && i < gc->count; i++)
        record_snapshot(s->device, cb, &gc->watches[i], 0);
    if (gc->count)
        hpl__barrier_all(cb);
    return rc;
}

void hpl__ghost_check_after(hpl__device *d, VkCommandBuffer cb, hpl__ghost_check *gc)
{
    if (!gc->count)
        return;
    hpl__barrier_all(cb);
    for (int i = 0; i < gc->count; i++)
        record_snapshot(d, cb, &gc->watches[i], 1);
    hpl__barrier_to_host(cb);
}

typedef struct compare_job {
    const hpl__ghost_watch *w;
    size_t esize;
    uint64_t differ, first;
} compare_job;

static void compare_run(void *user, uint64_t src_offset, uint64_t dst_offset, uint64_t count)
{
    (void)dst_offset;
    compare_job *j = user;
    const uint8_t *a = (const uint8_t *)j->w->map[0] + src_offset * j->esize;
    const uint8_t *b = (const uint8_t *)j->w->map[1] + src_offset * j->esize;
    if (!memcmp(a, b, count * j->esize))
        return;
    for (uint64_t e = 0; e < count; e++)
        if (memcmp(a + e * j->esize, b + e * j->esize, j->esize) && j->differ++ == 0)
            j->first = src_offset + e;
}

static void report(hpl_context *ctx, const hpl__device *d, const char *kernel, const hpl__ghost_watch *w,
                   const compare_job *j)
{
    const hpl__box *b = &w->bounds;
    uint64_t n1 = b->hi[1] - b->lo[1], n2 = b->hi[2] - b->lo[2];
    uint64_t at[3] = {b->lo[0] + j->first / (n1 * n2), b->lo[1] + j->first / n2 % n1, b->lo[2] + j->first % n2};
    hpl__log(&ctx->logger, HPL_LOG_ERROR,
             "hplvk validation: kernel '%s' on device %d wrote %" PRIu64 " element%s of array '%s' outside its owned "
             "box (first at (%" PRIu64 ", %" PRIu64 ", %" PRIu64 ") of the array): kernels must write only the "
             "elements their device owns (x.owned_lo .. x.owned_hi); such writes are discarded on devices with their "
             "own memory and race with the owner on zero-copy devices",
             kernel, d->index, j->differ, j->differ == 1 ? "" : "s", w->root->name, at[0], at[1], at[2]);
}

int hpl__ghost_check_end(hpl_context *ctx, hpl__device *d, const char *kernel, hpl__ghost_check *gc,
                         const hpl__point *at)
{
    int rc = gc->count && at ? hpl__wait_points(ctx, at, 1) : HPL_OK;
    for (int i = 0; i < gc->count; i++) {
        hpl__ghost_watch *w = &gc->watches[i];
        compare_job j = {.w = w, .esize = hpl_type_size(w->root->type)};
        for (uint32_t k = 0; rc == HPL_OK && k < w->region.count; k++)
            hpl__box_runs(&w->region.boxes[k], &w->bounds, &w->bounds, hpl__no_shift, compare_run, &j);
        if (j.differ)
            report(ctx, d, kernel, w, &j);
    }
    hpl__ghost_check_free(d, gc);
    return rc;
}

void hpl__ghost_check_free(hpl__device *d, hpl__ghost_check *gc)
{
    for (int i = 0; i < gc->count; i++) {
        hpl__ghost_watch *w = &gc->watches[i];
        for (int k = 0; k < 2; k++) {
            if (w->buffer[k])
                vkDestroyBuffer(d->device, w->buffer[k], NULL);
            if (w->memory[k])
                vkFreeMemory(d->device, w->memory[k], NULL);
        }
        hpl__region_free(&w->region);
    }
    gc->count = 0;
}
