/* Coherence state of one array: which memory (0 = host, 1..N = devices)
 * holds a valid copy of which region, and the timeline points of the work
 * that last wrote each memory and that still reads it. Multiple readers /
 * single writer with invalidation on write (HPL, appendix B). Pure logic: no
 * Vulkan. Synchronisation points are kept per memory (the whole array): a
 * conservative simplification that region-level points can refine later
 * without changing this interface. */
#ifndef HPL_COHERENCE_H
#define HPL_COHERENCE_H

#include "region.h"

#define HPL__MAX_DEVICES 16
#define HPL__MAX_MEMORIES (HPL__MAX_DEVICES + 1)
#define HPL__HOST 0

/* A point on a device's timeline: work is done once the device's timeline
 * semaphore reaches value. value 0 means "nothing to wait for". */
typedef struct hpl__point {
    int device;
    uint64_t value;
} hpl__point;

typedef struct hpl__memory_state {
    hpl__region valid;
    hpl__point writer;                        /* last work that wrote this memory */
    uint64_t readers[HPL__MAX_DEVICES];       /* per device: last work that read it */
} hpl__memory_state;

typedef struct hpl__coherence {
    int memories; /* 1 + number of devices */
    hpl__box whole;
    hpl__region whole_region; /* {whole}; never copy the struct by value */
    hpl__memory_state mem[HPL__MAX_MEMORIES];
} hpl__coherence;

/* A copy the coherence engine needs before an access: `region` from memory
 * src to memory dst. */
typedef struct hpl__transfer {
    int src, dst;
    hpl__region region;
} hpl__transfer;

#define HPL__MAX_TRANSFERS (2 * HPL__MAX_MEMORIES)
typedef struct hpl__transfer_plan {
    int count;
    hpl__transfer steps[HPL__MAX_TRANSFERS]; /* in the order they must run */
} hpl__transfer_plan;

/* whole: the array's index space. Initially valid in `initial` (the host for
 * arrays with host data) or nowhere (initial < 0). */
void hpl__coherence_init(hpl__coherence *c, int memories, const hpl__box *whole, int initial);
void hpl__coherence_free(hpl__coherence *c);

/* What must move so that memory `mem` holds `region` valid: for each piece
 * missing there, a source holding it, preferring the host (one DMA) and else
 * the lowest device, staged through the host when both ends are devices.
 * Pieces valid nowhere (never written) are left out: the caller decides.
 * Returns false on out-of-memory. */
bool hpl__coherence_plan_read(const hpl__coherence *c, int mem, const hpl__region *region, hpl__transfer_plan *plan);
void hpl__transfer_plan_free(hpl__transfer_plan *plan);

/* Record that a transfer ran as work `at`: dst becomes valid on the region,
 * src gains a reader, dst a writer. */
bool hpl__coherence_did_transfer(hpl__coherence *c, const hpl__transfer *t, hpl__point at);
/* Record a read of memory `mem` by work `at`. */
void hpl__coherence_did_read(hpl__coherence *c, int mem, hpl__point at);
/* Record a write of `region` into memory `mem` by work `at` (at.value 0 for
 * the host): mem becomes valid there, every other memory invalid there. */
bool hpl__coherence_did_write(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at);

/* The points work must wait for before it reads (writer only) or writes
 * (writer and every reader) memory `mem`. Appends to out (deduplicated per
 * device, keeping the highest value); returns the new count. */
int hpl__coherence_wait_points(const hpl__coherence *c, int mem, bool for_write, hpl__point *out, int count);
/* Every point of pending work on any memory of the array. */
int hpl__coherence_all_points(const hpl__coherence *c, hpl__point *out, int count);

/* Adds p to a point list keeping one (the highest) point per device. */
int hpl__points_add(hpl__point *list, int count, hpl__point p);

#endif
