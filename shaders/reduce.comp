#version 460
// Reduces a (sub)array's box, viewed as 3-D, to one partial value per
// work-group: partial[g] = op over the elements group g visited (group g
// starts at element g * 256 and strides by the whole grid, so every group
// has at least one element when groups <= ceil(count / 256)).
// Compiled once per element type T by cmake/embed.cmake:
// embed: T float int uint int64_t uint64_t double
#define HPL_NO_MASK
#include <hplvk.glsl>
layout(local_size_x = 256) in;

hpl_args { hpl_in(T, 3) x; hpl_out(T, 1) partial; uint op; };

shared T values[256];
shared bool have[256];

T combine(T a, T b)
{
    switch (op) {
    case 1u: return a + b;
    case 2u: return a * b;
    case 3u: return min(a, b);
    default: return max(a, b);
    }
}

void main()
{
    uint lid = gl_LocalInvocationID.x;
    uint plane = x.dims.y * x.dims.z, count = x.dims.x * plane;
    uint stride = gl_NumWorkGroups.x * 256u;
    bool h = false;
    precise T acc = T(0), lost = T(0);
    for (uint i = gl_WorkGroupID.x * 256u + lid; i < count; i += stride) {
        uint r = i % plane;
        T v = hpl_at3(x, i / plane, r / x.dims.z, r % x.dims.z);
        if (op == 1u && h) {
            // Compensated (Kahan) sum: one invocation may add thousands of
            // elements of a big array. For integers `lost` stays 0.
            precise T y = v - lost;
            precise T t = acc + y;
            lost = (t - acc) - y;
            acc = t;
        } else {
            acc = h ? combine(acc, v) : v;
        }
        h = true;
    }
    values[lid] = acc;
    have[lid] = h;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1u) {
        if (lid < s && have[lid + s]) {
            values[lid] = have[lid] ? combine(values[lid], values[lid + s]) : values[lid + s];
            have[lid] = true;
        }
        barrier();
    }
    if (lid == 0u)
        hpl_at(partial, gl_WorkGroupID.x) = values[0];
}
