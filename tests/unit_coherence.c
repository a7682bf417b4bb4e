/* Unit test of lib/base/coherence.c against a brute-force element-wise model.
 *
 * 1. Randomised sequences on small 1-D, 2-D and 3-D index spaces (at most
 *    7x6x5 elements), 1 to 4 devices with random ids, device memories holding
 *    random boxes (several per device) added and removed, and random
 *    operations: reads (plan_read, every step simulated in order on the model,
 *    then did_transfer with increasing timeline points, then did_read of the
 *    region), writes (did_write), touches (did_touch), writes outside owned
 *    boxes (did_scribble), invalidations,
 *    retirements of points (hpl__coherence_retire), and removals with or
 *    without saving to the host what only_here reports. Work on the host
 *    storage is the host's own (no point) or a zero-copy device's; one point
 *    in eight repeats a value already given (one batch, late records). The
 *    model keeps an actual value per memory per element, and per element per
 *    device the last reader and writer not retired. After every operation
 *    the coherence state is compared with it: slots, validity of every
 *    element in every memory, the newest value in every valid copy,
 *    only_here, the plans of random reads (sources valid when each step
 *    runs, no device-to-device step, same device preferred to the host and
 *    the host to other devices taken in slot order, exactly the missing
 *    elements that are valid somewhere, nothing twice), the access lists
 *    (boxes inside the memory, at most HPL__ACCESSES_PER_TIMELINE per device
 *    and kind), wait_points of the whole memory and of a random region, for
 *    reading and writing (exactly the element-wise answer while no access
 *    was merged, else at least it and at most the whole memory's), and
 *    all_points (exact).
 * 2. Deterministic cases: slot reuse, the preference order with staging,
 *    data lost when a memory is removed unsaved, an array with no valid data,
 *    a plan longer than the first steps allocation, points after reads and
 *    writes, the cases per region (halo rows staged from two devices,
 *    a host write beside a zero-copy kernel's rows), merges past the bound,
 *    a whole-memory point.
 * 3. hpl__points_add against a per-device maximum.
 *
 * Seed: argv[1] or UNIT_COHERENCE_SEED, else taken from the clock; printed
 * first and with every failure (with the sequence and operation index and the
 * operations of that sequence so far). Returns non-zero if any check failed. */
#include "coherence.h"

#include "common.h"
#include "test_util.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Checking ------------------------------------------------------------- */

static unsigned long checks, failures;
static char context[256]; /* what is being tested, printed with failures */
static uint64_t seed;

