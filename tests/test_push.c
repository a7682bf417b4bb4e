/* Pushes (hplvk.h chapter 7b) on three logical devices with separate
 * memories ("cpu:3", zero copy off, so every copy really moves):
 *   1. a stencil ping-pong split by rows with one halo row, 12 steps, halos
 *      after and halos first: the values against a host computation, bit for
 *      bit; from the fourth step on, each eval, per device: exactly the
 *      operations of its kernel (one, or two with halos first: bands, then
 *      the interior; no download of its own), the rows its neighbours read
 *      next to the host (pushed), its halo rows to the device;
 *   2. the same program with HPLVK_PUSH=0: the same values, the same bytes
 *      over the steps and the result's read together, and more work (the
 *      downloads: operations, or on a GPU with halos first submissions on
 *      its transfer queue);
 *   3. rows another device read once, then only rewritten: pushed once;
 *   4. an argument over 8 MiB is not pushed: it moves at the read, whole;
 *   5. a push waits for the reads of the host rows it overwrites: a one-way
 *      stencil by plain evals on two devices, device 1 reading the row above
 *      its rows from device 0 (pushed) and slowed by a spin loop, device 0
 *      reading nothing of device 1. Only that write-after-read wait keeps
 *      device 0's next push of the row from overwriting it on the host
 *      before device 1's upload of it has run; the values against the host;
 *   6. HPLVK_PUSH=2 makes hpl_context_create fail, naming it. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define R 30 /* rows: 10 per device */
#define C 16
#define ROWB ((uint64_t)C * 4)
#define STEPS 12
#define D 3

static const char *stencil_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) a; hpl_out(uint, 2) b; };\n"
    "void main() { uint i = hpl_global_id.x, j = hpl_global_id.y, n = a.dims.x;\n"
    "  uint up = i > 0u ? hpl_at2(a, i - 1u, j) : 7u, dn = i + 1u < n ? hpl_at2(a, i + 1u, j) : 11u;\n"
    "  hpl_at2(b, i, j) = up * 3u + dn * 5u + hpl_at2(a, i, j); }\n";

static const char *gen_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 2) a; uint seed; };\n"
    "void main() { uvec2 g = a.origin + hpl_global_id.xy;\n"
    "  hpl_at2(a, hpl_global_id.x, hpl_global_id.y) = g.x * 1000u + g.y + seed; }\n";

static const char *copy_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) a; hpl_out(uint, 2) b; };\n"
    "void main() { hpl_at2(b, hpl_global_id.x, hpl_global_id.y) = hpl_at2(a, hpl_global_id.x, hpl_global_id.y); }\n";

static void host_step(const uint32_t *a, uint32_t *b)
{
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            uint32_t up = i > 0 ? a[(i - 1) * C + j] : 7u, dn = i + 1 < R ? a[(i + 1) * C + j] : 11u;
            b[i * C + j] = up * 3u + dn * 5u + a[i * C + j];
        }
}

static hpl_context *open_cpu3(void)
{
    return th_context_desc(&(hpl_context_desc){.devices = "cpu:3", .zero_copy = HPL_ZERO_COPY_OFF});
}

typedef struct totals {
    uint64_t to_host, to_device;
    uint64_t work; /* operations, and submissions on transfer queues (a GPU's downloads of bands) */
} totals;

/* 1 and 2: the stencil; `pushes` says what the context does. Returns the
 * bytes and operations of the steps and the result's read. */
