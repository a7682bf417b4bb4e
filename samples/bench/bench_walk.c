/*
 * bench_walk — the order in which a dispatch walks a grid (hplvk.h section
 * 6, "Walk order"), measured: the same Jacobi kernel (float, five points)
 * on device 0, once with launch.local {2, 128} given (the library keeps a
 * given size, and with it the domain's order: the dispatch's x along the
 * rows, so it walks the grid column strip by column strip, as every 2-D
 * eval did before the walk) and once with the local size left to the
 * library (walked: the dispatch's x along the columns), in alternating
 * rounds in one process.
 *
 *   bench_walk [rows [cols [steps [rounds]]]]
 *       default 30000 32000 100 3 when device 0 is a GPU (two grids of
 *       3.6 GiB, where an H200 ran the old order 3x slower), 512 512 10 2
 *       otherwise, and 256 256 4 1 under validation (HPLVK_VALIDATION=1)
 *
 * Each variant of a round starts from the same grid, runs step 0 (compile,
 * upload) and repeats it to warm a GPU up (sample_warm.h), then times steps
 * 1 .. steps-1 up to the end of their work. Every result grid must equal,
 * bit for bit, the first variant's of the first round, and, where the host
 * can afford it (at most 3e8 cell updates), the host's own steps. The
 * RESULT line: the walked variant's median ms a step, rate the old order's
 * median over it.
 */
#define _POSIX_C_SOURCE 200809L
#define SAMPLE_NAME "bench_walk"
#include "bench_vk.h" /* its medians and validation switch (and sample_util.h) */

#include <stdlib.h>
#include <string.h>

static const char *jacobi_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 2) src; hpl_out(float, 2) dst; };\n"
    "void main() {\n"
    "    uint r = hpl_global_id.x, c = hpl_global_id.y, R = src.dims.x, C = src.dims.y;\n"
    "    if (r == 0u || c == 0u || r == R - 1u || c == C - 1u) {\n"
    "        hpl_at2(dst, r, c) = hpl_at2(src, r, c);\n"
    "        return;\n"
    "    }\n"
    "    precise float s = ((hpl_at2(src, r - 1u, c) + hpl_at2(src, r + 1u, c)) + hpl_at2(src, r, c - 1u))\n"
    "                    + hpl_at2(src, r, c + 1u);\n"
    "    hpl_at2(dst, r, c) = 0.25 * s;\n"
    "}\n";

#define HOST_BUDGET 300000000.0 /* cell updates the host reference may take */

typedef struct bench {
    uint64_t rows, cols, steps, rounds;
    float *start, *first, *got;
} bench;

/* The kernel's steps on the host, in its order; returns the last grid. */
static const float *host_steps(const bench *b, float *grid[2])
{
    const uint64_t R = b->rows, C = b->cols;
    for (uint64_t s = 0; s < b->steps; s++) {
        const float *in = grid[s % 2];
        float *out = grid[(s + 1) % 2];
        for (uint64_t i = 0; i < R; i++)
            for (uint64_t j = 0; j < C; j++) {
                uint64_t k = i * C + j;
                bool edge = i == 0 || j == 0 || i == R - 1 || j == C - 1;
                out[k] = edge ? in[k] : 0.25f * (((in[k - C] + in[k + C]) + in[k - 1]) + in[k + 1]);
            }
    }
    return grid[b->steps % 2];
}

static int step(hpl_context *ctx, hpl_kernel k, const hpl_launch *l, const hpl_array g[2], uint64_t s)
{
    return hpl_eval(ctx, k, l, HPL_ARGS(hpl_arr(g[s % 2]), hpl_arr(g[(s + 1) % 2])));
}

/* One variant from the start: ms a step over steps 1 .. steps-1; the result
 * into b->got. */
static int run_variant(hpl_context *ctx, hpl_kernel k, const bench *b, const uint32_t local[3], const hpl_array g[2],
                       double *ms_per_step)
{
    const hpl_launch l = {.local = {local[0], local[1], local[2]}};
    SAMPLE_TRY(hpl_array_write(ctx, g[0], b->start, b->rows * b->cols * sizeof(float)));
    SAMPLE_TRY(step(ctx, k, &l, g, 0));
    SAMPLE_TRY(hpl_finish(ctx));
    SAMPLE_WARM_UP(ctx, step(ctx, k, &l, g, 0));
    double t0 = sample_now_ms();
    for (uint64_t s = 1; s < b->steps; s++)
        SAMPLE_TRY(step(ctx, k, &l, g, s));
    SAMPLE_TRY(hpl_finish(ctx));
    *ms_per_step = (sample_now_ms() - t0) / (double)(b->steps - 1);
    return hpl_array_read(ctx, g[b->steps % 2], b->got, b->rows * b->cols * sizeof(float));
}

