/* Unit test of the kernel front end: lib/base/cache.c, lib/base/compile.c and
 * lib/base/reflect.c (GLSL -> SPIR-V through the disk cache, and the argument
 * reflection of the kernel ABI). No Vulkan device needed.
 * Exit status 0 when every check passed; every failed check is printed. */
#define _XOPEN_SOURCE 700
#include "cache.h"
#include "compile.h"
#include "reflect.h"
#include "validate.h"

#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures, checks;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        checks++;                                                          \
        if (!(cond)) {                                                     \
            failures++;                                                    \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);         \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)

/* ------------------------------------------------------------------ helpers */

typedef struct log_capture {
    int warnings;
    int others;
    char last[2048];
} log_capture;

static void capture_log(void *user, hpl_log_level level, const char *message)
{
    log_capture *c = user;
    if (level == HPL_LOG_WARNING) {
        c->warnings++;
        snprintf(c->last, sizeof c->last, "%s", message);
    } else {
        c->others++;
    }
}

static char tmp_root[256];

/* A path under the test's temporary directory, in a ring of buffers: valid
 * for the next 256 calls (tests keep some in include-dir lists). */
static char *tmp_path(const char *rel)
{
    static char bufs[256][512];
    static int next;
    char *b = bufs[next++ % 256];
    snprintf(b, 512, "%s/%s", tmp_root, rel);
    return b;
}

