/* The pieces of the pipelined device -> device exchange (lib/engine/exchange.c,
 * lib/engine/peer.c) on their own:
 *   - hpl__region_chunks on random regions of 1-D, 2-D and 3-D arrays and
 *     random chunk sizes: the chunks cover the region exactly, never
 *     overlap, none is empty or over the size; a one-box region gives as
 *     many chunks as its pieces (whole planes, else rows of one plane, else
 *     pieces of one row); an error of the callback stops the cut;
 *   - the chunk-size policy (hpl__exchange_chunk_bytes), default (never
 *     between two CPU devices) and forced;
 *   - on "cpu:2" with the event log on, a 16 MiB transfer from device 0 to
 *     device 1 in chunks of 2 MiB (HPLVK_EXCHANGE_CHUNK): one copy to the host per chunk on device 0 and one from the
 *     host per chunk on device 1, in chunk order, sizes adding up; device
 *     1's copy of a chunk runs after device 0's copy of it ends (within the
 *     timestamps' conversion error). Whether device 1's first copy started
 *     before device 0's last one ended (the overlap) depends on the
 *     machine's load: printed, not asserted;
 *   - peer timelines are set up only between devices that can share them:
 *     none on Lavapipe (printed either way). */
#define _POSIX_C_SOURCE 200809L
#include "device.h"
#include "events.h"
#include "harness.h"
#include "submit.h"
#include "test_util.h"
#include "transfer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the cut ------------------------------------------------------------- */

typedef struct collected {
    hpl__region seen; /* union of the chunks so far */
    uint64_t max, volume;
    int chunks, fail_at;
    bool ok;
} collected;

static int collect(void *user, const hpl__region *chunk)
{
    collected *c = user;
    if (c->fail_at && c->chunks + 1 == c->fail_at)
        return HPL_ERROR_INTERNAL;
    c->chunks++;
    uint64_t v = hpl__region_volume(chunk);
    bool disjoint = true;
    for (uint32_t i = 0; i < chunk->count; i++)
        disjoint = disjoint && !hpl__region_intersects_box(&c->seen, &chunk->boxes[i]);
    if (v == 0 || v > c->max || !disjoint)
        c->ok = false;
    c->volume += v;
    if (!hpl__region_add(&c->seen, chunk))
        c->ok = false;
    return HPL_OK;
}

static uint64_t rnd(uint64_t *s, uint64_t n)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (*s >> 33) % n;
}

static hpl__box random_box(uint64_t *s, int ndims, const uint64_t dims[3])
{
    hpl__box b = {{0, 0, 0}, {1, 1, 1}};
    for (int d = 0; d < ndims; d++) {
        uint64_t lo = rnd(s, dims[d]), hi = lo + 1 + rnd(s, dims[d] - lo);
        b.lo[d] = lo;
        b.hi[d] = hi;
    }
    return b;
}

static void random_regions(void)
{
    uint64_t seed = 12345;
    int cases = 0;
    for (int t = 0; t < 3000; t++) {
        int ndims = 1 + (int)rnd(&seed, 3);
        uint64_t dims[3] = {1, 1, 1};
        for (int d = 0; d < ndims; d++)
            dims[d] = 1 + rnd(&seed, ndims == 1 ? 5000 : ndims == 2 ? 90 : 30);
        hpl__region r;
        hpl__region_init(&r);
        int add = 1 + (int)rnd(&seed, 4), sub = (int)rnd(&seed, 3);
        for (int i = 0; i < add; i++) {
            hpl__box b = random_box(&seed, ndims, dims);
            CHECK(hpl__region_add_box(&r, &b), "out of memory");
        }
        for (int i = 0; i < sub; i++) {
            hpl__box b = random_box(&seed, ndims, dims);
            CHECK(hpl__region_subtract_box(&r, &b), "out of memory");
        }
        uint64_t max = 1 + rnd(&seed, rnd(&seed, 2) ? 50 : 3000);
        collected c = {.max = max, .ok = true};
        hpl__region_init(&c.seen);
        int rc = hpl__region_chunks(&r, max, collect, &c);
        bool exact = hpl__region_equal(&c.seen, &r) && c.volume == hpl__region_volume(&r);
        CHECK(rc == HPL_OK && c.ok && exact,
              "case %d: %d-D %" PRIu64 "x%" PRIu64 "x%" PRIu64 ", %u boxes, max %" PRIu64
              ": rc %d, chunks ok %d, cover exact %d",
              t, ndims, dims[0], dims[1], dims[2], r.count, max, rc, c.ok, exact);
        if (r.count == 1) {
            const hpl__box *b = &r.boxes[0];
            uint64_t e[3] = {b->hi[0] - b->lo[0], b->hi[1] - b->lo[1], b->hi[2] - b->lo[2]};
            CHECK((uint64_t)c.chunks == box_pieces(e, max), "case %d: one box %" PRIu64 "x%" PRIu64 "x%" PRIu64
                  ", max %" PRIu64 ": %d chunks, want %" PRIu64,
                  t, e[0], e[1], e[2], max, c.chunks, box_pieces(e, max));
        }
        cases++;
        hpl__region_free(&c.seen);
        hpl__region_free(&r);
    }
    th_note("%d random regions cut", cases);

    /* The callback's error stops the cut and comes back. */
    hpl__region r;
    hpl__region_init(&r);
    hpl__box b = {{0, 0, 0}, {100, 1, 1}};
    CHECK(hpl__region_set_box(&r, &b), "out of memory");
    collected c = {.max = 10, .ok = true, .fail_at = 4};
    hpl__region_init(&c.seen);
    int rc = hpl__region_chunks(&r, 10, collect, &c);
    CHECK(rc == HPL_ERROR_INTERNAL && c.chunks == 3, "an error at chunk 4: rc %d after %d chunks", rc, c.chunks);
    hpl__region_free(&c.seen);
    hpl__region_free(&r);
}

