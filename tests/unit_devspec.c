/* Device lists (HPLVK_DEVICES / hpl_context_desc.devices) on their own,
 * against made-up machines:
 *   - every list of 1 to 4 entries drawn from a valid entry, "" and spaces:
 *     a list with an empty entry anywhere (leading, trailing, doubled comma,
 *     only spaces) is refused naming the list and the first empty entry;
 *     the others open one device per entry (the whole string "" is the
 *     default list);
 *   - SELECTOR[:COUNT][+zc]: physical devices, replica numbers and the +zc
 *     flag of each logical device, and the entry text kept for messages;
 *   - malformed selectors, counts and modifiers, each refused with its code
 *     and a message naming the entry;
 *   - the harness's TH_DEVICE_KIND / TH_ZERO_COPY_FIRST rewrites. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "devspec.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX 16

static const uint32_t cpu_only[] = {HPL_DEVICE_CPU};
/* physical 0: integrated GPU, 1: discrete GPU, 2: CPU */
static const uint32_t mixed[] = {HPL_DEVICE_INTEGRATED_GPU, HPL_DEVICE_DISCRETE_GPU, HPL_DEVICE_CPU};

typedef struct want {
    int physical, replica;
    bool zc;
    const char *entry; /* NULL: the default list */
} want;

static void expect_list(const char *spec, const uint32_t *types, int n, const want *w, int count)
{
    hpl__devspec_entry out[MAX];
    memset(out, 0, sizeof out);
    int got = -1;
    int rc = hpl__devspec_resolve(spec, n, types, out, MAX, &got);
    if (!CHECK(rc == HPL_OK, "'%s': %s: %s", spec, hpl_error_name(rc), hpl_last_error()))
        return;
    if (!CHECK(got == count, "'%s': %d devices, want %d", spec, got, count))
        return;
    for (int i = 0; i < count; i++) {
        const hpl__devspec_entry *e = &out[i];
        bool entry_ok = w[i].entry ? e->entry && e->entry_len == (int)strlen(w[i].entry) &&
                                         !strncmp(e->entry, w[i].entry, (size_t)e->entry_len)
                                   : e->entry == NULL;
        CHECK(e->physical == w[i].physical && e->replica == w[i].replica && e->zero_copy == w[i].zc && entry_ok,
              "'%s' device %d: physical %d replica %d zc %d entry '%.*s', want %d %d %d '%s'", spec, i, e->physical,
              e->replica, e->zero_copy, e->entry ? e->entry_len : 6, e->entry ? e->entry : "(null)", w[i].physical,
              w[i].replica, w[i].zc, w[i].entry ? w[i].entry : "(null)");
    }
}

static void expect_fail(const char *spec, const uint32_t *types, int n, int code, const char *words)
{
    hpl__devspec_entry out[MAX];
    int got = -1;
    int rc = hpl__devspec_resolve(spec, n, types, out, MAX, &got);
    char what[160];
    snprintf(what, sizeof what, "hpl__devspec_resolve('%s')", spec);
    th_check_fails(rc, code, words, what, __FILE__, __LINE__);
}

