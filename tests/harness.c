/* Test harness: contexts with validation and a counting log, checks. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700
#include "harness.h"

#include <pthread.h>

#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int failures;
static atomic_int warnings;      /* WARNING-level, not yet taken */
static atomic_int warnings_all;  /* WARNING-level, ever */
static atomic_int errors;        /* ERROR-level (validation) */
static atomic_int checks;
static atomic_int demoted;       /* validation messages the library logged below WARNING */
static pthread_mutex_t last_warning_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_warning[2048];  /* text of the last WARNING-level message */

static const char *level_name(hpl_log_level level)
{
    switch (level) {
    case HPL_LOG_DEBUG: return "debug";
    case HPL_LOG_INFO: return "info";
    case HPL_LOG_WARNING: return "WARNING";
    case HPL_LOG_ERROR: return "ERROR";
    }
    return "?";
}

/* Prints a message without the words ctest's FAIL_REGULAR_EXPRESSION looks
 * for ("VUID", "Validation Error", "validation layer"), for messages that
 * must not fail the test. */
static void print_defanged(const char *m)
{
    static const struct {
        const char *from, *to;
    } subst[] = {{"VUID", "V-UID"}, {"Validation Error", "Validation-Error"}, {"validation layer", "validation-layer"}};
    char out[4096];
    size_t o = 0;
    while (*m && o + 32 < sizeof out) {
        bool done = false;
        for (size_t i = 0; i < sizeof subst / sizeof subst[0] && !done; i++) {
            size_t n = strlen(subst[i].from);
            if (strncmp(m, subst[i].from, n) == 0) {
                o += (size_t)snprintf(out + o, sizeof out - o, "%s", subst[i].to);
                m += n;
                done = true;
            }
        }
        if (!done)
            out[o++] = *m++;
    }
    out[o] = 0;
    fprintf(stderr, "%s\n", out);
}

static pthread_mutex_t last_error_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_error[1024]; /* the last ERROR-level message */

static void log_cb(void *user, hpl_log_level level, const char *message)
{
    (void)user;
    if (level < HPL_LOG_WARNING) {
        /* The library demotes known validation-layer bugs to DEBUG; they do
         * not fail the test but are shown and counted (each one of the
         * 1.3.239 layer's timeline timeouts is a 10 s stall). */
        if (level == HPL_LOG_DEBUG && message && th_contains(message, "validation")) {
            atomic_fetch_add(&demoted, 1);
            fprintf(stderr, "[hplvk log %s, not counted] ", level_name(level));
            print_defanged(message);
        }
        return;
    }
    if (level == HPL_LOG_WARNING) {
        atomic_fetch_add(&warnings, 1);
        atomic_fetch_add(&warnings_all, 1);
        pthread_mutex_lock(&last_warning_lock);
        snprintf(last_warning, sizeof last_warning, "%s", message ? message : "");
        pthread_mutex_unlock(&last_warning_lock);
    } else {
        atomic_fetch_add(&errors, 1);
        pthread_mutex_lock(&last_error_lock);
        snprintf(last_error, sizeof last_error, "%s", message ? message : "");
        pthread_mutex_unlock(&last_error_lock);
    }
    fprintf(stderr, "[hplvk log %s] %s\n", level_name(level), message ? message : "(null)");
}

void th_prepare_desc(hpl_context_desc *desc)
{
    desc->validation = true;
    desc->log = log_cb;
    desc->log_user = NULL;
}

/* "cpu:N" with N >= 2: N; else 0. */
static int plain_cpu_count(const char *devices)
{
    if (strncmp(devices, "cpu:", 4) || !devices[4])
        return 0;
    int n = 0;
    for (const char *p = devices + 4; *p; p++) {
        if (!isdigit((unsigned char)*p) || n > 1000)
            return 0;
        n = n * 10 + (*p - '0');
    }
    return n >= 2 ? n : 0;
}

