/* A context over MPI ranks (hplvk_mpi.h, hplvk.h chapter 10), run under
 * mpiexec at 1, 2 and 3 ranks with HPLVK_DEVICES giving each rank its own
 * devices: the ranks see every rank's devices in rank order; a row stencil
 * annotated over all of them matches the host bit for bit on every rank,
 * with halos first and without, after every step read back; the bytes a
 * rank receives per step are exactly the halo rows its parts lack (rows
 * next to its own that other ranks' parts own), and a read of the whole
 * array brings exactly what the rank does not hold; host writes and reads
 * of subarrays; fill, assignment, prefetch, discard and reductions; a
 * trace, each rank into its own file. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"
#include "ranks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, ranks;

/* rows_of[r] = the rows owned by rank r's parts of the last split of a
 * ([lo, hi); lo == hi: none), from hpl_array_part and the devices' ranks. */
static void rank_rows(hpl_context *ctx, hpl_array a, uint64_t lo[], uint64_t hi[])
{
    for (int r = 0; r < ranks; r++)
        lo[r] = hi[r] = 0;
    int parts = hpl_array_part_count(ctx, a);
    CHECK(parts >= 1, "part count %d", parts);
    for (int i = 0; i < parts; i++) {
        hpl_array p;
        int device = -1;
        hpl_device_info info;
        hpl_array_info pi;
        if (!CHECK_OK(hpl_array_part(ctx, a, i, &p, &device)) || !CHECK_OK(hpl_device_get_info(ctx, device, &info)) ||
            !CHECK_OK(hpl_array_get_info(ctx, p, &pi)))
            return;
        uint64_t first = pi.origin[0] + pi.owned_first[0], last = pi.origin[0] + pi.owned_last[0] + 1;
        if (pi.owned_count == 0)
            continue;
        int r = info.rank;
        if (lo[r] == hi[r]) {
            lo[r] = first;
            hi[r] = last;
        } else {
            CHECK(first == hi[r], "rank %d's parts are not next to each other: rows %llu.. after ..%llu", r,
                  (unsigned long long)first, (unsigned long long)hi[r]);
            hi[r] = last;
        }
    }
}

/* Bytes and boxes moved between ranks (sent and received) before the last
 * statistics reset: the tests reset them per step. */
static uint64_t moved_bytes, moved_boxes;

static void stats_reset(hpl_context *ctx)
{
    hpl_stats st = th_stats(ctx);
    moved_bytes += st.rank_sent_bytes + st.rank_received_bytes;
    moved_boxes += st.rank_sent_count + st.rank_received_count;
    CHECK_OK(hpl_stats_reset(ctx));
}

static void moved_so_far(hpl_context *ctx, uint64_t *bytes, uint64_t *boxes)
{
    hpl_stats st = th_stats(ctx);
    *bytes = moved_bytes + st.rank_sent_bytes + st.rank_received_bytes;
    *boxes = moved_boxes + st.rank_sent_count + st.rank_received_count;
}