/* Every list of 1..4 entries from {"cpu", "", " ", " \t "}. */
static void empty_entries(void)
{
    static const char *const tokens[] = {"cpu", "", " ", " \t "};
    int lists = 0, refused = 0;
    for (int len = 1; len <= 4; len++) {
        int combos = 1;
        for (int i = 0; i < len; i++)
            combos *= 4;
        for (int c = 0; c < combos; c++) {
            char spec[64] = "";
            int first_empty = 0, x = c;
            for (int i = 0; i < len; i++, x /= 4) {
                int t = x % 4;
                if (i)
                    strcat(spec, ",");
                strcat(spec, tokens[t]);
                if (t != 0 && !first_empty)
                    first_empty = i + 1;
            }
            lists++;
            hpl__devspec_entry out[MAX];
            int got = -1;
            int rc = hpl__devspec_resolve(spec, 1, cpu_only, out, MAX, &got);
            if (!spec[0]) {
                /* "" alone: the default list (the CPU, there being no GPU). */
                CHECK(rc == HPL_OK && got == 1 && out[0].physical == 0 && out[0].entry == NULL,
                      "'': %s, %d devices", hpl_error_name(rc), got);
                continue;
            }
            if (first_empty) {
                refused++;
                char words[64];
                snprintf(words, sizeof words, "entry %d is empty", first_empty);
                char list[80];
                snprintf(list, sizeof list, "'%s'", spec);
                char what[96];
                snprintf(what, sizeof what, "hpl__devspec_resolve(\"%s\")", spec);
                if (th_check_fails(rc, HPL_ERROR_INVALID_ARGUMENT, words, what, __FILE__, __LINE__))
                    th_check_msg(list, __FILE__, __LINE__);
            } else {
                CHECK(rc == HPL_OK && got == len, "'%s': %s (%s), %d devices, want %d", spec, hpl_error_name(rc),
                      hpl_last_error(), got, len);
                for (int i = 0; rc == HPL_OK && i < got; i++)
                    CHECK(out[i].physical == 0 && out[i].replica == i && !out[i].zero_copy &&
                              out[i].entry_len == 3 && !strncmp(out[i].entry, "cpu", 3),
                          "'%s' device %d: physical %d replica %d", spec, i, out[i].physical, out[i].replica);
            }
        }
    }
    CHECK(lists == 340 && refused == 335, "%d lists, %d refused, want 340 and 335", lists, refused);
}

static void valid_lists(void)
{
    expect_list(NULL, cpu_only, 1, (want[]){{0, 0, false, NULL}}, 1);
    expect_list("cpu", cpu_only, 1, (want[]){{0, 0, false, "cpu"}}, 1);
    expect_list("  cpu:3 ", cpu_only, 1,
                (want[]){{0, 0, false, "cpu:3"}, {0, 1, false, "cpu:3"}, {0, 2, false, "cpu:3"}}, 3);
    expect_list("cpu+zc", cpu_only, 1, (want[]){{0, 0, true, "cpu+zc"}}, 1);
    expect_list("cpu+zc,cpu:2", cpu_only, 1,
                (want[]){{0, 0, true, "cpu+zc"}, {0, 1, false, "cpu:2"}, {0, 2, false, "cpu:2"}}, 3);
    expect_list("cpu:2+zc, cpu", cpu_only, 1,
                (want[]){{0, 0, true, "cpu:2+zc"}, {0, 1, true, "cpu:2+zc"}, {0, 2, false, "cpu"}}, 3);
    expect_list("cpu,\tcpu+zc", cpu_only, 1, (want[]){{0, 0, false, "cpu"}, {0, 1, true, "cpu+zc"}}, 2);
    expect_list("0+zc,0:1", cpu_only, 1, (want[]){{0, 0, true, "0+zc"}, {0, 1, false, "0:1"}}, 2);
    expect_list("cpu0+zc", cpu_only, 1, (want[]){{0, 0, true, "cpu0+zc"}}, 1);
    /* Discrete GPUs first among "gpu"; "all" is GPUs then the rest. */
    expect_list(NULL, mixed, 3, (want[]){{1, 0, false, NULL}, {0, 0, false, NULL}}, 2);
    expect_list("gpu", mixed, 3, (want[]){{1, 0, false, "gpu"}, {0, 0, false, "gpu"}}, 2);
    expect_list("cpu+zc,gpu0:2", mixed, 3,
                (want[]){{2, 0, true, "cpu+zc"}, {1, 0, false, "gpu0:2"}, {1, 1, false, "gpu0:2"}}, 3);
    expect_list("all+zc", mixed, 3, (want[]){{1, 0, true, "all+zc"}, {0, 0, true, "all+zc"}, {2, 0, true, "all+zc"}},
                3);
    expect_list("gpu1,gpu0,2", mixed, 3,
                (want[]){{0, 0, false, "gpu1"}, {1, 0, false, "gpu0"}, {2, 0, false, "2"}}, 3);
    expect_list("cpu:16", cpu_only, 1,
                (want[]){{0, 0, false, "cpu:16"}, {0, 1, false, "cpu:16"}, {0, 2, false, "cpu:16"},
                         {0, 3, false, "cpu:16"}, {0, 4, false, "cpu:16"}, {0, 5, false, "cpu:16"},
                         {0, 6, false, "cpu:16"}, {0, 7, false, "cpu:16"}, {0, 8, false, "cpu:16"},
                         {0, 9, false, "cpu:16"}, {0, 10, false, "cpu:16"}, {0, 11, false, "cpu:16"},
                         {0, 12, false, "cpu:16"}, {0, 13, false, "cpu:16"}, {0, 14, false, "cpu:16"},
                         {0, 15, false, "cpu:16"}},
                16);
}

