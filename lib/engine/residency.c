/* Residency: which buffers of which arrays a device holds, within the
 * device's memory limit, least recently used evicted first; zero-copy
 * devices. */
#include "residency.h"

#include "acquired.h"
#include "config.h"
#include "events.h"
#include "memory.h"
#include "storage.h"
#include "submit.h"
#include "transfer.h"

#include <stdlib.h>
#include <string.h>

/* ---- configuration ---------------------------------------------------- */

static uint64_t local_heap(const hpl__device *d)
{
    uint32_t heap = d->memory_props.memoryTypes[d->local_memory_type].heapIndex;
    return d->memory_props.memoryHeaps[heap].size;
}

int hpl__devices_configure(hpl_context *ctx, const hpl_context_desc *desc)
{
    uint64_t limit = desc->device_memory_limit;
    const char *env = getenv("HPLVK_DEVICE_MEMORY_LIMIT");
    int rc = !limit && env ? hpl__parse_size("HPLVK_DEVICE_MEMORY_LIMIT", env, &limit) : HPL_OK;
    int mode = HPL_ZERO_COPY_AUTO;
    const char *source = NULL;
    if (rc == HPL_OK)
        rc = hpl__parse_zero_copy(desc->zero_copy, getenv("HPLVK_ZERO_COPY"), &mode, &source);
    hpl__zc_device zc[HPL__MAX_DEVICES];
    for (int i = 0; i < ctx->device_count; i++) {
        const hpl__device *d = &ctx->devices[i];
        zc[i] = (hpl__zc_device){.entry = d->entry,
                                 .name = d->info.name,
                                 .type = d->info.type,
                                 .host_import = d->host_import,
                                 .physical = (int)d->info.physical_index,
                                 .asked = d->zero_copy_asked};
    }
    if (rc == HPL_OK)
        rc = hpl__zero_copy_decide(mode, source, zc, ctx->device_count);
    for (int i = 0; rc == HPL_OK && i < ctx->device_count; i++) {
        hpl__device *d = &ctx->devices[i];
        d->memory_limit = limit ? limit : local_heap(d);
        d->zero_copy = zc[i].zero_copy;
        d->info.memory_limit = d->memory_limit;
        d->info.zero_copy = d->zero_copy;
    }
    return rc;
}

/* ---- instances -------------------------------------------------------- */

void hpl__operation_begin(hpl_context *ctx)
{
    ctx->operation++;
}

void hpl__instance_free(hpl_context *ctx, hpl__array *root, hpl__instance *inst)
{
    hpl__device *d = &ctx->devices[inst->device];
    vkDestroyBuffer(d->device, inst->buffer, NULL);
    vkFreeMemory(d->device, inst->memory, NULL);
    d->stats.resident_bytes -= inst->bytes;
    hpl__coherence_remove(&root->coherence, inst->slot);
    *inst = root->instances[--root->instance_count];
}

int hpl__instance_evict(hpl_context *ctx, hpl__array *root, hpl__instance *inst)
{
    hpl__device *d = &ctx->devices[inst->device];
    hpl__coherence *c = &root->coherence;
    hpl__transfer save = {.src = inst->slot, .dst = HPL__HOST};
    hpl__region_init(&save.region);
    int rc = hpl__coherence_only_here(c, inst->slot, &c->whole_region, &save.region)
                 ? HPL_OK
                 : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (rc == HPL_OK && !hpl__region_empty(&save.region))
        rc = hpl__stage_to_host(ctx, root, &save);
    hpl__region_free(&save.region);
    if (rc != HPL_OK)
        return rc;
    /* Everything that touches a device buffer runs on its device's queue: one
     * wait (holding the lock: the operation being built must not change). */
    hpl__point points[HPL__MAX_TIMELINES];
    int n = hpl__coherence_wait_points(c, inst->slot, NULL, true, points, 0);
    uint64_t since = hpl__events_wait_begin(ctx);
    for (int i = 0; i < n && rc == HPL_OK; i++)
        if (hpl__point_wait(ctx, points[i]) != VK_SUCCESS)
            rc = hpl__fail(HPL_ERROR_DEVICE_LOST, "device %s lost while evicting '%s'", d->info.name, root->name);
    hpl__events_wait(ctx, points, n, since);
    if (rc != HPL_OK)
        return rc;
    d->stats.evictions++;
    d->stats.evicted_bytes += inst->bytes;
    hpl__instance_free(ctx, root, inst);
    return HPL_OK;
}

typedef struct victim_search {
    hpl_context *ctx;
    int device;
    hpl__array *root;
    int index;
    uint64_t last_use;
} victim_search;

static void consider(void *object, void *user)
{
    hpl__array *a = object;
    victim_search *v = user;
    if (a->root != a)
        return;
    for (int i = 0; i < a->instance_count; i++) {
        const hpl__instance *inst = &a->instances[i];
        if (inst->device == v->device && inst->pinned != v->ctx->operation && !hpl__acquired_holds(a, inst->slot) &&
            (!v->root || inst->last_use < v->last_use)) {
            v->root = a;
            v->index = i;
            v->last_use = inst->last_use;
        }
    }
}

/* Evicts the least recently used buffer of device that the current
 * operation does not use; false when there is none. */
static int evict_one(hpl_context *ctx, int device, bool *evicted)
{
    victim_search v = {.ctx = ctx, .device = device};
    hpl__pool_each(&ctx->arrays, consider, &v);
    *evicted = v.root != NULL;
    return v.root ? hpl__instance_evict(ctx, v.root, &v.root->instances[v.index]) : HPL_OK;
}

