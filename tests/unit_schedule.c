/* The package schedulers (DYNAMIC, HGUIDED, AUTO_TUNE) under a discrete-event
 * simulation of devices: each device has a speed in units per second and
 * optionally a per-package overhead and seeded noise; every idle device takes
 * a package, completions are processed in time order (ties: lowest device
 * first), and the finished device takes its next package at once. Over
 * totals 0 .. 1500 and a few large ones, for speed ratios 1:1, 1:8, 1:180
 * (a CPU beside a GPU), 3 and 4 devices, it checks:
 *   - every unit is handed out once: packages contiguous, increasing, >= 1;
 *   - each package has the size its scheme says, computed here on its own:
 *     DYNAMIC the fixed size (the remainder last); HGUIDED and AUTO_TUNE
 *     max(min_i, floor(G_r P_i / (k N ΣP))) capped at G_r, exactly (integer
 *     arithmetic for nominal powers, a replica of the measured speeds after
 *     the switch), so never below the minimum but for the final remainder,
 *     and under HGUIDED never growing on a device;
 *   - a device left out (power 0) gets nothing, one that never asks keeps
 *     AUTO_TUNE on nominal powers;
 *   - AUTO_TUNE sizes by nominal powers until every device taking part has
 *     finished a package with a usable time, by measured speeds after;
 *   - the makespan T is within the bound of list scheduling below.
 *
 * The bound. Let Σs be the speed of the devices that work, ideal =
 * total / Σs. Take the package that ends last, on device j, started at t with
 * G_r units left. Until t every working device was busy (a device stops only
 * when nothing is left, and something was left at t), so the work done by t,
 * at least Σs t, is at most total - G_r: t <= (total - G_r) / Σs. The package
 * lasts u / s_j with u <= max(min_j, G_r π_j / (k N)), π_j = P_j / ΣP being
 * the share that sized it. With σ_j = s_j / Σs the true share and
 * R = max over packages of π_j / (k N σ_j):
 *     T <= ideal max(1, R) + max_j min_j / s_j              (HGUIDED, AUTO_TUNE)
 *     T <= ideal + package / min_j s_j                      (DYNAMIC)
 * With correct powers (or measured ones, timed exactly) π = σ and R =
 * 1/(k N) < 1: T <= ideal + one minimum package of the device slowest on it.
 * Wrong nominal powers cost nothing as long as no device's nominal share is
 * more than k N times its true one; AUTO_TUNE then recovers, whereas a slow
 * device overstated beyond that is doomed by its first package, which is
 * sized before anything is measured (shown in the table: 1:8 with nominal
 * 1:1 at 1.125 ideal, 1:180 with nominal 1:1 at 22.6).
 * Noise that scales each package's speed by [1 - e, 1 + e] divides the bound
 * by 1 - e; an overhead o per package adds o (packages of the busiest
 * device + 1). The sizes R uses are the ones actually taken, so the bound
 * holds under corrupted times too.
 *
 * The options beyond the papers (speeds known before the eval, AUTO_TUNE's
 * probe, the tail guard) have a simulation of their own (check_guard): every
 * unit handed out once; a device's first probe package its minimum; with
 * exact known speeds never slower than the fastest device alone by more
 * than one package of its own, and without them by at most one minimum
 * package more; a device 180x slower settled out before anything runs when
 * its minimum package outlasts the whole work elsewhere; useful devices
 * still used (1:8 within 10% of ideal).
 *
 * Apart from the simulation: the minimum-package helper, init's refusals,
 * broken times (ignored or clamped, never a crash), sizes at the edges of
 * uint64_t and of doubles, and taking a package before the last is done. */
#include "schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_expect.h"

#define MAXD HPL__SCHEDULE_MAX_DEVICES
#define ULL(x) ((unsigned long long)(x))

typedef struct scenario {
    const char *name; /* for the table */
    hpl__schedule_kind kind;
    int n;
    double speed[MAXD];   /* true units per second */
    double nominal[MAXD]; /* integer-valued; 0 leaves the device out */
    bool absent[MAXD];    /* never asks for work */
    uint64_t min[MAXD];   /* HGUIDED minimum packages */
    bool helper_min;      /* minimums from hpl__schedule_min_package */
    bool cpu[MAXD];       /* for the helper: CPU (4 cores) or GPU (fills with 8 groups) */
    uint64_t package;     /* DYNAMIC; 0 = default */
    unsigned k;           /* 0 = default */
    double overhead;      /* seconds per package, not in the measured time */
    double noise;         /* e */
    bool bad_times;       /* every other package reports a broken time */
} scenario;

typedef struct sim {
    const scenario *sc;
    uint64_t total, n_part, k, min[MAXD];
    hpl__schedule s;
    /* replica of what the schedule should do */
    uint64_t next, timed[MAXD];
    double seconds[MAXD];
    uint64_t timed_devices, last_size[MAXD];
    /* the devices */
    bool busy[MAXD];
    double until[MAXD], compute[MAXD];
    uint64_t count[MAXD], packages[MAXD], units[MAXD], reported;
    double sum_speed, ratio, ratio_measured, makespan;
    uint64_t rng;
    bool broken; /* stop a run that went wrong rather than loop */
} sim;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *x) /* [0, 1) */
{
    return (double)(splitmix(x) >> 11) * 0x1p-53;
}

static bool works(const scenario *sc, int j)
{
    return sc->nominal[j] > 0 && !sc->absent[j];
}

/* The documented treatment of a measured time: ignored unless finite and
 * > 0, then clamped to [1e-9, 1e9]. */
