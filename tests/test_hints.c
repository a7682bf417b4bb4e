/* The hints of chapter 4 (hpl_array_prefetch, hpl_array_discard), on two
 * logical devices with separate memories ("cpu:2", zero copy off), proven
 * with hpl_stats against the test's own model of where data is:
 *   - prefetch of a host-written array to device 1 moves it there once; an
 *     eval there then moves nothing; the result is right;
 *   - prefetch of a row block moves exactly its rows; of data newest on the
 *     other device, through the host (out of device 0, into device 1);
 *   - prefetch to the host of a device result moves it; the host read after
 *     moves nothing more; prefetching what is already present moves nothing;
 *   - discard of a device result: a write-only eval on the other device, a
 *     host read and an eviction under a memory limit move nothing of it; a
 *     discarded row block leaves the other rows intact and fetched as usual;
 *   - bad device, stale handle and NULL context are refused by name. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 256 /* rows */
#define M 128 /* columns */
#define ROW_BYTES ((uint64_t)M * 4)

/* b = a * s + t */
static const char *scale_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 2) a; hpl_out(float, 2) b; float s; float t; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(b, id.x, id.y) = s * hpl_at2(a, id.x, id.y) + t; }\n";

/* a[i][j] = i * 1000 + j + seed, write-only */
static const char *gen_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 2) a; float seed; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(a, id.x, id.y) = float(id.x) * 1000.0 + float(id.y) + seed; }\n";

static float gen(uint64_t i, uint64_t j, float seed)
{
    return (float)i * 1000.0f + (float)j + seed;
}

static hpl_stats moved(hpl_context *ctx)
{
    hpl_stats s;
    memset(&s, 0, sizeof s);
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_get(ctx, &s));
    CHECK_OK(hpl_stats_reset(ctx));
    return s;
}

/* Does the device upload `bytes` in one operation through a transfer lane
 * (HPLVK_TRANSFER_LANE: "shared" always, "off" never, else where it has a
 * dedicated transfer queue, from 4 MiB on: hpl_device_stats), the host
 * storage imported (not staged)? */
static bool uses_lane(hpl_context *ctx, int device, uint64_t bytes)
{
    const char *env = getenv("HPLVK_TRANSFER_LANE");
    hpl_device_info info;
    if (!CHECK_OK(hpl_device_get_info(ctx, device, &info)))
        return false;
    /* Host memory the device cannot import is staged, never on the lane. */
    if (!info.host_import)
        return false;
    if (env && !strcmp(env, "shared"))
        return true;
    return !(env && !strcmp(env, "off")) && info.dedicated_transfer_queue && bytes >= (4u << 20);
}

/* One check: a prefetch of `bytes` to device took one submission of the
 * transfer lane where uses_lane says it goes there, else none. */
static void expect_lane(hpl_context *ctx, const hpl_stats *s, int device, uint64_t bytes, const char *what)
{
    uint64_t lane = uses_lane(ctx, device, bytes) ? 1 : 0;
    CHECK(s->device[device].transfer_submissions == lane, "%s: %" PRIu64 " transfer lane submissions, want %" PRIu64,
          what, s->device[device].transfer_submissions, lane);
}

static void expect(const hpl_stats *s, int dev, uint64_t to_device, uint64_t to_host, const char *what)
{
    const hpl_device_stats *d = &s->device[dev];
    CHECK(d->to_device_bytes == to_device && d->to_host_bytes == to_host && d->local_bytes == 0,
          "%s: device %d moved to_device %" PRIu64 " to_host %" PRIu64 " local %" PRIu64 ", want %" PRIu64
          " / %" PRIu64 " / 0",
          what, dev, d->to_device_bytes, d->to_host_bytes, d->local_bytes, to_device, to_host);
}

/* Checks rows [r0, r1) of a host copy of an N x M array: gen(seed) * s + t. */
static void expect_rows(const float *p, uint64_t r0, uint64_t r1, float seed, float s, float t, const char *what)
{
    uint64_t bad = 0;
    for (uint64_t i = r0; i < r1; i++)
        for (uint64_t j = 0; j < M; j++)
            bad += p[i * M + j] != s * gen(i, j, seed) + t;
    CHECK(bad == 0, "%s: %" PRIu64 " elements wrong in rows %" PRIu64 "..%" PRIu64, what, bad, r0, r1 - 1);
}

static void host_fill(hpl_context *ctx, hpl_array a, float seed)
{
    float *p = th_access(ctx, a, HPL_WRITE);
    for (uint64_t i = 0; p && i < N; i++)
        for (uint64_t j = 0; j < M; j++)
            p[i * M + j] = gen(i, j, seed);
}

