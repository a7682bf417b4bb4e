/* The clock estimate of lib/base/warmth.h against what an H200 did
 * (samples/bench/bench_ramp, samples/bench/RESULTS.md): cold until warmed, clocks kept
 * through 0.9 s without work and gone by 1 s (measured: kept at 1 s, gone
 * at 3 s), kept at a 20% load and lost at 10% (within 2 s: measured within
 * the 1.5 s of a phase), not regained by a partial load, regained by a run
 * of 0.25 s without pause; the same idle time gives the same estimate in
 * one piece or many; bad numbers change nothing or are clamped.
 *
 * Then the searches of lib/base/balance.h with the plans' warm-up policy
 * (lib/api/plan.c) against a simulated machine: a CPU and two GPUs 50
 * times faster, whose clocks follow a model of the H200's measurements
 * built independently of the estimate (trailing windows, not an average:
 * a cold GPU runs 5.5x slow and warms once it worked 0.19 s within 0.25 s;
 * a warm one turns cold when it worked under 0.2 s of the last 1.5 s). The
 * GPUs start cold (idle 5 s). Without warm-ups SINGLE_STEP and ITERATIVE
 * time them at the idle clock and give the CPU some five times its share:
 * makespan 5.3x the best; with one warm-up, the best. EXHAUSTIVE finds the
 * best either way (its candidates without the CPU time both GPUs equally
 * cold), re-warming some 70 times on the way: what a CPU's long runs cost. */
#include "balance.h"
#include "warmth.h"

#include "unit_expect.h"

#include <math.h>
#include <stdio.h>

static hpl__warmth warm(void)
{
    hpl__warmth w = {0};
    hpl__warmth_warmed(&w);
    return w;
}

/* Runs of `period_s`, busy `duty` of each, for `seconds`; returns when it
 * turned cold (INFINITY: never). */
static double load(hpl__warmth *w, double duty, double period_s, double seconds)
{
    double turned = INFINITY;
    for (double t = 0; t < seconds; t += period_s) {
        hpl__warmth_ran(w, duty * period_s, period_s);
        if (hpl__warmth_cold(w) && turned == INFINITY)
            turned = t + period_s;
    }
    return turned;
}

static void idle(void)
{
    hpl__warmth cold = {0}, w = warm();
    EXPECT(hpl__warmth_cold(&cold), "a device never warmed up counts as cold");
    EXPECT(!hpl__warmth_cold(&w), "warmed up, warm");
    hpl__warmth one = warm(), many = warm();
    hpl__warmth_ran(&one, 0, 0.9);
    for (int i = 0; i < 9; i++)
        hpl__warmth_ran(&many, 0, 0.1);
    EXPECT(!hpl__warmth_cold(&one) && !hpl__warmth_cold(&many), "0.9 s idle keeps the clocks");
    EXPECT(fabs(one.duty - many.duty) < 1e-12, "0.9 s idle in one piece %.15g, in nine %.15g", one.duty, many.duty);
    hpl__warmth_ran(&one, 0, 0.1);
    EXPECT(hpl__warmth_cold(&one), "1 s idle loses them (duty %g)", one.duty);
    hpl__warmth three = warm();
    hpl__warmth_ran(&three, 0, 3.0);
    EXPECT(hpl__warmth_cold(&three), "3 s idle loses them");
}

static void duty(void)
{
    const double periods[] = {0.001, 0.01, 0.1};
    for (int p = 0; p < 3; p++) {
        hpl__warmth w = warm();
        EXPECT(load(&w, 0.2, periods[p], 10) == INFINITY, "a 20%% load (period %g s) keeps the clocks", periods[p]);
        w = warm();
        EXPECT(load(&w, 0.5, periods[p], 10) == INFINITY, "a 50%% load (period %g s) keeps them", periods[p]);
        w = warm();
        double turned = load(&w, 0.1, periods[p], 10);
        EXPECT(turned > 0.5 && turned <= 2.0, "a 10%% load (period %g s) loses them after %g s", periods[p], turned);
        EXPECT(load(&w, 0.5, periods[p], 10) == 0.0 + periods[p] && hpl__warmth_cold(&w),
               "a 50%% load of short runs (period %g s) does not bring them back", periods[p]);
        w = warm();
        EXPECT(load(&w, 1.0, periods[p], 10) == INFINITY, "back to back keeps them");
    }
}

