/*
 * life_host.h — what samples/game_of_life.c (hplvk, any number of devices)
 * and its hand-written Vulkan twin samples/twins/twin_game_of_life.c (one
 * device) need identically: the kernel's computation, the size and its
 * arguments, the start grid, the host reference and its check, a clock and
 * the RESULT line. samples/twins/count_lines.sh counts it for neither, so
 * that comparing the two counts only what differs: how each drives its
 * devices.
 *
 * Pure C11 and GLSL: no hplvk, no Vulkan (the twin links neither hplvk nor
 * sample_util.h). Header-only (static functions), so that each program
 * stays one file to build. Define SAMPLE_NAME (the program's name, for
 * messages and the RESULT line) and _POSIX_C_SOURCE >= 199309L
 * (clock_gettime) before including it.
 */
#ifndef HPLVK_LIFE_HOST_H
#define HPLVK_LIFE_HOST_H

#ifndef SAMPLE_NAME
#error "define SAMPLE_NAME before including life_host.h"
#endif

#include "sample_args.h" /* no hplvk either: the twin's arguments too */
#include "sample_result.h" /* and its RESULT line */
#include "sample_warm.h" /* and its warm-up */

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The kernel of both programs: main() for one cell of the next grid, as a
 * GLSL string that each program appends to its own declarations (C string
 * concatenation), which define
 *   ROWS, COLS   the grid's size (uint)
 *   CELL         the cell of this invocation (uvec2: row, column)
 *   SRC(r, c)    a cell of the grid read (int), DST(r, c) of the grid written
 * Border cells (first/last row and column) stay dead. The bounds check is
 * for the twin's whole 2 x 128 workgroups; hplvk runs no invocation past
 * the grid. */
#define LIFE_KERNEL_MAIN                                                                \
    "void main() {\n"                                                                   \
    "    uint r = CELL.x, c = CELL.y;\n"                                                \
    "    if (r >= ROWS || c >= COLS)\n"                                                 \
    "        return;\n"                                                                 \
    "    if (r == 0u || r == ROWS - 1u || c == 0u || c == COLS - 1u) {\n"               \
    "        DST(r, c) = 0;\n"                                                          \
    "        return;\n"                                                                 \
    "    }\n"                                                                           \
    "    int n = SRC(r - 1u, c - 1u) + SRC(r - 1u, c) + SRC(r - 1u, c + 1u)\n"          \
    "          + SRC(r, c - 1u) + SRC(r, c + 1u)\n"                                     \
    "          + SRC(r + 1u, c - 1u) + SRC(r + 1u, c) + SRC(r + 1u, c + 1u);\n"         \
    "    DST(r, c) = (n == 3 || (n == 2 && SRC(r, c) != 0)) ? 1 : 0;\n"                 \
    "}\n"

typedef struct life_size {
    uint64_t rows, cols, steps;
    uint64_t host_budget; /* cell updates the host reference may take */
} life_size;

static inline size_t life_bytes(life_size sz)
{
    return sz.rows * sz.cols * sizeof(int32_t);
}

/* [rows [cols [steps [host_budget]]]], default 512 512 100 3e8, each a
 * whole number as sample_parse_u64 reads it ("3e8" is 300000000). False,
 * after the usage message, when they do not make a run. */
static inline bool life_parse_size(int argc, char **argv, life_size *sz)
{
    *sz = (life_size){512, 512, 100, 300000000};
    uint64_t *v[4] = {&sz->rows, &sz->cols, &sz->steps, &sz->host_budget};
    static const char *const names[4] = {"rows", "cols", "steps", "host_budget"};
    bool numbers = argc <= 5;
    for (int i = 1; numbers && i < argc; i++)
        numbers = sample_arg_u64(names[i - 1], argv[i], UINT64_MAX, v[i - 1]);
    /* Three rows and columns for one interior cell; two steps for one
     * warm-up step and at least one timed. */
    if (numbers && sz->rows >= 3 && sz->cols >= 3 && sz->steps >= 2)
        return true;
    fprintf(stderr, "usage: %s [rows >= 3 [cols >= 3 [steps >= 2 [host_budget]]]]\n", argv[0]);
    return false;
}

