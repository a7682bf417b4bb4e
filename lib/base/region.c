/* Regions: sets of disjoint half-open boxes, kept coalesced.
 *
 * Every mutating operation computes its result into a scratch buffer (on the
 * stack for small results), coalesces it (pairwise merges; a canonical
 * rebuild when that leaves more boxes than fit inline), and only then
 * replaces r's boxes. So an allocation failure can only happen before r is
 * touched, and r is left unchanged. Regions are a handful of boxes, so the
 * quadratic loops below are cheaper than any indexing structure would be. */
#include "region.h"

#include "common.h"

#include <stdlib.h>
#include <string.h>

#define DIMS HPL__REGION_DIMS
#define INLINE HPL__REGION_INLINE

/* Boxes a scratch buffer holds before going to the heap. A one-box operation
 * on a small region produces at most 6 pieces per box it cuts, so this keeps
 * the common case free of allocation. */
#define SCRATCH_LOCAL 32

typedef struct scratch {
    hpl__box *v; /* local or heap */
    uint32_t n, cap;
    hpl__box local[SCRATCH_LOCAL];
} scratch;

/* ---- Boxes ---------------------------------------------------------------- */

hpl__box hpl__box_make(int ndims, const uint64_t lo[], const uint64_t hi[])
{
    hpl__box b;
    for (int d = 0; d < DIMS; d++) {
        bool used = d < ndims;
        b.lo[d] = used ? lo[d] : 0;
        b.hi[d] = used ? hi[d] : 1;
    }
    return b;
}

bool hpl__box_empty(const hpl__box *b)
{
    for (int d = 0; d < DIMS; d++)
        if (b->lo[d] >= b->hi[d])
            return true;
    return false;
}

/* Saturates at UINT64_MAX rather than wrapping, so an absurd box never looks
 * small; the region code treats UINT64_MAX as "not exact". */
uint64_t hpl__box_volume(const hpl__box *b)
{
    if (hpl__box_empty(b))
        return 0;
    uint64_t v = 1;
    for (int d = 0; d < DIMS; d++)
        if (!hpl__mul_u64(v, b->hi[d] - b->lo[d], &v))
            return UINT64_MAX;
    return v;
}

/* out may alias a or b. out is written even when the result is empty. */
bool hpl__box_intersect(const hpl__box *a, const hpl__box *b, hpl__box *out)
{
    hpl__box i;
    for (int d = 0; d < DIMS; d++) {
        i.lo[d] = HPL__MAX(a->lo[d], b->lo[d]);
        i.hi[d] = HPL__MIN(a->hi[d], b->hi[d]);
    }
    *out = i;
    return !hpl__box_empty(&i);
}

/* Set semantics: the empty box is inside every box. */
bool hpl__box_contains(const hpl__box *outer, const hpl__box *inner)
{
    if (hpl__box_empty(inner))
        return true;
    for (int d = 0; d < DIMS; d++)
        if (inner->lo[d] < outer->lo[d] || inner->hi[d] > outer->hi[d])
            return false;
    return true;
}

/* Set semantics: all empty boxes are equal, whatever their bounds. */
bool hpl__box_equal(const hpl__box *a, const hpl__box *b)
{
    bool ea = hpl__box_empty(a), eb = hpl__box_empty(b);
    if (ea || eb)
        return ea && eb;
    return memcmp(a, b, sizeof *a) == 0;
}

/* Writes a minus i, where i is a non-empty sub-box of a, as up to 6 disjoint
 * non-empty pieces: the slabs of a below and above i along dim 0, then, within
 * i's dim-0 extent, along dim 1, then dim 2. The fixed order means a box cut
 * out and later put back yields pieces that coalescing glues back together.
 * Returns the number of pieces. */
static int box_difference(const hpl__box *a, const hpl__box *i, hpl__box out[2 * DIMS])
{
    hpl__box rest = *a;
    int n = 0;
    for (int d = 0; d < DIMS; d++) {
        if (rest.lo[d] < i->lo[d]) {
            out[n] = rest;
            out[n++].hi[d] = i->lo[d];
        }
        if (i->hi[d] < rest.hi[d]) {
            out[n] = rest;
            out[n++].lo[d] = i->hi[d];
        }
        rest.lo[d] = i->lo[d];
        rest.hi[d] = i->hi[d];
    }
    return n;
}