#define CHECK(cond, what)                                                                     \
    do {                                                                                      \
        checks++;                                                                             \
        if (!(cond)) {                                                                        \
            failures++;                                                                       \
            if (failures <= 30)                                                               \
                fprintf(stderr, "FAIL %s:%d [seed %" PRIu64 " %s] %s: %s\n", __FILE__, __LINE__, \
                        seed, context, what, #cond);                                          \
        }                                                                                     \
    } while (0)


static int fmt_box(char *buf, size_t size, const hpl__box *b)
{
    return snprintf(buf, size, "[%" PRIu64 ",%" PRIu64 ")x[%" PRIu64 ",%" PRIu64 ")x[%" PRIu64 ",%" PRIu64 ")",
                    b->lo[0], b->hi[0], b->lo[1], b->hi[1], b->lo[2], b->hi[2]);
}

/* "{box box ...}" into buf, truncated to size. */
static const char *fmt_region(char *buf, size_t size, const hpl__region *r)
{
    size_t len = (size_t)snprintf(buf, size, "{");
    for (uint32_t k = 0; k < r->count && len < size; k++) {
        if (k)
            len += (size_t)snprintf(buf + len, size - len, " ");
        if (len < size)
            len += (size_t)fmt_box(buf + len, size - len, &r->boxes[k]);
    }
    if (len < size)
        snprintf(buf + len, size - len, "}");
    return buf;
}

/* ---- Element sets --------------------------------------------------------- */

#define MAXE 256 /* elements of the largest index space, rounded up */
#define WORDS (MAXE / 64)

typedef struct bits {
    uint64_t w[WORDS];
} bits;

static bool bits_get(const bits *b, int e)
{
    return b->w[e >> 6] >> (e & 63) & 1;
}
static void bits_set(bits *b, int e)
{
    b->w[e >> 6] |= 1ull << (e & 63);
}
static bits bits_and(bits a, bits b)
{
    for (int i = 0; i < WORDS; i++)
        a.w[i] &= b.w[i];
    return a;
}
static bits bits_or(bits a, bits b)
{
    for (int i = 0; i < WORDS; i++)
        a.w[i] |= b.w[i];
    return a;
}
static bits bits_minus(bits a, bits b)
{
    for (int i = 0; i < WORDS; i++)
        a.w[i] &= ~b.w[i];
    return a;
}
static bool bits_equal(bits a, bits b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}
static bool bits_empty(bits a)
{
    for (int i = 0; i < WORDS; i++)
        if (a.w[i])
            return false;
    return true;
}
static bool bits_subset(bits a, bits b)
{
    return bits_empty(bits_minus(a, b));
}
static int bits_count(bits a)
{
    int n = 0;
    for (int i = 0; i < WORDS; i++)
        n += __builtin_popcountll(a.w[i]);
    return n;
}
/* The first element of b at or after e, or -1. */
static int bits_next(const bits *b, int e)
{
    for (int i = e >> 6; i < WORDS; i++) {
        uint64_t w = b->w[i];
        if (i == e >> 6)
            w &= ~0ull << (e & 63);
        if (w)
            return i * 64 + __builtin_ctzll(w);
    }
    return -1;
}
#define FOR_EACH(e, set) for (int e = bits_next(&(set), 0); e >= 0; e = bits_next(&(set), e + 1))

/* ---- Index spaces --------------------------------------------------------- */

typedef struct grid {
    int ndims;
    uint64_t n[3]; /* 1 in unused dimensions */
} grid;

static int grid_elements(const grid *g)
{
    return (int)(g->n[0] * g->n[1] * g->n[2]);
}

static hpl__box grid_box(const grid *g)
{
    return box3(0, g->n[0], 0, g->n[1], 0, g->n[2]);
}

/* Elements of b inside the grid. */
static bits box_bits(const grid *g, const hpl__box *b)
{
    bits out = {{0}};
    for (uint64_t z = b->lo[2]; z < b->hi[2] && z < g->n[2]; z++)
        for (uint64_t y = b->lo[1]; y < b->hi[1] && y < g->n[1]; y++)
            for (uint64_t x = b->lo[0]; x < b->hi[0] && x < g->n[0]; x++)
                bits_set(&out, (int)(x + g->n[0] * (y + g->n[1] * z)));
    return out;
}

/* The elements of r, checking that r is well formed: non-empty boxes inside
 * the grid, disjoint. */
static bits region_bits(const grid *g, const hpl__region *r, const char *name)
{
    bits out = {{0}};
    CHECK(r->count == 0 || r->boxes != NULL, name);
    for (uint32_t k = 0; k < r->count; k++) {
        const hpl__box *b = &r->boxes[k];
        bool inside = true;
        for (int d = 0; d < 3; d++)
            inside = inside && b->hi[d] <= g->n[d];
        bits m = box_bits(g, b);
        CHECK(!hpl__box_empty(b), "region box is non-empty");
        CHECK(inside, "region box lies in the index space");
        CHECK(bits_empty(bits_and(m, out)), "region boxes are disjoint");
        out = bits_or(out, m);
    }
    return out;
}

/* A non-empty box inside `in` (non-empty); `in` itself one time in four. */
static hpl__box random_sub_box(const hpl__box *in)
{
    if (rng_below(4) == 0)
        return *in;
    hpl__box b;
    for (int d = 0; d < 3; d++) {
        uint64_t span = in->hi[d] - in->lo[d], a = rng_below(span), c = rng_below(span);
        if (a > c) {
            uint64_t t = a;
            a = c;
            c = t;
        }
        b.lo[d] = in->lo[d] + a;
        b.hi[d] = in->lo[d] + c + 1;
    }
    return b;
}

/* r = a union of 1 to 3 random boxes inside `in` (empty one time in 16 when
 * allowed); returns its elements. */
static bits random_region(const grid *g, const hpl__box *in, hpl__region *r, bool allow_empty)
{
    hpl__region_clear(r);
    int n = allow_empty && rng_below(16) == 0 ? 0 : 1 + (int)rng_below(3);
    for (int k = 0; k < n; k++) {
        hpl__box b = random_sub_box(in);
        CHECK(hpl__region_add_box(r, &b), "region_add_box");
    }
    return region_bits(g, r, "generated region");
}

/* ---- The model ------------------------------------------------------------ */

#define MAXMEM 24              /* slots the model can follow */
#define MAX_DEVICE_MEMORIES 10 /* used device memories at once in random sequences */
#define NO_VALUE 0u            /* newest value of an element never written */

typedef struct model {
    grid g;
    hpl__box whole;
    int ndev, devices[4];
    bool used[MAXMEM];
    int device[MAXMEM];
    hpl__box box[MAXMEM];
    bits boxbits[MAXMEM];
    bits valid[MAXMEM];
    uint32_t value[MAXMEM][MAXE];
    uint32_t newest[MAXE];
} model;

typedef struct world {
    hpl__coherence c;
    model m;
} world;

static uint32_t next_value = 1;
static uint64_t timeline[HPL__MAX_TIMELINES];

/* The next point of a timeline. */
static hpl__point tick(int t)
{
    return (hpl__point){t, ++timeline[t]};
}

/* ---- The reference for points --------------------------------------------- */

/* Per memory, element, device (by index in ref_device) and kind: the value
 * of the last work of that device that read / wrote the element and is not
 * retired; 0: none. Outside the model struct: dry runs copy the model. */
#define REFDEV 8
static uint64_t ref_last[MAXMEM][MAXE][REFDEV][2]; /* [.][.][.][1]: writes */
static int ref_device[REFDEV], ref_ndev;

static void ref_reset(void)
{
    memset(ref_last, 0, sizeof ref_last);
    ref_ndev = 0;
}

static int ref_index(int device)
{
    for (int i = 0; i < ref_ndev; i++)
        if (ref_device[i] == device)
            return i;
    CHECK(ref_ndev < REFDEV, "the reference follows this many devices");
    ref_device[ref_ndev] = device;
    return ref_ndev++;
}

/* Work `at` read (write: wrote) the elements `set` of memory mem. */
static void ref_touch(int mem, bits set, hpl__point at, bool write)
{
    if (at.value == 0)
        return; /* the host's own work */
    int i = ref_index(at.timeline);
    FOR_EACH(e, set) {
        uint64_t *v = &ref_last[mem][e][i][write];
        *v = HPL__MAX(*v, at.value);
    }
}

static void ref_clear(int mem)
{
    memset(ref_last[mem], 0, sizeof ref_last[mem]);
}

/* Work of done.device up to done.value is complete. */
static void ref_retire(hpl__point done)
{
    int i = ref_index(done.timeline);
    for (int k = 0; k < MAXMEM; k++)
        for (int e = 0; e < MAXE; e++)
            for (int w = 0; w < 2; w++)
                if (ref_last[k][e][i][w] <= done.value)
                    ref_last[k][e][i][w] = 0;
}

static int ref_points_add(hpl__point *list, int n, hpl__point p);

/* Exactly what an access to `set` of mem must wait for, element by element:
 * a read for the writers, a write also for the readers. */
static int ref_wait(int mem, bits set, bool for_write, hpl__point *list, int n)
{
    uint64_t best[REFDEV] = {0};
    FOR_EACH(e, set) {
        for (int i = 0; i < ref_ndev; i++) {
            best[i] = HPL__MAX(best[i], ref_last[mem][e][i][1]);
            if (for_write)
                best[i] = HPL__MAX(best[i], ref_last[mem][e][i][0]);
        }
    }
    for (int i = 0; i < ref_ndev; i++)
        n = ref_points_add(list, n, (hpl__point){ref_device[i], best[i]});
    return n;
}

static void model_slot(model *m, int slot, int device, const hpl__box *box)
{
    m->used[slot] = true;
    m->device[slot] = device;
    m->box[slot] = *box;
    m->boxbits[slot] = box_bits(&m->g, box);
    memset(&m->valid[slot], 0, sizeof m->valid[slot]);
    ref_clear(slot);
}

/* Elements valid in some used memory other than `except` (-1: any). */
static bits valid_elsewhere(const model *m, int except)
{
    bits out = {{0}};
    for (int k = 0; k < MAXMEM; k++)
        if (m->used[k] && k != except)
            out = bits_or(out, m->valid[k]);
    return out;
}

/* ---- Checks of the whole state -------------------------------------------- */

static bool check_validity(const world *w, int k, const char *what)
{
    bits got = region_bits(&w->m.g, &w->c.mem[k].valid, "valid region");
    bool ok = bits_equal(got, w->m.valid[k]);
    CHECK(ok, what);
    if (!ok && failures <= 30) {
        char buf[512];
        fprintf(stderr, "  memory %d valid: %s\n  model elements:", k, fmt_region(buf, sizeof buf, &w->c.mem[k].valid));
        FOR_EACH(e, w->m.valid[k]) {
            fprintf(stderr, " %d", e);
        }
        fputc('\n', stderr);
    }
    return ok;
}

/* Slots, boxes, devices, validity per element, values. */
static void check_state(const world *w)
{
    const hpl__coherence *c = &w->c;
    const model *m = &w->m;
    hpl__box whole = m->whole;
    CHECK(hpl__box_equal(&c->whole, &whole), "whole");
    bits all = box_bits(&m->g, &whole);
    CHECK(bits_equal(region_bits(&m->g, &c->whole_region, "whole_region"), all), "whole_region is the whole");
    CHECK(c->mem != NULL && c->count >= 1 && c->count <= c->capacity, "slots well formed");
    CHECK(c->count <= MAXMEM, "slots the model can follow");
    if (c->mem == NULL || c->count < 1 || c->count > MAXMEM)
        return;
    CHECK(c->mem[HPL__HOST].used && c->mem[HPL__HOST].device == HPL__NO_DEVICE &&
              hpl__box_equal(&c->mem[HPL__HOST].box, &whole),
          "slot 0 is the host holding the whole");
    for (int k = 0; k < MAXMEM; k++) {
        bool used = k < c->count && c->mem[k].used;
        CHECK(used == m->used[k], "slot in use as in the model");
        if (!used || !m->used[k])
            continue;
        CHECK(c->mem[k].device == m->device[k], "device of the memory");
        CHECK(hpl__box_equal(&c->mem[k].box, &m->box[k]), "box of the memory");
        bits v = region_bits(&m->g, &c->mem[k].valid, "valid region");
        CHECK(bits_subset(v, m->boxbits[k]), "valid inside the box");
        check_validity(w, k, "valid elements equal the model's");
        bool newest = true;
        FOR_EACH(e, m->valid[k]) {
            newest = newest && m->value[k][e] == m->newest[e] && m->newest[e] != NO_VALUE;
        }
        CHECK(newest, "every valid copy holds the newest value");
    }
}

/* only_here(k, within) against the model; out starts with junk half the time. */
static void check_only_here(const world *w, int k, const hpl__region *within, bits wb)
{
    hpl__region out;
    hpl__region_init(&out);
    if (rng_below(2)) {
        hpl__box junk = random_sub_box(&w->m.whole);
        hpl__region_add_box(&out, &junk);
    }
    CHECK(hpl__coherence_only_here(&w->c, k, within, &out), "only_here returns true");
    bits expected = bits_minus(bits_and(wb, w->m.valid[k]), valid_elsewhere(&w->m, k));
    bits got = region_bits(&w->m.g, &out, "only_here region");
    CHECK(bits_equal(got, expected), "only_here: valid in mem and nowhere else");
    hpl__region_free(&out);
}

/* ---- Points --------------------------------------------------------------- */

/* Reference: one point per device, the highest; value 0 is nothing. */
static int ref_points_add(hpl__point *list, int n, hpl__point p)
{
    if (p.value == 0)
        return n;
    for (int i = 0; i < n; i++)
        if (list[i].timeline == p.timeline) {
            if (p.value > list[i].value)
                list[i].value = p.value;
            return n;
        }
    list[n] = p;
    return n + 1;
}

/* got holds the same points as exp, one per device, none of value 0, the
 * first pn (given) entries still in place. */
static bool same_points(const hpl__point *got, int gn, const hpl__point *exp, int en, const hpl__point *pre, int pn)
{
    if (gn != en)
        return false;
    for (int i = 0; i < pn; i++)
        if (got[i].timeline != pre[i].timeline)
            return false;
    for (int i = 0; i < gn; i++) {
        if (got[i].value == 0 || got[i].timeline < 0 || got[i].timeline >= HPL__MAX_TIMELINES)
            return false;
        for (int j = 0; j < i; j++)
            if (got[j].timeline == got[i].timeline)
                return false;
        bool found = false;
        for (int j = 0; j < en; j++)
            found = found || (exp[j].timeline == got[i].timeline && exp[j].value == got[i].value);
        if (!found)
            return false;
    }
    return true;
}

#define GUARD 4
#define GUARD_DEVICE (-77)

/* A random list of 0 to 4 points of distinct devices, then guard entries. */
static int random_prefix(hpl__point *list)
{
    int n = (int)rng_below(5);
    for (int i = 0; i < n; i++) {
        int d;
        bool again;
        do {
            d = (int)rng_below(HPL__MAX_TIMELINES);
            again = false;
            for (int j = 0; j < i; j++)
                again = again || list[j].timeline == d;
        } while (again);
        list[i] = (hpl__point){d, 1 + rng_below(timeline[d] + 3)};
    }
    for (int i = n; i < HPL__MAX_TIMELINES + GUARD; i++)
        list[i] = (hpl__point){GUARD_DEVICE, 12345};
    return n;
}

/* The first n entries of a and b hold the same points: compared field by
 * field, never with memcmp (an hpl__point has padding between timeline and
 * value, whose bytes no copy or assignment needs to keep). */
static bool points_equal(const hpl__point *a, const hpl__point *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].timeline != b[i].timeline || a[i].value != b[i].value)
            return false;
    return true;
}

/* Sets the padding bytes of n points (if the ABI has any) to `byte`: two
 * lists that differ only there hold the same points. */
static void points_pad(hpl__point *list, int n, unsigned char byte)
{
    size_t from = offsetof(hpl__point, timeline) + sizeof list->timeline, to = offsetof(hpl__point, value);
    for (int i = 0; i < n; i++)
        memset((unsigned char *)&list[i] + from, byte, to - from);
}

static bool guards_intact(const hpl__point *list)
{
    for (int i = HPL__MAX_TIMELINES; i < HPL__MAX_TIMELINES + GUARD; i++)
        if (list[i].timeline != GUARD_DEVICE || list[i].value != 12345)
            return false;
    return true;
}

static void print_points(const char *name, const hpl__point *list, int n)
{
    fprintf(stderr, "  %s:", name);
    for (int i = 0; i < n; i++)
        fprintf(stderr, " {%d,%" PRIu64 "}", list[i].timeline, list[i].value);
    fputc('\n', stderr);
}

