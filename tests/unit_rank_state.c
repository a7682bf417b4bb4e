/* Unit test of lib/base/rank_state.c against a brute-force element-wise
 * model: a table valid[rank][element].
 *
 * 1. Deterministic cases: ranks out of range, a state valid nowhere, two
 *    ranks swapping halves, the cyclic source order over three ranks, data
 *    held nowhere, first_holder's shares, a plan reusing a moves array.
 * 2. Randomised sequences on small 1-D, 2-D and 3-D index spaces (at most
 *    6x5x3 elements), 1 to 5 ranks (and 16), of random operations: plan
 *    (with random needs, some NULL) then, mostly, moved; wrote; wrote
 *    everywhere; discard; first_holder of every rank. After every
 *    operation each rank's region is compared with the model (point set,
 *    boxes non-empty, disjoint and inside the whole; ranks past `ranks`
 *    empty). A plan is checked element by element: its moves cover exactly,
 *    for each rank with a need, the elements it needs, lacks and some other
 *    rank holds; no element moves twice to the same rank or to a rank that
 *    holds it; each comes from the first rank after dst (cyclically) that
 *    holds it; moves are in order of dst, then of the source's distance
 *    after dst; `elements` is their volume; the state is not changed.
 *    first_holder's regions over all ranks partition the part of `within`
 *    held anywhere, each element in the share of the lowest rank holding
 *    it (out aliasing within too).
 *    plan_for of every rank is the full plan's moves from or to it, in
 *    order, box for box; fulfilled (in place of moved after a plan) gives
 *    the model's moved; wrote_all (written regions disjoint, or any) gives
 *    the model's wrote of each rank in order. Up to MAXR (40) ranks.
 * 3. Out of memory: init, then, on random fragmented states (regions of many boxes, on
 *    the heap), each operation is run with the host allocation n refused
 *    (lib/base/util.c: hpl__fault_host_alloc), n = 0, 1, ... until it
 *    succeeds: every refused run returns false and leaves the state (and
 *    first_holder's out) unchanged, a plan's moves empty; the run that
 *    succeeds gives the model's result. Leaks: the ASan build.
 *
 * Seed: argv[1] or UNIT_RANK_STATE_SEED, else taken from the clock; printed
 * first and with every failure (with the sequence and step). Returns
 * non-zero if any check failed. */
#include "rank_state.h"

#include "common.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Checking ------------------------------------------------------------- */

static unsigned long checks, failures;
static char context[256]; /* what is being tested, printed with failures */
static uint64_t seed;

#define CHECK(cond, what)                                                                     \
    do {                                                                                      \
        checks++;                                                                             \
        if (!(cond)) {                                                                        \
            failures++;                                                                       \
            if (failures <= 30)                                                               \
                fprintf(stderr, "FAIL %s:%d [seed %" PRIu64 " %s] %s: %s\n", __FILE__, __LINE__, \
                        seed, context, what, #cond);                                          \
        }                                                                                     \
    } while (0)

/* ---- The model ------------------------------------------------------------ */

#define MAXE 128 /* elements of the largest grid: 6x5x3 = 90 */
#define MAXR 40  /* ranks of the largest state tested (past HPL__MAX_RANKS) */

typedef struct grid {
    int ndims;
    uint64_t n[3]; /* 1 in unused dimensions */
} grid;

typedef uint8_t mask[MAXE]; /* 1: the element is in the set */

static int cells(const grid *g)
{
    return (int)(g->n[0] * g->n[1] * g->n[2]);
}

static hpl__box whole_of(const grid *g)
{
    return box3(0, g->n[0], 0, g->n[1], 0, g->n[2]);
}

/* Adds (value 1) or removes (0) the elements of b inside the grid. */
static void mask_box(const grid *g, mask m, const hpl__box *b, uint8_t value)
{
    for (uint64_t z = b->lo[2]; z < b->hi[2] && z < g->n[2]; z++)
        for (uint64_t y = b->lo[1]; y < b->hi[1] && y < g->n[1]; y++)
            for (uint64_t x = b->lo[0]; x < b->hi[0] && x < g->n[0]; x++)
                m[x + g->n[0] * (y + g->n[1] * z)] = value;
}

/* The elements of r into m; false (and a failed check) unless r's boxes are
 * non-empty, disjoint and inside the grid. */
static bool region_mask(const grid *g, const hpl__region *r, mask m, const char *what)
{
    memset(m, 0, sizeof(mask));
    bool ok = true;
    for (uint32_t k = 0; k < r->count; k++) {
        const hpl__box *b = &r->boxes[k];
        bool inside = !hpl__box_empty(b);
        for (int d = 0; d < 3; d++)
            inside = inside && b->hi[d] <= g->n[d];
        CHECK(inside, what);
        ok = ok && inside;
        for (uint64_t z = b->lo[2]; z < b->hi[2] && z < g->n[2]; z++)
            for (uint64_t y = b->lo[1]; y < b->hi[1] && y < g->n[1]; y++)
                for (uint64_t x = b->lo[0]; x < b->hi[0] && x < g->n[0]; x++) {
                    uint8_t *e = &m[x + g->n[0] * (y + g->n[1] * z)];
                    CHECK(!*e, what);
                    ok = ok && !*e;
                    *e = 1;
                }
    }
    return ok;
}

static bool region_is(const grid *g, const hpl__region *r, const mask want, const char *what)
{
    mask got;
    bool ok = region_mask(g, r, got, what);
    ok = ok && memcmp(got, want, (size_t)cells(g)) == 0;
    CHECK(ok, what);
    return ok;
}

/* A random box of the grid; about one in eight may be empty. */
static hpl__box random_box(const grid *g)
{
    uint64_t lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    bool allow_empty = rng_below(8) == 0;
    for (int d = 0; d < g->ndims; d++) {
        uint64_t a = rng_below(g->n[d] + 1), b = rng_below(g->n[d] + 1);
        if (!allow_empty) {
            if (a > b) {
                uint64_t t = a;
                a = b;
                b = t;
            }
            if (a == b && a == g->n[d])
                a--;
            else if (a == b)
                b++;
        }
        lo[d] = a;
        hi[d] = b;
    }
    return box3(lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]);
}

