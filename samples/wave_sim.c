/*
 * wave_sim — the 2-D wave equation of Celerity's showcase example
 * (celerity-runtime, examples/wave_sim/wave_sim.cc), split by rows over
 * every device of the context (HPLVK_DEVICES, e.g. "cpu:3") with no
 * halo-exchange code: each step is one eval whose arguments say how they
 * split (hpl_part1(u, 1): one halo row on each side), and the library
 * fetches the halo rows a part reads from the neighbour that wrote them.
 *
 *   wave_sim [N [T [sample_every [output_file]]]]
 *   defaults: 256 400 0 wave_sim_result.bin
 *
 * Celerity's numerics: an N x N float grid of unit cells, dt = 0.25 (its
 * default; its -T is an end time: 100 is our 400 steps). The start is a
 * bump at rest, u0 = exp(-(dx^2 / (2 sigma^2) + dy^2 / (2 sigma^2))) around
 * (N/4, N/4), sigma = N/8; each step is
 *   u_next = a * 2 * u - b * u_prev + c * lap(u),
 *   lap(u) = dt^2 ((u_s - u) - (u - u_n)) + dt^2 ((u_e - u) - (u - u_w)),
 * neighbours clamped at the edges (reflecting), (a, b, c) = (0.5, 0, 0.5)
 * for the first step (zero initial velocity), (1, 1, 1) after. T counts
 * steps: the result is u_T after T launches (Celerity launches one more,
 * whose result is u_1 again).
 *
 * Frames (sample_every = k > 0): u at steps 0, k, 2k, ... <= T, each read
 * whole through the library (every device's part gathered), go to
 * output_file in Celerity's binary layout: two native-endian uint64, N and
 * the frame count, then each frame's N*N float32, row-major. With k = 0
 * (the default) nothing is written and output_file is ignored.
 *
 * Verification: the host runs the same recurrence in float, the same
 * operations in the same order (`precise` in the kernel and
 * -ffp-contract=off for this file forbid fused multiply-adds; Vulkan rounds
 * float add, sub and mul correctly; the values stay far above denormals),
 * so the result and every frame re-read from the file must match it bit
 * for bit. Past 4e8 cell updates (about a second of host time) the host
 * checks an invariant instead, exact in float: u stays its own mirror
 * image across the diagonal x = y (the bump's centre is on it, and the
 * mirror swaps the two terms of lap, a commutative float add). The parts
 * are rows, their mirror images columns, so a stale or lost halo row
 * breaks it.
 *
 * Lines: 140 lines that are neither blank nor only a comment, the
 * kernel's GLSL included (grep -cvE '^\s*($|//|/\*|\*)' wave_sim.c), against
 * 142 for Celerity's wave_sim.cc counted the same way; 37 of ours
 * are the checks Celerity's has not (host_step, differ, check).
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "wave_sim"
#include "sample_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#define DT 0.25f

/* (a, b, c) of the first step and of the others: Celerity's init_config
 * and update_config. */
static const float COEFF[2][3] = {{0.5f, 0.0f, 0.5f}, {1.0f, 1.0f, 1.0f}};

/* Celerity's step, written for one device: up is read and written at its
 * own cell only, u around it. Split, the same code reads u's halo. */
static const char *wave_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(float, 2) up; hpl_in(float, 2) u; float a; float b; float c; float r; };\n"
    "void main() {\n"
    "    uint y = hpl_global_id.x, x = hpl_global_id.y, ny = u.dims.x - 1u, nx = u.dims.y - 1u;\n"
    "    float h = hpl_at2(u, y, x);\n"
    "    precise float lap = r * ((hpl_at2(u, min(y + 1u, ny), x) - h) - (h - hpl_at2(u, max(y, 1u) - 1u, x)))\n"
    "                      + r * ((hpl_at2(u, y, min(x + 1u, nx)) - h) - (h - hpl_at2(u, y, max(x, 1u) - 1u)));\n"
    "    precise float next = a * 2.0 * h - b * hpl_at2(up, y, x) + c * lap;\n"
    "    hpl_at2(up, y, x) = next;\n"
    "}\n";

typedef struct wave {
    uint64_t n, steps, every; /* every: 0 writes no frames */
    FILE *file;               /* the frames, read back by the check */
    float *start, *ref, *result, *frame; /* host grids of n * n (ref: zeros) */
} wave;

