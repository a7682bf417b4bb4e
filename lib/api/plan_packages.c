/* One plan eval handed out in packages (paper 001 section 3: DYNAMIC,
 * HGUIDED, AUTO_TUNE; the sizes come from lib/base/schedule.h): each
 * package is a piece of the split dimension run on one device as an eval
 * of its own, so its data moves when it runs, only what it lacks. A device
 * keeps up to two packages in its queue (the next one is recorded while
 * the current one runs, so the device does not idle while the host reacts);
 * the host waits for whichever package ends first and gives that device
 * its next one. Package times are the device's own (its kernels and copies,
 * from the event log), which AUTO_TUNE turns into speeds.
 *
 * Beyond the papers (schedule.h: speeds, probe, tail_guard): the speeds
 * one eval measured start the next eval of the same kernel over the same
 * units; a device declines a package it would still be running after the
 * others finished everything; without nominal powers AUTO_TUNE probes
 * with minimum packages; and when the known speeds leave one device worth
 * running, the eval is that device's alone, run as a plain eval (no
 * packages, no waiting), until hpl_plan_reset. So a CPU 180x slower than
 * the GPU beside it costs one small package in the first eval, and
 * nothing after. The same when the plan's alone check (plan.c) found the
 * scheme slower than one device alone.
 *
 * Over ranks the packages stay within a rank: the rows go to the ranks by
 * shares (each rank's rows per second in the last eval, the same numbers
 * on every rank; at first, its devices' given shares or their count), each
 * rank receives what its rows read and it lacks (span.c's eval begin),
 * runs the scheme over its own devices on its rows, and the ranks then
 * share what each device ran (hpl_plan_info is the same on every rank). */
#define _POSIX_C_SOURCE 199309L
#include "api.h"
#include "events.h"
#include "plan.h"
#include "rank_state.h"
#include "schedule.h"
#include "submit.h"
#include "vk.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define QUEUE_DEPTH 2

typedef struct package {
    uint64_t first, count;  /* units */
    uint64_t value;         /* the device's timeline value it completes at */
    uint64_t serial_from, serial_to; /* its events */
} package;

/* The scheme's devices are the plan's (k: plan device k), or over ranks
 * this rank's of them (k: plan device dev[k]); the rows those of [first,
 * end) of the split dimension. Arrays below are by k. */
typedef struct package_run {
    hpl__plan *plan;
    const hpl_arg *args;
    size_t nargs;
    bool local; /* over ranks: each package is an eval of this rank's own */
    int n;
    int dev[HPL__MAX_DEVICES];   /* plan device */
    int local_dev[HPL__MAX_DEVICES]; /* the context's device (this rank's index) */
    uint64_t first, end;
    hpl__schedule schedule;
    uint64_t units, rows_per_unit;
    package queue[HPL__MAX_DEVICES][QUEUE_DEPTH];
    int queued[HPL__MAX_DEVICES];
    uint64_t lo[HPL__MAX_DEVICES], hi[HPL__MAX_DEVICES], rows[HPL__MAX_DEVICES];
    int packages[HPL__MAX_DEVICES];
    double seconds[HPL__MAX_DEVICES];
} package_run;

static hpl__schedule_kind schedule_kind(hpl_balance b)
{
    return b == HPL_BALANCE_DYNAMIC ? HPL__SCHEDULE_DYNAMIC
           : b == HPL_BALANCE_HGUIDED ? HPL__SCHEDULE_HGUIDED
                                      : HPL__SCHEDULE_AUTO_TUNE;
}

/* Work-groups in one unit (a work-group's rows, across the other
 * dimensions). */
static uint64_t groups_per_unit(const hpl__plan *plan)
{
    const hpl__plan_geometry *g = &plan->geometry;
    uint64_t groups = 1;
    for (int d = 0; d < 3; d++) {
        if (d == g->dim)
            continue;
        groups *= (g->whole[d] + g->local[d] - 1) / g->local[d];
    }
    return groups ? groups : 1;
}

/* AUTO_TUNE's minimum packages: on a CPU one work-group per core; on a GPU
 * 5% of the work (Vulkan does not say how many groups fill a GPU). */
