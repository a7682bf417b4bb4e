/* Error codes, their names and descriptions (from HPL_RESULT_LIST), and the
 * per-thread message of the last failure. */
#include "common.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];
static _Thread_local unsigned failures;

const char *hpl_error_string(int code)
{
    switch (code) {
#define HPL__RESULT_TEXT(name, value, text) \
    case value:                             \
        return text;
        HPL_RESULT_LIST(HPL__RESULT_TEXT)
#undef HPL__RESULT_TEXT
    }
    return "unknown error code";
}

const char *hpl_error_name(int code)
{
    switch (code) {
#define HPL__RESULT_NAME(name, value, text) \
    case value:                             \
        return "HPL_" #name;
        HPL_RESULT_LIST(HPL__RESULT_NAME)
#undef HPL__RESULT_NAME
    }
    return "HPL_UNKNOWN";
}

const char *hpl_last_error(void)
{
    return last_error;
}

int hpl__vfail(int code, const char *fmt, va_list ap)
{
    failures++;
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    return code;
}

int hpl__fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hpl__vfail(code, fmt, ap);
    va_end(ap);
    return code;
}

unsigned hpl__error_count(void)
{
    return failures;
}

void hpl__error_prefix(const char *prefix)
{
    /* Shift the message right to make room; truncate at the end if needed. */
    size_t plen = strlen(prefix) + 2, mlen = strlen(last_error);
    if (plen >= sizeof last_error)
        return;
    if (plen + mlen >= sizeof last_error)
        mlen = sizeof last_error - plen - 1;
    memmove(last_error + plen, last_error, mlen);
    last_error[plen + mlen] = 0;
    memcpy(last_error, prefix, plen - 2);
    memcpy(last_error + plen - 2, ": ", 2);
}

uint32_t hpl_version(void)
{
    return HPLVK_VERSION;
}
