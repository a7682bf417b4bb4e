/* Test harness for hplvk's end-to-end tests (on Lavapipe, or on a GPU with
 * TH_DEVICE_KIND below; all under the validation layer).
 *
 *   int main(void) {
 *       hpl_context *ctx = th_context("cpu:2");   // validation on, counting log
 *       ...
 *       CHECK(x == y, "x %d y %d", x, y);
 *       CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(...)));
 *       CHECK_FAILS(hpl_array_create(ctx, &bad, &a), HPL_ERROR_DIMENSIONS, "dims[0]");
 *       return th_finish(ctx);                    // non-zero on any failure
 *   }
 *
 * Every log message of level >= HPL_LOG_WARNING is printed and counted;
 * th_finish() fails the test if any was seen (validation messages arrive at
 * HPL_LOG_ERROR). A test that provokes warnings on purpose takes them with
 * th_take_warnings(), which only ever removes WARNING-level messages: a
 * validation message always fails the test.
 *
 * The checks and counters are thread-safe: tests may CHECK from any thread.
 * TH_DEVICE_KIND=gpu (or gpu0, gpu1, ...) rewrites device strings "cpu..." to
 * "gpu..." (to run the suite on a GPU machine without Lavapipe; see
 * th_devices). Tests then assert what the device's properties imply
 * (hpl_device_get_info), never that it is a CPU.
 * TH_ZERO_COPY_FIRST=1 then rewrites a list "cpu:N" (N >= 2) to
 * "cpu+zc,K:N-1", K being TH_DEVICE_KIND or "cpu": the same number of
 * devices, the first a zero-copy CPU device and the others with separate
 * memories ("cpu+zc,cpu:2"; "cpu+zc,gpu0:2" with TH_DEVICE_KIND=gpu0, the
 * CPU+GPU mix), unless the context asks for zero copy OFF
 * (hpl_context_desc.zero_copy or HPLVK_ZERO_COPY=0).
 * TH_VERBOSE=1 in the environment prints every expected failure's message
 * (to review what the library says).
 */
#ifndef HPLVK_TEST_HARNESS_H
#define HPLVK_TEST_HARNESS_H

#include "hplvk.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define TH_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TH_PRINTF(f, a)
#endif

/* ---- contexts ---------------------------------------------------------- */

/* A context on `devices` (HPLVK_DEVICES syntax; NULL = "cpu") with
 * validation on and the counting log callback. Exits the test (status 1)
 * when the context cannot be created: nothing else could run. */
hpl_context *th_context(const char *devices);
/* Same, from a description: validation and log are forced on, every other
 * field (devices, cache_dir, no_disk_cache) is kept. devices NULL = "cpu". */
hpl_context *th_context_desc(const hpl_context_desc *desc);
/* The device list th_context_desc() opens for `devices` (NULL = "cpu") and a
 * context whose hpl_context_desc.zero_copy is zero_copy: devices after the
 * TH_DEVICE_KIND and TH_ZERO_COPY_FIRST rewrites above, written to buf
 * (truncated to size). Returns buf. */
const char *th_device_list(const char *devices, int zero_copy, char *buf, size_t size);
/* Fills in validation and the counting log into *desc (for tests that call
 * hpl_context_create themselves, e.g. to check it fails). */
void th_prepare_desc(hpl_context_desc *desc);
/* The device list th_context opens for `devices`: with TH_DEVICE_KIND=K the
 * leading "cpu" selector becomes K ("cpu:2" -> "gpu0:2" for K = gpu0; when K
 * names one device, an index after "cpu" is dropped: "cpu0:2" -> "gpu0:2").
 * Returns `devices` itself when nothing changes, else a string that stays
 * valid for the next 15 calls. For tests that call hpl_context_create or set
 * HPLVK_DEVICES themselves. */
const char *th_devices(const char *devices);
/* An environment variable changed for a while (around a context's
 * creation, say) and then put back as it was: th_env_set saves it into
 * *saved and sets it to value (NULL: unsets it); th_env_restore sets or
 * unsets it again. */
typedef struct th_env {
    const char *name;
    bool was_set;
    char value[256];
} th_env;
void th_env_set(th_env *saved, const char *name, const char *value);
void th_env_restore(const th_env *saved);
/* The hpl_device_type bits a device opened for "cpu..." has: HPL_DEVICE_CPU,
 * or with TH_DEVICE_KIND=gpu... HPL_DEVICE_GPU (HPL_DEVICE_ANY for another
 * kind: "0", "all"). */
uint32_t th_device_types(void);
/* The device shares memory with the host (the CPU or an integrated GPU, able
 * to import host memory): zero copy is on for it when opened once with
 * HPL_ZERO_COPY_AUTO, and HPL_ZERO_COPY_ON can make it zero-copy. A discrete
 * GPU never is: it keeps separate copies whatever the mode asks. */
bool th_shares_memory(const hpl_device_info *info);
/* Destroys ctx (may be NULL), prints a summary and returns the process exit
 * status: 0 only if every check passed and no unexpected message was logged. */
int th_finish(hpl_context *ctx);

/* ---- log counters ------------------------------------------------------ */

/* WARNING-level messages seen since the last call; they are removed from
 * what th_finish() counts (expected warnings). */