static double usable_time(double t)
{
    if (!isfinite(t) || !(t > 0))
        return 0;
    return t < 1e-9 ? 1e-9 : t > 1e9 ? 1e9 : t;
}

static bool replica_measured(const sim *m)
{
    return m->sc->kind == HPL__SCHEDULE_AUTO_TUNE && m->timed_devices == m->n_part;
}

/* The share π_j that sizes device j's package, and the size, computed apart
 * from the library: nominal powers in integers, measured ones as units /
 * seconds with the same operations as the library (so bit for bit). */
static uint64_t expected_size(const sim *m, int j, uint64_t g, double *share)
{
    const scenario *sc = m->sc;
    *share = 0;
    if (sc->kind == HPL__SCHEDULE_DYNAMIC) {
        uint64_t b = sc->package ? sc->package : (m->total + 8 * m->n_part - 1) / (8 * m->n_part);
        return b < g ? b : g;
    }
    uint64_t f;
    if (replica_measured(m)) {
        double v[MAXD], sum = 0;
        for (int i = 0; i < sc->n; i++) {
            v[i] = sc->nominal[i] > 0 && m->timed[i] ? (double)m->timed[i] / m->seconds[i] : 0;
            sum += v[i];
        }
        double x = (double)g * v[j] / ((double)m->k * (double)m->n_part * sum);
        f = x >= (double)g ? g : (uint64_t)x;
        *share = v[j] / sum;
    } else {
        uint64_t p = (uint64_t)sc->nominal[j], sum = 0;
        for (int i = 0; i < sc->n; i++)
            sum += (uint64_t)sc->nominal[i];
        f = g * p / (m->k * m->n_part * sum); /* small numbers: no overflow */
        *share = (double)p / (double)sum;
    }
    if (f < m->min[j])
        f = m->min[j];
    return f < g ? f : g;
}

static void sim_take(sim *m, int j, double t)
{
    const scenario *sc = m->sc;
    uint64_t g = m->total - m->next, first, count;
    double share;
    uint64_t want = expected_size(m, j, g, &share);
    EXPECT(hpl__schedule_measured(&m->s) == replica_measured(m), "%s total %llu: measured %d", sc->name,
           ULL(m->total), hpl__schedule_measured(&m->s));
    bool ok = hpl__schedule_take(&m->s, j, &first, &count);
    if (sc->nominal[j] <= 0 || g == 0) {
        EXPECT(!ok && count == 0, "%s total %llu dev %d: took %llu with %llu left", sc->name, ULL(m->total), j,
               ULL(count), ULL(g));
        return;
    }
    EXPECT(ok && first == m->next && count == want, "%s total %llu dev %d: [%llu +%llu), want [%llu +%llu)",
           sc->name, ULL(m->total), j, ULL(first), ULL(count), ULL(m->next), ULL(want));
    if (!ok || count == 0 || count > g) {
        m->broken = true;
        return;
    }
    if (sc->kind != HPL__SCHEDULE_DYNAMIC) {
        EXPECT(count >= m->min[j] || count == g, "%s total %llu dev %d: %llu below the minimum %llu", sc->name,
               ULL(m->total), j, ULL(count), ULL(m->min[j]));
        double r = share * m->sum_speed / ((double)m->k * (double)m->n_part * sc->speed[j]);
        m->ratio = r > m->ratio ? r : m->ratio;
        if (replica_measured(m))
            m->ratio_measured = r > m->ratio_measured ? r : m->ratio_measured;
    }
    if (sc->kind == HPL__SCHEDULE_HGUIDED) /* constant powers, shrinking G_r */
        EXPECT(m->packages[j] == 0 || count <= m->last_size[j], "%s total %llu dev %d: package grew", sc->name,
               ULL(m->total), j);
    m->last_size[j] = count;
    m->next += count;
    double f = sc->noise ? 1 - sc->noise + 2 * sc->noise * uniform(&m->rng) : 1;
    m->compute[j] = (double)count / (sc->speed[j] * f);
    m->until[j] = t + sc->overhead + m->compute[j];
    m->count[j] = count;
    m->busy[j] = true;
    m->packages[j]++;
    m->units[j] += count;
}

static double reported_time(sim *m, int j)
{
    static const double broken[] = {0, -1, NAN, INFINITY, -INFINITY, 1e-320, 1e300, -0.0};
    if (!m->sc->bad_times || m->reported++ % 2 == 0)
        return m->compute[j];
    return broken[(m->reported / 2) % (sizeof broken / sizeof broken[0])];
}

static void sim_done(sim *m, int j)
{
    double t = reported_time(m, j), u = usable_time(t);
    hpl__schedule_done(&m->s, j, m->count[j], t);
    if (u > 0) {
        m->timed_devices += m->timed[j] == 0;
        m->timed[j] += m->count[j];
        m->seconds[j] += u;
    }
    m->busy[j] = false;
}

static int next_event(const sim *m)
{
    int e = -1;
    for (int j = 0; j < m->sc->n; j++)
        if (m->busy[j] && (e < 0 || m->until[j] < m->until[e]))
            e = j; /* strict: ties go to the lowest index */
    return e;
}

static void sim_setup(sim *m, const scenario *sc, uint64_t total, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    m->sc = sc;
    m->total = total;
    m->k = sc->k ? sc->k : 2;
    m->rng = seed;
    hpl__schedule_device d[MAXD];
    for (int j = 0; j < sc->n; j++) {
        m->n_part += sc->nominal[j] > 0;
        if (works(sc, j))
            m->sum_speed += sc->speed[j];
        uint64_t min = sc->helper_min ? hpl__schedule_min_package(sc->cpu[j], 4, 8, total) : sc->min[j];
        m->min[j] = min ? min : 1;
        d[j] = (hpl__schedule_device){.power = sc->nominal[j], .min_package = min};
    }
    hpl__schedule_params p = {.package = sc->package, .k = sc->k};
    bool ok = hpl__schedule_init(&m->s, sc->kind, total, sc->n, d, &p);
    EXPECT(ok, "%s: init", sc->name);
    m->broken = !ok;
}

