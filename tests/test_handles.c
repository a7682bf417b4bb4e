/* Handles belong to the context that made them.
 *
 * Two contexts A and B ("cpu:2" each) make the same objects in the same order
 * (arrays x, y, a subarray of x, one with an owned box, a kernel), so that
 * B's handles name the same slots and generations as A's: a library that
 * checked only those would take B's handles for A's objects (hpl_eval with
 * B's kernel used to run A's kernel and overwrite A's array). B's kernel
 * computes something else than A's, so any mix-up shows in the data.
 *
 * Then every public function that takes an array or kernel handle is called
 * on A with a handle A does not own, for each kind of bad handle:
 *   - B's arrays, subarrays and kernel ("another context");
 *   - A's own destroyed array, subarray (directly, and through its parent)
 *     and kernel, after new objects took their slots ("stale");
 *   - handles of a destroyed context, in A and in a context made after it
 *     from the same sequence of calls ("another context");
 *   - zero-initialised handles ("null").
 * Each call must return HPL_ERROR_INVALID_HANDLE with that reason in the
 * message, leave its out-parameters untouched, and change nothing: A's and
 * B's arrays keep their exact values, their subarray lists and parts stay,
 * and their kernels still run. Valid handles of the same objects work in
 * their own context before and after (so the calls fail for the handle,
 * nothing else). */
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define N 64
#define SUB_LO 8
#define SUB_HI 23

/* A: y = s * x.  B: y = s * x + 1000 (same arguments, other result). */
static const char *kernel_a =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; float s; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = s * hpl_at(x, i); }\n";
static const char *kernel_b =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; float s; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = s * hpl_at(x, i) + 1000.0; }\n";

typedef struct world {
    const char *name;
    hpl_context *ctx;
    hpl_array x, y, sub, owned;
    hpl_kernel k;
    float base;          /* x[i] = base + i */
    float want_y[N];     /* what y holds */
    int parts;           /* parts of y made by the annotated eval */
} world;

static void expect_data(const world *w, const char *after)
{
    float got[N];
    if (!CHECK_OK(hpl_array_read(w->ctx, w->x, got, sizeof got)))
        return;
    int bad = 0, first = -1;
    for (int i = 0; i < N; i++)
        if (got[i] != w->base + (float)i && bad++ == 0)
            first = i;
    CHECK(bad == 0, "%s after %s: %d elements of x changed, first x[%d] = %g want %g", w->name, after, bad, first,
          first >= 0 ? got[first] : 0.0f, first >= 0 ? w->base + (float)first : 0.0f);
    if (!CHECK_OK(hpl_array_read(w->ctx, w->y, got, sizeof got)))
        return;
    bad = 0;
    first = -1;
    for (int i = 0; i < N; i++)
        if (got[i] != w->want_y[i] && bad++ == 0)
            first = i;
    CHECK(bad == 0, "%s after %s: %d elements of y are wrong, first y[%d] = %g want %g", w->name, after, bad, first,
          first >= 0 ? got[first] : 0.0f, first >= 0 ? w->want_y[first] : 0.0f);
    /* Its subarrays and parts are still there. */
    int n = hpl_subarray_count(w->ctx, w->x);
    CHECK(n == 2, "%s after %s: x has %d subarrays, want 2", w->name, after, n);
    n = hpl_array_part_count(w->ctx, w->y);
    CHECK(n == w->parts, "%s after %s: y has %d parts, want %d", w->name, after, n, w->parts);
}

/* Runs the world's kernel on device dev and checks y (A: s*x, B: s*x+1000). */
static void run_kernel(world *w, bool is_b, float s, const char *what)
{
    hpl_launch l = {.device = 1};
    if (!CHECK_OK(hpl_eval(w->ctx, w->k, &l, HPL_ARGS(hpl_arr(w->x), hpl_arr(w->y), hpl_f32(s)))))
        return;
    for (int i = 0; i < N; i++)
        w->want_y[i] = s * (w->base + (float)i) + (is_b ? 1000.0f : 0.0f);
    expect_data(w, what);
}

