/*
 * sample_args.h — numbers on the command line, read the same way by every
 * sample, benchmark and twin: a size, a count or a budget is all of its
 * argument or an error that names it, never the digits before the first
 * character that is not one ("3e8" read as 3, "12abc" as 12).
 *
 * Pure C11: no hplvk, no Vulkan, so that the twins (which link neither) can
 * include it through life_host.h, matmul_host.h and jacobi_host.h; sample_util.h includes
 * it for the hplvk samples. Header-only (static functions). Define
 * SAMPLE_NAME (the program's name, for messages) before including it.
 */
#ifndef HPLVK_SAMPLE_ARGS_H
#define HPLVK_SAMPLE_ARGS_H

#ifndef SAMPLE_NAME
#error "define SAMPLE_NAME before including sample_args.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_DIGITS_ "0123456789"

/* s as a whole number, exactly: decimal digits ("300000000"; a leading 0 is
 * not octal), 0x and hex digits ("0x1000"), or decimal digits with a
 * fraction or an exponent whose value is whole ("3e8", "1.5e6", "2.0"; the
 * digits are read as an integer and scaled, not rounded through a double).
 * False for anything else, with errno ERANGE when the number is past
 * UINT64_MAX and EINVAL otherwise: an empty string, a sign or a space,
 * characters after the number ("12abc", "3x"), a fraction ("1.5", "3e-1"). */
static inline bool sample_parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    errno = EINVAL;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        const char *hex = s + 2;
        size_t n = strspn(hex, SAMPLE_DIGITS_ "abcdefABCDEF");
        if (n == 0 || hex[n])
            return false;
        for (size_t i = 0; i < n; i++) {
            if (v > UINT64_MAX >> 4) {
                errno = ERANGE;
                return false;
            }
            int c = tolower((unsigned char)hex[i]);
            v = v << 4 | (uint64_t)(isdigit(c) ? c - '0' : c - 'a' + 10);
        }
        *out = v;
        return true;
    }
    /* digits [. [digits]] [e|E [+|-] digits]: the value is the digits, as
     * one integer with the point left out, times 10^(exponent - digits
     * after the point). */
    size_t whole = strspn(s, SAMPLE_DIGITS_);
    if (whole == 0)
        return false;
    const char *frac = s + whole + (s[whole] == '.');
    size_t nfrac = strspn(frac, SAMPLE_DIGITS_);
    const char *end = frac + nfrac, *p = end;
    long exp = 0;
    if (*p == 'e' || *p == 'E') {
        bool minus = p[1] == '-';
        p += 1 + (p[1] == '+' || p[1] == '-');
        size_t nexp = strspn(p, SAMPLE_DIGITS_);
        if (nexp == 0)
            return false;
        for (size_t i = 0; i < nexp; i++) /* past 10^6 it is out of range or a fraction anyway */
            exp = exp < 100000 ? exp * 10 + (p[i] - '0') : exp;
        exp = minus ? -exp : exp;
        p += nexp;
    }
    if (*p)
        return false;
    /* The last non-zero digit; the zeros after it scale instead. */
    const char *last = NULL;
    for (const char *q = s; q < end; q++)
        if (*q >= '1' && *q <= '9')
            last = q;
    if (!last) {
        *out = 0;
        return true;
    }
    long shift = exp - (long)nfrac;
    for (const char *q = last + 1; q < end; q++)
        shift += *q == '0';
    if (shift < 0) /* the last non-zero digit is after the point */
        return false;
    for (const char *q = s; q <= last; q++) {
        if (*q == '.')
            continue;
        uint64_t d = (uint64_t)(*q - '0');
        if (v > (UINT64_MAX - d) / 10) {
            errno = ERANGE;
            return false;
        }
        v = v * 10 + d;
    }
    for (; shift > 0; shift--) { /* v >= 1: out of range within 20 */
        if (v > UINT64_MAX / 10) {
            errno = ERANGE;
            return false;
        }
        v *= 10;
    }
    *out = v;
    return true;
}

/* The first len characters of s as a whole number (sample_parse_u64), at
 * most 63 of them: an item of a comma-separated list. */
static inline bool sample_parse_u64_n(const char *s, size_t len, uint64_t *out)
{
    char item[64];
    if (len >= sizeof item) {
        errno = EINVAL;
        return false;
    }
    memcpy(item, s, len);
    item[len] = '\0';
    return sample_parse_u64(item, out);
}

/* s as a whole number (sample_parse_u64) in [lo, hi]. */
static inline bool sample_parse_u64_range(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v;
    if (!sample_parse_u64(s, &v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* s as a finite number >= 0 in C's notation ("1000", "0.5", "2.5e-3"). No
 * sign, no space, nothing after it; not inf or nan. */
static inline bool sample_parse_double(const char *s, double *out)
{
    if (!isdigit((unsigned char)s[0]) && !(s[0] == '.' && isdigit((unsigned char)s[1])))
        return false;
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* The argument named `what` (for the message: "rows", "host_budget") from
 * its text s: a whole number up to max into *out. False, after a message
 * naming the argument and its text, when s is not one; the caller prints
 * its usage. */
static inline bool sample_arg_u64(const char *what, const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v;
    bool number = sample_parse_u64(s, &v);
    if (number && v <= max) {
        *out = v;
        return true;
    }
    if (number || errno == ERANGE)
        fprintf(stderr, SAMPLE_NAME ": %s '%s' is too large (at most %" PRIu64 ")\n", what, s, max);
    else
        fprintf(stderr, SAMPLE_NAME ": %s '%s' is not a whole number\n", what, s);
    return false;
}

/* sample_arg_u64 into an int: up to INT_MAX. */
static inline bool sample_arg_int(const char *what, const char *s, int *out)
{
    uint64_t v;
    if (!sample_arg_u64(what, s, INT_MAX, &v))
        return false;
    *out = (int)v;
    return true;
}

/* sample_parse_double for the argument named `what`; false after a
 * message, as sample_arg_u64. */
static inline bool sample_arg_double(const char *what, const char *s, double *out)
{
    if (sample_parse_double(s, out))
        return true;
    fprintf(stderr, SAMPLE_NAME ": %s '%s' is not a number\n", what, s);
    return false;
}

#endif
