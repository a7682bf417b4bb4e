/* GLSL -> SPIR-V with shaderc, through the SPIR-V cache (see compile.h).
 *
 * The cache key must cover everything that can change the SPIR-V, including
 * the content of every included file. The key of the SPIR-V entry ("spv"):
 * shaderc's preprocessor runs with the same options and includer, and its
 * output (every included file expanded, every macro applied) is hashed with
 * the options. On a miss the ORIGINAL source is compiled, so that compile
 * errors name the user's files and lines.
 *
 * Running the preprocessor needs glslang initialised (~75 ms, once per
 * process), which would make the first cache hit of every process nearly as
 * slow as compiling. So a second entry ("spvdep", like ccache's direct mode)
 * is keyed by the inputs alone (source, defines, directories, prelude,
 * options) and records what the includer saw while preprocessing: every path
 * it probed, with the content hash of the files it read and the absence of
 * those it did not find, plus the preprocessed key. When every probe still
 * holds, the preprocessor would include the same text again, so the recorded
 * key is the key; otherwise the preprocessor runs as above. */
#define _POSIX_C_SOURCE 200809L
#include "compile.h"

#include "embedded.h"
#include "validate.h"

#include <shaderc/shaderc.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define PRELUDE_NAME "hplvk.glsl"
#define SPV_CACHE_KIND "spv"
#define DEP_CACHE_KIND "spvdep"
#define DEP_MAGIC "HPLDEP1"
/* Bump when the options below change in a way the key does not show. */
#define SPV_CACHE_FORMAT "hplvk-spv-1"
#define DEFAULT_VERSION 460

/* ---------------------------------------------------------------- includes */

typedef struct include_ctx {
    const hpl__compile_input *in;
    /* Probes recorded for the direct-mode entry (see the top). */
    bool record;
    bool record_failed; /* out of memory: store no direct entry */
    unsigned char *rec;
    size_t rec_len, rec_cap;
} include_ctx;

enum { PROBE_ABSENT = 0, PROBE_CONTENT = 1 };

/* What the includer hands to shaderc; one allocation holds it all. */
typedef struct include_item {
    shaderc_include_result result;
    char *name;    /* owned unless it is the prelude */
    char *content; /* owned unless it is the prelude */
} include_item;

