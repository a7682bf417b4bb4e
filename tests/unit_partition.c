/* Partition arithmetic against its definition, exhaustively for small sizes:
 * parts tile [0, n) in order, differ by at most one element with the larger
 * first, none empty, min(n, D) of them, halos clamped at the edges; and the
 * box form agrees with the 1-D form along every dimension. Splits by
 * shares: cuts tile [0, n) in device order on multiples of the granule,
 * each device within one unit of its exact share, equal shares as the even
 * split, untrusted shares (zero, negative, NaN, infinite) harmless. The
 * copy kernel's chunks: every run of n0 x n1 in exactly one chunk, in
 * order, each within the unit limit, whole planes or rows of one plane. */
#include "partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "unit_expect.h"

static void check_split(uint64_t n, int d, uint64_t k)
{
    hpl__part parts[64];
    int count = hpl__partition(n, d, k, parts);
    uint64_t want = n < (uint64_t)d ? n : (uint64_t)d;
    EXPECT((uint64_t)count == want, "n %llu D %d: %d parts", (unsigned long long)n, d, count);
    uint64_t next = 0;
    for (int i = 0; i < count; i++) {
        const hpl__part *p = &parts[i];
        uint64_t len = p->hi - p->lo;
        EXPECT(p->lo == next && p->hi > p->lo, "n %llu D %d part %d [%llu,%llu)", (unsigned long long)n, d, i,
               (unsigned long long)p->lo, (unsigned long long)p->hi);
        EXPECT(len == n / want || len == n / want + 1, "n %llu D %d part %d size %llu", (unsigned long long)n, d, i,
               (unsigned long long)len);
        if (i > 0)
            EXPECT(len <= parts[i - 1].hi - parts[i - 1].lo, "n %llu D %d: part %d larger than part %d",
                   (unsigned long long)n, d, i, i - 1);
        uint64_t hl = p->lo >= k ? p->lo - k : 0, hh = n - p->hi >= k ? p->hi + k : n; /* no overflow */
        EXPECT(p->halo_lo == hl && p->halo_hi == hh, "n %llu D %d k %llu part %d halo [%llu,%llu)",
               (unsigned long long)n, d, (unsigned long long)k, i, (unsigned long long)p->halo_lo,
               (unsigned long long)p->halo_hi);
        next = p->hi;
    }
    EXPECT(next == n, "n %llu D %d: parts end at %llu", (unsigned long long)n, d, (unsigned long long)next);
}

static void check_boxes(void)
{
    const uint64_t lo[3] = {3, 1, 2}, hi[3] = {13, 8, 7};
    hpl__box whole = hpl__box_make(3, lo, hi);
    for (int dim = 0; dim < 3; dim++) {
        for (int d = 1; d <= 12; d++) {
            hpl__part parts[16];
            uint64_t n = hi[dim] - lo[dim];
            int count = hpl__partition(n, d, 2, parts);
            for (int i = 0; i < 14; i++) {
                hpl__box owned, halo;
                bool ok = hpl__partition_box(&whole, dim, d, i, 2, &owned, &halo);
                EXPECT(ok == (i < count), "dim %d D %d index %d", dim, d, i);
                if (!ok)
                    continue;
                for (int e = 0; e < 3; e++) {
                    uint64_t olo = e == dim ? lo[e] + parts[i].lo : lo[e], ohi = e == dim ? lo[e] + parts[i].hi : hi[e];
                    uint64_t hlo = e == dim ? lo[e] + parts[i].halo_lo : lo[e];
                    uint64_t hhi = e == dim ? lo[e] + parts[i].halo_hi : hi[e];
                    EXPECT(owned.lo[e] == olo && owned.hi[e] == ohi && halo.lo[e] == hlo && halo.hi[e] == hhi,
                           "dim %d D %d index %d: axis %d", dim, d, i, e);
                }
            }
        }
    }
}

/* A random share: mostly ordinary, sometimes zero or untrusted. */
static double random_share(unsigned *seed)
{
    unsigned r = (*seed = *seed * 1103515245u + 12345u) >> 16;
    switch (r % 16) {
    case 0: return 0.0;
    case 1: return -1.0;
    case 2: return NAN;
    case 3: return INFINITY;
    case 4: return 1e-300;
    default: return (double)(r % 1000) / 7.0;
    }
}

