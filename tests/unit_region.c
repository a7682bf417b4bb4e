/* Unit test of lib/base/region.c.
 *
 * 1. Randomised sequences of operations on small grids (every grid fits a
 *    64-bit mask, one bit per cell), compared step by step against a bitmap
 *    model: point set, disjointness, non-empty boxes, full coalescing, volume,
 *    and the queries.
 * 2. Deterministic cases: coalescing of row-by-row adds, cut-and-restore,
 *    halos, aliasing, zero-initialised regions, heap growth, huge coordinates.
 * 3. Stencil sequences (two devices, halos invalidated and refreshed, fixed and
 *    moving boundaries) that must stay a few boxes for 10 000 steps.
 * 4. A timing print of typical operations (information, not asserted).
 *
 * Returns non-zero if any check failed, after printing each failure. */
#include "region.h"

#include "common.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Checking ------------------------------------------------------------- */

static unsigned long checks, failures;
static char context[256]; /* what is being tested, printed with failures */

#define CHECK(cond, what)                                                                    \
    do {                                                                                     \
        checks++;                                                                            \
        if (!(cond)) {                                                                       \
            failures++;                                                                      \
            if (failures <= 30)                                                              \
                fprintf(stderr, "FAIL %s:%d [%s] %s: %s\n", __FILE__, __LINE__, context, what, \
                        #cond);                                                              \
        }                                                                                    \
    } while (0)

static void print_region(const char *name, const hpl__region *r)
{
    fprintf(stderr, "  %s: %" PRIu32 " boxes:", name, r->count);
    for (uint32_t k = 0; k < r->count; k++)
        fprintf(stderr, " [%" PRIu64 ",%" PRIu64 ")x[%" PRIu64 ",%" PRIu64 ")x[%" PRIu64 ",%" PRIu64 ")",
                r->boxes[k].lo[0], r->boxes[k].hi[0], r->boxes[k].lo[1], r->boxes[k].hi[1],
                r->boxes[k].lo[2], r->boxes[k].hi[2]);
    fputc('\n', stderr);
}


/* ---- Bitmap model --------------------------------------------------------- */

typedef struct grid {
    int ndims;
    uint64_t n[3]; /* 1 in unused dimensions; product <= 64 */
} grid;

static uint64_t cell_bit(const grid *g, uint64_t x, uint64_t y, uint64_t z)
{
    return 1ull << (x + g->n[0] * (y + g->n[1] * z));
}

/* Cells of b inside the grid. */
static uint64_t box_mask(const grid *g, const hpl__box *b)
{
    uint64_t m = 0;
    for (uint64_t z = b->lo[2]; z < b->hi[2] && z < g->n[2]; z++)
        for (uint64_t y = b->lo[1]; y < b->hi[1] && y < g->n[1]; y++)
            for (uint64_t x = b->lo[0]; x < b->hi[0] && x < g->n[0]; x++)
                m |= cell_bit(g, x, y, z);
    return m;
}

/* A random box of the grid; about one in eight is empty (possibly with
 * lo > hi), to exercise the empty-box paths. */
static hpl__box random_box(const grid *g)
{
    uint64_t lo[3], hi[3];
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
    return hpl__box_make(g->ndims, lo, hi);
}

/* Independent statement of "these two boxes should have been merged". */
static bool mergeable(const hpl__box *a, const hpl__box *b)
{
    int same = 0, touch = 0;
    for (int d = 0; d < 3; d++) {
        if (a->lo[d] == b->lo[d] && a->hi[d] == b->hi[d])
            same++;
        else if (a->hi[d] == b->lo[d] || b->hi[d] == a->lo[d])
            touch++;
    }
    return same == 2 && touch == 1;
}

/* Number of boxes of the canonical decomposition of model, computed from the
 * bitmap independently of the library: maximal runs along dim 0 in each
 * (y, z) row, equal runs joined along y, equal results joined along z. The
 * library promises at most max(HPL__REGION_INLINE, this) boxes. */
static uint32_t canonical_count(const grid *g, uint64_t model)
{
    hpl__box v[64];
    uint32_t n = 0;
    for (uint64_t z = 0; z < g->n[2]; z++)
        for (uint64_t y = 0; y < g->n[1]; y++)
            for (uint64_t x = 0; x < g->n[0]; x++) {
                if (!(model & cell_bit(g, x, y, z)))
                    continue;
                if (x > 0 && (model & cell_bit(g, x - 1, y, z)))
                    v[n - 1].hi[0]++; /* the run goes on: it is the last one added */
                else
                    v[n++] = box3(x, x + 1, y, y + 1, z, z + 1);
            }
    for (int d = 1; d < 3; d++) { /* rows are in (z, y) order: chains grow in order */
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t j = 0;
            while (j < m && !(v[j].hi[d] == v[i].lo[d] && mergeable(&v[j], &v[i])))
                j++;
            if (j < m)
                v[j].hi[d] = v[i].hi[d];
            else
                v[m++] = v[i];
        }
        n = m;
    }
    return n;
}

