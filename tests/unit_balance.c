/* Load balancing searches (balance.h) against simulated devices whose time
 * is a function of the shares they get: linear (t = share * W / speed),
 * affine (a fixed overhead more), and the paper's unbalanced benchmark
 * (rows of unequal cost, split in contiguous parts in device order). Shares
 * are quantised to rows as a partition would. References are computed here
 * independently: brute force over the same grids, the balanced split
 * speed_i / sum(speed). Edge cases: one device, times of 0, equal times,
 * NaN / inf / negative times, bad parameters, misuse of the sequence. */
#include "balance.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_expect.h"

#define MAXD HPL__MAX_DEVICES
#define ROWS 4096

/* ---- simulated devices --------------------------------------------------- */

typedef struct sim {
    int devices;
    int rows;              /* 0: the work is continuous (W = 1, no quantisation) */
    const double *prefix;  /* prefix[r]: cost of rows [0, r); NULL: each row costs 1 / rows */
    double speed[MAXD];    /* cost per second */
    double overhead[MAXD]; /* seconds added when a device gets any work */
    double noise;          /* multiplicative, uniform in [1 - noise, 1 + noise] */
    uint64_t rng;
} sim;

static double uniform01(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

/* Shares to rows as a partition would: part i is [round(R * sum_{j<i} s_j),
 * round(R * sum_{j<=i} s_j)), the last ending at R. */
static void quantise(int devices, int rows, const double *shares, int *lo, int *hi)
{
    double cum = 0;
    int edge = 0;
    for (int i = 0; i < devices; i++) {
        lo[i] = edge;
        cum += shares[i];
        edge = i == devices - 1 ? rows : (int)lround(cum * rows);
        if (edge < lo[i])
            edge = lo[i];
        if (edge > rows)
            edge = rows;
        hi[i] = edge;
    }
}

/* Runs shares on the simulated devices: the shares actually run and each
 * device's time (0 for a device given nothing). Noise-free when noisy is
 * false. */
static void sim_run(sim *s, const double *shares, double *ran, double *seconds, bool noisy)
{
    int lo[MAXD], hi[MAXD];
    if (s->rows > 0)
        quantise(s->devices, s->rows, shares, lo, hi);
    for (int i = 0; i < s->devices; i++) {
        double cost;
        if (s->rows == 0) {
            cost = shares[i];
            ran[i] = shares[i];
        } else {
            ran[i] = (double)(hi[i] - lo[i]) / s->rows;
            cost = s->prefix ? s->prefix[hi[i]] - s->prefix[lo[i]] : (double)(hi[i] - lo[i]) / s->rows;
        }
        seconds[i] = ran[i] > 0 ? s->overhead[i] + cost / s->speed[i] : 0;
        if (noisy && s->noise > 0)
            seconds[i] *= 1 + s->noise * (2 * uniform01(&s->rng) - 1);
    }
}

/* The slowest device, noise-free. */
static double sim_makespan(sim *s, const double *shares)
{
    double ran[MAXD], t[MAXD], m = 0;
    sim_run(s, shares, ran, t, false);
    for (int i = 0; i < s->devices; i++)
        m = fmax(m, t[i]);
    return m;
}

static sim linear(int devices, const double *speed)
{
    sim s = {.devices = devices};
    for (int i = 0; i < devices; i++)
        s.speed[i] = speed[i];
    return s;
}

/* Runs the search to its end (or `limit` timings); returns the timings. */
static int drive(hpl__balance *b, sim *s, int limit)
{
    double shares[MAXD], ran[MAXD], t[MAXD];
    int n = 0;
    while (n < limit && hpl__balance_next(b, shares)) {
        sim_run(s, shares, ran, t, true);
        hpl__balance_observe_run(b, ran, t);
        n++;
    }
    return n;
}

static bool is_distribution(const double *w, int devices)
{
    double sum = 0;
    for (int i = 0; i < devices; i++) {
        if (!(w[i] >= 0 && w[i] <= 1))
            return false;
        sum += w[i];
    }
    return fabs(sum - 1) < 1e-9;
}

/* The unbalanced benchmark: the bottom x% of the rows cost 1001, the others 1. */
static double unbalanced_prefix[ROWS + 1];

static void unbalanced_fill(double *prefix, int rows, int percent)
{
    int heavy = rows * percent / 100;
    prefix[0] = 0;
    for (int r = 0; r < rows; r++)
        prefix[r + 1] = prefix[r] + (r >= rows - heavy ? 1001.0 : 1.0);
}

static void unbalanced_rows(int percent)
{
    unbalanced_fill(unbalanced_prefix, ROWS, percent);
}

/* ---- brute-force references ---------------------------------------------- */

/* Every point of the grid of multiples of 1/k, in lexicographic order of the
 * first d - 1 cells (the order the search uses, so ties agree); the point of
 * lowest noise-free makespan (the first of equals). Recursive: independent of
 * the library's odometer. Returns the number of points. */
typedef struct grid_ref {
    int k;
    long points;
    double best, shares[MAXD];
    int cells[MAXD];
} grid_ref;

/* One point of the grid (cell[j] / k of the rows to device j) counted;
 * true when it is the best so far (then g's best and shares). */
static bool grid_visit(sim *s, grid_ref *g, const int *cell)
{
    double w[MAXD] = {0};
    for (int j = 0; j < s->devices; j++)
        w[j] = (double)cell[j] / g->k;
    double m = sim_makespan(s, w);
    if (g->points++ == 0 || m < g->best) {
        g->best = m;
        memcpy(g->shares, w, sizeof w);
        return true;
    }
    return false;
}

static void grid_walk(sim *s, grid_ref *g, int *cell, int i, int left)
{
    if (i == s->devices - 1) {
        cell[i] = left;
        if (grid_visit(s, g, cell))
            memcpy(g->cells, cell, sizeof g->cells);
        return;
    }
    for (int c = 0; c <= left; c++) {
        cell[i] = c;
        grid_walk(s, g, cell, i + 1, left - c);
    }
}

static grid_ref grid_best(sim *s, int k)
{
    grid_ref g = {.k = k};
    int cell[MAXD];
    grid_walk(s, &g, cell, 0, k);
    return g;
}

/* The fine points within radius of centre in every cell (the centre itself
 * excluded): their best and their count. */
static void refine_walk(sim *s, grid_ref *g, const int *centre, int radius, int *cell, int i, int left)
{
    if (i == s->devices - 1) {
        cell[i] = left;
        if (abs(left - centre[i]) > radius || memcmp(cell, centre, sizeof(int) * (size_t)s->devices) == 0)
            return;
        grid_visit(s, g, cell);
        return;
    }
    for (int c = 0; c <= left; c++) {
        if (abs(c - centre[i]) > radius)
            continue;
        cell[i] = c;
        refine_walk(s, g, centre, radius, cell, i + 1, left - c);
    }
}

static double binomial(int n, int k)
{
    double c = 1;
    for (int i = 1; i <= k; i++)
        c = c * (n - k + i) / i;
    return c;
}

/* ---- EXHAUSTIVE ---------------------------------------------------------- */

/* The plain grid (no refinement): the same best as the brute force, every
 * point once, each timed reps times, every proposal an exact grid point. */
static void check_exhaustive_grid(sim *s, double step, int reps, const char *what)
{
    hpl__balance b;
    hpl__balance_params p = {.step = step, .refine_step = -1, .reps = reps};
    EXPECT(hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, s->devices, &p) == 0, "%s", what);
    int k = (int)lround(1 / step);
    grid_ref g = grid_best(s, k);
    double shares[MAXD], ran[MAXD], t[MAXD];
    int proposals = 0;
    bool exact = true;
    while (hpl__balance_next(&b, shares)) {
        for (int i = 0; i < s->devices; i++)
            exact &= shares[i] * k == round(shares[i] * k) && shares[i] == round(shares[i] * k) / k;
        exact &= is_distribution(shares, s->devices);
        sim_run(s, shares, ran, t, false);
        hpl__balance_observe_run(&b, ran, t);
        proposals++;
    }
    hpl__balance_best(&b, shares);
    EXPECT(exact, "%s: a proposal off the grid", what);
    EXPECT(b.stats.distributions == g.points && proposals == g.points * reps && b.stats.timings == proposals,
           "%s: %d distributions, %d timings, grid %ld points", what, b.stats.distributions, proposals, g.points);
    EXPECT(b.choice_timed && b.choice_makespan == g.best, "%s: best %.9g, brute force %.9g", what, b.choice_makespan,
           g.best);
    EXPECT(memcmp(shares, g.shares, sizeof(double) * (size_t)s->devices) == 0, "%s: another point of the same time",
           what);
    EXPECT(sim_makespan(s, shares) == g.best, "%s", what);
}

