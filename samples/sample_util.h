/*
 * sample_util.h — what every sample repeats: a log callback that counts
 * error messages (validation on, each message of the layer is one), the
 * device list of the RESULT line, a clock, a check macro, the default
 * devices of a multi-device eval and the halo statistics of a stencil;
 * through sample_args.h, the parsers of numeric arguments; through
 * sample_ranks.h, the context (over MPI ranks when started by mpiexec),
 * the RESULT line's ranks= field and verdict, and result checksums.
 *
 * Header-only (static functions) so that each sample stays one file to
 * build. Define SAMPLE_NAME (the program's name, for messages) and
 * _POSIX_C_SOURCE >= 199309L (clock_gettime) before including it, and
 * include it before any other header.
 */
#ifndef HPLVK_SAMPLE_UTIL_H
#define HPLVK_SAMPLE_UTIL_H

#ifndef SAMPLE_NAME
#error "define SAMPLE_NAME before including sample_util.h"
#endif

#include <hplvk.h>

#include "sample_args.h"  /* the numbers of the command line */
#include "sample_ranks.h" /* the context, over MPI ranks under mpiexec */
#include "sample_warm.h" /* warming GPUs up before timing */

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Milliseconds on a monotonic clock. */
static inline double sample_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Whether any device of the context is a GPU. */
static inline bool sample_has_gpu(hpl_context *ctx)
{
    hpl_device_info info;
    for (int d = 0; d < hpl_device_count(ctx); d++)
        if (hpl_device_get_info(ctx, d, &info) == HPL_OK && (info.type & HPL_DEVICE_GPU))
            return true;
    return false;
}

/* Repeats `call`, an eval of a step that leaves the data as it found it,
 * as sample_warm.h says where the context has a GPU, and once elsewhere
 * (the sample's check then shows that the step changes nothing); in a
 * function returning int (SAMPLE_TRY). */
#define SAMPLE_WARM_UP(ctx, call)                                                       \
    do {                                                                                \
        double warm_ms_ = sample_has_gpu(ctx) ? SAMPLE_WARM_MS : 0.0;                   \
        double warm0_ = sample_now_ms();                                                \
        unsigned batch_ = 1;                                                            \
        do {                                                                            \
            double batch0_ = sample_now_ms();                                           \
            for (unsigned i_ = 0; i_ < batch_; i_++)                                    \
                SAMPLE_TRY(call);                                                       \
            SAMPLE_TRY(hpl_finish(ctx));                                                \
            batch_ = sample_warm_next(batch_, sample_now_ms() - batch0_);               \
        } while (sample_now_ms() - warm0_ < warm_ms_);                                  \
    } while (0)

/* Validation messages reach the log at HPL_LOG_ERROR, possibly from another
 * thread of the library: count them atomically, so that a run that
 * triggers any fails. */
static atomic_int sample_log_errors;
static inline void sample_log(void *user, hpl_log_level level, const char *message)
{
    (void)user;
    if (level >= HPL_LOG_WARNING)
        fprintf(stderr, "hplvk %s: %s\n", level >= HPL_LOG_ERROR ? "error" : "warning", message);
    if (level >= HPL_LOG_ERROR)
        atomic_fetch_add(&sample_log_errors, 1);
}

/* Reports the errors logged so far; true when there were none. */
static inline bool sample_log_clean(void)
{
    int n = atomic_load(&sample_log_errors);
    if (n)
        fprintf(stderr, SAMPLE_NAME ": %d error messages from the library or the validation layer\n", n);
    return n == 0;
}

/* For functions returning an hpl_result: report a failing call with the
 * library's message and return its code. */
