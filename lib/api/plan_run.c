/* Running one distribution of a plan eval: pieces of the split dimension,
 * one per device, either through the annotations (an eval given the
 * pieces) or through the user's partitioner and its runners, and reading
 * back what each device spent on it from the event log; over ranks, the
 * measurements made the same on every rank. */
#include "api.h"

#include "events.h"
#include "launch.h"
#include "plan.h"
#include "subkernel.h"

#include <math.h>
#include <string.h>

/* ---- geometry ------------------------------------------------------------ */

int hpl__plan_geometry_find(hpl__plan *plan, const hpl_arg *args, size_t nargs)
{
    hpl_context *ctx = plan->ctx;
    hpl_launch l = {.global = {plan->launch.global[0], plan->launch.global[1], plan->launch.global[2]},
                    .local = {plan->launch.local[0], plan->launch.local[1], plan->launch.local[2]}};
    if (plan->partitioner) {
        /* Over ranks, on one of this rank's own devices (the plan's are
         * every rank's): the geometry does not depend on the device. */
        l.device = ctx->span ? 0 : plan->devices[0];
    } else if (ctx->span) {
        /* The geometry does not depend on the devices: planned on one of
         * this rank's own (the plan's are every rank's). */
        l.devices[0] = 0;
        l.device_count = 1;
    } else {
        memcpy(l.devices, plan->devices, sizeof l.devices);
        l.device_count = plan->device_count;
    }
    hpl__launch_plan lp = {0};
    HPL__LOCK(ctx);
    int rc = hpl__launch_plan_make(ctx, plan->kernel, &l, args, nargs, &lp);
    if (rc == HPL_OK) {
        hpl__plan_geometry *g = &plan->geometry;
        memcpy(g->whole, lp.whole, sizeof g->whole);
        g->dim = plan->partitioner ? 0 : lp.dim;
        g->granule = l.local[g->dim] ? l.local[g->dim] : 1; /* cuts on work-groups only when asked (HPL) */
        memcpy(g->local, lp.subkernels[0].local, sizeof g->local);
    }
    hpl__launch_plan_done(ctx, &lp);
    HPL__UNLOCK(ctx);
    return rc;
}

int hpl__plan_pieces(const hpl__plan *plan, const double *shares, hpl__piece *pieces)
{
    const hpl__plan_geometry *g = &plan->geometry;
    uint64_t cuts[HPL__MAX_DEVICES + 1];
    hpl__partition_cuts(g->whole[g->dim], plan->device_count, shares, g->granule, cuts);
    int n = 0;
    for (int i = 0; i < plan->device_count; i++)
        if (cuts[i] < cuts[i + 1])
            pieces[n++] = (hpl__piece){.device = i, .lo = cuts[i], .hi = cuts[i + 1]};
    return n;
}

void hpl__plan_note_pieces(hpl__plan *plan, const hpl__piece *pieces, int count)
{
    hpl_plan_info *last = &plan->last;
    const hpl__plan_geometry *g = &plan->geometry;
    for (int i = 0; i < plan->device_count; i++) {
        last->in_use[i] = false;
        last->rows[i] = 0;
        last->packages[i] = 0;
        for (int d = 0; d < 3; d++)
            last->ranges[i][d] = (hpl_range){1, 0};
    }
    for (int p = 0; p < count; p++) {
        int i = pieces[p].device;
        hpl_range *r = last->ranges[i];
        for (int d = 0; d < 3; d++)
            r[d] = (hpl_range){0, g->whole[d] - 1};
        r[g->dim] = (hpl_range){pieces[p].lo, pieces[p].hi - 1};
        last->in_use[i] = true;
        last->rows[i] = pieces[p].hi - pieces[p].lo;
    }
}

/* ---- the same measurements on every rank ----------------------------------- */

/* Over ranks, every rank must take the same decisions from the same
 * numbers (plan.h): per device, each its own rank's; else host
 * measurements, the largest over the ranks (a step takes as long as its
 * slowest rank). */