/* Grid then refinement: the best of the coarse best and its fine
 * neighbourhood, brute-forced. */
static void check_exhaustive_refined(sim *s, const char *what)
{
    hpl__balance b;
    EXPECT(hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, s->devices, NULL) == 0, "%s", what);
    drive(&b, s, 1 << 20);
    grid_ref coarse = grid_best(s, 20);
    int centre[MAXD], cell[MAXD];
    for (int i = 0; i < s->devices; i++)
        centre[i] = coarse.cells[i] * 5; /* 1% units */
    grid_ref fine = {.k = 100};
    refine_walk(s, &fine, centre, 4, cell, 0, 100);
    double want = fine.points > 0 && fine.best < coarse.best ? fine.best : coarse.best;
    EXPECT(b.finished && b.stats.distributions == coarse.points + fine.points,
           "%s: %d distributions, want %ld + %ld", what, b.stats.distributions, coarse.points, fine.points);
    EXPECT(b.choice_makespan == want, "%s: best %.9g, brute force %.9g", what, b.choice_makespan, want);
    EXPECT(b.choice_makespan <= coarse.best, "%s: refinement lost the coarse best", what);
}

static void check_exhaustive(void)
{
    const double speeds[4] = {1, 3, 8, 2};
    for (int d = 2; d <= 4; d++) {
        sim s = linear(d, speeds);
        check_exhaustive_grid(&s, 0.05, 2, "linear");
        s.rows = 1000;
        check_exhaustive_grid(&s, 0.1, 1, "linear rows");
        for (int i = 0; i < d; i++)
            s.overhead[i] = 0.02 * i;
        check_exhaustive_grid(&s, 0.05, 2, "affine rows");
    }
    sim u = linear(3, (double[]){1, 8, 8});
    u.rows = ROWS;
    u.prefix = unbalanced_prefix;
    for (int x = 0; x <= 100; x += 25) {
        unbalanced_rows(x);
        check_exhaustive_grid(&u, 0.05, 2, "unbalanced 3");
        check_exhaustive_refined(&u, "unbalanced 3 refined");
    }
    sim a = linear(3, (double[]){2, 7, 5});
    a.overhead[0] = 0.01;
    check_exhaustive_refined(&a, "affine 3 refined");
    /* Two devices: no refinement unless asked; 21 points at 5%. */
    hpl__balance b;
    EXPECT(hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, 2, NULL) == 0, "2 devices");
    sim two = linear(2, speeds);
    drive(&b, &two, 1000);
    EXPECT(b.stats.distributions == 21 && b.stats.timings == 42, "2 devices: %d distributions, %d timings",
           b.stats.distributions, b.stats.timings);

    /* Coarsening: the finest grid of at most HPL__BALANCE_MAX_POINTS points,
     * refinement narrowed or skipped. */
    for (int d = 4; d <= MAXD; d += 2) {
        double sp[MAXD];
        for (int i = 0; i < d; i++)
            sp[i] = 1 + i % 3;
        sim s = linear(d, sp);
        hpl__balance_params p = {.reps = 1, .refine_step = -1};
        EXPECT(hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, d, &p) == 0, "%d devices", d);
        int k = (int)lround(1 / b.stats.step);
        EXPECT(binomial(k + d - 1, d - 1) <= HPL__BALANCE_MAX_POINTS &&
                   (k == 20 || binomial(k + d, d - 1) > HPL__BALANCE_MAX_POINTS),
               "%d devices: grid 1/%d", d, k);
        drive(&b, &s, HPL__BALANCE_MAX_POINTS + 1);
        EXPECT(b.finished && b.stats.distributions == binomial(k + d - 1, d - 1), "%d devices: %d distributions", d,
               b.stats.distributions);
        hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, d, NULL); /* with the default refinement */
        drive(&b, &s, 3 * HPL__BALANCE_MAX_POINTS);
        EXPECT(b.finished && b.stats.distributions <= 2 * HPL__BALANCE_MAX_POINTS, "%d devices refined: %d", d,
               b.stats.distributions);
    }
}

/* Five devices or more: the coarse grid, then the compass search (the
 * whole 1% neighbourhood would be 9^4 points and more). Linear devices,
 * continuous work: where the search ends no move of one fine step u
 * improves, so for the slowest device (time T) every other j has t_j +
 * u / v_j >= T; weighted by the speeds and summed (sum v_j t_j = 1, a
 * device without work counting 0): T <= (1 + (d - 1) u) / V, where the
 * optimum is 1 / V. Speeds: equal (all tied slowest), two kinds, and
 * random up to 200 apart. */
static void check_exhaustive_compass(void)
{
    uint64_t rng = 11;
    int most[MAXD + 1] = {0};
    for (int round = 0; round < 72; round++) {
        int d = 5 + round % (MAXD - 4);
        double sp[MAXD], total = 0;
        for (int i = 0; i < d; i++) {
            sp[i] = round % 3 == 0 ? 4 : round % 3 == 1 ? 1 + 7 * (i % 2) : 0.5 + 100 * uniform01(&rng);
            total += sp[i];
        }
        sim s = linear(d, sp);
        hpl__balance b;
        double w[MAXD];
        EXPECT(hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, d, NULL) == 0 && b.p.refine_step == 0.001, "%d devices",
               d);
        drive(&b, &s, 1 << 20);
        hpl__balance_best(&b, w);
        int k = (int)lround(1 / b.stats.step);
        double coarse = binomial(k + d - 1, d - 1), bound = (1 + (d - 1) * b.p.refine_step) / total;
        EXPECT(b.finished && b.stats.compass && b.stats.distributions <= coarse + HPL__BALANCE_MAX_POINTS,
               "round %d, %d devices: %d distributions after a grid of %.0f", round, d, b.stats.distributions, coarse);
        EXPECT(is_distribution(w, d) && sim_makespan(&s, w) <= bound * (1 + 1e-12) && b.choice_makespan <= bound * (1 + 1e-12),
               "round %d, %d devices: makespan %.6g, optimum %.6g, bound %.6g", round, d, sim_makespan(&s, w),
               1 / total, bound);
        int refined = b.stats.distributions - (int)coarse;
        most[d] = refined > most[d] ? refined : most[d];
    }
    printf("unit_balance: EXHAUSTIVE's compass search, most distributions after the grid:");
    for (int d = 5; d <= MAXD; d++)
        printf(" %d devices %d%s", d, most[d], d < MAXD ? "," : "\n");
}

