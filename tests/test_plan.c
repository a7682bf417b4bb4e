/* Execution plans (hplvk.h chapter 7c) on three logical devices ("cpu:3";
 * a GPU opened three times under TH_DEVICE_KIND): given shares through
 * annotations and through a partitioner (fig. A.17's overlapping
 * subarrays, with no exchange code), the searches (EXHAUSTIVE, SINGLE_STEP,
 * ITERATIVE, kernel-only and with transfers), ADAPTIVE and the package
 * balancers, each against a host computation; a read-write argument stays
 * one eval's result however many runs a search made; distributions that
 * cut the rows alike are run only until their cut has its timings; after
 * a search the data sits where the answer puts it (the next eval moves
 * nothing); which devices a search warms up and when (before timing a
 * device idle a second or that never ran a kernel, again when the search
 * left it idle; not right after work), and a failing warm-up; copies,
 * reset, info, description; bad plans and bad partitioners fail with
 * errors that name the problem. */
#define _POSIX_C_SOURCE 199309L
#include "harness.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 1000

/* Read-write: x[i] = 3 x[i] + i + 1. Run twice it would differ. */
static const char *bump_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_inout(uint, 1) x; };\n"
                              "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = 3u * hpl_at(x, i) + i + 1u; }\n";

/* Row by row, no halo: b[i] = 3 a[i] + i. */
static const char *scale_src = "#include <hplvk.glsl>\n"
                               "hpl_args { hpl_in(uint, 1) a; hpl_out(uint, 1) b; };\n"
                               "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = 3u * hpl_at(a, i) + i; }\n";

static void host_stencil(const uint32_t *h, uint32_t *o)
{
    for (uint32_t i = 0; i < N; i++)
        o[i] = (i ? h[i - 1] : 0u) + 2u * h[i] + (i + 1 < N ? h[i + 1] : 0u);
}

static void fill_input(hpl_context *ctx, hpl_array a, uint32_t *host)
{
    uint32_t *pa = th_access(ctx, a, HPL_WRITE);
    for (uint32_t i = 0; i < N; i++) {
        host[i] = i * 2654435761u;
        if (pa)
            pa[i] = host[i];
    }
}

static int count_wrong(hpl_context *ctx, hpl_array a, const uint32_t *want)
{
    const uint32_t *got = th_access(ctx, a, HPL_READ);
    if (!got)
        return N;
    int bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += got[i] != want[i];
    return bad;
}

/* The subarrays of args[0] (in) and args[1] (out) over the rows of rg and
 * one halo row each side (within the N rows). */
static int halo_subarrays(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, hpl_array *in, hpl_array *out)
{
    uint64_t lo = rg[0].first ? rg[0].first - 1 : 0, hi = rg[0].last + 1 < N ? rg[0].last + 1 : N - 1;
    int rc = hpl_runner_subarray(r, args[0].value.array, HPL_RANGES({lo, hi}), in);
    if (rc == HPL_OK)
        rc = hpl_runner_subarray(r, args[1].value.array, HPL_RANGES({lo, hi}), out);
    return rc;
}

/* Each device reads its rows and one halo row each side, writes its rows. */
static int stencil_parts(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)user;
    (void)nargs;
    hpl_array in, out;
    int rc = halo_subarrays(r, rg, args, &in, &out);
    return rc == HPL_OK ? hpl_runner_run(r, HPL_ARGS(hpl_arr(in), hpl_arr(out), args[2])) : rc;
}

/* Steps of the stencil with the plan, against the host; `by` names it. */
static void stencil_steps_in(hpl_context *ctx, hpl_plan *plan, const hpl_launch *launch, int steps, const char *by)
{
    hpl_kernel k = th_kernel(ctx, stencil1d_src());
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0), b = th_array(ctx, HPL_UINT32, N, 0, 0);
    static uint32_t host[2][N];
    fill_input(ctx, a, host[0]);
    hpl_plan_info info;
    CHECK_OK(hpl_plan_get_info(plan, &info));
    bool annotated = strstr(by, "partitioner") == NULL;
    for (int s = 0; s < steps; s++) {
        hpl_array in = s % 2 ? b : a, out = s % 2 ? a : b;
        int rc = annotated ? hpl_plan_eval(plan, k, launch, HPL_ARGS(hpl_part1(in, 1), hpl_part1(out, 1), hpl_u32(N)))
                           : hpl_plan_eval(plan, k, launch, HPL_ARGS(hpl_arr(in), hpl_arr(out), hpl_u32(N)));
        if (!CHECK_OK(rc))
            break;
        host_stencil(host[s % 2], host[1 - s % 2]);
    }
    int bad = count_wrong(ctx, steps % 2 ? b : a, host[steps % 2]);
    CHECK(bad == 0, "%s: %d elements differ from the host after %d steps", by, bad, steps);
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

static void stencil_steps(hpl_context *ctx, hpl_plan *plan, int steps, const char *by)
{
    stencil_steps_in(ctx, plan, NULL, steps, by);
}

/* The last eval's rows per device match the shares' cut. */
static void check_rows(hpl_plan *plan, const uint64_t *rows, const char *what)
{
    hpl_plan_info info;
    if (!CHECK_OK(hpl_plan_get_info(plan, &info)))
        return;
    uint64_t at = 0;
    for (int i = 0; i < info.device_count; i++) {
        CHECK(info.rows[i] == rows[i] && info.in_use[i] == (rows[i] > 0), "%s: device %d ran %llu rows, expected %llu",
              what, i, (unsigned long long)info.rows[i], (unsigned long long)rows[i]);
        if (rows[i])
            CHECK(info.ranges[i][0].first == at && info.ranges[i][0].last == at + rows[i] - 1,
                  "%s: device %d got rows %llu..%llu, expected %llu..%llu", what, i,
                  (unsigned long long)info.ranges[i][0].first, (unsigned long long)info.ranges[i][0].last,
                  (unsigned long long)at, (unsigned long long)(at + rows[i] - 1));
        at += rows[i];
    }
}