static void make_world(world *w, const char *name, bool is_b, float base)
{
    memset(w, 0, sizeof *w);
    w->name = name;
    w->base = base;
    w->ctx = th_context("cpu:2");
    w->x = th_array(w->ctx, HPL_FLOAT32, N, 0, 0);
    w->y = th_array(w->ctx, HPL_FLOAT32, N, 0, 0);
    CHECK_OK(hpl_subarray(w->ctx, w->x, HPL_RANGES({SUB_LO, SUB_HI}), &w->sub));
    CHECK_OK(hpl_subarray_owned(w->ctx, w->x, HPL_RANGES({SUB_LO, SUB_HI}), ((const hpl_range[]){{SUB_LO + 2, SUB_HI - 2}}),
                                &w->owned));
    w->k = th_kernel(w->ctx, is_b ? kernel_b : kernel_a);
    float host[N];
    for (int i = 0; i < N; i++)
        host[i] = base + (float)i;
    CHECK_OK(hpl_array_write(w->ctx, w->x, host, sizeof host));
    /* An annotated eval over both devices, so that y has parts. */
    CHECK_OK(hpl_eval(w->ctx, w->k, NULL, HPL_ARGS(hpl_part1(w->x, 0), hpl_part1(w->y, 0), hpl_f32(3.0f))));
    w->parts = 2;
    for (int i = 0; i < N; i++)
        w->want_y[i] = 3.0f * (base + (float)i) + (is_b ? 1000.0f : 0.0f);
    expect_data(w, "setup");
}

static void destroy_world(world *w)
{
    hpl_context_destroy(w->ctx);
    w->ctx = NULL;
}

#define SENTINEL 0x5a

static bool untouched(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != SENTINEL)
            return false;
    return true;
}

/* Every function taking an array handle, on w's context, with `bad`;
 * every other argument valid (and of matching shape, so that only the
 * handle can make it fail). */
static void array_calls_fail(world *w, hpl_array bad, const char *why, const char *what)
{
    hpl_context *ctx = w->ctx;
    char label[160];
    snprintf(label, sizeof label, "%s handle %#" PRIx64 " in %s", what, bad.id, w->name);
    th_note("array calls with %s", label);
    int E = HPL_ERROR_INVALID_HANDLE;

    hpl_array_info info;
    memset(&info, SENTINEL, sizeof info);
    CHECK_FAILS(hpl_array_get_info(ctx, bad, &info), E, why);
    CHECK(untouched(&info, sizeof info), "%s: hpl_array_get_info wrote its out-parameter", label);

    static const hpl_access modes[] = {HPL_READ, HPL_WRITE, HPL_READ_WRITE};
    for (int m = 0; m < 3; m++) {
        void *p;
        memset(&p, SENTINEL, sizeof p);
        CHECK_FAILS(hpl_array_access(ctx, bad, modes[m], &p), E, why);
        CHECK(untouched(&p, sizeof p), "%s: hpl_array_access(%d) wrote its out-parameter", label, (int)modes[m]);
    }

    float buf[N];
    memset(buf, SENTINEL, sizeof buf);
    CHECK_FAILS(hpl_array_read(ctx, bad, buf, sizeof buf), E, why);
    CHECK(untouched(buf, sizeof buf), "%s: hpl_array_read wrote the buffer", label);
    for (int i = 0; i < N; i++)
        buf[i] = -7.0f;
    CHECK_FAILS(hpl_array_write(ctx, bad, buf, sizeof buf), E, why);
    CHECK_FAILS(hpl_array_wait(ctx, bad), E, why);

    float v = -5.0f;
    static const int wheres[] = {0, 1, HPL_ON_HOST, HPL_WHERE_LAST_USED};
    for (int i = 0; i < 4; i++) {
        CHECK_FAILS(hpl_array_fill(ctx, bad, &v, wheres[i]), E, why);
        CHECK_FAILS(hpl_array_assign(ctx, bad, w->y, wheres[i]), E, why);
        CHECK_FAILS(hpl_array_assign(ctx, w->y, bad, wheres[i]), E, why);
        CHECK_FAILS(hpl_array_assign(ctx, bad, bad, wheres[i]), E, why);
    }

    static const hpl_reduction ops[] = {HPL_REDUCE_SUM, HPL_REDUCE_PRODUCT, HPL_REDUCE_MIN, HPL_REDUCE_MAX};
    for (int i = 0; i < 4; i++) {
        float r;
        memset(&r, SENTINEL, sizeof r);
        CHECK_FAILS(hpl_array_reduce(ctx, bad, ops[i], &r), E, why);
        CHECK(untouched(&r, sizeof r), "%s: hpl_array_reduce wrote its result", label);
    }

    hpl_array out;
    memset(&out, SENTINEL, sizeof out);
    CHECK_FAILS(hpl_subarray(ctx, bad, HPL_RANGES({0, 3}), &out), E, why);
    CHECK_FAILS(hpl_subarray_owned(ctx, bad, HPL_RANGES({0, 3}), ((const hpl_range[]){{1, 2}}), &out), E, why);
    CHECK_FAILS(hpl_subarray_count(ctx, bad), E, why);
    CHECK_FAILS(hpl_subarray_get(ctx, bad, 0, &out), E, why);
    CHECK_FAILS(hpl_array_part_count(ctx, bad), E, why);
    int dev;
    memset(&dev, SENTINEL, sizeof dev);
    CHECK_FAILS(hpl_array_part(ctx, bad, 0, &out, &dev), E, why);
    CHECK(untouched(&out, sizeof out) && untouched(&dev, sizeof dev),
          "%s: a failing subarray/part call wrote its out-parameters", label);

    /* As a kernel argument: input, output, both; on one device and split. */
    hpl_launch one = {.device = 1};
    hpl_launch both = {.devices = {0, 1}, .device_count = 2};
    CHECK_FAILS(hpl_eval(ctx, w->k, &one, HPL_ARGS(hpl_arr(bad), hpl_arr(w->y), hpl_f32(9.0f))), E, why);
    CHECK_MSG("argument 0 (x)");
    CHECK_FAILS(hpl_eval(ctx, w->k, &one, HPL_ARGS(hpl_arr(w->x), hpl_arr(bad), hpl_f32(9.0f))), E, why);
    CHECK_MSG("argument 1 (y)");
    CHECK_FAILS(hpl_eval(ctx, w->k, NULL, HPL_ARGS(hpl_arr(bad), hpl_arr(bad), hpl_f32(9.0f))), E, why);
    CHECK_FAILS(hpl_eval(ctx, w->k, NULL, HPL_ARGS(hpl_part1(bad, 0), hpl_part1(w->y, 0), hpl_f32(9.0f))), E, why);
    CHECK_FAILS(hpl_eval(ctx, w->k, &both, HPL_ARGS(hpl_part1(w->x, 0), hpl_part1(bad, 0), hpl_f32(9.0f))), E, why);
    CHECK_FAILS(hpl_eval(ctx, w->k, &both, HPL_ARGS(hpl_part1(w->x, 1), hpl_part(bad, 0, 1), hpl_f32(9.0f))), E, why);

    /* Destroy last: had it been taken, everything above would show it. */
    CHECK_FAILS(hpl_array_destroy(ctx, bad), E, why);
    CHECK(hpl_finish(ctx) == HPL_OK, "%s: hpl_finish reports an error after the failed calls: %s", label,
          hpl_last_error());
    expect_data(w, label);
}

