/* Under validation: detects subkernels of multi-device evals that write the
 * halo of a part (see ghost_check.c).
 *
 *   hpl__op_record(&op, &cmd);
 *   hpl__ghost_check_begin(ctx, subkernel, cmd->cb, &gc); // snapshot before
 *   ... record the dispatches ...
 *   hpl__ghost_check_after(device, cmd->cb, &gc);     // snapshot after
 *   hpl__op_submit(&op, cmd, &at);
 *   hpl__ghost_check_end(ctx, device, name, &gc, &at); // waits, compares, reports; frees
 * Does nothing without validation. */
#ifndef HPL_GHOST_CHECK_H
#define HPL_GHOST_CHECK_H

#include "subkernel.h"

typedef struct hpl__ghost_watch {
    hpl__array *root;
    int slot;
    hpl__region region;        /* the part's halo */
    hpl__box bounds;           /* its bounding box: the layout of the snapshots */
    uint64_t bytes;
    VkBuffer buffer[2];        /* before, after */
    VkDeviceMemory memory[2];
    void *map[2];
} hpl__ghost_watch;

typedef struct hpl__ghost_check {
    hpl__ghost_watch watches[HPL__MAX_ARGS];
    int count;
} hpl__ghost_check;

int hpl__ghost_check_begin(hpl_context *ctx, const hpl__subkernel *s, VkCommandBuffer cb, hpl__ghost_check *gc);
void hpl__ghost_check_after(hpl__device *d, VkCommandBuffer cb, hpl__ghost_check *gc);
/* at: the submitted work (NULL when it was not submitted: only frees). */
int hpl__ghost_check_end(hpl_context *ctx, hpl__device *d, const char *kernel, hpl__ghost_check *gc,
                         const hpl__point *at);
void hpl__ghost_check_free(hpl__device *d, hpl__ghost_check *gc);

#endif
