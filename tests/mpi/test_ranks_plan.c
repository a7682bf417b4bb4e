/* Execution plans over ranks (hplvk.h chapters 7c and 10): a plan's devices
 * are every rank's; a plan with given shares, the searches (SINGLE_STEP,
 * ITERATIVE, EXHAUSTIVE) and ADAPTIVE run a row stencil over them for
 * several evals, matching the host bit for bit on every rank; every rank
 * reaches the same distribution (its shares, rows and alone check, from
 * measurements the ranks share), compared across ranks with MPI here; a
 * plan with a partitioner (halo rows by runner subarrays) too, every rank
 * receiving exactly the halo rows it lacks each step; the package schemes
 * (packages within each rank) likewise; and a package scheme with a
 * partitioner fails naming what does not span ranks yet. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"
#include "ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, ranks;
static uint64_t plan_rows = 45; /* run_plan's grid rows */

/* samples/game_of_life_plan.c's life_parts: the runner's rows and one halo
 * row on each side (clamped at the edges) of both grids. user: the rows. */
static int halo_parts(hpl_runner *runner, const hpl_range *ranges, const hpl_arg *args, size_t nargs, void *user)
{
    (void)nargs;
    const uint64_t rows = *(const uint64_t *)user;
    uint64_t lo = ranges[0].first ? ranges[0].first - 1 : 0;
    uint64_t hi = ranges[0].last + 1 < rows ? ranges[0].last + 1 : rows - 1;
    hpl_array in, out;
    int rc = hpl_runner_subarray(runner, args[0].value.array, HPL_RANGES({lo, hi}, HPL_ALL), &in);
    if (rc == HPL_OK)
        rc = hpl_runner_subarray(runner, args[1].value.array, HPL_RANGES({lo, hi}, HPL_ALL), &out);
    return rc == HPL_OK ? hpl_runner_run(runner, HPL_ARGS(hpl_arr(in), hpl_arr(out))) : rc;
}

/* Fails on the last rank only (its own code going wrong there). */
static int failing_parts(hpl_runner *runner, const hpl_range *ranges, const hpl_arg *args, size_t nargs, void *user)
{
    if (rank == ranks - 1)
        return HPL_ERROR_INVALID_ARGUMENT;
    return halo_parts(runner, ranges, args, nargs, user);
}

/* This rank's rows of the last eval: [lo, hi), its devices' pieces (next
 * to each other: the plan's devices go in rank order). */
static void rank_rows(hpl_context *ctx, const hpl_plan_info *info, uint64_t *lo, uint64_t *hi)
{
    *lo = *hi = 0;
    for (int i = 0; i < info->device_count; i++) {
        hpl_device_info d;
        if (!info->in_use[i] || !CHECK_OK(hpl_device_get_info(ctx, info->devices[i], &d)) || d.rank != rank)
            continue;
        uint64_t first = info->ranges[i][0].first, last = info->ranges[i][0].last + 1;
        if (*lo == *hi) {
            *lo = first;
            *hi = last;
        } else {
            CHECK(first == *hi, "rank %d's pieces are not next to each other", rank);
            *hi = last;
        }
    }
}

/* Every rank's plan info must be rank 0's: shares, rows, what the search
 * did, the times it measured. */