static void malformed(void)
{
    const int A = HPL_ERROR_INVALID_ARGUMENT, U = HPL_ERROR_UNKNOWN_DEVICE;
    /* Empty entries, among other kinds of entries. */
    expect_fail(",cpu", cpu_only, 1, A, "entry 1 is empty");
    expect_fail("cpu,", cpu_only, 1, A, "entry 2 is empty");
    expect_fail("cpu,,cpu", cpu_only, 1, A, "'cpu,,cpu': entry 2 is empty");
    expect_fail("cpu+zc, ,gpu", mixed, 3, A, "entry 2 is empty");
    expect_fail("   ", cpu_only, 1, A, "entry 1 is empty");
    expect_fail(",", cpu_only, 1, A, "entry 1 is empty");
    /* Modifiers. */
    expect_fail("cpu+", cpu_only, 1, A, "unknown modifier '+'");
    expect_fail("cpu+z", cpu_only, 1, A, "unknown modifier '+z'");
    expect_fail("cpu+zcx", cpu_only, 1, A, "'cpu+zcx'");
    expect_fail("cpu+ZC", cpu_only, 1, A, "unknown modifier '+ZC'");
    expect_fail("cpu+zc:2", cpu_only, 1, A, "SELECTOR[:COUNT][+zc]");
    expect_fail("cpu+zc+zc", cpu_only, 1, A, "unknown modifier '+zc+zc'");
    expect_fail("cpu++zc", cpu_only, 1, A, "unknown modifier");
    expect_fail("cpu +zc", cpu_only, 1, U, "'cpu '");
    expect_fail("+zc", cpu_only, 1, A, "'+zc' has no selector");
    expect_fail(":2", cpu_only, 1, A, "':2' has no selector");
    /* Counts. */
    expect_fail("cpu:", cpu_only, 1, A, "'cpu:': the count");
    expect_fail("cpu:0", cpu_only, 1, A, "'cpu:0': the count");
    expect_fail("cpu:-1", cpu_only, 1, A, "the count after ':'");
    expect_fail("cpu:x", cpu_only, 1, A, "the count after ':'");
    expect_fail("cpu:2:2", cpu_only, 1, A, "the count after ':'");
    expect_fail("cpu:1234567", cpu_only, 1, A, "the count after ':'");
    expect_fail("cpu:17", cpu_only, 1, A, "more than 16 logical devices");
    expect_fail("cpu:9,cpu:8", cpu_only, 1, A, "more than 16 logical devices");
    /* Selectors. */
    expect_fail("cpux", cpu_only, 1, U, "'cpux' is not cpuN");
    expect_fail("gpuz+zc", mixed, 3, U, "'gpuz' is not gpuN");
    expect_fail("cpu1", cpu_only, 1, U, "only 1 CPU device");
    expect_fail("gpu2", mixed, 3, U, "only 2 GPU devices");
    expect_fail("3", mixed, 3, U, "3 Vulkan devices");
    expect_fail("gpu", cpu_only, 1, HPL_ERROR_NO_DEVICE, "'gpu' matches no device");
    expect_fail("fpga", cpu_only, 1, U, "'fpga' is not one of");
    expect_fail(NULL, NULL, 0, HPL_ERROR_NO_DEVICE, "no Vulkan device");
}

/* The harness's rewrites (TH_DEVICE_KIND, TH_ZERO_COPY_FIRST) give lists
 * that resolve to the intended mix. */
