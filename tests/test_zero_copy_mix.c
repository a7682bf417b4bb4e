/* Data handed between a zero-copy device and separate-memory devices of one
 * context, "cpu+zc,cpu:2" (device 0 works on the host's copy, devices 1 and
 * 2 have their own memories), by single-device evals only:
 *   1. one array incremented in place on devices 0, 1, 2, 0, 2, 1, then read
 *      on the host (device 0 must fetch what device 2 wrote, device 1 what
 *      device 0 wrote);
 *   2. y = f(x) on device 0 with x last written on device 1, and the other
 *      way round;
 *   3. disjoint halves of one array written by device 0 and device 1, then
 *      read whole on the host and on device 2.
 * Every step is checked value by value. (Multi-device evals on this mix:
 * test_differential_zero_copy_first and the *_zc samples.) */
#include "harness.h"
#include "test_util.h"

#include <stdio.h>

#define N 1024

static const char *affine_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; float a; float b; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = a * hpl_at(x, i) + b; }\n";

/* v[i] == a * i + b for i in [lo, hi) (first wrong index reported). */
static void expect(hpl_context *ctx, hpl_array v, int lo, int hi, float a, float b, const char *what)
{
    float got[N];
    if (!CHECK_OK(hpl_array_read(ctx, v, got, (size_t)(hi - lo) * sizeof(float))))
        return;
    int bad = 0, first = -1;
    for (int i = lo; i < hi; i++)
        if (got[i - lo] != a * (float)i + b && bad++ == 0)
            first = i;
    CHECK(bad == 0, "%s: %d of %d wrong, first [%d] = %g want %g", what, bad, hi - lo, first,
          first >= 0 ? got[first - lo] : 0.0f, a * (float)first + b);
}

static void ramp(hpl_context *ctx, hpl_array v)
{
    float host[N];
    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    CHECK_OK(hpl_array_write(ctx, v, host, sizeof host));
}

static void in_place_chain(hpl_context *ctx, hpl_kernel inc)
{
    hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    ramp(ctx, x);
    static const int order[] = {0, 1, 2, 0, 2, 1};
    for (int i = 0; i < 6; i++) {
        hpl_launch l = {.device = order[i]};
        CHECK_OK(hpl_eval(ctx, inc, &l, HPL_ARGS(hpl_arr(x), hpl_f32(1.0f))));
    }
    expect(ctx, x, 0, N, 1.0f, 6.0f, "x after increments on devices 0, 1, 2, 0, 2, 1");
    CHECK_OK(hpl_array_destroy(ctx, x));
}

static void across(hpl_context *ctx, hpl_kernel inc, hpl_kernel affine, int writer, int reader)
{
    char what[96];
    hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0), y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    ramp(ctx, x);
    hpl_launch w = {.device = writer}, r = {.device = reader};
    CHECK_OK(hpl_eval(ctx, inc, &w, HPL_ARGS(hpl_arr(x), hpl_f32(3.0f))));
    CHECK_OK(hpl_eval(ctx, affine, &r, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32(2.0f), hpl_f32(1.0f))));
    snprintf(what, sizeof what, "y = 2x + 1 on device %d, x written on device %d", reader, writer);
    expect(ctx, y, 0, N, 2.0f, 7.0f, what);
    snprintf(what, sizeof what, "x written on device %d, read by device %d", writer, reader);
    expect(ctx, x, 0, N, 1.0f, 3.0f, what);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
}

static void halves(hpl_context *ctx, hpl_kernel inc, hpl_kernel affine)
{
    hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0), y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    ramp(ctx, x);
    hpl_array lo, hi;
    CHECK_OK(hpl_subarray(ctx, x, HPL_RANGES({0, N / 2 - 1}), &lo));
    CHECK_OK(hpl_subarray(ctx, x, HPL_RANGES({N / 2, N - 1}), &hi));
    hpl_launch d0 = {.device = 0}, d1 = {.device = 1}, d2 = {.device = 2};
    CHECK_OK(hpl_eval(ctx, inc, &d0, HPL_ARGS(hpl_arr(lo), hpl_f32(5.0f))));
    CHECK_OK(hpl_eval(ctx, inc, &d1, HPL_ARGS(hpl_arr(hi), hpl_f32(5.0f))));
    expect(ctx, x, 0, N, 1.0f, 5.0f, "x, its halves written on devices 0 and 1, read on the host");
    CHECK_OK(hpl_eval(ctx, inc, &d1, HPL_ARGS(hpl_arr(lo), hpl_f32(1.0f))));
    CHECK_OK(hpl_eval(ctx, inc, &d0, HPL_ARGS(hpl_arr(hi), hpl_f32(1.0f))));
    CHECK_OK(hpl_eval(ctx, affine, &d2, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32(1.0f), hpl_f32(0.0f))));
    expect(ctx, y, 0, N, 1.0f, 6.0f, "y = x on device 2, the halves of x written on devices 1 and 0");
    expect(ctx, lo, 0, N / 2, 1.0f, 6.0f, "the low half");
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
}

int main(void)
{
    hpl_context_desc desc = {.devices = "cpu+zc,cpu:2"};
    th_prepare_desc(&desc);
    hpl_context *ctx = NULL;
    if (!CHECK_OK(hpl_context_create(&desc, &ctx)))
        return th_finish(NULL);
    hpl_device_info info;
    for (int d = 0; d < 3; d++)
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            CHECK(info.zero_copy == (d == 0), "device %d zero_copy %d", d, info.zero_copy);
    hpl_kernel inc = th_kernel(ctx, inc1_src()), affine = th_kernel(ctx, affine_src);
    across(ctx, inc, affine, 1, 0);
    across(ctx, inc, affine, 0, 1);
    across(ctx, inc, affine, 2, 0);
    halves(ctx, inc, affine);
    in_place_chain(ctx, inc);
    return th_finish(ctx);
}
