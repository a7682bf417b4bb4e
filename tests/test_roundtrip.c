/* Host <-> device round trips: host write -> eval -> host read, repeated;
 * HPL_WRITE invalidating device copies; HPL_READ_WRITE; hpl_array_read and
 * hpl_array_write; user storage (page-aligned and unaligned); library-owned
 * arrays start zero; hpl_array_fill of float, double, int32, int64 and
 * uint64; hpl_array_get_info; hpl_array_wait; hpl_finish. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4099

static const char *scale_src = /* y = 2x + r */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; float r; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = 2.0 * hpl_at(x, i) + r; }\n";

static const char *copy_i64_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(int64_t, 1) x; hpl_out(int64_t, 1) y; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i) + int64_t(i); }\n";

static const char *copy_f64_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(double, 1) x; hpl_out(double, 1) y; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i) * 2.0; }\n";

static int count_bad_f(const float *got, const float *want, int n, int *first)
{
    int bad = 0;
    *first = 0;
    for (int i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ == 0)
            *first = i;
    return bad;
}

static void expect_scaled(hpl_context *ctx, hpl_array y, const float *x, float r, const char *what)
{
    const float *p = th_access(ctx, y, HPL_READ);
    if (!p)
        return;
    int bad = 0, first = -1;
    for (int i = 0; i < N; i++)
        if (p[i] != 2.0f * x[i] + r && bad++ == 0)
            first = i;
    CHECK(bad == 0, "%s: %d wrong, first y[%d]=%g want %g", what, bad, first, first >= 0 ? p[first] : 0.0,
          first >= 0 ? 2.0f * x[first] + r : 0.0);
}

