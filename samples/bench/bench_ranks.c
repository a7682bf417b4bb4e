/*
 * bench_ranks — what a context over MPI ranks (hplvk_mpi.h) costs against
 * plain MPI and against one process, each figure beside its baseline
 * measured in the same run, in interleaved rounds (median, min, max):
 *
 *   1. Large moves from rank 0 to rank 1, per size (powers of 4 from
 *      min_kib to max_kib), rate = bytes / time:
 *        mpi        half the round trip of an MPI_Send/MPI_Recv ping-pong
 *                   of the bytes between ranks 0 and 1 (the baseline;
 *                   repeated up to 100 times a round, 8 MiB or more in
 *                   all, so its buffers stay warm); beside it one
 *                   MPI_Send/MPI_Recv timed as the library's moves are
 *                   (after a barrier, the slower rank's time);
 *        eval       an eval on rank 1's device of a kernel that takes a
 *                   1-D array an eval on rank 0's device wrote, plus
 *                   hpl_finish (the slower rank's time): rank 0's download,
 *                   the MPI message, rank 1's upload and the kernel, which
 *                   runs one item (global 1: it costs nothing, yet the
 *                   whole array moves; a full check of it follows, untimed);
 *        eval move  the same minus the same eval again with the data
 *                   already there (the eval's host path, the empty kernel),
 *                   per round: the move alone (target >= 0.9x mpi);
 *        read       hpl_array_read by every rank after the write on rank 0's
 *                   device, minus a second read (the copy into the
 *                   caller's buffer, nothing moved): download + MPI;
 *        host move  the same in a context of zero-copy devices (cpu+zc on
 *                   each rank: the kernel writes rank 0's host storage), so
 *                   only the box between the two host storages (MPI).
 *   2. A one-row halo hop: a row-split stencil step (hpl_part1(.., 1)) over
 *      the 2-rank context, one row each way per step, against the MPI
 *      round trip of one row (ping-pong) plus 2x the same step in one
 *      process over two devices (hpl_context_create, devices cpu:2, on rank
 *      0 while rank 1 sleeps). Target: step <= rtt + 2x one-process step.
 *   3. The same stencil loop in a 1-rank hpl_mpi_context_create context
 *      (MPI_COMM_SELF, cpu:2, on rank 0) against the plain context of 2:
 *      target within 2%.
 * Every part checks its data: the kernels check the moved pattern on the
 * receiving device, reads are compared with the pattern on the host, the
 * ping-pong's echo with what was sent, and each stencil's result with a host
 * reference after all its steps (and the 2-rank steps received exactly one
 * row per step on each rank).
 *
 * Run by hand (each rank opens its own devices, HPLVK_DEVICES per rank):
 *
 *   OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
 *   OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
 *   OMPI_MCA_mpi_yield_when_idle=1 HPLVK_DEVICES=cpu \
 *   mpiexec -n 2 build/samples/bench/bench_ranks [min_kib [max_kib [rounds [rows [steps]]]]]
 *
 * Defaults 64 65536 5 512 20 (the stencil is rows x rows uint32, `steps`
 * steps per round). Exactly 2 ranks. The RESULT line gives the largest
 * move: time_ms the median eval move, rate its GB/s.
 */
#define _POSIX_C_SOURCE 200809L
#define SAMPLE_NAME "bench_ranks"
#include "bench_vk.h" /* medians, the pattern kernels (and sample_util.h) */

#include <hplvk_mpi.h>
#include <mpi.h>

static int rank, ranks;

#define MAX_ROUNDS 1000
#define TOKEN_TAG 77
#define PING_TAG 78

/* ---- MPI helpers (on MPI_COMM_WORLD; the library's messages travel on a
 * duplicate of it) ---------------------------------------------------- */

