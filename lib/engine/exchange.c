/* Device -> device through the host storage, chunked and pipelined.
 *
 * A region that must go from a buffer of device A to a buffer of device B
 * goes through the array's host storage, imported into both: A copies it
 * in, B copies it out. As one copy each way the two DMAs run one after the
 * other. A large region is cut into chunks along whole planes / rows of its
 * boxes, and chunk k goes as its own submission on A and its own submission
 * on B that waits for A's (on B's gate, or on A's timeline itself where B
 * imported it: peer.c), so that B drains chunk k-1 while A fills chunk k.
 * The host storage holds the whole array: A never waits for B to free a
 * slot. The operation on B that needed the region comes after the last
 * chunk on B's queue. */
#include "config.h"
#include "copy.h"
#include "events.h"
#include "storage.h"
#include "submit.h"
#include "transfer.h"

#include <stdlib.h>
#include <string.h>

/* Chunk sizes. A chunk costs a submission on each device (a few us of GPU
 * time each on NVIDIA, DESIGN.md section 4, and host time to record it);
 * the cross-device hop (progress thread or peer timeline) is paid once, not
 * per chunk, since chunk k+1 is on its way while chunk k is copied. What is
 * not overlapped is about one chunk: at 20-50 GB/s a 16 MiB chunk moves in
 * 0.3-0.8 ms, so a 1 GiB transfer (64 chunks) loses ~2%. Smaller transfers
 * are cut in 8 (as the hand-written exchange of samples/bench/bench_exchange.c
 * does), chunks no smaller than 2 MiB (40 us at 50 GB/s, several times the
 * submissions' cost); under 8 MiB a transfer goes whole (two copies of at
 * most 80 us each at 50 GB/s: chunks would gain little). Not measured on a
 * GPU yet: HPLVK_EXCHANGE_CHUNK overrides, to measure.
 * Between two CPU devices (Lavapipe) a transfer goes whole: both copies are
 * memcpy by the driver's threads on the host's cores and memory bus, so
 * overlapping them gains nothing, and each chunk's hops cost those cores
 * (measured on the 2-core development machine, under load: 16 MiB 7-10%
 * slower in 8 chunks, 64 MiB 0-5%; the hand-written pipelined exchange is
 * no faster than one copy after the other there either). */
#define EXCHANGE_MAX_CHUNK (16ull << 20)
#define EXCHANGE_MIN_CHUNK (2ull << 20)
#define EXCHANGE_MIN_BYTES (8ull << 20)
#define EXCHANGE_SPLIT 8u

int hpl__exchange_configure(hpl_context *ctx)
{
    const char *env = getenv("HPLVK_EXCHANGE_CHUNK");
    uint64_t bytes = 0;
    int rc = env && *env ? hpl__parse_size("HPLVK_EXCHANGE_CHUNK", env, &bytes) : HPL_OK;
    ctx->exchange_chunk = env && *env ? bytes : UINT64_MAX;
    return rc;
}

uint64_t hpl__exchange_chunk_bytes(const hpl_context *ctx, const hpl__device *a, const hpl__device *b,
                                   uint64_t bytes)
{
    if (ctx->exchange_chunk != UINT64_MAX)
        return ctx->exchange_chunk && bytes > ctx->exchange_chunk ? ctx->exchange_chunk : 0;
    bool cpus = (a->info.type & HPL_DEVICE_CPU) && (b->info.type & HPL_DEVICE_CPU);
    if (cpus || bytes < EXCHANGE_MIN_BYTES)
        return 0;
    uint64_t chunk = (bytes + EXCHANGE_SPLIT - 1) / EXCHANGE_SPLIT;
    return HPL__MIN(HPL__MAX(chunk, EXCHANGE_MIN_CHUNK), EXCHANGE_MAX_CHUNK);
}


/* ---- the exchange ------------------------------------------------------ */

typedef struct exchange {
    hpl_context *ctx;
    hpl__array *root;
    hpl__device *a, *b;
    hpl__transfer out, in; /* src -> host and host -> dst, of the chunk */
    hpl__point waits[HPL__MAX_TIMELINES];
    int wait_count;
} exchange;

/* One copy of region between memories src and dst as an operation of its
 * own on device d, after `waits`. */
static int copy_on(exchange *x, hpl__device *d, const hpl__transfer *t, const hpl__point *waits, int count,
                   hpl__point *at)
{
    VkCommandBuffer cb;
    int rc = hpl__batch_begin(x->ctx, d, waits, count, &cb);
    if (rc != HPL_OK)
        return rc;
    hpl__layout from = hpl__layout_of(x->root, t->src, d->index), to = hpl__layout_of(x->root, t->dst, d->index);
    hpl__record_copy_logged(x->ctx, d, cb, x->root, &t->region, t->src, t->dst, &from, &to, hpl__no_shift);
    return hpl__batch_end(x->ctx, d, at);
}

