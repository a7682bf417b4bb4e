/* Device allocations: array buffers (with device addresses), the rings of
 * argument blocks, and host memory imported into a device. */
#include "memory.h"

#include "vk.h"

#include <string.h>

/* Allocates memory for *buffer and binds it; on failure destroys the buffer
 * and leaves both handles null. */
static int allocate_and_bind(hpl__device *d, const VkMemoryAllocateInfo *ai, VkBuffer *buffer, VkDeviceMemory *memory,
                             const char *what)
{
    *memory = VK_NULL_HANDLE;
    VkResult r = vkAllocateMemory(d->device, ai, NULL, memory);
    if (r == VK_SUCCESS)
        r = vkBindBufferMemory(d->device, *buffer, *memory, 0);
    if (r == VK_SUCCESS)
        return HPL_OK;
    vkDestroyBuffer(d->device, *buffer, NULL);
    if (*memory)
        vkFreeMemory(d->device, *memory, NULL);
    *buffer = VK_NULL_HANDLE;
    *memory = VK_NULL_HANDLE;
    return hpl__vk_error(r, what);
}

/* Buffers the compute queue and a transfer lane of another family both
 * use are shared concurrently (no ownership transfers between them). */
static void share(const hpl__device *d, VkBufferCreateInfo *bi, uint32_t families[2])
{
    if (!d->xfer.on || d->xfer.family == d->queue_family)
        return;
    families[0] = d->queue_family;
    families[1] = d->xfer.family;
    bi->sharingMode = VK_SHARING_MODE_CONCURRENT;
    bi->queueFamilyIndexCount = 2;
    bi->pQueueFamilyIndices = families;
}

int hpl__buffer_create(hpl__device *d, VkDeviceSize size, VkBufferUsageFlags usage, uint32_t memory_type,
                       bool device_address, VkBuffer *buffer, VkDeviceMemory *memory)
{
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = size,
                             .usage = usage | (device_address ? VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT : 0),
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    uint32_t families[2];
    share(d, &bi, families);
    *memory = VK_NULL_HANDLE;
    VkResult r = vkCreateBuffer(d->device, &bi, NULL, buffer);
    if (r != VK_SUCCESS)
        return hpl__vk_error(r, "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->device, *buffer, &req);
    VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                       .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .pNext = device_address ? &flags : NULL,
                               .allocationSize = req.size,
                               .memoryTypeIndex = memory_type};
    if (!(req.memoryTypeBits & (1u << memory_type))) {
        vkDestroyBuffer(d->device, *buffer, NULL);
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "device %s: no suitable memory type for a buffer", d->info.name);
    }
    return allocate_and_bind(d, &ai, buffer, memory, "vkAllocateMemory");
}

static int chunk_create(hpl__device *d, hpl__arg_chunk *c)
{
    memset(c, 0, sizeof *c);
    /* HPL__ARG_RANGE of slack: the descriptor's range must fit after the
     * last offset used. */
    VkDeviceSize size = HPL__ARG_CHUNK_SIZE + HPL__ARG_RANGE;
    int rc = hpl__buffer_create(d, size, VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, d->upload_memory_type, false, &c->buffer,
                                &c->memory);
    if (rc != HPL_OK)
        return rc;
    VkResult r = vkMapMemory(d->device, c->memory, 0, VK_WHOLE_SIZE, 0, (void **)&c->map);
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = d->descriptor_pool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &d->set_layout};
    if (r == VK_SUCCESS)
        r = vkAllocateDescriptorSets(d->device, &ai, &c->set);
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(d->device, c->buffer, NULL);
        vkFreeMemory(d->device, c->memory, NULL);
        return hpl__vk_error(r, "argument ring");
    }
    /* Vulkan guarantees maxUniformBufferRange >= 16384 = HPL__ARG_RANGE;
     * pipelines check each kernel's block against the range (kernel.c). */
    VkDescriptorBufferInfo info = {.buffer = c->buffer,
                                   .offset = 0,
                                   .range = HPL__MIN(HPL__ARG_RANGE, d->props.limits.maxUniformBufferRange)};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                              .dstSet = c->set,
                              .descriptorCount = 1,
                              .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC,
                              .pBufferInfo = &info};
    vkUpdateDescriptorSets(d->device, 1, &w, 0, NULL);
    return HPL_OK;
}

