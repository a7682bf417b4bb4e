/* Coherence engine: validity per memory as regions, MRSW with invalidation
 * on write. See coherence.h. */
#include "coherence.h"

#include <string.h>

void hpl__coherence_init(hpl__coherence *c, int memories, const hpl__box *whole, int initial)
{
    memset(c, 0, sizeof *c);
    c->memories = memories;
    c->whole = *whole;
    hpl__region_init(&c->whole_region);
    hpl__region_set_box(&c->whole_region, whole); /* inline storage: cannot fail */
    for (int m = 0; m < memories; m++)
        hpl__region_init(&c->mem[m].valid);
    if (initial >= 0)
        hpl__region_set_box(&c->mem[initial].valid, whole); /* inline storage: cannot fail */
}

void hpl__coherence_free(hpl__coherence *c)
{
    hpl__region_free(&c->whole_region);
    for (int m = 0; m < c->memories; m++)
        hpl__region_free(&c->mem[m].valid);
}

void hpl__transfer_plan_free(hpl__transfer_plan *plan)
{
    for (int i = 0; i < plan->count; i++)
        hpl__region_free(&plan->steps[i].region);
    plan->count = 0;
}

static hpl__transfer *plan_push(hpl__transfer_plan *plan, int src, int dst)
{
    hpl__transfer *t = &plan->steps[plan->count++];
    t->src = src;
    t->dst = dst;
    hpl__region_init(&t->region);
    return t;
}

/* Sources in order of preference for filling memory mem: the host first
 * (one DMA to any device), then the devices in order. */
static int source_order(const hpl__coherence *c, int mem, int order[])
{
    int n = 0;
    if (mem != HPL__HOST)
        order[n++] = HPL__HOST;
    for (int m = 1; m < c->memories; m++)
        if (m != mem)
            order[n++] = m;
    return n;
}

bool hpl__coherence_plan_read(const hpl__coherence *c, int mem, const hpl__region *region, hpl__transfer_plan *plan)
{
    plan->count = 0;
    hpl__region missing, piece;
    hpl__region_init(&missing);
    hpl__region_init(&piece);
    bool ok = hpl__region_copy(&missing, region) && hpl__region_subtract(&missing, &c->mem[mem].valid);
    int order[HPL__MAX_MEMORIES];
    int n = source_order(c, mem, order);
    for (int i = 0; ok && i < n && !hpl__region_empty(&missing); i++) {
        int src = order[i];
        ok = hpl__region_copy(&piece, &missing) && hpl__region_intersect(&piece, &c->mem[src].valid);
        if (!ok || hpl__region_empty(&piece))
            continue;
        ok = hpl__region_subtract(&missing, &piece);
        if (ok && src != HPL__HOST && mem != HPL__HOST) {
            /* Device to device goes through the host: stage first. */
            ok = hpl__region_copy(&plan_push(plan, src, HPL__HOST)->region, &piece);
            src = HPL__HOST;
        }
        if (ok)
            ok = hpl__region_copy(&plan_push(plan, src, mem)->region, &piece);
    }
    hpl__region_free(&missing);
    hpl__region_free(&piece);
    if (!ok)
        hpl__transfer_plan_free(plan);
    return ok;
}

int hpl__points_add(hpl__point *list, int count, hpl__point p)
{
    if (p.value == 0)
        return count;
    for (int i = 0; i < count; i++) {
        if (list[i].device == p.device) {
            if (p.value > list[i].value)
                list[i].value = p.value;
            return count;
        }
    }
    list[count] = p;
    return count + 1;
}

static void set_writer(hpl__memory_state *s, hpl__point at)
{
    if (at.value)
        s->writer = at;
}

static void add_reader(hpl__memory_state *s, hpl__point at)
{
    if (at.value && at.value > s->readers[at.device])
        s->readers[at.device] = at.value;
}

bool hpl__coherence_did_transfer(hpl__coherence *c, const hpl__transfer *t, hpl__point at)
{
    if (!hpl__region_add(&c->mem[t->dst].valid, &t->region))
        return false;
    add_reader(&c->mem[t->src], at);
    set_writer(&c->mem[t->dst], at);
    return true;
}

void hpl__coherence_did_read(hpl__coherence *c, int mem, hpl__point at)
{
    add_reader(&c->mem[mem], at);
}

/* Exchanges two regions; regions using inline storage point into themselves,
 * so the pointers are fixed after the struct copies. */
static void region_swap(hpl__region *a, hpl__region *b)
{
    hpl__region tmp = *a;
    *a = *b;
    *b = tmp;
    if (a->boxes == b->inline_boxes)
        a->boxes = a->inline_boxes;
    if (b->boxes == a->inline_boxes)
        b->boxes = b->inline_boxes;
}

bool hpl__coherence_did_write(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at)
{
    /* Compute every new validity first so that out-of-memory changes nothing. */
    hpl__region next[HPL__MAX_MEMORIES];
    bool ok = true;
    for (int m = 0; m < c->memories; m++) {
        hpl__region_init(&next[m]);
        if (ok)
            ok = hpl__region_copy(&next[m], &c->mem[m].valid) &&
                 (m == mem ? hpl__region_add(&next[m], region) : hpl__region_subtract(&next[m], region));
    }
    for (int m = 0; m < c->memories; m++) {
        if (ok)
            region_swap(&c->mem[m].valid, &next[m]);
        hpl__region_free(&next[m]);
    }
    if (ok)
        set_writer(&c->mem[mem], at);
    return ok;
}

int hpl__coherence_wait_points(const hpl__coherence *c, int mem, bool for_write, hpl__point *out, int count)
{
    const hpl__memory_state *s = &c->mem[mem];
    count = hpl__points_add(out, count, s->writer);
    if (for_write)
        for (int d = 0; d < c->memories - 1; d++)
            count = hpl__points_add(out, count, (hpl__point){d, s->readers[d]});
    return count;
}

int hpl__coherence_all_points(const hpl__coherence *c, hpl__point *out, int count)
{
    for (int m = 0; m < c->memories; m++)
        count = hpl__coherence_wait_points(c, m, true, out, count);
    return count;
}