static void sim_run(sim *m)
{
    const scenario *sc = m->sc;
    for (int j = 0; j < sc->n && !m->broken; j++)
        if (!sc->absent[j])
            sim_take(m, j, 0);
    for (uint64_t steps = 0; !m->broken; steps++) {
        int j = next_event(m);
        if (j < 0)
            break;
        double t = m->until[j];
        sim_done(m, j);
        m->makespan = t;
        sim_take(m, j, t);
        if (steps > m->total + 100)
            m->broken = true;
    }
}

static uint64_t sim_packages(const sim *m)
{
    uint64_t p = 0;
    for (int j = 0; j < m->sc->n; j++)
        p += m->packages[j];
    return p;
}

/* The bound of the header comment, over ideal. */
static double sim_bound(const sim *m, double ratio)
{
    const scenario *sc = m->sc;
    double ideal = (double)m->total / m->sum_speed, tail = 0, over = 0;
    uint64_t most = 0, b = sc->package ? sc->package : (m->total + 8 * m->n_part - 1) / (8 * m->n_part);
    for (int j = 0; j < sc->n; j++) {
        if (!works(sc, j))
            continue;
        double size = sc->kind == HPL__SCHEDULE_DYNAMIC ? (double)b : (double)m->min[j];
        tail = size / sc->speed[j] > tail ? size / sc->speed[j] : tail;
        most = m->packages[j] > most ? m->packages[j] : most;
    }
    double r = sc->kind == HPL__SCHEDULE_DYNAMIC ? 1 : ratio > 1 ? ratio : 1;
    over = sc->overhead * (double)(most + 1);
    return ((ideal * r + tail) / (1 - sc->noise) + over) / ideal;
}

static void sim_check(const sim *m)
{
    const scenario *sc = m->sc;
    uint64_t sum = 0;
    for (int j = 0; j < sc->n; j++) {
        sum += m->units[j];
        EXPECT(works(sc, j) || m->packages[j] == 0, "%s total %llu: device %d left out but worked", sc->name,
               ULL(m->total), j);
        EXPECT(m->s.dev[j].pending == 0, "%s total %llu: device %d pending %llu", sc->name, ULL(m->total), j,
               ULL(m->s.dev[j].pending));
    }
    EXPECT(!m->broken && m->next == m->total && sum == m->total && hpl__schedule_remaining(&m->s) == 0,
           "%s total %llu: handed out %llu", sc->name, ULL(m->total), ULL(sum));
    if (m->total == 0)
        return;
    double ideal = (double)m->total / m->sum_speed, bound = sim_bound(m, m->ratio);
    EXPECT(m->makespan <= ideal * bound * (1 + 1e-12), "%s total %llu: makespan %.4g ideal, bound %.4g", sc->name,
           ULL(m->total), m->makespan / ideal, bound);
}

