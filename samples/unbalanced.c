/*
 * unbalanced — the paper's unbalanced benchmark (paper 000 section 4.2.2,
 * fig. 13): how well each load balancer of an execution plan splits work
 * that is not spread evenly over the rows, on every device of the context
 * (HPLVK_DEVICES, e.g. "gpu0,cpu").
 *
 *   unbalanced [rows [cols [x-list [reps [balancers [warm_up]]]]]]
 *              default 256 128 0,10,20,...,100 5 all gpus
 *
 * A float matrix a of rows x cols whose bottom x% of the rows are non-zero
 * and the others zero. The kernel does 1 flop for a zero element (b = a + 1)
 * and 1001 for a non-zero one (500 steps of v = v * m + a, then b = v + 1),
 * with no further memory accesses, so a row of non-zeros costs ~1000 times
 * a row of zeros and the rows' costs jump where the non-zeros start.
 *
 * For each x of the list and each balancer (EXHAUSTIVE, SINGLE_STEP,
 * ITERATIVE, ADAPTIVE, DYNAMIC, HGUIDED, AUTO_TUNE; balancers: a comma list
 * of their names to run fewer), a plan over every device of the context
 * with that balancer, the arguments annotated (hpl_part1 on a and b: no
 * partitioner), then:
 *   - the first eval, timed alone (search_ms): the searches run there;
 *   - `reps` rounds in which each balancer's plan runs one eval in turn,
 *     each timed up to the end of its work (hpl_finish), so that all see
 *     the same GPU clock history; the median is time_ms, and ratio is the
 *     median over the rounds of the time over EXHAUSTIVE's in the same
 *     round, at the same x (EXHAUSTIVE's best of the 5% grid is the paper's
 *     "best");
 *   - b, after each plan's last eval, against a host computation in
 *     double precision (relative tolerance 1e-4: float steps against
 *     double ones; Lavapipe is within 1e-6).
 * warm_up: which devices the searches warm up before timing them (hplvk.h
 * "Warm clocks"; gpus, none, all).
 * The table gives per row the distributions the search timed (searches,
 * ADAPTIVE) or the packages the last eval ran (package balancers) and the
 * shares (the package balancers': the rows each device ran in the last
 * eval), under each search's row its own account (the shares it found
 * before the check against its largest device alone, what it tried, its
 * warm-ups), and per x whether ITERATIVE met the paper's claim: within
 * 1.03x of the exhaustive search's best, with at most 5 distributions.
 *
 * RESULT: time_ms is the sum of every timed eval of the sweep (searches
 * included), rate the worst ratio of any balancer to EXHAUSTIVE. The
 * ratios are measurements: the program fails only when an output is wrong
 * or the library reports an error.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "unbalanced"
#include "sample_util.h"

#include <math.h>
#include <stdlib.h>

/* 1 flop per zero, 2 x iters + 1 per non-zero. m is not 1 and the loop
 * runs from a value read from memory, so the compiler can neither drop nor
 * fold it; with m < 1 the recurrence is contracting, so float rounding
 * stays near one ulp per step and a double computation checks it. */
static const char *unbalanced_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 2) a; hpl_out(float, 2) b; int iters; float m; };\n"
    "void main() {\n"
    "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"
    "    float x = hpl_at2(a, r, c);\n"
    "    if (x == 0.0) {\n"
    "        hpl_at2(b, r, c) = x + 1.0;\n"
    "        return;\n"
    "    }\n"
    "    float v = x;\n"
    "    for (int k = 0; k < iters; k++)\n"
    "        v = v * m + x;\n"
    "    hpl_at2(b, r, c) = v + 1.0;\n"
    "}\n";

#define ITERS 500 /* per invocation: far below the 65 535 loop iterations Mesa 22.3 allows (README) */
#define FACTOR 0.999f
#define TOLERANCE 1e-4
#define MAX_X 101
#define MAX_REPS 1000

