/* Execution plans (hplvk.h chapter 7c): the plan object (plan.c), running
 * one distribution of an eval and timing it (plan_run.c), the searches
 * that choose a distribution (plan.c, over lib/base/balance.h) and package
 * schedules within one eval (plan_packages.c, over lib/base/schedule.h). */
#ifndef HPL_PLAN_H
#define HPL_PLAN_H

#include "balance.h"
#include "warmth.h"
#include "launch.h"

/* One device's piece of an eval: rows [lo, hi) of the split dimension. */
typedef struct hpl__piece {
    int device; /* index into the plan's devices */
    uint64_t lo, hi;
} hpl__piece;

/* An eval's geometry, found once per plan eval before anything runs. */
typedef struct hpl__plan_geometry {
    uint64_t whole[3]; /* the whole domain */
    int dim;           /* the split dimension (annotations may choose it; a partitioner splits 0) */
    uint64_t granule;  /* cuts of a distribution fall on multiples of it: launch.local[dim], else 1 */
    uint32_t local[3]; /* the local size (the first device's): packages are whole work-groups */
} hpl__plan_geometry;

/* Per device time of one run: kernels, and copies that ran on it. */
typedef struct hpl__plan_times {
    double kernel[HPL__MAX_DEVICES];
    double copy[HPL__MAX_DEVICES];
} hpl__plan_times;

#define HPL__RUNNER_MADE 16 /* subarrays one runner may make */

struct hpl_runner {
    hpl_plan *plan;
    int device;          /* the context's device index */
    uint64_t lo, hi;     /* its rows of the domain's dimension 0 */
    hpl__subkernel *sub; /* where hpl_runner_run leaves the subkernel */
    hpl_arg args[HPL__MAX_ARGS]; /* what it ran with (scalars are read at submission) */
    bool ran;
    int made_count;
    hpl_array made[HPL__RUNNER_MADE]; /* subarrays it made, destroyed after the run */
};

struct hpl_plan {
    hpl_context *ctx;
    struct hpl_plan *next; /* the context's plans */
    hpl_balance balance;
    int device_count;
    int devices[HPL__MAX_DEVICES];
    double shares[HPL__MAX_DEVICES]; /* what the next eval runs */
    bool shares_given;               /* by the user (HGUIDED, AUTO_TUNE: nominal powers) */
    hpl__balance_params params;
    uint64_t package;
    bool time_transfers;
    bool keep_split; /* no alone check (hpl_plan_desc.keep_split) */
    bool warms[HPL__MAX_DEVICES];    /* a search warms the device up (hpl_plan_desc.warm_up) */
    int warm_ups;                    /* times the search did, */
    double warm_up_ms;               /* taking this long */
    hpl_partitioner partitioner;
    void *user;
    hpl__balance search; /* searches and ADAPTIVE */
    bool searched;
    bool alone_checked, alone_won; /* the search's answer (package schemes: the scheme) against
                                      its largest device alone */
    int alone_device;              /* which, when it won */
    bool package_checked;          /* package schemes: the first eval's check is done (or had
                                      nothing to compare: one device ran everything) */
    double alone_ms, split_ms;     /* their host times */
    int runs;                      /* timed runs a search or ADAPTIVE really made (hpl_plan_info.runs) */
    /* Package schemes: each device's speed (rows per second) as the last
     * eval of this kernel over this many units left it, for the next. */
    double package_speed[HPL__MAX_DEVICES];
    uint64_t package_kernel, package_units;
    long cores; /* the host's, once: asking costs a file read per eval */
    /* The eval in progress (valid during hpl_plan_eval only). */
    uint64_t kernel_id;
    hpl__kernel *kernel;
    hpl_launch launch;
    hpl__plan_geometry geometry;
    hpl__subkernel *subkernels; /* HPL__MAX_DEVICES, for partitioner runs */
    hpl_runner runners[HPL__MAX_DEVICES];
    /* The last eval, for hpl_plan_get_info. */
    hpl_plan_info last;
};

/* ---- plan_run.c ------------------------------------------------------- */

/* The eval's geometry (and a check of its arguments against the kernel). */
int hpl__plan_geometry_find(hpl_plan *plan, const hpl_arg *args, size_t nargs);
/* Runs the pieces (at most one per device) as one eval; lock not held. */
int hpl__plan_run(hpl_plan *plan, const hpl_arg *args, size_t nargs, const hpl__piece *pieces, int count);
/* The pieces of `shares` over the split dimension (empty ones left out). */
int hpl__plan_pieces(const hpl_plan *plan, const double *shares, hpl__piece *pieces);
/* Times of the completed events of serial >= from, per plan device. */
void hpl__plan_times_collect(hpl_plan *plan, uint64_t from, hpl__plan_times *t);
/* Records pieces in plan->last (ranges, rows, in_use). */
void hpl__plan_note_pieces(hpl_plan *plan, const hpl__piece *pieces, int count);

/* ---- plan_packages.c --------------------------------------------------- */

/* One eval handed out in packages (DYNAMIC, HGUIDED, AUTO_TUNE); once the
 * alone check found a device faster alone (plan->alone_won), that device's
 * alone, as a plain eval. */
int hpl__plan_packages(hpl_plan *plan, const hpl_arg *args, size_t nargs);

#endif