/* Every function taking a kernel handle, on w's context, with `bad`. */
static void kernel_calls_fail(world *w, hpl_kernel bad, const char *why, const char *what)
{
    hpl_context *ctx = w->ctx;
    char label[160];
    snprintf(label, sizeof label, "%s kernel handle %#" PRIx64 " in %s", what, bad.id, w->name);
    th_note("kernel calls with %s", label);
    int E = HPL_ERROR_INVALID_HANDLE;

    CHECK_FAILS(hpl_kernel_arg_count(ctx, bad), E, why);
    hpl_arg_info ai;
    memset(&ai, SENTINEL, sizeof ai);
    CHECK_FAILS(hpl_kernel_get_arg_info(ctx, bad, 0, &ai), E, why);
    CHECK(untouched(&ai, sizeof ai), "%s: hpl_kernel_get_arg_info wrote its out-parameter", label);
    uint32_t ls[3];
    bool choosable;
    memset(ls, SENTINEL, sizeof ls);
    memset(&choosable, SENTINEL, sizeof choosable);
    CHECK_FAILS(hpl_kernel_get_local_size(ctx, bad, ls, &choosable), E, why);
    CHECK(untouched(ls, sizeof ls) && untouched(&choosable, sizeof choosable),
          "%s: hpl_kernel_get_local_size wrote its out-parameters", label);

    hpl_launch one = {.device = 0};
    hpl_launch both = {.devices = {0, 1}, .device_count = 2};
    CHECK_FAILS(hpl_eval(ctx, bad, NULL, HPL_ARGS(hpl_arr(w->x), hpl_arr(w->y), hpl_f32(9.0f))), E, why);
    CHECK_FAILS(hpl_eval(ctx, bad, &one, HPL_ARGS(hpl_arr(w->sub), hpl_arr(w->y), hpl_f32(9.0f))), E, why);
    CHECK_FAILS(hpl_eval(ctx, bad, &both, HPL_ARGS(hpl_part1(w->x, 0), hpl_part1(w->y, 0), hpl_f32(9.0f))), E, why);
    CHECK_FAILS(hpl_eval(ctx, bad, NULL, HPL_ARGS(hpl_part1(w->x, 1), hpl_part1(w->y, 0), hpl_f32(9.0f))), E, why);

    CHECK_FAILS(hpl_kernel_destroy(ctx, bad), E, why);
    CHECK(hpl_finish(ctx) == HPL_OK, "%s: hpl_finish reports an error after the failed calls: %s", label,
          hpl_last_error());
    expect_data(w, label);
    /* w's own kernel is still its own. */
    int n = hpl_kernel_arg_count(ctx, w->k);
    CHECK(n == 3, "%s: %s's kernel has %d arguments, want 3", label, w->name, n);
}

