/* Plan and runner handles (hplvk.h chapter 7c, "Handles") on two logical
 * devices ("cpu:2"):
 *   - a destroyed plan is refused by every plan call, its slot taken by a
 *     new plan meanwhile (HPL_ERROR_INVALID_HANDLE, "hpl_plan_destroy"),
 *     and destroying it again records that error and changes nothing;
 *   - a plan of a destroyed context is refused ("with its context");
 *   - values that were never plans (a runner, an address) are refused;
 *   - a partitioner that destroys its own plan: the eval completes with the
 *     right result, the plan is stale after it;
 *   - a partitioner that evaluates or resets its own plan is refused, and
 *     the plan works after;
 *   - a runner kept past its partitioner call, used after the eval and
 *     during a later eval's partitioner call, and after its plan was
 *     destroyed: HPL_ERROR_INVALID_HANDLE ("partitioner call has returned");
 *   - a partitioner that returns an error with no failing hplvk call gets a
 *     message saying so (not the thread's older message), twice in a row
 *     with no prefix stacked; one whose call failed gets that call's
 *     message, prefixed once;
 *   - hpl_runner_subarray of a box the user made already with
 *     hpl_subarray uses it, and leaves it alive; a 17th subarray of one
 *     runner is refused before it is made;
 *   - two threads evaluate one plan (one eval at a time: the other is
 *     refused) while a third destroys it: evals run, are refused or meet
 *     the plan destroyed, nothing else, and those that ran are right.
 * Every eval's result is checked against the host (b[i] = 3 a[i] + i). */
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 1000

static const char *scale_src = "#include <hplvk.glsl>\n"
                               "hpl_args { hpl_in(uint, 1) a; hpl_out(uint, 1) b; };\n"
                               "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = 3u * hpl_at(a, i) + i; }\n";

typedef struct data {
    hpl_context *ctx;
    hpl_kernel k;
    hpl_array a, b;
    uint32_t host_a[N];
} data;

static data make_data(hpl_context *ctx)
{
    data d = {.ctx = ctx, .k = th_kernel(ctx, scale_src)};
    d.a = th_array(ctx, HPL_UINT32, N, 0, 0);
    d.b = th_array(ctx, HPL_UINT32, N, 0, 0);
    uint32_t *pa = th_access(ctx, d.a, HPL_WRITE);
    for (uint32_t i = 0; i < N; i++) {
        d.host_a[i] = i * 2654435761u;
        if (pa)
            pa[i] = d.host_a[i];
    }
    return d;
}

static void free_data(data *d)
{
    CHECK_OK(hpl_array_destroy(d->ctx, d->a));
    CHECK_OK(hpl_array_destroy(d->ctx, d->b));
    CHECK_OK(hpl_kernel_destroy(d->ctx, d->k));
}

/* b zeroed, then the caller's eval; b must then be 3 a + i. */
static void clear_b(data *d)
{
    uint32_t *pb = th_access(d->ctx, d->b, HPL_WRITE);
    if (pb)
        memset(pb, 0, N * sizeof *pb);
}

static void expect_b(data *d, const char *what)
{
    const uint32_t *pb = th_access(d->ctx, d->b, HPL_READ);
    int bad = 0, first = -1;
    for (uint32_t i = 0; pb && i < N; i++)
        if (pb[i] != 3u * d->host_a[i] + i && bad++ == 0)
            first = (int)i;
    CHECK(pb && bad == 0, "%s: %d elements of b wrong, first b[%d]", what, bad, first);
}

static int eval(hpl_plan *plan, data *d)
{
    return hpl_plan_eval(plan, d->k, NULL, HPL_ARGS(hpl_arr(d->a), hpl_arr(d->b)));
}

/* What the partitioners below do besides running their rows. */
typedef struct probe {
    hpl_plan *plan;        /* the plan they run for */
    bool destroy;          /* destroy it (first call) */
    bool again;            /* evaluate and reset it (first call) */
    int again_rc[2];       /* what those returned */
    char again_msg[2][512];
    hpl_runner *kept;      /* the first runner given (kept past the call) */
    hpl_runner *stale;     /* a runner to try (from an earlier eval) */
    int stale_rc[3];
    char stale_msg[512];
    int calls;
} probe;