static double max_over_ranks(double v)
{
    double m = v;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static bool all_ranks(bool ok)
{
    int mine = ok, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all != 0;
}

/* Rank 1 waits for rank 0's token sleeping (a blocking MPI call would poll
 * a core that rank 0's one-process runs need). */
static void idle_until_released(void)
{
    int token = 0, done = 0;
    MPI_Request r;
    MPI_Irecv(&token, 1, MPI_INT, 0, TOKEN_TAG, MPI_COMM_WORLD, &r);
    while (!done) {
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (!done)
            nanosleep(&(struct timespec){0, 200000}, NULL);
    }
}

static void release(void)
{
    int token = 1;
    for (int r = 1; r < ranks; r++)
        MPI_Send(&token, 1, MPI_INT, r, TOKEN_TAG, MPI_COMM_WORLD);
}

/* Ms per round trip of `bytes` between ranks 0 and 1 (rank 0 sends, rank 1
 * echoes), over reps; every rank returns rank 0's figure. *echo_ok: rank
 * 0 got back what it sent. */
static double mpi_rtt_ms(uint32_t *buf, size_t bytes, int reps, uint32_t seed, bool *echo_ok)
{
    uint64_t n = bytes / sizeof(uint32_t);
    if (rank == 0)
        bench_fill(buf, n, seed);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = sample_now_ms();
    for (int i = 0; i < reps; i++) {
        if (rank == 0) {
            MPI_Send(buf, (int)bytes, MPI_BYTE, 1, PING_TAG, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, PING_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, PING_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)bytes, MPI_BYTE, 0, PING_TAG, MPI_COMM_WORLD);
        }
    }
    double ms = (sample_now_ms() - t0) / reps;
    if (rank == 0 && bench_mismatches("MPI ping-pong echo", buf, n, seed))
        *echo_ok = false;
    MPI_Bcast(&ms, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return ms;
}

/* Ms of one message of `bytes` from rank 0 to rank 1 timed as the library's
 * moves are (after a barrier, the slower rank's time): the baseline with
 * the same synchronisation; *ok: rank 1 got the pattern. */
static double mpi_oneway_ms(uint32_t *buf, size_t bytes, uint32_t seed, bool *ok)
{
    uint64_t n = bytes / sizeof(uint32_t);
    if (rank == 0)
        bench_fill(buf, n, seed);
    else
        memset(buf, 0, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = sample_now_ms();
    if (rank == 0)
        MPI_Send(buf, (int)bytes, MPI_BYTE, 1, PING_TAG, MPI_COMM_WORLD);
    else if (rank == 1)
        MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, PING_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double ms = max_over_ranks(sample_now_ms() - t0);
    if (rank == 1 && bench_mismatches("MPI one-way message", buf, n, seed))
        *ok = false;
    return ms;
}

/* ---- printing ----------------------------------------------------------- */

static void print_figure(const char *what, const double *ms, int n, uint64_t bytes)
{
    if (rank != 0)
        return;
    bench_stat s = bench_stats(ms, n);
    printf("  %-34s %9.3f ms (min %.3f, max %.3f)", what, s.median, s.min, s.max);
    if (bytes && s.median > 0.0)
        printf("  %7.3f GB/s", (double)bytes / (s.median * 1e6));
    printf("\n");
}

static void print_ratio(const char *what, double ratio, double target, bool at_least)
{
    if (rank == 0)
        printf("  %-34s %9.3f  (target %s %.2f: %s)\n", what, ratio, at_least ? ">=" : "<=", target,
               bench_verdict(ratio, target, at_least));
}

/* ---- contexts ------------------------------------------------------------- */

static hpl_context *mpi_context(MPI_Comm comm, const char *devices)
{
    hpl_context_desc desc = {.devices = devices, .log = sample_log, .validation = bench_validation_env()};
    hpl_context *ctx = NULL;
    if (hpl_mpi_context_create(&desc, comm, &ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": rank %d: hpl_mpi_context_create(%s): %s\n", rank, devices ? devices : "default",
                hpl_last_error());
        return NULL;
    }
    return ctx;
}

static hpl_context *plain_context(const char *devices)
{
    hpl_context_desc desc = {.devices = devices, .log = sample_log, .validation = bench_validation_env()};
    hpl_context *ctx = NULL;
    if (hpl_context_create(&desc, &ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create(%s): %s\n", devices, hpl_last_error());
        return NULL;
    }
    return ctx;
}

/* The first device of the context that rank r opened; -1 if none. */
static int first_device_of(hpl_context *ctx, int r)
{
    for (int g = 0; g < hpl_device_count(ctx); g++) {
        hpl_device_info info;
        if (hpl_device_get_info(ctx, g, &info) == HPL_OK && info.rank == r)
            return g;
    }
    return -1;
}

/* ---- part 1: large moves ---------------------------------------------------- */

typedef struct move_ctx {
    hpl_context *ctx;
    bench_kernels k;
    int src, dst; /* devices: rank 0's and rank 1's first */
} move_ctx;

static bool move_setup(move_ctx *m, hpl_context *ctx)
{
    m->ctx = ctx;
    m->src = first_device_of(ctx, 0);
    m->dst = first_device_of(ctx, 1);
    if (m->src < 0 || m->dst < 0) {
        fprintf(stderr, SAMPLE_NAME ": rank 0 or 1 opened no device\n");
        return false;
    }
    if (!bench_kernels_create(ctx, &m->k))
        return false;
    uint32_t zero = 0;
    BENCH_HPL(hpl_array_write(ctx, m->k.bad, &zero, sizeof zero));
    return true;
}

/* This rank's received (rank 1) or sent (rank 0) bytes since the last reset
 * are exactly `bytes`. */
static bool moved_exactly(hpl_context *ctx, uint64_t bytes, const char *what)
{
    hpl_stats st;
    BENCH_HPL(hpl_stats_get(ctx, &st));
    uint64_t got = rank == 0 ? st.rank_sent_bytes : rank == 1 ? st.rank_received_bytes : bytes;
    if (got == bytes)
        return true;
    fprintf(stderr, SAMPLE_NAME ": %s: rank %d %s %" PRIu64 " bytes, expected %" PRIu64 "\n", what, rank,
            rank == 0 ? "sent" : "received", got, bytes);
    return false;
}

/* One round at one size in the context of own-memory devices: the eval that
 * moves the array (and the same eval again), then a read that moves it
 * (and a second read). Times: the slower rank's. */
static bool move_round_dma(move_ctx *m, hpl_array a, uint32_t *buf, uint64_t n, uint32_t seed, double *eval_ms,
                           double *stay_ms, double *read_ms, double *reread_ms)
{
    hpl_context *ctx = m->ctx;
    uint64_t bytes = n * sizeof(uint32_t);
    /* The timed evals check element 0 only (global 1: a kernel of no cost)
     * but take the whole array, so the library moves all of it; a full
     * check follows, untimed. */
    const hpl_launch touch = {.device = m->dst, .global = {1}}, on_dst = {.device = m->dst};
    bool ok = true;
    /* The eval on rank 1's device that reads what rank 0's wrote. */
    if (!bench_stamp(ctx, &m->k, a, seed, m->src))
        return false;
    BENCH_HPL(hpl_finish(ctx));
    BENCH_HPL(hpl_stats_reset(ctx));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = sample_now_ms();
    BENCH_HPL(hpl_eval(ctx, m->k.check, &touch, HPL_ARGS(hpl_arr(a), hpl_arr(m->k.bad), hpl_u32(seed))));
    BENCH_HPL(hpl_finish(ctx));
    *eval_ms = max_over_ranks(sample_now_ms() - t0);
    ok = moved_exactly(ctx, bytes, "eval move") && ok;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = sample_now_ms();
    BENCH_HPL(hpl_eval(ctx, m->k.check, &touch, HPL_ARGS(hpl_arr(a), hpl_arr(m->k.bad), hpl_u32(seed))));
    BENCH_HPL(hpl_finish(ctx));
    *stay_ms = max_over_ranks(sample_now_ms() - t0);
    ok = moved_exactly(ctx, bytes, "eval again (nothing moves)") && ok;
    BENCH_HPL(hpl_eval(ctx, m->k.check, &on_dst, HPL_ARGS(hpl_arr(a), hpl_arr(m->k.bad), hpl_u32(seed))));
    BENCH_HPL(hpl_finish(ctx));
    /* The read by every rank of what rank 0's device wrote. */
    if (!bench_stamp(ctx, &m->k, a, seed + 1, m->src))
        return false;
    BENCH_HPL(hpl_finish(ctx));
    BENCH_HPL(hpl_stats_reset(ctx));
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = sample_now_ms();
    BENCH_HPL(hpl_array_read(ctx, a, buf, bytes));
    *read_ms = max_over_ranks(sample_now_ms() - t0);
    ok = moved_exactly(ctx, bytes, "read") && ok;
    ok = bench_mismatches("read after the write on rank 0's device", buf, n, seed + 1) == 0 && ok;
    memset(buf, 0, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = sample_now_ms();
    BENCH_HPL(hpl_array_read(ctx, a, buf, bytes));
    *reread_ms = max_over_ranks(sample_now_ms() - t0);
    ok = moved_exactly(ctx, bytes, "second read (nothing moves)") && ok;
    ok = bench_mismatches("second read", buf, n, seed + 1) == 0 && ok;
    return ok;
}

/* The read round in the context of zero-copy devices: host storage to host
 * storage only. */
static bool move_round_host(move_ctx *m, hpl_array a, uint32_t *buf, uint64_t n, uint32_t seed, double *read_ms,
                            double *reread_ms)
{
    hpl_context *ctx = m->ctx;
    uint64_t bytes = n * sizeof(uint32_t);
    bool ok = true;
    if (!bench_stamp(ctx, &m->k, a, seed, m->src))
        return false;
    BENCH_HPL(hpl_finish(ctx));
    BENCH_HPL(hpl_stats_reset(ctx));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = sample_now_ms();
    BENCH_HPL(hpl_array_read(ctx, a, buf, bytes));
    *read_ms = max_over_ranks(sample_now_ms() - t0);
    ok = moved_exactly(ctx, bytes, "host read") && ok;
    ok = bench_mismatches("read after the write on rank 0's zero-copy device", buf, n, seed) == 0 && ok;
    memset(buf, 0, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = sample_now_ms();
    BENCH_HPL(hpl_array_read(ctx, a, buf, bytes));
    *reread_ms = max_over_ranks(sample_now_ms() - t0);
    ok = moved_exactly(ctx, bytes, "second host read (nothing moves)") && ok;
    ok = bench_mismatches("second host read", buf, n, seed) == 0 && ok;
    return ok;
}

/* The checks the evals counted on rank 1's device (read by every rank). */
static bool move_bad_clean(move_ctx *m)
{
    uint32_t bad = 1;
    BENCH_HPL(hpl_array_read(m->ctx, m->k.bad, &bad, sizeof bad));
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": %u elements arrived wrong on device %d\n", bad, m->dst);
    return bad == 0;
}

typedef struct move_result {
    uint64_t bytes;
    double eval_move_ms;
    bool measured;
} move_result;

static bool part_moves(move_ctx *dma, move_ctx *host, uint64_t min_kib, uint64_t max_kib, int rounds,
                       move_result *res)
{
    bool ok = true;
    if (rank == 0)
        printf("1. moves from rank 0's device to rank 1 (%d round%s, interleaved; ms the slower rank's)\n", rounds,
               rounds == 1 ? "" : "s");
    double *t = calloc((size_t)rounds * 9, sizeof *t);
    if (!t)
        return false;
    for (uint64_t kib = min_kib; kib <= max_kib && ok; kib *= 4) {
        uint64_t bytes = kib * 1024, n = bytes / sizeof(uint32_t);
        uint32_t *buf = malloc(bytes), *pp = malloc(bytes);
        hpl_array a = {0}, z = {0};
        bool made = buf && pp;
        made = made && hpl_array_create(dma->ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {n}, .name = "moved"},
                                        &a) == HPL_OK;
        made = made && hpl_array_create(host->ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {n}, .name = "moved"},
                                        &z) == HPL_OK;
        if (!all_ranks(made)) {
            fprintf(stderr, SAMPLE_NAME ": rank %d: no memory for %" PRIu64 " KiB: %s\n", rank, kib, hpl_last_error());
            ok = false;
            free(buf);
            free(pp);
            break;
        }
        double *mpi = t, *eval = t + rounds, *stay = t + 2 * rounds, *read = t + 3 * rounds, *reread = t + 4 * rounds,
               *hread = t + 5 * rounds, *hreread = t + 6 * rounds, *diff = t + 7 * rounds, *oneway = t + 8 * rounds;
        int reps = (int)(8 * 1024 * 1024 / bytes);
        reps = reps < 1 ? 1 : reps > 100 ? 100 : reps;
        bool echo = true;
        for (int r = 0; r < rounds && ok; r++) {
            uint32_t seed = (uint32_t)(kib * 1000 + (uint64_t)r * 17 + 1);
            /* Alternate which goes first, so that a slow phase hits both. */
            if (r % 2 == 0)
                mpi[r] = 0.5 * mpi_rtt_ms(pp, bytes, reps, seed, &echo);
            oneway[r] = mpi_oneway_ms(pp, bytes, seed, &echo);
            ok = move_round_dma(dma, a, buf, n, seed, &eval[r], &stay[r], &read[r], &reread[r]) && ok;
            ok = move_round_host(host, z, buf, n, seed + 7, &hread[r], &hreread[r]) && ok;
            if (r % 2 == 1)
                mpi[r] = 0.5 * mpi_rtt_ms(pp, bytes, reps, seed, &echo);
            ok = all_ranks(ok);
        }
        ok = all_ranks(ok && echo);
        if (ok && rank == 0) {
            printf(" %" PRIu64 " KiB:\n", kib);
            print_figure("mpi (half ping-pong, baseline)", mpi, rounds, bytes);
            print_figure("mpi one message after a barrier", oneway, rounds, bytes);
            print_figure("eval on rank 1 (moves it, 1 item)", eval, rounds, bytes);
            print_figure("same eval again (no move)", stay, rounds, 0);
            for (int r = 0; r < rounds; r++)
                diff[r] = eval[r] - stay[r];
            print_figure("eval move (difference)", diff, rounds, bytes);
        }
        double mpi_med = bench_stats(mpi, rounds).median;
        double move_med = bench_stats(diff, rounds).median;
        if (ok) {
            print_ratio("eval move rate / mpi", move_med > 0 ? mpi_med / move_med : 0.0, 0.9, true);
            print_ratio("whole eval rate / mpi", mpi_med / bench_stats(eval, rounds).median, 0.9, true);
            if (rank == 0)
                printf("  %-34s %9.3f\n", "eval move rate / mpi one message",
                       move_med > 0 ? bench_stats(oneway, rounds).median / move_med : 0.0);
            if (rank == 0) {
                print_figure("read by all (download + MPI)", read, rounds, bytes);
                print_figure("second read (copy out only)", reread, rounds, 0);
                for (int r = 0; r < rounds; r++)
                    diff[r] = read[r] - reread[r];
                print_figure("read move (difference)", diff, rounds, bytes);
                printf("  %-34s %9.3f\n", "read move rate / mpi", mpi_med / bench_stats(diff, rounds).median);
                print_figure("zero-copy read (host to host)", hread, rounds, bytes);
                print_figure("zero-copy second read", hreread, rounds, 0);
                for (int r = 0; r < rounds; r++)
                    diff[r] = hread[r] - hreread[r];
                print_figure("host move (difference)", diff, rounds, bytes);
                printf("  %-34s %9.3f\n", "host move rate / mpi", mpi_med / bench_stats(diff, rounds).median);
                printf("  %-34s %9.3f\n", "host move rate / mpi one message",
                       bench_stats(oneway, rounds).median / bench_stats(diff, rounds).median);
            }
            res->bytes = bytes;
            res->eval_move_ms = move_med;
            res->measured = true;
        }
        if (hpl_array_destroy(dma->ctx, a) != HPL_OK || hpl_array_destroy(host->ctx, z) != HPL_OK)
            ok = false;
        free(buf);
        free(pp);
    }
    free(t);
    ok = move_bad_clean(dma) && ok;
    ok = move_bad_clean(host) && ok;
    return all_ranks(ok);
}

/* ---- parts 2 and 3: the stencil ------------------------------------------ */

/* The row stencil of tests/mpi/test_ranks_stencil.c: exact in uint, every
 * row reading the rows next to it. */
static const char stencil_src[] =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) src; hpl_out(uint, 2) dst; };\n"
    "void main() {\n"
    "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"
    "    int n = int(src.dims.x);\n"
    "    uint h = r * 2654435761u + c;\n"
    "    for (int d = -1; d <= 1; d++) {\n"
    "        int k = int(r) + d;\n"
    "        if (k < 0 || k >= n) continue;\n"
    "        h = h * 31u + hpl_at2(src, uint(k), c) * uint(d + 7);\n"
    "    }\n"
    "    hpl_at2(dst, r, c) = h;\n"
    "}\n";

