/* Multi-device evals by annotation (chapter 7b) under kernel ABI 2, on
 * Lavapipe logical devices with separate memories ("cpu:4", "cpu:3"; the
 * single zero-copy "cpu" for a one-device split), every result against a
 * host computation. A kernel written for one device runs split unchanged:
 * each subkernel runs over the part of the whole domain it owns,
 * hpl_global_id is a position in the whole domain, and an array argument is
 * indexed in the coordinates of the argument as passed, with the part
 * present on the device (halo included) and the owned box in
 * x.part_lo/part_hi and x.owned_lo/owned_hi.
 *   - part sizes of 1-D, 2-D and 3-D arrays split along dimension 0, 1 and 2,
 *     n not divisible by D and n < D (devices past n run nothing), two evals
 *     each, every invocation checking what it sees against the test's own
 *     partition model (given as scalars): hpl_global_id inside its
 *     subkernel's box, hpl_subkernel_offset/size exactly the part of the
 *     domain the subkernel owns, hpl_global_size and hpl_domain_size the
 *     whole domain, x.dims and x.origin the argument's, x.part_lo/part_hi
 *     and x.owned_lo/owned_hi the model's part and owned box. The first
 *     (x write-only) writes each element its subkernel owns with a
 *     device-independent encoding of its place (hpl_global_id) plus flags
 *     for any disagreement. The second (x read-only) reads every element of
 *     each part, halo included, through hpl_at in whole coordinates (in the
 *     halo: the values the neighbours just wrote), through hpl_part_at from
 *     part_lo (the same element), checks hpl_owns against the model, and
 *     counts itself atomically at its subkernel's first owned element, so
 *     that each subkernel's invocations are exactly its owned range (no halo
 *     rows computed). hpl_array_part_count and every hpl_array_part (device,
 *     origin, dims, owned box, parent, root) against the model (sizes differ
 *     by at most one, larger first, halos clamped); each part's contents
 *     read back;
 *   - the default devices, an explicit device list in another order (part i
 *     on devices[i], proven by where the data moves from), one device;
 *   - annotated subarrays, indexed in the subarray's coordinates: plain
 *     ones, owned (ghosted) ones whose owned box trims the parts, and a part
 *     of an earlier split (an owned subarray) split again; parts whose owned
 *     box is empty (owned_lo == owned_hi in the split dimension, hpl_owns
 *     false everywhere, nothing written); plain (not annotated) evals of
 *     them: part = the argument, owned box = its owned box;
 *   - a replicated read-only array with partitioned ones (y = A x), with the
 *     exact bytes each device receives;
 *   - launch.global (the whole domain split) and launch.domains (each
 *     subkernel runs exactly its own domain, from the start of its part's
 *     owned range of the whole domain; split along dimension 0 and 1, with
 *     and without halo);
 *   - halo refresh: a 2-D stencil kernel written for one device (no
 *     subkernel offsets, no part arithmetic) run with hpl_part1(in, k),
 *     hpl_part1(out, k) swapped for 20 steps on 1, 2, 3 and 4 devices,
 *     k = 1 and 2, equal bit for bit to the host and to a plain eval of the
 *     same kernel; the exact bytes each device sends and receives per step
 *     against a row-validity model (halo rows only); a host write into the
 *     middle between steps (only those rows move); the host gathering the
 *     parts (exact bytes), then reading again (0);
 *   - one array split differently by successive evals (3 devices, 4, 4
 *     reversed, one device, then read with a halo in another order): the
 *     bytes through the host exact against the model, parts of the last
 *     split, annotated arrays with different overlaps in one eval;
 *   - an in-place stencil on one inout argument (owned rows next to a halo
 *     row read it; ownership from hpl_owns2, checked against the host's):
 *     subkernels in device order (the host simulation checked to differ
 *     from concurrent subkernels);
 *   - errors: nothing runs, no array changes, the message names the problem. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXD 16

/* ---- kernels ------------------------------------------------------------ */

/* Flags a checking kernel ORs into what it writes when what it sees
 * disagrees with the test's model; encodings stay below bit 24. */
#define F_ID (1u << 24)     /* hpl_global_id outside its subkernel's box */
#define F_BOX (1u << 25)    /* the subkernel's box, hpl_global_size or hpl_domain_size */
#define F_PART (1u << 26)   /* dims, origin, part_lo/part_hi */
#define F_OWNED (1u << 27)  /* owned_lo/owned_hi, or hpl_owns */
#define F_ORIGIN (1u << 28) /* a replicated array not whole */
#define F_HALO (1u << 30)   /* a value read through hpl_at (halo included) */
#define F_PARTAT (1u << 31) /* hpl_part_at(x, i) is not hpl_at(x, part_lo + i) */
#define F_ALL 0xff000000u

/* The test's model, given to a checking kernel as scalars of four 8-bit
 * fields (every extent here is below 256; few scalars, as each is a load
 * that the kernel's compilation pays for on every device and local size):
 *   mN: the eval's whole domain (3 fields), and the split dimension;
 *   mX: the extents of x, the argument checked against its owned box;
 *   mC: where parts 1, 2, 3 of the split dimension start (its extent for a
 *       part that does not exist), and the overlap;
 *   mB: x's origin in its root; mO, mE: x's own owned box, half-open;
 *   mG0, mG1 (domains kernel only): launch.domains[k].global of part k,
 *       16 bits each (8 per dimension; 0: the default).
 * The kernel finds its part from its hpl_global_id and derives everything
 * it should see: its box of the domain (the part's owned range, or its
 * launch.domains extents from there), x's part (halo added, clamped) and
 * x's owned box (the part's owned range cut to x's own; empty: owned_lo ==
 * owned_hi in the split dimension), in x's coordinates. */
#define MODEL_ARGS "uint mN; uint mX; uint mC; uint mB; uint mO; uint mE;"
#define MODEL_GLSL                                                                                             \
    "#define F_ID (1u << 24)\n"                                                                                \
    "#define F_BOX (1u << 25)\n"                                                                               \
    "#define F_PART (1u << 26)\n"                                                                              \
    "#define F_OWNED (1u << 27)\n"                                                                             \
    "#define F_ORIGIN (1u << 28)\n"                                                                            \
    "#define F_HALO (1u << 30)\n"                                                                              \
    "#define F_PARTAT (1u << 31)\n"                                                                            \
    "#if ND == 1\n"                                                                                            \
    "#define VEC uint\n"                                                                                       \
    "#define CUT(v) (v).x\n"                                                                                   \
    "#define UN(v) uvec3(v, 0u, 0u)\n"                                                                         \
    "#define VNZ(a) ((a) != 0u)\n"                                                                             \
    "#define AT(a, v) hpl_at(a, v)\n"                                                                          \
    "#define PAT(a, v) hpl_part_at(a, v)\n"                                                                    \
    "#define OWNS(a, v) hpl_owns(a, v)\n"                                                                      \
    "#define ENC(g) ((g) + 1u)\n"                                                                              \
    "#elif ND == 2\n"                                                                                          \
    "#define VEC uvec2\n"                                                                                      \
    "#define CUT(v) (v).xy\n"                                                                                  \
    "#define UN(v) uvec3(v, 0u)\n"                                                                             \
    "#define VNZ(a) any(notEqual(a, uvec2(0u)))\n"                                                             \
    "#define AT(a, v) hpl_at2(a, (v).x, (v).y)\n"                                                              \
    "#define PAT(a, v) hpl_part_at2(a, (v).x, (v).y)\n"                                                        \
    "#define OWNS(a, v) hpl_owns2(a, (v).x, (v).y)\n"                                                          \
    "#define ENC(g) ((g).x * 1024u + (g).y + 1u)\n"                                                            \
    "#else\n"                                                                                                  \
    "#define VEC uvec3\n"                                                                                      \
    "#define CUT(v) (v)\n"                                                                                     \
    "#define UN(v) (v)\n"                                                                                      \
    "#define VNZ(a) any(notEqual(a, uvec3(0u)))\n"                                                             \
    "#define AT(a, v) hpl_at3(a, (v).x, (v).y, (v).z)\n"                                                       \
    "#define PAT(a, v) hpl_part_at3(a, (v).x, (v).y, (v).z)\n"                                                 \
    "#define OWNS(a, v) hpl_owns3(a, (v).x, (v).y, (v).z)\n"                                                   \
    "#define ENC(g) ((g).x * 65536u + (g).y * 256u + (g).z + 1u)\n"                                            \
    "#endif\n"                                                                                                 \
    "uvec3 U8(uint v) { return uvec3(v & 255u, (v >> 8) & 255u, (v >> 16) & 255u); }\n"                        \
    "uint D3(uvec3 a, uvec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }\n"                                \
    "uvec3 S, X, PLO, PHI, OLO, OHI; bool EMPTY;\n"                                                            \
    "uint model(uvec3 id) {\n"                                                                                 \
    "    uvec3 N = U8(mN), C = U8(mC);\n"                                                                      \
    "    S = uvec3(equal(uvec3(0u, 1u, 2u), uvec3(mN >> 24)));\n"                                              \
    "    X = U8(mX);\n"                                                                                        \
    "    uint ov = mC >> 24, g = D3(id, S), n = D3(N, S), k = uint(g >= C.x) + uint(g >= C.y) + uint(g >= C.z);\n" \
    "    uint lo = k == 0u ? 0u : k == 1u ? C.x : k == 2u ? C.y : C.z;\n"                                      \
    "    uint hi = k == 0u ? C.x : k == 1u ? C.y : k == 2u ? C.z : n;\n"                                       \
    "    uvec3 blo = S * lo, bhi = N - N * S + S * hi;\n"                                                      \
    "#ifdef HAS_DOMAINS\n"                                                                                     \
    "    uint gd = ((k < 2u ? mG0 : mG1) >> ((k & 1u) * 16u)) & 0xffffu;\n"                                    \
    "    if (gd != 0u) bhi = blo + uvec3(gd & 255u, gd >> 8, 1u);\n"                                           \
    "#endif\n"                                                                                                 \
    "    PLO = S * (lo > ov ? lo - ov : 0u); PHI = X - X * S + S * min(hi + ov, n);\n"                         \
    "    uvec3 O = U8(mO), E = U8(mE);\n"                                                                      \
    "    OLO = O - O * S + S * max(lo, D3(O, S)); OHI = E - E * S + S * min(hi, D3(E, S));\n"                  \
    "    EMPTY = D3(OLO, S) >= D3(OHI, S);\n"                                                                  \
    "    uvec3 a = (hpl_subkernel_offset ^ blo) | (hpl_subkernel_size ^ (bhi - blo)) | (hpl_global_size ^ N) |\n" \
    "              (hpl_domain_size ^ N);\n"                                                                   \
    "    return (any(greaterThanEqual(id - hpl_subkernel_offset, hpl_subkernel_size)) ? F_ID : 0u) |\n"        \
    "           (any(notEqual(a, uvec3(0u))) ? F_BOX : 0u);\n"                                                 \
    "}\n"                                                                                                      \
    "bool model_owns(VEC e) {\n"                                                                               \
    "    return !EMPTY && all(greaterThanEqual(UN(e), OLO)) && all(lessThan(UN(e), OHI));\n"                   \
    "}\n"                                                                                                      \
    "#define CHECK_X(f, a) { \\\n"                                                                             \
    "    VEC d_ = (a.dims ^ CUT(X)) | (a.origin ^ CUT(U8(mB))) | \\\n"                                         \
    "             (a.part_lo ^ CUT(PLO)) | (a.part_hi ^ CUT(PHI)); \\\n"                                       \
    "    VEC o_ = (a.owned_lo ^ CUT(OLO)) | (a.owned_hi ^ CUT(OHI)); \\\n"                                     \
    "    if (EMPTY) o_ = (a.owned_lo ^ a.owned_hi) & CUT(S); \\\n"                                             \
    "    if (VNZ(d_)) f |= F_PART; \\\n"                                                                       \
    "    if (VNZ(o_)) f |= F_OWNED; }\n"                                                                       \
    "#define WHOLE(a) \\\n"                                                                                    \
    "    (VNZ(a.origin | a.part_lo | a.owned_lo | (a.part_hi ^ a.dims) | (a.owned_hi ^ a.dims)) ? F_ORIGIN : 0u)\n"

/* Writes each element of x that its subkernel owns (hpl_owns) with the
 * encoding of its place (hpl_global_id: x's coordinates, as the domain is
 * x's extents) and the flags of whatever disagrees with the model. */
#define ENC_SRC(ND)                                                                                            \
    "#version 460\n"                                                                                           \
    "#define ND " #ND "\n"                                                                                     \
    "#include <hplvk.glsl>\n"                                                                                  \
    "hpl_args { hpl_out(uint, ND) x; " MODEL_ARGS " };\n" MODEL_GLSL                                           \
    "void main() {\n"                                                                                          \
    "    uvec3 id = hpl_global_id;\n"                                                                          \
    "    VEC g = CUT(id);\n"                                                                                   \
    "    uint f = model(id);\n"                                                                                \
    "    CHECK_X(f, x)\n"                                                                                      \
    "    if (OWNS(x, g)) AT(x, g) = ENC(g) | f;\n"                                                             \
    "}\n"

/* Reads every element of x's part along the split dimension at this
 * invocation's other coordinates: through hpl_at in x's coordinates (against
 * ref, a replicated copy of what x should hold), through hpl_part_at from
 * part_lo, and hpl_owns against the model; writes y (x's extents, annotated
 * like x) with the encoding of its place and the flags, and counts itself
 * at its subkernel's first owned element of cnt (annotated like y). */
#define PROBE_SRC(ND)                                                                                          \
    "#version 460\n"                                                                                           \
    "#define ND " #ND "\n"                                                                                     \
    "#include <hplvk.glsl>\n"                                                                                  \
    "hpl_args { hpl_out(uint, ND) y; hpl_in(uint, ND) x; hpl_in(uint, ND) ref; hpl_inout(uint, ND) cnt; "      \
    MODEL_ARGS " };\n" MODEL_GLSL                                                                              \
    "void main() {\n"                                                                                          \
    "    uvec3 id = hpl_global_id;\n"                                                                          \
    "    VEC g = CUT(id);\n"                                                                                   \
    "    uint f = model(id) | WHOLE(ref);\n"                                                                   \
    "    CHECK_X(f, x)\n"                                                                                      \
    "    uint end = min(D3(UN(x.part_hi), S), D3(UN(x.dims), S));\n"                                           \
    "    for (uint h = D3(UN(x.part_lo), S); h < end; h++) {\n"                                                \
    "        VEC e = CUT(id - id * S + S * h);\n"                                                              \
    "        uint v = AT(x, e);\n"                                                                             \
    "        if (v != AT(ref, e)) f |= F_HALO;\n"                                                              \
    "        if (PAT(x, e - x.part_lo) != v) f |= F_PARTAT;\n"                                                 \
    "        if (OWNS(x, e) != model_owns(e)) f |= F_OWNED;\n"                                                 \
    "    }\n"                                                                                                  \
    "    AT(y, g) = ENC(g) | f;\n"                                                                             \
    "    atomicAdd(AT(cnt, cnt.owned_lo), 1u);\n"                                                              \
    "}\n"

