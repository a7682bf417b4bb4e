/* Bounds checks (hplvk.h chapter 6c): a kernel that reads or writes an
 * element outside the part its subkernel was given makes no such access,
 * and the next call that waits for it fails with
 * HPL_ERROR_KERNEL_OUT_OF_BOUNDS naming the kernel, what it did, the
 * element, the array and the part. Kernels a porting user writes first:
 * a symmetric rank-k update with A split by rows (it reads row j of A too),
 * a covariance that also writes the transposed element, and a Game of Life
 * written for part-local indexing (hpl_at(a, 0) as the part's first row).
 * Memory around the arrays is never touched: a canary array keeps its
 * values, and under ASan a stray write into the host heap would abort.
 * Kernels that keep to their parts are never reported. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64
#define K 16

/* C = A A^T, one invocation per element of C. */
static const char *syrk_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_in(float, 2) a; hpl_out(float, 2) c; int k; };\n"
                              "void main() {\n"
                              "    uint i = hpl_global_id.x, j = hpl_global_id.y;\n"
                              "    float s = 0.0;\n"
                              "    for (int l = 0; l < k; l++) s += hpl_at2(a, i, l) * hpl_at2(a, j, l);\n"
                              "    hpl_at2(c, i, j) = s;\n"
                              "}\n";

/* Covariance of the columns of A, written to both triangles. */
static const char *cov_src = "#include <hplvk.glsl>\n"
                             "hpl_args { hpl_in(float, 2) a; hpl_out(float, 2) c; int k; };\n"
                             "void main() {\n"
                             "    uint i = hpl_global_id.x, j = hpl_global_id.y;\n"
                             "    if (j < i) return;\n"
                             "    float s = 0.0;\n"
                             "    for (int l = 0; l < k; l++) s += hpl_at2(a, l, i) * hpl_at2(a, l, j);\n"
                             "    hpl_at2(c, i, j) = s;\n"
                             "    hpl_at2(c, j, i) = s;\n"
                             "}\n";

/* Game of Life as HPL wrote it: each part indexed from 0 (its first row,
 * halo included), out's row i + 1 for domain row i of the part. */
static const char *life_part_local_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(int, 2) in_; hpl_out(int, 2) out_; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x - hpl_subkernel_offset.x + 1u, j = hpl_global_id.y;\n"
    "    uint rows = in_.part_hi.x - in_.part_lo.x, cols = in_.dims.y;\n"
    "    int n = 0;\n"
    "    for (int di = -1; di <= 1; di++) for (int dj = -1; dj <= 1; dj++) {\n"
    "        uint r = uint(int(i) + di), c = uint(int(j) + dj);\n"
    "        if ((di != 0 || dj != 0) && r < rows && c < cols) n += hpl_at2(in_, r, c);\n"
    "    }\n"
    "    int alive = hpl_at2(in_, i, j);\n"
    "    hpl_at2(out_, i, j) = (n == 3 || (n == 2 && alive == 1)) ? 1 : 0;\n"
    "}\n";

/* One index past the end of a 1-D array, on one device. */
static const char *past_end_src = "#include <hplvk.glsl>\n"
                                  "hpl_args { hpl_inout(int, 1) x; };\n"
                                  "void main() {\n"
                                  "    uint i = hpl_global_id.x;\n"
                                  "    hpl_at(x, i) = int(i);\n"
                                  "    if (i == 0u) hpl_at(x, x.dims + 1000u) = -7;\n"
                                  "}\n";

static float a_value(int i, int l)
{
    return (float)((i * 7 + l * 3) % 11) - 5.0f;
}

static hpl_array named_array(hpl_context *ctx, const char *name, hpl_type type, uint64_t d0, uint64_t d1)
{
    hpl_array a = {0};
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = type, .dims = {d0, d1}, .name = name}, &a));
    return a;
}

static hpl_launch all_devices(hpl_context *ctx)
{
    hpl_launch l = {.device_count = hpl_device_count(ctx)};
    for (int d = 0; d < l.device_count; d++)
        l.devices[d] = d;
    return l;
}

/* The input, N x K (K x N transposed): element (i, l) is a_value(i, l). */
static hpl_array input(hpl_context *ctx, const char *name, bool transposed)
{
    hpl_array a = named_array(ctx, name, HPL_FLOAT32, transposed ? K : N, transposed ? N : K);
    float *p = th_access(ctx, a, HPL_WRITE);
    for (int i = 0; p && i < N; i++)
        for (int l = 0; l < K; l++)
            p[transposed ? l * N + i : i * K + l] = a_value(i, l);
    return a;
}

/* An N x N domain over every device. */
static hpl_launch n_by_n(hpl_context *ctx)
{
    hpl_launch l = all_devices(ctx);
    l.global[0] = N;
    l.global[1] = N;
    return l;
}

/* A canary array made beside the ones the kernel strays from: it must come
 * back as written. */