static void given_shares(hpl_context *ctx)
{
    hpl_plan *plan = NULL, *copy = NULL;
    const double shares[3] = {5, 1, 2};
    if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.shares = shares}, &plan)))
        return;
    stencil_steps(ctx, plan, 9, "given shares 5:1:2, annotations");
    check_rows(plan, (const uint64_t[]){625, 125, 250}, "given shares 5:1:2");
    if (CHECK_OK(hpl_plan_copy(plan, stencil_parts, NULL, &copy))) {
        stencil_steps(ctx, copy, 9, "given shares 5:1:2, partitioner (copied plan)");
        check_rows(copy, (const uint64_t[]){625, 125, 250}, "copied plan");
        hpl_plan_destroy(copy);
    }
    hpl_plan_destroy(plan);
    /* A device given nothing runs nothing. */
    if (CHECK_OK(hpl_plan_create(
            ctx, &(hpl_plan_desc){.shares = (const double[]){0, 1, 1}, .partitioner = stencil_parts}, &plan))) {
        stencil_steps(ctx, plan, 4, "given shares 0:1:1, partitioner");
        check_rows(plan, (const uint64_t[]){0, 500, 500}, "shares 0:1:1");
        char line[512];
        int n = hpl_plan_describe(plan, line, sizeof line);
        CHECK(n > 0 && strstr(line, "plan NONE") && strstr(line, "device 1 0.5000"), "describe: %s", line);
        hpl_plan_destroy(plan);
    }
}

/* The bump kernel with a plan that runs several times inside one eval (a
 * search, a package plan's alone check): the result must be one bump's,
 * then two. */
static void read_write(hpl_context *ctx, hpl_balance balance, bool transfers)
{
    char what[96];
    snprintf(what, sizeof what, "%s%s", hpl_balance_name(balance), transfers ? " with transfers" : "");
    hpl_kernel k = th_kernel(ctx, bump_src);
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
    static uint32_t host[N];
    fill_input(ctx, x, host);
    hpl_plan *plan = NULL;
    if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = balance, .step = 0.25, .time_transfers = transfers},
                                  &plan)))
        return;
    for (int e = 0; e < 2; e++) {
        if (!CHECK_OK(hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_part1(x, 0)))))
            break;
        for (uint32_t i = 0; i < N; i++)
            host[i] = 3u * host[i] + i + 1u;
        int bad = count_wrong(ctx, x, host);
        CHECK(bad == 0, "%s: after eval %d, %d elements differ from %d bump(s) on the host", what, e + 1, bad, e + 1);
    }
    hpl_plan_info info;
    CHECK_OK(hpl_plan_get_info(plan, &info));
    double sum = 0;
    for (int i = 0; i < info.device_count; i++)
        sum += info.shares[i];
    CHECK(fabs(sum - 1.0) < 1e-9, "%s: shares add up to %g", what, sum);
    if (balance == HPL_BALANCE_ADAPTIVE) {
        CHECK(info.iterations == 2 && !info.searched, "%s: %d passes", what, info.iterations);
    } else if (balance < HPL_BALANCE_DYNAMIC) { /* a search (package balancers: the values are the test) */
        /* EXHAUSTIVE: the 15 ways of 4 quarters over 3 devices, then the 1% grid around the best */
        int least = balance == HPL_BALANCE_EXHAUSTIVE ? 15 : 1;
        CHECK(info.searched && info.distributions >= least && (balance != HPL_BALANCE_SINGLE_STEP || info.distributions == 1),
              "%s: searched %d, %d distributions timed", what, info.searched, info.distributions);
        CHECK(info.runs == info.distributions * 2 || balance == HPL_BALANCE_ITERATIVE, "%s: %d runs", what, info.runs);
        for (int i = 0; i < info.device_count; i++) /* the answer's times, not the last candidate's */
            CHECK(info.in_use[i] ? isfinite(info.seconds[i]) && info.seconds[i] >= 0 : info.seconds[i] == 0,
                  "%s: device %d (in use %d) time %g", what, i, info.in_use[i], info.seconds[i]);
        CHECK_OK(hpl_plan_reset(plan));
        CHECK_OK(hpl_plan_get_info(plan, &info));
        CHECK(!info.searched && info.distributions == 0, "%s: reset left searched %d", what, info.searched);
    }
    hpl_plan_destroy(plan);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

/* A search in a trace: one "plan" event whose description is the plan's. */
static void traced_search(hpl_context *ctx)
{
    char *dir = th_tmpdir("plan"), path[512];
    snprintf(path, sizeof path, "%s/search.json", dir);
    hpl_plan *plan = NULL;
    if (CHECK_OK(hpl_trace_begin(ctx, path)) &&
        CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = HPL_BALANCE_SINGLE_STEP}, &plan))) {
        stencil_steps(ctx, plan, 2, "traced SINGLE_STEP");
        CHECK_OK(hpl_trace_end(ctx));
        char line[1024];
        hpl_plan_describe(plan, line, sizeof line);
        size_t n = 0;
        char *text = th_read_file(path, &n);
        const char *ev = text ? strstr(text, "\"cat\":\"plan\"") : NULL;
        CHECK(ev && strstr(ev, "\"description\":\"plan SINGLE_STEP") && !strstr(ev + 1, "\"cat\":\"plan\""),
              "the trace has no single plan event describing the search (%zu bytes)", n);
        /* The search's own account (the times before it are the last eval's). */
        const char *account = strchr(line, ';');
        CHECK(account && text && strstr(text, account), "the trace's description differs from '%s'", line);
        free(text);
        hpl_plan_destroy(plan);
    }
    th_rmtree(dir);
    free(dir);
}

