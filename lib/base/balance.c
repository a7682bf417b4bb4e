/* Load balancing searches. See balance.h. */
#include "balance.h"

#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_STEP 0.05
#define DEFAULT_REFINE 0.01 /* for 3 or 4 devices: every point of the neighbourhood */
/* For 5 or more, where the compass search refines: its cost grows with
 * log(1 / step), and an equal share is 20% or less, of which 1% is 5%. */
#define DEFAULT_REFINE_MANY 0.001
#define DEFAULT_REPS 2
#define DEFAULT_DELTA 0.05
#define DEFAULT_BACK_OFF 2
#define DEFAULT_MAX_ITERATIONS 10

/* ---- parameters ---------------------------------------------------------- */

static bool finite_at_least(double v, double lo)
{
    return v >= lo && !isinf(v); /* false for NaN */
}

static int fill_params(hpl__balance_params *p, int devices)
{
    if (p->step == 0)
        p->step = DEFAULT_STEP;
    if (!(p->step > 0 && p->step <= 1))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl__balance_params.step must be in (0, 1], not %g", p->step);
    if (p->refine_step == 0)
        p->refine_step = devices >= 5 ? DEFAULT_REFINE_MANY : devices >= 3 ? DEFAULT_REFINE : -1;
    if (isnan(p->refine_step) || p->refine_step > 1)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl__balance_params.refine_step must be at most 1, not %g",
                         p->refine_step);
    if (p->reps == 0)
        p->reps = DEFAULT_REPS;
    if (p->reps < 0)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl__balance_params.reps must be positive, not %d", p->reps);
    if (p->delta == 0)
        p->delta = DEFAULT_DELTA;
    if (!(p->delta > 0) || isinf(p->delta))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl__balance_params.delta must be positive, not %g", p->delta);
    if (!finite_at_least(p->threshold, 0))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl__balance_params.threshold must be >= 0, not %g",
                         p->threshold);
    if (p->back_off == 0)
        p->back_off = DEFAULT_BACK_OFF;
    if (p->max_iterations == 0)
        p->max_iterations = DEFAULT_MAX_ITERATIONS;
    if (p->back_off < 0 || p->max_iterations < 0)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl__balance_params.%s must be positive",
                         p->back_off < 0 ? "back_off" : "max_iterations");
    return HPL_OK;
}

/* ---- small helpers ------------------------------------------------------- */

static void equal_split(int devices, double *w)
{
    for (int i = 0; i < devices; i++)
        w[i] = 1.0 / devices;
}

/* The timings of a new distribution start from nothing. */
static void start_timing(hpl__balance *b)
{
    b->reps_done = 0;
    for (int i = 0; i < b->devices; i++)
        b->t[i] = INFINITY;
}

/* Device i ran in the timings of cur and has a time. */
static bool used(const hpl__balance *b, int i)
{
    return b->ran[i] > 0 && !isinf(b->t[i]);
}

/* Dividing by a time: 0 (a clock too coarse for the work) counts as the floor. */
static double divisor(double seconds)
{
    return seconds > HPL__BALANCE_TIME_FLOOR ? seconds : HPL__BALANCE_TIME_FLOOR;
}

static double makespan(const hpl__balance *b)
{
    double m = 0;
    for (int i = 0; i < b->devices; i++)
        if (used(b, i) && b->t[i] > m)
            m = b->t[i];
    return m;
}

static void normalise(double *w, int devices)
{
    double sum = 0;
    for (int i = 0; i < devices; i++)
        sum += w[i];
    if (sum > 0)
        for (int i = 0; i < devices; i++)
            w[i] /= sum;
}

static void finish(hpl__balance *b)
{
    b->finished = true;
    b->pending = false;
}

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
        v[i] = used(b, i) ? b->t[i] : 0;
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

static void exhaustive_step(hpl__balance *b)
{
    bool more = exhaustive_more(b);
    if (!more) {
        finish(b);
        return;
    }
    cur_from_cell(b, b->stage == 0 ? b->grid : b->fine);
    start_timing(b);
}

static void exhaustive_init(hpl__balance *b)
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

/* ---- the models: fig. 7, fig. 8, CoreTSAR ------------------------------- */

/* Speeds from the last timing: work per second. A device that did not run
 * keeps the speed it had (0: none yet). */
