// hplvk.glsl — the kernel prelude. A kernel includes it with
//   #include <hplvk.glsl>
// and declares its arguments in one `hpl_args { ... };` block. The layout of
// everything below is the kernel ABI shared with lib/api/eval.c: change both or
// neither (and bump HPLVK_ABI_VERSION, which is part of every cache key).
#ifndef HPLVK_GLSL
#define HPLVK_GLSL 1
#define HPLVK_ABI_VERSION 2

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : enable

// The library chooses the local size through these specialization constants
// unless the kernel declares layout(local_size_x = ...) in; itself.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

// Per-dispatch launch geometry (64 bytes: fits Lavapipe's 128-byte limit).
// A subkernel runs over a box of the eval's whole domain: `offset` is its
// first invocation and `domain` its size; `base` is the first invocation of
// this dispatch inside the box (big boxes run as several dispatches).
layout(push_constant) uniform hplvk_push_t {
    uvec4 base;    // xyz: first invocation of this dispatch within the subkernel's box
    uvec4 domain;  // xyz: the subkernel's box size
    uvec4 offset;  // xyz: the box's start within the whole eval's domain
    uvec4 global;  // xyz: the whole eval's domain size
} hplvk_push;

#define hpl_dispatch_base (hplvk_push.base.xyz)
#define hpl_global_id (gl_GlobalInvocationID + hplvk_push.base.xyz + hplvk_push.offset.xyz)
#define hpl_global_size (hplvk_push.global.xyz)
#define hpl_domain_size (hplvk_push.global.xyz)
#define hpl_subkernel_offset (hplvk_push.offset.xyz)
#define hpl_subkernel_size (hplvk_push.domain.xyz)

bool hpl_in_domain()
{
    return all(lessThan(gl_GlobalInvocationID + hplvk_push.base.xyz, hplvk_push.domain.xyz));
}

// Array arguments: a buffer reference (device address) to the argument's
// element 0, extents and strides, the argument's origin in its root, the
// part of it present on this device (halo included) and the part it owns,
// half-open, in the argument's own coordinates. p may point before the
// memory that holds the part: only elements inside [part_lo, part_hi) exist.
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

#define hpl_at(a, i) a.p.v[(i) * a.stride.x]
#define hpl_at2(a, i, j) a.p.v[(i) * a.stride.x + (j) * a.stride.y]
#define hpl_at3(a, i, j, k) a.p.v[(i) * a.stride.x + (j) * a.stride.y + (k) * a.stride.z]

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

// Mask invocations past the domain's edge: the kernel's main() is renamed
// and called from here only for invocations inside the domain.
void hplvk_user_main();
void main()
{
#ifndef HPL_NO_MASK
    if (!hpl_in_domain())
        return;
#endif
    hplvk_user_main();
}
#define main hplvk_user_main

#endif