static const char *const enc_src[4] = {NULL, ENC_SRC(1), ENC_SRC(2), ENC_SRC(3)};
static const char *const probe_src[4] = {NULL, PROBE_SRC(1), PROBE_SRC(2), PROBE_SRC(3)};

typedef struct split_kernels {
    hpl_kernel enc[4], probe[4]; /* by number of dimensions */
} split_kernels;

/* y = A x: y and A split by rows, x replicated. */
static const char *matvec_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 1) y; hpl_in(float, 2) A; hpl_in(float, 1) x; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x;\n"
    "    float s = 0.0;\n"
    "    for (uint j = 0u; j < A.dims.y; j++) s += hpl_at2(A, i, j) * hpl_at(x, j);\n"
    "    hpl_at(y, i) = s;\n"
    "}\n";

/* launch.global: the first argument (a replicated table) does not give the
 * domain; res (R x C, split by rows with a halo) is written over the given
 * domain R x cg only, in its own coordinates; the table is whole everywhere. */
static const char *global_src =
    "#version 460\n"
    "#define ND 2\n"
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) table; hpl_inout(uint, 2) res; " MODEL_ARGS " };\n" MODEL_GLSL
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    uint t = (table.dims ^ 5u) | table.origin | table.part_lo | (table.part_hi ^ 5u) | table.owned_lo |\n"
    "             (table.owned_hi ^ 5u);\n"
    "    uint f = model(id) | (t != 0u ? F_ORIGIN : 0u);\n"
    "    CHECK_X(f, res)\n"
    "    hpl_at2(res, id.x, id.y) = (id.x * 1024u + id.y + hpl_at(table, id.y % 5u)) | f;\n"
    "}\n";

/* launch.domains: every element of the subkernel's domain (its box: from
 * the start of its part's owned range of the whole domain, the given
 * extents) gets its place and the box's extents (hpl_subkernel_size); flags
 * when the box, hpl_global_size or hpl_domain_size disagree with the model. */
static const char *domains_src =
    "#version 460\n"
    "#define ND 2\n"
    "#define HAS_DOMAINS\n"
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(int, 2) m; " MODEL_ARGS " uint mG0; uint mG1; };\n" MODEL_GLSL
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    uint f = model(id);\n"
    "    hpl_at2(m, id.x, id.y) =\n"
    "        int(((id.x * 64u + id.y) * 4096u + hpl_subkernel_size.x * 64u + hpl_subkernel_size.y) | f);\n"
    "}\n";

/* One stencil step over an R x C uint array (columns wrap), written for one
 * device: no subkernel offsets, no part arithmetic. Split by rows, each
 * subkernel runs over the rows it owns and reads the halo rows above and
 * below them. */
static const char *stencil_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) src; hpl_out(uint, 2) dst; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x, j = hpl_global_id.y;\n"
    "    uint R = src.dims.x, C = src.dims.y;\n"
    "    uint c = hpl_at2(src, i, j);\n"
    "    uint v;\n"
    "    if (i == 0u || i == R - 1u) v = (c * 3u + i + j) % 1000003u;\n"
    "    else {\n"
    "        uint up = hpl_at2(src, i - 1u, j), dn = hpl_at2(src, i + 1u, j);\n"
    "        uint l = hpl_at2(src, i, (j + C - 1u) % C), r = hpl_at2(src, i, (j + 1u) % C);\n"
    "        v = (up + 2u * c + 3u * dn + 5u * l + 7u * r + i) % 1000003u;\n"
    "    }\n"
    "    hpl_at2(dst, i, j) = v;\n"
    "}\n";

/* In place, one halo row on each side. Owned rows update from themselves;
 * an owned row next to a row it does not own (a halo row) also reads it.
 * own[r] is the part owning row r by the host's partition (a replicated
 * read-only array): hpl_owns2 must agree with it (0xdeadbeef otherwise). */
static const char *inplace_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 2) x; hpl_in(uint, 1) own; uint step; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x, j = hpl_global_id.y;\n"
    "    bool up = i > 0u && !hpl_owns2(x, i - 1u, j), dn = i + 1u < x.dims.x && !hpl_owns2(x, i + 1u, j);\n"
    "    uint v = hpl_at2(x, i, j) * 3u + step + i;\n"
    "    if (up) v += hpl_at2(x, i - 1u, j);\n"
    "    if (dn) v += 7u * hpl_at2(x, i + 1u, j);\n"
    "    if (!hpl_owns2(x, i, j) || (i > 0u && up != (hpl_at(own, i - 1u) != hpl_at(own, i))) ||\n"
    "        (i + 1u < x.dims.x && dn != (hpl_at(own, i + 1u) != hpl_at(own, i))))\n"
    "        v = 0xdeadbeefu;\n"
    "    hpl_at2(x, i, j) = v;\n"
    "}\n";

/* x += 1 + i % 3 in place (i: index in the whole domain, = x's). */
static const char *inc_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) += 1u + i % 3u; }\n";

/* y = x[i-1] + x[i] + x[i+1] (edges: missing neighbours are 0); x is split
 * with a halo, y without: both indexed in whole coordinates. */
static const char *sum3_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) y; hpl_in(uint, 1) x; };\n"
    "void main() { uint i = hpl_global_id.x, n = x.dims;\n"
    "    uint s = hpl_at(x, i);\n"
    "    if (i > 0u) s += hpl_at(x, i - 1u);\n"
    "    if (i + 1u < n) s += hpl_at(x, i + 1u);\n"
    "    hpl_at(y, i) = s; }\n";

/* Error cases: p and q written with v + i, 2v + i (i: index in the whole). */
static const char *two1_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) p; hpl_out(uint, 1) q; uint v; };\n"
    "void main() { uint i = hpl_global_id.x;\n"
    "    hpl_at(p, i) = v + i; if (i < q.dims) hpl_at(q, i) = 2u * v + i; }\n";

static const char *one2_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 2) x; uint v; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(x, id.x, id.y) = v; }\n";

static const char *scal_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) p; int s; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(p, i) = uint(s) + i; }\n";

static const char *shared_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) src; hpl_out(uint, 1) shared_out; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(shared_out, i) = hpl_at(src, i) + 1u; }\n";

static const char *shared_rw_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) dst; hpl_inout(uint, 1) shared_rw; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(dst, i) = hpl_at(shared_rw, 0); hpl_at(shared_rw, 0) = i; }\n";

/* ---- partition model and helpers ----------------------------------------- */

typedef struct part_t {
    uint64_t lo, hi;  /* owned [lo, hi) */
    uint64_t hl, hh;  /* with the halo, clamped: [hl, hh) */
} part_t;

/* The documented partition, computed independently: min(n, D) parts whose
 * sizes differ by at most one, larger first. */
static int partition(uint64_t n, int D, uint64_t ov, part_t *out)
{
    int P = n < (uint64_t)D ? (int)n : D;
    if (P <= 0)
        return 0;
    uint64_t q = n / (uint64_t)P, r = n % (uint64_t)P, pos = 0;
    for (int k = 0; k < P; k++) {
        uint64_t size = q + ((uint64_t)k < r ? 1 : 0);
        out[k].lo = pos;
        out[k].hi = pos + size;
        out[k].hl = pos >= ov ? pos - ov : 0;
        out[k].hh = pos + size + ov < n ? pos + size + ov : n;
        pos += size;
    }
    return P;
}

/* What each subkernel of an eval should see (the kernels' model above,
 * computed by the host for its own checks). */
typedef struct gpart {
    uint64_t lo, hi;                 /* its owned range of the split dimension */
    uint64_t box_lo[3], box_hi[3];   /* its box of the domain */
    uint64_t part_lo[3], part_hi[3]; /* x's part, halo included (x's coordinates) */
    uint64_t own_lo[3], own_hi[3];   /* x's owned box, unless empty */
    bool empty;                      /* x owns nothing here */
} gpart;

typedef struct geom {
    int ndims, dim, P;
    uint64_t ov;
    uint64_t whole[3];             /* the eval's domain */
    uint64_t xdims[3], xorigin[3]; /* x's extents and origin in its root */
    uint64_t xol[3], xoh[3];       /* x's own owned box */
    gpart part[MAXD];
} geom;

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static void geom_init(geom *g, int nd, int dim, uint64_t ov, const uint64_t whole[3], const uint64_t xd[3],
                      const uint64_t xo[3], const uint64_t ol[3], const uint64_t oh[3])
{
    memset(g, 0, sizeof *g);
    g->ndims = nd;
    g->dim = dim;
    g->ov = ov;
    for (int d = 0; d < 3; d++) {
        g->whole[d] = whole[d];
        g->xdims[d] = xd[d];
        g->xorigin[d] = xo[d];
        g->xol[d] = ol[d];
        g->xoh[d] = oh[d];
    }
}

/* x (extents xd, origin xo, owned box [ol, oh) in its own coordinates)
 * annotated with hpl_part(x, dim, ov) over D devices, the domain `whole`
 * (as long as x along dim): the domain split without overlap, x's parts
 * with the halo clamped, x's owned box each part's owned range intersected
 * with x's own owned box. */
static void geom_split(geom *g, int nd, const uint64_t whole[3], const uint64_t xd[3], const uint64_t xo[3],
                       const uint64_t ol[3], const uint64_t oh[3], int dim, uint64_t ov, int D)
{
    geom_init(g, nd, dim, ov, whole, xd, xo, ol, oh);
    CHECK(whole[dim] == xd[dim], "test bug: the domain and x differ along the split dimension");
    part_t p[MAXD];
    g->P = partition(xd[dim], D, ov, p);
    for (int k = 0; k < g->P; k++) {
        gpart *q = &g->part[k];
        for (int d = 0; d < 3; d++) {
            q->box_lo[d] = 0;
            q->box_hi[d] = whole[d];
            q->part_lo[d] = 0;
            q->part_hi[d] = xd[d];
            q->own_lo[d] = ol[d];
            q->own_hi[d] = oh[d];
        }
        q->lo = q->box_lo[dim] = p[k].lo;
        q->hi = q->box_hi[dim] = p[k].hi;
        q->part_lo[dim] = p[k].hl;
        q->part_hi[dim] = p[k].hh;
        q->own_lo[dim] = max_u64(p[k].lo, ol[dim]);
        q->own_hi[dim] = min_u64(p[k].hi, oh[dim]);
        if (q->own_lo[dim] >= q->own_hi[dim]) {
            q->empty = true;
            q->own_lo[dim] = q->own_hi[dim] = 0;
        }
    }
}

/* x passed plainly (not annotated) to a one-device eval over its extents:
 * one subkernel, the whole domain, part = x, owned box = x's. */
static void geom_plain(geom *g, int nd, const uint64_t xd[3], const uint64_t xo[3], const uint64_t ol[3],
                       const uint64_t oh[3])
{
    geom_init(g, nd, 0, 0, xd, xd, xo, ol, oh);
    g->P = 1;
    g->part[0].hi = xd[0];
    for (int d = 0; d < 3; d++) {
        g->part[0].box_hi[d] = g->part[0].part_hi[d] = xd[d];
        g->part[0].own_lo[d] = ol[d];
        g->part[0].own_hi[d] = oh[d];
    }
}

/* The model's scalars (MODEL_ARGS, then mG0, mG1 for the domains kernel). */
typedef struct model_args {
    uint32_t v[8];
} model_args;

static uint32_t u8x3(const uint64_t v[3])
{
    CHECK(v[0] < 256 && v[1] < 256 && v[2] < 256, "test bug: %" PRIu64 ", %" PRIu64 ", %" PRIu64 " do not fit 8 bits",
          v[0], v[1], v[2]);
    return (uint32_t)(v[0] | v[1] << 8 | v[2] << 16);
}

/* given: launch.domains (NULL: none). */
static model_args model_of(const geom *g, const hpl_domain *given)
{
    model_args m;
    memset(&m, 0, sizeof m);
    CHECK(g->P <= 4 && g->ov < 256, "test bug: the kernels' model holds 4 parts and an overlap below 256");
    uint64_t c[3];
    for (int k = 1; k <= 3; k++)
        c[k - 1] = k < g->P ? g->part[k].lo : g->whole[g->dim];
    m.v[0] = u8x3(g->whole) | (uint32_t)g->dim << 24;
    m.v[1] = u8x3(g->xdims);
    m.v[2] = u8x3(c) | (uint32_t)g->ov << 24;
    m.v[3] = u8x3(g->xorigin);
    m.v[4] = u8x3(g->xol);
    m.v[5] = u8x3(g->xoh);
    for (int k = 0; given && k < g->P; k++) {
        const uint64_t *e = given[k].global;
        if (e[0] || e[1] || e[2])
            m.v[6 + k / 2] |= (u8x3((uint64_t[3]){e[0], e[1] ? e[1] : 1, 0}) & 0xffffu) << (16 * (k % 2));
    }
    return m;
}
#define MODEL_HPL_ARGS(m)                                                                                      \
    hpl_u32((m).v[0]), hpl_u32((m).v[1]), hpl_u32((m).v[2]), hpl_u32((m).v[3]), hpl_u32((m).v[4]),             \
        hpl_u32((m).v[5])

static hpl_launch dev_launch(const int *devs, int D)
{
    hpl_launch l;
    memset(&l, 0, sizeof l);
    if (devs) {
        for (int i = 0; i < D; i++)
            l.devices[i] = devs[i];
        l.device_count = D;
    }
    return l;
}

static const int IDENT[MAXD] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/* The default devices of an annotated eval with no device list (hplvk.h
 * section 7b): the context's GPUs, or all its devices when it has none
 * (under TH_ZERO_COPY_FIRST on a GPU machine, "cpu+zc,gpu0:2" defaults to
 * its two GPUs). Returns how many. */
static int default_devices(hpl_context *ctx, int out[MAXD])
{
    int n = 0;
    for (int d; n < MAXD && (d = hpl_device_find(ctx, HPL_DEVICE_GPU, n)) >= 0;)
        out[n++] = d;
    for (int d = 0; n == 0 && d < hpl_device_count(ctx) && d < MAXD; d++)
        out[d] = d;
    return n ? n : (hpl_device_count(ctx) < MAXD ? hpl_device_count(ctx) : MAXD);
}