static void initial_wave(float *u, uint64_t n)
{
    const float mid = (float)n / 4.0f, sigma = (float)n / 8.0f;
    for (uint64_t i = 0; i < n * n; i++) {
        float dx = (float)(i % n) - mid, dy = (float)(i / n) - mid;
        u[i] = expf(-(dx * dx / (2.0f * sigma * sigma) + dy * dy / (2.0f * sigma * sigma)));
    }
}

/* The kernel's step, in its order. */
static void host_step(float *up, const float *u, uint64_t n, const float k[3])
{
    for (uint64_t y = 0; y < n; y++)
        for (uint64_t x = 0; x < n; x++) {
            float c = u[y * n + x], s = u[(y + 1 < n ? y + 1 : y) * n + x], no = u[(y ? y - 1 : 0) * n + x];
            float e = u[y * n + (x + 1 < n ? x + 1 : x)], we = u[y * n + (x ? x - 1 : 0)];
            float lap = DT * DT * ((s - c) - (c - no)) + DT * DT * ((e - c) - (c - we));
            up[y * n + x] = k[0] * 2.0f * c - k[1] * up[y * n + x] + k[2] * lap;
        }
}

/* Step s: reads g[s % 2], updates g[(s + 1) % 2]. Step 0 leaves the data
 * as it found it (b = 0: up's old value counts 0 times; u is positive, so
 * not even a zero's sign changes), so repeating it warms GPUs up. */
static int step(hpl_context *ctx, hpl_kernel k, const hpl_launch *all, const hpl_array g[2], uint64_t s)
{
    const float *c = COEFF[s > 0];
    return hpl_eval(ctx, k, all, HPL_ARGS(hpl_part1(g[(s + 1) % 2], 0), hpl_part1(g[s % 2], 1), hpl_f32(c[0]),
                                          hpl_f32(c[1]), hpl_f32(c[2]), hpl_f32(DT * DT)));
}

/* Steps 0 .. T over every device, the frames to w->file, the result to
 * w->result. g[0] starts as u_0, g[1] as zeros (new arrays are zero:
 * Celerity's zero()); step s reads g[s % 2] and updates g[(s + 1) % 2]. */
static int simulate(hpl_context *ctx, const wave *w, char *devnames, double *ms)
{
    const size_t bytes = w->n * w->n * sizeof(float);
    const hpl_launch all = sample_launch(ctx);
    hpl_kernel k;
    hpl_array g[2];
    SAMPLE_TRY(sample_device_list(ctx, all.devices, all.device_count, devnames, 4096));
    SAMPLE_TRY(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = wave_src, .name = "wave"}}, &k));
    for (int i = 0; i < 2; i++)
        SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {w->n, w->n}}, &g[i]));
    SAMPLE_TRY(hpl_array_write(ctx, g[0], w->start, bytes));
    double t0 = sample_now_ms();
    for (uint64_t s = 0;; s++) {
        if (w->every && s % w->every == 0) {
            SAMPLE_TRY(hpl_array_read(ctx, g[s % 2], w->frame, bytes));
            fwrite(w->frame, bytes, 1, w->file); /* errors: ferror() after the run */
        }
        if (s == w->steps)
            break;
        SAMPLE_TRY(step(ctx, k, &all, g, s));
        if (s == 0 && hpl_finish(ctx) == HPL_OK) { /* the first step compiles and uploads: untimed */
            SAMPLE_WARM_UP(ctx, step(ctx, k, &all, g, 0)); /* and again: GPUs to their clocks */
            t0 = sample_now_ms();
        }
    }
    SAMPLE_TRY(hpl_finish(ctx));
    *ms = sample_now_ms() - t0;
    return hpl_array_read(ctx, g[w->steps % 2], w->result, bytes);
}

/* Cells of u (n x n) unequal to the host's, or without the host's to
 * their mirror image across the diagonal. */
static uint64_t differ(const float *u, const float *host, bool have_host, uint64_t n)
{
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n * n; i++)
        bad += u[i] != (have_host ? host[i] : u[(i % n) * n + i / n]);
    return bad;
}

/* The result and the file (header, every frame, nothing after) against the
 * host's recurrence up to 4e8 cell updates, else against their own
 * mirror images. The host's u_s is h[s % 2]: it overwrites w->start. */