/* The last eval's totals over the plan's devices. */
typedef struct eval_tally {
    uint64_t rows;
    int packages, used;
} eval_tally;

static eval_tally tally(const hpl_plan_info *info)
{
    eval_tally t = {0};
    for (int i = 0; i < info->device_count; i++) {
        t.rows += info->rows[i];
        t.packages += info->packages[i];
        t.used += info->in_use[i];
    }
    return t;
}

/* The papers' package schemes (keep_split: no alone check, which on
 * logical devices that share the cores would rightly leave the work to one
 * device). */
static void packages(hpl_context *ctx, hpl_balance balance)
{
    char what[64];
    snprintf(what, sizeof what, "%s, annotations", hpl_balance_name(balance));
    hpl_plan *plan = NULL;
    if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = balance, .package = 100, .keep_split = true}, &plan)))
        return;
    stencil_steps_in(ctx, plan, &(hpl_launch){.local = {20}}, 5, what); /* packages of 5 work-groups */
    /* The packages of an eval that knows no speeds: later evals may leave
     * the work to one device when (noisy, time-shared) speeds say so. */
    CHECK_OK(hpl_plan_reset(plan));
    stencil_steps_in(ctx, plan, &(hpl_launch){.local = {20}}, 1, what);
    hpl_plan_info info;
    CHECK_OK(hpl_plan_get_info(plan, &info));
    eval_tally t = tally(&info);
    CHECK(t.rows == N && t.packages >= 2, "%s: %llu rows in %d packages", what, (unsigned long long)t.rows,
          t.packages);
    if (balance == HPL_BALANCE_DYNAMIC)
        CHECK(t.packages == N / 100, "%s: %d packages of 100 rows, expected %d", what, t.packages, N / 100);
    hpl_plan_destroy(plan);
    snprintf(what, sizeof what, "%s, partitioner", hpl_balance_name(balance));
    if (CHECK_OK(hpl_plan_create(
            ctx, &(hpl_plan_desc){.balance = balance, .partitioner = stencil_parts, .keep_split = true}, &plan))) {
        stencil_steps(ctx, plan, 5, what);
        hpl_plan_destroy(plan);
    }
}

/* A package plan's first eval times the scheme against the device that ran
 * the most rows, alone, and keeps the faster for the evals after it (until
 * reset): what the description says is what they run. A kernel that reads
 * and writes its array (bump) checks that each eval is still one bump,
 * however many runs the check made. */
static void package_check(hpl_context *ctx, hpl_balance balance)
{
    char what[64], line[1024];
    snprintf(what, sizeof what, "%s with the alone check", hpl_balance_name(balance));
    read_write(ctx, balance, false);
    hpl_plan *plan = NULL;
    if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = balance}, &plan)))
        return;
    for (int round = 0; round < 2; round++) {
        stencil_steps_in(ctx, plan, &(hpl_launch){.local = {20}}, 3, what);
        hpl_plan_describe(plan, line, sizeof line);
        const char *verdict = strstr(line, "the largest device alone took");
        CHECK(verdict != NULL, "%s: the description tells no alone check: %s", what, line);
        bool alone = verdict && strstr(verdict, "it runs alone");
        hpl_plan_info info;
        CHECK_OK(hpl_plan_get_info(plan, &info));
        eval_tally t = tally(&info);
        /* When the split stays, the scheme may still leave an eval to one
         * device by its learnt speeds (a zero-copy device far faster than
         * the others did so in CI); when alone won, nothing else runs. */
        CHECK(t.rows == N && (!alone || (t.used == 1 && t.packages == 0)),
              "%s: the last eval ran %llu rows on %d devices in %d packages, and the plan says %s", what,
              (unsigned long long)t.rows, t.used, t.packages, line);
        CHECK_OK(hpl_plan_reset(plan));
        hpl_plan_describe(plan, line, sizeof line);
        CHECK(!strstr(line, "the largest device alone"), "%s: reset kept the check: %s", what, line);
    }
    hpl_plan_destroy(plan);
}

/* "cat":"plan" events in a trace file: one per first eval (a search's or
 * a package plan's check), none for the evals after it; -1: no file. */
static int plan_events(const char *path)
{
    size_t n;
    char *text = th_read_file(path, &n);
    if (!text)
        return -1;
    int count = 0;
    for (const char *p = strstr(text, "\"cat\":\"plan\""); p; p = strstr(p + 1, "\"cat\":\"plan\""))
        count++;
    free(text);
    return count;
}

/* A package plan checks itself once, also when its first eval's one
 * package left all the rows to one device (nothing to time against): the
 * evals after it are plain package evals, with no plan event each (before
 * 34b1fc9 every one of them was a first eval again). After a reset, the
 * next eval is a first eval once more. */
static void package_check_once(hpl_context *ctx)
{
    char *dir = th_tmpdir("plan"), path[512];
    hpl_plan *plan = NULL;
    if (CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = HPL_BALANCE_DYNAMIC, .package = N}, &plan))) {
        for (int round = 0; round < 2; round++) {
            snprintf(path, sizeof path, "%s/once%d.json", dir, round);
            if (!CHECK_OK(hpl_trace_begin(ctx, path)))
                break;
            stencil_steps_in(ctx, plan, &(hpl_launch){.local = {20}}, 4, "DYNAMIC, one package");
            CHECK_OK(hpl_trace_end(ctx));
            hpl_plan_info info;
            CHECK_OK(hpl_plan_get_info(plan, &info));
            eval_tally t = tally(&info);
            CHECK(t.rows == N && t.used == 1 && t.packages == 1,
                  "one package of %d rows: %llu rows on %d devices in %d packages", N, (unsigned long long)t.rows,
                  t.used, t.packages);
            int events = plan_events(path);
            CHECK(events == 1, "round %d: 4 evals left %d plan events in the trace, expected 1 (the first eval's)",
                  round, events);
            CHECK_OK(hpl_plan_reset(plan));
        }
        hpl_plan_destroy(plan);
    }
    th_rmtree(dir);
    free(dir);
}

