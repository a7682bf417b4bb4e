/* Planning an eval: its devices, the parts of its annotated arguments,
 * each device's subkernel (subkernel.h) with its domain, local size and
 * pipeline (launch.c). hpl_eval (eval.c) plans, then runs the subkernels
 * (dispatch.c). */
#ifndef HPL_LAUNCH_H
#define HPL_LAUNCH_H

#include "partition.h"
#include "subkernel.h"

/* An eval planned: its subkernels (one per part, in device order) and what
 * hpl_eval needs after running them. */
typedef struct hpl__launch_plan {
    /* Input: NULL, or one share per device of the eval (execution plans):
     * the split follows them (hpl__partition_cuts) instead of being even. */
    const double *shares;
    /* Input: NULL, or one piece [lo, hi) of the split dimension per device
     * of the eval (package schedules): pieces need not cover the domain;
     * devices with an empty one run nothing. */
    const hpl__part *given;
    hpl__subkernel *subkernels;     /* the context's scratch, held until hpl__launch_plan_done */
    int count;                      /* subkernels: parts (a plain eval has one) */
    int devices[HPL__MAX_DEVICES];  /* the eval's devices, those with a part first, in part order */
    int device_count;               /* of which the first `count` got a part */
    bool annotated;                 /* an argument is annotated (parts to remember) */
    int dim;                        /* the domain's split dimension */
    uint64_t whole[3];              /* the whole domain */
    hpl__part parts[HPL__MAX_DEVICES]; /* subkernel i's part of the domain along dim (no halo) */
    uint64_t halo_rows;             /* launch.halos_first: the rows each band runs (dispatch.c); 0: off */
} hpl__launch_plan;

/* Checks a device list given by the user, devices[0 .. count - 1] (count
 * already checked): each below `available` (the context's devices: this
 * process's, or every rank's on a context over ranks), none twice; `what`
 * names the field in messages ("launch.devices"). Copies it into out. */
int hpl__device_list_check(int available, const int *devices, int count, const char *what, int *out);
/* Checks the launch and the arguments and plans the eval's subkernels:
 * devices, parts of annotated arguments, domains, local sizes, pipelines.
 * p->subkernels must be NULL (the rest of *p is filled here); call
 * hpl__launch_plan_done after, whatever this returns. */
int hpl__launch_plan_make(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                          size_t nargs, hpl__launch_plan *p);
/* hpl_eval with the lock held and k found; given: NULL, or one piece per
 * device of the launch (hpl__launch_plan.given). */
int hpl__eval_locked(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args, size_t nargs,
                     const hpl__part *given);
/* The same (given: as above), each device's part run in two phases: first
 * the rows [first[d].lo, first[d].hi) of device d's part (d: the context's
 * device index; an empty range: none), then between(user) is called, then
 * the rest of each part. between is called exactly once, whatever fails
 * before it (a context over ranks: the moves between ranks). When the
 * parts cannot run so (one writes what another touches, or the eval is not
 * annotated), between is called first and the eval runs as
 * hpl__eval_locked runs it. */
int hpl__eval_locked_phased(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                            size_t nargs, const hpl__part *given, const hpl__part *first, int (*between)(void *),
                            void *user);
/* Gives the subkernels' scratch back. */
void hpl__launch_plan_done(hpl_context *ctx, hpl__launch_plan *p);
/* The part [lo, hi) (offsets along p->dim) of view `whole` with p's halo. */
hpl__arg_view hpl__part_view(const hpl__arg_view *whole, const hpl_partition *p, uint64_t lo, uint64_t hi);
/* *v = the whole (sub)array a as the kernel sees it. */
void hpl__arg_view_set(hpl__arg_view *v, hpl__array *a);
/* Clears s for `device` running kernel's variant for it: its fields and the
 * views of the variant's arguments (the rest of views[] and the op, 28 KiB
 * in all, are never read before they are set). */
void hpl__subkernel_init(hpl__subkernel *s, hpl__device *device, const hpl__kernel *kernel);
/* Checks s's device and local size (given_local, else the kernel's or the
 * library's choice) and gets its pipeline. */
int hpl__subkernel_setup(hpl_context *ctx, hpl__subkernel *s, const uint32_t given_local[3]);

#endif
