/* Device memory (memory.c): buffers, kernel argument blocks, host imports. */
#ifndef HPL_MEMORY_H
#define HPL_MEMORY_H

#include "engine.h"

int hpl__buffer_create(hpl__device *d, VkDeviceSize size, VkBufferUsageFlags usage, uint32_t memory_type,
                       bool device_address, VkBuffer *buffer, VkDeviceMemory *memory);
int hpl__args_alloc(hpl__device *d, uint32_t size, hpl__arg_chunk **chunk, uint32_t *offset);
/* Makes room for `count` blocks of `size` in d's current chunk, so that
 * that many hpl__args_alloc calls after it cannot fail: an eval allocates
 * before it records anything (on any error nothing runs). */
int hpl__args_reserve(hpl__device *d, uint32_t size, uint32_t count);
void hpl__args_release(hpl__device *d);
/* Frees chunks whose work is done, other than the current one, while d has
 * more than `keep` (inflight.c, once work is done). */
void hpl__args_trim(hpl__device *d, uint32_t keep);
int hpl__host_import(hpl__device *d, void *ptr, size_t size, bool device_address, VkBuffer *buffer,
                     VkDeviceMemory *memory, VkDeviceSize *offset);

#endif