/* The scenarios. Speeds in units per second; nominal powers integers. */
#define DEV2(a, b) .n = 2, .speed = {a, b}
static const scenario scenarios[] = {
    {"dyn 1:1", HPL__SCHEDULE_DYNAMIC, DEV2(1, 1), .nominal = {1, 1}},
    {"dyn 1:8", HPL__SCHEDULE_DYNAMIC, DEV2(1, 8), .nominal = {1, 1}},
    {"dyn 1:180", HPL__SCHEDULE_DYNAMIC, DEV2(1, 180), .nominal = {1, 1}},
    {"dyn 1:180 p7", HPL__SCHEDULE_DYNAMIC, DEV2(1, 180), .nominal = {1, 1}, .package = 7},
    {"dyn 1:2:4", HPL__SCHEDULE_DYNAMIC, .n = 3, .speed = {1, 2, 4}, .nominal = {1, 1, 1}},
    {"dyn 1:3:3:8 p5", HPL__SCHEDULE_DYNAMIC, .n = 4, .speed = {1, 3, 3, 8}, .nominal = {1, 1, 1, 1}, .package = 5},
    {"hg 1:1", HPL__SCHEDULE_HGUIDED, DEV2(1, 1), .nominal = {1, 1}},
    {"hg 1:8", HPL__SCHEDULE_HGUIDED, DEV2(1, 8), .nominal = {1, 8}},
    {"hg 1:8 min 3,20", HPL__SCHEDULE_HGUIDED, DEV2(1, 8), .nominal = {1, 8}, .min = {3, 20}},
    {"hg 1:180", HPL__SCHEDULE_HGUIDED, DEV2(1, 180), .nominal = {1, 180}},
    {"hg 1:180 k3", HPL__SCHEDULE_HGUIDED, DEV2(1, 180), .nominal = {1, 180}, .k = 3},
    {"hg 1:2:4", HPL__SCHEDULE_HGUIDED, .n = 3, .speed = {1, 2, 4}, .nominal = {1, 2, 4}},
    {"hg 1:3:3:8 min 2", HPL__SCHEDULE_HGUIDED, .n = 4, .speed = {1, 3, 3, 8}, .nominal = {1, 3, 3, 8},
     .min = {2, 2, 2, 2}},
    {"at 1:1", HPL__SCHEDULE_AUTO_TUNE, DEV2(1, 1), .nominal = {1, 1}, .helper_min = true},
    {"at 1:180", HPL__SCHEDULE_AUTO_TUNE, DEV2(1, 180), .nominal = {1, 180}, .helper_min = true, .cpu = {true}},
    {"at 1:2:4", HPL__SCHEDULE_AUTO_TUNE, .n = 3, .speed = {1, 2, 4}, .nominal = {1, 2, 4}, .helper_min = true,
     .cpu = {true}},
    /* Wrong nominal powers, each beside HGUIDED left with them. */
    {"at 1:8 nom 1:2", HPL__SCHEDULE_AUTO_TUNE, DEV2(1, 8), .nominal = {1, 2}, .helper_min = true, .cpu = {true}},
    {"hg 1:8 nom 1:2", HPL__SCHEDULE_HGUIDED, DEV2(1, 8), .nominal = {1, 2}, .helper_min = true, .cpu = {true}},
    {"at 1:8 nom 1:1", HPL__SCHEDULE_AUTO_TUNE, DEV2(1, 8), .nominal = {1, 1}, .helper_min = true, .cpu = {true}},
    {"at 1:180 nom 1:1000", HPL__SCHEDULE_AUTO_TUNE, DEV2(1, 180), .nominal = {1, 1000}, .helper_min = true,
     .cpu = {true}},
    {"hg 1:180 nom 1:1000", HPL__SCHEDULE_HGUIDED, DEV2(1, 180), .nominal = {1, 1000}, .helper_min = true,
     .cpu = {true}},
    {"at 1:40:60 nom 1:100:100", HPL__SCHEDULE_AUTO_TUNE, .n = 3, .speed = {1, 40, 60}, .nominal = {1, 100, 100},
     .helper_min = true, .cpu = {true}},
    {"hg 1:40:60 nom 1:100:100", HPL__SCHEDULE_HGUIDED, .n = 3, .speed = {1, 40, 60}, .nominal = {1, 100, 100},
     .helper_min = true, .cpu = {true}},
    {"hg 1:40:60", HPL__SCHEDULE_HGUIDED, .n = 3, .speed = {1, 40, 60}, .nominal = {1, 40, 60},
     .helper_min = true, .cpu = {true}},
    {"at 1:2:4:8 nom 1:1:1:1", HPL__SCHEDULE_AUTO_TUNE, .n = 4, .speed = {1, 2, 4, 8}, .nominal = {1, 1, 1, 1},
     .helper_min = true, .cpu = {true}},
    {"hg 1:2:4:8 nom 1:1:1:1", HPL__SCHEDULE_HGUIDED, .n = 4, .speed = {1, 2, 4, 8}, .nominal = {1, 1, 1, 1},
     .helper_min = true, .cpu = {true}},
    {"at 1:180 nom 1:1", HPL__SCHEDULE_AUTO_TUNE, DEV2(1, 180), .nominal = {1, 1}, .helper_min = true,
     .cpu = {true}},
    /* Overheads, noise, broken times. */
    {"dyn 1:180 o0.5", HPL__SCHEDULE_DYNAMIC, DEV2(1, 180), .nominal = {1, 1}, .overhead = 0.5},
    {"hg 1:180 o0.5", HPL__SCHEDULE_HGUIDED, DEV2(1, 180), .nominal = {1, 180}, .min = {4, 1}, .overhead = 0.5},
    {"at 1:180 nom 1:1000 o0.5", HPL__SCHEDULE_AUTO_TUNE, DEV2(1, 180), .nominal = {1, 1000}, .helper_min = true,
     .cpu = {true}, .overhead = 0.5},
    {"hg 1:3:3:8 noise", HPL__SCHEDULE_HGUIDED, .n = 4, .speed = {1, 3, 3, 8}, .nominal = {1, 3, 3, 8},
     .noise = 0.2},
    {"at 1:3:3:8 nom 1:1:1:1 noise", HPL__SCHEDULE_AUTO_TUNE, .n = 4, .speed = {1, 3, 3, 8},
     .nominal = {1, 1, 1, 1}, .helper_min = true, .cpu = {true}, .noise = 0.2},
    {"at 1:8 nom 1:1 bad times", HPL__SCHEDULE_AUTO_TUNE, DEV2(1, 8), .nominal = {1, 1}, .helper_min = true,
     .cpu = {true}, .bad_times = true},
    /* A device with no usable speed (left out), one that never asks. */
    {"hg 1:-:8 (left out)", HPL__SCHEDULE_HGUIDED, .n = 3, .speed = {1, 0, 8}, .nominal = {1, 0, 8}},
    {"dyn 1:-:8 (left out)", HPL__SCHEDULE_DYNAMIC, .n = 3, .speed = {1, 0, 8}, .nominal = {1, 0, 1}},
    {"at 1:(8):8 (never asks)", HPL__SCHEDULE_AUTO_TUNE, .n = 3, .speed = {1, 8, 8}, .nominal = {1, 8, 8},
     .absent = {false, true, false}, .helper_min = true, .cpu = {true}},
};

static const scenario *find_scenario(const char *name)
{
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (!strcmp(scenarios[i].name, name))
            return &scenarios[i];
    fprintf(stderr, "no scenario %s\n", name);
    exit(2);
}

/* The a priori bound of a scenario timed exactly: R from the nominal shares
 * (and 1/(k N) for measured ones, which then equal the true ones). */
static double nominal_ratio(const sim *m)
{
    const scenario *sc = m->sc;
    double psum = 0, r = 1.0 / ((double)m->k * (double)m->n_part);
    for (int j = 0; j < sc->n; j++)
        psum += sc->nominal[j];
    for (int j = 0; j < sc->n; j++) {
        if (!works(sc, j))
            continue;
        double x = sc->nominal[j] / psum * m->sum_speed / ((double)m->k * (double)m->n_part * sc->speed[j]);
        r = x > r ? x : r;
    }
    return r;
}

