#version 460
// Copies a box of an array between two layouts when its contiguous runs are
// short and many (a column panel, a strided subarray, a column halo): one
// dispatch instead of one vkCmdCopyBuffer region per run, which costs
// NVIDIA's driver microseconds each (lib/engine/copy.c). The runs form a
// grid of n0 x n1, run (r0, r1) starting at src + r0 * src_pitch0 +
// r1 * src_pitch1 (bytes) and going to the same place of dst; a run is
// run_units units of UNIT bytes. The host keeps runs * run_units below 2^31
// in a dispatch, and every address and pitch a multiple of UNIT.
// embed: UNIT 4 16
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 64) in;
#if UNIT == 16
#define unit_t uvec4
#else
#define unit_t uint
#endif
layout(buffer_reference, std430, buffer_reference_align = UNIT) buffer units_ref { unit_t u[]; };
// 60 bytes: inside the library's 64-byte push range (one pipeline layout
// for every pipeline, so that a copy between kernels disturbs no binding).
layout(push_constant) uniform copy_push {
    uint64_t src, dst;
    uint64_t src_pitch0, src_pitch1, dst_pitch0, dst_pitch1;
    uint runs, run_units, n1; // runs = n0 * n1
} pc;
void main()
{
    uint total = pc.runs * pc.run_units;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
        uint run = i / pc.run_units, k = i - run * pc.run_units;
        uint r0 = run / pc.n1, r1 = run - r0 * pc.n1;
        units_ref s = units_ref(pc.src + r0 * pc.src_pitch0 + r1 * pc.src_pitch1);
        units_ref d = units_ref(pc.dst + r0 * pc.dst_pitch0 + r1 * pc.dst_pitch1);
        d.u[k] = s.u[k];
    }
}