static void write_text(const char *path, const char *text)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *s = dir + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            mkdir(dir, 0777);
            *s = '/';
        }
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        printf("FATAL: cannot write %s\n", path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void rm_rf(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The files in dir (not recursive), excluding dot files; first name in *first. */
static int count_files(const char *dir, char *first, size_t first_size)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n++ == 0 && first)
            snprintf(first, first_size, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return n;
}

typedef struct compile_args {
    const char *name;
    const char *const *defines;
    const char *const *include_dirs;
    const char *source_dir;
    hpl__cache *cache;
} compile_args;

static int compile(const char *src, const compile_args *a, uint32_t **spv, size_t *words, bool *hit)
{
    hpl__compile_input in = {
        .glsl = src,
        .name = a && a->name ? a->name : "k.comp",
        .defines = a ? a->defines : NULL,
        .include_dirs = a ? a->include_dirs : NULL,
        .source_dir = a ? a->source_dir : NULL,
    };
    *spv = NULL;
    *words = 0;
    return hpl__compile_glsl(&in, a ? a->cache : NULL, spv, words, hit);
}

/* Compiles without a cache and reflects; prints the error on failure. */
static int compile_reflect(const char *src, const compile_args *a, hpl__reflection *r)
{
    uint32_t *spv;
    size_t words;
    bool hit;
    int rc = compile(src, a, &spv, &words, &hit);
    if (rc)
        return rc;
    rc = hpl__reflect(spv, words, r);
    hpl__free(spv);
    return rc;
}

static uint32_t align_up(uint32_t v, uint32_t a)
{
    return (v + a - 1) / a * a;
}

static double ms_since(uint64_t t0)
{
    return (double)(hpl__now_ns() - t0) / 1e6;
}

/* ------------------------------------------------------------------- hashing */

static void test_hash(void)
{
    hpl__hasher h1, h2;
    hpl__hasher_init(&h1);
    hpl__hasher_add(&h1, "ab", 2);
    hpl__hasher_add(&h1, "c", 1);
    hpl__hasher_init(&h2);
    hpl__hasher_add(&h2, "abc", 3);
    hpl__hash a = hpl__hasher_done(&h1), b = hpl__hasher_done(&h2);
    CHECK(a.lo == b.lo && a.hi == b.hi, "streaming must not depend on chunking");
    CHECK(a.lo != a.hi, "the two lanes must differ");

    hpl__hasher_init(&h1);
    hpl__hasher_add_str(&h1, "ab");
    hpl__hasher_add_str(&h1, "c");
    hpl__hasher_init(&h2);
    hpl__hasher_add_str(&h2, "a");
    hpl__hasher_add_str(&h2, "bc");
    a = hpl__hasher_done(&h1);
    b = hpl__hasher_done(&h2);
    CHECK(a.lo != b.lo && a.hi != b.hi, "(ab,c) must differ from (a,bc)");

    hpl__hasher_init(&h1);
    hpl__hasher_add_str(&h1, NULL);
    hpl__hasher_init(&h2);
    hpl__hasher_add_str(&h2, "");
    a = hpl__hasher_done(&h1);
    b = hpl__hasher_done(&h2);
    CHECK(a.lo != b.lo, "NULL must differ from \"\"");

    /* One flipped bit changes about half of each lane. */
    unsigned char buf[64] = {0};
    hpl__hasher_init(&h1);
    hpl__hasher_add(&h1, buf, sizeof buf);
    buf[17] ^= 4;
    hpl__hasher_init(&h2);
    hpl__hasher_add(&h2, buf, sizeof buf);
    a = hpl__hasher_done(&h1);
    b = hpl__hasher_done(&h2);
    int dlo = __builtin_popcountll(a.lo ^ b.lo), dhi = __builtin_popcountll(a.hi ^ b.hi);
    CHECK(dlo > 12 && dlo < 52 && dhi > 12 && dhi < 52, "poor avalanche: %d / %d bits", dlo, dhi);
}

/* --------------------------------------------------------------- cache: API */

static void set_env(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

static void test_cache_dirs(void)
{
    char *saved[3];
    const char *names[3] = {"HPLVK_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
    for (int i = 0; i < 3; i++)
        saved[i] = hpl__strdup(getenv(names[i]));

    hpl__cache c;
    set_env("HPLVK_CACHE_DIR", NULL);
    set_env("XDG_CACHE_HOME", NULL);
    set_env("HOME", "/h");
    hpl__cache_init(&c, NULL, false, NULL);
    CHECK(c.dir && strcmp(c.dir, "/h/.cache/hplvk") == 0, "HOME: %s", c.dir ? c.dir : "(null)");
    hpl__cache_destroy(&c);

    set_env("XDG_CACHE_HOME", "/x");
    hpl__cache_init(&c, NULL, false, NULL);
    CHECK(c.dir && strcmp(c.dir, "/x/hplvk") == 0, "XDG: %s", c.dir ? c.dir : "(null)");
    hpl__cache_destroy(&c);

    set_env("HPLVK_CACHE_DIR", "/e");
    hpl__cache_init(&c, NULL, false, NULL);
    CHECK(c.dir && strcmp(c.dir, "/e") == 0, "env: %s", c.dir ? c.dir : "(null)");
    hpl__cache_destroy(&c);

    hpl__cache_init(&c, "/explicit", false, NULL);
    CHECK(c.dir && strcmp(c.dir, "/explicit") == 0, "explicit: %s", c.dir ? c.dir : "(null)");
    hpl__cache_destroy(&c);

    hpl__cache_init(&c, "/explicit", true, NULL);
    CHECK(c.dir == NULL, "disabled must leave the cache off");
    hpl__cache_destroy(&c);

    set_env("HPLVK_CACHE_DIR", "off");
    hpl__cache_init(&c, NULL, false, NULL);
    CHECK(c.dir == NULL, "HPLVK_CACHE_DIR=off must disable: %s", c.dir ? c.dir : "(null)");
    hpl__cache_destroy(&c);
    hpl__cache_init(&c, "/explicit", false, NULL);
    CHECK(c.dir == NULL, "HPLVK_CACHE_DIR=off must disable even with a directory");
    hpl__cache_destroy(&c);

    for (int i = 0; i < 3; i++) {
        set_env(names[i], saved[i]);
        hpl__free(saved[i]);
    }

    /* A disabled cache: loads miss, stores do nothing, nothing warns. */
    log_capture log = {0};
    hpl__logger logger = {capture_log, &log};
    hpl__cache_init(&c, NULL, true, &logger);
    hpl__hash k = {1, 2};
    void *data = NULL;
    size_t size = 0;
    hpl__cache_store(&c, "spv", k, "x", 1);
    CHECK(!hpl__cache_load(&c, "spv", k, &data, &size), "disabled cache hit");
    CHECK(log.warnings == 0, "disabled cache warned: %s", log.last);
    hpl__cache_destroy(&c);
}

static void test_cache_api(void)
{
    log_capture log = {0};
    hpl__logger logger = {capture_log, &log};
    hpl__cache c;
    hpl__cache_init(&c, tmp_path("api/deeper/cache"), false, &logger);

    hpl__hash k1 = {0x1111, 0x2222}, k2 = {0x1111, 0x2223};
    void *data = NULL;
    size_t size = 0;
    CHECK(!hpl__cache_load(&c, "spv", k1, &data, &size), "empty cache hit");
    CHECK(log.warnings == 0, "a plain miss warned: %s", log.last);

    const char payload[] = "some payload bytes";
    hpl__cache_store(&c, "spv", k1, payload, sizeof payload);
    CHECK(log.warnings == 0, "store warned: %s", log.last);
    CHECK(hpl__cache_load(&c, "spv", k1, &data, &size), "stored entry missed");
    CHECK(data && size == sizeof payload && memcmp(data, payload, size) == 0, "payload differs");
    hpl__free(data);
    data = NULL;
    CHECK(!hpl__cache_load(&c, "spv", k2, &data, &size), "another key hit");
    CHECK(!hpl__cache_load(&c, "pipeline", k1, &data, &size), "another kind hit");

    /* Empty payload round-trips. */
    hpl__cache_store(&c, "pipeline", k2, NULL, 0);
    CHECK(hpl__cache_load(&c, "pipeline", k2, &data, &size) && size == 0, "empty payload");
    hpl__free(data);
    data = NULL;

    /* Entry file name: <dir>/<kind>/<32 hex>.bin. */
    char expect[512];
    snprintf(expect, sizeof expect, "%s/spv/%016llx%016llx.bin", c.dir, (unsigned long long)k1.hi,
             (unsigned long long)k1.lo);
    struct stat st;
    CHECK(stat(expect, &st) == 0 && S_ISREG(st.st_mode), "no entry at %s", expect);
    char first[512];
    CHECK(count_files(tmp_path("api/deeper/cache/spv"), first, sizeof first) == 1, "stray files (temp files?)");

    /* An entry copied under another key's name is detected (key check). */
    char other[512];
    snprintf(other, sizeof other, "%s/spv/%016llx%016llx.bin", c.dir, (unsigned long long)k2.hi,
             (unsigned long long)k2.lo);
    CHECK(link(expect, other) == 0, "link");
    int w0 = log.warnings;
    CHECK(!hpl__cache_load(&c, "spv", k2, &data, &size), "renamed entry hit");
    CHECK(log.warnings == w0 + 1 && strstr(log.last, other), "renamed entry: %d warnings, last: %s",
          log.warnings - w0, log.last);

    /* A truncated entry. */
    CHECK(truncate(expect, 30) == 0, "truncate");
    w0 = log.warnings;
    CHECK(!hpl__cache_load(&c, "spv", k1, &data, &size), "truncated entry hit");
    CHECK(log.warnings == w0 + 1 && strstr(log.last, expect), "truncated entry: %d warnings, last: %s",
          log.warnings - w0, log.last);
    hpl__cache_destroy(&c);
}

/* Several threads store and load the same keys at once: a load sees no entry
 * or a whole one, never a torn one (temp file + rename). */
#define RACE_THREADS 8
#define RACE_ROUNDS 40
static const char *race_dir;
static int race_torn, race_warnings;

static void *race_thread(void *arg)
{
    int id = (int)(size_t)arg;
    log_capture log = {0};
    hpl__logger logger = {capture_log, &log};
    hpl__cache c;
    hpl__cache_init(&c, race_dir, false, &logger);
    static unsigned char payload[RACE_THREADS][20000];
    for (size_t i = 0; i < sizeof payload[id]; i++)
        payload[id][i] = (unsigned char)(id * 31 + i);
    for (int r = 0; r < RACE_ROUNDS; r++) {
        hpl__hash k = {42, (uint64_t)(r % 4)};
        size_t len = 1000 + (size_t)id * 2000;
        hpl__cache_store(&c, "race", k, payload[id], len);
        void *data = NULL;
        size_t size = 0;
        if (hpl__cache_load(&c, "race", k, &data, &size)) {
            int who = (int)((size - 1000) / 2000);
            if (size < 1000 || who >= RACE_THREADS || memcmp(data, payload[who], size) != 0)
                __atomic_add_fetch(&race_torn, 1, __ATOMIC_RELAXED);
            hpl__free(data);
        }
    }
    __atomic_add_fetch(&race_warnings, log.warnings, __ATOMIC_RELAXED);
    hpl__cache_destroy(&c);
    return NULL;
}

static void test_cache_race(void)
{
    race_dir = tmp_path("race");
    pthread_t t[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_create(&t[i], NULL, race_thread, (void *)(size_t)i);
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK(race_torn == 0, "%d torn entries", race_torn);
    CHECK(race_warnings == 0, "%d warnings in the race", race_warnings);
    CHECK(count_files(tmp_path("race/race"), NULL, 0) == 4, "stray files after the race: %d",
          count_files(tmp_path("race/race"), NULL, 0));
}

/* --------------------------------------------------------- reflection: ABI */

static const char *const type_glsl[] = {"", "float", "double", "int", "uint", "int64_t", "uint64_t"};
static const char *const acc_macro[] = {"hpl_in", "hpl_out", "hpl_inout"};
static const hpl_access acc_value[] = {HPL_READ, HPL_WRITE, HPL_READ_WRITE};

typedef struct expected_arg {
    char name[32];
    hpl_arg_kind kind;
    hpl_type type;
    int ndims;
    hpl_access access;
} expected_arg;

/* Every element type with every access; dims (t + a) % 3 + 1 covers every
 * (access, dims) and (type, dims) pair; a scalar of every type, before the
 * arrays of its type for even types, after them for odd ones. */
static int build_all_types_kernel(char *src, size_t cap, expected_arg *exp)
{
    int n = 0;
    size_t len = 0;
    len += (size_t)snprintf(src + len, cap - len, "#include <hplvk.glsl>\nhpl_args {\n");
    char body[8192];
    size_t blen = 0;
    blen += (size_t)snprintf(body + blen, sizeof body - blen, "void main() {\n    uint i = hpl_global_id.x;\n"
                                                              "    double acc = 0.0;\n");
    for (int t = HPL_FLOAT32; t <= HPL_UINT64; t++) {
        for (int pass = 0; pass < 2; pass++) {
            bool scalar_pass = (t % 2 == 0) == (pass == 0);
            if (scalar_pass) {
                expected_arg *e = &exp[n++];
                snprintf(e->name, sizeof e->name, "s_%s", type_glsl[t]);
                e->kind = HPL_ARG_SCALAR;
                e->type = (hpl_type)t;
                len += (size_t)snprintf(src + len, cap - len, "    %s %s;\n", type_glsl[t], e->name);
                blen += (size_t)snprintf(body + blen, sizeof body - blen, "    acc += double(%s);\n", e->name);
                continue;
            }
            for (int a = 0; a < 3; a++) {
                expected_arg *e = &exp[n++];
                int dims = (t + a) % 3 + 1;
                snprintf(e->name, sizeof e->name, "%s_%s_%d", acc_macro[a] + 4, type_glsl[t], dims);
                e->kind = HPL_ARG_ARRAY;
                e->type = (hpl_type)t;
                e->ndims = dims;
                e->access = acc_value[a];
                len += (size_t)snprintf(src + len, cap - len, "    %s(%s, %d) %s;\n", acc_macro[a], type_glsl[t],
                                        dims, e->name);
                const char *at = dims == 1 ? "hpl_at(%s, i)" : dims == 2 ? "hpl_at2(%s, i, 0)" : "hpl_at3(%s, i, 0, 0)";
                char ref[96];
                snprintf(ref, sizeof ref, at, e->name);
                if (a == 0)
                    blen += (size_t)snprintf(body + blen, sizeof body - blen, "    acc += double(%s);\n", ref);
                else if (a == 1)
                    blen += (size_t)snprintf(body + blen, sizeof body - blen, "    %s = %s(acc);\n", ref,
                                             type_glsl[t]);
                else
                    blen += (size_t)snprintf(body + blen, sizeof body - blen, "    %s += %s(1);\n", ref,
                                             type_glsl[t]);
            }
        }
    }
    len += (size_t)snprintf(src + len, cap - len, "};\n%s}\n", body);
    return n;
}

/* std140 placement of the ABI's members, from the GLSL rules (not from the
 * SPIR-V): scalars aligned to their size; an array struct aligned to 16,
 * { 8-byte pointer; uintN dims, stride, origin, part_lo, part_hi, owned_lo,
 * owned_hi } with uvecN aligned to 4/8/16 and sized 4N; the struct's size
 * rounded up to 16. */
static void std140_layout(const expected_arg *e, int n, uint32_t *offsets, hpl__array_layout *layouts,
                          uint32_t *end)
{
    uint32_t off = 0;
    for (int i = 0; i < n; i++) {
        if (e[i].kind == HPL_ARG_SCALAR) {
            uint32_t sz = (e[i].type == HPL_FLOAT64 || e[i].type == HPL_INT64 || e[i].type == HPL_UINT64) ? 8 : 4;
            off = align_up(off, sz);
            offsets[i] = off;
            off += sz;
            *end = off;
        } else {
            uint32_t vsize = 4u * (uint32_t)e[i].ndims, valign = e[i].ndims == 1 ? 4 : e[i].ndims == 2 ? 8 : 16;
            off = align_up(off, 16);
            offsets[i] = off;
            layouts[i].field[0] = off;
            uint32_t at = 8;
            for (int f = 1; f < HPL__ARRAY_FIELDS; f++) {
                at = align_up(at, valign);
                layouts[i].field[f] = off + at;
                at += vsize;
            }
            *end = off + at;
            off += align_up(at, 16);
        }
    }
}

static void test_reflect_all_types(void)
{
    char src[16384];
    expected_arg exp[HPL__MAX_ARGS];
    int n = build_all_types_kernel(src, sizeof src, exp);
    hpl__reflection r;
    int rc = compile_reflect(src, NULL, &r);
    CHECK(rc == HPL_OK, "all-types kernel: %s\n%s", hpl_last_error(), src);
    if (rc)
        return;
    CHECK(r.arg_count == n, "arg_count %d, expected %d", r.arg_count, n);
    CHECK(strcmp(r.entry_point, "main") == 0, "entry point %s", r.entry_point);
    CHECK(r.needs_float64 && r.needs_int64, "needs_float64 %d needs_int64 %d", r.needs_float64, r.needs_int64);

    uint32_t offsets[HPL__MAX_ARGS];
    hpl__array_layout layouts[HPL__MAX_ARGS];
    uint32_t end = 0;
    std140_layout(exp, n, offsets, layouts, &end);

    uint32_t prev_end = 0;
    for (int i = 0; i < n && i < r.arg_count; i++) {
        const hpl_arg_info *a = &r.args[i];
        CHECK(strcmp(a->name, exp[i].name) == 0, "arg %d name %s, expected %s", i, a->name, exp[i].name);
        CHECK(a->kind == exp[i].kind, "arg %s kind %d", exp[i].name, a->kind);
        CHECK(a->type == exp[i].type, "arg %s type %d, expected %d", exp[i].name, a->type, exp[i].type);
        CHECK(a->offset >= prev_end, "arg %s at %u overlaps the previous one (ends at %u)", a->name, a->offset,
              prev_end);
        CHECK(a->offset == offsets[i], "arg %s offset %u, std140 says %u", a->name, a->offset, offsets[i]);
        if (exp[i].kind == HPL_ARG_ARRAY) {
            const hpl__array_layout *l = &r.layout[i];
            uint32_t vs = 4u * (uint32_t)exp[i].ndims;
            CHECK(a->ndims == exp[i].ndims, "arg %s ndims %d, expected %d", a->name, a->ndims, exp[i].ndims);
            CHECK(a->access == exp[i].access, "arg %s access %d, expected %d", a->name, a->access, exp[i].access);
            CHECK(l->field[0] == a->offset && l->field[0] % 8 == 0, "arg %s pointer at %u", a->name, l->field[0]);
            CHECK(l->field[1] >= l->field[0] + 8, "arg %s dims at %u overlaps the pointer", a->name, l->field[1]);
            for (int f = 1; f < HPL__ARRAY_FIELDS; f++) {
                CHECK(f == 1 || l->field[f] >= l->field[f - 1] + vs, "arg %s field %d at %u overlaps field %d at %u",
                      a->name, f, l->field[f], f - 1, l->field[f - 1]);
                CHECK(l->field[f] == layouts[i].field[f], "arg %s field %d at %u, std140 says %u", a->name, f,
                      l->field[f], layouts[i].field[f]);
            }
            prev_end = l->field[HPL__ARRAY_FIELDS - 1] + vs;
        } else {
            uint32_t sz = exp[i].type == HPL_FLOAT64 || exp[i].type == HPL_INT64 || exp[i].type == HPL_UINT64 ? 8 : 4;
            CHECK(a->offset % sz == 0, "scalar %s at %u not aligned to %u", a->name, a->offset, sz);
            prev_end = a->offset + sz;
        }
    }
    CHECK(r.args_size >= prev_end && r.args_size >= end && r.args_size <= align_up(end, 16),
          "args_size %u, last argument ends at %u", r.args_size, prev_end);
}

static const char *const simple_kernel = "#include <hplvk.glsl>\n"
                                         "hpl_args { hpl_in(float, 1) a; hpl_out(float, 1) b; float s; };\n"
                                         "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = s * hpl_at(a, i); }\n";

/* A float kernel that calls the prelude's hpl_log_f64 needs shaderFloat64
 * (and nothing 64-bit else); one that does not call it, none (below). */
static void test_log_f64_capability(void)
{
    hpl__reflection r;
    int rc = compile_reflect("#include <hplvk.glsl>\n"
                             "hpl_args { hpl_in(float, 1) a; hpl_out(float, 1) b; };\n"
                             "void main() {\n"
                             "    uint i = hpl_global_id.x;\n"
                             "    hpl_at(b, i) = float(hpl_log_f64(double(hpl_at(a, i))));\n"
                             "}\n",
                             NULL, &r);
    CHECK(rc == HPL_OK, "kernel calling hpl_log_f64: %s", hpl_last_error());
    if (rc == HPL_OK)
        CHECK(r.needs_float64 && !r.needs_int64, "kernel calling hpl_log_f64: needs float64 %d int64 %d",
              r.needs_float64, r.needs_int64);
}

static void test_reflect_misc(void)
{
    hpl__reflection r;
    int rc = compile_reflect(simple_kernel, NULL, &r);
    CHECK(rc == HPL_OK, "simple kernel: %s", hpl_last_error());
    if (rc == HPL_OK) {
        CHECK(r.arg_count == 3, "arg_count %d", r.arg_count);
        /* The prelude defines hpl_log_f64: a kernel that does not call it
         * must not need shaderFloat64 (glslang emits only called functions). */
        CHECK(!r.needs_float64 && !r.needs_int64, "float kernel needs float64 %d int64 %d", r.needs_float64,
              r.needs_int64);
        CHECK(r.local_size_choosable && r.local_size[0] == 1 && r.local_size[1] == 1 && r.local_size[2] == 1,
              "default local size %u,%u,%u choosable %d", r.local_size[0], r.local_size[1], r.local_size[2],
              r.local_size_choosable);
        CHECK(r.args[2].kind == HPL_ARG_SCALAR && r.args[2].offset == 96, "s at %u", r.args[2].offset);
    }

    rc = compile_reflect("#include <hplvk.glsl>\n"
                         "hpl_args { hpl_inout(float, 2) a; };\n"
                         "layout(local_size_x = 64) in;\n"
                         "void main() { hpl_at2(a, hpl_global_id.x, hpl_global_id.y) += 1.0; }\n",
                         NULL, &r);
    CHECK(rc == HPL_OK, "local_size_x = 64: %s", hpl_last_error());
    if (rc == HPL_OK)
        CHECK(r.local_size_choosable && r.local_size[0] == 64 && r.local_size[1] == 1 && r.local_size[2] == 1,
              "declared local size %u,%u,%u choosable %d", r.local_size[0], r.local_size[1], r.local_size[2],
              r.local_size_choosable);

    rc = compile_reflect("#include <hplvk.glsl>\n"
                         "layout(local_size_x = 8, local_size_y = 4, local_size_z = 2) in;\n"
                         "void main() { }\n",
                         NULL, &r);
    CHECK(rc == HPL_OK, "no hpl_args: %s", hpl_last_error());
    if (rc == HPL_OK) {
        CHECK(r.arg_count == 0 && r.args_size == 0, "no args: count %d size %u", r.arg_count, r.args_size);
        CHECK(r.local_size[0] == 8 && r.local_size[1] == 4 && r.local_size[2] == 2, "local size %u,%u,%u",
              r.local_size[0], r.local_size[1], r.local_size[2]);
    }

    /* Without the prelude, a literal local size is not choosable. */
    rc = compile_reflect("#version 450\nlayout(local_size_x = 32) in;\nvoid main() { }\n", NULL, &r);
    CHECK(rc == HPL_OK, "plain kernel: %s", hpl_last_error());
    if (rc == HPL_OK)
        CHECK(!r.local_size_choosable && r.local_size[0] == 32 && r.local_size[1] == 1, "literal local size %u, %d",
              r.local_size[0], r.local_size_choosable);

    /* A member that is neither a scalar nor an array struct. */
    rc = compile_reflect("#include <hplvk.glsl>\nhpl_args { float s; vec4 color; };\nvoid main() { }\n", NULL, &r);
    printf("observed member rejection: %s\n", hpl_last_error());
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "color") && strstr(hpl_last_error(), "vec4"),
          "vec4 member: %d %s", rc, hpl_last_error());
    rc = compile_reflect("#include <hplvk.glsl>\nhpl_args { float w[4]; };\nvoid main() { }\n", NULL, &r);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "'w'"), "float[4] member: %d %s", rc,
          hpl_last_error());
    rc = compile_reflect("#include <hplvk.glsl>\nstruct S { float x; int y; };\nhpl_args { S st; };\n"
                         "void main() { }\n",
                         NULL, &r);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "st") && strstr(hpl_last_error(), "struct S"),
          "struct member: %d %s", rc, hpl_last_error());

    /* A hand-made array struct with mismatched dims/stride vectors. */
    rc = compile_reflect("#include <hplvk.glsl>\n"
                         "struct bad_arr { hplvk_ro_float p; uvec2 dims; uint stride; uvec2 origin; uvec2 part_lo; uvec2 part_hi;\n"
                         "                 uvec2 owned_lo; uvec2 owned_hi; };\n"
                         "hpl_args { bad_arr x; };\nvoid main() { }\n",
                         NULL, &r);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "'x'") && strstr(hpl_last_error(), "stride"),
          "mismatched fields: %d %s", rc, hpl_last_error());

    /* Elements that are not tightly packed (std140 array stride 16). */
    rc = compile_reflect("#include <hplvk.glsl>\n"
                         "layout(buffer_reference, std140) buffer loose { float v[]; };\n"
                         "struct loose_arr { loose p; uint dims; uint stride; uint origin; uint part_lo; uint part_hi; uint owned_lo;\n"
                         "                   uint owned_hi; };\n"
                         "hpl_args { loose_arr x; };\nvoid main() { }\n",
                         NULL, &r);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "'x'") && strstr(hpl_last_error(), "stride 16"),
          "std140 elements: %d %s", rc, hpl_last_error());

    /* Other descriptors: a plain storage buffer is rejected, naming it. */
    rc = compile_reflect("#include <hplvk.glsl>\n"
                         "hpl_args { float s; };\n"
                         "layout(binding = 1) buffer Extra { float data[]; } extra;\n"
                         "void main() { extra.data[0] = s; }\n",
                         NULL, &r);
    printf("observed descriptor rejection: %s\n", hpl_last_error());
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "Extra") &&
              strstr(hpl_last_error(), "binding 1") && strstr(hpl_last_error(), "hpl_args"),
          "storage buffer: %d %s", rc, hpl_last_error());
    rc = compile_reflect("#include <hplvk.glsl>\n"
                         "layout(binding = 2, rgba8) uniform image2D img;\n"
                         "void main() { imageStore(img, ivec2(0), vec4(1.0)); }\n",
                         NULL, &r);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "img") && strstr(hpl_last_error(), "image"),
          "storage image: %d %s", rc, hpl_last_error());
    rc = compile_reflect("#include <hplvk.glsl>\n"
                         "hpl_args { float s; };\n"
                         "layout(set = 1, binding = 0) uniform More { float t; } more;\n"
                         "void main() { }\n",
                         NULL, &r);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "More") && strstr(hpl_last_error(), "set 1"),
          "second uniform block: %d %s", rc, hpl_last_error());

    /* A push constant block bigger than the prelude's (no prelude here). */
    rc = compile_reflect("#version 460\nlayout(push_constant) uniform Big { mat4 a, b; } big;\n"
                         "void main() { }\n",
                         NULL, &r);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "big") && strstr(hpl_last_error(), "128"),
          "big push constants: %d %s", rc, hpl_last_error());

    /* More than HPL__MAX_ARGS arguments. */
    char big[4096];
    size_t len = (size_t)snprintf(big, sizeof big, "#include <hplvk.glsl>\nhpl_args {\n");
    for (int i = 0; i <= HPL__MAX_ARGS; i++)
        len += (size_t)snprintf(big + len, sizeof big - len, "    float s%d;\n", i);
    snprintf(big + len, sizeof big - len, "};\nvoid main() { }\n");
    rc = compile_reflect(big, NULL, &r);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "33"), "too many args: %d %s", rc,
          hpl_last_error());
}