/* If the union of the disjoint boxes a and b is a box (equal extents in all
 * dimensions but one, touching in that one), stores it in a. */
static bool box_merge(hpl__box *a, const hpl__box *b)
{
    int diff = -1;
    for (int d = 0; d < DIMS; d++) {
        if (a->lo[d] == b->lo[d] && a->hi[d] == b->hi[d])
            continue;
        if (diff >= 0)
            return false;
        diff = d;
    }
    if (diff < 0)
        return false; /* identical: cannot happen for disjoint boxes */
    if (a->hi[diff] == b->lo[diff])
        a->hi[diff] = b->hi[diff];
    else if (b->hi[diff] == a->lo[diff])
        a->lo[diff] = b->lo[diff];
    else
        return false;
    return true;
}

/* Merges pairs until no merge applies (a merge can enable another, e.g. the
 * three pieces of [0,4) [4,6) [6,10)); returns the new count. Order is not
 * preserved. */
static uint32_t coalesce(hpl__box *v, uint32_t n)
{
    bool merged = true;
    while (merged) {
        merged = false;
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = i + 1; j < n; j++)
                if (box_merge(&v[i], &v[j])) {
                    v[j--] = v[--n]; /* re-examine the box moved into slot j */
                    merged = true;
                }
    }
    return n;
}

/* ---- Scratch buffers ------------------------------------------------------ */

static void scratch_init(scratch *s)
{
    s->v = s->local;
    s->n = 0;
    s->cap = SCRATCH_LOCAL;
}

static void scratch_free(scratch *s)
{
    if (s->v != s->local)
        hpl__free(s->v);
    scratch_init(s);
}

static bool scratch_reserve(scratch *s, uint32_t extra)
{
    if (extra <= s->cap - s->n)
        return true;
    uint64_t want = HPL__MAX((uint64_t)s->n + extra, 2 * (uint64_t)s->cap);
    if (want > UINT32_MAX || want > SIZE_MAX / sizeof(hpl__box))
        return false;
    size_t bytes = (size_t)want * sizeof(hpl__box);
    bool local = s->v == s->local;
    hpl__box *v = local ? hpl__malloc(bytes) : hpl__realloc(s->v, bytes);
    if (!v)
        return false; /* s->v is still valid and owned by s */
    if (local)
        memcpy(v, s->local, s->n * sizeof *v);
    s->v = v;
    s->cap = (uint32_t)want;
    return true;
}

static bool scratch_push(scratch *s, const hpl__box *b)
{
    if (!scratch_reserve(s, 1))
        return false;
    s->v[s->n++] = *b;
    return true;
}

static bool scratch_append(scratch *s, const hpl__box *v, uint32_t n)
{
    if (!scratch_reserve(s, n))
        return false;
    if (n)
        memcpy(s->v + s->n, v, n * sizeof *v);
    s->n += n;
    return true;
}

/* Appends src[0..n) minus b. */
static bool scratch_push_difference(scratch *s, const hpl__box *src, uint32_t n, const hpl__box *b)
{
    for (uint32_t k = 0; k < n; k++) {
        hpl__box i;
        if (!hpl__box_intersect(&src[k], b, &i)) {
            if (!scratch_push(s, &src[k]))
                return false;
            continue;
        }
        if (!scratch_reserve(s, 2 * DIMS))
            return false;
        s->n += (uint32_t)box_difference(&src[k], &i, s->v + s->n);
    }
    return true;
}

/* ---- Canonical form ------------------------------------------------------- */

/* Pairwise merging depends on history: cells added in an unlucky order can
 * leave a full square as a "pinwheel" of 5 boxes that no pair merge undoes
 * (a 20x20 square refilled cell by cell ended as 53 boxes). So a result with
 * more boxes than fit inline is rebuilt in a form that depends only on its
 * point set: cut at every dim-1 and dim-2 coordinate, take maximal runs along
 * dim 0 in each cell, join equal runs along dim 1, then along dim 2. The
 * smaller of the two forms is kept, so a region never holds more than
 * max(HPL__REGION_INLINE, canonical) boxes whatever its history, and the
 * common small regions never pay for this. */