/* Moves to a chunk whose work is done, or makes a new one: never waits. */
static int chunk_next(hpl__device *d)
{
    uint64_t done = hpl__device_completed(d);
    for (uint32_t i = 1; i <= d->chunk_count; i++) {
        uint32_t k = (d->chunk_current + i) % d->chunk_count;
        if (d->chunks[k].last_value <= done) {
            d->chunk_current = k;
            d->chunks[k].used = 0;
            return HPL_OK;
        }
    }
    hpl__arg_chunk *chunks = hpl__realloc(d->chunks, (d->chunk_count + 1) * sizeof *chunks);
    if (!chunks)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for kernel arguments");
    d->chunks = chunks;
    int rc = chunk_create(d, &d->chunks[d->chunk_count]);
    if (rc != HPL_OK)
        return rc;
    d->chunk_current = d->chunk_count++;
    return HPL_OK;
}

/* The bytes an argument block of `size` takes in a chunk. */
static VkDeviceSize block_bytes(const hpl__device *d, uint32_t size)
{
    VkDeviceSize align = d->props.limits.minUniformBufferOffsetAlignment;
    if (align < 16)
        align = 16;
    return (size + align - 1) / align * align;
}

/* Makes the current chunk one with `need` bytes free. */
static int chunk_room(hpl__device *d, VkDeviceSize need)
{
    hpl__arg_chunk *c = d->chunk_count ? &d->chunks[d->chunk_current] : NULL;
    return !c || c->used + need > HPL__ARG_CHUNK_SIZE ? chunk_next(d) : HPL_OK;
}

int hpl__args_reserve(hpl__device *d, uint32_t size, uint32_t count)
{
    if (!size || size > HPL__ARG_RANGE || count > HPL__ARG_CHUNK_SIZE / HPL__ARG_RANGE)
        return HPL_OK; /* nothing to hold, or hpl__args_alloc says why */
    return chunk_room(d, block_bytes(d, size) * count);
}

int hpl__args_alloc(hpl__device *d, uint32_t size, hpl__arg_chunk **chunk, uint32_t *offset)
{
    /* Reflection never makes a bigger block; a chunk could not hold one. */
    if (size > HPL__ARG_RANGE)
        return hpl__fail(HPL_ERROR_INTERNAL, "an argument block of %u bytes exceeds the %u-byte limit", size,
                         HPL__ARG_RANGE);
    VkDeviceSize need = block_bytes(d, size);
    int rc = chunk_room(d, need);
    if (rc != HPL_OK)
        return rc;
    hpl__arg_chunk *c = &d->chunks[d->chunk_current];
    /* The caller stamps last_value once it submitted, before it lets go of
     * the context lock: nothing else allocates in between. */
    *offset = (uint32_t)c->used;
    c->used += need;
    *chunk = c;
    return HPL_OK;
}

static void chunk_destroy(hpl__device *d, hpl__arg_chunk *c)
{
    vkFreeDescriptorSets(d->device, d->descriptor_pool, 1, &c->set);
    vkDestroyBuffer(d->device, c->buffer, NULL);
    vkFreeMemory(d->device, c->memory, NULL);
}

void hpl__args_trim(hpl__device *d, uint32_t keep)
{
    uint64_t done = hpl__device_completed(d);
    for (uint32_t i = d->chunk_count; i-- > 0 && d->chunk_count > keep;) {
        if (i == d->chunk_current || d->chunks[i].last_value > done)
            continue;
        chunk_destroy(d, &d->chunks[i]);
        d->chunks[i] = d->chunks[--d->chunk_count]; /* the order of chunks does not matter */
        if (d->chunk_current == d->chunk_count)
            d->chunk_current = i;
    }
}

void hpl__args_release(hpl__device *d)
{
    for (uint32_t i = 0; i < d->chunk_count; i++)
        chunk_destroy(d, &d->chunks[i]);
    hpl__free(d->chunks);
    d->chunks = NULL;
    d->chunk_count = d->chunk_current = 0;
}

