/* Generation- and context-checked handle pools. See handle.h. */
#include "handle.h"

#include "common.h"

#include <inttypes.h>
#include <stdatomic.h>

/* The one piece of process-wide state: the last context serial given out. */
static atomic_uint last_serial;

uint32_t hpl__handle_serial_next(void)
{
    unsigned s = atomic_load(&last_serial);
    do {
        if (s >= HPL__HANDLE_SERIAL_MAX)
            return 0;
    } while (!atomic_compare_exchange_weak(&last_serial, &s, s + 1));
    return s + 1;
}

void hpl__pool_init(hpl__pool *pool, uint32_t serial)
{
    *pool = (hpl__pool){.serial = serial};
}

static bool retired(const hpl__slot *s)
{
    return !s->object && s->generation == HPL__HANDLE_GENERATION_MAX;
}

hpl__handle hpl__pool_add(hpl__pool *pool, void *object)
{
    if (pool->serial == 0)
        return 0;
    uint32_t index = pool->hint;
    while (index < pool->count && (pool->slots[index].object || retired(&pool->slots[index])))
        index++;
    if (index == pool->count) {
        if (pool->count == HPL__HANDLE_INDEX_MAX)
            return 0;
        if (pool->count == pool->capacity) {
            uint32_t cap = pool->capacity ? pool->capacity * 2 : 16;
            if (cap > HPL__HANDLE_INDEX_MAX)
                cap = HPL__HANDLE_INDEX_MAX;
            hpl__slot *slots = hpl__realloc(pool->slots, cap * sizeof *slots);
            if (!slots)
                return 0;
            pool->slots = slots;
            pool->capacity = cap;
        }
        pool->slots[pool->count++] = (hpl__slot){NULL, 0};
    }
    hpl__slot *s = &pool->slots[index];
    s->generation++;
    s->object = object;
    pool->hint = index + 1;
    return hpl__handle_make(pool->serial, s->generation, index);
}

hpl__handle_state hpl__pool_check(const hpl__pool *pool, hpl__handle handle)
{
    if (handle == 0)
        return HPL__HANDLE_NULL;
    if (pool->serial == 0 || hpl__handle_serial(handle) != pool->serial)
        return HPL__HANDLE_FOREIGN;
    uint32_t index = hpl__handle_index(handle), generation = hpl__handle_generation(handle);
    if (index >= pool->count || generation == 0 || generation > pool->slots[index].generation)
        return HPL__HANDLE_UNKNOWN;
    const hpl__slot *s = &pool->slots[index];
    return s->object && s->generation == generation ? HPL__HANDLE_LIVE : HPL__HANDLE_STALE;
}

void *hpl__pool_get(const hpl__pool *pool, hpl__handle handle)
{
    return hpl__pool_check(pool, handle) == HPL__HANDLE_LIVE ? pool->slots[hpl__handle_index(handle)].object : NULL;
}

int hpl__pool_fail(const hpl__pool *pool, hpl__handle handle, const char *kind)
{
    switch (hpl__pool_check(pool, handle)) {
    case HPL__HANDLE_LIVE:
        break;
    case HPL__HANDLE_NULL:
        return hpl__fail(HPL_ERROR_INVALID_HANDLE, "%s handle 0 is null (zero-initialised, never created)", kind);
    case HPL__HANDLE_FOREIGN:
        return hpl__fail(HPL_ERROR_INVALID_HANDLE,
                         "%s handle %#" PRIx64 " belongs to another context (context #%" PRIu32
                         ", this one is #%" PRIu32 "; that one may be destroyed already)",
                         kind, handle, hpl__handle_serial(handle), pool->serial);
    case HPL__HANDLE_STALE:
        return hpl__fail(HPL_ERROR_INVALID_HANDLE, "%s handle %#" PRIx64 " is stale: its %s was destroyed", kind,
                         handle, kind);
    case HPL__HANDLE_UNKNOWN:
        return hpl__fail(HPL_ERROR_INVALID_HANDLE, "%s handle %#" PRIx64 " was never created in this context", kind,
                         handle);
    }
    return hpl__fail(HPL_ERROR_INTERNAL, "%s handle %#" PRIx64 " is live but was reported as invalid", kind, handle);
}

void *hpl__pool_remove(hpl__pool *pool, hpl__handle handle)
{
    if (hpl__pool_check(pool, handle) != HPL__HANDLE_LIVE)
        return NULL;
    hpl__slot *s = &pool->slots[hpl__handle_index(handle)];
    void *object = s->object;
    s->object = NULL; /* at HPL__HANDLE_GENERATION_MAX the slot stays retired */
    if (hpl__handle_index(handle) < pool->hint)
        pool->hint = hpl__handle_index(handle);
    return object;
}

void hpl__pool_each(hpl__pool *pool, void (*fn)(void *object, void *user), void *user)
{
    for (uint32_t i = 0; i < pool->count; i++)
        if (pool->slots[i].object)
            fn(pool->slots[i].object, user);
}

void hpl__pool_free(hpl__pool *pool)
{
    hpl__free(pool->slots);
    hpl__pool_init(pool, pool->serial);
}