static uint64_t moved(const hpl_stats *s)
{
    uint64_t n = 0;
    for (int d = 0; d < s->device_count && d < 16; d++)
        n += s->device[d].to_device_bytes + s->device[d].to_host_bytes + s->device[d].local_bytes;
    return n;
}

static uint32_t init_value(uint64_t lin)
{
    return 0xA0000000u + (uint32_t)lin;
}

/* The encoding the checking kernels write at g (their argument's coordinates). */
static uint32_t enc(int ndims, const uint64_t g[3])
{
    if (ndims == 1)
        return (uint32_t)g[0] + 1u;
    if (ndims == 2)
        return (uint32_t)(g[0] * 1024u + g[1] + 1u);
    return (uint32_t)(g[0] * 65536u + g[1] * 256u + g[2] + 1u);
}

/* What a wrong value says: never written (still `untouched`), or the flags
 * the kernel set. */
static const char *flags_text(uint32_t v, uint32_t untouched)
{
    static char buf[400];
    static const char *const names[8] = {"hpl_global_id outside its subkernel's box",
                                         "subkernel box, hpl_global_size or hpl_domain_size",
                                         "dims, origin or part_lo/part_hi",
                                         "owned_lo/owned_hi or hpl_owns",
                                         "a replicated array not whole",
                                         "?",
                                         "a value read through hpl_at",
                                         "hpl_part_at"};
    if (v == untouched)
        return " (never written)";
    if (!(v & F_ALL))
        return "";
    int o = snprintf(buf, sizeof buf, " (wrong:");
    for (int b = 0; b < 8; b++)
        if (v & (1u << (24 + b)))
            o += snprintf(buf + o, sizeof buf - (size_t)o, " %s;", names[b]);
    snprintf(buf + o, sizeof buf - (size_t)o, ")");
    return buf;
}

static uint64_t lin3(const uint64_t dims[3], uint64_t i, uint64_t j, uint64_t k)
{
    return (i * dims[1] + j) * dims[2] + k;
}

/* ---- 1. part sizes ---------------------------------------------------------
 *
 * The root (extents rd) holds init_value(lin); the argument x is the root,
 * a subarray of it (owned or not), or a part of an earlier split of the root
 * (which the enc kernel wrote whole). It is split along `dim` with overlap
 * ov over the devices devs[0..D-1] (devs NULL: the default devices, and D
 * their number), or passed plainly to devs[0] (device 0). */
typedef struct split_case {
    int ndims;
    uint64_t rd[3];          /* root extents (unused: 1) */
    bool use_sub;
    hpl_range sub[3];        /* x: the subarray with these ranges (use_sub) */
    bool use_owned;
    hpl_range own[3];        /* and this owned box (use_owned; root coordinates) */
    int pre_D;               /* > 0: x is part pre_index of the root split along */
    int pre_dim, pre_index;  /* pre_dim with overlap pre_ov over devices 0..pre_D-1 */
    int64_t pre_ov;
    bool plain;              /* not annotated: one plain eval */
    bool no_probe;           /* skip the second eval (compiled per device) */
    int dim;
    int64_t ov;
    const int *devs;         /* NULL: default devices */
    int D;
    uint32_t local[3];       /* launch.local (zeros: the library's choice) */
} split_case;

/* " name[first..last,...]" of ndims ranges into buf (n bytes); its length. */
static int describe_ranges(char *buf, size_t n, const char *name, const hpl_range *r, int ndims)
{
    int o = snprintf(buf, n, " %s[", name);
    for (int k = 0; k < ndims; k++)
        o += snprintf(buf + o, n - (size_t)o, "%s%" PRIu64 "..%" PRIu64, k ? "," : "", r[k].first, r[k].last);
    return o + snprintf(buf + o, n - (size_t)o, "]");
}

static void describe(const split_case *c, char *buf, size_t n)
{
    int o = snprintf(buf, n, "%dD %" PRIu64, c->ndims, c->rd[0]);
    for (int k = 1; k < c->ndims; k++)
        o += snprintf(buf + o, n - (size_t)o, "x%" PRIu64, c->rd[k]);
    if (c->use_sub) {
        o += describe_ranges(buf + o, n - (size_t)o, "sub", c->sub, c->ndims);
        if (c->use_owned)
            o += describe_ranges(buf + o, n - (size_t)o, "owned", c->own, c->ndims);
    }
    if (c->pre_D > 0)
        o += snprintf(buf + o, n - (size_t)o, " part %d of (dim %d overlap %" PRId64 " over %d)", c->pre_index,
                      c->pre_dim, c->pre_ov, c->pre_D);
    if (c->plain) {
        snprintf(buf + o, n - (size_t)o, " plain on device %d", c->devs ? c->devs[0] : 0);
        return;
    }
    o += snprintf(buf + o, n - (size_t)o, " dim %d overlap %" PRId64 " devices ", c->dim, c->ov);
    if (!c->devs)
        snprintf(buf + o, n - (size_t)o, "default(%d)", c->D);
    else {
        o += snprintf(buf + o, n - (size_t)o, "{");
        for (int i = 0; i < c->D; i++)
            o += snprintf(buf + o, n - (size_t)o, "%s%d", i ? "," : "", c->devs[i]);
        snprintf(buf + o, n - (size_t)o, "}");
    }
}

static hpl_array array_of(hpl_context *ctx, int nd, const uint64_t d[3])
{
    return th_array(ctx, HPL_UINT32, d[0], nd > 1 ? d[1] : 0, nd > 2 ? d[2] : 0);
}

/* The enc eval of argument xa (model g; annotated or plain) with launch l.
 * Returns whether it ran. */
static bool run_enc(hpl_context *ctx, const split_kernels *K, const hpl_launch *l, hpl_arg xa, const geom *g,
                    const char *what)
{
    model_args m = model_of(g, NULL);
    int r = hpl_eval(ctx, K->enc[g->ndims], l, HPL_ARGS(xa, MODEL_HPL_ARGS(m)));
    return CHECK(r == HPL_OK, "%s: hpl_eval = %s: %s", what, hpl_error_name(r), hpl_last_error());
}

static void run_split(hpl_context *ctx, const split_kernels *K, const split_case *c)
{
    int defaults[MAXD];
    split_case with_defaults;
    if (!c->devs && !c->plain) {
        with_defaults = *c;
        with_defaults.D = default_devices(ctx, defaults);
        c = &with_defaults;
    }
    char what[300];
    describe(c, what, sizeof what);
    const int nd = c->ndims;
    uint64_t rd[3] = {c->rd[0], nd > 1 ? c->rd[1] : 1, nd > 2 ? c->rd[2] : 1};
    uint64_t total = rd[0] * rd[1] * rd[2];
    hpl_array root = array_of(ctx, nd, rd);
    uint32_t *expect = malloc(total * sizeof(uint32_t)), *buf = malloc(total * sizeof(uint32_t));
    for (uint64_t i = 0; i < total; i++)
        expect[i] = init_value(i);
    CHECK_OK(hpl_array_write(ctx, root, expect, total * sizeof(uint32_t)));
    const int *devs = c->devs ? c->devs : c->plain ? IDENT : defaults;
    hpl_array y = {0}, ref = {0}, cnt = {0};
    uint32_t *vbuf = NULL;

    /* x: origin vo in the root, extents vd, owned box [ol, oh) in its own
     * coordinates. */
    uint64_t vo[3] = {0, 0, 0}, vd[3] = {rd[0], rd[1], rd[2]}, ol[3] = {0, 0, 0}, oh[3] = {rd[0], rd[1], rd[2]};
    hpl_array view = root;
    int root_parts = 0;
    if (c->pre_D > 0) {
        geom pg;
        static const uint64_t zero[3] = {0, 0, 0};
        geom_split(&pg, nd, rd, rd, zero, zero, rd, c->pre_dim, (uint64_t)c->pre_ov, c->pre_D);
        hpl_launch pl = dev_launch(IDENT, c->pre_D);
        char w[340];
        snprintf(w, sizeof w, "%s: the earlier split", what);
        if (!run_enc(ctx, K, &pl, hpl_part(root, c->pre_dim, c->pre_ov), &pg, w))
            goto out;
        for (uint64_t i = 0; i < rd[0]; i++)
            for (uint64_t j = 0; j < rd[1]; j++)
                for (uint64_t k = 0; k < rd[2]; k++)
                    expect[lin3(rd, i, j, k)] = enc(nd, (uint64_t[3]){i, j, k});
        root_parts = pg.P;
        if (!CHECK_OK(hpl_array_part(ctx, root, c->pre_index, &view, NULL)))
            goto out;
        const gpart *q = &pg.part[c->pre_index];
        for (int d = 0; d < 3; d++) {
            vo[d] = q->part_lo[d];
            vd[d] = q->part_hi[d] - q->part_lo[d];
            ol[d] = q->own_lo[d] - q->part_lo[d];
            oh[d] = q->own_hi[d] - q->part_lo[d];
        }
    } else if (c->use_sub) {
        int r = c->use_owned ? hpl_subarray_owned(ctx, root, nd, c->sub, c->own, &view)
                             : hpl_subarray(ctx, root, nd, c->sub, &view);
        if (!CHECK(r == HPL_OK, "%s: subarray: %s", what, hpl_last_error()))
            goto out;
        for (int d = 0; d < nd; d++) {
            vo[d] = c->sub[d].first;
            vd[d] = c->sub[d].last - c->sub[d].first + 1;
            ol[d] = c->use_owned ? c->own[d].first - c->sub[d].first : 0;
            oh[d] = c->use_owned ? c->own[d].last + 1 - c->sub[d].first : vd[d];
        }
    }
    if (view.id != root.id) {
        hpl_array_info info;
        memset(&info, 0, sizeof info);
        if (CHECK_OK(hpl_array_get_info(ctx, view, &info)))
            for (int d = 0; d < nd; d++)
                CHECK(info.dims[d] == vd[d] && info.origin[d] == vo[d] && info.owned_first[d] == ol[d] &&
                          info.owned_last[d] == oh[d] - 1,
                      "%s: the argument's dim %d: extent %" PRIu64 " at %" PRIu64 " owned %" PRIu64 "..%" PRIu64
                      ", want %" PRIu64 " at %" PRIu64 " owned %" PRIu64 "..%" PRIu64,
                      what, d, info.dims[d], info.origin[d], info.owned_first[d], info.owned_last[d], vd[d], vo[d],
                      ol[d], oh[d] - 1);
    }

    geom g;
    if (c->plain)
        geom_plain(&g, nd, vd, vo, ol, oh);
    else
        geom_split(&g, nd, vd, vd, vo, ol, oh, c->dim, (uint64_t)c->ov, c->D);
    const int P = g.P;
    hpl_launch l = dev_launch(c->plain ? NULL : c->devs, c->D);
    if (c->plain)
        l.device = devs[0];
    for (int k = 0; k < 3; k++)
        l.local[k] = c->local[k];
    hpl_arg xa = c->plain ? hpl_arr(view) : hpl_part(view, c->dim, c->ov);
    hpl_stats before = th_stats(ctx);
    if (!run_enc(ctx, K, &l, xa, &g, what))
        goto out;
    /* x now holds the encoding of its place wherever a part owns it. */
    for (int k = 0; k < P; k++) {
        const gpart *q = &g.part[k];
        if (q->empty)
            continue;
        for (uint64_t i = q->own_lo[0]; i < q->own_hi[0]; i++)
            for (uint64_t j = q->own_lo[1]; j < q->own_hi[1]; j++)
                for (uint64_t k2 = q->own_lo[2]; k2 < q->own_hi[2]; k2++)
                    expect[lin3(rd, vo[0] + i, vo[1] + j, vo[2] + k2)] = enc(nd, (uint64_t[3]){i, j, k2});
    }

    /* The probe: every part read back on its device, halo included; each
     * subkernel's invocations counted. A fixed local size: one pipeline per
     * device and dimensionality (compiling is most of this test's time on
     * Lavapipe), as the enc eval covers the library's choice and launch.local. */
    if (!c->no_probe) {
        uint64_t vn = vd[0] * vd[1] * vd[2];
        vbuf = malloc(vn * sizeof(uint32_t));
        for (uint64_t i = 0; i < vd[0]; i++)
            for (uint64_t j = 0; j < vd[1]; j++)
                for (uint64_t k = 0; k < vd[2]; k++)
                    vbuf[lin3(vd, i, j, k)] = expect[lin3(rd, vo[0] + i, vo[1] + j, vo[2] + k)];
        ref = array_of(ctx, nd, vd);
        y = array_of(ctx, nd, vd);
        cnt = array_of(ctx, nd, vd);
        CHECK_OK(hpl_array_write(ctx, ref, vbuf, vn * sizeof(uint32_t)));
        memset(vbuf, 0, vn * sizeof(uint32_t));
        CHECK_OK(hpl_array_write(ctx, cnt, vbuf, vn * sizeof(uint32_t)));
        hpl_launch pl = l;
        static const uint32_t probe_local[4][3] = {{0}, {8, 1, 1}, {4, 2, 1}, {2, 2, 2}};
        memcpy(pl.local, probe_local[nd], sizeof pl.local);
        hpl_arg ya = c->plain ? hpl_arr(y) : hpl_part(y, c->dim, c->ov);
        hpl_arg ca = c->plain ? hpl_arr(cnt) : hpl_part(cnt, c->dim, c->ov);
        model_args m = model_of(&g, NULL);
        int r = hpl_eval(ctx, K->probe[nd], &pl, HPL_ARGS(ya, xa, hpl_arr(ref), ca, MODEL_HPL_ARGS(m)));
        if (CHECK(r == HPL_OK, "%s: probe: hpl_eval = %s: %s", what, hpl_error_name(r), hpl_last_error()) &&
            CHECK_OK(hpl_array_read(ctx, y, vbuf, vn * sizeof(uint32_t)))) {
            uint64_t bad = 0, fi = 0;
            uint32_t fw = 0;
            for (uint64_t i = 0; i < vd[0]; i++)
                for (uint64_t j = 0; j < vd[1]; j++)
                    for (uint64_t k = 0; k < vd[2]; k++) {
                        uint32_t w = enc(nd, (uint64_t[3]){i, j, k});
                        if (vbuf[lin3(vd, i, j, k)] != w && bad++ == 0) {
                            fi = lin3(vd, i, j, k);
                            fw = w;
                        }
                    }
            CHECK(bad == 0, "%s: reading the parts back: %" PRIu64 " of %" PRIu64 " wrong, first [%" PRIu64
                  "] = 0x%x want 0x%x%s", what, bad, vn, fi, bad ? vbuf[fi] : 0, fw,
                  bad ? flags_text(vbuf[fi], 0) : "");
        }
        /* Each subkernel counted its invocations at its first owned element
         * of cnt: exactly its owned range of the domain, nothing else. */
        if (r == HPL_OK && CHECK_OK(hpl_array_read(ctx, cnt, vbuf, vn * sizeof(uint32_t)))) {
            uint32_t *want_cnt = calloc(vn, sizeof(uint32_t));
            for (int k = 0; k < P; k++) {
                const gpart *q = &g.part[k];
                want_cnt[lin3(vd, q->box_lo[0], q->box_lo[1], q->box_lo[2])] =
                    (uint32_t)((q->box_hi[0] - q->box_lo[0]) * (q->box_hi[1] - q->box_lo[1]) *
                               (q->box_hi[2] - q->box_lo[2]));
            }
            uint64_t bad = 0, fi = 0;
            for (uint64_t i = 0; i < vn; i++)
                if (vbuf[i] != want_cnt[i] && bad++ == 0)
                    fi = i;
            CHECK(bad == 0,
                  "%s: invocations counted at each subkernel's first owned element: %" PRIu64 " of %" PRIu64
                  " wrong, first [%" PRIu64 "] = %u, want %u",
                  what, bad, vn, fi, bad ? vbuf[fi] : 0, want_cnt[fi]);
            free(want_cnt);
        }
    }

    /* Devices past the parts ran nothing: no buffer appeared there. */
    {
        hpl_stats after = th_stats(ctx);
        for (int d = 0; d < after.device_count && d < MAXD; d++) {
            bool used = false;
            for (int i = 0; i < P; i++)
                used = used || devs[i] == d;
            if (!used)
                CHECK(after.device[d].resident_bytes == before.device[d].resident_bytes,
                      "%s: device %d has no part but its resident bytes went from %" PRIu64 " to %" PRIu64, what, d,
                      before.device[d].resident_bytes, after.device[d].resident_bytes);
        }
    }

    /* The whole root: x's owned boxes encoded, the rest untouched. */
    if (CHECK_OK(hpl_array_read(ctx, root, buf, total * sizeof(uint32_t)))) {
        uint64_t bad = 0, fi = 0;
        for (uint64_t i = 0; i < total; i++)
            if (buf[i] != expect[i] && bad++ == 0)
                fi = i;
        CHECK(bad == 0, "%s: %" PRIu64 " of %" PRIu64 " elements wrong, first [%" PRIu64 "] = 0x%x want 0x%x%s", what,
              bad, total, fi, bad ? buf[fi] : 0, expect[fi], bad ? flags_text(buf[fi], init_value(fi)) : "");
    }

    if (c->plain) {
        CHECK(hpl_array_part_count(ctx, view) == 0, "%s: a plain eval split the argument in %d parts", what,
              hpl_array_part_count(ctx, view));
        goto out;
    }
    /* The parts. */
    int nparts = hpl_array_part_count(ctx, view);
    CHECK(nparts == P, "%s: hpl_array_part_count = %d, want %d", what, nparts, P);
    if (view.id != root.id)
        CHECK(hpl_array_part_count(ctx, root) == root_parts, "%s: the root has %d parts, want %d", what,
              hpl_array_part_count(ctx, root), root_parts);
    for (int i = 0; i < P && i < nparts; i++) {
        hpl_array part = {0};
        int dev = -7;
        if (!CHECK_OK(hpl_array_part(ctx, view, i, &part, &dev)))
            continue;
        CHECK(dev == devs[i], "%s: part %d on device %d, want %d", what, i, dev, devs[i]);
        hpl_array again = {0};
        if (CHECK_OK(hpl_array_part(ctx, view, i, &again, NULL)))
            CHECK(again.id == part.id, "%s: part %d asked twice gave handles %" PRIx64 " and %" PRIx64, what, i,
                  part.id, again.id);
        hpl_array_info info;
        memset(&info, 0, sizeof info);
        if (!CHECK_OK(hpl_array_get_info(ctx, part, &info)))
            continue;
        const gpart *q = &g.part[i];
        uint64_t pd[3], po[3];
        for (int d = 0; d < 3; d++) {
            pd[d] = q->part_hi[d] - q->part_lo[d];
            po[d] = vo[d] + q->part_lo[d];
        }
        CHECK(info.is_subarray && info.root.id == root.id && info.parent.id == view.id && info.ndims == nd &&
                  info.type == HPL_UINT32,
              "%s: part %d: is_subarray %d root %" PRIx64 " (want %" PRIx64 ") parent %" PRIx64 " (want %" PRIx64
              ") ndims %d type %d", what, i,
              info.is_subarray, info.root.id, root.id, info.parent.id, view.id, info.ndims, info.type);
        for (int d = 0; d < nd; d++) {
            CHECK(info.dims[d] == pd[d] && info.origin[d] == po[d],
                  "%s: part %d dim %d: extent %" PRIu64 " origin %" PRIu64 ", want %" PRIu64 " at %" PRIu64, what, i,
                  d, info.dims[d], info.origin[d], pd[d], po[d]);
            if (q->empty)
                CHECK(info.owned_count == 0 && info.owned_first[d] == 0 && info.owned_last[d] == 0,
                      "%s: part %d dim %d: owned_count %" PRIu64 ", owned %" PRIu64 "..%" PRIu64
                      ", want none (count 0, first and last 0)",
                      what, i, d, info.owned_count, info.owned_first[d], info.owned_last[d]);
            else
                CHECK(info.owned_first[d] == q->own_lo[d] - q->part_lo[d] &&
                          info.owned_last[d] == q->own_hi[d] - 1 - q->part_lo[d],
                      "%s: part %d dim %d: owned %" PRIu64 "..%" PRIu64 ", want %" PRIu64 "..%" PRIu64, what, i, d,
                      info.owned_first[d], info.owned_last[d], q->own_lo[d] - q->part_lo[d],
                      q->own_hi[d] - 1 - q->part_lo[d]);
        }
        /* Its contents, halo included. */
        uint64_t n = pd[0] * pd[1] * pd[2];
        uint32_t *pb = malloc(n * sizeof(uint32_t));
        if (CHECK_OK(hpl_array_read(ctx, part, pb, n * sizeof(uint32_t)))) {
            uint64_t bad = 0;
            for (uint64_t a0 = 0; a0 < pd[0]; a0++)
                for (uint64_t a1 = 0; a1 < pd[1]; a1++)
                    for (uint64_t a2 = 0; a2 < pd[2]; a2++)
                        bad += pb[lin3(pd, a0, a1, a2)] != expect[lin3(rd, po[0] + a0, po[1] + a1, po[2] + a2)];
            CHECK(bad == 0, "%s: part %d read back: %" PRIu64 " of %" PRIu64 " elements wrong", what, i, bad, n);
        }
        free(pb);
    }
    /* Parts are ordinary subarrays, listed once hpl_array_part returned them. */
    CHECK(hpl_subarray_count(ctx, view) == P, "%s: %d subarrays listed after hpl_array_part, want %d", what,
          hpl_subarray_count(ctx, view), P);
    hpl_array none = {0};
    if (P < MAXD)
        CHECK_FAILS_ANY(hpl_array_part(ctx, view, P, &none, NULL), ((int[]){HPL_ERROR_OUT_OF_RANGE,
                        HPL_ERROR_INVALID_ARGUMENT}), 2, "");
    CHECK(none.id == 0, "%s: a failing hpl_array_part wrote its out-parameter", what);
out:
    if (y.id)
        CHECK_OK(hpl_array_destroy(ctx, y));
    if (ref.id)
        CHECK_OK(hpl_array_destroy(ctx, ref));
    if (cnt.id)
        CHECK_OK(hpl_array_destroy(ctx, cnt));
    CHECK_OK(hpl_array_destroy(ctx, root));
    free(vbuf);
    free(expect);
    free(buf);
}