int hpl__host_import(hpl__device *d, void *ptr, size_t size, bool device_address, VkBuffer *buffer,
                     VkDeviceMemory *memory, VkDeviceSize *offset)
{
    if (!d->host_import)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "device %s cannot import host memory (VK_EXT_external_memory_host)",
                         d->info.name);
    /* Import whole pages around the data: the pages are the process's own
     * memory, and only the data's bytes are ever copied. */
    uintptr_t align = (uintptr_t)d->import_alignment;
    uintptr_t start = (uintptr_t)ptr / align * align;
    uintptr_t end = ((uintptr_t)ptr + size + align - 1) / align * align;
    void *base = (void *)start;
    VkDeviceSize bytes = end - start;
    /* One buffer over the pages: past maxBufferSize, vkCreateBuffer's
     * behaviour is undefined (Lavapipe's limit is 4 GiB - 1), and a device
     * with its own memory goes no further than one allocation
     * (maxMemoryAllocationSize): the H200's driver, asked to import 4.2 GiB
     * past its 3.998, never returned (2026-11-25). Such a device then stages
     * its copies instead. A zero-copy device has no other way to reach the
     * memory, and Lavapipe's imports past its 2 GiB allocations work (grids
     * of 3.4 GiB beside an H200): it goes up to maxBufferSize, and past it
     * fails, naming the limit. */
    VkDeviceSize limit = d->zero_copy ? d->import_max_bytes : HPL__MIN(d->import_max_bytes, d->info.max_buffer_size);
    if (bytes > limit)
        return hpl__fail(HPL_ERROR_OUT_OF_DEVICE_MEMORY,
                         "device %s can import at most %.2f MiB of host memory as one buffer (its %s), %.2f MiB asked",
                         d->info.name, limit / 1048576.0,
                         limit == d->import_max_bytes ? "maxBufferSize" : "maxMemoryAllocationSize", bytes / 1048576.0);

    VkMemoryHostPointerPropertiesEXT hp = {.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    VkResult r = d->get_host_pointer_props(d->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, base, &hp);
    if (r != VK_SUCCESS)
        return hpl__vk_error(r, "vkGetMemoryHostPointerPropertiesEXT");
    VkExternalMemoryBufferCreateInfo ext = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                            .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT};
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .pNext = &ext,
                             .size = bytes,
                             /* Zero-copy devices bind it as storage: hplvk's kernels by
                              * address, the application's (hpl_array_vulkan_acquire) either way. */
                             .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                      (device_address ? VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
                                                            VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
                                                      : 0),
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    uint32_t families[2];
    share(d, &bi, families);
    r = vkCreateBuffer(d->device, &bi, NULL, buffer);
    if (r != VK_SUCCESS)
        return hpl__vk_error(r, "vkCreateBuffer (host import)");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->device, *buffer, &req);
    uint32_t bits = hp.memoryTypeBits & req.memoryTypeBits;
    /* Prefer a coherent type: host writes then need no flush. */
    int type = -1;
    for (uint32_t i = 0; i < d->memory_props.memoryTypeCount; i++) {
        if (!(bits & (1u << i)))
            continue;
        bool coherent = d->memory_props.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        if (type < 0 || coherent)
            type = (int)i;
        if (coherent)
            break;
    }
    if (type < 0) {
        vkDestroyBuffer(d->device, *buffer, NULL);
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "device %s: no memory type can import this host memory", d->info.name);
    }
    *memory = VK_NULL_HANDLE;
    /* Zero-copy devices run kernels on it through its device address. */
    VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                       .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkImportMemoryHostPointerInfoEXT import = {.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
                                               .pNext = device_address ? &flags : NULL,
                                               .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                                               .pHostPointer = base};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .pNext = &import,
                               .allocationSize = bytes,
                               .memoryTypeIndex = (uint32_t)type};
    int rc = allocate_and_bind(d, &ai, buffer, memory, "vkAllocateMemory (host import)");
    if (rc == HPL_OK)
        *offset = (uintptr_t)ptr - start;
    return rc;
}
