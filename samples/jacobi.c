/*
 * jacobi — 2-D Jacobi iteration on a float grid split by rows over every
 * device of the context (HPLVK_DEVICES, e.g. "gpu0,cpu"), with no
 * halo-exchange code, and the same kernel as on one device.
 *
 *   jacobi [rows [cols [steps [host_budget [halos]]]]]
 *                                      default 512 512 100 3e8 first
 *
 * halos: "first" (launch.halos_first: each device computes the rows its
 * neighbours read, then its interior while they cross) or "after" (each
 * device's part in one go; the halos leave when it is done), as in
 * samples/game_of_life.c.
 *
 * Interior cells become the mean of their four neighbours,
 * 0.25f * (((up + down) + left) + right); boundary cells keep their value
 * (top row 1, the other boundaries 0; the interior starts from fixed-seed
 * pseudo-random values in [0, 1)). Each step is one eval,
 * hpl_part1(src, 1), hpl_part1(dst, 1), the two grids swapped every step;
 * the library refreshes the halo rows each part reads.
 *
 * The first step warms up (compiles on every device, uploads the parts;
 * on a GPU it runs again for 500 ms: samples/sample_warm.h);
 * the other steps are timed up to the end of their work, and the bytes
 * moved during them are checked against two halo rows each way per
 * boundary between parts. The result must equal, bit for bit, the same
 * steps run on device 0 alone in the same context (same kernel, same
 * data: any difference is a coherence bug), and a host computation of the
 * same expression in the same order within a relative tolerance of 1e-6
 * (the device's float arithmetic may differ from the host's, e.g. in how
 * it rounds or flushes denormals; with `precise` forbidding reassociation
 * and contraction it is exact in practice).
 *
 * The size and its arguments, the start grid, the host reference and its
 * check and the RESULT line are jacobi_host.h's, shared with the
 * hand-written MPI + Vulkan twin samples/twins/twin_jacobi_mpi.c.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "jacobi"
#include "sample_util.h"

#include "jacobi_host.h" /* the size, start grid, host reference and check, RESULT line */

#include <stdlib.h>

/* One kernel for one device and for many: it indexes the whole grid. Split
 * by rows, each subkernel runs over the rows its device owns, and the rows
 * it reads above and below its part are the halo rows the library keeps
 * fresh. Boundary cells are copied, interior cells averaged. `precise`: the
 * sum is taken in exactly the order written, as on the host. */
static const char *jacobi_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 2) src; hpl_out(float, 2) dst; };\n"
    "void main() {\n"
    "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"
    "    if (r == 0u || r == src.dims.x - 1u || c == 0u || c == src.dims.y - 1u) {\n"
    "        hpl_at2(dst, r, c) = hpl_at2(src, r, c);\n"
    "        return;\n"
    "    }\n"
    "    precise float s = ((hpl_at2(src, r - 1u, c) + hpl_at2(src, r + 1u, c)) + hpl_at2(src, r, c - 1u))\n"
    "                    + hpl_at2(src, r, c + 1u);\n"
    "    precise float v = 0.25 * s;\n"
    "    hpl_at2(dst, r, c) = v;\n"
    "}\n";

/* Two grids on the library's side, the first holding the start. */
static int make_grids(hpl_context *ctx, const float *start, grid_size sz, const char *tag, hpl_array g[2])
{
    char name[2][32];
    for (int i = 0; i < 2; i++) {
        snprintf(name[i], sizeof name[i], "%s_%c", tag, 'a' + i);
        SAMPLE_TRY(hpl_array_create(
            ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {sz.rows, sz.cols}, .name = name[i]}, &g[i]));
    }
    SAMPLE_TRY(hpl_array_write(ctx, g[0], start, sz.rows * sz.cols * sizeof *start));
    return HPL_OK;
}

/* The split steps' launch.halos_first: main's halos argument. */
static bool halos_first;

/* Steps first .. last-1: step s reads g[s % 2] and writes the other, split
 * by rows over every device of the context with one halo row (halos first
 * or after), or on device 0. */
static int run_steps(hpl_context *ctx, hpl_kernel k, bool split, const hpl_array g[2], uint64_t first, uint64_t last)
{
    hpl_launch all = sample_launch(ctx);
    all.halos_first = halos_first;
    for (uint64_t s = first; s < last; s++) {
        if (split)
            SAMPLE_TRY(hpl_eval(ctx, k, &all, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
        else
            SAMPLE_TRY(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(g[s % 2]), hpl_arr(g[(s + 1) % 2]))));
    }
    return HPL_OK;
}

typedef struct grid_run {
    double ms;       /* steps 1 .. steps-1, up to the end of their work */
    hpl_stats stats; /* what moved during those steps and the result's read */
    int parts;       /* parts of the last eval */
} grid_run;

/* The multi-device run on every device of the context; the result
 * lands in `out`. */
