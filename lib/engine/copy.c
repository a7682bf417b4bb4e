/* Copying regions of an array between two layouts: where its elements lie
 * in the host storage (imported into a device) or a device buffer, the runs
 * of contiguous elements of a box, and recording a box's runs as
 * vkCmdCopyBuffer regions or, when they are short and many, as dispatches
 * of the copy kernel (shaders/copy.comp); or copying them on the host. */
#include "copy.h"

#include "embedded.h"
#include "partition.h"
#include "storage.h"
#include "validate.h"
#include "vk.h"

#include <stdlib.h>
#include <string.h>

uint64_t hpl__box_offset(const hpl__box *outer, const uint64_t point[3])
{
    uint64_t n1 = outer->hi[1] - outer->lo[1], n2 = outer->hi[2] - outer->lo[2];
    return ((point[0] - outer->lo[0]) * n1 + (point[1] - outer->lo[1])) * n2 + (point[2] - outer->lo[2]);
}

hpl__layout hpl__layout_of(hpl__array *root, int slot, int device)
{
    if (slot == HPL__HOST) {
        const hpl__import *im = &root->imports[device];
        return (hpl__layout){
            .buffer = im->buffer, .base = im->offset, .address = im->address, .box = root->coherence.whole};
    }
    const hpl__instance *inst = hpl__instance_of(root, slot);
    return (hpl__layout){.buffer = inst->buffer, .base = 0, .address = inst->address, .box = inst->box};
}

/* ---- recording copies -------------------------------------------------- */

#define COPY_BATCH 64

typedef struct copy_batch {
    VkCommandBuffer cb;
    VkBuffer src, dst;
    VkBufferCopy regions[COPY_BATCH];
    uint32_t count;
} copy_batch;

static void batch_flush(copy_batch *b)
{
    if (b->count)
        vkCmdCopyBuffer(b->cb, b->src, b->dst, b->count, b->regions);
    b->count = 0;
}

static void batch_add(copy_batch *b, VkDeviceSize src, VkDeviceSize dst, VkDeviceSize size)
{
    VkBufferCopy *last = b->count ? &b->regions[b->count - 1] : NULL;
    if (last && last->srcOffset + last->size == src && last->dstOffset + last->size == dst) {
        last->size += size; /* contiguous with the last run */
        return;
    }
    if (b->count == COPY_BATCH)
        batch_flush(b);
    b->regions[b->count++] = (VkBufferCopy){src, dst, size};
}

static uint64_t extent(const hpl__box *b, int d)
{
    return b->hi[d] - b->lo[d];
}

/* The contiguous runs of a box between two layouts: n0 x n1 runs of `run`
 * elements, run (r0, r1) from element from + r0 * src_pitch[0] +
 * r1 * src_pitch[1] of the source to to + r0 * dst_pitch[0] +
 * r1 * dst_pitch[1] of the destination (offsets from each layout's first
 * element). Whole rows make one run per plane, whole planes one run. */
typedef struct box_shape {
    uint64_t n0, n1, run;
    uint64_t from, to;
    uint64_t src_pitch[2], dst_pitch[2];
} box_shape;

static box_shape shape_of(const hpl__box *x, const hpl__box *src, const hpl__box *dst, const int64_t shift[3])
{
    uint64_t e0 = extent(x, 0), e1 = extent(x, 1), e2 = extent(x, 2);
    bool whole_rows = e2 == extent(src, 2) && e2 == extent(dst, 2);
    bool whole_planes = whole_rows && e1 == extent(src, 1) && e1 == extent(dst, 1);
    uint64_t from[3];
    for (int i = 0; i < 3; i++)
        from[i] = x->lo[i] + (uint64_t)shift[i];
    box_shape s = {.n0 = whole_planes ? 1 : e0,
                   .n1 = whole_rows ? 1 : e1,
                   .run = whole_planes ? e0 * e1 * e2 : whole_rows ? e1 * e2 : e2,
                   .from = hpl__box_offset(src, from),
                   .to = hpl__box_offset(dst, x->lo),
                   .src_pitch = {extent(src, 1) * extent(src, 2), extent(src, 2)},
                   .dst_pitch = {extent(dst, 1) * extent(dst, 2), extent(dst, 2)}};
    return s;
}

static void shape_runs(const box_shape *s, hpl__run_fn fn, void *user)
{
    for (uint64_t r0 = 0; r0 < s->n0; r0++)
        for (uint64_t r1 = 0; r1 < s->n1; r1++)
            fn(user, s->from + r0 * s->src_pitch[0] + r1 * s->src_pitch[1],
               s->to + r0 * s->dst_pitch[0] + r1 * s->dst_pitch[1], s->run);
}

