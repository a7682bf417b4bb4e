/* Generation-checked handle pools. See handle.h. */
#include "handle.h"

#include "common.h"

#define INDEX_BITS 20u
#define INDEX_MASK ((1u << INDEX_BITS) - 1u)
#define GENERATION_MAX ((1u << (32u - INDEX_BITS)) - 1u)

static uint32_t make_handle(uint32_t index, uint32_t generation)
{
    return (generation << INDEX_BITS) | index;
}

uint32_t hpl__pool_add(hpl__pool *pool, void *object)
{
    uint32_t index = 0;
    while (index < pool->count && pool->slots[index].object)
        index++;
    if (index == pool->count) {
        if (pool->count == INDEX_MASK)
            return 0;
        if (pool->count == pool->capacity) {
            uint32_t cap = pool->capacity ? pool->capacity * 2 : 16;
            hpl__slot *slots = hpl__realloc(pool->slots, cap * sizeof *slots);
            if (!slots)
                return 0;
            pool->slots = slots;
            pool->capacity = cap;
        }
        pool->slots[pool->count++] = (hpl__slot){NULL, 0};
    }
    hpl__slot *s = &pool->slots[index];
    s->generation = s->generation >= GENERATION_MAX ? 1 : s->generation + 1;
    s->object = object;
    return make_handle(index, s->generation);
}

static hpl__slot *slot_of(const hpl__pool *pool, uint32_t handle)
{
    uint32_t index = handle & INDEX_MASK;
    if (handle == 0 || index >= pool->count)
        return NULL;
    hpl__slot *s = &pool->slots[index];
    if (!s->object || s->generation != handle >> INDEX_BITS)
        return NULL;
    return s;
}

void *hpl__pool_get(const hpl__pool *pool, uint32_t handle)
{
    hpl__slot *s = slot_of(pool, handle);
    return s ? s->object : NULL;
}

void *hpl__pool_remove(hpl__pool *pool, uint32_t handle)
{
    hpl__slot *s = slot_of(pool, handle);
    if (!s)
        return NULL;
    void *object = s->object;
    s->object = NULL;
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
    *pool = (hpl__pool){0};
}
