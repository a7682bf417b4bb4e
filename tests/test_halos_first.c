/* Halos first (hpl_launch.halos_first, hplvk.h 7b): each device runs the
 * rows its neighbours read as halos in a submission of its own, then its
 * interior, and the neighbours' copies of the bands wait for the bands
 * alone. Checked bit for bit against the host over many steps of a
 * stencil whose rows are slowed down by a busy loop (a copy that did not
 * wait for its band would carry stale rows), on 2, 3 and 4 devices: radius
 * 1 and 2, an argument written with a narrower overlap than it is read
 * with, parts too thin for an interior, a split along columns, uneven and
 * zero shares, and where the flag does not apply (one device, domains).
 * The transfer_lane variant runs it with every download on the lane, where
 * a band's copy waits on the compute timeline and on the lane's gate. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dst[r][c] from src's elements up to `radius` away along `axis` (0: rows,
 * 1: columns), mixed with the position, then `work` rounds of an LCG. */
static const char *stencil_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) src; hpl_out(uint, 2) dst; uint radius; uint axis; uint work; };\n"
    "void main() {\n"
    "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"
    "    int n = int(axis == 0u ? src.dims.x : src.dims.y), at = int(axis == 0u ? r : c);\n"
    "    uint h = r * 2654435761u + c;\n"
    "    for (int d = -int(radius); d <= int(radius); d++) {\n"
    "        int k = at + d;\n"
    "        if (k < 0 || k >= n) continue;\n"
    "        uint v = axis == 0u ? hpl_at2(src, uint(k), c) : hpl_at2(src, r, uint(k));\n"
    "        h = h * 31u + v * uint(d + 7);\n"
    "    }\n"
    "    for (uint i = 0u; i < work; i++) h = h * 1664525u + 1013904223u;\n"
    "    hpl_at2(dst, r, c) = h;\n"
    "}\n";

typedef struct stencil_case {
    const char *name;
    const char *devices;
    uint64_t rows, cols;
    uint32_t radius, axis, work;
    int64_t in_overlap, out_overlap;
    int steps;
    const double *shares; /* NULL: even */
    bool domains;         /* give launch.domains (the flag does not apply) */
} stencil_case;

/* The kernel's `work` LCG rounds as one affine map h -> h * lcg_mul +
 * lcg_add (composed once per case), so that the host keeps up with a GPU's
 * slow bands. */
static uint32_t lcg_mul, lcg_add;

static void lcg_compose(uint32_t work)
{
    lcg_mul = 1u;
    lcg_add = 0u;
    for (uint32_t i = 0; i < work; i++) {
        lcg_mul *= 1664525u;
        lcg_add = lcg_add * 1664525u + 1013904223u;
    }
}

static void host_step(const stencil_case *t, const uint32_t *src, uint32_t *dst)
{
    int64_t n = (int64_t)(t->axis == 0 ? t->rows : t->cols);
    for (uint64_t r = 0; r < t->rows; r++)
        for (uint64_t c = 0; c < t->cols; c++) {
            int64_t at = (int64_t)(t->axis == 0 ? r : c);
            uint32_t h = (uint32_t)r * 2654435761u + (uint32_t)c;
            for (int d = -(int)t->radius; d <= (int)t->radius; d++) {
                int64_t k = at + d;
                if (k < 0 || k >= n)
                    continue;
                uint32_t v = t->axis == 0 ? src[k * (int64_t)t->cols + (int64_t)c] : src[r * t->cols + (uint64_t)k];
                h = h * 31u + v * (uint32_t)(d + 7);
            }
            dst[r * t->cols + c] = h * lcg_mul + lcg_add;
        }
}