static void harness_lists(void)
{
    static const struct {
        const char *kind, *first, *zc_env;
        int zero_copy;
        const char *in, *out;
    } cases[] = {
        {NULL, NULL, NULL, HPL_ZERO_COPY_AUTO, "cpu:3", "cpu:3"},
        {NULL, "1", NULL, HPL_ZERO_COPY_AUTO, "cpu:3", "cpu+zc,cpu:2"},
        {NULL, "1", NULL, HPL_ZERO_COPY_AUTO, "cpu:2", "cpu+zc,cpu:1"},
        {NULL, "1", NULL, HPL_ZERO_COPY_AUTO, "cpu:12", "cpu+zc,cpu:11"},
        {NULL, "1", NULL, HPL_ZERO_COPY_ON, "cpu:4", "cpu+zc,cpu:3"},
        {"gpu0", "1", NULL, HPL_ZERO_COPY_AUTO, "cpu:3", "cpu+zc,gpu0:2"},
        {"gpu", NULL, NULL, HPL_ZERO_COPY_AUTO, "cpu:3", "gpu:3"},
        {"gpu", NULL, NULL, HPL_ZERO_COPY_AUTO, NULL, "gpu"},
        {NULL, "1", NULL, HPL_ZERO_COPY_AUTO, NULL, "cpu"},
        {NULL, "1", NULL, HPL_ZERO_COPY_AUTO, "cpu", "cpu"},
        {NULL, "1", NULL, HPL_ZERO_COPY_AUTO, "cpu:1", "cpu:1"},
        {NULL, "1", NULL, HPL_ZERO_COPY_AUTO, "cpu1:3", "cpu1:3"},
        {NULL, "1", NULL, HPL_ZERO_COPY_AUTO, "cpu:2,cpu", "cpu:2,cpu"},
        {NULL, "1", NULL, HPL_ZERO_COPY_OFF, "cpu:3", "cpu:3"},
        {NULL, "1", "0", HPL_ZERO_COPY_AUTO, "cpu:3", "cpu:3"},
        {NULL, "1", "0", HPL_ZERO_COPY_ON, "cpu:3", "cpu+zc,cpu:2"},
        {NULL, "0", NULL, HPL_ZERO_COPY_AUTO, "cpu:3", "cpu:3"},
        {"gpu0", "1", "0", HPL_ZERO_COPY_AUTO, "cpu:3", "gpu0:3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *vars[3] = {"TH_DEVICE_KIND", "TH_ZERO_COPY_FIRST", "HPLVK_ZERO_COPY"};
        const char *vals[3] = {cases[i].kind, cases[i].first, cases[i].zc_env};
        for (int v = 0; v < 3; v++) {
            if (vals[v])
                setenv(vars[v], vals[v], 1);
            else
                unsetenv(vars[v]);
        }
        char buf[64];
        const char *got = th_device_list(cases[i].in, cases[i].zero_copy, buf, sizeof buf);
        CHECK(!strcmp(got, cases[i].out), "kind %s first %s HPLVK_ZERO_COPY %s zero_copy %d: '%s' -> '%s', want '%s'",
              cases[i].kind ? cases[i].kind : "-", cases[i].first ? cases[i].first : "-",
              cases[i].zc_env ? cases[i].zc_env : "-", cases[i].zero_copy, cases[i].in ? cases[i].in : "(NULL)", got,
              cases[i].out);
    }
    for (int v = 0; v < 3; v++)
        unsetenv((const char *[]){"TH_DEVICE_KIND", "TH_ZERO_COPY_FIRST", "HPLVK_ZERO_COPY"}[v]);
    /* What they open: the CPU zero-copy first, then the rest. */
    expect_list("cpu+zc,gpu0:2", mixed, 3,
                (want[]){{2, 0, true, "cpu+zc"}, {1, 0, false, "gpu0:2"}, {1, 1, false, "gpu0:2"}}, 3);
    expect_list("cpu+zc,cpu:1", cpu_only, 1, (want[]){{0, 0, true, "cpu+zc"}, {0, 1, false, "cpu:1"}}, 2);
}

int main(void)
{
    empty_entries();
    valid_lists();
    malformed();
    harness_lists();
    return th_finish(NULL);
}
