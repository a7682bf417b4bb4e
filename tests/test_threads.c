/* The threading contract of hplvk.h chapter 2: every function taking a
 * context may be called from several threads at once.
 *   - 4 threads, each with its own kernel and arrays in ONE context
 *     ("cpu:2"), 50 evals each with host reads in between; two of the
 *     threads alternate devices, so cross-device chains run concurrently.
 *   - one thread doing host accesses while another evals other arrays.
 *   - kernels created concurrently from the same source (one cache entry).
 *   - hpl_last_error() is per thread.
 *   - six threads: three split evals whose ghost check (validation) waits
 *     with the context released, beside three plain evaluators: each eval
 *     keeps its own subkernels, and then the context is destroyed
 *     (unit_args_stamp makes the argument chunks' case deterministic). */
#include "harness.h"
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 2048
#define EVALS 50

static hpl_context *ctx;

static const char *step_src = /* x = x * 3 + k (uint, in place) */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 3u + k; }\n";

static const char *map_src = /* y = x + k */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) x; hpl_out(uint, 1) y; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i) + k; }\n";

typedef struct worker {
    int id;
    int devices; /* 1: always device id%2; 2: alternate */
    int errors;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    uint32_t ref[N], yref[N];
    hpl_kernel step, map;
    /* Each thread compiles its own kernel objects (the same source as the
     * others: the SPIR-V cache is shared). */
    if (!CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.glsl = step_src}, &step)) ||
        !CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.glsl = map_src}, &map)))
        return NULL;
    hpl_array x, y;
    if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {N}}, &x)) ||
        !CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {N}}, &y)))
        return NULL;
    for (int i = 0; i < N; i++)
        ref[i] = (uint32_t)(i * (w->id + 1));
    CHECK_OK(hpl_array_write(ctx, x, ref, sizeof ref));
    for (uint32_t s = 0; s < EVALS; s++) {
        hpl_launch l = {.device = w->devices == 2 ? (int)(s % 2) : w->id % 2};
        uint32_t k = s * 16u + (uint32_t)w->id;
        CHECK_OK(hpl_eval(ctx, step, &l, HPL_ARGS(hpl_arr(x), hpl_u32(k))));
        for (int i = 0; i < N; i++)
            ref[i] = ref[i] * 3u + k;
        if (s % 10 == 9) {
            /* y = x + id on the other device, then check both on the host. */
            hpl_launch l2 = {.device = 1 - l.device};
            CHECK_OK(hpl_eval(ctx, map, &l2, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_u32((uint32_t)w->id))));
            for (int i = 0; i < N; i++)
                yref[i] = ref[i] + (uint32_t)w->id;
            const uint32_t *py = NULL;
            if (CHECK_OK(hpl_array_access(ctx, y, HPL_READ, (void **)&py))) {
                int bad = 0;
                for (int i = 0; i < N; i++)
                    bad += py[i] != yref[i];
                CHECK(bad == 0, "thread %d step %u: y has %d wrong elements", w->id, s, bad);
                w->errors += bad;
            }
            /* Modify x on the host: the next eval must see it. */
            uint32_t *px = NULL;
            if (CHECK_OK(hpl_array_access(ctx, x, HPL_READ_WRITE, (void **)&px))) {
                int bad = 0;
                for (int i = 0; i < N; i++) {
                    bad += px[i] != ref[i];
                    ref[i] = px[i] = ref[i] ^ 0x1010u;
                }
                CHECK(bad == 0, "thread %d step %u: x has %d wrong elements", w->id, s, bad);
                w->errors += bad;
            }
        }
    }
    uint32_t got[N];
    if (CHECK_OK(hpl_array_read(ctx, x, got, sizeof got))) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += got[i] != ref[i];
        CHECK(bad == 0, "thread %d: final x has %d wrong elements", w->id, bad);
        w->errors += bad;
    }
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
    CHECK_OK(hpl_kernel_destroy(ctx, step));
    CHECK_OK(hpl_kernel_destroy(ctx, map));
    return NULL;
}

/* One thread accesses array P on the host over and over while another
 * evals on Q. */
typedef struct pair {
    hpl_array p, q;
    hpl_kernel step;
} pair;

static void *host_accessor(void *arg)
{
    pair *pr = arg;
    for (int round = 0; round < 200; round++) {
        uint32_t *p = NULL;
        if (!CHECK_OK(hpl_array_access(ctx, pr->p, HPL_READ_WRITE, (void **)&p)))
            return NULL;
        int bad = 0;
        for (int i = 0; i < N; i++) {
            bad += p[i] != (uint32_t)(i + round);
            p[i] += 1;
        }
        if (!CHECK(bad == 0, "host accessor round %d: %d wrong elements", round, bad))
            return NULL;
    }
    return NULL;
}

