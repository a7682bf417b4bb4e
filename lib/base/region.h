/* Regions of an array's index space: sets of disjoint boxes, kept coalesced
 * so that a region updated by many partial writes (halos, moving plan
 * boundaries) stays a few boxes. Pure logic: no Vulkan, no library state. */
#ifndef HPL_REGION_H
#define HPL_REGION_H

#include <stdbool.h>
#include <stdint.h>

#define HPL__REGION_DIMS 3

/* Half-open box [lo, hi) per dimension; dimensions an array does not have
 * are [0, 1). A box with lo[d] >= hi[d] for some d is empty. */
typedef struct hpl__box {
    uint64_t lo[HPL__REGION_DIMS], hi[HPL__REGION_DIMS];
} hpl__box;

/* Disjoint boxes. The first few live inline, so the common region (one box,
 * the whole array) costs no allocation. Zero-initialised = empty. */
#define HPL__REGION_INLINE 4
typedef struct hpl__region {
    hpl__box *boxes;       /* points to inline_boxes or to a heap array */
    uint32_t count, capacity;
    hpl__box inline_boxes[HPL__REGION_INLINE];
} hpl__region;

hpl__box hpl__box_make(int ndims, const uint64_t lo[], const uint64_t hi[]);
bool hpl__box_empty(const hpl__box *b);
uint64_t hpl__box_volume(const hpl__box *b);
bool hpl__box_intersect(const hpl__box *a, const hpl__box *b, hpl__box *out); /* false if empty */
bool hpl__box_contains(const hpl__box *outer, const hpl__box *inner);
bool hpl__box_equal(const hpl__box *a, const hpl__box *b);

void hpl__region_init(hpl__region *r);
/* Call after r's bytes moved (realloc of an array of regions): a region with
 * inline storage points into itself. */
void hpl__region_relocated(hpl__region *r);
void hpl__region_free(hpl__region *r);
void hpl__region_clear(hpl__region *r);
/* The mutating operations return false only on out-of-memory, leaving r
 * unchanged. */
bool hpl__region_set_box(hpl__region *r, const hpl__box *b);        /* r = b */
bool hpl__region_copy(hpl__region *dst, const hpl__region *src);    /* dst = src */
bool hpl__region_add_box(hpl__region *r, const hpl__box *b);        /* r |= b */
bool hpl__region_add(hpl__region *r, const hpl__region *s);         /* r |= s */
bool hpl__region_subtract_box(hpl__region *r, const hpl__box *b);   /* r -= b */
bool hpl__region_subtract(hpl__region *r, const hpl__region *s);    /* r -= s */
bool hpl__region_intersect_box(hpl__region *r, const hpl__box *b);  /* r &= b */
bool hpl__region_intersect(hpl__region *r, const hpl__region *s);   /* r &= s */
bool hpl__region_empty(const hpl__region *r);
uint64_t hpl__region_volume(const hpl__region *r);
bool hpl__region_contains_box(const hpl__region *r, const hpl__box *b); /* b subset of r */
bool hpl__region_contains(const hpl__region *r, const hpl__region *s);  /* s subset of r; allocates nothing */
bool hpl__region_intersects_box(const hpl__region *r, const hpl__box *b);
bool hpl__region_equal(const hpl__region *a, const hpl__region *b);     /* same point set */

/* Calls fn with region cut into chunks of at most max elements, in order,
 * each the union of pieces of region's boxes: groups of whole planes of a
 * box, else groups of whole rows of one plane, else runs of one row. Stops
 * at fn's first error and returns it. */
typedef int (*hpl__chunk_fn)(void *user, const hpl__region *chunk);
int hpl__region_chunks(const hpl__region *region, uint64_t max, hpl__chunk_fn fn, void *user);

#endif
