/* Handle pools (lib/base/handle.c) on their own: the fields of a handle, every
 * state a lookup tells apart (live, null, another context's, stale, never
 * made), generations that retire a slot instead of wrapping, a full pool,
 * and context serials: distinct across threads, and when they run out,
 * hpl_context_create refuses before it opens anything. */
#include "handle.h"
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int objects[8];

static void fields(void)
{
    const uint32_t serials[] = {1, 2, 77, HPL__HANDLE_SERIAL_MAX};
    const uint32_t gens[] = {1, 2, 4096, HPL__HANDLE_GENERATION_MAX};
    const uint32_t indices[] = {0, 1, 12345, HPL__HANDLE_INDEX_MAX - 1};
    int bad = 0;
    for (int s = 0; s < 4; s++)
        for (int g = 0; g < 4; g++)
            for (int i = 0; i < 4; i++) {
                hpl__handle h = hpl__handle_make(serials[s], gens[g], indices[i]);
                bad += h == 0 || hpl__handle_serial(h) != serials[s] || hpl__handle_generation(h) != gens[g] ||
                       hpl__handle_index(h) != indices[i];
            }
    CHECK(bad == 0, "%d of 64 handles did not give back their serial, generation and index", bad);
    CHECK(HPL__HANDLE_SERIAL_BITS + HPL__HANDLE_GENERATION_BITS + HPL__HANDLE_INDEX_BITS == 64,
          "the fields take %u bits", HPL__HANDLE_SERIAL_BITS + HPL__HANDLE_GENERATION_BITS + HPL__HANDLE_INDEX_BITS);
}

static void expect_state(const hpl__pool *p, hpl__handle h, hpl__handle_state want, const char *words,
                         const char *what)
{
    hpl__handle_state got = hpl__pool_check(p, h);
    CHECK(got == want, "%s: handle %#llx state %d, want %d", what, (unsigned long long)h, (int)got, (int)want);
    if (want == HPL__HANDLE_LIVE) {
        CHECK(hpl__pool_get(p, h) != NULL, "%s: a live handle gave no object", what);
        return;
    }
    CHECK(hpl__pool_get(p, h) == NULL, "%s: handle %#llx gave an object", what, (unsigned long long)h);
    int rc = hpl__pool_fail(p, h, "array");
    CHECK(rc == HPL_ERROR_INVALID_HANDLE, "%s: hpl__pool_fail returned %d", what, rc);
    CHECK(th_contains(hpl_last_error(), words), "%s: message \"%s\" does not say \"%s\"", what, hpl_last_error(),
          words);
}

static void visit(void *object, void *user)
{
    ((int *)user)[(int *)object - objects]++;
}