/* got holds the prefix pre in place, then per device a point between lo's
 * (at least) and hi's (at most), and a point for every device of lo. */
static bool bounded_points(const hpl__point *got, int gn, const hpl__point *lo, int ln, const hpl__point *hi, int hn,
                           const hpl__point *pre, int pn)
{
    for (int i = 0; i < pn; i++)
        if (got[i].timeline != pre[i].timeline)
            return false;
    for (int i = 0; i < gn; i++) {
        uint64_t low = 0, high = 0;
        for (int j = 0; j < ln; j++)
            low = lo[j].timeline == got[i].timeline ? lo[j].value : low;
        for (int j = 0; j < hn; j++)
            high = hi[j].timeline == got[i].timeline ? hi[j].value : high;
        for (int j = 0; j < i; j++)
            if (got[j].timeline == got[i].timeline)
                return false;
        if (got[i].value == 0 || got[i].value < low || got[i].value > high)
            return false;
    }
    for (int j = 0; j < ln; j++) {
        bool found = false;
        for (int i = 0; i < gn; i++)
            found = found || got[i].timeline == lo[j].timeline;
        if (!found)
            return false;
    }
    return true;
}

/* Queries checked exactly, and only within bounds (merged accesses). */
static unsigned long waits_exact, waits_bounded;

/* wait_points(k, region) against the reference: exact where the state says
 * it is (always for the whole memory), else at least the exact points and
 * at most those of the whole memory. region NULL: the whole memory. */
static void check_wait_points(const world *w, int k, const hpl__region *region, bits rb, bool for_write)
{
    hpl__point pre[HPL__MAX_TIMELINES + GUARD], got[HPL__MAX_TIMELINES + GUARD];
    hpl__point exp[HPL__MAX_TIMELINES + GUARD], hi[HPL__MAX_TIMELINES + GUARD];
    int pn = random_prefix(pre);
    memcpy(got, pre, sizeof got);
    int gn = hpl__coherence_wait_points(&w->c, k, region, for_write, got, pn);
    memcpy(exp, pre, sizeof exp);
    int en = ref_wait(k, region ? rb : w->m.boxbits[k], for_write, exp, pn);
    bool exact = !region || hpl__coherence_exact(&w->c, k);
    int hn = 0;
    bool ok;
    CHECK(guards_intact(got), "wait_points writes at most HPL__MAX_TIMELINES points");
    if (exact) {
        waits_exact++;
        ok = same_points(got, gn, exp, en, pre, pn);
        CHECK(ok, for_write ? "wait_points(write): overlapping writers and readers, one per device, highest"
                            : "wait_points(read): overlapping writers, one per device, highest");
    } else {
        waits_bounded++;
        memcpy(hi, pre, sizeof hi);
        hn = ref_wait(k, w->m.boxbits[k], for_write, hi, pn);
        ok = bounded_points(got, gn, exp, en, hi, hn, pre, pn);
        CHECK(ok, "wait_points after a merge: at least the exact points, at most the whole memory's");
    }
    if (!ok && failures <= 30) {
        char buf[512];
        fprintf(stderr, "  memory %d %s %s\n", k, for_write ? "write" : "read",
                region ? fmt_region(buf, sizeof buf, region) : "(whole)");
        print_points("given", pre, pn);
        print_points("got", got, gn);
        print_points("expected", exp, en);
        if (!exact)
            print_points("at most", hi, hn);
    }
}

/* The accesses of memory k: boxes inside its box, real points, at most
 * HPL__ACCESSES_PER_TIMELINE per device and kind. */
static void check_accesses(const world *w, int k)
{
    const hpl__memory_state *s = &w->c.mem[k];
    bool formed = s->access_count <= s->access_capacity && (s->access_count == 0 || s->accesses);
    CHECK(formed, "access list well formed");
    for (uint32_t i = 0; formed && i < s->access_count; i++) {
        const hpl__access *e = &s->accesses[i];
        CHECK(e->timeline >= 0 && e->timeline < HPL__MAX_TIMELINES && e->value > 0, "an access is a real point");
        CHECK(!hpl__box_empty(&e->box) && hpl__box_contains(&s->box, &e->box), "an access box lies in the memory");
        uint32_t same = 0;
        for (uint32_t j = 0; j < s->access_count; j++)
            same += s->accesses[j].timeline == e->timeline && s->accesses[j].write == e->write;
        CHECK(same <= HPL__ACCESSES_PER_TIMELINE, "at most HPL__ACCESSES_PER_TIMELINE accesses per device and kind");
    }
}

static void check_all_points(const world *w)
{
    hpl__point pre[HPL__MAX_TIMELINES + GUARD], got[HPL__MAX_TIMELINES + GUARD], exp[1][HPL__MAX_TIMELINES + GUARD];
    int pn = random_prefix(pre);
    memcpy(got, pre, sizeof got);
    int gn = hpl__coherence_all_points(&w->c, got, pn);
    memcpy(exp[0], pre, sizeof exp[0]);
    int en[1] = {pn};
    for (int k = 0; k < MAXMEM; k++)
        if (w->m.used[k])
            en[0] = ref_wait(k, w->m.boxbits[k], true, exp[0], en[0]);
    bool ok = same_points(got, gn, exp[0], en[0], pre, pn);
    CHECK(guards_intact(got), "all_points writes at most HPL__MAX_TIMELINES points");
    CHECK(ok, "all_points: every writer and reader of every memory, one per device, highest");
    if (!ok && failures <= 30) {
        print_points("given", pre, pn);
        print_points("got", got, gn);
        print_points("expected", exp[0], en[0]);
    }
}

/* ---- Plans ---------------------------------------------------------------- */

/* Steps of applied plans, by kind: information for the summary. */
static unsigned long steps_same_device, steps_from_host, steps_staged, steps_to_host;

/* Preference class of source src for a read into dst: 0 another memory of
 * dst's device, 1 the host, 2 another device's memory. */
static int source_class(const model *m, int dst, int src)
{
    if (src == HPL__HOST)
        return 1;
    if (dst != HPL__HOST && m->device[src] == m->device[dst])
        return 0;
    return 2;
}

static void print_plan(const hpl__transfer_plan *plan)
{
    char buf[512];
    fprintf(stderr, "  plan, %d steps:\n", plan->count);
    for (int s = 0; s < plan->count && s < 32; s++)
        fprintf(stderr, "    %d -> %d %s\n", plan->steps[s].src, plan->steps[s].dst,
                fmt_region(buf, sizeof buf, &plan->steps[s].region));
}

/* Checks `plan` (to make `req` valid in mem) against the model, simulating
 * every step in order on m. With apply (whose model is m), also records each
 * step there (did_transfer at increasing timeline points) and follows the
 * points. */
static void run_plan(world *apply, model *m, int mem, bits req, const hpl__transfer_plan *plan)
{
    const grid *g = &m->g;
    static bits before[MAXMEM];
    memcpy(before, m->valid, sizeof before);
    bits somewhere = valid_elsewhere(m, mem);
    bits missing = bits_minus(req, before[mem]);
    bits reach = bits_and(missing, somewhere);
    int staged_from[MAXE];
    for (int e = 0; e < MAXE; e++)
        staged_from[e] = -1;
    bits moved = {{0}}, staged = {{0}};
    uint64_t moved_volume = 0;
    unsigned long failed = failures;

    bool formed = plan->count >= 0 && plan->count <= plan->capacity && (plan->count == 0 || plan->steps != NULL);
    CHECK(formed, "plan well formed");
    for (int s = 0; formed && s < plan->count; s++) {
        const hpl__transfer *t = &plan->steps[s];
        int src = t->src, dst = t->dst;
        bool ends = src >= 0 && src < MAXMEM && dst >= 0 && dst < MAXMEM && src != dst && m->used[src] && m->used[dst];
        CHECK(ends, "a step goes between two distinct memories in use");
        if (!ends)
            break;
        bits sb = region_bits(g, &t->region, "step region");
        CHECK(!bits_empty(sb), "no empty step");
        CHECK(bits_subset(sb, m->boxbits[src]) && bits_subset(sb, m->boxbits[dst]), "step inside both boxes");
        bool host_end = src == HPL__HOST || dst == HPL__HOST;
        CHECK(host_end || m->device[src] == m->device[dst], "steps between two devices go through the host");
        CHECK(bits_subset(sb, m->valid[src]), "the source holds the step's region valid when the step runs");
        if (dst == mem) {
            CHECK(bits_empty(bits_and(sb, moved)), "nothing moved twice");
            moved = bits_or(moved, sb);
            moved_volume += hpl__region_volume(&t->region);
            bool preferred = true;
            FOR_EACH(e, sb) {
                int origin = src == HPL__HOST && staged_from[e] >= 0 ? staged_from[e] : src;
                int best = 3, first_other = -1;
                for (int k = 0; k < MAXMEM; k++)
                    if (m->used[k] && k != mem && bits_get(&before[k], e)) {
                        int cl = source_class(m, mem, k);
                        best = HPL__MIN(best, cl);
                        if (cl == 2 && first_other < 0)
                            first_other = k;
                    }
                preferred = preferred && source_class(m, mem, origin) == best && (best != 2 || origin == first_other);
            }
            CHECK(preferred, "each element from the best source: same device, host, other devices in slot order");
        } else {
            CHECK(mem != HPL__HOST && dst == HPL__HOST && source_class(m, mem, src) == 2,
                  "a step into another memory than mem only stages another device's data into the host");
            CHECK(bits_subset(sb, bits_minus(reach, before[HPL__HOST])), "stages only missing elements the host lacks");
            CHECK(bits_empty(bits_and(sb, staged)), "nothing staged twice");
            staged = bits_or(staged, sb);
            FOR_EACH(e, sb) {
                staged_from[e] = src;
            }
        }
        /* Run the step on the model. */
        FOR_EACH(e, sb) {
            m->value[dst][e] = m->value[src][e];
        }
        m->valid[dst] = bits_or(m->valid[dst], sb);
        if (apply) {
            if (dst == HPL__HOST)
                *(mem == HPL__HOST ? &steps_to_host : &steps_staged) += 1;
            else
                *(src == HPL__HOST ? &steps_from_host : &steps_same_device) += 1;
            hpl__point at = tick(src == HPL__HOST ? m->device[dst] : m->device[src]);
            CHECK(hpl__coherence_did_transfer(&apply->c, t, at), "did_transfer returns true");
            ref_touch(src, sb, at, false);
            ref_touch(dst, sb, at, true);
            check_validity(apply, dst, "did_transfer: dst valid on the region");
            check_validity(apply, src, "did_transfer: src unchanged");
        }
    }
    CHECK(bits_equal(moved, reach), "moves exactly the missing elements valid somewhere");
    CHECK(moved_volume == (uint64_t)(bits_count(req) - bits_count(bits_and(req, before[mem])) -
                                     bits_count(bits_minus(missing, somewhere))),
          "volume moved = region - already valid - valid nowhere");
    CHECK(bits_subset(staged, moved), "every staged element goes on to mem");
    CHECK(bits_subset(bits_and(req, bits_or(before[mem], somewhere)), m->valid[mem]),
          "after the plan mem holds the region wherever it was valid");
    if (failures != failed && failures <= 30) {
        fprintf(stderr, "  read into memory %d (device %d):", mem, m->device[mem]);
        FOR_EACH(e, req) {
            fprintf(stderr, " %d", e);
        }
        fputc('\n', stderr);
        for (int k = 0; k < MAXMEM; k++)
            if (m->used[k]) {
                fprintf(stderr, "  before: memory %d device %d valid:", k, m->device[k]);
                FOR_EACH(e, before[k]) {
                    fprintf(stderr, " %d", e);
                }
                fputc('\n', stderr);
            }
        print_plan(plan);
    }
}