static void measure_rates(hpl__balance *b)
{
    for (int i = 0; i < b->devices; i++)
        if (used(b, i) && !b->out[i])
            b->rate[i] = b->ran[i] / divisor(b->t[i]);
}

static double total_rate(const hpl__balance *b)
{
    double r = 0;
    for (int i = 0; i < b->devices; i++)
        if (!b->out[i])
            r += b->rate[i];
    return r;
}

/* Fig. 7's threshold as balance.h reads it: a device whose presence saves
 * less than the threshold off the balanced makespan gets nothing. All are
 * tested against the same solution; the fastest always stays. `speed` is
 * work per second and `work` the work to share in its units: the balanced
 * makespan is work / (the sum of the speeds). */
static void apply_threshold(hpl__balance *b, const double *speed, double work)
{
    double r = 0;
    int fastest = -1; /* among those still in: an earlier drop keeps its old speed */
    for (int i = 0; i < b->devices; i++)
        if (!b->out[i]) {
            r += speed[i];
            if (fastest < 0 || speed[i] > speed[fastest])
                fastest = i;
        }
    bool drop[HPL__MAX_DEVICES] = {false};
    for (int i = 0; i < b->devices; i++) {
        if (b->out[i] || speed[i] <= 0 || i == fastest || r - speed[i] <= 0)
            continue;
        drop[i] = work / (r - speed[i]) - work / r < b->p.threshold;
    }
    for (int i = 0; i < b->devices; i++)
        if (drop[i]) {
            b->out[i] = true;
            b->stats.dropped++;
        }
}

/* Shares proportional to speed (fig. 8 then fig. 7: the time each device
 * would take for an equal part, then w_i = u_i / U with u_i = max / t_i,
 * which is speed over total speed). A device with no speed yet keeps the
 * share it has; the others split the rest. */
static void solve_rates(hpl__balance *b, double *w)
{
    double kept = 0, r = total_rate(b);
    for (int i = 0; i < b->devices; i++)
        if (!b->out[i] && b->rate[i] <= 0)
            kept += b->cur[i];
    for (int i = 0; i < b->devices; i++) {
        if (b->out[i])
            w[i] = 0;
        else if (b->rate[i] <= 0)
            w[i] = b->cur[i];
        else
            w[i] = (1 - kept) * b->rate[i] / r;
    }
    normalise(w, b->devices);
    b->stats.predicted = r > 0 ? (1 - kept) / r : 0;
}

/* The next answer from the timing of cur. */
static void solve(hpl__balance *b, double *w)
{
    measure_rates(b);
    if (b->kind != HPL__BALANCE_ADAPTIVE && b->p.threshold > 0)
        apply_threshold(b, b->rate, 1);
    solve_rates(b, w);
    b->stats.solves++;
}

/* ---- ITERATIVE's model: a cost profile from every timing ---------------- */

/* Keeps the timing of cur, the oldest going when the history is full. A
 * device out, or that did not run, has time 0; times are floored (the
 * model divides by them). */
static void history_record(hpl__balance *b)
{
    if (b->history == HPL__BALANCE_MAX_HISTORY) {
        size_t keep = sizeof b->history_ran[0] * (HPL__BALANCE_MAX_HISTORY - 1);
        memmove(b->history_ran[0], b->history_ran[1], keep);
        memmove(b->history_t[0], b->history_t[1], keep);
        b->history--;
    }
    int h = b->history++;
    for (int i = 0; i < b->devices; i++) {
        b->history_ran[h][i] = b->ran[i];
        b->history_t[h][i] = used(b, i) && !b->out[i] ? fmax(b->t[i], HPL__BALANCE_TIME_FLOOR) : 0;
    }
}

/* Device i's work per second in the latest timing it ran (fig. 8's speed,
 * the work taken as uniform); 0: it never ran. */
static double latest_rate(const hpl__balance *b, int i)
{
    for (int h = b->history - 1; h >= 0; h--)
        if (b->history_t[h][i] > 0)
            return b->history_ran[h][i] / b->history_t[h][i];
    return 0;
}

/* Row c of M (and r) swapped with the row below it of the largest pivot;
 * false when the column is all zero or not finite. */
