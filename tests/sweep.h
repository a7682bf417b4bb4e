/* The workload of the fault sweeps (test_submit_fails, test_alloc_fails):
 * something the driver refuses in turn, each time in a new context on two
 * devices, while this runs:
 *   - a grid written from the host, then SWEEP_STEPS steps of a stencil
 *     split over both devices (every other step with halos first): uploads,
 *     halo copies both ways, submissions on both devices;
 *   - on the second device alone, sums of every column, from the first
 *     device's rows too: an array that lives only on a device that may not
 *     have failed, made from one that may have;
 *   - three reads: the sums, the second device's rows alone (a subarray),
 *     the whole grid;
 *   - the arrays and kernels destroyed one by one.
 * sweep_check asserts what must hold whatever was refused: every call
 * returns success or one of the errors the caller allows, and a read that
 * succeeds where every call before it did returns exactly the host's
 * values. No hang (the callers' watchdogs) and no validation message
 * (th_finish) are asserted around it. */
#ifndef HPLVK_TESTS_SWEEP_H
#define HPLVK_TESTS_SWEEP_H

#include "harness.h"

#include <pthread.h>
#include <unistd.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SWEEP_ROWS = 48, SWEEP_COLS = 16, SWEEP_STEPS = 4 };

typedef struct sweep_result {
    int faults_before_grid_read; /* what the caller's fault counter said then */
    int write_rc, step_rc[SWEEP_STEPS];
    int steps_rc;  /* the write and the stencil steps: the first failure */
    int column_rc; /* the sums' eval */
    int sums_rc, tail_rc, grid_rc, destroy_rc;
    bool sums_right, tail_right, grid_right;
    /* What the reads returned. */
    uint32_t sums[SWEEP_COLS], grid[SWEEP_ROWS * SWEEP_COLS];
} sweep_result;

static const char *sweep_stencil_src = "#include <hplvk.glsl>\n"
                                       "hpl_args { hpl_in(uint, 2) src; hpl_out(uint, 2) dst; };\n"
                                       "void main() {\n"
                                       "    uint r = hpl_global_id.x, c = hpl_global_id.y, n = src.dims.x;\n"
                                       "    uint up = r > 0u ? hpl_at2(src, r - 1u, c) : 7u;\n"
                                       "    uint down = r + 1u < n ? hpl_at2(src, r + 1u, c) : 11u;\n"
                                       "    hpl_at2(dst, r, c) = up * 3u + hpl_at2(src, r, c) * 5u + down + r;\n"
                                       "}\n";

static const char *sweep_column_src = "#include <hplvk.glsl>\n"
                                      "hpl_args { hpl_in(uint, 2) g; hpl_out(uint, 1) sum; };\n"
                                      "void main() {\n"
                                      "    uint c = hpl_global_id.x, s = 0u;\n"
                                      "    for (uint r = 0u; r < g.dims.x; r++) s = s * 31u + hpl_at2(g, r, c);\n"
                                      "    hpl_at(sum, c) = s;\n"
                                      "}\n";

/* The host's start grid, final grid and sums (sweep_reference fills them). */
static uint32_t sweep_start[SWEEP_ROWS * SWEEP_COLS], sweep_want[SWEEP_ROWS * SWEEP_COLS], sweep_sums[SWEEP_COLS];

/* The final grid and sums on the host, the steps in `skipped` (bit s:
 * step s) left out: each step writes the other grid from this one, so a
 * step that changed nothing leaves the other grid as it was. */
static inline void sweep_expected(unsigned skipped, uint32_t *grid, uint32_t *sums)
{
    enum { R = SWEEP_ROWS, C = SWEEP_COLS };
    static uint32_t g[2][R * C];
    memcpy(g[0], sweep_start, sizeof g[0]);
    memset(g[1], 0, sizeof g[1]); /* new arrays are zero-filled */
    for (int s = 0; s < SWEEP_STEPS; s++) {
        const uint32_t *src = g[s % 2];
        uint32_t *dst = g[(s + 1) % 2];
        for (uint32_t r = 0; r < R && !(skipped >> s & 1u); r++)
            for (uint32_t c = 0; c < C; c++) {
                uint32_t up = r > 0 ? src[(r - 1) * C + c] : 7u;
                uint32_t down = r + 1 < R ? src[(r + 1) * C + c] : 11u;
                dst[r * C + c] = up * 3u + src[r * C + c] * 5u + down + r;
            }
    }
    memcpy(grid, g[SWEEP_STEPS % 2], sizeof g[0]);
    memset(sums, 0, C * sizeof *sums);
    for (uint32_t c = 0; c < C; c++)
        for (uint32_t r = 0; r < R; r++)
            sums[c] = sums[c] * 31u + grid[r * C + c];
}