static double sane(double s)
{
    return isfinite(s) && s > 0.0 ? s : 0.0;
}

static void check_cuts(uint64_t n, int d, uint64_t g, const double *shares)
{
    uint64_t cuts[HPL__PARTITION_MAX + 1];
    hpl__partition_cuts(n, d, shares, g, cuts);
    uint64_t units = g ? n / g + (n % g != 0) : n;
    double total = 0.0;
    for (int i = 0; i < d; i++)
        total += sane(shares[i]);
    bool equal = !(total > 0.0) || !isfinite(total);
    EXPECT(cuts[0] == 0 && cuts[d] == n, "n %llu D %d g %llu: cuts from %llu to %llu", (unsigned long long)n, d,
           (unsigned long long)g, (unsigned long long)cuts[0], (unsigned long long)cuts[d]);
    for (int i = 0; i < d; i++) {
        EXPECT(cuts[i] <= cuts[i + 1], "n %llu D %d: cut %d after cut %d", (unsigned long long)n, d, i, i + 1);
        EXPECT(cuts[i + 1] == n || cuts[i + 1] % g == 0, "n %llu D %d g %llu: cut %llu off the granule",
               (unsigned long long)n, d, (unsigned long long)g, (unsigned long long)cuts[i + 1]);
        uint64_t mine = (cuts[i + 1] - cuts[i] + g - 1) / g; /* units: the last one may be short */
        double exact = equal ? (double)units / d : sane(shares[i]) / total * (double)units;
        EXPECT(fabs((double)mine - exact) < 1.0 + 1e-9, "n %llu D %d g %llu device %d: %llu units for a share of %.3f",
               (unsigned long long)n, d, (unsigned long long)g, i, (unsigned long long)mine, exact);
    }
}

static void check_shares(void)
{
    unsigned seed = 7;
    double shares[HPL__PARTITION_MAX];
    for (uint64_t n = 0; n <= 70; n++)
        for (int d = 1; d <= 7; d++)
            for (uint64_t g = 1; g <= 5; g++)
                for (int trial = 0; trial < 12; trial++) {
                    for (int i = 0; i < d; i++)
                        shares[i] = random_share(&seed);
                    check_cuts(n, d, g, shares);
                }
    /* Equal shares, granule 1: the even split's parts (empty ones last). */
    for (int i = 0; i < HPL__PARTITION_MAX; i++)
        shares[i] = 2.5;
    for (uint64_t n = 0; n <= 100; n++)
        for (int d = 1; d <= HPL__PARTITION_MAX; d++) {
            uint64_t cuts[HPL__PARTITION_MAX + 1];
            hpl__part parts[HPL__PARTITION_MAX];
            hpl__partition_cuts(n, d, shares, 1, cuts);
            int count = hpl__partition(n, d, 0, parts);
            for (int i = 0; i < d; i++) {
                bool same = i < count ? cuts[i] == parts[i].lo && cuts[i + 1] == parts[i].hi : cuts[i] == cuts[i + 1];
                EXPECT(same, "n %llu D %d: equal shares give part %d [%llu,%llu)", (unsigned long long)n, d, i,
                       (unsigned long long)cuts[i], (unsigned long long)cuts[i + 1]);
            }
        }
    /* A share of zero gets nothing; 1:3 of 64 rows in groups of 16. */
    uint64_t cuts[4];
    hpl__partition_cuts(64, 3, (const double[]){1, 0, 3}, 16, cuts);
    EXPECT(cuts[1] == 16 && cuts[2] == 16 && cuts[3] == 64, "1:0:3 of 64 by 16: %llu %llu %llu",
           (unsigned long long)cuts[1], (unsigned long long)cuts[2], (unsigned long long)cuts[3]);
    /* Huge n: no overflow in the arithmetic. */
    hpl__partition_cuts(UINT64_MAX, 2, (const double[]){1, 1}, 1, cuts);
    EXPECT(cuts[2] == UINT64_MAX && cuts[1] > UINT64_MAX / 4 && cuts[1] < UINT64_MAX / 4 * 3, "halves of 2^64-1");
    /* hpl__part_boxes agrees with hpl__partition_box. */
    const uint64_t lo[3] = {3, 1, 2}, hi[3] = {13, 8, 7};
    hpl__box whole = hpl__box_make(3, lo, hi), o1, h1, o2, h2;
    for (int dim = 0; dim < 3; dim++)
        for (int i = 0; i < 3; i++) {
            hpl__part parts[3];
            hpl__partition(hi[dim] - lo[dim], 3, 1, parts);
            hpl__partition_box(&whole, dim, 3, i, 1, &o1, &h1);
            hpl__part_boxes(&whole, dim, parts[i].lo, parts[i].hi, 1, &o2, &h2);
            EXPECT(hpl__box_equal(&o1, &o2) && hpl__box_equal(&h1, &h2), "part boxes dim %d part %d", dim, i);
        }
}