#define SAMPLE_TRY(call)                                                                                     \
    do {                                                                                                     \
        int rc_ = (call);                                                                                    \
        if (rc_ != HPL_OK) {                                                                                 \
            fprintf(stderr, SAMPLE_NAME ": %s failed: %s: %s\n", #call, hpl_error_name(rc_), hpl_last_error()); \
            return rc_;                                                                                      \
        }                                                                                                    \
    } while (0)

/* Appends a device name as one token of the RESULT device list: spaces
 * become '_', commas are dropped (they separate the devices). */
static inline void sample_append_name(char *out, size_t cap, const char *name)
{
    size_t j = strlen(out);
    if (j > 0 && j + 1 < cap)
        out[j++] = ',';
    for (size_t i = 0; name[i] && j + 1 < cap; i++) {
        if (name[i] == ',')
            continue;
        out[j++] = name[i] == ' ' ? '_' : name[i];
    }
    out[j] = '\0';
}

/* The RESULT device list of devices[0 .. count-1]; "none" when empty or
 * on failure. */
static inline int sample_device_list(hpl_context *ctx, const int *devices, int count, char *out, size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < count; i++) {
        hpl_device_info info;
        int rc = hpl_device_get_info(ctx, devices[i], &info);
        if (rc != HPL_OK) {
            snprintf(out, cap, "none");
            fprintf(stderr, SAMPLE_NAME ": hpl_device_get_info failed: %s: %s\n", hpl_error_name(rc), hpl_last_error());
            return rc;
        }
        sample_append_name(out, cap, info.name);
    }
    if (!out[0])
        snprintf(out, cap, "none");
    return HPL_OK;
}

static inline uint64_t sample_min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* The devices the samples split their work over: every device of the
 * context, i.e. the ones HPLVK_DEVICES names ("gpu0,cpu": the GPU and the
 * CPU side by side), or the context's default devices (every GPU, else the
 * CPU). Returns how many went to out[]. */
static inline int sample_devices(hpl_context *ctx, int out[HPL_MAX_DEVICES])
{
    int n = 0, all = hpl_device_count(ctx);
    for (int d = 0; d < all && d < HPL_MAX_DEVICES; d++)
        out[n++] = d;
    return n;
}

/* A launch over sample_devices(). */
static inline hpl_launch sample_launch(hpl_context *ctx)
{
    hpl_launch l = {0};
    l.device_count = sample_devices(ctx, l.devices);
    return l;
}

/* Rows [*lo, *hi) owned by part `index` when `rows` rows are split over
 * `devices` devices as section 7b says: min(rows, devices) parts that
 * differ by at most one row, the larger first. False: no part. */
static inline bool sample_part_rows(uint64_t rows, int devices, int index, uint64_t *lo, uint64_t *hi)
{
    uint64_t parts = devices <= 0 ? 0 : rows < (uint64_t)devices ? rows : (uint64_t)devices;
    if (index < 0 || (uint64_t)index >= parts)
        return false;
    uint64_t i = (uint64_t)index, base = rows / parts, extra = rows % parts;
    *lo = i * base + (i < extra ? i : extra);
    *hi = *lo + base + (i < extra ? 1 : 0);
    return true;
}

/* The stencil samples' last argument, argv[at]: "first" (launch.halos_first)
 * or "after"; absent: first. Takes it off *argc; false, after a message,
 * for any other word. */
static inline bool sample_parse_bands_first(int *argc, char **argv, int at, bool *first)
{
    *first = true;
    if (*argc <= at)
        return true;
    *first = !strcmp(argv[at], "first");
    if (!*first && strcmp(argv[at], "after")) {
        fprintf(stderr, SAMPLE_NAME ": halos '%s' is neither first nor after\n", argv[at]);
        return false;
    }
    *argc = at;
    return true;
}

/* "iterative" -> HPL_BALANCE_ITERATIVE: a balancer by hpl_balance_name's
 * spelling, in any case, from the first len characters of s. */
static inline bool sample_parse_balance(const char *s, size_t len, hpl_balance *out)
{
    for (int b = HPL_BALANCE_NONE; b <= HPL_BALANCE_AUTO_TUNE; b++) {
        const char *name = hpl_balance_name((hpl_balance)b);
        size_t i = 0;
        while (i < len && name[i] && toupper((unsigned char)s[i]) == name[i])
            i++;
        if (i == len && !name[i]) {
            *out = (hpl_balance)b;
            return true;
        }
    }
    return false;
}

static inline bool sample_zero_copy(hpl_context *ctx, int device)
{
    hpl_device_info info;
    return hpl_device_get_info(ctx, device, &info) == HPL_OK && info.zero_copy;
}

