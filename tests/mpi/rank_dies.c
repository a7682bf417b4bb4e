/* A rank that dies mid-job (run under mpiexec by cmake/mpi_expect_abort.cmake
 * at 2 and 3 ranks): every rank runs annotated stencil steps over every
 * rank's devices, whose halos each rank receives from its neighbours, and
 * rank 1 kills itself (SIGKILL) at step 5, so that the others wait in an
 * exchange for it or are about to; the job must end, mpiexec exiting
 * non-zero with a message that names the killed rank, never hang. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"
#include "ranks.h"

#include <signal.h>
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
        if (rank == 1 && s == 5) {
            fprintf(stderr, "rank_dies: rank 1 kills itself at step %d\n", s);
            fflush(stderr);
            raise(SIGKILL);
        }
        CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){0}, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
    }
    /* Not reached by the ranks beside rank 1: they wait for it. */
    printf("rank_dies: rank %d finished every step\n", rank);
    th_finish(ctx);
    MPI_Finalize();
    return 0;
}
