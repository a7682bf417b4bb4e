/* Coherence engine: validity per memory as regions, MRSW with invalidation
 * on write, synchronisation points per accessed box. See coherence.h. */
#include "coherence.h"

#include "common.h"

#include <string.h>

/* Scratch for up to this many memories lives on the stack. */
#define HPL__FEW_MEMORIES 8

static void state_init(hpl__memory_state *s, int device, const hpl__box *box)
{
    memset(s, 0, sizeof *s);
    s->used = true;
    s->device = device;
    s->box = *box;
    hpl__region_init(&s->valid);
}

bool hpl__coherence_init(hpl__coherence *c, const hpl__box *whole, bool host_valid)
{
    memset(c, 0, sizeof *c);
    c->whole = *whole;
    hpl__region_init(&c->whole_region);
    hpl__region_set_box(&c->whole_region, whole); /* inline storage: cannot fail */
    c->mem = hpl__calloc(4, sizeof *c->mem);
    if (!c->mem)
        return false;
    c->capacity = 4;
    c->count = 1;
    state_init(&c->mem[HPL__HOST], HPL__NO_DEVICE, whole);
    if (host_valid)
        hpl__region_set_box(&c->mem[HPL__HOST].valid, whole); /* inline storage: cannot fail */
    return true;
}

void hpl__coherence_free(hpl__coherence *c)
{
    hpl__region_free(&c->whole_region);
    for (int m = 0; m < c->count; m++) {
        hpl__region_free(&c->mem[m].valid);
        hpl__free(c->mem[m].accesses);
    }
    hpl__free(c->mem);
    c->mem = NULL;
    c->count = c->capacity = 0;
}

int hpl__coherence_add(hpl__coherence *c, int device, const hpl__box *box)
{
    int slot = 1;
    while (slot < c->count && c->mem[slot].used)
        slot++;
    if (slot == c->capacity) {
        hpl__memory_state *mem = hpl__realloc(c->mem, 2 * (size_t)c->capacity * sizeof *mem);
        if (!mem)
            return -1;
        for (int m = 0; m < c->count; m++)
            hpl__region_relocated(&mem[m].valid);
        c->mem = mem;
        c->capacity *= 2;
    }
    if (slot == c->count)
        c->count++;
    state_init(&c->mem[slot], device, box);
    return slot;
}

void hpl__coherence_remove(hpl__coherence *c, int mem)
{
    hpl__region_free(&c->mem[mem].valid);
    hpl__free(c->mem[mem].accesses);
    memset(&c->mem[mem], 0, sizeof c->mem[mem]);
    while (c->count > 1 && !c->mem[c->count - 1].used)
        c->count--;
}

bool hpl__coherence_only_here(const hpl__coherence *c, int mem, const hpl__region *within, hpl__region *out)
{
    if (!hpl__region_copy(out, within) || !hpl__region_intersect(out, &c->mem[mem].valid))
        return false;
    for (int m = 0; m < c->count && !hpl__region_empty(out); m++)
        if (m != mem && c->mem[m].used && !hpl__region_subtract(out, &c->mem[m].valid))
            return false;
    return true;
}

void hpl__transfer_plan_free(hpl__transfer_plan *plan)
{
    for (int i = 0; i < plan->count; i++)
        hpl__region_free(&plan->steps[i].region);
    hpl__free(plan->steps);
    memset(plan, 0, sizeof *plan);
}

void hpl__transfer_plan_drop(hpl__transfer_plan *plan, int first, int count)
{
    for (int i = first; i < first + count; i++)
        hpl__region_free(&plan->steps[i].region);
    memmove(&plan->steps[first], &plan->steps[first + count],
            (size_t)(plan->count - first - count) * sizeof *plan->steps);
    plan->count -= count;
    for (int i = first; i < plan->count; i++)
        hpl__region_relocated(&plan->steps[i].region);
}