static void part_sizes(hpl_context *ctx, const split_kernels *K)
{
    static const int three[] = {0, 1, 2};
    /* 1-D: n not divisible by D, and n < D. */
    static const uint64_t ns[] = {10, 11, 13, 5};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (int ov = 0; ov <= 2; ov++) {
            run_split(ctx, K, &(split_case){.ndims = 1, .rd = {ns[a]}, .dim = 0, .ov = ov, .devs = three, .D = 3});
            run_split(ctx, K, &(split_case){.ndims = 1, .rd = {ns[a]}, .dim = 0, .ov = ov, .devs = NULL, .D = 4});
        }
    for (uint64_t n = 1; n <= 3; n++)
        for (int ov = 0; ov <= 5; ov += ov == 1 ? 4 : 1) /* 0, 1, and a halo past both edges */
            run_split(ctx, K, &(split_case){.ndims = 1, .rd = {n}, .dim = 0, .ov = ov, .devs = NULL, .D = 4});
    /* 2-D by rows, n < D included. */
    static const uint64_t rows[] = {13, 10, 3};
    for (size_t a = 0; a < sizeof rows / sizeof rows[0]; a++)
        for (int ov = 0; ov <= 1; ov++) {
            run_split(ctx, K, &(split_case){.ndims = 2, .rd = {rows[a], 7}, .dim = 0, .ov = ov, .D = 4});
            run_split(ctx, K,
                      &(split_case){.ndims = 2, .rd = {rows[a], 7}, .dim = 0, .ov = ov, .devs = three, .D = 3});
        }
    /* 2-D by columns (dimension 1), 3-D by dimension 2 and by dimension 1. */
    for (int ov = 0; ov <= 1; ov++) {
        run_split(ctx, K, &(split_case){.ndims = 2, .rd = {6, 11}, .dim = 1, .ov = ov, .D = 4});
        run_split(ctx, K, &(split_case){.ndims = 2, .rd = {5, 2}, .dim = 1, .ov = ov, .devs = three, .D = 3});
        run_split(ctx, K, &(split_case){.ndims = 3, .rd = {4, 5, 10}, .dim = 2, .ov = ov, .D = 4});
        run_split(ctx, K, &(split_case){.ndims = 3, .rd = {3, 7, 6}, .dim = 1, .ov = ov, .devs = three, .D = 3});
        run_split(ctx, K, &(split_case){.ndims = 3, .rd = {9, 3, 4}, .dim = 0, .ov = ov, .D = 4});
    }
    /* launch.local: every subkernel's local size (parts not multiples of it). */
    run_split(ctx, K, &(split_case){.ndims = 1, .rd = {37}, .dim = 0, .ov = 1, .D = 4, .local = {4, 1, 1}});
    run_split(ctx, K, &(split_case){.ndims = 2, .rd = {10, 9}, .dim = 1, .ov = 1, .D = 4, .local = {3, 2, 1}});
    run_split(ctx, K, &(split_case){.ndims = 3, .rd = {5, 6, 7}, .dim = 0, .ov = 0, .devs = three, .D = 3,
                                        .local = {2, 2, 2}});
    /* A subarray as the annotated argument: parts are of the subarray, and
     * the kernel indexes in its coordinates. */
    for (int ov = 0; ov <= 1; ov++) {
        run_split(ctx, K,
                  &(split_case){.ndims = 2, .rd = {20, 12}, .use_sub = true, .sub = {{3, 16}, {2, 9}}, .dim = 0,
                                .ov = ov, .devs = three, .D = 3});
        run_split(ctx, K,
                  &(split_case){.ndims = 2, .rd = {20, 12}, .use_sub = true, .sub = {{3, 16}, {2, 9}}, .dim = 1,
                                .ov = ov, .D = 4});
        run_split(ctx, K,
                  &(split_case){.ndims = 1, .rd = {30}, .use_sub = true, .sub = {{5, 15}}, .dim = 0, .ov = ov,
                                .D = 4});
        run_split(ctx, K,
                  &(split_case){.ndims = 3, .rd = {6, 7, 9}, .use_sub = true, .sub = {{1, 4}, {2, 6}, {1, 7}},
                                .dim = 2, .ov = ov, .D = 4});
    }
    /* An owned (ghosted) subarray split again: each part's owned box is its
     * owned range cut to the subarray's owned box, in every dimension; edge
     * parts inside the ghost region own nothing. */
    run_split(ctx, K, &(split_case){.ndims = 1, .rd = {20}, .use_sub = true, .sub = {{2, 13}}, .use_owned = true,
                                    .own = {{5, 10}}, .dim = 0, .ov = 1, .D = 4}); /* parts 0, 3 empty */
    run_split(ctx, K, &(split_case){.ndims = 2, .rd = {16, 11}, .use_sub = true, .sub = {{1, 12}, {2, 9}},
                                    .use_owned = true, .own = {{4, 9}, {3, 8}}, .dim = 0, .ov = 1,
                                    .D = 4}); /* parts 0, 3 empty */
    run_split(ctx, K, &(split_case){.ndims = 2, .rd = {16, 11}, .use_sub = true, .sub = {{1, 12}, {2, 9}},
                                    .use_owned = true, .own = {{4, 9}, {3, 8}}, .dim = 1, .ov = 2, .devs = three,
                                    .D = 3});
    run_split(ctx, K, &(split_case){.ndims = 3, .rd = {6, 7, 9}, .use_sub = true, .sub = {{1, 4}, {2, 6}, {1, 7}},
                                    .use_owned = true, .own = {{2, 3}, {2, 6}, {3, 5}}, .dim = 2, .ov = 1,
                                    .D = 4}); /* parts 0, 3 empty */
    /* A part of an earlier split (an owned subarray, its halo the ghost
     * region) split again. */
    run_split(ctx, K, &(split_case){.ndims = 2, .rd = {17, 6}, .pre_D = 3, .pre_dim = 0, .pre_index = 1, .pre_ov = 2,
                                    .dim = 0, .ov = 1, .D = 4}); /* part 3 empty */
    run_split(ctx, K, &(split_case){.ndims = 1, .rd = {23}, .pre_D = 4, .pre_dim = 0, .pre_index = 2, .pre_ov = 3,
                                    .dim = 0, .ov = 0, .devs = (const int[]){2, 0, 1}, .D = 3});
    run_split(ctx, K, &(split_case){.ndims = 3, .rd = {4, 5, 10}, .pre_D = 4, .pre_dim = 2, .pre_index = 1,
                                    .pre_ov = 1, .dim = 2, .ov = 1, .devs = three, .D = 3}); /* part 2 empty */
    run_split(ctx, K, &(split_case){.ndims = 3, .rd = {4, 5, 10}, .pre_D = 4, .pre_dim = 2, .pre_index = 1,
                                    .pre_ov = 1, .dim = 0, .ov = 1, .D = 4});
    /* Plain evals: the part is the whole argument, the owned box its own. */
    run_split(ctx, K, &(split_case){.ndims = 2, .rd = {7, 5}, .plain = true, .devs = (const int[]){2}, .D = 1});
    run_split(ctx, K, &(split_case){.ndims = 2, .rd = {16, 11}, .use_sub = true, .sub = {{1, 12}, {2, 9}},
                                    .use_owned = true, .own = {{4, 9}, {3, 8}}, .plain = true,
                                    .devs = (const int[]){1}, .D = 1});
    run_split(ctx, K, &(split_case){.ndims = 1, .rd = {23}, .pre_D = 4, .pre_dim = 0, .pre_index = 2, .pre_ov = 3,
                                    .plain = true, .devs = (const int[]){3}, .D = 1});
}

