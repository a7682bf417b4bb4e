// hplvk.glsl — the kernel prelude. A kernel includes it with
//   #include <hplvk.glsl>
// and declares its arguments in one `hpl_args { ... };` block. The layout of
// everything below is the kernel ABI shared with lib/eval.c: change both or
// neither (and bump HPLVK_ABI_VERSION, which is part of every cache key).
#ifndef HPLVK_GLSL
#define HPLVK_GLSL 1
#define HPLVK_ABI_VERSION 1

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : enable

// The library chooses the local size through these specialization constants
// unless the kernel declares layout(local_size_x = ...) in; itself.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

// Per-dispatch launch geometry (64 bytes: fits Lavapipe's 128-byte limit).
layout(push_constant) uniform hplvk_push_t {
    uvec4 base;    // xyz: first invocation of this dispatch within the domain
    uvec4 domain;  // xyz: this subkernel's domain size
    uvec4 offset;  // xyz: this domain's start within the whole eval's domain
    uvec4 global;  // xyz: the whole eval's domain size
} hplvk_push;

#define hpl_dispatch_base (hplvk_push.base.xyz)
#define hpl_global_id (gl_GlobalInvocationID + hplvk_push.base.xyz)
#define hpl_domain_size (hplvk_push.domain.xyz)
#define hpl_subkernel_offset (hplvk_push.offset.xyz)
#define hpl_global_size (hplvk_push.global.xyz)

bool hpl_in_domain()
{
    return all(lessThan(hpl_global_id, hplvk_push.domain.xyz));
}

// Array arguments: a buffer reference (device address) to the first element
// plus extents, strides and origin, all in elements. One struct per element
// type, access and dimensionality; the library recognises them by shape and
// decorations (NonWritable/NonReadable), not by name.
#define HPLVK_REF(T, ALIGN, ACC, TAG) \
    layout(buffer_reference, std430, buffer_reference_align = ALIGN) ACC buffer hplvk_##TAG##_##T { T v[]; };
#define HPLVK_ARR(T, TAG)                                                                          \
    struct hplvk_arr_##TAG##_##T##_1 { hplvk_##TAG##_##T p; uint dims; uint stride; uint origin; };    \
    struct hplvk_arr_##TAG##_##T##_2 { hplvk_##TAG##_##T p; uvec2 dims; uvec2 stride; uvec2 origin; }; \
    struct hplvk_arr_##TAG##_##T##_3 { hplvk_##TAG##_##T p; uvec3 dims; uvec3 stride; uvec3 origin; };
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