const char *th_device_list(const char *devices, int zero_copy, char *buf, size_t size)
{
    if (!devices)
        devices = "cpu";
    /* TH_DEVICE_KIND=gpu runs the suite on a GPU machine: "cpu:2" becomes
     * "gpu:2" (the GPU opened as two logical devices). */
    const char *kind = getenv("TH_DEVICE_KIND");
    bool rekind = kind && *kind && !strncmp(devices, "cpu", 3);
    /* TH_ZERO_COPY_FIRST=1: "cpu:N" becomes "cpu+zc,<kind>:N-1". */
    const char *first = getenv("TH_ZERO_COPY_FIRST");
    const char *zc_env = getenv("HPLVK_ZERO_COPY");
    int n = plain_cpu_count(devices);
    bool zc_off = zero_copy == HPL_ZERO_COPY_OFF || (zero_copy == HPL_ZERO_COPY_AUTO && zc_env && !strcmp(zc_env, "0"));
    if (first && !strcmp(first, "1") && n && !zc_off)
        snprintf(buf, size, "cpu+zc,%s:%d", rekind ? kind : "cpu", n - 1);
    else
        snprintf(buf, size, "%s", th_devices(devices));
    return buf;
}

hpl_context *th_context_desc(const hpl_context_desc *base)
{
    hpl_context_desc desc = {0};
    if (base)
        desc = *base;
    char spec[96];
    desc.devices = th_device_list(desc.devices, desc.zero_copy, spec, sizeof spec);
    th_prepare_desc(&desc);
    hpl_context *ctx = NULL;
    int r = hpl_context_create(&desc, &ctx);
    if (r != HPL_OK || !ctx) {
        fprintf(stderr, "FATAL: hpl_context_create(devices=\"%s\") = %s: %s\n", desc.devices, hpl_error_name(r),
                hpl_last_error());
        exit(1);
    }
    return ctx;
}