/* ---- SINGLE_STEP --------------------------------------------------------- */

static void check_single_step(void)
{
    uint64_t rng = 7;
    for (int round = 0; round < 200; round++) {
        int d = 2 + round % 7;
        double sp[MAXD], total = 0;
        for (int i = 0; i < d; i++)
            total += sp[i] = 0.5 + 200 * uniform01(&rng);
        sim s = linear(d, sp);
        s.rows = round % 2 ? ROWS : 0; /* quantised rows or continuous */
        hpl__balance b;
        EXPECT(hpl__balance_init(&b, HPL__BALANCE_SINGLE_STEP, d, NULL) == 0, "init");
        drive(&b, &s, 100);
        double w[MAXD], err = 0;
        hpl__balance_best(&b, w);
        for (int i = 0; i < d; i++)
            err = fmax(err, fabs(w[i] - sp[i] / total));
        EXPECT(b.finished && b.stats.distributions == 1 && b.stats.timings == 2 && b.stats.solves == 1,
               "round %d: %d distributions", round, b.stats.distributions);
        EXPECT(err < 1e-12 && is_distribution(w, d), "round %d (%d devices, rows %d): off by %g", round, d, s.rows,
               err);
        /* Balanced to rounding: within one row of the slowest device. */
        double opt = 1 / total, slack = s.rows ? 1.0 / (s.rows * fmin(sp[0], sp[d - 1])) : 1e-12;
        for (int i = 0; i < d; i++)
            slack = s.rows ? fmax(slack, 1.0 / (s.rows * sp[i])) : slack;
        EXPECT(sim_makespan(&s, w) <= opt + slack + 1e-12, "round %d: makespan %.9g, balanced %.9g", round,
               sim_makespan(&s, w), opt);
        EXPECT(b.stats.predicted > 0 && fabs(b.stats.predicted - opt) < 1e-9 * opt, "round %d: predicted %g, %g",
               round, b.stats.predicted, opt);
    }

    /* The threshold: a CPU beside two GPUs 100 times faster saves
     * 1/200 - 1/201 = 2.49e-5 s of the balanced makespan. */
    const double sp[3] = {1, 100, 100};
    const double thresholds[4] = {1e-5, 1e-4, 10, 0};
    const double want0[4] = {1.0 / 201, 0, 0, 1.0 / 201};
    for (int j = 0; j < 4; j++) {
        sim s = linear(3, sp);
        hpl__balance b;
        hpl__balance_params p = {.threshold = thresholds[j]};
        EXPECT(hpl__balance_init(&b, HPL__BALANCE_SINGLE_STEP, 3, &p) == 0, "threshold");
        drive(&b, &s, 100);
        double w[MAXD];
        hpl__balance_best(&b, w);
        EXPECT(fabs(w[0] - want0[j]) < 1e-12 && is_distribution(w, 3), "threshold %g: cpu share %g", thresholds[j],
               w[0]);
        if (j == 2) /* everything but the fastest (the first of the two) */
            EXPECT(w[1] == 1 && w[2] == 0 && b.stats.dropped == 2, "threshold 10: %g %g %g", w[0], w[1], w[2]);
        else
            EXPECT(b.stats.dropped == (w[0] == 0), "threshold %g: %d dropped", thresholds[j], b.stats.dropped);
    }
}

/* ---- ITERATIVE on the unbalanced benchmark ------------------------------- */

/* The unbalanced benchmark's optimum over every split into rows: the least
 * T at which the devices, in order, each taking the most rows they can
 * finish within T, cover all rows (bisection on T). */
static bool rows_fit(const sim *s, double T)
{
    int lo = 0;
    for (int i = 0; i < s->devices && lo < s->rows; i++) {
        int a = lo, b = s->rows; /* the largest hi in [lo, rows] within T */
        while (a < b) {
            int mid = b - (b - a) / 2;
            if ((s->prefix[mid] - s->prefix[lo]) / s->speed[i] <= T)
                a = mid;
            else
                b = mid - 1;
        }
        lo = a;
    }
    return lo == s->rows;
}

static double rows_optimum(const sim *s)
{
    double lo = 0, hi = s->prefix[s->rows] / s->speed[0];
    for (int k = 0; k < 200; k++) {
        double mid = (lo + hi) / 2;
        *(rows_fit(s, mid) ? &hi : &lo) = mid;
    }
    return hi;
}

typedef struct unbalanced_case {
    const char *name;
    int devices;
    double speed[3];
} unbalanced_case;

/* The target, checked on every case both ways round, exact and with noise:
 * ITERATIVE within 1.03 times the 1% grid's best, in at most 5 distributions
 * (the paper: 1 to 5 iterations, 2.8 on average). Three devices with noise
 * reach 6: the speeds are fixed from the third timing on (one equation per
 * timing) and the noise of the first timings errs them by several percent;
 * a boundary on a step of the cost then takes one timing more (CPU+2GPU
 * 1:4:16 at x = 60 and 80: the CPU overshoots onto the expensive rows, where
 * 0.3% of the work is 10% of its time). */
#define TARGET_RATIO 1.03
#define TARGET_TRIES 5
#define NOISY_3_TRIES 6
#define EXTRA_SEEDS 10 /* more noise seeds per case and x: a looser check of robustness */

/* ITERATIVE's results over a case: its answers over the grid's best and the
 * distributions it timed (the equal split included). */
typedef struct tally {
    int runs, tries, max_tries, met, last_tries;
    double ratio, worst, last_ratio;
} tally;

static void tally_add(tally *t, double ratio, int tries)
{
    t->runs++;
    t->tries += tries;
    t->max_tries = tries > t->max_tries ? tries : t->max_tries;
    t->ratio += ratio;
    t->worst = fmax(t->worst, ratio);
    t->met += ratio <= TARGET_RATIO && tries <= TARGET_TRIES;
    t->last_ratio = ratio;
    t->last_tries = tries;
}

static void tally_print(const char *what, const tally *t)
{
    printf("    %-22s tries avg %.2f max %2d, ratio avg %.4f worst %.4f, on target %d of %d\n", what,
           (double)t->tries / t->runs, t->max_tries, t->ratio / t->runs, t->worst, t->met, t->runs);
}

