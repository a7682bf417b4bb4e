/* Eager pushes: the rows of an array a device sends to the host storage as
 * soon as it writes them, in the same submission as the kernel.
 *
 * Transfers are lazy (HPL, appendix B): a halo row goes to its reader when
 * the reader's eval needs it. On two devices running a stencil step after
 * step, that is one submission more per device and step: the writer's
 * kernel of step i was submitted when it ran, so its rows' download for
 * step i + 1 is a submission of its own, before the reader's upload and
 * kernel. Vulkan has no cross-queue wait inside a submission, so the
 * download cannot join the writer's next kernel (that one waits for the
 * reader: a cycle). Pushed with the kernel that wrote them, the rows are on
 * the host when the reader's eval needs them, and each device submits once
 * a step.
 *
 * What to push is learned from the reads: the rows other devices read from
 * device d's memories, not holding them themselves (what moved there, or
 * would have moved had d not pushed it), are what d pushes when it writes
 * them next. A write takes the rows it writes out of the pattern: they come
 * back when another device reads them again. An array read with a halo
 * once and then written step after step costs one push, not one per
 * write. Bytes moved stay the same in a loop that reads what the previous
 * eval wrote; they move at the write, not at the read.
 * Pure logic: no Vulkan. */
#ifndef HPL_PUSH_H
#define HPL_PUSH_H

#include "coherence.h"

typedef struct hpl__push {
    hpl__region wanted[HPL__MAX_DEVICES]; /* rows others read from device d since d wrote them */
} hpl__push;

/* Returns NULL on out-of-memory. */
hpl__push *hpl__push_create(void);
void hpl__push_destroy(hpl__push *p);

/* Device `reader`, through its memory `reader_mem` of c (HPL__HOST for a
 * zero-copy device), reads `region`: the part of it valid in another
 * device's memory, and not already in reader_mem, joins what that device
 * pushes when it writes it next. Call before the read's transfers are
 * recorded in c. False on out-of-memory (that device's pattern is dropped
 * then: no push, no loss). */
bool hpl__push_note_read(hpl__push *p, const hpl__coherence *c, int reader, int reader_mem,
                         const hpl__region *region);

/* Device `writer` writes `written`: out (initialised) gets the rows it
 * pushes, empty when none; they leave the pattern. False on out-of-memory
 * (out empty, the writer's pattern dropped). */
bool hpl__push_take(hpl__push *p, int writer, const hpl__region *written, hpl__region *out);

#endif
