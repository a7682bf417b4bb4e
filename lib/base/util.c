#define _POSIX_C_SOURCE 200809L /* clock_gettime */
/* Host allocation (the one point every allocation goes through), logging and
 * the clock. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int hpl__fault_host_alloc = -1;

/* Whether this allocation is the one hpl__fault_host_alloc counts down to. */
static bool fault_now(void)
{
    if (__atomic_load_n(&hpl__fault_host_alloc, __ATOMIC_RELAXED) < 0)
        return false;
    return __atomic_sub_fetch(&hpl__fault_host_alloc, 1, __ATOMIC_RELAXED) == -1;
}

void *hpl__malloc(size_t size)
{
    return fault_now() ? NULL : malloc(size ? size : 1);
}

void *hpl__calloc(size_t count, size_t size)
{
    return fault_now() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *hpl__realloc(void *p, size_t size)
{
    return fault_now() ? NULL : realloc(p, size ? size : 1);
}

void hpl__free(void *p)
{
    free(p);
}

char *hpl__strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = hpl__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

bool hpl__fifo_room(void **items, size_t size, uint32_t *head, uint32_t count, uint32_t *capacity, uint32_t more)
{
    if (count + more <= *capacity)
        return true;
    uint32_t cap = *capacity ? *capacity : 16;
    while (cap < count + more)
        cap *= 2;
    uint8_t *grown = hpl__malloc((size_t)cap * size);
    if (!grown)
        return false;
    const uint8_t *old = *items;
    for (uint32_t i = 0; i < count; i++)
        memcpy(grown + i * size, old + (size_t)((*head + i) % *capacity) * size, size);
    hpl__free(*items);
    *items = grown;
    *capacity = cap;
    *head = 0;
    return true;
}

void hpl__log(const hpl__logger *logger, hpl_log_level level, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (logger && logger->fn) {
        logger->fn(logger->user, level, msg);
        return;
    }
    if (level >= HPL_LOG_WARNING)
        fprintf(stderr, "hplvk: %s: %s\n", level == HPL_LOG_WARNING ? "warning" : "error", msg);
}

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t hpl__now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

uint64_t hpl__now_coarse_ns(void)
{
#ifdef CLOCK_MONOTONIC_COARSE
    return clock_ns(CLOCK_MONOTONIC_COARSE);
#else
    return clock_ns(CLOCK_MONOTONIC);
#endif
}

int hpl__append(char *buf, size_t size, int at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t used = (size_t)at < size ? (size_t)at : size;
    int n = vsnprintf(buf ? buf + used : NULL, size - used, fmt, ap);
    va_end(ap);
    return n < 0 ? at : at + n;
}
