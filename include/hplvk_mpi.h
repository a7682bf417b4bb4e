/* hplvk_mpi.h: contexts that span the ranks of an MPI communicator.
 * Library hplvk_mpi (CMake: find_package(hplvk COMPONENTS mpi), target
 * hplvk::hplvk_mpi; pkg-config: hplvk-mpi). A program that does not use it
 * does not link libmpi.
 *
 *   hpl_context *ctx;
 *   hpl_mpi_context_create(NULL, MPI_COMM_WORLD, &ctx);   // collective
 *   ... the same hplvk program as on one process ...
 *   hpl_context_destroy(ctx);                            // collective
 *
 * Every rank runs the same program; chapter 10 of hplvk.h says what each
 * call means across ranks. The library makes its MPI calls with the
 * context's lock held, from the thread calling hplvk, never from threads
 * of its own: a program that calls hplvk from its main thread needs no
 * more than the thread level MPI_Init gives (MPI_THREAD_SINGLE); one that
 * calls MPI or hplvk from several threads needs MPI_THREAD_SERIALIZED and
 * orders those calls itself. */
#ifndef HPLVK_MPI_H
#define HPLVK_MPI_H

#include <mpi.h>

#include "hplvk_transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a context spanning comm's ranks (collective over comm):
 * hpl_context_create_over with hpl_mpi_transport_make's transport. MPI is
 * initialised here (MPI_Init_thread, MPI_THREAD_FUNNELED) when the program
 * has not done it, and then finalised when the last context made here is
 * destroyed (a failed call leaves MPI initialised: it cannot be initialised
 * twice). Errors: those of hpl_context_create_over; HPL_ERROR_TRANSPORT
 * when MPI fails; HPL_ERROR_INVALID_ARGUMENT for MPI_COMM_NULL, an
 * intercommunicator or MPI already finalized. */
HPL_API int hpl_mpi_context_create(const hpl_context_desc *desc, MPI_Comm comm, hpl_context **out);

/* The MPI transport alone: messages on a duplicate of comm (the program's
 * own messages on comm never match the library's). out->destroy frees the
 * duplicate. */
HPL_API int hpl_mpi_transport_make(MPI_Comm comm, hpl_transport *out);

#ifdef __cplusplus
}
#endif

#endif