/* A random region and its mask: the union of a few boxes minus a few, or
 * (fragmented) many single elements, which take more boxes than fit
 * inline. */
static void random_region(const grid *g, bool fragmented, hpl__region *r, mask m)
{
    hpl__region_clear(r);
    memset(m, 0, sizeof(mask));
    if (fragmented) {
        int n = 3 + (int)rng_below((uint64_t)cells(g));
        for (int k = 0; k < n; k++) {
            uint64_t x = rng_below(g->n[0]), y = rng_below(g->n[1]), z = rng_below(g->n[2]);
            hpl__box b = box3(x, x + 1, y, y + 1, z, z + 1);
            CHECK(hpl__region_add_box(r, &b), "building a region");
            mask_box(g, m, &b, 1);
        }
        return;
    }
    int adds = (int)rng_below(4), subs = (int)rng_below(3);
    for (int k = 0; k < adds; k++) {
        hpl__box b = random_box(g);
        CHECK(hpl__region_add_box(r, &b), "building a region");
        mask_box(g, m, &b, 1);
    }
    for (int k = 0; k < subs; k++) {
        hpl__box b = random_box(g);
        CHECK(hpl__region_subtract_box(r, &b), "building a region");
        mask_box(g, m, &b, 0);
    }
}

/* The state under test beside its model. */
typedef struct world {
    grid g;
    int ranks;
    hpl__rank_state s;
    mask valid[MAXR];
} world;

/* Every rank's region against the model. */
static bool check_world(world *w, const char *what)
{
    hpl__box whole = whole_of(&w->g);
    bool ok = w->s.ranks == w->ranks && hpl__box_equal(&w->s.whole, &whole);
    CHECK(ok, "ranks and whole kept");
    for (int r = 0; r < w->ranks; r++)
        ok = region_is(&w->g, &w->s.valid[r], w->valid[r], what) && ok;
    return ok;
}

static void world_init(world *w, const grid *g, int ranks, bool everywhere)
{
    memset(w, 0, sizeof *w);
    w->g = *g;
    w->ranks = ranks;
    hpl__box whole = whole_of(g);
    CHECK(hpl__rank_state_init(&w->s, ranks, &whole, everywhere), "init");
    for (int r = 0; r < ranks; r++)
        memset(w->valid[r], everywhere, (size_t)cells(g));
    check_world(w, "after init");
}

/* Whether some rank holds element e in the model. */
static bool holders(const world *w, int e)
{
    for (int r = 0; r < w->ranks; r++)
        if (w->valid[r][e])
            return true;
    return false;
}

/* ---- Operations, each checked against the model --------------------------- */

/* A plan for `need` (need[r] NULL: none; want[r] its mask) checked element
 * by element; the model is not changed. */
