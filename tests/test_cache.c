/* The on-disk caches (hplvk.h chapter 8): compiled SPIR-V under <dir>/spv
 * and pipeline caches saved when a context is destroyed; a second context
 * compiles nothing new; corrupt entries and an unwritable directory are
 * ignored with a warning; an entry whose payload fails validation or
 * reflection is deleted with a warning naming it and rewritten;
 * HPLVK_CACHE_DIR, XDG_CACHE_HOME, "off" and no_disk_cache. Timing is never measured: only files are compared. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700
#include "harness.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N 1000

static const char *src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; float s; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i) * s - 1.0; }\n";

/* ---- file listings ---- */

#define MAX_FILES 256
typedef struct listing {
    int n;
    char *path[MAX_FILES];
} listing;

static listing *cur;

static int collect(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_F && cur->n < MAX_FILES)
        cur->path[cur->n++] = strdup(path);
    return 0;
}

static listing list_files(const char *dir)
{
    listing l = {0};
    cur = &l;
    nftw(dir, collect, 16, FTW_PHYS);
    return l;
}

static void free_listing(listing *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->path[i]);
    l->n = 0;
}

static bool listed(const listing *l, const char *path)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->path[i], path) == 0)
            return true;
    return false;
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    snprintf(s, n, "%s/%s", a, b);
    return s;
}

static void use_kernel(const hpl_context_desc *desc, const char *what);

/* One check: `what` wrote no file into dir (those it wrote are named). */
static void expect_no_files(const char *dir, const char *what)
{
    listing l = list_files(dir);
    CHECK(l.n == 0, "%s still wrote %d files into %s", what, l.n, dir);
    for (int i = 0; i < l.n; i++)
        th_note("written with %s: %s", what, l.path[i]);
    free_listing(&l);
}

/* ---- entries with a sound header around a bad payload ---- */

/* The payload checksum of an entry (lib/base/cache.c: a 56-byte header, the
 * payload's hash at bytes 40..55), recomputed here so that a changed payload
 * passes every check of the cache itself. */
static uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void reseal_entry(unsigned char *entry, size_t size)
{
    uint64_t a = 0xcbf29ce484222325ull, b = 0x9e3779b97f4a7c15ull;
    for (size_t i = 56; i < size; i++) {
        a = (a ^ entry[i]) * 0x100000001b3ull;
        b = (b + entry[i] + 1) * 0xff51afd7ed558ccdull;
        b ^= b >> 29;
    }
    put_le64(entry + 40, fmix64(a));
    put_le64(entry + 48, fmix64(b ^ (a >> 1)));
}


/* The SPIR-V payload's words (host-endian, as the cache stores them). */
static uint32_t word_at(const unsigned char *entry, size_t i)
{
    uint32_t w;
    memcpy(&w, entry + 56 + 4 * i, 4);
    return w;
}

static void set_word(unsigned char *entry, size_t i, uint32_t w)
{
    memcpy(entry + 56 + 4 * i, &w, 4);
}

/* Three payloads that pass the cache's own checks: SPIR-V that SPIRV-Tools
 * rejects (id bound 1), valid SPIR-V that reflection rejects (the argument
 * block moved to descriptor set 1), bytes that are not SPIR-V. Each time
 * the next run deletes the entry with a warning naming it, compiles the
 * kernel again (which works) and writes the same entry again. */
