/* EXHAUSTIVE's search: the coarse grid, the refinement around its best
 * point and the compass search on the fine grid (balance.h). */
#include "balance_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- EXHAUSTIVE: the grid ------------------------------------------------ */

/* Points of the grid of multiples of 1/k over d devices: C(k + d - 1, d - 1).
 * Each partial product is a binomial coefficient, so exact while < 2^53. */
static double grid_points(int k, int d)
{
    double c = 1;
    for (int i = 1; i < d; i++)
        c = c * (k + i) / i;
    return c;
}

static void cur_from_cell(hpl__balance *b, int units)
{
    for (int i = 0; i < b->devices; i++)
        b->cur[i] = (double)b->cell[i] / units;
}

static int cell_sum(const hpl__balance *b)
{
    int s = 0;
    for (int i = 0; i < b->devices - 1; i++)
        s += b->cell[i];
    return s;
}

/* Next composition of b->grid into the devices' cells, in lexicographic
 * order of the first d - 1 cells (the last takes the rest). A cell that
 * cannot grow without passing the total resets and carries, so only legal
 * points are visited. */
static bool coarse_next(hpl__balance *b)
{
    int d = b->devices;
    for (int i = d - 2; i >= 0; i--) {
        b->cell[i]++;
        if (cell_sum(b) <= b->grid) {
            b->cell[d - 1] = b->grid - cell_sum(b);
            return true;
        }
        b->cell[i] = 0;
    }
    return false;
}

static int refine_lo(const hpl__balance *b, int i)
{
    return b->centre[i] > b->radius ? b->centre[i] - b->radius : 0;
}

/* A fine point is tried when its last cell is in the neighbourhood too, and
 * it is not the centre when the centre is a coarse point already timed. */
static bool refine_ok(hpl__balance *b)
{
    int d = b->devices, last = b->fine - cell_sum(b);
    if (last < refine_lo(b, d - 1) || last > b->centre[d - 1] + b->radius)
        return false;
    b->cell[d - 1] = last;
    if (b->fine % b->grid == 0 && memcmp(b->cell, b->centre, sizeof(int) * (size_t)d) == 0)
        return false;
    return true;
}

/* Odometer over the first d - 1 cells, each within radius of the centre;
 * bounded by (2 radius + 1)^(d - 1) <= HPL__BALANCE_MAX_POINTS steps. */
static bool refine_step(hpl__balance *b)
{
    for (int i = b->devices - 2; i >= 0; i--) {
        if (b->cell[i] < b->centre[i] + b->radius) {
            b->cell[i]++;
            return true;
        }
        b->cell[i] = refine_lo(b, i);
    }
    return false;
}

static bool refine_next(hpl__balance *b)
{
    while (refine_step(b))
        if (refine_ok(b))
            return true;
    return false;
}

/* ---- EXHAUSTIVE: the compass search ------------------------------------ */

/* Sorted times, slowest first: a is better than b when it is smaller in the
 * first place they differ (leximax). The makespan decides; among equal
 * makespans, the next slowest device, and so on: with several devices tied
 * slowest no single move lowers the makespan, but each move that relieves
 * one of them is progress. */
static int by_time_descending(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a < b) - (a > b);
}

static bool leximax_less(const double *a, const double *b, int devices)
{
    double sa[HPL__MAX_DEVICES], sb[HPL__MAX_DEVICES];
    memcpy(sa, a, sizeof(double) * (size_t)devices);
    memcpy(sb, b, sizeof(double) * (size_t)devices);
    qsort(sa, (size_t)devices, sizeof(double), by_time_descending);
    qsort(sb, (size_t)devices, sizeof(double), by_time_descending);
    for (int i = 0; i < devices; i++)
        if (sa[i] != sb[i])
            return sa[i] < sb[i];
    return false;
}

/* The times of the distribution just timed; 0 for a device that did not run. */
static void timed_times(const hpl__balance *b, double *v)
{
    for (int i = 0; i < b->devices; i++)
        v[i] = hpl__balance_used(b, i) ? b->t[i] : 0;
}

/* The poll's order: devices by the centre's times, slowest first (ties:
 * device order), so that the moves most likely to help are timed first. */
static void compass_order(hpl__balance *b)
{
    int d = b->devices;
    for (int i = 0; i < d; i++) {
        int j = i;
        for (; j > 0 && b->centre_t[b->order[j - 1]] < b->centre_t[i]; j--)
            b->order[j] = b->order[j - 1];
        b->order[j] = i;
    }
    b->move_from = 0;
    b->move_to = -1;
}

/* Where device `from` may move work: every other device, the faster (by
 * the centre's times) first. */
static int compass_targets(const hpl__balance *b, int from, int *to)
{
    int n = 0;
    for (int k = b->devices - 1; k >= 0; k--)
        if (b->order[k] != from)
            to[n++] = b->order[k];
    return n;
}

/* The poll's next move into cell: `step_units` fine units from device
 * order[move_from] to its move_to-th target; a move that would take more
 * than the device has, or lead back to the centre before, is skipped.
 * False when the poll is over. */
static bool compass_move(hpl__balance *b)
{
    int d = b->devices;
    while (b->move_from < d) {
        int from = b->order[b->move_from], to[HPL__MAX_DEVICES];
        int n = b->centre[from] >= b->step_units ? compass_targets(b, from, to) : 0;
        if (++b->move_to >= n) {
            b->move_from++;
            b->move_to = -1;
            continue;
        }
        memcpy(b->cell, b->centre, sizeof(int) * (size_t)d);
        b->cell[from] -= b->step_units;
        b->cell[to[b->move_to]] += b->step_units;
        if (!b->has_previous || memcmp(b->cell, b->previous, sizeof(int) * (size_t)d) != 0)
            return true;
    }
    return false;
}