static void *evaluator(void *arg)
{
    pair *pr = arg;
    for (uint32_t s = 0; s < EVALS; s++)
        CHECK_OK(hpl_eval(ctx, pr->step, &(hpl_launch){.device = (int)(s % 2)}, HPL_ARGS(hpl_arr(pr->q), hpl_u32(s))));
    CHECK_OK(hpl_array_wait(ctx, pr->q));
    return NULL;
}

/* Concurrent creation of the same kernel. */
static void *creator(void *arg)
{
    hpl_kernel *out = arg;
    CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.glsl = step_src}, out));
    return NULL;
}

/* Per-thread last error. */
static void *error_thread(void *arg)
{
    (void)arg;
    CHECK(hpl_last_error() && hpl_last_error()[0] == 0, "a new thread's hpl_last_error() is \"%s\", want \"\"",
          hpl_last_error() ? hpl_last_error() : "(null)");
    hpl_array a;
    CHECK_FAILS(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {4, 0, 7}}, &a),
                HPL_ERROR_DIMENSIONS, "dims[1]");
    return NULL;
}

/* A split stencil step (b = a + 2 a[i-1] + 1, halos of one element) over
 * both devices, over and over, beside plain evals in other threads. Under
 * validation each step's ghost check waits with the context lock released,
 * while the other threads plan and run evals of their own. */
typedef struct stencil_job {
    int id;
    hpl_kernel kernel;
} stencil_job;

static void *stencil_worker(void *arg)
{
    stencil_job *j = arg;
    static uint32_t refs[3][2][N]; /* per job: a, b */
    uint32_t *ra = refs[j->id][0], *rb = refs[j->id][1];
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0), b = th_array(ctx, HPL_UINT32, N, 0, 0);
    for (int i = 0; i < N; i++)
        ra[i] = (uint32_t)(i * 5 + j->id);
    CHECK_OK(hpl_array_write(ctx, a, ra, N * sizeof *ra));
    for (int s = 0; s < EVALS; s++) {
        CHECK_OK(hpl_eval(ctx, j->kernel, &(hpl_launch){.devices = {0, 1}, .device_count = 2},
                          HPL_ARGS(hpl_part1(a, 1), hpl_part1(b, 1))));
        for (int i = 0; i < N; i++)
            rb[i] = ra[i] + ra[i ? i - 1 : 0] * 2u + 1u;
        hpl_array t = a;
        a = b;
        b = t;
        uint32_t *tr = ra;
        ra = rb;
        rb = tr;
    }
    uint32_t got[N];
    if (CHECK_OK(hpl_array_read(ctx, a, got, sizeof got))) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += got[i] != ra[i];
        CHECK(bad == 0, "stencil thread %d: %d wrong elements", j->id, bad);
    }
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    return NULL;
}