static void host_step(uint64_t rows, uint64_t cols, const uint32_t *src, uint32_t *dst)
{
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) {
            uint32_t h = (uint32_t)r * 2654435761u + (uint32_t)c;
            for (int d = -1; d <= 1; d++) {
                int64_t k = (int64_t)r + d;
                if (k < 0 || k >= (int64_t)rows)
                    continue;
                h = h * 31u + src[(uint64_t)k * cols + c] * (uint32_t)(d + 7);
            }
            dst[r * cols + c] = h;
        }
}

static void stencil_input(uint32_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        p[i] = (uint32_t)(i * 2246822519u + 7u);
}

typedef struct stencil {
    hpl_context *ctx;
    hpl_kernel k;
    hpl_array g[2];
    int cur;
    uint64_t rows, steps_done;
} stencil;

static bool stencil_setup(stencil *s, hpl_context *ctx, uint64_t rows, const uint32_t *input)
{
    *s = (stencil){.ctx = ctx, .rows = rows};
    BENCH_HPL(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = stencil_src, .name = "stencil"}}, &s->k));
    for (int i = 0; i < 2; i++)
        BENCH_HPL(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {rows, rows}}, &s->g[i]));
    BENCH_HPL(hpl_array_write(ctx, s->g[0], input, rows * rows * sizeof *input));
    return true;
}