/* Calls fn for every instruction (opcode, word count, its first word). */
static void each_instruction(uint32_t *spv, size_t words, void (*fn)(void *, uint32_t *, uint32_t, uint32_t),
                             void *user)
{
    for (size_t i = 5; i < words;) {
        uint32_t op = spv[i] & 0xffff, n = spv[i] >> 16;
        if (n == 0 || i + n > words)
            return;
        fn(user, spv + i, op, n);
        i += n;
    }
}

/* Finds the id named `name` (OpName). */
typedef struct name_find {
    const char *name;
    uint32_t id;
} name_find;

static void find_name(void *user, uint32_t *ins, uint32_t op, uint32_t n)
{
    name_find *f = user;
    size_t len = strlen(f->name);
    if (op == 5 /* OpName */ && (n - 2) * 4 > len && memcmp(ins + 2, f->name, len + 1) == 0)
        f->id = ins[1];
}

/* Sets the Offset of member `member` of struct `type` to `offset`. */
typedef struct offset_edit {
    uint32_t type, member, offset;
    int edits;
} offset_edit;

static void edit_offset(void *user, uint32_t *ins, uint32_t op, uint32_t n)
{
    offset_edit *e = user;
    if (op == 72 /* OpMemberDecorate */ && n == 5 && ins[1] == e->type && ins[2] == e->member &&
        ins[3] == 35 /* Offset */) {
        ins[4] = e->offset;
        e->edits++;
    }
}

