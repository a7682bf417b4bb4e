/* The event log does not grow for as long as a context lives (events.c,
 * plan.c). Plans time their runs through it: a search, ADAPTIVE every
 * eval, the package plans every eval. Their events used to stay until the
 * context went: a program running an ADAPTIVE plan a million times held a
 * million evals' events. Checked on two logical Lavapipe devices:
 *   - after an EXHAUSTIVE search and hundreds of ADAPTIVE and DYNAMIC
 *     evals, the log holds a handful of events (it drops what it holds
 *     when its last reader leaves);
 *   - a trace is a reader: the same evals inside hpl_trace_begin/end stay
 *     in the log (the trace file is written from it) until the trace ends,
 *     and the file has every one of them. */
#include "events.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096
#define EVALS 300

static const char *scale_src = "#include <hplvk.glsl>\n"
                               "hpl_args { hpl_in(uint, 1) a; hpl_out(uint, 1) b; };\n"
                               "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = 3u * hpl_at(a, i) + i; }\n";

static size_t held(hpl_context *ctx)
{
    HPL__LOCK(ctx);
    size_t n = hpl__events_held(ctx);
    HPL__UNLOCK(ctx);
    return n;
}

/* `evals` evals of each plan kind; b checked after each plan. */
static void run_plans(hpl_context *ctx, hpl_kernel k, hpl_array a, hpl_array b, int evals)
{
    const hpl_plan_desc descs[] = {
        {.balance = HPL_BALANCE_EXHAUSTIVE, .step = 0.25, .warm_up = HPL_WARM_UP_ALL},
        {.balance = HPL_BALANCE_ADAPTIVE, .back_off = 1 << 30}, /* both devices every eval */
        {.balance = HPL_BALANCE_DYNAMIC, .package = 512},
    };
    for (size_t p = 0; p < sizeof descs / sizeof descs[0]; p++) {
        hpl_plan *plan = NULL;
        if (!CHECK_OK(hpl_plan_create(ctx, &descs[p], &plan)))
            continue;
        for (int e = 0; e < evals; e++)
            if (!CHECK_OK(hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_part1(a, 0), hpl_part1(b, 0)))))
                break;
        CHECK_OK(hpl_finish(ctx));
        const uint32_t *got = th_access(ctx, b, HPL_READ);
        int bad = 0;
        for (uint32_t i = 0; got && i < N; i++)
            bad += got[i] != 3u * (i * 7u) + i;
        CHECK(got && bad == 0, "plan %zu: %d elements of b wrong", p, bad);
        hpl_plan_destroy(plan);
    }
}

int main(void)
{
    hpl_context *ctx = th_context("cpu:2");
    hpl_kernel k = th_kernel(ctx, scale_src);
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0), b = th_array(ctx, HPL_UINT32, N, 0, 0);
    uint32_t *pa = th_access(ctx, a, HPL_WRITE);
    for (uint32_t i = 0; pa && i < N; i++)
        pa[i] = i * 7u;

    run_plans(ctx, k, a, b, EVALS);
    size_t after = held(ctx);
    printf("after an EXHAUSTIVE search and %d evals of ADAPTIVE and DYNAMIC: %zu events held\n", EVALS, after);
    CHECK(after <= 16, "the log holds %zu events after the plans ended (they grow with the evals)", after);

    char *dir = th_tmpdir("event_log"), path[512];
    snprintf(path, sizeof path, "%s/plans.json", dir);
    if (CHECK_OK(hpl_trace_begin(ctx, path))) {
        run_plans(ctx, k, a, b, 20);
        size_t traced = held(ctx);
        CHECK(traced >= 2 * 20, "inside a trace the log holds only %zu events of 40 evals and more", traced);
        CHECK_OK(hpl_trace_end(ctx));
        size_t ended = held(ctx);
        CHECK(ended <= 16, "the trace ended and the log still holds %zu events", ended);
        size_t n;
        char *text = th_read_file(path, &n);
        int kernels = 0;
        for (const char *s = text; s && (s = strstr(s, "\"cat\":\"kernel\"")); s++)
            kernels++;
        free(text);
        CHECK(kernels >= 40, "the trace file has %d kernel events of 40 evals and more", kernels);
    }
    th_rmtree(dir);
    free(dir);
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    return th_finish(ctx);
}
