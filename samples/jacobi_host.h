/*
 * jacobi_host.h — what samples/jacobi.c (hplvk, any number of devices and
 * MPI ranks) and its hand-written MPI + Vulkan twin
 * samples/twins/twin_jacobi_mpi.c need identically: the grid size and its
 * arguments, the start grid, the host reference and its check, and the
 * RESULT line. samples/twins/count_lines.sh counts it for neither, so that
 * comparing the two counts only what differs: how each drives its devices
 * and ranks.
 *
 * Pure C11: no hplvk, no Vulkan, no MPI. Header-only (static functions),
 * so that each program stays one file to build. Define SAMPLE_NAME (the
 * program's name, for messages and the RESULT line) before including it;
 * SAMPLE_RESULT_VERIFIED(ok) and SAMPLE_RESULT_TAIL() (sample_result.h:
 * sample_ranks.h's, or the twin's own) make the RESULT line's verdict over
 * every rank and its ranks field.
 */
#ifndef HPLVK_JACOBI_HOST_H
#define HPLVK_JACOBI_HOST_H

#ifndef SAMPLE_NAME
#error "define SAMPLE_NAME before including jacobi_host.h"
#endif

#include "sample_args.h" /* no hplvk either: the twin's arguments too */
#include "sample_result.h" /* and its RESULT line */

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The end of check_host's line on bands: the program's other checks of the
 * whole grid (the sample's against device 0 alone; the twin has none). */
#ifndef JACOBI_OTHER_CHECKS
#define JACOBI_OTHER_CHECKS "; the whole grid against device 0 alone"
#endif

static inline uint64_t jacobi_min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

typedef struct grid_size {
    uint64_t rows, cols, steps;
    uint64_t host_budget; /* cell updates the host reference may take */
} grid_size;

/* Top row 1, other boundaries 0, interior pseudo-random in [0, 1) from a
 * fixed-seed LCG (every run starts from the same grid). A random interior
 * keeps every cell busy from the first step and keeps values far from
 * denormals, where devices may flush to zero. */
static inline void initial_grid(float *g, grid_size sz)
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
static inline void host_step(const float *in, float *out, grid_size sz)
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
static inline float *host_reference(float *grid[2], grid_size sz)
{
    for (uint64_t s = 0; s < sz.steps; s++)
        host_step(grid[s % 2], grid[(s + 1) % 2], sz);
    return grid[sz.steps % 2];
}

static inline double absd(double x) { return x < 0.0 ? -x : x; }

/* tolerance < 0: bit for bit; else |got - want| <= tolerance * |want|. */
static inline bool same_grid(const char *what, const float *got, const float *want, grid_size sz, double tolerance)
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

static inline bool parse_size(int argc, char **argv, grid_size *sz)
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

/* Host references cost rows x cols x steps cell updates; past
 * sz.host_budget (default 3e8) the host computes bands of rows only, around each boundary between parts
 * and at the edges: a band's rows after `steps` steps depend only on the
 * start rows within `steps` of it (the light cone), so each band is
 * simulated exactly on a window of those rows, in bounded time. */
#define BAND_ROWS 8

/* Rows [lo, hi) after every step, simulated on rows [w_lo, w_hi) of the
 * start in ref[]; returns where row lo is. Rows of the window's artificial
 * edges go wrong, but only within `steps` rows of them: outside the band. */
static inline const float *band_reference(const float *start, grid_size sz, uint64_t lo, uint64_t hi, float *ref[2])
{
    uint64_t w_lo = lo > sz.steps ? lo - sz.steps : 0, w_hi = jacobi_min(sz.rows, hi + sz.steps);
    grid_size window = sz;
    window.rows = w_hi - w_lo;
    memcpy(ref[0], start + w_lo * sz.cols, window.rows * sz.cols * sizeof *start);
    return host_reference(ref, window) + (lo - w_lo) * sz.cols;
}

/* Compares the multi-device result with the host: all of it, or bands of
 * rows when the whole would pass HOST_BUDGET. */
static inline bool check_host(const float *got, const float *start, grid_size sz, int parts, float *ref[2])
{
    if ((double)sz.rows * (double)sz.cols * (double)sz.steps <= (double)sz.host_budget || sz.rows < 2 * BAND_ROWS) {
        memcpy(ref[0], start, sz.rows * sz.cols * sizeof *start);
        return same_grid("multi-device vs host", got, host_reference(ref, sz), sz, 1e-6);
    }
    bool ok = true;
    for (int k = 0; k <= parts; k++) {
        uint64_t at = sz.rows * (uint64_t)k / (uint64_t)parts;
        uint64_t lo = at > BAND_ROWS / 2 ? jacobi_min(at - BAND_ROWS / 2, sz.rows - BAND_ROWS) : 0;
        grid_size band = sz;
        band.rows = BAND_ROWS;
        char what[96];
        snprintf(what, sizeof what, "multi-device vs host, rows %" PRIu64 "..%" PRIu64 " (band-relative cells)", lo,
                 lo + BAND_ROWS - 1);
        ok = same_grid(what, got + lo * sz.cols, band_reference(start, sz, lo, lo + BAND_ROWS, ref), band, 1e-6) && ok;
    }
    fprintf(stderr, SAMPLE_NAME ": checked %d bands of %d rows against the host (the whole grid is over the host "
                    "budget)" JACOBI_OTHER_CHECKS "\n",
            parts + 1, BAND_ROWS);
    return ok;
}

/* The RESULT line (sample_result.h). */
static inline void jacobi_print_result(const char *devices, grid_size sz, double ms, bool verified)
{
    sample_print_grid_result(devices, sz.rows, sz.cols, sz.steps, ms, verified);
}

#endif
