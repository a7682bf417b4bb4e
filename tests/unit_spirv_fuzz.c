/* Kernels are untrusted input: SPIR-V mutation fuzzing of hpl_kernel_create.
 *
 * Six valid kernels (1-D, 2-D and 3-D arrays of every element type and
 * access, scalars of every type, many arguments, a far scalar, a declared
 * local size, no arguments at all) are compiled once, then mutated: single
 * words (every word of the first kernel set to 0, ~0, +1 and its top bit
 * flipped, then random words, bit flips, small deltas) and several at once
 * (swapped words, truncation, inserted and deleted words, id bound edits,
 * member Offset and ArrayStride edits, operands set to other ids, word
 * counts, duplicated, deleted and moved instructions, constants, spec
 * constants, decorations, execution modes, names). Every mutant goes through
 * hpl_kernel_create as user SPIR-V (the disk cache plays no part): each must
 * be a clean error (a known negative hpl_result, a message naming the
 * kernel) or a kernel whose reflection keeps every argument inside the
 * argument block; nothing may crash (the ASan build runs it too).
 *
 * Kernels that create fine are not run: a mutated kernel may index anywhere
 * through its buffer references, and Lavapipe runs kernels inside this
 * process. HPLVK_FUZZ_PIPELINES=1 also creates their pipelines (Lavapipe
 * compiles them, the validation layer checks them), to look for modules
 * that SPIRV-Tools accepts but a driver or the layer refuses or crashes on;
 * each such case is reported and its module written out. Not in CI: in
 * 350000 cases it found, besides what validate.c now refuses, Mesa refusing
 * a valid but unstructurable loop break (VkResult -13, logged by the driver)
 * and warning about NoContraction on a type.
 *
 *   unit_spirv_fuzz [CASES [SEED [FIRST]]]
 *
 * CASES (default 30000: ~5 s here, ~15 s with ASan) cases from case FIRST
 * (default 0); SEED defaults to a new one each run, printed as seed=N. Case c depends only on SEED and c:
 * `unit_spirv_fuzz 1 SEED c` replays it, and a failing or crashing case is
 * written to $TMPDIR/hplvk_fuzz_SEED_c.spv. */
#define _POSIX_C_SOURCE 200809L
#include "api.h"
#include "compile.h"
#include "harness.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

/* ---- the kernels ------------------------------------------------------ */

static const char *const kernel_src[] = {
    /* 1-D, the README's kernel */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) a; hpl_out(float, 1) b; float s; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = s * hpl_at(a, i); }\n",
    /* 2-D, a loop, owned boxes */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(double, 2) m; hpl_inout(double, 2) o; int n; uint u; };\n"
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    double acc = 0.0;\n"
    "    for (int k = 0; k < n; k++) acc += hpl_at2(m, id.x, uint(k));\n"
    "    if (hpl_owns2(o, id.x, id.y)) hpl_at2(o, id.x, id.y) += acc * double(u);\n"
    "}\n",
    /* 3-D, 64-bit types */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(int64_t, 3) p; hpl_out(uint64_t, 3) q; int64_t i64; uint64_t u64; double d; float f; };\n"
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    hpl_at3(q, id.x, id.y, id.z) = uint64_t(hpl_at3(p, id.x, id.y, id.z) + i64) * u64 + uint64_t(d)\n"
    "        + uint64_t(f) + uint64_t(p.dims.x) + uint64_t(p.origin.z) + uint64_t(hpl_part_dims(p).y);\n"
    "}\n",
    /* every scalar type and element type, several accesses and dimensions */
    "#include <hplvk.glsl>\n"
    "hpl_args {\n"
    "    float sf; double sd; int si; uint su; int64_t sl; uint64_t sul;\n"
    "    hpl_in(float, 1) af; hpl_out(double, 2) ad; hpl_inout(int, 3) ai;\n"
    "    hpl_in(uint, 2) au; hpl_out(int64_t, 1) al; hpl_inout(uint64_t, 3) aul;\n"
    "};\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x;\n"
    "    double acc = double(sf) + sd + double(si) + double(su) + double(sl) + double(sul);\n"
    "    acc += double(hpl_at(af, i)) + double(hpl_at2(au, i, 0));\n"
    "    hpl_at2(ad, i, 0) = acc;\n"
    "    hpl_at3(ai, i, 0, 0) += int(acc);\n"
    "    hpl_at(al, i) = int64_t(acc);\n"
    "    hpl_at3(aul, i, 0, 0) += uint64_t(acc);\n"
    "}\n",
    /* a declared local size, shared memory, a barrier, a far scalar */
    "#define HPL_NO_MASK\n"
    "#include <hplvk.glsl>\n"
    "layout(local_size_x = 64) in;\n"
    "hpl_args { hpl_inout(uint, 1) z; layout(offset = 8192) float far; };\n"
    "shared uint tile[64];\n"
    "void main() {\n"
    "    uint l = gl_LocalInvocationID.x;\n"
    "    tile[l] = hpl_in_domain() ? hpl_at(z, hpl_global_id.x) : 0u;\n"
    "    barrier();\n"
    "    if (l == 0) {\n"
    "        uint s = 0;\n"
    "        for (uint k = 0; k < 64; k++) s += tile[k];\n"
    "        if (hpl_in_domain()) hpl_at(z, hpl_global_id.x) = s + uint(far);\n"
    "    }\n"
    "}\n",
    /* no arguments, no prelude */
    "#version 450\n"
    "layout(local_size_x = 8, local_size_y = 4) in;\n"
    "void main() { }\n",
};
#define KERNELS (int)(sizeof kernel_src / sizeof kernel_src[0])