/* ---- the copy kernel's chunks ---------------------------------------- */

#define CHUNK_MAX_RUNS 64

typedef struct chunk_log {
    uint64_t n0, n1, run_units, max_units;
    int seen[CHUNK_MAX_RUNS]; /* times each run r0 * n1 + r1 was in a chunk */
    uint64_t next;            /* first run of the next chunk, in order */
    bool ok;
} chunk_log;

static void log_chunk(void *user, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1)
{
    chunk_log *l = user;
    bool whole_planes = r1 == 0 && c1 == l->n1, one_plane = c0 == 1 && r1 + c1 <= l->n1;
    bool ok = c0 >= 1 && c1 >= 1 && r0 + c0 <= l->n0 && (whole_planes || one_plane) &&
              c0 * c1 * l->run_units <= l->max_units && r0 * l->n1 + r1 == l->next;
    for (uint64_t i = r0; ok && i < r0 + c0; i++)
        for (uint64_t j = r1; j < r1 + c1; j++)
            l->seen[i * l->n1 + j]++;
    l->next = (r0 + c0 - 1) * l->n1 + r1 + c1;
    l->ok = l->ok && ok;
}

static void check_chunks(uint64_t n0, uint64_t n1, uint64_t run_units, uint64_t max_units)
{
    chunk_log l = {.n0 = n0, .n1 = n1, .run_units = run_units, .max_units = max_units, .ok = true};
    hpl__copy_chunks(n0, n1, run_units, max_units, log_chunk, &l);
    for (uint64_t i = 0; i < n0 * n1; i++)
        l.ok = l.ok && l.seen[i] == 1;
    EXPECT(l.ok, "copy chunks of %llu x %llu runs of %llu units, at most %llu a chunk", (unsigned long long)n0,
           (unsigned long long)n1, (unsigned long long)run_units, (unsigned long long)max_units);
}

/* A plane bigger than any chunk, near 2^64 units in all: the chunks'
 * arithmetic does not overflow (counted, not logged). */
static void count_chunk(void *user, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1)
{
    (void)r0;
    (void)r1;
    uint64_t *runs = user;
    *runs += c0 * c1;
}

static void check_copy_chunks(void)
{
    for (uint64_t n0 = 0; n0 <= 6; n0++)
        for (uint64_t n1 = 0; n0 * n1 <= CHUNK_MAX_RUNS && n1 <= 10; n1++)
            for (uint64_t u = 1; u <= 5; u++)
                for (uint64_t max = u; max <= 60; max++)
                    check_chunks(n0, n1, u, max);
    uint64_t runs = 0;
    hpl__copy_chunks(3, UINT64_C(1) << 40, 1000, UINT64_C(1) << 30, count_chunk, &runs);
    EXPECT(runs == 3 * (UINT64_C(1) << 40), "2^40-run planes: %llu runs chunked", (unsigned long long)runs);
}

/* Halos first: the phases cover the part once, in order; phase 0 holds the
 * w rows next to each neighbour; phase 1, when there is one, lies at least
 * w rows from every neighbour (its reads of w rows stay in the part). */