static void states(void)
{
    hpl__pool a, b;
    hpl__pool_init(&a, 5);
    hpl__pool_init(&b, 6);
    hpl__handle a0 = hpl__pool_add(&a, &objects[0]);
    hpl__handle a1 = hpl__pool_add(&a, &objects[1]);
    hpl__handle b0 = hpl__pool_add(&b, &objects[2]);
    CHECK(hpl__handle_serial(a0) == 5 && hpl__handle_generation(a0) == 1 && hpl__handle_index(a0) == 0,
          "first handle %#llx", (unsigned long long)a0);
    CHECK(hpl__handle_index(a1) == 1, "second handle %#llx", (unsigned long long)a1);
    CHECK(hpl__handle_index(b0) == 0 && hpl__handle_generation(b0) == 1 && b0 != a0,
          "the other pool's first handle %#llx (first of this one %#llx)", (unsigned long long)b0,
          (unsigned long long)a0);
    CHECK(hpl__pool_get(&a, a0) == &objects[0] && hpl__pool_get(&a, a1) == &objects[1] &&
              hpl__pool_get(&b, b0) == &objects[2],
          "lookups gave the wrong objects");
    expect_state(&a, a0, HPL__HANDLE_LIVE, "", "live");
    expect_state(&a, 0, HPL__HANDLE_NULL, "null", "handle 0");
    expect_state(&a, b0, HPL__HANDLE_FOREIGN, "another context", "the other pool's handle, same slot and generation");
    expect_state(&b, a1, HPL__HANDLE_FOREIGN, "another context", "a handle of a slot the other pool does not have");
    expect_state(&a, hpl__handle_make(5, 1, 7), HPL__HANDLE_UNKNOWN, "never created", "index past the slots");
    expect_state(&a, hpl__handle_make(5, 2, 0), HPL__HANDLE_UNKNOWN, "never created", "a generation not given yet");
    expect_state(&a, hpl__handle_make(5, 0, 0), HPL__HANDLE_UNKNOWN, "never created", "generation 0");
    expect_state(&a, hpl__handle_make(0, 1, 0), HPL__HANDLE_FOREIGN, "another context", "serial 0");
    CHECK(th_contains(hpl_last_error(), "#0") && th_contains(hpl_last_error(), "#5"),
          "the message \"%s\" does not name both contexts", hpl_last_error());

    /* Remove: stale, and removing again or through another pool does nothing. */
    CHECK(hpl__pool_remove(&b, a0) == NULL, "another pool removed a handle it does not own");
    CHECK(hpl__pool_get(&a, a0) == &objects[0], "removing through another pool freed the slot");
    CHECK(hpl__pool_remove(&a, a0) == &objects[0], "remove did not return the object");
    CHECK(hpl__pool_remove(&a, a0) == NULL, "a second remove returned an object");
    expect_state(&a, a0, HPL__HANDLE_STALE, "stale", "removed");
    CHECK(th_contains(hpl_last_error(), "destroyed"), "message \"%s\"", hpl_last_error());
    /* The slot is reused with the next generation; the old handle stays stale. */
    hpl__handle a0b = hpl__pool_add(&a, &objects[3]);
    CHECK(hpl__handle_index(a0b) == 0 && hpl__handle_generation(a0b) == 2, "reused slot gave %#llx",
          (unsigned long long)a0b);
    expect_state(&a, a0, HPL__HANDLE_STALE, "stale", "older generation of a reused slot");
    expect_state(&a, a0b, HPL__HANDLE_LIVE, "", "reused slot");
    CHECK(hpl__pool_get(&a, a0b) == &objects[3], "reused slot gave the wrong object");

    /* Each visits exactly the live objects. */
    int seen[8] = {0};
    hpl__pool_each(&a, visit, seen);
    CHECK(seen[0] == 0 && seen[1] == 1 && seen[3] == 1, "each visited %d %d %d", seen[0], seen[1], seen[3]);

    /* Freed pools keep their serial and start over. */
    hpl__pool_free(&a);
    CHECK(a.serial == 5 && a.count == 0 && a.slots == NULL, "hpl__pool_free left serial %u count %u", a.serial,
          a.count);
    expect_state(&a, a1, HPL__HANDLE_UNKNOWN, "never created", "a handle of a freed pool");
    hpl__pool_free(&b);

    /* A pool without a serial gives nothing out. */
    hpl__pool none;
    hpl__pool_init(&none, 0);
    CHECK(hpl__pool_add(&none, &objects[0]) == 0, "a pool with serial 0 gave out a handle");
    hpl__pool_free(&none);
}

/* One slot used 2^20 - 1 times: then it retires, and no handle of it is
 * ever live again. */
