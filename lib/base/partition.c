/* Partition arithmetic. See partition.h. */
#include "partition.h"

#include "common.h"

#include <math.h>
#include <string.h>
#include <stddef.h>

hpl__part hpl__part_make(uint64_t n, uint64_t lo, uint64_t hi, uint64_t overlap)
{
    hpl__part p = {.lo = lo, .hi = hi};
    p.halo_lo = lo > overlap ? lo - overlap : 0;
    p.halo_hi = n - hi > overlap ? hi + overlap : n;
    return p;
}

static hpl__part part_of(uint64_t n, uint64_t devices, uint64_t i, uint64_t overlap)
{
    uint64_t base = n / devices, extra = n % devices;
    /* The first `extra` parts hold one more element. */
    uint64_t lo = i * base + (i < extra ? i : extra);
    return hpl__part_make(n, lo, lo + base + (i < extra), overlap);
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
    hpl__part_boxes(whole, dim, p.lo, p.hi, overlap, owned, halo);
    return true;
}

void hpl__part_boxes(const hpl__box *whole, int dim, uint64_t lo, uint64_t hi, uint64_t overlap, hpl__box *owned,
                     hpl__box *halo)
{
    hpl__part p = hpl__part_make(whole->hi[dim] - whole->lo[dim], lo, hi, overlap);
    *owned = *halo = *whole;
    owned->lo[dim] = whole->lo[dim] + p.lo;
    owned->hi[dim] = whole->lo[dim] + p.hi;
    halo->lo[dim] = whole->lo[dim] + p.halo_lo;
    halo->hi[dim] = whole->lo[dim] + p.halo_hi;
}

static double share_of(const double *shares, int i)
{
    double s = shares ? shares[i] : 1.0;
    return isfinite(s) && s > 0.0 ? s : 0.0;
}

void hpl__partition_cuts(uint64_t n, int devices, const double *shares, uint64_t granule, uint64_t *cuts)
{
    if (devices <= 0)
        return;
    double total = 0.0;
    for (int i = 0; i < devices; i++)
        total += share_of(shares, i);
    if (!(total > 0.0) || !isfinite(total)) { /* all zero (or overflowing): equal */
        shares = NULL;
        total = (double)devices;
    }
    granule = granule ? granule : 1;
    uint64_t units = n / granule + (n % granule != 0), given = 0;
    uint64_t got[HPL__PARTITION_MAX];
    double rest[HPL__PARTITION_MAX];
    for (int i = 0; i < devices; i++) {
        double exact = share_of(shares, i) / total * (double)units;
        got[i] = (uint64_t)exact;
        got[i] = got[i] > units - given ? units - given : got[i]; /* rounding cannot overshoot */
        rest[i] = exact - (double)got[i];
        given += got[i];
    }
    /* The units left, one each, largest fractional part first. */
    while (given < units) {
        int best = 0;
        for (int i = 1; i < devices; i++)
            if (rest[i] > rest[best])
                best = i;
        got[best]++;
        rest[best] = -1.0;
        given++;
    }
    cuts[0] = 0;
    uint64_t end = 0;
    for (int i = 0; i < devices; i++) {
        end += got[i];
        cuts[i + 1] = end >= units ? n : end * granule;
    }
}

int hpl__shares_check(const double *shares, int count, const char *what)
{
    bool any = false;
    for (int i = 0; i < count; i++) {
        if (!isfinite(shares[i]) || shares[i] < 0.0)
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s[%d] is %g: give a finite share >= 0", what, i, shares[i]);
        any = any || shares[i] > 0.0;
    }
    if (!any)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s gives all %d devices 0: nothing would run", what, count);
    return HPL_OK;
}

void hpl__copy_chunks(uint64_t n0, uint64_t n1, uint64_t run_units, uint64_t max_units, hpl__copy_chunk_fn fn, void *user)
{
    if (n1 == 0 || run_units == 0)
        return;
    uint64_t plane_runs = max_units / run_units; /* runs a chunk may hold, >= 1 */
    if (n1 <= plane_runs) {
        uint64_t planes = plane_runs / n1;
        for (uint64_t r0 = 0; r0 < n0; r0 += planes)
            fn(user, r0, 0, HPL__MIN(planes, n0 - r0), n1);
        return;
    }
    for (uint64_t r0 = 0; r0 < n0; r0++)
        for (uint64_t r1 = 0; r1 < n1; r1 += plane_runs)
            fn(user, r0, r1, 1, HPL__MIN(plane_runs, n1 - r1));
}

void hpl__halo_phases(uint64_t lo, uint64_t hi, bool below, bool above, uint64_t w, hpl__phases *out)
{
    uint64_t bands = (uint64_t)below + (uint64_t)above;
    memset(out, 0, sizeof *out);
    if (w == 0 || bands == 0 || w >= (hi - lo) / bands + ((hi - lo) % bands != 0)) {
        /* hi - lo <= bands * w: no interior left */
        out->count[0] = 1;
        out->range[0][0][0] = lo;
        out->range[0][0][1] = hi;
        return;
    }
    uint64_t inner_lo = below ? lo + w : lo, inner_hi = above ? hi - w : hi;
    if (below) {
        out->range[0][out->count[0]][0] = lo;
        out->range[0][out->count[0]++][1] = inner_lo;
    }
    if (above) {
        out->range[0][out->count[0]][0] = inner_hi;
        out->range[0][out->count[0]++][1] = hi;
    }
    out->count[1] = 1;
    out->range[1][0][0] = inner_lo;
    out->range[1][0][1] = inner_hi;
}
