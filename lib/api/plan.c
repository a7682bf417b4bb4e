/* Execution plans (hplvk.h chapter 7c): making them, and hpl_plan_eval,
 * which runs the plan's distribution, or first searches for one (the
 * searches of lib/base/balance.h: every candidate a real, timed run of the
 * eval), or re-solves it every eval (ADAPTIVE), or hands the eval out in
 * packages (plan_packages.c). */
#include "plan.h"

#include "api.h"
#include "events.h"
#include "inflight.h"
#include "launch.h"
#include "submit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const balance_names[] = {"NONE",     "EXHAUSTIVE", "SINGLE_STEP", "ITERATIVE",
                                            "ADAPTIVE", "DYNAMIC",    "HGUIDED",     "AUTO_TUNE"};

const char *hpl_balance_name(hpl_balance balance)
{
    return (unsigned)balance < HPL__ARRAY_LEN(balance_names) ? balance_names[balance] : "?";
}

static bool is_search(hpl_balance b)
{
    return b == HPL_BALANCE_EXHAUSTIVE || b == HPL_BALANCE_SINGLE_STEP || b == HPL_BALANCE_ITERATIVE;
}

static bool is_package(hpl_balance b)
{
    return b == HPL_BALANCE_DYNAMIC || b == HPL_BALANCE_HGUIDED || b == HPL_BALANCE_AUTO_TUNE;
}

static hpl__balance_kind balance_kind(hpl_balance b)
{
    return b == HPL_BALANCE_EXHAUSTIVE    ? HPL__BALANCE_EXHAUSTIVE
           : b == HPL_BALANCE_SINGLE_STEP ? HPL__BALANCE_SINGLE_STEP
           : b == HPL_BALANCE_ITERATIVE   ? HPL__BALANCE_ITERATIVE
                                          : HPL__BALANCE_ADAPTIVE;
}

static void equal_shares(hpl__plan *plan)
{
    for (int i = 0; i < plan->device_count; i++)
        plan->shares[i] = 1.0 / plan->device_count;
}

/* Forgets what a search or ADAPTIVE learnt. */
static int plan_restart(hpl__plan *plan)
{
    plan->searched = false;
    plan->alone_checked = plan->alone_won = plan->package_checked = false;
    plan->package_units = 0; /* speeds forgotten */
    plan->rank_rows = 0;
    plan->runs = 0;
    plan->warm_ups = 0;
    plan->warm_up_ms = 0.0;
    if (is_search(plan->balance) || plan->balance == HPL_BALANCE_ADAPTIVE) {
        equal_shares(plan);
        return hpl__balance_init(&plan->search, balance_kind(plan->balance), plan->device_count, &plan->params);
    }
    return HPL_OK;
}

/* ---- making ------------------------------------------------------------- */

/* The plan's devices: indices of the context's devices, every rank's on a
 * context over ranks. */
static int devices_check(const hpl_context *ctx, const hpl_plan_desc *desc, hpl__plan *plan)
{
    int count = ctx->span ? ctx->span->device_count : ctx->device_count;
    if (desc->device_count == 0) {
        plan->device_count = count;
        for (int i = 0; i < count; i++)
            plan->devices[i] = i;
        return HPL_OK;
    }
    if (desc->device_count < 0 || desc->device_count > HPL_MAX_DEVICES)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "device_count is %d: give 1 to %d devices, or 0 for all",
                         desc->device_count, HPL_MAX_DEVICES);
    int rc = hpl__device_list_check(count, desc->devices, desc->device_count, "devices", plan->devices);
    if (rc != HPL_OK)
        return rc;
    plan->device_count = desc->device_count;
    return HPL_OK;
}

static int shares_check(const hpl_plan_desc *desc, hpl__plan *plan)
{
    if (!desc->shares) {
        equal_shares(plan);
        return HPL_OK;
    }
    if (desc->balance != HPL_BALANCE_NONE && desc->balance != HPL_BALANCE_HGUIDED &&
        desc->balance != HPL_BALANCE_AUTO_TUNE)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "shares and balance %s are both given: the balancer finds the shares",
                         hpl_balance_name(desc->balance));
    int rc = hpl__shares_check(desc->shares, plan->device_count, "shares");
    if (rc != HPL_OK)
        return rc;
    double sum = 0.0;
    for (int i = 0; i < plan->device_count; i++)
        sum += desc->shares[i];
    for (int i = 0; i < plan->device_count; i++)
        plan->shares[i] = desc->shares[i] / sum;
    plan->shares_given = true;
    return HPL_OK;
}

/* Which devices a search warms up. */
static int warm_up_check(const hpl_context *ctx, const hpl_plan_desc *desc, hpl__plan *plan)
{
    if ((unsigned)desc->warm_up > HPL_WARM_UP_ALL)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "warm_up is %d, which is not an hpl_warm_up", (int)desc->warm_up);
    for (int i = 0; i < plan->device_count; i++) {
        const hpl_device_info *info =
            ctx->span ? &ctx->span->info[plan->devices[i]] : &ctx->devices[plan->devices[i]].info;
        bool gpu = (info->type & HPL_DEVICE_GPU) != 0;
        plan->warms[i] = desc->warm_up == HPL_WARM_UP_ALL || (desc->warm_up == HPL_WARM_UP_GPUS && gpu);
    }
    return HPL_OK;
}