/* Checks the representation invariants and that r holds exactly model. */
static void check_region(const grid *g, const hpl__region *r, uint64_t model, const char *name)
{
    bool ok = true;
    uint64_t seen = 0;
    CHECK(r->count == 0 || r->boxes != NULL, name);
    CHECK(r->count <= (r->capacity > HPL__REGION_INLINE ? r->capacity : HPL__REGION_INLINE), name);
    CHECK(r->count == 0 || r->capacity > HPL__REGION_INLINE || r->boxes == r->inline_boxes, name);
    for (uint32_t k = 0; k < r->count; k++) {
        const hpl__box *b = &r->boxes[k];
        bool inside = true;
        for (int d = 0; d < 3; d++)
            inside = inside && b->hi[d] <= g->n[d];
        uint64_t m = box_mask(g, b);
        CHECK(!hpl__box_empty(b) && m != 0, "box is non-empty");
        CHECK(inside, "box lies in the grid");
        CHECK((m & seen) == 0, "boxes are disjoint");
        ok = ok && !hpl__box_empty(b) && inside && (m & seen) == 0;
        seen |= m;
        for (uint32_t j = k + 1; j < r->count; j++) {
            CHECK(!mergeable(b, &r->boxes[j]), "fully coalesced");
            ok = ok && !mergeable(b, &r->boxes[j]);
        }
    }
    CHECK(seen == model, "point set equals the model");
    uint32_t canon = canonical_count(g, model);
    CHECK(r->count <= HPL__MAX((uint32_t)HPL__REGION_INLINE, canon), "compact: no more boxes than canonical");
    CHECK(hpl__region_volume(r) == (uint64_t)__builtin_popcountll(model), "volume");
    CHECK(hpl__region_empty(r) == (model == 0), "empty");
    CHECK(hpl__region_equal(r, r), "equal to itself");
    if ((!ok || seen != model) && failures <= 30) {
        fprintf(stderr, "  model %#" PRIx64 " got %#" PRIx64 "\n", model, seen);
        print_region(name, r);
    }
}

/* contains/intersects against the model, for random boxes and every cell. */
static void check_queries(const grid *g, const hpl__region *r, uint64_t model)
{
    for (int q = 0; q < 4; q++) {
        hpl__box b = random_box(g);
        uint64_t m = box_mask(g, &b);
        CHECK(hpl__region_contains_box(r, &b) == ((m & ~model) == 0), "contains_box");
        CHECK(hpl__region_intersects_box(r, &b) == ((m & model) != 0), "intersects_box");
    }
    uint64_t x = rng_below(g->n[0]), y = rng_below(g->n[1]), z = rng_below(g->n[2]);
    hpl__box cell = box3(x, x + 1, y, y + 1, z, z + 1);
    bool in = (model & cell_bit(g, x, y, z)) != 0;
    CHECK(hpl__region_contains_box(r, &cell) == in, "contains_box(cell)");
    CHECK(hpl__region_intersects_box(r, &cell) == in, "intersects_box(cell)");
}

/* Box functions against the model. */
static void check_box_ops(const grid *g)
{
    hpl__box a = random_box(g), b = random_box(g), i;
    uint64_t ma = box_mask(g, &a), mb = box_mask(g, &b);
    CHECK(hpl__box_empty(&a) == (ma == 0), "box_empty");
    CHECK(hpl__box_volume(&a) == (uint64_t)__builtin_popcountll(ma), "box_volume");
    bool ne = hpl__box_intersect(&a, &b, &i);
    CHECK(ne == ((ma & mb) != 0), "box_intersect result");
    CHECK(!ne || box_mask(g, &i) == (ma & mb), "box_intersect box");
    CHECK(hpl__box_contains(&a, &b) == ((mb & ~ma) == 0), "box_contains");
    CHECK(hpl__box_equal(&a, &b) == (ma == mb), "box_equal");
    CHECK(hpl__box_equal(&a, &a), "box_equal reflexive");
}

/* ---- 1. Randomised comparison with the model ------------------------------ */

#define POOL 4

typedef struct rstats {
    unsigned long sequences, steps;
    uint32_t max_boxes;
} rstats;

/* Builds a region holding exactly model, cell by cell in random order: a
 * different decomposition of the same set, for hpl__region_equal. */