/* `steps` steps over every device of the context, then hpl_finish. */
static bool stencil_steps(stencil *s, uint64_t steps)
{
    hpl_launch all = sample_launch(s->ctx);
    for (uint64_t i = 0; i < steps; i++) {
        BENCH_HPL(hpl_eval(s->ctx, s->k, &all, HPL_ARGS(hpl_part1(s->g[s->cur], 1), hpl_part1(s->g[1 - s->cur], 1))));
        s->cur = 1 - s->cur;
    }
    BENCH_HPL(hpl_finish(s->ctx));
    s->steps_done += steps;
    return true;
}

/* Ms per step of `steps` steps on this process. */
static double stencil_time(stencil *s, uint64_t steps, bool *ok)
{
    double t0 = sample_now_ms();
    *ok = stencil_steps(s, steps) && *ok;
    return (sample_now_ms() - t0) / (double)steps;
}

static bool stencil_verify(stencil *s, const uint32_t *want, uint64_t want_steps, const char *what)
{
    uint64_t n = s->rows * s->rows;
    uint32_t *got = malloc(n * sizeof *got);
    if (!got)
        return false;
    bool ok = s->steps_done == want_steps;
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": %s: %" PRIu64 " steps, the reference %" PRIu64 "\n", what, s->steps_done,
                want_steps);
    if (hpl_array_read(s->ctx, s->g[s->cur], got, n * sizeof *got) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": %s: hpl_array_read: %s\n", what, hpl_last_error());
        ok = false;
    } else {
        for (uint64_t i = 0; i < n; i++)
            if (got[i] != want[i]) {
                fprintf(stderr, SAMPLE_NAME ": %s: element (%" PRIu64 ", %" PRIu64 ") is %u, the host says %u\n",
                        what, i / s->rows, i % s->rows, got[i], want[i]);
                ok = false;
                break;
            }
    }
    free(got);
    return ok;
}