static totals stencil(hpl_context *ctx, bool first, bool pushes, uint32_t *result)
{
    const char *what = first ? "halos first" : "halos after";
    hpl_kernel k = th_kernel(ctx, stencil_src);
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, R, C, 0), th_array(ctx, HPL_UINT32, R, C, 0)};
    static uint32_t ref[2][R * C];
    for (int i = 0; i < R * C; i++)
        ref[0][i] = (uint32_t)(i * 2654435761u % 1000u);
    CHECK_OK(hpl_array_write(ctx, g[0], ref[0], sizeof ref[0]));
    hpl_launch l = {.devices = {0, 1, 2}, .device_count = D, .halos_first = first};
    totals t = {0};
    CHECK_OK(hpl_stats_reset(ctx));
    for (int s = 0; s < STEPS; s++) {
        CHECK_OK(hpl_eval(ctx, k, &l, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[1 - s % 2], 1))));
        host_step(ref[s % 2], ref[1 - s % 2]);
        hpl_stats st = th_stats(ctx);
        for (int d = 0; d < D; d++) {
            uint64_t neighbours = (uint64_t)(d > 0) + (uint64_t)(d + 1 < D);
            const hpl_device_stats *x = &st.device[d];
            t.to_host += x->to_host_bytes;
            t.to_device += x->to_device_bytes;
            t.work += x->operations + x->transfer_submissions;
            if (!pushes || s < 3)
                continue;
            uint64_t ops = first ? 2 : 1;
            CHECK(x->operations == ops && x->to_host_bytes == neighbours * ROWB &&
                      x->to_device_bytes == neighbours * ROWB,
                  "%s, step %d, device %d: %" PRIu64 " operations, %" PRIu64 " bytes to the host, %" PRIu64
                  " to the device; want %" PRIu64 ", %" PRIu64 ", %" PRIu64,
                  what, s, d, x->operations, x->to_host_bytes, x->to_device_bytes, ops, neighbours * ROWB,
                  neighbours * ROWB);
        }
        CHECK_OK(hpl_stats_reset(ctx));
    }
    CHECK_OK(hpl_array_read(ctx, g[STEPS % 2], result, sizeof ref[0]));
    CHECK(memcmp(result, ref[STEPS % 2], sizeof ref[0]) == 0, "%s: %d steps differ from the host's", what, STEPS);
    hpl_stats st = th_stats(ctx);
    t.to_host += st.total.to_host_bytes;
    t.to_device += st.total.to_device_bytes;
    CHECK_OK(hpl_array_destroy(ctx, g[0]));
    CHECK_OK(hpl_array_destroy(ctx, g[1]));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    return t;
}

static void stencil_both_ways(hpl_context *ctx, bool first)
{
    static uint32_t pushed[R * C], lazy[R * C];
    totals p = stencil(ctx, first, true, pushed);
    CHECK(setenv("HPLVK_PUSH", "0", 1) == 0, "setenv");
    hpl_context *off = open_cpu3();
    unsetenv("HPLVK_PUSH");
    if (!CHECK(off != NULL, "a context with HPLVK_PUSH=0"))
        return;
    totals z = stencil(off, first, false, lazy);
    th_finish(off);
    const char *what = first ? "halos first" : "halos after";
    CHECK(memcmp(pushed, lazy, sizeof pushed) == 0, "%s: results with and without pushes differ", what);
    CHECK(p.to_host == z.to_host && p.to_device == z.to_device,
          "%s: steps and the result's read moved %" PRIu64 " / %" PRIu64 " bytes to the host / devices with "
          "pushes, %" PRIu64 " / %" PRIu64 " without",
          what, p.to_host, p.to_device, z.to_host, z.to_device);
    CHECK(p.work < z.work, "%s: %" PRIu64 " operations and transfer-queue submissions with pushes, %" PRIu64
          " without", what, p.work, z.work);
    printf("push: %s, %d steps on %d devices: %" PRIu64 " operations and transfer-queue submissions with pushes, "
           "%" PRIu64 " without; %" PRIu64 " bytes to the host either way\n",
           what, STEPS, D, p.work, z.work, p.to_host);
}

/* 3. Device 1 reads x's rows of device 0 once (a halo), then device 0
 * rewrites them three times: the first rewrite pushes them, no other. */
static void read_once(hpl_context *ctx)
{
    hpl_kernel gen = th_kernel(ctx, gen_src), copy = th_kernel(ctx, copy_src);
    hpl_array x = th_array(ctx, HPL_UINT32, R, C, 0), y = th_array(ctx, HPL_UINT32, R, C, 0);
    hpl_launch two = {.devices = {0, 1}, .device_count = 2};
    CHECK_OK(hpl_eval(ctx, gen, &two, HPL_ARGS(hpl_part1(x, 0), hpl_u32(1))));
    CHECK_OK(hpl_eval(ctx, copy, &two, HPL_ARGS(hpl_part1(x, 1), hpl_part1(y, 0)))); /* reads rows 14 and 15 across */
    for (int i = 0; i < 3; i++) {
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, gen, &two, HPL_ARGS(hpl_part1(x, 0), hpl_u32(2 + (uint32_t)i))));
        hpl_stats st = th_stats(ctx);
        uint64_t want = i == 0 ? ROWB : 0;
        for (int d = 0; d < 2; d++)
            CHECK(st.device[d].to_host_bytes == want && st.device[d].to_device_bytes == 0,
                  "rewrite %d of rows read once, device %d: %" PRIu64 " bytes to the host, %" PRIu64
                  " to the device; want %" PRIu64 ", 0",
                  i + 1, d, st.device[d].to_host_bytes, st.device[d].to_device_bytes, want);
    }
    static uint32_t got[R * C];
    CHECK_OK(hpl_array_read(ctx, x, got, sizeof got));
    bool ok = true;
    for (int i = 0; i < R && ok; i++)
        for (int j = 0; j < C && ok; j++)
            ok = got[i * C + j] == (uint32_t)(i * 1000 + j + 4);
    CHECK(ok, "x after its rewrites");
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
    CHECK_OK(hpl_kernel_destroy(ctx, gen));
    CHECK_OK(hpl_kernel_destroy(ctx, copy));
}

