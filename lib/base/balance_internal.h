/* What the load balancer's files (balance*.c) share and the rest of the
 * library does not see: the small helpers on a search's timings, and each
 * file's entry points for the state machine in balance.c. */
#ifndef HPL_BALANCE_INTERNAL_H
#define HPL_BALANCE_INTERNAL_H

#include "balance.h"

#include <math.h>
#include <stdbool.h>

/* ---- helpers on the timings of cur --------------------------------------- */

/* The timings of a new distribution start from nothing. */
static inline void hpl__balance_start_timing(hpl__balance *b)
{
    b->reps_done = 0;
    for (int i = 0; i < b->devices; i++)
        b->t[i] = INFINITY;
}

/* Device i ran in the timings of cur and has a time. */
static inline bool hpl__balance_used(const hpl__balance *b, int i)
{
    return b->ran[i] > 0 && !isinf(b->t[i]);
}

static inline void hpl__balance_normalise(double *w, int devices)
{
    double sum = 0;
    for (int i = 0; i < devices; i++)
        sum += w[i];
    if (sum > 0)
        for (int i = 0; i < devices; i++)
            w[i] /= sum;
}

static inline void hpl__balance_finish(hpl__balance *b)
{
    b->finished = true;
    b->pending = false;
}

/* ---- EXHAUSTIVE (balance_exhaustive.c) ----------------------------------- */

/* The grid, coarsened to HPL__BALANCE_MAX_POINTS, and its first point as cur. */
void hpl__balance_exhaustive_init(hpl__balance *b);

/* All the timings of cur are in: the next point as cur, or the search ends. */
void hpl__balance_exhaustive_step(hpl__balance *b);

/* ---- the rate models (balance_model.c) ----------------------------------- */

/* Fig. 7's threshold on the speeds `speed` for `work` to share. */
void hpl__balance_apply_threshold(hpl__balance *b, const double *speed, double work);

/* The next answer into w from the timing of cur: shares proportional to speed. */
void hpl__balance_solve(hpl__balance *b, double *w);

/* CoreTSAR's back-off after a pass: the worst device not worth it is out. */
void hpl__balance_back_off(hpl__balance *b);

/* ---- ITERATIVE's cost profile (balance_profile.c) ------------------------ */

/* Keeps the timing of cur in the history. */
void hpl__balance_history_record(hpl__balance *b);

/* The model's answer into w from the history; false when it has none. */
bool hpl__balance_solve_history(hpl__balance *b, double *w);

#endif
