/* A rank that exits mid-job with an error it does not handle (run under
 * mpiexec by cmake/mpi_expect_abort.cmake at 2 and 3 ranks): every rank
 * runs annotated stencil steps over every rank's devices, and after step 3
 * rank 1 stops calling the library and returns 1 from main (no
 * hpl_context_destroy, no MPI_Finalize) while the others go on with their
 * steps, which need its halos; the job must end, mpiexec exiting non-zero
 * with a message that names the rank, never hang. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"
#include "ranks.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    int rank = 0, ranks = 0;
    hpl_context *ctx = ranks_start(&argc, &argv, &rank, &ranks);
    hpl_kernel k = th_kernel(ctx, rows_stencil_src());
    enum { rows = 29, cols = 8 };
    static uint32_t in[rows * cols];
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, rows, cols, 0), th_array(ctx, HPL_UINT32, rows, cols, 0)};
    CHECK_OK(hpl_array_write(ctx, g[0], in, sizeof in));
    for (int s = 0; s < 1000; s++) {
        CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){0}, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
        if (rank == 1 && s == 3) {
            /* An error it does not handle: it gives up, leaving the job. */
            fprintf(stderr, "rank_exits: rank 1 gives up after step %d\n", s);
            return 1;
        }
    }
    /* Not reached by the ranks beside rank 1: they wait for it. */
    printf("rank_exits: rank %d finished every step\n", rank);
    th_finish(ctx);
    MPI_Finalize();
    return 0;
}