static const hpl_balance all_balancers[] = {HPL_BALANCE_EXHAUSTIVE, HPL_BALANCE_SINGLE_STEP, HPL_BALANCE_ITERATIVE,
                                            HPL_BALANCE_ADAPTIVE,   HPL_BALANCE_DYNAMIC,     HPL_BALANCE_HGUIDED,
                                            HPL_BALANCE_AUTO_TUNE};
#define BALANCERS (int)(sizeof all_balancers / sizeof all_balancers[0])

typedef struct bench_args {
    uint64_t rows, cols;
    int x[MAX_X], nx; /* percentages of non-zero rows */
    int reps;
    bool use[BALANCERS]; /* all_balancers[i] runs */
    hpl_warm_up warm_up; /* the searches' (hpl_plan_desc.warm_up) */
} bench_args;

static bool is_package(hpl_balance b)
{
    return b == HPL_BALANCE_DYNAMIC || b == HPL_BALANCE_HGUIDED || b == HPL_BALANCE_AUTO_TUNE;
}

/* ---- data ----------------------------------------------------------------- */

/* The first non-zero row: the bottom x% of the rows are non-zero. */
static uint64_t first_nonzero_row(uint64_t rows, int x)
{
    return rows - (rows * (uint64_t)x + 50) / 100;
}

/* Non-zeros in [1, 1.875], exact in float, varying along the row so that
 * every element is checked on its own. */
static void fill_matrix(float *a, const bench_args *ba, int x)
{
    uint64_t nz = first_nonzero_row(ba->rows, x);
    for (uint64_t i = 0; i < ba->rows; i++)
        for (uint64_t j = 0; j < ba->cols; j++)
            a[i * ba->cols + j] = i < nz ? 0.0f : 1.0f + (float)((i * ba->cols + j) % 8) * 0.125f;
}

/* The kernel's recurrence in double, with the kernel's float m. */
static void host_reference(const float *a, double *ref, uint64_t n)
{
    const double m = (double)FACTOR;
    for (uint64_t e = 0; e < n; e++) {
        double x = a[e], v = x;
        if (x != 0.0)
            for (int k = 0; k < ITERS; k++)
                v = v * m + x;
        ref[e] = v + 1.0;
    }
}

static bool check_output(const float *got, const double *ref, const bench_args *ba, const char *what)
{
    uint64_t bad = 0, n = ba->rows * ba->cols;
    for (uint64_t e = 0; e < n; e++) {
        double err = fabs((double)got[e] - ref[e]);
        if (!(err <= TOLERANCE * fabs(ref[e])) && bad++ < 5)
            fprintf(stderr, SAMPLE_NAME ": %s: b(%" PRIu64 ", %" PRIu64 ") = %.9g, expected %.9g\n", what,
                    e / ba->cols, e % ba->cols, (double)got[e], ref[e]);
    }
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": %s: %" PRIu64 " of %" PRIu64 " elements wrong\n", what, bad, n);
    return bad == 0;
}

/* ---- one (x, balancer) ------------------------------------------------------ */

typedef struct bench_ctx {
    hpl_context *ctx;
    hpl_kernel kernel;
    hpl_array a, b;
    const bench_args *ba;
    float *got;        /* b read back */
    const double *ref; /* the host's b for the current x */
} bench_ctx;

typedef struct bench_row {
    double search_ms, ms; /* first eval; median of the timed ones */
    double total_ms;      /* the first eval and the timed ones */
    hpl_plan_info info;   /* after the last eval */
    bool ok;              /* b right */
} bench_row;

static int eval_plan(const bench_ctx *bc, hpl_plan *plan)
{
    return hpl_plan_eval(plan, bc->kernel, NULL,
                         HPL_ARGS(hpl_part1(bc->a, 0), hpl_part1(bc->b, 0), hpl_i32(ITERS), hpl_f32(FACTOR)));
}

