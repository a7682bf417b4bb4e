/* Vulkan interop, array side: the application's own work on the buffer
 * that holds a (sub)array on a device (hplvk_vulkan.h, chapter V2).
 *
 * Acquire is an operation like a kernel's without a dispatch: it binds the
 * view with the application's access, brings what is missing, and submits,
 * so its point is the value the application waits for, and the coherence
 * state records it as a reader or writer. Until release, the memory is held
 * (never evicted) and accesses that would race with the application's work
 * are refused: hplvk cannot order them after work it has not been told the
 * end of. Release submits one command buffer waiting for the application's
 * semaphore, an ordinary hplvk point that every later access orders after. */
#include "api.h"

#include "access.h"
#include "copy.h"
#include "storage.h"
#include "submit.h"
#include "submitter.h"

#include <string.h>

static bool in_range(hpl_context *ctx, int device)
{
    return device >= 0 && device < ctx->device_count;
}

static int bad_device(hpl_context *ctx, int device)
{
    return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "device %d does not exist (the context has %d device%s)", device,
                     ctx->device_count, ctx->device_count == 1 ? "" : "s");
}

/* ---- acquire -------------------------------------------------------------- */

static bool reserve(hpl__array *root)
{
    if (root->acquired_count < root->acquired_capacity)
        return true;
    int cap = root->acquired_capacity ? 2 * root->acquired_capacity : 4;
    hpl__acquisition *list = hpl__realloc(root->acquired, (size_t)cap * sizeof *list);
    if (!list)
        return false;
    root->acquired = list;
    root->acquired_capacity = cap;
    return true;
}

/* Binds a's view with `access` on device, brings what is missing, and
 * submits: *at is when the memory `slot` holds the data. */
static int acquire_op(hpl_context *ctx, hpl__array *a, int device, hpl_access access, int *slot, hpl__point *at)
{
    hpl__op op;
    hpl__op_init(&op, ctx, device);
    hpl__view view = hpl__view_of(a);
    VkCommandBuffer cb = VK_NULL_HANDLE;
    int rc = hpl__op_bind(&op, &view, access, slot);
    if (rc == HPL_OK)
        rc = hpl__op_prepare(&op);
    if (rc == HPL_OK)
        rc = hpl__op_record(&op, &cb);
    if (rc == HPL_OK)
        rc = hpl__op_submit(&op, at);
    hpl__op_release(&op);
    return rc;
}

/* Where view a lies in memory `slot` of device d: a box of its root, dense
 * row-major in a buffer (hpl__layout_of). */
static void describe(hpl__device *d, hpl__array *a, int slot, hpl_vulkan_buffer *out)
{
    hpl__array *root = a->root;
    hpl__layout l = hpl__layout_of(root, slot, d->index);
    VkDeviceAddress base = slot == HPL__HOST ? root->imports[d->index].address - root->imports[d->index].offset
                                             : hpl__instance_of(root, slot)->address;
    VkDeviceSize esize = hpl_type_size(root->type);
    uint64_t last[3];
    for (int i = 0; i < 3; i++)
        last[i] = a->box.hi[i] - 1;
    uint64_t n1 = l.box.hi[1] - l.box.lo[1], n2 = l.box.hi[2] - l.box.lo[2];
    const uint64_t stride[3] = {n1 * n2, n2, 1};
    memset(out, 0, sizeof *out);
    out->buffer = l.buffer;
    out->offset = l.base + hpl__box_offset(&l.box, a->box.lo) * esize;
    out->range = (hpl__box_offset(&l.box, last) - hpl__box_offset(&l.box, a->box.lo) + 1) * esize;
    out->address = base + out->offset;
    for (int i = 0; i < a->ndims; i++)
        out->stride[i] = stride[i];
    out->zero_copy = slot == HPL__HOST;
    out->timeline = d->timeline;
}

