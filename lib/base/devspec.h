/* The device list syntax of HPLVK_DEVICES / hpl_context_desc.devices,
 * resolved against the machine's physical devices. Pure logic. */
#ifndef HPL_DEVSPEC_H
#define HPL_DEVSPEC_H

#include "common.h"

typedef struct hpl__devspec_entry {
    int physical;      /* index among the physical devices */
    int replica;       /* 0..count-1 of the logical devices opened on it */
    bool zero_copy;    /* the entry carries +zc */
    const char *entry; /* the entry that opened it, inside spec (entry_len */
    int entry_len;     /* characters, spaces trimmed); NULL for the default */
} hpl__devspec_entry;

/* spec: NULL or "" for the default (every GPU, discrete first; the CPU
 * devices when there is no GPU; else everything). Otherwise comma-separated
 * entries SELECTOR[:COUNT][+zc], spaces around an entry ignored; an empty
 * entry (a leading, trailing or doubled comma, or only spaces) is an error.
 * types[i] is the hpl_device_type of physical device i. Fills out[0..*count)
 * in order. Errors name the list or the offending entry. */
int hpl__devspec_resolve(const char *spec, int physical_count, const uint32_t *types, hpl__devspec_entry *out,
                         int max, int *count);

#endif
