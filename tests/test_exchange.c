/* Device -> device transfers through the host, chunked and pipelined
 * (issue 15). Data written on device 0 and read on device 1 is bit-exact;
 * hpl_stats shows exactly its bytes leaving device 0 (to_host) and reaching
 * device 1 (to_device); a large transfer is visibly chunked: one copy each
 * way per chunk (the copy counts), one operation per chunk on device 1, and
 * device 1's chunk copies in submissions of their own (each waits for its
 * chunk on device 0 only, so they cannot share one; a chunk already done on
 * device 0 may join the one before, so only "several" is asserted). By
 * default two CPU devices (Lavapipe) move it whole (no gain on one memory
 * bus): that is checked, and HPLVK_EXCHANGE_CHUNK=4M then cuts it.
 *
 * With HPLVK_EXCHANGE_CHUNK small enough to cut everything, chunk edges are
 * checked against the host in 1-D, 2-D and 3-D arrays (groups of whole
 * planes, groups of rows of one plane, pieces of one row), in subarrays
 * that are not contiguous in their root (a column block, a 3-D block), in a
 * region of several boxes, and in the halo rows of a stencil split over
 * three devices. The copy counts must equal the chunks the documented cut
 * gives (tests/test_exchange.c's model, box_pieces).
 *
 * Everything runs under validation (cross-device waits then go through the
 * progress thread); the large transfer and the stencil run again without
 * it, where logical devices of one GPU wait on each other's timelines
 * directly (peer timelines; never on Lavapipe: Mesa 22.3 cannot share a
 * timeline between devices, which the test notes). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED 0x1234567u
#define MASK 0x5a5a5a5au

/* a[lin] = lin * 2654435761 + seed, lin the row-major index in a. */
static const char *stamp_src[3] = {
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) a; uint seed; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(a, i) = i * 2654435761u + seed; }\n",
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 2) a; uint seed; };\n"
    "void main() { uvec3 id = hpl_global_id; uint lin = id.x * a.dims.y + id.y;\n"
    "    hpl_at2(a, id.x, id.y) = lin * 2654435761u + seed; }\n",
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 3) a; uint seed; };\n"
    "void main() { uvec3 id = hpl_global_id; uint lin = (id.x * a.dims.y + id.y) * a.dims.z + id.z;\n"
    "    hpl_at3(a, id.x, id.y, id.z) = lin * 2654435761u + seed; }\n",
};

/* b = a ^ MASK, over a's extents. */
static const char *map_src[3] = {
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) a; hpl_out(uint, 1) b; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = hpl_at(a, i) ^ 0x5a5a5a5au; }\n",
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) a; hpl_out(uint, 2) b; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(b, id.x, id.y) = hpl_at2(a, id.x, id.y) ^ 0x5a5a5a5au; }\n",
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 3) a; hpl_out(uint, 3) b; };\n"
    "void main() { uvec3 id = hpl_global_id;\n"
    "    hpl_at3(b, id.x, id.y, id.z) = hpl_at3(a, id.x, id.y, id.z) ^ 0x5a5a5a5au; }\n",
};

/* v + the rows above and below, 2v in the middle; first and last rows
 * copied: exact in uint on every device. */
static const char *stencil_src = STENCIL_ROWS_SRC("2u");

typedef struct kernels {
    hpl_kernel stamp[3], map[3], stencil;
} kernels;

static kernels make_kernels(hpl_context *ctx)
{
    kernels k;
    for (int d = 0; d < 3; d++) {
        k.stamp[d] = th_kernel(ctx, stamp_src[d]);
        k.map[d] = th_kernel(ctx, map_src[d]);
    }
    k.stencil = th_kernel(ctx, stencil_src);
    return k;
}

static uint32_t pattern(uint64_t lin)
{
    return (uint32_t)lin * 2654435761u + SEED;
}

static hpl_device_stats stats_of(hpl_context *ctx, int device)
{
    hpl_stats s = {0};
    CHECK_OK(hpl_stats_get(ctx, &s));
    return s.device[device];
}

/* Are devices 0 and 1 both CPU devices (which do not cut transfers unless
 * HPLVK_EXCHANGE_CHUNK says so: no gain on one memory bus)? */