static void region_from_model(const grid *g, uint64_t model, hpl__region *out)
{
    uint64_t cells = g->n[0] * g->n[1] * g->n[2];
    uint64_t order[64];
    for (uint64_t c = 0; c < cells; c++)
        order[c] = c;
    for (uint64_t c = cells; c > 1; c--) {
        uint64_t j = rng_below(c), t = order[c - 1];
        order[c - 1] = order[j];
        order[j] = t;
    }
    hpl__region_clear(out);
    for (uint64_t k = 0; k < cells; k++) {
        uint64_t c = order[k], x = c % g->n[0], y = c / g->n[0] % g->n[1], z = c / g->n[0] / g->n[1];
        if (model >> c & 1) {
            hpl__box cell = box3(x, x + 1, y, y + 1, z, z + 1);
            CHECK(hpl__region_add_box(out, &cell), "add_box returns true");
        }
    }
}

/* One random mutation of pool[i] (with pool[j] as the second operand). */
static void random_step(const grid *g, hpl__region *pool, uint64_t *model, int i, int j)
{
    hpl__box b = random_box(g);
    uint64_t m = box_mask(g, &b);
    hpl__region *r = &pool[i], *s = &pool[j];
    bool ok = true;
    int op = (int)rng_below(22);
    const char *name;
    if (op < 6) {
        name = "add_box", ok = hpl__region_add_box(r, &b), model[i] |= m;
    } else if (op < 10) {
        name = "subtract_box", ok = hpl__region_subtract_box(r, &b), model[i] &= ~m;
    } else if (op < 11) {
        name = "intersect_box", ok = hpl__region_intersect_box(r, &b), model[i] &= m;
    } else if (op < 13) {
        name = "set_box", ok = hpl__region_set_box(r, &b), model[i] = m;
    } else if (op < 15) {
        name = "add", ok = hpl__region_add(r, s), model[i] |= model[j];
    } else if (op < 17) {
        name = "subtract", ok = hpl__region_subtract(r, s), model[i] &= ~model[j];
    } else if (op < 18) {
        name = "intersect", ok = hpl__region_intersect(r, s), model[i] &= model[j];
    } else if (op < 19) {
        name = "copy", ok = hpl__region_copy(r, s), model[i] = model[j];
    } else if (op < 20 && r->count > 0) { /* operand aliasing a box of r */
        const hpl__box *own = &r->boxes[rng_below(r->count)];
        uint64_t mo = box_mask(g, own);
        if (rng_below(2))
            name = "add_box(own box)", ok = hpl__region_add_box(r, own), model[i] |= mo;
        else
            name = "set_box(own box)", ok = hpl__region_set_box(r, own), model[i] = mo;
    } else if (op < 21) {
        name = "clear", hpl__region_clear(r), model[i] = 0;
    } else {
        name = "free", hpl__region_free(r), model[i] = 0;
    }
    size_t len = strlen(context);
    snprintf(context + len, sizeof context - len, " %s(r%d, r%d)", name, i, j);
    CHECK(ok, "mutation returns true");
}

static void random_sequence(const grid *g, int steps, rstats *st)
{
    hpl__region pool[POOL], other;
    uint64_t model[POOL] = {0};
    memset(pool, 0, sizeof pool); /* zero-initialised = empty */
    if (rng_below(2))
        for (int k = 0; k < POOL; k++)
            hpl__region_init(&pool[k]);
    hpl__region_init(&other);
    char base[64];
    snprintf(base, sizeof base, "%dD %" PRIu64 "x%" PRIu64 "x%" PRIu64 " seq %lu", g->ndims, g->n[0],
             g->n[1], g->n[2], st->sequences);
    for (int step = 0; step < steps; step++) {
        int i = (int)rng_below(POOL), j = (int)rng_below(POOL); /* i == j tests aliasing */
        snprintf(context, sizeof context, "%s step %d", base, step);
        random_step(g, pool, model, i, j);
        for (int k = 0; k < POOL; k++) /* all of them: operands must not change */
            check_region(g, &pool[k], model[k], k == i ? "target" : "other");
        check_queries(g, &pool[i], model[i]);
        check_box_ops(g);
        CHECK(hpl__region_equal(&pool[i], &pool[j]) == (model[i] == model[j]), "equal(pool)");
        CHECK(hpl__region_contains(&pool[i], &pool[j]) == ((model[j] & ~model[i]) == 0), "contains(pool)");
        CHECK(hpl__region_contains(&pool[j], &pool[i]) == ((model[i] & ~model[j]) == 0), "contains(pool), reversed");
        region_from_model(g, model[i], &other);
        CHECK(hpl__region_equal(&pool[i], &other), "equal(rebuilt cell by cell)");
        CHECK(hpl__region_equal(&other, &pool[i]), "equal(rebuilt), reversed");
        if (pool[i].count > st->max_boxes)
            st->max_boxes = pool[i].count;
        st->steps++;
    }
    for (int k = 0; k < POOL; k++)
        hpl__region_free(&pool[k]);
    hpl__region_free(&other);
    st->sequences++;
}