static int plan_setup(hpl_context *ctx, const hpl_plan_desc *desc, hpl__plan *plan)
{
    if ((unsigned)desc->balance >= HPL__ARRAY_LEN(balance_names))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "balance is %d, which is not an hpl_balance", (int)desc->balance);
    plan->ctx = ctx;
    plan->balance = desc->balance;
    plan->params = (hpl__balance_params){.step = desc->step,
                                         .reps = desc->reps,
                                         .delta = desc->delta,
                                         .threshold = desc->threshold,
                                         .back_off = desc->back_off,
                                         .keep_split = desc->keep_split,
                                         .max_iterations = desc->max_iterations};
    plan->package = desc->package;
    plan->cores = sysconf(_SC_NPROCESSORS_ONLN);
    plan->time_transfers = desc->time_transfers;
    plan->keep_split = desc->keep_split;
    plan->partitioner = desc->partitioner;
    plan->user = desc->user;
    int rc = HPL_OK;
    if (ctx->span && is_package(desc->balance) && desc->partitioner)
        rc = hpl__span_unsupported(ctx, "a package scheme with a partitioner");
    if (rc == HPL_OK)
        rc = devices_check(ctx, desc, plan);
    if (rc == HPL_OK)
        rc = shares_check(desc, plan);
    if (rc == HPL_OK)
        rc = warm_up_check(ctx, desc, plan);
    if (rc == HPL_OK)
        rc = plan_restart(plan);
    plan->last.balance = plan->balance;
    return rc;
}

int hpl_plan_create(hpl_context *ctx, const hpl_plan_desc *desc, hpl_plan **out)
{
    static const hpl_plan_desc defaults = {0};
    if (!ctx || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_plan_create: %s is NULL", !ctx ? "ctx" : "out");
    hpl__plan *plan = hpl__calloc(1, sizeof *plan);
    if (!plan)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "hpl_plan_create: out of host memory");
    int rc = plan_setup(ctx, desc ? desc : &defaults, plan);
    if (rc == HPL_OK)
        rc = hpl__plan_register(plan);
    if (rc != HPL_OK) {
        hpl__error_prefix("hpl_plan_create");
        hpl__free(plan);
        return rc;
    }
    *out = plan->token;
    return HPL_OK;
}

int hpl_plan_copy(hpl_plan *token, hpl_partitioner partitioner, void *user, hpl_plan **out)
{
    hpl__plan *plan = NULL;
    int rc = out ? hpl__plan_pin(token, false, &plan) : hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "out is NULL");
    if (rc != HPL_OK) {
        hpl__error_prefix("hpl_plan_copy");
        return rc;
    }
    hpl_plan_desc desc = {.device_count = plan->device_count, .shares = plan->shares, .partitioner = partitioner,
                          .user = user};
    memcpy(desc.devices, plan->devices, sizeof desc.devices);
    rc = hpl_plan_create(plan->ctx, &desc, out);
    hpl__plan_unpin(plan, false);
    return rc;
}

void hpl_plan_destroy(hpl_plan *token)
{
    if (token && hpl__plan_retire(token) != HPL_OK)
        hpl__error_prefix("hpl_plan_destroy");
}

int hpl_plan_reset(hpl_plan *token)
{
    hpl__plan *plan = NULL;
    int rc = hpl__plan_pin(token, true, &plan);
    if (rc == HPL_OK) {
        rc = plan_restart(plan);
        hpl__plan_unpin(plan, true);
    }
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_plan_reset");
    return rc;
}

/* ---- describing ------------------------------------------------------------ */

static void plan_info(const hpl__plan *plan, hpl_plan_info *out)
{
    *out = plan->last;
    out->balance = plan->balance;
    out->device_count = plan->device_count;
    memcpy(out->devices, plan->devices, sizeof out->devices);
    memcpy(out->shares, plan->shares, sizeof out->shares);
    out->searched = plan->searched;
    const hpl__balance_stats *st = &plan->search.stats;
    bool balanced = is_search(plan->balance) || plan->balance == HPL_BALANCE_ADAPTIVE;
    out->distributions = balanced ? st->distributions : 0;
    out->runs = balanced ? plan->runs : 0;
    out->iterations = balanced ? st->solves : 0;
    out->warm_ups = plan->warm_ups;
    out->warm_up_ms = plan->warm_up_ms;
}

int hpl_plan_get_info(hpl_plan *token, hpl_plan_info *out)
{
    hpl__plan *plan = NULL;
    int rc = out ? hpl__plan_pin(token, false, &plan) : hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "out is NULL");
    if (rc != HPL_OK) {
        hpl__error_prefix("hpl_plan_get_info");
        return rc;
    }
    plan_info(plan, out);
    hpl__plan_unpin(plan, false);
    return HPL_OK;
}

