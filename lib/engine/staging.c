/* Staged host transfers, for host storage a device cannot import: no
 * VK_EXT_external_memory_host, a pointer the driver refuses, a file mapping
 * (never imported: storage.c), or HPLVK_HOST_IMPORT=0. Copies go through a ring of
 * host-visible slots of the device's own, chunk by chunk, each chunk its own
 * submission, so that the host's memcpy of one chunk overlaps the DMA of the
 * one before: an upload fills slot k+1 while the device drains slot k, a
 * download empties slot k while the device fills slot k+1.
 *
 * The host side is synchronous: the memcpys run on the calling thread, which
 * first waits (holding the context lock: an operation is half planned) for
 * the work that writes the host region it reads, or touches the one it
 * writes. A staged transfer is slower than one DMA from imported memory; it
 * is the fallback that keeps such devices and pointers usable. */
#include "config.h"
#include "copy.h"
#include "events.h"
#include "memory.h"
#include "submit.h"
#include "transfer.h"
#include "vk.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_SLOT_BYTES (8ull << 20) /* 3 x 8 MiB per device: ~0.2-0.4 ms of DMA each */
#define MIN_SLOT_BYTES 16ull            /* one element of the largest type */
#define MAX_SLOT_BYTES (1ull << 30)

int hpl__staging_configure(hpl_context *ctx)
{
    bool import = true;
    int rc = hpl__parse_switch("HPLVK_HOST_IMPORT", getenv("HPLVK_HOST_IMPORT"), true, "stage every host transfer",
                               "import host memory where the device can", &import);
    if (rc != HPL_OK)
        return rc;
    if (!import)
        for (int i = 0; i < ctx->device_count; i++)
            ctx->devices[i].host_import = ctx->devices[i].info.host_import = false;
    const char *env = getenv("HPLVK_STAGING_CHUNK");
    uint64_t bytes = DEFAULT_SLOT_BYTES;
    rc = env && *env ? hpl__parse_size("HPLVK_STAGING_CHUNK", env, &bytes) : HPL_OK;
    if (rc == HPL_OK && (bytes < MIN_SLOT_BYTES || bytes > MAX_SLOT_BYTES))
        rc = hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "HPLVK_STAGING_CHUNK='%.40s' is not between %llu bytes and 1G", env,
                       MIN_SLOT_BYTES);
    ctx->staging_chunk = bytes / MIN_SLOT_BYTES * MIN_SLOT_BYTES; /* every element size divides it */
    return rc;
}

/* Plain host memory the device reads and writes over the bus: cached (the
 * host reads downloads back), coherent (no flushes), not device-local (a
 * resizable BAR is slow to read from the host). */
static int staging_memory_type(const hpl__device *d)
{
    const VkMemoryPropertyFlags visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < d->memory_props.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = d->memory_props.memoryTypes[i].propertyFlags;
        if ((f & visible) != visible)
            continue;
        int score = (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT ? 2 : 0) + (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT ? 0 : 1);
        if (score > best_score) {
            best = (int)i;
            best_score = score;
        }
    }
    return best;
}

static int staging_open(hpl_context *ctx, hpl__device *d)
{
    hpl__staging *s = &d->staging;
    if (s->map)
        return HPL_OK;
    int type = staging_memory_type(d);
    if (type < 0)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "device %s has no host-visible coherent memory to stage copies in",
                         d->info.name);
    VkDeviceSize bytes = ctx->staging_chunk * HPL__STAGING_SLOTS;
    int rc = hpl__buffer_create(d, bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                (uint32_t)type, d->copy_kernel, &s->buffer, &s->memory);
    if (rc != HPL_OK)
        return rc;
    if (d->copy_kernel) { /* the copy kernel packs strided boxes into the slots */
        VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = s->buffer};
        s->address = vkGetBufferDeviceAddress(d->device, &ai);
    }
    VkResult r = vkMapMemory(d->device, s->memory, 0, VK_WHOLE_SIZE, 0, (void **)&s->map);
    if (r != VK_SUCCESS) {
        hpl__staging_close(d);
        return hpl__vk_error(r, "vkMapMemory (staging)");
    }
    s->slot_bytes = ctx->staging_chunk;
    return HPL_OK;
}

