/* Arrays: shapes, lazily allocated host and device storage, host access. */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Element type table: size and GLSL name, from one list. */
#define HPL__TYPE_LIST(X)          \
    X(HPL_FLOAT32, 4, "float")     \
    X(HPL_FLOAT64, 8, "double")    \
    X(HPL_INT32, 4, "int")         \
    X(HPL_UINT32, 4, "uint")       \
    X(HPL_INT64, 8, "int64_t")     \
    X(HPL_UINT64, 8, "uint64_t")

size_t hpl_type_size(hpl_type type)
{
    switch (type) {
#define HPL__TYPE_SIZE(t, size, name) \
    case t:                           \
        return size;
        HPL__TYPE_LIST(HPL__TYPE_SIZE)
#undef HPL__TYPE_SIZE
    default:
        return 0;
    }
}

const char *hpl_type_name(hpl_type type)
{
    switch (type) {
#define HPL__TYPE_NAME(t, size, name) \
    case t:                           \
        return name;
        HPL__TYPE_LIST(HPL__TYPE_NAME)
#undef HPL__TYPE_NAME
    default:
        return "invalid";
    }
}

int hpl__array_get(hpl_context *ctx, hpl_array handle, hpl__array **out)
{
    hpl__array *a = hpl__pool_get(&ctx->arrays, handle.id);
    if (!a)
        return hpl__fail(HPL_ERROR_INVALID_HANDLE, "array handle %#x is not a live array (destroyed or never created)",
                         handle.id);
    *out = a;
    return HPL_OK;
}

static int check_shape(const hpl_array_desc *desc, int *ndims, uint64_t *count, uint64_t *bytes)
{
    if (hpl_type_size(desc->type) == 0)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "type %d is not an element type (use HPL_FLOAT32, ...)",
                         (int)desc->type);
    if (desc->dims[0] == 0)
        return hpl__fail(HPL_ERROR_DIMENSIONS, "dims[0] is 0: an array needs at least one non-zero extent");
    *ndims = 1;
    *count = desc->dims[0];
    for (int i = 1; i < 3; i++) {
        if (desc->dims[i] == 0) {
            for (int j = i + 1; j < 3; j++)
                if (desc->dims[j])
                    return hpl__fail(HPL_ERROR_DIMENSIONS, "dims[%d] is 0 but dims[%d] is %llu", i, j,
                                     (unsigned long long)desc->dims[j]);
            break;
        }
        *ndims = i + 1;
        if (!hpl__mul_u64(*count, desc->dims[i], count))
            return hpl__fail(HPL_ERROR_DIMENSIONS, "dims {%llu, %llu, %llu} overflow: the element count does not fit in 64 bits",
                             (unsigned long long)desc->dims[0], (unsigned long long)desc->dims[1],
                             (unsigned long long)desc->dims[2]);
    }
    if (!hpl__mul_u64(*count, hpl_type_size(desc->type), bytes) || *bytes > (uint64_t)SIZE_MAX / 2)
        return hpl__fail(HPL_ERROR_DIMENSIONS, "%llu elements of %s overflow the address space",
                         (unsigned long long)*count, hpl_type_name(desc->type));
    return HPL_OK;
}

int hpl_array_create(hpl_context *ctx, const hpl_array_desc *desc, hpl_array *out)
{
    if (!ctx || !desc || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_create: %s is NULL",
                         !ctx ? "ctx" : !desc ? "desc" : "out");
    int ndims = 0;
    uint64_t count = 0, bytes = 0;
    int rc = check_shape(desc, &ndims, &count, &bytes);
    if (rc != HPL_OK) {
        hpl__error_prefix(desc->name ? desc->name : "hpl_array_create");
        return rc;
    }
    hpl__array *a = hpl__calloc(1, sizeof *a);
    if (!a)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "hpl_array_create: out of host memory");
    a->type = desc->type;
    a->ndims = ndims;
    for (int i = 0; i < 3; i++)
        a->dims[i] = i < ndims ? desc->dims[i] : 1;
    a->count = count;
    a->bytes = bytes;
    a->host = desc->host;
    uint64_t lo[3] = {0, 0, 0};
    hpl__box whole = hpl__box_make(3, lo, a->dims);
    HPL__LOCK(ctx);
    /* The host holds the initial contents: the user's data, or zeros. */
    hpl__coherence_init(&a->coherence, 1 + ctx->device_count, &whole, HPL__HOST);
    uint32_t id = hpl__pool_add(&ctx->arrays, a);
    if (id) {
        char fallback[32];
        snprintf(fallback, sizeof fallback, "array#%x", id);
        a->name = hpl__strdup(desc->name ? desc->name : fallback);
    }
    if (!id || !a->name) {
        if (id)
            hpl__pool_remove(&ctx->arrays, id);
        HPL__UNLOCK(ctx);
        hpl__coherence_free(&a->coherence);
        hpl__free(a);
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "hpl_array_create: out of host memory");
    }
    HPL__UNLOCK(ctx);
    out->id = id;
    return HPL_OK;
}