static void retirement(void)
{
    hpl__pool p;
    hpl__pool_init(&p, 9);
    hpl__handle first = 0, last = 0;
    uint32_t n = 0;
    for (;;) {
        hpl__handle h = hpl__pool_add(&p, &objects[0]);
        if (hpl__handle_index(h) != 0) {
            /* The slot retired: the next add took slot 1. */
            CHECK(hpl__handle_index(h) == 1 && hpl__handle_generation(h) == 1, "after retirement: %#llx",
                  (unsigned long long)h);
            hpl__pool_remove(&p, h);
            break;
        }
        if (!first)
            first = h;
        last = h;
        n++;
        if (hpl__pool_remove(&p, h) != &objects[0] || n > HPL__HANDLE_GENERATION_MAX) {
            CHECK(false, "use %u of slot 0 failed", n);
            break;
        }
    }
    CHECK(n == HPL__HANDLE_GENERATION_MAX, "slot 0 was used %u times before retiring, want %u", n,
          HPL__HANDLE_GENERATION_MAX);
    CHECK(hpl__handle_generation(last) == HPL__HANDLE_GENERATION_MAX, "last generation %u",
          hpl__handle_generation(last));
    expect_state(&p, first, HPL__HANDLE_STALE, "stale", "first use of a retired slot");
    expect_state(&p, last, HPL__HANDLE_STALE, "stale", "last use of a retired slot");
    /* Slot 0 is skipped for good. */
    hpl__handle h = hpl__pool_add(&p, &objects[1]);
    CHECK(hpl__handle_index(h) == 1 && hpl__handle_generation(h) == 2, "a retired slot came back: %#llx",
          (unsigned long long)h);
    hpl__pool_free(&p);
}

/* Every slot taken: add fails with 0, and works again after a remove. */
static void full(void)
{
    hpl__pool p;
    hpl__pool_init(&p, 3);
    uint32_t n = 0;
    hpl__handle h = 0;
    while ((h = hpl__pool_add(&p, &objects[n % 8])) != 0 && n <= HPL__HANDLE_INDEX_MAX)
        n++;
    CHECK(n == HPL__HANDLE_INDEX_MAX, "a pool took %u objects, want %u", n, HPL__HANDLE_INDEX_MAX);
    hpl__handle mid = hpl__handle_make(3, 1, 1000);
    CHECK(hpl__pool_get(&p, mid) == &objects[1000 % 8], "slot 1000 holds the wrong object");
    CHECK(hpl__pool_remove(&p, mid) != NULL, "remove in a full pool failed");
    h = hpl__pool_add(&p, &objects[0]);
    CHECK(hpl__handle_index(h) == 1000 && hpl__handle_generation(h) == 2, "the freed slot gave %#llx",
          (unsigned long long)h);
    hpl__pool_free(&p);
}

#define THREADS 4
#define PER_THREAD 20000

static void *take_serials(void *arg)
{
    uint32_t *out = arg;
    for (int i = 0; i < PER_THREAD; i++)
        out[i] = hpl__handle_serial_next();
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void serials(void)
{
    static uint32_t got[THREADS * PER_THREAD];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, take_serials, &got[i * PER_THREAD]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    qsort(got, THREADS * PER_THREAD, sizeof got[0], cmp_u32);
    int zero = 0, dup = 0;
    for (int i = 0; i < THREADS * PER_THREAD; i++) {
        zero += got[i] == 0;
        dup += i > 0 && got[i] == got[i - 1];
    }
    CHECK(zero == 0 && dup == 0, "%d threads took %d serials: %d zero, %d repeated", THREADS, THREADS * PER_THREAD,
          zero, dup);

    /* Use them all up: the counter stops at the maximum, never wraps. */
    uint32_t s, prev = got[THREADS * PER_THREAD - 1];
    int out_of_order = 0;
    while ((s = hpl__handle_serial_next()) != 0) {
        out_of_order += s != prev + 1;
        prev = s;
    }
    CHECK(out_of_order == 0 && prev == HPL__HANDLE_SERIAL_MAX, "serials ended at %u (%d out of order), want %u", prev,
          out_of_order, HPL__HANDLE_SERIAL_MAX);
    CHECK(hpl__handle_serial_next() == 0 && hpl__handle_serial_next() == 0, "a serial was given out after the last");

    /* Then no context can be made, and the failure says why. */
    hpl_context *ctx = (hpl_context *)&objects[0];
    hpl_context_desc desc = {.devices = "cpu", .no_disk_cache = true};
    th_prepare_desc(&desc);
    CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_UNSUPPORTED, "contexts");
    CHECK_MSG("hpl_context_create");
    CHECK(ctx == (hpl_context *)&objects[0], "a failing hpl_context_create wrote its out-parameter");
}

int main(void)
{
    fields();
    states();
    retirement();
    full();
    serials(); /* last: it uses up the process's context serials */
    return th_finish(NULL);
}
