/* Kernels: sources to SPIR-V (compile.c), reflection (reflect.c), variants
 * per device type, and pipelines per (variant, device, local size). */
#include "api.h"

#include "compile.h"
#include "submit.h"
#include "validate.h"
#include "vk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int hpl__kernel_get(hpl_context *ctx, hpl_kernel handle, hpl__kernel **out)
{
    hpl__kernel *k = hpl__pool_get(&ctx->kernels, handle.id);
    if (!k)
        return hpl__pool_fail(&ctx->kernels, handle.id, "kernel");
    *out = k;
    return HPL_OK;
}

const hpl__variant *hpl__kernel_variant_for(const hpl__kernel *k, const hpl__device *d)
{
    for (int i = 1; i < k->variant_count; i++)
        if (k->variants[i].device_types & d->info.type)
            return &k->variants[i];
    return &k->variants[0];
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int read_file(const char *path, char **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return hpl__fail(HPL_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = hpl__realloc(buf, cap);
            if (!nb) {
                hpl__free(buf);
                fclose(f);
                return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory reading '%s'", path);
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, 4096, f);
        len += got;
        if (got < 4096)
            break;
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed) {
        hpl__free(buf);
        return hpl__fail(HPL_ERROR_IO, "error reading '%s'", path);
    }
    buf[len] = 0;
    *data = buf;
    *size = len;
    return HPL_OK;
}

/* The caller names the source (build_variant prefixes its name). */
static int copy_spirv(const uint32_t *words, size_t n, uint32_t **out)
{
    if (!words || n < 5)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "not SPIR-V: %zu words, a module has at least 5", words ? n : 0);
    if (n > SIZE_MAX / sizeof *words)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "spirv_words %zu is not a number of words in memory", n);
    if (words[0] != 0x07230203u)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "not SPIR-V: its magic number (first word) is 0x%08x, not 0x07230203",
                         words[0]);
    *out = hpl__malloc(n * sizeof *words);
    if (!*out)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    memcpy(*out, words, n * sizeof *words);
    return HPL_OK;
}

static int reflect_check(void *user, const uint32_t *spirv, size_t words)
{
    return hpl__reflect(spirv, words, user);
}

/* Any form of source to SPIR-V words, validated and reflected into *r
 * (GLSL: by the compiler's check, so that a cache entry that fails is
 * dropped and compiled again). */
static int source_to_spirv(hpl_context *ctx, const hpl_kernel_desc *desc, const hpl_kernel_source *src,
                           uint32_t **spirv, size_t *words, hpl__reflection *r)
{
    int rc = HPL_OK;
    if (src->spirv) {
        *words = src->spirv_words;
        rc = copy_spirv(src->spirv, src->spirv_words, spirv);
        return rc == HPL_OK ? hpl__reflect(*spirv, *words, r) : rc;
    }
    char *text = NULL;
    size_t size = 0;
    char dir[4096] = "";
    if (src->path) {
        rc = read_file(src->path, &text, &size);
        if (rc == HPL_OK && ends_with(src->path, ".spv")) {
            if (size % 4)
                rc = hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "not SPIR-V: its size (%zu bytes) is not a multiple of 4",
                               size);
            else
                rc = copy_spirv((const uint32_t *)text, size / 4, spirv);
            *words = size / 4;
            hpl__free(text);
            return rc == HPL_OK ? hpl__reflect(*spirv, *words, r) : rc;
        }
        /* The file's directory: "." for a bare name ("saxpy.comp"), "/" for
         * a file at the root. */
        const char *slash = strrchr(src->path, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == src->path)
            snprintf(dir, sizeof dir, "/");
        else
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - src->path), src->path);
    } else if (!src->glsl) {
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "the kernel source has none of glsl, path, spirv");
    }
    if (rc != HPL_OK)
        return rc;
    hpl__compile_input in = {.glsl = text ? text : src->glsl,
                             .name = src->name ? src->name : src->path ? src->path : "kernel",
                             .defines = desc->defines,
                             .include_dirs = desc->include_dirs,
                             .source_dir = dir[0] ? dir : NULL,
                             .check = reflect_check,
                             .check_user = r};
    rc = hpl__compile_glsl(&in, &ctx->cache, spirv, words, NULL);
    hpl__free(text);
    return rc;
}