/* ADAPTIVE's alone check (hplvk.h chapter 7c): by eval 8 it has decided,
 * whichever way the host times fall, unless back-off left one device
 * before it (on a loaded machine). If alone won, later evals run that
 * device and are no passes (iterations stop), as once back-off has left
 * one device (which may happen during them); otherwise each eval is a
 * pass. keep_split: no check. A
 * plan of one device balances nothing: no passes at all. */
static void adaptive_alone(hpl_context *ctx)
{
    for (int keep = 0; keep < 2; keep++) {
        hpl_plan *plan = NULL;
        const char *what = keep ? "ADAPTIVE, keep_split" : "ADAPTIVE";
        if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = HPL_BALANCE_ADAPTIVE, .keep_split = keep}, &plan)))
            continue;
        stencil_steps(ctx, plan, 8, what);
        char line[1024];
        hpl_plan_describe(plan, line, sizeof line);
        bool won = strstr(line, "it runs alone") != NULL, stays = strstr(line, "the split stays") != NULL;
        hpl_plan_info before, after;
        CHECK_OK(hpl_plan_get_info(plan, &before));
        stencil_steps(ctx, plan, 3, what);
        CHECK_OK(hpl_plan_get_info(plan, &after));
        int used = 0;
        for (int i = 0; i < after.device_count; i++)
            used += after.in_use[i];
        bool one_left = used == 1 && after.iterations == before.iterations;
        CHECK(!(won && stays) && (!keep || (!won && !stays)) && (won || stays || keep || one_left),
              "%s: the check: %s", what, line);
        /* Back-off may drop a device during the 3 evals too: fewer passes
         * then, and one device left. */
        int passes = after.iterations - before.iterations;
        CHECK(won ? one_left && strstr(line, "dropped") : passes == 3 || (passes >= 0 && passes < 3 && used == 1),
              "%s: %d devices, %d passes then %d: %s", what, used, before.iterations, after.iterations, line);
        hpl_plan_destroy(plan);
    }
    hpl_plan *plan = NULL;
    if (CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = HPL_BALANCE_ADAPTIVE, .device_count = 1, .devices = {1}},
                                 &plan))) {
        stencil_steps(ctx, plan, 3, "ADAPTIVE, one device");
        hpl_plan_info info;
        CHECK_OK(hpl_plan_get_info(plan, &info));
        CHECK(info.iterations == 0 && info.runs == 0 && info.in_use[0] && info.shares[0] == 1.0,
              "ADAPTIVE, one device: %d passes, %d runs", info.iterations, info.runs);
        hpl_plan_destroy(plan);
    }
}

static void searches_stencil(hpl_context *ctx)
{
    const hpl_balance kinds[] = {HPL_BALANCE_SINGLE_STEP, HPL_BALANCE_ITERATIVE, HPL_BALANCE_ADAPTIVE};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        hpl_plan *plan = NULL;
        char what[64];
        snprintf(what, sizeof what, "%s, partitioner", hpl_balance_name(kinds[i]));
        if (CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = kinds[i], .partitioner = stencil_parts}, &plan))) {
            stencil_steps(ctx, plan, 6, what);
            hpl_plan_destroy(plan);
        }
    }
}

/* The scale kernel over `rows` rows with the plan, checked against the
 * host; the search, if any, runs in the first eval. */
static void scale_evals(hpl_context *ctx, hpl_plan *plan, uint32_t rows, int evals, const char *what)
{
    hpl_kernel k = th_kernel(ctx, scale_src);
    hpl_array a = th_array(ctx, HPL_UINT32, rows, 0, 0), b = th_array(ctx, HPL_UINT32, rows, 0, 0);
    uint32_t *pa = th_access(ctx, a, HPL_WRITE);
    for (uint32_t i = 0; pa && i < rows; i++)
        pa[i] = i * 2654435761u;
    for (int e = 0; e < evals; e++)
        CHECK_OK(hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_part1(a, 0), hpl_part1(b, 0))));
    const uint32_t *in = th_access(ctx, a, HPL_READ), *out = th_access(ctx, b, HPL_READ);
    int bad = in && out ? 0 : (int)rows;
    for (uint32_t i = 0; in && out && i < rows; i++)
        bad += out[i] != 3u * in[i] + i;
    CHECK(bad == 0, "%s: %d of %u elements differ from the host", what, bad, rows);
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

/* EXHAUSTIVE on 2 rows over 3 devices: hundreds of distributions, 6 cuts
 * (rows per device 2-0-0, 1-1-0, ...). A cut runs until it has reps
 * timings; the distributions after it take its times. */
static void coinciding_cuts(hpl_context *ctx)
{
    hpl_plan *plan = NULL;
    if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = HPL_BALANCE_EXHAUSTIVE}, &plan)))
        return;
    scale_evals(ctx, plan, 2, 2, "EXHAUSTIVE on 2 rows");
    hpl_plan_info info;
    CHECK_OK(hpl_plan_get_info(plan, &info));
    CHECK(info.searched && info.distributions >= 231, "EXHAUSTIVE on 2 rows: %d distributions, expected the 231 "
          "of the 5%% grid and more", info.distributions);
    CHECK(info.runs >= 2 && info.runs <= 6 * 2 && info.runs < info.distributions,
          "EXHAUSTIVE on 2 rows: %d runs for %d distributions, expected 2 per cut of the 6 at most", info.runs,
          info.distributions);
    hpl_plan_destroy(plan);
}