/* The runner's rows of a and b, run. */
static int run_rows(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args)
{
    hpl_array a, b;
    int rc = hpl_runner_subarray(r, args[0].value.array, HPL_RANGES({rg[0].first, rg[0].last}), &a);
    if (rc == HPL_OK)
        rc = hpl_runner_subarray(r, args[1].value.array, HPL_RANGES({rg[0].first, rg[0].last}), &b);
    return rc == HPL_OK ? hpl_runner_run(r, HPL_ARGS(hpl_arr(a), hpl_arr(b))) : rc;
}

static int probe_parts(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)nargs;
    probe *p = user;
    if (p->calls++ == 0) {
        p->kept = r;
        if (p->destroy)
            hpl_plan_destroy(p->plan);
        if (p->again) {
            p->again_rc[0] = eval(p->plan, &(data){0});
            snprintf(p->again_msg[0], sizeof p->again_msg[0], "%s", hpl_last_error());
            p->again_rc[1] = hpl_plan_reset(p->plan);
            snprintf(p->again_msg[1], sizeof p->again_msg[1], "%s", hpl_last_error());
        }
        if (p->stale) {
            hpl_array x;
            p->stale_rc[0] = hpl_runner_run(p->stale, args, 2);
            snprintf(p->stale_msg, sizeof p->stale_msg, "%s", hpl_last_error());
            p->stale_rc[1] = hpl_runner_subarray(p->stale, args[0].value.array, HPL_RANGES({0, 1}), &x);
            p->stale_rc[2] = hpl_runner_device(p->stale);
        }
    }
    return run_rows(r, rg, args);
}

/* Every plan call with `plan` fails with HPL_ERROR_INVALID_HANDLE naming
 * `why`, leaving out-parameters alone. */
static void expect_stale(hpl_plan *plan, data *d, const char *why, const char *what)
{
    CHECK_FAILS(eval(plan, d), HPL_ERROR_INVALID_HANDLE, why);
    CHECK_MSG("hpl_plan_eval");
    CHECK_FAILS(hpl_plan_reset(plan), HPL_ERROR_INVALID_HANDLE, why);
    hpl_plan_info info;
    memset(&info, 0x5a, sizeof info);
    CHECK_FAILS(hpl_plan_get_info(plan, &info), HPL_ERROR_INVALID_HANDLE, why);
    CHECK(info.device_count == 0x5a5a5a5a, "%s: hpl_plan_get_info of a stale plan wrote its output", what);
    char line[64] = "untouched";
    CHECK_FAILS(hpl_plan_describe(plan, line, sizeof line), HPL_ERROR_INVALID_HANDLE, why);
    CHECK(!strcmp(line, "untouched"), "%s: hpl_plan_describe of a stale plan wrote \"%s\"", what, line);
    hpl_plan *copy = (hpl_plan *)&copy;
    CHECK_FAILS(hpl_plan_copy(plan, NULL, NULL, &copy), HPL_ERROR_INVALID_HANDLE, why);
    CHECK(copy == (hpl_plan *)&copy, "%s: hpl_plan_copy of a stale plan wrote its output", what);
    /* Destroying it again: the error recorded, nothing else. */
    CHECK_FAILS(hpl_plan_reset(NULL), HPL_ERROR_INVALID_ARGUMENT, "plan is NULL"); /* another message first */
    hpl_plan_destroy(plan);
    CHECK(strstr(hpl_last_error(), "hpl_plan_destroy") && th_contains(hpl_last_error(), why),
          "%s: a second hpl_plan_destroy left \"%s\"", what, hpl_last_error());
}