static char *read_file(const char *path, size_t *len, int *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        *err = errno;
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            size_t ncap = cap ? cap * 2 : 8192;
            char *nb = hpl__realloc(buf, ncap);
            if (!nb) {
                hpl__free(buf);
                fclose(f);
                *err = ENOMEM;
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        *err = EIO;
        hpl__free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static char *path_join(const char *dir, size_t dir_len, const char *file)
{
    size_t nf = strlen(file);
    char *s = hpl__malloc(dir_len + nf + 2);
    if (!s)
        return NULL;
    memcpy(s, dir, dir_len);
    size_t n = dir_len;
    if (n > 0 && s[n - 1] != '/')
        s[n++] = '/';
    memcpy(s + n, file, nf + 1);
    return s;
}

static bool is_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static hpl__hash hash_bytes(const void *data, size_t size)
{
    hpl__hasher h;
    hpl__hasher_init(&h);
    hpl__hasher_add(&h, data, size);
    return hpl__hasher_done(&h);
}

static void rec_put(include_ctx *ctx, const void *data, size_t size)
{
    if (ctx->record_failed)
        return;
    if (ctx->rec_len + size > ctx->rec_cap) {
        size_t cap = ctx->rec_cap ? ctx->rec_cap : 256;
        while (cap < ctx->rec_len + size)
            cap *= 2;
        unsigned char *n = hpl__realloc(ctx->rec, cap);
        if (!n) {
            ctx->record_failed = true;
            return;
        }
        ctx->rec = n;
        ctx->rec_cap = cap;
    }
    memcpy(ctx->rec + ctx->rec_len, data, size);
    ctx->rec_len += size;
}

static void rec_probe(include_ctx *ctx, const char *path, const char *content, size_t len)
{
    if (!ctx->record)
        return;
    unsigned char kind = content ? PROBE_CONTENT : PROBE_ABSENT;
    uint32_t plen = (uint32_t)strlen(path);
    rec_put(ctx, &kind, 1);
    rec_put(ctx, &plen, sizeof plen);
    rec_put(ctx, path, plen);
    if (content) {
        uint64_t size = len;
        hpl__hash h = hash_bytes(content, len);
        rec_put(ctx, &size, sizeof size);
        rec_put(ctx, &h.lo, sizeof h.lo);
        rec_put(ctx, &h.hi, sizeof h.hi);
    }
}

/* Whether path is a file to include; an absence is recorded as a probe (a
 * presence is recorded with the content once read). */
static bool probe_exists(include_ctx *ctx, const char *path)
{
    if (is_regular_file(path))
        return true;
    rec_probe(ctx, path, NULL, 0);
    return false;
}

/* Returned when even an error result cannot be allocated. */
static shaderc_include_result oom_result = {"", 0, "out of host memory", 18, NULL};

static include_item *include_error(const char *fmt, const char *a, const char *b)
{
    include_item *it = hpl__calloc(1, sizeof *it);
    if (!it)
        return NULL;
    int n = snprintf(NULL, 0, fmt, a, b);
    it->content = hpl__malloc((size_t)(n > 0 ? n : 0) + 1);
    if (!it->content) {
        hpl__free(it);
        return NULL;
    }
    snprintf(it->content, (size_t)n + 1, fmt, a, b);
    it->result.source_name = "";
    it->result.source_name_length = 0;
    it->result.content = it->content;
    it->result.content_length = strlen(it->content);
    it->result.user_data = it;
    return it;
}

static shaderc_include_result *include_resolve(void *user, const char *requested, int type, const char *requester,
                                               size_t depth)
{
    include_ctx *ctx = user;
    const hpl__compile_input *in = ctx->in;
    (void)type;
    shaderc_include_result *oom = &oom_result;

    /* The prelude, in either form: always the embedded copy. */
    if (strcmp(requested, PRELUDE_NAME) == 0) {
        include_item *it = hpl__calloc(1, sizeof *it);
        if (!it)
            return oom;
        it->result.source_name = PRELUDE_NAME;
        it->result.source_name_length = strlen(PRELUDE_NAME);
        it->result.content = hpl__prelude_glsl;
        it->result.content_length = strlen(hpl__prelude_glsl);
        it->result.user_data = it;
        return &it->result;
    }

    /* Candidates: the absolute path itself; else the including file's
     * directory (source_dir for the top-level file, the directory of the
     * included file for nested includes), then include_dirs in order.
     * `searched` lists the directories for the error message. */
    char *found = NULL;
    char searched[512] = "";
    size_t slen = 0;
    if (requested[0] == '/') {
        if (probe_exists(ctx, requested))
            found = hpl__strdup(requested);
    } else {
        const char *dir = NULL;
        size_t dir_len = 0;
        if (depth <= 1) {
            if (in->source_dir && *in->source_dir) {
                dir = in->source_dir;
                dir_len = strlen(dir);
            }
        } else if (requester && strcmp(requester, PRELUDE_NAME) != 0) {
            const char *slash = strrchr(requester, '/');
            dir = slash ? requester : ".";
            dir_len = slash ? (size_t)(slash - requester) + (slash == requester) : 1;
        }
        for (const char *const *d = in->include_dirs; !found && (dir || (d && *d));) {
            const char *cur = dir ? dir : *d;
            size_t cur_len = dir ? dir_len : strlen(*d);
            char *p = path_join(cur, cur_len, requested);
            if (p && probe_exists(ctx, p))
                found = p;
            else
                hpl__free(p);
            if (slen < sizeof searched)
                slen += (size_t)snprintf(searched + slen, sizeof searched - slen, "%s%.*s", slen ? ", " : "",
                                         (int)cur_len, cur);
            if (dir)
                dir = NULL;
            else
                d++;
        }
    }
    if (!found) {
        include_item *it;
        /* glslang appends " for header name: <requested>". */
        if (requested[0] == '/')
            it = include_error("cannot open the file%s%s", "", "");
        else if (searched[0])
            it = include_error("cannot find the file (searched %s)%s", searched, "");
        else
            it = include_error("cannot find the file (no source directory or include_dirs to search)%s%s", "", "");
        return it ? &it->result : oom;
    }

    size_t len = 0;
    int err = 0;
    char *text = read_file(found, &len, &err);
    if (!text) {
        include_item *it = include_error("cannot read the file %s: %s", found, strerror(err));
        hpl__free(found);
        return it ? &it->result : oom;
    }
    rec_probe(ctx, found, text, len);
    include_item *it = hpl__calloc(1, sizeof *it);
    if (!it) {
        hpl__free(found);
        hpl__free(text);
        return oom;
    }
    it->name = found;
    it->content = text;
    it->result.source_name = found;
    it->result.source_name_length = strlen(found);
    it->result.content = text;
    it->result.content_length = len;
    it->result.user_data = it;
    return &it->result;
}

static void include_release(void *user, shaderc_include_result *result)
{
    (void)user;
    if (!result || result == &oom_result)
        return;
    include_item *it = result->user_data;
    hpl__free(it->name);
    hpl__free(it->content);
    hpl__free(it);
}

/* ----------------------------------------------------------------- helpers */

/* Whether the source has a #version directive (outside comments). */
static bool has_version_directive(const char *s)
{
    bool line_start = true; /* only whitespace since the last newline */
    while (*s) {
        if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n')
                s++;
            continue;
        }
        if (s[0] == '/' && s[1] == '*') {
            s += 2;
            while (*s && !(s[0] == '*' && s[1] == '/'))
                s++;
            if (*s)
                s += 2;
            continue;
        }
        if (*s == '\n') {
            line_start = true;
            s++;
            continue;
        }
        if (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\f' || *s == '\v') {
            s++;
            continue;
        }
        if (*s == '#' && line_start) {
            s++;
            while (*s == ' ' || *s == '\t')
                s++;
            if (strncmp(s, "version", 7) == 0 && !(s[7] == '_' || (s[7] >= 'a' && s[7] <= 'z') ||
                                                    (s[7] >= 'A' && s[7] <= 'Z') || (s[7] >= '0' && s[7] <= '9')))
                return true;
        }
        line_start = false;
        s++;
    }
    return false;
}

static bool is_ident_char(char c, bool first)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

static int check_define(const char *def, size_t *name_len)
{
    size_t n = 0;
    while (def[n] && def[n] != '=')
        n++;
    bool ok = n > 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = is_ident_char(def[i], i == 0);
    if (!ok)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "define \"%s\" is not NAME or NAME=VALUE", def);
    *name_len = n;
    return HPL_OK;
}

