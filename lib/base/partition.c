/* Partition arithmetic. See partition.h. */
#include "partition.h"

static hpl__part part_of(uint64_t n, uint64_t devices, uint64_t i, uint64_t overlap)
{
    uint64_t base = n / devices, extra = n % devices;
    /* The first `extra` parts hold one more element. */
    uint64_t lo = i * base + (i < extra ? i : extra);
    uint64_t hi = lo + base + (i < extra);
    hpl__part p = {.lo = lo, .hi = hi};
    p.halo_lo = lo > overlap ? lo - overlap : 0;
    p.halo_hi = n - hi > overlap ? hi + overlap : n;
    return p;
}

int hpl__partition(uint64_t n, int devices, uint64_t overlap, hpl__part *out)
{
    if (devices <= 0 || n == 0)
        return 0;
    uint64_t parts = n < (uint64_t)devices ? n : (uint64_t)devices;
    if (parts == 1) { /* every plain eval: no division on its path */
        out[0] = (hpl__part){.lo = 0, .hi = n, .halo_lo = 0, .halo_hi = n};
        return 1;
    }
    for (uint64_t i = 0; i < parts; i++)
        out[i] = part_of(n, parts, i, overlap);
    return (int)parts;
}

bool hpl__partition_box(const hpl__box *whole, int dim, int devices, int index, uint64_t overlap, hpl__box *owned,
                        hpl__box *halo)
{
    uint64_t n = whole->hi[dim] - whole->lo[dim];
    uint64_t parts = devices <= 0 ? 0 : n < (uint64_t)devices ? n : (uint64_t)devices;
    if (index < 0 || (uint64_t)index >= parts)
        return false;
    hpl__part p = part_of(n, parts, (uint64_t)index, overlap);
    *owned = *halo = *whole;
    owned->lo[dim] = whole->lo[dim] + p.lo;
    owned->hi[dim] = whole->lo[dim] + p.hi;
    halo->lo[dim] = whole->lo[dim] + p.halo_lo;
    halo->hi[dim] = whole->lo[dim] + p.halo_hi;
    return true;
}