static bool check_plan(const world *w, const hpl__region *const *need, const mask *want, const hpl__rank_moves *m)
{
    int n = cells(&w->g), ranks = w->ranks;
    static uint8_t got[MAXR][MAXE]; /* source + 1 of each element moved to each rank */
    memset(got, 0, sizeof got);
    bool ok = m->count >= 0 && (m->count == 0 || m->moves != NULL);
    uint64_t volume = 0;
    int last_dst = -1, last_dist = 0;
    for (int i = 0; ok && i < m->count; i++) {
        const hpl__rank_move *mv = &m->moves[i];
        bool sane = mv->src >= 0 && mv->src < ranks && mv->dst >= 0 && mv->dst < ranks && mv->src != mv->dst &&
                    !hpl__box_empty(&mv->box) && need[mv->dst] != NULL;
        CHECK(sane, "a move between two ranks, of a non-empty box, to a rank with a need");
        if (!sane) {
            ok = false;
            break;
        }
        int dist = (mv->src - mv->dst + ranks) % ranks;
        bool ordered = mv->dst > last_dst || (mv->dst == last_dst && dist >= last_dist);
        CHECK(ordered, "moves in order of dst, then of the source's distance after dst");
        ok = ok && ordered;
        last_dst = mv->dst;
        last_dist = dist;
        volume += hpl__box_volume(&mv->box);
        mask b;
        memset(b, 0, sizeof b);
        bool inside = true;
        for (int d = 0; d < 3; d++)
            inside = inside && mv->box.hi[d] <= w->g.n[d];
        CHECK(inside, "a move inside the whole");
        ok = ok && inside;
        mask_box(&w->g, b, &mv->box, 1);
        for (int e = 0; e < n; e++) {
            if (!b[e])
                continue;
            bool fresh = !got[mv->dst][e], lacks = !w->valid[mv->dst][e], has = w->valid[mv->src][e];
            CHECK(fresh, "no element moves twice to the same rank");
            CHECK(lacks, "no element moves to a rank that holds it");
            CHECK(has, "an element moves from a rank that holds it");
            CHECK(want[mv->dst][e], "an element moves to a rank that needs it");
            ok = ok && fresh && lacks && has && want[mv->dst][e];
            got[mv->dst][e] = (uint8_t)(mv->src + 1);
        }
    }
    CHECK(volume == m->elements, "elements: the moves' volume");
    ok = ok && volume == m->elements;
    /* Exactly what each rank needs, lacks and another holds, from the first
     * holder after it. */
    for (int r = 0; ok && r < ranks; r++)
        for (int e = 0; e < n; e++) {
            int first = -1;
            for (int k = 1; k < ranks && first < 0; k++)
                if (w->valid[(r + k) % ranks][e])
                    first = (r + k) % ranks;
            bool should = need[r] && want[r][e] && !w->valid[r][e] && first >= 0;
            bool right = should ? got[r][e] == first + 1 : got[r][e] == 0;
            CHECK(right, should ? "a missing element moves, from the first holder after dst"
                                : "nothing moves but what is missing and held");
            ok = ok && right;
        }
    return ok;
}

/* need for each rank: NULL about one time in four. */
static void random_needs(world *w, hpl__region *regions, mask *want, const hpl__region **need, bool fragmented)
{
    for (int r = 0; r < w->ranks; r++) {
        random_region(&w->g, fragmented, &regions[r], want[r]);
        if (rng_below(4) == 0) {
            need[r] = NULL;
            memset(want[r], 0, sizeof(mask));
        } else {
            need[r] = &regions[r];
        }
    }
}

static void model_moved(world *w, const hpl__region *const *need, const mask *want)
{
    for (int r = 0; r < w->ranks; r++)
        for (int e = 0; e < cells(&w->g); e++)
            if (need[r] && want[r][e] && holders(w, e))
                w->valid[r][e] = 1;
}

static void model_wrote(world *w, int r, const mask m)
{
    for (int e = 0; e < cells(&w->g); e++)
        if (m[e])
            for (int q = 0; q < w->ranks; q++)
                w->valid[q][e] = q == r;
}

static void model_everywhere(world *w, const mask m, uint8_t value)
{
    for (int e = 0; e < cells(&w->g); e++)
        if (m[e])
            for (int q = 0; q < w->ranks; q++)
                w->valid[q][e] = value;
}

/* first_holder of every rank for `within`: each against the model, and
 * together a partition of what of within is held anywhere. */
static void check_first_holders(world *w, const hpl__region *within, const mask in)
{
    int n = cells(&w->g);
    uint8_t count[MAXE] = {0};
    hpl__region out = {0}, alias = {0};
    for (int r = 0; r < w->ranks; r++) {
        bool aliased = rng_below(4) == 0;
        hpl__region *o = &out;
        if (aliased) { /* out == within */
            CHECK(hpl__region_copy(&alias, within), "copy");
            o = &alias;
        } else if (rng_below(2)) { /* out not empty before */
            hpl__box b = random_box(&w->g);
            hpl__region_set_box(&out, &b);
        }
        bool ok = aliased ? hpl__rank_state_first_holder(&w->s, r, o, o)
                          : hpl__rank_state_first_holder(&w->s, r, within, o);
        CHECK(ok, "first_holder returns true");
        mask want, got;
        for (int e = 0; e < n; e++) {
            bool before = false;
            for (int q = 0; q < r; q++)
                before = before || w->valid[q][e];
            want[e] = in[e] && w->valid[r][e] && !before;
        }
        region_is(&w->g, o, want, "first_holder: within & valid[r] - valid[q < r]");
        region_mask(&w->g, o, got, "first_holder");
        for (int e = 0; e < n; e++)
            count[e] = (uint8_t)(count[e] + got[e]);
    }
    bool partition = true;
    for (int e = 0; e < n; e++)
        partition = partition && count[e] == (in[e] && holders(w, e) ? 1 : 0);
    CHECK(partition, "the shares partition what of within is held, each element once");
    hpl__region_free(&out);
    hpl__region_free(&alias);
}

/* ---- 1. Deterministic cases ----------------------------------------------- */

/* r = [lo, hi) of a 1-D array (r's storage is inline: no return by value). */
static void span1(hpl__region *r, uint64_t lo, uint64_t hi)
{
    hpl__region_init(r);
    hpl__box b = box1(lo, hi);
    hpl__region_set_box(r, &b);
}