static void prefetch(hpl_context *ctx, hpl_kernel scale)
{
    const uint64_t bytes = N * ROW_BYTES;
    hpl_array a = th_array(ctx, HPL_FLOAT32, N, M, 0), b = th_array(ctx, HPL_FLOAT32, N, M, 0);
    host_fill(ctx, a, 1.0f);
    moved(ctx);

    /* To device 1, once; through the transfer lane where there is one. */
    CHECK_OK(hpl_array_prefetch(ctx, a, 1));
    hpl_stats s = moved(ctx);
    expect(&s, 1, bytes, 0, "prefetch of a host-written array to device 1");
    expect_lane(ctx, &s, 1, bytes, "prefetch to device 1");
    expect(&s, 0, 0, 0, "prefetch to device 1 (device 0)");
    CHECK_OK(hpl_array_prefetch(ctx, a, 1));
    s = moved(ctx);
    expect(&s, 1, 0, 0, "second prefetch to device 1");
    CHECK_OK(hpl_eval(ctx, scale, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_f32(2), hpl_f32(1))));
    s = moved(ctx);
    expect(&s, 1, 0, 0, "eval on device 1 after the prefetch");

    /* To the host: the result moves by the prefetch, not by the read. */
    CHECK_OK(hpl_array_prefetch(ctx, b, HPL_ON_HOST));
    s = moved(ctx);
    expect(&s, 1, 0, bytes, "prefetch of device 1's result to the host");
    const float *p = th_access(ctx, b, HPL_READ);
    s = moved(ctx);
    expect(&s, 1, 0, 0, "host read after the prefetch");
    if (p)
        expect_rows(p, 0, N, 1.0f, 2.0f, 1.0f, "b = 2a + 1 read after the prefetch");

    /* A row block of data newest on device 1, to device 0: out of device 1
     * into the host, then into device 0; only its rows. */
    CHECK_OK(hpl_eval(ctx, scale, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_f32(3), hpl_f32(0))));
    moved(ctx);
    hpl_array rows = {0};
    CHECK_OK(hpl_subarray(ctx, b, 2, (const hpl_range[]){{40, 71}, HPL_ALL}, &rows));
    CHECK_OK(hpl_array_prefetch(ctx, rows, 0));
    s = moved(ctx);
    expect(&s, 1, 0, 32 * ROW_BYTES, "prefetch of rows 40..71 newest on device 1 to device 0 (device 1)");
    expect(&s, 0, 32 * ROW_BYTES, 0, "prefetch of rows 40..71 newest on device 1 to device 0 (device 0)");
    p = th_access(ctx, rows, HPL_READ);
    s = moved(ctx);
    expect(&s, 1, 0, 0, "host read of the prefetched rows");
    if (p)
        expect_rows(p - 40 * M, 40, 72, 1.0f, 3.0f, 0.0f, "rows 40..71 = 3a");
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
}

/* An upload big enough for the transfer lane: 8 MiB to device 0, right
 * where a kernel then finds it. */
static void prefetch_big(hpl_context *ctx, hpl_kernel scale)
{
    const uint64_t rows = 1024, cols = 2048, bytes = rows * cols * 4;
    hpl_array a = th_array(ctx, HPL_FLOAT32, rows, cols, 0), b = th_array(ctx, HPL_FLOAT32, rows, cols, 0);
    float *p = th_access(ctx, a, HPL_WRITE);
    for (uint64_t i = 0; p && i < rows * cols; i++)
        p[i] = (float)(i % 1000);
    moved(ctx);
    CHECK_OK(hpl_array_prefetch(ctx, a, 0));
    hpl_stats s = moved(ctx);
    expect(&s, 0, bytes, 0, "prefetch of 8 MiB to device 0");
    expect_lane(ctx, &s, 0, bytes, "prefetch of 8 MiB");
    /* The kernel finds it there: nothing moves, and it read the right data. */
    CHECK_OK(hpl_eval(ctx, scale, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_f32(2), hpl_f32(1))));
    s = moved(ctx);
    expect(&s, 0, 0, 0, "eval on device 0 after the big prefetch");
    const float *q = th_access(ctx, b, HPL_READ);
    uint64_t bad = 0;
    for (uint64_t i = 0; q && i < rows * cols; i++)
        bad += q[i] != 2.0f * (float)(i % 1000) + 1.0f;
    CHECK(q && bad == 0, "b = 2a + 1 after the big prefetch: %" PRIu64 " wrong", bad);
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
}