static uint64_t min_package(const package_run *run, int k, uint64_t units)
{
    const hpl__plan *plan = run->plan;
    if (plan->balance != HPL_BALANCE_AUTO_TUNE)
        return 1;
    const hpl__device *d = &plan->ctx->devices[run->local_dev[k]];
    bool cpu = (d->info.type & HPL_DEVICE_CPU) != 0;
    long cores = plan->cores;
    uint64_t per_unit = groups_per_unit(plan);
    uint32_t core_units = (uint32_t)(((uint64_t)(cores > 0 ? cores : 1) + per_unit - 1) / per_unit);
    return hpl__schedule_min_package(cpu, core_units, 0, units);
}

/* Speeds learnt by an earlier eval hold for this one when it runs the same
 * kernel over as many units. */
static bool speeds_hold(const package_run *run)
{
    const hpl__plan *plan = run->plan;
    return plan->package_units == plan->geometry.whole[plan->geometry.dim] && plan->package_kernel == plan->kernel_id;
}

static void speeds_keep(package_run *run)
{
    hpl__plan *plan = run->plan;
    for (int k = 0; k < run->n; k++)
        plan->package_speed[run->dev[k]] = hpl__schedule_speed(&run->schedule, k) * (double)run->rows_per_unit;
    plan->package_units = plan->geometry.whole[plan->geometry.dim];
    plan->package_kernel = plan->kernel_id;
}

static int schedule_start(package_run *run)
{
    hpl__plan *plan = run->plan;
    const hpl__plan_geometry *g = &plan->geometry;
    run->rows_per_unit = g->local[g->dim] ? g->local[g->dim] : 1;
    run->units = (run->end - run->first + run->rows_per_unit - 1) / run->rows_per_unit;
    bool known = speeds_hold(run);
    hpl__schedule_device d[HPL__MAX_DEVICES];
    for (int k = 0; k < run->n; k++)
        d[k] = (hpl__schedule_device){.power = plan->shares[run->dev[k]],
                                      .min_package = min_package(run, k, run->units),
                                      .speed = known ? plan->package_speed[run->dev[k]] / (double)run->rows_per_unit
                                                     : 0};
    hpl__schedule_params p = {.package = (plan->package + run->rows_per_unit - 1) / run->rows_per_unit,
                              .probe = !plan->shares_given,
                              .tail_guard = true};
    if (!hpl__schedule_init(&run->schedule, schedule_kind(plan->balance), run->units, run->n, d, &p))
        return hpl__fail(HPL_ERROR_INTERNAL, "the package schedule refused its parameters");
    for (int k = 0; k < run->n; k++)
        run->lo[k] = UINT64_MAX;
    return HPL_OK;
}

static uint64_t next_serial(hpl_context *ctx)
{
    HPL__LOCK(ctx);
    uint64_t s = hpl__events_next_serial(ctx);
    HPL__UNLOCK(ctx);
    return s;
}

/* Runs rows [lo, hi) on scheme device k: an eval of the plan's, or over
 * ranks an eval of this rank's alone (span.c moved what its rows read). */
static int run_piece(package_run *run, int k, uint64_t lo, uint64_t hi)
{
    hpl__plan *plan = run->plan;
    hpl__piece piece = {.device = run->dev[k], .lo = lo, .hi = hi};
    if (!run->local)
        return hpl__plan_run(plan, run->args, run->nargs, &piece, 1);
    hpl_launch l = {.global = {plan->launch.global[0], plan->launch.global[1], plan->launch.global[2]},
                    .local = {plan->launch.local[0], plan->launch.local[1], plan->launch.local[2]},
                    .devices = {run->local_dev[k]},
                    .device_count = 1};
    hpl__part given[1] = {{.lo = lo, .hi = hi}};
    HPL__LOCK(plan->ctx);
    int rc = hpl__eval_locked(plan->ctx, plan->kernel, &l, run->args, run->nargs, given);
    HPL__UNLOCK(plan->ctx);
    return rc;
}

/* Gives scheme device k its next package, if any is left. */
static int launch_one(package_run *run, int k, bool *launched)
{
    hpl__plan *plan = run->plan;
    uint64_t first, count;
    *launched = hpl__schedule_take(&run->schedule, k, &first, &count);
    if (!*launched)
        return HPL_OK;
    hpl__piece piece = {.device = run->dev[k], .lo = run->first + first * run->rows_per_unit,
                        .hi = HPL__MIN(run->first + (first + count) * run->rows_per_unit, run->end)};
    package *pk = &run->queue[k][run->queued[k]++];
    *pk = (package){.first = first, .count = count, .serial_from = next_serial(plan->ctx)};
    int rc = run_piece(run, k, piece.lo, piece.hi);
    hpl__device *d = &plan->ctx->devices[run->local_dev[k]];
    HPL__LOCK(plan->ctx);
    if (rc == HPL_OK)
        rc = hpl__batch_flush(d);
    pk->value = hpl__device_submitted(d);
    pk->serial_to = hpl__events_next_serial(plan->ctx);
    HPL__UNLOCK(plan->ctx);
    run->lo[k] = HPL__MIN(run->lo[k], piece.lo);
    run->hi[k] = HPL__MAX(run->hi[k], piece.hi);
    run->rows[k] += piece.hi - piece.lo;
    run->packages[k]++;
    return rc;
}

