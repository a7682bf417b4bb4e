/* Bounds checks of kernels (hplvk.h chapter 6c): which devices check, the
 * report buffer each of them gives its kernels (shaders/hplvk.glsl,
 * hplvk_report_t), and reading a stray access back as an error.
 *
 * A checking device runs its kernels with the prelude's hplvk_checks set
 * (HPL__CHECKS_ON, or HPL__CHECKS_DETAILED under validation): hpl_at() then
 * makes no access outside the part an argument has on the device (it goes
 * to the part's first element instead), and each invocation that strayed
 * is counted in the report, which keeps one of them: the kernel, and when
 * detailed the argument, the element and the part. The report is
 * host-visible and coherent; a subkernel's dispatches end with a barrier
 * that makes the report's writes visible to the host, so once the host has
 * waited for the work (hpl_finish, a host access) hpl__bounds_poll finds
 * them. */
#include "bounds.h"

#include "config.h"
#include "events.h"
#include "memory.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The report's words (hplvk.glsl, hplvk_report_t, std430). */
enum {
    REPORT_COUNT = 0,
    REPORT_READY = 1,
    REPORT_KERNEL = 2, /* 2 words: the kernel's handle */
    REPORT_ADDRESS = 4, /* 2 words */
    REPORT_ACCESS = 6,
    REPORT_NDIMS = 7,
    REPORT_INDEX = 8, /* 4 words each */
    REPORT_LO = 12,
    REPORT_HI = 16,
    REPORT_WORDS = 20,
};

int hpl__bounds_configure(hpl_context *ctx, bool asked)
{
    bool env = false;
    int rc = hpl__parse_switch("HPLVK_BOUNDS_CHECK", getenv("HPLVK_BOUNDS_CHECK"), false,
                               "check kernels' accesses on CPU and zero-copy devices only",
                               "check every kernel's accesses on every device", &env);
    if (rc != HPL_OK)
        return rc;
    bool all = asked || env;
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__device *d = &ctx->devices[i];
        d->bounds_checks = ctx->validation                                          ? HPL__CHECKS_DETAILED
                           : all || d->zero_copy || d->info.type == HPL_DEVICE_CPU ? HPL__CHECKS_ON
                                                                                   : HPL__CHECKS_OFF;
        d->info.bounds_checked = d->bounds_checks != HPL__CHECKS_OFF;
        if (!d->info.bounds_checked)
            continue;
        rc = hpl__buffer_create(d, HPL__BOUNDS_REPORT_BYTES, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                d->upload_memory_type, true, &d->report_buffer, &d->report_memory);
        void *map = NULL;
        if (rc == HPL_OK && vkMapMemory(d->device, d->report_memory, 0, VK_WHOLE_SIZE, 0, &map) != VK_SUCCESS)
            rc = hpl__fail(HPL_ERROR_VULKAN, "device %s: vkMapMemory of the bounds report failed", d->info.name);
        if (rc != HPL_OK)
            return rc;
        memset(map, 0, HPL__BOUNDS_REPORT_BYTES);
        d->report = map;
        VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                        .buffer = d->report_buffer};
        d->report_address = vkGetBufferDeviceAddress(d->device, &ai);
    }
    return HPL_OK;
}

void hpl__bounds_close(hpl__device *d)
{
    if (d->report_buffer)
        vkDestroyBuffer(d->device, d->report_buffer, NULL);
    if (d->report_memory)
        vkFreeMemory(d->device, d->report_memory, NULL);
    d->report_buffer = VK_NULL_HANDLE;
    d->report_memory = VK_NULL_HANDLE;
    d->report = NULL;
}

void hpl__bounds_barrier(const hpl__device *d, VkCommandBuffer cb)
{
    if (d->bounds_checks == HPL__CHECKS_OFF)
        return;
    VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                         .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                         .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &b, 0, NULL, 0,
                         NULL);
}

/* The array whose memory on device d holds address p (an argument's
 * pointer: its first element present there), or NULL. */
static const hpl__array *array_at(hpl_context *ctx, const hpl__device *d, uint64_t p)
{
    for (uint32_t s = 0; s < ctx->arrays.count; s++) {
        const hpl__array *a = ctx->arrays.slots[s].object;
        if (!a || a->root != a)
            continue;
        for (int i = 0; i < a->instance_count; i++) {
            const hpl__instance *inst = &a->instances[i];
            if (inst->device == d->index && p >= inst->address && p - inst->address < inst->bytes)
                return a;
        }
        const hpl__import *im = &a->imports[d->index];
        if (im->address && p >= im->address && p - im->address < a->bytes)
            return a;
    }
    return NULL;
}