static void same_everywhere(const hpl_plan_info *info, const char *what)
{
    /* Its fields, one after the other in an array of doubles (every value
     * is exact in a double): no struct padding goes out. */
    double mine[3 * 16 + 5] = {0}, first[3 * 16 + 5];
    for (int i = 0; i < info->device_count && i < 16; i++) {
        mine[i] = info->shares[i];
        mine[16 + i] = info->seconds[i];
        mine[32 + i] = (double)info->rows[i];
    }
    mine[48] = info->device_count;
    mine[49] = info->searched;
    mine[50] = info->runs;
    mine[51] = info->iterations;
    mine[52] = info->warm_ups;
    memcpy(first, mine, sizeof first);
    MPI_Bcast(first, 3 * 16 + 5, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int differ = -1;
    for (int i = 0; i < 3 * 16 + 5 && differ < 0; i++)
        if (first[i] != mine[i])
            differ = i;
    CHECK(differ < 0, "%s: rank %d's distribution differs from rank 0's (field %d: %g against %g)", what, rank, differ,
          differ < 0 ? 0.0 : mine[differ], differ < 0 ? 0.0 : first[differ]);
}

/* desc->partitioner: the arrays go in whole (halo_parts cuts them), and
 * what each rank receives per step is checked: the halo rows it lacks. */
static void run_plan(hpl_context *ctx, hpl_kernel k, const hpl_plan_desc *desc, const char *what)
{
    uint64_t rows = plan_rows, cols = 16, n = rows * cols;
    uint32_t *want = malloc(n * sizeof *want), *next = malloc(n * sizeof *next), *got = malloc(n * sizeof *got);
    for (uint64_t i = 0; i < n; i++)
        want[i] = (uint32_t)(i * 40503u + 11u);
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, rows, cols, 0), th_array(ctx, HPL_UINT32, rows, cols, 0)};
    CHECK_OK(hpl_array_write(ctx, g[0], want, n * sizeof *want));
    hpl_plan *plan = NULL;
    if (!CHECK_OK(hpl_plan_create(ctx, desc, &plan)))
        return;
    int steps = desc->balance == HPL_BALANCE_ADAPTIVE ? 10 : 6; /* past ADAPTIVE's alone check */
    uint64_t row_bytes = cols * sizeof(uint32_t), prev_lo = 0, prev_hi = 0;
    for (int s = 0; s < steps; s++) {
        CHECK_OK(hpl_stats_reset(ctx));
        if (desc->partitioner)
            CHECK_OK(hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_arr(g[s % 2]), hpl_arr(g[(s + 1) % 2]))));
        else
            CHECK_OK(hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
        hpl_stats st = th_stats(ctx);
        rows_stencil_host(rows, cols, want, next);
        memcpy(want, next, n * sizeof *want);
        hpl_plan_info info;
        CHECK_OK(hpl_plan_get_info(plan, &info));
        if (desc->partitioner) {
            /* The step's input: written everywhere by the host (step 0),
             * else, after step s - 1, held by this rank for the rows its
             * devices wrote then. It receives the rest of what it reads:
             * its rows and one row each side, clamped. */
            uint64_t lo, hi, lack = 0;
            rank_rows(ctx, &info, &lo, &hi);
            uint64_t from = lo ? lo - 1 : 0, to = hi < rows ? hi + 1 : rows;
            for (uint64_t r = from; s > 0 && lo < hi && r < to; r++)
                lack += r < prev_lo || r >= prev_hi;
            if (rank == 0 || ranks < 4)
                printf("%s step %d: rank %d rows %llu..%llu received %llu bytes (%llu rows lacked)\n", what, s, rank,
                       (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)st.rank_received_bytes,
                       (unsigned long long)lack);
            /* A search's timed runs before the eval's own move rows too
             * (the distribution changes between them): then only bounded. */
            bool steady = !desc->balance || info.searched;
            if (steady)
                CHECK(st.rank_received_bytes == lack * row_bytes,
                      "%s step %d (rows %llu..%llu of %llu): received %llu bytes, want %llu", what, s,
                      (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)rows,
                      (unsigned long long)st.rank_received_bytes, (unsigned long long)(lack * row_bytes));
            else
                CHECK(st.rank_received_bytes <= rows * row_bytes * 4 && st.rank_received_bytes % row_bytes == 0,
                      "%s step %d: received %llu bytes", what, s, (unsigned long long)st.rank_received_bytes);
            prev_lo = lo;
            prev_hi = hi;
        }
        uint64_t covered = 0;
        for (int i = 0; i < info.device_count; i++)
            covered += info.rows[i];
        CHECK(covered == rows, "%s step %d: the devices ran %llu rows of %llu", what, s, (unsigned long long)covered,
              (unsigned long long)rows);
        same_everywhere(&info, what);
    }
    CHECK_OK(hpl_array_read(ctx, g[steps % 2], got, n * sizeof *got));
    EXPECT_U32(got, want, n, what);
    char line[1024];
    hpl_plan_describe(plan, line, sizeof line);
    if (rank == 0)
        printf("%s: %s\n", what, line);
    hpl_plan_destroy(plan);
    CHECK_OK(hpl_array_destroy(ctx, g[0]));
    CHECK_OK(hpl_array_destroy(ctx, g[1]));
    free(want);
    free(next);
    free(got);
}