static uint32_t *kernel_spv[KERNELS];
static size_t kernel_words[KERNELS];

/* ---- random numbers ----------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rnd(uint64_t *s, uint32_t n) /* [0, n) */
{
    return n ? (uint32_t)(splitmix(s) % n) : 0;
}

/* ---- the mutant being tried (also read by the crash handler) -------------- */

#define MAX_EXTRA 256
static uint32_t mutant[8192 + MAX_EXTRA];
static size_t mutant_words;
static char describe[512];
static size_t describe_len;
static uint64_t run_seed;
static long current_case = -1;
static char crash_path[512];
static char crash_line[1536];

static void note(const char *fmt, ...) TH_PRINTF(1, 2);
static void note(const char *fmt, ...)
{
    if (describe_len + 2 >= sizeof describe)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(describe + describe_len, sizeof describe - describe_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        describe_len = HPL__MIN(describe_len + (size_t)n, sizeof describe - 1);
}

/* Writes the mutant to crash_path (async-signal-safe). */
static void dump_mutant(void)
{
    int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, mutant, mutant_words * 4);
        (void)w;
        close(fd);
    }
}

static void on_death(void)
{
    if (current_case < 0)
        return;
    ssize_t w = write(2, crash_line, strlen(crash_line));
    (void)w;
    dump_mutant();
}