/* Work bound (cells x boxes) beyond which a region is taken as genuinely
 * fragmented and not rebuilt: a few microseconds at most. */
#define CANON_BUDGET 4096

/* Sorts for a few dozen elements: insertion sort with inlined comparisons;
 * qsort beyond. */
#define SMALL_SORT 64

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int compare_lo0(const void *a, const void *b)
{
    return compare_u64(&((const hpl__box *)a)->lo[0], &((const hpl__box *)b)->lo[0]);
}

static void sort_u64(uint64_t *c, uint32_t n)
{
    if (n > SMALL_SORT) {
        qsort(c, n, sizeof *c, compare_u64);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        uint64_t t = c[i];
        uint32_t j = i;
        for (; j > 0 && c[j - 1] > t; j--)
            c[j] = c[j - 1];
        c[j] = t;
    }
}

static void sort_by_lo0(hpl__box *v, uint32_t n)
{
    if (n > SMALL_SORT) {
        qsort(v, n, sizeof *v, compare_lo0);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        hpl__box t = v[i];
        uint32_t j = i;
        for (; j > 0 && v[j - 1].lo[0] > t.lo[0]; j--)
            v[j] = v[j - 1];
        v[j] = t;
    }
}

/* Sorted distinct lo/hi coordinates of v along d, into c (room for 2n). */
static uint32_t distinct_coords(uint64_t *c, const hpl__box *v, uint32_t n, int d)
{
    for (uint32_t k = 0; k < n; k++) {
        c[2 * k] = v[k].lo[d];
        c[2 * k + 1] = v[k].hi[d];
    }
    sort_u64(c, 2 * n);
    uint32_t m = 0;
    for (uint32_t k = 0; k < 2 * n; k++)
        if (m == 0 || c[m - 1] != c[k])
            c[m++] = c[k];
    return m;
}

/* Appends, cell by cell of the ys x zs grid (z outer, y inner), the maximal
 * dim-0 runs of v (sorted by lo[0]) in that cell, each as a box one cell
 * thick. A box covers a cell iff it covers the cell's low corner, as cells
 * are never cut by a box boundary. */
static bool cell_runs(scratch *out, const hpl__box *v, uint32_t n, const uint64_t *ys, uint32_t ny,
                      const uint64_t *zs, uint32_t nz)
{
    for (uint32_t z = 0; z + 1 < nz; z++)
        for (uint32_t y = 0; y + 1 < ny; y++) {
            uint32_t first = out->n;
            for (uint32_t k = 0; k < n; k++) {
                const hpl__box *b = &v[k];
                if (b->lo[1] > ys[y] || b->hi[1] <= ys[y] || b->lo[2] > zs[z] || b->hi[2] <= zs[z])
                    continue;
                if (out->n > first && out->v[out->n - 1].hi[0] == b->lo[0]) {
                    out->v[out->n - 1].hi[0] = b->hi[0];
                    continue;
                }
                hpl__box run = {{b->lo[0], ys[y], zs[z]}, {b->hi[0], ys[y + 1], zs[z + 1]}};
                if (!scratch_push(out, &run))
                    return false;
            }
        }
    return true;
}

/* Joins each box onto an earlier one with equal extents except along d that
 * ends where it starts. The input comes ordered by its lo[d] within each
 * group, so chains grow in order. At most one earlier box can match (they
 * are disjoint). Returns the new count; order is preserved. */
static uint32_t join_ordered(hpl__box *v, uint32_t n, int d)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        bool joined = false;
        for (uint32_t j = m; j-- > 0 && !joined;) {
            joined = v[j].hi[d] == v[i].lo[d];
            for (int e = 0; joined && e < DIMS; e++)
                joined = e == d || (v[j].lo[e] == v[i].lo[e] && v[j].hi[e] == v[i].hi[e]);
            if (joined)
                v[j].hi[d] = v[i].hi[d];
        }
        if (!joined)
            v[m++] = v[i];
    }
    return m;
}

/* Replaces s by the canonical form of its boxes if that has fewer boxes.
 * Best effort: on allocation failure or over budget s stays as it is. */