static void test_random(void)
{
    static const grid grids[] = {
        {1, {1, 1, 1}}, {1, {2, 1, 1}},  {1, {3, 1, 1}},  {1, {5, 1, 1}}, {1, {8, 1, 1}},
        {1, {12, 1, 1}}, {2, {2, 3, 1}}, {2, {4, 4, 1}},  {2, {6, 6, 1}}, {2, {7, 5, 1}},
        {3, {2, 2, 2}}, {3, {2, 3, 4}},  {3, {4, 4, 4}},
    };
    for (size_t k = 0; k < HPL__ARRAY_LEN(grids); k++) {
        const grid *g = &grids[k];
        rstats st = {0, 0, 0};
        int sequences = g->ndims == 1 ? 400 : 1500;
        for (int s = 0; s < sequences; s++)
            random_sequence(g, 40, &st);
        printf("random %dD %2" PRIu64 "x%" PRIu64 "x%" PRIu64 ": %4lu sequences, %6lu steps, max %2" PRIu32
               " boxes\n",
               g->ndims, g->n[0], g->n[1], g->n[2], st.sequences, st.steps, st.max_boxes);
    }
}

/* ---- 2. Deterministic cases ----------------------------------------------- */

static void test_rows_coalesce(void)
{
    snprintf(context, sizeof context, "rows one by one");
    hpl__region r = {0};
    hpl__box whole = box2(0, 16, 0, 9);
    for (uint64_t row = 0; row < 16; row++) {
        hpl__box b = box2(row, row + 1, 0, 9);
        CHECK(hpl__region_add_box(&r, &b), "add_box");
        CHECK(r.count == 1, "one box after each row");
    }
    CHECK(r.count == 1 && hpl__box_equal(&r.boxes[0], &whole), "the whole matrix");

    snprintf(context, sizeof context, "columns, odd then even");
    hpl__region_clear(&r);
    for (uint64_t c = 1; c < 9; c += 2) {
        hpl__box b = box2(0, 16, c, c + 1);
        hpl__region_add_box(&r, &b);
    }
    for (uint64_t c = 0; c < 9; c += 2) {
        hpl__box b = box2(0, 16, c, c + 1);
        hpl__region_add_box(&r, &b);
    }
    CHECK(r.count == 1 && hpl__box_equal(&r.boxes[0], &whole), "one box");

    snprintf(context, sizeof context, "3-D planes, reverse order");
    hpl__box cube = box3(0, 5, 0, 6, 0, 7);
    hpl__region_clear(&r);
    for (uint64_t z = 7; z-- > 0;) {
        hpl__box b = box3(0, 5, 0, 6, z, z + 1);
        hpl__region_add_box(&r, &b);
    }
    CHECK(r.count == 1 && hpl__box_equal(&r.boxes[0], &cube), "one box");

    snprintf(context, sizeof context, "cells in row-major order");
    hpl__region_clear(&r);
    for (uint64_t x = 0; x < 16; x++)
        for (uint64_t y = 0; y < 9; y++) {
            hpl__box b = box2(x, x + 1, y, y + 1);
            hpl__region_add_box(&r, &b);
            CHECK(r.count <= 2, "at most a row box and a partial row");
        }
    CHECK(r.count == 1 && hpl__box_equal(&r.boxes[0], &whole), "one box");
    hpl__region_free(&r);
}

static void test_cut_and_restore(void)
{
    static const hpl__box cases[][2] = {
        {{{0, 0, 0}, {10, 1, 1}}, {{4, 0, 0}, {6, 1, 1}}},  /* 1-D halo */
        {{{0, 0, 0}, {10, 1, 1}}, {{0, 0, 0}, {2, 1, 1}}},  /* 1-D edge */
        {{{0, 0, 0}, {6, 6, 1}}, {{2, 2, 0}, {4, 4, 1}}},   /* 2-D middle: 4 pieces */
        {{{0, 0, 0}, {6, 6, 1}}, {{0, 2, 0}, {6, 4, 1}}},   /* 2-D band */
        {{{0, 0, 0}, {6, 6, 6}}, {{2, 2, 2}, {4, 4, 4}}},   /* 3-D middle: 6 pieces */
        {{{0, 0, 0}, {6, 6, 6}}, {{1, 0, 3}, {6, 4, 5}}},
    };
    for (size_t k = 0; k < HPL__ARRAY_LEN(cases); k++) {
        snprintf(context, sizeof context, "cut and restore, case %zu", k);
        const hpl__box *whole = &cases[k][0], *hole = &cases[k][1];
        hpl__region r = {0};
        CHECK(hpl__region_add_box(&r, whole), "add");
        CHECK(hpl__region_subtract_box(&r, hole), "subtract");
        CHECK(hpl__region_volume(&r) == hpl__box_volume(whole) - hpl__box_volume(hole), "volume");
        CHECK(!hpl__region_intersects_box(&r, hole), "hole is gone");
        CHECK(hpl__region_add_box(&r, hole), "add back");
        CHECK(r.count == 1 && hpl__box_equal(&r.boxes[0], whole), "one box again");
        hpl__region_free(&r);
    }
}