static int plan_describe(const hpl__plan *plan, char *buf, size_t size)
{
    hpl_plan_info in;
    plan_info(plan, &in);
    int n = hpl__append(buf, size, 0, "plan %s:", hpl_balance_name(in.balance));
    for (int i = 0; i < in.device_count; i++) {
        n = hpl__append(buf, size, n, " device %d %.4f", in.devices[i], in.shares[i]);
        if (in.seconds[i] > 0.0)
            n = hpl__append(buf, size, n, " (%.3f ms)", in.seconds[i] * 1e3);
        if (in.packages[i])
            n = hpl__append(buf, size, n, " (%d packages)", in.packages[i]);
        if (is_package(in.balance) && plan->package_units && plan->package_speed[i] > 0)
            n = hpl__append(buf, size, n, " (%.4g rows/s)", plan->package_speed[i]);
    }
    if (is_search(in.balance) || in.balance == HPL_BALANCE_ADAPTIVE) {
        n = hpl__append(buf, size, n, "; ");
        char line[512];
        hpl__balance_describe(&plan->search, line, sizeof line);
        n = hpl__append(buf, size, n, "%s", line);
        if (plan->runs < plan->search.stats.timings) /* candidates that cut the rows alike share times */
            n = hpl__append(buf, size, n, "; %d of the timings ran", plan->runs);
        if (plan->warm_ups)
            n = hpl__append(buf, size, n, "; warmed up %d time%s (%.1f ms)", plan->warm_ups,
                            plan->warm_ups > 1 ? "s" : "", plan->warm_up_ms);
    }
    if (plan->alone_checked)
        n = hpl__append(buf, size, n, "; the largest device alone took %.3f ms, the %s %.3f ms: %s", plan->alone_ms,
                   is_package(in.balance) ? "packages" : "split", plan->split_ms,
                   plan->alone_won ? "it runs alone" : "the split stays");
    return n;
}

int hpl_plan_describe(hpl_plan *token, char *buf, size_t size)
{
    hpl__plan *plan = NULL;
    int rc = !buf && size ? hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "buf is NULL") : hpl__plan_pin(token, false, &plan);
    if (rc != HPL_OK) {
        hpl__error_prefix("hpl_plan_describe");
        return rc;
    }
    int n = plan_describe(plan, buf, size);
    hpl__plan_unpin(plan, false);
    return n;
}

/* ---- arguments a search must give back -------------------------------------- */

/* Copies of the arguments the kernel reads and writes, taken before the
 * first run of a search and put back before each later one: every run then
 * starts from the eval's inputs, and the last one's result is the eval's. */
typedef struct plan_saves {
    int count;
    hpl_array arg[HPL__MAX_ARGS], copy[HPL__MAX_ARGS];
} plan_saves;

static void saves_free(hpl_context *ctx, plan_saves *s)
{
    for (int i = 0; i < s->count; i++)
        hpl_array_destroy(ctx, s->copy[i]);
    s->count = 0;
}

static int save_one(hpl_context *ctx, hpl_array arg, plan_saves *s)
{
    hpl_array_info info;
    int rc = hpl_array_get_info(ctx, arg, &info);
    hpl_array_desc desc = {.type = info.type, .name = "plan save"};
    for (int d = 0; d < info.ndims; d++)
        desc.dims[d] = info.dims[d];
    hpl_array copy;
    if (rc == HPL_OK)
        rc = hpl_array_create(ctx, &desc, &copy);
    if (rc != HPL_OK)
        return rc;
    s->arg[s->count] = arg;
    s->copy[s->count++] = copy;
    return hpl_array_assign(ctx, copy, arg, HPL_ON_HOST);
}

static int saves_take(hpl__plan *plan, const hpl_arg *args, size_t nargs, plan_saves *s)
{
    const hpl__reflection *r = &plan->kernel->variants[0].reflection;
    s->count = 0;
    int rc = HPL_OK;
    for (size_t i = 0; rc == HPL_OK && i < nargs && (int)i < r->arg_count; i++)
        if (args[i].kind == HPL_ARG_ARRAY && r->args[i].access == HPL_READ_WRITE)
            rc = save_one(plan->ctx, args[i].value.array, s);
    return rc;
}

static int saves_restore(hpl_context *ctx, const plan_saves *s)
{
    int rc = HPL_OK;
    for (int i = 0; rc == HPL_OK && i < s->count; i++)
        rc = hpl_array_assign(ctx, s->arg[i], s->copy[i], HPL_ON_HOST);
    return rc;
}

/* ---- cuts -------------------------------------------------------------------- */

/* The pieces a distribution quantises to. On few rows (or work-groups) many
 * distributions share one: EXHAUSTIVE's 5% grid over 4 devices and 3 rows
 * is some 1900 distributions but 20 cuts. */
typedef struct plan_cut {
    int count;
    hpl__piece pieces[HPL__MAX_DEVICES];
} plan_cut;

static void cut_of(const hpl__plan *plan, const double *shares, plan_cut *cut)
{
    cut->count = hpl__plan_pieces(plan, shares, cut->pieces);
}

static bool cut_equal(const plan_cut *a, const plan_cut *b)
{
    if (a->count != b->count)
        return false;
    for (int p = 0; p < a->count; p++) {
        const hpl__piece *x = &a->pieces[p], *y = &b->pieces[p];
        if (x->device != y->device || x->lo != y->lo || x->hi != y->hi)
            return false;
    }
    return true;
}

/* Each plan device's share of the rows in the cut: what the balancer's
 * models divide by, rounding included. */
static void cut_ran(const hpl__plan *plan, const plan_cut *cut, double *ran)
{
    double n = (double)plan->geometry.whole[plan->geometry.dim];
    for (int i = 0; i < plan->device_count; i++)
        ran[i] = 0.0;
    for (int p = 0; p < cut->count; p++)
        ran[cut->pieces[p].device] = (double)(cut->pieces[p].hi - cut->pieces[p].lo) / n;
}

/* ---- timed runs -------------------------------------------------------------- */