/* ---- 2. explicit device lists --------------------------------------------- */

static void device_lists(hpl_context *ctx, const split_kernels *K)
{
    static const int order[] = {2, 0, 1}, one[] = {1}, rev[] = {3, 2, 1, 0};
    for (int ov = 0; ov <= 1; ov++) {
        run_split(ctx, K, &(split_case){.ndims = 1, .rd = {11}, .dim = 0, .ov = ov, .devs = order, .D = 3});
        run_split(ctx, K, &(split_case){.ndims = 2, .rd = {9, 4}, .dim = 0, .ov = ov, .devs = rev, .D = 4});
        run_split(ctx, K, &(split_case){.ndims = 1, .rd = {11}, .dim = 0, .ov = ov, .devs = one, .D = 1});
        run_split(ctx, K, &(split_case){.ndims = 2, .rd = {9, 4}, .dim = 1, .ov = ov, .devs = order, .D = 3});
    }
    /* Where the data is: part i written on devices[i], so reading part i on
     * the host moves its bytes out of devices[i], and nothing else. */
    const struct {
        const int *devs;
        int D;
    } lists[] = {{order, 3}, {one, 1}, {rev, 4}};
    for (size_t t = 0; t < sizeof lists / sizeof lists[0]; t++) {
        const uint64_t n = 14, cols = 3;
        hpl_array a = th_array(ctx, HPL_UINT32, n, cols, 0);
        hpl_launch l = dev_launch(lists[t].devs, lists[t].D);
        geom g;
        const uint64_t dims[3] = {n, cols, 1}, zero[3] = {0, 0, 0};
        geom_split(&g, 2, dims, dims, zero, zero, dims, 0, 0, lists[t].D);
        char w[64];
        snprintf(w, sizeof w, "device list %zu", t);
        run_enc(ctx, K, &l, hpl_part1(a, 0), &g, w);
        part_t parts[MAXD];
        int P = partition(n, lists[t].D, 0, parts);
        CHECK(hpl_array_part_count(ctx, a) == P, "device list %zu: %d parts, want %d", t,
              hpl_array_part_count(ctx, a), P);
        for (int i = 0; i < P; i++) {
            hpl_array part = {0};
            int dev = -1;
            if (!CHECK_OK(hpl_array_part(ctx, a, i, &part, &dev)))
                continue;
            uint64_t bytes = (parts[i].hi - parts[i].lo) * cols * 4;
            uint32_t *pb = malloc(bytes);
            CHECK_OK(hpl_stats_reset(ctx));
            CHECK_OK(hpl_array_read(ctx, part, pb, bytes));
            hpl_stats s = th_stats(ctx);
            for (int d = 0; d < s.device_count && d < 16; d++) {
                uint64_t want = d == lists[t].devs[i] ? bytes : 0;
                CHECK(s.device[d].to_host_bytes == want && s.device[d].to_device_bytes == 0,
                      "device list %zu part %d (on device %d): device %d sent %" PRIu64 " bytes to the host "
                      "(want %" PRIu64 "), received %" PRIu64,
                      t, i, lists[t].devs[i], d, s.device[d].to_host_bytes, want, s.device[d].to_device_bytes);
            }
            uint64_t bad = 0;
            for (uint64_t r = 0; r < parts[i].hi - parts[i].lo; r++)
                for (uint64_t j = 0; j < cols; j++)
                    bad += pb[r * cols + j] != enc(2, (uint64_t[3]){parts[i].lo + r, j, 0});
            CHECK(bad == 0, "device list %zu part %d: %" PRIu64 " elements wrong", t, i, bad);
            free(pb);
        }
        CHECK_OK(hpl_array_destroy(ctx, a));
    }
}

/* ---- 3. replicated read-only array: y = A x ------------------------------- */

static void replicated(hpl_context *ctx, hpl_kernel matvec, int ndev)
{
    enum { R = 50, C = 40 };
    static float A[R * C], x[C], y[R];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            A[i * C + j] = (float)((i * 7 + j * 3) % 7 - 3);
    for (int j = 0; j < C; j++)
        x[j] = (float)(j % 9 - 4);
    hpl_array a = th_array(ctx, HPL_FLOAT32, R, C, 0), xv = th_array(ctx, HPL_FLOAT32, C, 0, 0),
              yv = th_array(ctx, HPL_FLOAT32, R, 0, 0);
    CHECK_OK(hpl_array_write(ctx, a, A, sizeof A));
    CHECK_OK(hpl_array_write(ctx, xv, x, sizeof x));
    for (int pass = 0; pass < 2; pass++) {
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, matvec, NULL, HPL_ARGS(hpl_part1(yv, 0), hpl_part1(a, 0), hpl_arr(xv))));
        hpl_stats s = th_stats(ctx);
        part_t parts[MAXD];
        int P = partition(R, ndev, 0, parts);
        for (int d = 0; d < ndev; d++) {
            /* First pass: its rows of A and all of x; second: nothing. */
            uint64_t want = pass == 0 && d < P ? (parts[d].hi - parts[d].lo) * C * 4 + C * 4 : 0;
            CHECK(s.device[d].to_device_bytes == want && s.device[d].to_host_bytes == 0 &&
                      s.device[d].local_bytes == 0,
                  "y = A x pass %d: device %d to_device %" PRIu64 " (want %" PRIu64 ") to_host %" PRIu64
                  " local %" PRIu64,
                  pass, d, s.device[d].to_device_bytes, want, s.device[d].to_host_bytes, s.device[d].local_bytes);
        }
        CHECK(hpl_array_part_count(ctx, yv) == P && hpl_array_part_count(ctx, a) == P &&
                  hpl_array_part_count(ctx, xv) == 0,
              "y = A x: part counts y %d A %d x %d, want %d %d 0", hpl_array_part_count(ctx, yv),
              hpl_array_part_count(ctx, a), hpl_array_part_count(ctx, xv), P, P);
        if (CHECK_OK(hpl_array_read(ctx, yv, y, sizeof y))) {
            int bad = 0;
            for (int i = 0; i < R; i++) {
                float s2 = 0.0f;
                for (int j = 0; j < C; j++)
                    s2 += A[i * C + j] * x[j];
                bad += y[i] != s2;
            }
            CHECK(bad == 0, "y = A x (pass %d): %d of %d rows wrong", pass, bad, R);
        }
        /* x was only read: still valid on the host, A too. */
        float xb[C];
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_array_read(ctx, xv, xb, sizeof xb));
        CHECK_OK(hpl_array_read(ctx, a, A, sizeof A));
        hpl_stats s3 = th_stats(ctx);
        CHECK(moved(&s3) == 0 && memcmp(xb, x, sizeof x) == 0, "y = A x: reading the inputs back moved %" PRIu64
              " bytes", moved(&s3));
    }
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, xv));
    CHECK_OK(hpl_array_destroy(ctx, yv));
}

/* ---- 4. launch.global and launch.domains ----------------------------------- */

static void domains(hpl_context *ctx, hpl_kernel global_k, hpl_kernel domains_k)
{
    /* launch.global = {R, cg}: split by rows (out's halo of 1), columns past
     * cg untouched; each subkernel's box is its owned rows x cg columns. */
    {
        enum { R = 11, C = 9, CG = 6 };
        static const int three[] = {1, 2, 3};
        uint32_t table[5] = {10000, 20000, 30000, 40000, 50000};
        static uint32_t m[R * C];
        hpl_array t = th_array(ctx, HPL_UINT32, 5, 0, 0), out = th_array(ctx, HPL_UINT32, R, C, 0);
        CHECK_OK(hpl_array_write(ctx, t, table, sizeof table));
        for (int i = 0; i < R * C; i++)
            m[i] = init_value((uint64_t)i);
        CHECK_OK(hpl_array_write(ctx, out, m, sizeof m));
        for (int D = 3; D <= 4; D++) {
            hpl_launch l = dev_launch(D == 3 ? three : NULL, D == 3 ? 3 : 0);
            l.global[0] = R;
            l.global[1] = CG;
            geom g;
            const uint64_t whole[3] = {R, CG, 1}, dims[3] = {R, C, 1}, zero[3] = {0, 0, 0};
            geom_split(&g, 2, whole, dims, zero, zero, dims, 0, 1, D);
            model_args ma = model_of(&g, NULL);
            CHECK_OK(hpl_eval(ctx, global_k, &l, HPL_ARGS(hpl_arr(t), hpl_part1(out, 1), MODEL_HPL_ARGS(ma))));
            CHECK(hpl_array_part_count(ctx, out) == D, "launch.global on %d devices: %d parts", D,
                  hpl_array_part_count(ctx, out));
            CHECK(hpl_array_part_count(ctx, t) == 0, "launch.global: the replicated table has %d parts",
                  hpl_array_part_count(ctx, t));
            if (CHECK_OK(hpl_array_read(ctx, out, m, sizeof m))) {
                int bad = 0, first = -1;
                for (int i = 0; i < R; i++)
                    for (int j = 0; j < C; j++) {
                        uint32_t want_v = j < CG ? (uint32_t)(i * 1024 + j) + table[j % 5]
                                                 : init_value((uint64_t)(i * C + j));
                        if (m[i * C + j] != want_v && bad++ == 0)
                            first = i * C + j;
                    }
                CHECK(bad == 0, "launch.global {%d, %d} on %d devices: %d elements wrong, first [%d] = 0x%x%s", R, CG,
                      D, bad, first, first >= 0 ? m[first] : 0,
                      first >= 0 ? flags_text(m[first], init_value((uint64_t)first)) : "");
            }
            /* Put the untouched pattern back for the next pass. */
            for (int i = 0; i < R * C; i++)
                m[i] = init_value((uint64_t)i);
            CHECK_OK(hpl_array_write(ctx, out, m, sizeof m));
        }
        /* Without launch.global the domain is the table's (5): out's 11 rows
         * do not line up with it. */
        CHECK_FAILS(hpl_eval(ctx, global_k, NULL,
                             HPL_ARGS(hpl_arr(t), hpl_part1(out, 1), hpl_u32(0), hpl_u32(0), hpl_u32(0), hpl_u32(0),
                                      hpl_u32(0), hpl_u32(0))),
                    HPL_ERROR_DIMENSIONS, "");
        if (CHECK_OK(hpl_array_read(ctx, out, m, sizeof m))) {
            int bad = 0;
            for (int i = 0; i < R * C; i++)
                bad += m[i] != init_value((uint64_t)i);
            CHECK(bad == 0, "a failed eval changed %d elements", bad);
        }
        CHECK_OK(hpl_array_destroy(ctx, t));
        CHECK_OK(hpl_array_destroy(ctx, out));
    }
    /* launch.domains: each subkernel runs exactly its own domain, starting
     * where its part's owned range of the whole domain starts (not its halo),
     * with or without halo, split along rows or columns. */
    {
        enum { R = 13, C = 9 };
        static int32_t m[R * C];
        hpl_array mm = th_array(ctx, HPL_INT32, R, C, 0);
        const struct {
            int devs[4];
            int D, dim, ov;
            hpl_domain dom[4];
        } cases[] = {
            {{0, 1, 2}, 3, 0, 0, {{.global = {3, 9}}, {.global = {0, 0, 0}}, {.global = {4, 2}, .local = {2, 2, 1}}}},
            {{0, 1, 2}, 3, 0, 1, {{.global = {3, 9}}, {.global = {0, 0, 0}}, {.global = {4, 2}, .local = {2, 2, 1}}}},
            {{3, 1, 0, 2}, 4, 0, 1,
             {{.global = {1, 1}}, {.global = {3, 9}, .local = {1, 4, 1}}, {.global = {2, 5}}, {.global = {0, 0, 0}}}},
            {{2, 0, 1}, 3, 1, 2, {{.global = {13, 2}}, {.global = {0, 0, 0}}, {.global = {5, 3}, .local = {1, 2, 1}}}},
        };
        for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
            for (int i = 0; i < R * C; i++)
                m[i] = -1;
            CHECK_OK(hpl_array_write(ctx, mm, m, sizeof m));
            hpl_launch l = dev_launch(cases[t].devs, cases[t].D);
            l.domains = cases[t].dom;
            geom g;
            const uint64_t dims[3] = {R, C, 1}, zero[3] = {0, 0, 0};
            geom_split(&g, 2, dims, dims, zero, zero, dims, cases[t].dim, (uint64_t)cases[t].ov, cases[t].D);
            for (int k = 0; k < g.P; k++) {
                const uint64_t *given = cases[t].dom[k].global;
                if (given[0] || given[1] || given[2])
                    for (int d = 0; d < 3; d++)
                        g.part[k].box_hi[d] = g.part[k].box_lo[d] + (given[d] ? given[d] : 1);
            }
            model_args ma = model_of(&g, cases[t].dom);
            CHECK_OK(hpl_eval(ctx, domains_k, &l,
                              HPL_ARGS(hpl_part(mm, cases[t].dim, cases[t].ov), MODEL_HPL_ARGS(ma), hpl_u32(ma.v[6]),
                                       hpl_u32(ma.v[7]))));
            CHECK(hpl_array_part_count(ctx, mm) == g.P, "launch.domains case %zu: %d parts, want %d", t,
                  hpl_array_part_count(ctx, mm), g.P);
            if (!CHECK_OK(hpl_array_read(ctx, mm, m, sizeof m)))
                continue;
            int bad = 0, first = -1;
            int32_t fw = 0;
            for (uint64_t r = 0; r < R; r++)
                for (uint64_t j = 0; j < C; j++) {
                    int32_t want_v = -1;
                    for (int k = 0; k < g.P; k++) {
                        const gpart *q = &g.part[k];
                        if (r >= q->box_lo[0] && r < q->box_hi[0] && j >= q->box_lo[1] && j < q->box_hi[1])
                            want_v = (int32_t)((r * 64 + j) * 4096 + (q->box_hi[0] - q->box_lo[0]) * 64 +
                                               (q->box_hi[1] - q->box_lo[1]));
                    }
                    if (m[r * C + j] != want_v && bad++ == 0) {
                        first = (int)(r * C + j);
                        fw = want_v;
                    }
                }
            CHECK(bad == 0, "launch.domains case %zu: %d elements wrong, first [%d][%d] = %d want %d%s", t, bad,
                  first / C, first % C, first >= 0 ? m[first] : 0, fw,
                  first >= 0 ? flags_text((uint32_t)m[first], 0xffffffffu) : "");
        }
        CHECK_OK(hpl_array_destroy(ctx, mm));
    }
}