static void test_empty_and_aliasing(void)
{
    snprintf(context, sizeof context, "zero-initialised");
    hpl__region z = {0}, r = {0};
    hpl__box b = box1(2, 5), e = box1(5, 2);
    CHECK(hpl__region_empty(&z) && hpl__region_volume(&z) == 0, "empty");
    CHECK(!hpl__region_intersects_box(&z, &b) && !hpl__region_contains_box(&z, &b), "queries");
    CHECK(hpl__region_contains_box(&z, &e), "contains the empty box");
    CHECK(hpl__region_equal(&z, &r), "equal");
    CHECK(hpl__region_subtract_box(&z, &b) && hpl__region_intersect_box(&z, &b), "no-ops");
    CHECK(hpl__region_subtract(&z, &r) && hpl__region_intersect(&z, &r) && hpl__region_add(&z, &r), "no-ops");
    CHECK(hpl__region_copy(&z, &r) && z.count == 0, "copy of empty");
    hpl__region_clear(&z);
    hpl__region_free(&z);
    hpl__region_free(&r); /* still zero-initialised */
    CHECK(hpl__region_empty(&r) && hpl__region_empty(&z), "empty after free");

    snprintf(context, sizeof context, "empty boxes");
    hpl__region_set_box(&r, &b);
    CHECK(hpl__region_add_box(&r, &e) && r.count == 1, "add empty");
    CHECK(hpl__region_subtract_box(&r, &e) && r.count == 1, "subtract empty");
    CHECK(hpl__region_set_box(&z, &e) && hpl__region_empty(&z), "set empty");
    CHECK(hpl__region_intersect_box(&r, &e) && hpl__region_empty(&r), "intersect empty");

    snprintf(context, sizeof context, "aliasing");
    hpl__box two[2] = {box1(0, 3), box1(5, 9)};
    hpl__region_set_box(&r, &two[0]);
    hpl__region_add_box(&r, &two[1]);
    CHECK(hpl__region_add(&r, &r) && hpl__region_volume(&r) == 7 && r.count == 2, "r |= r");
    CHECK(hpl__region_intersect(&r, &r) && hpl__region_volume(&r) == 7, "r &= r");
    CHECK(hpl__region_copy(&r, &r) && hpl__region_volume(&r) == 7, "r = r");
    CHECK(hpl__region_add_box(&r, &r.boxes[1]) && hpl__region_volume(&r) == 7, "r |= own box");
    uint64_t first = hpl__box_volume(&r.boxes[0]);
    CHECK(hpl__region_subtract_box(&r, &r.boxes[0]) && hpl__region_volume(&r) == 7 - first, "r -= own box");
    hpl__region_set_box(&r, &two[0]);
    hpl__region_add_box(&r, &two[1]);
    CHECK(hpl__region_intersect_box(&r, &r.boxes[0]) && r.count == 1, "r &= own box");
    hpl__region_add_box(&r, &two[1]);
    CHECK(hpl__region_set_box(&r, &r.boxes[1]) && r.count == 1, "r = own box");
    CHECK(hpl__region_subtract(&r, &r) && hpl__region_empty(&r), "r -= r");

    snprintf(context, sizeof context, "box_make");
    uint64_t lo[3] = {1, 2, 3}, hi[3] = {4, 5, 6};
    hpl__box m1 = hpl__box_make(1, lo, hi), m2 = hpl__box_make(2, lo, hi), m3 = hpl__box_make(3, lo, hi);
    hpl__box m0 = hpl__box_make(0, lo, hi), want1 = box1(1, 4), want2 = box2(1, 4, 2, 5);
    hpl__box want3 = box3(1, 4, 2, 5, 3, 6), want0 = box1(0, 1);
    CHECK(memcmp(&m1, &want1, sizeof m1) == 0 && memcmp(&m2, &want2, sizeof m2) == 0, "1-D, 2-D");
    CHECK(memcmp(&m3, &want3, sizeof m3) == 0 && memcmp(&m0, &want0, sizeof m0) == 0, "3-D, 0-D");
    CHECK(hpl__box_volume(&m3) == 27 && hpl__box_volume(&m0) == 1, "volumes");
    hpl__region_free(&r);
    hpl__region_free(&z);
}

