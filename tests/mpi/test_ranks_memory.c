/* Memory over ranks (hplvk.h chapter 10): a rank's host holds what its
 * devices and its host accesses need, not the whole array, its host
 * storage being committed as touched. Two 64 MiB arrays are written by a
 * kernel split over every rank's device (one a rank: Lavapipe, whose device
 * memory is the process's) and stepped twice by a row stencil: each rank's
 * resident memory (VmRSS) grows by about its parts, between 0.8 of them and
 * them plus an eighth of the arrays (so with two ranks or more, well below
 * the whole arrays); then a host read of one array brings all of it into
 * every rank's host storage, and its resident memory grows by at least
 * what the other ranks held (0.8 of it). Values are checked against the
 * host. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"
#include "ranks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

/* This process's resident memory in bytes (0 when /proc cannot tell). */
static uint64_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    uint64_t kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %" SCNu64 " kB", &kib) == 1)
            break;
    fclose(f);
    return kib * 1024;
}

static const char *init_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_out(uint, 2) dst; };\n"
                              "void main() {\n"
                              "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"
                              "    hpl_at2(dst, r, c) = r * 40503u + c * 7u + 11u;\n"
                              "}\n";

int main(int argc, char **argv)
{
    int rank, ranks;
    hpl_context *ctx = ranks_start(&argc, &argv, &rank, &ranks);
    CHECK(hpl_device_count(ctx) == ranks, "rank %d: %d devices over %d ranks: run with one device a rank", rank,
          hpl_device_count(ctx), ranks);
    hpl_kernel init = th_kernel(ctx, init_src), step = th_kernel(ctx, rows_stencil_src());
    uint64_t rows = 4096, cols = 4096, n = rows * cols, array_bytes = n * sizeof(uint32_t);
    uint32_t *want = malloc(array_bytes), *next = malloc(array_bytes);
    CHECK(want && next, "out of host memory");
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++)
            want[r * cols + c] = (uint32_t)(r * 40503u + c * 7u + 11u);
    rows_stencil_host(rows, cols, want, next);
    rows_stencil_host(rows, cols, next, want);
    /* The same evals on small arrays first: the devices build their
     * pipelines (Lavapipe's compiler takes memory of its own, once). */
    hpl_array w[2] = {th_array(ctx, HPL_UINT32, 64, cols, 0), th_array(ctx, HPL_UINT32, 64, cols, 0)};
    CHECK_OK(hpl_eval(ctx, init, NULL, HPL_ARGS(hpl_part1(w[0], 0))));
    CHECK_OK(hpl_eval(ctx, step, NULL, HPL_ARGS(hpl_part1(w[0], 1), hpl_part1(w[1], 1))));
    CHECK_OK(hpl_finish(ctx));

    uint64_t before = resident_bytes();
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, rows, cols, 0), th_array(ctx, HPL_UINT32, rows, cols, 0)};
    CHECK_OK(hpl_eval(ctx, init, NULL, HPL_ARGS(hpl_part1(g[0], 0))));
    for (int s = 0; s < 2; s++)
        CHECK_OK(hpl_eval(ctx, step, NULL, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
    CHECK_OK(hpl_finish(ctx));
    uint64_t parts = resident_bytes();
    /* This rank's rows of the split: even parts, the larger first. */
    uint64_t own_rows = rows / (uint64_t)ranks + ((uint64_t)rank < rows % (uint64_t)ranks);
    double own = (double)own_rows * (double)cols * sizeof(uint32_t) * 2.0;
    double grew = (double)parts - (double)before, whole = 2.0 * (double)array_bytes;
    printf("rank %d of %d: resident memory grew %.1f MiB for its parts (%.1f MiB of both arrays' %.1f MiB)\n", rank,
           ranks, grew / MIB, own / MIB, whole / MIB);
    CHECK(before > 0 && grew >= 0.8 * own && grew <= own + whole / 8.0,
          "rank %d: resident memory grew %.1f MiB, want %.1f to %.1f MiB (its parts of the arrays)", rank, grew / MIB,
          0.8 * own / MIB, (own + whole / 8.0) / MIB);

    /* A host read brings the whole array into every rank's host storage
     * (the rank's own part may be there already: a device that imports
     * the host storage, as Lavapipe does, computes in it). */
    const uint32_t *got = NULL;
    CHECK_OK(hpl_array_access(ctx, g[0], HPL_READ, (void **)&got));
    uint64_t after_read = resident_bytes();
    double read_grew = (double)after_read - (double)parts;
    printf("rank %d: resident memory grew %.1f MiB for a read of one array (%.1f MiB)\n", rank, read_grew / MIB,
           (double)array_bytes / MIB);
    double others = (double)array_bytes - own / 2.0;
    CHECK(read_grew >= 0.8 * others && read_grew <= 1.25 * (double)array_bytes,
          "rank %d: resident memory grew %.1f MiB for a read of a %.1f MiB array (%.1f MiB of it from the other ranks)",
          rank, read_grew / MIB, (double)array_bytes / MIB, others / MIB);
    if (got)
        EXPECT_U32(got, want, n, "the array after two steps");
    free(want);
    free(next);
    int failed = th_finish(ctx);
    MPI_Finalize();
    return failed;
}