typedef struct outcome {
    double t_ideal, bound; /* makespan and its bound, over ideal */
    uint64_t packages;
} outcome;

static outcome run_scenario(int index, uint64_t total)
{
    const scenario *sc = &scenarios[index];
    sim m;
    sim_setup(&m, sc, total, 1000003ull * (uint64_t)index + total);
    sim_run(&m);
    sim_check(&m);
    bool exact = !sc->noise && !sc->bad_times;
    if (exact && sc->kind != HPL__SCHEDULE_DYNAMIC && total) {
        /* The observed R is no worse than the a priori one, and after the
         * switch AUTO_TUNE sizes by the true shares: R = 1 / (k N). */
        double r = nominal_ratio(&m), kn = 1.0 / ((double)m.k * (double)m.n_part);
        EXPECT(m.ratio <= r * (1 + 1e-9), "%s total %llu: R %.4g, a priori %.4g", sc->name, ULL(total), m.ratio, r);
        EXPECT(m.ratio_measured <= kn * (1 + 1e-9), "%s total %llu: measured shares off, R %.4g", sc->name,
               ULL(total), m.ratio_measured);
    }
    if (sc->kind == HPL__SCHEDULE_AUTO_TUNE && sc->absent[1] && total > 0)
        EXPECT(!hpl__schedule_measured(&m.s), "%s: switched without the absent device", sc->name);
    if (total == 0)
        return (outcome){0};
    double ideal = (double)total / m.sum_speed;
    return (outcome){m.makespan / ideal, sim_bound(&m, m.ratio), sim_packages(&m)};
}

/* Recovery: AUTO_TUNE given nominal powers that overstate no device's share
 * by k N or more (R <= 1 a priori) keeps within ideal + one minimum package
 * of the device slowest on it, the bound of HGUIDED with correct powers.
 * Beside HGUIDED left with the same wrong powers and minimums (same
 * worst-case bound: constant powers overstate every package alike), the
 * switch shows in the package count where a device is understated: the CPU
 * said to be 1/1001 of the power gets minimum packages forever under
 * HGUIDED, its measured share (1/181) under AUTO_TUNE. */
static void check_recovery(void)
{
    static const char *const wrong[] = {"at 1:8 nom 1:2", "at 1:180 nom 1:1000", "at 1:40:60 nom 1:100:100",
                                        "at 1:2:4:8 nom 1:1:1:1", "at 1:3:3:8 nom 1:1:1:1 noise"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        for (uint64_t total = 10; total <= 1000000; total *= 10) {
            sim at;
            sim_setup(&at, find_scenario(wrong[i]), total, 7 + total);
            sim_run(&at);
            double ideal = (double)total / at.sum_speed, r = nominal_ratio(&at);
            EXPECT(r <= 1, "%s: nominal wrong by k N or more (R %.3g)", at.sc->name, r);
            EXPECT(at.makespan <= ideal * sim_bound(&at, 1) * (1 + 1e-12), "%s total %llu: %.4g ideal, bound %.4g",
                   at.sc->name, ULL(total), at.makespan / ideal, sim_bound(&at, 1));
        }
    }
    for (uint64_t total = 10000; total <= 1000000; total *= 10) {
        sim at, hg;
        sim_setup(&at, find_scenario("at 1:180 nom 1:1000"), total, 1);
        sim_run(&at);
        sim_setup(&hg, find_scenario("hg 1:180 nom 1:1000"), total, 1);
        sim_run(&hg);
        EXPECT(sim_packages(&at) < sim_packages(&hg) && at.makespan <= hg.makespan * 1.001,
               "total %llu: AUTO_TUNE %llu packages T %g, HGUIDED %llu T %g", ULL(total), ULL(sim_packages(&at)),
               at.makespan, ULL(sim_packages(&hg)), hg.makespan);
    }
}

static void check_min_package(void)
{
    EXPECT(hpl__schedule_min_package(true, 16, 999, 100000) == 16, "CPU: one group per core");
    EXPECT(hpl__schedule_min_package(true, 0, 0, 0) == 1, "CPU without cores: 1");
    EXPECT(hpl__schedule_min_package(false, 16, 64, 1000) == 64, "GPU: fill beats 5%% of 1000");
    EXPECT(hpl__schedule_min_package(false, 16, 64, 10000) == 500, "GPU: 5%% of 10000");
    EXPECT(hpl__schedule_min_package(false, 16, 0, 21) == 2, "GPU: 5%% of 21 rounds up");
    EXPECT(hpl__schedule_min_package(false, 16, 0, 0) == 1, "GPU, nothing: 1");
    EXPECT(hpl__schedule_min_package(false, 0, 0, UINT64_MAX) == UINT64_MAX / 20 + 1, "GPU: no overflow");
}