void hpl__box_runs(const hpl__box *x, const hpl__box *src, const hpl__box *dst, const int64_t shift[3],
                   hpl__run_fn fn, void *user)
{
    box_shape s = shape_of(x, src, dst, shift);
    shape_runs(&s, fn, user);
}

const int64_t hpl__no_shift[3] = {0, 0, 0};

typedef struct host_job {
    const uint8_t *src;
    uint8_t *dst;
    size_t esize;
} host_job;

static void host_run(void *user, uint64_t from, uint64_t to, uint64_t count)
{
    host_job *j = user;
    memcpy(j->dst + to * j->esize, j->src + from * j->esize, count * j->esize);
}

void hpl__host_copy(const hpl__box *x, const uint8_t *src, const hpl__box *src_box, uint8_t *dst,
                    const hpl__box *dst_box, const int64_t shift[3], size_t esize)
{
    host_job j = {.src = src, .dst = dst, .esize = esize};
    hpl__box_runs(x, src_box, dst_box, shift, host_run, &j);
}

/* ---- the copy kernel ----------------------------------------------------- */

/* A box goes by the copy kernel when it has this many runs or more, each
 * shorter than KERNEL_RUN_BYTES: an H200 spends 1.8-2.8 us on a copy
 * region whatever its size, the time 64-128 KiB take over PCIe 5, and a
 * dispatch costs a few (samples/bench/bench_strided). */
#define KERNEL_MIN_RUNS 16
#define KERNEL_RUN_BYTES (64u * 1024u)
/* Units one dispatch copies at most: its invocation indices stay 32-bit. */
#define KERNEL_MAX_UNITS (1u << 30)

typedef struct copy_push {
    uint64_t src, dst;
    uint64_t src_pitch[2], dst_pitch[2]; /* bytes */
    uint32_t runs, run_units, n1;
} copy_push;
_Static_assert(sizeof(copy_push) <= HPL__PUSH_BYTES, "the copy kernel's push constants fit the pipeline layout");

/* The unit (4 or 16 bytes) in which the copy kernel moves box shape s
 * between the layouts' addresses src and dst (of their first elements), or
 * 0 where it does not: a device without the kernel, a buffer without an
 * address, few or long runs, misaligned elements. */
static uint32_t kernel_unit(const hpl__device *d, const box_shape *s, VkDeviceAddress src, VkDeviceAddress dst,
                            uint64_t esize)
{
    uint64_t run_bytes = s->run * esize;
    if (!d->copy_kernel || !src || !dst || s->n0 * s->n1 < KERNEL_MIN_RUNS || run_bytes >= KERNEL_RUN_BYTES)
        return 0;
    uint64_t bits = (src + s->from * esize) | (dst + s->to * esize) | run_bytes;
    for (int i = 0; i < 2; i++)
        bits |= s->src_pitch[i] * esize | s->dst_pitch[i] * esize;
    return bits % 16 == 0 ? 16 : bits % 4 == 0 ? 4 : 0;
}

typedef struct kernel_job {
    VkCommandBuffer cb;
    const hpl__device *d;
    copy_push push;
    VkDeviceAddress src, dst; /* of the first run */
} kernel_job;

/* One dispatch: the c0 x c1 runs from run (r0, r1); the shader loops over
 * invocations past the 65535 groups every device can launch. */
static void kernel_dispatch(void *user, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1)
{
    kernel_job *j = user;
    copy_push *p = &j->push;
    p->src = j->src + r0 * p->src_pitch[0] + r1 * p->src_pitch[1];
    p->dst = j->dst + r0 * p->dst_pitch[0] + r1 * p->dst_pitch[1];
    p->runs = (uint32_t)(c0 * c1);
    p->n1 = (uint32_t)c1;
    uint64_t groups = ((uint64_t)p->runs * p->run_units + 63) / 64;
    vkCmdPushConstants(j->cb, j->d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof *p, p);
    vkCmdDispatch(j->cb, (uint32_t)HPL__MIN(groups, 65535u), 1, 1);
}

/* Records box shape s as copy-kernel dispatches of at most KERNEL_MAX_UNITS
 * units each (hpl__copy_chunks). */
static void record_kernel(VkCommandBuffer cb, const hpl__device *d, const box_shape *s, VkDeviceAddress src,
                          VkDeviceAddress dst, uint64_t esize, uint32_t unit)
{
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->copy_pipeline[unit == 16]);
    kernel_job j = {.cb = cb,
                    .d = d,
                    .push = {.run_units = (uint32_t)(s->run * esize / unit)},
                    .src = src + s->from * esize,
                    .dst = dst + s->to * esize};
    for (int i = 0; i < 2; i++) {
        j.push.src_pitch[i] = s->src_pitch[i] * esize;
        j.push.dst_pitch[i] = s->dst_pitch[i] * esize;
    }
    hpl__copy_chunks(s->n0, s->n1, j.push.run_units, KERNEL_MAX_UNITS, kernel_dispatch, &j);
}

