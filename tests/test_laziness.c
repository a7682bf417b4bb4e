/* Transfers are lazy and per region, proven with hpl_stats (chapter 4c) on
 * two logical devices with separate memories ("cpu:2", zero copy off so
 * every copy really moves):
 *   - a kernel reading a row block of a host-written matrix moves that
 *     block only, to that device only;
 *   - after a kernel wrote the whole matrix, reading one row on the host
 *     moves that row; the whole matrix then moves the rest only; again
 *     nothing;
 *   - device to device: the block goes out of the writer (to_host) and into
 *     the reader (to_device), nothing else;
 *   - write-only arguments fetch nothing, read-write ones fetch only what is
 *     missing, a second read on the same device moves nothing;
 *   - column blocks (non-contiguous) move exactly their elements, host to
 *     device, device to host and device to device;
 *   - hpl_stats_reset zeroes the counters, keeps resident_bytes, restarts
 *     peak from it; destroying the arrays releases every device buffer.
 * Every value is checked against a host model. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 512 /* rows */
#define M 512 /* columns */
#define ROW_BYTES ((uint64_t)M * 4)

/* b = s * a + t over b's extents (a may be a subarray). */
static const char *scale_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 2) a; hpl_out(float, 2) b; float s; float t; };\n"
    "void main() { uvec3 id = hpl_global_id;\n"
    "    hpl_at2(b, id.x, id.y) = s * hpl_at2(a, id.x, id.y) + t; }\n";

/* a[i][j] = (origin_i + i) * 1000 + (origin_j + j) + seed: write-only, the
 * value depends on the element's place in the root. */
static const char *gen_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 2) a; float seed; };\n"
    "void main() { uvec3 id = hpl_global_id;\n"
    "    uvec2 g = a.origin + id.xy;\n"
    "    hpl_at2(a, id.x, id.y) = float(g.x) * 1000.0 + float(g.y) + seed; }\n";

static float gen_value(uint64_t i, uint64_t j, float seed)
{
    return (float)i * 1000.0f + (float)j + seed;
}

/* Checks one device's transfer counters exactly (bytes), counts within
 * [min, max] when the bytes are non-zero and exactly 0 otherwise. */
static void expect_moves(const hpl_stats *s, int dev, uint64_t to_device, uint64_t to_host, uint64_t local,
                         const char *what)
{
    const hpl_device_stats *d = &s->device[dev];
    CHECK(d->to_device_bytes == to_device, "%s: device %d to_device_bytes %" PRIu64 ", want %" PRIu64, what, dev,
          d->to_device_bytes, to_device);
    CHECK(d->to_host_bytes == to_host, "%s: device %d to_host_bytes %" PRIu64 ", want %" PRIu64, what, dev,
          d->to_host_bytes, to_host);
    CHECK(d->local_bytes == local, "%s: device %d local_bytes %" PRIu64 ", want %" PRIu64, what, dev, d->local_bytes,
          local);
    CHECK((to_device == 0) == (d->to_device_count == 0), "%s: device %d to_device_count %" PRIu64 " for %" PRIu64
          " bytes", what, dev, d->to_device_count, d->to_device_bytes);
    CHECK((to_host == 0) == (d->to_host_count == 0), "%s: device %d to_host_count %" PRIu64 " for %" PRIu64 " bytes",
          what, dev, d->to_host_count, d->to_host_bytes);
    CHECK((local == 0) == (d->local_count == 0), "%s: device %d local_count %" PRIu64 " for %" PRIu64 " bytes", what,
          dev, d->local_count, d->local_bytes);
    CHECK(d->evictions == 0 && d->evicted_bytes == 0, "%s: device %d evicted %" PRIu64 " buffers (%" PRIu64
          " bytes) without a memory limit", what, dev, d->evictions, d->evicted_bytes);
}

/* `block` (of N x M floats, its `dim` lo..hi) written on device 0 and read
 * on device 1: bytes went from device 0 to the host and from there to
 * device 1, nothing else moved; printed. */