int hpl__plan_share(hpl__plan *plan, double *v, int n, bool per_device)
{
    hpl_context *ctx = plan->ctx;
    hpl__span *sp = ctx->span;
    if (!sp || sp->ranks < 2)
        return HPL_OK;
    double *all = hpl__calloc((size_t)sp->ranks * (size_t)n, sizeof *all);
    if (!all)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    char error[512] = "";
    HPL__LOCK(ctx);
    int rc = sp->transport.allgather(sp->transport.user, v, (size_t)n * sizeof *v, all, error, sizeof error);
    HPL__UNLOCK(ctx);
    if (rc != HPL_OK)
        rc = hpl__fail(rc, "the ranks could not share the plan's measurements: %s", error);
    for (int i = 0; rc == HPL_OK && i < n; i++) {
        if (per_device) {
            v[i] = all[(size_t)sp->owner[plan->devices[i % plan->device_count]] * (size_t)n + (size_t)i];
        } else {
            for (int r = 0; r < sp->ranks; r++)
                v[i] = fmax(v[i], all[(size_t)r * (size_t)n + (size_t)i]);
        }
    }
    hpl__free(all);
    return rc;
}

/* ---- by annotation --------------------------------------------------------- */

static int run_annotated(hpl__plan *plan, const hpl_arg *args, size_t nargs, const hpl__piece *pieces, int count)
{
    hpl_launch l = {.global = {plan->launch.global[0], plan->launch.global[1], plan->launch.global[2]},
                    .local = {plan->launch.local[0], plan->launch.local[1], plan->launch.local[2]},
                    .device_count = plan->device_count};
    memcpy(l.devices, plan->devices, sizeof l.devices);
    hpl__part given[HPL__MAX_DEVICES] = {{0}};
    for (int p = 0; p < count; p++)
        given[pieces[p].device] = (hpl__part){.lo = pieces[p].lo, .hi = pieces[p].hi};
    hpl_context *ctx = plan->ctx;
    HPL__LOCK(ctx);
    int rc = ctx->span ? ctx->span->eval(ctx, plan->kernel, &l, args, nargs, given)
                       : hpl__eval_locked(ctx, plan->kernel, &l, args, nargs, given);
    HPL__UNLOCK(ctx);
    return rc;
}

/* ---- by partitioner ------------------------------------------------------- */

/* Drops the subarrays the runners made (views: no data changes; their
 * subkernels see their parents, not them). */
static void runners_clean(hpl__plan *plan, int count)
{
    for (int i = 0; i < count; i++) {
        hpl__runner *r = &plan->runners[i];
        for (int m = 0; m < r->part_count; m++)
            if (r->parts[m].made)
                hpl_array_destroy(plan->ctx, r->parts[m].array);
        r->part_count = 0;
    }
}

/* One runner's partitioner call. Its error: the partitioner's own when
 * an hplvk call of its thread failed during it (prefixed once), else a
 * message saying what it returned (the thread's last message is older). */
static int call_partitioner(hpl__plan *plan, hpl__runner *r, const hpl_range *ranges, const hpl_arg *args,
                            size_t nargs)
{
    unsigned failures = hpl__error_count();
    hpl__runner_open(r);
    int rc = plan->partitioner(r->token, ranges, args, nargs, plan->user);
    hpl__runner_close(r);
    if (rc == HPL_OK && !r->ran)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "the partitioner returned without calling hpl_runner_run for device %d (rows %llu..%llu)",
                         r->device, (unsigned long long)r->lo, (unsigned long long)(r->hi - 1));
    if (rc == HPL_OK)
        return rc;
    if (!strcmp(hpl_error_name(rc), "HPL_UNKNOWN"))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "the partitioner returned %d, which is not an hpl error code", rc);
    if (hpl__error_count() == failures)
        return hpl__fail(rc, "the partitioner returned %d (%s) without a failing hplvk call", rc, hpl_error_name(rc));
    hpl__error_prefix("the partitioner");
    return rc;
}

/* Over ranks: what each runner's subkernel reads (its views' boxes) and
 * writes (their owned boxes), by the rank of its device; every rank knows
 * every runner's views, as every rank called the partitioner for every
 * piece. */