bool hpl__copy_by_kernel(const hpl__device *d, const hpl__array *root, const hpl__region *region,
                         const hpl__layout *src, const hpl__layout *dst)
{
    uint64_t esize = hpl_type_size(root->type);
    for (uint32_t i = 0; d->copy_kernel && i < region->count; i++) {
        box_shape s = shape_of(&region->boxes[i], &src->box, &dst->box, hpl__no_shift);
        if (kernel_unit(d, &s, src->address, dst->address, esize))
            return true;
    }
    return false;
}

/* HPLVK_STRIDED_COPY (untrusted): auto, kernel or dma. */
static int copy_policy(const hpl__device *d, bool *kernel)
{
    const char *env = getenv("HPLVK_STRIDED_COPY");
    bool cpu = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    if (!env || !*env || !strcmp(env, "auto"))
        *kernel = !cpu;
    else if (!strcmp(env, "kernel") || !strcmp(env, "dma"))
        *kernel = !strcmp(env, "kernel");
    else
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "HPLVK_STRIDED_COPY='%.40s' is not auto, kernel or dma", env);
    *kernel = *kernel && (d->features & HPL__FEATURE_INT64);
    return HPL_OK;
}

static int copy_pipelines(hpl__device *d)
{
    const uint32_t *code[2] = {hpl__copy__4_spv, hpl__copy__16_spv};
    size_t words[2] = {hpl__copy__4_spv_words, hpl__copy__16_spv_words};
    for (int i = 0; i < 2; i++) {
        VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                       .codeSize = words[i] * 4,
                                       .pCode = code[i]};
        VkShaderModule module;
        VkResult r = vkCreateShaderModule(d->device, &mi, NULL, &module);
        if (r != VK_SUCCESS)
            return hpl__vk_error(r, "vkCreateShaderModule (copy kernel)");
        VkComputePipelineCreateInfo pi = {
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                      .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                      .module = module,
                      .pName = "main"},
            .layout = d->pipeline_layout};
        r = vkCreateComputePipelines(d->device, d->pipeline_cache, 1, &pi, NULL, &d->copy_pipeline[i]);
        vkDestroyShaderModule(d->device, module, NULL);
        if (r != VK_SUCCESS)
            return hpl__vk_error(r, "vkCreateComputePipelines (copy kernel)");
    }
    return HPL_OK;
}

int hpl__copy_open(hpl_context *ctx, hpl__device *d)
{
    bool kernel = false;
    int rc = copy_policy(d, &kernel);
    if (rc != HPL_OK || !kernel)
        return rc;
    /* The kernel only makes copies faster: without it they are regions. */
    if (copy_pipelines(d) != HPL_OK) {
        hpl__log(&ctx->logger, HPL_LOG_WARNING, "device %s: no copy kernel (%s); strided boxes move as copy regions",
                 d->info.name, hpl_last_error());
        hpl__copy_close(d);
        return HPL_OK;
    }
    d->copy_kernel = true;
    return HPL_OK;
}

void hpl__copy_close(hpl__device *d)
{
    for (int i = 0; i < 2; i++)
        if (d->copy_pipeline[i])
            vkDestroyPipeline(d->device, d->copy_pipeline[i], NULL);
    memset(d->copy_pipeline, 0, sizeof d->copy_pipeline);
    d->copy_kernel = false;
}

/* ---- recording ------------------------------------------------------------- */

typedef struct batch_job {
    copy_batch batch;
    const hpl__layout *src, *dst;
    VkDeviceSize esize;
} batch_job;

static void add_run(void *user, uint64_t from, uint64_t to, uint64_t count)
{
    batch_job *j = user;
    batch_add(&j->batch, j->src->base + from * j->esize, j->dst->base + to * j->esize, count * j->esize);
}

void hpl__record_copy(hpl__device *d, VkCommandBuffer cb, const hpl__array *root, const hpl__region *region,
                      const hpl__layout *src, const hpl__layout *dst, const int64_t shift[3])
{
    batch_job j = {.batch = {.cb = cb, .src = src->buffer, .dst = dst->buffer},
                   .src = src,
                   .dst = dst,
                   .esize = hpl_type_size(root->type)};
    for (uint32_t i = 0; i < region->count; i++) {
        box_shape s = shape_of(&region->boxes[i], &src->box, &dst->box, shift);
        uint32_t unit = kernel_unit(d, &s, src->address, dst->address, j.esize);
        if (!unit) {
            shape_runs(&s, add_run, &j);
            continue;
        }
        /* The boxes of a region are disjoint: the kernel's writes and the
         * regions' need no order between them. */
        record_kernel(cb, d, &s, src->address, dst->address, j.esize, unit);
        d->stats.copy_kernels++;
    }
    batch_flush(&j.batch);
}
