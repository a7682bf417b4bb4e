/* Partition arithmetic against its definition, exhaustively for small sizes:
 * parts tile [0, n) in order, differ by at most one element with the larger
 * first, none empty, min(n, D) of them, halos clamped at the edges; and the
 * box form agrees with the 1-D form along every dimension. */
#include "partition.h"

#include <stdio.h>
#include <stdlib.h>

static long checks, failures;

#define EXPECT(cond, ...)                                                     \
    do {                                                                      \
        checks++;                                                             \
        if (!(cond)) {                                                        \
            if (failures++ < 20) {                                            \
                fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);  \
                fprintf(stderr, __VA_ARGS__);                                 \
                fputc('\n', stderr);                                          \
            }                                                                 \
        }                                                                     \
    } while (0)

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
    printf("unit_partition: %ld checks, %ld failed\n", checks, failures);
    return failures != 0;
}
