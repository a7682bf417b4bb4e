// test_interop's own kernel (the application's, not hplvk's): through
// buffer device addresses, dst[i][j] = src[i][j] + add over n0 x n1
// elements, each side with its own element strides (hpl_vulkan_buffer).
#version 460
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };
layout(push_constant) uniform Push {
    Words src;       // first element
    Words dst;
    uint n0, n1;     // extents
    uint src_s0, src_s1;
    uint dst_s0, dst_s1;
    uint add;
} p;
void main()
{
    uint k = gl_GlobalInvocationID.x;
    if (k >= p.n0 * p.n1)
        return;
    uint i = k / p.n1, j = k % p.n1;
    p.dst.v[i * p.dst_s0 + j * p.dst_s1] = p.src.v[i * p.src_s0 + j * p.src_s1] + p.add;
}
