/*
 * game_of_life_plan — Conway's Game of Life split by rows with an execution
 * plan and a partitioner (the paper's fig. A.17), over every device of the
 * context (HPLVK_DEVICES, e.g. "gpu0,cpu"), with no halo-exchange code and
 * the same kernel as samples/game_of_life.c.
 *
 *   game_of_life_plan [rows [cols [steps [balancer [host_budget]]]]]
 *                                          default 256 256 40 none 3e8
 *
 * balancer: none (equal shares over every device of the context),
 * exhaustive, single_step, iterative, adaptive, dynamic, hguided or
 * auto_tune (hplvk.h chapter 7c).
 *
 * Each step is one hpl_plan_eval of the two grids, swapped every step. The
 * plan calls life_parts() once per device with that device's rows; it
 * makes runner subarrays of both grids, the device's rows plus one halo row
 * above and below (clamped at the edges), and runs the kernel on them. A
 * runner subarray owns only the rows inside the device's range, so the
 * kernel's writes to the output's halo rows are not written and the next
 * step fetches those rows from the device that owns them: fig. A.17's
 * exchange loop is not needed. Border cells stay dead.
 *
 * The first step is timed on its own (it compiles on every device, uploads
 * the parts, and runs the balancer's search); the other steps are timed up
 * to the end of their work. With equal shares (no balancer) the bytes moved
 * during them are checked against two halo rows each way per boundary
 * between parts. The result must equal, bit for bit, life_host.h's host
 * computation of the same steps: the whole grid, or past host_budget cell
 * updates, bands of rows around where each device's rows start and every
 * eighth of the grid (the light cone of each, in bounded time).
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "game_of_life_plan"
#include "sample_util.h"

#include "life_host.h"

/* samples/game_of_life.c's kernel (life_host.h's), unchanged: it indexes
 * the whole grid. A runner's subarrays are indexed like their parents, so
 * the rows it reads above and below its part are the halo rows of its
 * subarray. */
static const char *life_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(int, 2) src; hpl_out(int, 2) dst; };\n"
    "#define ROWS src.dims.x\n"
    "#define COLS src.dims.y\n"
    "#define CELL hpl_global_id.xy\n"
    "#define SRC(r, c) hpl_at2(src, r, c)\n"
    "#define DST(r, c) hpl_at2(dst, r, c)\n" LIFE_KERNEL_MAIN;

/* The partitioner (fig. A.17, lines 1-4): the device's rows rg[0] and one
 * halo row on each side, clamped at the grid's edges, of both grids. The
 * output's halo rows are in its box only so that both subarrays have the
 * same shape; the runner's subarray owns just rg[0]. */
static int life_parts(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)nargs;
    const uint64_t rows = *(const uint64_t *)user;
    uint64_t lo = rg[0].first ? rg[0].first - 1 : 0, hi = rg[0].last + 1 < rows ? rg[0].last + 1 : rows - 1;
    hpl_array in, out;
    int rc = hpl_runner_subarray(r, args[0].value.array, HPL_RANGES({lo, hi}, HPL_ALL), &in);
    if (rc == HPL_OK)
        rc = hpl_runner_subarray(r, args[1].value.array, HPL_RANGES({lo, hi}, HPL_ALL), &out);
    return rc == HPL_OK ? hpl_runner_run(r, HPL_ARGS(hpl_arr(in), hpl_arr(out))) : rc;
}

/* Two grids on the library's side, the first holding the start. */
static int make_grids(hpl_context *ctx, const int32_t *start, life_size sz, hpl_array g[2])
{
    static const char *const names[2] = {"life_a", "life_b"};
    for (int i = 0; i < 2; i++)
        SAMPLE_TRY(hpl_array_create(
            ctx, &(hpl_array_desc){.type = HPL_INT32, .dims = {sz.rows, sz.cols}, .name = names[i]}, &g[i]));
    SAMPLE_TRY(hpl_array_write(ctx, g[0], start, sz.rows * sz.cols * sizeof *start));
    return HPL_OK;
}

/* Steps first .. last-1: step s reads g[s % 2] and writes the other. The
 * arrays go in whole: the partitioner cuts them. */
static int run_steps(hpl_plan *plan, hpl_kernel life, const hpl_array g[2], uint64_t first, uint64_t last)
{
    for (uint64_t s = first; s < last; s++)
        SAMPLE_TRY(hpl_plan_eval(plan, life, NULL, HPL_ARGS(hpl_arr(g[s % 2]), hpl_arr(g[(s + 1) % 2]))));
    return HPL_OK;
}

typedef struct life_run {
    double first_ms;    /* step 0: compiles, uploads, the balancer's search */
    double ms;          /* steps 1 .. steps-1, up to the end of their work */
    hpl_stats stats;    /* what moved during those steps and the result's read */
    hpl_plan_info info; /* after the last step */
} life_run;