/* After a search the data sits where the answer puts it: the eval after
 * it (same kernel, same arguments, split by rows with no halo) moves
 * nothing. A threshold above any time a device saves makes SINGLE_STEP's
 * answer the fastest device alone, not the equal split it timed last. */
static void answer_in_place(hpl_context *ctx, hpl_balance balance, double threshold)
{
    char what[96];
    snprintf(what, sizeof what, "%s%s: the eval after the search", hpl_balance_name(balance),
             threshold > 0 ? " with a threshold" : "");
    hpl_plan *plan = NULL;
    hpl_plan_desc desc = {.balance = balance, .step = 0.25, .threshold = threshold};
    if (!CHECK_OK(hpl_plan_create(ctx, &desc, &plan)))
        return;
    hpl_kernel k = th_kernel(ctx, scale_src);
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0), b = th_array(ctx, HPL_UINT32, N, 0, 0);
    static uint32_t host[N];
    fill_input(ctx, a, host);
    hpl_stats st = {0};
    for (int e = 0; e < 2; e++) {
        CHECK_OK(hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_part1(a, 0), hpl_part1(b, 0))));
        CHECK_OK(hpl_finish(ctx));
        CHECK_OK(e == 0 ? hpl_stats_reset(ctx) : hpl_stats_get(ctx, &st));
    }
    uint64_t moved = st.total.to_device_bytes + st.total.to_host_bytes + st.total.local_bytes;
    char line[1024];
    hpl_plan_describe(plan, line, sizeof line);
    CHECK(moved == 0, "%s moved %llu bytes (%s)", what, (unsigned long long)moved, line);
    for (uint32_t i = 0; i < N; i++)
        host[i] = 3u * host[i] + i;
    int bad = count_wrong(ctx, b, host);
    CHECK(bad == 0, "%s: %d elements differ from the host", what, bad);
    hpl_plan_destroy(plan);
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

/* ---- errors ------------------------------------------------------------- */

static int no_run(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)r, (void)rg, (void)args, (void)nargs, (void)user;
    return HPL_OK;
}

static int run_twice(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)rg, (void)user;
    int rc = hpl_runner_run(r, args, nargs);
    return rc == HPL_OK ? hpl_runner_run(r, args, nargs) : rc;
}

static int run_annotated(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)rg, (void)nargs, (void)user;
    return hpl_runner_run(r, HPL_ARGS(hpl_part1(args[0].value.array, 0), args[1], args[2]));
}

static int fails(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)r, (void)rg, (void)args, (void)nargs, (void)user;
    return HPL_ERROR_OUT_OF_RANGE;
}

static void bad_plans(hpl_context *ctx)
{
    const struct {
        hpl_plan_desc desc;
        int rc;
        const char *says;
    } bad[] = {
        {{.devices = {0, 7}, .device_count = 2}, HPL_ERROR_UNKNOWN_DEVICE, "devices[1] is 7"},
        {{.devices = {1, 1}, .device_count = 2}, HPL_ERROR_INVALID_ARGUMENT, "device 1 twice"},
        {{.device_count = -1}, HPL_ERROR_INVALID_ARGUMENT, "device_count is -1"},
        {{.shares = (const double[]){1, NAN, 1}}, HPL_ERROR_INVALID_ARGUMENT, "shares[1]"},
        {{.shares = (const double[]){0, 0, 0}}, HPL_ERROR_INVALID_ARGUMENT, "all 3 devices 0"},
        {{.shares = (const double[]){1, 1, 1}, .balance = HPL_BALANCE_ITERATIVE}, HPL_ERROR_INVALID_ARGUMENT,
         "balance ITERATIVE"},
        {{.balance = (hpl_balance)99}, HPL_ERROR_INVALID_ARGUMENT, "balance is 99"},
        {{.balance = HPL_BALANCE_EXHAUSTIVE, .step = 2}, HPL_ERROR_INVALID_ARGUMENT, "step"},
        {{.balance = HPL_BALANCE_EXHAUSTIVE, .reps = -1}, HPL_ERROR_INVALID_ARGUMENT, "reps"},
        {{.balance = HPL_BALANCE_EXHAUSTIVE, .warm_up = (hpl_warm_up)7}, HPL_ERROR_INVALID_ARGUMENT, "warm_up is 7"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hpl_plan *plan = (hpl_plan *)&bad; /* must stay untouched */
        int rc = hpl_plan_create(ctx, &bad[i].desc, &plan);
        CHECK(rc == bad[i].rc && strstr(hpl_last_error(), bad[i].says) && plan == (hpl_plan *)&bad,
              "bad plan %zu: %s (%s), expected %s naming '%s'", i, hpl_error_name(rc), hpl_last_error(),
              hpl_error_name(bad[i].rc), bad[i].says);
    }
    CHECK_FAILS(hpl_plan_create(NULL, NULL, NULL), HPL_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    CHECK_FAILS(hpl_plan_eval(NULL, (hpl_kernel){0}, NULL, NULL, 0), HPL_ERROR_INVALID_ARGUMENT, "plan is NULL");

    hpl_kernel k = th_kernel(ctx, stencil1d_src());
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0), b = th_array(ctx, HPL_UINT32, N, 0, 0);
    static uint32_t host[N];
    fill_input(ctx, a, host);
    hpl_plan *plan = NULL;
    if (CHECK_OK(hpl_plan_create(ctx, NULL, &plan))) {
        CHECK_FAILS(hpl_plan_eval(plan, k, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_part1(a, 1), hpl_part1(b, 1), hpl_u32(N))),
                    HPL_ERROR_INVALID_ARGUMENT, "launch.device is set");
        /* Without a partitioner, a written array must be annotated. */
        CHECK_FAILS(hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_u32(N))),
                    HPL_ERROR_INVALID_ARGUMENT, "annotate it");
        CHECK_FAILS(hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_part1(a, 1), hpl_part1(b, 1))),
                    HPL_ERROR_ARGUMENT_MISMATCH, "takes 3 arguments");
        hpl_plan_destroy(plan);
    }
    const struct {
        hpl_partitioner fn;
        int rc;
        const char *says;
    } parts[] = {
        {no_run, HPL_ERROR_INVALID_ARGUMENT, "without calling hpl_runner_run"},
        {run_twice, HPL_ERROR_INVALID_ARGUMENT, "called twice"},
        {run_annotated, HPL_ERROR_INVALID_ARGUMENT, "annotated"},
        {fails, HPL_ERROR_OUT_OF_RANGE, "partitioner"},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.partitioner = parts[i].fn}, &plan)))
            continue;
        int rc = hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_u32(N)));
        CHECK(rc == parts[i].rc && strstr(hpl_last_error(), parts[i].says), "bad partitioner %zu: %s (%s)", i,
              hpl_error_name(rc), hpl_last_error());
        hpl_plan_destroy(plan);
    }
    /* A plan left alive goes with its context (no leak under ASan). */
    CHECK_OK(hpl_plan_create(ctx, NULL, &plan));
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

