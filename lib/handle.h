/* Pools of objects addressed by 32-bit handles: slot index in the low 20
 * bits, a generation in the high 12, so a handle to a destroyed object is
 * detected (until the generation wraps after 4095 reuses of one slot).
 * Handle 0 is never valid. */
#ifndef HPL_HANDLE_H
#define HPL_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hpl__slot {
    void *object;     /* NULL: free */
    uint32_t generation;
} hpl__slot;

typedef struct hpl__pool {
    hpl__slot *slots;
    uint32_t count, capacity;
} hpl__pool;

/* Returns the new handle or 0 when out of memory or slots. */
uint32_t hpl__pool_add(hpl__pool *pool, void *object);
/* The object of a live handle, or NULL. */
void *hpl__pool_get(const hpl__pool *pool, uint32_t handle);
/* Frees the slot; returns the object or NULL when the handle is not live. */
void *hpl__pool_remove(hpl__pool *pool, uint32_t handle);
/* Calls fn on every live object (for teardown). */
void hpl__pool_each(hpl__pool *pool, void (*fn)(void *object, void *user), void *user);
void hpl__pool_free(hpl__pool *pool);

#endif
