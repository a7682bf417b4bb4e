/* Package schedulers for one eval. See schedule.h. */
#include "schedule.h"

#include <math.h>
#include <string.h>

/* Bounds on a usable package time: below a nanosecond a timestamp is broken
 * and would make a speed overflow; above 1e9 s it would let the accumulated
 * seconds (and so the speed sum) reach infinity. */
#define MIN_SECONDS 1e-9
#define MAX_SECONDS 1e9
/* DYNAMIC's default: packages per device. */
#define DYNAMIC_PER_DEVICE 8

uint64_t hpl__schedule_min_package(bool is_cpu, uint32_t cores, uint64_t fill_groups, uint64_t total)
{
    if (is_cpu)
        return cores ? cores : 1;
    uint64_t five_percent = total / 20 + (total % 20 != 0); /* rounded up, no overflow */
    uint64_t m = fill_groups > five_percent ? fill_groups : five_percent;
    return m ? m : 1;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

static bool valid_devices(int devices, const hpl__schedule_device *d, double *max, int *taking_part)
{
    if (devices < 1 || devices > HPL__SCHEDULE_MAX_DEVICES || !d)
        return false;
    *max = 0;
    *taking_part = 0;
    for (int i = 0; i < devices; i++) {
        if (!isfinite(d[i].power) || d[i].power < 0)
            return false;
        *max = d[i].power > *max ? d[i].power : *max;
        *taking_part += d[i].power > 0;
    }
    return *taking_part > 0;
}

static double usable_speed(double v)
{
    return isfinite(v) && v > 0 ? v : 0;
}

/* Nominal powers scaled by 2^-e, the largest into [0.5, 1): exact for any
 * power within 2^1000 of the largest (ratios, and the sizes computed from
 * integer powers, are unchanged), and G_r P_i and k N ΣP can no longer
 * overflow whatever the scale of the powers. */
static void set_powers(hpl__schedule *s, const hpl__schedule_device *d, double max)
{
    int e;
    frexp(max, &e);
    for (int i = 0; i < s->devices; i++) {
        s->dev[i].part = d[i].power > 0;
        s->dev[i].power = ldexp(d[i].power, -e);
        s->nominal_sum += s->dev[i].power;
        s->dev[i].min = d[i].min_package ? d[i].min_package : 1;
        s->dev[i].prior = s->dev[i].part ? usable_speed(d[i].speed) : 0;
        s->known_devices += s->dev[i].prior > 0;
    }
}

bool hpl__schedule_init(hpl__schedule *s, hpl__schedule_kind kind, uint64_t total, int devices,
                        const hpl__schedule_device *d, const hpl__schedule_params *p)
{
    memset(s, 0, sizeof *s); /* total 0: a failed init hands out nothing */
    double max;
    int taking_part;
    if ((unsigned)kind > HPL__SCHEDULE_AUTO_TUNE || !valid_devices(devices, d, &max, &taking_part))
        return false;
    hpl__schedule_params defaults = {0};
    if (!p)
        p = &defaults;
    s->kind = kind;
    s->devices = devices;
    s->taking_part = taking_part;
    s->k = p->k ? p->k : 2;
    s->probe = p->probe;
    s->tail_guard = p->tail_guard;
    s->total = total;
    s->package = p->package ? p->package : ceil_div(total, (uint64_t)DYNAMIC_PER_DEVICE * (uint64_t)taking_part);
    if (!s->package)
        s->package = 1; /* total 0: never used */
    set_powers(s, d, max);
    return true;
}

bool hpl__schedule_measured(const hpl__schedule *s)
{
    return s->kind == HPL__SCHEDULE_AUTO_TUNE && s->known_devices == s->taking_part;
}

/* This eval's speed, else the prior: units per second, or 0 unknown. */
static double measured_speed(const hpl__schedule_slot *d)
{
    /* timed >= 1 and seconds in [1e-9, 1e9 * packages]: finite and > 0. */
    return !d->part ? 0 : d->timed ? (double)d->timed / d->seconds : d->prior;
}

double hpl__schedule_speed(const hpl__schedule *s, int device)
{
    return device < 0 || device >= s->devices ? 0 : measured_speed(&s->dev[device]);
}

double hpl__schedule_power(const hpl__schedule *s, int device)
{
    if (device < 0 || device >= s->devices)
        return 0;
    return hpl__schedule_measured(s) ? measured_speed(&s->dev[device]) : s->dev[device].power;
}

static double power_sum(const hpl__schedule *s)
{
    if (!hpl__schedule_measured(s))
        return s->nominal_sum;
    double sum = 0;
    for (int i = 0; i < s->devices; i++)
        sum += measured_speed(&s->dev[i]);
    return sum;
}

/* floor(G_r P_i / (k N ΣP)) in one division: exact whenever the products
 * are exact in a double (integer powers, G_r below 2^53 / P_i). */
static uint64_t guided_size(const hpl__schedule *s, int device, uint64_t remaining)
{
    double sum = power_sum(s);
    double v = (double)remaining * hpl__schedule_power(s, device) / ((double)s->k * (double)s->taking_part * sum);
    if (!(v >= 0)) /* not reached (sum > 0, all finite); NaN guard */
        return 0;
    return v >= (double)remaining ? remaining : (uint64_t)v;
}

static uint64_t package_size(const hpl__schedule *s, int device, uint64_t remaining)
{
    uint64_t size;
    if (s->kind == HPL__SCHEDULE_DYNAMIC) {
        size = s->package;
    } else if (s->probe && s->kind == HPL__SCHEDULE_AUTO_TUNE && !hpl__schedule_measured(s)) {
        size = s->dev[device].min;
    } else {
        size = guided_size(s, device, remaining);
        if (size < s->dev[device].min)
            size = s->dev[device].min;
    }
    return size < remaining ? size : remaining;
}

/* ---- tail_guard ----------------------------------------------------------- */

static bool active(const hpl__schedule_slot *d)
{
    return d->part && !d->declined;
}

/* How many units device i may take now, finishing before the other active
 * devices could do all that is left (remaining, and what they hold) without
 * it: with everything at known speeds, i taking c shortens the eval only
 * if (pending_i + c) / s_i < (remaining + pending_others) / S_others.
 * Others whose speed is not known yet count as 0: the estimate of their
 * time is then too long, which errs toward using device i, never toward
 * leaving it idle. UINT64_MAX when i's speed, or every other's, is
 * unknown. */
static uint64_t guard_room(const hpl__schedule *s, int device, uint64_t remaining)
{
    const hpl__schedule_slot *me = &s->dev[device];
    double mine = measured_speed(me), others = 0, held = 0;
    for (int j = 0; j < s->devices; j++) {
        const hpl__schedule_slot *d = &s->dev[j];
        if (j == device || !active(d))
            continue;
        others += measured_speed(d);
        held += (double)d->pending;
    }
    if (mine <= 0 || others <= 0)
        return UINT64_MAX;
    double room = mine * ((double)remaining + held) / others - (double)me->pending;
    /* Strictly before: a tie gains nothing and costs a package. */
    double below = ceil(room) - 1;
    return !(below > 0) ? 0 : below >= (double)remaining ? remaining : (uint64_t)below;
}

static int active_count(const hpl__schedule *s)
{
    int n = 0;
    for (int i = 0; i < s->devices; i++)
        n += active(&s->dev[i]);
    return n;
}

/* The package cut to what the guard allows, or 0: declined. */
static uint64_t guarded(hpl__schedule *s, int device, uint64_t size, uint64_t remaining)
{
    bool fixed = s->kind == HPL__SCHEDULE_DYNAMIC; /* its packages keep their size */
    if (active_count(s) == 1)
        return fixed ? size : remaining; /* alone: splitting gains nothing */
    uint64_t room = guard_room(s, device, remaining);
    if (size <= room)
        return size;
    if (!fixed && (room >= s->dev[device].min || (room > 0 && room == remaining)))
        return room;
    s->dev[device].declined = true;
    return 0;
}

int hpl__schedule_settle(hpl__schedule *s)
{
    if (!s->tail_guard)
        return -1;
    for (bool again = true; again && active_count(s) > 1;) {
        again = false;
        int slowest = -1; /* of those that would decline their minimum */
        for (int i = 0; i < s->devices; i++) {
            const hpl__schedule_slot *d = &s->dev[i];
            uint64_t first = s->kind == HPL__SCHEDULE_DYNAMIC ? s->package : d->min; /* its smallest package */
            uint64_t min = first < s->total ? first : s->total;
            if (active(d) && measured_speed(d) > 0 && guard_room(s, i, s->total) < min &&
                (slowest < 0 || measured_speed(d) < measured_speed(&s->dev[slowest])))
                slowest = i;
        }
        if (slowest >= 0)
            s->dev[slowest].declined = again = true;
    }
    if (active_count(s) != 1)
        return -1;
    for (int i = 0; i < s->devices; i++)
        if (active(&s->dev[i]))
            return i;
    return -1;
}

/* ---- handing out --------------------------------------------------------------- */

bool hpl__schedule_take(hpl__schedule *s, int device, uint64_t *first, uint64_t *count)
{
    *first = s->next;
    *count = 0;
    uint64_t remaining = s->total - s->next;
    if (device < 0 || device >= s->devices || !active(&s->dev[device]) || remaining == 0)
        return false;
    *count = package_size(s, device, remaining);
    if (s->tail_guard && !(*count = guarded(s, device, *count, remaining)))
        return false;
    s->next += *count;
    s->dev[device].pending += *count;
    return true;
}

void hpl__schedule_done(hpl__schedule *s, int device, uint64_t count, double seconds)
{
    if (device < 0 || device >= s->devices)
        return;
    hpl__schedule_slot *d = &s->dev[device];
    if (count > d->pending)
        count = d->pending;
    d->pending -= count;
    if (count == 0 || !isfinite(seconds) || !(seconds > 0))
        return;
    seconds = seconds < MIN_SECONDS ? MIN_SECONDS : seconds > MAX_SECONDS ? MAX_SECONDS : seconds;
    s->known_devices += d->part && d->timed == 0 && d->prior <= 0;
    d->timed += count;
    d->seconds += seconds;
}

uint64_t hpl__schedule_remaining(const hpl__schedule *s)
{
    return s->total - s->next;
}