static int run_plan(hpl_context *ctx, hpl_plan *plan, hpl_kernel life, const hpl_array g[2], life_size sz,
                    int32_t *out, life_run *run)
{
    double t0 = sample_now_ms();
    SAMPLE_TRY(run_steps(plan, life, g, 0, 1));
    SAMPLE_TRY(hpl_finish(ctx));
    run->first_ms = sample_now_ms() - t0;
    /* From here on, with a distribution that stays put, only halo rows
     * should move. */
    SAMPLE_TRY(hpl_stats_reset(ctx));
    t0 = sample_now_ms();
    SAMPLE_TRY(run_steps(plan, life, g, 1, sz.steps));
    SAMPLE_TRY(hpl_finish(ctx));
    run->ms = sample_now_ms() - t0;
    /* Counted with the steps: the last step pushes the rows its neighbours
     * would read (hplvk.h chapter 7b), and the read then moves the rest. */
    SAMPLE_TRY(hpl_array_read(ctx, g[sz.steps % 2], out, sz.rows * sz.cols * sizeof *out));
    SAMPLE_TRY(hpl_stats_get(ctx, &run->stats));
    SAMPLE_TRY(hpl_plan_get_info(plan, &run->info));
    char line[1024];
    hpl_plan_describe(plan, line, sizeof line);
    printf("%s\n", line);
    return HPL_OK;
}

/* The plan over every device of the context; the result lands in `out`. */
static int run_life(hpl_context *ctx, const int32_t *start, life_size sz, hpl_balance balance, int32_t *out,
                    life_run *run)
{
    hpl_kernel life;
    SAMPLE_TRY(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = life_src, .name = "life"}}, &life));
    hpl_array g[2];
    SAMPLE_TRY(make_grids(ctx, start, sz, g));
    /* fig. A.17 line 23: the partitioner, and (no shares) equal weights. */
    const hpl_plan_desc desc = {.partitioner = life_parts, .user = &sz.rows, .balance = balance};
    hpl_plan *plan;
    SAMPLE_TRY(hpl_plan_create(ctx, &desc, &plan));
    int rc = run_plan(ctx, plan, life, g, sz, out, run);
    hpl_plan_destroy(plan);
    if (rc != HPL_OK)
        return rc;
    SAMPLE_TRY(hpl_array_destroy(ctx, g[0]));
    SAMPLE_TRY(hpl_array_destroy(ctx, g[1]));
    SAMPLE_TRY(hpl_kernel_destroy(ctx, life));
    return HPL_OK;
}

/* The last step's rows per device cover the grid once, in device order. */
static bool rows_cover(const hpl_plan_info *info, life_size sz)
{
    uint64_t total = 0;
    for (int i = 0; i < info->device_count; i++)
        total += info->rows[i];
    if (total != sz.rows)
        fprintf(stderr, SAMPLE_NAME ": the last step ran %" PRIu64 " rows, the grid has %" PRIu64 "\n", total, sz.rows);
    return total == sz.rows;
}

/* Bytes one step should move each way with the parts of the last step
 * (each device's rows, in device order; package balancers' ranges are not
 * parts, so this is for fixed shares): part j reads its halo rows from the
 * neighbours that wrote them, one row in per neighbour; a part's first and
 * last rows leave their writer once each (once in all for a one-row part).
 * Zero-copy devices move nothing. Over MPI ranks hpl_stats_get counts this
 * rank's devices only: so do these sums. sample_halo_expected() with the
 * plan's cut instead of the annotations'. */
static void halo_expected(hpl_context *ctx, const hpl_plan_info *info, uint64_t row_bytes, uint64_t *to_host,
                          uint64_t *to_device, uint64_t *result)
{
    int used[HPL_MAX_DEVICES], parts = 0;
    for (int i = 0; i < info->device_count; i++)
        if (info->in_use[i])
            used[parts++] = i;
    *to_host = *to_device = *result = 0;
    for (int p = 0; p < parts; p++) {
        int i = used[p];
        if (sample_zero_copy(ctx, info->devices[i]) || !sample_own_device(ctx, info->devices[i]))
            continue;
        bool above = p > 0, below = p + 1 < parts;
        *to_device += row_bytes * ((uint64_t)above + (uint64_t)below);
        *to_host += row_bytes * ((uint64_t)above + (uint64_t)below - (above && below && info->rows[i] == 1));
        *result += row_bytes * info->rows[i];
    }
}

/* Prints the bytes per timed step; with fixed shares they must be the halo
 * rows' and nothing more (nothing else moves when nothing needs to), and
 * with the result's read after them (counted together: sample_halo_report
 * says why) the rows of the devices' parts. */