static inline void sweep_reference(void)
{
    for (uint32_t i = 0; i < SWEEP_ROWS * SWEEP_COLS; i++)
        sweep_start[i] = i * 2654435761u;
    sweep_expected(0, sweep_want, sweep_sums);
}

/* What the caller passes: `arm` (may be NULL) starts its faults once the
 * kernels and arrays exist, `faults` (may be NULL) counts those made. */
typedef struct sweep_hooks {
    void (*arm)(void);
    int (*faults)(void);
} sweep_hooks;

/* Runs the workload in ctx (two devices); ctx is left to the caller. */
static inline void sweep_workload(hpl_context *ctx, sweep_hooks hooks, sweep_result *out)
{
    enum { R = SWEEP_ROWS, C = SWEEP_COLS };
    *out = (sweep_result){0};
    hpl_kernel k = th_kernel(ctx, sweep_stencil_src), column = th_kernel(ctx, sweep_column_src);
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, R, C, 0), th_array(ctx, HPL_UINT32, R, C, 0)};
    hpl_array sums = th_array(ctx, HPL_UINT32, C, 0, 0), last = g[SWEEP_STEPS % 2];
    if (hooks.arm)
        hooks.arm();
    out->write_rc = out->steps_rc = hpl_array_write(ctx, g[0], sweep_start, sizeof sweep_start);
    for (int s = 0; s < SWEEP_STEPS; s++) {
        hpl_launch launch = {.devices = {0, 1}, .device_count = 2, .halos_first = s % 2 == 1};
        int rc = hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_part(g[s % 2], 0, 1), hpl_part(g[(s + 1) % 2], 0, 0)));
        out->step_rc[s] = rc;
        out->steps_rc = out->steps_rc == HPL_OK ? rc : out->steps_rc;
    }
    out->column_rc =
        hpl_eval(ctx, column, &(hpl_launch){.device = 1, .global = {C}}, HPL_ARGS(hpl_arr(last), hpl_arr(sums)));
    out->sums_rc = hpl_array_read(ctx, sums, out->sums, sizeof out->sums);
    out->sums_right = memcmp(out->sums, sweep_sums, sizeof sweep_sums) == 0;
    /* The second device's rows alone (even parts: the second half). */
    hpl_array tail = {0};
    out->tail_rc = hpl_subarray(ctx, last, HPL_RANGES({R / 2, R - 1}, HPL_ALL), &tail);
    if (out->tail_rc == HPL_OK)
        out->tail_rc = hpl_array_read(ctx, tail, out->grid + R / 2 * C, sizeof out->grid / 2);
    out->tail_right = memcmp(out->grid + R / 2 * C, sweep_want + R / 2 * C, sizeof out->grid / 2) == 0;
    out->faults_before_grid_read = hooks.faults ? hooks.faults() : 0;
    out->grid_rc = hpl_array_read(ctx, last, out->grid, sizeof out->grid);
    out->grid_right = memcmp(out->grid, sweep_want, sizeof out->grid) == 0;
    int rcs[] = {hpl_array_destroy(ctx, sums), hpl_array_destroy(ctx, g[0]), hpl_array_destroy(ctx, g[1]),
                 hpl_kernel_destroy(ctx, k), hpl_kernel_destroy(ctx, column)};
    for (size_t i = 0; i < sizeof rcs / sizeof rcs[0] && out->destroy_rc == HPL_OK; i++)
        out->destroy_rc = rcs[i];
}

/* rc is success or one of the `allowed` errors (a 0-terminated list). */
static inline bool sweep_rc_allowed(int rc, const int *allowed)
{
    for (; rc != HPL_OK && *allowed; allowed++)
        if (rc == *allowed)
            return true;
    return rc == HPL_OK;
}

