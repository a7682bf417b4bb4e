/* Ordering hazards between asynchronous evals and the host, with a kernel
 * slow enough (a busy loop per element) that the host call right after the
 * eval finds it still running:
 *   - write after read: HPL_WRITE on an array a running kernel reads
 *     (user storage and library storage, which devices may read in place);
 *   - write after write: HPL_WRITE on an array a running kernel writes;
 *   - read after write: HPL_READ of a running kernel's output (user storage);
 *   - hpl_array_destroy of user storage a running kernel reads, then the
 *     storage is overwritten (destroy must wait: "user storage may be freed
 *     right after");
 *   - hpl_kernel_destroy while its eval runs;
 *   - the same array passed as an input and as an output of one eval;
 *   - the default domain when the first argument is a scalar;
 *   - write after a download (two devices): a device overwrites an array
 *     whose copy to the host (on its transfer lane) another device, maybe
 *     zero-copy, waits for.
 * Timing is only used to print how long the kernel ran (information). */
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 65536

/* y = 2x, after `iters` iterations of a loop the compiler cannot remove. */
static const char *slow_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; int iters; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x;\n"
    "    float v = hpl_at(x, i);\n"
    "    float acc = v;\n"
    "    for (int k = 0; k < iters; k++) acc = acc * 0.999 + 1.0;\n"
    "    hpl_at(y, i) = 2.0 * v + (acc == -12345.0 ? 1.0 : 0.0);\n"
    "}\n";

static const char *alias_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) a; hpl_out(float, 1) b; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = hpl_at(a, i) * 2.0 + 1.0; }\n";

static const char *scalar_first_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { float s; hpl_out(float, 1) y; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = s + float(i); }\n";

static int iters = 3000;

static void fill(float *p, float base)
{
    for (int i = 0; i < N; i++)
        p[i] = base + (float)(i % 1000);
}

static int count_bad(const float *y, float base)
{
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += y[i] != 2.0f * (base + (float)(i % 1000));
    return bad;
}

/* Write after read. */
static void war(hpl_context *ctx, hpl_kernel k, float *user, const char *what)
{
    hpl_array x;
    if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {N}, .host = user}, &x)))
        return;
    hpl_array y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    float *px = th_access(ctx, x, HPL_WRITE);
    if (px)
        fill(px, 1.0f);
    double t0 = th_now();
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_i32(iters))));
    double t_eval = th_now() - t0;
    px = th_access(ctx, x, HPL_WRITE); /* must wait for the kernel's reads */
    double t_access = th_now() - t0;
    if (px)
        fill(px, 500.0f);
    const float *py = th_access(ctx, y, HPL_READ);
    th_note("%s: eval returned after %.1f ms, HPL_WRITE after %.1f ms, kernel done after %.1f ms (information)", what,
            t_eval * 1e3, t_access * 1e3, (th_now() - t0) * 1e3);
    if (py) {
        int bad = count_bad(py, 1.0f);
        CHECK(bad == 0, "%s: %d elements of y saw the host's later write to x", what, bad);
    }
    /* And the next eval sees the new x. */
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_i32(1))));
    py = th_access(ctx, y, HPL_READ);
    if (py)
        CHECK(count_bad(py, 500.0f) == 0, "%s: the eval after the host write did not see it", what);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
}

/* Write after write, and read after write into user storage. */
static void waw_raw(hpl_context *ctx, hpl_kernel k)
{
    hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    float *ustore = aligned_alloc(4096, sizeof(float) * N);
    hpl_array y;
    if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {N}, .host = ustore}, &y)))
        return;
    float *px = th_access(ctx, x, HPL_WRITE);
    if (px)
        fill(px, 3.0f);
    /* WAW: the kernel writes y; the host overwrites all of y right away. */
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_i32(iters))));
    float *py = th_access(ctx, y, HPL_WRITE);
    if (py)
        for (int i = 0; i < N; i++)
            py[i] = -7.0f;
    const float *ry = th_access(ctx, y, HPL_READ);
    if (ry) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += ry[i] != -7.0f;
        CHECK(bad == 0, "write after write: %d elements of the host's write were overwritten by the kernel", bad);
    }
    /* RAW into user storage: the host reads the kernel's output. */
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_i32(iters))));
    ry = th_access(ctx, y, HPL_READ);
    if (ry) {
        CHECK(ry == ustore, "READ access of user storage returned another pointer");
        CHECK(count_bad(ry, 3.0f) == 0, "read after write: the host read y before the kernel finished");
    }
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
    free(ustore);
}