/* y = 2x + r over a library-owned y and an x with user storage `host`. */
static void user_storage(hpl_context *ctx, hpl_kernel k, float *host, const char *what)
{
    for (int i = 0; i < N; i++)
        host[i] = (float)(i % 1000) - 17.0f;
    hpl_array x;
    if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {N}, .host = host}, &x)))
        return;
    float ref[N];
    memcpy(ref, host, sizeof ref);
    hpl_array y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    /* The initial contents of user storage are the array's contents. */
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32(1.0f))));
    expect_scaled(ctx, y, ref, 1.0f, what);
    /* Host access goes through the user's storage. */
    float *p = th_access(ctx, x, HPL_READ_WRITE);
    CHECK(p == host, "%s: access returned %p, not the user storage %p", what, (void *)p, (void *)host);
    if (p)
        for (int i = 0; i < N; i++)
            ref[i] = p[i] = p[i] * 0.5f + 3.0f;
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32(-2.0f))));
    expect_scaled(ctx, y, ref, -2.0f, what);
    /* A kernel writing into user storage, read back through it. */
    hpl_kernel inc = th_kernel(ctx, inc1_src());
    CHECK_OK(hpl_eval(ctx, inc, NULL, HPL_ARGS(hpl_arr(x), hpl_f32(0.25f))));
    const float *q = th_access(ctx, x, HPL_READ);
    if (q) {
        CHECK(q == host, "%s: READ access returned %p, not the user storage %p", what, (const void *)q,
              (void *)host);
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += q[i] != ref[i] + 0.25f;
        CHECK(bad == 0, "%s: %d elements wrong after a kernel wrote user storage", what, bad);
    }
    CHECK_OK(hpl_kernel_destroy(ctx, inc));
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
}

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    hpl_kernel k = th_kernel(ctx, scale_src);
    hpl_kernel inc = th_kernel(ctx, inc1_src());

    /* Library-owned arrays start zero, on the host and on a device. */
    {
        hpl_array z = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        hpl_array y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        const float *p = th_access(ctx, z, HPL_READ);
        if (p) {
            int nz = 0;
            for (int i = 0; i < N; i++)
                nz += p[i] != 0.0f;
            CHECK(nz == 0, "new library-owned array: %d non-zero elements on the host", nz);
        }
        hpl_array z2 = th_array(ctx, HPL_FLOAT32, N, 0, 0); /* never touched on the host */
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(z2), hpl_arr(y), hpl_f32(5.0f))));
        static float zeros[N];
        expect_scaled(ctx, y, zeros, 5.0f, "kernel reading a new array");
        hpl_array big = th_array(ctx, HPL_INT64, 3, 5, 7);
        const int64_t *pb = th_access(ctx, big, HPL_READ);
        if (pb) {
            int nz = 0;
            for (int i = 0; i < 3 * 5 * 7; i++)
                nz += pb[i] != 0;
            CHECK(nz == 0, "new 3-D int64 array: %d non-zero elements", nz);
        }
        CHECK_OK(hpl_array_destroy(ctx, z));
        CHECK_OK(hpl_array_destroy(ctx, z2));
        CHECK_OK(hpl_array_destroy(ctx, y));
        CHECK_OK(hpl_array_destroy(ctx, big));
    }

    /* hpl_array_get_info. */
    {
        hpl_array a;
        if (CHECK_OK(hpl_array_create(
                ctx, &(hpl_array_desc){.type = HPL_FLOAT64, .dims = {3, 5}, .name = "my_matrix"}, &a))) {
            hpl_array_info info;
            memset(&info, 0xab, sizeof info);
            if (CHECK_OK(hpl_array_get_info(ctx, a, &info))) {
                CHECK(info.type == HPL_FLOAT64, "type %d", info.type);
                CHECK(info.ndims == 2, "ndims %d", info.ndims);
                CHECK(info.dims[0] == 3 && info.dims[1] == 5 && info.dims[2] == 1, "dims %llu,%llu,%llu",
                      (unsigned long long)info.dims[0], (unsigned long long)info.dims[1],
                      (unsigned long long)info.dims[2]);
                CHECK(info.count == 15 && info.bytes == 15 * sizeof(double), "count %llu bytes %llu",
                      (unsigned long long)info.count, (unsigned long long)info.bytes);
                CHECK(info.name && strcmp(info.name, "my_matrix") == 0, "name \"%s\"", info.name ? info.name : "(null)");
            }
            CHECK_OK(hpl_array_destroy(ctx, a));
        }
        hpl_array b = th_array(ctx, HPL_UINT32, 9, 0, 0);
        hpl_array_info info;
        if (CHECK_OK(hpl_array_get_info(ctx, b, &info))) {
            CHECK(info.ndims == 1 && info.dims[1] == 1 && info.dims[2] == 1 && info.count == 9 && info.bytes == 36,
                  "1-D uint array info: ndims %d dims %llu,%llu,%llu count %llu bytes %llu", info.ndims,
                  (unsigned long long)info.dims[0], (unsigned long long)info.dims[1],
                  (unsigned long long)info.dims[2], (unsigned long long)info.count, (unsigned long long)info.bytes);
            CHECK(info.name && info.name[0], "an unnamed array must get a default name (array#<id>)");
        }
        CHECK_OK(hpl_array_destroy(ctx, b));
    }

    /* Host write -> eval -> host read, 6 rounds; every round's HPL_WRITE must
     * invalidate the device copy of x that the previous eval used. */
    {
        hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        hpl_array y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        static float ref[N];
        for (int round = 0; round < 6; round++) {
            float *p = th_access(ctx, x, HPL_WRITE);
            if (p)
                for (int i = 0; i < N; i++)
                    ref[i] = p[i] = (float)((i * (round + 3)) % 517) - (float)round;
            CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32((float)round))));
            char what[64];
            snprintf(what, sizeof what, "round %d", round);
            expect_scaled(ctx, y, ref, (float)round, what);
        }
        /* A device-written x overwritten on the host: the device copy is stale. */
        CHECK_OK(hpl_eval(ctx, inc, NULL, HPL_ARGS(hpl_arr(x), hpl_f32(100.0f))));
        float *p = th_access(ctx, x, HPL_WRITE);
        if (p)
            for (int i = 0; i < N; i++)
                ref[i] = p[i] = (float)(N - i);
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32(0.0f))));
        expect_scaled(ctx, y, ref, 0.0f, "HPL_WRITE after a device wrote the array");
        CHECK_OK(hpl_array_destroy(ctx, x));
        CHECK_OK(hpl_array_destroy(ctx, y));
    }

    /* HPL_READ_WRITE: sees the device's data, and its changes reach the device. */
    {
        hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        static float ref[N];
        for (int i = 0; i < N; i++)
            ref[i] = (float)i;
        CHECK_OK(hpl_array_write(ctx, x, ref, sizeof ref));
        CHECK_OK(hpl_eval(ctx, inc, NULL, HPL_ARGS(hpl_arr(x), hpl_f32(1.0f))));
        float *p = th_access(ctx, x, HPL_READ_WRITE);
        if (p) {
            int first, bad;
            for (int i = 0; i < N; i++)
                ref[i] += 1.0f;
            bad = count_bad_f(p, ref, N, &first);
            CHECK(bad == 0, "HPL_READ_WRITE after an eval: %d wrong, first x[%d]=%g want %g", bad, first, p[first],
                  ref[first]);
            for (int i = 0; i < N; i++)
                ref[i] = p[i] = p[i] * 3.0f;
        }
        CHECK_OK(hpl_eval(ctx, inc, NULL, HPL_ARGS(hpl_arr(x), hpl_f32(-0.5f))));
        static float got[N];
        if (CHECK_OK(hpl_array_read(ctx, x, got, sizeof got))) {
            int first, bad;
            for (int i = 0; i < N; i++)
                ref[i] -= 0.5f;
            bad = count_bad_f(got, ref, N, &first);
            CHECK(bad == 0, "eval after HPL_READ_WRITE: %d wrong, first x[%d]=%g want %g", bad, first, got[first],
                  ref[first]);
        }
        /* Two READ accesses in a row and a read with no eval in between. */
        const float *p1 = th_access(ctx, x, HPL_READ);
        if (p1)
            CHECK(p1[N - 1] == ref[N - 1], "second READ access: x[%d]=%g want %g", N - 1, p1[N - 1], ref[N - 1]);
        /* hpl_array_write then hpl_array_read with no eval: the same bytes. */
        for (int i = 0; i < N; i++)
            ref[i] = (float)i * -0.75f;
        CHECK_OK(hpl_array_write(ctx, x, ref, sizeof ref));
        if (CHECK_OK(hpl_array_read(ctx, x, got, sizeof got)))
            CHECK(memcmp(got, ref, sizeof ref) == 0, "write then read without eval differs");
        CHECK_OK(hpl_array_wait(ctx, x));
        CHECK_OK(hpl_array_destroy(ctx, x));
    }

    /* User storage: page-aligned and deliberately unaligned. */
    {
        size_t bytes = ((sizeof(float) * N + 4095) / 4096) * 4096;
        float *aligned = aligned_alloc(4096, bytes);
        user_storage(ctx, k, aligned, "user storage, 4096-aligned");
        free(aligned);
        float *raw = malloc(sizeof(float) * (N + 1));
        user_storage(ctx, k, raw + 1, "user storage, unaligned (malloc + 4 bytes)");
        free(raw);
        /* An odd offset that is not even element-aligned for double would be a
         * user error; 4-byte offsets for float are legal. */
    }

    /* hpl_array_fill, read back on the host and used by a kernel. */
    {
        hpl_array f = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        float fv = -1.375f;
        CHECK_OK(hpl_array_fill(ctx, f, &fv, 0));
        const float *pf = th_access(ctx, f, HPL_READ);
        if (pf) {
            int bad = 0;
            for (int i = 0; i < N; i++)
                bad += pf[i] != fv;
            CHECK(bad == 0, "fill float: %d elements differ from %g (first %g)", bad, fv, pf[0]);
        }
        /* Fill after a host write: the fill wins. */
        float *pw = th_access(ctx, f, HPL_WRITE);
        if (pw)
            for (int i = 0; i < N; i++)
                pw[i] = 9.0f;
        fv = 2.5f;
        CHECK_OK(hpl_array_fill(ctx, f, &fv, 0));
        hpl_array y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(f), hpl_arr(y), hpl_f32(1.0f))));
        static float fref[N];
        for (int i = 0; i < N; i++)
            fref[i] = fv;
        expect_scaled(ctx, y, fref, 1.0f, "kernel reading a filled array");
        pf = th_access(ctx, f, HPL_READ);
        if (pf)
            CHECK(pf[0] == fv && pf[N - 1] == fv, "fill after a host write: %g..%g, want %g", pf[0], pf[N - 1], fv);
        CHECK_OK(hpl_array_destroy(ctx, f));
        CHECK_OK(hpl_array_destroy(ctx, y));

        /* double: two different 32-bit halves. Odd count on purpose. */
        hpl_array d = th_array(ctx, HPL_FLOAT64, 1001, 0, 0);
        double dv = 1.0 / 3.0;
        CHECK_OK(hpl_array_fill(ctx, d, &dv, 0));
        const double *pd = th_access(ctx, d, HPL_READ);
        if (pd) {
            int bad = 0;
            for (int i = 0; i < 1001; i++)
                bad += memcmp(&pd[i], &dv, sizeof dv) != 0;
            CHECK(bad == 0, "fill double: %d elements differ from %.17g (first %.17g)", bad, dv, pd[0]);
        }
        hpl_kernel kd = th_kernel(ctx, copy_f64_src);
        hpl_array d2 = th_array(ctx, HPL_FLOAT64, 1001, 0, 0);
        dv = -2.0e300;
        CHECK_OK(hpl_array_fill(ctx, d, &dv, 0));
        CHECK_OK(hpl_eval(ctx, kd, NULL, HPL_ARGS(hpl_arr(d), hpl_arr(d2))));
        pd = th_access(ctx, d2, HPL_READ);
        if (pd)
            CHECK(pd[0] == 2 * dv && pd[1000] == 2 * dv, "kernel on a double fill: %g, %g want %g", pd[0], pd[1000],
                  2 * dv);
        CHECK_OK(hpl_kernel_destroy(ctx, kd));
        CHECK_OK(hpl_array_destroy(ctx, d));
        CHECK_OK(hpl_array_destroy(ctx, d2));

        /* int64 and uint64. */
        hpl_array l = th_array(ctx, HPL_INT64, 7, 11, 0);
        int64_t lv = (int64_t)0x0123456789abcdefLL;
        CHECK_OK(hpl_array_fill(ctx, l, &lv, 0));
        const int64_t *pl = th_access(ctx, l, HPL_READ);
        if (pl) {
            int bad = 0;
            for (int i = 0; i < 77; i++)
                bad += pl[i] != lv;
            CHECK(bad == 0, "fill int64: %d elements differ from %llx (first %llx)", bad, (unsigned long long)lv,
                  (unsigned long long)pl[0]);
        }
        hpl_kernel kl = th_kernel(ctx, copy_i64_src);
        hpl_array l1 = th_array(ctx, HPL_INT64, 77, 0, 0), l2 = th_array(ctx, HPL_INT64, 77, 0, 0);
        lv = -5000000000LL;
        CHECK_OK(hpl_array_fill(ctx, l1, &lv, 0));
        CHECK_OK(hpl_eval(ctx, kl, NULL, HPL_ARGS(hpl_arr(l1), hpl_arr(l2))));
        pl = th_access(ctx, l2, HPL_READ);
        if (pl) {
            int bad = 0;
            for (int i = 0; i < 77; i++)
                bad += pl[i] != lv + i;
            CHECK(bad == 0, "kernel on an int64 fill: %d wrong (first %lld want %lld)", bad, (long long)pl[0],
                  (long long)lv);
        }
        CHECK_OK(hpl_kernel_destroy(ctx, kl));
        CHECK_OK(hpl_array_destroy(ctx, l));
        CHECK_OK(hpl_array_destroy(ctx, l1));
        CHECK_OK(hpl_array_destroy(ctx, l2));

        hpl_array u = th_array(ctx, HPL_UINT64, 33, 0, 0);
        uint64_t uv = 0xfedcba9876543210ULL;
        CHECK_OK(hpl_array_fill(ctx, u, &uv, 0));
        const uint64_t *pu = th_access(ctx, u, HPL_READ);
        if (pu) {
            int bad = 0;
            for (int i = 0; i < 33; i++)
                bad += pu[i] != uv;
            CHECK(bad == 0, "fill uint64: %d elements differ", bad);
        }
        CHECK_OK(hpl_array_destroy(ctx, u));

        hpl_array iarr = th_array(ctx, HPL_INT32, 5, 3, 2);
        int32_t iv = -123456;
        CHECK_OK(hpl_array_fill(ctx, iarr, &iv, 0));
        CHECK_OK(hpl_array_wait(ctx, iarr));
        const int32_t *pi = th_access(ctx, iarr, HPL_READ);
        if (pi) {
            int bad = 0;
            for (int i = 0; i < 30; i++)
                bad += pi[i] != iv;
            CHECK(bad == 0, "fill int32 (3-D): %d elements differ", bad);
        }
        CHECK_OK(hpl_array_destroy(ctx, iarr));
    }

    /* hpl_array_wait after a pending eval, then hpl_finish. */
    {
        hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        CHECK_OK(hpl_eval(ctx, inc, NULL, HPL_ARGS(hpl_arr(x), hpl_f32(4.0f))));
        CHECK_OK(hpl_array_wait(ctx, x));
        CHECK_OK(hpl_eval(ctx, inc, NULL, HPL_ARGS(hpl_arr(x), hpl_f32(4.0f))));
        CHECK_OK(hpl_finish(ctx));
        CHECK_OK(hpl_finish(ctx));
        const float *p = th_access(ctx, x, HPL_READ);
        if (p)
            CHECK(p[0] == 8.0f && p[N - 1] == 8.0f, "after wait/finish: %g %g want 8", p[0], p[N - 1]);
        CHECK_OK(hpl_array_destroy(ctx, x));
    }

    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_kernel_destroy(ctx, inc));
    CHECK_OK(hpl_finish(ctx));
    return th_finish(ctx);
}