/* B's handles in A, and A's in B. */
static void foreign(world *a, world *b)
{
    /* The premise: the same calls in the same order give handles that
     * differ only in the context they belong to. */
    th_note("A x %#" PRIx64 " y %#" PRIx64 " sub %#" PRIx64 " owned %#" PRIx64 " kernel %#" PRIx64, a->x.id, a->y.id,
            a->sub.id, a->owned.id, a->k.id);
    th_note("B x %#" PRIx64 " y %#" PRIx64 " sub %#" PRIx64 " owned %#" PRIx64 " kernel %#" PRIx64, b->x.id, b->y.id,
            b->sub.id, b->owned.id, b->k.id);
    CHECK(a->x.id != b->x.id && a->y.id != b->y.id && a->sub.id != b->sub.id && a->k.id != b->k.id,
          "two contexts gave the same handle");

    hpl_array parts[2];
    for (int i = 0; i < 2; i++)
        CHECK_OK(hpl_array_part(b->ctx, b->y, i, &parts[i], NULL));
    const struct {
        hpl_array h;
        const char *what;
    } arrays[] = {{b->x, "B's array x"},     {b->y, "B's array y"},        {b->sub, "B's subarray"},
                  {b->owned, "B's subarray with an owned box"}, {parts[1], "B's part 1 of y"}};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        array_calls_fail(a, arrays[i].h, "another context", arrays[i].what);
    kernel_calls_fail(a, b->k, "another context", "B's");

    /* The other way round, fewer of them: A's in B. */
    array_calls_fail(b, a->y, "another context", "A's array y");
    kernel_calls_fail(b, a->k, "another context", "A's");

    /* Nothing of B changed, and all of it still works in B; same for A. */
    expect_data(b, "its handles were used in A");
    run_kernel(b, true, 5.0f, "B's kernel after the foreign calls");
    run_kernel(a, false, 5.0f, "A's kernel after the foreign calls");
    float got[SUB_HI - SUB_LO + 1];
    if (CHECK_OK(hpl_array_read(b->ctx, b->sub, got, sizeof got)))
        CHECK(got[0] == b->base + SUB_LO && got[SUB_HI - SUB_LO] == b->base + SUB_HI,
              "B's subarray reads %g..%g, want %g..%g", got[0], got[SUB_HI - SUB_LO], b->base + SUB_LO,
              b->base + SUB_HI);
}

