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
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "jacobi"
#include "sample_util.h"

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

typedef struct grid_size {
    uint64_t rows, cols, steps;
    uint64_t host_budget; /* cell updates the host reference may take */
} grid_size;

/* Top row 1, other boundaries 0, interior pseudo-random in [0, 1) from a
 * fixed-seed LCG (every run starts from the same grid). A random interior
 * keeps every cell busy from the first step and keeps values far from
 * denormals, where devices may flush to zero. */
static void initial_grid(float *g, grid_size sz)
{
    uint32_t state = 20240602u;
    for (uint64_t i = 0; i < sz.rows; i++)
        for (uint64_t j = 0; j < sz.cols; j++) {
            state = state * 1664525u + 1013904223u;
            bool border = i == 0 || j == 0 || i == sz.rows - 1 || j == sz.cols - 1;
            g[i * sz.cols + j] = i == 0 ? 1.0f : border ? 0.0f : (float)(state >> 8) * (1.0f / 16777216.0f);
        }
}

/* The kernel's expression, in the kernel's order. */
static void host_step(const float *in, float *out, grid_size sz)
{
    const uint64_t C = sz.cols;
    for (uint64_t i = 0; i < sz.rows; i++)
        for (uint64_t j = 0; j < C; j++) {
            if (i == 0 || j == 0 || i == sz.rows - 1 || j == C - 1) {
                out[i * C + j] = in[i * C + j];
                continue;
            }
            float s = ((in[(i - 1) * C + j] + in[(i + 1) * C + j]) + in[i * C + j - 1]) + in[i * C + j + 1];
            out[i * C + j] = 0.25f * s;
        }
}

/* grid[0] holds the start; returns the grid that holds the last step. */
static float *host_reference(float *grid[2], grid_size sz)
{
    for (uint64_t s = 0; s < sz.steps; s++)
        host_step(grid[s % 2], grid[(s + 1) % 2], sz);
    return grid[sz.steps % 2];
}

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

static double absd(double x) { return x < 0.0 ? -x : x; }

/* tolerance < 0: bit for bit; else |got - want| <= tolerance * |want|. */
static bool same_grid(const char *what, const float *got, const float *want, grid_size sz, double tolerance)
{
    uint64_t bad = 0, n = sz.rows * sz.cols;
    double worst = 0.0;
    for (uint64_t i = 0; i < n; i++) {
        double err = absd((double)got[i] - (double)want[i]);
        bool ok = tolerance < 0.0 ? memcmp(&got[i], &want[i], sizeof got[i]) == 0 : err <= tolerance * absd(want[i]);
        if (want[i] != 0.0f && err / absd(want[i]) > worst)
            worst = err / absd(want[i]);
        if (!ok && bad++ < 5)
            fprintf(stderr, SAMPLE_NAME ": %s: cell (%" PRIu64 ", %" PRIu64 ") = %.9g, expected %.9g\n", what,
                    i / sz.cols, i % sz.cols, (double)got[i], (double)want[i]);
    }
    fprintf(stderr, SAMPLE_NAME ": %s: %" PRIu64 " of %" PRIu64 " cells differ (%s), worst relative error %.3g\n", what,
            bad, n, tolerance < 0.0 ? "bit for bit" : "relative tolerance 1e-6", worst);
    return bad == 0;
}

static bool parse_size(int argc, char **argv, grid_size *sz)
{
    *sz = (grid_size){512, 512, 100, 300000000};
    uint64_t *v[4] = {&sz->rows, &sz->cols, &sz->steps, &sz->host_budget};
    static const char *const names[4] = {"rows", "cols", "steps", "host_budget"};
    if (argc > 5)
        return false;
    for (int i = 1; i < argc; i++)
        if (!sample_arg_u64(names[i - 1], argv[i], UINT64_MAX, v[i - 1]))
            return false;
    /* Three rows and columns for one interior cell; two steps for one
     * warm-up step and at least one timed. */
    return sz->rows >= 3 && sz->cols >= 3 && sz->steps >= 2;
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

/* Host references cost rows x cols x steps cell updates; past
 * sz.host_budget (default 3e8) the host computes bands of rows only, around each boundary between parts
 * and at the edges: a band's rows after `steps` steps depend only on the
 * start rows within `steps` of it (the light cone), so each band is
 * simulated exactly on a window of those rows, in bounded time. */
#define BAND_ROWS 8

/* Rows [lo, hi) after every step, simulated on rows [w_lo, w_hi) of the
 * start in ref[]; returns where row lo is. Rows of the window's artificial
 * edges go wrong, but only within `steps` rows of them: outside the band. */
static const float *band_reference(const float *start, grid_size sz, uint64_t lo, uint64_t hi, float *ref[2])
{
    uint64_t w_lo = lo > sz.steps ? lo - sz.steps : 0, w_hi = sample_min(sz.rows, hi + sz.steps);
    grid_size window = sz;
    window.rows = w_hi - w_lo;
    memcpy(ref[0], start + w_lo * sz.cols, window.rows * sz.cols * sizeof *start);
    return host_reference(ref, window) + (lo - w_lo) * sz.cols;
}

/* Compares the multi-device result with the host: all of it, or bands of
 * rows when the whole would pass HOST_BUDGET. */
static bool check_host(const float *got, const float *start, grid_size sz, int parts, float *ref[2])
{
    if ((double)sz.rows * (double)sz.cols * (double)sz.steps <= (double)sz.host_budget || sz.rows < 2 * BAND_ROWS) {
        memcpy(ref[0], start, sz.rows * sz.cols * sizeof *start);
        return same_grid("multi-device vs host", got, host_reference(ref, sz), sz, 1e-6);
    }
    bool ok = true;
    for (int k = 0; k <= parts; k++) {
        uint64_t at = sz.rows * (uint64_t)k / (uint64_t)parts;
        uint64_t lo = at > BAND_ROWS / 2 ? sample_min(at - BAND_ROWS / 2, sz.rows - BAND_ROWS) : 0;
        grid_size band = sz;
        band.rows = BAND_ROWS;
        char what[96];
        snprintf(what, sizeof what, "multi-device vs host, rows %" PRIu64 "..%" PRIu64 " (band-relative cells)", lo,
                 lo + BAND_ROWS - 1);
        ok = same_grid(what, got + lo * sz.cols, band_reference(start, sz, lo, lo + BAND_ROWS, ref), band, 1e-6) && ok;
    }
    fprintf(stderr, SAMPLE_NAME ": checked %d bands of %d rows against the host (the whole grid is over the host "
                    "budget); the whole grid against device 0 alone\n",
            parts + 1, BAND_ROWS);
    return ok;
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
    /* rate: cell updates per second over the timed steps. */
    double cells = (double)sz.rows * (double)sz.cols * (double)(sz.steps - 1);
    double rate = run.ms > 0.0 ? cells / (run.ms * 1e-3) / 1e6 : 0.0;
    printf("halos: %s\n", halos_first ? "first" : "after");
    printf("RESULT name=jacobi devices=%s size=%" PRIu64 "x%" PRIu64 "x%" PRIu64
           " time_ms=%.3f rate=%.4gMcell/s verified=%s%s\n",
           devnames, sz.rows, sz.cols, sz.steps, run.ms, rate, sample_verified_everywhere(verified) ? "yes" : "no",
           sample_ranks_field());
    return verified ? 0 : 1;
}