/* ---- warm clocks (hplvk.h "Warm clocks") ------------------------------- */

/* The bump kernel (args[0]) over the runner's rows. */
static int bump_part(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args)
{
    hpl_array x;
    int rc = hpl_runner_subarray(r, args[0].value.array, HPL_RANGES({rg[0].first, rg[0].last}), &x);
    return rc == HPL_OK ? hpl_runner_run(r, HPL_ARGS(hpl_arr(x))) : rc;
}

/* bump_part; device 0's call first sleeps 0.3 s on the host, which no
 * device's timestamps count: to the search, every device is idle through
 * it. */
static int sleepy_parts(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)nargs;
    (void)user;
    if (hpl_runner_device(r) == 0)
        nanosleep(&(struct timespec){0, 300000000L}, NULL);
    return bump_part(r, rg, args);
}

/* One bump of x by every device (a plan of equal shares; idle_s < 0:
 * none), then, after idling idle_s, one through the plan of `desc`: the
 * result is that many bumps whatever ran before the timings; returns the
 * plan's info. */
/* Seconds bump_once's last call took from its first eval to the plan
 * eval's return: a search that ran within less than the 0.95 s a warm
 * device takes to turn cold (warmth.h) found every device warm. */
static double bump_span_s;

static hpl_plan_info bump_once(hpl_context *ctx, const hpl_plan_desc *desc, double idle_s, const char *what)
{
    hpl_plan_info info = {0};
    hpl_kernel k = th_kernel(ctx, bump_src);
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
    static uint32_t host[N];
    fill_input(ctx, x, host);
    hpl_plan *even = NULL, *plan = NULL;
    int bumps = idle_s < 0 ? 1 : 2;
    bool ready = CHECK_OK(hpl_plan_create(ctx, NULL, &even)) && CHECK_OK(hpl_plan_create(ctx, desc, &plan));
    double t0 = th_now();
    if (ready && bumps == 2)
        ready = CHECK_OK(hpl_plan_eval(even, k, NULL, HPL_ARGS(hpl_part1(x, 0))));
    if (ready && CHECK_OK(hpl_finish(ctx))) {
        long ns = idle_s > 0 ? (long)(idle_s * 1e9) : 0;
        nanosleep(&(struct timespec){ns / 1000000000L, ns % 1000000000L}, NULL);
        const hpl_arg arg = desc->partitioner ? hpl_arr(x) : hpl_part1(x, 0);
        bool ran = CHECK_OK(hpl_plan_eval(plan, k, NULL, &arg, 1));
        bump_span_s = th_now() - t0;
        if (ran) {
            for (int b = 0; b < bumps; b++)
                for (uint32_t i = 0; i < N; i++)
                    host[i] = 3u * host[i] + i + 1u;
            int bad = count_wrong(ctx, x, host);
            CHECK(bad == 0, "%s: %d elements differ from %d bump(s) on the host", what, bad, bumps);
        }
        CHECK_OK(hpl_plan_get_info(plan, &info));
        char line[1024];
        hpl_plan_describe(plan, line, sizeof line);
        CHECK(!strstr(line, "warmed up") == !info.warm_ups, "%s: %d warm-ups, described as '%s'", what,
              info.warm_ups, line);
        CHECK(desc->balance != HPL_BALANCE_SINGLE_STEP || info.runs == (desc->reps ? desc->reps : 2),
              "%s: %d timed runs for %d distributions (warm-ups are not timed)", what, info.runs, info.distributions);
        hpl_plan_info after;
        CHECK_OK(hpl_plan_reset(plan));
        CHECK_OK(hpl_plan_get_info(plan, &after));
        CHECK(after.warm_ups == 0 && after.warm_up_ms == 0, "%s: reset left %d warm-ups", what, after.warm_ups);
    }
    hpl_plan_destroy(plan);
    hpl_plan_destroy(even);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    return info;
}

/* bump_part until the call `*user` (from 0), which fails. */
static int fails_later(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)nargs;
    int *calls_left = user;
    return (*calls_left)-- <= 0 ? HPL_ERROR_OUT_OF_RANGE : bump_part(r, rg, args);
}

/* A warm-up whose second run fails (after 1.1 s idle the search's first
 * runs are the warm-up's: one call per device each): the eval fails with
 * the partitioner's error, and the warm-up is not counted. */
