/* The command ring: a queue's command buffers, reused once the timeline
 * value of their last submission is reached (ring.c). */
#ifndef HPL_RING_H
#define HPL_RING_H

#include "common.h"

#include <vulkan/vulkan.h>

typedef struct hpl__cmd {
    VkCommandBuffer cb;
    uint64_t value; /* timeline value of its last submission; 0: never submitted */
    uint32_t block; /* the first of a block (allocated together, freed together): its size; else 0 */
} hpl__cmd;

/* Command buffers of one queue, reused once their timeline value is
 * reached: cmds[next] is the oldest. Each hpl__cmd stays where it was
 * made (cmds holds pointers): growing the ring moves none, so an open
 * batch's survives a reservation. */
typedef struct hpl__ring {
    VkCommandPool pool;
    hpl__cmd **cmds;
    uint32_t count, next;
} hpl__ring;

/* A free command buffer of ring (of VkDevice dev; `done`: the timeline
 * value its queue reached), begun. */
int hpl__ring_begin(VkDevice dev, hpl__ring *ring, uint64_t done, hpl__cmd **out);
void hpl__ring_destroy(VkDevice dev, hpl__ring *ring);
/* Makes sure the next n hpl__ring_begin calls (with `done` or later) find a
 * free command buffer without growing the ring (n <= 256, ring.c's RING_GROW_MAX). */
int hpl__ring_reserve(VkDevice dev, hpl__ring *ring, uint64_t done, uint32_t n);
/* Frees whole blocks of free command buffers (their timeline value `done`
 * reached) while the ring holds more than `keep`. */
void hpl__ring_trim(VkDevice dev, hpl__ring *ring, uint64_t done, uint32_t keep);

#endif