/* The argument block holds at most HPL__ARG_RANGE bytes: an argument that
 * ends past it is refused at reflection, naming it and the limit, whatever
 * its offset (up to 4 GiB in valid SPIR-V); the block's size is the
 * furthest end of any member, in whatever order the members lie. */
static void test_reflect_block_limits(void)
{
    hpl__reflection r;
    int rc = compile_reflect("#include <hplvk.glsl>\n"
                             "hpl_args { hpl_inout(float, 1) x; layout(offset = 8192) float far; };\n"
                             "void main() { hpl_at(x, hpl_global_id.x) = far; }\n",
                             NULL, &r);
    CHECK(rc == HPL_OK && r.args[1].offset == 8192 && r.args_size == 8196, "offset 8192: %d %s, offset %u size %u", rc,
          hpl_last_error(), r.args[1].offset, r.args_size);

    static const struct {
        const char *decl;
        bool ok;
    } cases[] = {
        {"layout(offset = 16380) float last;", true},
        {"layout(offset = 16376) double last;", true},
        {"layout(offset = 16384) float last;", false},
        {"layout(offset = 16380) double last;", false}, /* misaligned for std140 too: compile or reflection */
        {"layout(offset = 16384) int64_t last;", false},
        {"layout(offset = 65536) uint last;", false},
        {"layout(offset = 1073741824) float last;", false},
        {"layout(offset = 16256) hpl_in(float, 3) last;", true}, /* 8 + 7 * 16 = 120 bytes: ends at 16376 */
        {"layout(offset = 16272) hpl_in(float, 3) last;", false}, /* its owned_hi ends at 16392 */
        {"layout(offset = 16368) hpl_out(int, 1) last;", false},
        {"layout(offset = 2147483648) hpl_out(int, 2) last;", false},
    };
    for (size_t c = 0; c < HPL__ARRAY_LEN(cases); c++) {
        char src[512];
        snprintf(src, sizeof src,
                 "#include <hplvk.glsl>\n"
                 "hpl_args { hpl_inout(float, 1) x; %s };\n"
                 "void main() { }\n",
                 cases[c].decl);
        rc = compile_reflect(src, NULL, &r);
        if (cases[c].ok) {
            CHECK(rc == HPL_OK && r.args_size <= HPL__ARG_RANGE && hpl__arg_end(&r, 1) <= r.args_size,
                  "%s: %d %s, size %u", cases[c].decl, rc, hpl_last_error(), r.args_size);
        } else {
            CHECK(rc == HPL_ERROR_COMPILE || (rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "'last'") &&
                                              strstr(hpl_last_error(), "16384")),
                  "%s: %d %s", cases[c].decl, rc, hpl_last_error());
        }
        if (c == 2 || c == 6 || c == 8)
            printf("observed block limit: %s\n", hpl_last_error());
    }

    /* The same through SPIR-V edits (compilers refuse some of these):
     * offsets up to 4 GiB - 4 on the last scalar are refused, naming it. */
    uint32_t *spv;
    size_t words;
    bool hit;
    rc = compile("#include <hplvk.glsl>\nhpl_args { float a; float b; };\nvoid main() { }\n", NULL, &spv, &words,
                 &hit);
    CHECK(rc == HPL_OK, "two scalars: %s", hpl_last_error());
    if (rc)
        return;
    name_find block = {"hplvk_args_t", 0};
    each_instruction(spv, words, find_name, &block);
    CHECK(block.id != 0, "no hplvk_args_t in the SPIR-V");
    static const uint32_t far[] = {16380, 16384, 65532, 65536, 1u << 30, 0x7ffffffcu, 0xfffffffcu};
    for (size_t f = 0; f < HPL__ARRAY_LEN(far); f++) {
        uint32_t *copy = malloc(words * 4);
        memcpy(copy, spv, words * 4);
        offset_edit e = {.type = block.id, .member = 1, .offset = far[f]};
        each_instruction(copy, words, edit_offset, &e);
        CHECK(e.edits == 1, "%d Offset decorations of member 1", e.edits);
        rc = hpl__reflect(copy, words, &r);
        if (far[f] + 4ull <= HPL__ARG_RANGE)
            CHECK(rc == HPL_OK && r.args[1].offset == far[f] && r.args_size == far[f] + 4, "b at %u: %d %s", far[f], rc,
                  hpl_last_error());
        else
            CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "'b'") &&
                      strstr(hpl_last_error(), "16384"),
                  "b at %u: %d %s", far[f], rc, hpl_last_error());
        free(copy);
    }
    /* Members out of offset order (valid SPIR-V): a at 64, b at 0. The block
     * ends after a, though SPIRV-Cross sizes it by its last member. */
    uint32_t *copy = malloc(words * 4);
    memcpy(copy, spv, words * 4);
    offset_edit e0 = {.type = block.id, .member = 0, .offset = 64}, e1 = {.type = block.id, .member = 1, .offset = 0};
    each_instruction(copy, words, edit_offset, &e0);
    each_instruction(copy, words, edit_offset, &e1);
    rc = hpl__reflect(copy, words, &r);
    CHECK(rc == HPL_OK && r.args[0].offset == 64 && r.args[1].offset == 0 && r.args_size == 68,
          "out of order: %d %s, a at %u b at %u, size %u", rc, hpl_last_error(), r.args[0].offset, r.args[1].offset,
          r.args_size);
    /* A device whose range is smaller than the block (the pipeline's
     * check): the message names the argument and the limit. */
    if (rc == HPL_OK) {
        rc = hpl__args_fit(&r, 64, HPL_ERROR_TOO_LARGE, "device X's maxUniformBufferRange");
        CHECK(rc == HPL_ERROR_TOO_LARGE && strstr(hpl_last_error(), "'a'") && strstr(hpl_last_error(), "64 bytes") &&
                  strstr(hpl_last_error(), "device X"),
              "device limit: %d %s", rc, hpl_last_error());
        CHECK(hpl__args_fit(&r, 68, HPL_ERROR_TOO_LARGE, "x") == HPL_OK, "68 bytes fit: %s", hpl_last_error());
    }
    free(copy);
    hpl__free(spv);
}

/* Edits for test_own_rules: each finds its instruction and changes it. */
typedef struct rule_edit {
    const char *what;
    uint32_t op, min_words, k, v; /* match: opcode, word count, word k == v (k > 0) */
    uint32_t word, value;         /* then set word `word` to value */
    const char *want;             /* in the message */
    int nth;                      /* which match (0: the first) */
} rule_edit;

static bool apply_edit(uint32_t *spv, size_t words, const rule_edit *e)
{
    int seen = 0;
    for (size_t i = 5; i < words;) {
        uint32_t op = spv[i] & 0xffff, n = spv[i] >> 16;
        if (n == 0 || i + n > words)
            return false;
        if (op == e->op && n >= e->min_words && (e->k == 0 || (e->k < n && spv[i + e->k] == e->v)) &&
            seen++ == e->nth) {
            spv[i + e->word] = e->value;
            return true;
        }
        i += n;
    }
    return false;
}

/* hplvk's rules beyond SPIRV-Tools (validate.c), each broken by one edit of
 * a valid module that SPIRV-Tools 2023.1 still accepts; found by the fuzz
 * test (unit_spirv_fuzz) as modules that drivers or the validation layer
 * refuse or crash on. */