static bool move_is(const hpl__rank_move *m, int src, int dst, uint64_t lo, uint64_t hi)
{
    hpl__box b = box1(lo, hi);
    return m->src == src && m->dst == dst && hpl__box_equal(&m->box, &b);
}

static void test_cases(void)
{
    hpl__rank_state s;
    hpl__rank_moves m = {0};
    hpl__box whole = box1(0, 10);

    snprintf(context, sizeof context, "ranks out of range");
    CHECK(!hpl__rank_state_init(&s, 0, &whole, true), "0 ranks refused");
    CHECK(!hpl__rank_state_init(&s, HPL__RANK_STATE_MAX_RANKS + 1, &whole, true), "too many ranks refused");
    CHECK(s.ranks == 0 && s.valid == NULL, "a refused init leaves s zeroed");
    CHECK(hpl__rank_state_init(&s, HPL__MAX_RANKS, &whole, true), "HPL__MAX_RANKS ranks");
    hpl__rank_state_free(&s);
    CHECK(hpl__rank_state_init(&s, 1000, &whole, true) && hpl__region_equal(&s.valid[999], &s.valid[0]),
          "1000 ranks, each holding the whole");
    hpl__rank_state_free(&s);

    snprintf(context, sizeof context, "valid nowhere");
    hpl__region all, lo, hi, mid, out = {0};
    span1(&all, 0, 10);
    span1(&lo, 0, 5);
    span1(&hi, 5, 10);
    span1(&mid, 4, 6);
    CHECK(hpl__rank_state_init(&s, 3, &whole, false), "init");
    const hpl__region *need_all[3] = {&all, &all, &all};
    CHECK(hpl__rank_state_plan(&s, need_all, &m) && m.count == 0 && m.elements == 0, "nothing to move");
    CHECK(hpl__rank_state_first_holder(&s, 0, &all, &out) && hpl__region_empty(&out), "no share");
    hpl__rank_state_free(&s);

    snprintf(context, sizeof context, "two ranks swap halves");
    CHECK(hpl__rank_state_init(&s, 2, &whole, true), "init");
    CHECK(hpl__rank_state_wrote(&s, 0, &lo) && hpl__rank_state_wrote(&s, 1, &hi), "wrote");
    CHECK(hpl__region_equal(&s.valid[0], &lo) && hpl__region_equal(&s.valid[1], &hi), "each holds its half");
    const hpl__region *need2[2] = {&all, &all};
    CHECK(hpl__rank_state_plan(&s, need2, &m), "plan");
    CHECK(m.count == 2 && m.elements == 10 && move_is(&m.moves[0], 1, 0, 5, 10) && move_is(&m.moves[1], 0, 1, 0, 5),
          "1 -> 0 [5,10), then 0 -> 1 [0,5)");
    CHECK(hpl__region_equal(&s.valid[0], &lo), "plan changes nothing");
    CHECK(hpl__rank_state_moved(&s, &m), "moved");
    CHECK(hpl__region_equal(&s.valid[0], &all) && hpl__region_equal(&s.valid[1], &all), "both hold all");
    CHECK(hpl__rank_state_plan(&s, need2, &m) && m.count == 0 && m.elements == 0, "a plan that reuses moves");
    CHECK(m.capacity > 0, "its array kept");
    hpl__rank_state_free(&s);

    snprintf(context, sizeof context, "cyclic order over three ranks");
    hpl__region r06, r410, tail;
    span1(&r06, 0, 6);
    span1(&r410, 4, 10);
    CHECK(hpl__rank_state_init(&s, 3, &whole, false), "init");
    CHECK(hpl__rank_state_wrote(&s, 0, &r06) && hpl__rank_state_wrote_everywhere(&s, &mid), "writes");
    span1(&tail, 6, 10);
    CHECK(hpl__rank_state_wrote(&s, 1, &tail), "wrote");
    CHECK(hpl__region_equal(&s.valid[1], &r410) && hpl__region_equal(&s.valid[0], &r06), "0: [0,6), 1: [4,10)");
    const hpl__region *need3[3] = {NULL, &lo, &all};
    CHECK(hpl__rank_state_plan(&s, need3, &m), "plan");
    /* rank 1 lacks [0,4): 2 holds [4,6) only, 0 gives [0,4); rank 2 lacks
     * [0,4) and [6,10): 0 first ([0,4)), then 1 ([6,10)). */
    CHECK(m.count == 3 && move_is(&m.moves[0], 0, 1, 0, 4) && move_is(&m.moves[1], 0, 2, 0, 4) &&
              move_is(&m.moves[2], 1, 2, 6, 10) && m.elements == 12,
          "0 -> 1 [0,4), 0 -> 2 [0,4), 1 -> 2 [6,10)");
    CHECK(hpl__rank_state_first_holder(&s, 1, &all, &out) && hpl__region_equal(&out, &tail), "1's share: [6,10)");
    CHECK(hpl__rank_state_first_holder(&s, 2, &all, &out) && hpl__region_empty(&out), "2's share: none");
    CHECK(hpl__rank_state_first_holder(&s, 0, &all, &out) && hpl__region_equal(&out, &r06), "0's share: [0,6)");

    snprintf(context, sizeof context, "held nowhere");
    CHECK(hpl__rank_state_discard(&s, &lo), "discard");
    hpl__region r56, r510;
    span1(&r56, 5, 6);
    span1(&r510, 5, 10);
    CHECK(hpl__region_equal(&s.valid[0], &r56) && hpl__region_equal(&s.valid[1], &r510) &&
              hpl__region_equal(&s.valid[2], &r56),
          "0: [5,6), 1: [5,10), 2: [5,6)");
    const hpl__region *need_lo[3] = {NULL, NULL, &lo};
    CHECK(hpl__rank_state_plan(&s, need_lo, &m) && m.count == 0 && m.elements == 0, "nothing exists to move");
    hpl__rank_state_free(&s);
    hpl__rank_moves_free(&m);
    CHECK(m.moves == NULL && m.count == 0 && m.capacity == 0, "moves freed");
    hpl__region_free(&all);
    hpl__region_free(&lo);
    hpl__region_free(&hi);
    hpl__region_free(&mid);
    hpl__region_free(&r06);
    hpl__region_free(&r410);
    hpl__region_free(&tail);
    hpl__region_free(&r56);
    hpl__region_free(&r510);
    hpl__region_free(&out);
}

