/* Eager pushes: what a device sends to the host with the kernel that writes
 * it. See push.h. */
#include "push.h"

#include "common.h"

hpl__push *hpl__push_create(void)
{
    hpl__push *p = hpl__calloc(1, sizeof *p);
    for (int d = 0; p && d < HPL__MAX_DEVICES; d++)
        hpl__region_init(&p->wanted[d]);
    return p;
}

void hpl__push_destroy(hpl__push *p)
{
    if (!p)
        return;
    for (int d = 0; d < HPL__MAX_DEVICES; d++)
        hpl__region_free(&p->wanted[d]);
    hpl__free(p);
}

/* Adds to device d's pattern the rows of `needed` valid in its memory m. */
static bool note_from(hpl__push *p, const hpl__coherence *c, int m, const hpl__region *needed)
{
    int d = c->mem[m].device;
    hpl__region piece;
    hpl__region_init(&piece);
    bool ok = hpl__region_copy(&piece, needed) && hpl__region_intersect(&piece, &c->mem[m].valid) &&
              hpl__region_add(&p->wanted[d], &piece);
    if (!ok)
        hpl__region_clear(&p->wanted[d]);
    hpl__region_free(&piece);
    return ok;
}

bool hpl__push_note_read(hpl__push *p, const hpl__coherence *c, int reader, int reader_mem,
                         const hpl__region *region)
{
    /* What the reader lacks. A zero-copy reader works on the host storage:
     * it lacks what the host holds only because another device pushed it. */
    hpl__region needed;
    hpl__region_init(&needed);
    bool ok = hpl__region_copy(&needed, region);
    if (ok && reader_mem != HPL__HOST)
        ok = hpl__region_subtract(&needed, &c->mem[reader_mem].valid);
    for (int m = 1; ok && !hpl__region_empty(&needed) && m < c->count; m++)
        if (c->mem[m].used && c->mem[m].device != reader)
            ok = note_from(p, c, m, &needed);
    hpl__region_free(&needed);
    return ok;
}

bool hpl__push_take(hpl__push *p, int writer, const hpl__region *written, hpl__region *out)
{
    hpl__region *wanted = &p->wanted[writer];
    hpl__region_clear(out);
    if (hpl__region_empty(wanted))
        return true;
    bool ok = hpl__region_copy(out, wanted) && hpl__region_intersect(out, written) &&
              hpl__region_subtract(wanted, written);
    if (!ok) {
        hpl__region_clear(out);
        hpl__region_clear(wanted);
    }
    return ok;
}