/* ITERATIVE to its end on s (noisy or not): its answer's noise-free makespan
 * over the grid's best, and the distributions it timed in *tries. */
static double run_iterative(sim *s, const grid_ref *g, const char *name, int x, int *tries)
{
    hpl__balance b;
    double w[MAXD], noise = s->noise;
    hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, s->devices, NULL);
    drive(&b, s, 1000);
    hpl__balance_best(&b, w);
    s->noise = 0;
    double m = sim_makespan(s, w);
    s->noise = noise;
    *tries = b.stats.distributions;
    EXPECT(b.finished && *tries <= b.p.max_iterations + 1 && b.stats.timings == 2 * *tries,
           "%s x %d: %d distributions", name, x, *tries);
    EXPECT(b.choice_timed && (noise > 0 || b.choice_makespan == m), "%s x %d", name, x);
    return m / g->best;
}

static void check_iterative_linear(void)
{
    const double sp[4] = {1, 4, 8, 2};
    for (int d = 1; d <= 4; d++) {
        sim s = linear(d, sp);
        s.rows = ROWS;
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, d, NULL);
        drive(&b, &s, 100);
        EXPECT(b.finished && b.stats.converged == (d > 1) && b.stats.distributions == (d > 1 ? 2 : 0),
               "%d linear devices: %d distributions", d, b.stats.distributions);
    }
    /* The threshold drops the CPU in the first solve; the GPUs balance. */
    {
        sim s = linear(3, (double[]){1, 100, 50});
        hpl__balance b;
        hpl__balance_params p = {.threshold = 1e-4};
        hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, 3, &p);
        drive(&b, &s, 100);
        double w[MAXD];
        hpl__balance_best(&b, w);
        EXPECT(b.stats.converged && b.stats.dropped == 1 && w[0] == 0 && fabs(w[1] - 2.0 / 3) < 1e-12,
               "threshold: %g %g %g", w[0], w[1], w[2]);
    }
    /* Equal devices: the equal split is balanced, nothing more to time. */
    sim s = linear(3, (double[]){5, 5, 5});
    hpl__balance b;
    hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, 3, NULL);
    drive(&b, &s, 100);
    EXPECT(b.stats.distributions == 1 && b.stats.converged, "equal devices: %d", b.stats.distributions);
}

/* The slow device first on the cost step, exactly: the CPU 10 times slower
 * holds the cheap top half. The equal split times (2048, 205005); fig. 7
 * then gives the CPU 99%, and it takes 490 times the GPU's time; the profile puts
 * the step in the cost between the two (the cheap density continued from
 * the left, the expensive one from the right), and the third distribution
 * is the balanced split over rows: CPU 0.5 + 100.1 (1 - s) = 1001 (s - 0.5),
 * s = 600.1 / 1101.1. */
static void check_iterative_step(void)
{
    unbalanced_rows(50);
    sim s = linear(2, (double[]){1, 10});
    s.rows = ROWS;
    s.prefix = unbalanced_prefix;
    hpl__balance b;
    hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, 2, NULL);
    double w[MAXD], ran[MAXD], t[MAXD], seen[3] = {0};
    int n = 0;
    while (hpl__balance_next(&b, w)) {
        if (n % 2 == 0 && n / 2 < 3)
            seen[n / 2] = w[0];
        sim_run(&s, w, ran, t, false);
        hpl__balance_observe_run(&b, ran, t);
        n++;
    }
    EXPECT(seen[0] == 0.5 && fabs(seen[1] - 0.99) < 1e-3, "step: %g, %g", seen[0], seen[1]);
    EXPECT(fabs(seen[2] - 600.1 / 1101.1) < 1.0 / ROWS, "step: third %.6f, balanced %.6f", seen[2], 600.1 / 1101.1);
    EXPECT(b.stats.distributions == 3 && b.stats.converged, "step: %d distributions", b.stats.distributions);
}

/* Long searches keep the latest HPL__BALANCE_MAX_HISTORY timings. Times that
 * do not depend on the shares (device i always takes i + 1 ms, give or take
 * 10%) never balance; every proposal is still a distribution, and the
 * search ends at its cap or when the model sees nothing to gain. */
static void check_iterative_history(void)
{
    uint64_t rng = 5;
    hpl__balance_params p = {.max_iterations = 60};
    int longest = 0;
    for (int d = 2; d <= 6; d++) {
        hpl__balance b;
        EXPECT(hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, d, &p) == 0, "history");
        double w[MAXD], t[MAXD];
        bool ok = true;
        int n = 0;
        while (n < 1000 && hpl__balance_next(&b, w)) {
            ok &= is_distribution(w, d);
            for (int i = 0; i < d; i++)
                t[i] = 1e-3 * (i + 1) * (0.9 + 0.2 * uniform01(&rng));
            hpl__balance_observe(&b, t);
            n++;
        }
        EXPECT(ok && b.finished && b.stats.distributions <= 61 && b.history <= HPL__BALANCE_MAX_HISTORY,
               "%d devices: %d distributions, history %d", d, b.stats.distributions, b.history);
        longest = b.stats.distributions > longest ? b.stats.distributions : longest;
    }
    EXPECT(longest > HPL__BALANCE_MAX_HISTORY, "no search outlived the history: %d", longest);
}

/* The 2% noise of the table, held to the target, then EXTRA_SEEDS more:
 * each within 1.05 of the best and at most 4.5 distributions on average
 * (balance is judged on noisy times: a few runs stop 3-5% off, a few more
 * need 6 to 8 distributions). */
static void unbalanced_noisy(sim *s, const grid_ref *g, const char *name, int x, tally *noisy, tally *extra)
{
    int n;
    s->noise = 0.02;
    s->rng = 1000 + (uint64_t)x;
    double r = run_iterative(s, g, name, x, &n);
    EXPECT(r <= TARGET_RATIO && n <= (s->devices == 3 ? NOISY_3_TRIES : TARGET_TRIES),
           "%s x %d: noisy iterative %.4f of the best in %d distributions", name, x, r, n);
    tally_add(noisy, r, n);
    for (int seed = 1; seed <= EXTRA_SEEDS; seed++) {
        s->rng = 1000 + (uint64_t)x + 7919 * (uint64_t)seed;
        double re = run_iterative(s, g, name, x, &n);
        EXPECT(re <= 1.05, "%s x %d seed %d: noisy iterative %.4f of the best", name, x, seed, re);
        tally_add(extra, re, n);
    }
    s->noise = 0;
}

/* Fig. 13's experiment: ITERATIVE against the best of the 1% grid (the
 * paper's reference), SINGLE_STEP, EXHAUSTIVE at its defaults, the optimum
 * over rows; both ways round (the slow device first holds the cheap top
 * rows: the linear model alone swung between extremes there), two and
 * three devices, exact and with 2% noise. */