/* ---- 2. Randomised sequences ---------------------------------------------- */

static const grid grids[] = {
    {1, {1, 1, 1}}, {1, {6, 1, 1}}, {1, {13, 1, 1}}, {2, {4, 4, 1}},
    {2, {6, 5, 1}}, {3, {3, 3, 3}}, {3, {6, 5, 3}},
};

typedef struct stats {
    unsigned long sequences, steps, plans, moves, max_moves;
} stats;

/* Reused across plans (cleared by each), freed at the end. */
static hpl__rank_moves random_moves, random_moves_for;

/* plan_for of every rank against `full`, the plan of the same needs: the
 * moves with src or dst == self, in order, the same boxes; their volume;
 * the state unchanged. */
static bool check_plan_for(world *w, const hpl__region *const *need, const hpl__rank_moves *full,
                           hpl__rank_moves *mine)
{
    bool ok = true;
    for (int self = 0; self < w->ranks && ok; self++) {
        bool done = hpl__rank_state_plan_for(&w->s, self, need, mine);
        CHECK(done, "plan_for returns true");
        ok = ok && done;
        int j = 0;
        uint64_t volume = 0;
        for (int i = 0; ok && i < full->count; i++) {
            const hpl__rank_move *f = &full->moves[i];
            if (f->src != self && f->dst != self)
                continue;
            bool same = j < mine->count && mine->moves[j].src == f->src && mine->moves[j].dst == f->dst &&
                        hpl__box_equal(&mine->moves[j].box, &f->box);
            CHECK(same, "plan_for: the full plan's moves of self, in order, the same boxes");
            ok = ok && same;
            volume += hpl__box_volume(&f->box);
            j++;
        }
        bool all = ok && j == mine->count && mine->elements == volume;
        CHECK(!ok || all, "plan_for: no other move; elements their volume");
        ok = ok && all;
    }
    return check_world(w, "plan_for changes nothing") && ok;
}

/* Random written regions, NULL about one time in four, some empty; when
 * disjoint, each less what the ranks before it wrote. */
static void random_written(world *w, hpl__region *regions, mask *masks, const hpl__region **written, bool fragmented,
                           bool disjoint)
{
    mask taken;
    memset(taken, 0, sizeof taken);
    for (int r = 0; r < w->ranks; r++) {
        random_region(&w->g, fragmented, &regions[r], masks[r]);
        written[r] = rng_below(4) == 0 ? NULL : &regions[r];
        if (!written[r]) {
            memset(masks[r], 0, sizeof(mask));
            continue;
        }
        if (!disjoint)
            continue;
        for (int e = 0; e < cells(&w->g); e++) { /* remove the elements taken, one box each */
            if (!taken[e] || !masks[r][e])
                continue;
            uint64_t x = (uint64_t)e % w->g.n[0], y = (uint64_t)e / w->g.n[0] % w->g.n[1],
                     z = (uint64_t)e / (w->g.n[0] * w->g.n[1]);
            hpl__box b = box3(x, x + 1, y, y + 1, z, z + 1);
            CHECK(hpl__region_subtract_box(&regions[r], &b), "building a region");
            masks[r][e] = 0;
        }
        for (int e = 0; e < cells(&w->g); e++)
            taken[e] |= masks[r][e];
    }
}

static void model_wrote_all(world *w, const hpl__region *const *written, const mask *masks)
{
    for (int r = 0; r < w->ranks; r++)
        if (written[r])
            model_wrote(w, r, masks[r]);
}

