/* Multi-device evals on zero-copy devices: several devices writing the one
 * host copy of an array at once.
 *
 * - A read right after a split eval sees every subkernel's writes (the host
 *   storage once kept a single "last writer", so the read waited for one
 *   device only and could return data from before the eval).
 * - hpl_array_destroy right after a split eval waits for every subkernel:
 *   user storage then holds all of the results, and library storage is not
 *   unmapped under a device still writing it.
 * - A stencil over parts with halos, in and out swapped each step, is bit
 *   exact against the host.
 * Run on "cpu:2" with zero-copy forced on (both devices work on the host's
 * copy); where the devices cannot share memory with the host (a discrete
 * GPU under TH_DEVICE_KIND), the same program runs on separate memories and
 * must give the same results. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define N (1u << 16)
#define ROUNDS 24

/* Slow enough (a few ms on Lavapipe) that a read not waiting for both
 * devices would see old data. */
static const char *hash_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_out(uint, 1) x; uint seed; uint rounds; };\n"
                              "void main() {\n"
                              "    uint i = hpl_global_id.x, h = i ^ seed;\n"
                              "    for (uint r = 0u; r < rounds; r++) h = h * 747796405u + 2891336453u + r;\n"
                              "    hpl_at(x, i) = h;\n"
                              "}\n";

static uint32_t host_hash(uint32_t i, uint32_t seed, uint32_t rounds)
{
    uint32_t h = i ^ seed;
    for (uint32_t r = 0; r < rounds; r++)
        h = h * 747796405u + 2891336453u + r;
    return h;
}

static uint64_t count_wrong(const uint32_t *got, uint32_t seed, uint32_t rounds, uint32_t *first)
{
    uint64_t bad = 0;
    for (uint32_t i = 0; i < N; i++)
        if (got[i] != host_hash(i, seed, rounds) && bad++ == 0)
            *first = i;
    return bad;
}

static hpl_context *zero_copy_context(void)
{
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:2", .zero_copy = HPL_ZERO_COPY_ON});
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        CHECK_OK(hpl_device_get_info(ctx, d, &info));
        th_note("device %d: %s, zero_copy %d", d, info.name, info.zero_copy);
    }
    return ctx;
}

static void test_read_right_after(hpl_context *ctx, hpl_kernel k)
{
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
    uint32_t *got = malloc(N * sizeof *got);
    for (uint32_t round = 0; round < ROUNDS; round++) {
        uint32_t seed = 0x9e3779b9u * (round + 1), rounds = 64 + 16 * (round % 4);
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_part(x, 0, 0), hpl_u32(seed), hpl_u32(rounds))));
        if (!CHECK_OK(hpl_array_read(ctx, x, got, N * sizeof *got)))
            break;
        uint32_t first = 0;
        uint64_t bad = count_wrong(got, seed, rounds, &first);
        if (!CHECK(bad == 0, "round %u: read right after a split eval: %llu of %u elements stale, first [%u]", round,
                   (unsigned long long)bad, N, first))
            break;
    }
    free(got);
    CHECK_OK(hpl_array_destroy(ctx, x));
}

/* Do the devices write the host's copy directly (both zero-copy)? Then the
 * user's storage holds the results once destroy has returned; with
 * memories of their own, destroy does not copy results back. */
static bool all_zero_copy(hpl_context *ctx)
{
    bool all = true;
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        all = CHECK_OK(hpl_device_get_info(ctx, d, &info)) && info.zero_copy && all;
    }
    return all;
}

static void test_destroy_right_after(hpl_context *ctx, hpl_kernel k)
{
    bool direct = all_zero_copy(ctx);
    uint32_t *user = malloc(N * sizeof *user);
    for (uint32_t round = 0; round < ROUNDS; round++) {
        uint32_t seed = 0x85ebca6bu * (round + 7), rounds = 96;
        memset(user, 0, N * sizeof *user);
        hpl_array x;
        CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {N}, .host = user}, &x));
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_part(x, 0, 0), hpl_u32(seed), hpl_u32(rounds))));
        CHECK_OK(hpl_array_destroy(ctx, x));
        /* Destroy waited for both subkernels: all of the results are there. */
        uint32_t first = 0;
        uint64_t bad = direct ? count_wrong(user, seed, rounds, &first) : 0;
        if (!CHECK(bad == 0, "round %u: user storage after destroy: %llu of %u elements missing, first [%u]", round,
                   (unsigned long long)bad, N, first))
            break;
        /* Library storage: destroyed (unmapped) while devices may still be
         * writing it, were destroy not to wait for every one of them. */
        hpl_array y = th_array(ctx, HPL_UINT32, N, 0, 0);
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_part(y, 0, 0), hpl_u32(seed), hpl_u32(rounds))));
        CHECK_OK(hpl_array_destroy(ctx, y));
    }
    free(user);
}

