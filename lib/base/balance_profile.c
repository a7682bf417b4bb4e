/* ITERATIVE's model from its second solve on: a cost profile from every
 * timing, with speeds by least squares (balance.h). */
#include "balance_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- ITERATIVE's model: a cost profile from every timing ---------------- */

/* Keeps the timing of cur, the oldest going when the history is full. A
 * device out, or that did not run, has time 0; times are floored (the
 * model divides by them). */
void hpl__balance_history_record(hpl__balance *b)
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
        b->history_t[h][i] = hpl__balance_used(b, i) && !b->out[i] ? fmax(b->t[i], HPL__BALANCE_TIME_FLOOR) : 0;
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
    hpl__balance_normalise(w, b->devices);
}

/* The model's answer, fig. 7's threshold applied to its speeds. */
bool hpl__balance_solve_history(hpl__balance *b, double *w)
{
    double v[HPL__MAX_DEVICES], T = 0;
    estimate_speeds(b, v);
    if (b->p.threshold > 0) {
        double work = 0;
        for (int i = 0; i < b->devices; i++)
            work += v[i] * b->history_t[b->history - 1][i];
        hpl__balance_apply_threshold(b, v, work);
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