/* Many boxes: the heap path, then shrinking back. */
static void test_heap(void)
{
    snprintf(context, sizeof context, "heap");
    hpl__region r = {0}, s = {0}, c = {0};
    enum { N = 200 };
    for (uint64_t x = 0; x < N; x += 2) {
        hpl__box b = box1(x, x + 1);
        CHECK(hpl__region_add_box(&r, &b), "add");
    }
    CHECK(r.count == N / 2 && hpl__region_volume(&r) == N / 2, "checkerboard kept apart");
    CHECK(r.capacity >= r.count && r.boxes != r.inline_boxes, "on the heap");
    CHECK(hpl__region_copy(&c, &r) && hpl__region_equal(&c, &r) && c.count == N / 2, "copy");
    hpl__box odd = box1(1, N);
    CHECK(hpl__region_set_box(&s, &odd), "set");
    CHECK(hpl__region_intersect(&c, &s) && hpl__region_volume(&c) == N / 2 - 1, "intersect");
    CHECK(hpl__region_subtract(&s, &r) && s.count == N / 2 && hpl__region_volume(&s) == N / 2, "subtract");
    CHECK(hpl__region_add(&r, &s) && r.count == 1 && hpl__region_volume(&r) == N, "add: whole again");
    CHECK(hpl__region_contains_box(&r, &odd), "contains");
    hpl__box grid2 = box2(0, 20, 0, 20);
    hpl__region_clear(&s);
    for (uint64_t x = 0; x < 20; x++)
        for (uint64_t y = (x & 1); y < 20; y += 2) {
            hpl__box b = box2(x, x + 1, y, y + 1);
            hpl__region_add_box(&s, &b);
        }
    CHECK(s.count == 200 && hpl__region_volume(&s) == 200, "2-D checkerboard");
    hpl__region_set_box(&c, &grid2);
    CHECK(hpl__region_subtract(&c, &s) && hpl__region_volume(&c) == 200 && c.count == 200, "complement");
    CHECK(hpl__region_add(&c, &s) && c.count == 1, "whole");
    CHECK(!hpl__region_equal(&c, &s) && hpl__region_contains_box(&c, &grid2), "queries");
    hpl__region_free(&r);
    hpl__region_free(&s);
    hpl__region_free(&c);
}

/* Coordinates whose volumes do not fit 64 bits: the exact fallbacks. */
static void test_huge(void)
{
    snprintf(context, sizeof context, "huge");
    const uint64_t big = 1ull << 40, top = UINT64_MAX;
    hpl__box whole = box3(0, big, 0, big, 0, big), hole = box3(1, 2, 1, 2, 1, 2);
    hpl__box edge = box1(top - 10, top);
    hpl__region r = {0}, s = {0};
    CHECK(hpl__box_volume(&whole) == UINT64_MAX, "box volume saturates");
    hpl__region_set_box(&r, &whole);
    hpl__region_subtract_box(&r, &hole);
    CHECK(r.count == 6 && hpl__region_volume(&r) == UINT64_MAX, "six pieces, volume saturates");
    CHECK(!hpl__region_contains_box(&r, &whole), "hole detected without volumes");
    hpl__box part = box3(2, big, 0, big, 0, big);
    CHECK(hpl__region_contains_box(&r, &part), "a part spanning pieces");
    hpl__region_set_box(&s, &whole);
    CHECK(!hpl__region_equal(&r, &s) && !hpl__region_equal(&s, &r), "not equal");
    hpl__region_add_box(&r, &hole);
    CHECK(r.count == 1 && hpl__region_equal(&r, &s), "restored");
    hpl__region_set_box(&r, &edge);
    CHECK(hpl__region_volume(&r) == 10 && hpl__region_contains_box(&r, &edge), "near UINT64_MAX");
    hpl__region_free(&r);
    hpl__region_free(&s);
}

/* Pairwise merging alone is not canonical: filling a grid cell by cell in
 * random order can leave a full square as a pinwheel of 5 boxes no pair
 * merge undoes (and worse: up to 13 boxes for 6x6 before the library rebuilt
 * such results canonically). Every fill order must end as one box. */