void hpl__staging_close(hpl__device *d)
{
    hpl__staging *s = &d->staging;
    if (s->buffer)
        vkDestroyBuffer(d->device, s->buffer, NULL);
    if (s->memory)
        vkFreeMemory(d->device, s->memory, NULL);
    memset(s, 0, sizeof *s);
}

/* The next slot, once the device is done with it. */
static int slot_take(hpl_context *ctx, hpl__device *d, uint32_t *slot)
{
    hpl__staging *s = &d->staging;
    *slot = s->next;
    s->next = (s->next + 1) % HPL__STAGING_SLOTS;
    return hpl__wait_points_held(ctx, &(hpl__point){d->index, s->free_at[*slot]}, 1);
}

/* One staged transfer: t between the host storage and a buffer of d. */
typedef struct staged {
    hpl_context *ctx;
    hpl__array *root;
    hpl__device *d;
    const hpl__transfer *t;
    size_t esize;
    hpl__point *waits; /* the device side's, for its first chunk */
    int wait_count;
    hpl__point at; /* the last chunk's */
    /* Downloads: the chunk submitted last, not yet copied out. */
    hpl__region pending;
    uint32_t pending_slot;
} staged;

/* Between the host storage and slot `slot`, the region's boxes packed one
 * after the other, each dense row-major. */
static void host_side(const staged *x, const hpl__region *chunk, uint32_t slot, bool to_slot)
{
    uint8_t *p = x->d->staging.map + slot * x->d->staging.slot_bytes;
    const hpl__box *whole = &x->root->coherence.whole;
    for (uint32_t i = 0; i < chunk->count; i++) {
        const hpl__box *b = &chunk->boxes[i];
        if (to_slot)
            hpl__host_copy(b, x->root->host, whole, p, b, hpl__no_shift, x->esize);
        else
            hpl__host_copy(b, p, b, x->root->host, whole, hpl__no_shift, x->esize);
        p += hpl__box_volume(b) * x->esize;
    }
}

/* Records and submits the device side of one chunk (the same packing). */
static int device_side(staged *x, const hpl__region *chunk, uint32_t slot, bool to_slot)
{
    hpl__device *d = x->d;
    VkCommandBuffer cb;
    int rc = hpl__batch_begin(x->ctx, d, x->waits, x->wait_count, &cb);
    if (rc != HPL_OK)
        return rc;
    x->wait_count = 0; /* later chunks follow on the queue */
    int src = to_slot ? x->t->src : HPL__HOST, dst = to_slot ? HPL__HOST : x->t->dst;
    hpl__event *e = x->ctx->events_on ? hpl__events_copy_begin_(x->ctx, d, cb, x->root, chunk, src, dst) : NULL;
    hpl__layout buffer = hpl__layout_of(x->root, to_slot ? src : dst, d->index);
    uint64_t kernels = d->stats.copy_kernels;
    VkDeviceSize base = slot * d->staging.slot_bytes;
    for (uint32_t i = 0; i < chunk->count; i++) {
        hpl__region one;
        hpl__region_init(&one);
        hpl__region_set_box(&one, &chunk->boxes[i]); /* one box: inline storage, cannot fail */
        hpl__layout packed = {.buffer = d->staging.buffer,
                              .base = base,
                              .address = d->staging.address ? d->staging.address + base : 0,
                              .box = chunk->boxes[i]};
        hpl__record_copy(d, cb, x->root, &one, to_slot ? &buffer : &packed, to_slot ? &packed : &buffer, hpl__no_shift);
        base += hpl__box_volume(&chunk->boxes[i]) * x->esize;
        hpl__region_free(&one);
    }
    if (e) {
        e->u.copy.kernel_boxes = (uint32_t)(d->stats.copy_kernels - kernels);
        hpl__events_copy_end_(d, cb, e);
    }
    rc = hpl__batch_end(x->ctx, d, &x->at);
    /* On its way now: the host's next memcpy overlaps this chunk's DMA. */
    if (rc == HPL_OK)
        rc = hpl__batch_flush(d);
    if (rc == HPL_OK)
        d->staging.free_at[slot] = x->at.value;
    return rc;
}