static void destroyed_plans(hpl_context *ctx)
{
    data d = make_data(ctx);
    hpl_plan *plan = NULL, *other = NULL;
    probe p = {0};
    if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = probe_parts, .user = &p}, &plan)))
        return;
    clear_b(&d);
    CHECK_OK(eval(plan, &d));
    expect_b(&d, "a plan before its destruction");
    hpl_plan_destroy(plan);
    expect_stale(plan, &d, "destroyed (hpl_plan_destroy)", "destroyed plan");
    /* A new plan takes the destroyed one's place: the old one stays stale. */
    CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.shares = (const double[]){3, 1}}, &other));
    expect_stale(plan, &d, "destroyed (by hpl_plan_destroy or with its context)", "destroyed plan, slot taken");
    clear_b(&d);
    CHECK_OK(hpl_plan_eval(other, d.k, NULL, HPL_ARGS(hpl_part1(d.a, 0), hpl_part1(d.b, 0))));
    expect_b(&d, "the plan made after a destroyed one");
    hpl_plan_info info;
    CHECK_OK(hpl_plan_get_info(other, &info));
    CHECK(info.rows[0] == 750 && info.rows[1] == 250, "the new plan ran %llu:%llu rows, want 750:250",
          (unsigned long long)info.rows[0], (unsigned long long)info.rows[1]);

    /* Values that were never plans. */
    hpl_plan *never = (hpl_plan *)&d;
    CHECK_FAILS(eval(never, &d), HPL_ERROR_INVALID_HANDLE, "never made");
    CHECK_FAILS(hpl_plan_reset(NULL), HPL_ERROR_INVALID_ARGUMENT, "plan is NULL");
    hpl_plan_destroy(NULL); /* ignored */
    hpl_plan_destroy(other);
    free_data(&d);

    /* The plans of a destroyed context. */
    hpl_context *gone = th_context("cpu:2");
    hpl_plan *orphan = NULL;
    CHECK_OK(hpl_plan_create(gone, NULL, &orphan));
    hpl_context_destroy(gone);
    d = make_data(ctx);
    expect_stale(orphan, &d, "with its context", "plan of a destroyed context");
    free_data(&d);
}

static void partitioner_destroys_its_plan(hpl_context *ctx)
{
    data d = make_data(ctx);
    probe p = {.destroy = true};
    if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = probe_parts, .user = &p}, &p.plan)))
        return;
    clear_b(&d);
    CHECK_OK(eval(p.plan, &d)); /* the eval runs to its end */
    CHECK(p.calls == 2, "the partitioner was called %d times, want 2", p.calls);
    expect_b(&d, "an eval whose partitioner destroyed its plan");
    expect_stale(p.plan, &d, "destroyed (hpl_plan_destroy)", "plan destroyed by its partitioner");
    free_data(&d);
}

static void partitioner_evaluates_its_plan(hpl_context *ctx)
{
    data d = make_data(ctx);
    probe p = {.again = true};
    if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = probe_parts, .user = &p}, &p.plan)))
        return;
    clear_b(&d);
    CHECK_OK(eval(p.plan, &d));
    expect_b(&d, "an eval whose partitioner evaluated its plan");
    for (int i = 0; i < 2; i++)
        CHECK(p.again_rc[i] == HPL_ERROR_INVALID_ARGUMENT && strstr(p.again_msg[i], "in an eval already"),
              "hpl_plan_%s from the plan's own partitioner: %s (%s)", i ? "reset" : "eval",
              hpl_error_name(p.again_rc[i]), p.again_msg[i]);
    p.again = false;
    clear_b(&d);
    CHECK_OK(eval(p.plan, &d));
    expect_b(&d, "the plan's next eval");
    CHECK_OK(hpl_plan_reset(p.plan));
    hpl_plan_destroy(p.plan);
    free_data(&d);
}

static void kept_runners(hpl_context *ctx)
{
    data d = make_data(ctx);
    probe p = {0};
    if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = probe_parts, .user = &p}, &p.plan)))
        return;
    clear_b(&d);
    CHECK_OK(eval(p.plan, &d));
    hpl_runner *kept = p.kept;
    /* After the eval: refused, b unchanged. */
    CHECK_FAILS(hpl_runner_run(kept, HPL_ARGS(hpl_arr(d.a), hpl_arr(d.b))), HPL_ERROR_INVALID_HANDLE,
                "partitioner call has returned");
    CHECK_MSG("hpl_runner_run");
    hpl_array x = {0};
    CHECK_FAILS(hpl_runner_subarray(kept, d.a, HPL_RANGES({0, 9}), &x), HPL_ERROR_INVALID_HANDLE,
                "partitioner call has returned");
    CHECK(x.id == 0, "hpl_runner_subarray of a stale runner wrote its output");
    CHECK_FAILS(hpl_runner_device(kept), HPL_ERROR_INVALID_HANDLE, "partitioner call has returned");
    expect_b(&d, "the runner kept past its call");
    /* During a later eval's partitioner call. */
    p.calls = 0;
    p.stale = kept;
    clear_b(&d);
    CHECK_OK(eval(p.plan, &d));
    expect_b(&d, "the eval whose partitioner tried an old runner");
    CHECK(p.stale_rc[0] == HPL_ERROR_INVALID_HANDLE && p.stale_rc[1] == HPL_ERROR_INVALID_HANDLE &&
              p.stale_rc[2] == HPL_ERROR_INVALID_HANDLE && strstr(p.stale_msg, "partitioner call has returned"),
          "an earlier eval's runner during a partitioner call: %d %d %d (%s)", p.stale_rc[0], p.stale_rc[1],
          p.stale_rc[2], p.stale_msg);
    /* After its plan was destroyed. */
    kept = p.kept;
    hpl_plan_destroy(p.plan);
    CHECK_FAILS(hpl_runner_run(kept, HPL_ARGS(hpl_arr(d.a), hpl_arr(d.b))), HPL_ERROR_INVALID_HANDLE,
                "partitioner call has returned");
    CHECK_FAILS(hpl_runner_device(kept), HPL_ERROR_INVALID_HANDLE, "partitioner call has returned");
    CHECK_FAILS(eval((hpl_plan *)kept, &d), HPL_ERROR_INVALID_HANDLE, "is a runner, not a plan");
    /* Not runners at all. */
    CHECK_FAILS(hpl_runner_device(NULL), HPL_ERROR_INVALID_ARGUMENT, "runner is NULL");
    CHECK_FAILS(hpl_runner_device((hpl_runner *)&d), HPL_ERROR_INVALID_HANDLE, "never given to a partitioner");
    free_data(&d);
}