/* Sets the last error from a failed shaderc result. */
static int compile_failure(shaderc_compilation_result_t res, const char *name)
{
    if (!res)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "%s: shaderc returned no result (out of memory?)", name);
    shaderc_compilation_status st = shaderc_result_get_compilation_status(res);
    const char *msg = shaderc_result_get_error_message(res);
    if (!msg)
        msg = "";
    /* Every diagnostic, one a line, as "name:LINE: error: message" (errors
     * of the whole stage, such as a missing main(), as "name: error: ...").
     * Trailing whitespace trimmed; hpl__fail truncates to its buffer. */
    size_t len = strlen(msg);
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' ' || msg[len - 1] == '\r' || msg[len - 1] == '\t'))
        len--;
    if (len == 0) {
        msg = "shaderc gave no message";
        len = strlen(msg);
        if (st == shaderc_compilation_status_compilation_error)
            return hpl__fail(HPL_ERROR_COMPILE, "%s: compile error (%s)", name, msg);
    }
    int n = len > (size_t)0x7fffffff ? 0x7fffffff : (int)len;
    switch (st) {
    case shaderc_compilation_status_compilation_error:
        return hpl__fail(HPL_ERROR_COMPILE, "%.*s", n, msg);
    case shaderc_compilation_status_invalid_stage:
        return hpl__fail(HPL_ERROR_COMPILE, "%s: invalid shader stage (a compute shader is required): %.*s", name,
                         n, msg);
    case shaderc_compilation_status_internal_error:
        return hpl__fail(HPL_ERROR_INTERNAL, "%s: shaderc internal error: %.*s", name, n, msg);
    case shaderc_compilation_status_null_result_object:
        return hpl__fail(HPL_ERROR_INTERNAL, "%s: shaderc returned a null result object: %.*s", name, n, msg);
    case shaderc_compilation_status_validation_error:
        return hpl__fail(HPL_ERROR_COMPILE, "%s: generated SPIR-V failed validation: %.*s", name, n, msg);
    case shaderc_compilation_status_configuration_error:
        return hpl__fail(HPL_ERROR_INTERNAL, "%s: shaderc configuration error: %.*s", name, n, msg);
    default:
        return hpl__fail(HPL_ERROR_COMPILE, "%s: shaderc failed (status %d): %.*s", name, (int)st, n, msg);
    }
}

