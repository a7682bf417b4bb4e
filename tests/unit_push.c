/* Unit test of lib/base/push.c against an element-wise model.
 *
 * 1. Randomised sequences on 2-D index spaces of at most 6 x 5 elements,
 *    2 to 4 devices, each with one or two memories holding random boxes,
 *    the host storage sometimes a zero-copy device's. Random validity comes
 *    from the coherence engine itself (writes, transfers, host writes);
 *    random reads (hpl__push_note_read by a device through one of its
 *    memories or the host storage) and writes (hpl__push_take) are checked
 *    against the model after every one: per device and element, "wanted"
 *    becomes true where another device reads an element it lacks (its
 *    memory does not hold it valid; a zero-copy reader lacks everything)
 *    that the device holds valid in a memory, and a write of W by d pushes
 *    exactly W's wanted elements of d and clears d's wanted there. The
 *    patterns (p->wanted) are compared element by element after every step.
 * 2. Deterministic cases: a stencil's ping-pong on two devices (each write
 *    pushes the halo rows the neighbour read), rows read once and then only
 *    rewritten (one push), a read that the reader holds already (nothing),
 *    a zero-copy reader of rows the host also holds (pushed still).
 *
 * Seed: argv[1], else from the clock; printed first and with failures. */
#include "push.h"

#include "test_util.h"
#include "unit_expect.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t seed;

static bool holds(const hpl__region *r, uint64_t x, uint64_t y)
{
    hpl__box e = box2(x, x + 1, y, y + 1);
    return hpl__region_contains_box(r, &e);
}

/* ---- 1. random sequences ------------------------------------------------- */

#define MAXD 4
#define NX 6
#define NY 5

typedef struct model {
    bool wanted[MAXD][NX][NY];
} model;

static hpl__box random_box(uint64_t nx, uint64_t ny)
{
    uint64_t x0 = rng_below(nx), y0 = rng_below(ny);
    return box2(x0, x0 + 1 + rng_below(nx - x0), y0, y0 + 1 + rng_below(ny - y0));
}

static void model_note(model *m, const hpl__coherence *c, int reader, int reader_mem, const hpl__box *b)
{
    for (uint64_t x = b->lo[0]; x < b->hi[0]; x++)
        for (uint64_t y = b->lo[1]; y < b->hi[1]; y++) {
            if (reader_mem != HPL__HOST && holds(&c->mem[reader_mem].valid, x, y))
                continue;
            for (int s = 1; s < c->count; s++)
                if (c->mem[s].used && c->mem[s].device != reader && holds(&c->mem[s].valid, x, y))
                    m->wanted[c->mem[s].device][x][y] = true;
        }
}

static void compare(const hpl__push *p, const model *m, int devices, uint64_t nx, uint64_t ny, const char *what,
                    int step)
{
    for (int d = 0; d < devices; d++)
        for (uint64_t x = 0; x < nx; x++)
            for (uint64_t y = 0; y < ny; y++)
                EXPECT(holds(&p->wanted[d], x, y) == m->wanted[d][x][y],
                       "seed %" PRIu64 " step %d (%s): device %d element (%" PRIu64 ",%" PRIu64 ") wanted %d, model %d",
                       seed, step, what, d, x, y, holds(&p->wanted[d], x, y), m->wanted[d][x][y]);
}

/* A random change of validity through the coherence engine. */
static void random_validity(hpl__coherence *c, const int *mem_device, int mems, uint64_t nx, uint64_t ny,
                            uint64_t *value)
{
    int m = 1 + (int)rng_below((uint64_t)mems);
    hpl__region r;
    hpl__region_init(&r);
    hpl__box b = random_box(nx, ny), in;
    if (rng_below(4) == 0) { /* the host writes */
        hpl__region_set_box(&r, &b);
        hpl__coherence_did_write(c, HPL__HOST, &r, (hpl__point){0, 0});
    } else if (hpl__box_intersect(&b, &c->mem[m].box, &in)) {
        hpl__region_set_box(&r, &in);
        hpl__point at = {mem_device[m], ++*value};
        if (rng_below(2)) {
            hpl__coherence_did_write(c, m, &r, at);
        } else { /* a copy in from wherever it is valid */
            hpl__transfer_plan plan = {0};
            hpl__coherence_plan_read(c, m, &r, &plan);
            for (int i = 0; i < plan.count; i++)
                hpl__coherence_did_transfer(c, &plan.steps[i], at);
            hpl__transfer_plan_free(&plan);
        }
    }
    hpl__region_free(&r);
}

