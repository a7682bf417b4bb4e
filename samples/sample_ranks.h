/*
 * sample_ranks.h — what lets a sample run under mpiexec unchanged: the
 * context it makes, the RESULT line's ranks= field and verdict, and a
 * checksum of its result to compare runs by. sample_util.h includes it.
 *
 * Built with MPI (HPLVK_SAMPLE_MPI: samples/CMakeLists.txt defines it and
 * links hplvk_mpi when hplvk_mpi is built) and started by an MPI launcher
 * (mpiexec, mpirun, srun: sample_launched_by_mpi), sample_context_create
 * makes a context over MPI_COMM_WORLD (hplvk_mpi.h): every rank opens its
 * own devices (its own HPLVK_DEVICES) and the sample splits its work over
 * every rank's devices, as over one process's. Otherwise, and always
 * without MPI, it is hpl_context_create: a sample started by hand runs in
 * one process as before, with no MPI in it.
 *
 * Over ranks:
 *   - MPI is initialised here (before the context, so that hplvk_mpi
 *     leaves it alone) and finalised when the program exits (atexit);
 *   - ranks other than 0 send their stdout to /dev/null: one RESULT line
 *     and one report per job; every rank's stderr (errors) stays;
 *   - every rank reads the result and runs the sample's whole check; the
 *     RESULT line says verified=yes only when every rank verified
 *     (sample_verified_everywhere, an MPI_Allreduce of the verdicts), and
 *     ends with " ranks=<n>" (sample_ranks_field; in one process the line
 *     is as before, with no ranks= field);
 *   - a rank whose own check failed exits non-zero, so mpiexec does too.
 *
 * sample_checksum_print prints "checksum: <16 hex digits> (<what>, <n>
 * bytes)", FNV-1a (64 bits) of the result's bytes: the same on one process
 * and over ranks when the results are bit-identical (samples/CMakeLists.txt
 * compares them: cmake/sample_ranks_compare.cmake).
 */
#ifndef HPLVK_SAMPLE_RANKS_H
#define HPLVK_SAMPLE_RANKS_H

#include <hplvk.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef HPLVK_SAMPLE_MPI
#include <hplvk_mpi.h>
#endif

/* This process's rank and the number of ranks of the sample's context
 * (0 and 1 in one process). */
static int sample_rank_id = 0, sample_rank_total = 1;

static inline int sample_rank(void) { return sample_rank_id; }
static inline int sample_ranks(void) { return sample_rank_total; }

/* Whether device d of the context was opened by this rank (every device,
 * in one process): hpl_stats_get counts only those. */
static inline bool sample_own_device(hpl_context *ctx, int device)
{
    hpl_device_info info;
    return hpl_device_get_info(ctx, device, &info) == HPL_OK && info.rank == sample_rank_id;
}

#ifdef HPLVK_SAMPLE_MPI
/* Whether an MPI launcher started this process: the variables Open MPI,
 * MPICH's Hydra and PMIx launchers (Slurm's srun among them) give every
 * rank. */
static inline bool sample_launched_by_mpi(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

static bool sample_mpi_inited; /* by sample_context_create: finalised at exit */

static void sample_mpi_finalize(void)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Finalize();
}
#endif

/* hpl_context_create, or over MPI_COMM_WORLD's ranks (see above). */
static inline int sample_context_create(const hpl_context_desc *desc, hpl_context **out)
{
#ifdef HPLVK_SAMPLE_MPI
    if (sample_launched_by_mpi()) {
        int inited = 0, provided = 0;
        MPI_Initialized(&inited);
        if (!inited) {
            if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
                fprintf(stderr, "sample: MPI_Init_thread failed\n");
                return HPL_ERROR_TRANSPORT;
            }
            sample_mpi_inited = true;
            atexit(sample_mpi_finalize);
        }
        MPI_Comm_rank(MPI_COMM_WORLD, &sample_rank_id);
        MPI_Comm_size(MPI_COMM_WORLD, &sample_rank_total);
        if (sample_rank_id != 0 && !freopen("/dev/null", "w", stdout))
            fprintf(stderr, "sample: rank %d: cannot silence stdout\n", sample_rank_id);
        return hpl_mpi_context_create(desc, MPI_COMM_WORLD, out);
    }
#endif
    return hpl_context_create(desc, out);
}

/* Whether every rank verified (`ok` in one process). Collective over the
 * ranks: every rank calls it once, for its RESULT line. */
static inline bool sample_verified_everywhere(bool ok)
{
#ifdef HPLVK_SAMPLE_MPI
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (sample_rank_total > 1 && inited && !finalized) {
        int mine = ok, all = 0;
        if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD) != MPI_SUCCESS)
            return false;
        if (ok && !all)
            fprintf(stderr, "sample: rank %d verified, another rank did not\n", sample_rank_id);
        return all != 0;
    }
#endif
    return ok;
}

/* The RESULT line's last field: " ranks=<n>" over ranks, "" in one process. */
static inline const char *sample_ranks_field(void)
{
    static char field[32];
    field[0] = '\0';
#ifdef HPLVK_SAMPLE_MPI
    if (sample_mpi_inited || sample_rank_total > 1)
        snprintf(field, sizeof field, " ranks=%d", sample_rank_total);
#endif
    return field;
}

/* FNV-1a, 64 bits, of bytes[0 .. n-1]. */
static inline uint64_t sample_checksum(const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static inline void sample_checksum_print(const char *what, const void *bytes, size_t n)
{
    printf("checksum: %016" PRIx64 " (%s, %zu bytes)\n", sample_checksum(bytes, n), what, n);
}

/* The hooks of the headers a sample shares with its Vulkan twin
 * (life_host.h, matmul_host.h, jacobi_host.h): their RESULT lines take the verdict of
 * every rank and end with the ranks field. */
#define SAMPLE_RESULT_VERIFIED(ok) sample_verified_everywhere(ok)
#define SAMPLE_RESULT_TAIL() sample_ranks_field()

#endif