/* Destroying an array (user storage) and a kernel while their eval runs. */
static void destroy_in_flight(hpl_context *ctx)
{
    float *ustore = aligned_alloc(4096, sizeof(float) * N);
    fill(ustore, 11.0f);
    hpl_array x, y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {N}, .host = ustore}, &x)))
        return;
    hpl_kernel k = th_kernel(ctx, slow_src);
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_i32(iters))));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_array_destroy(ctx, x));
    /* The storage is the user's again: reuse it. */
    for (int i = 0; i < N; i++)
        ustore[i] = -1.0e9f;
    const float *py = th_access(ctx, y, HPL_READ);
    if (py) {
        int bad = count_bad(py, 11.0f);
        CHECK(bad == 0, "destroy in flight: %d elements of y read the user storage after hpl_array_destroy returned",
              bad);
    }
    CHECK_OK(hpl_array_destroy(ctx, y));
    free(ustore);
}

static void aliasing_and_domain(hpl_context *ctx)
{
    /* The same array as hpl_in and hpl_out: b[i] = a[i]*2+1 in place. */
    hpl_kernel k = th_kernel(ctx, alias_src);
    hpl_array a = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    float *pa = th_access(ctx, a, HPL_WRITE);
    if (pa)
        fill(pa, 0.5f);
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(a), hpl_arr(a))));
    const float *ra = th_access(ctx, a, HPL_READ);
    if (ra) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += ra[i] != (0.5f + (float)(i % 1000)) * 2.0f + 1.0f;
        CHECK(bad == 0, "one array as input and output of one eval: %d wrong", bad);
    }
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_kernel_destroy(ctx, k));

    /* The default domain is the first ARRAY argument's, after a scalar. */
    hpl_kernel ks = th_kernel(ctx, scalar_first_src);
    hpl_array y = th_array(ctx, HPL_FLOAT32, 1001, 0, 0);
    CHECK_OK(hpl_eval(ctx, ks, NULL, HPL_ARGS(hpl_f32(0.5f), hpl_arr(y))));
    const float *py = th_access(ctx, y, HPL_READ);
    if (py) {
        int bad = 0;
        for (int i = 0; i < 1001; i++)
            bad += py[i] != 0.5f + (float)i;
        CHECK(bad == 0, "default domain after a scalar argument: %d wrong (y[1000] = %g)", bad, py[1000]);
    }
    CHECK_OK(hpl_array_destroy(ctx, y));
    CHECK_OK(hpl_kernel_destroy(ctx, ks));
}

/* Write after a download. Device P (one with memory of its own) writes x;
 * device R reads it; P overwrites x. x goes from P to the host (above
 * HPL__LANE_MIN_BYTES: on P's transfer lane where it has one;
 * HPLVK_TRANSFER_LANE=shared takes it anyway), then on to R, or R reads the
 * host's copy in place when R is zero-copy (TH_ZERO_COPY_FIRST=1, the CPU
 * beside a GPU). The overwrite, a short kernel, finds P's compute queue
 * idle and runs at once: it must wait for the download to have read x.
 * Unordered, it overtakes the copy and R sees its values: on a GPU x is
 * 256 MiB, a download of milliseconds, longer than the host takes to get
 * from the first eval to the third even under validation. */