int hpl__array_ensure_host(hpl_context *ctx, hpl__array *a)
{
    (void)ctx;
    if (a->host)
        return HPL_OK;
    /* Anonymous pages: page-aligned (importable as one DMA target) and zero. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = (a->bytes + page - 1) / page * page;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "array '%s': cannot allocate %llu bytes of host memory", a->name,
                         (unsigned long long)a->bytes);
    a->host = p;
    a->host_owned = true;
    a->host_map_size = size;
    return HPL_OK;
}

static uint64_t device_local_heap(const hpl__device *d)
{
    uint32_t heap = d->memory_props.memoryTypes[d->local_memory_type].heapIndex;
    return d->memory_props.memoryHeaps[heap].size;
}

int hpl__array_ensure_device(hpl_context *ctx, hpl__array *a, int device)
{
    hpl__array_copy *c = &a->copies[device];
    if (c->buffer)
        return HPL_OK;
    hpl__device *d = &ctx->devices[device];
    uint64_t heap = device_local_heap(d);
    if (a->bytes > d->info.max_buffer_size || a->bytes > heap)
        return hpl__fail(HPL_ERROR_OUT_OF_DEVICE_MEMORY,
                         "array '%s' needs %.1f MiB on device %d (%s), which can hold at most %.1f MiB in one array",
                         a->name, a->bytes / 1048576.0, device, d->info.name,
                         HPL__MIN(heap, d->info.max_buffer_size) / 1048576.0);
    int rc = hpl__buffer_create(d, a->bytes,
                                VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                d->local_memory_type, true, &c->buffer, &c->memory);
    if (rc == HPL_ERROR_OUT_OF_DEVICE_MEMORY)
        return hpl__fail(rc, "array '%s': out of device memory allocating %.1f MiB on device %d (%s)", a->name,
                         a->bytes / 1048576.0, device, d->info.name);
    if (rc != HPL_OK)
        return rc;
    VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = c->buffer};
    c->address = vkGetBufferDeviceAddress(d->device, &ai);
    return HPL_OK;
}

int hpl__array_ensure_import(hpl_context *ctx, hpl__array *a, int device)
{
    hpl__array_copy *c = &a->copies[device];
    if (c->host_buffer)
        return HPL_OK;
    int rc = hpl__array_ensure_host(ctx, a);
    if (rc == HPL_OK)
        rc = hpl__host_import(&ctx->devices[device], a->host, a->bytes, &c->host_buffer, &c->host_memory,
                              &c->host_offset);
    if (rc != HPL_OK)
        hpl__error_prefix(a->name);
    return rc;
}

void hpl__array_free(hpl_context *ctx, hpl__array *a)
{
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__array_copy *c = &a->copies[i];
        VkDevice dev = ctx->devices[i].device;
        if (c->buffer)
            vkDestroyBuffer(dev, c->buffer, NULL);
        if (c->memory)
            vkFreeMemory(dev, c->memory, NULL);
        if (c->host_buffer)
            vkDestroyBuffer(dev, c->host_buffer, NULL);
        if (c->host_memory)
            vkFreeMemory(dev, c->host_memory, NULL);
    }
    if (a->host_owned)
        munmap(a->host, a->host_map_size);
    hpl__coherence_free(&a->coherence);
    hpl__free(a->name);
    hpl__free(a);
}

static void free_each(void *object, void *user)
{
    hpl__array_free(user, object);
}

void hpl__array_destroy_all(hpl_context *ctx)
{
    hpl__pool_each(&ctx->arrays, free_each, ctx);
    hpl__pool_free(&ctx->arrays);
}

/* Waits for every piece of pending work that uses the array. */
static int wait_array(hpl_context *ctx, hpl__array *a)
{
    hpl__point points[HPL__MAX_MEMORIES * HPL__MAX_DEVICES];
    int n = hpl__coherence_all_points(&a->coherence, points, 0);
    return hpl__wait_points(ctx, points, n);
}

int hpl_array_destroy(hpl_context *ctx, hpl_array handle)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_destroy: ctx is NULL");
    HPL__LOCK(ctx);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK) {
        /* Remove first: the wait releases the lock, and nobody may find the
         * array meanwhile. */
        hpl__pool_remove(&ctx->arrays, handle.id);
        wait_array(ctx, a);
        hpl__array_free(ctx, a);
    } else {
        hpl__error_prefix("hpl_array_destroy");
    }
    HPL__UNLOCK(ctx);
    return rc;
}