typedef struct package_time {
    int device;
    uint64_t to;
    bool copies;
    double seconds;
} package_time;

static void add_package_event(void *user, const hpl__event *e, uint64_t begin_ns, uint64_t end_ns)
{
    package_time *t = user;
    if (e->serial >= t->to || e->device != t->device || end_ns <= begin_ns)
        return;
    if (e->kind == HPL__EVENT_KERNEL || (t->copies && e->kind == HPL__EVENT_COPY))
        t->seconds += (double)(end_ns - begin_ns) * 1e-9;
}

/* The head package of scheme device i has completed: its time to the
 * schedule. */
static void retire(package_run *run, int i)
{
    hpl__plan *plan = run->plan;
    package *pk = &run->queue[i][0];
    package_time t = {.device = run->local_dev[i], .to = pk->serial_to, .copies = true};
    HPL__LOCK(plan->ctx);
    hpl__events_poll(plan->ctx);
    hpl__events_each(plan->ctx, pk->serial_from, add_package_event, &t);
    HPL__UNLOCK(plan->ctx);
    hpl__schedule_done(&run->schedule, i, pk->count, t.seconds);
    run->seconds[i] += t.seconds;
    memmove(&run->queue[i][0], &run->queue[i][1], (size_t)(--run->queued[i]) * sizeof(package));
}

/* Waits until some device's head package completes and retires it;
 * *any = false when nothing is queued. */