static bool pivot(int n, double M[][HPL__MAX_DEVICES], double *r, int c)
{
    int best = c;
    for (int k = c + 1; k < n; k++)
        if (fabs(M[k][c]) > fabs(M[best][c]))
            best = k;
    if (!(fabs(M[best][c]) > 0) || isinf(M[best][c]))
        return false; /* NaN fails the first test */
    for (int j = 0; j < n; j++) {
        double tmp = M[c][j];
        M[c][j] = M[best][j];
        M[best][j] = tmp;
    }
    double tmp = r[c];
    r[c] = r[best];
    r[best] = tmp;
    return true;
}

/* Gaussian elimination; false when singular or not finite. M and r are
 * overwritten. */
static bool solve_linear(int n, double M[][HPL__MAX_DEVICES], double *r, double *x)
{
    for (int c = 0; c < n; c++) {
        if (!pivot(n, M, r, c))
            return false;
        for (int k = c + 1; k < n; k++) {
            double f = M[k][c] / M[c][c];
            for (int j = c; j < n; j++)
                M[k][j] -= f * M[c][j];
            r[k] -= f * r[c];
        }
    }
    for (int c = n - 1; c >= 0; c--) {
        double sum = r[c];
        for (int j = c + 1; j < n; j++)
            sum -= M[c][j] * x[j];
        x[c] = sum / M[c][c];
        if (!isfinite(x[c]))
            return false;
    }
    return true;
}

/* Boundaries of the history, with the two ends. */
#define PROFILE_POINTS (HPL__BALANCE_MAX_HISTORY * (HPL__MAX_DEVICES - 1) + 2)

/* Normal equations of a least squares in u, over the devices idx[0 .. m - 1]. */
typedef struct normal_eq {
    int m;
    int idx[HPL__MAX_DEVICES];
    double M[HPL__MAX_DEVICES][HPL__MAX_DEVICES], r[HPL__MAX_DEVICES];
} normal_eq;

/* Adds weight * (a . u - y)^2. */
static void add_residual(normal_eq *q, const double *a, double y, double weight)
{
    for (int j = 0; j < q->m; j++) {
        q->r[j] += weight * a[j] * y;
        for (int l = 0; l < q->m; l++)
            q->M[j][l] += weight * a[j] * a[l];
    }
}

/* A boundary of a timing: the cost before it is sum_{i < j} v_i t_hi,
 * linear in the speeds. h < 0: the ends, cost 0 at 0 and 1 at 1. */
typedef struct boundary {
    double x;
    int h, j;
} boundary;

static int compare_boundaries(const void *a, const void *b)
{
    double x = ((const boundary *)a)->x, y = ((const boundary *)b)->x;
    return (x > y) - (x < y);
}

/* The cost before boundary k: coefficients of u in a, the constant returned. */
static double boundary_cost(const hpl__balance *b, const normal_eq *q, const double *p, const boundary *k,
                            double *a)
{
    for (int l = 0; l < q->m; l++) {
        int i = q->idx[l];
        a[l] = k->h >= 0 && i < k->j ? b->history_t[k->h][i] * p[i] : 0;
    }
    return k->h < 0 && k->x > 0 ? 1 : 0;
}

#define CONSISTENCY 3e-4 /* weight of agreement between timings: see estimate_speeds */

/* Agreement: along x, the costs before consecutive boundaries differ by
 * their distance times the cost density, so timings whose boundaries fell
 * close together must agree on the cost before them. The penalty is
 * sum (C_k+1 - C_k)^2 / (x_k+1 - x_k), the discrete energy of the density:
 * large for a cost concentrated in a sliver, which is how wrong speeds show
 * between close boundaries of different timings. */
static void add_consistency(const hpl__balance *b, normal_eq *q, const double *p)
{
    boundary k[PROFILE_POINTS];
    int n = 0;
    k[n++] = (boundary){0, -1, 0};
    k[n++] = (boundary){1, -1, 0};
    for (int h = 0; h < b->history; h++) {
        double x = 0;
        for (int j = 1; j < b->devices; j++) {
            x += b->history_ran[h][j - 1];
            k[n++] = (boundary){fmin(x, 1), h, j};
        }
    }
    qsort(k, (size_t)n, sizeof *k, compare_boundaries);
    double a0[HPL__MAX_DEVICES], a1[HPL__MAX_DEVICES];
    double c0 = boundary_cost(b, q, p, &k[0], a0);
    for (int e = 1; e < n; e++) {
        double c1 = boundary_cost(b, q, p, &k[e], a1), dx = k[e].x - k[e - 1].x;
        if (dx > 1e-12) {
            double diff[HPL__MAX_DEVICES];
            for (int l = 0; l < q->m; l++)
                diff[l] = a1[l] - a0[l];
            add_residual(q, diff, c0 - c1, CONSISTENCY / dx);
        }
        memcpy(a0, a1, sizeof a0);
        c0 = c1;
    }
}

