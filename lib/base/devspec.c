/* Parsing and resolving device lists ("cpu:4", "gpu1,gpu0", "all"). */
#include "devspec.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct selection {
    int physical[64];
    int count;
} selection;

static void select_type(selection *s, int n, const uint32_t *types, uint32_t mask)
{
    for (int i = 0; i < n && s->count < 64; i++)
        if (types[i] & mask)
            s->physical[s->count++] = i;
}

/* Every GPU with discrete ones first: the usual order of speed. */
static void select_gpus(selection *s, int n, const uint32_t *types)
{
    select_type(s, n, types, HPL_DEVICE_DISCRETE_GPU);
    select_type(s, n, types, HPL_DEVICE_GPU & ~HPL_DEVICE_DISCRETE_GPU);
}

static bool parse_uint(const char *s, size_t len, int *out)
{
    if (len == 0 || len > 6)
        return false;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static int pick_nth(selection *s, const char *what, int nth, const char *entry, size_t len)
{
    if (nth >= s->count)
        return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "device list entry '%.*s': there %s only %d %s device%s", (int)len,
                         entry, s->count == 1 ? "is" : "are", s->count, what, s->count == 1 ? "" : "s");
    s->physical[0] = s->physical[nth];
    s->count = 1;
    return HPL_OK;
}

/* Resolves one selector (without ":count") into physical devices. */
static int resolve_selector(const char *sel, size_t len, int n, const uint32_t *types, selection *s)
{
    int nth;
    s->count = 0;
    if (len == 3 && !strncmp(sel, "all", 3)) {
        select_gpus(s, n, types);
        select_type(s, n, types, ~(uint32_t)HPL_DEVICE_GPU);
    } else if (len >= 3 && !strncmp(sel, "cpu", 3)) {
        select_type(s, n, types, HPL_DEVICE_CPU);
        if (len > 3)
            return parse_uint(sel + 3, len - 3, &nth) ? pick_nth(s, "CPU", nth, sel, len)
                                                      : hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "device list entry '%.*s' is not cpuN", (int)len, sel);
    } else if (len >= 3 && !strncmp(sel, "gpu", 3)) {
        select_gpus(s, n, types);
        if (len > 3)
            return parse_uint(sel + 3, len - 3, &nth) ? pick_nth(s, "GPU", nth, sel, len)
                                                      : hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "device list entry '%.*s' is not gpuN", (int)len, sel);
    } else if (parse_uint(sel, len, &nth)) {
        if (nth >= n)
            return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE, "device list entry '%.*s': the machine has %d Vulkan device%s",
                             (int)len, sel, n, n == 1 ? "" : "s");
        s->physical[s->count++] = nth;
    } else {
        return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE,
                         "device list entry '%.*s' is not one of cpu, gpu, cpuN, gpuN, N, all (then optionally :COUNT, "
                         "then optionally +zc)",
                         (int)len, sel);
    }
    if (s->count == 0)
        return hpl__fail(HPL_ERROR_NO_DEVICE, "device list entry '%.*s' matches no device on this machine", (int)len, sel);
    return HPL_OK;
}

static int append(hpl__devspec_entry *out, int max, int *count, hpl__devspec_entry e)
{
    if (*count >= max)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "device list opens more than %d logical devices", max);
    out[(*count)++] = e;
    return HPL_OK;
}

/* One "SELECTOR[:COUNT][+zc]" entry. */
static int resolve_entry(const char *entry, size_t len, int n, const uint32_t *types, hpl__devspec_entry *out, int max,
                         int *count)
{
    const char *plus = memchr(entry, '+', len);
    size_t body = plus ? (size_t)(plus - entry) : len;
    bool zero_copy = false;
    if (plus) {
        const char *mod = plus + 1;
        size_t mod_len = len - body - 1;
        if (mod_len != 2 || strncmp(mod, "zc", 2))
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                             "device list entry '%.*s': unknown modifier '+%.*s' (the only modifier is +zc, and it "
                             "comes last: SELECTOR[:COUNT][+zc])",
                             (int)len, entry, (int)mod_len, mod);
        zero_copy = true;
    }
    const char *colon = memchr(entry, ':', body);
    size_t sel_len = colon ? (size_t)(colon - entry) : body;
    if (sel_len == 0)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "device list entry '%.*s' has no selector (cpu, gpu, cpuN, gpuN, N or all) before its '%c'",
                         (int)len, entry, *entry);
    int copies = 1;
    if (colon && (!parse_uint(colon + 1, body - sel_len - 1, &copies) || copies < 1))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "device list entry '%.*s': the count after ':' must be a number >= 1",
                         (int)len, entry);
    selection s;
    int rc = resolve_selector(entry, sel_len, n, types, &s);
    for (int i = 0; rc == HPL_OK && i < s.count; i++) {
        /* Replica numbers count every logical device of that physical one. */
        int replica = 0;
        for (int j = 0; j < *count; j++)
            replica += out[j].physical == s.physical[i];
        for (int c = 0; rc == HPL_OK && c < copies; c++)
            rc = append(out, max, count, (hpl__devspec_entry){s.physical[i], replica + c, zero_copy, entry, (int)len});
    }
    return rc;
}

static int resolve_default(int n, const uint32_t *types, hpl__devspec_entry *out, int max, int *count)
{
    selection s = {.count = 0};
    select_gpus(&s, n, types);
    if (s.count == 0)
        select_type(&s, n, types, HPL_DEVICE_CPU);
    if (s.count == 0)
        select_type(&s, n, types, HPL_DEVICE_ANY);
    if (s.count == 0)
        return hpl__fail(HPL_ERROR_NO_DEVICE, "no Vulkan device found (is a driver such as mesa-vulkan-drivers installed?)");
    for (int i = 0; i < s.count && i < max; i++)
        out[(*count)++] = (hpl__devspec_entry){s.physical[i], 0, false, NULL, 0};
    return HPL_OK;
}

int hpl__devspec_resolve(const char *spec, int physical_count, const uint32_t *types, hpl__devspec_entry *out,
                         int max, int *count)
{
    *count = 0;
    if (!spec || !*spec)
        return resolve_default(physical_count, types, out, max, count);
    const char *p = spec;
    for (int index = 1;; index++) {
        size_t len = strcspn(p, ",");
        const char *entry = p;
        size_t entry_len = len;
        while (entry_len && isspace((unsigned char)*entry)) {
            entry++;
            entry_len--;
        }
        while (entry_len && isspace((unsigned char)entry[entry_len - 1]))
            entry_len--;
        if (entry_len == 0)
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                             "device list '%s': entry %d is empty (a leading, trailing or doubled comma, or only "
                             "spaces)",
                             spec, index);
        int rc = resolve_entry(entry, entry_len, physical_count, types, out, max, count);
        if (rc != HPL_OK)
            return rc;
        if (!p[len])
            return HPL_OK;
        p += len + 1;
    }
}