/* Waits for all work (a timed run ends when its last device does). Errors
 * that surfaced asynchronously stay for the user's hpl_finish. */
static int plan_wait(hpl_context *ctx)
{
    HPL__LOCK(ctx);
    int rc = hpl__wait_idle(ctx);
    HPL__UNLOCK(ctx);
    return rc;
}

/* time_transfers: every array argument starts the run on the host only (its
 * device copies invalid), so the run's uploads are the ones it needs. */
static int args_to_host(hpl_context *ctx, const hpl_arg *args, size_t nargs)
{
    int rc = HPL_OK;
    void *p;
    for (size_t i = 0; rc == HPL_OK && i < nargs; i++)
        if (args[i].kind == HPL_ARG_ARRAY)
            rc = hpl_array_access(ctx, args[i].value.array, HPL_READ_WRITE, &p);
    return rc;
}

/* time_transfers: the run's results go back to the host. */
static int written_to_host(hpl__plan *plan, const hpl_arg *args, size_t nargs)
{
    const hpl__reflection *r = &plan->kernel->variants[0].reflection;
    int rc = HPL_OK;
    for (size_t i = 0; rc == HPL_OK && i < nargs && (int)i < r->arg_count; i++)
        if (args[i].kind == HPL_ARG_ARRAY && (r->args[i].access & HPL_WRITE))
            rc = hpl_array_prefetch(plan->ctx, args[i].value.array, HPL_ON_HOST);
    return rc;
}

/* Runs the cut, waits, and gives each device's time. */
static int run_timed(hpl__plan *plan, const hpl_arg *args, size_t nargs, const plan_cut *cut, double *seconds)
{
    hpl_context *ctx = plan->ctx;
    int rc = plan->time_transfers ? args_to_host(ctx, args, nargs) : HPL_OK;
    if (rc != HPL_OK)
        return rc;
    HPL__LOCK(ctx);
    uint64_t from = hpl__events_next_serial(ctx);
    HPL__UNLOCK(ctx);
    rc = hpl__plan_run(plan, args, nargs, cut->pieces, cut->count);
    if (rc == HPL_OK && plan->time_transfers)
        rc = written_to_host(plan, args, nargs);
    if (rc == HPL_OK)
        rc = plan_wait(ctx);
    if (rc != HPL_OK)
        return rc;
    plan->runs++;
    hpl__plan_times t;
    hpl__plan_times_collect(plan, from, &t);
    rc = hpl__plan_share(plan, t.kernel, plan->device_count, true);
    if (rc == HPL_OK)
        rc = hpl__plan_share(plan, t.copy, plan->device_count, true);
    if (rc != HPL_OK)
        return rc;
    for (int i = 0; i < plan->device_count; i++) {
        seconds[i] = t.kernel[i] + (plan->time_transfers ? t.copy[i] : 0.0);
        plan->last.seconds[i] = plan->last.in_use[i] ? seconds[i] : 0.0;
    }
    return HPL_OK;
}

/* ---- a search ---------------------------------------------------------------- */

#define MEMO_CUTS 64 /* cuts whose times a search keeps: the latest distinct ones */

/* A cut's times: per device the least over its timings so far, which is
 * what the balancer keeps of a distribution's `reps` timings. */
typedef struct memo_entry {
    plan_cut cut;
    int timings;
    double seconds[HPL__MAX_DEVICES];
} memo_entry;

/* A search in progress: the arguments each run gives back first, the cuts
 * timed (a candidate whose cut was timed `reps` times takes those times
 * instead of running), and the cut the devices ran last. */
typedef struct plan_search {
    plan_saves saves;
    int runs;      /* runs so far, timed or not */
    plan_cut last; /* the cut of the last run */
    hpl__warmth warmth[HPL__MAX_DEVICES]; /* the devices' clocks, as their load suggests */
    uint64_t load_ns;                     /* when their load was last noted */
    int memo_count, memo_next;
    memo_entry memo[MEMO_CUTS];
} plan_search;

static memo_entry *memo_find(plan_search *s, const plan_cut *cut)
{
    for (int i = 0; i < s->memo_count; i++)
        if (cut_equal(&s->memo[i].cut, cut))
            return &s->memo[i];
    return NULL;
}

/* Adds a timing the balancer accepted; a new cut replaces the oldest one
 * when the memo is full. */
static void memo_note(plan_search *s, const plan_cut *cut, const double *seconds, int devices)
{
    memo_entry *e = memo_find(s, cut);
    if (!e) {
        e = &s->memo[s->memo_next];
        s->memo_next = (s->memo_next + 1) % MEMO_CUTS;
        s->memo_count += s->memo_count < MEMO_CUTS;
        *e = (memo_entry){.cut = *cut};
        for (int i = 0; i < devices; i++)
            e->seconds[i] = INFINITY;
    }
    e->timings++;
    for (int i = 0; i < devices; i++)
        e->seconds[i] = fmin(e->seconds[i], seconds[i]);
}

/* Every run but the search's first starts from the eval's inputs. */
static int search_restore(hpl__plan *plan, const plan_search *s)
{
    return s->runs ? saves_restore(plan->ctx, &s->saves) : HPL_OK;
}

/* cut NULL: a run of the package scheme. */
static void search_ran(plan_search *s, const plan_cut *cut)
{
    s->runs++;
    s->last = cut ? *cut : (plan_cut){.count = -1};
}

/* ---- warm clocks (hplvk.h "Warm clocks") ------------------------------------ */