/* The ridge lam |u - 1|^2 added, solved: u > 0 or false. */
static bool speeds_at(const normal_eq *q, double lam, double *u)
{
    double M[HPL__MAX_DEVICES][HPL__MAX_DEVICES], r[HPL__MAX_DEVICES];
    for (int j = 0; j < q->m; j++) {
        r[j] = q->r[j] + lam;
        for (int l = 0; l < q->m; l++)
            M[j][l] = q->M[j][l] + (j == l ? lam : 0);
    }
    if (!solve_linear(q->m, M, r, u))
        return false;
    for (int j = 0; j < q->m; j++)
        if (!(u[j] > 0))
            return false;
    return true;
}

/* Each device's speed, the whole work being 1: however the work is split,
 * the parts add up to the whole, so every timing h gives
 * sum_i v_i t_hi = 1. With as many timings as devices that fixes the
 * speeds, but noise leaves directions along which the timings barely
 * differ; the consistency above decides those. Least squares in units of
 * each device's latest rate p_i (u_i = v_i / p_i), with a ridge
 * lam |u - 1|^2 that decides what neither can (fewer timings than devices)
 * and grows until every speed is positive, the rates themselves at the
 * end. 0 for a device out or that never ran. */
static void estimate_speeds(const hpl__balance *b, double *v)
{
    normal_eq q = {0};
    double p[HPL__MAX_DEVICES], u[HPL__MAX_DEVICES], a[HPL__MAX_DEVICES];
    for (int i = 0; i < b->devices; i++) {
        p[i] = b->out[i] ? 0 : latest_rate(b, i);
        v[i] = 0;
        if (p[i] > 0)
            q.idx[q.m++] = i;
    }
    for (int h = 0; h < b->history; h++) {
        for (int l = 0; l < q.m; l++)
            a[l] = b->history_t[h][q.idx[l]] * p[q.idx[l]];
        add_residual(&q, a, 1, 1);
    }
    add_consistency(b, &q, p);
    double lam = 1e-6;
    while (lam <= 1e6 && !speeds_at(&q, lam, u))
        lam *= 100;
    for (int l = 0; l < q.m; l++)
        v[q.idx[l]] = lam <= 1e6 ? u[l] * p[q.idx[l]] : p[q.idx[l]];
}

/* The cumulative cost C(x) of the work before position x in [0, 1] (the
 * caller's split dimension, parts in device order), C(0) = 0, C(1) = 1:
 * known at the boundaries of the timings, nondecreasing. */
typedef struct profile {
    int n;
    double x[PROFILE_POINTS], c[PROFILE_POINTS]; /* x strictly increasing, from 0 to 1 */
} profile;

typedef struct profile_point {
    double x, c;
} profile_point;

static int compare_points(const void *a, const void *b)
{
    double x = ((const profile_point *)a)->x, y = ((const profile_point *)b)->x;
    return (x > y) - (x < y);
}

/* The boundaries of timing h, each with the cost before it: device i did
 * v_i t_hi of the work. Scaled by the timing's total, so that its own
 * points agree with C(1) = 1 whatever the noise. */
static int timing_points(const hpl__balance *b, int h, const double *v, profile_point *pt)
{
    double total = 0, x = 0, cost = 0;
    for (int i = 0; i < b->devices; i++)
        total += v[i] * b->history_t[h][i];
    if (!(total > 0) || isinf(total))
        return 0;
    for (int i = 0; i < b->devices - 1; i++) {
        x += b->history_ran[h][i];
        cost += v[i] * b->history_t[h][i];
        pt[i] = (profile_point){fmin(x, 1), cost / total};
    }
    return b->devices - 1;
}

/* Points at the same position are averaged; then the least-squares
 * nondecreasing fit (pool adjacent violators): timings disagree by their
 * noise, and more work never costs less. */
