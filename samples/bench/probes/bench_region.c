/* Micro-benchmark of lib/base/region.c: ns per operation for the operations the
 * coherence layer does on every launch. Prints numbers; asserts nothing.
 *
 * Built by target bench_region (linked to hplvk_internal, as the unit tests):
 *
 *   cmake --build build --target bench_region && build/samples/bench/probes/bench_region
 *
 * or by hand, from the repository's root:
 *
 *   gcc -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Iinclude -Ilib/base -Itests lib/base/region.c \
 *       lib/base/util.c lib/base/error.c samples/bench/probes/bench_region.c -o /tmp/bench_region
 */
#include "region.h"

#include "common.h"
#include "test_util.h"

#include <stdio.h>

/* Keeps the compiler from dropping the loop. */
static volatile uint64_t sink;

/* Alternates r -= cut and r |= cut, starting from `start`; ns per operation. */
static double cut_restore(const hpl__region *start, const hpl__box *cut, int reps)
{
    hpl__region r = {0};
    hpl__region_copy(&r, start);
    uint64_t t0 = hpl__now_ns();
    for (int k = 0; k < reps; k++) {
        hpl__region_subtract_box(&r, cut);
        hpl__region_add_box(&r, cut);
    }
    double ns = (double)(hpl__now_ns() - t0) / (2.0 * reps);
    sink += r.count;
    hpl__region_free(&r);
    return ns;
}

/* A query run `reps` times; ns per call. */
static double query(const hpl__region *r, const hpl__box *b, int which, int reps)
{
    uint64_t t0 = hpl__now_ns(), hits = 0;
    for (int k = 0; k < reps; k++)
        hits += which == 0 ? hpl__region_contains_box(r, b) : hpl__region_intersects_box(r, b);
    sink += hits;
    return (double)(hpl__now_ns() - t0) / reps;
}

static void report(const char *what, const hpl__region *r, double ns)
{
    printf("%-52s (%u boxes): %7.1f ns/op\n", what, r->count, ns);
}

int main(void)
{
    enum { REPS = 2000000 };
    hpl__region r = {0};

    hpl__box line = box3(0, 1000, 0, 1, 0, 1), halo = box3(498, 502, 0, 1, 0, 1);
    hpl__region_set_box(&r, &line);
    report("1-D: cut/restore a halo", &r, cut_restore(&r, &halo, REPS));
    hpl__box edge = box3(0, 2, 0, 1, 0, 1);
    report("1-D: cut/restore the edge", &r, cut_restore(&r, &edge, REPS));
    report("1-D: contains_box (fast path)", &r, query(&r, &halo, 0, REPS));
    hpl__box holes[2] = {box3(100, 200, 0, 1, 0, 1), box3(700, 800, 0, 1, 0, 1)};
    hpl__region_subtract_box(&r, &holes[0]);
    hpl__region_subtract_box(&r, &holes[1]);
    report("1-D: cut/restore a halo", &r, cut_restore(&r, &halo, REPS));
    hpl__box span = box3(150, 750, 0, 1, 0, 1);
    report("1-D: contains_box across boxes", &r, query(&r, &span, 0, REPS));
    report("1-D: intersects_box", &r, query(&r, &span, 1, REPS));

    hpl__box m = box3(0, 64, 0, 48, 0, 1), rows = box3(30, 34, 0, 48, 0, 1);
    hpl__box block = box3(20, 30, 10, 20, 0, 1), corner = box3(0, 8, 40, 48, 0, 1);
    hpl__region_set_box(&r, &m);
    report("2-D: cut/restore halo rows", &r, cut_restore(&r, &rows, REPS));
    report("2-D: cut/restore a block (4 pieces)", &r, cut_restore(&r, &block, REPS));
    hpl__region_subtract_box(&r, &corner);
    report("2-D: cut/restore halo rows", &r, cut_restore(&r, &rows, REPS));
    report("2-D: cut/restore a block (5 pieces: canonical tried)", &r, cut_restore(&r, &block, REPS));

    hpl__box cube = box3(0, 16, 0, 16, 0, 16), plane = box3(0, 16, 0, 16, 7, 9);
    hpl__box mid = box3(6, 10, 6, 10, 6, 10);
    hpl__region_set_box(&r, &cube);
    report("3-D: cut/restore halo planes", &r, cut_restore(&r, &plane, REPS));
    report("3-D: cut/restore the middle (6 pieces)", &r, cut_restore(&r, &mid, REPS / 4));

    hpl__region_free(&r);
    return 0;
}