static void expect_block_moved(const hpl_stats *s, uint64_t bytes, const char *block, const char *dim, uint64_t lo,
                               uint64_t hi)
{
    char what[160];
    snprintf(what, sizeof what, "%s read on device 1 (source)", block);
    expect_moves(s, 0, 0, bytes, 0, what);
    snprintf(what, sizeof what, "%s read on device 1 (destination)", block);
    expect_moves(s, 1, bytes, 0, 0, what);
    printf("laziness: %s %" PRIu64 "..%" PRIu64 " of %dx%d float written on device 0 read on device 1: "
           "device 0 to_host_bytes=%" PRIu64 " count=%" PRIu64 ", device 1 to_device_bytes=%" PRIu64 " count=%" PRIu64
           "\n",
           dim, lo, hi, N, M, s->device[0].to_host_bytes, s->device[0].to_host_count, s->device[1].to_device_bytes,
           s->device[1].to_device_count);
}

/* Fills a whole N x M array on the host with gen_value(seed). */
static void host_fill(hpl_context *ctx, hpl_array a, float seed)
{
    float *p = th_access(ctx, a, HPL_WRITE);
    if (!p)
        return;
    for (uint64_t i = 0; i < N; i++)
        for (uint64_t j = 0; j < M; j++)
            p[i * M + j] = gen_value(i, j, seed);
}

/* Compares a dense rows x cols buffer with f(i0 + i, j0 + j) * s + t. */
static void expect_block(const float *got, uint64_t rows, uint64_t cols, uint64_t i0, uint64_t j0, float seed, float s,
                         float t, const char *what)
{
    uint64_t bad = 0, fi = 0, fj = 0;
    for (uint64_t i = 0; i < rows; i++)
        for (uint64_t j = 0; j < cols; j++) {
            float want = s * gen_value(i0 + i, j0 + j, seed) + t;
            if (got[i * cols + j] != want && bad++ == 0) {
                fi = i;
                fj = j;
            }
        }
    CHECK(bad == 0, "%s: %" PRIu64 " of %" PRIu64 " elements wrong, first [%" PRIu64 "][%" PRIu64 "] = %g want %g",
          what, bad, rows * cols, fi, fj, bad ? (double)got[fi * cols + fj] : 0.0,
          bad ? (double)(s * gen_value(i0 + fi, j0 + fj, seed) + t) : 0.0);
}

static hpl_array sub(hpl_context *ctx, hpl_array parent, hpl_range r0, hpl_range r1)
{
    hpl_array s = {0};
    CHECK_OK(hpl_subarray(ctx, parent, 2, (const hpl_range[]){r0, r1}, &s));
    return s;
}