static int no_room(hpl_context *ctx, const hpl__array *root, int device, uint64_t bytes)
{
    const hpl__device *d = &ctx->devices[device];
    return hpl__fail(HPL_ERROR_OUT_OF_DEVICE_MEMORY,
                     "array '%s' needs %.2f MiB on device %d (%s) but its limit is %.2f MiB and %.2f MiB are held by "
                     "arrays this operation uses",
                     root->name, bytes / 1048576.0, device, d->info.name, d->memory_limit / 1048576.0,
                     d->stats.resident_bytes / 1048576.0);
}

static int allocate(hpl_context *ctx, hpl__array *root, int device, const hpl__box *box, hpl__instance *inst)
{
    hpl__device *d = &ctx->devices[device];
    uint64_t bytes = hpl__box_volume(box) * hpl_type_size(root->type);
    if (bytes > d->memory_limit || bytes > d->info.max_buffer_size)
        return hpl__fail(HPL_ERROR_OUT_OF_DEVICE_MEMORY,
                         "array '%s' needs %.2f MiB on device %d (%s), which can hold at most %.2f MiB in one array%s",
                         root->name, bytes / 1048576.0, device, d->info.name,
                         HPL__MIN(d->memory_limit, d->info.max_buffer_size) / 1048576.0,
                         d->memory_limit < d->info.max_buffer_size ? " (its memory limit)" : "");
    bool evicted = true;
    while (d->stats.resident_bytes + bytes > d->memory_limit) {
        int rc = evict_one(ctx, device, &evicted);
        if (rc != HPL_OK)
            return rc;
        if (!evicted)
            return no_room(ctx, root, device, bytes);
    }
    VkBufferUsageFlags usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    for (;;) {
        int rc = hpl__buffer_create(d, bytes, usage, d->local_memory_type, true, &inst->buffer, &inst->memory);
        if (rc != HPL_ERROR_OUT_OF_DEVICE_MEMORY)
            return rc;
        /* The driver is full before our limit: make room and retry. */
        rc = evict_one(ctx, device, &evicted);
        if (rc != HPL_OK)
            return rc;
        if (!evicted)
            return no_room(ctx, root, device, bytes);
    }
}

static int add_instance(hpl_context *ctx, hpl__array *root, int device, const hpl__box *box, int *slot)
{
    if (root->instance_count == root->instance_capacity) {
        int cap = root->instance_capacity ? 2 * root->instance_capacity : 4;
        hpl__instance *list = hpl__realloc(root->instances, (size_t)cap * sizeof *list);
        if (!list)
            return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        root->instances = list;
        root->instance_capacity = cap;
    }
    hpl__instance inst = {.device = device, .box = *box};
    int rc = allocate(ctx, root, device, box, &inst);
    if (rc != HPL_OK)
        return rc;
    hpl__device *d = &ctx->devices[device];
    inst.slot = hpl__coherence_add(&root->coherence, device, box);
    if (inst.slot < 0) {
        vkDestroyBuffer(d->device, inst.buffer, NULL);
        vkFreeMemory(d->device, inst.memory, NULL);
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = inst.buffer};
    inst.address = vkGetBufferDeviceAddress(d->device, &ai);
    inst.bytes = hpl__box_volume(box) * hpl_type_size(root->type);
    inst.last_use = ++ctx->clock;
    inst.pinned = ctx->operation;
    d->stats.resident_bytes += inst.bytes;
    if (d->stats.resident_bytes > d->stats.peak_bytes)
        d->stats.peak_bytes = d->stats.resident_bytes;
    root->instances[root->instance_count++] = inst;
    *slot = inst.slot;
    return HPL_OK;
}

/* Among the device's buffers holding box: one this operation already uses,
 * else the one where most of the box is valid, else the largest. */
static hpl__instance *best_instance(hpl_context *ctx, hpl__array *root, int device, const hpl__box *box)
{
    hpl__instance *best = NULL;
    uint64_t best_score[3] = {0, 0, 0};
    for (int i = 0; i < root->instance_count; i++) {
        hpl__instance *inst = &root->instances[i];
        if (inst->device != device || !hpl__box_contains(&inst->box, box))
            continue;
        hpl__region valid;
        hpl__region_init(&valid);
        uint64_t held = hpl__region_copy(&valid, &root->coherence.mem[inst->slot].valid) &&
                                hpl__region_intersect_box(&valid, box)
                            ? hpl__region_volume(&valid)
                            : 0;
        hpl__region_free(&valid);
        uint64_t score[3] = {inst->pinned == ctx->operation, held, hpl__box_volume(&inst->box)};
        bool better = !best || (score[0] != best_score[0]   ? score[0] > best_score[0]
                                : score[1] != best_score[1] ? score[1] > best_score[1]
                                                            : score[2] > best_score[2]);
        if (better) {
            best = inst;
            memcpy(best_score, score, sizeof score);
        }
    }
    return best;
}

int hpl__array_memory_for(hpl_context *ctx, hpl__array *root, int device, const hpl__box *box, int *slot)
{
    if (ctx->devices[device].zero_copy) {
        *slot = HPL__HOST;
        return hpl__host_storage_import(ctx, root, device);
    }
    hpl__instance *inst = best_instance(ctx, root, device, box);
    if (!inst)
        return add_instance(ctx, root, device, box, slot);
    inst->last_use = ++ctx->clock;
    inst->pinned = ctx->operation;
    *slot = inst->slot;
    return HPL_OK;
}