static void warm_up_fails(hpl_context *ctx)
{
    hpl_kernel k = th_kernel(ctx, bump_src);
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
    int calls_left = hpl_device_count(ctx);
    hpl_plan *plan = NULL, *even = NULL;
    /* Every device's pipeline made first: a warm-up whose first run compiles
     * could pass its 250 ms in that one run on a slow machine. */
    if (CHECK_OK(hpl_plan_create(ctx, NULL, &even)))
        CHECK_OK(hpl_plan_eval(even, k, NULL, HPL_ARGS(hpl_part1(x, 0))));
    hpl_plan_destroy(even);
    if (CHECK_OK(hpl_plan_create(ctx,
                                 &(hpl_plan_desc){.balance = HPL_BALANCE_SINGLE_STEP, .warm_up = HPL_WARM_UP_ALL,
                                                  .partitioner = fails_later, .user = &calls_left},
                                 &plan))) {
        CHECK_OK(hpl_finish(ctx));
        nanosleep(&(struct timespec){1, 100000000L}, NULL);
        int rc = hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_arr(x)));
        hpl_plan_info info;
        CHECK_OK(hpl_plan_get_info(plan, &info));
        CHECK(rc == HPL_ERROR_OUT_OF_RANGE && strstr(hpl_last_error(), "partitioner") && info.warm_ups == 0 &&
                  info.runs == 0 && !info.searched,
              "a failing warm-up: %s (%s), %d warm-ups, %d runs", hpl_error_name(rc), hpl_last_error(), info.warm_ups,
              info.runs);
        hpl_plan_destroy(plan);
    }
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

/* Which devices a search warms up, and when: by default the GPUs (so on
 * Lavapipe nothing, on a GPU machine every device of these plans), none,
 * or all of them; for 250 ms at least, before the first timing when the
 * devices idled 1.1 s before the search (not when they were busy just
 * before), and again when the search left them idle. */
static void warm_clocks(hpl_context *ctx)
{
    bool gpu = false;
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info di;
        gpu = gpu || (hpl_device_get_info(ctx, d, &di) == HPL_OK && (di.type & HPL_DEVICE_GPU));
    }
    hpl_plan_info info = bump_once(ctx, &(hpl_plan_desc){.balance = HPL_BALANCE_SINGLE_STEP}, 1.1, "warm_up GPUS");
    CHECK(gpu ? info.warm_ups >= 1 && info.warm_up_ms >= 250.0 : info.warm_ups == 0,
          "warm_up GPUS with%s a GPU: %d warm-ups, %.1f ms", gpu ? "" : "out", info.warm_ups, info.warm_up_ms);
    info = bump_once(ctx, &(hpl_plan_desc){.balance = HPL_BALANCE_EXHAUSTIVE, .step = 0.5, .warm_up = HPL_WARM_UP_NONE},
                     1.1, "warm_up NONE");
    CHECK(info.warm_ups == 0 && info.warm_up_ms == 0, "warm_up NONE: %d warm-ups", info.warm_ups);
    const hpl_plan_desc all = {.balance = HPL_BALANCE_SINGLE_STEP, .warm_up = HPL_WARM_UP_ALL};
    info = bump_once(ctx, &all, 1.1, "warm_up ALL after 1.1 s idle");
    CHECK(info.warm_ups >= 1 && info.warm_up_ms >= 250.0, "warm_up ALL after 1.1 s idle: %d warm-ups, %.1f ms",
          info.warm_ups, info.warm_up_ms);
    /* Devices that never ran a kernel (opened, data copied) count as cold. */
    hpl_context *fresh = th_context("cpu:3");
    info = bump_once(fresh, &all, -1, "warm_up ALL on devices that never ran a kernel");
    CHECK(info.warm_ups >= 1, "warm_up ALL on devices that never ran a kernel: %d warm-ups", info.warm_ups);
    CHECK_OK(hpl_finish(fresh));
    hpl_context_destroy(fresh);
    info = bump_once(ctx, &all, 0.0, "warm_up ALL, busy just before");
    if (bump_span_s < 0.5)
        CHECK(info.warm_ups == 0, "warm_up ALL, busy just before: %d warm-ups", info.warm_ups);
    else /* a machine this busy may let a device idle long enough to turn cold: nothing to tell */
        th_note("warm_up ALL, busy just before: the search took %.2f s from the last kernel, %d warm-ups",
                bump_span_s, info.warm_ups);
    /* Six timings of 0.3 s or more each, every device idle through them:
     * cold after at most four (0.95 s idle), so warmed up at least once,
     * and at most before every timing. */
    info = bump_once(ctx,
                     &(hpl_plan_desc){.balance = HPL_BALANCE_SINGLE_STEP, .reps = 6, .warm_up = HPL_WARM_UP_ALL,
                                      .partitioner = sleepy_parts, .keep_split = true},
                     0.0, "warm_up ALL, idle timings");
    CHECK(info.warm_ups >= 1 && info.warm_ups <= 6, "idle timings: %d warm-ups for 6 timings", info.warm_ups);
    warm_up_fails(ctx);
}

/* ---- a device far slower than the others ------------------------------- */

/* The stencil, plus `spin` x 32 xorshift steps per element that leave the
 * output alone (w starts odd, so never reaches 0; the compiler cannot know
 * that, so the loop stays): the partitioner makes the plan's first device
 * slow by giving it a large spin. Lavapipe stops any loop after 65535
 * iterations in all, hence 32 steps per iteration rather than more of them. */
static const char *slow_src = "#include <hplvk.glsl>\n"
                              "hpl_args { hpl_in(uint, 1) a; hpl_out(uint, 1) b; uint n; uint spin; };\n"
                              "#define STEP w ^= w << 13u; w ^= w >> 17u; w ^= w << 5u;\n"
                              "#define STEP8 STEP STEP STEP STEP STEP STEP STEP STEP\n"
                              "void main() {\n"
                              "    uint i = hpl_global_id.x, w = hpl_at(a, i) | 1u;\n"
                              "    for (uint k = 0u; k < spin; k++) { STEP8 STEP8 STEP8 STEP8 }\n"
                              "    uint l = i > 0u ? hpl_at(a, i - 1u) : 0u, r = i + 1u < n ? hpl_at(a, i + 1u) : 0u;\n"
                              "    hpl_at(b, i) = l + 2u * hpl_at(a, i) + r + uint(w == 0u);\n"
                              "}\n";

