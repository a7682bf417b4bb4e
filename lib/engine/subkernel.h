/* One device's share of an eval (a subkernel): how its kernel sees its
 * array arguments, and running subkernels (dispatch.c). Planning them is
 * above, in the API layer (launch.h); the library's own kernels (builtin.c)
 * make theirs by hand and run them the same way. */
#ifndef HPL_SUBKERNEL_H
#define HPL_SUBKERNEL_H

#include "access.h"
#include "partition.h"

/* How the kernel sees an array argument: the (sub)array's type and extents,
 * through the strides of the memory holding it; the fill kernel views an
 * array as 32-bit words instead. */
typedef struct hpl__arg_view {
    hpl__array *array;
    hpl__view at;   /* what it touches, root coordinates: a part's box and owned box */
    bool is_part;         /* a part of a multi-device eval: */
    hpl__box whole;       /* the argument it is a part of (root coordinates) */
    hpl__box whole_owned; /* and that argument's owned box */
    hpl_type type;
    int ndims;
    uint64_t dims[3]; /* the kernel's extents of the argument (the whole one for a part) */
    uint32_t words; /* fill: words per element, innermost dimension first */
    int slot;       /* the memory it is bound to on the device */
} hpl__arg_view;

/* The work of one device: a whole single-device eval, or one part of a
 * multi-device one. */
typedef struct hpl__subkernel {
    hpl__device *device;
    hpl__variant *variant;
    const char *kernel_name; /* for messages */
    hpl__handle kernel_id;   /* its handle (0: the library's own): the bounds report names it */
    const hpl_arg *args;     /* NULL: the eval's; else its own (a plan's runner) */
    uint64_t global[3]; /* its domain */
    uint64_t offset[3]; /* where its domain starts in the whole eval's */
    uint32_t local[3];  /* in the domain's order */
    int walk;           /* hplvk.glsl's hplvk_walk: the dispatch swaps dimension 0 with this one */
    VkPipeline pipeline;
    /* One phase of a halos-first eval (dispatch.c): it runs `row_ranges`
     * ranges rows[i] = [lo, hi) of dimension rows_dim of the whole domain,
     * each inside its domain; 0: all of its domain. */
    int row_ranges;
    int rows_dim;
    uint64_t rows[2][2];
    /* The bands' phase: its reads take in all of the part, the interior's
     * too, so that the interior phase, planned after the bands were
     * submitted, finds everything in place (nothing there can fail). */
    bool reads_whole_part;
    hpl__arg_view views[HPL__MAX_ARGS];
    hpl__op op;
} hpl__subkernel;

/* The dispatch's dimension that runs the domain's dimension i under walk
 * (and the domain's dimension a dispatch's dimension runs: a swap). */
static inline int hpl__walk_dim(int walk, int i)
{
    return i == 0 ? walk : i == walk ? 0 : i;
}

/* ---- dispatch.c: running ---------------------------------------------------- */

/* The kernel's extents of a view (a word view runs innermost first). */
void hpl__kernel_dims(const hpl__arg_view *v, uint64_t dims[3]);
/* Runs one subkernel as an operation of its own; whole: the eval's domain. */
int hpl__subkernel_run(hpl_context *ctx, hpl__subkernel *s, const hpl_arg *args, const uint64_t whole[3]);
/* Runs the subkernels of one eval, side by side unless one writes what
 * another touches (then in order). */
int hpl__subkernels_run(hpl_context *ctx, hpl__subkernel *s, int n, const hpl_arg *args, const uint64_t whole[3]);
/* The same, halos first (hpl_launch.halos_first): each subkernel runs the
 * w rows next to each neighbour (along the domain's dimension dim) as a
 * submission of its own, then the rest as another, so that what its
 * neighbours will read moves while the rest runs. Subkernels that must run
 * in order run as hpl__subkernels_run runs them. */
int hpl__subkernels_run_halos_first(hpl_context *ctx, hpl__subkernel *s, int n, const hpl_arg *args,
                                    const uint64_t whole[3], int dim, uint64_t w);
/* Runs the subkernels in two phases of rows of the domain's dimension dim
 * (ph[i]: subkernel i's ranges in each; a subkernel with none in a phase
 * sits it out), each phase's reads only what its rows read, and calls
 * between(user) in between, whatever the first phase returned (a context
 * over ranks: what the second phase's rows read from other ranks arrives
 * while the first phase runs). Subkernels must not run in order
 * (hpl__subkernels_must_run_in_order). After a failure of the second
 * phase, the first phase's rows have run. */
int hpl__subkernels_run_phases(hpl_context *ctx, hpl__subkernel *s, int n, const hpl_arg *args,
                               const uint64_t whole[3], int dim, const hpl__phases *ph, int (*between)(void *),
                               void *user);
/* Whether one subkernel writes what another touches (they then run one
 * after the other). */
bool hpl__subkernels_must_run_in_order(const hpl_context *ctx, const hpl__subkernel *s, int n);

#endif
