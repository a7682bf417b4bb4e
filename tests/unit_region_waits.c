/* End to end (Lavapipe): synchronisation points per region (lib/base/coherence.h),
 * so that work on disjoint parts of one host storage does not serialise.
 *
 * A device is held by work that cannot complete until the test says so: the
 * application's "read" of a (sub)array, released (hpl_array_vulkan_release)
 * with a timeline semaphore of the test that only the host signals. It
 * makes a point pending on that device's queue, and everything submitted
 * there after it waits too. The internal API gives the VkDevice (engine.h).
 * So the checks are deterministic:
 *   - "goes on": the call returns while the point is still pending (it
 *     cannot complete before the signal). A call that waits for it would
 *     hang: after TIMEOUT_MS the test fails and signals, to end.
 *   - "waits": the call has not returned HOLD_MS after it started (it could
 *     not, if it waits), and returns after the signal; and what it sees, or
 *     writes, is ordered after the held work.
 *
 * 1. Zero copy (one device working on the host storage): rows 0..9 of a
 *    200-row array are read by the held release and by a kernel queued
 *    behind it. A host write of rows 100..109 goes on; a host read of rows
 *    0..9 goes on (nobody writes them); a host write of rows 5..14 waits,
 *    and the kernel's result holds the rows as they were before it.
 * 2. Halo rows staged into the host ("cpu:3", separate memories): rows
 *    0..9 written on device 0, rows 20..29 on device 2; device 0 held, and
 *    its copy of rows 0..9 to the host (a prefetch; transfers on the compute
 *    queue, HPLVK_TRANSFER_LANE=off) queued behind it. The
 *    host's read of rows 20..29 (staged from device 2 into the same host
 *    storage), then device 1's eval over them (a copy from the host) and
 *    the host's read of its result do not wait for device 0; the host's
 *    read of rows 0..9 does, and sees device 0's values.
 * 3. A ghost part saved into the host where a zero-copy subkernel of the
 *    same eval writes ("cpu+zc,cpu:1", validation off: with it such
 *    subkernels run one after the other). y = x + 1 split over devices 0
 *    (zero-copy) and 1 with one halo row; y's rows are valid on device 1
 *    only, so device 1's part saves its ghost rows (owned by device 0) to
 *    the host first, a copy held behind device 1's held work. Device 0's
 *    kernel, planned before that copy, must still run after it: the host
 *    read of device 0's rows waits, and then finds x + 1, not the saved
 *    values (waits gathered when an operation is recorded, access.c).
 * 4. The parts of one eval on two zero-copy devices ("cpu:2", zero copy on)
 *    run side by side: device 0 held, y = x + 1 split over devices 0 and 1
 *    without halo; the host read of device 1's rows goes on (device 1's
 *    part, recorded after device 0's, writes other rows of the same host
 *    storage), the read of device 0's rows waits. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, setenv */
#include "hold.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COLS 64
#define TIMEOUT_MS 60000
#define HOLD_MS 200

static const char *copy_src = /* b = a */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) a; hpl_out(uint, 2) b; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(b, id.x, id.y) = hpl_at2(a, id.x, id.y); }\n";

static void sleep_ms(int ms)
{
    nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
}

/* ---- host accesses on a thread of their own ---------------------------- */

typedef struct access_job {
    hpl_context *ctx;
    hpl_array view;
    hpl_access mode;
    void *p;
    int rc;
    atomic_int done;
    pthread_t thread;
} access_job;

static void *access_run(void *arg)
{
    access_job *j = arg;
    j->rc = hpl_array_access(j->ctx, j->view, j->mode, &j->p);
    atomic_store(&j->done, 1);
    return NULL;
}

static void access_start(access_job *j, hpl_context *ctx, hpl_array view, hpl_access mode)
{
    *j = (access_job){.ctx = ctx, .view = view, .mode = mode};
    atomic_init(&j->done, 0);
    CHECK(pthread_create(&j->thread, NULL, access_run, j) == 0, "pthread_create");
}