#define WARM_UP_MS (HPL__WARM_RAMP_S * 1e3) /* the load that raises the clocks (warmth.h) */

/* The cut that splits the work evenly over the devices to warm; false
 * when none of them is cold with work in `timed`, the run to come. */
static bool warm_up_cut(const hpl__plan *plan, const plan_search *s, const plan_cut *timed, plan_cut *cut)
{
    double shares[HPL__MAX_DEVICES];
    int warms = 0;
    bool cold = false;
    for (int i = 0; i < plan->device_count; i++)
        warms += plan->warms[i];
    for (int p = 0; p < timed->count; p++) {
        int i = timed->pieces[p].device;
        cold = cold || (plan->warms[i] && hpl__warmth_cold(&s->warmth[i]));
    }
    for (int i = 0; i < plan->device_count; i++)
        shares[i] = plan->warms[i] ? 1.0 / warms : 0.0;
    if (cold)
        cut_of(plan, shares, cut);
    return cold;
}

/* The runs a search made are read: with no other user of the event log (a
 * trace is one), they go, so that the thousands of runs of warm-ups of a
 * small kernel do not pile up until the context goes. */
static void search_forget(hpl_context *ctx)
{
    HPL__LOCK(ctx);
    if (hpl__events_users(ctx) == 1)
        hpl__events_forget(ctx, hpl__events_next_serial(ctx));
    HPL__UNLOCK(ctx);
}

/* One run of the cut (NULL: the package scheme), noted as the search's
 * last. */
static int run_cut(hpl__plan *plan, plan_search *s, const hpl_arg *args, size_t nargs, const plan_cut *cut)
{
    int rc = cut ? hpl__plan_run(plan, args, nargs, cut->pieces, cut->count) : hpl__plan_packages(plan, args, nargs);
    if (rc == HPL_OK)
        search_ran(s, cut);
    return rc;
}

/* Before the timed run of `timed`: if a device to warm that has work in it
 * is likely cold, the devices to warm run the eval untimed until
 * WARM_UP_MS have passed (once at least: an eval that long warms them by
 * itself). */
static int warm_up(hpl__plan *plan, plan_search *s, const hpl_arg *args, size_t nargs, const plan_cut *timed)
{
    plan_cut cut;
    if (!warm_up_cut(plan, s, timed, &cut))
        return HPL_OK;
    uint64_t t0 = hpl__now_ns();
    double ms = 0;
    int rc;
    do {
        rc = search_restore(plan, s);
        if (rc == HPL_OK)
            rc = run_cut(plan, s, args, nargs, &cut);
        if (rc == HPL_OK)
            rc = plan_wait(plan->ctx);
        ms = (double)(hpl__now_ns() - t0) * 1e-6;
        if (rc == HPL_OK)
            rc = hpl__plan_share(plan, &ms, 1, false); /* every rank stops at the same run */
    } while (rc == HPL_OK && ms < WARM_UP_MS);
    search_forget(plan->ctx);
    if (rc != HPL_OK)
        return rc;
    plan->warm_ups++;
    plan->warm_up_ms += ms;
    for (int i = 0; i < plan->device_count; i++)
        if (plan->warms[i])
            hpl__warmth_warmed(&s->warmth[i]);
    s->load_ns = hpl__now_ns();
    return HPL_OK;
}

/* Where a search starts: each device counts as warm when its last kernel
 * ran and idle since (cold when it never ran one), so one that idled a
 * second or more is warmed up before its first timing, and one busy just
 * before is not. Copies are no load: they keep a GPU's copy engines busy,
 * not its cores. */
static void warmth_start(hpl__plan *plan, plan_search *s)
{
    hpl_context *ctx = plan->ctx;
    uint64_t now = hpl__now_coarse_ns(); /* the stamps' clock */
    double idle[HPL__MAX_DEVICES]; /* seconds since its last kernel; < 0: never ran one */
    HPL__LOCK(ctx);
    for (int i = 0; i < plan->device_count; i++) {
        int d = ctx->span ? hpl__span_local(ctx->span, plan->devices[i]) : plan->devices[i];
        uint64_t last = d >= 0 ? ctx->devices[d].kernel_ns : 0;
        idle[i] = !last ? -1.0 : now > last ? (double)(now - last) * 1e-9 : 0.0;
    }
    HPL__UNLOCK(ctx);
    if (hpl__plan_share(plan, idle, plan->device_count, true) != HPL_OK)
        for (int i = 0; i < plan->device_count; i++)
            idle[i] = -1.0; /* cold: a warm-up too many costs time, never results */
    for (int i = 0; i < plan->device_count; i++) {
        s->warmth[i] = (hpl__warmth){0};
        if (idle[i] >= 0) {
            hpl__warmth_warmed(&s->warmth[i]);
            hpl__warmth_ran(&s->warmth[i], 0.0, idle[i]);
        }
    }
    s->load_ns = hpl__now_ns();
}

/* A timed run ended: each device was busy seconds[i] since the load was
 * last noted (its restore and launch included). */
static void note_load(hpl__plan *plan, plan_search *s, const double *seconds, int devices)
{
    uint64_t now = hpl__now_ns();
    double wall = (double)(now - s->load_ns) * 1e-9;
    if (hpl__plan_share(plan, &wall, 1, false) != HPL_OK)
        wall = 0.0; /* every rank fails the same sharing */
    for (int i = 0; i < devices; i++)
        hpl__warmth_ran(&s->warmth[i], seconds[i], wall);
    s->load_ns = now;
}