static hpl__transfer_plan reused_plan; /* freed after every use */
static model scratch;

/* plan_read(mem, r), checked on the model; applied (transfers recorded) or a
 * dry run on a copy of the model. */
static void plan_and_check(world *w, int mem, const hpl__region *r, bits rb, bool apply)
{
    hpl__transfer_plan fresh = {0}, *plan = rng_below(2) ? &fresh : &reused_plan;
    CHECK(hpl__coherence_plan_read(&w->c, mem, r, plan), "plan_read returns true");
    if (apply) {
        run_plan(w, &w->m, mem, rb, plan);
    } else {
        scratch = w->m;
        run_plan(NULL, &scratch, mem, rb, plan);
    }
    hpl__transfer_plan_free(plan);
    CHECK(plan->count == 0, "transfer_plan_free empties the plan");
}

/* ---- Operations ----------------------------------------------------------- */

static char oplog[128][200];
static int oplog_count;

static void logf_(const char *fmt, ...) HPL__PRINTF(1, 2);
static void logf_(const char *fmt, ...)
{
    if (oplog_count >= (int)HPL__ARRAY_LEN(oplog))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(oplog[oplog_count++], sizeof oplog[0], fmt, ap);
    va_end(ap);
}

static void world_init(world *w, const grid *g, bool host_valid)
{
    memset(&w->m, 0, sizeof w->m);
    ref_reset();
    w->m.g = *g;
    w->m.whole = grid_box(g);
    CHECK(hpl__coherence_init(&w->c, &w->m.whole, host_valid), "init returns true");
    model_slot(&w->m, HPL__HOST, HPL__NO_DEVICE, &w->m.whole);
    for (int e = 0; e < grid_elements(g); e++) {
        w->m.newest[e] = host_valid ? next_value++ : NO_VALUE;
        w->m.value[HPL__HOST][e] = w->m.newest[e];
    }
    if (host_valid)
        w->m.valid[HPL__HOST] = box_bits(g, &w->m.whole);
    oplog_count = 0;
    logf_("init %dD %" PRIu64 "x%" PRIu64 "x%" PRIu64 " host_valid=%d", g->ndims, g->n[0], g->n[1], g->n[2],
          host_valid);
}

static int do_add(world *w, int device, const hpl__box *box)
{
    int before = w->c.count;
    bool free_slot = false;
    for (int k = 1; k < before && k < MAXMEM; k++)
        free_slot = free_slot || !w->m.used[k];
    int slot = hpl__coherence_add(&w->c, device, box);
    char b[96];
    fmt_box(b, sizeof b, box);
    logf_("m%d = add(device %d, %s)", slot, device, b);
    CHECK(slot >= 1 && slot < MAXMEM && !w->m.used[slot], "add returns a free slot, never the host");
    if (slot < 1 || slot >= MAXMEM || w->m.used[slot])
        return -1;
    if (free_slot)
        CHECK(slot < before, "add reuses a removed slot");
    else
        CHECK(slot == before, "add takes the next slot when none is free");
    model_slot(&w->m, slot, device, box);
    return slot;
}

/* Removes memory k, first saving to the host what only k holds of `within`
 * when save; returns the elements lost. */
static bits do_remove(world *w, int k, bool save, const hpl__region *within, bits wb)
{
    model *m = &w->m;
    hpl__region out;
    hpl__region_init(&out);
    CHECK(hpl__coherence_only_here(&w->c, k, within, &out), "only_here returns true");
    bits only = bits_minus(m->valid[k], valid_elsewhere(m, k));
    bits got = region_bits(&m->g, &out, "only_here region");
    CHECK(bits_equal(got, bits_and(only, wb)), "only_here before remove");
    char buf[160];
    if (save && !bits_empty(got)) {
        hpl__transfer t = {k, HPL__HOST, {0}};
        CHECK(hpl__region_copy(&t.region, &out), "region_copy");
        hpl__point at = tick(m->device[k]);
        logf_("save m%d -> host %s at {%d,%" PRIu64 "}", k, fmt_region(buf, sizeof buf, &out), at.timeline, at.value);
        CHECK(hpl__coherence_did_transfer(&w->c, &t, at), "did_transfer returns true");
        FOR_EACH(e, got) {
            m->value[HPL__HOST][e] = m->value[k][e];
        }
        m->valid[HPL__HOST] = bits_or(m->valid[HPL__HOST], got);
        ref_touch(k, got, at, false);
        ref_touch(HPL__HOST, got, at, true);
        hpl__region_free(&t.region);
        check_validity(w, HPL__HOST, "saved to the host");
        hpl__region_clear(&out);
        CHECK(hpl__coherence_only_here(&w->c, k, within, &out), "only_here returns true");
        CHECK(hpl__region_empty(&out), "nothing of within only here after saving");
    }
    bits lost = save ? bits_minus(only, wb) : only;
    hpl__region_free(&out);
    logf_("remove m%d (%s, %d elements lost)", k, save ? "saved" : "unsaved", bits_count(lost));
    hpl__coherence_remove(&w->c, k);
    m->used[k] = false;
    ref_clear(k);
    memset(&m->valid[k], 0, sizeof m->valid[k]);
    bool nowhere = true;
    for (int j = 0; j < w->c.count; j++)
        if (w->c.mem[j].used) {
            bits v = region_bits(&m->g, &w->c.mem[j].valid, "valid region");
            nowhere = nowhere && bits_empty(bits_and(v, lost));
        }
    CHECK(nowhere, "what was valid only in the removed memory is valid nowhere");
    return lost;
}

/* A point of device: on its compute timeline, or in random sequences
 * (m->ndev set) one time in four on its transfer lane's; the next one, or
 * one time in eight one already given (operations of one batch share a
 * value; records may come late). */
static hpl__point device_point(const model *m, int device)
{
    int t = m->ndev && rng_below(4) == 0 ? HPL__LANE + device : device;
    if (m->ndev == 0 || timeline[t] == 0 || rng_below(8))
        return tick(t);
    uint64_t back = rng_below(3);
    return (hpl__point){t, timeline[t] > back ? timeline[t] - back : 1};
}

/* The point of work on memory k: its device's; on the host storage the
 * host's own (value 0) or, when the model has devices, one in two times a
 * zero-copy device's. */
static hpl__point work_point(const model *m, int k)
{
    if (k != HPL__HOST)
        return device_point(m, m->device[k]);
    if (m->ndev == 0 || rng_below(2))
        return (hpl__point){0, 0};
    return device_point(m, m->devices[rng_below((uint64_t)m->ndev)]);
}

static void do_read(world *w, int k, const hpl__region *r, bits rb, bool kernel_read)
{
    char buf[160];
    logf_("read m%d %s", k, fmt_region(buf, sizeof buf, r));
    plan_and_check(w, k, r, rb, true);
    if (kernel_read) {
        hpl__point at = work_point(&w->m, k);
        logf_("did_read m%d at {%d,%" PRIu64 "}", k, at.timeline, at.value);
        hpl__coherence_did_read(&w->c, k, r, at);
        ref_touch(k, rb, at, false);
    }
}

/* Work writes r in memory k, which counts for nothing (a ghost part). */
static void do_touch(world *w, int k, const hpl__region *r, bits rb)
{
    hpl__point at = work_point(&w->m, k);
    char buf[160];
    logf_("touch m%d %s at {%d,%" PRIu64 "}", k, fmt_region(buf, sizeof buf, r), at.timeline, at.value);
    hpl__coherence_did_touch(&w->c, k, r, at);
    ref_touch(k, rb, at, true);
}