int main(void)
{
    ctx = th_context("cpu:2");

    /* 1. Four workers. */
    pthread_t t[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){.id = i, .devices = i < 2 ? 1 : 2};
        CHECK(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);

    /* 2. Host access in one thread, evals in another. */
    {
        pair pr;
        pr.p = th_array(ctx, HPL_UINT32, N, 0, 0);
        pr.q = th_array(ctx, HPL_UINT32, N, 0, 0);
        CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.glsl = step_src}, &pr.step));
        uint32_t init[N], qref[N];
        for (int i = 0; i < N; i++) {
            init[i] = (uint32_t)i;
            qref[i] = (uint32_t)i * 7u;
        }
        CHECK_OK(hpl_array_write(ctx, pr.p, init, sizeof init));
        CHECK_OK(hpl_array_write(ctx, pr.q, qref, sizeof qref));
        /* p also lives on device 0 before the race starts. */
        hpl_kernel map = th_kernel(ctx, map_src);
        hpl_array tmp = th_array(ctx, HPL_UINT32, N, 0, 0);
        CHECK_OK(hpl_eval(ctx, map, NULL, HPL_ARGS(hpl_arr(pr.p), hpl_arr(tmp), hpl_u32(0))));
        pthread_t ta, tb;
        CHECK(pthread_create(&ta, NULL, host_accessor, &pr) == 0, "pthread_create");
        CHECK(pthread_create(&tb, NULL, evaluator, &pr) == 0, "pthread_create");
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        for (uint32_t s = 0; s < EVALS; s++)
            for (int i = 0; i < N; i++)
                qref[i] = qref[i] * 3u + s;
        uint32_t got[N];
        if (CHECK_OK(hpl_array_read(ctx, pr.q, got, sizeof got))) {
            int bad = 0;
            for (int i = 0; i < N; i++)
                bad += got[i] != qref[i];
            CHECK(bad == 0, "evaluator thread: %d wrong elements", bad);
        }
        if (CHECK_OK(hpl_array_read(ctx, pr.p, got, sizeof got))) {
            int bad = 0;
            for (int i = 0; i < N; i++)
                bad += got[i] != (uint32_t)i + 200u;
            CHECK(bad == 0, "host accessor thread: %d wrong elements at the end", bad);
        }
        const uint32_t *pt = th_access(ctx, tmp, HPL_READ);
        if (pt)
            CHECK(pt[5] == 5u, "map before the race: %u", pt[5]);
        CHECK_OK(hpl_array_destroy(ctx, pr.p));
        CHECK_OK(hpl_array_destroy(ctx, pr.q));
        CHECK_OK(hpl_array_destroy(ctx, tmp));
        CHECK_OK(hpl_kernel_destroy(ctx, pr.step));
        CHECK_OK(hpl_kernel_destroy(ctx, map));
    }

    /* 3. The same kernel created from 4 threads at once; all usable. */
    {
        hpl_kernel ks[4] = {{0}};
        pthread_t tc[4];
        for (int i = 0; i < 4; i++)
            CHECK(pthread_create(&tc[i], NULL, creator, &ks[i]) == 0, "pthread_create");
        for (int i = 0; i < 4; i++)
            pthread_join(tc[i], NULL);
        hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
        for (int i = 0; i < 4; i++) {
            CHECK(ks[i].id != 0, "kernel %d not created", i);
            for (int j = 0; j < i; j++)
                CHECK(ks[i].id != ks[j].id, "kernels %d and %d share handle %llx", i, j, (unsigned long long)ks[i].id);
            CHECK_OK(hpl_eval(ctx, ks[i], NULL, HPL_ARGS(hpl_arr(x), hpl_u32(1))));
        }
        const uint32_t *px = th_access(ctx, x, HPL_READ);
        if (px)
            CHECK(px[0] == 40u && px[N - 1] == 40u, "4 evals of x*3+1 from 0: %u, want 40", px[0]);
        for (int i = 0; i < 4; i++)
            CHECK_OK(hpl_kernel_destroy(ctx, ks[i]));
        CHECK_OK(hpl_array_destroy(ctx, x));
    }

    /* 4. hpl_last_error is per thread. */
    {
        hpl_array a;
        CHECK_FAILS(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {0}}, &a),
                    HPL_ERROR_DIMENSIONS, "dims[0]");
        char mine[1024];
        snprintf(mine, sizeof mine, "%s", hpl_last_error());
        pthread_t te;
        CHECK(pthread_create(&te, NULL, error_thread, NULL) == 0, "pthread_create");
        pthread_join(te, NULL);
        CHECK(strcmp(mine, hpl_last_error()) == 0, "another thread's failure changed this thread's last error to \"%s\"",
              hpl_last_error());
    }

    /* 5. Three split stencils and three plain evaluators at once. */
    {
        stencil_job jobs[3] = {{.id = 0, .kernel = th_kernel(ctx, stencil_left_src())}, {.id = 1}, {.id = 2}};
        jobs[1].kernel = jobs[2].kernel = jobs[0].kernel;
        pair prs[3];
        pthread_t ts[3], te[3];
        for (int i = 0; i < 3; i++) {
            prs[i] = (pair){.q = th_array(ctx, HPL_UINT32, N, 0, 0)};
            CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.glsl = step_src}, &prs[i].step));
        }
        for (int i = 0; i < 3; i++) {
            CHECK(pthread_create(&ts[i], NULL, stencil_worker, &jobs[i]) == 0, "pthread_create");
            CHECK(pthread_create(&te[i], NULL, evaluator, &prs[i]) == 0, "pthread_create");
        }
        for (int i = 0; i < 3; i++) {
            pthread_join(ts[i], NULL);
            pthread_join(te[i], NULL);
        }
        uint32_t q = 0;
        for (uint32_t s = 0; s < EVALS; s++)
            q = q * 3u + s;
        for (int i = 0; i < 3; i++) {
            const uint32_t *pq = th_access(ctx, prs[i].q, HPL_READ);
            if (pq)
                CHECK(pq[0] == q && pq[N - 1] == q, "evaluator %d beside the stencils: %u, want %u", i, pq[0], q);
            CHECK_OK(hpl_array_destroy(ctx, prs[i].q));
            CHECK_OK(hpl_kernel_destroy(ctx, prs[i].step));
        }
        CHECK_OK(hpl_kernel_destroy(ctx, jobs[0].kernel));
    }

    CHECK_OK(hpl_finish(ctx));
    return th_finish(ctx);
}