static void check_init(void)
{
    hpl__schedule s;
    hpl__schedule_device d[MAXD + 1];
    for (int i = 0; i <= MAXD; i++)
        d[i] = (hpl__schedule_device){.power = 1};
    uint64_t first, count;
    EXPECT(!hpl__schedule_init(&s, HPL__SCHEDULE_HGUIDED, 10, 0, d, NULL), "0 devices");
    EXPECT(!hpl__schedule_init(&s, HPL__SCHEDULE_HGUIDED, 10, MAXD + 1, d, NULL), "17 devices");
    EXPECT(!hpl__schedule_take(&s, 0, &first, &count) && count == 0, "a failed init hands out nothing");
    EXPECT(!hpl__schedule_init(&s, HPL__SCHEDULE_HGUIDED, 10, 2, NULL, NULL), "NULL devices");
    EXPECT(!hpl__schedule_init(&s, (hpl__schedule_kind)7, 10, 2, d, NULL), "unknown kind");
    static const double bad[] = {-1, NAN, INFINITY, -0.5};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d[1].power = bad[i];
        EXPECT(!hpl__schedule_init(&s, HPL__SCHEDULE_AUTO_TUNE, 10, 2, d, NULL), "power %g", bad[i]);
    }
    for (int i = 0; i < MAXD; i++)
        d[i].power = 0;
    EXPECT(!hpl__schedule_init(&s, HPL__SCHEDULE_DYNAMIC, 10, 2, d, NULL), "no device takes part");
    d[0].power = 1;
    EXPECT(hpl__schedule_init(&s, HPL__SCHEDULE_DYNAMIC, 10, MAXD, d, NULL), "16 devices, one taking part");
    EXPECT(!hpl__schedule_take(&s, 1, &first, &count) && hpl__schedule_take(&s, 0, &first, &count) && count == 2,
           "only device 0 takes, ceil(10 / 8)");
    EXPECT(!hpl__schedule_take(&s, -1, &first, &count) && !hpl__schedule_take(&s, MAXD, &first, &count),
           "unknown devices take nothing");
    EXPECT(hpl__schedule_init(&s, HPL__SCHEDULE_AUTO_TUNE, 0, 2, d, NULL), "total 0");
    EXPECT(!hpl__schedule_take(&s, 0, &first, &count) && count == 0, "total 0: nothing to take");
}

/* Broken times: ignored (not finite, <= 0) or clamped, never a crash or an
 * infinite speed; a device whose times are all broken keeps AUTO_TUNE on
 * nominal powers. */
static void check_times(void)
{
    hpl__schedule s;
    hpl__schedule_device d[2] = {{.power = 1}, {.power = 3}};
    uint64_t first, count[2];
    hpl__schedule_init(&s, HPL__SCHEDULE_AUTO_TUNE, 1000, 2, d, NULL);
    hpl__schedule_take(&s, 0, &first, &count[0]);
    hpl__schedule_take(&s, 1, &first, &count[1]);
    EXPECT(count[0] == 1000 / 16 && count[1] == (1000 - 62) * 3 / 16, "nominal sizes %llu %llu", ULL(count[0]),
           ULL(count[1]));
    static const double broken[] = {0, -0.0, -1, NAN, -NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++)
        hpl__schedule_done(&s, 0, 1, broken[i]);
    hpl__schedule_done(&s, 0, count[0] - 7, 2.0);
    hpl__schedule_done(&s, 1, count[1], NAN);
    EXPECT(!hpl__schedule_measured(&s) && s.dev[0].pending == 0 && s.dev[1].pending == 0,
           "ignored times: no switch, all done");
    EXPECT(hpl__schedule_power(&s, 0) == 0.25 && hpl__schedule_power(&s, 1) == 0.75, "nominal powers, scaled");
    hpl__schedule_take(&s, 1, &first, &count[1]);
    hpl__schedule_done(&s, 1, count[1], 1e-300); /* clamped to 1e-9 */
    EXPECT(hpl__schedule_measured(&s), "switched once both have a usable time");
    double p0 = hpl__schedule_power(&s, 0), p1 = hpl__schedule_power(&s, 1);
    EXPECT(p0 == (double)(count[0] - 7) / 2.0 && p1 == (double)count[1] / 1e-9, "measured %g %g", p0, p1);
    hpl__schedule_done(&s, 1, 5, 1.0);   /* nothing pending: ignored */
    hpl__schedule_done(&s, 9, 5, 1.0);   /* no such device */
    hpl__schedule_done(&s, -1, 5, 1.0);
    EXPECT(hpl__schedule_power(&s, 1) == p1, "done beyond pending is cut");
    hpl__schedule_take(&s, 0, &first, &count[0]);
    EXPECT(count[0] == 1, "a device measured as slow gets its minimum, 1: %llu", ULL(count[0]));
    uint64_t left = hpl__schedule_remaining(&s);
    hpl__schedule_take(&s, 1, &first, &count[1]);
    EXPECT(count[1] <= left / 4 && count[1] + 1 >= left / 4, "the fast one gets about G_r / (k N): %llu of %llu",
           ULL(count[1]), ULL(left));
    for (int i = 0; i < 100; i++)
        hpl__schedule_done(&s, 0, 1, 1e300); /* clamped to 1e9; then nothing pending */
    EXPECT(isfinite(hpl__schedule_power(&s, 0)) && hpl__schedule_power(&s, 0) > 0, "huge times: speed finite");
}

/* Sizes at the edges of uint64_t and of doubles: no overflow, everything
 * handed out once, few packages. */