static int make_options(const hpl__compile_input *in, include_ctx *ictx, bool force_version,
                        shaderc_compile_options_t *out)
{
    shaderc_compile_options_t opts = shaderc_compile_options_initialize();
    if (!opts)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "shaderc: cannot create compile options");
    shaderc_compile_options_set_source_language(opts, shaderc_source_language_glsl);
    shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
    shaderc_compile_options_set_target_spirv(opts, shaderc_spirv_version_1_5);
    /* Zero: keeps OpName/OpMemberName, which reflection reads the argument
     * names from. No debug info (OpLine, OpString). */
    shaderc_compile_options_set_optimization_level(opts, shaderc_optimization_level_zero);
    if (force_version)
        shaderc_compile_options_set_forced_version_profile(opts, DEFAULT_VERSION, shaderc_profile_none);
    for (const char *const *d = in->defines; d && *d; d++) {
        size_t nlen = 0;
        int rc = check_define(*d, &nlen);
        if (rc) {
            shaderc_compile_options_release(opts);
            return rc;
        }
        /* "NAME" means NAME=1, as with C compilers (#if NAME works too). */
        const char *value = (*d)[nlen] == '=' ? *d + nlen + 1 : "1";
        shaderc_compile_options_add_macro_definition(opts, *d, nlen, value, strlen(value));
    }
    shaderc_compile_options_set_include_callbacks(opts, include_resolve, include_release, ictx);
    *out = opts;
    return HPL_OK;
}

static bool is_spirv(const void *data, size_t size)
{
    uint32_t magic;
    if (size < 20 || size % 4 != 0)
        return false;
    memcpy(&magic, data, 4);
    return magic == 0x07230203u;
}

/* ---------------------------------------------------------------- compile */

/* One shaderc compiler for the whole process, never released. Releasing the
 * last compiler finalises glslang, which throws away its built-in symbol
 * tables; rebuilding them costs ~60 ms, far more than compiling a kernel, and
 * would make even a cache hit (which runs the preprocessor) that slow.
 * Compiling through one compiler from several threads at once is safe
 * (shaderc_compile_* take it as a const argument). */
static pthread_once_t compiler_once = PTHREAD_ONCE_INIT;
static shaderc_compiler_t process_compiler;

static void compiler_init(void)
{
    process_compiler = shaderc_compiler_initialize();
}

static shaderc_compiler_t get_compiler(void)
{
    pthread_once(&compiler_once, compiler_init);
    return process_compiler;
}

/* The inputs' part of every key: what the SPIR-V depends on besides the
 * included files. */
static void hash_inputs(hpl__hasher *h, const hpl__compile_input *in, bool force_version)
{
    hpl__hasher_add_str(h, SPV_CACHE_FORMAT);
    uint32_t ver = HPLVK_VERSION;
    hpl__hasher_add(h, &ver, sizeof ver);
    unsigned int spv_ver = 0, spv_rev = 0;
    shaderc_get_spv_version(&spv_ver, &spv_rev);
    hpl__hasher_add(h, &spv_ver, sizeof spv_ver);
    hpl__hasher_add(h, &spv_rev, sizeof spv_rev);
    char optstr[128];
    snprintf(optstr, sizeof optstr, "vulkan1.2 spv1.5 O0 nodebug force=%d/%d", force_version ? 1 : 0,
             DEFAULT_VERSION);
    hpl__hasher_add_str(h, optstr);
    hpl__hasher_add_str(h, hpl__prelude_glsl);
    for (const char *const *d = in->defines; d && *d; d++)
        hpl__hasher_add_str(h, *d);
    hpl__hasher_add_str(h, NULL);
    for (const char *const *d = in->include_dirs; d && *d; d++)
        hpl__hasher_add_str(h, *d);
    hpl__hasher_add_str(h, NULL);
    hpl__hasher_add_str(h, in->glsl);
}

static int check_spirv(const hpl__compile_input *in, const uint32_t *spirv, size_t words)
{
    return in->check ? in->check(in->check_user, spirv, words) : hpl__spirv_validate(spirv, words, NULL);
}