static void run_stencil(hpl_context *ctx, hpl_kernel k, uint64_t rows, uint64_t cols, int steps, bool halos_first)
{
    uint64_t n = rows * cols, row_bytes = cols * sizeof(uint32_t);
    uint32_t *want = malloc(n * sizeof *want), *next = malloc(n * sizeof *next), *got = malloc(n * sizeof *got);
    for (uint64_t i = 0; i < n; i++)
        want[i] = (uint32_t)(i * 2246822519u + 7u);
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, rows, cols, 0), th_array(ctx, HPL_UINT32, rows, cols, 0)};
    CHECK_OK(hpl_array_write(ctx, g[0], want, n * sizeof *want));
    hpl_launch all = {.halos_first = halos_first};
    for (int s = 0; s < steps; s++) {
        stats_reset(ctx);
        CHECK_OK(hpl_eval(ctx, k, &all, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
        rows_stencil_host(rows, cols, want, next);
        memcpy(want, next, n * sizeof *want);
        /* What this rank lacked of the rows its parts read: none in the
         * first step (every rank wrote the input) nor after a whole read
         * (every rank holds all of it), else the rows next to its own that
         * the other ranks wrote in the step before. */
        uint64_t lo[16], hi[16];
        rank_rows(ctx, g[(s + 1) % 2], lo, hi);
        uint64_t halo = 0;
        bool read_before = s - 1 == 1 || s - 1 == steps - 1;
        if (s > 0 && !read_before && lo[rank] < hi[rank])
            halo = (lo[rank] > 0) + (hi[rank] < rows);
        hpl_stats st = th_stats(ctx);
        CHECK(st.rank_received_bytes == halo * row_bytes && st.rank_received_count == halo,
              "step %d (rows %llu..%llu of %llu): received %llu bytes in %llu boxes, want %llu in %llu", s,
              (unsigned long long)lo[rank], (unsigned long long)hi[rank], (unsigned long long)rows,
              (unsigned long long)st.rank_received_bytes, (unsigned long long)st.rank_received_count,
              (unsigned long long)(halo * row_bytes), (unsigned long long)halo);
        /* A whole read brings the rest: what the other ranks wrote. */
        if (s == steps - 1 || s == 1) {
            stats_reset(ctx);
            CHECK_OK(hpl_array_read(ctx, g[(s + 1) % 2], got, n * sizeof *got));
            st = th_stats(ctx);
            uint64_t own = hi[rank] - lo[rank];
            CHECK(st.rank_received_bytes == (rows - own) * row_bytes,
                  "read after step %d: received %llu bytes, want %llu (rows %llu, %llu of them its own)", s,
                  (unsigned long long)st.rank_received_bytes, (unsigned long long)((rows - own) * row_bytes),
                  (unsigned long long)rows, (unsigned long long)own);
            EXPECT_U32(got, want, n, "stencil");
        }
    }
    /* Reading again moves nothing: every rank holds it now. */
    stats_reset(ctx);
    CHECK_OK(hpl_array_read(ctx, g[steps % 2], got, n * sizeof *got));
    CHECK(th_stats(ctx).rank_received_bytes == 0, "a second read received %llu bytes",
          (unsigned long long)th_stats(ctx).rank_received_bytes);
    EXPECT_U32(got, want, n, "stencil, read again");
    CHECK_OK(hpl_array_destroy(ctx, g[0]));
    CHECK_OK(hpl_array_destroy(ctx, g[1]));
    free(want);
    free(next);
    free(got);
}

/* Subarrays: a host write of rows by every rank alike, an eval on one
 * rank's device of a column block, and a read of a subarray. */
static void run_subarrays(hpl_context *ctx)
{
    static const char *add_src = "#include <hplvk.glsl>\n"
                                 "hpl_args { hpl_inout(uint, 2) a; uint v; };\n"
                                 "void main() { hpl_at2(a, hpl_global_id.x, hpl_global_id.y) += v; }\n";
    hpl_kernel add = th_kernel(ctx, add_src);
    uint64_t rows = 12, cols = 10;
    uint32_t want[12 * 10], got[12 * 10];
    hpl_array a = th_array(ctx, HPL_UINT32, rows, cols, 0);
    for (uint64_t i = 0; i < rows * cols; i++)
        want[i] = (uint32_t)i;
    CHECK_OK(hpl_array_write(ctx, a, want, sizeof want));
    int devices = hpl_device_count(ctx);
    /* Each device adds to a block of columns of its own. */
    for (int d = 0; d < devices; d++) {
        hpl_array block;
        uint64_t c0 = (uint64_t)d * cols / (uint64_t)devices, c1 = (uint64_t)(d + 1) * cols / (uint64_t)devices;
        if (c0 == c1)
            continue;
        CHECK_OK(hpl_subarray(ctx, a, 2, (hpl_range[]){{0, rows - 1}, {c0, c1 - 1}}, &block));
        CHECK_OK(hpl_eval(ctx, add, &(hpl_launch){.device = d}, HPL_ARGS(hpl_arr(block), hpl_u32(100u + (uint32_t)d))));
        for (uint64_t r = 0; r < rows; r++)
            for (uint64_t c = c0; c < c1; c++)
                want[r * cols + c] += 100u + (uint32_t)d;
    }
    /* Every rank reads a middle block, then the whole. */
    hpl_array mid;
    CHECK_OK(hpl_subarray(ctx, a, 2, (hpl_range[]){{3, 8}, {2, 7}}, &mid));
    uint32_t part[6 * 6];
    CHECK_OK(hpl_array_read(ctx, mid, part, sizeof part));
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++)
            CHECK(part[r * 6 + c] == want[(r + 3) * cols + (uint64_t)c + 2], "mid[%d][%d] %u want %u", r, c,
                  part[r * 6 + c], want[(r + 3) * cols + (uint64_t)c + 2]);
    CHECK_OK(hpl_array_read(ctx, a, got, sizeof got));
    EXPECT_U32(got, want, rows * cols, "blocks");
    /* A host write of a subarray by every rank, then an eval on the last
     * device reads it whole. */
    uint32_t ones[6 * 6];
    for (int i = 0; i < 36; i++)
        ones[i] = 1000u + (uint32_t)i;
    CHECK_OK(hpl_array_write(ctx, mid, ones, sizeof ones));
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++)
            want[(r + 3) * cols + (uint64_t)c + 2] = ones[r * 6 + c];
    CHECK_OK(hpl_eval(ctx, add, &(hpl_launch){.device = devices - 1}, HPL_ARGS(hpl_arr(a), hpl_u32(5))));
    for (uint64_t i = 0; i < rows * cols; i++)
        want[i] += 5;
    CHECK_OK(hpl_array_read(ctx, a, got, sizeof got));
    EXPECT_U32(got, want, rows * cols, "after the host write");
    CHECK_OK(hpl_array_destroy(ctx, a));
}

