// hplvk.glsl — the kernel prelude. A kernel includes it with
//   #include <hplvk.glsl>
// and declares its arguments in one `hpl_args { ... };` block. The layout of
// everything below is the kernel ABI shared with lib/api/eval.c: change both or
// neither (and bump HPLVK_ABI_VERSION, which is part of every cache key).
#ifndef HPLVK_GLSL
#define HPLVK_GLSL 1
#define HPLVK_ABI_VERSION 4

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : enable

// The library chooses the local size through these specialization constants
// unless the kernel declares layout(local_size_x = ...) in; itself.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

// Per-dispatch launch geometry (80 bytes: fits Lavapipe's 128-byte limit).
// A subkernel runs over a box of the eval's whole domain: `offset` is its
// first invocation and `domain` its size; `base` is the first invocation of
// this dispatch inside the box (big boxes run as several dispatches).
layout(push_constant) uniform hplvk_push_t {
    uvec4 base;    // xyz: first invocation of this dispatch within the subkernel's box
    uvec4 domain;  // xyz: the subkernel's box size
    uvec4 offset;  // xyz: the box's start within the whole eval's domain
    uvec4 global;  // xyz: the whole eval's domain size
    uvec4 check;   // bounds checks: xy the device's report address, zw the kernel's handle
} hplvk_push;

// The order in which a dispatch walks the domain, set by the library
// (lib/api/launch.c, walk_of): 0 as written; 1 (2): the domain's x and y
// (x and z) are the dispatch's y and x (z and x). Workgroups run x fastest,
// so the library makes the dispatch's x the domain's last dimension, the
// contiguous one of a row-major array, when the kernel cannot tell: it
// leaves the local size to the library and reads none of gl_LocalInvocationID,
// gl_LocalInvocationIndex, gl_WorkGroupID, gl_NumWorkGroups. hpl_global_id
// and hpl_in_domain undo the swap; drivers fold it away when specializing.
layout(constant_id = 1000) const uint hplvk_walk = 0u;
uvec3 hplvk_walked(uvec3 v)
{
    return hplvk_walk == 1u ? v.yxz : (hplvk_walk == 2u ? v.zyx : v);
}

#define hpl_dispatch_base (hplvk_push.base.xyz)
#define hpl_global_id (hplvk_walked(gl_GlobalInvocationID) + hplvk_push.base.xyz + hplvk_push.offset.xyz)
#define hpl_global_size (hplvk_push.global.xyz)
#define hpl_domain_size (hplvk_push.global.xyz)
#define hpl_subkernel_offset (hplvk_push.offset.xyz)
#define hpl_subkernel_size (hplvk_push.domain.xyz)

bool hpl_in_domain()
{
    return all(lessThan(hplvk_walked(gl_GlobalInvocationID) + hplvk_push.base.xyz, hplvk_push.domain.xyz));
}

// Array arguments: a buffer reference (device address) to the argument's
// first element present on this device (element part_lo), extents and
// strides, the argument's origin in its root, the part of it present on
// this device (halo included) and the part it owns, half-open, in the
// argument's own coordinates. Element i is at p + (i - part_lo) . stride:
// offsets from p stay inside the memory holding the part (a driver may add
// them in 32 bits), and only elements inside [part_lo, part_hi) exist.
// One struct per element type, access and dimensionality; the library
// recognises them by shape and decorations (NonWritable/NonReadable), not by
// name.
#define HPLVK_REF(T, ALIGN, ACC, TAG) \
    layout(buffer_reference, std430, buffer_reference_align = ALIGN) ACC buffer hplvk_##TAG##_##T { T v[]; };
#define HPLVK_ARR_N(T, TAG, N, U) \
    struct hplvk_arr_##TAG##_##T##_##N { hplvk_##TAG##_##T p; U dims; U stride; U origin; U part_lo; U part_hi; U owned_lo; U owned_hi; };
#define HPLVK_ARR(T, TAG) HPLVK_ARR_N(T, TAG, 1, uint) HPLVK_ARR_N(T, TAG, 2, uvec2) HPLVK_ARR_N(T, TAG, 3, uvec3)
#define HPLVK_TYPE(T, ALIGN)                              \
    HPLVK_REF(T, ALIGN, readonly, ro) HPLVK_ARR(T, ro)  \
    HPLVK_REF(T, ALIGN, writeonly, wo) HPLVK_ARR(T, wo) \
    HPLVK_REF(T, ALIGN, , rw) HPLVK_ARR(T, rw)