static void test_random_fill(void)
{
    static const grid grids[] = {{1, {12, 1, 1}}, {2, {3, 3, 1}}, {2, {6, 6, 1}}, {3, {4, 4, 4}}};
    for (size_t k = 0; k < HPL__ARRAY_LEN(grids); k++) {
        const grid *g = &grids[k];
        uint64_t all = ~0ull >> (64 - g->n[0] * g->n[1] * g->n[2]);
        uint32_t worst = 0;
        for (int t = 0; t < 1000; t++) {
            hpl__region r = {0};
            snprintf(context, sizeof context, "random fill %" PRIu64 "x%" PRIu64 "x%" PRIu64 " #%d", g->n[0],
                     g->n[1], g->n[2], t);
            region_from_model(g, all, &r);
            check_region(g, &r, all, "filled");
            worst = HPL__MAX(worst, r.count);
            hpl__region_free(&r);
        }
        snprintf(context, sizeof context, "random fill %" PRIu64 "x%" PRIu64 "x%" PRIu64, g->n[0], g->n[1],
                 g->n[2]);
        CHECK(worst == 1, "every fill order ends as one box");
        printf("fill %2" PRIu64 "x%" PRIu64 "x%" PRIu64 " cell by cell, 1000 random orders: max %u boxes at the end\n",
               g->n[0], g->n[1], g->n[2], worst);
    }
}

/* ---- 3. Stencil sequences ------------------------------------------------- */

/* A Jacobi-style stencil on two devices, as the coherence layer sees it:
 * arrays A and B swap roles each step (read one, write the other); device k
 * owns a slab along `dim` and reads it plus a halo of `halo` cells (fetching
 * what it lacks: refresh), then writes the interior part of its slab (the
 * boundary cells are never written), which makes the other device's and the
 * host's copies of that part stale (invalidation). When `moving`, load
 * balancing moves the split by up to 4 each step. The host reads the output
 * every 97 steps. Boundary cells, once fetched, stay valid forever, so the
 * device regions are not just slabs. */
typedef struct stencil {
    const char *name;
    int ndims, dim;
    uint64_t n[3];
    uint64_t halo;
    bool moving;
} stencil;

static hpl__box slab(const stencil *st, uint64_t lo, uint64_t hi)
{
    hpl__box b = box3(0, st->n[0], 0, st->n[1], 0, st->n[2]);
    b.lo[st->dim] = lo;
    b.hi[st->dim] = hi;
    return b;
}

static hpl__box interior(const stencil *st)
{
    hpl__box b = box3(0, st->n[0], 0, st->n[1], 0, st->n[2]);
    for (int d = 0; d < st->ndims; d++)
        b.lo[d] = 1, b.hi[d] = st->n[d] - 1;
    return b;
}

typedef struct stencil_state {
    hpl__region dev[2][2], host[2]; /* [array][device], [array] */
    uint64_t ops, ns;
    uint32_t worst;
} stencil_state;

/* Device k reads `src` (refresh) and writes `dst` (invalidate elsewhere). */
static void stencil_device(const stencil *st, stencil_state *s, int src, int dst, int k, const hpl__box own[2])
{
    uint64_t lo = own[k].lo[st->dim], hi = own[k].hi[st->dim], len = st->n[st->dim];
    hpl__box need = slab(st, lo > st->halo ? lo - st->halo : 0, HPL__MIN(hi + st->halo, len));
    hpl__box in = interior(st), write;
    hpl__box_intersect(&own[k], &in, &write);
    uint64_t t0 = hpl__now_ns();
    bool ok = hpl__region_add_box(&s->dev[src][k], &need);
    ok = hpl__region_add_box(&s->dev[dst][k], &write) && ok;
    ok = hpl__region_subtract_box(&s->dev[dst][1 - k], &write) && ok;
    ok = hpl__region_subtract_box(&s->host[dst], &write) && ok;
    s->ns += hpl__now_ns() - t0;
    s->ops += 4;
    CHECK(ok, "operations return true");
    CHECK(hpl__region_contains_box(&s->dev[src][k], &need), "refreshed");
    CHECK(hpl__region_contains_box(&s->dev[dst][k], &write), "written");
    CHECK(!hpl__region_intersects_box(&s->dev[dst][1 - k], &write), "invalidated");
    CHECK(!hpl__region_intersects_box(&s->host[dst], &write), "invalidated on host");
}