static void random_sequence(void)
{
    int devices = 2 + (int)rng_below(MAXD - 1);
    uint64_t nx = 1 + rng_below(NX), ny = 1 + rng_below(NY), value = 0;
    hpl__box whole = box2(0, nx, 0, ny);
    hpl__coherence c;
    hpl__coherence_init(&c, &whole, true);
    int mem_device[1 + 2 * MAXD], mems = 0;
    for (int d = 0; d < devices; d++)
        for (int k = 0; k < 1 + (int)rng_below(2); k++) {
            hpl__box b = rng_below(2) ? whole : random_box(nx, ny);
            int slot = hpl__coherence_add(&c, d, &b);
            mem_device[slot] = d;
            mems++;
        }
    hpl__push *p = hpl__push_create();
    model m;
    memset(&m, 0, sizeof m);
    hpl__region r, out;
    hpl__region_init(&r);
    hpl__region_init(&out);
    for (int step = 0; step < 60; step++) {
        int what = (int)rng_below(3);
        if (what == 0) {
            random_validity(&c, mem_device, mems, nx, ny, &value);
            continue;
        }
        int d = (int)rng_below((uint64_t)devices);
        if (what == 1) { /* d reads through one of its memories, or zero-copy */
            int via = HPL__HOST;
            for (int s = 1; s < c.count; s++)
                if (mem_device[s] == d && rng_below(3))
                    via = s;
            hpl__box b = random_box(nx, ny), in = b;
            if (via != HPL__HOST && !hpl__box_intersect(&b, &c.mem[via].box, &in))
                continue;
            hpl__region_set_box(&r, &in);
            model_note(&m, &c, d, via, &in);
            EXPECT(hpl__push_note_read(p, &c, d, via, &r), "note_read failed");
            compare(p, &m, devices, nx, ny, "read", step);
        } else { /* d writes */
            hpl__box b = random_box(nx, ny);
            hpl__region_set_box(&r, &b);
            if (rng_below(3) == 0) { /* two boxes */
                hpl__box b2 = random_box(nx, ny);
                hpl__region_add_box(&r, &b2);
            }
            EXPECT(hpl__push_take(p, d, &r, &out), "take failed");
            for (uint64_t x = 0; x < nx; x++)
                for (uint64_t y = 0; y < ny; y++) {
                    bool w = holds(&r, x, y), pushed = w && m.wanted[d][x][y];
                    EXPECT(holds(&out, x, y) == pushed,
                           "seed %" PRIu64 " step %d: device %d pushes (%" PRIu64 ",%" PRIu64 "): %d, model %d", seed,
                           step, d, x, y, holds(&out, x, y), pushed);
                    if (w)
                        m.wanted[d][x][y] = false;
                }
            compare(p, &m, devices, nx, ny, "write", step);
        }
    }
    hpl__region_free(&r);
    hpl__region_free(&out);
    hpl__push_destroy(p);
    hpl__coherence_free(&c);
}

/* ---- 2. deterministic cases --------------------------------------------- */

static uint64_t volume_of(hpl__push *p, int d, const hpl__box *written)
{
    hpl__region w, out;
    hpl__region_init(&w);
    hpl__region_init(&out);
    hpl__region_set_box(&w, written);
    EXPECT(hpl__push_take(p, d, &w, &out), "take failed");
    uint64_t v = hpl__region_volume(&out);
    hpl__region_free(&w);
    hpl__region_free(&out);
    return v;
}

static void note(hpl__push *p, const hpl__coherence *c, int reader, int mem, const hpl__box *b)
{
    hpl__region r;
    hpl__region_init(&r);
    hpl__region_set_box(&r, b);
    EXPECT(hpl__push_note_read(p, c, reader, mem, &r), "note_read failed");
    hpl__region_free(&r);
}

static void did_write(hpl__coherence *c, int mem, const hpl__box *b, hpl__point at)
{
    hpl__region r;
    hpl__region_init(&r);
    hpl__region_set_box(&r, b);
    hpl__coherence_did_write(c, mem, &r, at);
    hpl__region_free(&r);
}

/* 8 rows of 4 over two devices, one halo row: device 0 owns rows 0-3 and
 * holds 0-4, device 1 owns 4-7 and holds 3-7; arrays a and b swap roles. */