static void test_own_rules(void)
{
    const char *src = "#include <hplvk.glsl>\n"
                      "hpl_args { hpl_inout(uint, 1) z; float s; };\n"
                      "layout(local_size_x = 64) in;\n"
                      "shared uint tile[64];\n"
                      "void main() { tile[gl_LocalInvocationID.x] = 1u; barrier();\n"
                      "              uint i = hpl_global_id.x;\n"
                      "              hpl_at(z, i) = tile[0] + uint(s) + hpl_at(z, i + 1); }\n";
    uint32_t *spv;
    size_t words;
    bool hit;
    int rc = compile(src, NULL, &spv, &words, &hit);
    CHECK(rc == HPL_OK, "compile: %s", hpl_last_error());
    if (rc)
        return;
    hpl__spirv_facts facts;
    rc = hpl__spirv_validate(spv, words, &facts);
    CHECK(rc == HPL_OK && facts.shared_bytes == 256 && !(facts.features & HPL__FEATURE_SCALAR_LAYOUT),
          "valid: %d %s, shared %llu, features %#x", rc, hpl_last_error(), (unsigned long long)facts.shared_bytes,
          facts.features);
    name_find push = {"hplvk_push_t", 0}, uint_ptr = {"gl_LocalInvocationID", 0}, args = {"hplvk_args_t", 0},
              arr = {"hplvk_arr_rw_uint_1", 0};
    each_instruction(spv, words, find_name, &push);
    each_instruction(spv, words, find_name, &uint_ptr);
    each_instruction(spv, words, find_name, &args);
    each_instruction(spv, words, find_name, &arr);
    /* The type of gl_LocalInvocationID: an Input pointer. */
    uint32_t input_ptr = 0;
    for (size_t i = 5; i < words && !input_ptr;) {
        uint32_t op = spv[i] & 0xffff, n = spv[i] >> 16;
        if (op == 59 /* OpVariable */ && spv[i + 2] == uint_ptr.id)
            input_ptr = spv[i + 1];
        i += n ? n : words;
    }
    CHECK(push.id && input_ptr, "no hplvk_push_t (%u) or input pointer (%u)", push.id, input_ptr);
    const rule_edit edits[] = {
        {"header word 4", 0, 0, 0, 0, 0, 0, "header word 4", 0},
        {"capability Geometry", 17 /* OpCapability */, 2, 1, 1 /* Shader */, 1, 2, "Geometry", 0},
        {"capability Int64Atomics", 17, 2, 1, 1, 1, 12, "Int64Atomics", 0},
        {"Aligned 3", 61 /* OpLoad */, 6, 4, 2 /* Aligned */, 5, 3, "power of two", 0},
        {"Aligned 0", 62 /* OpStore */, 5, 3, 2, 4, 0, "power of two", 0},
        {"the argument block's Block on an array struct", 71 /* OpDecorate */, 3, 1, args.id, 1, arr.id, "not a Block",
         0},
        {"logical pointer in the push constants", 30 /* OpTypeStruct */, 6, 1, push.id, 5, input_ptr, "pointer", 0},
    };
    for (size_t e = 0; e < HPL__ARRAY_LEN(edits); e++) {
        uint32_t *copy = malloc(words * 4);
        memcpy(copy, spv, words * 4);
        bool applied = e == 0 ? (copy[4] = 1, true) : apply_edit(copy, words, &edits[e]);
        CHECK(applied, "%s: nothing to edit", edits[e].what);
        if (!applied) {
            free(copy);
            continue;
        }
        rc = hpl__spirv_validate(copy, words, NULL);
        CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), edits[e].want), "%s: %d %s",
              edits[e].what, rc, hpl_last_error());
        printf("observed own rule (%s): %s\n", edits[e].what, hpl_last_error());
        hpl__reflection r;
        CHECK(hpl__reflect(copy, words, &r) == HPL_ERROR_KERNEL_SIGNATURE, "%s: reflected", edits[e].what);
        free(copy);
    }
    /* The entry point's name goes to the driver: UTF-8 without control
     * characters ("main" -> "mai\x01"). */
    uint32_t *copy = malloc(words * 4);
    memcpy(copy, spv, words * 4);
    bool renamed = false;
    for (size_t i = 5; i < words && !renamed;) {
        uint32_t op = copy[i] & 0xffff, n = copy[i] >> 16;
        if (op == 15 /* OpEntryPoint */ && memcmp(copy + i + 3, "main", 5) == 0) {
            ((unsigned char *)(copy + i + 3))[3] = 1;
            renamed = true;
        }
        i += n ? n : words;
    }
    hpl__reflection r;
    rc = hpl__reflect(copy, words, &r);
    CHECK(renamed && rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "UTF-8"), "entry name: %d %s", rc,
          hpl_last_error());
    free(copy);
    /* A signed WorkgroupSize (ivec3: valid SPIR-V; Mesa refuses it): the
     * only int type of a kernel without the prelude made signed. */
    hpl__free(spv);
    rc = compile("#version 450\nlayout(local_size_x = 8, local_size_y = 4) in;\nvoid main() { }\n", NULL, &spv, &words,
                 &hit);
    CHECK(rc == HPL_OK, "plain kernel: %s", hpl_last_error());
    if (rc == HPL_OK) {
        rule_edit sign = {"signed WorkgroupSize", 21 /* OpTypeInt */, 4, 3, 0, 3, 1, "WorkgroupSize", 0};
        CHECK(hpl__spirv_validate(spv, words, NULL) == HPL_OK, "plain kernel: %s", hpl_last_error());
        CHECK(apply_edit(spv, words, &sign), "no OpTypeInt");
        rc = hpl__spirv_validate(spv, words, NULL);
        CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "WorkgroupSize"), "signed: %d %s", rc,
              hpl_last_error());
        printf("observed own rule (signed WorkgroupSize): %s\n", hpl_last_error());
        hpl__free(spv);
    }
    /* Shared memory from an array length that is a spec constant: its default. */
    rc = compile("#include <hplvk.glsl>\nlayout(constant_id = 7) const uint N = 1000;\nshared double big[N];\n"
                 "void main() { big[0] = 1.0; }\n",
                 NULL, &spv, &words, &hit);
    CHECK(rc == HPL_OK, "spec-sized shared: %s", hpl_last_error());
    if (rc == HPL_OK) {
        rc = hpl__spirv_validate(spv, words, &facts);
        CHECK(rc == HPL_OK && facts.shared_bytes == 8000 && (facts.features & HPL__FEATURE_FLOAT64),
              "spec-sized shared: %d, %llu bytes, features %#x", rc, (unsigned long long)facts.shared_bytes,
              facts.features);
        hpl__free(spv);
    }
    /* Scalar block layout: a uniform block valid only with it (a float
     * array of stride 4) validates, and says it needs the feature. */
    rc = compile("#include <hplvk.glsl>\n#extension GL_EXT_scalar_block_layout : require\n"
                 "layout(set = 0, binding = 0, scalar) uniform A { float s; float w[4]; };\n"
                 "void main() { }\n",
                 NULL, &spv, &words, &hit);
    CHECK(rc == HPL_OK, "scalar layout: %s", hpl_last_error());
    if (rc == HPL_OK) {
        rc = hpl__spirv_validate(spv, words, &facts);
        CHECK(rc == HPL_OK && (facts.features & HPL__FEATURE_SCALAR_LAYOUT), "scalar layout: %d %s, features %#x",
              rc, hpl_last_error(), facts.features);
        hpl__free(spv);
    }
}

static void test_raw_spirv(void)
{
    uint32_t *spv;
    size_t words;
    bool hit;
    int rc = compile(simple_kernel, NULL, &spv, &words, &hit);
    CHECK(rc == HPL_OK, "compile: %s", hpl_last_error());
    if (rc)
        return;
    CHECK(words > 5 && spv[0] == 0x07230203u, "not SPIR-V");
    CHECK(spv[1] == 0x00010500u, "SPIR-V version 0x%08x, expected 1.5", spv[1]);
    CHECK(!hit, "no cache, yet from_cache");

    /* The words as a user would hand them in (a copy: nothing refers to the
     * compiler's buffer). */
    uint32_t *copy = malloc(words * 4);
    memcpy(copy, spv, words * 4);
    hpl__reflection r;
    memset(&r, 0x5a, sizeof r);
    rc = hpl__reflect(copy, words, &r);
    CHECK(rc == HPL_OK, "reflect: %s", hpl_last_error());
    if (rc == HPL_OK) {
        CHECK(r.arg_count == 3, "arg_count %d", r.arg_count);
        CHECK(strcmp(r.args[0].name, "a") == 0 && r.args[0].kind == HPL_ARG_ARRAY && r.args[0].access == HPL_READ &&
                  r.args[0].type == HPL_FLOAT32 && r.args[0].ndims == 1,
              "arg a");
        CHECK(strcmp(r.args[1].name, "b") == 0 && r.args[1].access == HPL_WRITE && r.args[1].offset == 48, "arg b");
        CHECK(strcmp(r.args[2].name, "s") == 0 && r.args[2].kind == HPL_ARG_SCALAR && r.args[2].type == HPL_FLOAT32,
              "arg s");
        CHECK(r.args_size == 100, "args_size %u", r.args_size);
    }

    /* Not a compute shader: turning the entry point into a vertex shader
     * makes SPIR-V that SPIRV-Tools rejects (LocalSize is for compute). */
    for (size_t i = 5; i < words;) {
        uint32_t op = copy[i] & 0xffff, n = copy[i] >> 16;
        if (n == 0)
            break;
        if (op == 15 /* OpEntryPoint */)
            copy[i + 1] = 0 /* Vertex */;
        i += n;
    }
    hpl__reflection untouched;
    memset(&untouched, 0x77, sizeof untouched);
    hpl__reflection r2;
    memcpy(&r2, &untouched, sizeof r2); /* every byte, padding too: an assignment need not copy it */
    rc = hpl__reflect(copy, words, &r2);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "SPIRV-Tools") &&
              strstr(hpl_last_error(), "GLCompute"),
          "vertex: %d %s", rc, hpl_last_error());
    CHECK(memcmp(&r2, &untouched, sizeof r2) == 0, "out changed on failure");
    /* A valid vertex shader (a kernel without built-ins, its LocalSize
     * removed) gets to reflection, which rejects it. */
    {
        uint32_t *plain;
        size_t pw;
        rc = compile("#version 450\nlayout(local_size_x = 4) in;\nvoid main() { }\n", NULL, &plain, &pw, &hit);
        CHECK(rc == HPL_OK, "plain kernel: %s", hpl_last_error());
        size_t out = 5;
        for (size_t i = 5; rc == HPL_OK && i < pw;) {
            uint32_t op = plain[i] & 0xffff, n = plain[i] >> 16;
            if (n == 0 || i + n > pw)
                break;
            if (op == 15 /* OpEntryPoint */)
                plain[i + 1] = 0 /* Vertex */;
            if (op != 16 /* OpExecutionMode */) {
                memmove(plain + out, plain + i, n * 4);
                out += n;
            }
            i += n;
        }
        if (rc == HPL_OK) {
            rc = hpl__reflect(plain, out, &r2);
            CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "compute"), "vertex: %d %s", rc,
                  hpl_last_error());
            hpl__free(plain);
        }
    }

    /* Truncated SPIR-V: SPIRV-Tools' message comes through. */
    rc = hpl__reflect(spv, words / 2, &r2);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "SPIRV-Tools"), "truncated: %d %s", rc,
          hpl_last_error());
    /* Not SPIR-V at all. */
    uint32_t junk[16] = {0xdeadbeef, 1, 2, 3, 4};
    rc = hpl__reflect(junk, 16, &r2);
    CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "not SPIR-V"), "junk: %d %s", rc,
          hpl_last_error());
    free(copy);
    hpl__free(spv);
}

