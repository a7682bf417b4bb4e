/* Coherence state of one array: which memory holds a valid copy of which
 * region, and the timeline points of the work that last wrote or read which
 * part of each memory. Multiple readers / single writer with invalidation on
 * write (HPL, appendix B), per region.
 *
 * A memory is the host storage (memory 0, always present, holding the whole
 * array) or one device buffer holding a box of the array (a device may have
 * several: the whole array, a subarray's own buffer). Memories are numbered
 * by slot; a removed slot is reused by the next hpl__coherence_add.
 *
 * Synchronisation points are kept per memory as accesses: a box, the
 * timeline and value of the work that touched it, and whether it wrote. An
 * access to a region waits for the points of the accesses overlapping it:
 * a read for the writers, a write for the writers and the readers. So work
 * on disjoint parts of one memory never waits for each other: halo rows
 * staged into the host from two devices, a host write of rows that a
 * zero-copy kernel does not read. A device memory is touched by its own
 * device's timelines only (the compute queue, and the transfer lane reading
 * it for a download); the host storage by several devices at once
 * (zero-copy devices running the parts of one eval, halos staged from
 * several devices), so accesses of every timeline are kept side by side,
 * never one "last writer": a host read or hpl_array_destroy waits for every
 * one of them.
 *
 * Invariants (what makes a wait list enough):
 * - the boxes of a memory's accesses cover every element pending work
 *   touched there: callers record the regions their work reads and writes
 *   (transfers both ends; a kernel on the host storage writes only its
 *   owned box, hplvk.h 7b);
 * - an access is dropped only when its point needs no wait any more: another
 *   access of the same timeline with a value at least as high covers its box
 *   and waits whenever it does (a write covers reads and writes, a read
 *   covers reads), or the caller says the point is complete
 *   (hpl__coherence_retire);
 * - bounds: per memory, timeline and kind (read / write) at most
 *   HPL__ACCESSES_PER_TIMELINE accesses; one more merges the two of lowest
 *   values into one access over their bounding box with the higher value
 *   (waits may then cover more than needed, never less). If the list cannot
 *   grow (out of memory) the point covers the whole memory as a write.
 * Work of the host itself (value 0) leaves no point: the host has done it.
 * Pure logic: no Vulkan. */
#ifndef HPL_COHERENCE_H
#define HPL_COHERENCE_H

#include "region.h"

#define HPL__MAX_DEVICES 16
#define HPL__HOST 0        /* memory slot of the host storage */
#define HPL__NO_DEVICE (-1) /* hpl__memory_state.device of the host */

/* Timelines: each device has two, numbered apart: its compute queue's
 * (timeline = the device's index) and its transfer lane's (HPL__LANE +
 * index), on which downloads to the host run beside its kernels. Here a
 * timeline is only a number. */
#define HPL__LANE HPL__MAX_DEVICES
#define HPL__MAX_TIMELINES (2 * HPL__MAX_DEVICES)
_Static_assert(HPL__MAX_TIMELINES <= 32, "hpl__memory_state.overflowed has a bit per timeline");

/* A point on a timeline: work is done once the timeline's semaphore
 * reaches value. value 0 means "nothing to wait for". */
typedef struct hpl__point {
    int timeline;
    uint64_t value;
} hpl__point;

/* Pending work that touched `box` of a memory (see the header comment). */
typedef struct hpl__access {
    hpl__box box;
    uint64_t value;
    int timeline;
    bool write;
    bool widened; /* merged: box covers more than the work touched */
} hpl__access;

#define HPL__ACCESSES_PER_TIMELINE 8 /* per memory, timeline and kind */

typedef struct hpl__memory_state {
    bool used;
    int device;            /* HPL__NO_DEVICE for the host */
    hpl__box box;          /* the elements it can hold */
    hpl__region valid;     /* always inside box */
    hpl__access *accesses; /* unordered */
    uint32_t access_count, access_capacity;
    /* Per timeline: a write point on all of it, for an access the list
     * could not take (out of memory); bit t of overflowed: overflow[t] is
     * not 0 (waits look at no other). */
    uint64_t overflow[HPL__MAX_TIMELINES];
    uint32_t overflowed;
} hpl__memory_state;

typedef struct hpl__coherence {
    hpl__box whole;
    hpl__region whole_region; /* {whole}; never copy the struct by value */
    int count;                /* slots in mem, used or not */
    int capacity;
    hpl__memory_state *mem;   /* [HPL__HOST] is the host */
} hpl__coherence;

/* A copy the coherence engine needs before an access: `region` from memory
 * src to memory dst. Both ends on one device: a copy within the device;
 * one end the host: a DMA run on the device's queue. */
typedef struct hpl__transfer {
    int src, dst;
    hpl__region region;
} hpl__transfer;