static bool check(const wave *w)
{
    const uint64_t n = w->n, cells = n * n, want[2] = {n, w->every ? w->steps / w->every + 1 : 0};
    const bool host = (double)cells * (double)w->steps <= 4e8; /* cell updates: ~1 s on the host */
    float *h[2] = {w->start, w->ref};
    uint64_t head[2] = {0, 0}, bad = 0;
    if (w->every) /* a write that failed shows as a mismatch */
        bad = fseek(w->file, 0, SEEK_SET) || fread(head, sizeof head, 1, w->file) != 1 || memcmp(head, want, sizeof head);
    for (uint64_t s = 0;; s++) {
        if (w->every && s % w->every == 0)
            bad += fread(w->frame, cells * sizeof(float), 1, w->file) != 1 ? cells : differ(w->frame, h[s % 2], host, n);
        if (s == w->steps)
            break;
        if (host)
            host_step(h[(s + 1) % 2], h[s % 2], n, COEFF[s > 0]);
    }
    bad += (w->every && fgetc(w->file) != EOF) + differ(w->result, h[w->steps % 2], host, n);
    fprintf(stderr, SAMPLE_NAME ": %" PRIu64 " cells differ from the %s\n", bad, host ? "host's" : "mirror image's");
    return bad == 0;
}

/* The run on a context of its own, over all its devices. */
static int run(const wave *w, char *devnames, double *ms)
{
    hpl_context *ctx;
    SAMPLE_TRY(sample_context_create(&(hpl_context_desc){.log = sample_log}, &ctx));
    initial_wave(w->start, w->n);
    int rc = simulate(ctx, w, devnames, ms);
    hpl_context_destroy(ctx);
    return rc;
}

static bool parse_args(int argc, char **argv, wave *w)
{
    uint64_t *v[3] = {&w->n, &w->steps, &w->every};
    static const char *const names[3] = {"N", "T", "sample_every"};
    *w = (wave){.n = 256, .steps = 400};
    for (int i = 1; i < argc && i < 4; i++)
        if (!sample_arg_u64(names[i - 1], argv[i], UINT64_MAX, v[i - 1]))
            return false;
    return argc <= 5 && w->n >= 1 && w->n <= 1 << 15 && w->steps >= 1 && w->steps <= 1 << 20;
}

int main(int argc, char **argv)
{
    wave w;
    if (!parse_args(argc, argv, &w)) {
        fprintf(stderr, "usage: %s [N 1..32768 [T 1..2^20 steps [sample_every (0: no frames) [output_file]]]]\n", argv[0]);
        return 2;
    }
    const char *path = argc > 4 ? argv[4] : "wave_sim_result.bin";
    const uint64_t cells = w.n * w.n, head[2] = {w.n, w.every ? w.steps / w.every + 1 : 0};
    if (w.every && (!(w.file = fopen(path, "w+b")) || fwrite(head, sizeof head, 1, w.file) != 1)) {
        fprintf(stderr, SAMPLE_NAME ": cannot write output file '%s': %s\n", path, strerror(errno));
        return 1;
    }
    float *mem = calloc(4 * cells, sizeof(float)), **grids[4] = {&w.start, &w.ref, &w.result, &w.frame};
    for (int i = 0; i < 4 && mem; i++)
        *grids[i] = mem + (uint64_t)i * cells;
    char devnames[4096] = "none";
    double ms = 0.0;
    bool verified = mem && run(&w, devnames, &ms) == HPL_OK && sample_log_clean();
    sample_checksum_print("u", w.result, verified ? cells * sizeof(float) : 0);
    verified = verified && check(&w);
    free(mem);
    verified = (!w.file || fclose(w.file) == 0) && verified;
    double rate = ms > 0.0 ? (double)cells * (double)(w.steps - 1) / (ms * 1e3) : 0.0;
    printf("RESULT name=wave_sim devices=%s size=%dx%dx%d time_ms=%.3f rate=%.4gMcell/s verified=%s%s\n", devnames,
           (int)w.n, (int)w.n, (int)w.steps, ms, rate, sample_verified_everywhere(verified) ? "yes" : "no",
           sample_ranks_field()); /* n, steps < 2^31: parse_args */
    return verified ? 0 : 1;
}