/* ----------------------------------------------------------------- compiling */

static void test_compile_errors(void)
{
    hpl__reflection r;
    /* Errors on lines 7 and 8 of k.comp (line 1 is the #include). */
    int rc = compile_reflect("#include <hplvk.glsl>\n"
                             "hpl_args { hpl_out(float, 1) b; };\n"
                             "void main()\n"
                             "{\n"
                             "    uint i = hpl_global_id.x;\n"
                             "    hpl_at(b, i) = 1.0;\n"
                             "    undeclared_thing = 2;\n"
                             "    float x = vec3(1.0);\n"
                             "}\n",
                             NULL, &r);
    printf("observed compile error message:\n---\n%s\n---\n", hpl_last_error());
    CHECK(rc == HPL_ERROR_COMPILE, "rc %d", rc);
    CHECK(strstr(hpl_last_error(), "k.comp:7:") && strstr(hpl_last_error(), "undeclared_thing"), "line 7: %s",
          hpl_last_error());
    CHECK(strstr(hpl_last_error(), "k.comp:8:"), "line 8: %s", hpl_last_error());

    /* The name used in messages is the one given. */
    compile_args named = {.name = "/some/where/my_kernel.glsl"};
    rc = compile_reflect("void main() {\n  bad bad bad;\n}\n", &named, &r);
    CHECK(rc == HPL_ERROR_COMPILE && strstr(hpl_last_error(), "/some/where/my_kernel.glsl:2:"), "named: %s",
          hpl_last_error());

    /* An explicit #version is respected (not forced to 460), and line
     * numbers still count from the top of the file. */
    rc = compile_reflect("// a comment\n#version 450\n#include <hplvk.glsl>\nvoid main() {\n  oops;\n}\n", NULL, &r);
    CHECK(rc == HPL_ERROR_COMPILE && strstr(hpl_last_error(), "k.comp:5:"), "#version 450: %s", hpl_last_error());
    rc = compile_reflect("/* header\n#version 100 in a comment */\n#include <hplvk.glsl>\nvoid main() { }\n", NULL,
                         &r);
    CHECK(rc == HPL_OK, "#version in a comment must not count: %s", hpl_last_error());
    rc = compile_reflect("#version 310 es\nvoid main() { double d = 1.0; }\n", NULL, &r);
    CHECK(rc == HPL_ERROR_COMPILE && strstr(hpl_last_error(), "k.comp:2:"), "ES has no double: %d %s", rc,
          hpl_last_error());

    /* An error inside an included file names that file and its line. */
    write_text(tmp_path("inc/bad.glsl"), "// bad.glsl\nfloat helper() {\n    return nonsense;\n}\n");
    const char *const incs[] = {tmp_path("inc"), NULL};
    compile_args a = {.include_dirs = incs};
    rc = compile_reflect("#include <hplvk.glsl>\n#include \"bad.glsl\"\nvoid main() { }\n", &a, &r);
    printf("observed include error message:\n---\n%s\n---\n", hpl_last_error());
    CHECK(rc == HPL_ERROR_COMPILE && strstr(hpl_last_error(), "bad.glsl:3:") && strstr(hpl_last_error(), "nonsense"),
          "error in include: %s", hpl_last_error());

    /* A missing include names the file and the including line. */
    rc = compile_reflect("#include <hplvk.glsl>\n\n#include \"nothere.glsl\"\nvoid main() { }\n", &a, &r);
    printf("observed missing include message:\n---\n%s\n---\n", hpl_last_error());
    CHECK(rc == HPL_ERROR_COMPILE && strstr(hpl_last_error(), "nothere.glsl") && strstr(hpl_last_error(), "k.comp:3:"),
          "missing include: %s", hpl_last_error());
    rc = compile_reflect("#include <nothere2.glsl>\nvoid main() { }\n", NULL, &r);
    CHECK(rc == HPL_ERROR_COMPILE && strstr(hpl_last_error(), "nothere2.glsl") && strstr(hpl_last_error(), "k.comp:1:"),
          "missing include without include dirs: %s", hpl_last_error());

    /* A long error list is trimmed to the message buffer, not overflowing. */
    char many[8192];
    size_t len = (size_t)snprintf(many, sizeof many, "void main() {\n");
    for (int i = 0; i < 100; i++)
        len += (size_t)snprintf(many + len, sizeof many - len, "  undefined_%d = 1;\n", i);
    snprintf(many + len, sizeof many - len, "}\n");
    rc = compile_reflect(many, NULL, &r);
    CHECK(rc == HPL_ERROR_COMPILE && strstr(hpl_last_error(), "k.comp:2:"), "many errors: %s", hpl_last_error());

    /* Malformed defines. */
    const char *const bad_defs[] = {"1BAD=2", NULL};
    compile_args d = {.defines = bad_defs};
    rc = compile_reflect(simple_kernel, &d, &r);
    CHECK(rc == HPL_ERROR_INVALID_ARGUMENT && strstr(hpl_last_error(), "1BAD"), "bad define: %d %s", rc,
          hpl_last_error());
}

static void test_includes_and_defines(void)
{
    hpl__reflection r;
    /* Nested includes: relative to the including file, then include_dirs;
     * the top-level file's includes search source_dir first. */
    write_text(tmp_path("lib1/outer.glsl"), "#include \"sub/inner.glsl\"\n");
    write_text(tmp_path("lib1/sub/inner.glsl"), "#include \"inner2.glsl\"\n");
    write_text(tmp_path("lib1/sub/inner2.glsl"), "#define INNER_ARG(N) hpl_in(double, N) x;\n");
    write_text(tmp_path("src/local.glsl"), "#define LOCAL_ARG INNER_ARG(3)\n");
    write_text(tmp_path("lib1/local.glsl"), "#define LOCAL_ARG INNER_ARG(1)\n");
    const char *const incs[] = {tmp_path("nonexistent"), tmp_path("lib1"), NULL};
    compile_args a = {.include_dirs = incs, .source_dir = tmp_path("src")};
    int rc = compile_reflect("#include <hplvk.glsl>\n#include \"outer.glsl\"\n#include \"local.glsl\"\n"
                             "hpl_args { LOCAL_ARG };\nvoid main() { }\n",
                             &a, &r);
    CHECK(rc == HPL_OK, "nested includes: %s", hpl_last_error());
    if (rc == HPL_OK)
        CHECK(r.args[0].type == HPL_FLOAT64 && r.args[0].ndims == 3, "nested includes: type %d dims %d",
              r.args[0].type, r.args[0].ndims);
    /* "hplvk.glsl" in quotes is the embedded prelude too, even when a file of
     * that name is on the include path. */
    write_text(tmp_path("lib1/hplvk.glsl"), "#error wrong prelude\n");
    rc = compile_reflect("#include \"hplvk.glsl\"\nhpl_args { float s; };\nvoid main() { }\n", &a, &r);
    CHECK(rc == HPL_OK && r.arg_count == 1, "quoted prelude: %s", hpl_last_error());

    /* Defines: NAME (= 1) and NAME=VALUE change the output. */
    const char *src = "#include <hplvk.glsl>\n"
                      "#if USE_DOUBLE\n"
                      "hpl_args { hpl_inout(double, 1) x; };\n"
                      "#else\n"
                      "hpl_args { hpl_inout(float, 1) x; };\n"
                      "#endif\n"
                      "layout(local_size_x = LSX) in;\n"
                      "void main() { hpl_at(x, hpl_global_id.x) *= 2; }\n";
    const char *const defs1[] = {"USE_DOUBLE", "LSX=32", NULL};
    const char *const defs2[] = {"LSX=16", NULL};
    compile_args d1 = {.defines = defs1}, d2 = {.defines = defs2};
    rc = compile_reflect(src, &d1, &r);
    CHECK(rc == HPL_OK && r.args[0].type == HPL_FLOAT64 && r.local_size[0] == 32 && r.needs_float64,
          "defines 1: %d %s type %d lsx %u", rc, hpl_last_error(), r.args[0].type, r.local_size[0]);
    rc = compile_reflect(src, &d2, &r);
    CHECK(rc == HPL_OK && r.args[0].type == HPL_FLOAT32 && r.local_size[0] == 16 && !r.needs_float64,
          "defines 2: %d %s type %d lsx %u", rc, hpl_last_error(), r.args[0].type, r.local_size[0]);
    rc = compile_reflect(src, NULL, &r);
    CHECK(rc == HPL_ERROR_COMPILE, "undefined LSX must not compile: %d", rc);
}

/* -------------------------------------------------------- compiling + cache */

