/* Configuration parsers (lib/base/config.c) on their own:
 *   - sizes (HPLVK_DEVICE_MEMORY_LIMIT): every boundary value around each
 *     power of two and of ten, and around 2^64-1 >> shift, with every
 *     suffix spelling, against 128-bit arithmetic; then malformed values
 *     (empty, negative, signs, spaces, junk, overflow), each refused with
 *     a message naming the variable and the value, the output untouched;
 *   - counts (HPLVK_MAX_IN_FLIGHT): the range's ends, and values that are
 *     not a whole number in it, refused the same way;
 *   - the zero-copy mode from hpl_context_desc.zero_copy and HPLVK_ZERO_COPY;
 *   - which devices are zero-copy: every machine of up to 3 logical devices
 *     over up to 3 physical devices of 4 kinds, each +zc or not, in every
 *     mode, against the rule written out; and the refusals (+zc with zero
 *     copy OFF, +zc on a device that does not share memory with the host or
 *     cannot import it), naming the entry. */
#include "config.h"
#include "harness.h"

#include <stdio.h>
#include <string.h>

#define VAR "HPLVK_DEVICE_MEMORY_LIMIT"

/* ---- sizes ---------------------------------------------------------------- */

static int size_checks_failed;

static void expect_size(const char *text, unsigned __int128 want, bool ok)
{
    uint64_t out = 0x1234;
    int rc = hpl__parse_size(VAR, text, &out);
    if (ok) {
        bool good = rc == HPL_OK && out == (uint64_t)want;
        if (!CHECK(good, "'%s': %s (%s), %llu, want %llu", text, hpl_error_name(rc), rc ? hpl_last_error() : "",
                   (unsigned long long)out, (unsigned long long)want))
            size_checks_failed++;
        return;
    }
    char quoted[160];
    snprintf(quoted, sizeof quoted, VAR "='%s'", text);
    bool good = rc == HPL_ERROR_INVALID_ARGUMENT && out == 0x1234 &&
                (text[0] ? th_contains(hpl_last_error(), quoted) : th_contains(hpl_last_error(), VAR " is empty"));
    if (!CHECK(good, "'%s' should be refused naming %s: %s, out %llu, message \"%s\"", text, VAR, hpl_error_name(rc),
               (unsigned long long)out, rc ? hpl_last_error() : ""))
        size_checks_failed++;
}

static void sizes_exhaustive(void)
{
    static const struct {
        const char *spellings[8];
        int shift;
    } units[] = {
        {{"", "B", "b"}, 0},
        {{"K", "k", "KB", "kb", "KiB", "kib", "KIB", "Ki"}, 10},
        {{"M", "m", "MB", "MiB", "mib", "Mi"}, 20},
        {{"G", "g", "GB", "GiB", "gIb"}, 30},
        {{"T", "t", "TB", "TiB"}, 40},
    };
    /* Values: 0..20, 2^k - 1, 2^k, 2^k + 1, 10^k - 1, 10^k, 10^k + 1, and
     * around (2^64 - 1) >> shift for every shift. */
    unsigned __int128 values[400];
    int nv = 0;
    for (int i = 0; i <= 20; i++)
        values[nv++] = (unsigned __int128)i;
    for (int k = 1; k <= 66; k++)
        for (int d = -1; d <= 1; d++)
            values[nv++] = ((unsigned __int128)1 << k) + (unsigned __int128)(__int128)d;
    unsigned __int128 p10 = 1;
    for (int k = 1; k <= 21; k++) {
        p10 *= 10;
        for (int d = -1; d <= 1; d++)
            values[nv++] = p10 + (unsigned __int128)(__int128)d;
    }
    for (int s = 0; s <= 40; s += 10)
        for (int d = -1; d <= 1; d++)
            values[nv++] = (unsigned __int128)(UINT64_MAX >> s) + (unsigned __int128)(__int128)d;
    int tried = 0, accepted = 0;
    for (int v = 0; v < nv; v++) {
        /* The decimal digits of a 128-bit value. */
        char digits[48];
        int n = 0;
        unsigned __int128 x = values[v];
        do {
            digits[n++] = (char)('0' + (int)(x % 10));
            x /= 10;
        } while (x);
        char num[48];
        for (int i = 0; i < n; i++)
            num[i] = digits[n - 1 - i];
        num[n] = 0;
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
            for (int sp = 0; sp < 8 && units[u].spellings[sp]; sp++) {
                char text[64];
                snprintf(text, sizeof text, "%s%s", num, units[u].spellings[sp]);
                unsigned __int128 bytes = values[v] << units[u].shift;
                bool fits = values[v] <= (unsigned __int128)UINT64_MAX && bytes <= (unsigned __int128)UINT64_MAX;
                expect_size(text, bytes, fits);
                tried++;
                accepted += fits;
            }
    }
    th_note("sizes: %d values x spellings tried, %d within 2^64-1 bytes", tried, accepted);
    CHECK(size_checks_failed == 0, "%d size checks failed", size_checks_failed);
}

