/* On-disk caches (see cache.h). An entry is <dir>/<kind>/<32 hex digits>.bin:
 *
 *   offset  size  field
 *        0     8  magic "HPLVKCE\0"
 *        8     4  format version (little-endian)
 *       12     4  header size (little-endian)
 *       16     8  payload size in bytes (little-endian)
 *       24    16  key (lo, hi; little-endian), guards against renamed files
 *       40    16  hash of the payload (lo, hi; little-endian)
 *       56     -  payload
 *
 * Writers create a unique temporary file in the same directory and rename()
 * it into place, so concurrent processes see either no entry or a whole one.
 * Readers verify every header field and the payload hash; anything wrong is a
 * miss with one warning naming the file. */
#define _POSIX_C_SOURCE 200809L
#include "cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- hashing */

/* Lane a: FNV-1a 64. Lane b: a multiply/xor-shift mix per byte with another
 * seed and constant (every step a bijection of the state). Both lanes get a
 * murmur3 finaliser at the end, so close inputs give unrelated keys. */
#define FNV_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull
#define MIX_SEED 0x9e3779b97f4a7c15ull
#define MIX_MUL 0xff51afd7ed558ccdull

static uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

void hpl__hasher_init(hpl__hasher *h)
{
    h->a = FNV_BASIS;
    h->b = MIX_SEED;
}

void hpl__hasher_add(hpl__hasher *h, const void *data, size_t size)
{
    const unsigned char *p = data;
    uint64_t a = h->a, b = h->b;
    for (size_t i = 0; i < size; i++) {
        a = (a ^ p[i]) * FNV_PRIME;
        b = (b + p[i] + 1) * MIX_MUL;
        b ^= b >> 29;
    }
    h->a = a;
    h->b = b;
}

void hpl__hasher_add_str(hpl__hasher *h, const char *s)
{
    if (!s) {
        /* NULL differs from "" and from any text (0xff is never UTF-8). */
        static const unsigned char null_marker[2] = {0xff, 0};
        hpl__hasher_add(h, null_marker, sizeof null_marker);
        return;
    }
    hpl__hasher_add(h, s, strlen(s) + 1);
}

hpl__hash hpl__hasher_done(const hpl__hasher *h)
{
    hpl__hash r;
    r.lo = fmix64(h->a);
    r.hi = fmix64(h->b ^ (h->a >> 1));
    return r;
}

static hpl__hash hash_bytes(const void *data, size_t size)
{
    hpl__hasher h;
    hpl__hasher_init(&h);
    hpl__hasher_add(&h, data, size);
    return hpl__hasher_done(&h);
}

/* ------------------------------------------------------------- directories */

static char *join2(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *s = hpl__malloc(na + nb + 2);
    if (!s)
        return NULL;
    memcpy(s, a, na);
    size_t n = na;
    if (n == 0 || s[n - 1] != '/')
        s[n++] = '/';
    memcpy(s + n, b, nb + 1);
    return s;
}

/* mkdir -p. Returns 0 or an errno value. */
static int mkdir_p(const char *path)
{
    char *p = hpl__strdup(path);
    if (!p)
        return ENOMEM;
    int err = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            err = errno;
            break;
        }
        *s = c;
        if (c == '\0')
            break;
    }
    if (!err) {
        struct stat st;
        if (stat(p, &st) != 0)
            err = errno;
        else if (!S_ISDIR(st.st_mode))
            err = ENOTDIR;
    }
    hpl__free(p);
    return err;
}

int hpl__cache_init(hpl__cache *cache, const char *dir, bool disabled, const hpl__logger *logger)
{
    memset(cache, 0, sizeof *cache);
    if (logger)
        cache->logger = *logger;
    if (disabled)
        return HPL_OK;

    const char *env = getenv("HPLVK_CACHE_DIR");
    if (env && strcmp(env, "off") == 0)
        return HPL_OK;
    if (dir && *dir) {
        cache->dir = hpl__strdup(dir);
    } else if (env && *env) {
        cache->dir = hpl__strdup(env);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        /* The XDG spec says a relative XDG_CACHE_HOME is to be ignored. */
        if (xdg && xdg[0] == '/')
            cache->dir = join2(xdg, "hplvk");
        else if (home && *home)
            cache->dir = join2(home, ".cache/hplvk");
        else {
            hpl__log(&cache->logger, HPL_LOG_DEBUG, "no cache directory (HOME is not set): disk caches off");
            return HPL_OK;
        }
    }
    if (!cache->dir)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "cache: out of host memory");
    return HPL_OK;
}

void hpl__cache_destroy(hpl__cache *cache)
{
    if (!cache)
        return;
    hpl__free(cache->dir);
    cache->dir = NULL;
}

/* "<dir>/<kind>" and "<dir>/<kind>/<hex>.bin". */
static char *entry_path(const hpl__cache *cache, const char *kind, hpl__hash key, char **kind_dir)
{
    char name[64];
    snprintf(name, sizeof name, "%016llx%016llx.bin", (unsigned long long)key.hi, (unsigned long long)key.lo);
    char *kd = join2(cache->dir, kind);
    if (!kd)
        return NULL;
    char *path = join2(kd, name);
    if (!path || !kind_dir)
        hpl__free(kd);
    else
        *kind_dir = kd;
    return path;
}

/* ------------------------------------------------------------------ format */

#define ENTRY_MAGIC "HPLVKCE"
#define ENTRY_VERSION 1u
#define ENTRY_HEADER 56u

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void warn_once(hpl__cache *cache, const char *fmt, const char *path, int err)
{
    if (cache->warned)
        return;
    cache->warned = true;
    hpl__log(&cache->logger, HPL_LOG_WARNING, fmt, path, strerror(err));
}