static bool returns_within(access_job *j, int ms)
{
    for (int t = 0; t < ms && !atomic_load(&j->done); t++)
        sleep_ms(1);
    return atomic_load(&j->done);
}

/* The access must return while h still holds its device. Returns its
 * pointer (NULL on failure, after releasing h so that it ends). */
static void *goes_on(hpl_context *ctx, hold *h, hpl_array view, hpl_access mode, const char *what)
{
    access_job j;
    access_start(&j, ctx, view, mode);
    bool on = returns_within(&j, TIMEOUT_MS);
    CHECK(on, "%s: waited for the held device's work on other rows", what);
    if (!on)
        hold_release(h);
    pthread_join(j.thread, NULL);
    CHECK_OK(j.rc);
    return on && j.rc == HPL_OK ? j.p : NULL;
}

/* The access must not return before h is released, and must after. */
static void *waits(hpl_context *ctx, hold *h, hpl_array view, hpl_access mode, const char *what)
{
    access_job j;
    access_start(&j, ctx, view, mode);
    CHECK(!returns_within(&j, HOLD_MS), "%s: did not wait for the held device's work on its rows", what);
    hold_release(h);
    CHECK(returns_within(&j, TIMEOUT_MS), "%s: still waiting after the release", what);
    pthread_join(j.thread, NULL);
    CHECK_OK(j.rc);
    return j.rc == HPL_OK ? j.p : NULL;
}

/* ---- arrays ------------------------------------------------------------ */

static hpl_array rows_of(hpl_context *ctx, hpl_array a, uint64_t first, uint64_t last)
{
    hpl_array s = {0};
    CHECK_OK(hpl_subarray(ctx, a, HPL_RANGES({first, last}, HPL_ALL), &s));
    return s;
}

static hpl_array make(hpl_context *ctx, uint64_t rows, const char *name)
{
    hpl_array a = {0};
    hpl_array_desc desc = {.type = HPL_UINT32, .dims = {rows, COLS}, .name = name};
    CHECK_OK(hpl_array_create(ctx, &desc, &a));
    uint32_t *p = th_access(ctx, a, HPL_WRITE);
    for (uint64_t i = 0; p && i < rows * COLS; i++)
        p[i] = (uint32_t)i;
    return a;
}

/* Elements of rows [first, first + n) of a COLS-wide view at p: value(row,
 * col) expected; returns the number of mismatches. */
static int mismatches(const uint32_t *p, uint64_t n, uint32_t (*value)(uint64_t, uint64_t, void *), void *user)
{
    int bad = 0;
    for (uint64_t r = 0; p && r < n; r++)
        for (uint64_t c = 0; c < COLS; c++)
            bad += p[r * COLS + c] != value(r, c, user);
    return p ? bad : -1;
}

static uint32_t original(uint64_t r, uint64_t c, void *first_row)
{
    return (uint32_t)((*(uint64_t *)first_row + r) * COLS + c);
}

static uint32_t constant(uint64_t r, uint64_t c, void *v)
{
    (void)r, (void)c;
    return *(uint32_t *)v;
}

/* ---- 1. zero copy --------------------------------------------------------- */