static void profile_fit(profile *pr, const profile_point *pt, int n)
{
    int len[PROFILE_POINTS];
    pr->n = 0;
    for (int k = 0; k < n; k++) {
        int m = pr->n;
        if (m > 0 && pt[k].x == pr->x[m - 1]) {
            pr->c[m - 1] += (pt[k].c - pr->c[m - 1]) / ++len[m - 1];
            continue;
        }
        pr->x[m] = pt[k].x;
        pr->c[m] = pt[k].c;
        len[m] = 1;
        pr->n++;
    }
    double mean[PROFILE_POINTS];
    int size[PROFILE_POINTS], blocks = 0;
    for (int k = 0; k < pr->n; k++) {
        mean[blocks] = pr->c[k];
        size[blocks++] = 1;
        while (blocks > 1 && mean[blocks - 2] > mean[blocks - 1]) {
            blocks--;
            mean[blocks - 1] += (mean[blocks] - mean[blocks - 1]) * size[blocks] / (size[blocks - 1] + size[blocks]);
            size[blocks - 1] += size[blocks];
        }
    }
    for (int j = 0, k = 0; j < blocks; j++)
        for (int r = 0; r < size[j]; r++)
            pr->c[k++] = mean[j];
    pr->c[0] = 0;
    pr->c[pr->n - 1] = 1;
}

static void profile_build(const hpl__balance *b, const double *v, profile *pr)
{
    profile_point pt[PROFILE_POINTS];
    int n = 0;
    pt[n++] = (profile_point){0, 0};
    pt[n++] = (profile_point){1, 1};
    for (int h = 0; h < b->history; h++)
        n += timing_points(b, h, v, pt + n);
    qsort(pt, (size_t)n, sizeof *pt, compare_points);
    profile_fit(pr, pt, n);
}

static double profile_slope(const profile *pr, int k)
{
    return (pr->c[k + 1] - pr->c[k]) / (pr->x[k + 1] - pr->x[k]);
}

/* How C bends through segment k, from its neighbours' slopes: +1 convex
 * (they rise through it), -1 concave, 0 neither or an end segment. A bent
 * segment is the two neighbours' lines continued to where they meet (the
 * larger of them when convex, the smaller when concave): the cost keeps
 * the density it had on each side and changes once, inside. That locates
 * a step in the cost, where a chord would smear it over the segment. */
static int profile_bend(const profile *pr, int k, double *ml, double *mr)
{
    if (k == 0 || k >= pr->n - 2)
        return 0;
    double m = profile_slope(pr, k);
    *ml = profile_slope(pr, k - 1);
    *mr = profile_slope(pr, k + 1);
    if (*ml <= m && m <= *mr && *ml < *mr)
        return 1;
    if (*ml >= m && m >= *mr && *ml > *mr)
        return -1;
    return 0;
}

static double profile_at(const profile *pr, double x)
{
    int k = 0;
    while (k < pr->n - 2 && pr->x[k + 1] < x)
        k++;
    double ml = 0, mr = 0, x0 = pr->x[k], x1 = pr->x[k + 1], c0 = pr->c[k], c1 = pr->c[k + 1], c;
    int bend = profile_bend(pr, k, &ml, &mr);
    if (bend == 0) {
        c = c0 + profile_slope(pr, k) * (x - x0);
    } else {
        double l0 = c0 + ml * (x - x0), l1 = c1 - mr * (x1 - x);
        c = bend > 0 ? fmax(l0, l1) : fmin(l0, l1);
    }
    return fmin(fmax(c, c0), c1);
}

/* The inverse of profile_at: where the cost before reaches y. A flat
 * stretch (no cost) goes to the device after it. */
static double profile_inverse(const profile *pr, double y)
{
    int k = 0;
    while (k < pr->n - 2 && pr->c[k + 1] < y)
        k++;
    double ml = 0, mr = 0, x0 = pr->x[k], x1 = pr->x[k + 1], c0 = pr->c[k], c1 = pr->c[k + 1], x;
    if (!(c1 > c0) || y <= c0)
        return x0;
    int bend = profile_bend(pr, k, &ml, &mr);
    if (bend == 0) {
        x = x0 + (y - c0) / (c1 - c0) * (x1 - x0);
    } else if (bend > 0) { /* the larger line reaches y first; mr >= slope > 0 */
        x = fmin(ml > 0 ? x0 + (y - c0) / ml : INFINITY, x1 - (c1 - y) / mr);
    } else { /* the smaller line reaches y last; ml >= slope > 0 */
        x = fmax(x0 + (y - c0) / ml, mr > 0 ? x1 - (c1 - y) / mr : -INFINITY);
    }
    return fmin(fmax(x, x0), x1);
}