static void canonicalize(scratch *s)
{
    uint32_t n = s->n;
    if (n > CANON_BUDGET) /* cells x boxes >= boxes */
        return;
    uint64_t local[4 * SCRATCH_LOCAL], *ys = local;
    if (4 * (uint64_t)n > HPL__ARRAY_LEN(local) &&
        (4 * (uint64_t)n > SIZE_MAX / sizeof *ys || !(ys = hpl__malloc(4 * (size_t)n * sizeof *ys))))
        return;
    uint64_t *zs = ys + 2 * (size_t)n;
    uint32_t ny = distinct_coords(ys, s->v, n, 1), nz = distinct_coords(zs, s->v, n, 2);
    scratch c;
    scratch_init(&c);
    sort_by_lo0(s->v, n); /* s is a set: its order is free */
    if ((uint64_t)(ny - 1) * (nz - 1) * n <= CANON_BUDGET && cell_runs(&c, s->v, n, ys, ny, zs, nz)) {
        c.n = join_ordered(c.v, c.n, 1);
        c.n = join_ordered(c.v, c.n, 2);
        if (c.n < n) { /* fits: s holds more boxes than that */
            memcpy(s->v, c.v, c.n * sizeof *c.v);
            s->n = c.n;
        }
    }
    scratch_free(&c);
    if (ys != local)
        hpl__free(ys);
}

/* ---- Region storage ------------------------------------------------------- */

/* A zero-initialised region has boxes == NULL and capacity 0; it and any
 * region with capacity <= INLINE use inline_boxes, so the storage is derived
 * from capacity rather than trusted from r->boxes. */
static uint32_t region_capacity(const hpl__region *r)
{
    return r->capacity > INLINE ? r->capacity : INLINE;
}

static hpl__box *region_storage(hpl__region *r)
{
    return r->capacity > INLINE ? r->boxes : r->inline_boxes;
}

static const hpl__box *region_boxes(const hpl__region *r)
{
    return r->capacity > INLINE ? r->boxes : r->inline_boxes;
}

/* Replaces r's boxes by s's, coalesced; may take s's heap, and the caller
 * frees s afterwards either way. On allocation failure r is untouched. Heap
 * storage is kept when the region shrinks: a region that once needed it
 * tends to need it again, and it is small. */
static bool region_commit(hpl__region *r, scratch *s)
{
    s->n = coalesce(s->v, s->n);
    if (s->n > INLINE)
        canonicalize(s);
    if (s->n <= region_capacity(r)) {
        hpl__box *dst = region_storage(r);
        memcpy(dst, s->v, s->n * sizeof *dst);
        r->boxes = dst;
        r->capacity = region_capacity(r);
        r->count = s->n;
        return true; /* the caller frees s */
    }
    hpl__box *heap = s->v;
    uint32_t cap = s->cap;
    if (heap == s->local) { /* result fit the stack but not r: give r a heap */
        cap = HPL__MAX(s->n, 2 * region_capacity(r));
        heap = hpl__malloc(cap * sizeof *heap);
        if (!heap)
            return false;
        memcpy(heap, s->v, s->n * sizeof *heap);
    }
    if (r->capacity > INLINE)
        hpl__free(r->boxes);
    r->boxes = heap;
    r->capacity = cap;
    r->count = s->n;
    scratch_init(s); /* the heap now belongs to r */
    return true;
}

/* Commits if ok, else frees s; returns ok && commit succeeded. */
static bool region_finish(hpl__region *r, scratch *s, bool ok)
{
    if (ok)
        ok = region_commit(r, s);
    scratch_free(s);
    return ok;
}

/* Computes *cur minus every box of s, ping-ponging between *cur and *spare
 * and coalescing after each box so that intermediate results stay small.
 * On return *cur holds the result. */
static bool scratch_minus_region(scratch **cur, scratch **spare, const hpl__region *s)
{
    const hpl__box *sv = region_boxes(s);
    for (uint32_t k = 0; k < s->count; k++) {
        (*spare)->n = 0;
        if (!scratch_push_difference(*spare, (*cur)->v, (*cur)->n, &sv[k]))
            return false;
        (*spare)->n = coalesce((*spare)->v, (*spare)->n);
        scratch *t = *cur;
        *cur = *spare;
        *spare = t;
    }
    return true;
}