static void run_case(const stencil_case *t)
{
    hpl_context *ctx = th_context(t->devices);
    lcg_compose(t->work);
    int devices = hpl_device_count(ctx);
    size_t count = t->rows * t->cols;
    uint32_t *grid[2] = {malloc(count * 4), malloc(count * 4)};
    for (size_t i = 0; i < count; i++)
        grid[0][i] = (uint32_t)(i * 2246822519u) ^ 0x9e3779b9u;
    hpl_kernel k = th_kernel(ctx, stencil_src);
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, t->rows, t->cols, 0), th_array(ctx, HPL_UINT32, t->rows, t->cols, 0)};
    CHECK_OK(hpl_array_write(ctx, g[0], grid[0], count * 4));
    hpl_launch launch = {.device_count = devices, .shares = t->shares, .halos_first = true};
    for (int d = 0; d < devices; d++)
        launch.devices[d] = d;
    hpl_domain domains[HPL_MAX_DEVICES];
    if (t->domains) { /* each subkernel its even part, given by hand */
        for (int d = 0; d < devices; d++) {
            uint64_t rows = t->rows / (uint64_t)devices + ((uint64_t)d < t->rows % (uint64_t)devices);
            domains[d] = (hpl_domain){.global = {rows, t->cols, 1}};
        }
        launch.domains = domains;
    }
    hpl_stats before, after;
    CHECK_OK(hpl_stats_get(ctx, &before));
    int dim = (int)t->axis;
    for (int s = 0; s < t->steps; s++) {
        hpl_array in = g[s % 2], out = g[(s + 1) % 2];
        CHECK_OK(hpl_eval(ctx, k, &launch,
                          HPL_ARGS(hpl_part(in, dim, t->in_overlap), hpl_part(out, dim, t->out_overlap),
                                   hpl_u32(t->radius), hpl_u32(t->axis), hpl_u32(t->work))));
        host_step(t, grid[s % 2], grid[(s + 1) % 2]);
    }
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_get(ctx, &after));
    const uint32_t *got = th_access(ctx, g[t->steps % 2], HPL_READ);
    const uint32_t *want = grid[t->steps % 2];
    size_t bad = 0, first = 0;
    for (size_t i = 0; got && i < count; i++)
        if (got[i] != want[i] && bad++ == 0)
            first = i;
    CHECK(got && bad == 0, "%s: %zu of %zu elements wrong, first (%zu, %zu) = %u, want %u", t->name, bad, count,
          first / t->cols, first % t->cols, got ? got[first] : 0, want[first]);
    /* A device with an interior ran its bands as a submission of their own,
     * then its interior as another: two per step at least (a plain eval's
     * steps may share one). Even splits only (the parts are hplvk.h 7b's:
     * the larger first); not where the flag does not apply (domains, or a
     * zero-copy device under validation, whose halo writes are checked in
     * device order). */
    bool zero_copy = false;
    for (int d = 0; d < devices; d++) {
        hpl_device_info info;
        zero_copy |= hpl_device_get_info(ctx, d, &info) == HPL_OK && info.zero_copy;
    }
    uint64_t w = (uint64_t)(t->in_overlap > t->out_overlap ? t->in_overlap : t->out_overlap);
    uint64_t n = t->axis == 0 ? t->rows : t->cols;
    for (int d = 0; !t->domains && !t->shares && !zero_copy && devices > 1 && d < devices; d++) {
        uint64_t part = n / (uint64_t)devices + ((uint64_t)d < n % (uint64_t)devices);
        uint64_t bands = (uint64_t)(d > 0) + (uint64_t)(d < devices - 1);
        uint64_t subs = after.device[d].submissions - before.device[d].submissions;
        if (part > bands * w)
            CHECK(subs >= 2 * (uint64_t)t->steps, "%s: device %d made %llu submissions in %d halos-first steps",
                  t->name, d, (unsigned long long)subs, t->steps);
    }
    free(grid[0]);
    free(grid[1]);
    hpl_context_destroy(ctx);
}

int main(void)
{
    static const double uneven[] = {1.0, 3.0, 2.0}, idle_first[] = {0.0, 1.0, 1.0};
    const stencil_case cases[] = {
        {"two devices, radius 1", "cpu:2", 97, 33, 1, 0, 400, 1, 1, 24, NULL, false},
        {"three devices, radius 2", "cpu:3", 61, 17, 2, 0, 300, 2, 2, 15, NULL, false},
        {"written with overlap 0, read with 2", "cpu:3", 50, 9, 2, 0, 100, 2, 0, 15, NULL, false},
        {"four devices, parts too thin for an interior", "cpu:4", 9, 12, 1, 0, 50, 1, 1, 12, NULL, false},
        {"split along columns", "cpu:2", 13, 70, 1, 1, 200, 1, 1, 14, NULL, false},
        {"uneven shares", "cpu:3", 80, 11, 1, 0, 100, 1, 1, 10, uneven, false},
        {"the first device idle", "cpu:3", 40, 8, 1, 0, 100, 1, 1, 10, idle_first, false},
        {"one device: the flag does nothing", "cpu", 30, 10, 1, 0, 10, 1, 1, 6, NULL, false},
        {"domains given: the flag does nothing", "cpu:2", 30, 10, 1, 0, 10, 1, 1, 6, NULL, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        th_note("case: %s", cases[i].name);
        run_case(&cases[i]);
    }
    /* Bands slow enough (about half a millisecond on a GPU) that the next
     * evals are recorded while they run: a band's copy that did not wait
     * for its band, or that overwrote host rows a neighbour still reads,
     * would carry wrong rows. The written argument has no halo, so that
     * validation's check of halo writes (which waits for each eval) leaves
     * the host free to run ahead. A CPU runs the same rows with less work,
     * and a device with a loop limit (Lavapipe beside a GPU) no more than
     * it allows. */
    hpl_context *probe = th_context("cpu:2");
    bool gpu = false;
    uint32_t work_limit = UINT32_MAX;
    for (int d = 0; d < hpl_device_count(probe); d++) {
        hpl_device_info info;
        if (!CHECK_OK(hpl_device_get_info(probe, d, &info)))
            continue;
        gpu = gpu || (info.type & HPL_DEVICE_GPU);
        if (info.max_loop_iterations)
            work_limit = info.max_loop_iterations - 64 < work_limit ? info.max_loop_iterations - 64 : work_limit; /* the radius loop counts too */
    }
    hpl_context_destroy(probe);
    uint32_t work = gpu ? 200000 : 2000;
    const stencil_case slow = {"slow bands", "cpu:2", 16, 512, 1, 0, work < work_limit ? work : work_limit, 1, 0, 10,
                               NULL, false};
    th_note("case: %s (work %u)", slow.name, slow.work);
    run_case(&slow);
    return th_finish(NULL);
}
