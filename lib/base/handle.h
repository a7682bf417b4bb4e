/* Pools of objects addressed by 64-bit handles (the id of hpl_array and
 * hpl_kernel), laid out as
 *
 *   bits 63..40  serial of the context that made the handle (24 bits)
 *   bits 39..20  generation of the slot (20 bits, 1..2^20-1)
 *   bits 19..0   slot index (20 bits)
 *
 * A lookup checks all three: a handle made by another context (its serial
 * differs: every context of the process gets its own, never reused), a
 * handle whose object was destroyed (its generation is older than the
 * slot's, or the slot is free) and one that was never made here are told
 * apart, and never reach an object. A slot whose generation reaches the
 * maximum is retired when freed instead of wrapping, so a stale handle can
 * never become valid again. Handle 0 (a zero-initialised hpl_array) is never
 * valid: serials and generations start at 1. */
#ifndef HPL_HANDLE_H
#define HPL_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t hpl__handle;

#define HPL__HANDLE_INDEX_BITS 20u
#define HPL__HANDLE_GENERATION_BITS 20u
#define HPL__HANDLE_SERIAL_BITS 24u
#define HPL__HANDLE_SERIAL_MAX ((1u << HPL__HANDLE_SERIAL_BITS) - 1u)
#define HPL__HANDLE_GENERATION_MAX ((1u << HPL__HANDLE_GENERATION_BITS) - 1u)
#define HPL__HANDLE_INDEX_MAX ((1u << HPL__HANDLE_INDEX_BITS) - 1u) /* slots per pool */

typedef struct hpl__slot {
    void *object;        /* NULL: free (or retired) */
    uint32_t generation; /* of the last handle given out; MAX and free: retired */
} hpl__slot;

typedef struct hpl__pool {
    hpl__slot *slots;
    uint32_t count, capacity;
    uint32_t hint;   /* no slot below it is free: where add starts looking */
    uint32_t serial; /* the owning context's; 0: not initialised (every lookup fails) */
} hpl__pool;

/* Why a handle does not name a live object of the pool. */
typedef enum hpl__handle_state {
    HPL__HANDLE_LIVE = 0,
    HPL__HANDLE_NULL,    /* 0: zero-initialised, never created */
    HPL__HANDLE_FOREIGN, /* made by another context (alive or destroyed) */
    HPL__HANDLE_STALE,   /* made here; its object was destroyed */
    HPL__HANDLE_UNKNOWN, /* carries this context's serial but was never given out */
} hpl__handle_state;

/* A new context serial, 1..HPL__HANDLE_SERIAL_MAX, never the same twice in
 * the process (thread-safe); 0 once they are all used. */
uint32_t hpl__handle_serial_next(void);

/* An empty pool whose handles carry serial. */
void hpl__pool_init(hpl__pool *pool, uint32_t serial);
/* Returns the new handle or 0 when out of memory or slots. */
hpl__handle hpl__pool_add(hpl__pool *pool, void *object);
/* The object of a live handle, or NULL. */
void *hpl__pool_get(const hpl__pool *pool, hpl__handle handle);
/* What is wrong with a handle (HPL__HANDLE_LIVE: nothing). */
hpl__handle_state hpl__pool_check(const hpl__pool *pool, hpl__handle handle);
/* Records (hpl__fail) HPL_ERROR_INVALID_HANDLE with a message saying why the
 * `kind` ("array", "kernel") handle is not live in this pool; returns the
 * code. */
int hpl__pool_fail(const hpl__pool *pool, hpl__handle handle, const char *kind);
/* Frees the slot; returns the object or NULL when the handle is not live. */
void *hpl__pool_remove(hpl__pool *pool, hpl__handle handle);
/* Calls fn on every live object (for teardown). */
void hpl__pool_each(hpl__pool *pool, void (*fn)(void *object, void *user), void *user);
/* Frees the slots; the pool keeps its serial (and stays usable). */
void hpl__pool_free(hpl__pool *pool);

/* The fields of a handle (for messages and tests). */
static inline uint32_t hpl__handle_serial(hpl__handle h)
{
    return (uint32_t)(h >> (HPL__HANDLE_INDEX_BITS + HPL__HANDLE_GENERATION_BITS));
}
static inline uint32_t hpl__handle_generation(hpl__handle h)
{
    return (uint32_t)(h >> HPL__HANDLE_INDEX_BITS) & HPL__HANDLE_GENERATION_MAX;
}
static inline uint32_t hpl__handle_index(hpl__handle h)
{
    return (uint32_t)h & HPL__HANDLE_INDEX_MAX;
}
static inline hpl__handle hpl__handle_make(uint32_t serial, uint32_t generation, uint32_t index)
{
    return ((hpl__handle)serial << (HPL__HANDLE_INDEX_BITS + HPL__HANDLE_GENERATION_BITS)) |
           ((hpl__handle)generation << HPL__HANDLE_INDEX_BITS) | index;
}

#endif