static void check_unbalanced(void)
{
    const unbalanced_case cases[] = {
        {"GPU+CPU 8:1", 2, {8, 1}},          {"GPU+CPU 10:1", 2, {10, 1}},        {"GPU+CPU 180:1", 2, {180, 1}},
        {"CPU+GPU 1:8", 2, {1, 8}},          {"CPU+GPU 1:10", 2, {1, 10}},        {"CPU+GPU 1:180", 2, {1, 180}},
        {"2GPU+CPU 8:8:1", 3, {8, 8, 1}},    {"2GPU+CPU 16:4:1", 3, {16, 4, 1}},  {"GPU+CPU+GPU 8:1:8", 3, {8, 1, 8}},
        {"CPU+2GPU 1:8:8", 3, {1, 8, 8}},    {"CPU+2GPU 1:4:16", 3, {1, 4, 16}},
    };
    tally all = {0};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const unbalanced_case *uc = &cases[c];
        tally exact = {0}, noisy = {0}, extra = {0};
        printf("unit_balance: unbalanced, %s, %d rows; makespans relative to the 1%% grid's best\n", uc->name, ROWS);
        printf("   x%%   1%% grid best  rows opt  EXHAUSTIVE  ITERATIVE tries   noisy tries  SINGLE_STEP\n");
        for (int x = 0; x <= 100; x += 10) {
            unbalanced_rows(x);
            sim s = linear(uc->devices, uc->speed);
            s.rows = ROWS;
            s.prefix = unbalanced_prefix;
            grid_ref g = grid_best(&s, 100);
            double opt = rows_optimum(&s) / g.best;
            EXPECT(opt <= 1, "%s x %d: the row optimum %.4f above the grid's", uc->name, x, opt);

            hpl__balance b;
            double w[MAXD];
            hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, uc->devices, NULL);
            drive(&b, &s, 100000);
            hpl__balance_best(&b, w);
            double ex = sim_makespan(&s, w) / g.best;

            hpl__balance_init(&b, HPL__BALANCE_SINGLE_STEP, uc->devices, NULL);
            drive(&b, &s, 1000);
            hpl__balance_best(&b, w);
            double single = sim_makespan(&s, w) / g.best;

            int n;
            double it = run_iterative(&s, &g, uc->name, x, &n);
            /* It times SINGLE_STEP's answer second and keeps the fastest. */
            EXPECT(n == 1 || it <= single * (1 + 1e-12), "%s x %d: iterative %.4f, single step %.4f", uc->name, x, it,
                   single);
            EXPECT(it <= TARGET_RATIO && n <= TARGET_TRIES, "%s x %d: iterative %.4f of the best in %d distributions",
                   uc->name, x, it, n);
            tally_add(&exact, it, n);
            tally_add(&all, it, n);
            unbalanced_noisy(&s, &g, uc->name, x, &noisy, &extra);
            printf("  %3d  %13.6g  %8.4f  %10.4f  %9.4f %5d  %6.4f %5d  %11.4f\n", x, g.best, opt, ex, it, n,
                   noisy.last_ratio, noisy.last_tries, single);
        }
        tally_print("exact:", &exact);
        tally_print("2% noise:", &noisy);
        tally_print("2% noise, more seeds:", &extra);
        EXPECT((double)extra.tries / extra.runs <= 4.5, "%s: %.2f distributions on average over more seeds",
               uc->name, (double)extra.tries / extra.runs);
    }
    printf("unit_balance: ITERATIVE timed %.2f distributions on average (the equal split included), exact\n",
           (double)all.tries / all.runs);
}

/* The issue-19 setting on the unbalanced benchmark: eight GPUs and the CPU
 * (speeds 8 and 1, the CPU last or first), eight GPUs alone and four with
 * the CPU, 16384 rows, exact and with 2% noise: EXHAUSTIVE against the
 * optimum over rows, and against its coarse grid alone (no refinement).
 * The bound of the linear case does not hold here: a move between devices
 * i and j shifts the parts of the devices between them onto rows of other
 * cost. Measured when written: exact 1.000-1.020, with noise 1.007-1.170
 * (shifting cheap rows between devices whose time is in the dear ones
 * changes their times by less than the noise, so the search does not see
 * the way); the coarse grid alone: 1.14-5.40. */
#define COMPASS_EXACT 1.03
#define COMPASS_NOISY 1.2
static double big_prefix[16384 + 1];

static void check_exhaustive_compass_unbalanced(void)
{
    const struct {
        const char *name;
        int devices;
        double speed[9];
    } cases[] = {
        {"8 GPUs + CPU", 9, {8, 8, 8, 8, 8, 8, 8, 8, 1}},
        {"CPU + 8 GPUs", 9, {1, 8, 8, 8, 8, 8, 8, 8, 8}},
        {"8 GPUs", 8, {8, 8, 8, 8, 8, 8, 8, 8}},
        {"4 GPUs + CPU", 5, {8, 8, 8, 8, 1}},
    };
    const int rows = 16384;
    printf("unit_balance: EXHAUSTIVE with the compass search, unbalanced, %d rows: makespan / optimum over rows "
           "(distributions): the coarse grid alone, then with the compass search exact | with 2%% noise\n", rows);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        printf("  %-13s", cases[c].name);
        for (int x = 0; x <= 100; x += 25) {
            unbalanced_fill(big_prefix, rows, x);
            sim s = linear(cases[c].devices, cases[c].speed);
            s.rows = rows;
            s.prefix = big_prefix;
            double opt = rows_optimum(&s);
            hpl__balance b;
            double w[MAXD];
            hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, s.devices, &(hpl__balance_params){.refine_step = -1});
            drive(&b, &s, 1 << 20);
            hpl__balance_best(&b, w);
            double coarse = sim_makespan(&s, w) / opt;
            printf("  x%-3d coarse %.4f", x, coarse);
            for (int noisy = 0; noisy <= 1; noisy++) {
                s.noise = noisy ? 0.02 : 0;
                s.rng = 5 + (uint64_t)x;
                hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, s.devices, NULL);
                drive(&b, &s, 1 << 20);
                hpl__balance_best(&b, w);
                s.noise = 0;
                double ratio = sim_makespan(&s, w) / opt;
                EXPECT(b.finished && b.stats.compass && ratio <= (noisy ? COMPASS_NOISY : COMPASS_EXACT) &&
                           ratio <= coarse,
                       "%s x %d%s: %.4f of the optimum, the coarse grid %.4f", cases[c].name, x, noisy ? " noisy" : "",
                       ratio, coarse);
                printf("%s%.4f (%4d)", noisy ? " | " : "  ", ratio, b.stats.distributions);
            }
        }
        printf("\n");
    }
}

/* ---- ADAPTIVE ------------------------------------------------------------ */

