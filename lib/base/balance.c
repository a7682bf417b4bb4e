/* Load balancing searches. See balance.h. */
#include "balance.h"

#include "common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_STEP 0.05
#define DEFAULT_REFINE 0.01 /* for 3 devices or more */
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
        p->refine_step = devices >= 3 ? DEFAULT_REFINE : -1;
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

/* Centre the fine grid on the best coarse point. The neighbourhood reaches
 * one coarse step less one fine step each way (no other coarse point is in
 * it), narrowed until the odometer fits HPL__BALANCE_MAX_POINTS. */
static bool refine_start(hpl__balance *b)
{
    if (b->p.refine_step < 0)
        return false;
    int d = b->devices, fine = (int)fmin(round(1.0 / b->p.refine_step), 1 << 24);
    if (fine <= b->grid)
        return false;
    int radius = (int)fmin((fine + b->grid - 1) / b->grid - 1, HPL__BALANCE_MAX_POINTS);
    if (radius < 1)
        radius = 1;
    while (radius >= 1 && pow(2 * radius + 1, d - 1) > HPL__BALANCE_MAX_POINTS)
        radius--;
    if (radius < 1)
        return false;
    /* Cumulative rounding keeps the centre's cells summing to fine. */
    double cum = 0;
    long prev = 0;
    for (int i = 0; i < d; i++) {
        cum += b->choice[i];
        long edge = i == d - 1 ? fine : lround(cum * fine);
        b->centre[i] = (int)(edge - prev);
        prev = edge;
    }
    b->stage = 1;
    b->fine = fine;
    b->radius = radius;
    for (int i = 0; i < d - 1; i++)
        b->cell[i] = refine_lo(b, i);
    return refine_ok(b) || refine_next(b);
}

static void exhaustive_step(hpl__balance *b)
{
    bool more = b->stage == 0 ? coarse_next(b) || refine_start(b) : refine_next(b);
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
 * tested against the same solution; the fastest always stays. */
static void apply_threshold(hpl__balance *b)
{
    double r = total_rate(b);
    int fastest = -1; /* among those still in: an earlier drop keeps its old speed */
    for (int i = 0; i < b->devices; i++)
        if (!b->out[i] && (fastest < 0 || b->rate[i] > b->rate[fastest]))
            fastest = i;
    bool drop[HPL__MAX_DEVICES] = {false};
    for (int i = 0; i < b->devices; i++) {
        if (b->out[i] || b->rate[i] <= 0 || i == fastest || r - b->rate[i] <= 0)
            continue;
        drop[i] = 1.0 / (r - b->rate[i]) - 1.0 / r < b->p.threshold;
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
        apply_threshold(b);
    solve_rates(b, w);
    b->stats.solves++;
}

/* ITERATIVE's stop: every device that ran took less than (1 + delta) times
 * the fastest one's time. */
static bool balanced(const hpl__balance *b)
{
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < b->devices; i++)
        if (used(b, i)) {
            lo = fmin(lo, b->t[i]);
            hi = fmax(hi, b->t[i]);
        }
    return hi < (1 + b->p.delta) * lo || hi == 0;
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
    solve(b, w);
    int k = b->stats.solves; /* the single step is solve 1 */
    if (k > 2) {
        /* The relaxation: move 1/(k - 1) of the way, so oscillations die. */
        for (int i = 0; i < b->devices; i++)
            w[i] = b->out[i] ? 0 : b->cur[i] + (w[i] - b->cur[i]) / (k - 1);
        normalise(w, b->devices);
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

/* snprintf that keeps appending after a truncation without overrunning. */
static int append(char *buf, size_t size, int at, const char *fmt, ...) HPL__PRINTF(4, 5);
static int append(char *buf, size_t size, int at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t used_ = (size_t)at < size ? (size_t)at : size;
    int n = vsnprintf(buf ? buf + used_ : NULL, size - used_, fmt, ap);
    va_end(ap);
    return n < 0 ? at : at + n;
}

int hpl__balance_describe(const hpl__balance *b, char *buf, size_t size)
{
    const hpl__balance_stats *s = &b->stats;
    int n = append(buf, size, 0, "%s%s: shares", hpl__balance_kind_name(b->kind), b->finished ? "" : " (searching)");
    for (int i = 0; i < b->devices; i++)
        n = append(buf, size, n, " %.4f", b->choice[i]);
    if (b->choice_timed)
        n = append(buf, size, n, ", makespan %.6g s", b->choice_makespan);
    else if (s->solves > 0)
        n = append(buf, size, n, ", predicted %.6g s", s->predicted);
    n = append(buf, size, n, "; %d distributions, %d timings", s->distributions, s->timings);
    if (s->solves > 0)
        n = append(buf, size, n, ", %d solves", s->solves);
    if (b->kind == HPL__BALANCE_EXHAUSTIVE)
        n = append(buf, size, n, ", step %.4g", s->step);
    if (b->kind == HPL__BALANCE_ITERATIVE && b->finished)
        n = append(buf, size, n, s->converged ? ", converged" : ", not converged");
    if (s->dropped > 0)
        n = append(buf, size, n, ", %d dropped", s->dropped);
    if (s->rejected > 0)
        n = append(buf, size, n, ", %d timings refused", s->rejected);
    return n;
}