/* ---- 5. halo refresh --------------------------------------------------------- */

enum { SR = 40, SC = 33, STEPS = 20, WSTEP = 10 };
#define ROWB ((uint64_t)SC * 4)

/* Which copies of each row are valid, for the transfer model. */
typedef struct rowv {
    bool host;
    bool dev[MAXD];
} rowv;

typedef struct traffic {
    uint64_t to_dev[MAXD], to_host[MAXD]; /* rows */
} traffic;

/* Pushes (hplvk.h chapter 7b): the rows other devices read from device d
 * since d last wrote them, which d sends to the host with its next write
 * of them, where it imports host memory (staged devices do not push). */
#define MODEL_ROWS 1001 /* the longest array a model follows */
typedef struct pushes {
    bool wanted[MAXD][MODEL_ROWS];
    bool off[MAXD];
} pushes;

static void pushes_reset(hpl_context *ctx, pushes *pu)
{
    memset(pu, 0, sizeof *pu);
    for (int d = 0; d < hpl_device_count(ctx) && d < MAXD; d++) {
        hpl_device_info info;
        pu->off[d] = !CHECK_OK(hpl_device_get_info(ctx, d, &info)) || !info.host_import;
    }
}

static void model_reset(rowv *v, int rows)
{
    for (int r = 0; r < rows; r++) {
        memset(&v[r], 0, sizeof v[r]);
        v[r].host = true;
    }
}

/* An eval reads v's parts with halo on their devices. Every device notes
 * what it lacks from the others before any of its copies lands. */
static void model_read(rowv *v, const part_t *p, int P, const int *devs, traffic *t, pushes *pu)
{
    for (int k = 0; k < P; k++)
        for (uint64_t r = p[k].hl; r < p[k].hh; r++)
            for (int j = 0; j < MAXD && !v[r].dev[devs[k]]; j++)
                pu->wanted[j][r] |= j != devs[k] && v[r].dev[j];
    for (int k = 0; k < P; k++) {
        int d = devs[k];
        for (uint64_t r = p[k].hl; r < p[k].hh; r++) {
            if (v[r].dev[d])
                continue;
            if (!v[r].host) {
                int src = -1;
                for (int j = 0; j < MAXD && src < 0; j++)
                    if (v[r].dev[j])
                        src = j;
                CHECK(src >= 0, "model: row %" PRIu64 " valid nowhere", r);
                if (src >= 0)
                    t->to_host[src]++;
                v[r].host = true;
            }
            t->to_dev[d]++;
            v[r].dev[d] = true;
        }
    }
}

/* An eval writes v's parts: each owned row valid only on its device, and
 * on the host too where the device pushes it. */
static void model_write(rowv *v, const part_t *p, int P, const int *devs, traffic *t, pushes *pu)
{
    for (int k = 0; k < P; k++)
        for (uint64_t r = p[k].lo; r < p[k].hi; r++) {
            int d = devs[k];
            memset(&v[r], 0, sizeof v[r]);
            v[r].dev[d] = true;
            v[r].host = pu->wanted[d][r] && !pu->off[d];
            t->to_host[d] += v[r].host;
            pu->wanted[d][r] = false;
        }
}

static void model_host_write(rowv *v, int r0, int r1)
{
    for (int r = r0; r <= r1; r++) {
        memset(&v[r], 0, sizeof v[r]);
        v[r].host = true;
    }
}

static void model_host_read(rowv *v, int rows, traffic *t)
{
    for (int r = 0; r < rows; r++)
        if (!v[r].host) {
            for (int j = 0; j < MAXD; j++)
                if (v[r].dev[j]) {
                    t->to_host[j]++;
                    break;
                }
            v[r].host = true;
        }
}

static void expect_traffic(const hpl_stats *s, const traffic *t, uint64_t row_bytes, const char *what)
{
    for (int d = 0; d < s->device_count && d < MAXD; d++) {
        const hpl_device_stats *x = &s->device[d];
        CHECK(x->to_device_bytes == t->to_dev[d] * row_bytes && x->to_host_bytes == t->to_host[d] * row_bytes &&
                  x->local_bytes == 0,
              "%s: device %d to_device %" PRIu64 " to_host %" PRIu64 " local %" PRIu64 " bytes; want %" PRIu64
              " (%" PRIu64 " rows), %" PRIu64 " (%" PRIu64 " rows), 0",
              what, d, x->to_device_bytes, x->to_host_bytes, x->local_bytes, t->to_dev[d] * row_bytes, t->to_dev[d],
              t->to_host[d] * row_bytes, t->to_host[d]);
    }
}

static uint32_t stencil_init(int i, int j)
{
    return (uint32_t)(((uint64_t)(i * SC + j) * 2654435761u) % 1000003u);
}

static void host_stencil(const uint32_t *src, uint32_t *dst)
{
    for (int i = 0; i < SR; i++)
        for (int j = 0; j < SC; j++) {
            uint32_t c = src[i * SC + j], v;
            if (i == 0 || i == SR - 1)
                v = (c * 3u + (uint32_t)i + (uint32_t)j) % 1000003u;
            else {
                uint32_t up = src[(i - 1) * SC + j], dn = src[(i + 1) * SC + j];
                uint32_t l = src[i * SC + (j + SC - 1) % SC], r = src[i * SC + (j + 1) % SC];
                v = (up + 2u * c + 3u * dn + 5u * l + 7u * r + (uint32_t)i) % 1000003u;
            }
            dst[i * SC + j] = v;
        }
}

/* Values the host writes into rows r0..r1 before step WSTEP. */
static uint32_t host_patch(int i, int j)
{
    return (uint32_t)(777000 + i * 100 + j);
}

/* Runs STEPS steps; devs NULL: one device (device 0, plain evals). Leaves the
 * final array in out (SR x SC). */
static void run_stencil(hpl_context *ctx, hpl_kernel k, const int *devs, int D, int ov, uint32_t *final)
{
    char what[96];
    if (devs)
        snprintf(what, sizeof what, "stencil on %d devices, overlap %d", D, ov);
    else
        snprintf(what, sizeof what, "stencil on one device");
    static uint32_t buf[SR * SC];
    hpl_array A = th_array(ctx, HPL_UINT32, SR, SC, 0), B = th_array(ctx, HPL_UINT32, SR, SC, 0);
    for (int i = 0; i < SR; i++)
        for (int j = 0; j < SC; j++)
            buf[i * SC + j] = stencil_init(i, j);
    CHECK_OK(hpl_array_write(ctx, A, buf, sizeof buf));
    const int r0 = SR / 2 - 2, r1 = SR / 2 + 1;
    hpl_array patch = {0};
    CHECK_OK(hpl_subarray(ctx, A, 2, (const hpl_range[]){{(uint64_t)r0, (uint64_t)r1}, HPL_ALL}, &patch));
    /* WSTEP is even: before it, A holds the newest values. */
    static uint32_t pbuf[4 * SC];
    for (int i = r0; i <= r1; i++)
        for (int j = 0; j < SC; j++)
            pbuf[(i - r0) * SC + j] = host_patch(i, j);

    part_t parts[MAXD];
    int P = devs ? partition(SR, D, (uint64_t)ov, parts) : 0;
    static rowv va[SR], vb[SR];
    static pushes pa, pb;
    model_reset(va, SR);
    model_reset(vb, SR);
    pushes_reset(ctx, &pa);
    pushes_reset(ctx, &pb);
    traffic agg;
    memset(&agg, 0, sizeof agg);
    CHECK_OK(hpl_stats_reset(ctx));
    for (int s = 0; s < STEPS; s++) {
        hpl_array src = s % 2 ? B : A, dst = s % 2 ? A : B;
        rowv *vs = s % 2 ? vb : va, *vd = s % 2 ? va : vb;
        pushes *ps = s % 2 ? &pb : &pa, *pd = s % 2 ? &pa : &pb;
        bool exact_step = s < 2 || s == WSTEP || s == STEPS - 1;
        if (exact_step && s >= 2 && devs) {
            /* The steps since the last exact one, run with no waits between. */
            hpl_stats st = th_stats(ctx);
            char w[160];
            snprintf(w, sizeof w, "%s: steps before %d together", what, s);
            expect_traffic(&st, &agg, ROWB, w);
            memset(&agg, 0, sizeof agg);
        }
        if (exact_step)
            CHECK_OK(hpl_stats_reset(ctx));
        if (s == WSTEP) {
            CHECK_OK(hpl_array_write(ctx, patch, pbuf, sizeof pbuf));
            model_host_write(vs, r0, r1);
        }
        traffic t;
        memset(&t, 0, sizeof t);
        if (devs) {
            hpl_launch l = dev_launch(devs, D);
            CHECK_OK(hpl_eval(ctx, k, &l, HPL_ARGS(hpl_part1(src, ov), hpl_part1(dst, ov))));
            model_read(vs, parts, P, devs, &t, ps);
            model_write(vd, parts, P, devs, &t, pd);
        } else {
            CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(src), hpl_arr(dst))));
        }
        if (devs && exact_step) {
            hpl_stats st = th_stats(ctx);
            char w[160];
            snprintf(w, sizeof w, "%s: step %d%s", what, s, s == WSTEP ? " (after a host write of 4 middle rows)" : "");
            expect_traffic(&st, &t, ROWB, w);
            if (s >= 1 && s != WSTEP) {
                uint64_t th = 0, td = 0;
                for (int d = 0; d < MAXD; d++) {
                    th += t.to_host[d];
                    td += t.to_dev[d];
                }
                /* The model's steady state is the documented one: (D-1)*2
                 * halo regions of ov rows each way, nothing else. */
                CHECK(th == (uint64_t)(D - 1) * 2 * (uint64_t)ov && td == th,
                      "%s: model says %" PRIu64 "/%" PRIu64 " rows per step", what, th, td);
            }
            CHECK_OK(hpl_stats_reset(ctx));
        } else if (devs) {
            for (int d = 0; d < MAXD; d++) {
                agg.to_dev[d] += t.to_dev[d];
                agg.to_host[d] += t.to_host[d];
            }
        }
    }
    /* STEPS is even: A holds the result. The host gathers its parts. */
    hpl_stats st;
    CHECK_OK(hpl_stats_reset(ctx));
    if (!devs) {
        CHECK_OK(hpl_array_read(ctx, A, final, sizeof buf));
        CHECK_OK(hpl_array_read(ctx, B, buf, sizeof buf));
    } else if (CHECK_OK(hpl_array_read(ctx, A, final, sizeof buf))) {
        traffic t;
        memset(&t, 0, sizeof t);
        model_host_read(va, SR, &t);
        st = th_stats(ctx);
        char w[160];
        snprintf(w, sizeof w, "%s: the host gathers the result", what);
        expect_traffic(&st, &t, ROWB, w);
        /* The other array too (its halo rows went through the host already). */
        CHECK_OK(hpl_stats_reset(ctx));
        memset(&t, 0, sizeof t);
        model_host_read(vb, SR, &t);
        CHECK_OK(hpl_array_read(ctx, B, buf, sizeof buf));
        st = th_stats(ctx);
        snprintf(w, sizeof w, "%s: the host gathers the other array", what);
        expect_traffic(&st, &t, ROWB, w);
    }
    /* Reading again moves nothing. */
    CHECK_OK(hpl_stats_reset(ctx));
    CHECK_OK(hpl_array_read(ctx, A, buf, sizeof buf));
    CHECK(memcmp(buf, final, sizeof buf) == 0, "%s: a second read differs from the first", what);
    CHECK_OK(hpl_array_read(ctx, B, buf, sizeof buf));
    st = th_stats(ctx);
    CHECK(moved(&st) == 0, "%s: reading the gathered arrays again moved %" PRIu64 " bytes", what, moved(&st));
    if (devs)
        CHECK(hpl_array_part_count(ctx, A) == P && hpl_array_part_count(ctx, B) == P,
              "%s: part counts %d and %d, want %d", what, hpl_array_part_count(ctx, A),
              hpl_array_part_count(ctx, B), P);
    CHECK_OK(hpl_array_destroy(ctx, A));
    CHECK_OK(hpl_array_destroy(ctx, B));
}

static void halos(hpl_context *ctx, hpl_kernel k)
{
    static uint32_t ref[SR * SC], tmp[SR * SC], one[SR * SC], multi[SR * SC];
    for (int i = 0; i < SR; i++)
        for (int j = 0; j < SC; j++)
            ref[i * SC + j] = stencil_init(i, j);
    for (int s = 0; s < STEPS; s++) {
        if (s == WSTEP)
            for (int i = SR / 2 - 2; i <= SR / 2 + 1; i++)
                for (int j = 0; j < SC; j++)
                    ref[i * SC + j] = host_patch(i, j);
        host_stencil(ref, tmp);
        memcpy(ref, tmp, sizeof ref);
    }
    /* The same kernel object on one device, not annotated, then split. */
    run_stencil(ctx, k, NULL, 1, 0, one);
    CHECK(memcmp(one, ref, sizeof ref) == 0, "stencil on one device differs from the host");
    static const int lists[][4] = {{1}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}, {3, 1, 2, 0}};
    static const int counts[] = {1, 2, 3, 4, 4};
    for (int ov = 1; ov <= 2; ov++)
        for (int c = 0; c < 5; c++) {
            memset(multi, 0, sizeof multi);
            run_stencil(ctx, k, lists[c], counts[c], ov, multi);
            int bad = 0, first = -1;
            for (int i = 0; i < SR * SC; i++)
                if (multi[i] != ref[i] && bad++ == 0)
                    first = i;
            CHECK(bad == 0, "stencil on %d devices (list %d), overlap %d: %d of %d elements differ from the host, "
                  "first [%d][%d] = %u want %u", counts[c], c, ov, bad, SR * SC, first / SC, first % SC,
                  first >= 0 ? multi[first] : 0, first >= 0 ? ref[first] : 0);
            CHECK(memcmp(multi, one, sizeof one) == 0, "stencil on %d devices, overlap %d: differs from one device",
                  counts[c], ov);
        }
}

/* ---- 6. in-place stencil: subkernels in device order ------------------------ */

/* One in-place step on the host over parts in device order (ordered), or
 * with every part reading the rows as they were before the step. */
