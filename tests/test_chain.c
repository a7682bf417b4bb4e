/* Chains of 100 dependent evals with no host access in between, then one
 * read, against the same loop on the host:
 *   - in place:    x = x * 1.01 + s_k        (float, one array, a scalar per step)
 *   - ping-pong:   y = f(x), x = f(y), ...   (two arrays alternating roles)
 *   - integer:     x = x * 3 + k             (uint, exact, order-sensitive)
 *     with a snapshot of x taken mid-chain and read 50 evals later. */
#include "harness.h"

#include <math.h>
#include <stdlib.h>

#define N 10007
#define STEPS 100

static const char *axpb_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(float, 1) x; float s; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 1.01 + s; }\n";

static const char *pingpong_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; };\n"
    "void main() { uint i = hpl_global_id.x; float v = hpl_at(x, i); hpl_at(y, i) = 0.5 * v + 1.0 / (1.0 + v * v); }\n";

static const char *int_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 3u + k; }\n";

static const char *combine_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; hpl_in(uint, 1) y; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) ^ (hpl_at(y, i) * 5u); }\n";

static bool close_f(float got, float want)
{
    return fabsf(got - want) <= 1e-4f * fmaxf(1.0f, fabsf(want));
}

int main(void)
{
    hpl_context *ctx = th_context("cpu");

    /* 1. In place with a scalar per step. */
    {
        hpl_kernel k = th_kernel(ctx, axpb_src);
        hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        float *ref = malloc(sizeof(float) * N);
        float *px = th_access(ctx, x, HPL_WRITE);
        if (px)
            for (int i = 0; i < N; i++)
                ref[i] = px[i] = (float)(i % 100) * 0.01f;
        for (int s = 0; s < STEPS; s++) {
            float sc = (float)s * 0.001f;
            CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_f32(sc))));
            for (int i = 0; i < N; i++)
                ref[i] = ref[i] * 1.01f + sc;
        }
        const float *r = th_access(ctx, x, HPL_READ);
        if (r) {
            int bad = 0, first = -1;
            for (int i = 0; i < N; i++)
                if (!close_f(r[i], ref[i]) && bad++ == 0)
                    first = i;
            CHECK(bad == 0, "in-place chain: %d wrong, first x[%d]=%.7g want %.7g", bad, first,
                  first >= 0 ? r[first] : 0.0, first >= 0 ? ref[first] : 0.0);
        }
        CHECK_OK(hpl_array_destroy(ctx, x));
        CHECK_OK(hpl_kernel_destroy(ctx, k));
        free(ref);
    }

    /* 2. Ping-pong between two arrays. */
    {
        hpl_kernel k = th_kernel(ctx, pingpong_src);
        hpl_array a = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        hpl_array b = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        float *ref = malloc(sizeof(float) * N);
        float *pa = th_access(ctx, a, HPL_WRITE);
        if (pa)
            for (int i = 0; i < N; i++)
                ref[i] = pa[i] = (float)i / N * 4.0f - 2.0f;
        for (int s = 0; s < STEPS; s++) {
            hpl_array from = s % 2 ? b : a, to = s % 2 ? a : b;
            CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(from), hpl_arr(to))));
            for (int i = 0; i < N; i++)
                ref[i] = 0.5f * ref[i] + 1.0f / (1.0f + ref[i] * ref[i]);
        }
        /* STEPS even: the last eval wrote a. */
        const float *r = th_access(ctx, a, HPL_READ);
        if (r) {
            int bad = 0, first = -1;
            for (int i = 0; i < N; i++)
                if (!close_f(r[i], ref[i]) && bad++ == 0)
                    first = i;
            CHECK(bad == 0, "ping-pong chain: %d wrong, first a[%d]=%.7g want %.7g", bad, first,
                  first >= 0 ? r[first] : 0.0, first >= 0 ? ref[first] : 0.0);
        }
        CHECK_OK(hpl_array_destroy(ctx, a));
        CHECK_OK(hpl_array_destroy(ctx, b));
        CHECK_OK(hpl_kernel_destroy(ctx, k));
        free(ref);
    }

    /* 3. Exact integer chain. Mid-chain (after step 49) y ^= x*5 snapshots x
     *    into y (library-owned y starts zero); at the end x ^= y*5 reads that
     *    snapshot, 50 evals after it was written. */
    {
        hpl_kernel k = th_kernel(ctx, int_src);
        hpl_kernel comb = th_kernel(ctx, combine_src);
        hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
        hpl_array y = th_array(ctx, HPL_UINT32, N, 0, 0);
        uint32_t *ref = malloc(sizeof(uint32_t) * N), *refy = malloc(sizeof(uint32_t) * N);
        uint32_t *px = th_access(ctx, x, HPL_WRITE);
        if (px)
            for (int i = 0; i < N; i++)
                ref[i] = px[i] = (uint32_t)i * 2654435761u;
        for (uint32_t s = 0; s < STEPS; s++) {
            CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_u32(s))));
            for (int i = 0; i < N; i++)
                ref[i] = ref[i] * 3u + s;
            if (s == 49) {
                CHECK_OK(hpl_eval(ctx, comb, NULL, HPL_ARGS(hpl_arr(y), hpl_arr(x))));
                for (int i = 0; i < N; i++)
                    refy[i] = 0u ^ (ref[i] * 5u);
            }
        }
        CHECK_OK(hpl_eval(ctx, comb, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y))));
        for (int i = 0; i < N; i++)
            ref[i] ^= refy[i] * 5u;
        const uint32_t *r = th_access(ctx, x, HPL_READ);
        if (r) {
            int bad = 0, first = -1;
            for (int i = 0; i < N; i++)
                if (r[i] != ref[i] && bad++ == 0)
                    first = i;
            CHECK(bad == 0, "integer chain: %d wrong, first x[%d]=%u want %u", bad, first, first >= 0 ? r[first] : 0,
                  first >= 0 ? ref[first] : 0);
        }
        CHECK_OK(hpl_array_destroy(ctx, x));
        CHECK_OK(hpl_array_destroy(ctx, y));
        CHECK_OK(hpl_kernel_destroy(ctx, k));
        CHECK_OK(hpl_kernel_destroy(ctx, comb));
        free(ref);
        free(refy);
    }

    CHECK_OK(hpl_finish(ctx));
    return th_finish(ctx);
}
