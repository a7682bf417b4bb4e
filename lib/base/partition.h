/* Partition arithmetic for multi-device evals (issue 4): how a dimension of
 * n elements is split over D devices. Pure logic: no Vulkan.
 *
 * Parts differ by at most one element, the larger ones first, in device
 * order (the paper's ceil(n/D) rule leaves the last part negative for n = 5,
 * D = 4, and balances worse). A device whose part would be empty is left
 * out, so there are min(n, D) parts. Each part's owned box is the part; its
 * box with halo extends `overlap` elements on each side, clamped at the
 * edges of the whole. */
#ifndef HPL_PARTITION_H
#define HPL_PARTITION_H

#include "region.h"

#define HPL__PARTITION_MAX 16 /* devices of one split */

typedef struct hpl__part {
    uint64_t lo, hi;           /* owned: [lo, hi) */
    uint64_t halo_lo, halo_hi; /* with the overlap, clamped to [0, n) */
} hpl__part;

/* Fills out[0 .. min(n, devices) - 1]; returns that count (0 for n == 0 or
 * devices <= 0). */
int hpl__partition(uint64_t n, int devices, uint64_t overlap, hpl__part *out);

/* Part `index` of `whole` split along dimension dim: owned and with-halo
 * boxes (the other dimensions whole). Returns false when that part is empty
 * (index >= the number of parts). */
bool hpl__partition_box(const hpl__box *whole, int dim, int devices, int index, uint64_t overlap, hpl__box *owned,
                        hpl__box *halo);

/* Split in proportion to shares (execution plans, issue 16): device i gets
 * [cuts[i], cuts[i+1]) of [0, n), in device order; cuts[0] = 0 and
 * cuts[devices] = n. Every inner cut is a multiple of granule (a local
 * size: no work-group straddles two devices) or n. The n / granule units
 * (rounded up) go by largest remainder: each device floor(share * units),
 * the units left one each to the largest fractional parts, ties to the
 * lower index, so that equal shares give hpl__partition's parts. Shares
 * need not sum to 1 (only ratios count); negative, NaN or infinite shares
 * count as 0, and all zero as equal. A device may get nothing. At most
 * HPL__PARTITION_MAX devices. */
void hpl__partition_cuts(uint64_t n, int devices, const double *shares, uint64_t granule, uint64_t *cuts);

/* The part [lo, hi) of [0, n) with its halo of `overlap` clamped to it. */
hpl__part hpl__part_make(uint64_t n, uint64_t lo, uint64_t hi, uint64_t overlap);

/* The part [lo, hi) (offsets from whole->lo) of `whole` along dim: owned
 * and with-halo boxes, the other dimensions whole. */
void hpl__part_boxes(const hpl__box *whole, int dim, uint64_t lo, uint64_t hi, uint64_t overlap, hpl__box *owned,
                     hpl__box *halo);

/* The dispatches of a copy of n0 x n1 runs of run_units units each (the
 * copy kernel, lib/engine/copy.c) when one dispatch may copy at most
 * max_units units (max_units >= run_units >= 1): calls fn for each chunk of
 * c0 x c1 runs from run (r0, r1), in order. Chunks are whole planes of n1
 * runs, as many as fit, or, when one plane does not fit, rows of one
 * plane. Every run is in exactly one chunk. */
typedef void (*hpl__copy_chunk_fn)(void *user, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1);
void hpl__copy_chunks(uint64_t n0, uint64_t n1, uint64_t run_units, uint64_t max_units, hpl__copy_chunk_fn fn, void *user);

/* Halos first (hpl_launch.halos_first): the phases of a part [lo, hi) of
 * the split dimension. Phase 0 runs the rows the neighbours read as their
 * halos: the first w rows when there is a part before it (below), the last
 * w when there is one after it (above); phase 1 runs the rows between
 * (the interior), which read none of the part's halo when a row reads at
 * most w rows away. A part with no interior left (hi - lo <= w times its
 * bands), or w == 0, or no neighbour, runs whole in phase 0. Ranges are
 * [lo, hi), in increasing order, disjoint, covering [lo, hi) together. */
typedef struct hpl__phases {
    int count[2];            /* ranges in phase 0 (1 or 2) and phase 1 (0 or 1) */
    uint64_t range[2][2][2]; /* range[phase][i] = {lo, hi} */
} hpl__phases;
void hpl__halo_phases(uint64_t lo, uint64_t hi, bool below, bool above, uint64_t w, hpl__phases *out);

/* Shares given by a user (launch.shares, a plan's): each finite and >= 0,
 * not all 0; errors name them as what[i]. */
int hpl__shares_check(const double *shares, int count, const char *what);

#endif
