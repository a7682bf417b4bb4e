/* Simulated ranks: what one rank's bookkeeping of a context over R ranks
 * (lib/base/rank_state.c, as lib/api/span.c drives it) costs per eval, at
 * R = 4 .. 1024, pure logic (no MPI, no Vulkan: the other ranks are only
 * their entries in the replicated state). Issue 40. Prints numbers; checks
 * only that both paths keep the same state and plan the same moves (exit 1
 * if not), so that a ctest run at small sizes keeps it from rotting.
 *
 * The eval: a 2-D float array of 1024 columns and R * 64 rows, split in
 * row blocks over R devices, one per rank (hpl__partition, overlap 1:
 * lib/api/launch.c's hpl__part_view), each device reading its block with
 * one halo row above and below and writing its block (Jacobi-like). Per
 * eval, rank R/2 does what span.c's span_eval does on every rank:
 *   need     every rank's read and written regions from the split over all
 *            devices (span.c computes the split of all devices on each rank)
 *   plan     old: hpl__rank_state_plan (every rank's moves); new:
 *            hpl__rank_state_plan_for(R/2) (its own)
 *   state    old: hpl__rank_state_moved(full plan); new:
 *            hpl__rank_state_fulfilled(need)
 *   writes   old: hpl__rank_state_wrote for each rank; new:
 *            hpl__rank_state_wrote_all
 * Steady state: a few evals of warm-up, then evals until 0.2 s (at least
 * 5); ns per eval, and host allocations per eval (counted through
 * lib/base/util.c's fault hook, set high enough never to refuse).
 *
 * The plans' shared measurements (execution plans over ranks): per plan
 * step every rank receives R device times (an allgather of R doubles) and
 * computes the next distribution over R devices. lib/base/balance.c and
 * hpl__partition_cuts take at most 16 devices (fixed arrays), so this
 * models their arithmetic at R: ADAPTIVE's shares proportional to the
 * measured speeds, then cuts by largest remainder as hpl__partition_cuts
 * does (the units left one each to the largest remainder, a scan each).
 *
 * Run: cmake --build build --target bench_rank_scale &&
 *      build/samples/bench/probes/bench_rank_scale [R ...] (default 4 16 64 256 1024)
 * BENCH_RANK_SCALE_SECONDS sets the time per measurement (default 0.2). */
#include "partition.h"
#include "rank_state.h"

#include "common.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS 1024
#define ROWS_PER_RANK 64

enum { PH_NEED, PH_PLAN, PH_STATE, PH_WRITES, PHASES };

typedef struct sim {
    int R, me;
    hpl__box whole;
    hpl__part *parts;
    hpl__region *need, *written;
    const hpl__region **needp, **writtenp;
    hpl__rank_state state;
    hpl__rank_moves moves;
} sim;

static volatile uint64_t sink;

static bool sim_init(sim *s, int R)
{
    memset(s, 0, sizeof *s);
    s->R = R;
    s->me = R / 2;
    s->whole = box2(0, COLS, 0, (uint64_t)R * ROWS_PER_RANK);
    s->parts = calloc((size_t)R, sizeof *s->parts);
    s->need = calloc((size_t)R, sizeof *s->need);
    s->written = calloc((size_t)R, sizeof *s->written);
    s->needp = calloc((size_t)R, sizeof *s->needp);
    s->writtenp = calloc((size_t)R, sizeof *s->writtenp);
    if (!s->parts || !s->need || !s->written || !s->needp || !s->writtenp)
        return false;
    for (int r = 0; r < R; r++) {
        hpl__region_init(&s->need[r]);
        hpl__region_init(&s->written[r]);
        s->needp[r] = &s->need[r];
        s->writtenp[r] = &s->written[r];
    }
    return hpl__rank_state_init(&s->state, R, &s->whole, true);
}

static void sim_free(sim *s)
{
    for (int r = 0; s->need && r < s->R; r++) {
        hpl__region_free(&s->need[r]);
        hpl__region_free(&s->written[r]);
    }
    free(s->parts);
    free(s->need);
    free(s->written);
    free(s->needp);
    free(s->writtenp);
    hpl__rank_state_free(&s->state);
    hpl__rank_moves_free(&s->moves);
}

/* What span_eval builds on every rank: the split over all devices (one per
 * rank), each rank's read (block and halo rows) and written (block). */
static void build_needs(sim *s)
{
    uint64_t n = s->whole.hi[1];
    int made = hpl__partition(n, s->R, 1, s->parts);
    for (int r = 0; r < s->R; r++) {
        hpl__region_clear(&s->need[r]);
        hpl__region_clear(&s->written[r]);
    }
    for (int j = 0; j < made; j++) {
        hpl__box owned, halo;
        hpl__part_boxes(&s->whole, 1, s->parts[j].lo, s->parts[j].hi, 1, &owned, &halo);
        hpl__region_add_box(&s->need[j], &halo);
        hpl__region_add_box(&s->written[j], &owned);
    }
}