static int upload_chunk(void *user, const hpl__region *chunk)
{
    staged *x = user;
    uint32_t slot;
    int rc = slot_take(x->ctx, x->d, &slot);
    if (rc != HPL_OK)
        return rc;
    host_side(x, chunk, slot, true);
    return device_side(x, chunk, slot, false);
}

/* Copies the pending chunk out once its DMA is done. */
static int download_drain(staged *x)
{
    if (hpl__region_empty(&x->pending))
        return HPL_OK;
    int rc = hpl__wait_points_held(x->ctx, &(hpl__point){x->d->index, x->d->staging.free_at[x->pending_slot]}, 1);
    if (rc == HPL_OK)
        host_side(x, &x->pending, x->pending_slot, false);
    hpl__region_clear(&x->pending);
    return rc;
}

static int download_chunk(void *user, const hpl__region *chunk)
{
    staged *x = user;
    uint32_t slot;
    int rc = slot_take(x->ctx, x->d, &slot);
    if (rc == HPL_OK)
        rc = device_side(x, chunk, slot, true);
    if (rc == HPL_OK)
        rc = download_drain(x);
    if (rc == HPL_OK && !hpl__region_copy(&x->pending, chunk))
        rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory staging a copy");
    x->pending_slot = slot;
    return rc;
}

static int run_staged(hpl_context *ctx, hpl__array *root, const hpl__transfer *t, bool upload)
{
    hpl__coherence *c = &root->coherence;
    int device_mem = upload ? t->dst : t->src;
    staged x = {.ctx = ctx, .root = root, .d = &ctx->devices[c->mem[device_mem].device], .t = t,
                .esize = hpl_type_size(root->type)};
    hpl__region_init(&x.pending);
    /* The host region: its writers before we read it, everyone touching it
     * before we write it. The device region (uploads): its readers and
     * writers, other than queue order, for the first chunk. */
    hpl__point host_waits[HPL__MAX_TIMELINES], device_waits[HPL__MAX_TIMELINES];
    int n = hpl__coherence_wait_points(c, HPL__HOST, &t->region, !upload, host_waits, 0);
    x.waits = device_waits;
    x.wait_count = upload ? hpl__coherence_wait_points(c, t->dst, &t->region, true, device_waits, 0) : 0;
    int rc = staging_open(ctx, x.d);
    if (rc == HPL_OK)
        rc = hpl__wait_points_held(ctx, host_waits, n);
    if (rc == HPL_OK)
        rc = hpl__region_chunks(&t->region, x.d->staging.slot_bytes / x.esize, upload ? upload_chunk : download_chunk,
                                &x);
    if (rc == HPL_OK && !upload)
        rc = download_drain(&x);
    hpl__region_free(&x.pending);
    if (rc != HPL_OK)
        return rc;
    hpl__count_transfer(ctx, root, t);
    x.d->stats.staged_bytes += hpl__region_volume(&t->region) * x.esize;
    return hpl__coherence_did_transfer(c, t, x.at) ? HPL_OK
                                                    : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

int hpl__staged_upload(hpl_context *ctx, hpl__array *root, const hpl__transfer *t)
{
    return run_staged(ctx, root, t, true);
}

int hpl__staged_download(hpl_context *ctx, hpl__array *root, const hpl__transfer *t)
{
    return run_staged(ctx, root, t, false);
}