static bool both_cpus(hpl_context *ctx)
{
    hpl_device_info i0, i1;
    CHECK_OK(hpl_device_get_info(ctx, 0, &i0));
    CHECK_OK(hpl_device_get_info(ctx, 1, &i1));
    return (i0.type & HPL_DEVICE_CPU) && (i1.type & HPL_DEVICE_CPU);
}

/* Do devices 0 and 1 keep separate copies (so that data moves)? */
static bool separate_memories(hpl_context *ctx)
{
    hpl_device_info i0, i1;
    CHECK_OK(hpl_device_get_info(ctx, 0, &i0));
    CHECK_OK(hpl_device_get_info(ctx, 1, &i1));
    return !i0.zero_copy && !i1.zero_copy;
}

/* ---- the model of the cut ------------------------------------------------ */

/* Chunks of one box of extents e at most max elements each: its pieces
 * (box_pieces, test_util.h). Full pieces exceed max/2, so no two share a
 * chunk: the count is the pieces'. */
/* ---- one case: written on device 0, read on device 1 --------------------- */

typedef struct xcase {
    const char *what;
    int ndims;
    uint64_t dims[3];   /* of the array; unused ones 0 */
    int nranges;        /* > 0: read the subarray `ranges` on device 1 */
    hpl_range ranges[3];
    bool host_block;    /* the host writes rows/cols [lo, hi] of a 2-D array first */
    hpl_range block[2];
    uint64_t chunk;     /* elements per chunk the context cuts at (0: default policy) */
} xcase;

static uint64_t extent(const xcase *c, int d)
{
    if (d >= c->ndims)
        return 1;
    if (c->nranges == 0)
        return c->dims[d];
    uint64_t hi = c->ranges[d].last == HPL_END ? c->dims[d] - 1 : (uint64_t)c->ranges[d].last;
    return hi - (uint64_t)c->ranges[d].first + 1;
}

static uint64_t first_of(const xcase *c, int d)
{
    return d < c->ndims && c->nranges ? (uint64_t)c->ranges[d].first : 0;
}

static bool in_block(const xcase *c, uint64_t i0, uint64_t i1)
{
    return c->host_block && i0 >= (uint64_t)c->block[0].first && i0 <= (uint64_t)c->block[0].last &&
           i1 >= (uint64_t)c->block[1].first && i1 <= (uint64_t)c->block[1].last;
}

/* The value element (i0, i1, i2) of the array holds once written. */
static uint32_t value_at(const xcase *c, uint64_t i0, uint64_t i1, uint64_t i2)
{
    uint64_t d1 = c->ndims > 1 ? c->dims[1] : 1, d2 = c->ndims > 2 ? c->dims[2] : 1;
    uint64_t lin = (i0 * d1 + i1) * d2 + i2;
    return in_block(c, i0, i1) ? ~(uint32_t)lin : pattern(lin);
}

static void host_writes_block(hpl_context *ctx, const xcase *c, hpl_array a)
{
    hpl_array blk = {0};
    CHECK_OK(hpl_subarray(ctx, a, 2, c->block, &blk));
    uint32_t *p = th_access(ctx, blk, HPL_WRITE);
    for (uint64_t i = (uint64_t)c->block[0].first; p && i <= (uint64_t)c->block[0].last; i++)
        for (uint64_t j = (uint64_t)c->block[1].first; j <= (uint64_t)c->block[1].last; j++)
            p[(i - (uint64_t)c->block[0].first) * c->dims[1] + (j - (uint64_t)c->block[1].first)] =
                ~(uint32_t)(i * c->dims[1] + j);
    CHECK_OK(hpl_array_destroy(ctx, blk));
}

/* b (the read view's extents) must hold the view ^ MASK. */
static void check_result(hpl_context *ctx, const xcase *c, hpl_array b)
{
    const uint32_t *p = th_access(ctx, b, HPL_READ);
    uint64_t e0 = extent(c, 0), e1 = extent(c, 1), e2 = extent(c, 2), bad = 0, first = 0;
    for (uint64_t i0 = 0; p && i0 < e0; i0++)
        for (uint64_t i1 = 0; i1 < e1; i1++)
            for (uint64_t i2 = 0; i2 < e2; i2++) {
                uint64_t at = (i0 * e1 + i1) * e2 + i2;
                uint32_t want = value_at(c, i0 + first_of(c, 0), i1 + first_of(c, 1), i2 + first_of(c, 2)) ^ MASK;
                if (p[at] != want && bad++ == 0)
                    first = at;
            }
    CHECK(p && bad == 0, "%s: %" PRIu64 " elements wrong, first at %" PRIu64 " (%u)", c->what, bad, first,
          p ? p[first] : 0);
}