HPLVK_TYPE(float, 4)
HPLVK_TYPE(int, 4)
HPLVK_TYPE(uint, 4)
HPLVK_TYPE(int64_t, 8)
HPLVK_TYPE(uint64_t, 8)
HPLVK_TYPE(double, 8)

// Two levels, so that macro arguments (hpl_in(MY_TYPE, 2)) expand first.
#define HPLVK_ARG_(TAG, T, N) hplvk_arr_##TAG##_##T##_##N
#define hpl_in(T, N) HPLVK_ARG_(ro, T, N)
#define hpl_out(T, N) HPLVK_ARG_(wo, T, N)
#define hpl_inout(T, N) HPLVK_ARG_(rw, T, N)

// The argument block: members in declaration order are the eval arguments.
#define hpl_args layout(set = 0, binding = 0, std140) uniform hplvk_args_t

// Bounds checks (hplvk.h chapter 6c). The library sets hplvk_checks on
// devices that check: 1 on CPU and other zero-copy devices and under
// HPLVK_BOUNDS_CHECK, 2 under validation. There hpl_at() makes no access
// outside [part_lo, part_hi): a stray access goes to the part's first
// element instead (x.p.v[0]). The invocation notes its stray accesses in
// private variables, without a branch or an atomic per access (Lavapipe
// runs both sides of a branch), and main()'s wrapper adds them to the
// report; under 2 it keeps the first one's argument, element and part.
// With 0 (the default) drivers fold the checks away: hpl_at() is the plain
// access. Index expressions are evaluated twice: no side effects.
layout(constant_id = 1001) const uint hplvk_checks = 0u;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer hplvk_report_t {
    uint count;     // invocations that strayed
    uint ready;     // 1 once the fields below describe one of them
    uvec2 kernel;   // hplvk_push.check.zw of its dispatch: the kernel's handle
    uvec2 address;  // under 2: the argument's p
    uint access;    // under 2: 1 read, 2 write, 3 read or write (the argument's access)
    uint ndims;     // under 2: the argument's; 0: not recorded (hplvk_checks 1)
    uvec4 index;    // under 2: the element, in the argument's coordinates
    uvec4 lo;       // under 2: the argument's part_lo
    uvec4 hi;       // and part_hi
};
bool hplvk_strayed = false; // this invocation made a stray access
uvec4 hplvk_stray_where;    // under 2, the first one: its argument's p (xy), access (z), ndims (w)
uvec3 hplvk_stray_index, hplvk_stray_lo, hplvk_stray_hi;
bool hplvk_out(uint i, uint lo, uint hi) { return i - lo >= hi - lo; }
bool hplvk_out(uvec2 i, uvec2 lo, uvec2 hi) { return any(greaterThanEqual(i - lo, hi - lo)); }
bool hplvk_out(uvec3 i, uvec3 lo, uvec3 hi) { return any(greaterThanEqual(i - lo, hi - lo)); }
// Notes a checked access (strays: outside its part); true when it stays.
bool hplvk_check(bool strays, uvec2 p, uint access, uint n, uvec3 i, uvec3 lo, uvec3 hi)
{
    if (hplvk_checks == 2u) {
        bool first = strays && !hplvk_strayed;
        hplvk_stray_where = first ? uvec4(p, access, n) : hplvk_stray_where;
        hplvk_stray_index = first ? i : hplvk_stray_index;
        hplvk_stray_lo = first ? lo : hplvk_stray_lo;
        hplvk_stray_hi = first ? hi : hplvk_stray_hi;
    }
    hplvk_strayed = hplvk_strayed || strays;
    return !strays;
}
// main()'s wrapper, after the kernel: an invocation that strayed, into the report.
void hplvk_report_strays()
{
    hplvk_report_t r = hplvk_report_t(hplvk_push.check.xy);
    if (atomicAdd(r.count, 1u) == 0u) {
        r.kernel = hplvk_push.check.zw;
        if (hplvk_checks == 2u) {
            r.address = hplvk_stray_where.xy;
            r.access = hplvk_stray_where.z;
            r.ndims = hplvk_stray_where.w;
            r.index = uvec4(hplvk_stray_index, 0u);
            r.lo = uvec4(hplvk_stray_lo, 0u);
            r.hi = uvec4(hplvk_stray_hi, 0u);
        }
        memoryBarrierBuffer();
        atomicExchange(r.ready, 1u);
    }
}
#define HPLVK_CHECK_N(T, TAG, ACC, N, U, E)                                                                  \
    bool hplvk_stays(hplvk_arr_##TAG##_##T##_##N a, U i)                                                     \
    {                                                                                                        \
        return hplvk_checks == 0u ||                                                                         \
               hplvk_check(hplvk_out(i, a.part_lo, a.part_hi), uvec2(a.p), ACC, N, E(i), E(a.part_lo), E(a.part_hi)); \
    }
#define HPLVK_E1(x) uvec3(x, 0u, 0u)
#define HPLVK_E2(x) uvec3(x, 0u)
#define HPLVK_E3(x) (x)
#define HPLVK_CHECK(T, TAG, ACC) \
    HPLVK_CHECK_N(T, TAG, ACC, 1, uint, HPLVK_E1) HPLVK_CHECK_N(T, TAG, ACC, 2, uvec2, HPLVK_E2) HPLVK_CHECK_N(T, TAG, ACC, 3, uvec3, HPLVK_E3)
#define HPLVK_CHECKS(T) HPLVK_CHECK(T, ro, 1u) HPLVK_CHECK(T, wo, 2u) HPLVK_CHECK(T, rw, 3u)
HPLVK_CHECKS(float)
HPLVK_CHECKS(int)
HPLVK_CHECKS(uint)
HPLVK_CHECKS(int64_t)
HPLVK_CHECKS(uint64_t)
HPLVK_CHECKS(double)

// Element i (i, j / i, j, k) of a, in the argument's own coordinates (a
// stray access on a checking device: a.p.v[0] instead).
#define hpl_at(a, i) a.p.v[hplvk_stays(a, uint(i)) ? ((i) - a.part_lo) * a.stride.x : 0u]
#define hpl_at2(a, i, j) \
    a.p.v[hplvk_stays(a, uvec2(i, j)) ? ((i) - a.part_lo.x) * a.stride.x + ((j) - a.part_lo.y) * a.stride.y : 0u]
#define hpl_at3(a, i, j, k)                                                                                     \
    a.p.v[hplvk_stays(a, uvec3(i, j, k)) ? ((i) - a.part_lo.x) * a.stride.x + ((j) - a.part_lo.y) * a.stride.y + \
                                               ((k) - a.part_lo.z) * a.stride.z                                  \
                                         : 0u]

// HPL's part-local view: index 0 is the first element present on this
// device (the part's, halo included), hpl_part_dims its extents.
#define hpl_part_at(a, i) hpl_at(a, (i) + a.part_lo)
#define hpl_part_at2(a, i, j) hpl_at2(a, (i) + a.part_lo.x, (j) + a.part_lo.y)
#define hpl_part_at3(a, i, j, k) hpl_at3(a, (i) + a.part_lo.x, (j) + a.part_lo.y, (k) + a.part_lo.z)
#define hpl_part_dims(a) (a.part_hi - a.part_lo)
// Does this device own element i (i, j / i, j, k) of a? Writes must stay
// inside the owned box.
#define hpl_owns(a, i) ((i) >= a.owned_lo && (i) < a.owned_hi)
#define hpl_owns2(a, i, j) (all(greaterThanEqual(uvec2(i, j), a.owned_lo)) && all(lessThan(uvec2(i, j), a.owned_hi)))
#define hpl_owns3(a, i, j, k) \
    (all(greaterThanEqual(uvec3(i, j, k), a.owned_lo)) && all(lessThan(uvec3(i, j, k), a.owned_hi)))

// Natural logarithm in double precision: GLSL's log() takes float only.
// fdlibm's __ieee754_log (e_log.c, Sun Microsystems 1993; glibc's and
// musl's log descend from it), error below 1 ulp: x = 2^k (1 + f) with
// 1 + f in [sqrt(2)/2, sqrt(2)), log(1 + f) = 2 atanh(s) = f - s (f - R)
// with s = f / (2 + f) and R a minimax polynomial in s^2 (Lg1..Lg7), and
// k ln 2 added as k ln2_hi (exact) plus k ln2_lo.
// The error analysis counts every rounding: the result is `precise`, so
// that no compiler fuses a multiply and an add on its way (Lavapipe's did,
// and the error went past 1 ulp). It assumes correctly rounded double
// arithmetic, division included: Lavapipe's is; Vulkan itself promises
// doubles only the precision of floats. Special values come from bits, not
// from arithmetic a driver need not keep IEEE: log(+-0) = -Inf, log(x < 0)
// = NaN, log(+Inf) = +Inf, log(NaN) = NaN, log(1) = +0; subnormals are
// rescaled with integers, so a device that flushes subnormal operands to
// zero still gets their logarithm. The constants are local, so a kernel
// that does not call it needs no Float64 capability (glslang emits only
// functions that are called; unit_compile checks a float kernel's
// capabilities).
double hpl_log_f64(double x)
{
    const double ln2_hi = 6.93147180369123816490e-01lf; // 3fe62e42 fee00000
    const double ln2_lo = 1.90821492927058770002e-10lf; // 3dea39ef 35793c76
    const double Lg1 = 6.666666666666735130e-01lf;      // 3fe55555 55555593
    const double Lg2 = 3.999999999940941908e-01lf;      // 3fd99999 9997fa04
    const double Lg3 = 2.857142874366239149e-01lf;      // 3fd24924 94229359
    const double Lg4 = 2.222219843214978396e-01lf;      // 3fcc71c5 1d8e78af
    const double Lg5 = 1.818357216161805012e-01lf;      // 3fc74664 96cb03de
    const double Lg6 = 1.531383769920937332e-01lf;      // 3fc39a09 d078c69f
    const double Lg7 = 1.479819860511658591e-01lf;      // 3fc2f112 df3e5244
    uvec2 w = unpackDouble2x32(x);                      // .x the low word, .y the high one
    int hx = int(w.y);
    int k = 0;
    if (hx < 0x00100000) { // x < 2^-1022: zero, subnormal or negative
        if ((uint(hx & 0x7fffffff) | w.x) == 0u)
            return packDouble2x32(uvec2(0u, 0xfff00000u)); // -Inf
        if (hx < 0)
            return packDouble2x32(uvec2(0u, 0x7ff80000u)); // NaN
        // A subnormal is m 2^-1074, m its 52-bit mantissa: take m, exactly.
        x = double(uint(hx)) * 4294967296.0lf + double(w.x);
        k = -1074;
        w = unpackDouble2x32(x);
        hx = int(w.y);
    }
    if (hx >= 0x7ff00000)
        return x; // +Inf or NaN
    k += (hx >> 20) - 1023;
    hx &= 0x000fffff;
    int i = (hx + 0x95f64) & 0x100000; // set when the mantissa is past sqrt(2): halve it
    x = packDouble2x32(uvec2(w.x, uint(hx | (i ^ 0x3ff00000))));
    k += i >> 20;
    double f = x - 1.0lf;
    double dk = double(k);
    precise double result;
    if ((0x000fffff & (2 + hx)) < 3) { // -2^-20 <= f < 2^-20: three terms of the series
        double R = f * f * (0.5lf - 0.33333333333333333lf * f);
        if (f == 0.0lf)
            result = k == 0 ? 0.0lf : dk * ln2_hi + dk * ln2_lo;
        else
            result = k == 0 ? f - R : dk * ln2_hi - ((R - dk * ln2_lo) - f);
        return result;
    }
    double s = f / (2.0lf + f);
    double z = s * s;
    double zz = z * z;
    double t1 = zz * (Lg2 + zz * (Lg4 + zz * Lg6));
    double t2 = z * (Lg1 + zz * (Lg3 + zz * (Lg5 + zz * Lg7)));
    double R = t2 + t1;
    if (((hx - 0x6147a) | (0x6b851 - hx)) > 0) { // mantissa in [1.38, 1.42], |f| near its largest:
        double hfsq = 0.5lf * f * f;             // f^2/2 kept apart there
        result = k == 0 ? f - (hfsq - s * (hfsq + R)) : dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
    } else {
        result = k == 0 ? f - s * (f - R) : dk * ln2_hi - ((s * (f - R) - dk * ln2_lo) - f);
    }
    return result;
}

// Mask invocations past the domain's edge: the kernel's main() is renamed
// and called from here only for invocations inside the domain; then report
// its stray accesses (bounds checks above).
void hplvk_user_main();
void main()
{
#ifndef HPL_NO_MASK
    if (!hpl_in_domain())
        return;
#endif
    hplvk_user_main();
    if (hplvk_checks != 0u && hplvk_strayed)
        hplvk_report_strays();
}
#define main hplvk_user_main

#endif