/* One timing of the balancer's candidate. A cut timed `reps` times already
 * gives its times instead of a run: another run would tell the balancer
 * the same minima, give or take noise. */
static int candidate(hpl__plan *plan, plan_search *s, const hpl_arg *args, size_t nargs, const double *shares)
{
    hpl__balance *b = &plan->search;
    plan_cut cut;
    double seconds[HPL__MAX_DEVICES], ran[HPL__MAX_DEVICES];
    cut_of(plan, shares, &cut);
    cut_ran(plan, &cut, ran);
    const memo_entry *e = memo_find(s, &cut);
    if (e && e->timings >= b->p.reps) { /* b->p: the parameters with their defaults */
        hpl__balance_observe_run(b, ran, e->seconds);
        return HPL_OK;
    }
    int rc = warm_up(plan, s, args, nargs, &cut);
    if (rc == HPL_OK)
        rc = search_restore(plan, s);
    if (rc == HPL_OK)
        rc = run_timed(plan, args, nargs, &cut, seconds);
    if (rc != HPL_OK)
        return rc;
    search_ran(s, &cut);
    note_load(plan, s, seconds, plan->device_count);
    search_forget(plan->ctx);
    int accepted = b->stats.timings;
    hpl__balance_observe_run(b, ran, seconds);
    if (b->stats.timings > accepted)
        memo_note(s, &cut, seconds, plan->device_count);
    return HPL_OK;
}

/* The distribution that gives everything to the device with the largest
 * share of `shares`; false when that is `shares` already. */
static bool alone_candidate(const hpl__plan *plan, const double *shares, double *alone)
{
    int top = 0;
    for (int i = 1; i < plan->device_count; i++)
        top = shares[i] > shares[top] ? i : top;
    for (int i = 0; i < plan->device_count; i++)
        alone[i] = i == top ? 1.0 : 0.0;
    return shares[top] < 1.0;
}

/* Host ms of the second of two runs of the cut in a row (the first puts
 * the data where the distribution wants it, as in a run of evals); cut
 * NULL: of the package scheme. */
static int wall_time(hpl__plan *plan, plan_search *s, const hpl_arg *args, size_t nargs, const plan_cut *cut,
                     double *ms)
{
    int rc = HPL_OK;
    for (int r = 0; rc == HPL_OK && r < 2; r++) {
        rc = search_restore(plan, s);
        if (rc == HPL_OK)
            rc = plan_wait(plan->ctx);
        uint64_t t0 = hpl__now_ns();
        if (rc == HPL_OK)
            rc = run_cut(plan, s, args, nargs, cut);
        if (rc == HPL_OK)
            rc = plan_wait(plan->ctx);
        *ms = (double)(hpl__now_ns() - t0) * 1e-6;
        if (rc == HPL_OK)
            rc = hpl__plan_share(plan, ms, 1, false);
    }
    return rc;
}

/* Rounds of the alone check: at least 2, then until they took 200 ms, at
 * most 8. A GPU's clocks follow its recent load, and a search whose runs
 * wait for a slow device leaves it idle most of the time: an H200 ran a
 * matrix product 5.8x slower (at its 345 MHz idle clock) in the first such
 * run than in steady state. Taking turns and keeping each one's fastest
 * gives both the clocks the work itself brings. */
#define ALONE_ROUNDS_MIN 2
#define ALONE_ROUNDS_MAX 8
#define ALONE_ROUNDS_MS 200.0

static int wall_times(hpl__plan *plan, plan_search *s, const hpl_arg *args, size_t nargs, const plan_cut *alone,
                      const plan_cut *split, double *alone_ms, double *split_ms)
{
    const plan_cut *cuts[2] = {alone, split};
    double best[2] = {INFINITY, INFINITY}, spent = 0;
    int rc = HPL_OK;
    for (int r = 0; rc == HPL_OK && r < ALONE_ROUNDS_MAX && (r < ALONE_ROUNDS_MIN || spent < ALONE_ROUNDS_MS); r++)
        for (int c = 0; rc == HPL_OK && c < 2; c++) {
            double ms = 0;
            rc = wall_time(plan, s, args, nargs, cuts[c], &ms);
            best[c] = fmin(best[c], ms);
            spent += 2 * ms;
        }
    *alone_ms = best[0];
    *split_ms = best[1];
    return rc;
}

/* The split (split NULL: the package scheme) against the device of
 * `alone` (a cut of one piece) on its own, by the time the host sees
 * (launches, halos and waiting for the slowest included, which the
 * per-device times of a search leave out). Returns whether alone won. A
 * plan then is never slower than that device alone, which the papers'
 * schemes do not promise. */
static int check_alone(hpl__plan *plan, plan_search *s, const hpl_arg *args, size_t nargs, const plan_cut *alone,
                       const plan_cut *split, bool *won)
{
    double alone_ms = 0, split_ms = 0;
    int rc = wall_times(plan, s, args, nargs, alone, split, &alone_ms, &split_ms);
    plan->alone_checked = rc == HPL_OK;
    plan->alone_ms = alone_ms;
    plan->split_ms = split_ms;
    *won = rc == HPL_OK && alone_ms < split_ms;
    return rc;
}

/* The search's answer against its largest device alone: the faster is the
 * answer. */