typedef struct hpl__transfer_plan {
    int count, capacity;
    hpl__transfer *steps; /* in the order they must run */
} hpl__transfer_plan;

/* whole: the array's index space. The host holds it valid when host_valid
 * (arrays start with the user's data or zeros), else nothing is valid.
 * Returns false on out-of-memory (nothing to free then). */
bool hpl__coherence_init(hpl__coherence *c, const hpl__box *whole, bool host_valid);
void hpl__coherence_free(hpl__coherence *c);

/* A new device memory holding `box` (inside whole), valid nowhere yet.
 * Returns its slot, or -1 on out-of-memory. */
int hpl__coherence_add(hpl__coherence *c, int device, const hpl__box *box);
/* Forgets memory `mem` (not the host) and whatever was valid only there:
 * callers save that first (hpl__coherence_only_here). */
void hpl__coherence_remove(hpl__coherence *c, int mem);

/* out = the part of `within` that is valid in `mem` and in no other memory.
 * out must be initialised; false on out-of-memory. */
bool hpl__coherence_only_here(const hpl__coherence *c, int mem, const hpl__region *within, hpl__region *out);

/* What must move so that memory `mem` holds `region` (inside its box)
 * valid: for each missing piece a source holding it, preferring another
 * memory of the same device (a copy within the device), then the host (one
 * DMA), then the other devices' memories in slot order, staged through the
 * host (two steps: src -> host, host -> mem). Pieces valid nowhere are left
 * out: the caller decides. plan must be zero-initialised or freed; false on
 * out-of-memory (plan empty then). */
bool hpl__coherence_plan_read(const hpl__coherence *c, int mem, const hpl__region *region, hpl__transfer_plan *plan);
void hpl__transfer_plan_free(hpl__transfer_plan *plan);
/* Removes steps first .. first + count - 1 (run some other way). */
void hpl__transfer_plan_drop(hpl__transfer_plan *plan, int first, int count);

/* Record that a transfer ran as work `at`: dst becomes valid on the region,
 * src gains a read access there, dst a write access. */
bool hpl__coherence_did_transfer(hpl__coherence *c, const hpl__transfer *t, hpl__point at);
/* Record a read of `region` of memory `mem` by work `at`. */
void hpl__coherence_did_read(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at);
/* Record a write of `region` (inside mem's box) into memory `mem` by work
 * `at` (at.value 0 for the host): mem becomes valid there, every other
 * memory invalid there. */
bool hpl__coherence_did_write(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at);
/* Record that work `at` wrote `region` of memory `mem` without making it
 * valid anywhere (a kernel's ghost part in its device's memory): only the
 * point, so that later work there waits for it. */
void hpl__coherence_did_touch(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at);
/* `region` of memory `mem` no longer holds valid data (a kernel wrote it
 * outside its owned box); other memories are unchanged. */
bool hpl__coherence_invalidate(hpl__coherence *c, int mem, const hpl__region *region);
/* Record that work `at` may have written `region` of memory `mem` outside
 * owned boxes (a kernel's ghost part, hplvk.h 4b), which counts as no
 * write: every later access there waits for it (hpl__coherence_did_touch),
 * and afterwards each element of region has one value, whichever memory
 * holds it. Such writes are discarded wherever another memory holds the
 * element valid: in a device memory the region becomes invalid (callers
 * save what only it holds first); in the host storage, which a zero-copy
 * device writes directly, the elements another memory holds valid become
 * invalid there, and the next fetch overwrites what was written. What the
 * host storage alone holds has nowhere else to come from: what is there is
 * the value, written or not. False on out-of-memory (the point is recorded
 * all the same). */
bool hpl__coherence_did_scribble(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at);

/* The points work must wait for before it reads (the writers) or writes
 * (writers and readers) `region` of memory `mem`; region NULL: all of the
 * memory (eviction). Appends to out (deduplicated per timeline, keeping the
 * highest value; out needs room for HPL__MAX_TIMELINES); returns the new
 * count. */
int hpl__coherence_wait_points(const hpl__coherence *c, int mem, const hpl__region *region, bool for_write,
                               hpl__point *out, int count);
/* Every point of pending work on any memory of the array (destroy, wait). */
int hpl__coherence_all_points(const hpl__coherence *c, hpl__point *out, int count);
/* The work of each done[i].timeline up to done[i].value is complete: forgets
 * those points (they need no wait). */
void hpl__coherence_retire(hpl__coherence *c, const hpl__point *done, int count);
/* Does every access of memory `mem` cover only what its work touched (no
 * merge, no whole-memory point), so that wait_points is exact there? */
bool hpl__coherence_exact(const hpl__coherence *c, int mem);

/* Adds p to a point list keeping one (the highest) point per timeline. */
int hpl__points_add(hpl__point *list, int count, hpl__point p);

#endif