static void on_signal(int sig)
{
    on_death();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void set_current(long c)
{
    current_case = c;
    snprintf(crash_path, sizeof crash_path, "%s/hplvk_fuzz_%llu_%ld.spv", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (unsigned long long)run_seed, c);
    snprintf(crash_line, sizeof crash_line,
             "\nunit_spirv_fuzz: CRASH in case %ld (seed=%llu): %s\n  mutant written to %s\n"
             "  replay: unit_spirv_fuzz 1 %llu %ld\n",
             c, (unsigned long long)run_seed, describe, crash_path, (unsigned long long)run_seed, c);
}

/* ---- instructions --------------------------------------------------------- */

#define MAX_INSTR 8192
static size_t instr_at[MAX_INSTR];

/* Starts of the well-formed instructions from word 5 on. */
static int instructions(void)
{
    int n = 0;
    for (size_t i = 5; i < mutant_words && n < MAX_INSTR;) {
        uint32_t len = mutant[i] >> 16;
        if (len == 0 || i + len > mutant_words)
            break;
        instr_at[n++] = i;
        i += len;
    }
    return n;
}

static uint32_t opcode(size_t i) { return mutant[i] & 0xffff; }
static uint32_t wcount(size_t i) { return mutant[i] >> 16; }

/* A random instruction matching (op, min words, word k == v when k > 0);
 * SIZE_MAX when there is none. */
static size_t pick_instr(uint64_t *rng, uint32_t op, uint32_t min_words, uint32_t k, uint32_t v)
{
    int n = instructions(), m = 0;
    static size_t match[MAX_INSTR];
    for (int i = 0; i < n; i++) {
        size_t at = instr_at[i];
        if (opcode(at) == op && wcount(at) >= min_words && (k == 0 || (k < wcount(at) && mutant[at + k] == v)))
            match[m++] = at;
    }
    return m ? match[rnd(rng, (uint32_t)m)] : SIZE_MAX;
}

static void insert_words(size_t at, const uint32_t *w, size_t n)
{
    if (mutant_words + n > HPL__ARRAY_LEN(mutant) || at > mutant_words)
        return;
    memmove(mutant + at + n, mutant + at, (mutant_words - at) * 4);
    memcpy(mutant + at, w, n * 4);
    mutant_words += n;
}

static void delete_words(size_t at, size_t n)
{
    if (at >= mutant_words)
        return;
    n = HPL__MIN(n, mutant_words - at);
    memmove(mutant + at, mutant + at + n, (mutant_words - at - n) * 4);
    mutant_words -= n;
}

/* Interesting values for offsets, strides, literals. */
static uint32_t interesting(uint64_t *rng, uint32_t old)
{
    static const uint32_t v[] = {0,     1,     2,      3,       4,          8,          12,         16,
                                 64,    4096,  8192,   16376,   16380,      16384,      16388,      65532,
                                 65536, 65540, 1u << 20, 1u << 30, 0x7ffffffcu, 0x7fffffffu, 0x80000000u,
                                 0xfffffff0u, 0xfffffffcu, 0xffffffffu};
    switch (rnd(rng, 4)) {
    case 0:
        return old + 4 * (rnd(rng, 9) - 4);
    case 1:
        return (uint32_t)splitmix(rng);
    default:
        return v[rnd(rng, HPL__ARRAY_LEN(v))];
    }
}

enum {
    M_RANDOM_WORD,
    M_BIT_FLIP,
    M_SMALL_DELTA,
    M_SWAP,
    M_TRUNCATE,
    M_INSERT,
    M_DELETE,
    M_ID_BOUND,
    M_OFFSET,
    M_STRIDE,
    M_OPERAND_ID,
    M_WORD_COUNT,
    M_DUP_INSTR,
    M_DEL_INSTR,
    M_MOVE_INSTR,
    M_CONSTANT,
    M_DECORATION,
    M_EXEC_MODE,
    M_NAME,
    M_COUNT
};

static const char *const mutation_name[M_COUNT] = {
    "random-word", "bit-flip",  "small-delta", "swap",      "truncate",  "insert",     "delete",
    "id-bound",    "offset",    "array-stride", "operand-id", "word-count", "dup-instr", "del-instr",
    "move-instr",  "constant",  "decoration",  "exec-mode", "name"};
static long mutation_uses[M_COUNT];

static void mutate(uint64_t *rng, int m)
{
    size_t n = mutant_words;
    uint32_t bound = n > 3 ? mutant[3] : 0;
    size_t i = rnd(rng, (uint32_t)n), at;
    mutation_uses[m]++;
    switch (m) {
    case M_RANDOM_WORD:
        mutant[i] = (uint32_t)splitmix(rng);
        note("word %zu = 0x%x; ", i, mutant[i]);
        break;
    case M_BIT_FLIP: {
        uint32_t b = rnd(rng, 32);
        mutant[i] ^= 1u << b;
        note("word %zu bit %u; ", i, b);
        break;
    }
    case M_SMALL_DELTA: {
        int d = (int)rnd(rng, 8) - 4;
        d = d >= 0 ? d + 1 : d;
        mutant[i] += (uint32_t)d;
        note("word %zu %+d; ", i, d);
        break;
    }
    case M_SWAP: {
        size_t j = rnd(rng, 2) ? HPL__MIN(n - 1, i + 1 + rnd(rng, 4)) : rnd(rng, (uint32_t)n);
        uint32_t t = mutant[i];
        mutant[i] = mutant[j];
        mutant[j] = t;
        note("swap %zu %zu; ", i, j);
        break;
    }
    case M_TRUNCATE:
        mutant_words = rnd(rng, 2) || n == 0 ? i : n - 1 - rnd(rng, (uint32_t)HPL__MIN(n, 8));
        note("truncate to %zu; ", mutant_words);
        break;
    case M_INSERT: {
        uint32_t w[3], k = 1 + rnd(rng, 3);
        for (uint32_t j = 0; j < k; j++)
            w[j] = rnd(rng, 2) ? (uint32_t)splitmix(rng) : rnd(rng, bound + 2);
        insert_words(i, w, k);
        note("insert %u at %zu; ", k, i);
        break;
    }
    case M_DELETE: {
        uint32_t k = 1 + rnd(rng, 3);
        delete_words(i, k);
        note("delete %u at %zu; ", k, i);
        break;
    }
    case M_ID_BOUND: {
        static const uint32_t v[] = {0, 1, 2, 0x3fffff, 0x400000, 0x7fffffff, 0xffffffffu};
        uint32_t nb = rnd(rng, 2) ? bound + (uint32_t)(rnd(rng, 5) - 2) : rnd(rng, 2) ? v[rnd(rng, 7)]
                                                                                           : bound * (1 + rnd(rng, 4));
        if (n > 3)
            mutant[3] = nb;
        note("bound %u -> %u; ", bound, nb);
        break;
    }
    case M_OFFSET:
        /* OpMemberDecorate struct member Offset value */
        at = pick_instr(rng, 72, 5, 3, 35);
        if (at != SIZE_MAX) {
            mutant[at + 4] = interesting(rng, mutant[at + 4]);
            note("offset of %u.%u = %u; ", mutant[at + 1], mutant[at + 2], mutant[at + 4]);
        }
        break;
    case M_STRIDE:
        /* OpDecorate id ArrayStride value */
        at = pick_instr(rng, 71, 4, 2, 6);
        if (at != SIZE_MAX) {
            mutant[at + 3] = interesting(rng, mutant[at + 3]);
            note("stride of %u = %u; ", mutant[at + 1], mutant[at + 3]);
        }
        break;
    case M_OPERAND_ID: {
        int k = instructions();
        if (k) {
            at = instr_at[rnd(rng, (uint32_t)k)];
            if (wcount(at) > 1) {
                uint32_t w = 1 + rnd(rng, wcount(at) - 1);
                mutant[at + w] = rnd(rng, bound + 2);
                note("op %u at %zu operand %u = %u; ", opcode(at), at, w, mutant[at + w]);
            }
        }
        break;
    }
    case M_WORD_COUNT: {
        int k = instructions();
        if (k) {
            at = instr_at[rnd(rng, (uint32_t)k)];
            uint32_t c = rnd(rng, 2) ? wcount(at) + rnd(rng, 5) - 2 : rnd(rng, 0x10000);
            mutant[at] = (c << 16) | opcode(at);
            note("op %u at %zu word count %u; ", opcode(at), at, c);
        }
        break;
    }
    case M_DUP_INSTR:
    case M_DEL_INSTR:
    case M_MOVE_INSTR: {
        int k = instructions();
        if (!k)
            break;
        int a = (int)rnd(rng, (uint32_t)k);
        at = instr_at[a];
        uint32_t len = wcount(at);
        static uint32_t copy[0x10000];
        memcpy(copy, mutant + at, len * 4);
        size_t to = instr_at[rnd(rng, (uint32_t)k)];
        if (m == M_DUP_INSTR) {
            insert_words(rnd(rng, 2) ? at + len : to, copy, len);
        } else if (m == M_DEL_INSTR) {
            delete_words(at, len);
        } else {
            delete_words(at, len);
            insert_words(to > at ? to - len : to, copy, len);
        }
        note("%s op %u at %zu (to %zu); ", mutation_name[m], copy[0] & 0xffff, at, to);
        break;
    }
    case M_CONSTANT: {
        /* OpConstant / OpSpecConstant type id value... */
        at = pick_instr(rng, rnd(rng, 2) ? 43 : 50, 4, 0, 0);
        if (at != SIZE_MAX) {
            uint32_t w = 3 + rnd(rng, wcount(at) - 3);
            mutant[at + w] = interesting(rng, mutant[at + w]);
            note("constant %u = %u; ", mutant[at + 2], mutant[at + w]);
        }
        break;
    }
    case M_DECORATION: {
        /* The decoration operand of OpDecorate (word 2) or OpMemberDecorate
         * (word 3), or its literal. */
        bool member = rnd(rng, 2);
        at = pick_instr(rng, member ? 72 : 71, member ? 4 : 3, 0, 0);
        if (at != SIZE_MAX) {
            uint32_t w = (member ? 3 : 2) + rnd(rng, 2);
            if (w >= wcount(at))
                w = member ? 3 : 2;
            mutant[at + w] = rnd(rng, 2) ? rnd(rng, 48) : interesting(rng, mutant[at + w]);
            note("decoration at %zu word %u = %u; ", at, w, mutant[at + w]);
        }
        break;
    }
    case M_EXEC_MODE:
        /* OpExecutionMode entry mode literals... */
        at = pick_instr(rng, 16, 3, 0, 0);
        if (at != SIZE_MAX) {
            uint32_t w = 2 + rnd(rng, wcount(at) - 2);
            mutant[at + w] = rnd(rng, 2) ? rnd(rng, 40) : interesting(rng, mutant[at + w]);
            note("execution mode word %u = %u; ", w, mutant[at + w]);
        }
        break;
    case M_NAME:
        /* OpName / OpMemberName: bytes of the string */
        at = pick_instr(rng, rnd(rng, 2) ? 5 : 6, 3, 0, 0);
        if (at != SIZE_MAX) {
            uint32_t first = opcode(at) == 5 ? 2 : 3;
            if (wcount(at) > first) {
                uint32_t w = first + rnd(rng, wcount(at) - first);
                mutant[at + w] = rnd(rng, 2) ? (uint32_t)splitmix(rng) : 0x25252525u; /* "%%%%" */
                note("name at %zu word %u; ", at, w);
            }
        }
        break;
    }
}

/* ---- one case --------------------------------------------------------- */

static bool pipelines; /* HPLVK_FUZZ_PIPELINES=1 */
static long outcome_ok, outcome_ok_changed, outcome_err[32], pipelines_made, pipelines_failed, pipelines_refused;

/* Systematic single-word cases on kernel 0: every word, four values. */
static size_t systematic_cases(void)
{
    return kernel_words[0] * 4;
}

static int make_mutant(long c)
{
    describe_len = 0;
    describe[0] = 0;
    if ((size_t)c < systematic_cases()) {
        size_t w = (size_t)c / 4;
        memcpy(mutant, kernel_spv[0], kernel_words[0] * 4);
        mutant_words = kernel_words[0];
        uint32_t old = mutant[w];
        uint32_t v[4] = {0, 0xffffffffu, old + 1, old ^ 0x80000000u};
        mutant[w] = v[c % 4];
        note("kernel 0 word %zu: 0x%x -> 0x%x", w, old, mutant[w]);
        return 0;
    }
    uint64_t rng = run_seed ^ ((uint64_t)c * 0xd1b54a32d192ed03ull);
    splitmix(&rng);
    int k = (int)rnd(&rng, KERNELS);
    memcpy(mutant, kernel_spv[k], kernel_words[k] * 4);
    mutant_words = kernel_words[k];
    note("kernel %d: ", k);
    /* Half single-word mutations, half 2..6 structural and word ones. */
    if (rnd(&rng, 2)) {
        mutate(&rng, (int)rnd(&rng, 3)); /* random word, bit flip, small delta */
    } else {
        int count = 2 + (int)rnd(&rng, 5);
        for (int i = 0; i < count; i++)
            mutate(&rng, (int)rnd(&rng, M_COUNT));
    }
    return k;
}

/* One check per case: a case that fails keeps its first reason. */
static char case_failure[1400];

static void fail_case(long c, const char *why)
{
    (void)c;
    if (!case_failure[0])
        snprintf(case_failure, sizeof case_failure, "%s", why);
}

static void finish_case(long c)
{
    if (case_failure[0])
        dump_mutant();
    CHECK(!case_failure[0],
          "case %ld (seed=%llu): %s\n  mutations: %s\n  mutant written to %s; replay: unit_spirv_fuzz 1 %llu %ld", c,
          (unsigned long long)run_seed, case_failure, describe, crash_path, (unsigned long long)run_seed, c);
    case_failure[0] = 0;
}

static void check_created(hpl_context *ctx, long c, hpl_kernel k)
{
    char why[256] = "";
    int n = hpl_kernel_arg_count(ctx, k);
    if (n < 0 || n > HPL__MAX_ARGS)
        snprintf(why, sizeof why, "%d arguments", n);
    for (int i = 0; i < n && !why[0]; i++) {
        hpl_arg_info ai;
        if (hpl_kernel_get_arg_info(ctx, k, i, &ai) != HPL_OK) {
            snprintf(why, sizeof why, "no info for argument %d: %s", i, hpl_last_error());
            break;
        }
        bool ok = ai.type > HPL_TYPE_INVALID && ai.type < HPL_TYPE_COUNT_ && memchr(ai.name, 0, sizeof ai.name) &&
                  ai.offset < HPL__ARG_RANGE;
        if (ai.kind == HPL_ARG_ARRAY)
            ok = ok && ai.ndims >= 1 && ai.ndims <= 3 &&
                 (ai.access == HPL_READ || ai.access == HPL_WRITE || ai.access == HPL_READ_WRITE);
        else
            ok = ok && ai.kind == HPL_ARG_SCALAR;
        if (!ok)
            snprintf(why, sizeof why, "argument %d: kind %d type %d ndims %d access %d offset %u", i, ai.kind, ai.type,
                     ai.ndims, ai.access, ai.offset);
    }
    uint32_t local[3];
    bool choosable;
    if (!why[0] && hpl_kernel_get_local_size(ctx, k, local, &choosable) == HPL_OK && (!local[0] || !local[1] || !local[2]))
        snprintf(why, sizeof why, "local size %u,%u,%u", local[0], local[1], local[2]);
    hpl__kernel *kk = NULL;
    if (!why[0] && hpl__kernel_get(ctx, k, &kk) == HPL_OK) {
        const hpl__reflection *r = &kk->variants[0].reflection;
        if (r->args_size > HPL__ARG_RANGE || hpl__args_fit(r, r->args_size, HPL_ERROR_INTERNAL, "its size") != HPL_OK)
            snprintf(why, sizeof why, "block of %u bytes: %s", r->args_size, hpl_last_error());
        if (!why[0] && pipelines) {
            /* The kernel's local size, refused past the device's limits as
             * eval refuses it (eval.c local_of). */
            const VkPhysicalDeviceLimits *lim = &ctx->devices[0].props.limits;
            uint32_t l[3] = {r->local_size[0], r->local_size[1], r->local_size[2]};
            uint64_t total = (uint64_t)l[0] * l[1] * l[2];
            bool fits = total <= lim->maxComputeWorkGroupInvocations;
            for (int d = 0; d < 3; d++)
                fits = fits && l[d] <= lim->maxComputeWorkGroupSize[d];
            VkPipeline p;
            int messages = th_error_messages();
            int rc = fits ? hpl__pipeline_get(ctx, &kk->variants[0], &ctx->devices[0], l, r->walkable ? 1 : 0, &p) : HPL_ERROR_INVALID_ARGUMENT;
            if (th_error_messages() != messages) {
                /* The driver or the validation layer said something: keep
                 * the module (the messages above fail the run). */
                dump_mutant();
                th_note("case %ld: %d message(s) creating its pipeline (%s); mutant written to %s", c,
                        th_error_messages() - messages, describe, crash_path);
            }
            if (rc == HPL_OK) {
                pipelines_made++;
            } else if (!fits) {
                pipelines_refused++;
            } else if (rc == HPL_ERROR_VULKAN || rc == HPL_ERROR_INTERNAL) {
                pipelines_failed++;
                th_note("case %ld: pipeline failed: %s (%s)", c, hpl_last_error(), describe);
            } else {
                pipelines_refused++;
            }
        }
    }
    if (why[0])
        fail_case(c, why);
}

static void run_case(hpl_context *ctx, long c)
{
    int k = make_mutant(c);
    set_current(c);
    hpl_kernel kernel = {0x5eed};
    int rc = hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.spirv = mutant, .spirv_words = mutant_words,
                                                                 .name = "fuzzed.spv"}},
                               &kernel);
    if (rc == HPL_OK) {
        bool same = mutant_words == kernel_words[k] && memcmp(mutant, kernel_spv[k], mutant_words * 4) == 0;
        outcome_ok++;
        outcome_ok_changed += !same;
        check_created(ctx, c, kernel);
        if (hpl_kernel_destroy(ctx, kernel) != HPL_OK)
            fail_case(c, "hpl_kernel_destroy failed");
    } else {
        const char *msg = hpl_last_error();
        char why[1200];
        if (rc > 0 || strcmp(hpl_error_name(rc), "HPL_UNKNOWN") == 0) {
            snprintf(why, sizeof why, "returned %d, not an hpl_result", rc);
            fail_case(c, why);
        } else if (!msg[0] || !strstr(msg, "fuzzed.spv")) {
            snprintf(why, sizeof why, "%s with a message that does not name the kernel: \"%s\"", hpl_error_name(rc),
                     msg);
            fail_case(c, why);
        } else if (kernel.id != 0x5eed) {
            fail_case(c, "hpl_kernel_create changed its out-parameter on failure");
        }
        if (rc != HPL_ERROR_KERNEL_SIGNATURE)
            th_note("case %ld: %s: %s (%s)", c, hpl_error_name(rc), msg, describe);
        outcome_err[-rc < 32 && rc < 0 ? -rc : 0]++;
    }
    finish_case(c);
    current_case = -1;
}