static void war_after_download(void)
{
    hpl_context *ctx = th_context("cpu:2");
    hpl_device_info info[2];
    if (!CHECK_OK(hpl_device_get_info(ctx, 0, &info[0])) || !CHECK_OK(hpl_device_get_info(ctx, 1, &info[1])))
        return;
    int p = info[0].zero_copy ? 1 : 0, r = 1 - p;
    CHECK(!info[p].zero_copy, "device %d has memory of its own", p);
    /* Lavapipe runs one queue in order anyway: 8 MiB there. */
    const int M = info[p].type & HPL_DEVICE_CPU ? 2 << 20 : 64 << 20;
    hpl_kernel k = th_kernel(ctx, slow_src);
    hpl_array a = th_array(ctx, HPL_FLOAT32, M, 0, 0), b = th_array(ctx, HPL_FLOAT32, M, 0, 0);
    hpl_array x = th_array(ctx, HPL_FLOAT32, M, 0, 0), y = th_array(ctx, HPL_FLOAT32, M, 0, 0);
    float *pb = th_access(ctx, b, HPL_WRITE);
    for (int i = 0; pb && i < M; i++)
        pb[i] = 1000.0f + (float)(i % 1000);
    float *pa = th_access(ctx, a, HPL_WRITE);
    for (int i = 0; pa && i < M; i++)
        pa[i] = (float)(i % 1000);
    const hpl_launch on_p = {.device = p}, on_r = {.device = r};
    for (int round = 0; round < 3; round++) {
        CHECK_OK(hpl_eval(ctx, k, &on_p, HPL_ARGS(hpl_arr(a), hpl_arr(x), hpl_i32(1))));
        CHECK_OK(hpl_eval(ctx, k, &on_r, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_i32(1))));
        CHECK_OK(hpl_eval(ctx, k, &on_p, HPL_ARGS(hpl_arr(b), hpl_arr(x), hpl_i32(1))));
        const float *py = th_access(ctx, y, HPL_READ);
        int bad = 0;
        for (int i = 0; py && i < M; i++)
            bad += py[i] != 4.0f * (float)(i % 1000);
        CHECK(py && bad == 0, "write after download, round %d: %d elements of y saw device %d's later write to x",
              round, bad, p);
        const float *px = th_access(ctx, x, HPL_READ);
        bad = 0;
        for (int i = 0; px && i < M; i++)
            bad += px[i] != 2.0f * (1000.0f + (float)(i % 1000));
        CHECK(px && bad == 0, "write after download, round %d: %d elements of x are not device %d's last write", round,
              bad, p);
    }
    hpl_stats st;
    if (CHECK_OK(hpl_stats_get(ctx, &st)))
        th_note("write after download (device %d%s -> device %d%s): %" PRIu64 " bytes to the host, %" PRIu64
                " transfer-queue submissions",
                p, info[p].dedicated_transfer_queue ? ", a transfer queue" : "", r, info[r].zero_copy ? ", zero-copy" : "",
                st.device[p].to_host_bytes, st.device[p].transfer_submissions);
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_finish(ctx));
    hpl_context_destroy(ctx);
}

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    hpl_kernel k = th_kernel(ctx, slow_src);
    /* Warm up (pipeline creation) so that the timed evals are the kernel. */
    {
        hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0), y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_i32(1))));
        CHECK_OK(hpl_finish(ctx));
        CHECK_OK(hpl_array_destroy(ctx, x));
        CHECK_OK(hpl_array_destroy(ctx, y));
    }
    float *aligned = aligned_alloc(4096, sizeof(float) * N);
    war(ctx, k, aligned, "write after read, 4096-aligned user storage");
    free(aligned);
    float *raw = malloc(sizeof(float) * (N + 1));
    war(ctx, k, raw + 1, "write after read, unaligned user storage");
    free(raw);
    war(ctx, k, NULL, "write after read, library storage");
    waw_raw(ctx, k);
    destroy_in_flight(ctx);
    aliasing_and_domain(ctx);
    war_after_download();
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_finish(ctx));
    return th_finish(ctx);
}