/* Records a chunk's copy: coherence, and statistics (one transfer per
 * chunk, as many as the trace shows copies). */
static int did_transfer(exchange *x, const hpl__transfer *t, hpl__point at)
{
    hpl__count_transfer(x->ctx, x->root, t);
    return hpl__coherence_did_transfer(&x->root->coherence, t, at)
               ? HPL_OK
               : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

static int exchange_chunk(void *user, const hpl__region *chunk)
{
    exchange *x = user;
    if (!hpl__region_copy(&x->out.region, chunk) || !hpl__region_copy(&x->in.region, chunk))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    hpl__point on_a, on_b;
    int rc = copy_on(x, x->a, &x->out, x->waits, x->wait_count, &on_a);
    /* Later chunks follow the first on A's queue, and write other elements
     * of the host storage than B is reading: they wait for nothing more. */
    x->wait_count = 0;
    if (rc == HPL_OK)
        rc = did_transfer(x, &x->out, on_a);
    /* B's copy waits for A's chunk alone: A's first chunk waited for the
     * host storage's earlier writers, B's buffer is B's own (queue order). */
    if (rc == HPL_OK)
        rc = copy_on(x, x->b, &x->in, &on_a, 1, &on_b);
    if (rc == HPL_OK)
        rc = did_transfer(x, &x->in, on_b);
    return rc;
}

/* Runs steps out (src -> host) and in (host -> dst) chunk by chunk. */
static int run_exchange(hpl_context *ctx, hpl__array *root, const hpl__transfer *out, const hpl__transfer *in,
                        uint64_t chunk_bytes)
{
    hpl__coherence *c = &root->coherence;
    exchange x = {.ctx = ctx,
                  .root = root,
                  .a = &ctx->devices[c->mem[out->src].device],
                  .b = &ctx->devices[c->mem[in->dst].device],
                  .out = {.src = out->src, .dst = HPL__HOST},
                  .in = {.src = HPL__HOST, .dst = in->dst}};
    /* Writing the host copy: A's first chunk waits for its writers and every
     * device still reading it (as hpl__stage_to_host). */
    x.wait_count = hpl__coherence_wait_points(c, HPL__HOST, &out->region, true, x.waits, 0);
    hpl__region_init(&x.out.region);
    hpl__region_init(&x.in.region);
    uint64_t esize = hpl_type_size(root->type);
    int rc = hpl__region_chunks(&out->region, HPL__MAX(chunk_bytes / esize, 1), exchange_chunk, &x);
    hpl__region_free(&x.out.region);
    hpl__region_free(&x.in.region);
    return rc;
}

/* Are steps out and in one piece going from a buffer of one device to a
 * buffer of another through the host (hpl__coherence_plan_read's pair)? */
static bool is_exchange(const hpl__coherence *c, const hpl__transfer *out, const hpl__transfer *in)
{
    return out->src != HPL__HOST && out->dst == HPL__HOST && in->src == HPL__HOST && in->dst != HPL__HOST &&
           c->mem[out->src].device != c->mem[in->dst].device && hpl__region_equal(&out->region, &in->region);
}

int hpl__exchange_plan(hpl_context *ctx, hpl__array *root, hpl__transfer_plan *plan)
{
    uint64_t esize = hpl_type_size(root->type);
    int rc = HPL_OK;
    const hpl__coherence *c = &root->coherence;
    for (int i = 0; rc == HPL_OK && i + 1 < plan->count; i++) {
        const hpl__transfer *out = &plan->steps[i], *in = &plan->steps[i + 1];
        if (!is_exchange(c, out, in))
            continue;
        uint64_t chunk = hpl__exchange_chunk_bytes(ctx, &ctx->devices[c->mem[out->src].device],
                                                   &ctx->devices[c->mem[in->dst].device],
                                                   hpl__region_volume(&out->region) * esize);
        if (!chunk)
            continue;
        /* Both devices DMA the host storage; where one cannot import it,
         * the pair goes as two staged copies. */
        int a = c->mem[out->src].device, b = c->mem[in->dst].device;
        rc = hpl__host_storage_import(ctx, root, a);
        if (rc == HPL_OK)
            rc = hpl__host_storage_import(ctx, root, b);
        if (rc != HPL_OK || root->imports[a].staged || root->imports[b].staged)
            continue;
        rc = run_exchange(ctx, root, out, in, chunk);
        if (rc == HPL_OK)
            hpl__transfer_plan_drop(plan, i--, 2);
    }
    return rc;
}
