/* A kernel's writes outside a subarray's owned box (hplvk.h section 4b), on
 * a zero-copy device and on a device with memory of its own: afterwards
 * each such element holds one value, the one from before or the one
 * written, whatever reads it and whether or not hpl_finish came first, and
 * work before and after the kernel is ordered with them.
 *
 * Each case runs a slow kernel first on the device, so that the kernel
 * writing the subarray is still queued behind it when the host goes on: a
 * read or write of the ghost part that does not wait for that kernel meets
 * the old values, and the kernel's writes land after it.
 *   1. A kernel writes all of a subarray with an owned box; two ghost
 *      elements are read through a subarray of their own, then the whole
 *      array: both reads agree, and say the same as with hpl_finish before
 *      them.
 *   2. The host writes two ghost elements right after that kernel: the
 *      host's values stay (the kernel's writes come before them).
 *   3. "cpu+zc,cpu": device 1 reads the ghost part (y = x + 1 over a
 *      subarray holding it), then the zero-copy device 0 writes the
 *      subarray with the ghost part: y has the values from before. */
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 100
#define BUSY (1u << 16)

/* A few tens of milliseconds on Lavapipe: the kernels after it wait. */
static const char *busy_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_out(uint, 1) x; uint rounds; };\n"
                              "void main() {\n"
                              "    uint i = hpl_global_id.x, h = i;\n"
                              "    for (uint r = 0u; r < rounds; r++) h = h * 747796405u + 2891336453u + r;\n"
                              "    hpl_at(x, i) = h;\n"
                              "}\n";
/* Writes every element of s, ghost part included: s[i] = v + i. */
static const char *set_src = "#include <hplvk.glsl>\n"
                             "hpl_args { hpl_out(int, 1) s; int v; };\n"
                             "void main() { uint i = hpl_global_id.x; hpl_at(s, i) = v + int(i); }\n";
static const char *plus_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_in(int, 1) x; hpl_out(int, 1) y; int c; };\n"
                              "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i) + c; }\n";

/* The subarray: elements 10..59, owning 20..49 (ghost part 10..19, 50..59). */
static const hpl_range box = {10, 59}, owned_box = {20, 49};

static int32_t old_value(int i)
{
    return 1000 + i;
}

static int32_t new_value(int i)
{
    return 5000 + (i - 10);
}

typedef struct kernels {
    hpl_kernel busy, set, plus;
} kernels;

static kernels kernels_create(hpl_context *ctx)
{
    return (kernels){th_kernel(ctx, busy_src), th_kernel(ctx, set_src), th_kernel(ctx, plus_src)};
}

static void kernels_destroy(hpl_context *ctx, const kernels *k)
{
    CHECK_OK(hpl_kernel_destroy(ctx, k->busy));
    CHECK_OK(hpl_kernel_destroy(ctx, k->set));
    CHECK_OK(hpl_kernel_destroy(ctx, k->plus));
}

static hpl_array old_array(hpl_context *ctx)
{
    int32_t v[N];
    for (int i = 0; i < N; i++)
        v[i] = old_value(i);
    hpl_array a = th_array(ctx, HPL_INT32, N, 0, 0);
    CHECK_OK(hpl_array_write(ctx, a, v, sizeof v));
    return a;
}

/* The slow kernel, then s[i] = new_value on device `device`. */
static void write_behind_busy(hpl_context *ctx, const kernels *k, hpl_array busy, hpl_array s, int device)
{
    hpl_launch on = {.device = device};
    CHECK_OK(hpl_eval(ctx, k->busy, &on, HPL_ARGS(hpl_arr(busy), hpl_u32(4096))));
    CHECK_OK(hpl_eval(ctx, k->set, &on, HPL_ARGS(hpl_arr(s), hpl_i32(new_value(10)))));
}

/* Case 1; returns (in got2) the two ghost elements read through a
 * subarray, and checks them against the whole array read after. */