static void long_runs(void)
{
    hpl__warmth w = {0};
    hpl__warmth_ran(&w, 0.24, 0.24);
    EXPECT(hpl__warmth_cold(&w), "0.24 s of work does not raise the clocks (the H200 took 0.19 s; margin)");
    hpl__warmth_ran(&w, 0.3, 0.35);
    EXPECT(!hpl__warmth_cold(&w), "0.3 s of work then 0.05 s idle ends warm");
    w = (hpl__warmth){0};
    hpl__warmth_ran(&w, 0.3, 3.3);
    EXPECT(hpl__warmth_cold(&w), "0.3 s of work then 3 s idle ends cold");
    hpl__warmth a = {0}, b = warm();
    hpl__warmth_ran(&a, 0.3, 1.0);
    hpl__warmth_ran(&b, 0, 0.7);
    EXPECT(fabs(a.duty - b.duty) < 1e-12, "after a ramp, the rest of the run counts as idle: %g, %g", a.duty, b.duty);
}

static void bad_numbers(void)
{
    const double nan = NAN, inf = INFINITY;
    const double walls[] = {0.0, -1.0, nan, inf, -inf};
    for (int i = 0; i < 5; i++) {
        hpl__warmth w = warm(), c = {0};
        hpl__warmth_ran(&w, 0.0, walls[i]);
        hpl__warmth_ran(&c, 1.0, walls[i]);
        EXPECT(!hpl__warmth_cold(&w) && w.duty == 1.0 && hpl__warmth_cold(&c), "wall %g changes nothing", walls[i]);
    }
    hpl__warmth a = warm(), b = warm();
    hpl__warmth_ran(&a, nan, 0.5);
    hpl__warmth_ran(&b, 0.0, 0.5);
    EXPECT(a.duty == b.duty, "busy NaN counts as idle");
    a = warm(), b = warm();
    hpl__warmth_ran(&a, 2.0, 0.5);
    hpl__warmth_ran(&b, 0.5, 0.5);
    EXPECT(a.duty == b.duty && a.duty == 1.0, "busy past the wall is clamped to it");
    a = warm(), b = warm();
    hpl__warmth_ran(&a, -1.0, 0.5);
    hpl__warmth_ran(&b, 0.0, 0.5);
    EXPECT(a.duty == b.duty, "negative busy counts as idle");
    hpl__warmth c = {0};
    hpl__warmth_ran(&c, inf, 0.5);
    EXPECT(hpl__warmth_cold(&c), "busy infinite counts as idle");
}

/* ---- the simulated machine ------------------------------------------------ */

#define SIM_DEVICES 3     /* the CPU, then two GPUs */
#define SIM_SLOW 5.5      /* a cold GPU's slowdown (H200: 4.9-5.9x) */
#define SIM_RAMP 0.19     /* seconds of work within */
#define SIM_RAMP_SPAN 0.25 /* this long that warm a cold GPU (a piece that long alone does) */
#define SIM_WINDOW 1.5    /* a warm GPU turns cold with less than */
#define SIM_KEEP 0.2      /* this much work in the trailing window */
#define SIM_OVERHEAD 1e-3 /* per run: launch, restore, wait */
#define SIM_PIECES 4096

typedef struct sim_gpu {
    bool warm;
    int count; /* its pieces: [start, end) in simulated seconds */
    double start[SIM_PIECES], end[SIM_PIECES];
} sim_gpu;

typedef struct sim {
    double now;
    double alone[SIM_DEVICES]; /* seconds for all the work, warm */
    sim_gpu gpu[SIM_DEVICES];  /* [0] unused: the CPU keeps its clock */
    hpl__warmth est[SIM_DEVICES];
    int warm_ups;
} sim;

static double worked_since(const sim_gpu *g, double from)
{
    double busy = 0;
    for (int i = g->count - 1; i >= 0 && g->end[i] > from; i--)
        busy += g->end[i] - fmax(g->start[i], from);
    return busy;
}

/* Runs `work` (a share of the whole) on GPU d from now; its seconds. */
static double sim_gpu_run(sim *m, int d, double work)
{
    sim_gpu *g = &m->gpu[d];
    if (g->warm && m->now >= SIM_WINDOW && worked_since(g, m->now - SIM_WINDOW) < SIM_KEEP)
        g->warm = false;
    if (!g->warm && worked_since(g, m->now - SIM_RAMP_SPAN) >= SIM_RAMP) /* near back to back */
        g->warm = true;
    double fast = work * m->alone[d], t = fast;
    if (!g->warm && fast > 0) {
        t = fast * SIM_SLOW <= SIM_RAMP ? fast * SIM_SLOW : SIM_RAMP + (fast - SIM_RAMP / SIM_SLOW);
        g->warm = fast * SIM_SLOW > SIM_RAMP;
    }
    if (t > 0 && g->count < SIM_PIECES) {
        g->start[g->count] = m->now;
        g->end[g->count++] = m->now + t;
    }
    return t;
}

