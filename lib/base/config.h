/* Configuration values from the environment and hpl_context_desc: sizes,
 * the zero-copy mode, and which devices end up zero-copy. Pure logic (no
 * Vulkan), unit-tested on its own. Every failure is HPL_ERROR_INVALID_ARGUMENT
 * with a message naming the variable (or entry) and the value, and leaves the
 * outputs untouched. */
#ifndef HPL_CONFIG_H
#define HPL_CONFIG_H

#include "common.h"

/* A size in bytes: DIGITS, optionally followed by K, M, G or T (powers of
 * 1024, either case), optionally followed by "i" (after a unit) and "B"
 * ("64M", "64MiB", "64mb", "4096", "4096B"). No sign, no spaces, nothing
 * after; at most 2^64-1 bytes after the suffix. `name` is the variable
 * named in messages. */
int hpl__parse_size(const char *name, const char *text, uint64_t *out);

/* A count: DIGITS alone, from min to max (no sign, suffix or spaces).
 * `name` is the variable named in messages. */
int hpl__parse_count(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* A switch variable `name` whose value is `text` (NULL: unset): unset or
 * "" gives fallback, "0" false, "1" true; anything else fails, the message
 * saying what 0 and 1 mean (`off`, `on`: "stage every host transfer"). */
int hpl__parse_switch(const char *name, const char *text, bool fallback, const char *off, const char *on,
                      bool *out);

/* The zero-copy mode: desc_mode (an hpl_zero_copy), or when it is AUTO and
 * env (HPLVK_ZERO_COPY) is set and not empty, "0" (OFF) or "1" (ON).
 * *source gets what set the mode, for messages: "HPLVK_ZERO_COPY=0",
 * "hpl_context_desc.zero_copy = HPL_ZERO_COPY_OFF", ... */
int hpl__parse_zero_copy(int desc_mode, const char *env, int *mode, const char **source);

/* One opened logical device, as far as zero copy is concerned. */
typedef struct hpl__zc_device {
    const char *entry; /* the device list entry that opened it ("cpu+zc") */
    const char *name;  /* the device's name */
    uint32_t type;     /* hpl_device_type */
    bool host_import;  /* VK_EXT_external_memory_host usable */
    int physical;      /* physical device index */
    bool asked;        /* its entry carries +zc */
    bool zero_copy;    /* out */
} hpl__zc_device;

/* Decides which devices work on the host's copy (zero_copy), for a mode
 * from hpl__parse_zero_copy (source: its *source). A device can be zero-copy
 * when it shares memory with the host (a CPU or an integrated GPU) and can
 * import host memory. ON: every such device. OFF: none, and a +zc entry is
 * an error naming the entry and the source. AUTO: such a device when its
 * entry asks (+zc), or when its physical device is opened once. A +zc entry
 * on a device that cannot be zero-copy is an error naming the entry. */
int hpl__zero_copy_decide(int mode, const char *source, hpl__zc_device *devices, int count);

#endif