static void discard(hpl_context *ctx, hpl_kernel gen_k, hpl_kernel inc_k)
{
    const uint64_t bytes = N * ROW_BYTES;
    hpl_array a = th_array(ctx, HPL_FLOAT32, N, M, 0), b = th_array(ctx, HPL_FLOAT32, N, M, 0);
    CHECK_OK(hpl_eval(ctx, gen_k, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(a), hpl_f32(5))));
    moved(ctx);

    /* Discard the whole result: a write-only eval on device 1, then reading
     * its new data on the host, moves only that new data. */
    CHECK_OK(hpl_array_discard(ctx, a));
    CHECK_OK(hpl_eval(ctx, gen_k, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(a), hpl_f32(7))));
    hpl_stats s = moved(ctx);
    expect(&s, 0, 0, 0, "write-only eval on device 1 after a discard (device 0)");
    expect(&s, 1, 0, 0, "write-only eval on device 1 after a discard (device 1)");
    const float *p = th_access(ctx, a, HPL_READ);
    s = moved(ctx);
    expect(&s, 1, 0, bytes, "host read of the rewritten array");
    expect(&s, 0, 0, 0, "host read of the rewritten array (device 0 holds nothing valid)");
    if (p)
        expect_rows(p, 0, N, 7.0f, 1.0f, 0.0f, "a rewritten on device 1");

    /* Discard a row block of a device result: the host read brings the
     * other rows only, and they are right. */
    CHECK_OK(hpl_eval(ctx, gen_k, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(b), hpl_f32(9))));
    moved(ctx);
    hpl_array rows = {0};
    CHECK_OK(hpl_subarray(ctx, b, 2, (const hpl_range[]){{0, 99}, HPL_ALL}, &rows));
    CHECK_OK(hpl_array_discard(ctx, rows));
    p = th_access(ctx, b, HPL_READ);
    s = moved(ctx);
    expect(&s, 0, 0, (N - 100) * ROW_BYTES, "host read of b with rows 0..99 discarded");
    if (p)
        expect_rows(p, 100, N, 9.0f, 1.0f, 0.0f, "rows 100.. of b after discarding rows 0..99");

    /* Read-write after a discard fetches nothing: b is newest on device 1,
     * discarded, then incremented in place on device 0. */
    CHECK_OK(hpl_eval(ctx, gen_k, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(b), hpl_f32(11))));
    CHECK_OK(hpl_array_discard(ctx, b));
    moved(ctx);
    CHECK_OK(hpl_eval(ctx, inc_k, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(b), hpl_f32(1))));
    s = moved(ctx);
    expect(&s, 0, 0, 0, "read-write eval on device 0 of discarded b (device 0)");
    expect(&s, 1, 0, 0, "read-write eval on device 0 of discarded b (device 1)");
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
}

/* Under a memory limit of one array, an eviction saves what is valid only
 * on the device, but nothing discarded. */
static void evict_discarded(void)
{
    const uint64_t bytes = N * ROW_BYTES;
    hpl_context *ctx = th_context_desc(
        &(hpl_context_desc){.devices = "cpu:2", .zero_copy = HPL_ZERO_COPY_OFF, .device_memory_limit = bytes});
    hpl_kernel gen_k = th_kernel(ctx, gen_src);
    hpl_array a = th_array(ctx, HPL_FLOAT32, N, M, 0), b = th_array(ctx, HPL_FLOAT32, N, M, 0);
    CHECK_OK(hpl_eval(ctx, gen_k, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(a), hpl_f32(1))));
    CHECK_OK(hpl_array_discard(ctx, a));
    moved(ctx);
    CHECK_OK(hpl_eval(ctx, gen_k, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(b), hpl_f32(2))));
    hpl_stats s = moved(ctx);
    CHECK(s.device[0].evictions == 1, "device 0: %" PRIu64 " evictions, want 1", s.device[0].evictions);
    expect(&s, 0, 0, 0, "eviction of discarded a");
    /* b is valid only on device 0: evicting it for a saves it. */
    CHECK_OK(hpl_eval(ctx, gen_k, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(a), hpl_f32(3))));
    s = moved(ctx);
    expect(&s, 0, 0, bytes, "eviction of b, valid only on device 0");
    const float *p = th_access(ctx, b, HPL_READ);
    if (p)
        expect_rows(p, 0, N, 2.0f, 1.0f, 0.0f, "b saved by its eviction");
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    hpl_context_destroy(ctx);
}

static void errors(hpl_context *ctx)
{
    hpl_array a = th_array(ctx, HPL_FLOAT32, 4, 0, 0), dead = th_array(ctx, HPL_FLOAT32, 4, 0, 0);
    CHECK_OK(hpl_array_destroy(ctx, dead));
    CHECK_FAILS(hpl_array_prefetch(ctx, a, 2), HPL_ERROR_UNKNOWN_DEVICE, "where = 2");
    CHECK_FAILS(hpl_array_prefetch(ctx, a, -1), HPL_ERROR_UNKNOWN_DEVICE, "where = -1");
    CHECK_FAILS(hpl_array_prefetch(ctx, dead, 0), HPL_ERROR_INVALID_HANDLE, "stale");
    CHECK_FAILS(hpl_array_discard(ctx, dead), HPL_ERROR_INVALID_HANDLE, "stale");
    CHECK_FAILS(hpl_array_prefetch(NULL, a, 0), HPL_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    CHECK_FAILS(hpl_array_discard(NULL, a), HPL_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    CHECK_OK(hpl_array_destroy(ctx, a));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:2", .zero_copy = HPL_ZERO_COPY_OFF});
    hpl_kernel scale = th_kernel(ctx, scale_src), gen_k = th_kernel(ctx, gen_src);
    prefetch(ctx, scale);
    prefetch_big(ctx, scale);
    discard(ctx, gen_k, th_kernel(ctx, inc2_src()));
    evict_discarded();
    errors(ctx);
    return th_finish(ctx);
}
