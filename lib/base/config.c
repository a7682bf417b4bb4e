/* Configuration values: sizes, the zero-copy mode, zero-copy devices. */
#include "config.h"

#include <ctype.h>
#include <string.h>

#define SIZE_HINT "give bytes, or a number with a K, M, G or T suffix (4096, 64M, 1GiB)"

int hpl__parse_size(const char *name, const char *text, uint64_t *out)
{
    if (!text || !*text)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s is empty: %s", name, SIZE_HINT);
    const char *p = text;
    if (*p == '-')
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s='%s' is negative: %s", name, text, SIZE_HINT);
    if (!isdigit((unsigned char)*p))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s='%s' does not start with a number: %s", name, text,
                         SIZE_HINT);
    uint64_t v = 0;
    bool overflow = false;
    for (; isdigit((unsigned char)*p); p++)
        overflow = overflow || !hpl__mul_u64(v, 10, &v) || !hpl__add_u64(v, (uint64_t)(*p - '0'), &v);
    int shift = 0;
    switch (*p) {
    case 'K': case 'k': shift = 10; break;
    case 'M': case 'm': shift = 20; break;
    case 'G': case 'g': shift = 30; break;
    case 'T': case 't': shift = 40; break;
    default: break;
    }
    if (shift) {
        p++;
        if (*p == 'i' || *p == 'I')
            p++;
    }
    if (*p == 'B' || *p == 'b')
        p++;
    if (*p)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s='%s' has '%s' after the size: %s", name, text, p,
                         SIZE_HINT);
    if (overflow || v > (UINT64_MAX >> shift))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s='%s' is more than 2^64-1 bytes", name, text);
    *out = v << shift;
    return HPL_OK;
}

int hpl__parse_count(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    bool digits = text && *text, overflow = false;
    for (const char *p = text; digits && *p; p++) {
        digits = isdigit((unsigned char)*p);
        overflow = overflow || !hpl__mul_u64(v, 10, &v) || !hpl__add_u64(v, (uint64_t)(*p - '0'), &v);
    }
    if (!digits || overflow || v < min || v > max)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s='%.40s' is not a whole number from %llu to %llu", name,
                         text ? text : "", (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return HPL_OK;
}

int hpl__parse_switch(const char *name, const char *text, bool fallback, const char *off, const char *on,
                      bool *out)
{
    if (text && *text && strcmp(text, "0") && strcmp(text, "1"))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s='%.40s' is neither 0 (%s) nor 1 (%s)", name, text, off, on);
    *out = text && *text ? text[0] == '1' : fallback;
    return HPL_OK;
}

int hpl__parse_zero_copy(int desc_mode, const char *env, int *mode, const char **source)
{
    static const char *const desc_names[] = {"hpl_context_desc.zero_copy = HPL_ZERO_COPY_AUTO",
                                              "hpl_context_desc.zero_copy = HPL_ZERO_COPY_ON",
                                              "hpl_context_desc.zero_copy = HPL_ZERO_COPY_OFF"};
    if (desc_mode < HPL_ZERO_COPY_AUTO || desc_mode > HPL_ZERO_COPY_OFF)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "hpl_context_desc.zero_copy = %d is not an hpl_zero_copy value (AUTO 0, ON 1, OFF 2)",
                         desc_mode);
    if (desc_mode != HPL_ZERO_COPY_AUTO || !env || !*env) {
        *mode = desc_mode;
        *source = desc_names[desc_mode];
        return HPL_OK;
    }
    if (strcmp(env, "0") && strcmp(env, "1"))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "HPLVK_ZERO_COPY='%s' is neither 0 (off) nor 1 (on); unset it for the default", env);
    *mode = env[0] == '1' ? HPL_ZERO_COPY_ON : HPL_ZERO_COPY_OFF;
    *source = env[0] == '1' ? "HPLVK_ZERO_COPY=1" : "HPLVK_ZERO_COPY=0";
    return HPL_OK;
}

static bool shares_memory(uint32_t type)
{
    return (type & (HPL_DEVICE_CPU | HPL_DEVICE_INTEGRATED_GPU)) != 0;
}

int hpl__zero_copy_decide(int mode, const char *source, hpl__zc_device *devices, int count)
{
    for (int i = 0; i < count; i++) {
        const hpl__zc_device *d = &devices[i];
        if (!d->asked)
            continue;
        if (mode == HPL_ZERO_COPY_OFF)
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                             "device list entry '%s' asks for a zero-copy device (+zc) but %s turns zero copy off",
                             d->entry, source);
        if (!shares_memory(d->type))
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                             "device list entry '%s': device %d (%s) does not share memory with the host (only a "
                             "CPU or an integrated GPU does), so it cannot be zero-copy (+zc)",
                             d->entry, i, d->name);
        if (!d->host_import)
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                             "device list entry '%s': device %d (%s) cannot import host memory "
                             "(no VK_EXT_external_memory_host, or HPLVK_HOST_IMPORT=0), so it cannot be zero-copy (+zc)",
                             d->entry, i, d->name);
    }
    for (int i = 0; i < count; i++) {
        hpl__zc_device *d = &devices[i];
        int opened = 0;
        for (int j = 0; j < count; j++)
            opened += devices[j].physical == d->physical;
        bool can = shares_memory(d->type) && d->host_import;
        d->zero_copy = can && (mode == HPL_ZERO_COPY_ON || (mode == HPL_ZERO_COPY_AUTO && (d->asked || opened == 1)));
    }
    return HPL_OK;
}