/* Solves 2 on. From the latest timing (whose times the model need not
 * reproduce: it is corrected, not replaced), device i is to change its
 * time by T - t_i, which moves v_i (T - t_i) of work across its
 * boundaries; the parts still cover the whole when T is the mean of the
 * times weighted by speed, the makespan predicted. Each boundary goes to
 * where the profile puts the cost it must have before it. False when no
 * device has a speed. */
static bool solve_profile(hpl__balance *b, const double *v, double *w, double *T)
{
    int h = b->history - 1, d = b->devices;
    const double *ran = b->history_ran[h], *t = b->history_t[h];
    double speed = 0, work = 0;
    for (int i = 0; i < d; i++) {
        speed += v[i];
        work += v[i] * t[i];
    }
    if (!(speed > 0) || !(work > 0) || isinf(work))
        return false;
    profile pr;
    profile_build(b, v, &pr);
    *T = work / speed;
    double x = 0, shift = 0, edge = 0;
    for (int i = 0; i < d - 1; i++) {
        x += ran[i];
        shift += v[i] * (*T - t[i]);
        double at = profile_inverse(&pr, fmin(fmax(profile_at(&pr, fmin(x, 1)) + shift, 0), 1));
        w[i] = fmax(at, edge) - edge;
        edge += w[i];
    }
    w[d - 1] = 1 - edge;
    return true;
}

/* A device without a speed (it never ran) keeps its share, as in
 * solve_rates; one out gets nothing; the others share the rest in the
 * model's proportions. */
static void keep_unknown(const hpl__balance *b, const double *v, double *w)
{
    double kept = 0, rest = 0;
    for (int i = 0; i < b->devices; i++) {
        if (b->out[i])
            w[i] = 0;
        else if (v[i] <= 0)
            kept += b->cur[i];
        else
            rest += w[i];
    }
    for (int i = 0; i < b->devices; i++)
        if (!b->out[i])
            w[i] = v[i] <= 0 ? b->cur[i] : rest > 0 ? w[i] * (1 - kept) / rest : 0;
    normalise(w, b->devices);
}

/* The model's answer, fig. 7's threshold applied to its speeds. */
static bool solve_history(hpl__balance *b, double *w)
{
    double v[HPL__MAX_DEVICES], T = 0;
    estimate_speeds(b, v);
    if (b->p.threshold > 0) {
        double work = 0;
        for (int i = 0; i < b->devices; i++)
            work += v[i] * b->history_t[b->history - 1][i];
        apply_threshold(b, v, work);
        for (int i = 0; i < b->devices; i++)
            v[i] = b->out[i] ? 0 : v[i];
    }
    b->stats.solves++;
    if (!solve_profile(b, v, w, &T))
        return false;
    keep_unknown(b, v, w);
    b->stats.predicted = T;
    return true;
}

/* ITERATIVE's stop: every device in the search took less than (1 + delta)
 * times the fastest one's time. One left idle (its share quantised to
 * nothing) counts as 0: the others could share with it. */
static bool balanced(const hpl__balance *b)
{
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < b->devices; i++) {
        if (b->out[i])
            continue;
        double t = used(b, i) ? b->t[i] : 0;
        lo = fmin(lo, t);
        hi = fmax(hi, t);
    }
    return hi < (1 + b->p.delta) * lo || hi == 0;
}

/* The model sees less than delta / 2 to gain over the best timed: within
 * what the timings resolve. Also ends the searches that cannot balance
 * (a device that cannot take a part of the work short of the makespan). */
static bool nothing_to_gain(const hpl__balance *b)
{
    return b->stats.predicted >= (1 - b->p.delta / 2) * b->choice_makespan;
}

static void single_step_done(hpl__balance *b)
{
    solve(b, b->choice);
    b->choice_timed = false;
    b->choice_makespan = 0;
    memset(b->choice_seconds, 0, sizeof b->choice_seconds);
    finish(b);
}

static void iterative_step(hpl__balance *b)
{
    history_record(b);
    if (balanced(b)) {
        b->stats.converged = true;
        finish(b);
        return;
    }
    if (b->stats.solves >= b->p.max_iterations) {
        finish(b);
        return;
    }
    double w[HPL__MAX_DEVICES];
    if (b->stats.solves == 0) {
        solve(b, w); /* fig. 7 on the equal split: SINGLE_STEP's answer */
    } else if (!solve_history(b, w) || nothing_to_gain(b)) {
        finish(b);
        return;
    }
    memcpy(b->cur, w, sizeof(double) * (size_t)b->devices);
    start_timing(b);
}