/* Some work of one device (or of all) is complete. */
static void do_retire(world *w)
{
    model *m = &w->m;
    hpl__point done[4];
    int n = 0;
    if (rng_below(4) == 0)
        for (int i = 0; i < m->ndev; i++) {
            int t = m->devices[i] + (rng_below(2) ? HPL__LANE : 0);
            done[n++] = (hpl__point){t, timeline[t]};
        }
    else if (m->ndev)
        done[n++] = (hpl__point){m->devices[rng_below((uint64_t)m->ndev)] + (rng_below(2) ? HPL__LANE : 0), 0};
    if (n == 1) { /* a few points back, or all */
        uint64_t back = rng_below(6);
        done[0].value = timeline[done[0].timeline] > back ? timeline[done[0].timeline] - back : 0;
    }
    for (int i = 0; i < n; i++) {
        logf_("retire {%d,%" PRIu64 "}", done[i].timeline, done[i].value);
        ref_retire(done[i]);
    }
    hpl__coherence_retire(&w->c, done, n);
}

static void do_write(world *w, int k, const hpl__region *r, bits rb)
{
    model *m = &w->m;
    hpl__point at = work_point(m, k);
    char buf[160];
    logf_("write m%d %s at {%d,%" PRIu64 "}", k, fmt_region(buf, sizeof buf, r), at.timeline, at.value);
    CHECK(hpl__coherence_did_write(&w->c, k, r, at), "did_write returns true");
    FOR_EACH(e, rb) {
        m->newest[e] = next_value++;
        m->value[k][e] = m->newest[e];
    }
    for (int j = 0; j < MAXMEM; j++)
        m->valid[j] = j == k ? bits_or(m->valid[j], rb) : bits_minus(m->valid[j], rb);
    ref_touch(k, rb, at, true);
}

/* Work may write r in memory k outside owned boxes: discarded wherever
 * another memory holds an element valid; what the host storage alone holds
 * is then whatever the work left there. */
static void do_scribble(world *w, int k, const hpl__region *r, bits rb)
{
    model *m = &w->m;
    hpl__point at = work_point(m, k);
    char buf[160];
    logf_("scribble m%d %s at {%d,%" PRIu64 "}", k, fmt_region(buf, sizeof buf, r), at.timeline, at.value);
    CHECK(hpl__coherence_did_scribble(&w->c, k, r, at), "did_scribble returns true");
    bits gone = {0};
    FOR_EACH(e, rb) {
        if (!bits_get(&m->valid[k], e))
            continue;
        bool elsewhere = false;
        for (int j = 0; j < MAXMEM; j++)
            elsewhere = elsewhere || (j != k && m->used[j] && bits_get(&m->valid[j], e));
        if (k != HPL__HOST || elsewhere) {
            bits_set(&gone, e);
        } else {
            m->newest[e] = next_value++;
            m->value[k][e] = m->newest[e];
        }
    }
    m->valid[k] = bits_minus(m->valid[k], gone);
    ref_touch(k, rb, at, true);
}

static void do_invalidate(world *w, int k, const hpl__region *r, bits rb)
{
    char buf[160];
    logf_("invalidate m%d %s", k, fmt_region(buf, sizeof buf, r));
    CHECK(hpl__coherence_invalidate(&w->c, k, r), "invalidate returns true");
    w->m.valid[k] = bits_minus(w->m.valid[k], rb);
}

/* Everything, after each operation. */
static void check_world(world *w, hpl__region *tmp)
{
    model *m = &w->m;
    check_state(w);
    for (int k = 0; k < MAXMEM; k++) {
        if (!m->used[k])
            continue;
        check_only_here(w, k, &w->c.whole_region, box_bits(&m->g, &m->whole));
        bits tb = random_region(&m->g, &m->whole, tmp, true);
        check_only_here(w, k, tmp, tb);
        check_accesses(w, k);
        for (int write = 0; write < 2; write++) {
            check_wait_points(w, k, NULL, m->boxbits[k], write);
            bits rb = random_region(&m->g, &m->box[k], tmp, true);
            check_wait_points(w, k, tmp, rb, write);
        }
    }
    check_all_points(w);
    for (int i = 0; i < 2; i++) { /* dry runs: plan_read is pure */
        int k;
        do
            k = (int)rng_below(MAXMEM);
        while (!m->used[k]);
        bits rb = random_region(&m->g, &m->box[k], tmp, true);
        plan_and_check(w, k, tmp, rb, false);
    }
}

/* A planned read of mem (req: the bits it asked for) run on the model and
 * the state, the plan freed, everything checked. */
static void apply_plan(world *w, int mem, bits req, hpl__transfer_plan *plan, hpl__region *tmp)
{
    run_plan(w, &w->m, mem, req, plan);
    hpl__transfer_plan_free(plan);
    check_world(w, tmp);
}

/* The end of a deterministic case: its state and regions freed. */
static void case_end(world *w, hpl__region *r, hpl__region *tmp)
{
    hpl__coherence_free(&w->c);
    hpl__region_free(r);
    hpl__region_free(tmp);
}

/* ---- 1. Random sequences -------------------------------------------------- */

static world W;

static int random_used(const model *m, bool device_only)
{
    int list[MAXMEM], n = 0;
    for (int k = device_only ? 1 : 0; k < MAXMEM; k++)
        if (m->used[k])
            list[n++] = k;
    return n ? list[rng_below((uint64_t)n)] : -1;
}

static int device_memories(const model *m)
{
    int n = 0;
    for (int k = 1; k < MAXMEM; k++)
        n += m->used[k];
    return n;
}

typedef struct rstats {
    unsigned long sequences, ops, reads, writes, adds, removes, lost, invalidates, touches, scribbles, retires;
} rstats;

static void random_sequence(const grid *g, int ops, rstats *st)
{
    world *w = &W;
    model *m = &w->m;
    hpl__region r, tmp;
    hpl__region_init(&r);
    hpl__region_init(&tmp);
    snprintf(context, sizeof context, "seq %lu init", st->sequences);
    world_init(w, g, rng_below(8) != 0);
    m->ndev = 1 + (int)rng_below(4);
    for (int i = 0; i < m->ndev; i++) { /* distinct device ids in 0..15 */
        bool again;
        do {
            m->devices[i] = (int)rng_below(HPL__MAX_DEVICES);
            again = false;
            for (int j = 0; j < i; j++)
                again = again || m->devices[j] == m->devices[i];
        } while (again);
    }
    unsigned long failed = failures;
    for (int op = 0; op < ops && failures == failed; op++) {
        int kind = (int)rng_below(100), n = device_memories(m);
        if (n == 0 || (kind < 14 && n < MAX_DEVICE_MEMORIES)) {
            snprintf(context, sizeof context, "seq %lu op %d add", st->sequences, op);
            hpl__box box = random_sub_box(&m->whole);
            do_add(w, m->devices[rng_below((uint64_t)m->ndev)], &box);
            st->adds++;
        } else if (kind < 22) {
            snprintf(context, sizeof context, "seq %lu op %d remove", st->sequences, op);
            int k = random_used(m, true);
            bits wb = box_bits(&m->g, &m->whole);
            const hpl__region *within = &w->c.whole_region;
            if (rng_below(4) == 0) {
                wb = random_region(&m->g, &m->whole, &r, true);
                within = &r;
            }
            bits lost = do_remove(w, k, rng_below(3) != 0, within, wb);
            st->removes++;
            st->lost += !bits_empty(lost);
        } else if (kind < 56) {
            snprintf(context, sizeof context, "seq %lu op %d read", st->sequences, op);
            int k = rng_below(4) == 0 ? HPL__HOST : random_used(m, true);
            bits rb = random_region(&m->g, &m->box[k], &r, true);
            do_read(w, k, &r, rb, rng_below(4) != 0);
            st->reads++;
        } else if (kind < 80) {
            snprintf(context, sizeof context, "seq %lu op %d write", st->sequences, op);
            int k = rng_below(4) == 0 ? HPL__HOST : random_used(m, true);
            bits rb = random_region(&m->g, &m->box[k], &r, false);
            do_write(w, k, &r, rb);
            st->writes++;
        } else if (kind < 83) {
            snprintf(context, sizeof context, "seq %lu op %d touch", st->sequences, op);
            int k = rng_below(4) == 0 ? HPL__HOST : random_used(m, true);
            bits rb = random_region(&m->g, &m->box[k], &r, true);
            do_touch(w, k, &r, rb);
            st->touches++;
        } else if (kind < 86) {
            snprintf(context, sizeof context, "seq %lu op %d scribble", st->sequences, op);
            int k = rng_below(2) == 0 ? HPL__HOST : random_used(m, true);
            bits rb = random_region(&m->g, &m->box[k], &r, true);
            do_scribble(w, k, &r, rb);
            st->scribbles++;
        } else if (kind < 91) {
            snprintf(context, sizeof context, "seq %lu op %d retire", st->sequences, op);
            do_retire(w);
            st->retires++;
        } else {
            snprintf(context, sizeof context, "seq %lu op %d invalidate", st->sequences, op);
            int k = rng_below(8) == 0 ? HPL__HOST : random_used(m, true);
            bits rb = random_region(&m->g, &m->box[k], &r, true);
            do_invalidate(w, k, &r, rb);
            st->invalidates++;
        }
        check_world(w, &tmp);
        st->ops++;
    }
    if (failures != failed && failures <= 30 + 10) {
        fprintf(stderr, "  operations of seq %lu so far (seed %" PRIu64 "):\n", st->sequences, seed);
        for (int i = 0; i < oplog_count; i++)
            fprintf(stderr, "    %s\n", oplog[i]);
    }
    case_end(w, &r, &tmp);
    st->sequences++;
}