/* A new grid holding the start: random cells, about 30% alive, from a
 * fixed-seed LCG, so that every run (every program, every device count)
 * starts from the same grid; borders dead. NULL, after a message, when
 * there is no memory for it. */
static inline int32_t *life_start_grid(life_size sz)
{
    int32_t *g = malloc(life_bytes(sz));
    if (!g) {
        fprintf(stderr, SAMPLE_NAME ": out of host memory for a %" PRIu64 " x %" PRIu64 " grid\n", sz.rows, sz.cols);
        return NULL;
    }
    uint32_t state = 20240601u;
    for (uint64_t i = 0; i < sz.rows; i++)
        for (uint64_t j = 0; j < sz.cols; j++) {
            state = state * 1664525u + 1013904223u;
            bool border = i == 0 || j == 0 || i == sz.rows - 1 || j == sz.cols - 1;
            g[i * sz.cols + j] = !border && (state >> 24) < 77u;
        }
    return g;
}

/* Milliseconds on a monotonic clock. */
static inline double life_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- the host reference ------------------------------------------------ */

static inline void life_host_step(const int32_t *in, int32_t *out, life_size sz)
{
    const uint64_t C = sz.cols;
    for (uint64_t i = 0; i < sz.rows; i++)
        for (uint64_t j = 0; j < C; j++) {
            if (i == 0 || j == 0 || i == sz.rows - 1 || j == C - 1) {
                out[i * C + j] = 0;
                continue;
            }
            int n = 0;
            for (int di = -1; di <= 1; di++)
                for (int dj = -1; dj <= 1; dj++)
                    n += (di || dj) ? in[(i + (uint64_t)di) * C + j + (uint64_t)dj] : 0;
            out[i * C + j] = n == 3 || (n == 2 && in[i * C + j] != 0);
        }
}

/* Rows [lo, hi) of the grid after sz.steps steps from `start`, simulated
 * on a window of the start: the rows within sz.steps of them, as a cell
 * after s steps depends only on the cells within s rows of it (its light
 * cone). The window's cut edges are dead borders to the simulation, which
 * makes the rows near them wrong, but only within sz.steps rows of them:
 * outside [lo, hi). ref[] holds two windows; returns where row lo is. */
static inline const int32_t *life_host_rows(const int32_t *start, life_size sz, uint64_t lo, uint64_t hi,
                                            int32_t *ref[2])
{
    uint64_t w_lo = lo > sz.steps ? lo - sz.steps : 0;
    uint64_t w_hi = sz.rows - hi > sz.steps ? hi + sz.steps : sz.rows;
    life_size window = sz;
    window.rows = w_hi - w_lo;
    memcpy(ref[0], start + w_lo * sz.cols, life_bytes(window));
    for (uint64_t s = 0; s < sz.steps; s++)
        life_host_step(ref[s % 2], ref[(s + 1) % 2], window);
    return ref[sz.steps % 2] + (lo - w_lo) * sz.cols;
}

/* Compares rows [lo, hi) of `got` (the whole grid) with `want` (those rows
 * only); prints the first cells that differ. */
static inline bool life_same_rows(const int32_t *got, const int32_t *want, life_size sz, uint64_t lo, uint64_t hi)
{
    uint64_t bad = 0, n = (hi - lo) * sz.cols;
    got += lo * sz.cols;
    for (uint64_t i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ < 5)
            fprintf(stderr, SAMPLE_NAME ": cell (%" PRIu64 ", %" PRIu64 ") = %d, expected %d\n", lo + i / sz.cols,
                    i % sz.cols, got[i], want[i]);
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": device vs host, rows %" PRIu64 "..%" PRIu64 ": %" PRIu64 " of %" PRIu64
                        " cells differ\n",
                lo, hi - 1, bad, n);
    return bad == 0;
}