static hpl_array canary_make(hpl_context *ctx)
{
    hpl_array c = named_array(ctx, "canary", HPL_INT32, 4096, 0);
    int32_t *p = th_access(ctx, c, HPL_WRITE);
    for (int i = 0; p && i < 4096; i++)
        p[i] = i ^ 0x5a5a;
    return c;
}

static void canary_check(hpl_context *ctx, hpl_array c, const char *what)
{
    int32_t *p = th_access(ctx, c, HPL_READ);
    int bad = 0;
    for (int i = 0; p && i < 4096; i++)
        bad += p[i] != (i ^ 0x5a5a);
    CHECK(p && bad == 0, "%s: %d elements of an array the kernel never had changed", what, bad);
}

static void check_report(int rc, const char *what, const char *kernel, const char *did, const char *array)
{
    const char *msg = hpl_last_error();
    char k[64], a[64];
    snprintf(k, sizeof k, "kernel '%s'", kernel);
    snprintf(a, sizeof a, "array '%s'", array);
    CHECK(rc == HPL_ERROR_KERNEL_OUT_OF_BOUNDS, "%s: %d (%s), expected HPL_ERROR_KERNEL_OUT_OF_BOUNDS", what, rc,
          hpl_error_name(rc));
    CHECK(strstr(msg, k) && strstr(msg, did) && strstr(msg, a) && strstr(msg, "outside the part") &&
              strstr(msg, "replicate the argument"),
          "%s: the report names the kernel, the access, the array and what to do: %s", what, msg);
    th_note("%s: %s", what, msg);
    char last[1024];
    int logged = th_take_errors(last, sizeof last);
    CHECK(logged >= 1 && strstr(last, "outside the part"), "%s: %d error messages logged, the last: %s", what, logged,
          last);
}

static void test_syrk(const char *devices, bool split_a)
{
    hpl_context *ctx = th_context(devices);
    hpl_kernel k = th_kernel(ctx, syrk_src);
    hpl_array a = input(ctx, "A", false), c = named_array(ctx, "C", HPL_FLOAT32, N, N);
    hpl_array canary = canary_make(ctx);
    hpl_launch launch = n_by_n(ctx);
    CHECK_OK(hpl_eval(ctx, k, &launch,
                      HPL_ARGS(split_a ? hpl_part1(a, 0) : hpl_arr(a), hpl_part1(c, 0), hpl_i32(K))));
    int rc = hpl_finish(ctx);
    bool strays = split_a && launch.device_count > 1;
    char what[96];
    snprintf(what, sizeof what, "syrk on %s, A %s", devices, split_a ? "split by rows" : "replicated");
    if (strays) {
        check_report(rc, what, "kernel", "read element", "A");
        CHECK(strstr(hpl_last_error(), "argument 'a' bound to") != NULL, "%s: the argument is named: %s", what,
              hpl_last_error());
        hpl_stats s = th_stats(ctx);
        CHECK(s.total.stray_invocations > 0, "%s: no stray access counted", what);
    } else {
        CHECK(rc == HPL_OK, "%s: a kernel inside its parts failed: %s", what, hpl_last_error());
        float *pc = th_access(ctx, c, HPL_READ);
        int bad = 0;
        for (int i = 0; pc && i < N; i++)
            for (int j = 0; j < N; j++) {
                float s = 0;
                for (int l = 0; l < K; l++)
                    s += a_value(i, l) * a_value(j, l);
                bad += pc[i * N + j] != s;
            }
        CHECK(pc && bad == 0, "%s: %d elements of C wrong", what, bad);
    }
    canary_check(ctx, canary, what);
    /* Reported once: the context goes on, and the next wait is clean. */
    CHECK_OK(hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_arr(a), hpl_part1(c, 0), hpl_i32(K))));
    CHECK(hpl_finish(ctx) == HPL_OK, "%s: a clean eval after the report failed: %s", what, hpl_last_error());
    th_finish(ctx);
}

static void test_covariance(void)
{
    hpl_context *ctx = th_context("cpu:2");
    hpl_kernel k = th_kernel(ctx, cov_src);
    hpl_array a = input(ctx, "data", true), c = named_array(ctx, "cov", HPL_FLOAT32, N, N);
    hpl_array canary = canary_make(ctx);
    hpl_launch launch = n_by_n(ctx);
    CHECK_OK(hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_arr(a), hpl_part1(c, 0), hpl_i32(K))));
    /* The host read waits for the kernel and reports. */
    void *p = NULL;
    int rc = hpl_array_access(ctx, c, HPL_READ, &p);
    check_report(rc, "covariance, cov split by rows", "kernel", "wrote element", "cov");
    CHECK(strstr(hpl_last_error(), "argument 'c' bound to") != NULL, "covariance: the argument is named: %s",
          hpl_last_error());
    CHECK(p == NULL, "a failed access returned a pointer");
    canary_check(ctx, canary, "covariance");
    th_finish(ctx);
}