static uint32_t run_stencil(const stencil *st, int steps, stencil_state *s)
{
    memset(s, 0, sizeof *s);
    hpl__box whole = slab(st, 0, st->n[st->dim]);
    uint64_t len = st->n[st->dim], split = len / 2;
    hpl__region_set_box(&s->host[0], &whole);
    hpl__region_set_box(&s->host[1], &whole);
    for (int step = 0; step < steps; step++) {
        snprintf(context, sizeof context, "stencil %s step %d", st->name, step);
        int src = step & 1, dst = src ^ 1;
        if (st->moving) {
            split = split + rng_below(9) - 4;
            split = HPL__MIN(HPL__MAX(split, 4), len - 4);
        }
        hpl__box own[2] = {slab(st, 0, split), slab(st, split, len)};
        stencil_device(st, s, src, dst, 0, own);
        stencil_device(st, s, src, dst, 1, own);
        if (step % 97 == 96) {
            CHECK(hpl__region_add_box(&s->host[dst], &whole), "host read");
            s->ops++;
        }
        for (int a = 0; a < 2; a++) {
            s->worst = HPL__MAX(s->worst, HPL__MAX(s->dev[a][0].count, s->dev[a][1].count));
            s->worst = HPL__MAX(s->worst, s->host[a].count);
        }
    }
    for (int a = 0; a < 2; a++) {
        hpl__region_free(&s->dev[a][0]);
        hpl__region_free(&s->dev[a][1]);
        hpl__region_free(&s->host[a]);
    }
    return s->worst;
}

static void test_stencils(void)
{
    static const stencil cases[] = {
        {"1-D fixed", 1, 0, {1000, 1, 1}, 2, false},      {"1-D moving", 1, 0, {1000, 1, 1}, 3, true},
        {"2-D rows fixed", 2, 0, {64, 48, 1}, 1, false},  {"2-D rows moving", 2, 0, {64, 48, 1}, 2, true},
        {"2-D cols fixed", 2, 1, {64, 48, 1}, 1, false},  {"2-D cols moving", 2, 1, {64, 48, 1}, 2, true},
        {"3-D planes moving", 3, 2, {16, 16, 40}, 1, true}, {"3-D rows moving", 3, 0, {40, 16, 16}, 1, true},
    };
    for (size_t k = 0; k < HPL__ARRAY_LEN(cases); k++) {
        stencil_state s;
        uint32_t worst = run_stencil(&cases[k], 10000, &s);
        snprintf(context, sizeof context, "stencil %s", cases[k].name);
        CHECK(worst <= 8, "at most 8 boxes per region");
        printf("stencil %-18s: 10000 steps, max %u boxes per region, %.0f ns per op\n", cases[k].name, worst,
               (double)s.ns / (double)s.ops);
    }
}

/* ---- 4. Timing ------------------------------------------------------------ */

/* ns per operation of a subtract_box/add_box pair that cuts a box out of a
 * region and restores it. Information only: sanitizers inflate it. */
static double time_cut_restore(const hpl__region *start, const hpl__box *cut)
{
    hpl__region r = {0};
    hpl__region_copy(&r, start);
    enum { REPS = 200000 };
    uint64_t t0 = hpl__now_ns();
    for (int k = 0; k < REPS; k++) {
        hpl__region_subtract_box(&r, cut);
        hpl__region_add_box(&r, cut);
    }
    double ns = (double)(hpl__now_ns() - t0) / (2.0 * REPS);
    snprintf(context, sizeof context, "timing");
    CHECK(hpl__region_equal(&r, start), "restored");
    hpl__region_free(&r);
    return ns;
}

static void test_timing(void)
{
    hpl__region r = {0};
    hpl__box a = box1(0, 1000), halo = box1(498, 502);
    hpl__region_set_box(&r, &a);
    printf("timing (this build): 1-D 1 box, cut/restore halo: %.0f ns/op\n", time_cut_restore(&r, &halo));
    hpl__box holes[2] = {box1(100, 200), box1(700, 800)};
    hpl__region_subtract_box(&r, &holes[0]);
    hpl__region_subtract_box(&r, &holes[1]);
    printf("timing (this build): 1-D 3 boxes, cut/restore halo: %.0f ns/op\n", time_cut_restore(&r, &halo));
    hpl__box m = box2(0, 64, 0, 48), mid = box2(20, 30, 10, 20), corner = box2(0, 8, 40, 48);
    hpl__region_set_box(&r, &m);
    hpl__region_subtract_box(&r, &corner);
    printf("timing (this build): 2-D 2 boxes, cut/restore a block: %.0f ns/op\n", time_cut_restore(&r, &mid));
    hpl__region_free(&r);
}

int main(void)
{
    test_rows_coalesce();
    test_cut_and_restore();
    test_empty_and_aliasing();
    test_heap();
    test_huge();
    test_random_fill();
    test_random();
    test_stencils();
    test_timing();
    printf("unit_region: %lu checks, %lu failed\n", checks, failures);
    return failures ? 1 : 0;
}