static void check_adaptive(void)
{
    /* Linear devices, continuous: balanced from the second pass on. */
    const double sp[4] = {1, 4, 8, 2};
    for (int d = 2; d <= 4; d++) {
        sim s = linear(d, sp);
        double total = 0;
        for (int i = 0; i < d; i++)
            total += sp[i];
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, d, NULL);
        double w[MAXD], ran[MAXD], t[MAXD], worst = 0;
        for (int pass = 0; pass < 50; pass++) {
            EXPECT(hpl__balance_next(&b, w), "adaptive ends");
            if (pass >= 1)
                worst = fmax(worst, sim_makespan(&s, w) * total - 1);
            sim_run(&s, w, ran, t, true);
            hpl__balance_observe_run(&b, ran, t);
        }
        EXPECT(worst < 1e-9 && b.stats.dropped == 0 && b.stats.distributions == 50, "%d devices: %g off", d, worst);
    }

    /* Rows, 2% noise, CPU beside GPUs: within 5% of the balanced time from
     * the third pass on, and a device worth keeping is kept. */
    const double mixes[3][3] = {{1, 8, 8}, {1, 8, 0}, {3, 5, 4}};
    for (int m = 0; m < 3; m++) {
        int d = mixes[m][2] > 0 ? 3 : 2;
        sim s = linear(d, mixes[m]);
        s.rows = ROWS;
        s.noise = 0.02;
        s.rng = 42 + (uint64_t)m;
        double total = 0;
        for (int i = 0; i < d; i++)
            total += mixes[m][i];
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, d, NULL);
        double w[MAXD], ran[MAXD], t[MAXD], worst = 0;
        for (int pass = 0; pass < 200; pass++) {
            hpl__balance_next(&b, w);
            if (pass >= 2)
                worst = fmax(worst, sim_makespan(&s, w) * total);
            sim_run(&s, w, ran, t, true);
            hpl__balance_observe_run(&b, ran, t);
        }
        EXPECT(worst <= 1.05 && b.stats.dropped == 0, "mix %d: %.4f of balanced, %d dropped", m, worst,
               b.stats.dropped);
    }

    /* Back-off: a device whose fixed overhead (0.2 s) exceeds what the GPU
     * needs for everything (0.125 s) is out after 2 passes, and stays out. */
    for (int order = 0; order < 2; order++) {
        sim s = linear(2, order ? (double[]){8, 1} : (double[]){1, 8});
        int slow = order ? 1 : 0;
        s.overhead[slow] = 0.2;
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, 2, NULL);
        double w[MAXD], ran[MAXD], t[MAXD];
        for (int pass = 0; pass < 40; pass++) {
            hpl__balance_next(&b, w);
            EXPECT((w[slow] == 0) == (pass >= 2), "order %d pass %d: slow share %g", order, pass, w[slow]);
            sim_run(&s, w, ran, t, true);
            hpl__balance_observe_run(&b, ran, t);
        }
        EXPECT(b.stats.dropped == 1 && b.out[slow] && fabs(sim_makespan(&s, w) - 0.125) < 1e-12, "order %d", order);
    }
    /* Three devices, the middle one all overhead; with 2% noise. */
    {
        sim s = linear(3, (double[]){4, 2, 4});
        s.overhead[1] = 0.3;
        s.rows = ROWS;
        s.noise = 0.02;
        s.rng = 9;
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, 3, NULL);
        double w[MAXD], ran[MAXD], t[MAXD];
        for (int pass = 0; pass < 40; pass++) {
            hpl__balance_next(&b, w);
            EXPECT((w[1] == 0) == (pass >= 2), "3 devices pass %d: share %g", pass, w[1]);
            sim_run(&s, w, ran, t, true);
            hpl__balance_observe_run(&b, ran, t);
        }
        EXPECT(b.stats.dropped == 1 && sim_makespan(&s, w) <= 0.125 * 1.05, "3 devices: %g", sim_makespan(&s, w));
    }
    /* A device slow but without overhead is worth its small share: kept,
     * also when what it saves (0.5%) is well inside the noise (2%). */
    for (int noisy = 0; noisy < 2; noisy++) {
        sim s = linear(2, (double[]){1, 180});
        s.rows = noisy ? ROWS : 0;
        s.noise = noisy ? 0.02 : 0;
        s.rng = 77;
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, 2, NULL);
        drive(&b, &s, 1000);
        double w[MAXD];
        hpl__balance_best(&b, w);
        EXPECT(b.stats.dropped == 0 && fabs(w[0] - 1.0 / 181) < (noisy ? 3e-4 : 1e-12), "1:180, noise %g: %g",
               s.noise, w[0]);
    }
    /* The workload changes: the shares follow within a pass. */
    {
        sim s = linear(2, (double[]){1, 3});
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, 2, NULL);
        drive(&b, &s, 10);
        s.speed[0] = 3;
        s.speed[1] = 1;
        drive(&b, &s, 1);
        double w[MAXD];
        hpl__balance_best(&b, w);
        EXPECT(fabs(w[0] - 0.75) < 1e-12, "after the change: %g", w[0]);
    }
}

/* ---- ADAPTIVE's alone check ---------------------------------------------- */

/* One pass as a host sees it: the slowest device, plus `split` seconds when
 * two devices or more ran (halos, messages, waiting), the host's own cost
 * otherwise. */
static double sim_wall(sim *s, const double *shares, double split)
{
    int used = 0;
    for (int i = 0; i < s->devices; i++)
        used += shares[i] > 0;
    return sim_makespan(s, shares) + (used > 1 ? split : 0);
}

/* Passes of ADAPTIVE with their host times; alone[p]: the device pass p
 * gave everything to, -1 when it split. */
static void drive_walls(hpl__balance *b, sim *s, double split, int passes, int *alone, const double *bad_wall)
{
    double w[MAXD], ran[MAXD], t[MAXD];
    for (int p = 0; p < passes; p++) {
        EXPECT(hpl__balance_next(b, w), "adaptive ends at pass %d", p);
        alone[p] = -1;
        for (int i = 0; i < s->devices; i++)
            if (w[i] == 1.0)
                alone[p] = i;
        sim_run(s, w, ran, t, true);
        hpl__balance_observe_run(b, ran, t);
        hpl__balance_observe_wall(b, bad_wall && p == 5 ? *bad_wall : sim_wall(s, w, split));
    }
}