static int slow_first_parts(hpl_runner *r, const hpl_range rg[3], const hpl_arg *args, size_t nargs, void *user)
{
    (void)nargs;
    hpl_array in, out;
    int rc = halo_subarrays(r, rg, args, &in, &out);
    uint32_t spin = hpl_runner_device(r) == *(const int *)user ? 60000u : 0u; /* args[3]: a placeholder */
    return rc == HPL_OK ? hpl_runner_run(r, HPL_ARGS(hpl_arr(in), hpl_arr(out), args[2], hpl_u32(spin))) : rc;
}

/* AUTO_TUNE with a device thousands of times slower than the others: the
 * first eval learns the speeds (the slow device takes minimum packages
 * while no other speed is known: logical Lavapipe devices take turns on the
 * same cores, so the others may report late); from the next one on, the slow device takes no package (it would end
 * after the others finished everything), and with a single other device
 * the eval is that device's alone, in one piece. Outputs against the host
 * throughout. */
static void slow_device(hpl_context *ctx, int device_count)
{
    char what[96];
    snprintf(what, sizeof what, "AUTO_TUNE, device 0 slow, %d devices", device_count);
    hpl_kernel k = th_kernel(ctx, slow_src);
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0), b = th_array(ctx, HPL_UINT32, N, 0, 0);
    static uint32_t host[2][N];
    fill_input(ctx, a, host[0]);
    int slow = 0;
    hpl_plan_desc desc = {.balance = HPL_BALANCE_AUTO_TUNE, .device_count = device_count, .partitioner = slow_first_parts,
                          .user = &slow, .keep_split = true}; /* the guard's doing, not the alone check's */
    for (int i = 0; i < device_count; i++)
        desc.devices[i] = i;
    hpl_plan *plan = NULL;
    if (!CHECK_OK(hpl_plan_create(ctx, &desc, &plan)))
        return;
    /* Timings taken while the slow device runs beside the others are
     * inflated (logical devices share the cores): it may take a package in
     * a few more evals, but once out it stays out, and it is out at the end. */
    const int steps = 8;
    int out_since = -1;
    for (int s = 0; s < steps; s++) {
        hpl_array in = s % 2 ? b : a, out = s % 2 ? a : b;
        if (!CHECK_OK(hpl_plan_eval(plan, k, &(hpl_launch){.local = {20}},
                                    HPL_ARGS(hpl_arr(in), hpl_arr(out), hpl_u32(N), hpl_u32(0)))))
            break;
        host_stencil(host[s % 2], host[1 - s % 2]);
        hpl_plan_info info;
        CHECK_OK(hpl_plan_get_info(plan, &info));
        eval_tally t = tally(&info);
        CHECK(t.rows == N, "%s, eval %d: %llu rows ran", what, s, (unsigned long long)t.rows);
        if (info.in_use[0]) {
            CHECK(out_since < 0, "%s, eval %d: the slow device is back (out since eval %d)", what, s, out_since);
            continue;
        }
        out_since = out_since < 0 ? s : out_since;
        if (device_count == 2)
            CHECK(t.packages == 0 && info.rows[1] == N, "%s, eval %d: device 1 ran %llu rows in %d packages, not alone",
                  what, s, (unsigned long long)info.rows[1], t.packages);
    }
    CHECK(out_since > 0 && out_since <= steps - 3, "%s: the slow device is out from eval %d of %d", what, out_since,
          steps);
    int bad = count_wrong(ctx, steps % 2 ? b : a, host[steps % 2]);
    CHECK(bad == 0, "%s: %d elements differ from the host after %d steps", what, bad, steps);
    /* Reset forgets the speeds: the slow device is probed again. */
    CHECK_OK(hpl_plan_reset(plan));
    CHECK_OK(hpl_plan_eval(plan, k, &(hpl_launch){.local = {20}}, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_u32(N), hpl_u32(0))));
    hpl_plan_info info;
    CHECK_OK(hpl_plan_get_info(plan, &info));
    CHECK(info.packages[0] >= 1, "%s: after reset the slow device ran no package: its speed was not forgotten", what);
    hpl_plan_destroy(plan);
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

int main(void)
{
    hpl_context *ctx = th_context("cpu:3");
    given_shares(ctx);
    const hpl_balance searches[] = {HPL_BALANCE_EXHAUSTIVE, HPL_BALANCE_SINGLE_STEP, HPL_BALANCE_ITERATIVE,
                                    HPL_BALANCE_ADAPTIVE};
    for (size_t i = 0; i < sizeof searches / sizeof searches[0]; i++) {
        read_write(ctx, searches[i], false);
        read_write(ctx, searches[i], true);
    }
    searches_stencil(ctx);
    adaptive_alone(ctx);
    coinciding_cuts(ctx);
    for (size_t i = 0; i < 3; i++)
        answer_in_place(ctx, searches[i], 0.0);
    answer_in_place(ctx, HPL_BALANCE_SINGLE_STEP, 1e9);
    traced_search(ctx);
    packages(ctx, HPL_BALANCE_DYNAMIC);
    packages(ctx, HPL_BALANCE_HGUIDED);
    packages(ctx, HPL_BALANCE_AUTO_TUNE);
    package_check(ctx, HPL_BALANCE_DYNAMIC);
    package_check(ctx, HPL_BALANCE_AUTO_TUNE);
    package_check_once(ctx);
    slow_device(ctx, 2);
    slow_device(ctx, 3);
    warm_clocks(ctx);
    bad_plans(ctx);
    CHECK_OK(hpl_finish(ctx));
    return th_finish(ctx);
}