static void inplace_host_step(uint32_t *ref, uint32_t *nw, const part_t *parts, int P, int cols, uint32_t s,
                              bool ordered)
{
    const uint32_t *src = ref;
    uint32_t *old = NULL;
    if (!ordered) {
        old = malloc(sizeof(uint32_t) * parts[P - 1].hi * cols);
        memcpy(old, ref, sizeof(uint32_t) * parts[P - 1].hi * cols);
        src = old;
    }
    for (int p = 0; p < P; p++) {
        bool above = parts[p].hl < parts[p].lo, below = parts[p].hh > parts[p].hi;
        for (uint64_t r = parts[p].lo; r < parts[p].hi; r++)
            for (int j = 0; j < cols; j++) {
                uint32_t v = src[r * cols + j] * 3u + s + (uint32_t)r;
                if (above && r == parts[p].lo)
                    v += src[(r - 1) * cols + j];
                if (below && r == parts[p].hi - 1)
                    v += 7u * src[(r + 1) * cols + j];
                nw[r * cols + j] = v;
            }
        for (uint64_t r = parts[p].lo; r < parts[p].hi; r++)
            memcpy(&ref[r * cols], &nw[r * cols], sizeof(uint32_t) * cols);
    }
    free(old);
}

/* Five in-place steps of a rows x cols array over D devices; first, when
 * pre_dev >= 0, a plain eval on that device (so that the only valid copy of
 * every row is in one buffer there, halo rows of later parts included). */
static void inplace(hpl_context *ctx, hpl_kernel k, int D, int rows, int cols, int pre_dev)
{
    size_t bytes = sizeof(uint32_t) * rows * cols;
    uint32_t *ref = malloc(bytes), *conc = malloc(bytes), *got = malloc(bytes), *nw = malloc(bytes);
    for (int i = 0; i < rows * cols; i++)
        conc[i] = ref[i] = (uint32_t)(i * 31 + 5);
    hpl_array x = th_array(ctx, HPL_UINT32, (uint64_t)rows, (uint64_t)cols, 0);
    CHECK_OK(hpl_array_write(ctx, x, ref, bytes));
    part_t parts[MAXD];
    int P = partition((uint64_t)rows, D, 1, parts);
    uint32_t *owner = malloc(sizeof(uint32_t) * rows);
    for (int p = 0; p < P; p++)
        for (uint64_t r = parts[p].lo; r < parts[p].hi; r++)
            owner[r] = (uint32_t)p;
    hpl_array own = th_array(ctx, HPL_UINT32, (uint64_t)rows, 0, 0);
    CHECK_OK(hpl_array_write(ctx, own, owner, sizeof(uint32_t) * rows));
    free(owner);
    if (pre_dev >= 0) {
        hpl_launch l = {.device = pre_dev};
        hpl_array own0 = th_array(ctx, HPL_UINT32, (uint64_t)rows, 0, 0); /* zero-filled: one owner */
        CHECK_OK(hpl_eval(ctx, k, &l, HPL_ARGS(hpl_arr(x), hpl_arr(own0), hpl_u32(100))));
        CHECK_OK(hpl_array_destroy(ctx, own0));
        const part_t whole = {0, (uint64_t)rows, 0, (uint64_t)rows};
        inplace_host_step(ref, nw, &whole, 1, cols, 100, true);
        memcpy(conc, ref, bytes);
    }
    for (uint32_t s = 0; s < 5; s++) {
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_part1(x, 1), hpl_arr(own), hpl_u32(s))));
        /* The host, part by part in device order: part p sees the rows that
         * parts before it wrote, and the old rows of the parts after it. */
        inplace_host_step(ref, nw, parts, P, cols, s, true);
        inplace_host_step(conc, nw, parts, P, cols, s, false);
    }
    CHECK(memcmp(ref, conc, bytes) != 0, "in-place test on %d devices cannot tell device order from concurrency", D);
    if (CHECK_OK(hpl_array_read(ctx, x, got, bytes))) {
        int bad = 0, first = -1, bad_conc = 0;
        for (int i = 0; i < rows * cols; i++) {
            if (got[i] != ref[i] && bad++ == 0)
                first = i;
            bad_conc += got[i] != conc[i];
        }
        CHECK(bad == 0, "in-place stencil on %d devices, %dx%d: %d elements differ from device order (%d from "
              "concurrent subkernels), first [%d][%d] = %u want %u", D, rows, cols, bad, bad_conc, first / cols,
              first % cols, first >= 0 ? got[first] : 0, first >= 0 ? ref[first] : 0);
    }
    CHECK(hpl_array_part_count(ctx, x) == P, "in-place: %d parts, want %d", hpl_array_part_count(ctx, x), P);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, own));
    free(ref);
    free(conc);
    free(got);
    free(nw);
}

/* ---- 6b. one array split differently by successive evals -------------------
 *
 * x += ... in place over 3 devices, 4, 4 reversed, one device, 3 again;
 * then y = x[i-1] + x[i] + x[i+1] with x split with a halo of 1 over 4
 * devices in another order (y, the first annotated argument, without
 * halo). Every eval reads what the previous split left on other devices:
 * the bytes crossing the host are exact against the row model (1 element =
 * 1 row); a device may also copy what one of its older part buffers holds
 * (local bytes, documented as the cheapest source), at most its new part.
 * The parts are always those of the last annotated eval. */
static void expect_traffic_local(const hpl_stats *s, const traffic *t, uint64_t row_bytes, const uint64_t *local_max,
                                 const char *what)
{
    for (int d = 0; d < s->device_count && d < MAXD; d++) {
        const hpl_device_stats *x = &s->device[d];
        CHECK(x->to_device_bytes == t->to_dev[d] * row_bytes && x->to_host_bytes == t->to_host[d] * row_bytes &&
                  x->local_bytes <= local_max[d],
              "%s: device %d to_device %" PRIu64 " to_host %" PRIu64 " local %" PRIu64 " bytes; want %" PRIu64
              ", %" PRIu64 ", at most %" PRIu64,
              what, d, x->to_device_bytes, x->to_host_bytes, x->local_bytes, t->to_dev[d] * row_bytes,
              t->to_host[d] * row_bytes, local_max[d]);
    }
}

static void resplit(hpl_context *ctx, hpl_kernel inc, hpl_kernel sum3)
{
    enum { N = 1001 };
    static uint32_t ref[N], got[N], yref[N];
    static rowv v[N], vy[N];
    static pushes px_, py_;
    pushes_reset(ctx, &px_);
    pushes_reset(ctx, &py_);
    for (int i = 0; i < N; i++)
        ref[i] = (uint32_t)i * 7u;
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0), y = th_array(ctx, HPL_UINT32, N, 0, 0);
    CHECK_OK(hpl_array_write(ctx, x, ref, sizeof ref));
    model_reset(v, N);
    model_reset(vy, N);
    static const int three[] = {0, 1, 2}, rev[] = {3, 2, 1, 0}, two[] = {2}, other[] = {2, 0, 3, 1};
    const struct {
        const int *devs;
        int D;
        bool annotated;
    } evals[] = {{three, 3, true}, {IDENT, 4, true}, {rev, 4, true}, {two, 1, false}, {three, 3, true}};
    for (size_t e = 0; e < sizeof evals / sizeof evals[0]; e++) {
        part_t parts[MAXD];
        int P = partition(N, evals[e].D, 0, parts);
        traffic t;
        memset(&t, 0, sizeof t);
        CHECK_OK(hpl_stats_reset(ctx));
        if (evals[e].annotated) {
            hpl_launch l = dev_launch(evals[e].devs, evals[e].D);
            CHECK_OK(hpl_eval(ctx, inc, &l, HPL_ARGS(hpl_part1(x, 0))));
        } else {
            hpl_launch l = {.device = evals[e].devs[0]};
            CHECK_OK(hpl_eval(ctx, inc, &l, HPL_ARGS(hpl_arr(x))));
        }
        model_read(v, parts, P, evals[e].devs, &t, &px_);
        model_write(v, parts, P, evals[e].devs, &t, &px_);
        for (int i = 0; i < N; i++)
            ref[i] += 1u + (uint32_t)i % 3u;
        hpl_stats st = th_stats(ctx);
        char w[96];
        snprintf(w, sizeof w, "re-split, eval %zu (%d device%s)", e, evals[e].D, evals[e].D > 1 ? "s" : "");
        uint64_t lmax[MAXD] = {0};
        for (int k = 0; k < P; k++)
            lmax[evals[e].devs[k]] = (parts[k].hi - parts[k].lo) * 4;
        expect_traffic_local(&st, &t, 4, lmax, w);
        int want_parts = e == 3 ? 4 : P; /* the one-device eval splits nothing */
        const int *want_devs = e == 3 ? rev : evals[e].devs;
        part_t wp[MAXD];
        partition(N, want_parts, 0, wp);
        CHECK(hpl_array_part_count(ctx, x) == want_parts, "%s: %d parts, want %d", w, hpl_array_part_count(ctx, x),
              want_parts);
        for (int i = 0; i < want_parts && i < hpl_array_part_count(ctx, x); i++) {
            hpl_array part = {0};
            int dev = -1;
            hpl_array_info info;
            memset(&info, 0, sizeof info);
            if (CHECK_OK(hpl_array_part(ctx, x, i, &part, &dev)) && CHECK_OK(hpl_array_get_info(ctx, part, &info)))
                CHECK(dev == want_devs[i] && info.origin[0] == wp[i].lo && info.dims[0] == wp[i].hi - wp[i].lo,
                      "%s: part %d on device %d at %" PRIu64 " extent %" PRIu64 ", want device %d at %" PRIu64
                      " extent %" PRIu64, w, i, dev, info.origin[0], info.dims[0], want_devs[i], wp[i].lo,
                      wp[i].hi - wp[i].lo);
        }
    }
    /* y from x with halos, another split and order. */
    {
        part_t px[MAXD], py[MAXD];
        int P = partition(N, 4, 1, px);
        partition(N, 4, 0, py);
        traffic t;
        memset(&t, 0, sizeof t);
        CHECK_OK(hpl_stats_reset(ctx));
        hpl_launch l = dev_launch(other, 4);
        CHECK_OK(hpl_eval(ctx, sum3, &l, HPL_ARGS(hpl_part1(y, 0), hpl_part1(x, 1))));
        model_read(v, px, P, other, &t, &px_);
        model_write(vy, py, P, other, &t, &py_);
        hpl_stats st = th_stats(ctx);
        uint64_t lmax[MAXD] = {0};
        for (int k = 0; k < P; k++)
            lmax[other[k]] = (px[k].hh - px[k].hl) * 4;
        expect_traffic_local(&st, &t, 4, lmax, "re-split: y from x with halos over 4 devices {2,0,3,1}");
        for (int i = 0; i < N; i++)
            yref[i] = ref[i] + (i > 0 ? ref[i - 1] : 0) + (i + 1 < N ? ref[i + 1] : 0);
        CHECK(hpl_array_part_count(ctx, x) == 4 && hpl_array_part_count(ctx, y) == 4,
              "re-split: y from x: %d and %d parts", hpl_array_part_count(ctx, x), hpl_array_part_count(ctx, y));
        hpl_array part = {0};
        int dev = -1;
        hpl_array_info info;
        memset(&info, 0, sizeof info);
        if (CHECK_OK(hpl_array_part(ctx, x, 1, &part, &dev)) && CHECK_OK(hpl_array_get_info(ctx, part, &info)))
            CHECK(dev == 0 && info.origin[0] == px[1].hl && info.dims[0] == px[1].hh - px[1].hl &&
                      info.owned_first[0] == 1 && info.owned_last[0] == px[1].hi - px[1].lo,
                  "re-split: x's part 1 on device %d at %" PRIu64 " extent %" PRIu64 " owned %" PRIu64 "..%" PRIu64,
                  dev, info.origin[0], info.dims[0], info.owned_first[0], info.owned_last[0]);
    }
    traffic t;
    memset(&t, 0, sizeof t);
    model_host_read(v, N, &t);
    model_host_read(vy, N, &t);
    CHECK_OK(hpl_stats_reset(ctx));
    if (CHECK_OK(hpl_array_read(ctx, x, got, sizeof got))) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += got[i] != ref[i];
        CHECK(bad == 0, "re-split: x: %d of %d elements wrong", bad, N);
    }
    if (CHECK_OK(hpl_array_read(ctx, y, got, sizeof got))) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += got[i] != yref[i];
        CHECK(bad == 0, "re-split: y: %d of %d elements wrong", bad, N);
    }
    hpl_stats st = th_stats(ctx);
    expect_traffic(&st, &t, 4, "re-split: the host gathers x and y");
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
}

/* ---- 7. errors ----------------------------------------------------------------- */

static void expect_u32(hpl_context *ctx, hpl_array a, uint64_t n, uint32_t base, uint32_t mul, const char *what)
{
    uint32_t *b = malloc(n * sizeof(uint32_t));
    if (CHECK_OK(hpl_array_read(ctx, a, b, n * sizeof(uint32_t)))) {
        uint64_t bad = 0;
        for (uint64_t i = 0; i < n; i++)
            bad += b[i] != base * mul + (uint32_t)i;
        CHECK(bad == 0, "%s: %" PRIu64 " of %" PRIu64 " elements changed", what, bad, n);
    }
    free(b);
}

static void fill_u32(hpl_context *ctx, hpl_array a, uint64_t n, uint32_t base)
{
    uint32_t *b = malloc(n * sizeof(uint32_t));
    for (uint64_t i = 0; i < n; i++)
        b[i] = base + (uint32_t)i;
    CHECK_OK(hpl_array_write(ctx, a, b, n * sizeof(uint32_t)));
    free(b);
}