static void test_random(int scale)
{
    static const grid grids[] = {
        {1, {1, 1, 1}}, {1, {5, 1, 1}}, {1, {7, 1, 1}}, {2, {3, 2, 1}}, {2, {7, 6, 1}},
        {2, {4, 5, 1}}, {3, {2, 2, 2}}, {3, {3, 4, 2}}, {3, {7, 6, 5}},
    };
    for (size_t k = 0; k < HPL__ARRAY_LEN(grids); k++) {
        const grid *g = &grids[k];
        rstats st = {0};
        steps_same_device = steps_from_host = steps_staged = steps_to_host = 0;
        waits_exact = waits_bounded = 0;
        uint64_t t0 = hpl__now_ns();
        int sequences = scale * (g->ndims == 1 ? 150 : 300);
        for (int s = 0; s < sequences; s++)
            random_sequence(g, 60, &st);
        printf("random %dD %" PRIu64 "x%" PRIu64 "x%" PRIu64 ": %4lu sequences, %6lu ops (%lu reads, %lu writes, "
               "%lu adds, %lu removes of which %lu lost data, %lu invalidates, %lu touches, %lu scribbles, %lu "
               "retires), steps %lu "
               "within a device, %lu from the host, %lu staged, %lu to the host, wait queries %lu exact %lu "
               "bounded, %.2f s\n",
               g->ndims, g->n[0], g->n[1], g->n[2], st.sequences, st.ops, st.reads, st.writes, st.adds, st.removes,
               st.lost, st.invalidates, st.touches, st.scribbles, st.retires, steps_same_device, steps_from_host, steps_staged,
               steps_to_host, waits_exact, waits_bounded, (double)(hpl__now_ns() - t0) * 1e-9);
    }
}

/* ---- 2. Deterministic cases ----------------------------------------------- */

static bits bits_range(const grid *g, uint64_t lo, uint64_t hi) /* 1-D */
{
    hpl__box b = box1(lo, hi);
    return box_bits(g, &b);
}

/* Elements the plan moves from src to dst. */
static bits plan_moves(const grid *g, const hpl__transfer_plan *plan, int src, int dst)
{
    bits out = {{0}};
    for (int s = 0; s < plan->count; s++)
        if (plan->steps[s].src == src && plan->steps[s].dst == dst)
            out = bits_or(out, region_bits(g, &plan->steps[s].region, "step region"));
    return out;
}

static int plan_steps_from(const hpl__transfer_plan *plan, int src)
{
    int n = 0;
    for (int s = 0; s < plan->count; s++)
        n += plan->steps[s].src == src;
    return n;
}

static void region_1d(hpl__region *r, uint64_t lo, uint64_t hi)
{
    hpl__box b = box1(lo, hi);
    hpl__region_set_box(r, &b);
}

static void test_slot_reuse(void)
{
    snprintf(context, sizeof context, "slot reuse");
    static const grid g = {1, {8, 1, 1}};
    world *w = &W;
    hpl__region tmp = {0};
    world_init(w, &g, true);
    hpl__box whole = box1(0, 8), left = box1(0, 4), right = box1(4, 8), mid = box1(2, 6);
    CHECK(do_add(w, 0, &whole) == 1, "first device memory is slot 1");
    CHECK(do_add(w, 0, &left) == 2, "then slot 2");
    CHECK(do_add(w, 1, &right) == 3, "then slot 3");
    check_world(w, &tmp);
    do_remove(w, 2, true, &w->c.whole_region, box_bits(&g, &whole));
    check_world(w, &tmp);
    CHECK(do_add(w, 2, &mid) == 2, "remove then add reuses the slot");
    check_world(w, &tmp);
    do_remove(w, 1, true, &w->c.whole_region, box_bits(&g, &whole));
    do_remove(w, 3, false, &w->c.whole_region, box_bits(&g, &whole));
    check_world(w, &tmp);
    int a = do_add(w, 3, &left), b = do_add(w, 3, &right);
    CHECK((a == 1 && b == 3) || (a == 3 && b == 1), "two removed slots reused");
    CHECK(do_add(w, 3, &whole) == 4, "a new slot when none is free");
    CHECK(w->c.mem[HPL__HOST].used && w->c.mem[HPL__HOST].device == HPL__NO_DEVICE, "the host stays slot 0");
    check_world(w, &tmp);
    hpl__coherence_free(&w->c);
    hpl__region_free(&tmp);
}

/* 1-D, 12 elements; devices 0, 1, 2. m1 device 0 whole, m2 device 0 [0,6),
 * m3 device 1 whole, m4 device 2 whole. */
static void test_preference(void)
{
    snprintf(context, sizeof context, "preference");
    static const grid g = {1, {12, 1, 1}};
    world *w = &W;
    hpl__region r = {0}, tmp = {0};
    hpl__transfer_plan plan = {0};
    world_init(w, &g, true);
    hpl__box whole = box1(0, 12), first = box1(0, 6);
    int m1 = do_add(w, 0, &whole), m2 = do_add(w, 0, &first), m3 = do_add(w, 1, &whole), m4 = do_add(w, 2, &whole);
    CHECK(m1 == 1 && m2 == 2 && m3 == 3 && m4 == 4, "slots 1 to 4");
    region_1d(&r, 0, 2);
    do_write(w, m2, &r, bits_range(&g, 0, 2)); /* [0,2) only in m2 */
    region_1d(&r, 2, 6);
    do_write(w, m3, &r, bits_range(&g, 2, 6));
    do_read(w, m4, &r, bits_range(&g, 2, 6), false); /* staged: host, m3, m4 hold [2,6) */
    do_invalidate(w, HPL__HOST, &r, bits_range(&g, 2, 6)); /* now only m3 and m4 */
    check_world(w, &tmp);

    snprintf(context, sizeof context, "preference: read m1");
    CHECK(hpl__coherence_plan_read(&w->c, m1, &w->c.whole_region, &plan), "plan_read");
    CHECK(bits_equal(plan_moves(&g, &plan, m2, m1), bits_range(&g, 0, 2)), "same device: m2 -> m1 [0,2)");
    CHECK(bits_equal(plan_moves(&g, &plan, m3, HPL__HOST), bits_range(&g, 2, 6)), "lowest other device staged");
    CHECK(bits_equal(plan_moves(&g, &plan, HPL__HOST, m1), bits_range(&g, 2, 12)), "host -> m1 [2,12)");
    CHECK(plan_steps_from(&plan, m4) == 0, "nothing from the higher slot");
    apply_plan(w, m1, box_bits(&g, &whole), &plan, &tmp);

    snprintf(context, sizeof context, "preference: read the host");
    CHECK(hpl__coherence_plan_read(&w->c, HPL__HOST, &w->c.whole_region, &plan), "plan_read");
    CHECK(plan.count == 1 && bits_equal(plan_moves(&g, &plan, m1, HPL__HOST), bits_range(&g, 0, 2)),
          "one step from the lowest device memory: m1 -> host [0,2)");
    apply_plan(w, HPL__HOST, box_bits(&g, &whole), &plan, &tmp);

    snprintf(context, sizeof context, "preference: read m2");
    region_1d(&r, 0, 6);
    region_1d(&tmp, 2, 6);
    do_invalidate(w, m2, &tmp, bits_range(&g, 2, 6));
    CHECK(hpl__coherence_plan_read(&w->c, m2, &r, &plan), "plan_read");
    CHECK(plan.count == 1 && bits_equal(plan_moves(&g, &plan, m1, m2), bits_range(&g, 2, 6)),
          "the same device over the host: m1 -> m2 [2,6)");
    apply_plan(w, m2, bits_range(&g, 0, 6), &plan, &tmp);

    snprintf(context, sizeof context, "preference: nothing missing");
    CHECK(hpl__coherence_plan_read(&w->c, m2, &r, &plan), "plan_read");
    CHECK(plan.count == 0, "no step when the region is valid");
    hpl__transfer_plan_free(&plan);

    case_end(w, &r, &tmp);
}

static void test_lost(void)
{
    static const grid g = {1, {8, 1, 1}};
    world *w = &W;
    hpl__region r = {0}, tmp = {0};
    hpl__transfer_plan plan = {0};
    hpl__box whole = box1(0, 8);
    for (int save = 0; save < 2; save++) {
        snprintf(context, sizeof context, "remove %s", save ? "saved" : "unsaved");
        world_init(w, &g, true);
        int m1 = do_add(w, 0, &whole);
        region_1d(&r, 2, 5);
        do_write(w, m1, &r, bits_range(&g, 2, 5));
        bits lost = do_remove(w, m1, save, &w->c.whole_region, box_bits(&g, &whole));
        CHECK(bits_equal(lost, save ? (bits){{0}} : bits_range(&g, 2, 5)), "lost elements");
        check_world(w, &tmp);
        CHECK(hpl__coherence_plan_read(&w->c, HPL__HOST, &w->c.whole_region, &plan), "plan_read");
        CHECK(plan.count == 0, "the host lacks only data valid nowhere: nothing to move");
        hpl__transfer_plan_free(&plan);
        CHECK(do_add(w, 0, &whole) == m1, "slot reused");
        CHECK(hpl__coherence_plan_read(&w->c, m1, &w->c.whole_region, &plan), "plan_read");
        bits expect = save ? box_bits(&g, &whole) : bits_minus(box_bits(&g, &whole), bits_range(&g, 2, 5));
        CHECK(bits_equal(plan_moves(&g, &plan, HPL__HOST, m1), expect), "host -> new memory, without lost data");
        apply_plan(w, m1, box_bits(&g, &whole), &plan, &tmp);
        hpl__coherence_free(&w->c);
    }
    hpl__region_free(&r);
    hpl__region_free(&tmp);
}

