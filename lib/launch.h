/* Running a kernel on devices: how a kernel sees its array arguments, one
 * device's share of an eval (a subkernel), planning an eval's subkernels
 * (launch.c) and running them (dispatch.c). hpl_eval (eval.c) plans and
 * runs; the library's own kernels (builtin.c) make their subkernel by hand
 * and run it the same way. */
#ifndef HPL_LAUNCH_H
#define HPL_LAUNCH_H

#include "access.h"

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
    uint64_t global[3]; /* its domain */
    uint64_t offset[3]; /* where its domain starts in the whole eval's */
    uint32_t local[3];
    VkPipeline pipeline;
    hpl__arg_view views[HPL__MAX_ARGS];
    hpl__op op;
} hpl__subkernel;

/* ---- launch.c: planning ---------------------------------------------------- */

/* An eval planned: its subkernels (one per part, in device order) and what
 * hpl_eval needs after running them. */
typedef struct hpl__launch_plan {
    hpl__subkernel *subkernels;     /* the context's scratch, held until hpl__launch_plan_done */
    int count;                      /* subkernels: parts (a plain eval has one) */
    int devices[HPL__MAX_DEVICES];  /* the eval's devices, in part order */
    int device_count;               /* of which the first `count` got a part */
    bool annotated;                 /* an argument is annotated (parts to remember) */
    int dim;                        /* the domain's split dimension */
    uint64_t whole[3];              /* the whole domain */
} hpl__launch_plan;

/* Checks the launch and the arguments and plans the eval's subkernels:
 * devices, parts of annotated arguments, domains, local sizes, pipelines.
 * p->subkernels must be NULL (the rest of *p is filled here); call
 * hpl__launch_plan_done after, whatever this returns. */
int hpl__launch_plan_make(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                          size_t nargs, hpl__launch_plan *p);
/* Gives the subkernels' scratch back. */
void hpl__launch_plan_done(hpl_context *ctx, hpl__launch_plan *p);
/* Part `index` of `parts` of view `whole` split as p says (hpl_array_part). */
hpl__arg_view hpl__part_view(const hpl__arg_view *whole, const hpl_partition *p, int parts, int index);
/* *v = the whole (sub)array a as the kernel sees it. */
void hpl__arg_view_set(hpl__arg_view *v, hpl__array *a);
/* Clears s for `device` running kernel's variant for it: its fields and the
 * views of the variant's arguments (the rest of views[] and the op, 28 KiB
 * in all, are never read before they are set). */
void hpl__subkernel_init(hpl__subkernel *s, hpl__device *device, const hpl__kernel *kernel);
/* Checks s's device and local size (given_local, else the kernel's or the
 * library's choice) and gets its pipeline. */
int hpl__subkernel_setup(hpl_context *ctx, hpl__subkernel *s, const uint32_t given_local[3]);

/* ---- dispatch.c: running ---------------------------------------------------- */

/* The kernel's extents of a view (a word view runs innermost first). */
void hpl__kernel_dims(const hpl__arg_view *v, uint64_t dims[3]);
/* Runs one subkernel as an operation of its own; whole: the eval's domain. */
int hpl__subkernel_run(hpl_context *ctx, hpl__subkernel *s, const hpl_arg *args, const uint64_t whole[3]);
/* Runs the subkernels of one eval, side by side unless one writes what
 * another touches (then in order). */
int hpl__subkernels_run(hpl_context *ctx, hpl__subkernel *s, int n, const hpl_arg *args, const uint64_t whole[3]);

#endif
