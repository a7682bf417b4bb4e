/* Where a root array's memories are, below the array API: its host storage
 * (the user's, or pages the library maps lazily), that storage imported into
 * each device (one DMA per transfer, or the zero-copy device's own view), and
 * its device buffers by coherence slot. Transfers, residency and operations
 * reach memory through here, never through array.c. */
#include "storage.h"

#include "memory.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int hpl__host_storage_ensure(hpl__array *root)
{
    if (root->host)
        return HPL_OK;
    /* Anonymous pages: page-aligned (importable as one DMA target) and zero. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = (root->bytes + page - 1) / page * page;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "array '%s': cannot allocate %llu bytes of host memory",
                         root->name, (unsigned long long)root->bytes);
    root->host = p;
    root->host_owned = true;
    root->host_map_size = size;
    return HPL_OK;
}

/* Does [p, p + n) lie in a mapping of a file (/proc/self/maps: a non-zero
 * inode)? NVIDIA's driver refuses to import such memory, and the
 * allocations that follow such a refusal in the context can fail too
 * (H200, 2026-11-25): it is staged without trying. false when unknown. */
static bool file_mapped(const void *p, size_t n)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    bool file = false;
    char line[512];
    while (!file && fgets(line, sizeof line, f)) {
        unsigned long start, end, inode;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &start, &end, &inode) == 3 && start < hi && lo < end)
            file = inode != 0;
    }
    fclose(f);
    return file;
}

int hpl__host_storage_import(hpl_context *ctx, hpl__array *root, int device)
{
    hpl__import *im = &root->imports[device];
    if (im->buffer || im->staged)
        return HPL_OK;
    hpl__device *d = &ctx->devices[device];
    int rc = hpl__host_storage_ensure(root);
    if (rc == HPL_OK && !d->zero_copy && (!d->host_import || (!root->host_owned && file_mapped(root->host, root->bytes)))) {
        im->staged = true;
        return HPL_OK;
    }
    /* Zero-copy kernels, and the copy kernel (copy.c), reach it by address. */
    bool addressed = d->zero_copy || d->copy_kernel;
    if (rc == HPL_OK)
        rc = hpl__host_import(d, root->host, root->bytes, addressed, &im->buffer, &im->memory, &im->offset);
    if (rc != HPL_OK && rc != HPL_ERROR_OUT_OF_HOST_MEMORY && addressed && !d->zero_copy && !hpl__device_error(d)) {
        addressed = false; /* imported without an address, its strided copies are copy regions */
        rc = hpl__host_import(d, root->host, root->bytes, false, &im->buffer, &im->memory, &im->offset);
    }
    /* The driver refused this memory (a file mapping, say): transfers go
     * through staging slots instead. A zero-copy device has no other way to
     * reach it: its kernels run on it. */
    if (rc != HPL_OK && rc != HPL_ERROR_OUT_OF_HOST_MEMORY && !d->zero_copy && !hpl__device_error(d)) {
        hpl__log(&ctx->logger, HPL_LOG_INFO, "array '%s': device %s cannot import its host memory (%s); staging its copies",
                 root->name, d->info.name, hpl_last_error());
        im->staged = true;
        return HPL_OK;
    }
    if (rc == HPL_OK && addressed) {
        VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = im->buffer};
        im->address = vkGetBufferDeviceAddress(d->device, &ai) + im->offset;
    }
    if (rc != HPL_OK)
        hpl__error_prefix(root->name);
    return rc;
}

void hpl__host_storage_free(hpl_context *ctx, hpl__array *root)
{
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__import *im = &root->imports[i];
        VkDevice dev = ctx->devices[i].device;
        if (im->buffer)
            vkDestroyBuffer(dev, im->buffer, NULL);
        if (im->memory)
            vkFreeMemory(dev, im->memory, NULL);
        *im = (hpl__import){0};
    }
    if (root->host_owned)
        munmap(root->host, root->host_map_size);
    root->host = NULL;
    root->host_owned = false;
}

hpl__instance *hpl__instance_of(hpl__array *root, int slot)
{
    for (int i = 0; i < root->instance_count; i++)
        if (root->instances[i].slot == slot)
            return &root->instances[i];
    return NULL;
}