static int put_coords(char *buf, size_t size, int at, const uint32_t *v, uint32_t n)
{
    at = hpl__append(buf, size, at, "(");
    for (uint32_t i = 0; i < n; i++)
        at = hpl__append(buf, size, at, "%s%" PRIu32, i ? ", " : "", v[i]);
    return hpl__append(buf, size, at, ")");
}

/* The names of kernel k's arguments that may be the one that strayed (an
 * array argument of root a's type, n dimensions and the access recorded:
 * hplvk.glsl's 1, 2, 3 are HPL_READ, HPL_WRITE, HPL_READ_WRITE). */
static int put_candidates(char *msg, size_t size, int at, const hpl__kernel *k, const hpl__array *a, uint32_t n,
                          uint32_t access)
{
    const hpl__reflection *r = &k->variants[0].reflection;
    int found = 0;
    for (int i = 0; i < r->arg_count; i++) {
        const hpl_arg_info *g = &r->args[i];
        if (g->kind == HPL_ARG_ARRAY && g->type == a->type && (uint32_t)g->ndims == n && (uint32_t)g->access == access)
            at = hpl__append(msg, size, at, "%s'%s'", found++ ? " or " : " ", g->name);
    }
    return at;
}

/* The message of d's recorded stray access (report words r). */
static void describe(hpl_context *ctx, const hpl__device *d, const uint32_t *r, char *msg, size_t size)
{
    static const char *const access[] = {"accessed", "read", "wrote", "read or wrote"};
    uint64_t kernel_id = (uint64_t)r[REPORT_KERNEL] | (uint64_t)r[REPORT_KERNEL + 1] << 32;
    const hpl__kernel *k = hpl__pool_get(&ctx->kernels, kernel_id);
    int at = hpl__append(msg, size, 0, "kernel '%s' on device %d (%s) ",
                         k ? k->name : kernel_id ? "(since destroyed)" : "(one of the library's)", d->index,
                         d->info.name);
    uint32_t n = r[REPORT_NDIMS];
    if (n >= 1 && n <= 3) {
        uint64_t p = (uint64_t)r[REPORT_ADDRESS] | (uint64_t)r[REPORT_ADDRESS + 1] << 32;
        const hpl__array *a = array_at(ctx, d, p);
        uint32_t last[3];
        for (uint32_t i = 0; i < 3; i++)
            last[i] = r[REPORT_HI + i] - 1;
        at = hpl__append(msg, size, at, "%s element ", access[r[REPORT_ACCESS] & 3]);
        at = put_coords(msg, size, at, &r[REPORT_INDEX], n);
        at = hpl__append(msg, size, at, " of its argument");
        if (k && a)
            at = put_candidates(msg, size, at, k, a, n, r[REPORT_ACCESS]);
        at = hpl__append(msg, size, at, " bound to %s%s%s, outside the part the subkernel was given, ",
                         a ? "array '" : "an array since freed", a ? a->name : "", a ? "'" : "");
        at = put_coords(msg, size, at, &r[REPORT_LO], n);
        at = hpl__append(msg, size, at, "..");
        at = put_coords(msg, size, at, last, n);
    } else {
        at = hpl__append(msg, size, at,
                         "accessed elements outside the parts the subkernel was given (under validation, "
                         "HPLVK_VALIDATION=1, the report names the argument, the element and the part)");
    }
    hpl__append(msg, size, at,
                " (%" PRIu32 " invocation%s strayed; their stray accesses went to the part's first element). A "
                "kernel may touch only the part of each argument its device holds: replicate the argument (do not "
                "annotate it), widen its halo (hpl_part(a, dim, overlap)), or split it along another dimension; "
                "index arrays like the whole array (hpl_global_id), not from 0 in each part",
                r[REPORT_COUNT], r[REPORT_COUNT] == 1 ? "" : "s");
}

int hpl__bounds_poll(hpl_context *ctx)
{
    int rc = HPL_OK;
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__device *d = &ctx->devices[i];
        volatile uint32_t *r = d->report;
        if (!r || __atomic_load_n(&r[REPORT_READY], __ATOMIC_ACQUIRE) == 0)
            continue;
        uint32_t words[REPORT_WORDS];
        for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
            words[w] = r[w];
        r[REPORT_READY] = 0;
        __atomic_store_n(&r[REPORT_COUNT], 0, __ATOMIC_RELEASE);
        d->stats.stray_invocations += words[REPORT_COUNT];
        if (rc != HPL_OK)
            continue; /* the first device's is the error; the others' are counted */
        char msg[768];
        describe(ctx, d, words, msg, sizeof msg);
        hpl__log(&ctx->logger, HPL_LOG_ERROR, "%s", msg);
        rc = hpl__fail(HPL_ERROR_KERNEL_OUT_OF_BOUNDS, "%s", msg);
    }
    return rc;
}