/* Loads the SPIR-V entry and checks it like compiled SPIR-V; false on a
 * miss. An entry with a sound header and checksum but a payload that fails
 * (a bug, a disk error, a tampered file) would fail every run: it is deleted
 * with a warning naming the file, and the caller compiles again. */
static bool load_spirv(hpl__cache *cache, hpl__hash key, const hpl__compile_input *in, const char *name,
                       uint32_t **spirv, size_t *words)
{
    void *data = NULL;
    size_t size = 0;
    if (!hpl__cache_load(cache, SPV_CACHE_KIND, key, &data, &size))
        return false;
    char why[1024];
    if (!is_spirv(data, size)) {
        snprintf(why, sizeof why, "the cached SPIR-V of '%s' is not SPIR-V (%zu bytes); compiling '%s' again", name,
                 size, name);
    } else if (check_spirv(in, data, size / 4) != HPL_OK) {
        snprintf(why, sizeof why, "the cached SPIR-V of '%s' fails its checks (%s); compiling '%s' again", name,
                 hpl_last_error(), name);
    } else {
        *spirv = data;
        *words = size / 4;
        return true;
    }
    hpl__cache_drop(cache, SPV_CACHE_KIND, key, why);
    hpl__free(data);
    return false;
}

/* Checks a direct-mode entry: every probe must still hold. On success
 * *key is the SPIR-V entry's key. */
static bool check_direct(hpl__cache *cache, hpl__hash direct_key, hpl__hash *key)
{
    unsigned char *data = NULL;
    size_t size = 0;
    if (!hpl__cache_load(cache, DEP_CACHE_KIND, direct_key, (void **)&data, &size))
        return false;
    bool ok = size >= 24 && memcmp(data, DEP_MAGIC, 8) == 0;
    if (ok) {
        memcpy(&key->lo, data + 8, 8);
        memcpy(&key->hi, data + 16, 8);
    }
    size_t pos = 24;
    char *path = NULL;
    while (ok && pos < size) {
        uint32_t plen = 0;
        unsigned char kind = data[pos++];
        if (size - pos < 4) {
            ok = false;
            break;
        }
        memcpy(&plen, data + pos, 4);
        pos += 4;
        if (size - pos < plen || (kind == PROBE_CONTENT && size - pos - plen < 24) ||
            (kind != PROBE_CONTENT && kind != PROBE_ABSENT)) {
            ok = false;
            break;
        }
        path = hpl__malloc((size_t)plen + 1);
        if (!path) {
            ok = false;
            break;
        }
        memcpy(path, data + pos, plen);
        path[plen] = '\0';
        pos += plen;
        if (kind == PROBE_ABSENT) {
            ok = !is_regular_file(path);
        } else {
            uint64_t want_len;
            hpl__hash want;
            memcpy(&want_len, data + pos, 8);
            memcpy(&want.lo, data + pos + 8, 8);
            memcpy(&want.hi, data + pos + 16, 8);
            pos += 24;
            size_t len = 0;
            int err = 0;
            char *text = is_regular_file(path) ? read_file(path, &len, &err) : NULL;
            if (text) {
                hpl__hash got = hash_bytes(text, len);
                ok = len == want_len && got.lo == want.lo && got.hi == want.hi;
                hpl__free(text);
            } else {
                ok = false;
            }
        }
        hpl__free(path);
        path = NULL;
    }
    hpl__free(data);
    return ok;
}

static void store_direct(hpl__cache *cache, hpl__hash direct_key, hpl__hash key, const include_ctx *ictx)
{
    if (ictx->record_failed)
        return;
    size_t size = 24 + ictx->rec_len;
    unsigned char *data = hpl__malloc(size);
    if (!data)
        return;
    memcpy(data, DEP_MAGIC, 8);
    memcpy(data + 8, &key.lo, 8);
    memcpy(data + 16, &key.hi, 8);
    if (ictx->rec_len)
        memcpy(data + 24, ictx->rec, ictx->rec_len);
    hpl__cache_store(cache, DEP_CACHE_KIND, direct_key, data, size);
    hpl__free(data);
}