static int cmp_double(const void *p, const void *q)
{
    double a = *(const double *)p, b = *(const double *)q;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One eval, timed up to the end of its work. */
static int timed_eval(const bench_ctx *bc, hpl_plan *plan, double *ms)
{
    double t0 = sample_now_ms();
    SAMPLE_TRY(eval_plan(bc, plan));
    SAMPLE_TRY(hpl_finish(bc->ctx));
    *ms = sample_now_ms() - t0;
    return HPL_OK;
}

/* b against the host after the plan's eval. */
static int check_b(const bench_ctx *bc, hpl_balance balance, int x, bench_row *row)
{
    const bench_args *ba = bc->ba;
    SAMPLE_TRY(hpl_array_read(bc->ctx, bc->b, bc->got, ba->rows * ba->cols * sizeof(float)));
    char what[64];
    snprintf(what, sizeof what, "x=%d %s", x, hpl_balance_name(balance));
    row->ok = check_output(bc->got, bc->ref, ba, what);
    return HPL_OK;
}

/* ---- the table ---------------------------------------------------------------- */

typedef struct bench_totals {
    double ms;          /* searches and timed evals, all rows */
    double worst_ratio; /* to EXHAUSTIVE, over the rows that have one */
    int iterative_runs, iterative_met;
    bool ok;
} bench_totals;

static void print_header(void)
{
    printf("%4s  %-11s %11s %10s %7s %9s  %s\n", "x", "balancer", "search_ms", "time_ms", "ratio", "tried",
           "shares (rows of the last eval for package balancers)");
}

/* Distributions the search timed, or packages the last eval ran. */
static void tried(const bench_row *row, hpl_balance balance, char *out, size_t cap)
{
    if (!is_package(balance)) {
        snprintf(out, cap, "%d", row->info.distributions);
        return;
    }
    int packages = 0;
    for (int i = 0; i < row->info.device_count; i++)
        packages += row->info.packages[i];
    snprintf(out, cap, "%d pkg", packages);
}

static void print_row(const bench_row *row, hpl_balance balance, int x, double ratio, uint64_t rows)
{
    char count[32], ratio_s[16] = "-";
    tried(row, balance, count, sizeof count);
    if (ratio > 0.0)
        snprintf(ratio_s, sizeof ratio_s, "%.3f", ratio);
    printf("%4d  %-11s %11.3f %10.3f %7s %9s ", x, hpl_balance_name(balance), row->search_ms, row->ms, ratio_s, count);
    for (int i = 0; i < row->info.device_count; i++)
        printf(" %.3f", is_package(balance) ? (double)row->info.rows[i] / (double)rows : row->info.shares[i]);
    printf("%s\n", row->ok ? "" : "  WRONG OUTPUT");
}

/* A search's own account (hpl_plan_describe): the shares it found before
 * the check against its largest device alone, what it tried, warm-ups. */
static void print_search(hpl_plan *plan, hpl_balance balance)
{
    char line[2048];
    const char *account;
    if (balance == HPL_BALANCE_EXHAUSTIVE || balance == HPL_BALANCE_SINGLE_STEP || balance == HPL_BALANCE_ITERATIVE) {
        hpl_plan_describe(plan, line, sizeof line);
        account = strchr(line, ';');
        printf("      search: %s\n", account ? account + 2 : line);
    }
}

/* The paper's claim for ITERATIVE (fig. 13): near-optimal in few
 * distributions. Printed, not enforced: these are measurements. With one
 * device there is no search (0 distributions) and nothing to claim. */
static void note_iterative(const bench_row *row, double ratio, int x, bench_totals *tot)
{
    if (!(ratio > 0.0) || row->info.device_count < 2)
        return; /* nothing to compare with, or nothing to balance */
    bool met = ratio <= 1.03 && row->info.distributions <= 5;
    tot->iterative_runs++;
    tot->iterative_met += met;
    printf("      ITERATIVE at x=%d: %.3fx exhaustive's best, %d distributions: %s (target <= 1.03x, <= 5)\n", x,
           ratio, row->info.distributions, met ? "met" : "NOT met");
}

/* The plans of one x: each one's first eval (the searches run there),
 * then `reps` rounds in which each plan runs one timed eval in turn (each
 * round starting with the next plan: a plan right after one that kept the
 * GPU idle meets lower clocks), so that all see the same GPU clock history (an H200's clocks follow its
 * recent load: after a search that left it mostly idle it ran at 900 MHz
 * instead of 1980); b is checked after each plan's last eval. */
static int race(bench_ctx *bc, int x, hpl_plan **plans, const hpl_balance *kinds, int count, bench_row *rows,
                double t[][MAX_REPS])
{
    for (int k = 0; k < count; k++) {
        SAMPLE_TRY(timed_eval(bc, plans[k], &rows[k].search_ms));
        rows[k].total_ms = rows[k].search_ms;
    }
    for (int r = 0; r < bc->ba->reps; r++)
        for (int i = 0; i < count; i++) {
            int k = (i + r) % count; /* each round starts one later: no plan always follows the same one */
            SAMPLE_TRY(timed_eval(bc, plans[k], &t[k][r]));
            rows[k].total_ms += t[k][r];
            if (r == bc->ba->reps - 1)
                SAMPLE_TRY(check_b(bc, kinds[k], x, &rows[k]));
        }
    for (int k = 0; k < count; k++) {
        double v[MAX_REPS];
        memcpy(v, t[k], sizeof v);
        rows[k].ms = median(v, bc->ba->reps);
        SAMPLE_TRY(hpl_plan_get_info(plans[k], &rows[k].info));
    }
    return HPL_OK;
}

/* Every balancer at one x; EXHAUSTIVE (first in all_balancers) sets the
 * ratios' base: the median over the rounds of a plan's time over
 * EXHAUSTIVE's in the same round. */
static int run_x(bench_ctx *bc, int x, float *a_host, double *ref, bench_totals *tot)
{
    const bench_args *ba = bc->ba;
    uint64_t n = ba->rows * ba->cols;
    fill_matrix(a_host, ba, x);
    host_reference(a_host, ref, n);
    SAMPLE_TRY(hpl_array_write(bc->ctx, bc->a, a_host, n * sizeof(float)));
    hpl_plan *plans[BALANCERS] = {0};
    hpl_balance kinds[BALANCERS];
    int count = 0, rc = HPL_OK;
    for (int k = 0; rc == HPL_OK && k < BALANCERS; k++)
        if (ba->use[k]) {
            kinds[count] = all_balancers[k];
            rc = hpl_plan_create(bc->ctx, &(hpl_plan_desc){.balance = kinds[count], .warm_up = ba->warm_up},
                                 &plans[count]);
            count += rc == HPL_OK;
        }
    bench_row rows[BALANCERS] = {{0}};
    double t[BALANCERS][MAX_REPS] = {{0}};
    if (rc == HPL_OK)
        rc = race(bc, x, plans, kinds, count, rows, t);
    for (int k = 0; k < count; k++) {
        double r[MAX_REPS], ratio = 0.0;
        if (rc == HPL_OK && kinds[0] == HPL_BALANCE_EXHAUSTIVE) {
            for (int i = 0; i < ba->reps; i++)
                r[i] = t[k][i] / t[0][i];
            ratio = median(r, ba->reps);
        }
        if (rc == HPL_OK) {
            print_row(&rows[k], kinds[k], x, ratio, ba->rows);
            print_search(plans[k], kinds[k]);
            if (kinds[k] == HPL_BALANCE_ITERATIVE)
                note_iterative(&rows[k], ratio, x, tot);
            tot->ms += rows[k].total_ms;
            tot->worst_ratio = ratio > tot->worst_ratio ? ratio : tot->worst_ratio;
            tot->ok = tot->ok && rows[k].ok;
        }
        hpl_plan_destroy(plans[k]);
    }
    return rc;
}

/* One eval with equal shares first: it compiles the kernel on every device,
 * so that no balancer's first eval pays for that. */
static int warm_up(const bench_ctx *bc)
{
    hpl_plan *plan;
    SAMPLE_TRY(hpl_plan_create(bc->ctx, NULL, &plan));
    int rc = eval_plan(bc, plan);
    hpl_plan_destroy(plan);
    SAMPLE_TRY(rc);
    SAMPLE_TRY(hpl_finish(bc->ctx));
    return HPL_OK;
}

static int make_arrays(bench_ctx *bc)
{
    const bench_args *ba = bc->ba;
    const hpl_kernel_desc kd = {.source = {.glsl = unbalanced_src, .name = "unbalanced"}};
    SAMPLE_TRY(hpl_kernel_create(bc->ctx, &kd, &bc->kernel));
    hpl_array_desc ad = {.type = HPL_FLOAT32, .dims = {ba->rows, ba->cols}, .name = "a"};
    SAMPLE_TRY(hpl_array_create(bc->ctx, &ad, &bc->a));
    ad.name = "b";
    SAMPLE_TRY(hpl_array_create(bc->ctx, &ad, &bc->b));
    return HPL_OK;
}

static int run_sweep(bench_ctx *bc, float *a_host, double *ref, bench_totals *tot)
{
    SAMPLE_TRY(make_arrays(bc));
    fill_matrix(a_host, bc->ba, 0);
    SAMPLE_TRY(hpl_array_write(bc->ctx, bc->a, a_host, bc->ba->rows * bc->ba->cols * sizeof(float)));
    SAMPLE_TRY(warm_up(bc));
    print_header();
    for (int i = 0; i < bc->ba->nx; i++)
        SAMPLE_TRY(run_x(bc, bc->ba->x[i], a_host, ref, tot));
    SAMPLE_TRY(hpl_array_destroy(bc->ctx, bc->a));
    SAMPLE_TRY(hpl_array_destroy(bc->ctx, bc->b));
    SAMPLE_TRY(hpl_kernel_destroy(bc->ctx, bc->kernel));
    return HPL_OK;
}

/* Everything but the RESULT line; returns whether every output was right
 * and the library reported no error. */
static bool run_all(const bench_args *ba, char *devnames, size_t cap, bench_totals *tot)
{
    uint64_t n = ba->rows * ba->cols;
    float *a_host = malloc(n * sizeof *a_host), *got = malloc(n * sizeof *got);
    double *ref = malloc(n * sizeof *ref);
    hpl_context *ctx = NULL;
    bool ok = a_host && got && ref;
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
    else if (hpl_context_create(&(hpl_context_desc){.log = sample_log}, &ctx) != HPL_OK)
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create failed: %s\n", hpl_last_error());
    if (ok && ctx) {
        int devices[HPL_MAX_DEVICES];
        bench_ctx bc = {.ctx = ctx, .ba = ba, .got = got, .ref = ref};
        ok = sample_device_list(ctx, devices, sample_devices(ctx, devices), devnames, cap) == HPL_OK &&
             run_sweep(&bc, a_host, ref, tot) == HPL_OK && tot->ok;
        /* An error that surfaced asynchronously fails the run too. */
        ok = hpl_finish(ctx) == HPL_OK && ok;
        hpl_context_destroy(ctx);
    }
    free(a_host);
    free(got);
    free(ref);
    return ctx && sample_log_clean() && ok;
}

/* ---- arguments ------------------------------------------------------------------ */

/* "0,50,100" -> percentages, whole numbers from 0 to 100; false after a
 * message. */
static bool parse_x(const char *s, bench_args *ba)
{
    ba->nx = 0;
    for (const char *p = s;; p++)
        if (*p == ',' || !*p) {
            uint64_t v;
            if (!sample_parse_u64_n(s, (size_t)(p - s), &v) || v > 100) {
                fprintf(stderr, SAMPLE_NAME ": x '%.*s' is not a whole number from 0 to 100\n", (int)(p - s), s);
                return false;
            }
            if (ba->nx == MAX_X) {
                fprintf(stderr, SAMPLE_NAME ": more than %d x values\n", MAX_X);
                return false;
            }
            ba->x[ba->nx++] = (int)v;
            if (!*p)
                return true;
            s = p + 1;
        }
}

/* One name of a comma list (NONE is no balancer to race). */
static bool use_balancer(const char *s, size_t len, bench_args *ba)
{
    hpl_balance b;
    if (!sample_parse_balance(s, len, &b))
        return false;
    for (int k = 0; k < BALANCERS; k++)
        if (all_balancers[k] == b)
            ba->use[k] = true;
    return b != HPL_BALANCE_NONE;
}

static bool parse_balancers(const char *s, bench_args *ba)
{
    for (int k = 0; k < BALANCERS; k++)
        ba->use[k] = false;
    for (const char *p = s;; p++)
        if (*p == ',' || !*p) {
            if (!use_balancer(s, (size_t)(p - s), ba))
                return false;
            if (!*p)
                return true;
            s = p + 1;
        }
}

static bool parse_warm_up(const char *s, hpl_warm_up *out)
{
    static const char *const names[] = {"gpus", "none", "all"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (hpl_warm_up)i;
            return true;
        }
    fprintf(stderr, SAMPLE_NAME ": warm_up '%s' is none of gpus, none, all\n", s);
    return false;
}

static bool parse_args(int argc, char **argv, bench_args *ba)
{
    *ba = (bench_args){.rows = 256, .cols = 128, .nx = 11, .reps = 5};
    for (int i = 0; i < ba->nx; i++)
        ba->x[i] = 10 * i;
    for (int k = 0; k < BALANCERS; k++)
        ba->use[k] = true;
    if (argc > 7)
        return false;
    if (argc > 1 && !sample_arg_u64("rows", argv[1], UINT64_MAX, &ba->rows))
        return false;
    if (argc > 2 && !sample_arg_u64("cols", argv[2], UINT64_MAX, &ba->cols))
        return false;
    if (argc > 3 && !parse_x(argv[3], ba))
        return false;
    if (argc > 4 && !sample_arg_int("reps", argv[4], &ba->reps))
        return false;
    if (argc > 5 && !parse_balancers(argv[5], ba))
        return false;
    if (argc > 6 && !parse_warm_up(argv[6], &ba->warm_up))
        return false;
    return ba->rows >= 1 && ba->cols >= 1 && ba->reps >= 1 && ba->reps <= MAX_REPS;
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    bench_args ba;
    if (!parse_args(argc, argv, &ba)) {
        fprintf(stderr,
                "usage: %s [rows [cols [x-list, e.g. 0,50,100 [reps (1..%d) "
                "[balancers, e.g. exhaustive,iterative [warm_up: gpus, none, all]]]]]]\n",
                argv[0], MAX_REPS);
        return 2;
    }
    char devnames[4096] = "none";
    bench_totals tot = {.ok = true};
    bool verified = run_all(&ba, devnames, sizeof devnames, &tot);
    if (tot.iterative_runs)
        printf("ITERATIVE met the target (<= 1.03x exhaustive's best, <= 5 distributions) at %d of %d x values\n",
               tot.iterative_met, tot.iterative_runs);
    /* rate: the worst ratio of any balancer to EXHAUSTIVE's best at its x
     * (0 without EXHAUSTIVE). */
    printf("RESULT name=unbalanced devices=%s size=%" PRIu64 "x%" PRIu64
           " time_ms=%.3f rate=%.3fx_worst_ratio verified=%s\n",
           devnames, ba.rows, ba.cols, tot.ms, tot.worst_ratio, verified ? "yes" : "no");
    return verified ? 0 : 1;
}