static void read_ghost(hpl_context *ctx, const kernels *k, int device, bool finish, int32_t got2[2], const char *list)
{
    hpl_array a = old_array(ctx), busy = th_array(ctx, HPL_UINT32, BUSY, 0, 0), s, two;
    got2[0] = got2[1] = INT32_MIN; /* what a failed read leaves: never a value of the test */
    CHECK_OK(hpl_subarray_owned(ctx, a, 1, &box, &owned_box, &s));
    CHECK_OK(hpl_subarray(ctx, a, HPL_RANGES({12, 13}), &two));
    write_behind_busy(ctx, k, busy, s, device);
    if (finish)
        CHECK_OK(hpl_finish(ctx));
    int32_t whole[N] = {0};
    CHECK_OK(hpl_array_read(ctx, two, got2, 2 * sizeof *got2));
    CHECK_OK(hpl_array_read(ctx, a, whole, sizeof whole));
    const char *when = finish ? "after hpl_finish" : "right after the eval";
    for (int i = 0; i < N; i++) {
        bool in_box = i >= 10 && i <= 59, in_owned = i >= 20 && i <= 49;
        bool ok = in_owned ? whole[i] == new_value(i)
                  : in_box ? whole[i] == old_value(i) || whole[i] == new_value(i)
                           : whole[i] == old_value(i);
        if (!CHECK(ok, "%s, device %d, whole read %s: [%d] = %d (before %d, written %d)", list, device, when, i,
                   whole[i], old_value(i), new_value(i)))
            break;
    }
    CHECK(got2[0] == whole[12] && got2[1] == whole[13],
          "%s, device %d, %s: ghost elements 12, 13 read through a subarray are %d %d, through the whole array %d %d",
          list, device, when, got2[0], got2[1], whole[12], whole[13]);
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, busy));
}

/* Case 2. */
static void write_ghost(hpl_context *ctx, const kernels *k, int device, const char *list)
{
    hpl_array a = old_array(ctx), busy = th_array(ctx, HPL_UINT32, BUSY, 0, 0), s, two;
    CHECK_OK(hpl_subarray_owned(ctx, a, 1, &box, &owned_box, &s));
    CHECK_OK(hpl_subarray(ctx, a, HPL_RANGES({55, 56}), &two));
    write_behind_busy(ctx, k, busy, s, device);
    const int32_t mine[2] = {-1, -2};
    CHECK_OK(hpl_array_write(ctx, two, mine, sizeof mine));
    int32_t whole[N] = {0};
    CHECK_OK(hpl_array_read(ctx, a, whole, sizeof whole));
    CHECK(whole[55] == -1 && whole[56] == -2,
          "%s, device %d: the host wrote -1 -2 into ghost elements 55, 56 after the kernel; they read %d %d", list,
          device, whole[55], whole[56]);
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, busy));
}

/* Case 3, on "cpu+zc,cpu". */
static int read_before(void)
{
    const char *list = "cpu+zc,cpu";
    hpl_context *ctx = th_context(list);
    kernels k = kernels_create(ctx);
    hpl_array a = old_array(ctx), busy = th_array(ctx, HPL_UINT32, BUSY, 0, 0), y = th_array(ctx, HPL_INT32, 20, 0, 0);
    hpl_array s, x;
    CHECK_OK(hpl_subarray_owned(ctx, a, 1, &box, &owned_box, &s));
    CHECK_OK(hpl_subarray(ctx, a, HPL_RANGES({0, 19}), &x)); /* ghost elements 10..19, no owned one */
    hpl_launch on1 = {.device = 1}, on0 = {.device = 0};
    /* Device 1 busy: its copy of x waits behind the slow kernel. */
    CHECK_OK(hpl_eval(ctx, k.busy, &on1, HPL_ARGS(hpl_arr(busy), hpl_u32(4096))));
    CHECK_OK(hpl_eval(ctx, k.plus, &on1, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_i32(1))));
    CHECK_OK(hpl_eval(ctx, k.set, &on0, HPL_ARGS(hpl_arr(s), hpl_i32(new_value(10)))));
    int32_t got[20];
    CHECK_OK(hpl_array_read(ctx, y, got, sizeof got));
    for (int i = 0; i < 20; i++)
        if (!CHECK(got[i] == old_value(i) + 1,
                   "%s: y = x + 1 on device 1, before device 0 wrote x's elements 10..19 outside its owned box: "
                   "y[%d] = %d, want %d",
                   list, i, got[i], old_value(i) + 1))
            break;
    kernels_destroy(ctx, &k);
    return th_finish(ctx);
}

static int one_list(const char *list)
{
    hpl_context *ctx = th_context(list);
    hpl_device_info info;
    if (CHECK_OK(hpl_device_get_info(ctx, 0, &info)))
        th_note("%s: device 0 %s", list, info.zero_copy ? "zero-copy" : "with memory of its own");
    kernels k = kernels_create(ctx);
    int32_t right_after[2], after_finish[2];
    read_ghost(ctx, &k, 0, false, right_after, list);
    read_ghost(ctx, &k, 0, true, after_finish, list);
    CHECK(right_after[0] == after_finish[0] && right_after[1] == after_finish[1],
          "%s: ghost elements 12, 13 read %d %d right after the eval, %d %d after hpl_finish", list, right_after[0],
          right_after[1], after_finish[0], after_finish[1]);
    write_ghost(ctx, &k, 0, list);
    kernels_destroy(ctx, &k);
    return th_finish(ctx);
}

int main(void)
{
    int rc = one_list("cpu");  /* zero-copy */
    rc |= one_list("cpu:2");    /* memories of their own */
    rc |= read_before();
    return rc;
}