static void zero_copy(void)
{
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu", .zero_copy = HPL_ZERO_COPY_ON});
    hpl_device_info info;
    memset(&info, 0, sizeof info);
    CHECK_OK(hpl_device_get_info(ctx, 0, &info));
    if (!info.zero_copy) {
        th_note("zero copy: device 0 does not share memory with the host; skipped");
        hpl_context_destroy(ctx);
        return;
    }
    hpl_kernel copy = th_kernel(ctx, copy_src);
    hpl_array a = make(ctx, 200, "a"), out = make(ctx, 10, "out");
    hpl_array rows0 = rows_of(ctx, a, 0, 9), rows100 = rows_of(ctx, a, 100, 109), rows5 = rows_of(ctx, a, 5, 14);
    hold h;
    hold_begin(&h, ctx, 0, rows0);
    CHECK_OK(hpl_eval(ctx, copy, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(rows0), hpl_arr(out))));

    uint32_t *p = goes_on(ctx, &h, rows100, HPL_WRITE, "host write of rows 100..109");
    uint32_t seven = 7, eight = 8;
    for (uint64_t i = 0; p && i < 10 * COLS; i++)
        p[i] = seven;
    p = goes_on(ctx, &h, rows0, HPL_READ, "host read of rows 0..9 (read, not written, by the device)");
    uint64_t first = 0;
    CHECK(mismatches(p, 10, original, &first) == 0, "rows 0..9 as written");
    p = waits(ctx, &h, rows5, HPL_WRITE, "host write of rows 5..14");
    for (uint64_t i = 0; p && i < 10 * COLS; i++)
        p[i] = eight;

    CHECK(mismatches(th_access(ctx, out, HPL_READ), 10, original, &first) == 0,
          "the kernel read rows 0..9 before the host wrote rows 5..14");
    first = 0;
    p = th_access(ctx, a, HPL_READ);
    CHECK(p && mismatches(p, 5, original, &first) == 0 && mismatches(p + 5 * COLS, 10, constant, &eight) == 0 &&
              mismatches(p + 100 * COLS, 10, constant, &seven) == 0,
          "the host's writes of rows 5..14 and 100..109 are there");
    hold_end(&h);
    hpl_context_destroy(ctx);
}

/* ---- 2. halo rows staged into the host ------------------------------------ */

static void staged_halos(void)
{
    /* Every transfer on the compute queue: a GPU's transfer lane would run
     * the download of rows 0..9 beside the hold, not behind it (it waits
     * only for the fill that wrote them), and nothing would be left to
     * wait for. */
    th_env lane;
    th_env_set(&lane, "HPLVK_TRANSFER_LANE", "off");
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:3", .zero_copy = HPL_ZERO_COPY_OFF});
    th_env_restore(&lane);
    hpl_kernel copy = th_kernel(ctx, copy_src);
    hpl_array a = make(ctx, 30, "a"), out = make(ctx, 10, "out"), held = make(ctx, 1, "held");
    hpl_array rows0 = rows_of(ctx, a, 0, 9), rows20 = rows_of(ctx, a, 20, 29);
    uint32_t one = 1, three = 3;
    CHECK_OK(hpl_array_fill(ctx, rows0, &one, 0)); /* valid on device 0 only */
    CHECK_OK(hpl_array_fill(ctx, rows20, &three, 2));
    hold h;
    hold_begin(&h, ctx, 0, held);
    CHECK_OK(hpl_array_prefetch(ctx, rows0, HPL_ON_HOST)); /* device 0 -> host, behind the hold */

    uint32_t *p = goes_on(ctx, &h, rows20, HPL_READ, "host read of rows 20..29, staged from device 2");
    CHECK(mismatches(p, 10, constant, &three) == 0, "rows 20..29 from device 2");
    /* The staging is done: device 1's copy from the host needs no gate (the
     * progress thread serves gates in order, behind its watch of the held
     * device: a gate would wait for it whatever the regions). */
    CHECK_OK(hpl_eval(ctx, copy, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(rows20), hpl_arr(out))));
    p = goes_on(ctx, &h, out, HPL_READ, "device 1's copy of rows 20..29 from the host");
    CHECK(mismatches(p, 10, constant, &three) == 0, "device 1 copied device 2's rows");
    p = waits(ctx, &h, rows0, HPL_READ, "host read of rows 0..9, staged from the held device");
    CHECK(mismatches(p, 10, constant, &one) == 0, "rows 0..9 from device 0");
    hold_end(&h);
    hpl_context_destroy(ctx);
}

/* ---- 3. a ghost part saved where a zero-copy subkernel writes ------------- */

static const char *add1_src = /* y = x + 1 */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 2) y; hpl_in(uint, 2) x; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(y, id.x, id.y) = hpl_at2(x, id.x, id.y) + 1u; }\n";

