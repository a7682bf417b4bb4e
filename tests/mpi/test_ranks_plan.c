/* Execution plans over ranks (hplvk.h chapters 7c and 10): a plan's devices
 * are every rank's; a plan with given shares, the searches (SINGLE_STEP,
 * ITERATIVE, EXHAUSTIVE) and ADAPTIVE run a row stencil over them for
 * several evals, matching the host bit for bit on every rank; every rank
 * reaches the same distribution (its shares, rows and alone check, from
 * measurements the ranks share), compared across ranks with MPI here; and a
 * plan with a partitioner or a package scheme fails naming what does not
 * span ranks yet. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "hplvk_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *stencil_src =
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

static int rank, ranks;

static int fake_partitioner(hpl_runner *runner, const hpl_range *ranges, const hpl_arg *args, size_t nargs,
                            void *user)
{
    (void)ranges;
    (void)user;
    return hpl_runner_run(runner, args, nargs);
}

/* Every rank's plan info must be rank 0's: shares, rows, what the search
 * did, the times it measured. */
static void same_everywhere(const hpl_plan_info *info, const char *what)
{
    struct {
        double shares[16], seconds[16];
        uint64_t rows[16];
        int devices, searched, runs, iterations, warm_ups;
    } mine, first;
    memset(&mine, 0, sizeof mine);
    for (int i = 0; i < info->device_count && i < 16; i++) {
        mine.shares[i] = info->shares[i];
        mine.seconds[i] = info->seconds[i];
        mine.rows[i] = info->rows[i];
    }
    mine.devices = info->device_count;
    mine.searched = info->searched;
    mine.runs = info->runs;
    mine.iterations = info->iterations;
    mine.warm_ups = info->warm_ups;
    first = mine;
    MPI_Bcast(&first, sizeof first, MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK(memcmp(&first, &mine, sizeof mine) == 0, "%s: rank %d's distribution differs from rank 0's", what, rank);
}

static void run_plan(hpl_context *ctx, hpl_kernel k, const hpl_plan_desc *desc, const char *what)
{
    uint64_t rows = 45, cols = 16, n = rows * cols;
    uint32_t *want = malloc(n * sizeof *want), *next = malloc(n * sizeof *next), *got = malloc(n * sizeof *got);
    for (uint64_t i = 0; i < n; i++)
        want[i] = (uint32_t)(i * 40503u + 11u);
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, rows, cols, 0), th_array(ctx, HPL_UINT32, rows, cols, 0)};
    CHECK_OK(hpl_array_write(ctx, g[0], want, n * sizeof *want));
    hpl_plan *plan = NULL;
    if (!CHECK_OK(hpl_plan_create(ctx, desc, &plan)))
        return;
    int steps = 6;
    for (int s = 0; s < steps; s++) {
        CHECK_OK(hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
        host_step(rows, cols, want, next);
        memcpy(want, next, n * sizeof *want);
        hpl_plan_info info;
        CHECK_OK(hpl_plan_get_info(plan, &info));
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
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    hpl_context_desc desc = {0};
    th_prepare_desc(&desc);
    hpl_context *ctx = NULL;
    if (hpl_mpi_context_create(&desc, MPI_COMM_WORLD, &ctx) != HPL_OK) {
        fprintf(stderr, "rank %d: hpl_mpi_context_create: %s\n", rank, hpl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    hpl_kernel k = th_kernel(ctx, stencil_src);
    int devices = hpl_device_count(ctx);
    double shares[16];
    for (int i = 0; i < devices; i++)
        shares[i] = 1.0 + i;
    run_plan(ctx, k, &(hpl_plan_desc){.shares = shares}, "given shares");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_SINGLE_STEP}, "SINGLE_STEP");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_ITERATIVE}, "ITERATIVE");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_EXHAUSTIVE, .step = 0.25}, "EXHAUSTIVE");
    run_plan(ctx, k, &(hpl_plan_desc){.balance = HPL_BALANCE_ADAPTIVE}, "ADAPTIVE");
    /* On the last two devices only (another rank's when there are two). */
    int last_two[2] = {devices - 2, devices - 1};
    if (devices >= 2)
        run_plan(ctx, k, &(hpl_plan_desc){.device_count = 2, .devices = {last_two[0], last_two[1]}}, "two devices");
    if (ranks > 1) {
        hpl_plan *plan = NULL;
        CHECK_FAILS(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = fake_partitioner}, &plan),
                    HPL_ERROR_UNSUPPORTED, "a plan with a partitioner does not span ranks");
        CHECK_FAILS(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = HPL_BALANCE_DYNAMIC}, &plan),
                    HPL_ERROR_UNSUPPORTED, "a package scheme does not span ranks");
    }
    int failed = th_finish(ctx);
    MPI_Finalize();
    return failed;
}
