/* Bounded work in flight: how many operations each device has recorded and
 * not completed, the host's wait in a call that would queue past
 * hpl_context_desc.max_in_flight (HPLVK_MAX_IN_FLIGHT), and giving back
 * what a burst of work grew once that work is done.
 *
 * A program that never waits would otherwise queue without end: command
 * buffers, argument blocks, the driver's recorded commands, all held until
 * the device runs them (10^5 two-device evals on Lavapipe held hundreds of
 * MiB). Operations are counted as they are recorded (submit.c:
 * ops_recorded), and each compute submission notes the count it carries
 * (op_marks, by timeline value): the timeline value a device reached then
 * says how many are done. The check at each enqueueing call is a counter
 * compare against a lower bound of the completed ones (ops_retired); only
 * past it does the device's timeline get read, and the host waits for the
 * oldest submission that brings the device under the bound. */
#include "inflight.h"

#include "config.h"
#include "memory.h"
#include "progress.h"
#include "submit.h"
#include "submitter.h"
#include "vk.h"

#include <stdio.h>
#include <stdlib.h>

/* Deep enough for a GPU (hundreds of short kernels queued, milliseconds of
 * work), small enough that what it holds stays a few MiB. */
#define DEFAULT_MAX_IN_FLIGHT 1024u
#define MAX_MAX_IN_FLIGHT 65536u

/* What hpl_finish keeps: command buffers per ring, argument chunks per
 * device (80 KiB each), FIFO slots. */
#define KEEP_COMMAND_BUFFERS 64u
#define KEEP_ARG_CHUNKS 4u
#define KEEP_FIFO 16u

int hpl__inflight_configure(hpl_context *ctx, uint32_t desc_max)
{
    uint64_t max = desc_max ? desc_max : DEFAULT_MAX_IN_FLIGHT;
    const char *env = getenv("HPLVK_MAX_IN_FLIGHT");
    int rc = HPL_OK;
    if (desc_max > MAX_MAX_IN_FLIGHT)
        rc = hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_context_desc.max_in_flight is %u, more than %u", desc_max,
                       MAX_MAX_IN_FLIGHT);
    else if (!desc_max && env && *env)
        rc = hpl__parse_count("HPLVK_MAX_IN_FLIGHT", env, 1, MAX_MAX_IN_FLIGHT, &max);
    if (rc != HPL_OK)
        return rc;
    ctx->max_in_flight = (uint32_t)max;
    /* More marks than operations may be in flight: the submission a wait
     * needs is always among the last op_mark_mask + 1 (each carries one
     * operation or more). */
    uint64_t marks = 1;
    while (marks <= max)
        marks *= 2;
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__device *d = &ctx->devices[i];
        d->op_marks = hpl__calloc(marks, sizeof *d->op_marks);
        if (!d->op_marks)
            return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the work in flight");
        d->op_mark_mask = marks - 1;
    }
    return HPL_OK;
}

/* Operations submitted up to timeline value v of d (batch_lock held), when
 * v is among the marks kept (submitted: d's last); else the lower bound
 * `known`. */
static uint64_t ops_at(const hpl__device *d, uint64_t v, uint64_t submitted, uint64_t known)
{
    if (v == 0)
        return 0;
    return submitted - v <= d->op_mark_mask ? d->op_marks[v & d->op_mark_mask] : known;
}

uint64_t hpl__inflight_count(hpl__device *d)
{
    pthread_mutex_lock(&d->batch_lock);
    uint64_t done = HPL__MIN(hpl__device_completed(d), d->submitted);
    uint64_t retired = HPL__MAX(d->ops_retired, ops_at(d, done, d->submitted, d->ops_retired));
    pthread_mutex_unlock(&d->batch_lock);
    d->ops_retired = retired;
    return d->ops_recorded - retired;
}

/* The least timeline value of d after which at most `limit` of its
 * operations are left (d->submitted + 1: its open batch too), and the
 * operations done by then. */
static uint64_t value_for(hpl__device *d, uint64_t limit, uint64_t *retired)
{
    pthread_mutex_lock(&d->batch_lock);
    uint64_t need = d->ops_recorded - limit, submitted = d->submitted;
    uint64_t lo = HPL__MAX(hpl__device_completed(d), submitted - HPL__MIN(submitted, d->op_mark_mask)) + 1;
    uint64_t hi = submitted + 1; /* the least value in [lo, hi] whose count reaches need */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (d->op_marks[mid & d->op_mark_mask] >= need)
            hi = mid;
        else
            lo = mid + 1;
    }
    *retired = hi > submitted ? d->ops_recorded : d->op_marks[hi & d->op_mark_mask];
    pthread_mutex_unlock(&d->batch_lock);
    return hi;
}

int hpl__inflight_wait(hpl_context *ctx)
{
    const uint32_t max = ctx->max_in_flight;
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__device *d = &ctx->devices[i];
        if (d->ops_recorded - d->ops_retired < max)
            continue; /* the common case */
        /* A failed device's work does not run: nothing to wait for. */
        if (hpl__device_error(d) || hpl__inflight_count(d) < max)
            continue;
        uint64_t retired;
        hpl__point p = {d->index, value_for(d, max - 1, &retired)};
        int rc = hpl__wait_points(ctx, &p, 1); /* releases the context lock meanwhile */
        if (rc != HPL_OK) {
            char prefix[160];
            snprintf(prefix, sizeof prefix, "waiting for work in flight on device %s", d->info.name);
            hpl__error_prefix(prefix);
            return rc;
        }
        d->ops_retired = HPL__MAX(d->ops_retired, retired);
    }
    return HPL_OK;
}

void hpl__inflight_trim(hpl_context *ctx)
{
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__device *d = &ctx->devices[i];
        hpl__device_trim(d, KEEP_COMMAND_BUFFERS);
        hpl__args_trim(d, KEEP_ARG_CHUNKS);
        hpl__submit_trim(d, KEEP_FIFO);
    }
    hpl__progress_trim(ctx, KEEP_FIFO);
}
