/*
 * game_of_life — Conway's Game of Life split by rows over every device of
 * the context (HPLVK_DEVICES, e.g. "gpu0,cpu"), with no halo-exchange code
 * (the paper's fig. A.16 without its exchange loop), and the same kernel as
 * on one device: the program a user writes.
 *
 *   game_of_life [rows [cols [steps [host_budget [halos]]]]]
 *                                      default 512 512 100 3e8 first
 *
 * halos: "first" (launch.halos_first: each device computes the rows its
 * neighbours read, then its interior while they cross) or "after" (each
 * device's part in one go; the halos leave when it is done).
 *
 * Each step is one eval, hpl_part1(src, 1), hpl_part1(dst, 1), the two
 * grids swapped every step: each device computes its rows, and the library
 * refreshes the halo rows a part reads from the neighbour that wrote them.
 * The first step warms up (compiles on every device, uploads the parts;
 * on a GPU it runs again for 500 ms: samples/sample_warm.h);
 * the other steps are timed up to the end of their work.
 *
 * The result must equal, bit for bit, the host's computation of the same
 * steps (past host_budget cell updates: bands of rows around the
 * boundaries between parts), and the library and the validation layer must
 * report no error. samples/jacobi.c, the same stencil shape, also checks
 * the halo bytes, the parts and a rerun on device 0 alone. What this
 * program shares with its Vulkan twin (twins/twin_game_of_life.c) is in
 * life_host.h.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "game_of_life"
#include "sample_util.h"

#include "life_host.h"

/* life_host.h's kernel on hplvk's arguments. It indexes the whole grid:
 * split by rows, each subkernel runs over the rows its device owns, and the
 * rows it reads above and below its part are the halo rows the library
 * keeps fresh. */
static const char *life_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(int, 2) src; hpl_out(int, 2) dst; };\n"
    "#define ROWS src.dims.x\n"
    "#define COLS src.dims.y\n"
    "#define CELL hpl_global_id.xy\n"
    "#define SRC(r, c) hpl_at2(src, r, c)\n"
    "#define DST(r, c) hpl_at2(dst, r, c)\n" LIFE_KERNEL_MAIN;

/* Step s: g[s % 2] to the other grid, split by rows over every device with
 * one halo row on each side. */
static bool halos_first;

static int step(hpl_context *ctx, hpl_kernel life, const hpl_array g[2], uint64_t s)
{
    hpl_launch all = sample_launch(ctx);
    all.halos_first = halos_first;
    return hpl_eval(ctx, life, &all, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1)));
}

/* The start in `grid` to the devices, the warm-up step, the timed steps
 * (*ms), the last grid back into `grid`; *parts: how many the grid was
 * split into. */
static int run(hpl_context *ctx, life_size sz, int32_t *grid, double *ms, int *parts)
{
    const hpl_array_desc desc = {.type = HPL_INT32, .dims = {sz.rows, sz.cols}};
    hpl_kernel life;
    hpl_array g[2];
    SAMPLE_TRY(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = life_src, .name = "life"}}, &life));
    SAMPLE_TRY(hpl_array_create(ctx, &desc, &g[0]));
    SAMPLE_TRY(hpl_array_create(ctx, &desc, &g[1]));
    SAMPLE_TRY(hpl_array_write(ctx, g[0], grid, life_bytes(sz)));
    /* Step 0 warms up, untimed: it compiles on every device and uploads the
     * parts; repeated, it brings GPUs to their clocks (sample_warm.h). */
    SAMPLE_TRY(step(ctx, life, g, 0));
    SAMPLE_TRY(hpl_finish(ctx));
    SAMPLE_WARM_UP(ctx, step(ctx, life, g, 0));
    double t0 = life_now_ms();
    for (uint64_t s = 1; s < sz.steps; s++)
        SAMPLE_TRY(step(ctx, life, g, s));
    SAMPLE_TRY(hpl_finish(ctx));
    *ms = life_now_ms() - t0;
    SAMPLE_TRY(hpl_array_read(ctx, g[sz.steps % 2], grid, life_bytes(sz)));
    *parts = hpl_array_part_count(ctx, g[sz.steps % 2]);
    return HPL_OK;
}

/* The host's check. Past the host budget it looks at bands of rows around
 * the first row of each part, where the library's split (sample_part_rows)
 * puts the halo rows that cross between devices. */
static bool check(const int32_t *grid, life_size sz, int parts)
{
    uint64_t first_rows[HPL_MAX_DEVICES], end;
    for (int i = 0; i < parts; i++)
        sample_part_rows(sz.rows, parts, i, &first_rows[i], &end);
    return life_check(grid, sz, first_rows, parts);
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    life_size sz;
    if (!sample_parse_bands_first(&argc, argv, 5, &halos_first) || !life_parse_size(argc, argv, &sz))
        return 2;
    int32_t *grid = life_start_grid(sz);
    hpl_context *ctx = NULL;
    if (grid && sample_context_create(&(hpl_context_desc){.log = sample_log}, &ctx) != HPL_OK)
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create failed: %s\n", hpl_last_error());
    int devices[HPL_MAX_DEVICES], parts = 0;
    char names[4096] = "none";
    double ms = 0.0;
    bool ok = ctx && sample_device_list(ctx, devices, sample_devices(ctx, devices), names, sizeof names) == HPL_OK &&
              run(ctx, sz, grid, &ms, &parts) == HPL_OK;
    hpl_context_destroy(ctx);
    /* After the context is gone: its last validation messages count too. */
    ok = sample_log_clean() && ok && check(grid, sz, parts);
    printf("halos: %s\n", halos_first ? "first" : "after");
    sample_checksum_print("grid", grid, grid ? life_bytes(sz) : 0);
    life_print_result(names, sz, ms, ok);
    free(grid);
    return ok ? 0 : 1;
}