/* ---- Regions: lifetime ---------------------------------------------------- */

void hpl__region_init(hpl__region *r)
{
    r->boxes = r->inline_boxes;
    r->count = 0;
    r->capacity = INLINE;
}

void hpl__region_relocated(hpl__region *r)
{
    r->boxes = region_storage(r);
}

void hpl__region_free(hpl__region *r)
{
    if (r->capacity > INLINE)
        hpl__free(r->boxes);
    hpl__region_init(r);
}

void hpl__region_clear(hpl__region *r)
{
    r->boxes = region_storage(r);
    r->capacity = region_capacity(r);
    r->count = 0;
}

/* ---- Regions: mutation ---------------------------------------------------- */

bool hpl__region_set_box(hpl__region *r, const hpl__box *b)
{
    hpl__box copy = *b; /* b may point into r */
    hpl__region_clear(r);
    if (!hpl__box_empty(&copy))
        r->boxes[r->count++] = copy;
    return true;
}

bool hpl__region_copy(hpl__region *dst, const hpl__region *src)
{
    if (dst == src)
        return true;
    uint32_t n = src->count;
    hpl__box *to = region_storage(dst);
    uint32_t cap = region_capacity(dst);
    if (n > cap) { /* src's boxes are already coalesced: allocate exactly */
        to = hpl__malloc(n * sizeof *to);
        if (!to)
            return false;
        if (dst->capacity > INLINE)
            hpl__free(dst->boxes);
        cap = n;
    }
    if (n)
        memcpy(to, region_boxes(src), n * sizeof *to);
    dst->boxes = to;
    dst->capacity = cap;
    dst->count = n;
    return true;
}

/* r |= b is computed as (r - b) + b: the new box stays whole and the old
 * boxes are cut around it, in the fixed order of box_difference, so that
 * re-adding what was cut out glues back into the original boxes. */
bool hpl__region_add_box(hpl__region *r, const hpl__box *b)
{
    if (hpl__box_empty(b))
        return true;
    const hpl__box *v = region_boxes(r);
    for (uint32_t k = 0; k < r->count; k++)
        if (hpl__box_contains(&v[k], b))
            return true; /* already valid: the common re-add of a whole array */
    hpl__box nb = *b; /* b may point into r */
    scratch s;
    scratch_init(&s);
    bool ok = scratch_push_difference(&s, region_boxes(r), r->count, &nb) && scratch_push(&s, &nb);
    return region_finish(r, &s, ok);
}

bool hpl__region_add(hpl__region *r, const hpl__region *s)
{
    if (r == s || s->count == 0)
        return true;
    if (r->count == 0)
        return hpl__region_copy(r, s);
    scratch a, b, *cur = &a, *spare = &b;
    scratch_init(&a);
    scratch_init(&b);
    bool ok = scratch_append(cur, region_boxes(r), r->count) && scratch_minus_region(&cur, &spare, s) &&
              scratch_append(cur, region_boxes(s), s->count);
    scratch_free(spare);
    return region_finish(r, cur, ok);
}

bool hpl__region_subtract_box(hpl__region *r, const hpl__box *b)
{
    if (!hpl__region_intersects_box(r, b))
        return true;
    hpl__box nb = *b;
    scratch s;
    scratch_init(&s);
    bool ok = scratch_push_difference(&s, region_boxes(r), r->count, &nb);
    return region_finish(r, &s, ok);
}

bool hpl__region_subtract(hpl__region *r, const hpl__region *s)
{
    if (r == s) {
        hpl__region_clear(r);
        return true;
    }
    if (r->count == 0 || s->count == 0)
        return true;
    scratch a, b, *cur = &a, *spare = &b;
    scratch_init(&a);
    scratch_init(&b);
    bool ok = scratch_append(cur, region_boxes(r), r->count) && scratch_minus_region(&cur, &spare, s);
    scratch_free(spare);
    return region_finish(r, cur, ok);
}

/* Intersections of disjoint boxes with anything stay disjoint, but clipping
 * can make neighbours mergeable, hence the coalescing in commit. */