static int runner_uses(hpl__plan *plan, int count, hpl__span_uses *u)
{
    const hpl__span *sp = plan->ctx->span;
    int rc = HPL_OK;
    for (int p = 0; rc == HPL_OK && p < count; p++) {
        const hpl__runner *r = &plan->runners[p];
        const hpl__subkernel *s = &plan->subkernels[p];
        const hpl__reflection *refl = &s->variant->reflection;
        for (int i = 0; rc == HPL_OK && i < refl->arg_count; i++) {
            if (r->args[i].kind != HPL_ARG_ARRAY)
                continue;
            const hpl__arg_view *v = &s->views[i];
            hpl_access access = refl->args[i].access;
            rc = hpl__span_uses_add(u, v->array->root, sp->owner[r->device], (access & HPL_READ) ? &v->at.box : NULL,
                                    (access & HPL_WRITE) ? &v->at.owned : NULL);
        }
    }
    return rc;
}

/* Over ranks, after the partitioner calls (status rc on this rank): every
 * rank agrees on the status, moves what its runners read and lacks, runs
 * its own runners' subkernels (moved to the front of plan->subkernels) and
 * records what every rank's wrote. Lock held. */
static int run_over_ranks(hpl__plan *plan, int rc, int count)
{
    hpl_context *ctx = plan->ctx;
    hpl__span_uses *u = NULL;
    if (rc == HPL_OK && !(u = hpl__span_uses_new()))
        rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (rc == HPL_OK)
        rc = runner_uses(plan, count, u);
    /* One rank's failure (its partitioner's, say) fails every rank, before
     * anything moves (with validation on: else the ranks are trusted). */
    rc = hpl__span_agree(ctx, rc, NULL, "hpl_plan_eval(%s) by partitioner: %d runners", plan->kernel->name, count);
    if (rc == HPL_OK)
        rc = hpl__span_uses_exchange(ctx, u);
    /* HPL_WHERE_LAST_USED: as on one process, each array's last runner's
     * device, by its global index on every rank (noted before the
     * subkernels move). */
    hpl__array *used[HPL__MAX_ARGS];
    int where[HPL__MAX_ARGS], nused = 0;
    for (int p = 0; rc == HPL_OK && p < count; p++) {
        const hpl__subkernel *s = &plan->subkernels[p];
        for (int i = 0; i < s->variant->reflection.arg_count; i++) {
            if (plan->runners[p].args[i].kind != HPL_ARG_ARRAY)
                continue;
            int k = 0;
            while (k < nused && used[k] != s->views[i].array)
                k++;
            if (k == nused && nused == HPL__MAX_ARGS)
                continue;
            used[k] = s->views[i].array;
            where[k] = plan->runners[p].device;
            nused += k == nused;
        }
    }
    int mine = 0;
    for (int p = 0; rc == HPL_OK && p < count; p++) {
        if (plan->runners[p].remote)
            continue;
        if (mine != p)
            plan->subkernels[mine] = plan->subkernels[p];
        mine++;
    }
    if (rc == HPL_OK && mine)
        rc = hpl__subkernels_run(ctx, plan->subkernels, mine, NULL, plan->geometry.whole);
    if (rc == HPL_OK)
        rc = hpl__span_uses_record(ctx, u);
    for (int k = 0; rc == HPL_OK && k < nused; k++)
        used[k]->last_where = where[k];
    hpl__span_uses_free(u);
    return rc;
}

static int run_partitioned(hpl__plan *plan, const hpl_arg *args, size_t nargs, const hpl__piece *pieces, int count)
{
    if (!plan->subkernels && !(plan->subkernels = hpl__calloc(HPL__MAX_DEVICES, sizeof *plan->subkernels)))
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    const uint64_t *whole = plan->geometry.whole;
    int rc = HPL_OK, called = 0;
    /* Over ranks, every rank calls the partitioner for every piece, its
     * own devices' and the others' (the user's code, the same on every
     * rank): so each knows what every runner reads and writes. */
    for (int p = 0; rc == HPL_OK && p < count; p++, called++) {
        hpl__runner *r = &plan->runners[p];
        *r = (hpl__runner){.plan = plan, .device = plan->devices[pieces[p].device], .lo = pieces[p].lo,
                           .hi = pieces[p].hi, .sub = &plan->subkernels[p]};
        hpl_range ranges[3];
        for (int d = 0; d < 3; d++)
            ranges[d] = (hpl_range){0, whole[d] - 1};
        ranges[0] = (hpl_range){r->lo, r->hi - 1};
        rc = call_partitioner(plan, r, ranges, args, nargs);
    }
    if (plan->ctx->span) {
        HPL__LOCK(plan->ctx);
        rc = run_over_ranks(plan, rc, count);
        HPL__UNLOCK(plan->ctx);
    } else if (rc == HPL_OK) {
        HPL__LOCK(plan->ctx);
        rc = hpl__subkernels_run(plan->ctx, plan->subkernels, count, NULL, whole);
        HPL__UNLOCK(plan->ctx);
    }
    runners_clean(plan, called);
    return rc;
}