static void test_part_local_life(void)
{
    enum { R = 48, C = 32 };
    hpl_context *ctx = th_context("cpu:3");
    hpl_kernel k = th_kernel(ctx, life_part_local_src);
    hpl_array in = named_array(ctx, "board", HPL_INT32, R, C), out = named_array(ctx, "next", HPL_INT32, R, C);
    int32_t *p = th_access(ctx, in, HPL_WRITE);
    for (int i = 0; p && i < R * C; i++)
        p[i] = (i * 2654435761u >> 28) & 1;
    hpl_launch launch = all_devices(ctx);
    launch.global[0] = R;
    launch.global[1] = C;
    CHECK_OK(hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_part1(in, 1), hpl_part1(out, 1))));
    check_report(hpl_finish(ctx), "part-local Game of Life on 3 devices", "kernel", "element", "board");
    th_finish(ctx);
}

static void test_past_end(const char *devices)
{
    hpl_context *ctx = th_context(devices);
    hpl_kernel k = th_kernel(ctx, past_end_src);
    hpl_array x = named_array(ctx, "x", HPL_INT32, 100, 0);
    hpl_array canary = canary_make(ctx);
    CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){.global = {100}}, HPL_ARGS(hpl_arr(x))));
    int32_t got[100];
    int rc = hpl_array_read(ctx, x, got, sizeof got);
    char what[64];
    snprintf(what, sizeof what, "a write past the end on %s", devices);
    check_report(rc, what, "kernel", "element (1100)", "x");
    CHECK(strstr(hpl_last_error(), "(0)..(99)") != NULL, "%s: the part's bounds are named: %s", what,
          hpl_last_error());
    rc = hpl_array_read(ctx, x, got, sizeof got);
    int bad = 0;
    for (int i = 1; rc == HPL_OK && i < 100; i++)
        bad += got[i] != i;
    CHECK(rc == HPL_OK && bad == 0, "%s: the elements inside were not all written (%d wrong)", what, bad);
    CHECK(got[0] == 0 || got[0] == -7, "%s: the part's first element is %d, neither its value nor the stray write's",
          what, got[0]);
    canary_check(ctx, canary, what);
    th_finish(ctx);
}

/* Without validation a CPU device still checks, more cheaply: the report
 * names the kernel and the device, not the element. */
static void test_undetailed(void)
{
    th_env validation;
    th_env_set(&validation, "HPLVK_VALIDATION", NULL);
    hpl_context *ctx = NULL;
    CHECK_OK(hpl_context_create(&(hpl_context_desc){.devices = th_devices("cpu:2"), .log = NULL}, &ctx));
    th_env_restore(&validation);
    if (!ctx)
        return;
    hpl_device_info info;
    CHECK_OK(hpl_device_get_info(ctx, 1, &info));
    bool checks = info.bounds_checked;
    hpl_kernel k;
    CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = syrk_src, .name = "syrk"}}, &k));
    hpl_array a, c;
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {N, K}}, &a));
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {N, N}}, &c));
    hpl_launch launch = n_by_n(ctx);
    CHECK_OK(hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_part1(a, 0), hpl_part1(c, 0), hpl_i32(K))));
    int rc = hpl_finish(ctx);
    if (checks) {
        CHECK(rc == HPL_ERROR_KERNEL_OUT_OF_BOUNDS && strstr(hpl_last_error(), "kernel 'syrk' on device ") &&
                  strstr(hpl_last_error(), "HPLVK_VALIDATION=1"),
              "without validation: %d %s", rc, hpl_last_error());
        th_note("without validation: %s", hpl_last_error());
    } else {
        th_note("device 1 (%s) does not check without validation: nothing to see", info.name);
    }
    hpl_context_destroy(ctx);
}

static void test_info_and_switch(void)
{
    hpl_context *ctx = th_context("cpu");
    hpl_device_info info;
    CHECK_OK(hpl_device_get_info(ctx, 0, &info));
    CHECK(info.bounds_checked, "device 0 does not check its kernels under validation");
    th_finish(ctx);

    setenv("HPLVK_BOUNDS_CHECK", "yes", 1);
    hpl_context *bad = NULL;
    CHECK_FAILS(hpl_context_create(&(hpl_context_desc){.devices = th_devices("cpu")}, &bad), HPL_ERROR_INVALID_ARGUMENT,
                "HPLVK_BOUNDS_CHECK");
    unsetenv("HPLVK_BOUNDS_CHECK");
}

int main(void)
{
    test_info_and_switch();
    test_undetailed();
    test_syrk("cpu:2", true);
    test_syrk("cpu:2", false);
    test_syrk("cpu", true);
    test_covariance();
    test_part_local_life();
    test_past_end("cpu");
    test_past_end("cpu:2");
    return th_finish(NULL);
}
