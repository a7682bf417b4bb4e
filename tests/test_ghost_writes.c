/* The rule for writes in multi-device evals (hplvk.h section 7b): a
 * subkernel writes only the part of each argument its device owns. With
 * validation on, a subkernel that writes into its part's halo (elements a
 * neighbour owns) is reported, naming the kernel and the array; a kernel
 * that keeps to the rule is not, and gives the same result on 1, 2 and 3
 * devices. An owned subarray's own ghost part keeps its rule (writes there
 * are not counted) and is not reported. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define N 300

/* Follows the rule: each invocation writes its own element. */
static const char *own_src = "#include <hplvk.glsl>\n"
                             "hpl_args { hpl_in(int, 1) x; hpl_out(int, 1) y; };\n"
                             "void main() {\n"
                             "    uint i = hpl_global_id.x;\n"
                             "    int left = i > 0u ? hpl_at(x, i - 1u) : 0, right = i + 1u < x.dims ? hpl_at(x, i + 1u) : 0;\n"
                             "    hpl_at(y, i) = left + 2 * hpl_at(x, i) + right;\n"
                             "}\n";

/* Breaks it: the first invocation of each subkernel also writes the
 * element before its owned part (a neighbour's). */
static const char *halo_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_inout(int, 1) y; };\n"
                              "void main() {\n"
                              "    uint i = hpl_global_id.x;\n"
                              "    hpl_at(y, i) = int(i);\n"
                              "    if (i == y.owned_lo && i > y.part_lo) hpl_at(y, i - 1u) = -1;\n"
                              "}\n";

static void test_rule_kept(void)
{
    int32_t *x = malloc(N * sizeof *x), *want = malloc(N * sizeof *want), *got = malloc(N * sizeof *got);
    for (int i = 0; i < N; i++)
        x[i] = (i * 37) % 101 - 50;
    for (int i = 0; i < N; i++)
        want[i] = (i > 0 ? x[i - 1] : 0) + 2 * x[i] + (i + 1 < N ? x[i + 1] : 0);
    static const char *lists[] = {"cpu", "cpu:2", "cpu:3"};
    for (int l = 0; l < 3; l++) {
        hpl_context *ctx = th_context(lists[l]);
        hpl_kernel k = th_kernel(ctx, own_src);
        hpl_array a = th_array(ctx, HPL_INT32, N, 0, 0), b = th_array(ctx, HPL_INT32, N, 0, 0);
        CHECK_OK(hpl_array_write(ctx, a, x, N * sizeof *x));
        hpl_launch all = {.device_count = hpl_device_count(ctx)};
        for (int d = 0; d < all.device_count; d++)
            all.devices[d] = d;
        CHECK_OK(hpl_eval(ctx, k, &all, HPL_ARGS(hpl_part1(a, 1), hpl_part1(b, 1))));
        if (CHECK_OK(hpl_array_read(ctx, b, got, N * sizeof *got)))
            CHECK(memcmp(got, want, N * sizeof *got) == 0, "%s: the stencil differs from the host", lists[l]);
        CHECK(th_take_errors(NULL, 0) == 0, "%s: a kernel keeping to the rule was reported", lists[l]);
        th_finish(ctx);
    }
    free(x);
    free(want);
    free(got);
}

static void test_halo_write_reported(void)
{
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:3", .validation = true});
    hpl_kernel k = th_kernel(ctx, halo_src);
    hpl_array y;
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_INT32, .dims = {N}, .name = "yy"}, &y));
    const hpl_launch three = {.devices = {0, 1, 2}, .device_count = 3};
    CHECK_OK(hpl_eval(ctx, k, &three, HPL_ARGS(hpl_part1(y, 1))));
    CHECK_OK(hpl_finish(ctx));
    char last[1024];
    int reported = th_take_errors(last, sizeof last);
    /* Devices 1 and 2 each wrote one element of their left neighbour's. */
    CHECK(reported == 2, "%d reports of halo writes, expected 2", reported);
    CHECK(strstr(last, "outside its owned box") && strstr(last, "'yy'") && strstr(last, "kernel 'kernel'") &&
              strstr(last, "wrote 1 element "),
          "the report names the kernel, the array and the count: %s", last);
    th_note("report: %s", last);

    /* An owned subarray's own ghost part: writes there do not count, and
     * are not reported, split or not. */
    hpl_array sub;
    CHECK_OK(hpl_subarray_owned(ctx, y, HPL_RANGES({10, 200}), (const hpl_range[]){{20, 190}}, &sub));
    hpl_kernel fill = th_kernel(ctx, "#include <hplvk.glsl>\n"
                                     "hpl_args { hpl_out(int, 1) s; };\n"
                                     "void main() { hpl_at(s, hpl_global_id.x) = 5; }\n");
    CHECK_OK(hpl_eval(ctx, fill, NULL, HPL_ARGS(hpl_arr(sub))));
    CHECK_OK(hpl_eval(ctx, fill, &three, HPL_ARGS(hpl_part1(sub, 0))));
    CHECK_OK(hpl_finish(ctx));
    CHECK(th_take_errors(last, sizeof last) == 0, "writes into an owned subarray's ghost part were reported: %s", last);
    th_finish(ctx);
}

int main(void)
{
    test_rule_kept();
    test_halo_write_reported();
    return th_failures() ? 1 : 0;
}
