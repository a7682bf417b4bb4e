/* On-disk caches: compiled SPIR-V and Vulkan pipeline-cache blobs, keyed by
 * 128-bit hashes. A corrupt entry or an unwritable directory is ignored with
 * one warning; the cache never makes an operation fail. */
#ifndef HPL_CACHE_H
#define HPL_CACHE_H

#include "common.h"

typedef struct hpl__hash {
    uint64_t lo, hi;
} hpl__hash;

/* Incremental 128-bit hash (two independent 64-bit lanes). */
typedef struct hpl__hasher {
    uint64_t a, b;
} hpl__hasher;
void hpl__hasher_init(hpl__hasher *h);
void hpl__hasher_add(hpl__hasher *h, const void *data, size_t size);
/* Adds a string including a terminator, so ("ab","c") != ("a","bc"). */
void hpl__hasher_add_str(hpl__hasher *h, const char *s);
hpl__hash hpl__hasher_done(const hpl__hasher *h);

typedef struct hpl__cache {
    char *dir;          /* NULL: disabled */
    hpl__logger logger;
    bool warned;        /* one warning per cache is enough */
} hpl__cache;

/* dir: explicit directory or NULL for HPLVK_CACHE_DIR / XDG / HOME.
 * disabled (or HPLVK_CACHE_DIR=off) leaves the cache off. Never fails
 * except on out-of-memory. */
int hpl__cache_init(hpl__cache *cache, const char *dir, bool disabled, const hpl__logger *logger);
void hpl__cache_destroy(hpl__cache *cache);
/* kind: a short subdirectory name ("spv", "pipeline"). On a hit returns true
 * and a hpl__malloc'd copy of the data (verified against a checksum stored
 * with it); on a miss or a corrupt entry returns false. */
bool hpl__cache_load(hpl__cache *cache, const char *kind, hpl__hash key, void **data, size_t *size);
/* Deletes an entry whose payload loaded fine but that the caller rejects,
 * with a warning naming the file and `why`. */
void hpl__cache_drop(hpl__cache *cache, const char *kind, hpl__hash key, const char *why);
/* Stores atomically (temp file + rename). Failures only warn. */
void hpl__cache_store(hpl__cache *cache, const char *kind, hpl__hash key, const void *data, size_t size);

#endif