static void errors(hpl_context *ctx)
{
    hpl_kernel two1 = th_kernel(ctx, two1_src), one2 = th_kernel(ctx, one2_src), scal = th_kernel(ctx, scal_src),
               shared = th_kernel(ctx, shared_src), shared_rw = th_kernel(ctx, shared_rw_src);
    hpl_array a10 = th_array(ctx, HPL_UINT32, 10, 0, 0), b10 = th_array(ctx, HPL_UINT32, 10, 0, 0),
              b12 = th_array(ctx, HPL_UINT32, 12, 0, 0), m = th_array(ctx, HPL_UINT32, 6, 5, 0),
              never = th_array(ctx, HPL_UINT32, 8, 0, 0), rep10 = th_array(ctx, HPL_UINT32, 10, 0, 0);
    /* A good split over 3 devices first: a10 = 100 + i, b10 = 200 + i. */
    static const int three[] = {0, 1, 2};
    hpl_launch l3 = dev_launch(three, 3);
    CHECK_OK(hpl_eval(ctx, two1, &l3, HPL_ARGS(hpl_part1(a10, 0), hpl_part1(b10, 0), hpl_u32(100))));
    fill_u32(ctx, b12, 12, 300);
    fill_u32(ctx, m, 30, 400);
    fill_u32(ctx, never, 8, 500);
    fill_u32(ctx, rep10, 10, 600);
    CHECK(hpl_array_part_count(ctx, a10) == 3, "a10 split in %d parts", hpl_array_part_count(ctx, a10));

    /* Nothing ran and nothing changed: contents, part counts. */
#define UNCHANGED(what)                                                                                      \
    do {                                                                                                     \
        expect_u32(ctx, a10, 10, 100, 1, what);                                                              \
        expect_u32(ctx, b10, 10, 100, 2, what);                                                              \
        expect_u32(ctx, b12, 12, 300, 1, what);                                                              \
        expect_u32(ctx, m, 30, 400, 1, what);                                                                \
        expect_u32(ctx, never, 8, 500, 1, what);                                                             \
        expect_u32(ctx, rep10, 10, 600, 1, what);                                                            \
        CHECK(hpl_array_part_count(ctx, a10) == 3 && hpl_array_part_count(ctx, b10) == 3 &&                  \
                  hpl_array_part_count(ctx, b12) == 0 && hpl_array_part_count(ctx, m) == 0 &&                \
                  hpl_array_part_count(ctx, never) == 0,                                                     \
              "%s: part counts changed: %d %d %d %d %d", what, hpl_array_part_count(ctx, a10),               \
              hpl_array_part_count(ctx, b10), hpl_array_part_count(ctx, b12), hpl_array_part_count(ctx, m), \
              hpl_array_part_count(ctx, never));                                                             \
    } while (0)

    /* Partition dimension beyond the array's. */
    CHECK_FAILS(hpl_eval(ctx, one2, NULL, HPL_ARGS(hpl_part(m, 2, 0), hpl_u32(9))), HPL_ERROR_DIMENSIONS, "dim");
    UNCHANGED("partition dimension 2 of a 2-D array");
    CHECK_FAILS(hpl_eval(ctx, one2, NULL, HPL_ARGS(hpl_part(m, 3, 1), hpl_u32(9))), HPL_ERROR_DIMENSIONS, "dim");
    CHECK_FAILS_ANY(hpl_eval(ctx, one2, NULL, HPL_ARGS(hpl_part(m, -1, 0), hpl_u32(9))),
                    ((int[]){HPL_ERROR_DIMENSIONS, HPL_ERROR_INVALID_ARGUMENT}), 2, "dim");
    UNCHANGED("partition dimension 3 / -1");
    /* Negative overlap. */
    CHECK_FAILS(hpl_eval(ctx, two1, NULL, HPL_ARGS(hpl_part1(a10, -1), hpl_part1(b10, 0), hpl_u32(9))),
                HPL_ERROR_INVALID_ARGUMENT, "overlap");
    UNCHANGED("negative overlap");
    /* A device listed twice; an unknown device; a bad count. */
    {
        hpl_launch l = dev_launch((const int[]){0, 1, 0}, 3);
        CHECK_FAILS(hpl_eval(ctx, two1, &l, HPL_ARGS(hpl_part1(a10, 0), hpl_part1(b10, 0), hpl_u32(9))),
                    HPL_ERROR_INVALID_ARGUMENT, "device");
        l = dev_launch((const int[]){2, 3, 1, 3}, 4);
        CHECK_FAILS(hpl_eval(ctx, two1, &l, HPL_ARGS(hpl_part1(a10, 0), hpl_part1(b10, 0), hpl_u32(9))),
                    HPL_ERROR_INVALID_ARGUMENT, "3");
        UNCHANGED("a device listed twice");
        l = dev_launch((const int[]){0, 4}, 2);
        CHECK_FAILS(hpl_eval(ctx, two1, &l, HPL_ARGS(hpl_part1(a10, 0), hpl_part1(b10, 0), hpl_u32(9))),
                    HPL_ERROR_UNKNOWN_DEVICE, "4");
        l = dev_launch((const int[]){1, -1}, 2);
        CHECK_FAILS(hpl_eval(ctx, two1, &l, HPL_ARGS(hpl_part1(a10, 0), hpl_part1(b10, 0), hpl_u32(9))),
                    HPL_ERROR_UNKNOWN_DEVICE, "-1");
        UNCHANGED("an unknown device");
        l = dev_launch(NULL, 0);
        l.device_count = HPL_MAX_DEVICES + 1;
        CHECK_FAILS_ANY(hpl_eval(ctx, two1, &l, HPL_ARGS(hpl_part1(a10, 0), hpl_part1(b10, 0), hpl_u32(9))),
                        ((int[]){HPL_ERROR_INVALID_ARGUMENT, HPL_ERROR_UNKNOWN_DEVICE}), 2, "");
        l.device_count = -1;
        CHECK_FAILS_ANY(hpl_eval(ctx, two1, &l, HPL_ARGS(hpl_part1(a10, 0), hpl_part1(b10, 0), hpl_u32(9))),
                        ((int[]){HPL_ERROR_INVALID_ARGUMENT, HPL_ERROR_UNKNOWN_DEVICE}), 2, "");
        UNCHANGED("a bad device count");
    }
    /* Annotated arrays whose parts do not line up. */
    CHECK_FAILS(hpl_eval(ctx, two1, NULL, HPL_ARGS(hpl_part1(a10, 0), hpl_part1(b12, 0), hpl_u32(9))),
                HPL_ERROR_DIMENSIONS, "");
    UNCHANGED("PART1 of a 10- and a 12-element array");
    {
        hpl_launch l = dev_launch(three, 3);
        l.global[0] = 9;
        CHECK_FAILS(hpl_eval(ctx, two1, &l, HPL_ARGS(hpl_part1(a10, 0), hpl_part1(b10, 0), hpl_u32(9))),
                    HPL_ERROR_DIMENSIONS, "");
        UNCHANGED("launch.global 9 with 10-element annotated arrays");
    }
    /* An annotated scalar. */
    {
        hpl_arg s = hpl_i32(3);
        s.part.on = true;
        CHECK_FAILS(hpl_eval(ctx, scal, NULL, HPL_ARGS(hpl_part1(a10, 0), s)), HPL_ERROR_INVALID_ARGUMENT, "scalar");
        UNCHANGED("an annotated scalar");
    }
    /* A multi-device eval writing a replicated array. */
    CHECK_FAILS(hpl_eval(ctx, shared, NULL, HPL_ARGS(hpl_part1(a10, 0), hpl_arr(rep10))), HPL_ERROR_INVALID_ARGUMENT,
                "shared_out");
    {
        hpl_launch l = dev_launch(three, 3);
        CHECK_FAILS(hpl_eval(ctx, shared, &l, HPL_ARGS(hpl_arr(a10), hpl_arr(rep10))), HPL_ERROR_INVALID_ARGUMENT,
                    "shared_out");
        CHECK_FAILS(hpl_eval(ctx, shared_rw, &l, HPL_ARGS(hpl_part1(b10, 0), hpl_arr(rep10))),
                    HPL_ERROR_INVALID_ARGUMENT, "shared_rw");
    }
    UNCHANGED("a replicated array written");
    /* hpl_array_part: never split, index out of range, bad arguments. */
    {
        hpl_array p = {0};
        int dev = -5;
        CHECK(hpl_array_part_count(ctx, never) == 0, "an array never split has %d parts",
              hpl_array_part_count(ctx, never));
        CHECK_FAILS_ANY(hpl_array_part(ctx, never, 0, &p, &dev),
                        ((int[]){HPL_ERROR_INVALID_ARGUMENT, HPL_ERROR_OUT_OF_RANGE}), 2, "");
        CHECK_FAILS_ANY(hpl_array_part(ctx, a10, 3, &p, &dev),
                        ((int[]){HPL_ERROR_INVALID_ARGUMENT, HPL_ERROR_OUT_OF_RANGE}), 2, "3");
        CHECK_FAILS_ANY(hpl_array_part(ctx, a10, -1, &p, &dev),
                        ((int[]){HPL_ERROR_INVALID_ARGUMENT, HPL_ERROR_OUT_OF_RANGE}), 2, "");
        CHECK_FAILS(hpl_array_part(ctx, a10, 0, NULL, &dev), HPL_ERROR_INVALID_ARGUMENT, "");
        CHECK(p.id == 0 && dev == -5, "failing hpl_array_part calls wrote their out-parameters");
        hpl_array dead = th_array(ctx, HPL_UINT32, 9, 0, 0), dead2 = th_array(ctx, HPL_UINT32, 9, 0, 0);
        CHECK_OK(hpl_eval(ctx, two1, &l3, HPL_ARGS(hpl_part1(dead, 0), hpl_part1(dead2, 0), hpl_u32(1))));
        CHECK(hpl_array_part_count(ctx, dead) == 3, "9 elements over 3 devices: %d parts",
              hpl_array_part_count(ctx, dead));
        CHECK_OK(hpl_array_destroy(ctx, dead));
        CHECK_OK(hpl_array_destroy(ctx, dead2));
        CHECK_FAILS(hpl_array_part(ctx, dead, 0, &p, &dev), HPL_ERROR_INVALID_HANDLE, "array");
        CHECK_FAILS(hpl_array_part_count(ctx, dead), HPL_ERROR_INVALID_HANDLE, "array");
    }
    UNCHANGED("hpl_array_part errors");
    /* The earlier parts are still the 3-way split. */
    {
        part_t parts[3];
        partition(10, 3, 0, parts);
        for (int i = 0; i < 3; i++) {
            hpl_array p = {0};
            int dev = -1;
            hpl_array_info info;
            memset(&info, 0, sizeof info);
            if (CHECK_OK(hpl_array_part(ctx, a10, i, &p, &dev)) && CHECK_OK(hpl_array_get_info(ctx, p, &info)))
                CHECK(dev == i && info.origin[0] == parts[i].lo && info.dims[0] == parts[i].hi - parts[i].lo,
                      "after the errors, part %d of a10: device %d origin %" PRIu64 " extent %" PRIu64, i, dev,
                      info.origin[0], info.dims[0]);
        }
    }
#undef UNCHANGED
    hpl_kernel ks[] = {two1, one2, scal, shared, shared_rw};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        CHECK_OK(hpl_kernel_destroy(ctx, ks[i]));
    hpl_array as[] = {a10, b10, b12, m, never, rep10};
    for (size_t i = 0; i < sizeof as / sizeof as[0]; i++)
        CHECK_OK(hpl_array_destroy(ctx, as[i]));
}

/* ---- main -------------------------------------------------------------------- */

static split_kernels split_kernels_make(hpl_context *ctx)
{
    split_kernels K;
    memset(&K, 0, sizeof K);
    for (int nd = 1; nd <= 3; nd++) {
        K.enc[nd] = th_kernel(ctx, enc_src[nd]);
        K.probe[nd] = th_kernel(ctx, probe_src[nd]);
    }
    return K;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t0 = th_now();
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:4", .zero_copy = HPL_ZERO_COPY_OFF});
    int ndev = hpl_device_count(ctx);
    CHECK(ndev == 4, "cpu:4 opened %d devices", ndev);
    for (int d = 0; d < ndev; d++) {
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            CHECK(!info.zero_copy, "replica %d of cpu:4 is zero-copy", d);
    }
    split_kernels K = split_kernels_make(ctx);
    hpl_kernel matvec = th_kernel(ctx, matvec_src), global_k = th_kernel(ctx, global_src),
               domains_k = th_kernel(ctx, domains_src), stencil = th_kernel(ctx, stencil_src),
               inplace_k = th_kernel(ctx, inplace_src);

    part_sizes(ctx, &K);
    th_note("part sizes: %.2f s", th_now() - t0);
    device_lists(ctx, &K);
    replicated(ctx, matvec, ndev);
    domains(ctx, global_k, domains_k);
    th_note("device lists, replicated, domains: %.2f s", th_now() - t0);
    halos(ctx, stencil);
    th_note("halos: %.2f s", th_now() - t0);
    hpl_kernel inc = th_kernel(ctx, inc_src), sum3 = th_kernel(ctx, sum3_src);
    resplit(ctx, inc, sum3);
    inplace(ctx, inplace_k, 4, 10, 5, -1);
    inplace(ctx, inplace_k, 4, 13, 3, 0);
    inplace(ctx, inplace_k, 4, 9, 4, 3);
    errors(ctx);
    th_note("in place, errors: %.2f s", th_now() - t0);
    hpl_context_destroy(ctx);

    /* Three devices: the default devices are all three. */
    ctx = th_context("cpu:3");
    {
        split_kernels e = split_kernels_make(ctx);
        /* Probes in cpu:4 only (each compiles on every device): here enc evals. */
        run_split(ctx, &e, &(split_case){.ndims = 1, .rd = {10}, .dim = 0, .ov = 1, .D = 3, .no_probe = true});
        run_split(ctx, &e, &(split_case){.ndims = 2, .rd = {2, 5}, .dim = 0, .ov = 0, .D = 3, .no_probe = true});
        run_split(ctx, &e, &(split_case){.ndims = 3, .rd = {3, 4, 7}, .dim = 2, .ov = 2, .D = 3, .no_probe = true});
        run_split(ctx, &e, &(split_case){.ndims = 1, .rd = {20}, .use_sub = true, .sub = {{2, 13}},
                                         .use_owned = true, .own = {{6, 9}}, .dim = 0, .ov = 2, .D = 3,
                                         .no_probe = true}); /* parts 0, 2 empty */
        hpl_kernel ip = th_kernel(ctx, inplace_src);
        int defaults[MAXD], D = default_devices(ctx, defaults);
        inplace(ctx, ip, D, 12, 5, 0);
        inplace(ctx, ip, D, 4, 6, -1);
    }
    hpl_context_destroy(ctx);

    /* One zero-copy device: one part, the whole array (an owned subarray's
     * owned box: the kernel writes only that, as writes land there). */
    ctx = th_context("cpu");
    {
        split_kernels e = split_kernels_make(ctx);
        run_split(ctx, &e, &(split_case){.ndims = 1, .rd = {10}, .dim = 0, .ov = 1, .D = 1});
        run_split(ctx, &e, &(split_case){.ndims = 2, .rd = {6, 5}, .dim = 1, .ov = 0, .D = 1});
        static const int zero[] = {0};
        run_split(ctx, &e, &(split_case){.ndims = 2, .rd = {6, 5}, .use_sub = true, .sub = {{1, 4}, {0, 3}},
                                         .dim = 0, .ov = 1, .devs = zero, .D = 1});
        run_split(ctx, &e, &(split_case){.ndims = 2, .rd = {8, 7}, .use_sub = true, .sub = {{1, 6}, {0, 5}},
                                         .use_owned = true, .own = {{2, 5}, {1, 3}}, .dim = 1, .ov = 1,
                                         .D = 1});
        run_split(ctx, &e, &(split_case){.ndims = 2, .rd = {8, 7}, .use_sub = true, .sub = {{1, 6}, {0, 5}},
                                         .use_owned = true, .own = {{2, 5}, {1, 3}}, .plain = true, .D = 1});
    }
    th_note("total %.2f s", th_now() - t0);
    return th_finish(ctx);
}
