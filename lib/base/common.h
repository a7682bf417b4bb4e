/* Internal base shared by every module: error reporting, logging, host
 * allocation. Free of Vulkan so the pure modules (region, coherence, devspec)
 * can use it. Internal names use the hpl__ prefix. */
#ifndef HPL_COMMON_H
#define HPL_COMMON_H

#define HPLVK_BUILDING 1
#include "hplvk.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define HPL__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define HPL__MIN(a, b) ((a) < (b) ? (a) : (b))
#define HPL__MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#define HPL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HPL__PRINTF(f, a)
#endif

/* Records "message" as this thread's last error and returns code, so a
 * failing path reads: return hpl__fail(HPL_ERROR_DIMENSIONS, "dims[%d] is 0", i); */
int hpl__fail(int code, const char *fmt, ...) HPL__PRINTF(2, 3);
int hpl__vfail(int code, const char *fmt, va_list ap);
/* Prefixes this thread's last error with "prefix: " (adds context on the way up). */
void hpl__error_prefix(const char *prefix);
/* How many failures this thread has recorded (hpl__fail): whether a call
 * made meanwhile failed, so that the last message is its. */
unsigned hpl__error_count(void);

typedef struct hpl__logger {
    hpl_log_fn fn; /* NULL: WARNING and above to stderr */
    void *user;
} hpl__logger;
void hpl__log(const hpl__logger *logger, hpl_log_level level, const char *fmt, ...) HPL__PRINTF(3, 4);

/* Every host allocation of the library goes through these (one point for
 * fault injection). hpl__strdup(NULL) returns NULL. */
/* Fault injection for the tests (unit_host_oom; neither the public API nor
 * the environment reaches it): the host allocation this many from now
 * (hpl__malloc, calloc, realloc) fails, once; < 0 (the default): none. */
extern int hpl__fault_host_alloc;
void *hpl__malloc(size_t size);
void *hpl__calloc(size_t count, size_t size);
void *hpl__realloc(void *p, size_t size);
void hpl__free(void *p);
char *hpl__strdup(const char *s);
/* Room in a FIFO of `count` items of `size` bytes, kept circularly in
 * *items (*capacity of them, the oldest at *head), for `more` more: a
 * larger array (doubled from 16), the items moved to its start. False when
 * out of memory (nothing changed). */
bool hpl__fifo_room(void **items, size_t size, uint32_t *head, uint32_t count, uint32_t *capacity, uint32_t more);

/* Overflow-checked arithmetic: return false on overflow. */
static inline bool hpl__mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool hpl__add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* snprintf at buf + at that keeps counting after a truncation without
 * overrunning: returns at plus what was (or would have been) written, so a
 * chain of appends gives the length a full buffer needs. buf may be NULL
 * with size 0. */
int hpl__append(char *buf, size_t size, int at, const char *fmt, ...) HPL__PRINTF(4, 5);

/* Monotonic clock in nanoseconds. */
uint64_t hpl__now_ns(void);
/* The same clock read coarsely (to a few ms), in a few ns instead of ~20:
 * for stamps on the eval path that only seconds are compared against. */
uint64_t hpl__now_coarse_ns(void);

#endif