void th_env_set(th_env *saved, const char *name, const char *value)
{
    const char *was = getenv(name);
    *saved = (th_env){.name = name, .was_set = was != NULL};
    if (was)
        snprintf(saved->value, sizeof saved->value, "%s", was);
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

void th_env_restore(const th_env *saved)
{
    if (saved->was_set)
        setenv(saved->name, saved->value, 1);
    else
        unsetenv(saved->name);
}

const char *th_devices(const char *devices)
{
    static char buffers[16][128];
    static atomic_uint next;
    const char *kind = getenv("TH_DEVICE_KIND");
    if (!devices || !kind || !*kind || strncmp(devices, "cpu", 3) != 0)
        return devices;
    const char *rest = devices + 3;
    /* "gpu0" names one device: "cpu0:2" is that device twice. */
    if (isdigit((unsigned char)kind[strlen(kind) - 1]))
        while (isdigit((unsigned char)*rest))
            rest++;
    char *out = buffers[atomic_fetch_add(&next, 1) % 16];
    snprintf(out, sizeof buffers[0], "%s%s", kind, rest);
    return out;
}

uint32_t th_device_types(void)
{
    const char *kind = getenv("TH_DEVICE_KIND");
    if (!kind || !*kind || strncmp(kind, "cpu", 3) == 0)
        return HPL_DEVICE_CPU;
    if (strncmp(kind, "gpu", 3) == 0)
        return HPL_DEVICE_GPU;
    return HPL_DEVICE_ANY;
}

bool th_shares_memory(const hpl_device_info *info)
{
    return (info->type & (HPL_DEVICE_CPU | HPL_DEVICE_INTEGRATED_GPU)) && info->host_import;
}

hpl_context *th_context(const char *devices)
{
    return th_context_desc(&(hpl_context_desc){.devices = devices});
}

int th_finish(hpl_context *ctx)
{
    hpl_context_destroy(ctx);
    int f = atomic_load(&failures);
    int w = atomic_load(&warnings);
    int e = atomic_load(&errors);
    int c = atomic_load(&checks);
    if (w)
        fprintf(stderr, "FAIL: %d unexpected warning message(s) logged\n", w);
    if (e)
        fprintf(stderr, "FAIL: %d error/validation message(s) logged\n", e);
    if (c == 0)
        fprintf(stderr, "FAIL: the test checked nothing\n");
    int d = atomic_load(&demoted);
    if (d)
        fprintf(stderr, "note: %d validation message(s) demoted by the library (known layer bugs), not counted\n", d);
    bool ok = f == 0 && w == 0 && e == 0 && c > 0;
    fprintf(stderr, "%s: %d checks, %d failed, %d warnings, %d validation/error messages\n", ok ? "PASS" : "FAIL",
            c, f, w, e);
    return ok ? 0 : 1;
}

int th_take_warnings(void)
{
    return atomic_exchange(&warnings, 0);
}

void th_last_warning(char *buf, size_t size)
{
    pthread_mutex_lock(&last_warning_lock);
    snprintf(buf, size, "%s", last_warning);
    pthread_mutex_unlock(&last_warning_lock);
}

int th_error_messages(void)
{
    return atomic_load(&errors);
}

int th_take_errors(char *last, size_t size)
{
    pthread_mutex_lock(&last_error_lock);
    if (last && size)
        snprintf(last, size, "%s", last_error);
    last_error[0] = 0;
    pthread_mutex_unlock(&last_error_lock);
    return atomic_exchange(&errors, 0);
}

int th_failures(void)
{
    return atomic_load(&failures);
}

bool th_contains(const char *haystack, const char *needle)
{
    if (!haystack || !needle)
        return false;
    size_t n = strlen(needle);
    if (n == 0)
        return true;
    for (const char *p = haystack; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return true;
    }
    return false;
}

bool th_check(bool ok, const char *expr, const char *file, int line, const char *fmt, ...)
{
    atomic_fetch_add(&checks, 1);
    if (ok)
        return true;
    atomic_fetch_add(&failures, 1);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s:%d: CHECK failed: %s: %s\n", file, line, expr, msg);
    return false;
}

bool th_check_ok(int result, const char *expr, const char *file, int line)
{
    atomic_fetch_add(&checks, 1);
    if (result == HPL_OK)
        return true;
    atomic_fetch_add(&failures, 1);
    fprintf(stderr, "%s:%d: CHECK_OK failed: %s returned %s (%d): %s\n", file, line, expr, hpl_error_name(result),
            result, hpl_last_error());
    return false;
}

bool th_check_fails_any(int result, const int *expected, int n_expected, const char *substring, const char *expr,
                        const char *file, int line)
{
    atomic_fetch_add(&checks, 1);
    bool code_ok = false;
    for (int i = 0; i < n_expected; i++)
        if (result == expected[i])
            code_ok = true;
    const char *msg = result == HPL_OK ? "" : hpl_last_error();
    bool msg_ok = result != HPL_OK && th_contains(msg, substring);
    if (code_ok && msg_ok) {
        if (getenv("TH_VERBOSE"))
            fprintf(stderr, "%s:%d: ok: %s -> %s: %s\n", file, line, expr, hpl_error_name(result), msg);
        return true;
    }
    atomic_fetch_add(&failures, 1);
    char want[256] = "";
    for (int i = 0; i < n_expected; i++) {
        size_t len = strlen(want);
        snprintf(want + len, sizeof want - len, "%s%s", i ? " or " : "", hpl_error_name(expected[i]));
    }
    if (!code_ok)
        fprintf(stderr, "%s:%d: CHECK_FAILS failed: %s returned %s (%d), expected %s; message: \"%s\"\n", file, line,
                expr, hpl_error_name(result), result, want, msg);
    else
        fprintf(stderr, "%s:%d: CHECK_FAILS failed: %s returned %s as expected but the message \"%s\" does not "
                        "contain \"%s\"\n",
                file, line, expr, hpl_error_name(result), msg, substring);
    return false;
}

bool th_check_fails(int result, int expected, const char *substring, const char *expr, const char *file, int line)
{
    return th_check_fails_any(result, &expected, 1, substring, expr, file, line);
}

bool th_check_msg(const char *substring, const char *file, int line)
{
    atomic_fetch_add(&checks, 1);
    const char *msg = hpl_last_error();
    if (th_contains(msg, substring))
        return true;
    atomic_fetch_add(&failures, 1);
    fprintf(stderr, "%s:%d: CHECK_MSG failed: the last error \"%s\" does not contain \"%s\"\n", file, line, msg,
            substring);
    return false;
}

hpl_kernel th_kernel(hpl_context *ctx, const char *glsl)
{
    hpl_kernel k = {0};
    int r = hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.glsl = glsl}, &k);
    if (!th_check_ok(r, "hpl_kernel_create (th_kernel)", __FILE__, __LINE__)) {
        fprintf(stderr, "  source:\n%s\n", glsl);
        hpl_kernel zero = {0};
        return zero;
    }
    return k;
}

