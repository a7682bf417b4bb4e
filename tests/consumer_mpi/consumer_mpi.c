/* Uses an installed hplvk_mpi (run under mpiexec, any number of ranks): the
 * MPI transport over MPI_COMM_WORLD gathers every rank's number and passes
 * a 2D box from each rank to the next, and hpl_mpi_context_create refuses
 * MPI_COMM_NULL with a message in hpl_last_error(). Needs no device. Exits
 * non-zero on any failure. */
#include <hplvk_mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int failed = 0;
    hpl_context *ctx = NULL;
    int rc = hpl_mpi_context_create(NULL, MPI_COMM_NULL, &ctx);
    if (rc != HPL_ERROR_INVALID_ARGUMENT || !strstr(hpl_last_error(), "MPI_COMM_NULL")) {
        fprintf(stderr, "consumer_mpi: MPI_COMM_NULL: %s (%s)\n", hpl_error_name(rc), hpl_last_error());
        failed = 1;
    }
    hpl_transport t;
    rc = hpl_mpi_transport_make(MPI_COMM_WORLD, &t);
    if (rc != HPL_OK) {
        fprintf(stderr, "consumer_mpi: hpl_mpi_transport_make: %s (%s)\n", hpl_error_name(rc), hpl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char error[256] = "";
    int *all = calloc((size_t)t.ranks, sizeof *all);
    rc = t.allgather(t.user, &t.rank, sizeof t.rank, all, error, sizeof error);
    for (int r = 0; r < t.ranks; r++)
        failed |= rc != HPL_OK || all[r] != r;
    free(all);

    /* Rows 1..2, columns 2..4 of a 4x6 array of ints to the next rank. */
    int out[4][6], in[4][6];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) {
            out[i][j] = 100 * t.rank + 10 * i + j;
            in[i][j] = -1;
        }
    hpl_transport_message m[2] = {
        {.peer = (t.rank + 1) % t.ranks, .send = true, .base = out, .elem_size = sizeof(int), .ndims = 2,
         .whole = {4, 6, 1}, .lo = {1, 2, 0}, .extent = {2, 3, 1}},
        {.peer = (t.rank + t.ranks - 1) % t.ranks, .send = false, .base = in, .elem_size = sizeof(int), .ndims = 2,
         .whole = {4, 6, 1}, .lo = {1, 2, 0}, .extent = {2, 3, 1}},
    };
    rc = t.exchange(t.user, m, 2, error, sizeof error);
    if (rc != HPL_OK) {
        fprintf(stderr, "consumer_mpi: exchange: %s\n", error);
        failed = 1;
    }
    int from = (t.rank + t.ranks - 1) % t.ranks;
    for (int i = 0; i < 4 && rc == HPL_OK; i++)
        for (int j = 0; j < 6; j++) {
            bool inside = i >= 1 && i <= 2 && j >= 2 && j <= 4;
            int want = inside ? 100 * from + 10 * i + j : -1;
            if (in[i][j] != want) {
                fprintf(stderr, "consumer_mpi: in[%d][%d] = %d, expected %d\n", i, j, in[i][j], want);
                failed = 1;
            }
        }
    t.destroy(t.user);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (t.rank == 0)
        printf("consumer_mpi: %d ranks: %s\n", t.ranks, any ? "FAILED" : "ok");
    MPI_Finalize();
    return any;
}