/* ---- the partitioner's errors ------------------------------------------------ */

static int returns_error(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)r, (void)rg, (void)args, (void)nargs, (void)user;
    return HPL_ERROR_OUT_OF_RANGE;
}

static int call_fails(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)rg, (void)nargs, (void)user;
    hpl_array x;
    return hpl_runner_subarray(r, args[0].value.array, HPL_RANGES({5, 2 * N}), &x);
}

static int occurrences(const char *s, const char *word)
{
    int n = 0;
    for (const char *p = strstr(s, word); p; p = strstr(p + 1, word))
        n++;
    return n;
}

static void partitioner_errors(hpl_context *ctx)
{
    data d = make_data(ctx);
    hpl_plan *plan = NULL;
    if (CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = returns_error}, &plan))) {
        /* The thread's last message is about something else. */
        CHECK_FAILS(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32}, &(hpl_array){0}),
                    HPL_ERROR_DIMENSIONS, "dims");
        for (int i = 0; i < 2; i++) {
            CHECK_FAILS(eval(plan, &d), HPL_ERROR_OUT_OF_RANGE,
                        "the partitioner returned -17 (HPL_ERROR_OUT_OF_RANGE) without a failing hplvk call");
            const char *msg = hpl_last_error();
            CHECK(!strstr(msg, "dims") && occurrences(msg, "partitioner") == 1 &&
                      occurrences(msg, "hpl_plan_eval") == 1,
                  "eval %d: the message reads \"%s\"", i, msg);
        }
        hpl_plan_destroy(plan);
    }
    if (CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = call_fails}, &plan))) {
        for (int i = 0; i < 2; i++) {
            CHECK_FAILS(eval(plan, &d), HPL_ERROR_OUT_OF_RANGE, "the partitioner: hpl_runner_subarray: ");
            const char *msg = hpl_last_error();
            CHECK(occurrences(msg, "partitioner") == 1 && occurrences(msg, "hpl_plan_eval") == 1 &&
                      !strstr(msg, "without a failing"),
                  "eval %d: the message reads \"%s\"", i, msg);
        }
        hpl_plan_destroy(plan);
    }
    free_data(&d);
}

/* ---- runner subarrays the user made ------------------------------------------ */

static int rows_parts(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)nargs, (void)user;
    return run_rows(r, rg, args);
}

static void user_subarrays(hpl_context *ctx)
{
    data d = make_data(ctx);
    hpl_plan *plan = NULL;
    hpl_array sa, sb;
    /* Device 0's rows of an equal split over two devices. */
    CHECK_OK(hpl_subarray(ctx, d.a, HPL_RANGES({0, N / 2 - 1}), &sa));
    CHECK_OK(hpl_subarray(ctx, d.b, HPL_RANGES({0, N / 2 - 1}), &sb));
    if (CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = rows_parts}, &plan))) {
        for (int i = 0; i < 2; i++) {
            clear_b(&d);
            CHECK_OK(eval(plan, &d));
            expect_b(&d, "a partitioner whose subarrays the user made");
        }
        /* The user's subarrays are alive and still theirs. */
        CHECK(hpl_subarray_count(ctx, d.a) == 1 && hpl_subarray_count(ctx, d.b) == 1,
              "a has %d subarrays and b %d after the evals, want 1 each", hpl_subarray_count(ctx, d.a),
              hpl_subarray_count(ctx, d.b));
        const uint32_t *p = th_access(ctx, sb, HPL_READ);
        CHECK(p && p[N / 2 - 1] == 3u * d.host_a[N / 2 - 1] + N / 2 - 1, "the user's subarray of b reads %u",
              p ? p[N / 2 - 1] : 0);
        hpl_plan_destroy(plan);
    }
    CHECK_OK(hpl_array_destroy(ctx, sa));
    CHECK_OK(hpl_array_destroy(ctx, sb));
    free_data(&d);
}