/* Fill, assignment, prefetch, discard and reduction over ranks: a fill on
 * one rank's device, an assignment between subarrays on another's, a fill
 * on the host, sums and extremes against the host's, a discard then a
 * write. (Plans: test_ranks_plan.) */
static void run_others(hpl_context *ctx)
{
    int devices = hpl_device_count(ctx);
    uint64_t n = 60;
    uint32_t want[60], got[60];
    hpl_array a = th_array(ctx, HPL_UINT32, n, 0, 0);
    uint32_t seven = 7, nine = 9;
    CHECK_OK(hpl_array_fill(ctx, a, &seven, HPL_ON_HOST));
    for (uint64_t i = 0; i < n; i++)
        want[i] = 7;
    /* Rows 10..29 filled on the last device, then copied to 40..59 on the
     * first (another rank's when there are several). */
    hpl_array mid, top;
    CHECK_OK(hpl_subarray(ctx, a, 1, (hpl_range[]){{10, 29}}, &mid));
    CHECK_OK(hpl_subarray(ctx, a, 1, (hpl_range[]){{40, 59}}, &top));
    CHECK_OK(hpl_array_fill(ctx, mid, &nine, devices - 1));
    CHECK_OK(hpl_array_assign(ctx, top, mid, 0));
    for (uint64_t i = 10; i < 30; i++)
        want[i] = want[i + 30] = 9;
    CHECK_OK(hpl_array_prefetch(ctx, a, devices - 1));
    uint32_t sum = 0, max = 0, min = 0;
    CHECK_OK(hpl_array_reduce(ctx, a, HPL_REDUCE_SUM, &sum));
    CHECK_OK(hpl_array_reduce(ctx, a, HPL_REDUCE_MAX, &max));
    CHECK_OK(hpl_array_reduce(ctx, mid, HPL_REDUCE_MIN, &min));
    uint32_t want_sum = 0;
    for (uint64_t i = 0; i < n; i++)
        want_sum += want[i];
    CHECK(sum == want_sum && max == 9 && min == 9, "sum %u (want %u), max %u (want 9), min of mid %u (want 9)", sum,
          want_sum, max, min);
    /* An assignment on the host, by every rank. */
    hpl_array low;
    CHECK_OK(hpl_subarray(ctx, a, 1, (hpl_range[]){{0, 9}}, &low));
    hpl_array from;
    CHECK_OK(hpl_subarray(ctx, a, 1, (hpl_range[]){{45, 54}}, &from));
    CHECK_OK(hpl_array_assign(ctx, low, from, HPL_ON_HOST));
    for (uint64_t i = 0; i < 10; i++)
        want[i] = want[45 + i];
    CHECK_OK(hpl_array_read(ctx, a, got, sizeof got));
    EXPECT_U32(got, want, n, "fill, assign, prefetch");
    /* Discarded, then written on the host: the write is what a read sees. */
    CHECK_OK(hpl_array_discard(ctx, a));
    for (uint64_t i = 0; i < n; i++)
        want[i] = (uint32_t)(3 * i);
    CHECK_OK(hpl_array_write(ctx, a, want, sizeof want));
    CHECK_OK(hpl_array_reduce(ctx, a, HPL_REDUCE_SUM, &sum));
    CHECK(sum == 3 * 59 * 60 / 2, "sum after the write %u", sum);
    CHECK_OK(hpl_array_destroy(ctx, a));
}