static void test_no_data(void)
{
    snprintf(context, sizeof context, "host_valid false");
    static const grid g = {2, {3, 3, 1}};
    world *w = &W;
    hpl__region r = {0}, tmp = {0};
    hpl__transfer_plan plan = {0};
    world_init(w, &g, false);
    check_world(w, &tmp);
    CHECK(hpl__region_empty(&w->c.mem[HPL__HOST].valid), "nothing valid");
    CHECK(hpl__coherence_plan_read(&w->c, HPL__HOST, &w->c.whole_region, &plan) && plan.count == 0, "nothing to move");
    hpl__transfer_plan_free(&plan);
    hpl__box whole = grid_box(&g), part = box3(1, 3, 0, 2, 0, 1);
    int m1 = do_add(w, 5, &whole);
    CHECK(hpl__coherence_plan_read(&w->c, m1, &w->c.whole_region, &plan) && plan.count == 0, "nothing to move");
    hpl__transfer_plan_free(&plan);
    hpl__region_set_box(&r, &part);
    do_write(w, m1, &r, box_bits(&g, &part));
    check_world(w, &tmp);
    CHECK(hpl__coherence_plan_read(&w->c, HPL__HOST, &w->c.whole_region, &plan), "plan_read");
    CHECK(plan.count == 1 && bits_equal(plan_moves(&g, &plan, m1, HPL__HOST), box_bits(&g, &part)),
          "only the written part moves");
    apply_plan(w, HPL__HOST, box_bits(&g, &whole), &plan, &tmp);
    case_end(w, &r, &tmp);
}

/* A plan of more steps than the first allocation of the steps array holds:
 * the regions of the steps already planned must survive its growth. 1-D, 8
 * elements, device 0: m1 whole, m2..m6 one element each, written there; a
 * read of m1 takes 5 copies within the device and one DMA from the host. */
static void test_many_steps(void)
{
    snprintf(context, sizeof context, "many steps");
    static const grid g = {1, {8, 1, 1}};
    world *w = &W;
    hpl__region r = {0}, tmp = {0};
    hpl__transfer_plan plan = {0};
    world_init(w, &g, true);
    hpl__box whole = box1(0, 8);
    int m1 = do_add(w, 0, &whole), mk[5];
    for (int k = 0; k < 5; k++) {
        hpl__box one = box1((uint64_t)k, (uint64_t)k + 1);
        mk[k] = do_add(w, 0, &one);
        hpl__region_set_box(&r, &one);
        do_write(w, mk[k], &r, box_bits(&g, &one));
    }
    check_world(w, &tmp);
    CHECK(hpl__coherence_plan_read(&w->c, m1, &w->c.whole_region, &plan), "plan_read");
    CHECK(plan.count == 6, "six steps");
    for (int k = 0; k < 5; k++)
        CHECK(bits_equal(plan_moves(&g, &plan, mk[k], m1), bits_range(&g, (uint64_t)k, (uint64_t)k + 1)),
              "each one-element memory -> m1, its element (regions of early steps intact)");
    CHECK(bits_equal(plan_moves(&g, &plan, HPL__HOST, m1), bits_range(&g, 5, 8)), "host -> m1 [5,8)");
    apply_plan(w, m1, box_bits(&g, &whole), &plan, &tmp);
    case_end(w, &r, &tmp);
}

static bool points_are(const hpl__point *got, int n, int want_n, const hpl__point *want)
{
    if (n != want_n)
        return false;
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (int j = 0; j < n; j++)
            found = found || (got[i].timeline == want[j].timeline && got[i].value == want[j].value);
        if (!found)
            return false;
    }
    return true;
}

/* Explicit points on whole memories: per device the highest reader and
 * writer. */
static void test_points(void)
{
    snprintf(context, sizeof context, "points");
    static const grid g = {1, {4, 1, 1}};
    world *w = &W;
    hpl__coherence *c = &w->c;
    hpl__region r = {0}, tmp = {0};
    hpl__point p[HPL__MAX_TIMELINES];
    world_init(w, &g, true);
    hpl__box whole = box1(0, 4);
    int m1 = do_add(w, 3, &whole), m2 = do_add(w, 7, &whole);
    CHECK(hpl__coherence_all_points(c, p, 0) == 0, "nothing pending at first");
    uint64_t t3 = timeline[3], t7 = timeline[7];
    do_read(w, m1, &c->whole_region, box_bits(&g, &whole), true); /* host -> m1 at t3+1, kernel read t3+2 */
    CHECK(hpl__coherence_wait_points(c, HPL__HOST, NULL, false, p, 0) == 0, "host: no writer");
    CHECK(points_are(p, hpl__coherence_wait_points(c, HPL__HOST, NULL, true, p, 0), 1, (hpl__point[]){{3, t3 + 1}}),
          "host write waits for the DMA that read it");
    CHECK(points_are(p, hpl__coherence_wait_points(c, m1, NULL, false, p, 0), 1, (hpl__point[]){{3, t3 + 1}}),
          "m1 read waits for the DMA that wrote it");
    CHECK(points_are(p, hpl__coherence_wait_points(c, m1, NULL, true, p, 0), 1, (hpl__point[]){{3, t3 + 2}}),
          "m1 write waits for the kernel that read it (same device: the highest)");
    do_read(w, m2, &c->whole_region, box_bits(&g, &whole), false); /* host -> m2 at t7+1 */
    CHECK(points_are(p, hpl__coherence_wait_points(c, HPL__HOST, NULL, true, p, 0), 2,
                     (hpl__point[]){{3, t3 + 1}, {7, t7 + 1}}),
          "host write waits for both DMAs");
    region_1d(&r, 1, 2);
    do_write(w, m2, &r, bits_range(&g, 1, 2)); /* kernel on 7 at t7+2 */
    CHECK(points_are(p, hpl__coherence_wait_points(c, m2, NULL, false, p, 0), 1, (hpl__point[]){{7, t7 + 2}}),
          "the write replaces the writer");
    do_read(w, m1, &c->whole_region, box_bits(&g, &whole), false); /* m2 -> host t7+3, host -> m1 t3+3 */
    CHECK(points_are(p, hpl__coherence_wait_points(c, HPL__HOST, NULL, false, p, 0), 1, (hpl__point[]){{7, t7 + 3}}),
          "staging wrote the host on device 7");
    CHECK(points_are(p, hpl__coherence_wait_points(c, m1, NULL, false, p, 0), 1, (hpl__point[]){{3, t3 + 3}}),
          "m1 written by the DMA on device 3");
    p[0] = (hpl__point){3, t3 + 100};
    p[1] = (hpl__point){9, 1};
    CHECK(points_are(p, hpl__coherence_wait_points(c, HPL__HOST, NULL, true, p, 2), 3,
                     (hpl__point[]){{3, t3 + 100}, {9, 1}, {7, t7 + 3}}),
          "appended, deduplicated, keeping the highest");
    check_world(w, &tmp);
    hpl__coherence_free(c);
    hpl__region_free(&r);
    hpl__region_free(&tmp);
}

/* The cases, per region: 1-D "rows" 0..15 of a host storage and
 * three devices 0, 1, 2 with memories of their own (m0, m1, m2, whole). */
