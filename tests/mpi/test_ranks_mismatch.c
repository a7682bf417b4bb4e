/* Collective calls that differ between ranks, under validation (hplvk.h
 * chapter 10): an eval with another scalar, another annotation or another
 * kernel on one rank, an eval on one rank while the others read, an array
 * of other extents, and an eval that fails on one rank only: every rank's
 * call fails with HPL_ERROR_RANKS_DIFFER (the failing rank with its own
 * error) and a message naming the rank and what it did, nothing hangs, no
 * state changes, and the same context then runs matching calls correctly. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "ranks.h"

#include <stdio.h>
#include <string.h>

static const char *add_src = "#include <hplvk.glsl>\n"
                             "hpl_args { hpl_inout(uint, 1) a; uint v; };\n"
                             "void main() { hpl_at(a, hpl_global_id.x) += v; }\n";
static const char *mul_src = "#include <hplvk.glsl>\n"
                             "hpl_args { hpl_inout(uint, 1) a; uint v; };\n"
                             "void main() { hpl_at(a, hpl_global_id.x) *= v; }\n";

static int rank, ranks;

/* The call on this rank failed as it must: its own error on the odd rank
 * out (own != 0), else HPL_ERROR_RANKS_DIFFER naming `what`. */
static void check_differ(int rc, int own, const char *what, const char *line)
{
    if (rank == 1 && own) {
        CHECK(rc == own, "%s: rank 1 got %s, want %s (%s)", line, hpl_error_name(rc), hpl_error_name(own),
              hpl_last_error());
        return;
    }
    CHECK(rc == HPL_ERROR_RANKS_DIFFER, "%s: got %s (%s)", line, hpl_error_name(rc), hpl_last_error());
    CHECK(th_contains(hpl_last_error(), "rank 1") && th_contains(hpl_last_error(), what),
          "%s: the message names neither rank 1 nor \"%s\": %s", line, what, hpl_last_error());
}

int main(int argc, char **argv)
{
    hpl_context *ctx = ranks_start(&argc, &argv, &rank, &ranks);
    hpl_kernel add = th_kernel(ctx, add_src), mul = th_kernel(ctx, mul_src);
    enum { N = 40 };
    uint32_t want[N], got[N];
    for (int i = 0; i < N; i++)
        want[i] = (uint32_t)i;
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0);
    CHECK_OK(hpl_array_write(ctx, a, want, sizeof want));
    bool odd = rank == 1;

    /* Another scalar. */
    int rc = hpl_eval(ctx, add, NULL, HPL_ARGS(hpl_part(a, 0, 0), hpl_u32(odd ? 9u : 3u)));
    check_differ(rc, 0, "0x9", "another scalar");
    /* Another annotation. */
    rc = hpl_eval(ctx, add, NULL, HPL_ARGS(odd ? hpl_arr(a) : hpl_part(a, 0, 0), hpl_u32(3)));
    check_differ(rc, 0, "argument 0", "another annotation");
    /* Another kernel. */
    rc = hpl_eval(ctx, odd ? mul : add, NULL, HPL_ARGS(hpl_part(a, 0, 0), hpl_u32(3)));
    check_differ(rc, 0, "hpl_eval", "another kernel");
    /* An eval on rank 1, a read elsewhere. */
    rc = odd ? hpl_eval(ctx, add, NULL, HPL_ARGS(hpl_part(a, 0, 0), hpl_u32(3))) : hpl_array_read(ctx, a, got, sizeof got);
    check_differ(rc, 0, odd ? "host access" : "hpl_eval", "eval against read");
    /* An array of other extents: none is made. */
    hpl_array b = {0};
    rc = hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {odd ? 8u : 9u}}, &b);
    check_differ(rc, 0, "hpl_array_create", "other extents");
    /* An eval that fails on rank 1 alone (a missing argument there). */
    hpl_arg args[] = {hpl_part(a, 0, 0), hpl_u32(3)};
    rc = hpl_eval(ctx, add, NULL, args, odd ? 1 : 2);
    check_differ(rc, HPL_ERROR_ARGUMENT_MISMATCH, "failed this call", "failing on one rank");

    /* Nothing of the above changed anything: matching calls run. */
    CHECK_OK(hpl_eval(ctx, add, NULL, HPL_ARGS(hpl_part(a, 0, 0), hpl_u32(5))));
    CHECK_OK(hpl_eval(ctx, mul, &(hpl_launch){.device = hpl_device_count(ctx) - 1}, HPL_ARGS(hpl_arr(a), hpl_u32(3))));
    for (int i = 0; i < N; i++)
        want[i] = (want[i] + 5u) * 3u;
    CHECK_OK(hpl_array_read(ctx, a, got, sizeof got));
    EXPECT_U32(got, want, N, "after the mismatches");
    CHECK_OK(hpl_array_destroy(ctx, a));
    int failed = th_finish(ctx);
    MPI_Finalize();
    return failed;
}