static bool check_halo(hpl_context *ctx, const life_run *run, life_size sz, hpl_balance balance)
{
    uint64_t to_host = run->stats.total.to_host_bytes, to_device = run->stats.total.to_device_bytes;
    uint64_t steps = sz.steps - 1, row_bytes = sz.cols * sizeof(int32_t), want_host, want_device, result;
    halo_expected(ctx, &run->info, row_bytes, &want_host, &want_device, &result);
    uint64_t halo_host = to_host > result ? to_host - result : 0;
    printf("halo: %" PRIu64 " bytes/step to the host, %" PRIu64 " bytes/step to devices; array %" PRIu64 " bytes\n",
           halo_host / steps, to_device / steps, sz.rows * row_bytes);
    if (balance != HPL_BALANCE_NONE)
        return true; /* the shares move between steps, and with them the rows */
    bool ok = to_host == want_host * steps + result && to_device == want_device * steps;
    if (!ok)
        fprintf(stderr,
                SAMPLE_NAME ": %" PRIu64 " steps and the result's read moved %" PRIu64 " bytes to the host and %" PRIu64
                            " to devices, expected %" PRIu64 " and %" PRIu64 "\n",
                steps, to_host, to_device, want_host * steps + result, want_device * steps);
    return ok;
}

/* Rows the host checks around (when the whole grid is over the host
 * budget): where each device's rows of the last step start, and, as the
 * rows may have moved between steps (a search, packages), every eighth of
 * the grid. Returns how many went to out[]. */
static int rows_to_check(const hpl_plan_info *info, life_size sz, uint64_t out[HPL_MAX_DEVICES + 8])
{
    int n = 0;
    for (int i = 0; i < info->device_count; i++)
        if (info->in_use[i])
            out[n++] = info->ranges[i][0].first;
    for (uint64_t k = 1; k < 8; k++)
        out[n++] = sz.rows * k / 8;
    return n;
}

/* Everything but the RESULT line; returns whether the run is verified.
 * `grid` holds the start, then the plan's result. */
static bool run_all(life_size sz, hpl_balance balance, int32_t *grid, char *devnames, size_t cap, life_run *run)
{
    hpl_context *ctx = NULL;
    if (sample_context_create(&(hpl_context_desc){.log = sample_log}, &ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create failed: %s\n", hpl_last_error());
        return false;
    }
    bool ok = run_life(ctx, grid, sz, balance, grid, run) == HPL_OK &&
              sample_device_list(ctx, run->info.devices, run->info.device_count, devnames, cap) == HPL_OK;
    ok = ok && rows_cover(&run->info, sz) && check_halo(ctx, run, sz, balance);
    /* An error that surfaced asynchronously fails the run too. */
    ok = hpl_finish(ctx) == HPL_OK && ok;
    hpl_context_destroy(ctx);
    uint64_t rows[HPL_MAX_DEVICES + 8];
    return sample_log_clean() && ok && life_check(grid, sz, rows, rows_to_check(&run->info, sz, rows));
}

/* [rows [cols [steps [balancer [host_budget]]]]] */
static bool parse_args(int argc, char **argv, life_size *sz, hpl_balance *balance)
{
    *sz = (life_size){256, 256, 40, 300000000};
    *balance = HPL_BALANCE_NONE;
    uint64_t *v[3] = {&sz->rows, &sz->cols, &sz->steps};
    static const char *const names[3] = {"rows", "cols", "steps"};
    if (argc > 6)
        return false;
    for (int i = 1; i < argc && i <= 3; i++)
        if (!sample_arg_u64(names[i - 1], argv[i], UINT64_MAX, v[i - 1]))
            return false;
    if (argc >= 5 && !sample_parse_balance(argv[4], strlen(argv[4]), balance))
        return false;
    if (argc == 6 && !sample_arg_u64("host_budget", argv[5], UINT64_MAX, &sz->host_budget))
        return false;
    /* Three rows and columns for one interior cell; two steps for one
     * first step and at least one timed. */
    return sz->rows >= 3 && sz->cols >= 3 && sz->steps >= 2;
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    life_size sz;
    hpl_balance balance;
    if (!parse_args(argc, argv, &sz, &balance)) {
        fprintf(stderr,
                "usage: %s [rows >= 3 [cols >= 3 [steps >= 2 [none|exhaustive|single_step|iterative|adaptive|"
                "dynamic|hguided|auto_tune [host_budget]]]]]\n",
                argv[0]);
        return 2;
    }
    int32_t *grid = life_start_grid(sz);
    char devnames[4096] = "none";
    life_run run = {0};
    bool verified = grid && run_all(sz, balance, grid, devnames, sizeof devnames, &run);
    if (grid)
        sample_checksum_print("grid", grid, sz.rows * sz.cols * sizeof *grid);
    free(grid);
    printf("first step (compile, upload, %s): %.3f ms\n",
           balance == HPL_BALANCE_NONE ? "no search" : hpl_balance_name(balance), run.first_ms);
    life_print_result(devnames, sz, run.ms, verified);
    return verified ? 0 : 1;
}