static bool same_signature(const hpl__reflection *a, const hpl__reflection *b)
{
    if (a->arg_count != b->arg_count)
        return false;
    for (int i = 0; i < a->arg_count; i++) {
        const hpl_arg_info *x = &a->args[i], *y = &b->args[i];
        if (x->kind != y->kind || x->type != y->type || x->ndims != y->ndims || x->access != y->access)
            return false;
    }
    return true;
}

static const char *source_name(const hpl_kernel_source *s)
{
    return s->name ? s->name : s->path ? s->path : "kernel";
}

static int build_variant(hpl_context *ctx, const hpl_kernel_desc *desc, const hpl_kernel_source *src,
                         uint32_t device_types, hpl__variant *v)
{
    memset(v, 0, sizeof *v);
    v->device_types = device_types;
    int rc = source_to_spirv(ctx, desc, src, &v->spirv, &v->words, &v->reflection);
    /* Compile errors read "name:line: ...", I/O errors name the file. */
    if (rc != HPL_OK && rc != HPL_ERROR_COMPILE && rc != HPL_ERROR_IO)
        hpl__error_prefix(source_name(src));
    return rc;
}

static void variant_free(hpl_context *ctx, hpl__variant *v)
{
    for (uint32_t i = 0; i < v->pipeline_count; i++)
        vkDestroyPipeline(ctx->devices[v->pipelines[i].device].device, v->pipelines[i].pipeline, NULL);
    for (int d = 0; d < ctx->device_count; d++)
        if (v->modules[d])
            vkDestroyShaderModule(ctx->devices[d].device, v->modules[d], NULL);
    hpl__free(v->pipelines);
    hpl__free(v->spirv);
}

static void kernel_free(hpl_context *ctx, hpl__kernel *k)
{
    for (int i = 0; i < k->variant_count; i++)
        variant_free(ctx, &k->variants[i]);
    hpl__free(k->name);
    hpl__free(k);
}

static int build_kernel(hpl_context *ctx, const hpl_kernel_desc *desc, hpl__kernel *k)
{
    const hpl_kernel_source *src = &desc->source;
    int rc = build_variant(ctx, desc, src, 0, &k->variants[0]);
    k->variant_count = 1;
    for (int i = 0; rc == HPL_OK && i < HPL_MAX_VARIANTS && desc->variants[i].device_types; i++) {
        const hpl_kernel_variant *var = &desc->variants[i];
        rc = build_variant(ctx, desc, &var->source, var->device_types, &k->variants[k->variant_count]);
        k->variant_count++;
        if (rc == HPL_OK && !same_signature(&k->variants[0].reflection, &k->variants[k->variant_count - 1].reflection))
            rc = hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                           "variant %d declares other arguments than the generic source: every variant must take the same",
                           i);
    }
    return rc;
}

int hpl__kernel_create_locked(hpl_context *ctx, const hpl_kernel_desc *desc, hpl__kernel **out)
{
    hpl__kernel *k = hpl__calloc(1, sizeof *k);
    if (!k)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    k->name = hpl__strdup(source_name(&desc->source));
    int rc = k->name ? build_kernel(ctx, desc, k) : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (rc != HPL_OK) {
        kernel_free(ctx, k);
        return rc;
    }
    *out = k;
    return HPL_OK;
}

void hpl__kernel_free(hpl_context *ctx, hpl__kernel *k)
{
    kernel_free(ctx, k);
}

int hpl_kernel_create(hpl_context *ctx, const hpl_kernel_desc *desc, hpl_kernel *out)
{
    if (!ctx || !desc || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_kernel_create: %s is NULL",
                         !ctx ? "ctx" : !desc ? "desc" : "out");
    /* Compiling takes long: do it without holding the context. */
    hpl__kernel *k = NULL;
    int rc = hpl__kernel_create_locked(ctx, desc, &k);
    if (rc != HPL_OK) {
        hpl__error_prefix("hpl_kernel_create");
        return rc;
    }
    HPL__LOCK(ctx);
    hpl__handle id = hpl__pool_add(&ctx->kernels, k);
    if (!id)
        kernel_free(ctx, k);
    else
        k->id = id;
    HPL__UNLOCK(ctx);
    if (!id)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "hpl_kernel_create: out of host memory");
    out->id = id;
    return HPL_OK;
}