int th_take_warnings(void);
/* The text of the last WARNING-level message ("" if none yet). */
void th_last_warning(char *buf, size_t size);
/* ERROR-level messages (validation) seen so far; never taken. */
int th_error_messages(void);
/* Returns and forgets the number of ERROR-level messages logged so far (a
 * test that provokes them on purpose); the last one goes to last (may be
 * NULL). */
int th_take_errors(char *last, size_t size);
/* Number of failed checks so far. */
int th_failures(void);

/* ---- checks ------------------------------------------------------------ */

bool th_check(bool ok, const char *expr, const char *file, int line, const char *fmt, ...) TH_PRINTF(5, 6);
bool th_check_ok(int result, const char *expr, const char *file, int line);
bool th_check_fails(int result, int expected, const char *substring, const char *expr, const char *file, int line);
bool th_check_fails_any(int result, const int *expected, int n_expected, const char *substring, const char *expr,
                        const char *file, int line);
bool th_check_msg(const char *substring, const char *file, int line);
/* Case-insensitive substring search. */
bool th_contains(const char *haystack, const char *needle);

bool th_expect_u32(const uint32_t *got, const uint32_t *want, uint64_t n, const char *what, const char *file,
                   int line);
bool th_expect_array_u32(hpl_context *ctx, hpl_array a, const uint32_t *want, uint64_t n, const char *what,
                         const char *file, int line);

/* CHECK(cond, fmt, ...): records a failure with file:line and the message. */
#define CHECK(cond, ...) th_check(!!(cond), #cond, __FILE__, __LINE__, __VA_ARGS__)
/* EXPECT_U32(got, want, n, what): one check that the n uint32_t at got equal
 * those at want; a failure names how many differ and the first.
 * EXPECT_ARRAY_U32(ctx, a, want, n, what): the same of the array's values
 * (th_access: nothing checked when that failed, which it reported). */
#define EXPECT_U32(got, want, n, what) th_expect_u32((got), (want), (n), (what), __FILE__, __LINE__)
#define EXPECT_ARRAY_U32(ctx, a, want, n, what) \
    th_expect_array_u32((ctx), (a), (want), (n), (what), __FILE__, __LINE__)
/* CHECK_OK(call): the call must return HPL_OK; prints hpl_error_name and
 * hpl_last_error() otherwise. Evaluates to true on success. */
#define CHECK_OK(call) th_check_ok((call), #call, __FILE__, __LINE__)
/* CHECK_FAILS(call, code, "substring"): the call must return `code` and
 * hpl_last_error() must contain the substring (case-insensitive). */
#define CHECK_FAILS(call, code, substring) th_check_fails((call), (code), (substring), #call, __FILE__, __LINE__)
/* CHECK_FAILS_ANY(call, ((int[]){A, B}), 2, "substring"): one of the codes. */
#define CHECK_FAILS_ANY(call, codes, ncodes, substring) \
    th_check_fails_any((call), (codes), (ncodes), (substring), #call, __FILE__, __LINE__)
/* CHECK_MSG("substring"): hpl_last_error() contains it (after a CHECK_FAILS,
 * to require more than one word in the message). */
#define CHECK_MSG(substring) th_check_msg((substring), __FILE__, __LINE__)

/* ---- small helpers ----------------------------------------------------- */

/* A kernel from GLSL text; records a failure and returns {0} when creation
 * fails. */
hpl_kernel th_kernel(hpl_context *ctx, const char *glsl);
/* An array of the given type and extents (trailing zeros: fewer dims). */
hpl_array th_array(hpl_context *ctx, hpl_type type, uint64_t d0, uint64_t d1, uint64_t d2);
/* Host pointer for access; NULL (and a recorded failure) on error. */
void *th_access(hpl_context *ctx, hpl_array a, hpl_access mode);

/* A fresh temporary directory (mkdtemp under $TMPDIR or /tmp); the caller
 * frees the string. th_rmtree removes a directory tree (best effort). */
char *th_tmpdir(const char *tag);
void th_rmtree(const char *path);
/* Writes a whole file; false on error. */
bool th_write_file(const char *path, const void *data, size_t size);
/* A whole file, NUL-terminated (*size leaves the NUL out), for free();
 * NULL when it cannot be opened or read into memory. */
char *th_read_file(const char *path, size_t *size);

/* Seconds since an arbitrary point (for progress output only, never a
 * pass/fail criterion). */
double th_now(void);
/* hpl_finish, then the context's statistics (zeroed, after a failed check,
 * when either call fails). */
hpl_stats th_stats(hpl_context *ctx);
/* Prints each device's transfer and residency figures of s, one line a
 * device: "<prefix>: <what>: device d to_device_bytes=... peak_bytes=..."
 * (for the reader of the output: never a pass/fail criterion). */
void th_print_stats(const char *prefix, const char *what, const hpl_stats *s);

/* The launch that runs a kernel on device `device` alone (the rest of
 * hpl_launch zero: the kernel's defaults). */
hpl_launch th_on(int device);

/* Prints an informational line prefixed with the test name. */
void th_note(const char *fmt, ...) TH_PRINTF(1, 2);

#endif