static void bad_payloads(void)
{
    char *dir = th_tmpdir("cache-payload");
    if (!CHECK(dir != NULL, "no temporary directory"))
        return;
    char *spv = join(dir, "spv");
    hpl_context_desc desc = {.devices = "cpu", .cache_dir = dir};
    use_kernel(&desc, "fresh cache for bad payloads");
    listing l = list_files(spv);
    size_t size = 0;
    unsigned char *original = l.n == 1 ? (unsigned char *)th_read_file(l.path[0], &size) : NULL;
    if (!CHECK(original && size > 56 + 20, "%d entries in %s", l.n, spv)) {
        free_listing(&l);
        free(original);
        free(spv);
        free(dir);
        return;
    }
    const char *path = l.path[0];
    const size_t words = (size - 56) / 4;
    static const char *const what[] = {"SPIR-V that SPIRV-Tools rejects", "SPIR-V that reflection rejects",
                                       "not SPIR-V"};
    static const char *const why[] = {"SPIRV-Tools", "set 1", "not SPIR-V"};
    for (int kind = 0; kind < 3; kind++) {
        unsigned char *bad = malloc(size);
        memcpy(bad, original, size);
        bool changed = false;
        if (kind == 0) {
            set_word(bad, 3, 1); /* id bound */
            changed = true;
        } else if (kind == 1) {
            for (size_t i = 5; i < words;) {
                uint32_t w = word_at(bad, i), n = w >> 16;
                if (n == 0 || i + n > words)
                    break;
                if ((w & 0xffff) == 71 /* OpDecorate */ && n == 4 && word_at(bad, i + 2) == 34 /* DescriptorSet */) {
                    set_word(bad, i + 3, 1);
                    changed = true;
                }
                i += n;
            }
        } else {
            for (size_t i = 56; i < size; i++)
                bad[i] = (unsigned char)(i * 131u + 7u);
            changed = true;
        }
        CHECK(changed, "%s: nothing to change in %s", what[kind], path);
        reseal_entry(bad, size);
        CHECK(th_write_file(path, bad, size), "write %s", path);
        free(bad);
        th_take_warnings();
        use_kernel(&desc, what[kind]);
        char warning[2048];
        th_last_warning(warning, sizeof warning);
        int w = th_take_warnings();
        CHECK(w == 1 && strstr(warning, path) && strstr(warning, "deleted") && strstr(warning, why[kind]),
              "%s: %d warning(s), the last: \"%s\" (want one naming %s and \"%s\")", what[kind], w, warning, path,
              why[kind]);
        th_note("%s: %s", what[kind], warning);
        size_t now_size = 0;
        unsigned char *now = (unsigned char *)th_read_file(path, &now_size);
        CHECK(now && now_size == size && memcmp(now, original, size) == 0,
              "%s: the entry %s was not written again (%zu bytes)", what[kind], path, now_size);
        free(now);
        /* And the run after that is quiet. */
        use_kernel(&desc, "after a bad payload");
        CHECK(th_take_warnings() == 0, "%s: warnings on the run after", what[kind]);
    }
    free(original);
    free_listing(&l);
    th_rmtree(dir);
    free(spv);
    free(dir);
}

/* ---- one use of the kernel in a fresh context ---- */

static void use_kernel(const hpl_context_desc *desc, const char *what)
{
    hpl_context *ctx = th_context_desc(desc);
    hpl_kernel k = th_kernel(ctx, src);
    hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0), y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    float *px = th_access(ctx, x, HPL_WRITE);
    if (px)
        for (int i = 0; i < N; i++)
            px[i] = (float)i;
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32(3.0f))));
    const float *py = th_access(ctx, y, HPL_READ);
    if (py) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += py[i] != (float)i * 3.0f - 1.0f;
        CHECK(bad == 0, "%s: %d wrong results", what, bad);
    }
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    hpl_context_destroy(ctx); /* saves the pipeline cache */
}