static uint64_t sum_counts(const hpl_stats *s)
{
    uint64_t n = 0;
    for (int d = 0; d < s->device_count && d < 16; d++) {
        const hpl_device_stats *x = &s->device[d];
        n += x->to_device_bytes + x->to_device_count + x->to_host_bytes + x->to_host_count + x->local_bytes +
             x->local_count + x->evictions + x->evicted_bytes;
    }
    return n;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:2", .zero_copy = HPL_ZERO_COPY_OFF});
    CHECK(hpl_device_count(ctx) == 2, "cpu:2 opened %d devices", hpl_device_count(ctx));
    for (int d = 0; d < 2; d++) {
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            CHECK(!info.zero_copy, "device %d reports zero_copy with HPL_ZERO_COPY_OFF", d);
    }
    hpl_kernel scale = th_kernel(ctx, scale_src), gen = th_kernel(ctx, gen_src), inc = th_kernel(ctx, inc2_src());
    hpl_launch l0 = th_on(0), l1 = th_on(1);
    const uint64_t block_rows = 64, r0 = 100; /* rows 100..163 */
    const uint64_t block_bytes = block_rows * ROW_BYTES;
    float *buf = malloc(sizeof(float) * N * M);
    if (!buf)
        return 1;

    /* Fresh context: nothing has moved. */
    {
        hpl_stats s = th_stats(ctx);
        CHECK(s.device_count == 2, "stats.device_count %d, want 2", s.device_count);
        CHECK(sum_counts(&s) == 0, "a fresh context has non-zero transfer counters");
        for (int d = 0; d < 2; d++)
            CHECK(s.device[d].resident_bytes == 0, "device %d resident_bytes %" PRIu64 " before any array", d,
                  s.device[d].resident_bytes);
    }

    /* 1. Host-written matrix, a kernel on device 0 reads a row block. */
    hpl_array a1 = th_array(ctx, HPL_FLOAT32, N, M, 0);
    hpl_array b1 = th_array(ctx, HPL_FLOAT32, block_rows, M, 0);
    host_fill(ctx, a1, 1.0f);
    {
        hpl_array rows = sub(ctx, a1, (hpl_range){r0, r0 + block_rows - 1}, (hpl_range)HPL_ALL);
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, scale, &l0, HPL_ARGS(hpl_arr(rows), hpl_arr(b1), hpl_f32(2.0f), hpl_f32(1.0f))));
        hpl_stats s = th_stats(ctx);
        expect_moves(&s, 0, block_bytes, 0, 0, "row block read on device 0");
        expect_moves(&s, 1, 0, 0, 0, "row block read on device 0 (device 1)");
        CHECK(s.device[0].to_device_count >= 1 && s.device[0].to_device_count <= 2,
              "row block (one contiguous run) took %" PRIu64 " transfers", s.device[0].to_device_count);
        printf("laziness: rows %" PRIu64 "..%" PRIu64 " of %dx%d float written on host read on device 0: "
               "to_device_bytes=%" PRIu64 " count=%" PRIu64 " (whole array %" PRIu64 " bytes)\n",
               r0, r0 + block_rows - 1, N, M, s.device[0].to_device_bytes, s.device[0].to_device_count,
               (uint64_t)N * ROW_BYTES);
        CHECK(s.device[0].resident_bytes >= block_bytes * 2, "device 0 resident_bytes %" PRIu64
              " < block + output %" PRIu64, s.device[0].resident_bytes, block_bytes * 2);
        CHECK(s.device[1].resident_bytes == 0, "device 1 resident_bytes %" PRIu64 " though it ran nothing",
              s.device[1].resident_bytes);
        /* The result, read back: exactly b1 moves to the host. */
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_array_read(ctx, b1, buf, block_bytes));
        expect_block(buf, block_rows, M, r0, 0, 1.0f, 2.0f, 1.0f, "2 * row block + 1");
        s = th_stats(ctx);
        expect_moves(&s, 0, 0, block_bytes, 0, "result of the row block kernel read on the host");
        expect_moves(&s, 1, 0, 0, 0, "result of the row block kernel read on the host (device 1)");
        /* The host still holds a1 valid: reading it moves nothing. */
        const float *p = th_access(ctx, a1, HPL_READ);
        if (p)
            expect_block(p, N, M, 0, 0, 1.0f, 1.0f, 0.0f, "host-written matrix after a device read a block");
        s = th_stats(ctx);
        CHECK(s.device[0].to_host_bytes == block_bytes, "host read of a host-valid array moved %" PRIu64 " bytes",
              s.device[0].to_host_bytes - block_bytes);
    }

    /* 2. A kernel on device 0 writes the whole matrix; the host reads one
     * row, then everything, then everything again. */
    hpl_array a2 = th_array(ctx, HPL_FLOAT32, N, M, 0);
    {
        const uint64_t row = 200;
        hpl_array one = sub(ctx, a2, (hpl_range){row, row}, (hpl_range)HPL_ALL);
        CHECK_OK(hpl_eval(ctx, gen, &l0, HPL_ARGS(hpl_arr(a2), hpl_f32(7.0f))));
        CHECK_OK(hpl_stats_reset(ctx));
        hpl_stats s = th_stats(ctx);
        CHECK(sum_counts(&s) == 0, "hpl_stats_reset left non-zero counters");
        CHECK_OK(hpl_array_read(ctx, one, buf, ROW_BYTES));
        expect_block(buf, 1, M, row, 0, 7.0f, 1.0f, 0.0f, "one row read on the host");
        s = th_stats(ctx);
        expect_moves(&s, 0, 0, ROW_BYTES, 0, "one row of a device-0 array read on the host");
        expect_moves(&s, 1, 0, 0, 0, "one row of a device-0 array read on the host (device 1)");
        CHECK(s.device[0].to_host_count == 1, "one row took %" PRIu64 " transfers, want 1", s.device[0].to_host_count);
        printf("laziness: one row of %dx%d float written on device 0 read on host: to_host_bytes=%" PRIu64
               " count=%" PRIu64 "\n",
               N, M, s.device[0].to_host_bytes, s.device[0].to_host_count);

        CHECK_OK(hpl_stats_reset(ctx));
        const float *p = th_access(ctx, a2, HPL_READ);
        if (p)
            expect_block(p, N, M, 0, 0, 7.0f, 1.0f, 0.0f, "whole matrix read after one row");
        s = th_stats(ctx);
        expect_moves(&s, 0, 0, (uint64_t)(N - 1) * ROW_BYTES, 0, "rest of the matrix read on the host");
        expect_moves(&s, 1, 0, 0, 0, "rest of the matrix read on the host (device 1)");
        CHECK(s.device[0].to_host_count >= 1 && s.device[0].to_host_count <= 2,
              "the rest (rows before and after one row) took %" PRIu64 " transfers", s.device[0].to_host_count);
        printf("laziness: the whole %dx%d float then read on host: to_host_bytes=%" PRIu64 " count=%" PRIu64
               " (the other %d rows)\n",
               N, M, s.device[0].to_host_bytes, s.device[0].to_host_count, N - 1);

        CHECK_OK(hpl_stats_reset(ctx));
        p = th_access(ctx, a2, HPL_READ);
        if (p)
            expect_block(p, N, M, 0, 0, 7.0f, 1.0f, 0.0f, "whole matrix read again");
        CHECK_OK(hpl_array_read(ctx, one, buf, ROW_BYTES));
        expect_block(buf, 1, M, row, 0, 7.0f, 1.0f, 0.0f, "one row read again");
        s = th_stats(ctx);
        CHECK(sum_counts(&s) == 0, "reading host-valid data again moved: dev0 to_host %" PRIu64 " to_device %" PRIu64
              ", dev1 to_host %" PRIu64 " to_device %" PRIu64,
              s.device[0].to_host_bytes, s.device[0].to_device_bytes, s.device[1].to_host_bytes,
              s.device[1].to_device_bytes);
        printf("laziness: the whole %dx%d float read again on host: to_host_bytes=%" PRIu64 " count=%" PRIu64 "\n", N,
               M, s.device[0].to_host_bytes, s.device[0].to_host_count);
    }

    /* 3. Device to device: written on device 0, a row block read on device 1. */
    hpl_array a3 = th_array(ctx, HPL_FLOAT32, N, M, 0);
    hpl_array b3 = th_array(ctx, HPL_FLOAT32, block_rows, M, 0);
    {
        hpl_array rows = sub(ctx, a3, (hpl_range){r0, r0 + block_rows - 1}, (hpl_range)HPL_ALL);
        CHECK_OK(hpl_eval(ctx, gen, &l0, HPL_ARGS(hpl_arr(a3), hpl_f32(3.0f))));
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, scale, &l1, HPL_ARGS(hpl_arr(rows), hpl_arr(b3), hpl_f32(-1.0f), hpl_f32(0.5f))));
        hpl_stats s = th_stats(ctx);
        expect_block_moved(&s, block_bytes, "row block of a device-0 array", "rows", r0, r0 + block_rows - 1);
        /* The same block read again on device 1: already there. */
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, scale, &l1, HPL_ARGS(hpl_arr(rows), hpl_arr(b3), hpl_f32(-1.0f), hpl_f32(0.5f))));
        s = th_stats(ctx);
        CHECK(sum_counts(&s) == 0, "second read of the same block on device 1 moved %" PRIu64 " bytes to it",
              s.device[1].to_device_bytes);
        CHECK_OK(hpl_array_read(ctx, b3, buf, block_bytes));
        expect_block(buf, block_rows, M, r0, 0, 3.0f, -1.0f, 0.5f, "device 0 -> device 1 row block");
    }

    /* 4. Write-only arguments fetch nothing; read-write ones fetch only what
     * is missing; a second read on the same device moves nothing. */
    hpl_array a4 = th_array(ctx, HPL_FLOAT32, N, M, 0);
    hpl_array b4 = th_array(ctx, HPL_FLOAT32, N, M, 0);
    host_fill(ctx, a4, 5.0f); /* host data that a write-only kernel overwrites */
    {
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, gen, &l0, HPL_ARGS(hpl_arr(a4), hpl_f32(9.0f))));
        hpl_stats s = th_stats(ctx);
        expect_moves(&s, 0, 0, 0, 0, "write-only argument on device 0");
        expect_moves(&s, 1, 0, 0, 0, "write-only argument on device 0 (device 1)");
        printf("laziness: %dx%d float valid on host passed write-only (hpl_out) on device 0: to_device_bytes=%" PRIu64
               " count=%" PRIu64 "\n",
               N, M, s.device[0].to_device_bytes, s.device[0].to_device_count);

        /* The host overwrites a row block: HPL_WRITE fetches nothing. */
        hpl_array rows = sub(ctx, a4, (hpl_range){r0, r0 + block_rows - 1}, (hpl_range)HPL_ALL);
        hpl_array_info ri;
        memset(&ri, 0, sizeof ri);
        CHECK_OK(hpl_array_get_info(ctx, rows, &ri));
        CHECK_OK(hpl_stats_reset(ctx));
        float *p = th_access(ctx, rows, HPL_WRITE);
        if (p)
            for (uint64_t i = 0; i < block_rows; i++)
                for (uint64_t j = 0; j < M; j++)
                    p[i * ri.host_stride[0] + j * ri.host_stride[1]] = gen_value(r0 + i, j, 11.0f);
        s = th_stats(ctx);
        CHECK(sum_counts(&s) == 0, "HPL_WRITE host access of a row block moved data: dev0 to_host %" PRIu64,
              s.device[0].to_host_bytes);

        /* Read-write on device 0: only the host-written block is missing. */
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, inc, &l0, HPL_ARGS(hpl_arr(a4), hpl_f32(1.0f))));
        s = th_stats(ctx);
        expect_moves(&s, 0, block_bytes, 0, 0, "read-write argument missing one host-written row block");
        expect_moves(&s, 1, 0, 0, 0, "read-write argument missing one host-written row block (device 1)");
        printf("laziness: %dx%d float on device 0 with rows %" PRIu64 "..%" PRIu64 " rewritten on host, passed "
               "read-write (hpl_inout) on device 0: to_device_bytes=%" PRIu64 " count=%" PRIu64 "\n",
               N, M, r0, r0 + block_rows - 1, s.device[0].to_device_bytes, s.device[0].to_device_count);

        /* Read again on device 0, read-only and read-write: nothing moves. */
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, scale, &l0, HPL_ARGS(hpl_arr(a4), hpl_arr(b4), hpl_f32(1.0f), hpl_f32(0.0f))));
        CHECK_OK(hpl_eval(ctx, inc, &l0, HPL_ARGS(hpl_arr(a4), hpl_f32(2.0f))));
        CHECK_OK(hpl_eval(ctx, scale, &l0, HPL_ARGS(hpl_arr(a4), hpl_arr(b4), hpl_f32(2.0f), hpl_f32(0.0f))));
        s = th_stats(ctx);
        CHECK(sum_counts(&s) == 0, "second/third eval on data already on device 0 moved: to_device %" PRIu64
              " to_host %" PRIu64 " local %" PRIu64,
              s.device[0].to_device_bytes, s.device[0].to_host_bytes, s.device[0].local_bytes);
        printf("laziness: second eval reading the same %dx%d float on device 0: to_device_bytes=%" PRIu64
               " count=%" PRIu64 "\n",
               N, M, s.device[0].to_device_bytes, s.device[0].to_device_count);

        /* Values: a4 = (block: host value, else gen 9) + 3; b4 = 2 * a4. */
        p = th_access(ctx, a4, HPL_READ);
        if (p) {
            uint64_t bad = 0;
            for (uint64_t i = 0; i < N; i++)
                for (uint64_t j = 0; j < M; j++) {
                    bool in = i >= r0 && i < r0 + block_rows;
                    float want = gen_value(i, j, in ? 11.0f : 9.0f) + 3.0f;
                    bad += p[i * M + j] != want;
                }
            CHECK(bad == 0, "write-only / read-write matrix: %" PRIu64 " elements wrong", bad);
        }
        const float *q = th_access(ctx, b4, HPL_READ);
        if (q && p) {
            uint64_t bad = 0;
            for (uint64_t i = 0; i < (uint64_t)N * M; i++)
                bad += q[i] != 2.0f * p[i];
            CHECK(bad == 0, "b4 = 2 * a4: %" PRIu64 " elements wrong", bad);
        }
    }

    /* 5. Column blocks (non-contiguous): exactly their elements move. */
    hpl_array a5 = th_array(ctx, HPL_FLOAT32, N, M, 0);
    const uint64_t c0 = 64, ncols = 32, col_bytes = (uint64_t)N * ncols * 4;
    hpl_array b5 = th_array(ctx, HPL_FLOAT32, N, ncols, 0);
    host_fill(ctx, a5, 2.0f);
    {
        hpl_array cols = sub(ctx, a5, (hpl_range)HPL_ALL, (hpl_range){c0, c0 + ncols - 1});
        hpl_array_info ci;
        memset(&ci, 0, sizeof ci);
        if (CHECK_OK(hpl_array_get_info(ctx, cols, &ci)))
            CHECK(!ci.contiguous && ci.bytes == col_bytes, "column block: contiguous %d bytes %" PRIu64,
                  ci.contiguous, ci.bytes);
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, scale, &l0, HPL_ARGS(hpl_arr(cols), hpl_arr(b5), hpl_f32(3.0f), hpl_f32(0.0f))));
        hpl_stats s = th_stats(ctx);
        expect_moves(&s, 0, col_bytes, 0, 0, "column block of a host matrix read on device 0");
        expect_moves(&s, 1, 0, 0, 0, "column block of a host matrix read on device 0 (device 1)");
        printf("laziness: columns %" PRIu64 "..%" PRIu64 " of %dx%d float written on host read on device 0: "
               "to_device_bytes=%" PRIu64 " count=%" PRIu64 "\n",
               c0, c0 + ncols - 1, N, M, s.device[0].to_device_bytes, s.device[0].to_device_count);
        CHECK_OK(hpl_array_read(ctx, b5, buf, col_bytes));
        expect_block(buf, N, ncols, 0, c0, 2.0f, 3.0f, 0.0f, "3 * column block");

        /* Device 0 rewrites the whole matrix; the host reads the column block. */
        CHECK_OK(hpl_eval(ctx, gen, &l0, HPL_ARGS(hpl_arr(a5), hpl_f32(4.0f))));
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_array_read(ctx, cols, buf, col_bytes));
        expect_block(buf, N, ncols, 0, c0, 4.0f, 1.0f, 0.0f, "column block read on the host");
        s = th_stats(ctx);
        expect_moves(&s, 0, 0, col_bytes, 0, "column block of a device-0 matrix read on the host");
        expect_moves(&s, 1, 0, 0, 0, "column block of a device-0 matrix read on the host (device 1)");
        printf("laziness: columns %" PRIu64 "..%" PRIu64 " of %dx%d float written on device 0 read on host: "
               "to_host_bytes=%" PRIu64 " count=%" PRIu64 "\n",
               c0, c0 + ncols - 1, N, M, s.device[0].to_host_bytes, s.device[0].to_host_count);

        /* Device 1 reads the column block: the host holds it valid now. */
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, scale, &l1, HPL_ARGS(hpl_arr(cols), hpl_arr(b5), hpl_f32(1.0f), hpl_f32(-4.0f))));
        s = th_stats(ctx);
        expect_moves(&s, 0, 0, 0, 0, "host-valid column block read on device 1 (device 0)");
        expect_moves(&s, 1, col_bytes, 0, 0, "host-valid column block read on device 1");
        CHECK_OK(hpl_array_read(ctx, b5, buf, col_bytes));
        expect_block(buf, N, ncols, 0, c0, 4.0f, 1.0f, -4.0f, "column block - 4 on device 1");

        /* The rest of the matrix on the host: everything but the column block. */
        CHECK_OK(hpl_stats_reset(ctx));
        const float *p = th_access(ctx, a5, HPL_READ);
        if (p)
            expect_block(p, N, M, 0, 0, 4.0f, 1.0f, 0.0f, "matrix after its column block was read");
        s = th_stats(ctx);
        expect_moves(&s, 0, 0, (uint64_t)N * M * 4 - col_bytes, 0, "rest of the matrix around a column block");
        printf("laziness: the rest of that %dx%d float then read on host: to_host_bytes=%" PRIu64 " count=%" PRIu64
               "\n",
               N, M, s.device[0].to_host_bytes, s.device[0].to_host_count);

        /* Device 0 rewrites the matrix; device 1 reads the column block
         * straight from it (through the host): the block's bytes only.
         * Device 1 read that block before, so device 0 sends it to the
         * host with the rewrite (hplvk.h chapter 7b, pushes), not at the read:
         * the two evals are counted together. */
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, gen, &l0, HPL_ARGS(hpl_arr(a5), hpl_f32(6.0f))));
        CHECK_OK(hpl_eval(ctx, scale, &l1, HPL_ARGS(hpl_arr(cols), hpl_arr(b5), hpl_f32(1.0f), hpl_f32(-4.0f))));
        s = th_stats(ctx);
        expect_block_moved(&s, col_bytes, "column block of a device-0 matrix", "columns", c0, c0 + ncols - 1);
        CHECK_OK(hpl_array_read(ctx, b5, buf, col_bytes));
        expect_block(buf, N, ncols, 0, c0, 6.0f, 1.0f, -4.0f, "column block - 4 on device 1, from device 0");
    }

    /* 6. hpl_stats_reset: counters to zero, resident_bytes kept, peak
     * restarts from it; totals are the devices' sums. */
    {
        /* Some traffic first, so that there is something to reset. */
        CHECK_OK(hpl_eval(ctx, inc, &l1, HPL_ARGS(hpl_arr(a1), hpl_f32(1.0f))));
        hpl_stats before = th_stats(ctx);
        CHECK(before.device[1].to_device_bytes > 0, "device 1 fetched nothing for a host-valid array");
        uint64_t sums[6] = {0};
        for (int d = 0; d < 2; d++) {
            sums[0] += before.device[d].to_device_bytes;
            sums[1] += before.device[d].to_host_bytes;
            sums[2] += before.device[d].local_bytes;
            sums[3] += before.device[d].to_device_count;
            sums[4] += before.device[d].resident_bytes;
            sums[5] += before.device[d].peak_bytes;
        }
        CHECK(before.total.to_device_bytes == sums[0] && before.total.to_host_bytes == sums[1] &&
                  before.total.local_bytes == sums[2] && before.total.to_device_count == sums[3] &&
                  before.total.resident_bytes == sums[4] && before.total.peak_bytes == sums[5],
              "total is not the sum of the devices: to_device %" PRIu64 "/%" PRIu64 " to_host %" PRIu64 "/%" PRIu64
              " resident %" PRIu64 "/%" PRIu64 " peak %" PRIu64 "/%" PRIu64,
              before.total.to_device_bytes, sums[0], before.total.to_host_bytes, sums[1], before.total.resident_bytes,
              sums[4], before.total.peak_bytes, sums[5]);
        for (int d = 0; d < 2; d++) {
            CHECK(before.device[d].resident_bytes > 0, "device %d holds arrays but resident_bytes is 0", d);
            CHECK(before.device[d].peak_bytes >= before.device[d].resident_bytes,
                  "device %d peak_bytes %" PRIu64 " < resident_bytes %" PRIu64, d, before.device[d].peak_bytes,
                  before.device[d].resident_bytes);
        }
        CHECK_OK(hpl_stats_reset(ctx));
        hpl_stats after = th_stats(ctx);
        CHECK(sum_counts(&after) == 0, "hpl_stats_reset left non-zero counters");
        CHECK(after.total.to_device_bytes == 0 && after.total.to_host_bytes == 0 && after.total.local_bytes == 0 &&
                  after.total.to_device_count == 0 && after.total.to_host_count == 0 && after.total.local_count == 0 &&
                  after.total.evictions == 0 && after.total.evicted_bytes == 0,
              "hpl_stats_reset left non-zero totals");
        for (int d = 0; d < 2; d++) {
            CHECK(after.device[d].resident_bytes == before.device[d].resident_bytes,
                  "device %d resident_bytes %" PRIu64 " after reset, %" PRIu64 " before", d,
                  after.device[d].resident_bytes, before.device[d].resident_bytes);
            CHECK(after.device[d].peak_bytes == after.device[d].resident_bytes,
                  "device %d peak_bytes %" PRIu64 " after reset, want resident_bytes %" PRIu64, d,
                  after.device[d].peak_bytes, after.device[d].resident_bytes);
        }
        printf("laziness: after hpl_stats_reset: device 0 resident_bytes=%" PRIu64 " peak_bytes=%" PRIu64
               ", device 1 resident_bytes=%" PRIu64 " peak_bytes=%" PRIu64 ", every counter 0\n",
               after.device[0].resident_bytes, after.device[0].peak_bytes, after.device[1].resident_bytes,
               after.device[1].peak_bytes);
        const float *p = th_access(ctx, a1, HPL_READ);
        if (p)
            expect_block(p, N, M, 0, 0, 1.0f, 1.0f, 1.0f, "a1 + 1 on device 1");
        hpl_stats s = th_stats(ctx);
        expect_moves(&s, 1, 0, (uint64_t)N * ROW_BYTES, 0, "a1 written on device 1 read on the host");
    }

    /* Destroying the arrays releases every device buffer. */
    hpl_array all[] = {a1, b1, a2, a3, b3, a4, b4, a5, b5};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        CHECK_OK(hpl_array_destroy(ctx, all[i]));
    {
        hpl_stats s = th_stats(ctx);
        for (int d = 0; d < 2; d++)
            CHECK(s.device[d].resident_bytes == 0, "device %d resident_bytes %" PRIu64 " after every array died", d,
                  s.device[d].resident_bytes);
        CHECK(s.total.resident_bytes == 0, "total resident_bytes %" PRIu64 " with no array", s.total.resident_bytes);
    }
    free(buf);
    CHECK_OK(hpl_kernel_destroy(ctx, scale));
    CHECK_OK(hpl_kernel_destroy(ctx, gen));
    CHECK_OK(hpl_kernel_destroy(ctx, inc));
    return th_finish(ctx);
}
