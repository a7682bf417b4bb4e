/* The check macro of the pure-logic unit tests (unit_balance, unit_partition,
 * unit_schedule): EXPECT(cond, fmt, ...) counts a check, and on failure
 * prints file:line, the condition and the message (the first 20 only, so a
 * broken invariant in a loop of millions stays readable). One test per
 * program: the counters are the program's. */
#ifndef HPL_UNIT_EXPECT_H
#define HPL_UNIT_EXPECT_H

#include <stdio.h>

static long checks, failures;

#define EXPECT(cond, ...)                                                     \
    do {                                                                      \
        checks++;                                                             \
        if (!(cond)) {                                                        \
            if (failures++ < 20) {                                            \
                fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);  \
                fprintf(stderr, __VA_ARGS__);                                 \
                fputc('\n', stderr);                                          \
            }                                                                 \
        }                                                                     \
    } while (0)

#endif