static inline void sweep_check(const char *what, const sweep_result *r, const int *allowed)
{
    const struct {
        const char *name;
        int rc;
    } calls[] = {{"the write or a step", r->steps_rc}, {"the sums' eval", r->column_rc}, {"the sums' read", r->sums_rc},
                 {"the rows' read", r->tail_rc},      {"the grid's read", r->grid_rc}};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        CHECK(sweep_rc_allowed(calls[i].rc, allowed), "%s: %s returned %s", what, calls[i].name,
              hpl_error_string(calls[i].rc));
    CHECK(r->destroy_rc == HPL_OK, "%s: a destroy returned %s", what, hpl_error_string(r->destroy_rc));
    /* A read that succeeds where everything before it did is right. */
    bool before = r->steps_rc == HPL_OK && r->column_rc == HPL_OK;
    CHECK(!before || r->sums_rc != HPL_OK || r->sums_right, "%s: the second device's sums read as computed are wrong",
          what);
    CHECK(!before || r->tail_rc != HPL_OK || r->tail_right, "%s: the second device's rows read as computed are wrong",
          what);
    CHECK(!before || r->grid_rc != HPL_OK || r->grid_right, "%s: the grid read as computed is wrong", what);
}

/* An eval that fails changes no array (hplvk.h, hpl_eval): the reads
 * that succeed return the host's values with the failed steps left out. */
static inline void sweep_check_unchanged(const char *what, const sweep_result *r)
{
    unsigned skipped = 0;
    for (int s = 0; s < SWEEP_STEPS; s++)
        skipped |= (unsigned)(r->step_rc[s] != HPL_OK) << s;
    if (!skipped || r->write_rc != HPL_OK || r->column_rc != HPL_OK)
        return;
    static uint32_t grid[SWEEP_ROWS * SWEEP_COLS], sums[SWEEP_COLS];
    sweep_expected(skipped, grid, sums);
    if (r->sums_rc == HPL_OK)
        CHECK(memcmp(r->sums, sums, sizeof sums) == 0, "%s: the steps that failed (0x%x) changed the sums", what,
              skipped);
    if (r->grid_rc == HPL_OK)
        CHECK(memcmp(r->grid, grid, sizeof grid) == 0, "%s: the steps that failed (0x%x) changed the grid", what,
              skipped);
}

/* No run may hang: sweep_watchdog fails the test (and exits) when no run
 * has called sweep_run_ended for 120 s, until sweep_watchdog_stop (a run
 * takes well under a second; a loaded machine must not look like a hang). */
static atomic_bool sweep_done;
static atomic_int sweep_runs_ended;
static pthread_t sweep_dog;

static inline void sweep_run_ended(void)
{
    atomic_fetch_add(&sweep_runs_ended, 1);
}

static inline void *sweep_watchdog(void *arg)
{
    (void)arg;
    int seen = -1, still = 0;
    while (!atomic_load(&sweep_done)) {
        usleep(100000);
        int now = atomic_load(&sweep_runs_ended);
        still = now == seen ? still + 1 : 0;
        seen = now;
        if (still == 1200) {
            fprintf(stderr, "FAIL: a run of the fault sweep still hangs after 120 s\n");
            _exit(1);
        }
    }
    return NULL;
}

static inline void sweep_watchdog_start(void)
{
    pthread_create(&sweep_dog, NULL, sweep_watchdog, NULL);
}

static inline void sweep_watchdog_stop(void)
{
    atomic_store(&sweep_done, true);
    pthread_join(sweep_dog, NULL);
}

/* Runs `run(config, at)` with nothing refused (at < 0), which returns how
 * many of the faulted calls the workload made, then with each of them
 * refused in turn; with and without submit threads and a transfer lane. */
static inline void sweep_each(const char *calls, int (*run)(const char *config, int at))
{
    static const char *const settings[][2] = {{"0", "off"}, {"0", "shared"}, {"1", "off"}, {"1", "shared"}};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        char config[96];
        snprintf(config, sizeof config, "HPLVK_SUBMIT_THREAD=%s HPLVK_TRANSFER_LANE=%s", settings[i][0],
                 settings[i][1]);
        setenv("HPLVK_SUBMIT_THREAD", settings[i][0], 1);
        setenv("HPLVK_TRANSFER_LANE", settings[i][1], 1);
        int total = run(config, -1);
        th_note("%s: every one of %d %s refused in turn", config, total, calls);
        CHECK(total > 0, "%s: the workload made no %s", config, calls);
        for (int at = 0; at < total; at++)
            run(config, at);
    }
    unsetenv("HPLVK_SUBMIT_THREAD");
    unsetenv("HPLVK_TRANSFER_LANE");
}

#endif