/* 17 one-row subarrays of a: one past what a runner may ask for. */
static int too_many_parts(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)nargs, (void)user;
    hpl_array x;
    int rc = HPL_OK;
    for (uint64_t i = 0; rc == HPL_OK && i < 17; i++)
        rc = hpl_runner_subarray(r, args[0].value.array, HPL_RANGES({rg[0].first + i, rg[0].first + i}), &x);
    return rc;
}

/* The 17th is refused before it is made: the eval fails and leaves a with
 * no subarray. */
static void too_many_subarrays(hpl_context *ctx)
{
    data d = make_data(ctx);
    hpl_plan *plan = NULL;
    if (CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = too_many_parts}, &plan))) {
        CHECK_FAILS(eval(plan, &d), HPL_ERROR_INVALID_ARGUMENT, "at most 16 subarrays");
        CHECK(hpl_subarray_count(ctx, d.a) == 0, "a has %d subarrays after the failed eval, want 0",
              hpl_subarray_count(ctx, d.a));
        hpl_plan_destroy(plan);
    }
    free_data(&d);
}

/* ---- threads ---------------------------------------------------------------- */

typedef struct racer {
    hpl_plan *plan;
    data *d;
    int evals, ok, refused, stale, other;
    _Atomic int *started;
} racer;

/* Evals of the plan on the racer's own arrays until the plan is stale:
 * each one runs (HPL_OK), is refused while the other thread's eval runs,
 * or meets the plan destroyed; nothing else. */
static void *race(void *arg)
{
    racer *r = arg;
    for (int i = 0; i < r->evals; i++) {
        int rc = eval(r->plan, r->d);
        if (i == 0)
            (*r->started)++;
        if (rc == HPL_OK)
            r->ok++;
        else if (rc == HPL_ERROR_INVALID_ARGUMENT && strstr(hpl_last_error(), "in an eval already"))
            r->refused++;
        else if (rc == HPL_ERROR_INVALID_HANDLE && strstr(hpl_last_error(), "destroyed (hpl_plan_destroy)"))
            r->stale++;
        else
            r->other++;
        if (rc == HPL_ERROR_INVALID_HANDLE)
            break;
    }
    return NULL;
}

/* Two threads evaluate one plan while the main thread destroys it: the
 * evals in flight finish (their results right), the later ones fail. */
static void threads(hpl_context *ctx)
{
    data d[2] = {make_data(ctx), make_data(ctx)};
    hpl_plan *plan = NULL;
    if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = rows_parts}, &plan)))
        return;
    _Atomic int started = 0;
    racer r[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        clear_b(&d[i]);
        r[i] = (racer){.plan = plan, .d = &d[i], .evals = 200, .started = &started};
        CHECK(pthread_create(&t[i], NULL, race, &r[i]) == 0, "pthread_create");
    }
    while (started < 2)
        sched_yield();
    hpl_plan_destroy(plan);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECK(r[i].other == 0 && r[i].stale <= 1, "thread %d: %d evals ran, %d were refused, %d met the plan destroyed, "
              "%d failed otherwise", i, r[i].ok, r[i].refused, r[i].stale, r[i].other);
        if (r[i].ok)
            expect_b(&d[i], "an eval racing with the plan's destruction");
        free_data(&d[i]);
    }
    CHECK_FAILS(hpl_plan_reset(plan), HPL_ERROR_INVALID_HANDLE, "destroyed");
}

int main(void)
{
    hpl_context *ctx = th_context("cpu:2");
    destroyed_plans(ctx);
    partitioner_destroys_its_plan(ctx);
    partitioner_evaluates_its_plan(ctx);
    kept_runners(ctx);
    partitioner_errors(ctx);
    user_subarrays(ctx);
    too_many_subarrays(ctx);
    threads(ctx);
    return th_finish(ctx);
}