/* Checks what moved for case c (stats since the last reset). */
static void check_moved(hpl_context *ctx, const xcase *c, uint64_t view_bytes)
{
    hpl_device_stats s0 = stats_of(ctx, 0), s1 = stats_of(ctx, 1);
    uint64_t block_bytes = 0;
    if (c->host_block)
        block_bytes = 4 * ((uint64_t)(c->block[0].last - c->block[0].first) + 1) *
                      ((uint64_t)(c->block[1].last - c->block[1].first) + 1);
    uint64_t crossed = view_bytes - block_bytes;
    CHECK(s0.to_host_bytes == crossed && s1.to_device_bytes == view_bytes,
          "%s: device 0 sent %" PRIu64 " bytes, device 1 got %" PRIu64 ": want %" PRIu64 " and %" PRIu64, c->what,
          s0.to_host_bytes, s1.to_device_bytes, crossed, view_bytes);
    CHECK(s1.to_device_count == s0.to_host_count + (c->host_block ? 1 : 0),
          "%s: %" PRIu64 " copies out of device 0, %" PRIu64 " into device 1", c->what, s0.to_host_count,
          s1.to_device_count);
    if (c->chunk && !c->host_block) {
        uint64_t e[3] = {extent(c, 0), extent(c, 1), extent(c, 2)}, want = box_pieces(e, c->chunk);
        CHECK(s0.to_host_count == want, "%s: %" PRIu64 " chunks, want %" PRIu64, c->what, s0.to_host_count, want);
    }
    /* Every chunk an operation of its own, then the kernel (with the copy
     * from the host of the host's block); a transfer that goes whole is
     * copied in by the kernel's operation. */
    bool whole = !c->chunk && both_cpus(ctx);
    uint64_t ops = whole ? 1 : s0.to_host_count + 1;
    CHECK(s1.operations == ops, "%s: %" PRIu64 " operations on device 1 for %" PRIu64 " chunks and a kernel, want %"
          PRIu64, c->what, s1.operations, s0.to_host_count, ops);
    th_note("%s: %" PRIu64 " bytes in %" PRIu64 " chunks; device 1: %" PRIu64 " operations in %" PRIu64
            " submissions",
            c->what, crossed, s0.to_host_count, s1.operations, s1.submissions);
}

static void run_case(hpl_context *ctx, const kernels *k, const xcase *c)
{
    hpl_array a = th_array(ctx, HPL_UINT32, c->dims[0], c->dims[1], c->dims[2]);
    hpl_array view = a;
    if (c->nranges)
        CHECK_OK(hpl_subarray(ctx, a, c->nranges, c->ranges, &view));
    uint64_t e0 = extent(c, 0), e1 = extent(c, 1), e2 = extent(c, 2);
    hpl_array b = th_array(ctx, HPL_UINT32, e0, c->ndims > 1 ? e1 : 0, c->ndims > 2 ? e2 : 0);
    int d = c->ndims - 1;
    CHECK_OK(hpl_eval(ctx, k->stamp[d], &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(a), hpl_u32(SEED))));
    if (c->host_block)
        host_writes_block(ctx, c, a);
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_reset(ctx));
    CHECK_OK(hpl_eval(ctx, k->map[d], &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(view), hpl_arr(b))));
    if (separate_memories(ctx))
        check_moved(ctx, c, e0 * e1 * e2 * 4);
    check_result(ctx, c, b);
    if (c->nranges)
        CHECK_OK(hpl_array_destroy(ctx, view));
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
}

/* ---- a stencil over three devices, halo rows cut into chunks ------------- */

static void host_stencil(const uint32_t *in, uint32_t *out, uint64_t rows, uint64_t cols)
{
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) {
            uint32_t v = in[r * cols + c];
            if (r > 0 && r + 1 < rows)
                v = in[(r - 1) * cols + c] + 2u * v + in[(r + 1) * cols + c];
            out[r * cols + c] = v;
        }
}

