/* The api layer's functions that other files of lib/api call: arrays,
 * kernels, the library's own kernels, plans and traces at a context's end. */
#ifndef HPL_API_H
#define HPL_API_H

#include "engine.h"

/* array.c */
/* Makes a root array (hpl_array_create with the lock held). */
int hpl__array_make(hpl_context *ctx, const hpl_array_desc *desc, hpl__array **out);
/* Destroys an array or subarray (hpl_array_destroy with the lock held; the
 * wait for an array's work releases it). */
void hpl__array_drop(hpl_context *ctx, hpl__array *a);
int hpl__array_get(hpl_context *ctx, hpl_array handle, hpl__array **out);
hpl__view hpl__view_of(const hpl__array *a);
void hpl__array_destroy_all(hpl_context *ctx);
/* Readies `box` (NULL: all) of root's host storage for the host: brings it
 * valid there when fetch, and waits for the work the host must wait for
 * before reading it (for_write: before writing it), on that box only.
 * Releases the lock while waiting: look handles up again after. */
int hpl__host_sync(hpl_context *ctx, hpl__array *root, const hpl__box *box, bool fetch, bool for_write);
/* Returns (then forgets) an asynchronous error of root's work, or the
 * error of a failed device that holds it, with a message naming the array
 * (the caller prefixes its own name). */
int hpl__take_error(hpl_context *ctx, hpl__array *root);
/* Records that the host wrote a's owned box. */
int hpl__host_written(hpl__array *a);
/* a's first element in its root's host storage. */
uint8_t *hpl__host_pointer(const hpl__array *a);
/* Inclusive ranges relative to parent (one per dimension) as a box in root
 * coordinates; errors name the range at fault. */
int hpl__box_of_ranges(const hpl__array *parent, int nranges, const hpl_range *ranges, hpl__box *out);
/* The subarray of parent with box and owned box (root coordinates): the
 * existing one, else a new one (hpl_subarray, hpl_array_part). */
int hpl__subarray_make(hpl_context *ctx, hpl__array *parent, const hpl__box *box, const hpl__box *owned,
                       hpl__array **out);

/* builtin.c: the library's own kernels */
/* Fills a's owned box with value (one element) on device, asynchronously. */
int hpl__fill_on_device(hpl_context *ctx, hpl__array *a, const void *value, int device);
/* Can device reduce arrays of type (64-bit types need the features)? */
bool hpl__reduce_supported(const hpl__device *d, hpl_type type);
/* Reduces `box` of root on device to `groups` partial values (one per
 * work-group of 256) in partials[first .. first + groups), asynchronously. */
int hpl__reduce_on_device(hpl_context *ctx, hpl__array *root, const hpl__box *box, int device, hpl__array *partials,
                          uint64_t first, uint32_t groups, hpl_reduction op);

/* kernel.c */
int hpl__kernel_get(hpl_context *ctx, hpl_kernel handle, hpl__kernel **out);
const hpl__variant *hpl__kernel_variant_for(const hpl__kernel *k, const hpl__device *d);
/* The variant's pipeline on d for a local size (in the dispatch's order) and
 * walk (hplvk.glsl's hplvk_walk; 0 unless the variant is walkable). */
int hpl__pipeline_get(hpl_context *ctx, hpl__variant *v, hpl__device *d, const uint32_t local[3], int walk,
                      VkPipeline *out);
void hpl__kernel_destroy_all(hpl_context *ctx);
int hpl__kernel_create_locked(hpl_context *ctx, const hpl_kernel_desc *desc, hpl__kernel **out);

/* plan_handle.c */
/* Retires the plans left on the context: their handles go stale. */
void hpl__plans_destroy_all(hpl_context *ctx);

/* context.c: hpl_context_create, for a rank over `over` when not NULL
 * (its default device list; span.c joins the ranks after). */
int hpl__context_make(const hpl_context_desc *desc, const hpl_transport *over, hpl_context **out);

/* span.c: contexts over ranks (hplvk_transport.h, hplvk.h chapter 10);
 * the files below it call its work through ctx->span (engine.h). */
/* HPL_ERROR_UNSUPPORTED naming `what` on a context over ranks. */
int hpl__span_unsupported(const hpl_context *ctx, const char *what);
/* Under validation, the ranks compare the call (the text, and view a when
 * not NULL) and how it went so far (rc): one that differs, or failed on
 * some rank, fails on every rank (HPL_ERROR_RANKS_DIFFER). Returns rc
 * otherwise. */
int hpl__span_agree(hpl_context *ctx, int rc, const hpl__array *a, const char *fmt, ...) HPL__PRINTF(4, 5);
/* `where` of a fill, assignment or prefetch of a (HPL_WHERE_LAST_USED: its
 * last_where, a global device index on such a context): *resolved the
 * global device or HPL_ON_HOST; *local this rank's index of it, -1 when
 * another rank holds it, HPL_ON_HOST for the host; *owner its rank, -1
 * for the host (every rank's own). */
int hpl__span_where(const hpl_context *ctx, const hpl__array *a, int where, int *resolved, int *local, int *owner);
/* Collective: rank `to` (-1: every rank) receives what it lacks of view a
 * from the ranks that hold it. */
int hpl__span_bring(hpl_context *ctx, hpl__array *a, int to);
/* An operation whose parts the caller plans (a plan's runners): what each
 * rank's parts read and write, gathered with hpl__span_uses_add (rank:
 * the part's device's; read or written NULL: none); then, collectively,
 * hpl__span_uses_exchange before the parts run (each rank receives what it
 * lacks) and hpl__span_uses_record after (each rank holds what its parts
 * wrote, the others forget it). */
typedef struct hpl__span_uses hpl__span_uses;
hpl__span_uses *hpl__span_uses_new(void); /* NULL: out of memory */
void hpl__span_uses_free(hpl__span_uses *u);
int hpl__span_uses_add(hpl__span_uses *u, hpl__array *root, int rank, const hpl__box *read, const hpl__box *written);
int hpl__span_uses_exchange(hpl_context *ctx, hpl__span_uses *u);
int hpl__span_uses_record(hpl_context *ctx, hpl__span_uses *u);
/* An eval over ranks whose parts the caller runs its own way (a package
 * plan: packages within each rank): _begin does what hpl_eval does before
 * the parts run — under validation the ranks agree on the call, and each
 * rank receives what its devices' pieces (given: one per launch device,
 * global devices) read and it lacks; the caller then runs this rank's
 * pieces on its own devices, and _end (always called after a begin that
 * succeeded, with the run's result) records what each rank wrote, the
 * split and the last device, and frees the step. */
typedef struct hpl__span_step hpl__span_step;
int hpl__span_eval_begin(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                         size_t nargs, const hpl__part *given, hpl__span_step **out);
int hpl__span_eval_end(hpl_context *ctx, hpl__span_step *st, int rc);
/* Collective: rank `by` wrote view a's owned box (-1: every rank wrote the
 * same values on its host); the other ranks' memories no longer hold it. */
int hpl__span_wrote(hpl_context *ctx, hpl__array *a, int by);

/* trace.c: HPLVK_TRACE at context creation (a bad path is a warning), and
 * the trace written and the event log freed at its destruction. */
void hpl__trace_from_env(hpl_context *ctx);
void hpl__trace_at_destroy(hpl_context *ctx);

#endif