static int acquire_locked(hpl_context *ctx, hpl_array handle, int device, hpl_access access, hpl_vulkan_buffer *out)
{
    if (!in_range(ctx, device))
        return bad_device(ctx, device);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK)
        rc = hpl__take_error(ctx, a->root);
    if (rc != HPL_OK)
        return rc;
    /* Room first: once submitted, the acquisition must be recorded. */
    if (!reserve(a->root))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    int slot = 0;
    hpl__point at;
    rc = acquire_op(ctx, a, device, access, &slot, &at);
    if (rc != HPL_OK)
        return rc;
    hpl__device *d = &ctx->devices[device];
    a->root->acquired[a->root->acquired_count++] =
        (hpl__acquisition){.view = a->id, .device = device, .slot = slot, .box = a->box, .access = access};
    a->last_where = device;
    describe(d, a, slot, out);
    out->wait_value = at.value;
    /* The application's submission waits for wait_value: it must be on the
     * queue, not in a batch hplvk has still to submit nor in the hands of
     * its submit thread (the application may share the queue). */
    rc = hpl__batch_flush(d);
    hpl__submit_drain(d);
    return rc;
}

int hpl_array_vulkan_acquire(hpl_context *ctx, hpl_array array, int device, hpl_access access, hpl_vulkan_buffer *out)
{
    if (!ctx || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_vulkan_acquire: %s is NULL", !ctx ? "ctx" : "out");
    if (access < HPL_READ || access > HPL_READ_WRITE)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "hpl_array_vulkan_acquire: access %d is not HPL_READ, HPL_WRITE or HPL_READ_WRITE", (int)access);
    HPL__LOCK(ctx);
    int rc = ctx->span ? hpl__span_unsupported(ctx, "Vulkan interop") : acquire_locked(ctx, array, device, access, out);
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_vulkan_acquire");
    HPL__UNLOCK(ctx);
    return rc;
}

/* ---- release -------------------------------------------------------------- */

static int find(const hpl__array *a, int device)
{
    const hpl__array *root = a->root;
    for (int i = 0; i < root->acquired_count; i++)
        if (root->acquired[i].view == a->id && root->acquired[i].device == device)
            return i;
    return -1;
}

/* The application's work counts as what acquisition q said it would do,
 * done at point `at`. */
static int commit(hpl__array *a, const hpl__acquisition *q, hpl__point at)
{
    hpl__coherence *c = &a->root->coherence;
    hpl__region r;
    hpl__region_init(&r);
    hpl__region_set_box(&r, &a->box); /* one box: inline, cannot fail */
    if (q->access & HPL_READ)
        hpl__coherence_did_read(c, q->slot, &r, at);
    if (!(q->access & HPL_WRITE))
        return HPL_OK;
    /* What it wrote outside the owned box is a kernel's ghost writes. */
    bool ok = hpl__region_subtract_box(&r, &a->owned) && hpl__coherence_did_scribble(c, q->slot, &r, at);
    hpl__region_set_box(&r, &a->owned);
    if (!hpl__box_empty(&a->owned))
        ok = hpl__coherence_did_write(c, q->slot, &r, at) && ok;
    hpl__region_free(&r);
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

static int release_locked(hpl_context *ctx, hpl_array handle, int device, VkSemaphore semaphore, uint64_t value)
{
    if (!in_range(ctx, device))
        return bad_device(ctx, device);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc != HPL_OK)
        return rc;
    int k = find(a, device);
    if (k < 0)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "'%s' is not acquired on device %d (hpl_array_vulkan_acquire)",
                         a->name, device);
    hpl__device *d = &ctx->devices[device];
    hpl__point at;
    /* The command buffer is only hplvk's usual barriers: it makes the
     * application's writes visible to hplvk's work and to the host. */
    rc = hpl__submit_after_external(ctx, d, semaphore, value, &at);
    if (rc != HPL_OK)
        return rc;
    hpl__array *root = a->root;
    hpl__acquisition q = root->acquired[k];
    memmove(&root->acquired[k], &root->acquired[k + 1], (size_t)(root->acquired_count - k - 1) * sizeof q);
    root->acquired_count--;
    a->last_where = device;
    return commit(a, &q, at);
}

int hpl_array_vulkan_release(hpl_context *ctx, hpl_array array, int device, VkSemaphore semaphore, uint64_t value)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_vulkan_release: ctx is NULL");
    HPL__LOCK(ctx);
    int rc = release_locked(ctx, array, device, semaphore, value);
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_vulkan_release");
    HPL__UNLOCK(ctx);
    return rc;
}