int hpl__plan_run(hpl__plan *plan, const hpl_arg *args, size_t nargs, const hpl__piece *pieces, int count)
{
    int rc = plan->partitioner ? run_partitioned(plan, args, nargs, pieces, count)
                               : run_annotated(plan, args, nargs, pieces, count);
    if (rc == HPL_OK)
        hpl__plan_note_pieces(plan, pieces, count);
    return rc;
}

/* ---- runners --------------------------------------------------------------- */

/* The runner's subarrays are parts of their parents (chapter 7b): the
 * kernel indexes them like the parent, sees their box, owns their owned
 * box. */
static void view_as_part(hpl__arg_view *v)
{
    hpl__array *sub = v->array;
    hpl__arg_view_set(v, sub->parent);
    v->is_part = true;
    v->whole = v->at.box;
    v->whole_owned = v->at.owned;
    v->at.box = sub->box;
    v->at.owned = sub->owned;
}

static bool is_part(const hpl__runner *r, hpl__handle id)
{
    for (int m = 0; m < r->part_count; m++)
        if (r->parts[m].array.id == id)
            return true;
    return false;
}

static int runner_run_locked(hpl__runner *r, const hpl_arg *args, size_t nargs)
{
    hpl__plan *plan = r->plan;
    if (r->ran)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "called twice for device %d: a runner runs once", r->device);
    if (nargs > HPL__MAX_ARGS)
        return hpl__fail(HPL_ERROR_ARGUMENT_MISMATCH, "%zu arguments: a kernel takes at most %d", nargs,
                         HPL__MAX_ARGS);
    for (size_t i = 0; i < nargs; i++)
        if (args[i].part.on)
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                             "argument %zu is annotated (hpl_part): in a partitioner, pass hpl_runner_subarray()s", i);
    const uint64_t *whole = plan->geometry.whole;
    /* Over ranks, r->device is global: another rank's device's subkernel
     * is planned on this rank's device 0, for its views only. */
    int device = r->device;
    if (plan->ctx->span) {
        device = hpl__span_local(plan->ctx->span, r->device);
        r->remote = device < 0;
        device = r->remote ? 0 : device;
    }
    hpl_launch l = {.global = {whole[0], whole[1], whole[2]},
                    .local = {plan->launch.local[0], plan->launch.local[1], plan->launch.local[2]},
                    .device = device};
    hpl__launch_plan lp = {0};
    int rc = hpl__launch_plan_make(plan->ctx, plan->kernel, &l, args, nargs, &lp);
    if (rc == HPL_OK) {
        hpl__subkernel *s = &lp.subkernels[0];
        for (size_t i = 0; i < nargs; i++)
            if (args[i].kind == HPL_ARG_ARRAY && is_part(r, args[i].value.array.id))
                view_as_part(&s->views[i]);
        s->offset[0] = r->lo;
        s->global[0] = r->hi - r->lo;
        memcpy(r->args, args, nargs * sizeof *args);
        s->args = r->args;
        memcpy(r->sub, s, sizeof *s);
        r->ran = true;
    }
    hpl__launch_plan_done(plan->ctx, &lp);
    return rc;
}

int hpl_runner_run(hpl_runner *token, const hpl_arg *args, size_t nargs)
{
    hpl__runner *r = NULL;
    int rc = nargs && !args ? hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "args is NULL") : hpl__runner_find(token, &r);
    if (rc == HPL_OK) {
        HPL__LOCK(r->plan->ctx);
        rc = runner_run_locked(r, args, nargs);
        HPL__UNLOCK(r->plan->ctx);
    }
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_runner_run");
    return rc;
}