static void check_phases(uint64_t lo, uint64_t hi, bool below, bool above, uint64_t w)
{
    hpl__phases ph;
    hpl__halo_phases(lo, hi, below, above, w, &ph);
    uint64_t at = lo, in_phase0 = 0;
    bool ordered = ph.count[0] >= 1 && ph.count[0] <= 2 && ph.count[1] >= 0 && ph.count[1] <= 1;
    /* Walk the ranges of both phases in row order. */
    uint64_t r[3][2];
    int n = 0;
    for (int p = 0; ordered && p < 2; p++)
        for (int i = 0; i < ph.count[p]; i++) {
            r[n][0] = ph.range[p][i][0];
            r[n][1] = ph.range[p][i][1];
            in_phase0 += p == 0 ? r[n][1] - r[n][0] : 0;
            n++;
        }
    for (int i = 0; ordered && i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (r[j][0] < r[i][0]) {
                uint64_t t0 = r[i][0], t1 = r[i][1];
                r[i][0] = r[j][0], r[i][1] = r[j][1], r[j][0] = t0, r[j][1] = t1;
            }
    for (int i = 0; ordered && i < n; i++) {
        ordered = r[i][0] == at && r[i][1] >= r[i][0] && (r[i][1] > r[i][0] || n == 1);
        at = r[i][1];
    }
    EXPECT(ordered && at == hi, "phases of [%llu, %llu) w %llu below %d above %d do not tile it",
           (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)w, below, above);
    if (ph.count[1] == 1) {
        uint64_t ilo = ph.range[1][0][0], ihi = ph.range[1][0][1];
        EXPECT(w > 0 && (below || above) && ilo < ihi && (!below || ilo - lo == w) && (!above || hi - ihi == w) &&
                   (below || ilo == lo) && (above || ihi == hi),
               "interior [%llu, %llu) of [%llu, %llu) w %llu", (unsigned long long)ilo, (unsigned long long)ihi,
               (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)w);
        EXPECT(in_phase0 == ((uint64_t)below + (uint64_t)above) * w, "bands hold %llu rows, w %llu",
               (unsigned long long)in_phase0, (unsigned long long)w);
    } else {
        /* Whole in phase 0 only when no interior could be left. */
        uint64_t bands = (uint64_t)below + (uint64_t)above;
        EXPECT(ph.count[0] == 1 && (w == 0 || bands == 0 || w >= hi - lo || (bands == 2 && w >= (hi - lo) / 2 + (hi - lo) % 2)),
               "[%llu, %llu) w %llu bands %llu ran whole", (unsigned long long)lo, (unsigned long long)hi,
               (unsigned long long)w, (unsigned long long)bands);
    }
}

static void check_halo_phases(void)
{
    for (uint64_t lo = 0; lo <= 3; lo++)
        for (uint64_t rows = 1; rows <= 40; rows++)
            for (uint64_t w = 0; w <= 22; w++)
                for (int b = 0; b < 4; b++)
                    check_phases(lo, lo + rows, b & 1, b & 2, w);
    check_phases(0, UINT64_MAX, true, true, UINT64_MAX);
    check_phases(0, UINT64_MAX, true, true, UINT64_MAX / 2);
    check_phases(5, UINT64_MAX, true, false, UINT64_C(1) << 63);
    check_phases(UINT64_MAX - 10, UINT64_MAX, true, true, 3);
}

int main(void)
{
    for (uint64_t n = 0; n <= 300; n++)
        for (int d = 1; d <= 40; d++)
            for (uint64_t k = 0; k <= 4; k++)
                check_split(n, d, k);
    /* The paper's bad case, and sizes near 2^64. */
    hpl__part p[4];
    EXPECT(hpl__partition(5, 4, 0, p) == 4 && p[0].hi - p[0].lo == 2 && p[3].hi - p[3].lo == 1, "n 5 D 4");
    EXPECT(hpl__partition(0, 4, 0, p) == 0 && hpl__partition(10, 0, 0, p) == 0, "empty splits");
    check_split(UINT64_MAX - 3, 4, 7);
    check_split(UINT64_MAX, 3, UINT64_MAX);
    check_boxes();
    check_shares();
    check_copy_chunks();
    check_halo_phases();
    printf("unit_partition: %ld checks, %ld failed\n", checks, failures);
    return failures != 0;
}