int hpl_array_get_info(hpl_context *ctx, hpl_array handle, hpl_array_info *out)
{
    if (!ctx || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_get_info: %s is NULL", !ctx ? "ctx" : "out");
    HPL__LOCK(ctx);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK) {
        *out = (hpl_array_info){.type = a->type, .ndims = a->ndims, .count = a->count, .bytes = a->bytes,
                                .name = a->name};
        memcpy(out->dims, a->dims, sizeof out->dims);
    } else {
        hpl__error_prefix("hpl_array_get_info");
    }
    HPL__UNLOCK(ctx);
    return rc;
}

/* Returns (and forgets) an asynchronous error of the array's work or of a
 * device it lives on. */
static int take_error(hpl_context *ctx, hpl__array *a, const char *fn)
{
    int rc = a->error;
    a->error = HPL_OK;
    for (int i = 0; rc == HPL_OK && i < ctx->device_count; i++)
        if (a->copies[i].buffer && ctx->devices[i].error)
            rc = ctx->devices[i].error;
    if (rc != HPL_OK)
        hpl__fail(rc, "%s: earlier asynchronous work on array '%s' failed: %s", fn, a->name, hpl_error_string(rc));
    return rc;
}

static int access_locked(hpl_context *ctx, hpl_array handle, hpl_access mode, void **out, const char *fn)
{
    if (mode < HPL_READ || mode > HPL_READ_WRITE)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s: mode %d is not HPL_READ, HPL_WRITE or HPL_READ_WRITE", fn,
                         (int)mode);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK)
        rc = take_error(ctx, a, fn);
    if (rc == HPL_OK)
        rc = hpl__array_ensure_host(ctx, a);
    if (rc == HPL_OK && (mode & HPL_READ))
        rc = hpl__fetch_to_host(ctx, a);
    if (rc != HPL_OK) {
        hpl__error_prefix(fn);
        return rc;
    }
    /* Reading waits for whoever wrote the host copy; writing also for every
     * device still reading it (DMA from the host storage). */
    hpl__point points[HPL__MAX_DEVICES];
    int n = hpl__coherence_wait_points(&a->coherence, HPL__HOST, mode & HPL_WRITE, points, 0);
    rc = hpl__wait_points(ctx, points, n);
    /* The wait released the lock: the array may have been destroyed. */
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK && (mode & HPL_WRITE) &&
        !hpl__coherence_did_write(&a->coherence, HPL__HOST, &a->coherence.whole_region, (hpl__point){0, 0}))
        rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (rc != HPL_OK) {
        hpl__error_prefix(fn);
        return rc;
    }
    *out = a->host;
    return HPL_OK;
}

int hpl_array_access(hpl_context *ctx, hpl_array handle, hpl_access mode, void **out)
{
    if (!ctx || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_access: %s is NULL", !ctx ? "ctx" : "out");
    HPL__LOCK(ctx);
    int rc = access_locked(ctx, handle, mode, out, "hpl_array_access");
    HPL__UNLOCK(ctx);
    return rc;
}

static int copy_host(hpl_context *ctx, hpl_array handle, void *dst, const void *src, size_t bytes, const char *fn)
{
    if (!ctx || !(dst || src))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : "the buffer");
    HPL__LOCK(ctx);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK && bytes != a->bytes)
        rc = hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s: %zu bytes given but array '%s' has %llu", fn, bytes, a->name,
                       (unsigned long long)a->bytes);
    void *p = NULL;
    if (rc == HPL_OK)
        rc = access_locked(ctx, handle, src ? HPL_WRITE : HPL_READ, &p, fn);
    if (rc == HPL_OK)
        memcpy(src ? p : dst, src ? src : p, bytes);
    else if (rc == HPL_ERROR_INVALID_HANDLE)
        hpl__error_prefix(fn);
    HPL__UNLOCK(ctx);
    return rc;
}

int hpl_array_read(hpl_context *ctx, hpl_array array, void *dst, size_t bytes)
{
    return copy_host(ctx, array, dst, NULL, bytes, "hpl_array_read");
}

int hpl_array_write(hpl_context *ctx, hpl_array array, const void *src, size_t bytes)
{
    return copy_host(ctx, array, NULL, src, bytes, "hpl_array_write");
}

int hpl_array_wait(hpl_context *ctx, hpl_array handle)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_wait: ctx is NULL");
    HPL__LOCK(ctx);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK)
        rc = wait_array(ctx, a);
    if (rc == HPL_OK && hpl__array_get(ctx, handle, &a) == HPL_OK)
        rc = take_error(ctx, a, "hpl_array_wait");
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_wait");
    HPL__UNLOCK(ctx);
    return rc;
}