/* CoreTSAR's back-off, per pass: a device is a strike when its own time is
 * (1 + delta) times or more the time the others would need for all the
 * work at their measured speeds; back_off strikes in a row and the worst
 * such device is out. Before the shares settle (the equal split) a slow
 * device can be a strike while it is worth keeping: hence several passes.
 * The margin keeps noise from dropping a device that is worth a little
 * (a CPU at 1/180 of a GPU is 0.5% faster than the GPU alone, well inside
 * 2% of timing noise). */
static void back_off(hpl__balance *b)
{
    double speed[HPL__MAX_DEVICES], r = 0;
    for (int i = 0; i < b->devices; i++) {
        speed[i] = used(b, i) && !b->out[i] ? b->ran[i] / divisor(b->t[i]) : 0;
        r += speed[i];
    }
    int worst = -1;
    double worst_ratio = 0;
    for (int i = 0; i < b->devices; i++) {
        if (speed[i] <= 0 || r - speed[i] <= 0)
            continue; /* did not run, or ran alone */
        double ratio = divisor(b->t[i]) * (r - speed[i]); /* own time / the others' time for all */
        b->strikes[i] = ratio >= 1 + b->p.delta ? b->strikes[i] + 1 : 0;
        if (b->strikes[i] >= b->p.back_off && ratio > worst_ratio) {
            worst = i;
            worst_ratio = ratio;
        }
    }
    if (worst >= 0) {
        b->out[worst] = true;
        b->strikes[worst] = 0;
        b->stats.dropped++;
    }
}

static void adaptive_pass(hpl__balance *b)
{
    back_off(b);
    solve(b, b->choice);
    memcpy(b->cur, b->choice, sizeof b->cur);
    start_timing(b);
}

/* ---- the state machine --------------------------------------------------- */

int hpl__balance_init(hpl__balance *b, hpl__balance_kind kind, int devices, const hpl__balance_params *p)
{
    memset(b, 0, sizeof *b);
    b->finished = true; /* unusable until set up */
    if ((unsigned)kind > HPL__BALANCE_ADAPTIVE)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "balance kind %d is not one of hpl__balance_kind", (int)kind);
    if (devices < 1 || devices > HPL__MAX_DEVICES)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "balance over %d devices: must be 1 to %d", devices,
                         HPL__MAX_DEVICES);
    b->p = p ? *p : (hpl__balance_params){0};
    int rc = fill_params(&b->p, devices);
    if (rc != HPL_OK)
        return rc;
    b->kind = kind;
    b->devices = devices;
    equal_split(devices, b->cur);
    equal_split(devices, b->choice);
    start_timing(b);
    if (kind == HPL__BALANCE_EXHAUSTIVE)
        exhaustive_init(b);
    b->finished = devices == 1 && kind != HPL__BALANCE_ADAPTIVE;
    return HPL_OK;
}

bool hpl__balance_next(hpl__balance *b, double *shares)
{
    if (b->finished)
        return false;
    memcpy(shares, b->cur, sizeof(double) * (size_t)b->devices);
    b->pending = true;
    return true;
}

/* The shares run, normalised; false when they cannot be. */
static bool take_run(const hpl__balance *b, const double *run, double *ran)
{
    if (!run) {
        memcpy(ran, b->cur, sizeof(double) * (size_t)b->devices);
        return true;
    }
    double sum = 0;
    for (int i = 0; i < b->devices; i++) {
        if (!finite_at_least(run[i], 0))
            return false;
        sum += run[i];
    }
    if (!(sum > 0))
        return false;
    for (int i = 0; i < b->devices; i++)
        ran[i] = run[i] / sum;
    return true;
}

/* A device that ran must report a finite time >= 0. */
static bool times_ok(const hpl__balance *b, const double *ran, const double *seconds)
{
    for (int i = 0; i < b->devices; i++)
        if (ran[i] > 0 && !finite_at_least(seconds[i], 0))
            return false;
    return true;
}

static void refuse(hpl__balance *b, bool was_pending)
{
    b->stats.rejected++;
    if (!was_pending)
        return;
    if (++b->rejects_in_row >= HPL__BALANCE_MAX_REJECTS && b->kind != HPL__BALANCE_ADAPTIVE)
        finish(b); /* the answer stays the best timed, or the equal split */
}

