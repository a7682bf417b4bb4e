/* The rate models: shares proportional to the speeds measured (fig. 7 and
 * fig. 8), fig. 7's threshold, CoreTSAR's back-off (balance.h). */
#include "balance_internal.h"

#include <math.h>

/* ---- the models: fig. 7, fig. 8, CoreTSAR ------------------------------- */

/* Dividing by a time: 0 (a clock too coarse for the work) counts as the floor. */
static double divisor(double seconds)
{
    return seconds > HPL__BALANCE_TIME_FLOOR ? seconds : HPL__BALANCE_TIME_FLOOR;
}

/* Speeds from the last timing: work per second. A device that did not run
 * keeps the speed it had (0: none yet). */
static void measure_rates(hpl__balance *b)
{
    for (int i = 0; i < b->devices; i++)
        if (hpl__balance_used(b, i) && !b->out[i])
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
void hpl__balance_apply_threshold(hpl__balance *b, const double *speed, double work)
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
    hpl__balance_normalise(w, b->devices);
    b->stats.predicted = r > 0 ? (1 - kept) / r : 0;
}

/* The next answer from the timing of cur. */
void hpl__balance_solve(hpl__balance *b, double *w)
{
    measure_rates(b);
    if (b->kind != HPL__BALANCE_ADAPTIVE && b->p.threshold > 0)
        hpl__balance_apply_threshold(b, b->rate, 1);
    solve_rates(b, w);
    b->stats.solves++;
}

/* CoreTSAR's back-off, per pass: a device is a strike when its own time is
 * (1 + delta) times or more the time the others would need for all the
 * work at their measured speeds; back_off strikes in a row and the worst
 * such device is out. Before the shares settle (the equal split) a slow
 * device can be a strike while it is worth keeping: hence several passes.
 * The margin keeps noise from dropping a device that is worth a little
 * (a CPU at 1/180 of a GPU is 0.5% faster than the GPU alone, well inside
 * 2% of timing noise). */
void hpl__balance_back_off(hpl__balance *b)
{
    double speed[HPL__MAX_DEVICES], r = 0;
    for (int i = 0; i < b->devices; i++) {
        speed[i] = hpl__balance_used(b, i) && !b->out[i] ? b->ran[i] / divisor(b->t[i]) : 0;
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