static hpl__transfer *plan_push(hpl__transfer_plan *plan, int src, int dst)
{
    if (plan->count == plan->capacity) {
        int cap = plan->capacity ? 2 * plan->capacity : 4;
        hpl__transfer *steps = hpl__realloc(plan->steps, (size_t)cap * sizeof *steps);
        if (!steps)
            return NULL;
        for (int i = 0; i < plan->count; i++)
            hpl__region_relocated(&steps[i].region);
        plan->steps = steps;
        plan->capacity = cap;
    }
    hpl__transfer *t = &plan->steps[plan->count++];
    t->src = src;
    t->dst = dst;
    hpl__region_init(&t->region);
    return t;
}

static bool plan_add(hpl__transfer_plan *plan, int src, int dst, const hpl__region *region)
{
    hpl__transfer *t = plan_push(plan, src, dst);
    return t && hpl__region_copy(&t->region, region);
}

/* Sources in order of preference for filling memory mem: memories of the
 * same device (a copy within the device), the host (one DMA), then the
 * other devices' memories (two DMAs through the host). */
static int source_order(const hpl__coherence *c, int mem, int *order)
{
    int device = c->mem[mem].device, n = 0;
    if (device != HPL__NO_DEVICE)
        for (int m = 1; m < c->count; m++)
            if (m != mem && c->mem[m].used && c->mem[m].device == device)
                order[n++] = m;
    if (mem != HPL__HOST)
        order[n++] = HPL__HOST;
    for (int m = 1; m < c->count; m++)
        if (m != mem && c->mem[m].used && c->mem[m].device != device)
            order[n++] = m;
    return n;
}

bool hpl__coherence_plan_read(const hpl__coherence *c, int mem, const hpl__region *region, hpl__transfer_plan *plan)
{
    hpl__transfer_plan_free(plan);
    /* The usual case in a loop: nothing is missing, and nothing is
     * allocated (a halos-first eval's interiors plan this way after their
     * bands were submitted). */
    if (hpl__region_contains(&c->mem[mem].valid, region))
        return true;
    /* The common case (a few memories) allocates nothing here. */
    int few[HPL__FEW_MEMORIES];
    int *order = c->count <= HPL__FEW_MEMORIES ? few : hpl__malloc((size_t)c->count * sizeof *order);
    hpl__region missing, piece;
    hpl__region_init(&missing);
    hpl__region_init(&piece);
    bool ok = order && hpl__region_copy(&missing, region) && hpl__region_subtract(&missing, &c->mem[mem].valid);
    int n = ok ? source_order(c, mem, order) : 0;
    for (int i = 0; ok && i < n && !hpl__region_empty(&missing); i++) {
        int src = order[i];
        ok = hpl__region_copy(&piece, &missing) && hpl__region_intersect(&piece, &c->mem[src].valid);
        if (!ok || hpl__region_empty(&piece))
            continue;
        ok = hpl__region_subtract(&missing, &piece);
        bool staged = src != HPL__HOST && mem != HPL__HOST && c->mem[src].device != c->mem[mem].device;
        if (ok && staged) {
            ok = plan_add(plan, src, HPL__HOST, &piece);
            src = HPL__HOST;
        }
        if (ok)
            ok = plan_add(plan, src, mem, &piece);
    }
    hpl__region_free(&missing);
    hpl__region_free(&piece);
    if (order != few)
        hpl__free(order);
    if (!ok)
        hpl__transfer_plan_free(plan);
    return ok;
}

int hpl__points_add(hpl__point *list, int count, hpl__point p)
{
    if (p.value == 0)
        return count;
    for (int i = 0; i < count; i++) {
        if (list[i].timeline == p.timeline) {
            if (p.value > list[i].value)
                list[i].value = p.value;
            return count;
        }
    }
    list[count] = p;
    return count + 1;
}

/* ---- synchronisation points per box ------------------------------------ */

static void access_remove(hpl__memory_state *s, uint32_t i)
{
    s->accesses[i] = s->accesses[--s->access_count];
}

/* Does a new access (region, at, write) make e needless? Only if every
 * query that would wait for e waits for the new one, as late or later. */
static bool dominated(const hpl__access *e, const hpl__region *region, hpl__point at, bool write)
{
    return e->timeline == at.timeline && e->value <= at.value && (write || !e->write) &&
           hpl__region_contains_box(region, &e->box);
}