static void check_extremes(void)
{
    static const double powers[][3] = {{1, 1, 1}, {1, 180, 3}, {1e300, 1e-300, 1}, {1e308, 1e308, 1e308}};
    for (int kind = HPL__SCHEDULE_DYNAMIC; kind <= HPL__SCHEDULE_AUTO_TUNE; kind++) {
        for (size_t pi = 0; pi < sizeof powers / sizeof powers[0]; pi++) {
            hpl__schedule s;
            hpl__schedule_device d[3];
            for (int j = 0; j < 3; j++)
                d[j] = (hpl__schedule_device){.power = powers[pi][j],
                                              .min_package = hpl__schedule_min_package(j == 0, 8, 64, UINT64_MAX)};
            EXPECT(hpl__schedule_init(&s, (hpl__schedule_kind)kind, UINT64_MAX, 3, d, NULL), "init");
            uint64_t next = 0, first, count, packages = 0;
            for (int j = 0; hpl__schedule_take(&s, j, &first, &count) && packages < 100000; j = (j + 1) % 3) {
                EXPECT(first == next && count >= 1 && count <= UINT64_MAX - next, "kind %d [%llu +%llu)", kind,
                       ULL(first), ULL(count));
                next += count;
                packages++;
                hpl__schedule_done(&s, j, count, (double)count * 1e-12 * (j + 1));
            }
            EXPECT(next == UINT64_MAX && packages < 2000, "kind %d powers %zu: %llu packages", kind, pi,
                   ULL(packages));
        }
    }
    /* A device may take its next package before the last is done. */
    hpl__schedule s;
    hpl__schedule_device d[2] = {{.power = 1}, {.power = 1}};
    hpl__schedule_init(&s, HPL__SCHEDULE_HGUIDED, 100, 2, d, &(hpl__schedule_params){.k = 1});
    uint64_t first, a, b;
    hpl__schedule_take(&s, 0, &first, &a);
    hpl__schedule_take(&s, 0, &first, &b);
    EXPECT(a == 25 && b == 18 && first == 25 && s.dev[0].pending == 43, "k 1: 25 then 18, both pending");
}

/* ---- speeds known before, probe, tail guard ------------------------------- */

typedef struct guarded_run {
    double makespan, biggest[MAXD]; /* biggest: the largest package of each device, in seconds */
    uint64_t units[MAXD], packages[MAXD], first_package[MAXD], first_left[MAXD]; /* left: when it took it */
    int settled;
} guarded_run;

/* Devices at exact speeds, each taking a package when free (at 0 in index
 * order, then in completion order); a device that declines stays idle. */
static guarded_run run_guarded(hpl__schedule_kind kind, int n, const double *speed, const double *nominal,
                               const double *prior, const uint64_t *min, bool probe, uint64_t total)
{
    guarded_run r = {0};
    hpl__schedule s;
    hpl__schedule_device d[MAXD];
    for (int j = 0; j < n; j++)
        d[j] = (hpl__schedule_device){.power = nominal[j], .min_package = min[j], .speed = prior ? prior[j] : 0};
    bool ok = hpl__schedule_init(&s, kind, total, n, d, &(hpl__schedule_params){.probe = probe, .tail_guard = true});
    EXPECT(ok, "guarded init");
    r.settled = hpl__schedule_settle(&s);
    bool busy[MAXD] = {0};
    double until[MAXD] = {0};
    uint64_t count[MAXD] = {0}, next = 0;
    for (int step = 0, j = 0; ok && step < 1000000; step++) {
        uint64_t first, c;
        if (j >= 0 && (r.settled < 0 || r.settled == j) && hpl__schedule_take(&s, j, &first, &c)) {
            EXPECT(first == next && c >= 1, "guarded: [%llu +%llu) at %llu", ULL(first), ULL(c), ULL(next));
            double t0 = busy[j] ? until[j] : r.makespan;
            next += c;
            if (!r.packages[j]++) {
                r.first_package[j] = c;
                r.first_left[j] = total - first;
            }
            r.units[j] += c;
            r.biggest[j] = fmax(r.biggest[j], (double)c / speed[j]);
            until[j] = t0 + (double)c / speed[j];
            count[j] = c;
            busy[j] = true;
        }
        if (step < n - 1) { /* everyone asks at 0 */
            j = step + 1;
            continue;
        }
        j = -1;
        for (int i = 0; i < n; i++)
            if (busy[i] && (j < 0 || until[i] < until[j]))
                j = i;
        if (j < 0)
            break;
        r.makespan = until[j];
        busy[j] = false;
        hpl__schedule_done(&s, j, count[j], (double)count[j] / speed[j]);
    }
    EXPECT(next == total, "guarded: handed out %llu of %llu", ULL(next), ULL(total));
    return r;
}

static void check_guard_case(hpl__schedule_kind kind, int n, const double *speed, const uint64_t *min, bool known,
                             uint64_t total)
{
    double fast = 0, equal[MAXD];
    int f = 0;
    for (int j = 0; j < n; j++) {
        equal[j] = 1;
        f = speed[j] > speed[f] ? j : f;
        fast = fmax(fast, speed[j]);
    }
    /* Without known speeds AUTO_TUNE probes (no nominal powers); the
     * others are given the true speeds as nominal powers. */
    bool probe = !known && kind == HPL__SCHEDULE_AUTO_TUNE;
    guarded_run r = run_guarded(kind, n, speed, probe ? equal : speed, known ? speed : NULL, min, probe, total);
    /* Unknown speeds: each device's first package is a blind bet. */
    double alone = (double)total / fast, tail = 0;
    for (int j = 0; j < n; j++)
        tail = fmax(tail, known ? 0 : (double)r.first_package[j] / speed[j]);
    EXPECT(r.makespan <= (alone + r.biggest[f] + tail) * (1 + 1e-9),
           "kind %d speeds %g:%g total %llu known %d: makespan %.4g, fastest alone %.4g", kind, speed[0], speed[1],
           ULL(total), known, r.makespan, alone);
    if (probe)
        for (int j = 0; j < n; j++)
            EXPECT(r.packages[j] == 0 || r.first_package[j] == (min[j] < r.first_left[j] ? min[j] : r.first_left[j]),
                   "probe: device %d's first package %llu, its minimum %llu", j, ULL(r.first_package[j]),
                   ULL(min[j]));
    /* Settled out: a device whose minimum outlasts the rest's whole work. */
    if (known && n == 2) {
        int slow = 1 - f;
        /* Its smallest package: DYNAMIC's fixed one (8 per device), else its minimum. */
        uint64_t first = kind == HPL__SCHEDULE_DYNAMIC ? (total + 15) / 16 : min[slow];
        bool out = (double)first / speed[slow] >= (double)total / fast;
        if (speed[slow] == fast && r.settled >= 0) /* a tie: either */
            slow = 1 - r.settled, f = r.settled;
        bool one = kind == HPL__SCHEDULE_DYNAMIC || r.packages[f] == 1; /* DYNAMIC's keep their size */
        EXPECT(!out || (r.settled == f && r.packages[slow] == 0 && one),
               "total %llu: %g:%g should run the fastest alone in one package (settled %d, %llu packages)",
               ULL(total), speed[0], speed[1], r.settled, ULL(r.packages[f]));
    }
}