/* One random operation on w, checked; false once a check failed. */
static bool random_step(world *w, bool fragmented, stats *st)
{
    static hpl__region regions[MAXR];
    hpl__region region = {0};
    static mask want[MAXR];
    mask m;
    const hpl__region *need[MAXR];
    hpl__rank_moves *moves = &random_moves;
    int op = (int)rng_below(12);
    size_t len = strlen(context);
    bool ok = true;
    for (int r = 0; r < MAXR; r++)
        hpl__region_init(&regions[r]);
    if (op < 4) {
        random_needs(w, regions, want, need, fragmented);
        ok = hpl__rank_state_plan(&w->s, need, moves);
        CHECK(ok, "plan returns true");
        ok = ok && check_plan(w, need, (const mask *)want, moves);
        ok = check_world(w, "plan changes nothing") && ok;
        ok = ok && check_plan_for(w, need, moves, &random_moves_for);
        st->plans++;
        st->moves += (unsigned long)moves->count;
        st->max_moves = HPL__MAX(st->max_moves, (unsigned long)moves->count);
        int after = (int)rng_below(8);
        if (ok && after < 3) {
            snprintf(context + len, sizeof context - len, " plan+moved");
            CHECK(hpl__rank_state_moved(&w->s, moves), "moved returns true");
            model_moved(w, need, (const mask *)want);
        } else if (ok && after < 6) { /* the same change as moved, without the moves */
            snprintf(context + len, sizeof context - len, " plan+fulfilled");
            CHECK(hpl__rank_state_fulfilled(&w->s, need), "fulfilled returns true");
            model_moved(w, need, (const mask *)want);
        } else {
            snprintf(context + len, sizeof context - len, " plan");
        }
        if (rng_below(8) == 0)
            hpl__rank_moves_free(moves);
        if (rng_below(8) == 0)
            hpl__rank_moves_free(&random_moves_for);
    } else if (op < 6) {
        int r = (int)rng_below((uint64_t)w->ranks);
        random_region(&w->g, fragmented, &region, m);
        snprintf(context + len, sizeof context - len, " wrote(%d)", r);
        CHECK(hpl__rank_state_wrote(&w->s, r, &region), "wrote returns true");
        model_wrote(w, r, m);
    } else if (op < 7) {
        random_region(&w->g, fragmented, &region, m);
        snprintf(context + len, sizeof context - len, " wrote_everywhere");
        CHECK(hpl__rank_state_wrote_everywhere(&w->s, &region), "wrote_everywhere returns true");
        model_everywhere(w, m, 1);
    } else if (op < 8) {
        random_region(&w->g, fragmented, &region, m);
        snprintf(context + len, sizeof context - len, " discard");
        CHECK(hpl__rank_state_discard(&w->s, &region), "discard returns true");
        model_everywhere(w, m, 0);
    } else if (op < 9) {
        /* An operand that is a rank's own region. */
        int r = (int)rng_below((uint64_t)w->ranks), q = (int)rng_below((uint64_t)w->ranks);
        memcpy(m, w->valid[q], sizeof m);
        snprintf(context + len, sizeof context - len, " wrote(%d, valid[%d])", r, q);
        CHECK(hpl__rank_state_wrote(&w->s, r, &w->s.valid[q]), "wrote returns true");
        model_wrote(w, r, m);
    } else if (op < 10) {
        random_region(&w->g, fragmented, &region, m);
        snprintf(context + len, sizeof context - len, " first_holder");
        check_first_holders(w, &region, m);
    } else {
        bool disjoint = rng_below(3) != 0;
        random_written(w, regions, want, need, fragmented, disjoint);
        snprintf(context + len, sizeof context - len, " wrote_all(%s)", disjoint ? "disjoint" : "any");
        CHECK(hpl__rank_state_wrote_all(&w->s, need), "wrote_all returns true");
        model_wrote_all(w, need, (const mask *)want);
    }
    ok = check_world(w, "regions equal the model") && ok;
    if (rng_below(3) == 0) {
        random_region(&w->g, false, &region, m);
        check_first_holders(w, &region, m);
    }
    for (int r = 0; r < MAXR; r++)
        hpl__region_free(&regions[r]);
    hpl__region_free(&region);
    st->steps++;
    return ok;
}

static void test_random(int scale)
{
    enum { STEPS = 30 };
    static const int rank_counts[] = {1, 2, 3, 4, 5, HPL__MAX_RANKS, MAXR};
    stats total = {0};
    uint64_t t0 = hpl__now_ns();
    for (size_t gi = 0; gi < HPL__ARRAY_LEN(grids); gi++)
        for (size_t ri = 0; ri < HPL__ARRAY_LEN(rank_counts); ri++) {
            const grid *g = &grids[gi];
            int ranks = rank_counts[ri];
            int sequences = (ranks >= HPL__MAX_RANKS ? (ranks == MAXR ? 4 : 8) : 40) * scale;
            for (int q = 0; q < sequences; q++) {
                world *w = &(world){0};
                bool fragmented = rng_below(4) == 0;
                char base[128];
                snprintf(base, sizeof base, "%dD %" PRIu64 "x%" PRIu64 "x%" PRIu64 " ranks %d seq %lu", g->ndims,
                         g->n[0], g->n[1], g->n[2], ranks, total.sequences);
                snprintf(context, sizeof context, "%s", base);
                world_init(w, g, ranks, rng_below(2) == 0);
                for (int step = 0; step < STEPS; step++) {
                    snprintf(context, sizeof context, "%s step %d", base, step);
                    if (!random_step(w, fragmented, &total))
                        break; /* the rest would only repeat the failure */
                }
                hpl__rank_state_free(&w->s);
                total.sequences++;
            }
        }
    hpl__rank_moves_free(&random_moves);
    hpl__rank_moves_free(&random_moves_for);
    printf("random: %lu sequences of up to %d steps (%lu steps), %lu plans, %lu moves (at most %lu in one), %.2f s\n",
           total.sequences, STEPS, total.steps, total.plans, total.moves, total.max_moves,
           (double)(hpl__now_ns() - t0) * 1e-9);
}

