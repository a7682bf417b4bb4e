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
 * scheme slower than one device alone. */
#define _POSIX_C_SOURCE 199309L
#include "events.h"
#include "plan.h"
#include "schedule.h"
#include "submit.h"
#include "vk.h"

#include <string.h>
#include <time.h>

#define QUEUE_DEPTH 2

typedef struct package {
    uint64_t first, count;  /* units */
    uint64_t value;         /* the device's timeline value it completes at */
    uint64_t serial_from, serial_to; /* its events */
} package;

typedef struct package_run {
    hpl__plan *plan;
    const hpl_arg *args;
    size_t nargs;
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
static uint64_t min_package(const hpl__plan *plan, int i, uint64_t units)
{
    if (plan->balance != HPL_BALANCE_AUTO_TUNE)
        return 1;
    const hpl__device *d = &plan->ctx->devices[plan->devices[i]];
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
    return plan->package_units == run->units && plan->package_kernel == plan->kernel_id;
}

static void speeds_keep(package_run *run)
{
    hpl__plan *plan = run->plan;
    for (int i = 0; i < plan->device_count; i++)
        plan->package_speed[i] = hpl__schedule_speed(&run->schedule, i) * (double)run->rows_per_unit;
    plan->package_units = run->units;
    plan->package_kernel = plan->kernel_id;
}

static int schedule_start(package_run *run)
{
    hpl__plan *plan = run->plan;
    const hpl__plan_geometry *g = &plan->geometry;
    run->rows_per_unit = g->local[g->dim] ? g->local[g->dim] : 1;
    run->units = (g->whole[g->dim] + run->rows_per_unit - 1) / run->rows_per_unit;
    bool known = speeds_hold(run);
    hpl__schedule_device d[HPL__MAX_DEVICES];
    for (int i = 0; i < plan->device_count; i++)
        d[i] = (hpl__schedule_device){.power = plan->shares[i],
                                      .min_package = min_package(plan, i, run->units),
                                      .speed = known ? plan->package_speed[i] / (double)run->rows_per_unit : 0};
    hpl__schedule_params p = {.package = (plan->package + run->rows_per_unit - 1) / run->rows_per_unit,
                              .probe = !plan->shares_given,
                              .tail_guard = true};
    if (!hpl__schedule_init(&run->schedule, schedule_kind(plan->balance), run->units, plan->device_count, d, &p))
        return hpl__fail(HPL_ERROR_INTERNAL, "the package schedule refused its parameters");
    for (int i = 0; i < plan->device_count; i++)
        run->lo[i] = UINT64_MAX;
    return HPL_OK;
}

static uint64_t next_serial(hpl_context *ctx)
{
    HPL__LOCK(ctx);
    uint64_t s = hpl__events_next_serial(ctx);
    HPL__UNLOCK(ctx);
    return s;
}

/* Gives device i its next package, if any is left. */
static int launch_one(package_run *run, int i, bool *launched)
{
    hpl__plan *plan = run->plan;
    uint64_t first, count;
    *launched = hpl__schedule_take(&run->schedule, i, &first, &count);
    if (!*launched)
        return HPL_OK;
    uint64_t n = plan->geometry.whole[plan->geometry.dim];
    hpl__piece piece = {.device = i, .lo = first * run->rows_per_unit,
                        .hi = HPL__MIN((first + count) * run->rows_per_unit, n)};
    package *pk = &run->queue[i][run->queued[i]++];
    *pk = (package){.first = first, .count = count, .serial_from = next_serial(plan->ctx)};
    int rc = hpl__plan_run(plan, run->args, run->nargs, &piece, 1);
    hpl__device *d = &plan->ctx->devices[plan->devices[i]];
    HPL__LOCK(plan->ctx);
    if (rc == HPL_OK)
        rc = hpl__batch_flush(d);
    pk->value = hpl__device_submitted(d);
    pk->serial_to = hpl__events_next_serial(plan->ctx);
    HPL__UNLOCK(plan->ctx);
    run->lo[i] = HPL__MIN(run->lo[i], piece.lo);
    run->hi[i] = HPL__MAX(run->hi[i], piece.hi);
    run->rows[i] += piece.hi - piece.lo;
    run->packages[i]++;
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

/* The head package of device i has completed: its time to the schedule. */
static void retire(package_run *run, int i)
{
    hpl__plan *plan = run->plan;
    package *pk = &run->queue[i][0];
    package_time t = {.device = plan->devices[i], .to = pk->serial_to, .copies = true};
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
    for (int i = 0; i < plan->device_count; i++)
        *any = *any || run->queued[i];
    if (!*any)
        return HPL_OK;
    for (unsigned spins = 0;; spins++) {
        for (int i = 0; i < plan->device_count; i++) {
            if (!run->queued[i])
                continue;
            int timeline = plan->devices[i];
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
        last->in_use[i] = run->packages[i] > 0;
        last->rows[i] = run->rows[i];
        last->packages[i] = run->packages[i];
        last->seconds[i] = run->seconds[i];
        for (int d = 0; d < 3; d++)
            last->ranges[i][d] = last->in_use[i] ? (hpl_range){0, g->whole[d] - 1} : (hpl_range){1, 0};
        if (last->in_use[i])
            last->ranges[i][g->dim] = (hpl_range){run->lo[i], run->hi[i] - 1};
    }
}

/* All the work on one device, as one plain eval: nothing to time or wait
 * for (the speeds that chose it stay). */
static int run_alone(package_run *run, int i)
{
    hpl__plan *plan = run->plan;
    hpl__piece piece = {.device = i, .lo = 0, .hi = plan->geometry.whole[plan->geometry.dim]};
    int rc = hpl__plan_run(plan, run->args, run->nargs, &piece, 1);
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
        for (int i = 0; rc == HPL_OK && i < plan->device_count; i++)
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

int hpl__plan_packages(hpl__plan *plan, const hpl_arg *args, size_t nargs)
{
    package_run *run = hpl__calloc(1, sizeof *run);
    if (!run)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    *run = (package_run){.plan = plan, .args = args, .nargs = nargs};
    int rc = schedule_start(run);
    int alone = plan->alone_won ? plan->alone_device : rc == HPL_OK ? hpl__schedule_settle(&run->schedule) : -1;
    if (rc == HPL_OK)
        rc = alone >= 0 ? run_alone(run, alone) : run_packages(run);
    hpl__free(run);
    return rc;
}