bool hpl__region_intersect_box(hpl__region *r, const hpl__box *b)
{
    const hpl__box *v = region_boxes(r);
    uint32_t inside = 0;
    while (inside < r->count && hpl__box_contains(b, &v[inside]))
        inside++;
    if (inside == r->count)
        return true;
    hpl__box nb = *b;
    scratch s;
    scratch_init(&s);
    bool ok = true;
    for (uint32_t k = 0; ok && k < r->count; k++) {
        hpl__box i;
        if (hpl__box_intersect(&v[k], &nb, &i))
            ok = scratch_push(&s, &i);
    }
    return region_finish(r, &s, ok);
}

bool hpl__region_intersect(hpl__region *r, const hpl__region *s)
{
    if (r == s)
        return true;
    const hpl__box *rv = region_boxes(r), *sv = region_boxes(s);
    scratch t;
    scratch_init(&t);
    bool ok = true;
    for (uint32_t k = 0; ok && k < r->count; k++)
        for (uint32_t m = 0; ok && m < s->count; m++) {
            hpl__box i;
            if (hpl__box_intersect(&rv[k], &sv[m], &i))
                ok = scratch_push(&t, &i);
        }
    return region_finish(r, &t, ok);
}

/* ---- Regions: queries ----------------------------------------------------- */

bool hpl__region_empty(const hpl__region *r)
{
    return r->count == 0;
}

/* Saturates at UINT64_MAX, like hpl__box_volume. */
uint64_t hpl__region_volume(const hpl__region *r)
{
    const hpl__box *v = region_boxes(r);
    uint64_t sum = 0;
    for (uint32_t k = 0; k < r->count; k++)
        if (!hpl__add_u64(sum, hpl__box_volume(&v[k]), &sum))
            return UINT64_MAX;
    return sum;
}

/* Exact b subset of union(v[0..n)) without allocating, for when volumes do
 * not fit 64 bits: the first box meeting b covers part of it, and the pieces
 * of the rest, being disjoint from that box and from the boxes before it,
 * must be covered by the boxes after it. b is non-empty. */
static bool boxes_cover(const hpl__box *v, uint32_t n, const hpl__box *b)
{
    for (uint32_t k = 0; k < n; k++) {
        hpl__box i, pieces[2 * DIMS];
        if (!hpl__box_intersect(&v[k], b, &i))
            continue;
        int np = box_difference(b, &i, pieces);
        for (int p = 0; p < np; p++)
            if (!boxes_cover(v + k + 1, n - k - 1, &pieces[p]))
                return false;
        return true;
    }
    return false;
}

/* Non-empty intersection, without building it (queries are hot). */
static bool boxes_meet(const hpl__box *a, const hpl__box *b)
{
    for (int d = 0; d < DIMS; d++)
        if (HPL__MAX(a->lo[d], b->lo[d]) >= HPL__MIN(a->hi[d], b->hi[d]))
            return false;
    return true;
}

/* Usually one box holds b. Otherwise, the boxes being disjoint, b is covered
 * iff the volumes of their intersections with b add up to b's volume: one
 * more pass, no allocation. */
bool hpl__region_contains_box(const hpl__region *r, const hpl__box *b)
{
    if (hpl__box_empty(b))
        return true;
    const hpl__box *v = region_boxes(r);
    for (uint32_t k = 0; k < r->count; k++)
        if (hpl__box_contains(&v[k], b))
            return true;
    uint64_t want = hpl__box_volume(b), got = 0;
    for (uint32_t k = 0; k < r->count; k++) {
        hpl__box i;
        if (hpl__box_intersect(&v[k], b, &i))
            got += hpl__box_volume(&i); /* <= want: disjoint parts of b */
    }
    if (want != UINT64_MAX)
        return got == want;
    return boxes_cover(v, r->count, b);
}

bool hpl__region_contains(const hpl__region *r, const hpl__region *s)
{
    const hpl__box *v = region_boxes(s);
    for (uint32_t k = 0; k < s->count; k++)
        if (!hpl__region_contains_box(r, &v[k]))
            return false;
    return true;
}