static int check_answer(hpl__plan *plan, plan_search *s, const hpl_arg *args, size_t nargs)
{
    double alone[HPL__MAX_DEVICES];
    if (plan->keep_split || !alone_candidate(plan, plan->shares, alone))
        return HPL_OK;
    plan_cut cuts[2];
    cut_of(plan, alone, &cuts[0]);
    cut_of(plan, plan->shares, &cuts[1]);
    int rc = check_alone(plan, s, args, nargs, &cuts[0], &cuts[1], &plan->alone_won);
    if (plan->alone_won)
        memcpy(plan->shares, alone, sizeof alone);
    return rc;
}

/* A search ends with its answer's run (answer NULL: the package scheme's):
 * the eval's result is the answer's, and the data sits where the answer
 * puts it, as the evals after the search want it. It runs again unless
 * the devices ran it last. */
static int answer_last(hpl__plan *plan, plan_search *s, const hpl_arg *args, size_t nargs, const plan_cut *answer)
{
    if (s->runs && (answer ? cut_equal(&s->last, answer) : s->last.count < 0))
        return HPL_OK;
    int rc = search_restore(plan, s);
    return rc == HPL_OK ? run_cut(plan, s, args, nargs, answer) : rc;
}

/* The eval's times (hpl_plan_info.seconds) are the answer's, the least
 * of its timings per device; 0 when its cut was not timed (a device alone
 * after the alone check): not the times of whichever candidate ran last. */
static void answer_times(hpl__plan *plan, plan_search *s, const plan_cut *answer)
{
    const memo_entry *e = memo_find(s, answer);
    for (int i = 0; i < plan->device_count; i++)
        plan->last.seconds[i] = e && plan->last.in_use[i] ? e->seconds[i] : 0.0;
}

/* The plan's description in the log and the trace. */
static void search_report(hpl__plan *plan, uint64_t began)
{
    hpl_context *ctx = plan->ctx;
    char line[1024];
    plan_describe(plan, line, sizeof line);
    hpl__log(&ctx->logger, HPL_LOG_INFO, "%s", line);
    HPL__LOCK(ctx);
    hpl__events_plan(ctx, began, line);
    HPL__UNLOCK(ctx);
}

/* The first eval of a search: candidates until the balancer is done, the
 * answer against its largest device alone, the answer last. With one
 * device nothing is searched and the eval still runs. */
static int search_in(hpl__plan *plan, plan_search *s, const hpl_arg *args, size_t nargs)
{
    warmth_start(plan, s); /* before the saves' copies, which are no load */
    int rc = saves_take(plan, args, nargs, &s->saves);
    double shares[HPL__MAX_DEVICES];
    while (rc == HPL_OK && hpl__balance_next(&plan->search, shares))
        rc = candidate(plan, s, args, nargs, shares);
    if (rc == HPL_OK) {
        hpl__balance_best(&plan->search, plan->shares);
        if (s->runs > 0)
            rc = check_answer(plan, s, args, nargs);
    }
    plan_cut answer;
    cut_of(plan, plan->shares, &answer);
    if (rc == HPL_OK)
        rc = answer_last(plan, s, args, nargs, &answer);
    answer_times(plan, s, &answer);
    plan->searched = rc == HPL_OK;
    return rc;
}

/* A package plan's first eval (after creation or a reset): the scheme
 * against the device that ran the most rows in its first run, alone, as a
 * search's answer is checked. The package schemes size by speeds in rows
 * per second, which rows of unequal cost make depend on where a device's
 * packages fell: a slow device that timed itself on cheap rows takes dear
 * ones it cannot finish in time (paper 000's unbalanced benchmark), and
 * only the time the host sees shows it. If alone is faster, every later
 * eval is that device's alone, until reset. */
static int package_check_in(hpl__plan *plan, plan_search *s, const hpl_arg *args, size_t nargs)
{
    int rc = saves_take(plan, args, nargs, &s->saves);
    if (rc == HPL_OK)
        rc = hpl__plan_packages(plan, args, nargs); /* learns the speeds */
    if (rc != HPL_OK)
        return rc;
    search_ran(s, NULL);
    plan->package_checked = true;
    int used = 0;
    double alone[HPL__MAX_DEVICES], rows[HPL__MAX_DEVICES];
    for (int i = 0; i < plan->device_count; i++) {
        used += plan->last.in_use[i];
        rows[i] = (double)plan->last.rows[i];
    }
    if (plan->keep_split || used < 2)
        return HPL_OK;
    alone_candidate(plan, rows, alone);
    plan_cut cut;
    cut_of(plan, alone, &cut);
    rc = check_alone(plan, s, args, nargs, &cut, NULL, &plan->alone_won);
    plan->alone_device = cut.pieces[0].device;
    if (rc == HPL_OK)
        rc = answer_last(plan, s, args, nargs, plan->alone_won ? &cut : NULL);
    if (plan->alone_won)
        answer_times(plan, s, &cut); /* not timed: 0 */
    return rc;
}

/* A first eval that runs the kernel several times: a search, or a package
 * plan's alone check. The description goes to the log and the trace. */