/* ---- the policy ------------------------------------------------------------ */

static void policy(void)
{
    static hpl_context fake; /* only exchange_chunk is read */
    static hpl__device gpu, cpu; /* only info.type is read */
    gpu.info.type = HPL_DEVICE_DISCRETE_GPU;
    cpu.info.type = HPL_DEVICE_CPU;
    const uint64_t M = 1u << 20;
    fake.exchange_chunk = UINT64_MAX;
    CHECK(hpl__exchange_chunk_bytes(&fake, &gpu, &gpu, 64 * 1024) == 0, "64 KiB is not cut");
    CHECK(hpl__exchange_chunk_bytes(&fake, &gpu, &gpu, 8 * M - 1) == 0, "just under 8 MiB is not cut");
    CHECK(hpl__exchange_chunk_bytes(&fake, &gpu, &gpu, 8 * M) == 2 * M, "8 MiB: 2 MiB chunks");
    CHECK(hpl__exchange_chunk_bytes(&fake, &gpu, &gpu, 16 * M) == 2 * M, "16 MiB: 2 MiB chunks");
    CHECK(hpl__exchange_chunk_bytes(&fake, &gpu, &gpu, 64 * M) == 8 * M, "64 MiB: 8 MiB chunks");
    CHECK(hpl__exchange_chunk_bytes(&fake, &gpu, &gpu, 1024 * M) == 16 * M, "1 GiB: 16 MiB chunks");
    CHECK(hpl__exchange_chunk_bytes(&fake, &cpu, &gpu, 64 * M) == 8 * M &&
              hpl__exchange_chunk_bytes(&fake, &gpu, &cpu, 64 * M) == 8 * M,
          "64 MiB between a CPU and a GPU: 8 MiB chunks");
    CHECK(hpl__exchange_chunk_bytes(&fake, &cpu, &cpu, 1024 * M) == 0, "between two CPU devices: never cut");
    fake.exchange_chunk = 4096;
    CHECK(hpl__exchange_chunk_bytes(&fake, &cpu, &cpu, 4096) == 0 &&
              hpl__exchange_chunk_bytes(&fake, &cpu, &cpu, 4097) == 4096,
          "HPLVK_EXCHANGE_CHUNK=4096: larger transfers in 4096-byte chunks");
    fake.exchange_chunk = 0;
    CHECK(hpl__exchange_chunk_bytes(&fake, &gpu, &gpu, 1024 * M) == 0, "HPLVK_EXCHANGE_CHUNK=0: never cut");
}

/* ---- the copies, from the event log ----------------------------------------- */

#define XFER_BYTES (16ull << 20)

static const char *stamp_src = "#include <hplvk.glsl>\n"
                               "hpl_args { hpl_out(uint, 1) a; };\n"
                               "void main() { uint i = hpl_global_id.x; hpl_at(a, i) = i * 3u + 1u; }\n";
static const char *sum_src = "#include <hplvk.glsl>\n"
                             "hpl_args { hpl_in(uint, 1) a; hpl_out(uint, 1) b; };\n"
                             "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = hpl_at(a, i) + 7u; }\n";

#define MAX_COPIES 64

typedef struct copies {
    uint64_t from_serial;
    int n[2];
    uint64_t bytes[2], begin[2][MAX_COPIES], end[2][MAX_COPIES], first[2][MAX_COPIES];
    bool gpu_time;
} copies;

static void take_copy(void *user, const hpl__event *e, uint64_t begin_ns, uint64_t end_ns)
{
    copies *c = user;
    if (e->kind != HPL__EVENT_COPY)
        return;
    int side = e->device == 0 && e->u.copy.direction == HPL__COPY_TO_HOST     ? 0
               : e->device == 1 && e->u.copy.direction == HPL__COPY_TO_DEVICE ? 1
                                                                               : -1;
    if (side < 0 || c->n[side] == MAX_COPIES)
        return;
    int k = c->n[side]++;
    c->bytes[side] += e->u.copy.bytes;
    c->begin[side][k] = begin_ns;
    c->end[side][k] = end_ns;
    c->first[side][k] = e->u.copy.bounds.lo[0];
    c->gpu_time = e->gpu_time;
}