/* The next point of the compass search into cell; false when it is over:
 * a poll at one fine step found nothing better, or the stage's points are
 * spent. A poll that finds nothing halves the step. */
static bool compass_next(hpl__balance *b)
{
    if (b->stage_points >= HPL__BALANCE_MAX_POINTS)
        return false;
    while (!compass_move(b)) {
        b->step_units /= 2;
        b->has_previous = false; /* a finer move cannot lead back */
        if (b->step_units == 0)
            return false;
        compass_order(b);
    }
    b->stage_points++;
    return true;
}

/* The point in cell was timed. The centre's first timing gives its times;
 * a move better than the centre becomes the centre at once (the next poll
 * starts from there, with the same step). A move is judged on the devices
 * whose part it changed (the two, and those between them, whose parts
 * shift): the others ran the same rows as at the centre and keep the
 * centre's times, so that their noise does not decide. */
static void compass_observe(hpl__balance *b)
{
    int d = b->devices;
    double v[HPL__MAX_DEVICES];
    timed_times(b, v);
    for (int i = 0, start = 0, centre_start = 0; i < d && b->centre_timed; i++) {
        if (b->cell[i] == b->centre[i] && start == centre_start)
            v[i] = b->centre_t[i];
        start += b->cell[i];
        centre_start += b->centre[i];
    }
    if (b->centre_timed && !leximax_less(v, b->centre_t, d))
        return;
    if (b->centre_timed) {
        memcpy(b->previous, b->centre, sizeof(int) * (size_t)d);
        b->has_previous = true;
        memcpy(b->centre, b->cell, sizeof(int) * (size_t)d);
    }
    memcpy(b->centre_t, v, sizeof(double) * (size_t)d);
    b->centre_timed = true;
    compass_order(b);
}

/* Where the whole fine neighbourhood of the coarse best has too many
 * points: a compass search on the fine grid from there (balance.h). */
static bool compass_start(hpl__balance *b)
{
    int d = b->devices;
    b->stage = 2;
    b->stats.compass = true;
    b->step_units = (int)fmax(1, lround(b->fine / (2.0 * b->grid)));
    b->has_previous = false;
    b->stage_points = 0;
    /* The centre is the coarse best itself when the fine grid holds it:
     * its times are known. Else the rounded centre is timed first. */
    bool exact = b->choice_timed;
    for (int i = 0; i < d; i++)
        exact &= fabs(b->choice[i] * b->fine - b->centre[i]) < 1e-9;
    b->centre_timed = exact;
    if (exact) {
        for (int i = 0; i < d; i++)
            b->centre_t[i] = b->choice_seconds[i];
        compass_order(b);
        return compass_next(b);
    }
    memcpy(b->cell, b->centre, sizeof(int) * (size_t)d);
    b->stage_points++;
    return true;
}

/* ---- EXHAUSTIVE: the refinement ---------------------------------------- */

/* The fine grid's centre: the best coarse point, in fine units, by
 * cumulative rounding so that its cells sum to fine. */
static void centre_on_choice(hpl__balance *b)
{
    double cum = 0;
    long prev = 0;
    for (int i = 0; i < b->devices; i++) {
        cum += b->choice[i];
        long edge = i == b->devices - 1 ? b->fine : lround(cum * b->fine);
        b->centre[i] = (int)(edge - prev);
        prev = edge;
    }
}

/* Refine around the best coarse point: every fine point within one coarse
 * step less one fine step of it (no other coarse point is in there) when
 * they fit HPL__BALANCE_MAX_POINTS, else the compass search. */
static bool refine_start(hpl__balance *b)
{
    if (b->p.refine_step < 0)
        return false;
    int d = b->devices, fine = (int)fmin(round(1.0 / b->p.refine_step), 1 << 24);
    if (fine <= b->grid)
        return false;
    b->fine = fine;
    centre_on_choice(b);
    int radius = (int)fmax(1, fmin((fine + b->grid - 1) / b->grid - 1, HPL__BALANCE_MAX_POINTS));
    if (pow(2 * radius + 1, d - 1) > HPL__BALANCE_MAX_POINTS)
        return compass_start(b);
    b->stage = 1;
    b->radius = radius;
    for (int i = 0; i < d - 1; i++)
        b->cell[i] = refine_lo(b, i);
    return refine_ok(b) || refine_next(b);
}

static bool exhaustive_more(hpl__balance *b)
{
    switch (b->stage) {
    case 0:
        return coarse_next(b) || refine_start(b);
    case 1:
        return refine_next(b);
    default:
        compass_observe(b);
        return compass_next(b);
    }
}

void hpl__balance_exhaustive_step(hpl__balance *b)
{
    bool more = exhaustive_more(b);
    if (!more) {
        hpl__balance_finish(b);
        return;
    }
    cur_from_cell(b, b->stage == 0 ? b->grid : b->fine);
    hpl__balance_start_timing(b);
}

void hpl__balance_exhaustive_init(hpl__balance *b)
{
    /* 1/step can be huge: no grid has fewer points than its K + 1. */
    int k = (int)fmin(round(1.0 / b->p.step), HPL__BALANCE_MAX_POINTS - 1);
    if (k < 1)
        k = 1;
    while (k > 1 && grid_points(k, b->devices) > HPL__BALANCE_MAX_POINTS)
        k--;
    b->grid = k;
    b->stats.step = 1.0 / k;
    memset(b->cell, 0, sizeof b->cell);
    b->cell[b->devices - 1] = k; /* the first point: the last device does everything */
    cur_from_cell(b, k);
}