/* The context without validation (HPLVK_VALIDATION=0 while it is made). */
static hpl_context *unvalidated(const char *devices)
{
    th_env validation;
    th_env_set(&validation, "HPLVK_VALIDATION", "0");
    hpl_context_desc desc = {.devices = th_devices(devices)};
    th_prepare_desc(&desc);
    desc.validation = false;
    hpl_context *ctx = NULL;
    CHECK_OK(hpl_context_create(&desc, &ctx));
    th_env_restore(&validation);
    return ctx;
}

static uint32_t plus_one(uint64_t r, uint64_t c, void *first_row)
{
    return original(r, c, first_row) + 1;
}

static void saved_ghost(void)
{
    hpl_context *ctx = unvalidated("cpu+zc,cpu:1");
    hpl_device_info info;
    memset(&info, 0, sizeof info);
    if (!ctx || !CHECK_OK(hpl_device_get_info(ctx, 0, &info)) || !info.zero_copy) {
        th_note("saved ghost: no zero-copy device 0; skipped");
        hpl_context_destroy(ctx);
        return;
    }
    hpl_kernel add1 = th_kernel(ctx, add1_src);
    hpl_array x = make(ctx, 20, "x"), y = make(ctx, 20, "y"), held = make(ctx, 1, "held");
    uint32_t five = 5;
    CHECK_OK(hpl_array_fill(ctx, y, &five, 1)); /* y valid on device 1 only */
    hold h;
    hold_begin(&h, ctx, 1, held);
    hpl_launch two = {.devices = {0, 1}, .device_count = 2};
    CHECK_OK(hpl_eval(ctx, add1, &two, HPL_ARGS(hpl_part1(y, 1), hpl_part1(x, 1))));

    hpl_array rows0 = rows_of(ctx, y, 0, 9);
    uint64_t first = 0;
    uint32_t *p = waits(ctx, &h, rows0, HPL_READ, "host read of device 0's rows of y (behind the held copy)");
    CHECK(mismatches(p, 10, plus_one, &first) == 0, "device 0's rows are x + 1");
    hold_end(&h);
    CHECK(mismatches(th_access(ctx, y, HPL_READ), 20, plus_one, &first) == 0,
          "y = x + 1 everywhere: the saved ghost rows did not land after device 0's kernel");
    hpl_context_destroy(ctx);
}

/* ---- 4. zero-copy parts of one eval side by side ------------------------- */

static void zero_copy_parts(void)
{
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:2", .zero_copy = HPL_ZERO_COPY_ON});
    hpl_device_info info[2];
    memset(info, 0, sizeof info);
    CHECK_OK(hpl_device_get_info(ctx, 0, &info[0]));
    CHECK_OK(hpl_device_get_info(ctx, 1, &info[1]));
    if (!info[0].zero_copy || !info[1].zero_copy) {
        th_note("zero-copy parts: the devices do not share memory with the host; skipped");
        hpl_context_destroy(ctx);
        return;
    }
    hpl_kernel add1 = th_kernel(ctx, add1_src);
    hpl_array x = make(ctx, 20, "x"), y = make(ctx, 20, "y"), held = make(ctx, 1, "held");
    hold h;
    hold_begin(&h, ctx, 0, held);
    hpl_launch two = {.devices = {0, 1}, .device_count = 2};
    CHECK_OK(hpl_eval(ctx, add1, &two, HPL_ARGS(hpl_part1(y, 0), hpl_part1(x, 0))));

    uint64_t first = 10;
    uint32_t *p = goes_on(ctx, &h, rows_of(ctx, y, 10, 19), HPL_READ, "host read of device 1's rows of y");
    CHECK(mismatches(p, 10, plus_one, &first) == 0, "device 1's rows are x + 1");
    first = 0;
    p = waits(ctx, &h, rows_of(ctx, y, 0, 9), HPL_READ, "host read of device 0's rows of y");
    CHECK(mismatches(p, 10, plus_one, &first) == 0, "device 0's rows are x + 1");
    hold_end(&h);
    hpl_context_destroy(ctx);
}

int main(void)
{
    zero_copy();
    staged_halos();
    saved_ghost();
    zero_copy_parts();
    return th_finish(NULL);
}
