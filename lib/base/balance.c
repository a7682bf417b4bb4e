/* Load balancing searches: their parameters, the public entry points and
 * the state machine that takes each kind from timing to timing. See
 * balance.h. */
#include "balance.h"
#include "balance_internal.h"

#include "common.h"

#include <math.h>
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
/* ADAPTIVE's alone check (balance.h): the split's passes from pass 3 (pass
 * 1 is the equal split, pass 2 moves the rows to the first solve's
 * shares) to pass 4, then 3 passes of the device alone, the first of
 * which moves the rows to it. */
#define ADAPTIVE_SPLIT_FROM 3
#define ADAPTIVE_SPLIT_PASSES 4
#define ADAPTIVE_ALONE_PASSES 3

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

static double makespan(const hpl__balance *b)
{
    double m = 0;
    for (int i = 0; i < b->devices; i++)
        if (hpl__balance_used(b, i) && b->t[i] > m)
            m = b->t[i];
    return m;
}

/* ---- each kind after a distribution's timings ---------------------------- */

/* ITERATIVE's stop: every device in the search took less than (1 + delta)
 * times the fastest one's time. One left idle (its share quantised to
 * nothing) counts as 0: the others could share with it. */
static bool balanced(const hpl__balance *b)
{
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < b->devices; i++) {
        if (b->out[i])
            continue;
        double t = hpl__balance_used(b, i) ? b->t[i] : 0;
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
    hpl__balance_solve(b, b->choice);
    b->choice_timed = false;
    b->choice_makespan = 0;
    memset(b->choice_seconds, 0, sizeof b->choice_seconds);
    hpl__balance_finish(b);
}

static void iterative_step(hpl__balance *b)
{
    hpl__balance_history_record(b);
    if (balanced(b)) {
        b->stats.converged = true;
        hpl__balance_finish(b);
        return;
    }
    if (b->stats.solves >= b->p.max_iterations) {
        hpl__balance_finish(b);
        return;
    }
    double w[HPL__MAX_DEVICES];
    if (b->stats.solves == 0) {
        hpl__balance_solve(b, w); /* fig. 7 on the equal split: SINGLE_STEP's answer */
    } else if (!hpl__balance_solve_history(b, w) || nothing_to_gain(b)) {
        hpl__balance_finish(b);
        return;
    }
    memcpy(b->cur, w, sizeof(double) * (size_t)b->devices);
    hpl__balance_start_timing(b);
}

static void adaptive_pass(hpl__balance *b)
{
    hpl__balance_back_off(b);
    hpl__balance_solve(b, b->choice);
    memcpy(b->cur, b->choice, sizeof b->cur);
    hpl__balance_start_timing(b);
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
    b->split_wall = b->alone_wall = INFINITY;
    hpl__balance_start_timing(b);
    if (kind == HPL__BALANCE_EXHAUSTIVE)
        hpl__balance_exhaustive_init(b);
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
        hpl__balance_finish(b); /* the answer stays the best timed, or the equal split */
}

static void consider_best(hpl__balance *b, double m)
{
    if (b->choice_timed && !(m < b->choice_makespan))
        return; /* ties keep the first: the order of the search decides */
    b->choice_timed = true;
    b->choice_makespan = m;
    for (int i = 0; i < b->devices; i++) {
        b->choice[i] = b->cur[i];
        b->choice_seconds[i] = hpl__balance_used(b, i) ? b->t[i] : 0;
    }
}

/* All the timings of cur are in. */
static void distribution_done(hpl__balance *b)
{
    double m = makespan(b);
    b->stats.distributions++;
    b->stats.last_makespan = m;
    if (b->kind == HPL__BALANCE_ADAPTIVE) {
        if (b->alone_state == 1)
            hpl__balance_start_timing(b); /* the device alone: the model waits */
        else
            adaptive_pass(b);
        return;
    }
    consider_best(b, m);
    switch (b->kind) {
    case HPL__BALANCE_EXHAUSTIVE:
        hpl__balance_exhaustive_step(b);
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

/* ---- ADAPTIVE's alone check ---------------------------------------------- */

int hpl__balance_in_play(const hpl__balance *b)
{
    int n = 0;
    for (int i = 0; i < b->devices; i++)
        n += !b->out[i];
    return n;
}

bool hpl__balance_wants_wall(const hpl__balance *b)
{
    return b->kind == HPL__BALANCE_ADAPTIVE && !b->finished && !b->p.keep_split && b->devices > 1 &&
           b->alone_state < 2;
}

/* After the split's last timed pass: the device of its largest share
 * alone, unless the split uses one device only. */
static void alone_start(hpl__balance *b)
{
    int used = 0, top = 0;
    for (int i = 0; i < b->devices; i++) {
        used += b->choice[i] > 0;
        top = b->choice[i] > b->choice[top] ? i : top;
    }
    if (used < 2) {
        b->alone_state = 2;
        return;
    }
    b->alone_state = 1;
    b->alone_device = top;
    memcpy(b->held, b->choice, sizeof b->held);
    for (int i = 0; i < b->devices; i++)
        b->cur[i] = b->choice[i] = i == top ? 1.0 : 0.0;
    hpl__balance_start_timing(b);
}

static void alone_decide(hpl__balance *b)
{
    b->alone_state = 2;
    b->alone_checked = true;
    b->alone_won = b->alone_wall < b->split_wall;
    if (b->alone_won) {
        for (int i = 0; i < b->devices; i++) {
            if (i != b->alone_device && !b->out[i]) {
                b->out[i] = true;
                b->stats.dropped++;
            }
        }
        return; /* cur and choice: the device alone */
    }
    memcpy(b->choice, b->held, sizeof b->choice);
    memcpy(b->cur, b->held, sizeof b->cur);
    hpl__balance_start_timing(b);
}

void hpl__balance_observe_wall(hpl__balance *b, double seconds)
{
    if (!hpl__balance_wants_wall(b))
        return;
    if (!finite_at_least(seconds, 0)) {
        b->stats.rejected++;
        seconds = INFINITY;
    }
    int w = ++b->walls;
    if (b->alone_state == 0) {
        if (w >= ADAPTIVE_SPLIT_FROM)
            b->split_wall = fmin(b->split_wall, seconds);
        if (w == ADAPTIVE_SPLIT_PASSES)
            alone_start(b);
        return;
    }
    if (w > ADAPTIVE_SPLIT_PASSES + 1)
        b->alone_wall = fmin(b->alone_wall, seconds);
    if (w == ADAPTIVE_SPLIT_PASSES + ADAPTIVE_ALONE_PASSES)
        alone_decide(b);
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
    if (b->alone_checked)
        n = hpl__append(buf, size, n, ", device %d alone %.6g s a pass against the split's %.6g: %s", b->alone_device,
                        b->alone_wall, b->split_wall, b->alone_won ? "it runs alone" : "the split stays");
    if (s->rejected > 0)
        n = hpl__append(buf, size, n, ", %d timings refused", s->rejected);
    return n;
}