int hpl__compile_glsl(const hpl__compile_input *in, hpl__cache *cache, uint32_t **spirv, size_t *words,
                      bool *from_cache)
{
    if (!in || !in->glsl || !spirv || !words)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "compile: no GLSL source");
    const char *name = in->name && *in->name ? in->name : "kernel";
    const size_t src_len = strlen(in->glsl);
    const bool force_version = !has_version_directive(in->glsl);
    const bool use_cache = cache && cache->dir;

    /* Malformed defines fail before anything else. */
    for (const char *const *d = in->defines; d && *d; d++) {
        size_t nlen;
        int rc = check_define(*d, &nlen);
        if (rc)
            return rc;
    }

    hpl__hash direct_key = {0, 0}, key = {0, 0};
    bool spv_tried = false; /* key's SPIR-V entry was loaded and missed */
    if (use_cache) {
        hpl__hasher h;
        hpl__hasher_init(&h);
        hpl__hasher_add_str(&h, "direct");
        hash_inputs(&h, in, force_version);
        hpl__hasher_add_str(&h, in->source_dir);
        direct_key = hpl__hasher_done(&h);
        if (check_direct(cache, direct_key, &key)) {
            if (load_spirv(cache, key, in, name, spirv, words)) {
                if (from_cache)
                    *from_cache = true;
                return HPL_OK;
            }
            spv_tried = true; /* missing or dropped: do not load (and warn) twice */
        }
    }

    include_ctx ictx = {.in = in};
    shaderc_compile_options_t opts = NULL;
    int rc = make_options(in, &ictx, force_version, &opts);
    if (rc)
        return rc;
    shaderc_compiler_t compiler = get_compiler();
    shaderc_compilation_result_t res = NULL;
    if (!compiler) {
        rc = hpl__fail(HPL_ERROR_INTERNAL, "%s: cannot initialise shaderc", name);
        goto out;
    }

    if (use_cache) {
        ictx.record = true;
        res = shaderc_compile_into_preprocessed_text(compiler, in->glsl, src_len, shaderc_glsl_compute_shader,
                                                     name, "main", opts);
        ictx.record = false;
        if (!res || shaderc_result_get_compilation_status(res) != shaderc_compilation_status_success) {
            rc = compile_failure(res, name);
            goto out;
        }
        hpl__hash tried = key;
        hpl__hasher h;
        hpl__hasher_init(&h);
        hpl__hasher_add_str(&h, "preprocessed");
        hash_inputs(&h, in, force_version);
        const char *pre = shaderc_result_get_bytes(res);
        uint64_t pre_len = shaderc_result_get_length(res);
        hpl__hasher_add(&h, &pre_len, sizeof pre_len);
        hpl__hasher_add(&h, pre, (size_t)pre_len);
        key = hpl__hasher_done(&h);
        shaderc_result_release(res);
        res = NULL;
        bool known_miss = spv_tried && tried.lo == key.lo && tried.hi == key.hi;
        if (!known_miss && load_spirv(cache, key, in, name, spirv, words)) {
            store_direct(cache, direct_key, key, &ictx);
            if (from_cache)
                *from_cache = true;
            rc = HPL_OK;
            goto out;
        }
    }

    res = shaderc_compile_into_spv(compiler, in->glsl, src_len, shaderc_glsl_compute_shader, name, "main", opts);
    if (!res || shaderc_result_get_compilation_status(res) != shaderc_compilation_status_success) {
        rc = compile_failure(res, name);
        goto out;
    }
    {
        size_t size = shaderc_result_get_length(res);
        const char *bytes = shaderc_result_get_bytes(res);
        if (!is_spirv(bytes, size)) {
            rc = hpl__fail(HPL_ERROR_INTERNAL, "%s: shaderc produced no SPIR-V", name);
            goto out;
        }
        uint32_t *copy = hpl__malloc(size);
        if (!copy) {
            rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory for SPIR-V", name);
            goto out;
        }
        memcpy(copy, bytes, size);
        /* shaderc's output is checked too (it guards against compiler bugs);
         * what fails is never stored. */
        rc = check_spirv(in, copy, size / 4);
        if (rc != HPL_OK) {
            hpl__free(copy);
            goto out;
        }
        if (use_cache) {
            hpl__cache_store(cache, SPV_CACHE_KIND, key, copy, size);
            store_direct(cache, direct_key, key, &ictx);
        }
        *spirv = copy;
        *words = size / 4;
        if (from_cache)
            *from_cache = false;
        rc = HPL_OK;
    }
out:
    if (res)
        shaderc_result_release(res);
    shaderc_compile_options_release(opts);
    hpl__free(ictx.rec);
    return rc;
}