int main(int argc, char **argv)
{
    hpl_context *ctx = ranks_start(&argc, &argv, &rank, &ranks);
    hpl_kernel k = th_kernel(ctx, rows_stencil_src());
    int devices = hpl_device_count(ctx);
    double shares[16];
    for (int i = 0; i < devices; i++)
        shares[i] = 1.0 + i;
    run_plan(ctx, k, &(hpl_plan_desc){.shares = shares}, "given shares");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_SINGLE_STEP}, "SINGLE_STEP");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_ITERATIVE}, "ITERATIVE");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_EXHAUSTIVE, .step = 0.25}, "EXHAUSTIVE");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_ADAPTIVE}, "ADAPTIVE");
    /* The package schemes: packages within each rank, rows to the ranks by
     * their speeds (the first eval checks the scheme against a device
     * alone: every rank must take the same answer). */
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_DYNAMIC, .package = 4}, "DYNAMIC");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_HGUIDED, .shares = shares}, "HGUIDED");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_AUTO_TUNE}, "AUTO_TUNE");
    /* Several packages on each rank's devices (whole work-groups each). */
    plan_rows = 1001;
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_DYNAMIC, .package = 3, .keep_split = true},
             "DYNAMIC, keep_split");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_HGUIDED, .keep_split = true}, "HGUIDED, keep_split");
    plan_rows = 45;
    /* On the last two devices only (another rank's when there are two). */
    int last_two[2] = {devices - 2, devices - 1};
    if (devices >= 2)
        run_plan(ctx, k, &(hpl_plan_desc){.device_count = 2, .devices = {last_two[0], last_two[1]}}, "two devices");
    /* By partitioner: every rank calls it for every device's piece. */
    uint64_t rows = 45;
    run_plan(ctx, k, &(hpl_plan_desc){.partitioner = halo_parts, .user = &rows, .shares = shares},
             "partitioner, given shares");
    run_plan(ctx, k, &(hpl_plan_desc){.partitioner = halo_parts, .user = &rows, .balance = HPL_BALANCE_SINGLE_STEP,
                                      .keep_split = true},
             "partitioner, SINGLE_STEP");
    if (ranks > 1) {
        /* A partitioner failing on one rank fails the eval on every rank
         * (its own error there, the others' naming it), and nothing hangs. */
        hpl_plan *plan = NULL;
        hpl_array a = th_array(ctx, HPL_UINT32, rows, 16, 0), b = th_array(ctx, HPL_UINT32, rows, 16, 0);
        CHECK_OK(hpl_array_fill(ctx, a, &(uint32_t){3}, HPL_ON_HOST));
        if (CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = failing_parts, .user = &rows}, &plan))) {
            int rc = hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_arr(a), hpl_arr(b)));
            CHECK(rc == (rank == ranks - 1 ? HPL_ERROR_INVALID_ARGUMENT : HPL_ERROR_RANKS_DIFFER),
                  "a partitioner failing on rank %d: rank %d's eval returned %s (%s)", ranks - 1, rank,
                  hpl_error_name(rc), hpl_last_error());
            hpl_plan_destroy(plan);
            plan = NULL;
        }
        CHECK_OK(hpl_array_destroy(ctx, a));
        CHECK_OK(hpl_array_destroy(ctx, b));
        CHECK_FAILS(hpl_plan_create(ctx,
                                    &(hpl_plan_desc){.balance = HPL_BALANCE_DYNAMIC, .partitioner = halo_parts,
                                                     .user = &rows},
                                    &plan),
                    HPL_ERROR_UNSUPPORTED, "a package scheme with a partitioner does not span ranks");
    }
    int failed = th_finish(ctx);
    MPI_Finalize();
    return failed;
}