static void test_regions(void)
{
    snprintf(context, sizeof context, "regions");
    static const grid g = {1, {16, 1, 1}};
    world *w = &W;
    hpl__coherence *c = &w->c;
    hpl__region r = {0}, tmp = {0};
    hpl__point p[HPL__MAX_TIMELINES];
    world_init(w, &g, true);
    hpl__box whole = box1(0, 16);
    int m0 = do_add(w, 0, &whole), m1 = do_add(w, 1, &whole), m2 = do_add(w, 2, &whole);
    (void)m1;
    /* Devices 0 and 2 write their parts; each stages its border row to the
     * host: device 0 row 5, device 2 row 10. */
    region_1d(&r, 0, 6);
    do_write(w, m0, &r, bits_range(&g, 0, 6));
    region_1d(&r, 10, 16);
    do_write(w, m2, &r, bits_range(&g, 10, 16));
    hpl__transfer t0 = {m0, HPL__HOST, {0}}, t2 = {m2, HPL__HOST, {0}};
    region_1d(&t0.region, 5, 6);
    region_1d(&t2.region, 10, 11);
    hpl__point at0 = tick(0), at2 = tick(2);
    CHECK(hpl__coherence_did_transfer(c, &t0, at0) && hpl__coherence_did_transfer(c, &t2, at2), "did_transfer");
    ref_touch(m0, bits_range(&g, 5, 6), at0, false);
    ref_touch(HPL__HOST, bits_range(&g, 5, 6), at0, true);
    ref_touch(m2, bits_range(&g, 10, 11), at2, false);
    ref_touch(HPL__HOST, bits_range(&g, 10, 11), at2, true);
    w->m.valid[HPL__HOST] = bits_or(w->m.valid[HPL__HOST], bits_or(bits_range(&g, 5, 6), bits_range(&g, 10, 11)));
    for (int e = 5; e < 11; e += 5)
        w->m.value[HPL__HOST][e] = w->m.newest[e];
    /* Staging the two rows did not wait for each other. */
    CHECK(hpl__coherence_wait_points(c, HPL__HOST, &t2.region, true, p, 0) == 1 && p[0].timeline == 2,
          "writing row 10 of the host waits only for device 2's copy there");
    region_1d(&r, 5, 6);
    CHECK(points_are(p, hpl__coherence_wait_points(c, HPL__HOST, &r, false, p, 0), 1, (hpl__point[]){at0}),
          "device 1 reading row 5 waits for device 0 only");
    region_1d(&r, 6, 10);
    CHECK(hpl__coherence_wait_points(c, HPL__HOST, &r, true, p, 0) == 0, "rows 6..9 of the host: nothing pending");
    CHECK(points_are(p, hpl__coherence_wait_points(c, HPL__HOST, NULL, false, p, 0), 2, (hpl__point[]){at0, at2}),
          "the whole host storage waits for both");
    /* A zero-copy kernel of device 2 reads rows 12..15 of the host storage:
     * a host write of rows 0..3 does not wait for it, of rows 2..13 does. */
    region_1d(&r, 12, 16);
    hpl__point k2 = tick(2);
    hpl__coherence_did_read(c, HPL__HOST, &r, k2);
    ref_touch(HPL__HOST, bits_range(&g, 12, 16), k2, false);
    region_1d(&r, 0, 4);
    CHECK(hpl__coherence_wait_points(c, HPL__HOST, &r, true, p, 0) == 0, "host write of rows 0..3: no wait");
    region_1d(&r, 2, 14);
    CHECK(points_are(p, hpl__coherence_wait_points(c, HPL__HOST, &r, true, p, 0), 2, (hpl__point[]){at0, k2}),
          "host write of rows 2..13: device 0's copy, device 2's kernel");
    region_1d(&r, 12, 14);
    CHECK(hpl__coherence_wait_points(c, HPL__HOST, &r, false, p, 0) == 0, "host read of rows 12..13: no writer");
    /* The kernel read rows 12..15 again, later: one access left, covering
     * the old one; device 2's copy of row 10 stays. */
    region_1d(&r, 12, 16);
    hpl__point k2b = tick(2);
    hpl__coherence_did_read(c, HPL__HOST, &r, k2b);
    ref_touch(HPL__HOST, bits_range(&g, 12, 16), k2b, false);
    CHECK(c->mem[HPL__HOST].access_count == 3, "a later read of the same rows replaces the earlier one");
    CHECK(hpl__coherence_exact(c, HPL__HOST), "no merge");
    check_world(w, &tmp);
    /* Device 0's work is done. */
    hpl__coherence_retire(c, &at0, 1);
    ref_retire(at0);
    CHECK(c->mem[HPL__HOST].access_count == 2, "retire forgets device 0's copy");
    check_world(w, &tmp);
    hpl__coherence_free(c);
    hpl__region_free(&r);
    hpl__region_free(&tmp);
    hpl__region_free(&t0.region);
    hpl__region_free(&t2.region);
}

/* Past HPL__ACCESSES_PER_TIMELINE reads of one device, the two oldest merge:
 * the list stays bounded, waits grow (never shrink), retire clears. */
static void test_merge(void)
{
    snprintf(context, sizeof context, "merge");
    static const grid g = {1, {40, 1, 1}};
    world *w = &W;
    hpl__coherence *c = &w->c;
    hpl__region r = {0}, tmp = {0};
    hpl__point p[HPL__MAX_TIMELINES], at[HPL__ACCESSES_PER_TIMELINE + 2];
    world_init(w, &g, true);
    int n = HPL__ACCESSES_PER_TIMELINE + 2;
    for (int i = 0; i < n; i++) { /* element 4i, read by device 1 */
        region_1d(&r, 4 * (uint64_t)i, 4 * (uint64_t)i + 1);
        at[i] = tick(1);
        hpl__coherence_did_read(c, HPL__HOST, &r, at[i]);
        ref_touch(HPL__HOST, bits_range(&g, 4 * (uint64_t)i, 4 * (uint64_t)i + 1), at[i], false);
        CHECK(c->mem[HPL__HOST].access_count == (uint32_t)HPL__MIN(i + 1, HPL__ACCESSES_PER_TIMELINE),
              "at most HPL__ACCESSES_PER_TIMELINE accesses");
    }
    CHECK(!hpl__coherence_exact(c, HPL__HOST), "merged");
    region_1d(&r, 1, 2); /* between the first two elements: merged over */
    CHECK(points_are(p, hpl__coherence_wait_points(c, HPL__HOST, &r, true, p, 0), 1, (hpl__point[]){at[2]}),
          "a write between merged elements waits for the merged access");
    region_1d(&r, 4 * (uint64_t)(n - 1), 4 * (uint64_t)n);
    CHECK(points_are(p, hpl__coherence_wait_points(c, HPL__HOST, &r, true, p, 0), 1, (hpl__point[]){at[n - 1]}),
          "the newest element keeps its own point");
    region_1d(&r, 4 * (uint64_t)(n - 1) + 1, 4 * (uint64_t)n);
    CHECK(hpl__coherence_wait_points(c, HPL__HOST, &r, true, p, 0) == 0, "beside it: nothing");
    check_world(w, &tmp);
    hpl__coherence_retire(c, &at[2], 1);
    ref_retire(at[2]);
    CHECK(hpl__coherence_exact(c, HPL__HOST), "the merged access retired: exact again");
    check_world(w, &tmp);
    hpl__coherence_retire(c, &at[n - 1], 1);
    CHECK(c->mem[HPL__HOST].access_count == 0, "all retired");
    hpl__coherence_free(c);
    hpl__region_free(&r);
    hpl__region_free(&tmp);
}

/* An overflow point on the whole memory (what an access becomes when the
 * list cannot grow: out of memory, injected): every access waits for it,
 * reads too; retire forgets it. */
static void test_overflow_point(void)
{
    snprintf(context, sizeof context, "whole point");
    static const grid g = {1, {8, 1, 1}};
    world *w = &W;
    hpl__coherence *c = &w->c;
    hpl__region r = {0};
    hpl__point p[HPL__MAX_TIMELINES];
    world_init(w, &g, true);
    hpl__point at = tick(4);
    region_1d(&r, 1, 2);
    __atomic_store_n(&hpl__fault_host_alloc, 0, __ATOMIC_RELAXED); /* the access list's first growth */
    hpl__coherence_did_read(c, HPL__HOST, &r, at);
    __atomic_store_n(&hpl__fault_host_alloc, -1, __ATOMIC_RELAXED);
    CHECK(c->mem[HPL__HOST].access_count == 0 && c->mem[HPL__HOST].overflow[4] == at.value, "an overflow point");
    CHECK(!hpl__coherence_exact(c, HPL__HOST), "not exact");
    region_1d(&r, 6, 7);
    CHECK(points_are(p, hpl__coherence_wait_points(c, HPL__HOST, &r, false, p, 0), 1, (hpl__point[]){at}),
          "a read of any part waits for it");
    CHECK(points_are(p, hpl__coherence_all_points(c, p, 0), 1, (hpl__point[]){at}), "all_points has it");
    hpl__point before = {4, at.value - 1};
    hpl__coherence_retire(c, &before, 1);
    CHECK(c->mem[HPL__HOST].overflow[4] == at.value, "an earlier point retired: kept");
    hpl__coherence_retire(c, &at, 1);
    CHECK(c->mem[HPL__HOST].overflow[4] == 0 && hpl__coherence_exact(c, HPL__HOST), "retired");
    hpl__coherence_free(c);
    hpl__region_free(&r);
}

/* ---- 3. points_add -------------------------------------------------------- */

static void test_points_add(void)
{
    snprintf(context, sizeof context, "points_add");
    for (int t = 0; t < 20000; t++) {
        hpl__point list[HPL__MAX_TIMELINES + GUARD], ref[HPL__MAX_TIMELINES + GUARD];
        int n = random_prefix(list);
        memcpy(ref, list, sizeof ref);
        points_pad(list, HPL__MAX_TIMELINES + GUARD, 0xa5); /* only the fields may count */
        points_pad(ref, HPL__MAX_TIMELINES + GUARD, 0x5a);
        for (int a = 0; a < 6; a++) {
            hpl__point p = {(int)rng_below(HPL__MAX_TIMELINES), 1 + rng_below(20)};
            int got = hpl__points_add(list, n, p);
            n = ref_points_add(ref, n, p);
            CHECK(got == n && points_equal(list, ref, HPL__MAX_TIMELINES + GUARD),
                  "one point per device, the highest, in place");
            if (got != n)
                break;
        }
    }
}

/* ---- Main ----------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : getenv("UNIT_COHERENCE_SEED");
    if (s && *s) {
        seed = strtoull(s, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
    }
    rng_state = seed * 0x9E3779B97F4A7C15ull + 88172645463325252ull;
    if (!rng_state)
        rng_state = 88172645463325252ull;
    printf("unit_coherence: seed %" PRIu64 " (rerun with: unit_coherence %" PRIu64 ")\n", seed, seed);
    const char *sc = getenv("UNIT_COHERENCE_SCALE"); /* more sequences for soak runs */
    int scale = sc && atoi(sc) > 0 ? atoi(sc) : 1;
    uint64_t t0 = hpl__now_ns();

    test_points_add();
    test_slot_reuse();
    test_preference();
    test_lost();
    test_no_data();
    test_many_steps();
    test_points();
    test_regions();
    test_merge();
    test_overflow_point();
    test_random(scale);
    hpl__transfer_plan_free(&reused_plan);

    printf("unit_coherence: %lu checks, %lu failed, %.2f s\n", checks, failures, (double)(hpl__now_ns() - t0) * 1e-9);
    if (failures)
        fprintf(stderr, "unit_coherence: FAILED with seed %" PRIu64 "\n", seed);
    return failures ? 1 : 0;
}