static int first_eval(hpl__plan *plan, const hpl_arg *args, size_t nargs,
                      int (*body)(hpl__plan *, plan_search *, const hpl_arg *, size_t))
{
    hpl_context *ctx = plan->ctx;
    uint64_t began = hpl__now_ns();
    plan_search *s = hpl__calloc(1, sizeof *s); /* some 34 KiB: off the user's stack */
    if (!s)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    HPL__LOCK(ctx);
    int rc = hpl__events_enable(ctx, true);
    HPL__UNLOCK(ctx);
    if (rc == HPL_OK) {
        rc = body(plan, s, args, nargs);
        if (rc == HPL_OK)
            search_report(plan, began);
        saves_free(ctx, &s->saves);
        HPL__LOCK(ctx);
        hpl__events_enable(ctx, false);
        HPL__UNLOCK(ctx);
    }
    hpl__free(s);
    return rc;
}

static int run_shares(hpl__plan *plan, const hpl_arg *args, size_t nargs)
{
    hpl__piece pieces[HPL__MAX_DEVICES];
    int count = hpl__plan_pieces(plan, plan->shares, pieces);
    for (int i = 0; i < plan->device_count; i++)
        plan->last.seconds[i] = 0.0;
    return hpl__plan_run(plan, args, nargs, pieces, count);
}

/* ADAPTIVE: each eval is one pass, timed; the next is solved from it.
 * Until its alone check decides, the balancer also takes each pass's host
 * time, the slowest rank's. Once one device is left (the plan has one, or
 * the others were dropped) there is nothing to balance: each eval is a
 * plain one that returns at once. */
static int adaptive(hpl__plan *plan, const hpl_arg *args, size_t nargs)
{
    hpl__balance *b = &plan->search;
    if (hpl__balance_in_play(b) < 2) {
        hpl__balance_best(b, plan->shares);
        return run_shares(plan, args, nargs);
    }
    hpl_context *ctx = plan->ctx;
    HPL__LOCK(ctx);
    int rc = hpl__events_enable(ctx, true);
    HPL__UNLOCK(ctx);
    if (rc != HPL_OK)
        return rc;
    double shares[HPL__MAX_DEVICES], seconds[HPL__MAX_DEVICES], ran[HPL__MAX_DEVICES];
    plan_cut cut;
    hpl__balance_next(b, shares);
    cut_of(plan, shares, &cut);
    cut_ran(plan, &cut, ran);
    uint64_t t0 = hpl__now_ns();
    rc = run_timed(plan, args, nargs, &cut, seconds);
    double wall = (double)(hpl__now_ns() - t0) * 1e-9;
    if (rc == HPL_OK)
        hpl__balance_observe_run(b, ran, seconds);
    if (rc == HPL_OK && hpl__balance_wants_wall(b)) {
        rc = hpl__plan_share(plan, &wall, 1, false);
        if (rc == HPL_OK)
            hpl__balance_observe_wall(b, wall);
    }
    if (rc == HPL_OK)
        hpl__balance_best(b, plan->shares);
    HPL__LOCK(ctx);
    hpl__events_enable(ctx, false);
    HPL__UNLOCK(ctx);
    return rc;
}

static int launch_check(const hpl_launch *launch)
{
    const char *field = launch->device ? "device"
                        : launch->device_count ? "device_count"
                        : launch->shares       ? "shares"
                        : launch->domains      ? "domains"
                                               : NULL;
    if (field)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "launch.%s is set: a plan eval takes its devices and shares from "
                         "the plan (give launch.global and launch.local only)", field);
    return HPL_OK;
}

static int plan_eval(hpl__plan *plan, hpl_kernel kernel, const hpl_launch *launch, const hpl_arg *args, size_t nargs)
{
    static const hpl_launch defaults = {0};
    plan->launch = launch ? *launch : defaults;
    int rc = launch_check(&plan->launch);
    if (rc == HPL_OK && nargs && !args)
        rc = hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "args is NULL but nargs is %zu", nargs);
    if (rc == HPL_OK) {
        HPL__LOCK(plan->ctx);
        rc = hpl__inflight_wait(plan->ctx);
        if (rc == HPL_OK)
            rc = hpl__kernel_get(plan->ctx, kernel, &plan->kernel);
        HPL__UNLOCK(plan->ctx);
        plan->kernel_id = kernel.id;
    }
    if (rc == HPL_OK)
        rc = hpl__plan_geometry_find(plan, args, nargs);
    if (rc != HPL_OK)
        return rc;
    if (is_package(plan->balance))
        return plan->package_checked || plan->keep_split ? hpl__plan_packages(plan, args, nargs)
                                                         : first_eval(plan, args, nargs, package_check_in);
    if (plan->balance == HPL_BALANCE_ADAPTIVE)
        return adaptive(plan, args, nargs);
    if (is_search(plan->balance) && !plan->searched)
        return first_eval(plan, args, nargs, search_in);
    return run_shares(plan, args, nargs);
}

int hpl_plan_eval(hpl_plan *token, hpl_kernel kernel, const hpl_launch *launch, const hpl_arg *args, size_t nargs)
{
    hpl__plan *plan = NULL;
    int rc = hpl__plan_pin(token, true, &plan);
    if (rc != HPL_OK) {
        hpl__error_prefix("hpl_plan_eval");
        return rc;
    }
    plan->kernel = NULL;
    rc = plan_eval(plan, kernel, launch, args, nargs);
    if (rc != HPL_OK) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, "hpl_plan_eval(%s)", plan->kernel ? plan->kernel->name : "?");
        hpl__error_prefix(prefix);
    }
    hpl__plan_unpin(plan, true);
    return rc;
}