static void test_compile_cache(void)
{
    log_capture log = {0};
    hpl__logger logger = {capture_log, &log};
    hpl__cache cache;
    hpl__cache_init(&cache, tmp_path("cache1"), false, &logger);

    write_text(tmp_path("dep/dep.glsl"), "const float K = 1.0;\n");
    const char *const incs[] = {tmp_path("dep"), NULL};
    compile_args a = {.include_dirs = incs, .cache = &cache};
    const char *src = "#include <hplvk.glsl>\n#include \"dep.glsl\"\n"
                      "hpl_args { hpl_inout(float, 1) x; };\n"
                      "void main() { hpl_at(x, hpl_global_id.x) *= K; }\n";
    uint32_t *s1, *s2, *s3, *s4;
    size_t w1, w2, w3, w4;
    bool hit = true;
    int rc = compile(src, &a, &s1, &w1, &hit);
    CHECK(rc == HPL_OK && !hit, "first compile: rc %d hit %d %s", rc, hit, hpl_last_error());
    CHECK(count_files(tmp_path("cache1/spv"), NULL, 0) == 1, "one entry expected");
    rc = compile(src, &a, &s2, &w2, &hit);
    CHECK(rc == HPL_OK && hit, "second compile: rc %d hit %d", rc, hit);
    CHECK(w1 == w2 && s1 && s2 && memcmp(s1, s2, w1 * 4) == 0, "cached SPIR-V differs");

    /* The included file's content is part of the key. */
    write_text(tmp_path("dep/dep.glsl"), "const float K = 2.0;\n");
    rc = compile(src, &a, &s3, &w3, &hit);
    CHECK(rc == HPL_OK && !hit, "changed include: rc %d hit %d", rc, hit);
    CHECK(s3 && (w3 != w1 || memcmp(s1, s3, w1 * 4) != 0), "changed include, same SPIR-V");
    write_text(tmp_path("dep/dep.glsl"), "const float K = 1.0;\n");
    rc = compile(src, &a, &s4, &w4, &hit);
    CHECK(rc == HPL_OK && hit, "include restored: rc %d hit %d", rc, hit);
    hpl__free(s4);
    /* So are the defines. */
    const char *const defs[] = {"UNUSED_FLAG", NULL};
    compile_args ad = a;
    ad.defines = defs;
    rc = compile(src, &ad, &s4, &w4, &hit);
    CHECK(rc == HPL_OK && !hit, "new define: rc %d hit %d", rc, hit);
    hpl__free(s4);
    CHECK(log.warnings == 0, "warnings: %s", log.last);
    hpl__free(s1);
    hpl__free(s2);
    hpl__free(s3);

    /* A compile error is not cached and reports the same way twice. */
    rc = compile("void main() { nope; }\n", &a, &s4, &w4, &hit);
    CHECK(rc == HPL_ERROR_COMPILE && strstr(hpl_last_error(), "k.comp:1:"), "error with cache: %s", hpl_last_error());
    rc = compile("void main() { nope; }\n", &a, &s4, &w4, &hit);
    CHECK(rc == HPL_ERROR_COMPILE && strstr(hpl_last_error(), "k.comp:1:"), "error again: %s", hpl_last_error());
    /* A missing include with the cache on (the preprocessor reports it). */
    rc = compile("#include \"gone.glsl\"\nvoid main() { }\n", &a, &s4, &w4, &hit);
    CHECK(rc == HPL_ERROR_COMPILE && strstr(hpl_last_error(), "gone.glsl") && strstr(hpl_last_error(), "k.comp:1:"),
          "missing include with cache: %s", hpl_last_error());
    hpl__cache_destroy(&cache);

    /* Direct mode (the "spvdep" entries, which spare the preprocessor on a
     * hit): a file that appears earlier on the search path shadows the one
     * that was included, so the entry must not be used. */
    log = (log_capture){0};
    hpl__cache_init(&cache, tmp_path("cache3"), false, &logger);
    write_text(tmp_path("sh2/dep.glsl"), "const float K = 1.0;\n");
    const char *const sh_incs[] = {tmp_path("sh1"), tmp_path("sh2"), NULL};
    compile_args sh = {.include_dirs = sh_incs, .cache = &cache};
    rc = compile(src, &sh, &s1, &w1, &hit);
    CHECK(rc == HPL_OK && !hit, "shadow first: %d %d", rc, hit);
    CHECK(count_files(tmp_path("cache3/spvdep"), NULL, 0) == 1, "no direct-mode entry");
    rc = compile(src, &sh, &s2, &w2, &hit);
    CHECK(rc == HPL_OK && hit, "shadow second: %d %d", rc, hit);
    hpl__free(s2);
    write_text(tmp_path("sh1/dep.glsl"), "const float K = 3.0;\n");
    rc = compile(src, &sh, &s2, &w2, &hit);
    CHECK(rc == HPL_OK && !hit, "shadowing file must miss: %d %d", rc, hit);
    CHECK(w1 != w2 || memcmp(s1, s2, w1 * 4) != 0, "shadowing file, same SPIR-V");
    hpl__free(s2);
    remove(tmp_path("sh1/dep.glsl"));
    rc = compile(src, &sh, &s2, &w2, &hit);
    CHECK(rc == HPL_OK && hit && w1 == w2 && memcmp(s1, s2, w1 * 4) == 0, "shadow removed: %d %d", rc, hit);
    hpl__free(s2);
    /* Without the direct-mode entries, the preprocessed key still hits. */
    rm_rf(tmp_path("cache3/spvdep"));
    rc = compile(src, &sh, &s2, &w2, &hit);
    CHECK(rc == HPL_OK && hit, "preprocessed key: %d %d", rc, hit);
    hpl__free(s2);
    /* A direct-mode entry whose SPIR-V is gone: a quiet miss. */
    rm_rf(tmp_path("cache3/spv"));
    rc = compile(src, &sh, &s2, &w2, &hit);
    CHECK(rc == HPL_OK && !hit && w1 == w2 && memcmp(s1, s2, w1 * 4) == 0, "SPIR-V gone: %d %d", rc, hit);
    hpl__free(s2);
    /* A corrupt direct-mode entry: one warning, then the preprocessed key. */
    char dep_entry[512] = "";
    CHECK(count_files(tmp_path("cache3/spvdep"), dep_entry, sizeof dep_entry) == 1, "one direct entry");
    FILE *df = fopen(dep_entry, "r+b");
    if (df) {
        /* Flip the byte: writing a fixed one left a key byte that already
         * had that value unchanged (1 run in 256: keys hash temp paths). */
        fseek(df, 70, SEEK_SET);
        int byte = fgetc(df);
        fseek(df, 70, SEEK_SET);
        fputc(byte ^ 0xff, df);
        fclose(df);
    }
    rc = compile(src, &sh, &s2, &w2, &hit);
    CHECK(rc == HPL_OK && hit && log.warnings == 1 && strstr(log.last, dep_entry), "corrupt direct entry: %d %d %s",
          rc, hit, log.last);
    hpl__free(s2);
    rc = compile(src, &sh, &s2, &w2, &hit);
    CHECK(rc == HPL_OK && hit && log.warnings == 1, "direct entry rewritten: %d %d", rc, hit);
    hpl__free(s2);
    hpl__free(s1);
    hpl__cache_destroy(&cache);

    /* A corrupted entry: detected, warned about once, recompiled, replaced. */
    log = (log_capture){0};
    hpl__cache_init(&cache, tmp_path("cache2"), false, &logger);
    a.cache = &cache;
    rc = compile(src, &a, &s1, &w1, &hit);
    CHECK(rc == HPL_OK && !hit, "cache2 first: %d %d", rc, hit);
    char entry[512] = "";
    CHECK(count_files(tmp_path("cache2/spv"), entry, sizeof entry) == 1, "one entry");
    FILE *f = fopen(entry, "r+b");
    CHECK(f != NULL, "open %s", entry);
    if (f) {
        fseek(f, 200, SEEK_SET);
        fwrite("\x13\x37\xc0\xde", 1, 4, f);
        fclose(f);
    }
    rc = compile(src, &a, &s2, &w2, &hit);
    CHECK(rc == HPL_OK && !hit, "corrupt entry must miss: %d %d", rc, hit);
    CHECK(log.warnings == 1 && strstr(log.last, entry), "corrupt entry: %d warnings, last: %s", log.warnings,
          log.last);
    printf("observed corrupt-entry warning: %s\n", log.last);
    CHECK(w1 == w2 && memcmp(s1, s2, w1 * 4) == 0, "recompiled SPIR-V differs");
    hpl__free(s2);
    rc = compile(src, &a, &s2, &w2, &hit);
    CHECK(rc == HPL_OK && hit && log.warnings == 1, "rewritten entry must hit: %d %d, %d warnings", rc, hit,
          log.warnings);
    CHECK(w1 == w2 && memcmp(s1, s2, w1 * 4) == 0, "reloaded SPIR-V differs");
    hpl__free(s1);
    hpl__free(s2);
    hpl__cache_destroy(&cache);

    /* An unwritable cache directory (under a regular file): one warning, and
     * compiling goes on. */
    log = (log_capture){0};
    write_text(tmp_path("plainfile"), "not a directory\n");
    hpl__cache_init(&cache, tmp_path("plainfile/cache"), false, &logger);
    a.cache = &cache;
    for (int i = 0; i < 3; i++) {
        rc = compile(src, &a, &s1, &w1, &hit);
        CHECK(rc == HPL_OK && !hit, "unwritable cache, compile %d: %d %d %s", i, rc, hit, hpl_last_error());
        hpl__free(s1);
    }
    CHECK(log.warnings == 1 && strstr(log.last, "plainfile"), "unwritable: %d warnings, last: %s", log.warnings,
          log.last);
    printf("observed unwritable-cache warning: %s\n", log.last);
    hpl__cache_destroy(&cache);

    /* A read-only directory (skipped as root, who may write anyway). */
    if (geteuid() != 0) {
        log = (log_capture){0};
        mkdir(tmp_path("ro"), 0555);
        hpl__cache_init(&cache, tmp_path("ro/cache"), false, &logger);
        a.cache = &cache;
        for (int i = 0; i < 2; i++) {
            rc = compile(src, &a, &s1, &w1, &hit);
            CHECK(rc == HPL_OK, "read-only cache: %s", hpl_last_error());
            hpl__free(s1);
        }
        CHECK(log.warnings == 1, "read-only: %d warnings", log.warnings);
        hpl__cache_destroy(&cache);
    }
}

/* ------------------------------------------- checks on what compile returns */

static int check_calls;

static int reflect_check(void *user, const uint32_t *spirv, size_t words)
{
    check_calls++;
    return hpl__reflect(spirv, words, user);
}

static unsigned char *read_entry(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    *size = fread(buf, 1, n > 0 ? (size_t)n : 0, f);
    fclose(f);
    return buf;
}

/* Rewrites an entry with word `index` of its payload set to `value` (or,
 * with index SIZE_MAX, the first OpDecorate DescriptorSet set to value),
 * the header's checksum recomputed: only the payload is wrong. */