bool hpl__cache_load(hpl__cache *cache, const char *kind, hpl__hash key, void **data, size_t *size)
{
    if (!cache || !cache->dir || !kind)
        return false;
    char *path = entry_path(cache, kind, key, NULL);
    if (!path)
        return false;

    bool hit = false;
    unsigned char *buf = NULL;
    const char *problem = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno != ENOENT && errno != ENOTDIR)
            warn_once(cache, "cannot read cache entry %s: %s (caching on disk may not work)", path, errno);
        goto out;
    }
    unsigned char hdr[ENTRY_HEADER];
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        problem = "not a regular file";
        goto out;
    }
    if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr) {
        problem = "truncated header";
        goto out;
    }
    if (memcmp(hdr, ENTRY_MAGIC, 8) != 0) {
        problem = "bad magic";
        goto out;
    }
    if (get_u32(hdr + 8) != ENTRY_VERSION || get_u32(hdr + 12) != ENTRY_HEADER) {
        problem = "unknown format version";
        goto out;
    }
    uint64_t psize = get_u64(hdr + 16);
    if (get_u64(hdr + 24) != key.lo || get_u64(hdr + 32) != key.hi) {
        problem = "key does not match the file name";
        goto out;
    }
    if ((uint64_t)st.st_size != ENTRY_HEADER + psize || (uint64_t)(size_t)psize != psize) {
        problem = "size does not match the header";
        goto out;
    }
    buf = hpl__malloc((size_t)psize);
    if (!buf)
        goto out; /* out of memory: a quiet miss */
    if (fread(buf, 1, (size_t)psize, f) != (size_t)psize) {
        problem = "truncated payload";
        goto out;
    }
    hpl__hash ph = hash_bytes(buf, (size_t)psize);
    if (ph.lo != get_u64(hdr + 40) || ph.hi != get_u64(hdr + 48)) {
        problem = "checksum mismatch";
        goto out;
    }
    hit = true;
    *data = buf;
    *size = (size_t)psize;
    buf = NULL;
out:
    if (f)
        fclose(f);
    if (problem)
        hpl__log(&cache->logger, HPL_LOG_WARNING, "ignoring corrupt cache entry %s (%s)", path, problem);
    hpl__free(buf);
    hpl__free(path);
    return hit;
}

void hpl__cache_drop(hpl__cache *cache, const char *kind, hpl__hash key, const char *why)
{
    if (!cache || !cache->dir || !kind)
        return;
    char *path = entry_path(cache, kind, key, NULL);
    if (!path)
        return;
    if (unlink(path) != 0 && errno != ENOENT)
        hpl__log(&cache->logger, HPL_LOG_WARNING, "bad cache entry %s: %s; cannot delete it: %s", path, why,
                 strerror(errno));
    else
        hpl__log(&cache->logger, HPL_LOG_WARNING, "deleted bad cache entry %s: %s", path, why);
    hpl__free(path);
}

void hpl__cache_store(hpl__cache *cache, const char *kind, hpl__hash key, const void *data, size_t size)
{
    if (!cache || !cache->dir || !kind || (!data && size))
        return;
    char *kind_dir = NULL;
    char *path = entry_path(cache, kind, key, &kind_dir);
    char *tmp = NULL;
    int fd = -1;
    if (!path)
        goto out;
    int err = mkdir_p(kind_dir);
    if (err) {
        warn_once(cache, "cannot create cache directory %s: %s (continuing without a disk cache)", kind_dir, err);
        goto out;
    }
    size_t n = strlen(path);
    tmp = hpl__malloc(n + 16);
    if (!tmp)
        goto out;
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp.XXXXXX", 12);
    fd = mkstemp(tmp);
    if (fd < 0) {
        hpl__free(tmp);
        tmp = NULL;
        warn_once(cache, "cannot write to cache directory %s: %s (continuing without a disk cache)", kind_dir,
                  errno);
        goto out;
    }

    unsigned char hdr[ENTRY_HEADER];
    memcpy(hdr, ENTRY_MAGIC, 8);
    put_u32(hdr + 8, ENTRY_VERSION);
    put_u32(hdr + 12, ENTRY_HEADER);
    put_u64(hdr + 16, (uint64_t)size);
    put_u64(hdr + 24, key.lo);
    put_u64(hdr + 32, key.hi);
    hpl__hash ph = hash_bytes(data, size);
    put_u64(hdr + 40, ph.lo);
    put_u64(hdr + 48, ph.hi);

    const unsigned char *parts[2] = {hdr, data};
    size_t lens[2] = {sizeof hdr, size};
    for (int i = 0; i < 2; i++) {
        size_t done = 0;
        while (done < lens[i]) {
            ssize_t w = write(fd, parts[i] + done, lens[i] - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                warn_once(cache, "cannot write cache entry %s: %s (continuing without a disk cache)", tmp,
                          w < 0 ? errno : ENOSPC);
                goto out;
            }
            done += (size_t)w;
        }
    }
    if (close(fd) != 0) {
        fd = -1;
        warn_once(cache, "cannot write cache entry %s: %s (continuing without a disk cache)", tmp, errno);
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        warn_once(cache, "cannot rename cache entry into %s: %s (continuing without a disk cache)", path, errno);
        goto out;
    }
    hpl__free(tmp);
    tmp = NULL;
out:
    if (fd >= 0)
        close(fd);
    if (tmp) {
        unlink(tmp);
        hpl__free(tmp);
    }
    hpl__free(path);
    hpl__free(kind_dir);
}