static void stencil(hpl_context *ctx, const kernels *k, uint64_t rows, uint64_t cols, int steps, const char *what)
{
    size_t n = (size_t)(rows * cols);
    uint32_t *ref[2] = {malloc(n * 4), malloc(n * 4)};
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, rows, cols, 0), th_array(ctx, HPL_UINT32, rows, cols, 0)};
    uint32_t *p = th_access(ctx, g[0], HPL_WRITE);
    for (size_t i = 0; p && ref[0] && ref[1] && i < n; i++)
        p[i] = ref[0][i] = pattern(i);
    for (int s = 0; ref[0] && ref[1] && s < steps; s++) {
        CHECK_OK(hpl_eval(ctx, k->stencil, NULL, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
        host_stencil(ref[s % 2], ref[(s + 1) % 2], rows, cols);
    }
    const uint32_t *q = th_access(ctx, g[steps % 2], HPL_READ);
    size_t bad = 0;
    for (size_t i = 0; q && ref[steps % 2] && i < n; i++)
        bad += q[i] != ref[steps % 2][i];
    CHECK(q && bad == 0, "%s: %zu of %zu elements differ from the host's", what, bad, n);
    CHECK_OK(hpl_array_destroy(ctx, g[0]));
    CHECK_OK(hpl_array_destroy(ctx, g[1]));
    free(ref[0]);
    free(ref[1]);
}

/* ---- the large transfer -------------------------------------------------- */

#define BIG_BYTES (48ull << 20)

/* 48 MiB written on device 0, read on device 1. chunk: the elements per
 * chunk forced with HPLVK_EXCHANGE_CHUNK, 0 for the default policy. */
static void large(hpl_context *ctx, const kernels *k, uint64_t chunk, const char *what)
{
    xcase c = {.what = what, .ndims = 1, .dims = {BIG_BYTES / 4}, .chunk = chunk};
    run_case(ctx, k, &c);
    hpl_device_stats s0 = stats_of(ctx, 0), s1 = stats_of(ctx, 1);
    if (!separate_memories(ctx))
        return;
    if (!chunk && both_cpus(ctx)) {
        CHECK(s0.to_host_count == 1, "%s: between CPU devices 48 MiB went in %" PRIu64 " pieces, want 1 by default",
              what, s0.to_host_count);
        return;
    }
    CHECK(s0.to_host_count >= 2, "%s: 48 MiB went in %" PRIu64 " piece(s), not in chunks", what, s0.to_host_count);
    /* Each chunk's copy on device 1 waits for its own chunk on device 0. */
    CHECK(s1.submissions >= 2, "%s: device 1 took %" PRIu64 " chunks in %" PRIu64 " submission(s)", what,
          s1.to_device_count, s1.submissions);
}

/* ---- contexts ------------------------------------------------------------- */

static hpl_context *context_chunked(const char *devices, const char *chunk)
{
    setenv("HPLVK_EXCHANGE_CHUNK", chunk, 1);
    hpl_context *ctx = th_context(devices);
    unsetenv("HPLVK_EXCHANGE_CHUNK");
    return ctx;
}

static bool peer_line;

static void quiet_log(void *user, hpl_log_level level, const char *message)
{
    (void)user;
    if (message && strstr(message, "peer timelines"))
        peer_line = true;
    CHECK(level < HPL_LOG_WARNING, "unexpected message: %s", message ? message : "");
}

/* A context without validation (where peer timelines may be used); chunk:
 * HPLVK_EXCHANGE_CHUNK, or NULL. */
static hpl_context *context_unvalidated(const char *devices, const char *chunk)
{
    char buf[256];
    if (chunk)
        setenv("HPLVK_EXCHANGE_CHUNK", chunk, 1);
    const char *validation = getenv("HPLVK_VALIDATION");
    char *saved = validation ? strdup(validation) : NULL;
    unsetenv("HPLVK_VALIDATION");
    hpl_context_desc desc = {.devices = th_device_list(devices, 0, buf, sizeof buf), .log = quiet_log};
    hpl_context *ctx = NULL;
    CHECK_OK(hpl_context_create(&desc, &ctx));
    if (saved)
        setenv("HPLVK_VALIDATION", saved, 1);
    free(saved);
    unsetenv("HPLVK_EXCHANGE_CHUNK");
    return ctx;
}

/* A malformed HPLVK_EXCHANGE_CHUNK fails context creation, naming it. */
static void malformed_chunk(void)
{
    setenv("HPLVK_EXCHANGE_CHUNK", "16 MiB", 1);
    hpl_context_desc desc = {.devices = th_devices("cpu:2")};
    th_prepare_desc(&desc);
    hpl_context *ctx = NULL;
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_INVALID_ARGUMENT, "HPLVK_EXCHANGE_CHUNK");
    CHECK(ctx == NULL, "a failed hpl_context_create returned a context");
    unsetenv("HPLVK_EXCHANGE_CHUNK");
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    unsetenv("HPLVK_EXCHANGE_CHUNK"); /* the cases choose their chunks */

    /* The default policy (whole between two CPU devices, else chunks), then
     * forced chunks of 4 MiB: 12 exactly. */
    hpl_context *ctx = th_context("cpu:2");
    kernels k = make_kernels(ctx);
    large(ctx, &k, 0, "48 MiB, default chunks");
    CHECK_OK(hpl_finish(ctx));
    hpl_context_destroy(ctx);

    ctx = context_chunked("cpu:2", "4M");
    k = make_kernels(ctx);
    large(ctx, &k, (4u << 20) / 4, "48 MiB in 4 MiB chunks");
    hpl_context_destroy(ctx);

    /* Chunks of 2500 elements cut everything below. */
    ctx = context_chunked("cpu:2", "10000");
    k = make_kernels(ctx);
    const uint64_t m = 2500;
    const xcase cases[] = {
        {"1-D, 100003 elements", 1, {100003}, .chunk = m},
        {"2-D 61 x 1000, groups of rows", 2, {61, 1000}, .chunk = m},
        {"2-D 40 x 3001, rows longer than a chunk", 2, {40, 3001}, .chunk = m},
        {"3-D 20 x 30 x 50, whole planes", 3, {20, 30, 50}, .chunk = m},
        {"3-D 7 x 30 x 500, rows of one plane", 3, {7, 30, 500}, .chunk = m},
        {"3-D 3 x 2 x 6001, pieces of one row", 3, {3, 2, 6001}, .chunk = m},
        {"2-D column block 200 x [100, 349] of 200 x 600", 2, {200, 600}, 2, {HPL_ALL, {100, 349}}, .chunk = m},
        {"3-D block [2,7] x [5,34] x [10,39] of 10 x 40 x 50", 3, {10, 40, 50}, 3, {{2, 7}, {5, 34}, {10, 39}},
         .chunk = m},
        {"2-D 100 x 500 less a block the host wrote (several boxes)", 2, {100, 500}, .host_block = true,
         .block = {{30, 59}, {100, 299}}, .chunk = m},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_case(ctx, &k, &cases[i]);
    hpl_context_destroy(ctx);

    /* Halo rows of 3000 elements in chunks of 1000, over three devices. */
    ctx = context_chunked("cpu:3", "4000");
    k = make_kernels(ctx);
    stencil(ctx, &k, 48, 3000, 6, "stencil over 3 devices, halo rows in chunks");
    hpl_context_destroy(ctx);

    /* Without validation: the default policy, waits on peer timelines
     * where the devices allow it. */
    ctx = context_unvalidated("cpu:3", NULL);
    k = make_kernels(ctx);
    large(ctx, &k, 0, "48 MiB without validation");
    stencil(ctx, &k, 96, 2048, 20, "stencil over 3 devices without validation");
    CHECK_OK(hpl_finish(ctx));
    bool cpus = both_cpus(ctx);
    hpl_context_destroy(ctx);
    if (cpus) { /* they do not cut by default: in chunks of 4 MiB */
        ctx = context_unvalidated("cpu:2", "4M");
        k = make_kernels(ctx);
        large(ctx, &k, (4u << 20) / 4, "48 MiB in 4 MiB chunks without validation");
        hpl_context_destroy(ctx);
    }
    malformed_chunk();
    th_note("peer timelines (devices waiting on each other's timelines directly): %s",
            peer_line ? "used" : "not offered by these devices");
    return th_finish(NULL);
}