hpl_array th_array(hpl_context *ctx, hpl_type type, uint64_t d0, uint64_t d1, uint64_t d2)
{
    hpl_array a = {0};
    int r = hpl_array_create(ctx, &(hpl_array_desc){.type = type, .dims = {d0, d1, d2}}, &a);
    th_check(r == HPL_OK, "hpl_array_create (th_array)", __FILE__, __LINE__, "type %s dims {%llu,%llu,%llu}: %s: %s",
             hpl_type_name(type), (unsigned long long)d0, (unsigned long long)d1, (unsigned long long)d2,
             hpl_error_name(r), hpl_last_error());
    return a;
}

void *th_access(hpl_context *ctx, hpl_array a, hpl_access mode)
{
    void *p = NULL;
    int r = hpl_array_access(ctx, a, mode, &p);
    if (!th_check_ok(r, "hpl_array_access (th_access)", __FILE__, __LINE__))
        return NULL;
    th_check(p != NULL, "p != NULL", __FILE__, __LINE__, "hpl_array_access returned HPL_OK and a NULL pointer");
    return p;
}

char *th_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    size_t len = strlen(base) + strlen(tag) + 32;
    char *path = malloc(len);
    if (!path)
        return NULL;
    snprintf(path, len, "%s/hplvk-%s-XXXXXX", base, tag);
    if (!mkdtemp(path)) {
        fprintf(stderr, "mkdtemp(%s): %s\n", path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void th_rmtree(const char *path)
{
    if (path)
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

bool th_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    return ok;
}

char *th_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            char *bigger = realloc(buf, cap + 1);
            if (!bigger) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = bigger;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *size = n;
    return buf;
}

hpl_stats th_stats(hpl_context *ctx)
{
    hpl_stats s;
    memset(&s, 0, sizeof s);
    CHECK_OK(hpl_finish(ctx));
    if (!CHECK_OK(hpl_stats_get(ctx, &s)))
        memset(&s, 0, sizeof s);
    return s;
}

void th_print_stats(const char *prefix, const char *what, const hpl_stats *s)
{
    for (int d = 0; d < s->device_count && d < 16; d++) {
        const hpl_device_stats *x = &s->device[d];
        printf("%s: %s: device %d to_device_bytes=%" PRIu64 " count=%" PRIu64 " to_host_bytes=%" PRIu64
               " count=%" PRIu64 " local_bytes=%" PRIu64 " count=%" PRIu64 " evictions=%" PRIu64
               " evicted_bytes=%" PRIu64 " resident_bytes=%" PRIu64 " peak_bytes=%" PRIu64 "\n",
               prefix, what, d, x->to_device_bytes, x->to_device_count, x->to_host_bytes, x->to_host_count,
               x->local_bytes, x->local_count, x->evictions, x->evicted_bytes, x->resident_bytes, x->peak_bytes);
    }
}

bool th_expect_u32(const uint32_t *got, const uint32_t *want, uint64_t n, const char *what, const char *file,
                   int line)
{
    uint64_t bad = 0, first = 0;
    for (uint64_t i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ == 0)
            first = i;
    return th_check(bad == 0, "bad == 0", file, line,
                    "%s: %" PRIu64 " of %" PRIu64 " wrong, first [%" PRIu64 "] = %u want %u", what, bad, n, first,
                    bad ? got[first] : 0, bad ? want[first] : 0);
}

bool th_expect_array_u32(hpl_context *ctx, hpl_array a, const uint32_t *want, uint64_t n, const char *what,
                         const char *file, int line)
{
    const uint32_t *p = th_access(ctx, a, HPL_READ);
    return p && th_expect_u32(p, want, n, what, file, line);
}

hpl_launch th_on(int device)
{
    hpl_launch l = {.device = device};
    return l;
}

double th_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void th_note(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "note: %s\n", msg);
}