int hpl_kernel_destroy(hpl_context *ctx, hpl_kernel kernel)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_kernel_destroy: ctx is NULL");
    HPL__LOCK(ctx);
    hpl__kernel *k = hpl__pool_remove(&ctx->kernels, kernel.id);
    int rc = HPL_OK;
    if (!k) {
        rc = hpl__pool_fail(&ctx->kernels, kernel.id, "kernel");
        hpl__error_prefix("hpl_kernel_destroy");
    } else {
        /* Pipelines may be in use by submitted work. */
        hpl__wait_idle(ctx);
        kernel_free(ctx, k);
    }
    HPL__UNLOCK(ctx);
    return rc;
}

static void free_each(void *object, void *user)
{
    kernel_free(user, object);
}

void hpl__kernel_destroy_all(hpl_context *ctx)
{
    hpl__pool_each(&ctx->kernels, free_each, ctx);
    hpl__pool_free(&ctx->kernels);
    if (ctx->fill_kernel)
        kernel_free(ctx, ctx->fill_kernel);
    ctx->fill_kernel = NULL;
    for (int t = 0; t < HPL_TYPE_COUNT_; t++) {
        if (ctx->reduce_kernels[t])
            kernel_free(ctx, ctx->reduce_kernels[t]);
        ctx->reduce_kernels[t] = NULL;
    }
}

static int kernel_query(hpl_context *ctx, hpl_kernel kernel, const char *fn, const hpl__reflection **r)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    HPL__LOCK(ctx);
    hpl__kernel *k = NULL;
    int rc = hpl__kernel_get(ctx, kernel, &k);
    if (rc == HPL_OK)
        *r = &k->variants[0].reflection; /* immutable while the kernel lives */
    else
        hpl__error_prefix(fn);
    HPL__UNLOCK(ctx);
    return rc;
}

int hpl_kernel_arg_count(hpl_context *ctx, hpl_kernel kernel)
{
    const hpl__reflection *r = NULL;
    int rc = kernel_query(ctx, kernel, "hpl_kernel_arg_count", &r);
    return rc == HPL_OK ? r->arg_count : rc;
}

int hpl_kernel_get_arg_info(hpl_context *ctx, hpl_kernel kernel, int index, hpl_arg_info *out)
{
    const hpl__reflection *r = NULL;
    int rc = kernel_query(ctx, kernel, "hpl_kernel_get_arg_info", &r);
    if (rc != HPL_OK)
        return rc;
    if (!out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_kernel_get_arg_info: out is NULL");
    if (index < 0 || index >= r->arg_count)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_kernel_get_arg_info: index %d is out of range (the kernel has %d arguments)",
                         index, r->arg_count);
    *out = r->args[index];
    return HPL_OK;
}

int hpl_kernel_get_local_size(hpl_context *ctx, hpl_kernel kernel, uint32_t out[3], bool *choosable)
{
    const hpl__reflection *r = NULL;
    int rc = kernel_query(ctx, kernel, "hpl_kernel_get_local_size", &r);
    if (rc != HPL_OK)
        return rc;
    if (!out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_kernel_get_local_size: out is NULL");
    memcpy(out, r->local_size, sizeof r->local_size);
    /* The library chooses only when the kernel declares no size itself. */
    if (choosable)
        *choosable = r->local_size_choosable && r->local_size[0] * r->local_size[1] * r->local_size[2] == 1;
    return HPL_OK;
}

/* ---- pipelines -------------------------------------------------------- */

static int module_for(hpl__variant *v, hpl__device *d, VkShaderModule *out)
{
    if (!v->modules[d->index]) {
        VkShaderModuleCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                       .codeSize = v->words * 4,
                                       .pCode = v->spirv};
        VkResult r = vkCreateShaderModule(d->device, &ci, NULL, &v->modules[d->index]);
        if (r != VK_SUCCESS)
            return hpl__vk_error(r, "vkCreateShaderModule");
    }
    *out = v->modules[d->index];
    return HPL_OK;
}