/* ---- a stencil over parts with halos ------------------------------------ */

static const char *life_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_in(int, 2) src; hpl_out(int, 2) dst; };\n"
                              "void main() {\n"
                              "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"
                              "    if (r == 0u || r == src.dims.x - 1u || c == 0u || c == src.dims.y - 1u) {\n"
                              "        hpl_at2(dst, r, c) = 0;\n"
                              "        return;\n"
                              "    }\n"
                              "    int n = 0;\n"
                              "    for (int di = -1; di <= 1; di++)\n"
                              "        for (int dj = -1; dj <= 1; dj++)\n"
                              "            if (di != 0 || dj != 0) n += hpl_at2(src, uint(int(r) + di), uint(int(c) + dj));\n"
                              "    hpl_at2(dst, r, c) = (n == 3 || (n == 2 && hpl_at2(src, r, c) != 0)) ? 1 : 0;\n"
                              "}\n";

static void host_life(const int32_t *in, int32_t *out, int rows, int cols)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            if (i == 0 || j == 0 || i == rows - 1 || j == cols - 1) {
                out[i * cols + j] = 0;
                continue;
            }
            int n = 0;
            for (int di = -1; di <= 1; di++)
                for (int dj = -1; dj <= 1; dj++)
                    if (di || dj)
                        n += in[(i + di) * cols + j + dj];
            out[i * cols + j] = n == 3 || (n == 2 && in[i * cols + j]);
        }
}

static void test_stencil(hpl_context *ctx, int rows, int cols, int steps)
{
    hpl_kernel life = th_kernel(ctx, life_src);
    size_t bytes = (size_t)rows * cols * sizeof(int32_t);
    int32_t *ref[2] = {malloc(bytes), malloc(bytes)}, *got = malloc(bytes);
    uint32_t state = 12345u + (uint32_t)rows;
    for (int i = 0; i < rows * cols; i++) {
        state = state * 1664525u + 1013904223u;
        ref[0][i] = (state >> 24) < 90u;
    }
    hpl_array g[2] = {th_array(ctx, HPL_INT32, (uint64_t)rows, (uint64_t)cols, 0),
                      th_array(ctx, HPL_INT32, (uint64_t)rows, (uint64_t)cols, 0)};
    CHECK_OK(hpl_array_write(ctx, g[0], ref[0], bytes));
    for (int s = 0; s < steps; s++) {
        CHECK_OK(hpl_eval(ctx, life, NULL, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
        host_life(ref[s % 2], ref[(s + 1) % 2], rows, cols);
        /* Every third step, read at once: the newest values of every part. */
        if (s % 3 == 2 && CHECK_OK(hpl_array_read(ctx, g[(s + 1) % 2], got, bytes)))
            CHECK(memcmp(got, ref[(s + 1) % 2], bytes) == 0, "%dx%d life, step %d differs from the host", rows, cols,
                  s + 1);
    }
    if (CHECK_OK(hpl_array_read(ctx, g[steps % 2], got, bytes)))
        CHECK(memcmp(got, ref[steps % 2], bytes) == 0, "%dx%d life after %d steps differs from the host", rows, cols,
              steps);
    CHECK_OK(hpl_array_destroy(ctx, g[0]));
    CHECK_OK(hpl_array_destroy(ctx, g[1]));
    CHECK_OK(hpl_kernel_destroy(ctx, life));
    free(ref[0]);
    free(ref[1]);
    free(got);
}

int main(void)
{
    hpl_context *ctx = zero_copy_context();
    hpl_kernel k = th_kernel(ctx, hash_src);
    test_read_right_after(ctx, k);
    test_destroy_right_after(ctx, k);
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    test_stencil(ctx, 64, 48, 30);
    test_stencil(ctx, 3, 40, 7); /* fewer rows than halos: every part is mostly halo */
    return th_finish(ctx);
}