/* 4. 9 MiB written on device 0 and read whole on device 1, twice: the
 * rewrite pushes nothing (over 8 MiB), the read moves it all. */
static void too_big(hpl_context *ctx)
{
    enum { BR = 2304, BC = 1024 }; /* 9 MiB of uint32 */
    const uint64_t bytes = (uint64_t)BR * BC * 4;
    hpl_kernel gen = th_kernel(ctx, gen_src), copy = th_kernel(ctx, copy_src);
    hpl_array x = th_array(ctx, HPL_UINT32, BR, BC, 0), y = th_array(ctx, HPL_UINT32, BR, BC, 0);
    hpl_launch on0 = {.device = 0}, on1 = {.device = 1};
    CHECK_OK(hpl_eval(ctx, gen, &on0, HPL_ARGS(hpl_arr(x), hpl_u32(0))));
    CHECK_OK(hpl_eval(ctx, copy, &on1, HPL_ARGS(hpl_arr(x), hpl_arr(y))));
    CHECK_OK(hpl_stats_reset(ctx));
    CHECK_OK(hpl_eval(ctx, gen, &on0, HPL_ARGS(hpl_arr(x), hpl_u32(5))));
    hpl_stats st = th_stats(ctx);
    CHECK(st.device[0].to_host_bytes == 0, "9 MiB rewritten: %" PRIu64 " bytes pushed", st.device[0].to_host_bytes);
    CHECK_OK(hpl_eval(ctx, copy, &on1, HPL_ARGS(hpl_arr(x), hpl_arr(y))));
    st = th_stats(ctx);
    CHECK(st.device[0].to_host_bytes == bytes && st.device[1].to_device_bytes == bytes,
          "9 MiB read on device 1: %" PRIu64 " bytes from device 0, %" PRIu64 " to device 1; want %" PRIu64,
          st.device[0].to_host_bytes, st.device[1].to_device_bytes, bytes);
    uint32_t *p = th_access(ctx, y, HPL_READ);
    if (CHECK(p != NULL, "y readable"))
        CHECK(p[0] == 5 && p[(uint64_t)BR * BC - 1] == (uint32_t)((BR - 1) * 1000 + BC - 1 + 5),
              "y's first and last elements: %u, %u", p[0], p[(uint64_t)BR * BC - 1]);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
    CHECK_OK(hpl_kernel_destroy(ctx, gen));
    CHECK_OK(hpl_kernel_destroy(ctx, copy));
}

/* 5. b = 3 a + (the row above, or 1 at the top), and on rows from H on a
 * bit of a spin loop's result (lcg^SPIN(column) & 1): device 0 computes
 * rows 0 .. H-1 from a's same rows, device 1 rows H .. R-1 from a's rows
 * H-1 .. R-1. */
#define H (R / 2)
#define SPIN 20000u

static const char *top_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) a; hpl_out(uint, 2) b; };\n"
    "void main() { uint i = hpl_global_id.x, j = hpl_global_id.y;\n"
    "  hpl_at2(b, i, j) = hpl_at2(a, i, j) * 3u + (i > 0u ? hpl_at2(a, i - 1u, j) : 1u); }\n";

static const char *bottom_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) a; hpl_out(uint, 2) b; uint spin; };\n"
    "void main() { uint i = hpl_global_id.x, j = hpl_global_id.y, d = j;\n"
    "  for (uint k = 0u; k < spin; k++) d = d * 1664525u + 1013904223u;\n"
    "  hpl_at2(b, i, j) = hpl_at2(a, i + 1u, j) * 3u + hpl_at2(a, i, j) + (d & 1u); }\n";