/* What device d must carry, checked before the driver sees the module: the
 * argument block within its uniform buffer range, the features the module's
 * capabilities need, its shared memory. */
static int check_device_can_run(const hpl__variant *v, const hpl__device *d)
{
    const hpl__reflection *r = &v->reflection;
    char what[sizeof d->info.name + 64];
    snprintf(what, sizeof what, "device %s's maxUniformBufferRange", d->info.name);
    int rc = hpl__args_fit(r, HPL__MIN(HPL__ARG_RANGE, d->props.limits.maxUniformBufferRange), HPL_ERROR_TOO_LARGE,
                           what);
    if (rc != HPL_OK)
        return rc;
    uint32_t missing = r->features & ~d->features;
    for (unsigned bit = 0; missing && bit < HPL__FEATURE_COUNT; bit++)
        if (missing & (1u << bit))
            return hpl__fail(HPL_ERROR_UNSUPPORTED, "the kernel needs %s, which device %s lacks (or its VkDevice does not enable)",
                             hpl__feature_name(bit), d->info.name);
    if (r->shared_bytes > d->props.limits.maxComputeSharedMemorySize)
        return hpl__fail(HPL_ERROR_TOO_LARGE,
                         "the kernel's shared (workgroup) variables take %llu bytes; device %s allows %u",
                         (unsigned long long)r->shared_bytes, d->info.name, d->props.limits.maxComputeSharedMemorySize);
    return HPL_OK;
}

int hpl__pipeline_get(hpl_context *ctx, hpl__variant *v, hpl__device *d, const uint32_t local[3], int walk,
                      VkPipeline *out)
{
    (void)ctx;
    for (uint32_t i = 0; i < v->pipeline_count; i++) {
        const hpl__pipeline *p = &v->pipelines[i];
        if (p->device == d->index && !memcmp(p->local, local, sizeof p->local) && p->walk == walk) {
            *out = p->pipeline;
            return HPL_OK;
        }
    }
    int rc = check_device_can_run(v, d);
    if (rc != HPL_OK)
        return rc;
    VkShaderModule module = VK_NULL_HANDLE;
    rc = module_for(v, d, &module);
    if (rc != HPL_OK)
        return rc;
    hpl__pipeline *list = hpl__realloc(v->pipelines, (v->pipeline_count + 1) * sizeof *list);
    if (!list)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    v->pipelines = list;
    /* The local size when the library chooses it, the walk, bounds checks
     * (constants a module lacks are ignored by the driver). */
    const hpl__reflection *refl = &v->reflection;
    uint32_t values[5] = {local[0], local[1], local[2], (uint32_t)walk, d->bounds_checks};
    VkSpecializationMapEntry all[5] = {
        {0, 0, 4}, {1, 4, 4}, {2, 8, 4}, {HPL__WALK_SPEC_ID, 12, 4}, {HPL__CHECKED_SPEC_ID, 16, 4}};
    VkSpecializationMapEntry entries[5];
    uint32_t count = 0;
    for (uint32_t i = 0; i < 5; i++)
        if (i < 3 ? refl->local_size_choosable : i == 3 ? refl->walkable : refl->checkable)
            entries[count++] = all[i];
    VkSpecializationInfo spec = {.mapEntryCount = count, .pMapEntries = entries, .dataSize = 20, .pData = values};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = v->reflection.entry_point,
                  .pSpecializationInfo = count ? &spec : NULL},
        .layout = d->pipeline_layout};
    hpl__pipeline *p = &v->pipelines[v->pipeline_count];
    VkResult r = vkCreateComputePipelines(d->device, d->pipeline_cache, 1, &ci, NULL, &p->pipeline);
    if (r != VK_SUCCESS) {
        /* Valid SPIR-V can still be more than a driver handles (Mesa refuses
         * some valid control flow). */
        char what[sizeof d->info.name + 96];
        snprintf(what, sizeof what, "device %s could not compile the kernel: vkCreateComputePipelines",
                 d->info.name);
        return hpl__vk_error(r, what);
    }
    p->device = d->index;
    memcpy(p->local, local, sizeof p->local);
    p->walk = walk;
    v->pipeline_count++;
    *out = p->pipeline;
    return HPL_OK;
}