static void ping_pong(void)
{
    hpl__box whole = box2(0, 8, 0, 4), held0 = box2(0, 5, 0, 4), held1 = box2(3, 8, 0, 4);
    hpl__box own0 = box2(0, 4, 0, 4), own1 = box2(4, 8, 0, 4);
    hpl__coherence c[2];
    hpl__push *p[2];
    int s0[2], s1[2];
    for (int a = 0; a < 2; a++) {
        hpl__coherence_init(&c[a], &whole, true);
        s0[a] = hpl__coherence_add(&c[a], 0, &held0);
        s1[a] = hpl__coherence_add(&c[a], 1, &held1);
        p[a] = hpl__push_create();
    }
    uint64_t v = 0;
    for (int step = 0; step < 6; step++) {
        int in = step % 2, out = 1 - in;
        /* Reads of `in` first (both devices, before the copies land). */
        note(p[in], &c[in], 0, s0[in], &held0);
        note(p[in], &c[in], 1, s1[in], &held1);
        hpl__region hr;
        hpl__region_init(&hr);
        hpl__region_set_box(&hr, &held0);
        hpl__transfer_plan plan = {0};
        hpl__coherence_plan_read(&c[in], s0[in], &hr, &plan);
        for (int i = 0; i < plan.count; i++)
            hpl__coherence_did_transfer(&c[in], &plan.steps[i], (hpl__point){0, ++v});
        hpl__transfer_plan_free(&plan);
        hpl__region_set_box(&hr, &held1);
        hpl__coherence_plan_read(&c[in], s1[in], &hr, &plan);
        for (int i = 0; i < plan.count; i++)
            hpl__coherence_did_transfer(&c[in], &plan.steps[i], (hpl__point){1, ++v});
        hpl__transfer_plan_free(&plan);
        hpl__region_free(&hr);
        /* Writes of `out`: from the third step on (out read from the
         * devices once before),
         * each device pushes its one boundary row. */
        uint64_t want = step >= 2 ? 4 : 0;
        EXPECT(volume_of(p[out], 0, &own0) == want, "ping-pong step %d: device 0 pushes %" PRIu64, step, want);
        EXPECT(volume_of(p[out], 1, &own1) == want, "ping-pong step %d: device 1 pushes %" PRIu64, step, want);
        did_write(&c[out], s0[out], &own0, (hpl__point){0, ++v});
        did_write(&c[out], s1[out], &own1, (hpl__point){1, ++v});
    }
    for (int a = 0; a < 2; a++) {
        hpl__push_destroy(p[a]);
        hpl__coherence_free(&c[a]);
    }
}

static void once_then_rewritten(void)
{
    hpl__box whole = box2(0, 4, 0, 1), own = box2(0, 2, 0, 1), row1 = box2(1, 2, 0, 1);
    hpl__coherence c;
    hpl__coherence_init(&c, &whole, false);
    int m0 = hpl__coherence_add(&c, 0, &whole), m1 = hpl__coherence_add(&c, 1, &whole);
    did_write(&c, m0, &own, (hpl__point){0, 1});
    hpl__push *p = hpl__push_create();
    note(p, &c, 1, m1, &row1); /* device 1 reads row 1 once */
    EXPECT(volume_of(p, 0, &own) == 1, "rows read once: the next write pushes them");
    for (int i = 0; i < 3; i++)
        EXPECT(volume_of(p, 0, &own) == 0, "rows read once: rewrite %d pushes nothing", i + 2);
    /* A reader holding the rows valid lacks nothing. */
    did_write(&c, m0, &own, (hpl__point){0, 2});
    did_write(&c, m1, &row1, (hpl__point){1, 1}); /* now valid on device 1 only */
    note(p, &c, 1, m1, &row1);
    EXPECT(volume_of(p, 0, &own) == 0, "a reader holding the rows: nothing noted for device 0");
    /* A zero-copy reader lacks rows the host holds too. */
    hpl__region r;
    hpl__region_init(&r);
    hpl__region_set_box(&r, &row1);
    hpl__transfer t = {.src = m1, .dst = HPL__HOST, .region = r};
    hpl__coherence_did_transfer(&c, &t, (hpl__point){1, 2});
    note(p, &c, 0, HPL__HOST, &row1);
    EXPECT(volume_of(p, 1, &whole) == 1, "zero-copy reader: device 1 pushes the row the host holds too");
    EXPECT(volume_of(p, 0, &whole) == 0, "zero-copy reader: nothing for the reader itself");
    hpl__region_free(&r);
    hpl__push_destroy(p);
    hpl__coherence_free(&c);
}

int main(int argc, char **argv)
{
    seed = argc > 1 ? strtoull(argv[1], NULL, 10) : (uint64_t)time(NULL);
    printf("unit_push: seed %" PRIu64 "\n", seed);
    rng_state = seed * 2654435761u + 1;
    for (int i = 0; i < 3000; i++)
        random_sequence();
    ping_pong();
    once_then_rewritten();
    printf("unit_push: %ld checks, %ld failed\n", checks, failures);
    return failures ? 1 : 0;
}
