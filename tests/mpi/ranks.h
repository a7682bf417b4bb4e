/* What the tests of tests/mpi/ share: starting MPI and making the context
 * over MPI_COMM_WORLD that every one of them runs on. Header-only. */
#ifndef HPLVK_TESTS_MPI_RANKS_H
#define HPLVK_TESTS_MPI_RANKS_H

#include "harness.h"
#include "hplvk_mpi.h"

#include <stdio.h>

/* MPI started (MPI_Init), this process's rank and the number of ranks, and
 * a context over MPI_COMM_WORLD with the harness's description (validation
 * on, the counting log; each rank's devices from its HPLVK_DEVICES). Ends
 * the whole job when the context cannot be made: nothing else could run. */
static inline hpl_context *ranks_start(int *argc, char ***argv, int *rank, int *ranks)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, ranks);
    hpl_context_desc desc = {0};
    th_prepare_desc(&desc);
    hpl_context *ctx = NULL;
    if (hpl_mpi_context_create(&desc, MPI_COMM_WORLD, &ctx) != HPL_OK) {
        fprintf(stderr, "rank %d: hpl_mpi_context_create: %s\n", *rank, hpl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return ctx;
}

#endif