static void check_adaptive_alone(void)
{
    /* A GPU 100x a CPU, whose split costs 10 times the GPU's whole pass:
     * passes 5-7 (from 1) run the GPU alone, it wins, and every pass after
     * is the GPU's alone, whichever device is first. */
    for (int order = 0; order < 2; order++) {
        int gpu = order ? 0 : 1;
        sim s = linear(2, order ? (double[]){100, 1} : (double[]){1, 100});
        s.rows = ROWS;
        s.noise = 0.02;
        s.rng = 5;
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, 2, NULL);
        int alone[40];
        drive_walls(&b, &s, 0.1, 40, alone, NULL);
        for (int p = 0; p < 40; p++)
            EXPECT(alone[p] == (p < 4 ? -1 : gpu), "order %d pass %d: alone %d", order, p, alone[p]);
        EXPECT(b.alone_checked && b.alone_won && b.alone_device == gpu && b.out[1 - gpu] && b.stats.dropped == 1 &&
                   hpl__balance_in_play(&b) == 1 && !hpl__balance_wants_wall(&b),
               "order %d: checked %d won %d device %d dropped %d", order, b.alone_checked, b.alone_won, b.alone_device,
               b.stats.dropped);
        char line[512];
        hpl__balance_describe(&b, line, sizeof line);
        EXPECT(strstr(line, "it runs alone") != NULL, "%s", line);
    }
    /* Two devices 1:3 with a cheap split: the device alone loses, the split
     * resumes from its shares and stays balanced; nobody is dropped. */
    {
        sim s = linear(2, (double[]){1, 3});
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, 2, NULL);
        int alone[30];
        drive_walls(&b, &s, 0.01, 30, alone, NULL);
        for (int p = 0; p < 30; p++)
            EXPECT(alone[p] == (p >= 4 && p < 7 ? 1 : -1), "1:3 pass %d: alone %d", p, alone[p]);
        double w[MAXD];
        hpl__balance_best(&b, w);
        EXPECT(b.alone_checked && !b.alone_won && b.stats.dropped == 0 && fabs(w[0] - 0.25) < 1e-12 &&
                   !hpl__balance_wants_wall(&b),
               "1:3: won %d dropped %d share %g", b.alone_won, b.stats.dropped, w[0]);
        /* The passes alone did not reach the model: the times it solves
         * from are the split's, so the share is right at once. */
        char line[512];
        hpl__balance_describe(&b, line, sizeof line);
        EXPECT(strstr(line, "the split stays") != NULL, "%s", line);
    }
    /* keep_split: no pass alone, no host time wanted. */
    {
        sim s = linear(2, (double[]){1, 100});
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, 2, &(hpl__balance_params){.keep_split = true});
        int alone[20];
        EXPECT(!hpl__balance_wants_wall(&b), "keep_split wants host times");
        drive_walls(&b, &s, 0.1, 20, alone, NULL);
        for (int p = 0; p < 20; p++)
            EXPECT(alone[p] == -1, "keep_split pass %d: alone %d", p, alone[p]);
        EXPECT(!b.alone_checked && b.stats.dropped == 0, "keep_split: checked %d", b.alone_checked);
    }
    /* A host time that is not a time (an untrusted rank's, say) counts as
     * infinitely slow and is refused: here the second pass alone's, so the
     * third's decides. */
    {
        const double bad[3] = {NAN, -1.0, INFINITY};
        for (int k = 0; k < 3; k++) {
            sim s = linear(2, (double[]){1, 100});
            hpl__balance b;
            hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, 2, NULL);
            int alone[12];
            drive_walls(&b, &s, 0.1, 12, alone, &bad[k]);
            EXPECT(b.alone_checked && b.alone_won && b.stats.rejected == 1, "bad wall %g: won %d rejected %d",
                   bad[k], b.alone_won, b.stats.rejected);
        }
    }
    /* A split that is down to one device when the check would start (the
     * other backed off at pass 2): nothing to check. */
    {
        sim s = linear(2, (double[]){1, 8});
        s.overhead[0] = 0.2;
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, 2, NULL);
        int alone[10];
        drive_walls(&b, &s, 0.1, 10, alone, NULL);
        EXPECT(!b.alone_checked && b.stats.dropped == 1 && hpl__balance_in_play(&b) == 1 && !hpl__balance_wants_wall(&b),
               "backed off first: checked %d dropped %d", b.alone_checked, b.stats.dropped);
    }
    /* One device: no host time wanted, one in play. */
    {
        hpl__balance b;
        hpl__balance_init(&b, HPL__BALANCE_ADAPTIVE, 1, NULL);
        EXPECT(!hpl__balance_wants_wall(&b) && hpl__balance_in_play(&b) == 1, "one device");
    }
}

/* ---- edge cases ---------------------------------------------------------- */

static void check_one_device(void)
{
    for (int k = HPL__BALANCE_EXHAUSTIVE; k <= HPL__BALANCE_ADAPTIVE; k++) {
        hpl__balance b;
        double w[1] = {-1};
        EXPECT(hpl__balance_init(&b, (hpl__balance_kind)k, 1, NULL) == 0, "kind %d", k);
        bool more = hpl__balance_next(&b, w);
        EXPECT(more == (k == HPL__BALANCE_ADAPTIVE), "kind %d: next %d", k, more);
        if (more) {
            hpl__balance_observe(&b, (double[]){0.5});
            EXPECT(hpl__balance_next(&b, w) && w[0] == 1, "adaptive, one device: %g", w[0]);
        }
        hpl__balance_best(&b, w);
        EXPECT(w[0] == 1 && b.stats.distributions <= 1, "kind %d: share %g", k, w[0]);
    }
}

static void check_bad_params(void)
{
    const hpl__balance_params bad[] = {
        {.step = -0.1}, {.step = 1.5},     {.step = NAN},       {.refine_step = NAN}, {.refine_step = 2},
        {.reps = -1},   {.delta = -0.05},  {.delta = INFINITY}, {.threshold = -1},    {.threshold = NAN},
        {.back_off = -2}, {.max_iterations = -1},
    };
    hpl__balance b;
    double w[MAXD];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT(hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, 2, &bad[i]) == HPL_ERROR_INVALID_ARGUMENT, "params %zu",
               i);
        EXPECT(!hpl__balance_next(&b, w), "params %zu: usable after a failed init", i);
    }
    EXPECT(hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, 0, NULL) == HPL_ERROR_INVALID_ARGUMENT, "0 devices");
    EXPECT(hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, MAXD + 1, NULL) == HPL_ERROR_INVALID_ARGUMENT, "17 devices");
    EXPECT(hpl__balance_init(&b, (hpl__balance_kind)7, 2, NULL) == HPL_ERROR_INVALID_ARGUMENT, "kind 7");
    EXPECT(hpl__balance_init(&b, (hpl__balance_kind)-1, 2, NULL) == HPL_ERROR_INVALID_ARGUMENT, "kind -1");
    EXPECT(hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, MAXD, NULL) == 0, "16 devices");
    EXPECT(b.p.step == 0.05 && b.p.reps == 2 && b.p.delta == 0.05 && b.p.back_off == 2 && b.p.refine_step == 0.001 &&
               b.p.max_iterations == 10 && b.p.threshold == 0,
           "defaults");
    for (int d = 3; d <= 4; d++) {
        hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, d, NULL);
        EXPECT(b.p.refine_step == 0.01, "%d devices: refine_step %g", d, b.p.refine_step);
    }
    hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, 2, NULL);
    EXPECT(b.p.refine_step < 0, "2 devices: no refinement by default");
    /* Absurdly fine steps are coarsened, not enumerated. */
    for (int d = 2; d <= 3; d++) {
        hpl__balance_params fine = {.step = 1e-12, .refine_step = 1e-15, .reps = 1};
        EXPECT(hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, d, &fine) == 0, "fine steps");
        sim s = linear(d, (double[]){1, 2, 3});
        drive(&b, &s, 4 * HPL__BALANCE_MAX_POINTS);
        EXPECT(b.finished && b.stats.distributions <= 2 * HPL__BALANCE_MAX_POINTS && b.stats.step >= 1.0 / 6000,
               "%d devices, fine steps: %d distributions, step %g", d, b.stats.distributions, b.stats.step);
    }
}