static bool parse(int argc, char **argv, bool gpu, bench *b)
{
    uint64_t def[4] = {512, 512, 10, 2};
    if (bench_validation_env())
        memcpy(def, (uint64_t[4]){256, 256, 4, 1}, sizeof def);
    else if (gpu)
        memcpy(def, (uint64_t[4]){30000, 32000, 100, 3}, sizeof def);
    uint64_t *v[4] = {&b->rows, &b->cols, &b->steps, &b->rounds};
    static const char *const names[4] = {"rows", "cols", "steps", "rounds"};
    if (argc > 5)
        return false;
    for (int i = 0; i < 4; i++)
        *v[i] = def[i];
    for (int i = 1; i < argc; i++)
        if (!sample_arg_u64(names[i - 1], argv[i], i <= 2 ? 65536 : 100000, v[i - 1]))
            return false;
    return b->rows >= 3 && b->cols >= 3 && b->steps >= 2 && b->rounds >= 1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    hpl_context *ctx = NULL;
    if (hpl_context_create(&(hpl_context_desc){.log = sample_log}, &ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create failed: %s\n", hpl_last_error());
        return 1;
    }
    bench b = {0};
    hpl_device_info info; /* the benchmark runs on device 0: its defaults too */
    bool gpu = hpl_device_get_info(ctx, 0, &info) == HPL_OK && (info.type & HPL_DEVICE_GPU);
    if (!parse(argc, argv, gpu, &b)) {
        fprintf(stderr, "usage: %s [rows >= 3 [cols >= 3 [steps >= 2 [rounds >= 1]]]] (rows, cols <= 65536)\n",
                argv[0]);
        hpl_context_destroy(ctx);
        return 2;
    }
    size_t cells = (size_t)(b.rows * b.cols);
    b.start = malloc(cells * sizeof(float));
    b.first = malloc(cells * sizeof(float));
    b.got = malloc(cells * sizeof(float));
    hpl_kernel k = {0};
    hpl_array g[2] = {{0}, {0}};
    bool ok = b.start && b.first && b.got;
    uint32_t state = 20240602u;
    for (size_t i = 0; ok && i < cells; i++) {
        state = state * 1664525u + 1013904223u;
        b.start[i] = (float)(state >> 8) * (1.0f / 16777216.0f);
    }
    ok = ok && hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = jacobi_src, .name = "jacobi"}}, &k) == HPL_OK;
    for (int i = 0; ok && i < 2; i++)
        ok = hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {b.rows, b.cols}}, &g[i]) == HPL_OK;
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": setting up failed: %s\n", hpl_last_error());
    static const uint32_t locals[2][3] = {{2, 128, 1}, {0, 0, 0}};
    static const char *const names[2] = {"old order (local {2, 128} given)", "walked (local chosen)"};
    double *ms[2] = {calloc(b.rounds, sizeof(double)), calloc(b.rounds, sizeof(double))};
    uint64_t mismatches = 0;
    ok = ok && ms[0] && ms[1];
    for (uint64_t r = 0; ok && r < b.rounds; r++)
        for (int v = 0; ok && v < 2; v++) {
            ok = run_variant(ctx, k, &b, locals[v], g, &ms[v][r]) == HPL_OK;
            if (ok && r == 0 && v == 0)
                memcpy(b.first, b.got, cells * sizeof(float));
            else if (ok)
                mismatches += memcmp(b.first, b.got, cells * sizeof(float)) != 0;
        }
    bool host_checked = ok && (double)cells * (double)b.steps <= HOST_BUDGET;
    if (host_checked) {
        float *grid[2] = {malloc(cells * sizeof(float)), malloc(cells * sizeof(float))};
        ok = grid[0] && grid[1];
        if (ok) {
            memcpy(grid[0], b.start, cells * sizeof(float));
            mismatches += memcmp(host_steps(&b, grid), b.first, cells * sizeof(float)) != 0;
        }
        free(grid[0]);
        free(grid[1]);
    }
    double med[2] = {0, 0};
    for (int v = 0; ok && v < 2; v++) {
        med[v] = bench_stats(ms[v], (int)b.rounds).median;
        printf("%-34s median %.4f ms a step (%" PRIu64 " round%s)\n", names[v], med[v], b.rounds,
               b.rounds == 1 ? "" : "s");
    }
    printf("results: %" PRIu64 " of %" PRIu64 " grids differ from the first%s\n", mismatches,
           2 * b.rounds - 1 + host_checked, host_checked ? " (the host's steps included)" : " (host check skipped: too large)");
    char devname[512] = "";
    if (ctx)
        sample_device_list(ctx, (int[]){0}, 1, devname, sizeof devname);
    bool verified = ok && mismatches == 0 && sample_log_clean();
    printf("RESULT name=bench_walk devices=%s size=%" PRIu64 "x%" PRIu64 "x%" PRIu64 " time_ms=%.4f rate=%.3fx verified=%s\n",
           devname, b.rows, b.cols, b.steps, med[1], med[1] > 0 ? med[0] / med[1] : 0.0, verified ? "yes" : "no");
    free(ms[0]);
    free(ms[1]);
    free(b.start);
    free(b.first);
    free(b.got);
    hpl_context_destroy(ctx);
    return verified ? 0 : 1;
}