int main(void)
{
    char *dir = th_tmpdir("cache");
    if (!CHECK(dir != NULL, "no temporary directory"))
        return th_finish(NULL);
    char *spv = join(dir, "spv");

    /* 1. First context: compiles, stores SPIR-V, saves a pipeline cache. */
    {
        hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu", .cache_dir = dir});
        hpl_kernel k = th_kernel(ctx, src);
        listing l = list_files(spv);
        CHECK(l.n >= 1, "no SPIR-V file in %s after compiling a kernel", spv);
        free_listing(&l);
        hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0), y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32(3.0f))));
        const float *py = th_access(ctx, y, HPL_READ);
        if (py)
            CHECK(py[0] == -1.0f && py[N - 1] == -1.0f, "first context: %g", py[0]);
        CHECK_OK(hpl_kernel_destroy(ctx, k));
        hpl_context_destroy(ctx);
        listing all = list_files(dir), s = list_files(spv);
        CHECK(all.n > s.n, "no pipeline cache file in %s after hpl_context_destroy (%d files, all in spv/)", dir,
              all.n);
        for (int i = 0; i < all.n; i++)
            th_note("cache file: %s", all.path[i]);
        free_listing(&all);
        free_listing(&s);
        CHECK(th_take_warnings() == 0, "warnings with a fresh, writable cache");
    }

    /* 2. Second context, same directory: nothing new in spv/. */
    {
        listing before = list_files(spv);
        use_kernel(&(hpl_context_desc){.devices = "cpu", .cache_dir = dir}, "second context");
        listing after = list_files(spv);
        int added = 0;
        for (int i = 0; i < after.n; i++)
            if (!listed(&before, after.path[i])) {
                added++;
                th_note("new file in the SPIR-V cache: %s", after.path[i]);
            }
        CHECK(added == 0, "the second context compiled again: %d new file(s) in %s", added, spv);
        free_listing(&before);
        free_listing(&after);
        CHECK(th_take_warnings() == 0, "warnings with a valid cache");
    }

    /* 3. Every cached file overwritten with garbage: still works, warns. */
    {
        listing all = list_files(dir);
        CHECK(all.n >= 2, "expected SPIR-V and pipeline cache files, found %d", all.n);
        for (int i = 0; i < all.n; i++) {
            struct stat st;
            size_t size = stat(all.path[i], &st) == 0 && st.st_size > 0 ? (size_t)st.st_size : 64;
            unsigned char *junk = malloc(size);
            for (size_t j = 0; j < size; j++)
                junk[j] = (unsigned char)(j * 131u + 7u);
            CHECK(th_write_file(all.path[i], junk, size), "cannot overwrite %s", all.path[i]);
            free(junk);
        }
        free_listing(&all);
        use_kernel(&(hpl_context_desc){.devices = "cpu", .cache_dir = dir}, "corrupt cache");
        int w = th_take_warnings();
        CHECK(w >= 1, "a corrupt cache was used without a warning");
        th_note("corrupt cache: %d warning(s)", w);
        /* Truncated files (shorter than any header). */
        all = list_files(dir);
        for (int i = 0; i < all.n; i++)
            CHECK(th_write_file(all.path[i], "x", 1), "cannot truncate %s", all.path[i]);
        free_listing(&all);
        use_kernel(&(hpl_context_desc){.devices = "cpu", .cache_dir = dir}, "truncated cache");
        CHECK(th_take_warnings() >= 1, "a truncated cache was used without a warning");
    }

    /* 3b. The key covers included files: the same kernel file with a changed
     *     #include "scale.glsl" must not come from the cache. */
    {
        char *kdir = th_tmpdir("cache-inc");
        char *kpath = join(kdir, "k.comp"), *hpath = join(kdir, "scale.glsl");
        const char *ksrc = "#include <hplvk.glsl>\n"
                           "#include \"scale.glsl\"\n"
                           "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; };\n"
                           "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i) * SCALE; }\n";
        CHECK(th_write_file(kpath, ksrc, strlen(ksrc)), "write %s", kpath);
        for (int version = 2; version <= 4; version++) {
            char h[64];
            snprintf(h, sizeof h, "#define SCALE %d.0\n", version);
            CHECK(th_write_file(hpath, h, strlen(h)), "write %s", hpath);
            /* A new context each time, as a new run of the program would be. */
            hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu", .cache_dir = dir});
            hpl_kernel k;
            if (CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.path = kpath}, &k))) {
                hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0), y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
                float *px = th_access(ctx, x, HPL_WRITE);
                if (px)
                    for (int i = 0; i < N; i++)
                        px[i] = (float)i;
                CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y))));
                const float *py = th_access(ctx, y, HPL_READ);
                if (py)
                    CHECK(py[10] == 10.0f * version, "included file changed to SCALE %d.0 but the kernel computed "
                                                     "y[10] = %g (stale SPIR-V from the cache?)",
                          version, py[10]);
                CHECK_OK(hpl_kernel_destroy(ctx, k));
            }
            hpl_context_destroy(ctx);
        }
        CHECK(th_take_warnings() == 0, "warnings while an included file changed");
        th_rmtree(kdir);
        free(kpath);
        free(hpath);
        free(kdir);
    }

    /* 3c. A sound header and checksum around a bad payload. */
    bad_payloads();

    /* 4. A cache directory that cannot be created (under a regular file). */
    {
        char *base = th_tmpdir("cache-bad");
        char *file = join(base, "regular_file");
        CHECK(th_write_file(file, "not a directory", 15), "cannot create %s", file);
        char *bad = join(file, "sub");
        use_kernel(&(hpl_context_desc){.devices = "cpu", .cache_dir = bad}, "uncreatable cache dir");
        CHECK(th_take_warnings() >= 1, "an unusable cache directory (%s) gave no warning", bad);
        th_rmtree(base);
        free(bad);
        free(file);
        free(base);
    }

    /* 5. HPLVK_CACHE_DIR and XDG_CACHE_HOME when desc.cache_dir is NULL. */
    {
        char *envdir = th_tmpdir("cache-env");
        setenv("HPLVK_CACHE_DIR", envdir, 1);
        use_kernel(&(hpl_context_desc){.devices = "cpu"}, "HPLVK_CACHE_DIR");
        listing l = list_files(envdir);
        CHECK(l.n >= 2, "HPLVK_CACHE_DIR=%s: %d cache files there", envdir, l.n);
        free_listing(&l);
        unsetenv("HPLVK_CACHE_DIR");

        char *xdg = th_tmpdir("cache-xdg");
        setenv("XDG_CACHE_HOME", xdg, 1);
        use_kernel(&(hpl_context_desc){.devices = "cpu"}, "XDG_CACHE_HOME");
        char *xdg_hplvk = join(xdg, "hplvk");
        l = list_files(xdg_hplvk);
        CHECK(l.n >= 2, "XDG_CACHE_HOME=%s: %d cache files in %s", xdg, l.n, xdg_hplvk);
        free_listing(&l);

        /* "off" disables the disk cache; so does no_disk_cache. (Only
         * <xdg>/hplvk is looked at: the validation layer keeps its own
         * shader_validation_cache file in XDG_CACHE_HOME.) */
        th_rmtree(xdg);
        CHECK(mkdir(xdg, 0700) == 0, "mkdir %s", xdg);
        setenv("HPLVK_CACHE_DIR", "off", 1);
        use_kernel(&(hpl_context_desc){.devices = "cpu"}, "HPLVK_CACHE_DIR=off");
        expect_no_files(xdg_hplvk, "HPLVK_CACHE_DIR=off");
        unsetenv("HPLVK_CACHE_DIR");
        char *nod = th_tmpdir("cache-none");
        use_kernel(&(hpl_context_desc){.devices = "cpu", .cache_dir = nod, .no_disk_cache = true}, "no_disk_cache");
        expect_no_files(nod, "no_disk_cache");
        unsetenv("XDG_CACHE_HOME");
        CHECK(th_take_warnings() == 0, "warnings with environment-selected caches");
        th_rmtree(envdir);
        th_rmtree(xdg);
        th_rmtree(nod);
        free(envdir);
        free(xdg);
        free(xdg_hplvk);
        free(nod);
    }

    th_rmtree(dir);
    free(spv);
    free(dir);
    return th_finish(NULL);
}