/* One eval's bookkeeping on rank me; adds each phase's ns to t. */
static bool eval_step(sim *s, bool new_path, uint64_t t[PHASES])
{
    uint64_t t0 = hpl__now_ns();
    build_needs(s);
    uint64_t t1 = hpl__now_ns();
    bool ok = new_path ? hpl__rank_state_plan_for(&s->state, s->me, s->needp, &s->moves)
                       : hpl__rank_state_plan(&s->state, s->needp, &s->moves);
    uint64_t t2 = hpl__now_ns();
    ok = ok && (new_path ? hpl__rank_state_fulfilled(&s->state, s->needp) : hpl__rank_state_moved(&s->state, &s->moves));
    uint64_t t3 = hpl__now_ns();
    if (new_path) {
        ok = ok && hpl__rank_state_wrote_all(&s->state, s->writtenp);
    } else {
        for (int r = 0; ok && r < s->R; r++)
            if (!hpl__region_empty(&s->written[r]))
                ok = hpl__rank_state_wrote(&s->state, r, &s->written[r]);
    }
    uint64_t t4 = hpl__now_ns();
    t[PH_NEED] += t1 - t0;
    t[PH_PLAN] += t2 - t1;
    t[PH_STATE] += t3 - t2;
    t[PH_WRITES] += t4 - t3;
    sink += (uint64_t)s->moves.count;
    return ok;
}

typedef struct result {
    double ns[PHASES], total, allocs;
    int evals, moves_me;
} result;

static bool measure(sim *s, bool new_path, double seconds, result *out)
{
    uint64_t t[PHASES] = {0};
    for (int k = 0; k < 3; k++) /* warm-up: reach the steady state, size the scratch */
        if (!eval_step(s, new_path, t))
            return false;
    memset(t, 0, sizeof t);
    const int big = 1 << 30;
    __atomic_store_n(&hpl__fault_host_alloc, big, __ATOMIC_RELAXED);
    uint64_t start = hpl__now_ns(), budget = (uint64_t)(seconds * 1e9);
    int evals = 0;
    bool ok = true;
    while (ok && (evals < 5 || hpl__now_ns() - start < budget))
        ok = eval_step(s, new_path, t), evals++;
    int left = __atomic_load_n(&hpl__fault_host_alloc, __ATOMIC_RELAXED);
    __atomic_store_n(&hpl__fault_host_alloc, -1, __ATOMIC_RELAXED);
    memset(out, 0, sizeof *out);
    out->evals = evals;
    out->allocs = (double)(big - left) / evals;
    for (int p = 0; p < PHASES; p++) {
        out->ns[p] = (double)t[p] / evals;
        out->total += out->ns[p];
    }
    for (int i = 0; i < s->moves.count; i++)
        out->moves_me += s->moves.moves[i].src == s->me || s->moves.moves[i].dst == s->me;
    return ok;
}

/* Both paths agree: the same state after the same evals, and plan_for's
 * moves the full plan's moves of rank me. */
static bool consistent(sim *old_s, sim *new_s)
{
    bool ok = true;
    for (int r = 0; r < old_s->R; r++)
        ok = ok && hpl__region_equal(&old_s->state.valid[r], &new_s->state.valid[r]);
    build_needs(old_s);
    hpl__rank_moves full = {0}, mine = {0};
    ok = ok && hpl__rank_state_plan(&old_s->state, old_s->needp, &full) &&
         hpl__rank_state_plan_for(&old_s->state, old_s->me, old_s->needp, &mine);
    int j = 0;
    for (int i = 0; ok && i < full.count; i++) {
        const hpl__rank_move *f = &full.moves[i];
        if (f->src != old_s->me && f->dst != old_s->me)
            continue;
        ok = j < mine.count && mine.moves[j].src == f->src && mine.moves[j].dst == f->dst &&
             hpl__box_equal(&mine.moves[j].box, &f->box);
        j++;
    }
    ok = ok && j == mine.count && mine.count > 0;
    hpl__rank_moves_free(&full);
    hpl__rank_moves_free(&mine);
    return ok;
}