static int wait_any(package_run *run, bool *any)
{
    hpl__plan *plan = run->plan;
    *any = false;
    for (int i = 0; i < run->n; i++)
        *any = *any || run->queued[i];
    if (!*any)
        return HPL_OK;
    for (unsigned spins = 0;; spins++) {
        for (int i = 0; i < run->n; i++) {
            if (!run->queued[i])
                continue;
            int timeline = run->local_dev[i];
            HPL__LOCK(plan->ctx);
            uint64_t reached = hpl__timeline_completed(plan->ctx, timeline);
            int error = hpl__device_error(&plan->ctx->devices[timeline]);
            HPL__UNLOCK(plan->ctx);
            if (error)
                return hpl__fail(error, "device %d failed while running packages", timeline);
            if (reached >= run->queue[i][0].value) {
                retire(run, i);
                return HPL_OK;
            }
        }
        if (spins > 64) { /* the packages are long: stop burning a core */
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

static void note_run(package_run *run)
{
    hpl__plan *plan = run->plan;
    hpl_plan_info *last = &plan->last;
    const hpl__plan_geometry *g = &plan->geometry;
    for (int i = 0; i < plan->device_count; i++) {
        last->in_use[i] = false;
        last->rows[i] = 0;
        last->packages[i] = 0;
        last->seconds[i] = 0.0;
        for (int d = 0; d < 3; d++)
            last->ranges[i][d] = (hpl_range){1, 0};
    }
    for (int k = 0; k < run->n; k++) {
        int i = run->dev[k];
        last->in_use[i] = run->packages[k] > 0;
        last->rows[i] = run->rows[k];
        last->packages[i] = run->packages[k];
        last->seconds[i] = run->seconds[k];
        for (int d = 0; d < 3; d++)
            last->ranges[i][d] = last->in_use[i] ? (hpl_range){0, g->whole[d] - 1} : (hpl_range){1, 0};
        if (last->in_use[i])
            last->ranges[i][g->dim] = (hpl_range){run->lo[k], run->hi[k] - 1};
    }
}

/* All the work (over ranks: this rank's rows) on scheme device k, as one
 * plain eval: nothing to time or wait for (the speeds that chose it
 * stay). */
static int run_alone(package_run *run, int k)
{
    hpl__plan *plan = run->plan;
    int rc = run_piece(run, k, run->first, run->end);
    if (run->local) {
        run->packages[k] = 1;
        run->rows[k] = run->end - run->first;
        run->lo[k] = run->first;
        run->hi[k] = run->end;
        note_run(run);
    }
    for (int d = 0; d < plan->device_count; d++)
        plan->last.seconds[d] = 0.0; /* nothing timed */
    return rc;
}

static int run_packages(package_run *run)
{
    hpl__plan *plan = run->plan;
    HPL__LOCK(plan->ctx);
    int rc = hpl__events_enable(plan->ctx, true);
    HPL__UNLOCK(plan->ctx);
    if (rc != HPL_OK)
        return rc;
    for (bool any = true; rc == HPL_OK && any;) {
        for (int i = 0; rc == HPL_OK && i < run->n; i++)
            for (bool launched = true; rc == HPL_OK && launched && run->queued[i] < QUEUE_DEPTH;)
                rc = launch_one(run, i, &launched);
        if (rc == HPL_OK)
            rc = wait_any(run, &any);
    }
    /* After a failure, what was launched still completes before we return. */
    for (bool any = true; rc != HPL_OK && any;)
        if (wait_any(run, &any) != HPL_OK)
            break;
    note_run(run);
    if (rc == HPL_OK)
        speeds_keep(run);
    HPL__LOCK(plan->ctx);
    hpl__events_enable(plan->ctx, false);
    HPL__UNLOCK(plan->ctx);
    return rc;
}

/* The scheme over run's devices and rows. */
static int run_scheme(package_run *run)
{
    int rc = schedule_start(run);
    int alone = rc == HPL_OK ? hpl__schedule_settle(&run->schedule) : -1;
    if (rc == HPL_OK)
        rc = alone >= 0 ? run_alone(run, alone) : run_packages(run);
    return rc;
}

/* ---- over ranks ------------------------------------------------------------ */

/* Each rank's rows: by its rows per second in the last eval when every
 * rank with devices has one, else by its devices' shares (given) or count. */
static void rank_cuts(const hpl__plan *plan, const hpl__span *sp, uint64_t *cuts)
{
    double weight[HPL__MAX_RANKS] = {0}, speed[HPL__MAX_RANKS] = {0};
    bool known = plan->rank_rows == plan->geometry.whole[plan->geometry.dim] && plan->rank_kernel == plan->kernel_id;
    for (int i = 0; i < plan->device_count; i++) {
        int r = sp->owner[plan->devices[i]];
        weight[r] += plan->shares_given ? plan->shares[i] : 1.0;
        speed[r] = plan->rank_speed[i];
    }
    for (int r = 0; r < sp->ranks; r++)
        known = known && (weight[r] == 0.0 || speed[r] > 0.0);
    const hpl__plan_geometry *g = &plan->geometry;
    uint64_t granule = g->local[g->dim] ? g->local[g->dim] : 1;
    hpl__partition_cuts(g->whole[g->dim], sp->ranks, known ? speed : weight, granule, cuts);
}

/* A count another rank sent (untrusted): 0 unless finite and >= 0, at
 * most max. */
static uint64_t count_of(double v, uint64_t max)
{
    return v >= 0.0 && v <= (double)max ? (uint64_t)v : v > (double)max ? max : 0;
}

/* What every device ran, and each rank's speed, the same on every rank. */
static int ranks_share(package_run *run, double rank_seconds)
{
    hpl__plan *plan = run->plan;
    int n = plan->device_count;
    double v[6 * HPL__MAX_DEVICES];
    hpl_plan_info *last = &plan->last;
    const hpl__plan_geometry *g = &plan->geometry;
    for (int i = 0; i < n; i++) {
        v[i] = (double)last->rows[i];
        v[n + i] = (double)last->packages[i];
        v[2 * n + i] = last->seconds[i];
        v[3 * n + i] = last->in_use[i] ? (double)last->ranges[i][g->dim].first : 0.0;
        v[4 * n + i] = last->in_use[i] ? (double)last->ranges[i][g->dim].last : 0.0;
        v[5 * n + i] = rank_seconds > 0 && run->end > run->first
                           ? (double)(run->end - run->first) / rank_seconds
                           : plan->rank_speed[i];
    }
    int rc = hpl__plan_share(plan, v, 6 * n, true);
    if (rc != HPL_OK)
        return rc;
    uint64_t rows = g->whole[g->dim];
    for (int i = 0; i < n; i++) {
        last->rows[i] = count_of(v[i], rows);
        last->packages[i] = (int)count_of(v[n + i], INT32_MAX);
        last->seconds[i] = isfinite(v[2 * n + i]) && v[2 * n + i] > 0.0 ? v[2 * n + i] : 0.0;
        last->in_use[i] = last->packages[i] > 0;
        for (int d = 0; d < 3; d++)
            last->ranges[i][d] = last->in_use[i] ? (hpl_range){0, g->whole[d] - 1} : (hpl_range){1, 0};
        if (last->in_use[i])
            last->ranges[i][g->dim] = (hpl_range){count_of(v[3 * n + i], rows - 1), count_of(v[4 * n + i], rows - 1)};
        plan->rank_speed[i] = isfinite(v[5 * n + i]) && v[5 * n + i] > 0.0 ? v[5 * n + i] : 0.0;
    }
    plan->rank_rows = g->whole[g->dim];
    plan->rank_kernel = plan->kernel_id;
    return HPL_OK;
}

/* One eval: the rows to the ranks, packages within each. */
static int packages_over_ranks(package_run *run)
{
    hpl__plan *plan = run->plan;
    hpl_context *ctx = plan->ctx;
    const hpl__span *sp = ctx->span;
    uint64_t cuts[HPL__MAX_RANKS + 1];
    rank_cuts(plan, sp, cuts);
    /* Each rank's rows as the piece of its first device in the plan. */
    hpl__part given[HPL__MAX_DEVICES] = {{0}};
    bool has_piece[HPL__MAX_RANKS] = {false};
    for (int i = 0; i < plan->device_count; i++) {
        int r = sp->owner[plan->devices[i]];
        if (!has_piece[r]) {
            has_piece[r] = true;
            given[i] = (hpl__part){.lo = cuts[r], .hi = cuts[r + 1]};
        }
        int l = hpl__span_local(sp, plan->devices[i]);
        if (l >= 0) {
            run->dev[run->n] = i;
            run->local_dev[run->n++] = l;
        }
    }
    run->local = true;
    run->first = cuts[sp->rank];
    run->end = cuts[sp->rank + 1];
    hpl_launch l = {.global = {plan->launch.global[0], plan->launch.global[1], plan->launch.global[2]},
                    .local = {plan->launch.local[0], plan->launch.local[1], plan->launch.local[2]},
                    .device_count = plan->device_count};
    memcpy(l.devices, plan->devices, sizeof l.devices);
    hpl__span_step *step = NULL;
    HPL__LOCK(ctx);
    int rc = hpl__span_eval_begin(ctx, plan->kernel, &l, run->args, run->nargs, given, &step);
    HPL__UNLOCK(ctx);
    if (rc != HPL_OK)
        return rc;
    uint64_t t0 = hpl__now_ns();
    if (run->n && run->end > run->first) {
        rc = run_scheme(run);
        HPL__LOCK(ctx); /* the rank's time ends when its devices do */
        int waited = hpl__wait_idle(ctx);
        HPL__UNLOCK(ctx);
        rc = rc != HPL_OK ? rc : waited;
    } else {
        note_run(run); /* nothing here */
    }
    double seconds = (double)(hpl__now_ns() - t0) * 1e-9;
    HPL__LOCK(ctx);
    rc = hpl__span_eval_end(ctx, step, rc);
    HPL__UNLOCK(ctx);
    /* Shared even after a failure, so that no rank waits for another. */
    int shared = ranks_share(run, seconds);
    return rc != HPL_OK ? rc : shared;
}

int hpl__plan_packages(hpl__plan *plan, const hpl_arg *args, size_t nargs)
{
    package_run *run = hpl__calloc(1, sizeof *run);
    if (!run)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    *run = (package_run){.plan = plan, .args = args, .nargs = nargs,
                         .end = plan->geometry.whole[plan->geometry.dim]};
    int rc;
    if (plan->alone_won) {
        /* The alone check's device (the same on every rank). */
        run->n = 1;
        run->dev[0] = plan->alone_device;
        rc = run_alone(run, 0);
    } else if (plan->ctx->span && plan->ctx->span->ranks > 1) {
        rc = packages_over_ranks(run);
    } else {
        run->n = plan->device_count;
        for (int i = 0; i < run->n; i++) {
            run->dev[i] = i;
            run->local_dev[i] = plan->ctx->span ? hpl__span_local(plan->ctx->span, plan->devices[i]) : plan->devices[i];
        }
        rc = run_scheme(run);
    }
    hpl__free(run);
    return rc;
}