bool hpl__region_intersects_box(const hpl__region *r, const hpl__box *b)
{
    const hpl__box *v = region_boxes(r);
    for (uint32_t k = 0; k < r->count; k++)
        if (boxes_meet(&v[k], b))
            return true;
    return false;
}

/* Greedy coalescing is not a canonical form (the same set can be held as
 * different boxes), so compare point sets: equal volumes and a inside b,
 * plus b inside a when the volumes are too large to be exact. */
bool hpl__region_equal(const hpl__region *a, const hpl__region *b)
{
    if (a == b)
        return true;
    const hpl__box *av = region_boxes(a), *bv = region_boxes(b);
    if (a->count == b->count && (a->count == 0 || memcmp(av, bv, a->count * sizeof *av) == 0))
        return true;
    uint64_t vol = hpl__region_volume(a);
    if (vol != hpl__region_volume(b))
        return false;
    for (uint32_t k = 0; k < a->count; k++)
        if (!hpl__region_contains_box(b, &av[k]))
            return false;
    for (uint32_t k = 0; vol == UINT64_MAX && k < b->count; k++)
        if (!hpl__region_contains_box(a, &bv[k]))
            return false;
    return true;
}

/* ---- cutting a region into chunks (transfers in pieces) ---------------- */

typedef struct chunker {
    hpl__region chunk;
    uint64_t volume, max;
    hpl__chunk_fn fn;
    void *user;
} chunker;

static int emit(chunker *k)
{
    if (!k->volume)
        return HPL_OK;
    int rc = k->fn(k->user, &k->chunk);
    hpl__region_clear(&k->chunk);
    k->volume = 0;
    return rc;
}

static int add_piece(chunker *k, const hpl__box *piece)
{
    uint64_t v = hpl__box_volume(piece);
    int rc = k->volume + v > k->max ? emit(k) : HPL_OK;
    if (rc == HPL_OK && !hpl__region_add_box(&k->chunk, piece))
        rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory cutting a transfer into chunks");
    if (rc == HPL_OK)
        k->volume += v;
    return rc;
}

/* Cuts box b into pieces of at most k->max elements: groups of whole
 * planes (dimension 0) when a plane fits, else groups of whole rows of one
 * plane, else runs of one row. Each piece is a box, copied in runs
 * (hpl__box_runs) like any region. */
static int cut_box(chunker *k, const hpl__box *b)
{
    uint64_t e1 = b->hi[1] - b->lo[1], e2 = b->hi[2] - b->lo[2];
    int dim = e1 * e2 <= k->max ? 0 : e2 <= k->max ? 1 : 2;
    uint64_t step = k->max / (dim == 0 ? e1 * e2 : dim == 1 ? e2 : 1);
    uint64_t end0 = dim > 0 ? b->hi[0] : b->lo[0] + 1, end1 = dim > 1 ? b->hi[1] : b->lo[1] + 1;
    int rc = HPL_OK;
    for (uint64_t i0 = b->lo[0]; rc == HPL_OK && i0 < end0; i0++) {
        for (uint64_t i1 = b->lo[1]; rc == HPL_OK && i1 < end1; i1++) {
            for (uint64_t s = b->lo[dim]; rc == HPL_OK && s < b->hi[dim]; s += step) {
                hpl__box p = *b;
                if (dim > 0) {
                    p.lo[0] = i0;
                    p.hi[0] = i0 + 1;
                }
                if (dim > 1) {
                    p.lo[1] = i1;
                    p.hi[1] = i1 + 1;
                }
                p.lo[dim] = s;
                p.hi[dim] = HPL__MIN(s + step, b->hi[dim]);
                rc = add_piece(k, &p);
            }
        }
    }
    return rc;
}

int hpl__region_chunks(const hpl__region *region, uint64_t max, hpl__chunk_fn fn, void *user)
{
    chunker k = {.max = max ? max : 1, .fn = fn, .user = user};
    hpl__region_init(&k.chunk);
    int rc = HPL_OK;
    for (uint32_t i = 0; rc == HPL_OK && i < region->count; i++)
        if (!hpl__box_empty(&region->boxes[i]))
            rc = cut_box(&k, &region->boxes[i]);
    if (rc == HPL_OK)
        rc = emit(&k);
    hpl__region_free(&k.chunk);
    return rc;
}