/* Rows of a band checked around each boundary when the whole grid is over
 * the host budget. */
#define LIFE_BAND_ROWS 8

/* The band of LIFE_BAND_ROWS rows around row `at`, inside the grid. */
static inline bool life_same_band(const int32_t *got, const int32_t *start, life_size sz, uint64_t at, int32_t *ref[2])
{
    uint64_t half = LIFE_BAND_ROWS / 2, last = sz.rows - LIFE_BAND_ROWS;
    uint64_t lo = at > half ? (at - half < last ? at - half : last) : 0;
    return life_same_rows(got, life_host_rows(start, sz, lo, lo + LIFE_BAND_ROWS, ref), sz, lo, lo + LIFE_BAND_ROWS);
}

/* Compares `got` with the host's grid from `start`: all of it when
 * `whole`, else the bands around first_rows[0 .. parts-1] and the last row.
 * ref[] holds two windows of the rows that life_host_rows simulates. */
static inline bool life_compare(const int32_t *got, const int32_t *start, life_size sz, bool whole,
                                const uint64_t *first_rows, int parts, int32_t *ref[2])
{
    if (whole)
        return life_same_rows(got, life_host_rows(start, sz, 0, sz.rows, ref), sz, 0, sz.rows);
    bool ok = life_same_band(got, start, sz, sz.rows, ref);
    for (int k = 0; k < parts; k++)
        ok = life_same_band(got, start, sz, first_rows[k], ref) && ok;
    fprintf(stderr, SAMPLE_NAME ": checked %d bands of %d rows against the host (the whole grid is over the host "
                    "budget)\n",
            parts + 1, LIFE_BAND_ROWS);
    return ok;
}

static inline void life_print_alive(const int32_t *g, life_size sz)
{
    uint64_t alive = 0;
    for (uint64_t i = 0; i < sz.rows * sz.cols; i++)
        alive += g[i] != 0;
    fprintf(stderr, SAMPLE_NAME ": %" PRIu64 " of %" PRIu64 " cells alive after %" PRIu64 " steps\n", alive,
            sz.rows * sz.cols, sz.steps);
}

/* Whether `got`, the device's grid after sz.steps steps from
 * life_start_grid, equals the host's, bit for bit. The whole grid when
 * that takes at most sz.host_budget cell updates; else, in bounded time,
 * bands of rows around the first row of each of the `parts` parts the grid
 * was split into (first_rows[]: 0, then where each part after the first
 * starts: its first rows read rows that another device wrote) and around
 * the last row. Prints the cells that differ and the live-cell count. */
static inline bool life_check(const int32_t *got, life_size sz, const uint64_t *first_rows, int parts)
{
    bool whole = (double)sz.rows * (double)sz.cols * (double)sz.steps <= (double)sz.host_budget ||
                 sz.rows < 2 * LIFE_BAND_ROWS;
    life_size window = sz; /* the rows life_host_rows simulates at most */
    if (!whole && LIFE_BAND_ROWS + 2 * sz.steps < sz.rows)
        window.rows = LIFE_BAND_ROWS + 2 * sz.steps;
    int32_t *start = life_start_grid(sz);
    int32_t *ref[2] = {malloc(life_bytes(window)), malloc(life_bytes(window))};
    bool ok = start && ref[0] && ref[1];
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": out of host memory for the host reference\n");
    ok = ok && life_compare(got, start, sz, whole, first_rows, parts, ref);
    free(start);
    free(ref[0]);
    free(ref[1]);
    life_print_alive(got, sz);
    return ok;
}

/* The RESULT line (sample_result.h). */
static inline void life_print_result(const char *devices, life_size sz, double ms, bool verified)
{
    sample_print_grid_result(devices, sz.rows, sz.cols, sz.steps, ms, verified);
}

#endif