/* ---- 3. Out of memory ----------------------------------------------------- */

static void arm(int n)
{
    __atomic_store_n(&hpl__fault_host_alloc, n, __ATOMIC_RELAXED);
}

static void disarm(void)
{
    __atomic_store_n(&hpl__fault_host_alloc, -1, __ATOMIC_RELAXED);
}

/* Runs op with the allocation n refused for n = 0, 1, ... until it
 * succeeds, checking after each refusal that nothing changed (check(w,
 * arg)); returns how many refusals it took. */
typedef bool (*op_fn)(world *w, void *arg);
typedef bool (*unchanged_fn)(world *w, void *arg);

static int sweep_op(world *w, op_fn op, unchanged_fn unchanged, void *arg)
{
    for (int n = 0; n < 100000; n++) {
        arm(n);
        bool ok = op(w, arg);
        disarm();
        if (ok)
            return n;
        bool same = check_world(w, "a refused operation changes nothing") && (!unchanged || unchanged(w, arg));
        CHECK(same, "a refused operation changes nothing");
        if (!same)
            return n;
    }
    CHECK(false, "the operation succeeds once no allocation is refused");
    return 0;
}

typedef struct oom_arg {
    int r;
    const hpl__region *region;
    const hpl__region *const *need;
    hpl__rank_moves *moves;
    hpl__region *out;
    const hpl__region *out_before;
} oom_arg;

static bool op_plan(world *w, void *arg)
{
    oom_arg *a = arg;
    return hpl__rank_state_plan(&w->s, a->need, a->moves);
}
static bool plan_empty(world *w, void *arg)
{
    (void)w;
    oom_arg *a = arg;
    return a->moves->count == 0 && a->moves->elements == 0;
}
static bool op_plan_for(world *w, void *arg)
{
    oom_arg *a = arg;
    return hpl__rank_state_plan_for(&w->s, a->r, a->need, a->moves);
}
static bool op_fulfilled(world *w, void *arg)
{
    return hpl__rank_state_fulfilled(&w->s, ((oom_arg *)arg)->need);
}
static bool op_wrote_all(world *w, void *arg)
{
    return hpl__rank_state_wrote_all(&w->s, ((oom_arg *)arg)->need);
}
static bool op_moved(world *w, void *arg)
{
    return hpl__rank_state_moved(&w->s, ((oom_arg *)arg)->moves);
}
static bool op_wrote(world *w, void *arg)
{
    oom_arg *a = arg;
    return hpl__rank_state_wrote(&w->s, a->r, a->region);
}
static bool op_everywhere(world *w, void *arg)
{
    return hpl__rank_state_wrote_everywhere(&w->s, ((oom_arg *)arg)->region);
}
static bool op_discard(world *w, void *arg)
{
    return hpl__rank_state_discard(&w->s, ((oom_arg *)arg)->region);
}
static bool op_first_holder(world *w, void *arg)
{
    oom_arg *a = arg;
    return hpl__rank_state_first_holder(&w->s, a->r, a->region, a->out);
}
static bool out_unchanged(world *w, void *arg)
{
    (void)w;
    oom_arg *a = arg;
    return hpl__region_equal(a->out, a->out_before);
}