static void one_way_host(const uint32_t *a, uint32_t *b, const uint32_t *bit)
{
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            b[i * C + j] = a[i * C + j] * 3u + (i > 0 ? a[(i - 1) * C + j] : 1u) + (i >= H ? bit[j] : 0u);
}

static void write_after_read(hpl_context *ctx)
{
    hpl_kernel top = th_kernel(ctx, top_src), bottom = th_kernel(ctx, bottom_src);
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, R, C, 0), th_array(ctx, HPL_UINT32, R, C, 0)};
    hpl_array up[2], down_in[2], down_out[2];
    for (int a = 0; a < 2; a++) {
        CHECK_OK(hpl_subarray(ctx, g[a], HPL_RANGES({0, H - 1}, HPL_ALL), &up[a]));
        CHECK_OK(hpl_subarray(ctx, g[a], HPL_RANGES({H - 1, R - 1}, HPL_ALL), &down_in[a]));
        CHECK_OK(hpl_subarray(ctx, g[a], HPL_RANGES({H, R - 1}, HPL_ALL), &down_out[a]));
    }
    static uint32_t ref[2][R * C], got[R * C];
    uint32_t bit[C];
    for (int j = 0; j < C; j++) {
        uint32_t d = (uint32_t)j;
        for (uint32_t k = 0; k < SPIN; k++)
            d = d * 1664525u + 1013904223u;
        bit[j] = d & 1u;
    }
    for (int i = 0; i < R * C; i++)
        ref[0][i] = (uint32_t)(i * 40503u % 977u);
    CHECK_OK(hpl_array_write(ctx, g[0], ref[0], sizeof ref[0]));
    hpl_launch on0 = {.device = 0}, on1 = {.device = 1, .global = {R - H, C}};
    CHECK_OK(hpl_stats_reset(ctx));
    for (int s = 0; s < STEPS; s++) {
        int in = s % 2, out = 1 - in;
        CHECK_OK(hpl_eval(ctx, top, &on0, HPL_ARGS(hpl_arr(up[in]), hpl_arr(up[out]))));
        CHECK_OK(hpl_eval(ctx, bottom, &on1, HPL_ARGS(hpl_arr(down_in[in]), hpl_arr(down_out[out]), hpl_u32(SPIN))));
        one_way_host(ref[in], ref[out], bit);
    }
    /* Row H-1 leaves device 0 once a step: pushed from the second step on,
     * and also pulled at the second (the other array's first read). */
    hpl_stats st = th_stats(ctx);
    CHECK(st.device[0].to_host_bytes == STEPS * ROWB && st.device[1].to_host_bytes == 0,
          "one-way stencil: %" PRIu64 " and %" PRIu64 " bytes to the host from devices 0 and 1; want %" PRIu64 " and 0",
          st.device[0].to_host_bytes, st.device[1].to_host_bytes, STEPS * ROWB);
    CHECK_OK(hpl_array_read(ctx, g[STEPS % 2], got, sizeof got));
    int wrong = 0, first = -1;
    for (int i = 0; i < R * C; i++)
        if (got[i] != ref[STEPS % 2][i] && wrong++ == 0)
            first = i;
    CHECK(wrong == 0, "one-way stencil, device 1 slowed: %d of %d elements differ from the host's, the first at row %d",
          wrong, R * C, first / C);
    for (int a = 0; a < 2; a++)
        CHECK_OK(hpl_array_destroy(ctx, g[a]));
    CHECK_OK(hpl_kernel_destroy(ctx, top));
    CHECK_OK(hpl_kernel_destroy(ctx, bottom));
}

static void bad_value(void)
{
    CHECK(setenv("HPLVK_PUSH", "2", 1) == 0, "setenv");
    hpl_context *ctx = NULL;
    hpl_context_desc desc = {.devices = th_devices("cpu:3")};
    th_prepare_desc(&desc);
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_INVALID_ARGUMENT, "HPLVK_PUSH='2'");
    unsetenv("HPLVK_PUSH");
    if (ctx)
        hpl_context_destroy(ctx);
}

int main(void)
{
    unsetenv("HPLVK_PUSH");
    hpl_context *ctx = open_cpu3();
    if (!ctx)
        return 1;
    stencil_both_ways(ctx, false);
    stencil_both_ways(ctx, true);
    read_once(ctx);
    too_big(ctx);
    write_after_read(ctx);
    bad_value();
    return th_finish(ctx);
}