/* The shares step over R devices (see the header): ns per step. */
static double shares_step(int R, double seconds)
{
    double *times = malloc((size_t)R * sizeof *times), *shares = malloc((size_t)R * sizeof *shares),
           *rest = malloc((size_t)R * sizeof *rest);
    uint64_t *got = malloc((size_t)R * sizeof *got), *cuts = malloc(((size_t)R + 1) * sizeof *cuts);
    if (!times || !shares || !rest || !got || !cuts)
        return -1;
    uint64_t n = (uint64_t)R * ROWS_PER_RANK, granule = 16;
    for (int i = 0; i < R; i++)
        shares[i] = 1.0 / R;
    uint64_t start = hpl__now_ns(), budget = (uint64_t)(seconds * 1e9);
    long steps = 0;
    while (steps < 100 || hpl__now_ns() - start < budget) {
        /* The times received: a device's time grows with its share, at a
         * speed that varies across devices. */
        for (int i = 0; i < R; i++)
            times[i] = shares[i] * (1.0 + 0.25 * (double)(i % 7)) + 1e-6 * (double)(steps % 3);
        double total = 0;
        for (int i = 0; i < R; i++) {
            shares[i] = times[i] > 0 ? shares[i] / times[i] : 0; /* speed */
            total += shares[i];
        }
        uint64_t units = n / granule + (n % granule != 0), given = 0;
        for (int i = 0; i < R; i++) {
            shares[i] /= total;
            double exact = shares[i] * (double)units;
            got[i] = (uint64_t)exact;
            got[i] = got[i] > units - given ? units - given : got[i];
            rest[i] = exact - (double)got[i];
            given += got[i];
        }
        while (given < units) {
            int best = 0;
            for (int i = 1; i < R; i++)
                if (rest[i] > rest[best])
                    best = i;
            got[best]++;
            rest[best] = -1.0;
            given++;
        }
        uint64_t end = 0;
        cuts[0] = 0;
        for (int i = 0; i < R; i++) {
            end += got[i];
            cuts[i + 1] = end >= units ? n : end * granule;
        }
        sink += cuts[R / 2];
        steps++;
    }
    double ns = (double)(hpl__now_ns() - start) / (double)steps;
    free(times);
    free(shares);
    free(rest);
    free(got);
    free(cuts);
    return ns;
}

int main(int argc, char **argv)
{
    static const int defaults[] = {4, 16, 64, 256, 1024};
    int counts[32], nc = 0;
    for (int i = 1; i < argc && nc < 32; i++)
        if (atoi(argv[i]) >= 2 && atoi(argv[i]) <= HPL__RANK_STATE_MAX_RANKS)
            counts[nc++] = atoi(argv[i]);
    for (int i = 0; nc == 0 && i < (int)HPL__ARRAY_LEN(defaults); i++)
        counts[i] = defaults[i], nc = i + 1;
    const char *sec = getenv("BENCH_RANK_SCALE_SECONDS");
    double seconds = sec && atof(sec) > 0 ? atof(sec) : 0.2;

    printf("bench_rank_scale: %d columns x R*%d rows of float, row blocks, halo 1; rank R/2's bookkeeping per "
           "eval\n",
           COLS, ROWS_PER_RANK);
    printf("%6s %5s | %9s %9s %9s %9s %10s %7s | %9s %9s %9s %9s %10s %7s | %6s | %9s %8s\n", "R", "moves", "need",
           "plan", "state", "writes", "old ns", "allocs", "need", "plan_for", "fulfill", "wrote_all", "new ns",
           "allocs", "old/new", "shares ns", "KiB/arr");
    int failed = 0;
    for (int i = 0; i < nc; i++) {
        int R = counts[i];
        sim o, n;
        result ro, rn;
        bool ok = sim_init(&o, R) && sim_init(&n, R) && measure(&o, false, seconds, &ro) &&
                  measure(&n, true, seconds, &rn);
        /* The same number of evals after the warm-up is not needed: the
         * steady state is the same after each eval. */
        ok = ok && consistent(&o, &n);
        double sh = shares_step(R, seconds / 4);
        size_t bytes = (size_t)R * (2 * sizeof(hpl__region) + sizeof(hpl__box) + 2 * sizeof(int));
        if (!ok) {
            printf("%6d: FAILED (out of memory, or the two paths disagree)\n", R);
            failed = 1;
        } else {
            printf("%6d %5d | %9.0f %9.0f %9.0f %9.0f %10.0f %7.1f | %9.0f %9.0f %9.0f %9.0f %10.0f %7.1f | %6.1f | "
                   "%9.0f %8.1f\n",
                   R, rn.moves_me, ro.ns[PH_NEED], ro.ns[PH_PLAN], ro.ns[PH_STATE], ro.ns[PH_WRITES], ro.total,
                   ro.allocs, rn.ns[PH_NEED], rn.ns[PH_PLAN], rn.ns[PH_STATE], rn.ns[PH_WRITES], rn.total, rn.allocs,
                   ro.total / rn.total, sh, (double)bytes / 1024.0);
        }
        fflush(stdout);
        sim_free(&o);
        sim_free(&n);
    }
    return failed;
}