/* Times of 0 and equal times: no division by zero, a sensible answer. */
static void check_degenerate_times(void)
{
    for (int k = HPL__BALANCE_EXHAUSTIVE; k <= HPL__BALANCE_ADAPTIVE; k++) {
        for (int mode = 0; mode < 3; mode++) {
            hpl__balance b;
            hpl__balance_init(&b, (hpl__balance_kind)k, 3, NULL);
            double w[MAXD];
            int n = 0;
            while (n < 2000 && hpl__balance_next(&b, w)) {
                /* 0: all zero; 1: all equal; 2: device 1 zero, the others 1 ms */
                double t[3] = {mode == 1 ? 1e-3 : mode * 1e-3, mode == 1 ? 1e-3 : 0, mode == 1 ? 1e-3 : mode * 1e-3};
                hpl__balance_observe(&b, t);
                EXPECT(is_distribution(w, 3), "kind %d mode %d: proposal", k, mode);
                n++;
            }
            hpl__balance_best(&b, w);
            EXPECT(is_distribution(w, 3), "kind %d mode %d: %g %g %g", k, mode, w[0], w[1], w[2]);
            EXPECT(k == HPL__BALANCE_ADAPTIVE ? n == 2000 : b.finished, "kind %d mode %d: %d timings", k, mode, n);
            if (k != HPL__BALANCE_EXHAUSTIVE && mode < 2) /* no information: the equal split stays */
                EXPECT(fabs(w[0] - 1.0 / 3) < 1e-12 && fabs(w[1] - 1.0 / 3) < 1e-12, "kind %d mode %d: %g %g %g", k,
                       mode, w[0], w[1], w[2]);
            /* Device 1 looks fastest by far (ITERATIVE keeps the fastest
             * timed, and these times do not change with the shares). */
            if ((k == HPL__BALANCE_SINGLE_STEP || k == HPL__BALANCE_ADAPTIVE) && mode == 2)
                EXPECT(w[1] > 0.99, "kind %d: zero-time device gets %g", k, w[1]);
        }
    }
}

/* NaN, inf and negative times, bad shares run, observing out of turn. */
static void check_untrusted(void)
{
    const double bad[4] = {NAN, INFINITY, -1e-3, -INFINITY};
    for (int k = HPL__BALANCE_EXHAUSTIVE; k <= HPL__BALANCE_ADAPTIVE; k++) {
        hpl__balance b;
        double w[MAXD], w2[MAXD];
        hpl__balance_init(&b, (hpl__balance_kind)k, 2, NULL);
        hpl__balance_observe(&b, (double[]){1, 1}); /* nothing proposed */
        EXPECT(b.stats.rejected == 1 && b.stats.timings == 0, "kind %d: observe before next", k);
        for (int j = 0; j < 4; j++) {
            hpl__balance_next(&b, w);
            hpl__balance_observe(&b, (double[]){1e-3, bad[j]});
            hpl__balance_next(&b, w2);
            EXPECT(b.stats.timings == 0 && memcmp(w, w2, sizeof(double) * 2) == 0, "kind %d: bad time %d taken", k, j);
        }
        hpl__balance_observe_run(&b, (double[]){NAN, 1}, (double[]){1, 1});
        hpl__balance_next(&b, w);
        hpl__balance_observe_run(&b, (double[]){0, 0}, (double[]){1, 1});
        hpl__balance_next(&b, w);
        hpl__balance_observe_run(&b, (double[]){-1, 2}, (double[]){1, 1});
        EXPECT(b.stats.rejected == 8 && b.stats.timings == 0 && !b.finished, "kind %d: %d rejected", k,
               b.stats.rejected);
        hpl__balance_next(&b, w);
        hpl__balance_observe(&b, NULL);
        /* Eight refusals in a row (the first did not count: nothing was
         * proposed): a search ends with what it has. */
        EXPECT(b.finished == (k != HPL__BALANCE_ADAPTIVE), "kind %d: finished %d", k, b.finished);
        hpl__balance_best(&b, w);
        EXPECT(w[0] == 0.5 && w[1] == 0.5, "kind %d: %g %g", k, w[0], w[1]);
        hpl__balance_observe(&b, (double[]){1, 1}); /* after the end, or twice for one proposal */
        EXPECT(b.stats.timings == 0 && b.stats.rejected == 10, "kind %d: timing taken out of turn", k);
    }
    /* A device given nothing may report anything. */
    hpl__balance b;
    hpl__balance_params p = {.refine_step = -1, .reps = 1};
    hpl__balance_init(&b, HPL__BALANCE_EXHAUSTIVE, 2, &p);
    double w[MAXD];
    hpl__balance_next(&b, w); /* (0, 1) */
    hpl__balance_observe(&b, (double[]){NAN, 1e-3});
    EXPECT(w[0] == 0 && b.stats.timings == 1 && b.stats.rejected == 0, "unused device's NaN refused");

    /* Random garbage for a long time: never a bad distribution, searches end. */
    uint64_t rng = 123;
    for (int round = 0; round < 400; round++) {
        int k = round % 4, d = 1 + round % 5;
        hpl__balance_init(&b, (hpl__balance_kind)k, d, NULL);
        int n = 0;
        while (n < 20000 && hpl__balance_next(&b, w)) {
            double t[MAXD];
            EXPECT(is_distribution(w, d), "garbage round %d: proposal", round);
            for (int i = 0; i < d; i++) {
                double u = uniform01(&rng);
                t[i] = u < 0.02 ? NAN : u < 0.04 ? -u : u < 0.06 ? INFINITY : u < 0.1 ? 0 : u < 0.12 ? 1e300 * u
                       : u < 0.14 ? 5e-324 : u;
            }
            hpl__balance_observe(&b, t);
            n++;
        }
        hpl__balance_best(&b, w);
        EXPECT(is_distribution(w, d), "garbage round %d: answer", round);
        EXPECT(k == HPL__BALANCE_ADAPTIVE || b.finished, "garbage round %d: kind %d did not end", round, k);
        if (round < 8) {
            char line[256];
            hpl__balance_describe(&b, line, sizeof line);
            EXPECT(strstr(line, hpl__balance_kind_name(b.kind)) == line, "describe: %s", line);
        }
    }
}

static void check_describe(void)
{
    hpl__balance b;
    hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, 2, NULL);
    sim s = linear(2, (double[]){1, 3});
    drive(&b, &s, 100);
    char line[200], tiny[8];
    int n = hpl__balance_describe(&b, line, sizeof line);
    EXPECT(n > 0 && (size_t)n < sizeof line && strstr(line, "ITERATIVE: shares 0.2500 0.7500") && strstr(line, "converged"),
           "%s", line);
    EXPECT(hpl__balance_describe(&b, tiny, sizeof tiny) == n && strlen(tiny) == 7, "truncated: %s", tiny);
    EXPECT(hpl__balance_describe(&b, NULL, 0) == n, "sizing call");
    printf("unit_balance: %s\n", line);
}

int main(void)
{
    check_bad_params();
    check_one_device();
    check_exhaustive();
    check_exhaustive_compass();
    check_exhaustive_compass_unbalanced();
    check_single_step();
    check_iterative_linear();
    check_iterative_step();
    check_iterative_history();
    check_unbalanced();
    check_adaptive();
    check_adaptive_alone();
    check_degenerate_times();
    check_untrusted();
    check_describe();
    printf("unit_balance: %ld checks, %ld failed\n", checks, failures);
    return failures != 0;
}