/* Owned: the box's rows inside the runner's, within the parent's own
 * owned box; none (an empty box at its corner) when they miss. */
static hpl__box owned_rows(const hpl__runner *r, const hpl__array *parent, const hpl__box *box)
{
    hpl__box rows = *box, owned;
    rows.lo[0] = HPL__MAX(box->lo[0], parent->box.lo[0] + r->lo);
    rows.hi[0] = HPL__MIN(box->hi[0], parent->box.lo[0] + r->hi);
    if (rows.lo[0] < rows.hi[0] && hpl__box_intersect(&rows, &parent->owned, &owned))
        return owned;
    return (hpl__box){.lo = {box->lo[0], box->lo[1], box->lo[2]}, .hi = {box->lo[0], box->lo[1], box->lo[2]}};
}

static int runner_subarray_locked(hpl__runner *r, hpl_array parent_handle, int nranges, const hpl_range *ranges,
                                  hpl_array *out)
{
    hpl_context *ctx = r->plan->ctx;
    hpl__array *parent = NULL;
    int rc = hpl__array_get(ctx, parent_handle, &parent);
    if (rc != HPL_OK)
        return rc;
    hpl__box box;
    rc = hpl__box_of_ranges(parent, nranges, ranges, &box);
    if (rc != HPL_OK)
        return rc;
    if (r->part_count == HPL__RUNNER_PARTS)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "a runner asks for at most %d subarrays", HPL__RUNNER_PARTS);
    hpl__box owned = owned_rows(r, parent, &box);
    uint32_t children = parent->child_count;
    hpl__array *s = NULL;
    rc = hpl__subarray_make(ctx, parent, &box, &owned, &s);
    if (rc != HPL_OK)
        return rc;
    /* One already there (an hpl_subarray of the same box and owned box, or
     * this runner's own) is used as it is, and outlives the run. */
    if (!is_part(r, s->id))
        r->parts[r->part_count++] = (hpl__runner_part){.array = {s->id}, .made = parent->child_count > children};
    out->id = s->id;
    return HPL_OK;
}

int hpl_runner_subarray(hpl_runner *token, hpl_array parent, int nranges, const hpl_range *ranges, hpl_array *out)
{
    hpl__runner *r = NULL;
    int rc = !ranges || !out ? hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s is NULL", !ranges ? "ranges" : "out")
                             : hpl__runner_find(token, &r);
    if (rc == HPL_OK) {
        HPL__LOCK(r->plan->ctx);
        rc = runner_subarray_locked(r, parent, nranges, ranges, out);
        HPL__UNLOCK(r->plan->ctx);
    }
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_runner_subarray");
    return rc;
}

int hpl_runner_device(const hpl_runner *token)
{
    hpl__runner *r = NULL;
    int rc = hpl__runner_find(token, &r);
    if (rc != HPL_OK) {
        hpl__error_prefix("hpl_runner_device");
        return rc;
    }
    return r->device;
}

/* ---- times ------------------------------------------------------------------ */

typedef struct times_walk {
    const hpl__plan *plan;
    hpl__plan_times *t;
} times_walk;

static void add_event(void *user, const hpl__event *e, uint64_t begin_ns, uint64_t end_ns)
{
    times_walk *w = user;
    const hpl__span *sp = w->plan->ctx->span;
    for (int i = 0; i < w->plan->device_count; i++) {
        int local = sp ? hpl__span_local(sp, w->plan->devices[i]) : w->plan->devices[i];
        if (local != e->device)
            continue;
        double s = end_ns > begin_ns ? (double)(end_ns - begin_ns) * 1e-9 : 0.0;
        if (e->kind == HPL__EVENT_KERNEL)
            w->t->kernel[i] += s;
        else if (e->kind == HPL__EVENT_COPY)
            w->t->copy[i] += s;
    }
}

void hpl__plan_times_collect(hpl__plan *plan, uint64_t from, hpl__plan_times *t)
{
    memset(t, 0, sizeof *t);
    times_walk w = {plan, t};
    HPL__LOCK(plan->ctx);
    hpl__events_poll(plan->ctx);
    hpl__events_each(plan->ctx, from, add_event, &w);
    HPL__UNLOCK(plan->ctx);
}
