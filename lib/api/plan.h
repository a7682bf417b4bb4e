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

/* The objects behind the public hpl_plan and hpl_runner, which are never
 * their addresses but checked tokens (plan_handle.c). */
typedef struct hpl__plan hpl__plan;
typedef struct hpl__runner hpl__runner;

#define HPL__RUNNER_PARTS 16 /* runner subarrays one runner may ask for */

/* A subarray hpl_runner_subarray gave the runner: run as a part of its
 * parent (chapter 7c). */
typedef struct hpl__runner_part {
    hpl_array array;
    bool made; /* the runner made it (destroyed after the run); else it was there already */
} hpl__runner_part;

struct hpl__runner {
    hpl__plan *plan;
    hpl_runner *token;   /* what the partitioner holds; valid during its call only */
    hpl__runner *next_open; /* the runners whose partitioner call is in progress (plan_handle.c) */
    int device;          /* the context's device index (over ranks: global) */
    bool remote;         /* over ranks: another rank's device; its subkernel, planned on
                            this rank's device 0 for its views only, never runs here */
    uint64_t lo, hi;     /* its rows of the domain's dimension 0 */
    hpl__subkernel *sub; /* where hpl_runner_run leaves the subkernel */
    hpl_arg args[HPL__MAX_ARGS]; /* what it ran with (scalars are read at submission) */
    bool ran;
    int part_count;
    hpl__runner_part parts[HPL__RUNNER_PARTS];
};

struct hpl__plan {
    hpl_context *ctx;
    struct hpl__plan *next; /* the context's plans */
    hpl_plan *token;        /* what the user holds */
    /* Under the registry's lock (plan_handle.c): */
    int pins;               /* calls using the plan now: it is freed after the last */
    bool evaluating;        /* in hpl_plan_eval or hpl_plan_reset */
    bool destroyed;         /* its token is stale; freed once no call pins it */
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
    /* Over ranks: each rank's rows per second in the last package eval of
     * a kernel over rank_rows rows, at the entry of each of its
     * devices (the same on every rank; 0: not known); rank_kernel the
     * kernel_id it ran. */
    double rank_speed[HPL__MAX_DEVICES];
    uint64_t rank_rows, rank_kernel;
    long cores; /* the host's, once: asking costs a file read per eval */
    /* The eval in progress (valid during hpl_plan_eval only). */
    uint64_t kernel_id;
    hpl__kernel *kernel;
    hpl_launch launch;
    hpl__plan_geometry geometry;
    hpl__subkernel *subkernels; /* HPL__MAX_DEVICES, for partitioner runs */
    hpl__runner runners[HPL__MAX_DEVICES];
    /* The last eval, for hpl_plan_get_info. */
    hpl_plan_info last;
};

/* ---- plan_handle.c ----------------------------------------------------- */

/* Gives plan its token (plan->token) and puts it on its context's list;
 * HPL_ERROR_OUT_OF_HOST_MEMORY, or HPL_ERROR_UNSUPPORTED when the process
 * has no slot left. */
int hpl__plan_register(hpl__plan *plan);
/* The plan of token, pinned: not freed before hpl__plan_unpin, even when
 * destroyed meanwhile. exclusive: for an eval or a reset, refused while
 * one of them is in progress (HPL_ERROR_INVALID_ARGUMENT). A NULL, stale
 * or foreign token: an error recorded naming why, *out untouched. */
int hpl__plan_pin(hpl_plan *token, bool exclusive, hpl__plan **out);
/* Ends a pin (exclusive as it was taken); frees the plan when it was
 * destroyed meanwhile and this was its last pin. */
void hpl__plan_unpin(hpl__plan *plan, bool exclusive);
/* hpl_plan_destroy: the token goes stale at once; the plan is freed now,
 * or by the unpin of the call that still uses it. A bad token: an error
 * recorded, nothing else. */
int hpl__plan_retire(hpl_plan *token);
/* A runner's partitioner call begins (r->token is given) or ends (the
 * token goes stale for good). */
void hpl__runner_open(hpl__runner *r);
void hpl__runner_close(hpl__runner *r);
/* The runner of a token whose partitioner call is in progress; else an
 * error recorded naming why (NULL, its call returned, not a runner). */
int hpl__runner_find(const hpl_runner *token, hpl__runner **out);

/* ---- plan_run.c ------------------------------------------------------- */

/* The eval's geometry (and a check of its arguments against the kernel). */
int hpl__plan_geometry_find(hpl__plan *plan, const hpl_arg *args, size_t nargs);
/* Runs the pieces (at most one per device) as one eval; lock not held. */
int hpl__plan_run(hpl__plan *plan, const hpl_arg *args, size_t nargs, const hpl__piece *pieces, int count);
/* The pieces of `shares` over the split dimension (empty ones left out). */
int hpl__plan_pieces(const hpl__plan *plan, const double *shares, hpl__piece *pieces);
/* Times of the completed events of serial >= from, per plan device. */
void hpl__plan_times_collect(hpl__plan *plan, uint64_t from, hpl__plan_times *t);
/* Records pieces in plan->last (ranges, rows, in_use). */
void hpl__plan_note_pieces(hpl__plan *plan, const hpl__piece *pieces, int count);

/* ---- plan_packages.c --------------------------------------------------- */

/* One eval handed out in packages (DYNAMIC, HGUIDED, AUTO_TUNE); once the
 * alone check found a device faster alone (plan->alone_won), that device's
 * alone, as a plain eval. */
int hpl__plan_packages(hpl__plan *plan, const hpl_arg *args, size_t nargs);

/* plan_run.c: over ranks, v[0 .. n - 1] become the same on every rank.
 * per_device: n is a multiple of the plan's device count, v[k] belongs to
 * plan device k % device_count and each rank's own devices' entries are
 * taken from it; else each entry becomes the largest over the ranks.
 * Nothing on one process. */
int hpl__plan_share(hpl__plan *plan, double *v, int n, bool per_device);

#endif