/* Handles of A's own destroyed objects, whose slots new objects took. */
static void stale(world *a)
{
    hpl_context *ctx = a->ctx;
    /* An array, and a kernel. */
    hpl_array t = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    hpl_kernel kt = th_kernel(ctx, kernel_a);
    CHECK_OK(hpl_array_destroy(ctx, t));
    CHECK_OK(hpl_kernel_destroy(ctx, kt));
    hpl_array t2 = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    hpl_kernel kt2 = th_kernel(ctx, kernel_a);
    CHECK(t2.id != t.id && kt2.id != kt.id, "a new object got a destroyed one's handle");
    array_calls_fail(a, t, "stale", "a destroyed array's");
    kernel_calls_fail(a, kt, "stale", "a destroyed");

    /* A subarray destroyed directly, then one destroyed with its parent. */
    hpl_array s;
    CHECK_OK(hpl_subarray(ctx, t2, HPL_RANGES({0, N - 1}), &s));
    CHECK_OK(hpl_array_destroy(ctx, s));
    hpl_array s2;
    CHECK_OK(hpl_subarray(ctx, t2, HPL_RANGES({1, N - 2}), &s2));
    array_calls_fail(a, s, "stale", "a destroyed subarray's");
    hpl_array s3;
    CHECK_OK(hpl_subarray(ctx, t2, HPL_RANGES({0, N - 1}), &s3));
    CHECK_OK(hpl_array_destroy(ctx, t2));
    array_calls_fail(a, s3, "stale", "a subarray destroyed with its parent:");
    array_calls_fail(a, s2, "stale", "another subarray destroyed with its parent:");

    /* The new kernel still works; then it goes too. */
    float host[N];
    hpl_array u = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    CHECK_OK(hpl_eval(ctx, kt2, NULL, HPL_ARGS(hpl_arr(a->x), hpl_arr(u), hpl_f32(2.0f))));
    if (CHECK_OK(hpl_array_read(ctx, u, host, sizeof host)))
        CHECK(host[5] == 2.0f * (a->base + 5.0f), "the kernel in the reused slot computed %g, want %g", host[5],
              2.0f * (a->base + 5.0f));
    CHECK_OK(hpl_kernel_destroy(ctx, kt2));
    CHECK_OK(hpl_array_destroy(ctx, u));

    /* Many reuses of one slot: no old handle comes back to life. */
    hpl_array olds[64];
    for (int i = 0; i < 64; i++) {
        olds[i] = th_array(ctx, HPL_INT32, 4, 0, 0);
        CHECK_OK(hpl_array_destroy(ctx, olds[i]));
    }
    hpl_array live = th_array(ctx, HPL_INT32, 4, 0, 0);
    int revived = 0;
    for (int i = 0; i < 64; i++) {
        hpl_array_info info;
        revived += hpl_array_get_info(ctx, olds[i], &info) != HPL_ERROR_INVALID_HANDLE;
        CHECK(olds[i].id != live.id, "reuse %d gave the live array's handle", i);
    }
    CHECK(revived == 0, "%d of 64 destroyed handles were accepted after their slot was reused", revived);
    CHECK_OK(hpl_array_destroy(ctx, live));
}

/* Zero-initialised handles. */
static void null_handles(world *a)
{
    hpl_array z = {0};
    hpl_kernel zk = {0};
    array_calls_fail(a, z, "null", "a zero");
    kernel_calls_fail(a, zk, "null", "a zero");
}

/* Handles of a destroyed context: in A (alive all along), and in a context
 * made after it by the same calls (so its objects sit in the same slots
 * with the same generations). */
static void destroyed_context(world *a)
{
    world dead;
    make_world(&dead, "the destroyed context", true, 500.0f);
    hpl_array dx = dead.x, dsub = dead.sub;
    hpl_kernel dk = dead.k;
    destroy_world(&dead);

    array_calls_fail(a, dx, "another context", "a destroyed context's array");
    kernel_calls_fail(a, dk, "another context", "a destroyed context's");

    world fresh;
    make_world(&fresh, "a context made after the destroyed one", false, 700.0f);
    th_note("destroyed context's x %#" PRIx64 ", the new one's %#" PRIx64, dx.id, fresh.x.id);
    CHECK(fresh.x.id != dx.id && fresh.k.id != dk.id, "a new context gave a destroyed context's handles");
    array_calls_fail(&fresh, dx, "another context", "a destroyed context's array");
    array_calls_fail(&fresh, dsub, "another context", "a destroyed context's subarray");
    kernel_calls_fail(&fresh, dk, "another context", "a destroyed context's");
    run_kernel(&fresh, false, 4.0f, "its kernel after the calls with the dead context's handles");
    destroy_world(&fresh);
}

int main(void)
{
    world a, b;
    make_world(&a, "context A", false, 10.0f);
    make_world(&b, "context B", true, 100.0f);

    foreign(&a, &b);
    stale(&a);
    null_handles(&a);
    destroyed_context(&a);

    expect_data(&a, "everything");
    expect_data(&b, "everything");
    destroy_world(&b);
    /* A outlives B: B's handles stay foreign in A after B is gone. */
    array_calls_fail(&a, b.y, "another context", "destroyed B's array");
    kernel_calls_fail(&a, b.k, "another context", "destroyed B's");
    run_kernel(&a, false, 6.0f, "A's kernel at the end");
    return th_finish(a.ctx);
}