static void sizes_malformed(void)
{
    static const char *const bad[] = {
        "",          "-1",          "-0",          "-64M",      "+1",        " 1",        "1 ",      "1\t",
        "1.5M",      "1,5M",        "1MM",         "1MiBx",     "1X",        "1KBB",      "1iB",     "1Bi",
        "1KiBB",     "0x10",        "K",           "M",         "B",         "iB",        "1e6",     "one",
        "1 M",       "64M ",        "\n",          "1P",        "1E",        "1KK",
        "18446744073709551616",     "18446744073709551617",     "99999999999999999999999",
        "16777216T", "17179869184G", "17592186044416M", "18014398509481984K",
        "100000000000000000000000000000000000000000000000000000",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_size(bad[i], 0, false);
    /* Each refusal says why. */
    uint64_t out;
    th_check_fails(hpl__parse_size(VAR, "-1", &out), HPL_ERROR_INVALID_ARGUMENT, "negative", "-1", __FILE__,
                   __LINE__);
    th_check_fails(hpl__parse_size(VAR, "18446744073709551616", &out), HPL_ERROR_INVALID_ARGUMENT,
                   "more than 2^64-1 bytes", "2^64", __FILE__, __LINE__);
    th_check_fails(hpl__parse_size(VAR, "16777216T", &out), HPL_ERROR_INVALID_ARGUMENT, "more than 2^64-1 bytes",
                   "2^24 T", __FILE__, __LINE__);
    th_check_fails(hpl__parse_size(VAR, "64Mx", &out), HPL_ERROR_INVALID_ARGUMENT, "'x' after the size", "64Mx",
                   __FILE__, __LINE__);
    th_check_fails(hpl__parse_size(VAR, "", &out), HPL_ERROR_INVALID_ARGUMENT, "is empty", "empty", __FILE__,
                   __LINE__);
    th_check_fails(hpl__parse_size(VAR, "M", &out), HPL_ERROR_INVALID_ARGUMENT, "does not start with a number", "M",
                   __FILE__, __LINE__);
    th_check_fails(hpl__parse_size("SOME_VAR", "x", &out), HPL_ERROR_INVALID_ARGUMENT, "SOME_VAR='x'", "name",
                   __FILE__, __LINE__);
    th_check_fails(hpl__parse_size(VAR, NULL, &out), HPL_ERROR_INVALID_ARGUMENT, "empty", "NULL", __FILE__,
                   __LINE__);
    /* A few spelled out. */
    expect_size("64M", 64u << 20, true);
    expect_size("1GiB", 1u << 30, true);
    expect_size("4096", 4096, true);
    expect_size("000512k", 512u << 10, true);
    expect_size("18446744073709551615", UINT64_MAX, true);
    expect_size("16777215T", (unsigned __int128)16777215 << 40, true);
}

/* ---- switches ------------------------------------------------------------ */

static void switches(void)
{
    static const struct {
        const char *text;
        bool fallback;
        int rc;
        bool out;
    } cases[] = {
        {NULL, false, HPL_OK, false}, {NULL, true, HPL_OK, true},   {"", false, HPL_OK, false},
        {"", true, HPL_OK, true},     {"0", true, HPL_OK, false},   {"1", false, HPL_OK, true},
        {"2", true, HPL_ERROR_INVALID_ARGUMENT, 0},  {"01", false, HPL_ERROR_INVALID_ARGUMENT, 0},
        {" 1", false, HPL_ERROR_INVALID_ARGUMENT, 0}, {"1 ", true, HPL_ERROR_INVALID_ARGUMENT, 0},
        {"yes", true, HPL_ERROR_INVALID_ARGUMENT, 0}, {"true", false, HPL_ERROR_INVALID_ARGUMENT, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int start = 0; start < 2; start++) {
            bool out = start;
            int rc = hpl__parse_switch("HPLVK_X", cases[i].text, cases[i].fallback, "off here", "on here", &out);
            bool want = rc == HPL_OK ? cases[i].out : (bool)start; /* untouched on failure */
            CHECK(rc == cases[i].rc && out == want, "'%s' fallback %d: %s, %d; want %s, %d",
                  cases[i].text ? cases[i].text : "(unset)", cases[i].fallback, hpl_error_name(rc), out,
                  hpl_error_name(cases[i].rc), want);
            if (rc != HPL_OK) {
                char want_msg[96];
                snprintf(want_msg, sizeof want_msg, "HPLVK_X='%s' is neither 0 (off here) nor 1 (on here)",
                         cases[i].text);
                CHECK(th_contains(hpl_last_error(), want_msg), "message \"%s\"", hpl_last_error());
            }
        }
    }
}

/* ---- counts ------------------------------------------------------------ */

static void counts(void)
{
    static const struct {
        const char *text;
        int rc;
        uint64_t out;
    } cases[] = {
        {"1", HPL_OK, 1},      {"7", HPL_OK, 7},       {"65536", HPL_OK, 65536}, {"0065", HPL_OK, 65},
        {"0", HPL_ERROR_INVALID_ARGUMENT, 0},          {"65537", HPL_ERROR_INVALID_ARGUMENT, 0},
        {"", HPL_ERROR_INVALID_ARGUMENT, 0},           {NULL, HPL_ERROR_INVALID_ARGUMENT, 0},
        {"-1", HPL_ERROR_INVALID_ARGUMENT, 0},         {"+1", HPL_ERROR_INVALID_ARGUMENT, 0},
        {" 8", HPL_ERROR_INVALID_ARGUMENT, 0},         {"8 ", HPL_ERROR_INVALID_ARGUMENT, 0},
        {"8k", HPL_ERROR_INVALID_ARGUMENT, 0},         {"0x10", HPL_ERROR_INVALID_ARGUMENT, 0},
        {"18446744073709551616", HPL_ERROR_INVALID_ARGUMENT, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t out = 12345;
        int rc = hpl__parse_count("HPLVK_N", cases[i].text, 1, 65536, &out);
        uint64_t want = rc == HPL_OK ? cases[i].out : 12345; /* untouched on failure */
        CHECK(rc == cases[i].rc && out == want, "'%s': %s, %llu; want %s, %llu",
              cases[i].text ? cases[i].text : "(unset)", hpl_error_name(rc), (unsigned long long)out,
              hpl_error_name(cases[i].rc), (unsigned long long)want);
        if (rc != HPL_OK) {
            char want_msg[96];
            snprintf(want_msg, sizeof want_msg, "HPLVK_N='%s' is not a whole number from 1 to 65536",
                     cases[i].text ? cases[i].text : "");
            CHECK(th_contains(hpl_last_error(), want_msg), "message \"%s\"", hpl_last_error());
        }
    }
}

/* ---- zero-copy mode ------------------------------------------------------------ */

static void zero_copy_mode(void)
{
    static const struct {
        int desc;
        const char *env;
        int rc, mode;
        const char *source;
    } cases[] = {
        {HPL_ZERO_COPY_AUTO, NULL, HPL_OK, HPL_ZERO_COPY_AUTO, "HPL_ZERO_COPY_AUTO"},
        {HPL_ZERO_COPY_AUTO, "", HPL_OK, HPL_ZERO_COPY_AUTO, "HPL_ZERO_COPY_AUTO"},
        {HPL_ZERO_COPY_AUTO, "0", HPL_OK, HPL_ZERO_COPY_OFF, "HPLVK_ZERO_COPY=0"},
        {HPL_ZERO_COPY_AUTO, "1", HPL_OK, HPL_ZERO_COPY_ON, "HPLVK_ZERO_COPY=1"},
        {HPL_ZERO_COPY_ON, NULL, HPL_OK, HPL_ZERO_COPY_ON, "HPL_ZERO_COPY_ON"},
        {HPL_ZERO_COPY_ON, "0", HPL_OK, HPL_ZERO_COPY_ON, "HPL_ZERO_COPY_ON"},
        {HPL_ZERO_COPY_OFF, "1", HPL_OK, HPL_ZERO_COPY_OFF, "hpl_context_desc.zero_copy = HPL_ZERO_COPY_OFF"},
        {HPL_ZERO_COPY_OFF, "yes", HPL_OK, HPL_ZERO_COPY_OFF, "HPL_ZERO_COPY_OFF"},
        {HPL_ZERO_COPY_AUTO, "2", HPL_ERROR_INVALID_ARGUMENT, 0, "HPLVK_ZERO_COPY='2'"},
        {HPL_ZERO_COPY_AUTO, "yes", HPL_ERROR_INVALID_ARGUMENT, 0, "HPLVK_ZERO_COPY='yes'"},
        {HPL_ZERO_COPY_AUTO, " 1", HPL_ERROR_INVALID_ARGUMENT, 0, "neither 0 (off) nor 1 (on)"},
        {HPL_ZERO_COPY_AUTO, "01", HPL_ERROR_INVALID_ARGUMENT, 0, "HPLVK_ZERO_COPY='01'"},
        {HPL_ZERO_COPY_AUTO, "-1", HPL_ERROR_INVALID_ARGUMENT, 0, "HPLVK_ZERO_COPY='-1'"},
        {-1, NULL, HPL_ERROR_INVALID_ARGUMENT, 0, "zero_copy = -1 is not an hpl_zero_copy"},
        {3, "1", HPL_ERROR_INVALID_ARGUMENT, 0, "zero_copy = 3 is not an hpl_zero_copy"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int mode = -77;
        const char *source = "untouched";
        int rc = hpl__parse_zero_copy(cases[i].desc, cases[i].env, &mode, &source);
        const char *text = rc == HPL_OK ? source : hpl_last_error();
        CHECK(rc == cases[i].rc && (rc != HPL_OK || mode == cases[i].mode) &&
                  (rc == HPL_OK || (mode == -77 && !strcmp(source, "untouched"))) &&
                  th_contains(text, cases[i].source),
              "desc %d env '%s': %s mode %d, \"%s\"; want %s mode %d, \"%s\"", cases[i].desc,
              cases[i].env ? cases[i].env : "(unset)", hpl_error_name(rc), mode, text, hpl_error_name(cases[i].rc),
              cases[i].mode, cases[i].source);
    }
}

/* ---- zero-copy devices ------------------------------------------------------------ */

enum kind { CPU, CPU_NO_IMPORT, IGPU, DGPU, KINDS };
static const char *const kind_names[] = {"cpu", "cpu without host import", "integrated GPU", "discrete GPU"};

static void fill_device(hpl__zc_device *d, int kind, int physical, bool asked, const char *entry)
{
    *d = (hpl__zc_device){.entry = entry,
                          .name = kind_names[kind],
                          .type = kind == DGPU ? HPL_DEVICE_DISCRETE_GPU
                                  : kind == IGPU ? HPL_DEVICE_INTEGRATED_GPU
                                                 : HPL_DEVICE_CPU,
                          .host_import = kind != CPU_NO_IMPORT,
                          .physical = physical,
                          .asked = asked,
                          .zero_copy = false};
}

/* Every machine of 1..3 logical devices: each a (kind of its physical
 * device, physical index, +zc) with kinds consistent per physical device. */
static void decide_exhaustive(void)
{
    static const char *const sources[] = {"AUTO source", "ON source", "OFF source"};
    int machines = 0, refused = 0, bad = 0;
    for (int n = 1; n <= 3; n++) {
        int combos = 1;
        for (int i = 0; i < n; i++)
            combos *= 3 * 2;                            /* physical index, asked */
        for (int kinds = 0; kinds < KINDS * KINDS * KINDS; kinds++) /* kind of physical 0, 1, 2 */
            for (int c = 0; c < combos; c++)
                for (int mode = HPL_ZERO_COPY_AUTO; mode <= HPL_ZERO_COPY_OFF; mode++) {
                    hpl__zc_device devs[3];
                    int pkind[3] = {kinds % KINDS, kinds / KINDS % KINDS, kinds / (KINDS * KINDS)};
                    char entries[3][16];
                    int x = c;
                    for (int i = 0; i < n; i++, x /= 6) {
                        int phys = x % 3;
                        bool asked = x / 3 % 2;
                        snprintf(entries[i], sizeof entries[i], "%d%s", phys, asked ? "+zc" : "");
                        fill_device(&devs[i], pkind[phys], phys, asked, entries[i]);
                    }
                    machines++;
                    /* The rule, written out. */
                    int want_rc = HPL_OK;
                    const char *want_words = NULL;
                    char want_entry[32] = "";
                    for (int i = 0; i < n && !want_words; i++) {
                        if (!devs[i].asked)
                            continue;
                        int k = pkind[devs[i].physical];
                        if (mode == HPL_ZERO_COPY_OFF)
                            want_words = "turns zero copy off";
                        else if (k == DGPU)
                            want_words = "does not share memory with the host";
                        else if (k == CPU_NO_IMPORT)
                            want_words = "cannot import host memory";
                        if (want_words) {
                            want_rc = HPL_ERROR_INVALID_ARGUMENT;
                            snprintf(want_entry, sizeof want_entry, "entry '%s'", devs[i].entry);
                        }
                    }
                    bool want_zc[3];
                    for (int i = 0; i < n; i++) {
                        int k = pkind[devs[i].physical], opened = 0;
                        for (int j = 0; j < n; j++)
                            opened += devs[j].physical == devs[i].physical;
                        bool can = k == CPU || k == IGPU;
                        want_zc[i] = can && (mode == HPL_ZERO_COPY_ON ||
                                             (mode == HPL_ZERO_COPY_AUTO && (devs[i].asked || opened == 1)));
                    }
                    int rc = hpl__zero_copy_decide(mode, sources[mode], devs, n);
                    bool ok = rc == want_rc;
                    if (ok && rc == HPL_OK) {
                        for (int i = 0; i < n; i++)
                            ok = ok && devs[i].zero_copy == want_zc[i];
                    } else if (ok) {
                        refused++;
                        ok = th_contains(hpl_last_error(), want_words) && th_contains(hpl_last_error(), want_entry);
                        for (int i = 0; i < n; i++)
                            ok = ok && !devs[i].zero_copy; /* untouched on failure */
                        if (mode == HPL_ZERO_COPY_OFF)
                            ok = ok && th_contains(hpl_last_error(), sources[mode]);
                    }
                    if (!ok && bad++ < 10) {
                        char desc[200] = "";
                        for (int i = 0; i < n; i++) {
                            size_t l = strlen(desc);
                            snprintf(desc + l, sizeof desc - l, "%s[%s %s]", i ? ", " : "", devs[i].entry,
                                     kind_names[pkind[devs[i].physical]]);
                        }
                        CHECK(false, "mode %d, devices %s: %s \"%s\"", mode, desc, hpl_error_name(rc),
                              rc ? hpl_last_error() : "");
                    }
                }
    }
    th_note("zero-copy decisions: %d machines x modes, %d refused", machines, refused);
    CHECK(bad == 0, "%d of %d decisions differ from the rule", bad, machines);
}

static void decide_messages(void)
{
    hpl__zc_device d[3];
    fill_device(&d[0], CPU, 0, true, "cpu+zc");
    fill_device(&d[1], DGPU, 1, true, "gpu0+zc");
    int rc = hpl__zero_copy_decide(HPL_ZERO_COPY_AUTO, "x", d, 2);
    th_check_fails(rc, HPL_ERROR_INVALID_ARGUMENT, "device list entry 'gpu0+zc': device 1 (discrete GPU) does not share",
                   "+zc on a discrete GPU", __FILE__, __LINE__);
    fill_device(&d[1], CPU, 0, false, "cpu:2");
    fill_device(&d[2], CPU, 0, false, "cpu:2");
    rc = hpl__zero_copy_decide(HPL_ZERO_COPY_OFF, "HPLVK_ZERO_COPY=0", d, 3);
    th_check_fails(rc, HPL_ERROR_INVALID_ARGUMENT, "entry 'cpu+zc' asks for a zero-copy device (+zc) but HPLVK_ZERO_COPY=0",
                   "+zc with OFF", __FILE__, __LINE__);
    rc = hpl__zero_copy_decide(HPL_ZERO_COPY_AUTO, "x", d, 3);
    CHECK(rc == HPL_OK && d[0].zero_copy && !d[1].zero_copy && !d[2].zero_copy,
          "cpu+zc,cpu:2 under AUTO: %d %d %d", d[0].zero_copy, d[1].zero_copy, d[2].zero_copy);
    rc = hpl__zero_copy_decide(HPL_ZERO_COPY_ON, "x", d, 3);
    CHECK(rc == HPL_OK && d[0].zero_copy && d[1].zero_copy && d[2].zero_copy, "cpu+zc,cpu:2 under ON: %d %d %d",
          d[0].zero_copy, d[1].zero_copy, d[2].zero_copy);
    CHECK(hpl__zero_copy_decide(HPL_ZERO_COPY_AUTO, "x", d, 0) == HPL_OK, "no devices");
}

int main(void)
{
    sizes_exhaustive();
    sizes_malformed();
    switches();
    counts();
    zero_copy_mode();
    decide_exhaustive();
    decide_messages();
    return th_finish(NULL);
}