/* One run of `shares`: every device's seconds; the clock moves past it. */
static double sim_run(sim *m, const double *shares, double *seconds)
{
    double wall = 0;
    for (int d = 0; d < SIM_DEVICES; d++) {
        seconds[d] = d == 0 ? shares[0] * m->alone[0] : sim_gpu_run(m, d, shares[d]);
        wall = fmax(wall, seconds[d]);
    }
    m->now += wall + SIM_OVERHEAD;
    return wall + SIM_OVERHEAD;
}

/* plan.c's warm_up: the work over the GPUs until 250 ms have passed. */
static void sim_warm_up(sim *m)
{
    const double gpus[SIM_DEVICES] = {0, 0.5, 0.5};
    double seconds[SIM_DEVICES], spent = 0;
    do
        spent += sim_run(m, gpus, seconds);
    while (spent < 0.25);
    for (int d = 1; d < SIM_DEVICES; d++)
        hpl__warmth_warmed(&m->est[d]);
    m->warm_ups++;
}

/* A search as plan.c runs it; the makespan of its answer on warm GPUs
 * (where the answer keeps them busy) over the best one. */
static double sim_search(hpl__balance_kind kind, bool warm_ups, int *warm_up_count)
{
    static sim m;
    m = (sim){.now = 5.0, .alone = {0.5, 0.01, 0.01}}; /* idle 5 s: cold */
    for (int d = 1; d < SIM_DEVICES; d++) { /* plan.c's warmth_start, last work 5 s ago */
        hpl__warmth_warmed(&m.est[d]);
        hpl__warmth_ran(&m.est[d], 0, 5.0);
    }
    hpl__balance b;
    hpl__balance_init(&b, kind, SIM_DEVICES, NULL);
    double shares[SIM_DEVICES], seconds[SIM_DEVICES];
    for (int guard = 0; guard < 4000 && hpl__balance_next(&b, shares); guard++) {
        if (warm_ups && (hpl__warmth_cold(&m.est[1]) || hpl__warmth_cold(&m.est[2])))
            sim_warm_up(&m);
        double wall = sim_run(&m, shares, seconds);
        for (int d = 1; d < SIM_DEVICES; d++)
            hpl__warmth_ran(&m.est[d], seconds[d], wall);
        hpl__balance_observe_run(&b, shares, seconds);
    }
    hpl__balance_best(&b, shares);
    double makespan = 0, speed = 0;
    for (int d = 0; d < SIM_DEVICES; d++) {
        makespan = fmax(makespan, shares[d] * m.alone[d]);
        speed += 1.0 / m.alone[d];
    }
    *warm_up_count = m.warm_ups;
    EXPECT(m.gpu[1].count < SIM_PIECES && m.gpu[2].count < SIM_PIECES, "the simulation kept %d and %d pieces of %d",
           m.gpu[1].count, m.gpu[2].count, SIM_PIECES);
    return makespan * speed;
}

static void searches(void)
{
    const struct {
        hpl__balance_kind kind;
        const char *name;
        double cold_at_least; /* without warm-ups: the answer is off by */
    } kinds[] = {{HPL__BALANCE_SINGLE_STEP, "SINGLE_STEP", 3.0},
                 {HPL__BALANCE_ITERATIVE, "ITERATIVE", 2.0},
                 {HPL__BALANCE_EXHAUSTIVE, "EXHAUSTIVE", 0 /* the best either way */}};
    for (int k = 0; k < 3; k++) {
        int n_cold, n_warm;
        double cold = sim_search(kinds[k].kind, false, &n_cold), warm = sim_search(kinds[k].kind, true, &n_warm);
        printf("%-11s cold GPUs: makespan %.2fx the best without warm-ups, %.3fx with %d\n", kinds[k].name, cold,
               warm, n_warm);
        EXPECT(kinds[k].cold_at_least == 0 || cold >= kinds[k].cold_at_least,
               "%s without warm-ups: %.3fx the best (the clock model lost its bite?)", kinds[k].name, cold);
        EXPECT(warm <= 1.06 && n_warm >= 1, "%s with %d warm-ups: %.3fx the best", kinds[k].name, n_warm, warm);
    }
}

int main(void)
{
    idle();
    duty();
    long_runs();
    bad_numbers();
    searches();
    printf("unit_warmth: %ld checks, %ld failed\n", checks, failures);
    return failures != 0;
}