/* Bytes one step of a row-split stencil with one halo row on each side
 * (hpl_part1(in, 1), hpl_part1(out, 1)) should move each way. Part j reads
 * its halo rows, the rows next to its owned ones, from the neighbours that
 * wrote them: one row in (to_device) per halo row. Part i's first owned row
 * is read by part i - 1 and its last by part i + 1; each leaves its writer
 * (to_host) once, even when it is both (a one-row part). So with parts of
 * two rows or more, both are two rows per boundary. Zero-copy devices move
 * nothing. Over MPI ranks hpl_stats_get counts this rank's devices only:
 * so do these sums (the rows that cross between ranks go through the
 * hosts, each way once, and still count once on the device that wrote
 * them and once on each device that reads them). */
static inline void sample_halo_expected(hpl_context *ctx, uint64_t rows, uint64_t row_bytes, const int *devices,
                                        int parts, uint64_t *to_host, uint64_t *to_device)
{
    *to_host = *to_device = 0;
    for (int i = 0; i < parts; i++) {
        uint64_t lo, hi;
        if (!sample_part_rows(rows, parts, i, &lo, &hi) || sample_zero_copy(ctx, devices[i]) ||
            !sample_own_device(ctx, devices[i]))
            continue;
        bool above = i > 0, below = i + 1 < parts;
        *to_device += row_bytes * ((uint64_t)above + (uint64_t)below);
        *to_host += row_bytes * ((uint64_t)above + (uint64_t)below - (above && below && hi - lo == 1));
    }
}

/* Bytes a host read of the whole result moves: the rows of the parts on
 * devices with memories of their own (zero-copy ones work on the host's
 * copy); over MPI ranks, this rank's devices' parts (the rest comes from
 * the other ranks' hosts). */
static inline uint64_t sample_result_on_devices(hpl_context *ctx, uint64_t rows, uint64_t row_bytes,
                                                const int *devices, int parts)
{
    uint64_t bytes = 0;
    for (int i = 0; i < parts; i++) {
        uint64_t lo, hi;
        if (sample_part_rows(rows, parts, i, &lo, &hi) && !sample_zero_copy(ctx, devices[i]) &&
            sample_own_device(ctx, devices[i]))
            bytes += (hi - lo) * row_bytes;
    }
    return bytes;
}

/* Prints the halo statistics line of `steps` steps of such a stencil and
 * returns whether the bytes match sample_halo_expected exactly. A device
 * sends the rows its neighbours read with the kernel that writes them
 * (pushes, hplvk.h chapter 7b), so in a window of steps the last step's go
 * before anyone reads them, and the first step's may have gone before the
 * window. with_result: st counts the steps from the first that reads what
 * another device wrote, and the host's read of the result after them:
 * together, the steps moved their halo rows and the read the result, each
 * byte once. Without: st counts steps after others like them (the first
 * step's rows went with the step before), so the steps moved their own
 * halo rows only. */
static inline bool sample_halo_report(hpl_context *ctx, const hpl_stats *st, uint64_t steps, uint64_t rows,
                                      uint64_t row_bytes, const int *devices, int parts, bool with_result)
{
    uint64_t to_host = 0, to_device = 0, want_host, want_device;
    for (int d = 0; d < st->device_count; d++) {
        to_host += st->device[d].to_host_bytes;
        to_device += st->device[d].to_device_bytes;
    }
    sample_halo_expected(ctx, rows, row_bytes, devices, parts, &want_host, &want_device);
    uint64_t result = with_result ? sample_result_on_devices(ctx, rows, row_bytes, devices, parts) : 0;
    uint64_t halo_host = to_host > result ? to_host - result : 0;
    printf("halo: %" PRIu64 " bytes/step to the host, %" PRIu64 " bytes/step to devices; array %" PRIu64
           " bytes; %d part%s\n",
           steps ? halo_host / steps : 0, steps ? to_device / steps : 0, rows * row_bytes, parts,
           parts == 1 ? "" : "s");
    bool ok = to_host == want_host * steps + result && to_device == want_device * steps;
    if (!ok)
        fprintf(stderr,
                SAMPLE_NAME ": halo traffic over %" PRIu64 " steps%s: %" PRIu64
                            " bytes to the host and %" PRIu64 " to devices, expected %" PRIu64 " and %" PRIu64
                            " (rows of %" PRIu64 " bytes, result %" PRIu64 " bytes on devices)\n",
                steps, with_result ? " and the result's read" : "", to_host, to_device, want_host * steps + result,
                want_device * steps, row_bytes, result);
    return ok;
}

#endif