static void test_oom(void)
{
    static const grid g3 = {3, {6, 5, 3}}, g2 = {2, {6, 5, 1}};
    unsigned long refusals = 0, ops = 0, allocating = 0;
    hpl__rank_moves moves = {0}, full = {0};
    uint64_t t0 = hpl__now_ns();
    /* init allocates: each refusal gives false and a zeroed state. */
    snprintf(context, sizeof context, "oom init");
    for (int n = 0;; n++) {
        hpl__rank_state st;
        hpl__box whole = box1(0, 10);
        arm(n);
        bool ok = hpl__rank_state_init(&st, 7, &whole, true);
        disarm();
        if (ok) {
            CHECK(n > 0 && st.ranks == 7 && hpl__region_volume(&st.valid[6]) == 10, "init after refusals");
            hpl__rank_state_free(&st);
            break;
        }
        CHECK(st.ranks == 0 && st.valid == NULL && st.next == NULL, "a refused init leaves s zeroed");
        if (n > 100)
            break;
    }
    for (int q = 0; q < 60; q++) {
        const grid *g = q % 2 ? &g3 : &g2;
        int ranks = q % 10 == 9 ? 20 : 1 + (int)rng_below(5);
        world *w = &(world){0};
        char base[128];
        snprintf(base, sizeof base, "oom seq %d ranks %d", q, ranks);
        snprintf(context, sizeof context, "%s", base);
        world_init(w, g, ranks, false);
        /* Fragmented starting regions: on the heap. */
        for (int r = 0; r < ranks; r++) {
            hpl__region reg = {0};
            mask m;
            random_region(g, true, &reg, m);
            CHECK(hpl__rank_state_wrote_everywhere(&w->s, &reg), "setup");
            model_everywhere(w, m, 1);
            hpl__region_free(&reg);
            random_region(g, true, &reg, m);
            CHECK(hpl__rank_state_wrote(&w->s, r, &reg), "setup");
            model_wrote(w, r, m);
            hpl__region_free(&reg);
        }
        check_world(w, "setup");
        for (int step = 0; step < 12; step++) {
            snprintf(context, sizeof context, "%s step %d", base, step);
            hpl__region regions[MAXR] = {{0}}, region = {0}, out = {0}, before = {0};
            static mask want[MAXR];
            const hpl__region *need[MAXR];
            mask m;
            oom_arg a = {.moves = &moves};
            int op = (int)rng_below(9), n = 0;
            random_region(g, rng_below(3) != 0, &region, m);
            a.region = &region;
            a.r = (int)rng_below((uint64_t)ranks);
            if (op == 0) {
                random_needs(w, regions, want, need, true);
                a.need = need;
                n = sweep_op(w, op_plan, plan_empty, &a);
                check_plan(w, need, (const mask *)want, &moves);
                n += sweep_op(w, op_moved, NULL, &a);
                model_moved(w, need, (const mask *)want);
            } else if (op == 6) {
                /* plan_for (against the full plan, made unrefused), then
                 * fulfilled in place of moved. */
                random_needs(w, regions, want, need, true);
                a.need = need;
                CHECK(hpl__rank_state_plan(&w->s, need, &full), "plan");
                n = sweep_op(w, op_plan_for, plan_empty, &a);
                check_plan_for(w, need, &full, &moves);
                n += sweep_op(w, op_fulfilled, NULL, &a);
                model_moved(w, need, (const mask *)want);
            } else if (op == 7) {
                bool disjoint = rng_below(3) != 0;
                random_written(w, regions, want, need, true, disjoint);
                a.need = need;
                n = sweep_op(w, op_wrote_all, NULL, &a);
                model_wrote_all(w, need, (const mask *)want);
            } else if (op == 1) {
                n = sweep_op(w, op_wrote, NULL, &a);
                model_wrote(w, a.r, m);
            } else if (op == 2) {
                n = sweep_op(w, op_everywhere, NULL, &a);
                model_everywhere(w, m, 1);
            } else if (op == 3) {
                n = sweep_op(w, op_discard, NULL, &a);
                model_everywhere(w, m, 0);
            } else {
                random_region(g, true, &out, want[0]); /* out holds something before */
                CHECK(hpl__region_copy(&before, &out), "copy");
                a.out = &out;
                a.out_before = &before;
                n = sweep_op(w, op_first_holder, out_unchanged, &a);
                for (int e = 0; e < cells(g); e++) {
                    bool first = m[e] && w->valid[a.r][e];
                    for (int s = 0; s < a.r; s++)
                        first = first && !w->valid[s][e];
                    want[0][e] = first;
                }
                region_is(g, &out, want[0], "first_holder after refusals");
            }
            check_world(w, "after the operation succeeded");
            refusals += (unsigned long)n;
            allocating += n > 0;
            ops++;
            for (int r = 0; r < MAXR; r++)
                hpl__region_free(&regions[r]);
            hpl__region_free(&region);
            hpl__region_free(&out);
            hpl__region_free(&before);
        }
        hpl__rank_state_free(&w->s);
    }
    hpl__rank_moves_free(&moves);
    hpl__rank_moves_free(&full);
    snprintf(context, sizeof context, "oom");
    CHECK(allocating > ops / 4, "most operations on fragmented states allocate");
    printf("out of memory: %lu operations, %lu of them allocating, %lu refused runs, %.2f s\n", ops, allocating,
           refusals, (double)(hpl__now_ns() - t0) * 1e-9);
}

/* ---- Main ----------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : getenv("UNIT_RANK_STATE_SEED");
    if (s && *s) {
        seed = strtoull(s, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
    }
    rng_state = seed * 0x9E3779B97F4A7C15ull + 88172645463325252ull;
    if (!rng_state)
        rng_state = 88172645463325252ull;
    printf("unit_rank_state: seed %" PRIu64 " (rerun with: unit_rank_state %" PRIu64 ")\n", seed, seed);
    const char *sc = getenv("UNIT_RANK_STATE_SCALE"); /* more sequences for soak runs */
    int scale = sc && atoi(sc) > 0 ? atoi(sc) : 1;
    uint64_t t0 = hpl__now_ns();

    test_cases();
    test_random(scale);
    test_oom();

    printf("unit_rank_state: %lu checks, %lu failed, %.2f s\n", checks, failures, (double)(hpl__now_ns() - t0) * 1e-9);
    if (failures)
        fprintf(stderr, "unit_rank_state: FAILED with seed %" PRIu64 "\n", seed);
    return failures ? 1 : 0;
}