static void corrupt_payload(const char *path, size_t index, uint32_t value)
{
    size_t size = 0;
    unsigned char *e = read_entry(path, &size);
    if (!e || size < 56 + 20) {
        CHECK(false, "cannot read %s", path);
        free(e);
        return;
    }
    uint32_t *words = (uint32_t *)(e + 56);
    size_t n = (size - 56) / 4;
    if (index == SIZE_MAX) {
        for (size_t i = 5; i < n;) {
            uint32_t len = words[i] >> 16;
            if (len == 0 || i + len > n)
                break;
            if ((words[i] & 0xffff) == 71 && len == 4 && words[i + 2] == 34 /* DescriptorSet */) {
                words[i + 3] = value;
                break;
            }
            i += len;
        }
    } else {
        words[index] = value;
    }
    hpl__hasher h;
    hpl__hasher_init(&h);
    hpl__hasher_add(&h, e + 56, size - 56);
    hpl__hash ph = hpl__hasher_done(&h);
    memcpy(e + 40, &ph.lo, 8); /* little-endian hosts only, like the tests */
    memcpy(e + 48, &ph.hi, 8);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(e, 1, size, f);
        fclose(f);
    }
    free(e);
}

static bool same_file(const char *path, const unsigned char *data, size_t size)
{
    size_t n = 0;
    unsigned char *now = read_entry(path, &n);
    bool same = now && n == size && memcmp(now, data, size) == 0;
    free(now);
    return same;
}

/* The check given to hpl__compile_glsl sees every SPIR-V it returns, cached
 * or compiled. A cache entry with a sound header and checksum around a
 * payload that fails it (or, with no check, fails validation) is deleted
 * with a warning naming the file, compiled again and written again; SPIR-V
 * that compiles but fails the check is an error and never stored. */
static void test_compile_check(void)
{
    log_capture log = {0};
    hpl__logger logger = {capture_log, &log};
    hpl__cache cache;
    hpl__cache_init(&cache, tmp_path("check"), false, &logger);
    hpl__reflection r;
    hpl__compile_input in = {.glsl = simple_kernel, .name = "k.comp", .check = reflect_check, .check_user = &r};
    uint32_t *spv;
    size_t words;
    bool hit = true;
    check_calls = 0;
    int rc = hpl__compile_glsl(&in, &cache, &spv, &words, &hit);
    CHECK(rc == HPL_OK && !hit && check_calls == 1 && r.arg_count == 3, "first: %d %d, %d checks", rc, hit,
          check_calls);
    hpl__free(spv);
    rc = hpl__compile_glsl(&in, &cache, &spv, &words, &hit);
    CHECK(rc == HPL_OK && hit && check_calls == 2, "cached: %d %d, %d checks", rc, hit, check_calls);
    hpl__free(spv);
    char entry[512] = "";
    CHECK(count_files(tmp_path("check/spv"), entry, sizeof entry) == 1, "one entry");
    size_t size = 0;
    unsigned char *original = read_entry(entry, &size);

    /* id bound 1 (SPIRV-Tools), the block in set 1 (reflection); then
     * without a check, id bound 1 again (compile's own validation). */
    static const struct {
        size_t index;
        uint32_t value;
        bool with_check;
        const char *why;
    } bad[] = {{3, 1, true, "SPIRV-Tools"}, {SIZE_MAX, 1, true, "set 1"}, {3, 1, false, "SPIRV-Tools"},
               {0, 0x07230203u ^ 1, true, "not SPIR-V"}};
    for (size_t b = 0; b < HPL__ARRAY_LEN(bad); b++) {
        corrupt_payload(entry, bad[b].index, bad[b].value);
        in.check = bad[b].with_check ? reflect_check : NULL;
        int w0 = log.warnings;
        rc = hpl__compile_glsl(&in, &cache, &spv, &words, &hit);
        CHECK(rc == HPL_OK && !hit, "bad payload %zu: %d %d %s", b, rc, hit, hpl_last_error());
        CHECK(log.warnings == w0 + 1 && strstr(log.last, entry) && strstr(log.last, "deleted") &&
                  strstr(log.last, "k.comp") && strstr(log.last, bad[b].why),
              "bad payload %zu: %d warnings, last: %s", b, log.warnings - w0, log.last);
        if (b == 0)
            printf("observed bad-payload warning: %s\n", log.last);
        CHECK(original && same_file(entry, original, size), "bad payload %zu: the entry was not written again", b);
        hpl__free(spv);
        rc = hpl__compile_glsl(&in, &cache, &spv, &words, &hit);
        CHECK(rc == HPL_OK && hit && log.warnings == w0 + 1, "after bad payload %zu: %d %d", b, rc, hit);
        hpl__free(spv);
    }
    free(original);

    /* Compiles, but reflection refuses it: an error each time, no entry,
     * no warning. */
    in.check = reflect_check;
    in.glsl = "#include <hplvk.glsl>\nhpl_args { float s; vec4 color; };\nvoid main() { }\n";
    int w0 = log.warnings;
    for (int i = 0; i < 2; i++) {
        rc = hpl__compile_glsl(&in, &cache, &spv, &words, &hit);
        CHECK(rc == HPL_ERROR_KERNEL_SIGNATURE && strstr(hpl_last_error(), "color"), "refused kernel %d: %d %s", i,
              rc, hpl_last_error());
    }
    CHECK(count_files(tmp_path("check/spv"), NULL, 0) == 1, "a refused kernel was stored");
    CHECK(log.warnings == w0, "a refused kernel warned: %s", log.last);
    hpl__cache_destroy(&cache);
}

/* Several threads compile at once through the process's one shaderc
 * compiler; every result matches the single-threaded one. */
#define COMPILE_THREADS 4
static uint32_t *ref_spv;
static size_t ref_words;
static int thread_failures;

static void *compile_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++) {
        uint32_t *s;
        size_t w;
        bool hit;
        int rc = compile(simple_kernel, NULL, &s, &w, &hit);
        if (rc || w != ref_words || memcmp(s, ref_spv, w * 4) != 0)
            __atomic_add_fetch(&thread_failures, 1, __ATOMIC_RELAXED);
        hpl__free(s);
        /* A failing compile in between (per-thread error state). */
        rc = compile("void main() { nope; }\n", NULL, &s, &w, &hit);
        if (rc != HPL_ERROR_COMPILE || !strstr(hpl_last_error(), "k.comp:1:"))
            __atomic_add_fetch(&thread_failures, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void test_compile_threads(void)
{
    bool hit;
    int rc = compile(simple_kernel, NULL, &ref_spv, &ref_words, &hit);
    CHECK(rc == HPL_OK, "reference compile");
    pthread_t t[COMPILE_THREADS];
    for (int i = 0; i < COMPILE_THREADS; i++)
        pthread_create(&t[i], NULL, compile_thread, NULL);
    for (int i = 0; i < COMPILE_THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK(thread_failures == 0, "%d failures compiling from several threads", thread_failures);
    hpl__free(ref_spv);
}

static void test_timing(void)
{
    enum { N = 10 };
    hpl__cache cache;
    log_capture log = {0};
    hpl__logger logger = {capture_log, &log};
    uint32_t *s;
    size_t w;
    bool hit;

    /* The first compile of the process initialises glslang (built-in symbol
     * tables); test_timing runs first so that this is measured. */
    uint64_t t0 = hpl__now_ns();
    compile(simple_kernel, NULL, &s, &w, &hit);
    printf("timing: first compile in the process %.2f ms\n", ms_since(t0));
    hpl__free(s);

    t0 = hpl__now_ns();
    for (int i = 0; i < N; i++) {
        compile(simple_kernel, NULL, &s, &w, &hit);
        hpl__free(s);
    }
    double cold = ms_since(t0) / N;

    /* A miss with the cache on: preprocess + compile + store. */
    double miss = 0, hitms = 0;
    for (int i = 0; i < N; i++) {
        char dir[64];
        snprintf(dir, sizeof dir, "timing/%d", i);
        hpl__cache_init(&cache, tmp_path(dir), false, &logger);
        compile_args a = {.cache = &cache};
        t0 = hpl__now_ns();
        compile(simple_kernel, &a, &s, &w, &hit);
        miss += ms_since(t0);
        CHECK(!hit, "timing miss");
        hpl__free(s);
        t0 = hpl__now_ns();
        compile(simple_kernel, &a, &s, &w, &hit);
        hitms += ms_since(t0);
        CHECK(hit, "timing hit");
        hpl__free(s);
        hpl__cache_destroy(&cache);
    }
    printf("timing (small kernel, mean of %d): compile without cache %.2f ms, cache miss %.2f ms, cache hit %.2f ms\n",
           N, cold, miss / N, hitms / N);
    uint32_t *spv;
    size_t words;
    compile(simple_kernel, NULL, &spv, &words, &hit);
    hpl__reflection r;
    t0 = hpl__now_ns();
    for (int i = 0; i < N; i++)
        hpl__reflect(spv, words, &r);
    printf("timing: reflect %.3f ms (%zu words)\n", ms_since(t0) / N, words);
    hpl__free(spv);
}

int main(void)
{
    /* The tests pass cache directories explicitly; HPLVK_CACHE_DIR=off in the
     * environment would turn them all off. */
    unsetenv("HPLVK_CACHE_DIR");
    snprintf(tmp_root, sizeof tmp_root, "/tmp/hplvk_unit_compile_XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 2;
    }
    test_timing();
    test_hash();
    test_cache_dirs();
    test_cache_api();
    test_cache_race();
    test_reflect_all_types();
    test_reflect_misc();
    test_log_f64_capability();
    test_reflect_block_limits();
    test_own_rules();
    test_raw_spirv();
    test_compile_errors();
    test_includes_and_defines();
    test_compile_cache();
    test_compile_check();
    test_compile_threads();

    chmod(tmp_path("ro"), 0755);
    rm_rf(tmp_root);
    printf("%s: %d of %d checks failed\n", failures ? "FAILED" : "OK", failures, checks);
    return failures ? 1 : 0;
}