int main(int argc, char **argv)
{
    long cases = argc > 1 ? atol(argv[1]) : 30000;
    run_seed = argc > 2 ? strtoull(argv[2], NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    long first = argc > 3 ? atol(argv[3]) : 0;
    pipelines = getenv("HPLVK_FUZZ_PIPELINES") && atoi(getenv("HPLVK_FUZZ_PIPELINES")) == 1;
    printf("unit_spirv_fuzz: seed=%llu cases %ld..%ld%s (replay one: unit_spirv_fuzz 1 %llu CASE)\n",
           (unsigned long long)run_seed, first, first + cases - 1, pipelines ? ", pipelines too" : "",
           (unsigned long long)run_seed);
    fflush(stdout);
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_set_death_callback(on_death);
#else
    signal(SIGSEGV, on_signal);
    signal(SIGBUS, on_signal);
    signal(SIGFPE, on_signal);
    signal(SIGILL, on_signal);
#endif
    signal(SIGABRT, on_signal);

    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu", .no_disk_cache = true});
    for (int k = 0; k < KERNELS; k++) {
        hpl__compile_input in = {.glsl = kernel_src[k], .name = "fuzz_base.comp"};
        if (!CHECK_OK(hpl__compile_glsl(&in, NULL, &kernel_spv[k], &kernel_words[k], NULL)))
            return th_finish(ctx);
        if (!CHECK(kernel_words[k] + MAX_EXTRA <= HPL__ARRAY_LEN(mutant), "kernel %d: %zu words", k, kernel_words[k]))
            return th_finish(ctx);
        /* The unmutated kernels create fine. */
        hpl_kernel kernel;
        if (CHECK_OK(hpl_kernel_create(
                ctx, &(hpl_kernel_desc){.source = {.spirv = kernel_spv[k], .spirv_words = kernel_words[k]}}, &kernel)))
            CHECK_OK(hpl_kernel_destroy(ctx, kernel));
    }
    printf("kernels: ");
    for (int k = 0; k < KERNELS; k++)
        printf("%zu%s", kernel_words[k], k + 1 < KERNELS ? ", " : " words; ");
    printf("%zu systematic single-word cases first\n", systematic_cases());

    double t0 = th_now();
    for (long c = first; c < first + cases; c++)
        run_case(ctx, c);
    double dt = th_now() - t0;

    printf("%ld cases in %.1f s (%.2f ms each): %ld created fine (%ld of them mutated), errors:", cases, dt,
           cases ? dt * 1e3 / (double)cases : 0.0, outcome_ok, outcome_ok_changed);
    for (int e = 0; e < 32; e++)
        if (outcome_err[e])
            printf(" %s %ld", hpl_error_name(-e), outcome_err[e]);
    printf("\nmutations used:");
    for (int m = 0; m < M_COUNT; m++)
        printf(" %s %ld", mutation_name[m], mutation_uses[m]);
    printf("\n");
    if (pipelines)
        printf("pipelines: %ld made, %ld refused by hplvk's checks (local size, device features), %ld failed in the "
               "driver\n",
               pipelines_made, pipelines_refused, pipelines_failed);
    fflush(stdout);
    for (int k = 0; k < KERNELS; k++)
        hpl__free(kernel_spv[k]);
    return th_finish(ctx);
}