static void stencil_free(stencil *s)
{
    if (!s->ctx)
        return;
    hpl_array_destroy(s->ctx, s->g[0]);
    hpl_array_destroy(s->ctx, s->g[1]);
    hpl_kernel_destroy(s->ctx, s->k);
}

static bool part_stencil(hpl_context *two, uint64_t rows, int rounds, uint64_t steps)
{
    const uint64_t warm = 2, total = warm + (uint64_t)rounds * steps;
    uint64_t n = rows * rows, row_bytes = rows * sizeof(uint32_t);
    uint32_t *input = malloc(n * sizeof *input), *next = malloc(n * sizeof *next), *row = malloc(row_bytes);
    double *t = calloc((size_t)rounds * 5, sizeof *t);
    if (!input || !next || !row || !t) {
        free(input);
        free(next);
        free(row);
        free(t);
        return false;
    }
    stencil_input(input, n);
    /* The two one-process contexts, on rank 0 only. */
    hpl_context *plain = NULL, *self = NULL;
    bool ok = true;
    if (rank == 0) {
        plain = plain_context("cpu:2");
        self = mpi_context(MPI_COMM_SELF, "cpu:2");
        ok = plain && self;
    }
    stencil sr = {0}, sp = {0}, ss = {0};
    ok = ok && stencil_setup(&sr, two, rows, input);
    if (rank == 0 && ok)
        ok = stencil_setup(&sp, plain, rows, input) && stencil_setup(&ss, self, rows, input);
    ok = all_ranks(ok);
    /* Warm-up: compiles, the first moves (the input is everywhere, so the
     * first step moves nothing). */
    if (ok) {
        ok = stencil_steps(&sr, warm);
        if (rank == 0)
            ok = stencil_steps(&sp, warm) && stencil_steps(&ss, warm) && ok;
        ok = all_ranks(ok);
    }
    double *rtt = t, *step2 = t + rounds, *stepp = t + 2 * rounds, *steps_self = t + 3 * rounds;
    bool echo = true;
    for (int r = 0; r < rounds && ok; r++) {
        rtt[r] = mpi_rtt_ms(row, row_bytes, 200, (uint32_t)r + 5, &echo);
        BENCH_HPL(hpl_stats_reset(two));
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = sample_now_ms();
        ok = stencil_steps(&sr, steps) && ok;
        step2[r] = max_over_ranks(sample_now_ms() - t0) / (double)steps;
        hpl_stats st;
        if (hpl_stats_get(two, &st) != HPL_OK || st.rank_received_bytes != steps * row_bytes ||
            st.rank_received_count != steps) {
            fprintf(stderr,
                    SAMPLE_NAME ": rank %d received %" PRIu64 " bytes in %" PRIu64 " boxes over %" PRIu64
                                " steps, expected one row of %" PRIu64 " bytes a step\n",
                    rank, st.rank_received_bytes, st.rank_received_count, steps, row_bytes);
            ok = false;
        }
        if (rank == 0) {
            if (r % 2 == 0) {
                stepp[r] = stencil_time(&sp, steps, &ok);
                steps_self[r] = stencil_time(&ss, steps, &ok);
            } else {
                steps_self[r] = stencil_time(&ss, steps, &ok);
                stepp[r] = stencil_time(&sp, steps, &ok);
            }
            release();
        } else {
            idle_until_released();
        }
        ok = all_ranks(ok);
    }
    ok = all_ranks(ok && echo);
    /* The host's reference after every step each context took. */
    if (ok) {
        for (uint64_t s = 0; s < total; s++) {
            host_step(rows, rows, input, next);
            memcpy(input, next, n * sizeof *input);
        }
        ok = stencil_verify(&sr, input, total, "2-rank stencil");
        if (rank == 0)
            ok = stencil_verify(&sp, input, total, "one-process stencil") &&
                 stencil_verify(&ss, input, total, "1-rank stencil") && ok;
        ok = all_ranks(ok);
    }
    if (ok && rank == 0) {
        printf("2. one-row halo hop: %" PRIu64 " x %" PRIu64 " uint32, %" PRIu64 " steps a round, %d round%s "
               "(row %" PRIu64 " B)\n",
               rows, rows, steps, rounds, rounds == 1 ? "" : "s", row_bytes);
        print_figure("mpi round trip of one row", rtt, rounds, 0);
        print_figure("one-process step (cpu:2)", stepp, rounds, 0);
        print_figure("2-rank step (1 device a rank)", step2, rounds, 0);
        double bound = bench_stats(rtt, rounds).median + 2.0 * bench_stats(stepp, rounds).median;
        printf("  %-34s %9.3f ms\n", "bound: rtt + 2x one-process step", bound);
        print_ratio("2-rank step / bound", bench_stats(step2, rounds).median / bound, 1.0, false);
        printf("3. a 1-rank MPI context against a plain one (cpu:2 each, rank 0, the same loop)\n");
        print_figure("plain context step", stepp, rounds, 0);
        print_figure("1-rank MPI context step", steps_self, rounds, 0);
        double *ratio = t + 4 * rounds;
        for (int r = 0; r < rounds; r++)
            ratio[r] = steps_self[r] / stepp[r];
        bench_stat q = bench_stats(ratio, rounds);
        printf("  %-34s %9.3f (min %.3f, max %.3f; per round)\n", "1-rank / plain", q.median, q.min, q.max);
        print_ratio("1-rank / plain, of the medians",
                    bench_stats(steps_self, rounds).median / bench_stats(stepp, rounds).median, 1.02, false);
    }
    stencil_free(&sr);
    stencil_free(&sp);
    stencil_free(&ss);
    if (plain)
        hpl_context_destroy(plain);
    if (self)
        hpl_context_destroy(self);
    free(input);
    free(next);
    free(row);
    free(t);
    return all_ranks(ok);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    uint64_t min_kib = 64, max_kib = 65536, rows = 512, steps = 20;
    int rounds = 5;
    bool args = argc <= 6;
    if (!args)
        fprintf(stderr, SAMPLE_NAME ": %d arguments, at most 5\n", argc - 1);
    args = args && (argc <= 1 || sample_arg_u64("min_kib", argv[1], 1u << 20, &min_kib));
    args = args && (argc <= 2 || sample_arg_u64("max_kib", argv[2], 1u << 20, &max_kib));
    args = args && (argc <= 3 || sample_arg_int("rounds", argv[3], &rounds));
    args = args && (argc <= 4 || sample_arg_u64("rows", argv[4], 1u << 14, &rows));
    args = args && (argc <= 5 || sample_arg_u64("steps", argv[5], 1u << 20, &steps));
    if (args && (min_kib < 1 || max_kib < min_kib || rounds < 1 || rounds > MAX_ROUNDS || rows < 2 || steps < 1)) {
        fprintf(stderr, SAMPLE_NAME ": need 1 <= min_kib <= max_kib, 1 <= rounds <= %d, rows >= 2, steps >= 1\n",
                MAX_ROUNDS);
        args = false;
    }
    if (args && ranks != 2) {
        fprintf(stderr, SAMPLE_NAME ": run it on 2 ranks (mpiexec -n 2), not %d\n", ranks);
        args = false;
    }
    if (!args) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n 2 " SAMPLE_NAME " [min_kib [max_kib [rounds [rows [steps]]]]]\n");
        MPI_Finalize();
        return 2;
    }

    /* Each rank's own devices (HPLVK_DEVICES; default: its GPUs, else the
     * CPU), and the same with zero-copy CPUs for the host-to-host moves. */
    hpl_context *two = mpi_context(MPI_COMM_WORLD, NULL);
    hpl_context *zc = two ? mpi_context(MPI_COMM_WORLD, "cpu+zc") : NULL;
    bool ok = all_ranks(two && zc);
    char devnames[600] = "none";
    move_ctx dma = {0}, host = {0};
    move_result res = {0};
    if (ok) {
        int devs[HPL_MAX_DEVICES];
        int count = sample_devices(two, devs);
        sample_device_list(two, devs, count, devnames, sizeof devnames);
        if (rank == 0)
            printf(SAMPLE_NAME ": %d ranks, devices %s (each rank its own); zero-copy context cpu+zc a rank\n", ranks,
                   devnames);
        ok = all_ranks(move_setup(&dma, two) && move_setup(&host, zc));
    }
    if (ok)
        ok = part_moves(&dma, &host, min_kib, max_kib, rounds, &res);
    if (ok)
        ok = part_stencil(two, rows, rounds, steps);
    if (two) {
        bench_kernels_destroy(two, &dma.k);
        hpl_context_destroy(two);
    }
    if (zc) {
        bench_kernels_destroy(zc, &host.k);
        hpl_context_destroy(zc);
    }
    bool verified = all_ranks(ok && res.measured && sample_log_clean());
    if (rank == 0)
        printf("RESULT name=" SAMPLE_NAME " devices=%s size=%" PRIu64 " time_ms=%.3f rate=%.2fGB/s verified=%s ranks=%d\n",
               devnames, res.bytes, res.eval_move_ms,
               res.eval_move_ms > 0.0 ? (double)res.bytes / (res.eval_move_ms * 1e6) : 0.0, verified ? "yes" : "no",
               ranks);
    MPI_Finalize();
    return verified ? 0 : 1;
}