static void check_guard(void)
{
    static const double speeds[][4] = {{1, 1}, {1, 8}, {1, 180}, {180, 1}, {1, 180, 180}, {1, 2, 4}};
    static const int counts[] = {2, 2, 2, 2, 3, 3};
    static const uint64_t mins[][4] = {{1, 1, 1}, {4, 7, 7}, {16, 1, 5}};
    for (int kind = HPL__SCHEDULE_DYNAMIC; kind <= HPL__SCHEDULE_AUTO_TUNE; kind++)
        for (size_t sp = 0; sp < sizeof counts / sizeof counts[0]; sp++)
            for (size_t m = 0; m < sizeof mins / sizeof mins[0]; m++)
                for (uint64_t total = 1; total <= 3000; total += total < 200 ? 1 : 37)
                    for (int known = 0; known < 2; known++)
                        check_guard_case((hpl__schedule_kind)kind, counts[sp], speeds[sp], mins[m], known, total);
    /* Useful devices stay useful: 1:8 and 1:2:4 near ideal. */
    static const uint64_t min1[] = {1, 1, 1};
    for (size_t sp = 1; sp < sizeof counts / sizeof counts[0]; sp += 4) {
        double sum = 0;
        for (int j = 0; j < counts[sp]; j++)
            sum += speeds[sp][j];
        guarded_run r = run_guarded(HPL__SCHEDULE_AUTO_TUNE, counts[sp], speeds[sp], speeds[sp], speeds[sp], min1,
                                    false, 100000);
        EXPECT(r.makespan <= 1.1 * 100000 / sum, "speeds %g:%g...: %.4g of ideal", speeds[sp][0], speeds[sp][1],
               r.makespan / (100000 / sum));
    }
    /* A CPU 180x slower than two GPUs is settled out; the GPUs share. */
    static const double three[] = {1, 180, 180};
    static const uint64_t min3[] = {4, 7, 7};
    guarded_run r = run_guarded(HPL__SCHEDULE_AUTO_TUNE, 3, three, three, three, min3, false, 128);
    EXPECT(r.settled == -1 && r.packages[0] == 0 && r.packages[1] && r.packages[2], "1:180:180 at 128: settled %d",
           r.settled);
    /* Known speeds: AUTO_TUNE is measured from the start; broken ones are unknown. */
    hpl__schedule s;
    hpl__schedule_device d[3] = {{.power = 1, .speed = 2}, {.power = 1, .speed = 6}, {.power = 1, .speed = NAN}};
    hpl__schedule_init(&s, HPL__SCHEDULE_AUTO_TUNE, 1000, 2, d, NULL);
    EXPECT(hpl__schedule_measured(&s) && hpl__schedule_speed(&s, 1) == 6, "priors: measured from the start");
    uint64_t first, c;
    hpl__schedule_take(&s, 1, &first, &c);
    EXPECT(c == 1000 * 6 / (2 * 2 * 8), "priors size the first package: %llu", ULL(c));
    d[1].speed = -1;
    hpl__schedule_init(&s, HPL__SCHEDULE_AUTO_TUNE, 1000, 3, d, NULL);
    EXPECT(!hpl__schedule_measured(&s) && hpl__schedule_speed(&s, 1) == 0 && hpl__schedule_speed(&s, 2) == 0,
           "negative and NaN priors are unknown");
    EXPECT(hpl__schedule_settle(&s) == -1, "no tail_guard: settle does nothing");
}

int main(void)
{
    check_min_package();
    check_guard();
    check_init();
    check_times();
    check_extremes();
    int count = (int)(sizeof scenarios / sizeof scenarios[0]);
    for (int i = 0; i < count; i++) {
        for (uint64_t total = 0; total <= 1500; total++)
            run_scenario(i, total);
        static const uint64_t big[] = {2048, 4099, 10007, 100000};
        for (size_t b = 0; b < sizeof big / sizeof big[0]; b++)
            run_scenario(i, big[b]);
    }
    check_recovery();
    /* Information: makespan over ideal, its bound, packages, at two totals. */
    printf("%-30s | %-22s | %-22s\n", "scheme speeds (true, nominal)", "total 1000: T/ideal", "total 100000: T/ideal");
    printf("%-30s | %6s %7s %7s | %6s %7s %7s\n", "", "T", "bound", "pkgs", "T", "bound", "pkgs");
    for (int i = 0; i < count; i++) {
        outcome a = run_scenario(i, 1000), b = run_scenario(i, 100000);
        printf("%-30s | %6.3f %7.3f %7llu | %6.3f %7.3f %7llu\n", scenarios[i].name, a.t_ideal, a.bound,
               ULL(a.packages), b.t_ideal, b.bound, ULL(b.packages));
    }
    printf("unit_schedule: %ld checks, %ld failed\n", checks, failures);
    return failures != 0;
}