static uint32_t count_kind(const hpl__memory_state *s, int timeline, bool write)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->access_count; i++)
        n += s->accesses[i].timeline == timeline && s->accesses[i].write == write;
    return n;
}

/* Merges the two accesses of timeline and kind with the lowest values (the
 * likeliest to be done already) into one over their bounding box. */
static void merge_oldest(hpl__memory_state *s, int timeline, bool write)
{
    int first = -1, second = -1;
    for (uint32_t i = 0; i < s->access_count; i++) {
        const hpl__access *e = &s->accesses[i];
        if (e->timeline != timeline || e->write != write)
            continue;
        if (first < 0 || e->value < s->accesses[first].value) {
            second = first;
            first = (int)i;
        } else if (second < 0 || e->value < s->accesses[second].value) {
            second = (int)i;
        }
    }
    hpl__access *a = &s->accesses[first];
    const hpl__access *b = &s->accesses[second];
    for (int d = 0; d < HPL__REGION_DIMS; d++) {
        a->box.lo[d] = HPL__MIN(a->box.lo[d], b->box.lo[d]);
        a->box.hi[d] = HPL__MAX(a->box.hi[d], b->box.hi[d]);
    }
    a->value = HPL__MAX(a->value, b->value);
    a->widened = true;
    access_remove(s, (uint32_t)second); /* may move a, which is final */
}

static bool accesses_reserve(hpl__memory_state *s)
{
    if (s->access_count < s->access_capacity)
        return true;
    uint32_t cap = s->access_capacity ? 2 * s->access_capacity : 4;
    hpl__access *list = hpl__realloc(s->accesses, cap * sizeof *list);
    if (!list)
        return false;
    s->accesses = list;
    s->access_capacity = cap;
    return true;
}

static void access_push(hpl__memory_state *s, const hpl__box *box, hpl__point at, bool write)
{
    if (count_kind(s, at.timeline, write) >= HPL__ACCESSES_PER_TIMELINE)
        merge_oldest(s, at.timeline, write);
    if (!accesses_reserve(s)) {
        /* Out of memory: the point covers everything, waited for by all. */
        s->overflow[at.timeline] = HPL__MAX(s->overflow[at.timeline], at.value);
        s->overflowed |= 1u << at.timeline;
        return;
    }
    s->accesses[s->access_count++] = (hpl__access){.box = *box, .value = at.value, .timeline = at.timeline, .write = write};
}

/* Work `at` read (or wrote) `region` of memory s. */
static void record(hpl__memory_state *s, const hpl__region *region, hpl__point at, bool write)
{
    if (at.value == 0)
        return; /* the host's own work: done */
    for (uint32_t i = 0; i < s->access_count;) {
        if (dominated(&s->accesses[i], region, at, write))
            access_remove(s, i);
        else
            i++;
    }
    for (uint32_t k = 0; k < region->count; k++)
        access_push(s, &region->boxes[k], at, write);
}

bool hpl__coherence_did_transfer(hpl__coherence *c, const hpl__transfer *t, hpl__point at)
{
    record(&c->mem[t->src], &t->region, at, false);
    record(&c->mem[t->dst], &t->region, at, true);
    return hpl__region_add(&c->mem[t->dst].valid, &t->region);
}

void hpl__coherence_did_read(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at)
{
    record(&c->mem[mem], region, at, false);
}