static void pipeline(void)
{
    setenv("HPLVK_EXCHANGE_CHUNK", "2M", 1); /* CPU devices do not cut by default */
    hpl_context *ctx = th_context("cpu:2");
    unsetenv("HPLVK_EXCHANGE_CHUNK");
    hpl_device_info i0, i1;
    CHECK_OK(hpl_device_get_info(ctx, 0, &i0));
    CHECK_OK(hpl_device_get_info(ctx, 1, &i1));
    th_note("peer timelines: device 1 waits on %d other device(s)' timelines directly (validation is on: none "
            "expected)", hpl__peer_count(ctx, 1));
    CHECK(hpl__peer_count(ctx, 0) == 0 && hpl__peer_count(ctx, 1) == 0,
          "peer timelines with validation on (the layer cannot follow them)");
    if (i0.zero_copy || i1.zero_copy) {
        th_note("a zero-copy device: nothing moves, the copies are not checked");
        hpl_context_destroy(ctx);
        return;
    }
    hpl_kernel stamp = th_kernel(ctx, stamp_src), sum = th_kernel(ctx, sum_src);
    hpl_array a = th_array(ctx, HPL_UINT32, XFER_BYTES / 4, 0, 0), b = th_array(ctx, HPL_UINT32, XFER_BYTES / 4, 0, 0);
    CHECK_OK(hpl_eval(ctx, stamp, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(a))));
    CHECK_OK(hpl_finish(ctx));

    copies c = {0};
    HPL__LOCK(ctx);
    CHECK_OK(hpl__events_enable(ctx, true));
    c.from_serial = hpl__events_next_serial(ctx);
    HPL__UNLOCK(ctx);
    CHECK_OK(hpl_eval(ctx, sum, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(a), hpl_arr(b))));
    HPL__LOCK(ctx);
    CHECK_OK(hpl__wait_idle(ctx));
    int left = hpl__events_each(ctx, c.from_serial, take_copy, &c);
    hpl__events_enable(ctx, false);
    HPL__UNLOCK(ctx);

    uint64_t chunk = hpl__exchange_chunk_bytes(ctx, &ctx->devices[0], &ctx->devices[1], XFER_BYTES), want = (XFER_BYTES + chunk - 1) / chunk;
    CHECK(left == 0, "%d events still in flight after a wait", left);
    CHECK(c.n[0] == (int)want && c.n[1] == (int)want, "%d copies out of device 0, %d into device 1: want %" PRIu64,
          c.n[0], c.n[1], want);
    CHECK(c.bytes[0] == XFER_BYTES && c.bytes[1] == XFER_BYTES, "%" PRIu64 " bytes out, %" PRIu64 " in", c.bytes[0],
          c.bytes[1]);
    for (int k = 1; k < c.n[0] && k < c.n[1]; k++)
        CHECK(c.first[0][k] > c.first[0][k - 1] && c.first[1][k] == c.first[0][k],
              "chunk %d: out of order (device 0 from %" PRIu64 ", device 1 from %" PRIu64 ")", k, c.first[0][k],
              c.first[1][k]);
    /* Device 1's copy of chunk k reads what device 0's copy of it wrote. With
     * GPU timestamps both come from one host clock through calibrations
     * (error bound: otherData of a trace; here 1 ms of slack). */
    const uint64_t slack = 1000000;
    for (int k = 0; c.gpu_time && k < c.n[0] && k < c.n[1]; k++)
        CHECK(c.begin[1][k] + slack >= c.end[0][k], "chunk %d began on device 1 %.3f ms before it was done on device 0",
              k, (double)(c.end[0][k] - c.begin[1][k]) / 1e6);
    if (c.n[0] == (int)want && c.n[1] == (int)want && want > 1) {
        double overlap = ((double)c.end[0][want - 1] - (double)c.begin[1][0]) / 1e6;
        double total = ((double)c.end[1][want - 1] - (double)c.begin[0][0]) / 1e6;
        th_note("%" PRIu64 " chunks of %" PRIu64 " KiB (%s times): device 1 began its first chunk %.3f ms %s device 0 "
                "ended its last; %.3f ms from the first copy out to the last copy in",
                want, chunk >> 10, c.gpu_time ? "GPU" : "host", overlap < 0 ? -overlap : overlap,
                overlap > 0 ? "before" : "after", total);
    }
    const uint32_t *p = th_access(ctx, b, HPL_READ);
    uint64_t bad = 0;
    for (uint64_t i = 0; p && i < XFER_BYTES / 4; i++)
        bad += p[i] != (uint32_t)i * 3u + 8u;
    CHECK(p && bad == 0, "%" PRIu64 " elements wrong", bad);
    hpl_context_destroy(ctx);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    unsetenv("HPLVK_EXCHANGE_CHUNK"); /* the cases choose their chunks */
    random_regions();
    policy();
    pipeline();
    return th_finish(NULL);
}