int main(int argc, char **argv)
{
    hpl_context *ctx = ranks_start(&argc, &argv, &rank, &ranks);
    /* Every rank's devices, in rank order. */
    int devices = hpl_device_count(ctx), last_rank = 0, mine = 0;
    for (int g = 0; g < devices; g++) {
        hpl_device_info info;
        CHECK_OK(hpl_device_get_info(ctx, g, &info));
        CHECK(info.rank >= last_rank && info.rank < ranks, "device %d: rank %d after %d", g, info.rank, last_rank);
        last_rank = info.rank;
        mine += info.rank == rank;
    }
    hpl_stats st = th_stats(ctx);
    CHECK(mine == st.device_count, "rank %d: %d devices in the table, %d opened", rank, mine, st.device_count);
    int total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == devices, "%d devices over the ranks, the table has %d", total, devices);

    hpl_kernel k = th_kernel(ctx, rows_stencil_src());
    /* Traced: each rank writes its own file. */
    char dir[256] = "";
    if (rank == 0) {
        char *d = th_tmpdir("ranks_trace");
        snprintf(dir, sizeof dir, "%s", d ? d : "");
        free(d);
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    char path[300], own[320];
    snprintf(path, sizeof path, "%s/t.json", dir);
    snprintf(own, sizeof own, ranks > 1 ? "%s/t.rank%d.json" : "%s/t.json", dir, rank);
    uint64_t bytes_before, boxes_before, bytes_after, boxes_after;
    moved_so_far(ctx, &bytes_before, &boxes_before);
    CHECK_OK(hpl_trace_begin(ctx, path));
    run_stencil(ctx, k, 37, 19, 5, false);
    CHECK_OK(hpl_trace_end(ctx));
    moved_so_far(ctx, &bytes_after, &boxes_after);
    size_t size = 0;
    char *trace = th_read_file(own, &size);
    char host_name[64];
    snprintf(host_name, sizeof host_name, ranks > 1 ? "\"rank %d host\"" : "\"host\"", rank);
    CHECK(trace && th_contains(trace, host_name) && th_contains(trace, "\"cat\":\"kernel\""),
          "rank %d: trace %s (%zu bytes) lacks %s or a kernel", rank, own, size, host_name);
    /* Every byte moved between ranks is in a message event (a box, or a
     * group of its rows each), each on the track of its peer and way. */
    uint64_t moved = bytes_after - bytes_before, boxes = boxes_after - boxes_before;
    uint64_t traced = 0, events = 0;
    for (const char *p = trace ? strstr(trace, "\"cat\":\"message\"") : NULL; p;
         p = strstr(p + 1, "\"cat\":\"message\"")) {
        const char *b = strstr(p, "\"peer\":");
        b = b ? strstr(b, "\"bytes\":") : NULL;
        CHECK(b, "rank %d: a message event without its bytes", rank);
        traced += strtoull(b + strlen("\"bytes\":"), NULL, 10);
        events++;
    }
    CHECK(traced == moved && events >= boxes && (ranks == 1 || moved > 0),
          "rank %d: the trace's messages carry %" PRIu64 " bytes in %" PRIu64 " events, the statistics %" PRIu64
          " bytes in %" PRIu64 " boxes",
          rank, traced, events, moved, boxes);
    CHECK(ranks == 1 || (th_contains(trace, "\"send to rank ") && th_contains(trace, "\"receive from rank ") &&
                         th_contains(trace, "\"sends to rank ")),
          "rank %d: the trace names no send, receive or message track", rank);
    /* Every rank's times count from the same moment: the files merge. */
    const char *o = trace ? strstr(trace, "\"origin_ns\":") : NULL;
    unsigned long long origin = o ? strtoull(o + strlen("\"origin_ns\":"), NULL, 10) : 0, lo = 0, hi = 0;
    MPI_Allreduce(&origin, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&origin, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(origin > 0 && lo == hi, "rank %d: the trace's origin_ns is %llu, the ranks' range %llu .. %llu", rank, origin,
          lo, hi);
    free(trace);
    MPI_Barrier(MPI_COMM_WORLD);
    /* halos_first: the rows whose reads a rank holds run before its moves,
     * the rows next to another rank's after them, in the same eval. So in
     * its trace the last kernel before each halo receive is one of the same
     * step, reading the array received (without it, the step before's,
     * which wrote it). */
    snprintf(path, sizeof path, "%s/h.json", dir);
    snprintf(own, sizeof own, ranks > 1 ? "%s/h.rank%d.json" : "%s/h.json", dir, rank);
    CHECK_OK(hpl_trace_begin(ctx, path));
    run_stencil(ctx, k, 37, 19, 5, true);
    CHECK_OK(hpl_trace_end(ctx));
    trace = th_read_file(own, &size);
    int receives = 0, read_before = 0;
    char last_read[64] = "";
    static const char receive[] = "{\"name\":\"receive from", kernel[] = "\"cat\":\"kernel\"",
                      reads[] = "\"reads\":[\"", array[] = "\"array\":\"";
    for (const char *p = trace ? strstr(trace, "{\"name\":") : NULL; p; p = strstr(p + 1, "{\"name\":")) {
        const char *end = strstr(p + 1, "{\"name\":");
        const char *cat = strstr(p, "\"cat\":\"");
        if (!cat || (end && cat > end))
            continue;
        if (!strncmp(cat, kernel, strlen(kernel))) {
            const char *r = strstr(p, reads);
            if (r && (!end || r < end))
                sscanf(r + strlen(reads), "%63[^\"]", last_read);
        } else if (!strncmp(p, receive, strlen(receive))) {
            const char *n = strstr(p, array);
            char name[64] = "";
            if (n && (!end || n < end))
                sscanf(n + strlen(array), "%63[^\"]", name);
            receives++;
            read_before += name[0] && !strcmp(name, last_read);
        }
    }
    /* (Under validation, a zero-copy device's parts run one after the
     * other, so no rows run before the moves there.) */
    bool zero_copy = false;
    for (int g = 0; g < devices; g++) {
        hpl_device_info info;
        zero_copy = zero_copy || (CHECK_OK(hpl_device_get_info(ctx, g, &info)) && info.zero_copy);
    }
    /* Steps 1, 3 and 4 take a halo row from each neighbouring rank (step 2
     * follows a whole read); the whole reads after steps 1 and 4 receive
     * too, after the kernels that wrote what they receive. */
    int neighbours = (rank > 0) + (rank < ranks - 1);
    CHECK(ranks == 1 || zero_copy || read_before >= 3 * neighbours,
          "rank %d: halos_first: %d of its %d receives come after a kernel of their step, want %d at least", rank,
          read_before, receives, 3 * neighbours);
    free(trace);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && dir[0])
        th_rmtree(dir);
    run_stencil(ctx, k, (uint64_t)devices + 1, 5, 3, false); /* parts of one or two rows */
    run_subarrays(ctx);
    run_others(ctx);
    int failed = th_finish(ctx);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_ranks_stencil: %d ranks, %d devices: %s\n", ranks, devices, any ? "FAILED" : "ok");
    MPI_Finalize();
    return failed;
}
