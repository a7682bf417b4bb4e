/* Coherence state of one array: which memory holds a valid copy of which
 * region, and the timeline points of the work that last wrote each memory
 * and that still reads it. Multiple readers / single writer with
 * invalidation on write (HPL, appendix B), per region.
 *
 * A memory is the host storage (memory 0, always present, holding the whole
 * array) or one device buffer holding a box of the array (a device may have
 * several: the whole array, a subarray's own buffer). Memories are numbered
 * by slot; a removed slot is reused by the next hpl__coherence_add.
 *
 * Synchronisation points are kept per memory and per device: the last work
 * of each device that wrote the memory, and that read it. A device memory is
 * written by its own device only; the host storage may be written by several
 * devices at once (zero-copy devices running the parts of one eval, halos
 * staged from several devices), so one "last writer" would lose the others:
 * a host read or hpl_array_destroy must wait for every one of them. Every
 * write into a memory (kernel, transfer) waits for the memory's writers and
 * readers known when it is planned. Pure logic: no Vulkan. */
#ifndef HPL_COHERENCE_H
#define HPL_COHERENCE_H

#include "region.h"

#define HPL__MAX_DEVICES 16
#define HPL__HOST 0        /* memory slot of the host storage */
#define HPL__NO_DEVICE (-1) /* hpl__memory_state.device of the host */

/* A point on a device's timeline: work is done once the device's timeline
 * semaphore reaches value. value 0 means "nothing to wait for". */
typedef struct hpl__point {
    int device;
    uint64_t value;
} hpl__point;

typedef struct hpl__memory_state {
    bool used;
    int device;                          /* HPL__NO_DEVICE for the host */
    hpl__box box;                        /* the elements it can hold */
    hpl__region valid;                   /* always inside box */
    uint64_t writers[HPL__MAX_DEVICES];  /* per device: last work that wrote it */
    uint64_t readers[HPL__MAX_DEVICES];  /* per device: last work that read it */
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

/* Record that a transfer ran as work `at`: dst becomes valid on the region,
 * src gains a reader, dst a writer. */
bool hpl__coherence_did_transfer(hpl__coherence *c, const hpl__transfer *t, hpl__point at);
/* Record a read of memory `mem` by work `at`. */
void hpl__coherence_did_read(hpl__coherence *c, int mem, hpl__point at);
/* Record a write of `region` (inside mem's box) into memory `mem` by work
 * `at` (at.value 0 for the host): mem becomes valid there, every other
 * memory invalid there. */
bool hpl__coherence_did_write(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at);
/* `region` of memory `mem` no longer holds valid data (a kernel wrote it
 * outside its owned box); other memories are unchanged. */
bool hpl__coherence_invalidate(hpl__coherence *c, int mem, const hpl__region *region);

/* The points work must wait for before it reads (the writers) or writes
 * (writers and readers) memory `mem`. Appends to out (deduplicated per
 * device, keeping the highest value; out needs room for HPL__MAX_DEVICES);
 * returns the new count. */
int hpl__coherence_wait_points(const hpl__coherence *c, int mem, bool for_write, hpl__point *out, int count);
/* Every point of pending work on any memory of the array. */
int hpl__coherence_all_points(const hpl__coherence *c, hpl__point *out, int count);

/* Adds p to a point list keeping one (the highest) point per device. */
int hpl__points_add(hpl__point *list, int count, hpl__point p);

#endif