static void consider_best(hpl__balance *b, double m)
{
    if (b->choice_timed && !(m < b->choice_makespan))
        return; /* ties keep the first: the order of the search decides */
    b->choice_timed = true;
    b->choice_makespan = m;
    for (int i = 0; i < b->devices; i++) {
        b->choice[i] = b->cur[i];
        b->choice_seconds[i] = used(b, i) ? b->t[i] : 0;
    }
}

/* All the timings of cur are in. */
static void distribution_done(hpl__balance *b)
{
    double m = makespan(b);
    b->stats.distributions++;
    b->stats.last_makespan = m;
    if (b->kind == HPL__BALANCE_ADAPTIVE) {
        adaptive_pass(b);
        return;
    }
    consider_best(b, m);
    switch (b->kind) {
    case HPL__BALANCE_EXHAUSTIVE:
        exhaustive_step(b);
        break;
    case HPL__BALANCE_SINGLE_STEP:
        single_step_done(b);
        break;
    default:
        iterative_step(b);
        break;
    }
}

void hpl__balance_observe_run(hpl__balance *b, const double *shares_run, const double *seconds)
{
    bool was_pending = b->pending;
    double ran[HPL__MAX_DEVICES];
    b->pending = false;
    if (!was_pending || b->finished || !seconds || !take_run(b, shares_run, ran) || !times_ok(b, ran, seconds)) {
        refuse(b, was_pending && !b->finished);
        return;
    }
    b->rejects_in_row = 0;
    b->stats.timings++;
    memcpy(b->ran, ran, sizeof(double) * (size_t)b->devices);
    for (int i = 0; i < b->devices; i++)
        if (ran[i] > 0)
            b->t[i] = fmin(b->t[i], seconds[i]);
    if (++b->reps_done >= b->p.reps || b->kind == HPL__BALANCE_ADAPTIVE)
        distribution_done(b);
}

void hpl__balance_observe(hpl__balance *b, const double *seconds)
{
    hpl__balance_observe_run(b, NULL, seconds);
}

void hpl__balance_best(const hpl__balance *b, double *shares)
{
    memcpy(shares, b->choice, sizeof(double) * (size_t)b->devices);
}

const char *hpl__balance_kind_name(hpl__balance_kind kind)
{
    switch (kind) {
    case HPL__BALANCE_EXHAUSTIVE:
        return "EXHAUSTIVE";
    case HPL__BALANCE_SINGLE_STEP:
        return "SINGLE_STEP";
    case HPL__BALANCE_ITERATIVE:
        return "ITERATIVE";
    case HPL__BALANCE_ADAPTIVE:
        return "ADAPTIVE";
    }
    return "?";
}


int hpl__balance_describe(const hpl__balance *b, char *buf, size_t size)
{
    const hpl__balance_stats *s = &b->stats;
    int n = hpl__append(buf, size, 0, "%s%s: shares", hpl__balance_kind_name(b->kind), b->finished ? "" : " (searching)");
    for (int i = 0; i < b->devices; i++)
        n = hpl__append(buf, size, n, " %.4f", b->choice[i]);
    if (b->choice_timed)
        n = hpl__append(buf, size, n, ", makespan %.6g s", b->choice_makespan);
    else if (s->solves > 0)
        n = hpl__append(buf, size, n, ", predicted %.6g s", s->predicted);
    n = hpl__append(buf, size, n, "; %d distributions, %d timings", s->distributions, s->timings);
    if (s->solves > 0)
        n = hpl__append(buf, size, n, ", %d solves", s->solves);
    if (b->kind == HPL__BALANCE_EXHAUSTIVE)
        n = hpl__append(buf, size, n, ", step %.4g", s->step);
    if (s->compass)
        n = hpl__append(buf, size, n, ", compass to %.4g", 1.0 / b->fine);
    if (b->kind == HPL__BALANCE_ITERATIVE && b->finished)
        n = hpl__append(buf, size, n, s->converged ? ", converged" : ", not converged");
    if (s->dropped > 0)
        n = hpl__append(buf, size, n, ", %d dropped", s->dropped);
    if (s->rejected > 0)
        n = hpl__append(buf, size, n, ", %d timings refused", s->rejected);
    return n;
}
