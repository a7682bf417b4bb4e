/* The command ring: a queue's command buffers, reused once the timeline
 * value of their last submission is reached, grown a block at a time and
 * trimmed by whole blocks. Callers hold the lock of the ring's queue
 * (submit.c, lane.c: the device's batch_lock). */
#include "ring.h"

#include "vk.h"

#include <string.h>

/* Ring growth at most this many command buffers at a time: doubling keeps
 * a host far ahead of its device (tens of thousands in flight on
 * Lavapipe) from moving the array at every new one. */
#define RING_GROW_MAX 256u

/* Adds `add` (1 .. RING_GROW_MAX) free command buffers just before the
 * oldest: the youngest places in the ring, taken first to last from
 * ring->next. On failure the ring is as it was. */
static int ring_grow(VkDevice dev, hpl__ring *ring, uint32_t add)
{
    hpl__cmd **cmds = hpl__realloc(ring->cmds, (ring->count + add) * sizeof *cmds);
    if (!cmds)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for a command buffer");
    ring->cmds = cmds; /* room only: count is unchanged */
    hpl__cmd *block = hpl__calloc(add, sizeof *block);
    if (!block)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for a command buffer");
    VkCommandBuffer cbs[RING_GROW_MAX];
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = ring->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = add};
    VkResult r = vkAllocateCommandBuffers(dev, &ai, cbs);
    if (r != VK_SUCCESS) {
        hpl__free(block);
        return hpl__vk_error(r, "vkAllocateCommandBuffers");
    }
    uint32_t at = ring->next;
    memmove(&ring->cmds[at + add], &ring->cmds[at], (ring->count - at) * sizeof *cmds);
    for (uint32_t i = 0; i < add; i++) {
        block[i] = (hpl__cmd){.cb = cbs[i], .block = i == 0 ? add : 0};
        ring->cmds[at + i] = &block[i];
    }
    ring->count += add;
    return HPL_OK;
}

/* How many buffers the next begins find free from ring->next on, before
 * the oldest still in flight (up to `enough`). */
static uint32_t ring_free_ahead(const hpl__ring *ring, uint64_t done, uint32_t enough)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ring->count && n < enough; i++) {
        const hpl__cmd *c = ring->cmds[(ring->next + i) % ring->count];
        if (c->value == UINT64_MAX)
            continue; /* being recorded */
        if (c->value > done)
            break; /* the oldest in flight is not done: the rest are younger */
        n++;
    }
    return n;
}

static uint32_t ring_growth(const hpl__ring *ring, uint32_t at_least)
{
    return HPL__MAX(at_least, HPL__MIN(HPL__MAX(ring->count, 1u), RING_GROW_MAX));
}

int hpl__ring_reserve(VkDevice dev, hpl__ring *ring, uint64_t done, uint32_t n)
{
    uint32_t have = ring_free_ahead(ring, done, n);
    return have >= n ? HPL_OK : ring_grow(dev, ring, ring_growth(ring, n - have));
}

int hpl__ring_begin(VkDevice dev, hpl__ring *ring, uint64_t done, hpl__cmd **out)
{
    /* Buffers complete in submission order: the oldest is the one after the
     * last taken, so one look usually finds a free one. */
    if (ring_free_ahead(ring, done, 1) == 0) {
        int rc = ring_grow(dev, ring, ring_growth(ring, 1));
        if (rc != HPL_OK)
            return rc;
    }
    hpl__cmd *cmd = NULL;
    for (uint32_t i = 0; !cmd; i++) { /* the first free one: ring_free_ahead found it */
        uint32_t k = (ring->next + i) % ring->count;
        if (ring->cmds[k]->value <= done) {
            cmd = ring->cmds[k];
            ring->next = (k + 1) % ring->count;
        }
    }
    cmd->value = UINT64_MAX; /* recording: not free */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = vkBeginCommandBuffer(cmd->cb, &bi);
    if (r != VK_SUCCESS) {
        cmd->value = 0;
        return hpl__vk_error(r, "vkBeginCommandBuffer");
    }
    *out = cmd;
    return HPL_OK;
}

void hpl__ring_destroy(VkDevice dev, hpl__ring *ring)
{
    if (ring->pool)
        vkDestroyCommandPool(dev, ring->pool, NULL);
    /* The blocks' first entries, gathered before any block is freed (a
     * block holds entries read after its first). */
    uint32_t blocks = 0;
    for (uint32_t i = 0; i < ring->count; i++)
        if (ring->cmds[i]->block)
            ring->cmds[blocks++] = ring->cmds[i];
    for (uint32_t i = 0; i < blocks; i++)
        hpl__free(ring->cmds[i]);
    hpl__free(ring->cmds);
    memset(ring, 0, sizeof *ring);
}

/* Is every command buffer of the block headed by `head` free? */
static bool block_free(const hpl__cmd *head, uint64_t done)
{
    for (uint32_t i = 0; i < head->block; i++)
        if (head[i].value == UINT64_MAX || head[i].value > done)
            return false;
    return true;
}

/* Takes the block headed by ring->cmds[at] out of the ring and frees it:
 * the others keep their order, and ring->next the first of those it came
 * before. */
static void block_remove(VkDevice dev, hpl__ring *ring, uint32_t at)
{
    hpl__cmd *head = ring->cmds[at];
    VkCommandBuffer cbs[RING_GROW_MAX];
    for (uint32_t i = 0; i < head->block; i++)
        cbs[i] = head[i].cb;
    vkFreeCommandBuffers(dev, ring->pool, head->block, cbs);
    uint32_t kept = 0, next = 0;
    for (uint32_t i = 0; i < ring->count; i++) {
        if (i == ring->next)
            next = kept;
        if (ring->cmds[i] < head || ring->cmds[i] >= head + head->block)
            ring->cmds[kept++] = ring->cmds[i];
    }
    ring->count = kept;
    ring->next = kept ? next % kept : 0;
    hpl__free(head);
}

void hpl__ring_trim(VkDevice dev, hpl__ring *ring, uint64_t done, uint32_t keep)
{
    for (uint32_t i = 0; i < ring->count && ring->count > keep;) {
        if (ring->cmds[i]->block && block_free(ring->cmds[i], done))
            block_remove(dev, ring, i); /* what was after i is now from i on */
        else
            i++;
    }
    if (ring->count == 0) {
        hpl__free(ring->cmds);
        ring->cmds = NULL;
        ring->next = 0;
    } else {
        hpl__cmd **cmds = hpl__realloc(ring->cmds, ring->count * sizeof *cmds);
        ring->cmds = cmds ? cmds : ring->cmds; /* (kept larger when refused) */
    }
}