void hpl__coherence_did_touch(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at)
{
    record(&c->mem[mem], region, at, true);
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

/* Does memory m's validity change when `region` is written into `mem`? */
static bool write_touches(const hpl__coherence *c, int m, int mem, const hpl__region *region)
{
    if (!c->mem[m].used)
        return false;
    if (m == mem)
        return true;
    for (uint32_t i = 0; i < region->count; i++)
        if (hpl__region_intersects_box(&c->mem[m].valid, &region->boxes[i]))
            return true;
    return false;
}

bool hpl__coherence_did_write(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at)
{
    /* The point first: the work runs whatever becomes of the bookkeeping. */
    record(&c->mem[mem], region, at, true);
    /* Compute every new validity first so that out-of-memory changes nothing.
     * The common case (a few memories) allocates no scratch. */
    hpl__region few_next[HPL__FEW_MEMORIES] = {0};
    bool few_touched[HPL__FEW_MEMORIES] = {0};
    bool few = c->count <= HPL__FEW_MEMORIES;
    hpl__region *next = few ? few_next : hpl__calloc((size_t)c->count, sizeof *next);
    bool *touched = few ? few_touched : hpl__calloc((size_t)c->count, sizeof *touched);
    bool ok = next && touched;
    for (int m = 0; ok && m < c->count; m++) {
        touched[m] = write_touches(c, m, mem, region);
        if (touched[m])
            ok = hpl__region_copy(&next[m], &c->mem[m].valid) &&
                 (m == mem ? hpl__region_add(&next[m], region) : hpl__region_subtract(&next[m], region));
    }
    for (int m = 0; next && m < c->count; m++) {
        if (ok && touched[m])
            region_swap(&c->mem[m].valid, &next[m]);
        hpl__region_free(&next[m]);
    }
    if (!few) {
        hpl__free(next);
        hpl__free(touched);
    }
    return ok;
}

bool hpl__coherence_invalidate(hpl__coherence *c, int mem, const hpl__region *region)
{
    return hpl__region_subtract(&c->mem[mem].valid, region);
}

bool hpl__coherence_did_scribble(hpl__coherence *c, int mem, const hpl__region *region, hpl__point at)
{
    hpl__coherence_did_touch(c, mem, region, at);
    if (mem != HPL__HOST)
        return hpl__coherence_invalidate(c, mem, region);
    /* The host storage keeps only what no other memory holds. */
    hpl__region keep, drop;
    hpl__region_init(&keep);
    hpl__region_init(&drop);
    bool ok = hpl__coherence_only_here(c, HPL__HOST, region, &keep) && hpl__region_copy(&drop, region) &&
              hpl__region_subtract(&drop, &keep) && hpl__coherence_invalidate(c, HPL__HOST, &drop);
    hpl__region_free(&keep);
    hpl__region_free(&drop);
    return ok;
}

int hpl__coherence_wait_points(const hpl__coherence *c, int mem, const hpl__region *region, bool for_write,
                               hpl__point *out, int count)
{
    const hpl__memory_state *s = &c->mem[mem];
    for (uint32_t bits = s->overflowed; bits; bits &= bits - 1) {
        int t = __builtin_ctz(bits);
        count = hpl__points_add(out, count, (hpl__point){t, s->overflow[t]});
    }
    for (uint32_t i = 0; i < s->access_count; i++) {
        const hpl__access *e = &s->accesses[i];
        if ((e->write || for_write) && (!region || hpl__region_intersects_box(region, &e->box)))
            count = hpl__points_add(out, count, (hpl__point){e->timeline, e->value});
    }
    return count;
}

int hpl__coherence_all_points(const hpl__coherence *c, hpl__point *out, int count)
{
    for (int m = 0; m < c->count; m++)
        if (c->mem[m].used)
            count = hpl__coherence_wait_points(c, m, NULL, true, out, count);
    return count;
}

void hpl__coherence_retire(hpl__coherence *c, const hpl__point *done, int count)
{
    uint64_t upto[HPL__MAX_TIMELINES] = {0};
    for (int i = 0; i < count; i++)
        upto[done[i].timeline] = HPL__MAX(upto[done[i].timeline], done[i].value);
    for (int m = 0; m < c->count; m++) {
        hpl__memory_state *s = &c->mem[m];
        for (int t = 0; t < HPL__MAX_TIMELINES; t++)
            if (s->overflow[t] <= upto[t]) {
                s->overflow[t] = 0;
                s->overflowed &= ~(1u << t);
            }
        for (uint32_t i = 0; i < s->access_count;) {
            if (s->accesses[i].value <= upto[s->accesses[i].timeline])
                access_remove(s, i);
            else
                i++;
        }
    }
}

bool hpl__coherence_exact(const hpl__coherence *c, int mem)
{
    const hpl__memory_state *s = &c->mem[mem];
    if (s->overflowed)
        return false;
    for (uint32_t i = 0; i < s->access_count; i++)
        if (s->accesses[i].widened)
            return false;
    return true;
}