static int run_default(hpl_context *ctx, hpl_kernel k, const float *start, grid_size sz, float *out, grid_run *run)
{
    hpl_array g[2];
    SAMPLE_TRY(make_grids(ctx, start, sz, "multi", g));
    SAMPLE_TRY(run_steps(ctx, k, true, g, 0, 1));
    SAMPLE_TRY(hpl_finish(ctx));
    SAMPLE_WARM_UP(ctx, run_steps(ctx, k, true, g, 0, 1)); /* step 0 again: GPUs to their clocks */
    /* From here on only halo rows should move. */
    SAMPLE_TRY(hpl_stats_reset(ctx));
    double t0 = sample_now_ms();
    SAMPLE_TRY(run_steps(ctx, k, true, g, 1, sz.steps));
    SAMPLE_TRY(hpl_finish(ctx));
    run->ms = sample_now_ms() - t0;
    run->parts = hpl_array_part_count(ctx, g[sz.steps % 2]);
    SAMPLE_TRY(hpl_array_read(ctx, g[sz.steps % 2], out, sz.rows * sz.cols * sizeof *out));
    SAMPLE_TRY(hpl_stats_get(ctx, &run->stats)); /* the steps and the result's read: sample_halo_report */
    SAMPLE_TRY(hpl_array_destroy(ctx, g[0]));
    SAMPLE_TRY(hpl_array_destroy(ctx, g[1]));
    return HPL_OK;
}

/* The same steps with the same kernel on device 0 alone, not annotated,
 * separate arrays. */
static int run_single(hpl_context *ctx, hpl_kernel k, const float *start, grid_size sz, float *out)
{
    hpl_array g[2];
    SAMPLE_TRY(make_grids(ctx, start, sz, "single", g));
    SAMPLE_TRY(run_steps(ctx, k, false, g, 0, sz.steps));
    SAMPLE_TRY(hpl_array_read(ctx, g[sz.steps % 2], out, sz.rows * sz.cols * sizeof *out));
    SAMPLE_TRY(hpl_array_destroy(ctx, g[0]));
    SAMPLE_TRY(hpl_array_destroy(ctx, g[1]));
    return HPL_OK;
}

/* host[0]: the start; host[1], host[2]: the reference's grids; host[3]: the
 * multi-device result; host[4]: device 0's. */
enum { START, REF_A, REF_B, MULTI, SINGLE, HOST_GRIDS };

static int run_devices(hpl_context *ctx, const int *devices, int ndev, grid_size sz, float *host[HOST_GRIDS],
                       char *devnames, size_t cap, grid_run *run)
{
    hpl_kernel k;
    SAMPLE_TRY(sample_device_list(ctx, devices, ndev, devnames, cap));
    SAMPLE_TRY(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = jacobi_src, .name = "jacobi"}}, &k));
    SAMPLE_TRY(run_default(ctx, k, host[START], sz, host[MULTI], run));
    SAMPLE_TRY(run_single(ctx, k, host[START], sz, host[SINGLE]));
    return HPL_OK;
}

/* The checks; each prints what it found wrong. */
static bool check(hpl_context *ctx, const int *devices, int ndev, grid_size sz, float *host[HOST_GRIDS],
                  const grid_run *run)
{
    int want_parts = sz.rows < (uint64_t)ndev ? (int)sz.rows : ndev;
    bool parts_ok = run->parts == want_parts;
    if (!parts_ok)
        fprintf(stderr, SAMPLE_NAME ": %d parts, expected %d\n", run->parts, want_parts);
    bool halo_ok = sample_halo_report(ctx, &run->stats, sz.steps - 1, sz.rows, sz.cols * sizeof(float), devices,
                                      want_parts, true);
    sample_checksum_print("grid", host[MULTI], sz.rows * sz.cols * sizeof(float));
    bool ref_ok = check_host(host[MULTI], host[START], sz, want_parts, (float *[2]){host[REF_A], host[REF_B]});
    bool single_ok = same_grid("multi-device vs device 0 alone", host[MULTI], host[SINGLE], sz, -1.0);
    return parts_ok && halo_ok && ref_ok && single_ok;
}

/* Everything but the RESULT line; returns whether the run is verified. */
static bool run_all(grid_size sz, float *host[HOST_GRIDS], char *devnames, size_t cap, grid_run *run)
{
    hpl_context *ctx = NULL;
    if (sample_context_create(&(hpl_context_desc){.log = sample_log}, &ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create failed: %s\n", hpl_last_error());
        return false;
    }
    int devices[HPL_MAX_DEVICES];
    int ndev = sample_devices(ctx, devices);
    bool ok = run_devices(ctx, devices, ndev, sz, host, devnames, cap, run) == HPL_OK &&
              check(ctx, devices, ndev, sz, host, run);
    /* An error that surfaced asynchronously fails the run too. */
    ok = hpl_finish(ctx) == HPL_OK && ok;
    hpl_context_destroy(ctx);
    return sample_log_clean() && ok;
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    grid_size sz;
    if (!sample_parse_bands_first(&argc, argv, 5, &halos_first) || !parse_size(argc, argv, &sz)) {
        fprintf(stderr, "usage: %s [rows >= 3 [cols >= 3 [steps >= 2 [host_budget [first|after]]]]]\n", argv[0]);
        return 2;
    }
    float *host[HOST_GRIDS];
    bool have_memory = true;
    for (int i = 0; i < HOST_GRIDS; i++)
        have_memory &= (host[i] = malloc(sz.rows * sz.cols * sizeof(float))) != NULL;
    char devnames[4096] = "none";
    grid_run run = {0};
    bool verified = false;
    if (have_memory) {
        initial_grid(host[START], sz);
        verified = run_all(sz, host, devnames, sizeof devnames, &run);
    } else {
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
    }
    for (int i = 0; i < HOST_GRIDS; i++)
        free(host[i]);
    printf("halos: %s\n", halos_first ? "first" : "after");
    jacobi_print_result(devnames, sz, run.ms, verified);
    return verified ? 0 : 1;
}
