/* Kernels: variants per device type, kernels from files with #include,
 * include_dirs and defines, SPIR-V words (embedded below) and .spv files,
 * and reflection (hpl_kernel_arg_count / get_arg_info / get_local_size). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 777

/* y = k * x, k given as text, for the variant tests. */
#define SCALE_SRC(K)                                                              \
    "#include <hplvk.glsl>\n"                                                     \
    "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; };\n"                   \
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = " K " * hpl_at(x, i); }\n"

/* SPIR-V of this kernel (spv_kernel.comp), made once with
 *   glslc --target-env=vulkan1.2 -I shaders -mfmt=num spv_kernel.comp
 * from shaders/hplvk.glsl at HPLVK_ABI_VERSION 2 (regenerate it when the
 * prelude's ABI changes):
 *   #version 460
 *   #include <hplvk.glsl>
 *   hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; float s; };
 *   void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i) * s + 0.5; }
 */
static const uint32_t spv_kernel[] = {
    0x07230203, 0x00010500, 0x000d000b, 0x00000062, 0x00000000, 0x00020011, 0x00000001, 0x00020011,
    0x000014e3, 0x0006000b, 0x00000001, 0x4c534c47, 0x6474732e, 0x3035342e, 0x00000000, 0x0003000e,
    0x000014e4, 0x00000001, 0x0008000f, 0x00000005, 0x00000004, 0x6e69616d, 0x00000000, 0x0000000f,
    0x00000014, 0x00000044, 0x00060010, 0x00000004, 0x00000011, 0x00000001, 0x00000001, 0x00000001,
    0x00030003, 0x00000002, 0x000001cc, 0x00070004, 0x455f4c47, 0x625f5458, 0x65666675, 0x65725f72,
    0x65726566, 0x0065636e, 0x000d0004, 0x455f4c47, 0x735f5458, 0x65646168, 0x78655f72, 0x63696c70,
    0x615f7469, 0x68746972, 0x6974656d, 0x79745f63, 0x5f736570, 0x616f6c66, 0x00343674, 0x000d0004,
    0x455f4c47, 0x735f5458, 0x65646168, 0x78655f72, 0x63696c70, 0x615f7469, 0x68746972, 0x6974656d,
    0x79745f63, 0x5f736570, 0x36746e69, 0x00000034, 0x000a0004, 0x475f4c47, 0x4c474f4f, 0x70635f45,
    0x74735f70, 0x5f656c79, 0x656e696c, 0x7269645f, 0x69746365, 0x00006576, 0x00080004, 0x475f4c47,
    0x4c474f4f, 0x6e695f45, 0x64756c63, 0x69645f65, 0x74636572, 0x00657669, 0x00040005, 0x00000004,
    0x6e69616d, 0x00000000, 0x00060005, 0x00000008, 0x5f6c7068, 0x645f6e69, 0x69616d6f, 0x0000286e,
    0x00070005, 0x0000000a, 0x766c7068, 0x73755f6b, 0x6d5f7265, 0x286e6961, 0x00000000, 0x00080005,
    0x0000000f, 0x475f6c67, 0x61626f6c, 0x766e496c, 0x7461636f, 0x496e6f69, 0x00000044, 0x00060005,
    0x00000012, 0x766c7068, 0x75705f6b, 0x745f6873, 0x00000000, 0x00050006, 0x00000012, 0x00000000,
    0x65736162, 0x00000000, 0x00050006, 0x00000012, 0x00000001, 0x616d6f64, 0x00006e69, 0x00050006,
    0x00000012, 0x00000002, 0x7366666f, 0x00007465, 0x00050006, 0x00000012, 0x00000003, 0x626f6c67,
    0x00006c61, 0x00050005, 0x00000014, 0x766c7068, 0x75705f6b, 0x00006873, 0x00030005, 0x0000002c,
    0x00000069, 0x00080005, 0x0000003a, 0x766c7068, 0x72615f6b, 0x6f725f72, 0x6f6c665f, 0x315f7461,
    0x00000000, 0x00040006, 0x0000003a, 0x00000000, 0x00000070, 0x00050006, 0x0000003a, 0x00000001,
    0x736d6964, 0x00000000, 0x00050006, 0x0000003a, 0x00000002, 0x69727473, 0x00006564, 0x00050006,
    0x0000003a, 0x00000003, 0x6769726f, 0x00006e69, 0x00050006, 0x0000003a, 0x00000004, 0x74726170,
    0x006f6c5f, 0x00050006, 0x0000003a, 0x00000005, 0x74726170, 0x0069685f, 0x00060006, 0x0000003a,
    0x00000006, 0x656e776f, 0x6f6c5f64, 0x00000000, 0x00060006, 0x0000003a, 0x00000007, 0x656e776f,
    0x69685f64, 0x00000000, 0x00060005, 0x0000003d, 0x766c7068, 0x6f725f6b, 0x6f6c665f, 0x00007461,
    0x00040006, 0x0000003d, 0x00000000, 0x00000076, 0x00080005, 0x0000003f, 0x766c7068, 0x72615f6b,
    0x6f775f72, 0x6f6c665f, 0x315f7461, 0x00000000, 0x00040006, 0x0000003f, 0x00000000, 0x00000070,
    0x00050006, 0x0000003f, 0x00000001, 0x736d6964, 0x00000000, 0x00050006, 0x0000003f, 0x00000002,
    0x69727473, 0x00006564, 0x00050006, 0x0000003f, 0x00000003, 0x6769726f, 0x00006e69, 0x00050006,
    0x0000003f, 0x00000004, 0x74726170, 0x006f6c5f, 0x00050006, 0x0000003f, 0x00000005, 0x74726170,
    0x0069685f, 0x00060006, 0x0000003f, 0x00000006, 0x656e776f, 0x6f6c5f64, 0x00000000, 0x00060006,
    0x0000003f, 0x00000007, 0x656e776f, 0x69685f64, 0x00000000, 0x00060005, 0x00000041, 0x766c7068,
    0x6f775f6b, 0x6f6c665f, 0x00007461, 0x00040006, 0x00000041, 0x00000000, 0x00000076, 0x00060005,
    0x00000042, 0x766c7068, 0x72615f6b, 0x745f7367, 0x00000000, 0x00040006, 0x00000042, 0x00000000,
    0x00000078, 0x00040006, 0x00000042, 0x00000001, 0x00000079, 0x00040006, 0x00000042, 0x00000002,
    0x00000073, 0x00030005, 0x00000044, 0x00000000, 0x00040047, 0x0000000f, 0x0000000b, 0x0000001c,
    0x00050048, 0x00000012, 0x00000000, 0x00000023, 0x00000000, 0x00050048, 0x00000012, 0x00000001,
    0x00000023, 0x00000010, 0x00050048, 0x00000012, 0x00000002, 0x00000023, 0x00000020, 0x00050048,
    0x00000012, 0x00000003, 0x00000023, 0x00000030, 0x00030047, 0x00000012, 0x00000002, 0x00050048,
    0x0000003a, 0x00000000, 0x00000023, 0x00000000, 0x00050048, 0x0000003a, 0x00000001, 0x00000023,
    0x00000008, 0x00050048, 0x0000003a, 0x00000002, 0x00000023, 0x0000000c, 0x00050048, 0x0000003a,
    0x00000003, 0x00000023, 0x00000010, 0x00050048, 0x0000003a, 0x00000004, 0x00000023, 0x00000014,
    0x00050048, 0x0000003a, 0x00000005, 0x00000023, 0x00000018, 0x00050048, 0x0000003a, 0x00000006,
    0x00000023, 0x0000001c, 0x00050048, 0x0000003a, 0x00000007, 0x00000023, 0x00000020, 0x00040047,
    0x0000003c, 0x00000006, 0x00000004, 0x00040048, 0x0000003d, 0x00000000, 0x00000018, 0x00050048,
    0x0000003d, 0x00000000, 0x00000023, 0x00000000, 0x00030047, 0x0000003d, 0x00000002, 0x00050048,
    0x0000003f, 0x00000000, 0x00000023, 0x00000000, 0x00050048, 0x0000003f, 0x00000001, 0x00000023,
    0x00000008, 0x00050048, 0x0000003f, 0x00000002, 0x00000023, 0x0000000c, 0x00050048, 0x0000003f,
    0x00000003, 0x00000023, 0x00000010, 0x00050048, 0x0000003f, 0x00000004, 0x00000023, 0x00000014,
    0x00050048, 0x0000003f, 0x00000005, 0x00000023, 0x00000018, 0x00050048, 0x0000003f, 0x00000006,
    0x00000023, 0x0000001c, 0x00050048, 0x0000003f, 0x00000007, 0x00000023, 0x00000020, 0x00040047,
    0x00000040, 0x00000006, 0x00000004, 0x00040048, 0x00000041, 0x00000000, 0x00000019, 0x00050048,
    0x00000041, 0x00000000, 0x00000023, 0x00000000, 0x00030047, 0x00000041, 0x00000002, 0x00050048,
    0x00000042, 0x00000000, 0x00000023, 0x00000000, 0x00050048, 0x00000042, 0x00000001, 0x00000023,
    0x00000030, 0x00050048, 0x00000042, 0x00000002, 0x00000023, 0x00000060, 0x00030047, 0x00000042,
    0x00000002, 0x00040047, 0x00000044, 0x00000022, 0x00000000, 0x00040047, 0x00000044, 0x00000021,
    0x00000000, 0x00040047, 0x0000005e, 0x00000001, 0x00000000, 0x00040047, 0x0000005f, 0x00000001,
    0x00000001, 0x00040047, 0x00000060, 0x00000001, 0x00000002, 0x00040047, 0x00000061, 0x0000000b,
    0x00000019, 0x00020013, 0x00000002, 0x00030021, 0x00000003, 0x00000002, 0x00020014, 0x00000006,
    0x00030021, 0x00000007, 0x00000006, 0x00040015, 0x0000000c, 0x00000020, 0x00000000, 0x00040017,
    0x0000000d, 0x0000000c, 0x00000003, 0x00040020, 0x0000000e, 0x00000001, 0x0000000d, 0x0004003b,
    0x0000000e, 0x0000000f, 0x00000001, 0x00040017, 0x00000011, 0x0000000c, 0x00000004, 0x0006001e,
    0x00000012, 0x00000011, 0x00000011, 0x00000011, 0x00000011, 0x00040020, 0x00000013, 0x00000009,
    0x00000012, 0x0004003b, 0x00000013, 0x00000014, 0x00000009, 0x00040015, 0x00000015, 0x00000020,
    0x00000001, 0x0004002b, 0x00000015, 0x00000016, 0x00000000, 0x00040020, 0x00000017, 0x00000009,
    0x00000011, 0x0004002b, 0x00000015, 0x0000001c, 0x00000001, 0x00040017, 0x00000020, 0x00000006,
    0x00000003, 0x00040020, 0x0000002b, 0x00000007, 0x0000000c, 0x0004002b, 0x00000015, 0x00000032,
    0x00000002, 0x0004002b, 0x0000000c, 0x00000037, 0x00000000, 0x00030027, 0x00000039, 0x000014e5,
    0x000a001e, 0x0000003a, 0x00000039, 0x0000000c, 0x0000000c, 0x0000000c, 0x0000000c, 0x0000000c,
    0x0000000c, 0x0000000c, 0x00030016, 0x0000003b, 0x00000020, 0x0003001d, 0x0000003c, 0x0000003b,
    0x0003001e, 0x0000003d, 0x0000003c, 0x00040020, 0x00000039, 0x000014e5, 0x0000003d, 0x00030027,
    0x0000003e, 0x000014e5, 0x000a001e, 0x0000003f, 0x0000003e, 0x0000000c, 0x0000000c, 0x0000000c,
    0x0000000c, 0x0000000c, 0x0000000c, 0x0000000c, 0x0003001d, 0x00000040, 0x0000003b, 0x0003001e,
    0x00000041, 0x00000040, 0x00040020, 0x0000003e, 0x000014e5, 0x00000041, 0x0005001e, 0x00000042,
    0x0000003a, 0x0000003f, 0x0000003b, 0x00040020, 0x00000043, 0x00000002, 0x00000042, 0x0004003b,
    0x00000043, 0x00000044, 0x00000002, 0x00040020, 0x00000045, 0x00000002, 0x0000003e, 0x00040020,
    0x00000049, 0x00000002, 0x0000000c, 0x00040020, 0x0000004d, 0x00000002, 0x00000039, 0x00040020,
    0x00000054, 0x000014e5, 0x0000003b, 0x00040020, 0x00000057, 0x00000002, 0x0000003b, 0x0004002b,
    0x0000003b, 0x0000005b, 0x3f000000, 0x00040032, 0x0000000c, 0x0000005e, 0x00000001, 0x00040032,
    0x0000000c, 0x0000005f, 0x00000001, 0x00040032, 0x0000000c, 0x00000060, 0x00000001, 0x00060033,
    0x0000000d, 0x00000061, 0x0000005e, 0x0000005f, 0x00000060, 0x00050036, 0x00000002, 0x00000004,
    0x00000000, 0x00000003, 0x000200f8, 0x00000005, 0x00040039, 0x00000006, 0x00000025, 0x00000008,
    0x000400a8, 0x00000006, 0x00000026, 0x00000025, 0x000300f7, 0x00000028, 0x00000000, 0x000400fa,
    0x00000026, 0x00000027, 0x00000028, 0x000200f8, 0x00000027, 0x000100fd, 0x000200f8, 0x00000028,
    0x00040039, 0x00000002, 0x0000002a, 0x0000000a, 0x000100fd, 0x00010038, 0x00050036, 0x00000006,
    0x00000008, 0x00000000, 0x00000007, 0x000200f8, 0x00000009, 0x0004003d, 0x0000000d, 0x00000010,
    0x0000000f, 0x00050041, 0x00000017, 0x00000018, 0x00000014, 0x00000016, 0x0004003d, 0x00000011,
    0x00000019, 0x00000018, 0x0008004f, 0x0000000d, 0x0000001a, 0x00000019, 0x00000019, 0x00000000,
    0x00000001, 0x00000002, 0x00050080, 0x0000000d, 0x0000001b, 0x00000010, 0x0000001a, 0x00050041,
    0x00000017, 0x0000001d, 0x00000014, 0x0000001c, 0x0004003d, 0x00000011, 0x0000001e, 0x0000001d,
    0x0008004f, 0x0000000d, 0x0000001f, 0x0000001e, 0x0000001e, 0x00000000, 0x00000001, 0x00000002,
    0x000500b0, 0x00000020, 0x00000021, 0x0000001b, 0x0000001f, 0x0004009b, 0x00000006, 0x00000022,
    0x00000021, 0x000200fe, 0x00000022, 0x00010038, 0x00050036, 0x00000002, 0x0000000a, 0x00000000,
    0x00000003, 0x000200f8, 0x0000000b, 0x0004003b, 0x0000002b, 0x0000002c, 0x00000007, 0x0004003d,
    0x0000000d, 0x0000002d, 0x0000000f, 0x00050041, 0x00000017, 0x0000002e, 0x00000014, 0x00000016,
    0x0004003d, 0x00000011, 0x0000002f, 0x0000002e, 0x0008004f, 0x0000000d, 0x00000030, 0x0000002f,
    0x0000002f, 0x00000000, 0x00000001, 0x00000002, 0x00050080, 0x0000000d, 0x00000031, 0x0000002d,
    0x00000030, 0x00050041, 0x00000017, 0x00000033, 0x00000014, 0x00000032, 0x0004003d, 0x00000011,
    0x00000034, 0x00000033, 0x0008004f, 0x0000000d, 0x00000035, 0x00000034, 0x00000034, 0x00000000,
    0x00000001, 0x00000002, 0x00050080, 0x0000000d, 0x00000036, 0x00000031, 0x00000035, 0x00050051,
    0x0000000c, 0x00000038, 0x00000036, 0x00000000, 0x0003003e, 0x0000002c, 0x00000038, 0x00060041,
    0x00000045, 0x00000046, 0x00000044, 0x0000001c, 0x00000016, 0x0004003d, 0x0000003e, 0x00000047,
    0x00000046, 0x0004003d, 0x0000000c, 0x00000048, 0x0000002c, 0x00060041, 0x00000049, 0x0000004a,
    0x00000044, 0x0000001c, 0x00000032, 0x0004003d, 0x0000000c, 0x0000004b, 0x0000004a, 0x00050084,
    0x0000000c, 0x0000004c, 0x00000048, 0x0000004b, 0x00060041, 0x0000004d, 0x0000004e, 0x00000044,
    0x00000016, 0x00000016, 0x0004003d, 0x00000039, 0x0000004f, 0x0000004e, 0x0004003d, 0x0000000c,
    0x00000050, 0x0000002c, 0x00060041, 0x00000049, 0x00000051, 0x00000044, 0x00000016, 0x00000032,
    0x0004003d, 0x0000000c, 0x00000052, 0x00000051, 0x00050084, 0x0000000c, 0x00000053, 0x00000050,
    0x00000052, 0x00060041, 0x00000054, 0x00000055, 0x0000004f, 0x00000016, 0x00000053, 0x0006003d,
    0x0000003b, 0x00000056, 0x00000055, 0x00000002, 0x00000004, 0x00050041, 0x00000057, 0x00000058,
    0x00000044, 0x00000032, 0x0004003d, 0x0000003b, 0x00000059, 0x00000058, 0x00050085, 0x0000003b,
    0x0000005a, 0x00000056, 0x00000059, 0x00050081, 0x0000003b, 0x0000005c, 0x0000005a, 0x0000005b,
    0x00060041, 0x00000054, 0x0000005d, 0x00000047, 0x00000016, 0x0000004c, 0x0005003e, 0x0000005d,
    0x0000005c, 0x00000002, 0x00000004, 0x000100fd, 0x00010038,
};

/* Raw SPIR-V that follows the ABI without <hplvk.glsl> (other struct and
 * block names, a fixed local size of 16, no specialization constants),
 * made once with glslc --target-env=vulkan1.2 -mfmt=num from:
 *   #version 460
 *   #extension GL_EXT_buffer_reference : require
 *   layout(local_size_x = 16) in;
 *   layout(push_constant) uniform P { uvec4 base; uvec4 domain; uvec4 offset; uvec4 global; } pc;
 *   layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer RO { float v[]; };
 *   layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer WO { float v[]; };
 *   struct InArr { RO p; uint dims, stride, origin, part_lo, part_hi, owned_lo, owned_hi; };
 *   struct OutArr { WO p; uint dims, stride, origin, part_lo, part_hi, owned_lo, owned_hi; };
 *   layout(set = 0, binding = 0, std140) uniform Args { InArr src; OutArr dst; float k; };
 *   void main() {
 *       uint i = gl_GlobalInvocationID.x + pc.base.x;
 *       if (i >= pc.domain.x) return;
 *       dst.p.v[i * dst.stride] = src.p.v[i * src.stride] * k + 0.25;
 *   }
 */
static const uint32_t raw_fixed_spv[] = {
    0x07230203, 0x00010500, 0x000d000b, 0x0000004c, 0x00000000, 0x00020011, 0x00000001, 0x00020011,
    0x000014e3, 0x0006000b, 0x00000001, 0x4c534c47, 0x6474732e, 0x3035342e, 0x00000000, 0x0003000e,
    0x000014e4, 0x00000001, 0x0008000f, 0x00000005, 0x00000004, 0x6e69616d, 0x00000000, 0x0000000b,
    0x00000013, 0x0000002e, 0x00060010, 0x00000004, 0x00000011, 0x00000010, 0x00000001, 0x00000001,
    0x00030003, 0x00000002, 0x000001cc, 0x00070004, 0x455f4c47, 0x625f5458, 0x65666675, 0x65725f72,
    0x65726566, 0x0065636e, 0x000a0004, 0x475f4c47, 0x4c474f4f, 0x70635f45, 0x74735f70, 0x5f656c79,
    0x656e696c, 0x7269645f, 0x69746365, 0x00006576, 0x00080004, 0x475f4c47, 0x4c474f4f, 0x6e695f45,
    0x64756c63, 0x69645f65, 0x74636572, 0x00657669, 0x00040005, 0x00000004, 0x6e69616d, 0x00000000,
    0x00030005, 0x00000008, 0x00000069, 0x00080005, 0x0000000b, 0x475f6c67, 0x61626f6c, 0x766e496c,
    0x7461636f, 0x496e6f69, 0x00000044, 0x00030005, 0x00000011, 0x00000050, 0x00050006, 0x00000011,
    0x00000000, 0x65736162, 0x00000000, 0x00050006, 0x00000011, 0x00000001, 0x616d6f64, 0x00006e69,
    0x00050006, 0x00000011, 0x00000002, 0x7366666f, 0x00007465, 0x00050006, 0x00000011, 0x00000003,
    0x626f6c67, 0x00006c61, 0x00030005, 0x00000013, 0x00006370, 0x00040005, 0x00000024, 0x72416e49,
    0x00000072, 0x00040006, 0x00000024, 0x00000000, 0x00000070, 0x00050006, 0x00000024, 0x00000001,
    0x736d6964, 0x00000000, 0x00050006, 0x00000024, 0x00000002, 0x69727473, 0x00006564, 0x00050006,
    0x00000024, 0x00000003, 0x6769726f, 0x00006e69, 0x00050006, 0x00000024, 0x00000004, 0x74726170,
    0x006f6c5f, 0x00050006, 0x00000024, 0x00000005, 0x74726170, 0x0069685f, 0x00060006, 0x00000024,
    0x00000006, 0x656e776f, 0x6f6c5f64, 0x00000000, 0x00060006, 0x00000024, 0x00000007, 0x656e776f,
    0x69685f64, 0x00000000, 0x00030005, 0x00000027, 0x00004f52, 0x00040006, 0x00000027, 0x00000000,
    0x00000076, 0x00040005, 0x00000029, 0x4174754f, 0x00007272, 0x00040006, 0x00000029, 0x00000000,
    0x00000070, 0x00050006, 0x00000029, 0x00000001, 0x736d6964, 0x00000000, 0x00050006, 0x00000029,
    0x00000002, 0x69727473, 0x00006564, 0x00050006, 0x00000029, 0x00000003, 0x6769726f, 0x00006e69,
    0x00050006, 0x00000029, 0x00000004, 0x74726170, 0x006f6c5f, 0x00050006, 0x00000029, 0x00000005,
    0x74726170, 0x0069685f, 0x00060006, 0x00000029, 0x00000006, 0x656e776f, 0x6f6c5f64, 0x00000000,
    0x00060006, 0x00000029, 0x00000007, 0x656e776f, 0x69685f64, 0x00000000, 0x00030005, 0x0000002b,
    0x00004f57, 0x00040006, 0x0000002b, 0x00000000, 0x00000076, 0x00040005, 0x0000002c, 0x73677241,
    0x00000000, 0x00040006, 0x0000002c, 0x00000000, 0x00637273, 0x00040006, 0x0000002c, 0x00000001,
    0x00747364, 0x00040006, 0x0000002c, 0x00000002, 0x0000006b, 0x00030005, 0x0000002e, 0x00000000,
    0x00040047, 0x0000000b, 0x0000000b, 0x0000001c, 0x00050048, 0x00000011, 0x00000000, 0x00000023,
    0x00000000, 0x00050048, 0x00000011, 0x00000001, 0x00000023, 0x00000010, 0x00050048, 0x00000011,
    0x00000002, 0x00000023, 0x00000020, 0x00050048, 0x00000011, 0x00000003, 0x00000023, 0x00000030,
    0x00030047, 0x00000011, 0x00000002, 0x00050048, 0x00000024, 0x00000000, 0x00000023, 0x00000000,
    0x00050048, 0x00000024, 0x00000001, 0x00000023, 0x00000008, 0x00050048, 0x00000024, 0x00000002,
    0x00000023, 0x0000000c, 0x00050048, 0x00000024, 0x00000003, 0x00000023, 0x00000010, 0x00050048,
    0x00000024, 0x00000004, 0x00000023, 0x00000014, 0x00050048, 0x00000024, 0x00000005, 0x00000023,
    0x00000018, 0x00050048, 0x00000024, 0x00000006, 0x00000023, 0x0000001c, 0x00050048, 0x00000024,
    0x00000007, 0x00000023, 0x00000020, 0x00040047, 0x00000026, 0x00000006, 0x00000004, 0x00040048,
    0x00000027, 0x00000000, 0x00000018, 0x00050048, 0x00000027, 0x00000000, 0x00000023, 0x00000000,
    0x00030047, 0x00000027, 0x00000002, 0x00050048, 0x00000029, 0x00000000, 0x00000023, 0x00000000,
    0x00050048, 0x00000029, 0x00000001, 0x00000023, 0x00000008, 0x00050048, 0x00000029, 0x00000002,
    0x00000023, 0x0000000c, 0x00050048, 0x00000029, 0x00000003, 0x00000023, 0x00000010, 0x00050048,
    0x00000029, 0x00000004, 0x00000023, 0x00000014, 0x00050048, 0x00000029, 0x00000005, 0x00000023,
    0x00000018, 0x00050048, 0x00000029, 0x00000006, 0x00000023, 0x0000001c, 0x00050048, 0x00000029,
    0x00000007, 0x00000023, 0x00000020, 0x00040047, 0x0000002a, 0x00000006, 0x00000004, 0x00040048,
    0x0000002b, 0x00000000, 0x00000019, 0x00050048, 0x0000002b, 0x00000000, 0x00000023, 0x00000000,
    0x00030047, 0x0000002b, 0x00000002, 0x00050048, 0x0000002c, 0x00000000, 0x00000023, 0x00000000,
    0x00050048, 0x0000002c, 0x00000001, 0x00000023, 0x00000030, 0x00050048, 0x0000002c, 0x00000002,
    0x00000023, 0x00000060, 0x00030047, 0x0000002c, 0x00000002, 0x00040047, 0x0000002e, 0x00000022,
    0x00000000, 0x00040047, 0x0000002e, 0x00000021, 0x00000000, 0x00040047, 0x0000004b, 0x0000000b,
    0x00000019, 0x00020013, 0x00000002, 0x00030021, 0x00000003, 0x00000002, 0x00040015, 0x00000006,
    0x00000020, 0x00000000, 0x00040020, 0x00000007, 0x00000007, 0x00000006, 0x00040017, 0x00000009,
    0x00000006, 0x00000003, 0x00040020, 0x0000000a, 0x00000001, 0x00000009, 0x0004003b, 0x0000000a,
    0x0000000b, 0x00000001, 0x0004002b, 0x00000006, 0x0000000c, 0x00000000, 0x00040020, 0x0000000d,
    0x00000001, 0x00000006, 0x00040017, 0x00000010, 0x00000006, 0x00000004, 0x0006001e, 0x00000011,
    0x00000010, 0x00000010, 0x00000010, 0x00000010, 0x00040020, 0x00000012, 0x00000009, 0x00000011,
    0x0004003b, 0x00000012, 0x00000013, 0x00000009, 0x00040015, 0x00000014, 0x00000020, 0x00000001,
    0x0004002b, 0x00000014, 0x00000015, 0x00000000, 0x00040020, 0x00000016, 0x00000009, 0x00000006,
    0x0004002b, 0x00000014, 0x0000001b, 0x00000001, 0x00020014, 0x0000001e, 0x00030027, 0x00000023,
    0x000014e5, 0x000a001e, 0x00000024, 0x00000023, 0x00000006, 0x00000006, 0x00000006, 0x00000006,
    0x00000006, 0x00000006, 0x00000006, 0x00030016, 0x00000025, 0x00000020, 0x0003001d, 0x00000026,
    0x00000025, 0x0003001e, 0x00000027, 0x00000026, 0x00040020, 0x00000023, 0x000014e5, 0x00000027,
    0x00030027, 0x00000028, 0x000014e5, 0x000a001e, 0x00000029, 0x00000028, 0x00000006, 0x00000006,
    0x00000006, 0x00000006, 0x00000006, 0x00000006, 0x00000006, 0x0003001d, 0x0000002a, 0x00000025,
    0x0003001e, 0x0000002b, 0x0000002a, 0x00040020, 0x00000028, 0x000014e5, 0x0000002b, 0x0005001e,
    0x0000002c, 0x00000024, 0x00000029, 0x00000025, 0x00040020, 0x0000002d, 0x00000002, 0x0000002c,
    0x0004003b, 0x0000002d, 0x0000002e, 0x00000002, 0x00040020, 0x0000002f, 0x00000002, 0x00000028,
    0x0004002b, 0x00000014, 0x00000033, 0x00000002, 0x00040020, 0x00000034, 0x00000002, 0x00000006,
    0x00040020, 0x00000038, 0x00000002, 0x00000023, 0x00040020, 0x0000003f, 0x000014e5, 0x00000025,
    0x00040020, 0x00000042, 0x00000002, 0x00000025, 0x0004002b, 0x00000025, 0x00000046, 0x3e800000,
    0x0004002b, 0x00000006, 0x00000049, 0x00000010, 0x0004002b, 0x00000006, 0x0000004a, 0x00000001,
    0x0006002c, 0x00000009, 0x0000004b, 0x00000049, 0x0000004a, 0x0000004a, 0x00050036, 0x00000002,
    0x00000004, 0x00000000, 0x00000003, 0x000200f8, 0x00000005, 0x0004003b, 0x00000007, 0x00000008,
    0x00000007, 0x00050041, 0x0000000d, 0x0000000e, 0x0000000b, 0x0000000c, 0x0004003d, 0x00000006,
    0x0000000f, 0x0000000e, 0x00060041, 0x00000016, 0x00000017, 0x00000013, 0x00000015, 0x0000000c,
    0x0004003d, 0x00000006, 0x00000018, 0x00000017, 0x00050080, 0x00000006, 0x00000019, 0x0000000f,
    0x00000018, 0x0003003e, 0x00000008, 0x00000019, 0x0004003d, 0x00000006, 0x0000001a, 0x00000008,
    0x00060041, 0x00000016, 0x0000001c, 0x00000013, 0x0000001b, 0x0000000c, 0x0004003d, 0x00000006,
    0x0000001d, 0x0000001c, 0x000500ae, 0x0000001e, 0x0000001f, 0x0000001a, 0x0000001d, 0x000300f7,
    0x00000021, 0x00000000, 0x000400fa, 0x0000001f, 0x00000020, 0x00000021, 0x000200f8, 0x00000020,
    0x000100fd, 0x000200f8, 0x00000021, 0x00060041, 0x0000002f, 0x00000030, 0x0000002e, 0x0000001b,
    0x00000015, 0x0004003d, 0x00000028, 0x00000031, 0x00000030, 0x0004003d, 0x00000006, 0x00000032,
    0x00000008, 0x00060041, 0x00000034, 0x00000035, 0x0000002e, 0x0000001b, 0x00000033, 0x0004003d,
    0x00000006, 0x00000036, 0x00000035, 0x00050084, 0x00000006, 0x00000037, 0x00000032, 0x00000036,
    0x00060041, 0x00000038, 0x00000039, 0x0000002e, 0x00000015, 0x00000015, 0x0004003d, 0x00000023,
    0x0000003a, 0x00000039, 0x0004003d, 0x00000006, 0x0000003b, 0x00000008, 0x00060041, 0x00000034,
    0x0000003c, 0x0000002e, 0x00000015, 0x00000033, 0x0004003d, 0x00000006, 0x0000003d, 0x0000003c,
    0x00050084, 0x00000006, 0x0000003e, 0x0000003b, 0x0000003d, 0x00060041, 0x0000003f, 0x00000040,
    0x0000003a, 0x00000015, 0x0000003e, 0x0006003d, 0x00000025, 0x00000041, 0x00000040, 0x00000002,
    0x00000004, 0x00050041, 0x00000042, 0x00000043, 0x0000002e, 0x00000033, 0x0004003d, 0x00000025,
    0x00000044, 0x00000043, 0x00050085, 0x00000025, 0x00000045, 0x00000041, 0x00000044, 0x00050081,
    0x00000025, 0x00000047, 0x00000045, 0x00000046, 0x00060041, 0x0000003f, 0x00000048, 0x00000031,
    0x00000015, 0x00000037, 0x0005003e, 0x00000048, 0x00000047, 0x00000002, 0x00000004, 0x000100fd,
    0x00010038,
};

static float *input(void)
{
    static float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 97) - 40.0f;
    return x;
}

/* Runs k over x (y = f(x)) and checks y[i] == mul * x[i] + add. */
static void run_check(hpl_context *ctx, hpl_kernel k, const hpl_arg *extra, size_t nextra, float mul, float add,
                      const char *what)
{
    hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0), y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    const float *hx = input();
    CHECK_OK(hpl_array_write(ctx, x, hx, sizeof(float) * N));
    hpl_arg args[3] = {hpl_arr(x), hpl_arr(y)};
    for (size_t i = 0; i < nextra && i < 1; i++)
        args[2 + i] = extra[i];
    CHECK_OK(hpl_eval(ctx, k, NULL, args, 2 + nextra));
    const float *py = th_access(ctx, y, HPL_READ);
    if (py) {
        int bad = 0, first = -1;
        for (int i = 0; i < N; i++)
            if (py[i] != mul * hx[i] + add && bad++ == 0)
                first = i;
        CHECK(bad == 0, "%s: %d wrong, first y[%d]=%g want %g (x=%g)", what, bad, first, first >= 0 ? py[first] : 0.0,
              first >= 0 ? mul * hx[first] + add : 0.0, first >= 0 ? hx[first] : 0.0);
    }
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
}

static void variants(hpl_context *ctx)
{
    hpl_kernel k;
    /* The variant that runs is the first whose mask has device 0's type
     * (HPL_DEVICE_CPU on Lavapipe), else the generic source. */
    hpl_device_info info;
    memset(&info, 0, sizeof info);
    CHECK_OK(hpl_device_get_info(ctx, 0, &info));
    const bool cpu = info.type & HPL_DEVICE_CPU, gpu = info.type & HPL_DEVICE_GPU;
    /* A CPU variant: it runs on Lavapipe. */
    if (CHECK_OK(hpl_kernel_create(ctx,
                                   &(hpl_kernel_desc){.source.glsl = SCALE_SRC("3.0"),
                                                      .variants = {{HPL_DEVICE_CPU, {.glsl = SCALE_SRC("2.0")}}}},
                                   &k))) {
        run_check(ctx, k, NULL, 0, cpu ? 2.0f : 3.0f, 0.0f, "CPU variant (generic off a CPU)");
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    /* Only a GPU variant: the generic source runs on the CPU. */
    if (CHECK_OK(hpl_kernel_create(ctx,
                                   &(hpl_kernel_desc){.source.glsl = SCALE_SRC("3.0"),
                                                      .variants = {{HPL_DEVICE_GPU, {.glsl = SCALE_SRC("5.0")}}}},
                                   &k))) {
        run_check(ctx, k, NULL, 0, gpu ? 5.0f : 3.0f, 0.0f, "GPU-only variant (generic off a GPU)");
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    /* GPU first, then CPU: the CPU one. */
    if (CHECK_OK(hpl_kernel_create(ctx,
                                   &(hpl_kernel_desc){.source.glsl = SCALE_SRC("3.0"),
                                                      .variants = {{HPL_DEVICE_GPU, {.glsl = SCALE_SRC("5.0")}},
                                                                   {HPL_DEVICE_CPU, {.glsl = SCALE_SRC("2.0")}}}},
                                   &k))) {
        run_check(ctx, k, NULL, 0, gpu ? 5.0f : cpu ? 2.0f : 3.0f, 0.0f, "GPU then CPU variant");
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    /* Whatever the device: a variant for every other type is passed over,
     * and one for its own type, after it, runs. */
    if (CHECK_OK(hpl_kernel_create(ctx,
                                   &(hpl_kernel_desc){.source.glsl = SCALE_SRC("3.0"),
                                                      .variants = {{HPL_DEVICE_ANY & ~info.type,
                                                                    {.glsl = SCALE_SRC("5.0")}},
                                                                   {info.type, {.glsl = SCALE_SRC("2.0")}}}},
                                   &k))) {
        run_check(ctx, k, NULL, 0, 2.0f, 0.0f, "variant for the other types, then the device's own");
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    /* The first variant that includes the type wins. */
    if (CHECK_OK(hpl_kernel_create(ctx,
                                   &(hpl_kernel_desc){.source.glsl = SCALE_SRC("3.0"),
                                                      .variants = {{HPL_DEVICE_ANY, {.glsl = SCALE_SRC("7.0")}},
                                                                   {HPL_DEVICE_CPU, {.glsl = SCALE_SRC("2.0")}}}},
                                   &k))) {
        run_check(ctx, k, NULL, 0, 7.0f, 0.0f, "ANY then CPU variant (first match)");
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    /* A variant given as SPIR-V words. */
    if (CHECK_OK(hpl_kernel_create(
            ctx,
            &(hpl_kernel_desc){
                .source.glsl = "#include <hplvk.glsl>\n"
                               "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; float s; };\n"
                               "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = -hpl_at(x, i); }\n",
                .variants = {{info.type,
                              {.spirv = spv_kernel, .spirv_words = sizeof spv_kernel / sizeof spv_kernel[0]}}}},
            &k))) {
        hpl_arg s = hpl_f32(4.0f);
        run_check(ctx, k, &s, 1, 4.0f, 0.5f, "variant for the device's type (CPU on Lavapipe) from SPIR-V words");
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }

    /* Variants whose arguments differ from the generic source. */
    static const int codes[] = {HPL_ERROR_ARGUMENT_MISMATCH, HPL_ERROR_KERNEL_SIGNATURE};
    k.id = 4242;
    static const struct {
        uint32_t type;
        const char *glsl;
    } mismatched[] = {
        {HPL_DEVICE_CPU, "#include <hplvk.glsl>\n"
                         "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; int extra; };\n"
                         "void main() { hpl_at(y, hpl_global_id.x) = float(extra); }\n"},
        {HPL_DEVICE_GPU, "#include <hplvk.glsl>\n"
                         "hpl_args { hpl_in(int, 1) x; hpl_out(float, 1) y; };\n"
                         "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = float(hpl_at(x, i)); }\n"},
        {HPL_DEVICE_CPU, "#include <hplvk.glsl>\n"
                         "hpl_args { hpl_inout(float, 1) x; hpl_out(float, 1) y; };\n"
                         "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i); hpl_at(x, i) = 0.0; }\n"},
    };
    for (size_t m = 0; m < sizeof mismatched / sizeof mismatched[0]; m++)
        CHECK_FAILS_ANY(hpl_kernel_create(ctx,
                                          &(hpl_kernel_desc){.source.glsl = SCALE_SRC("3.0"),
                                                             .variants = {{mismatched[m].type, {.glsl = mismatched[m].glsl}}}},
                                          &k),
                        codes, 2, "variant");
    CHECK(k.id == 4242, "hpl_kernel_create changed its out-parameter on failure");
    /* A variant that does not compile: the error names it. */
    CHECK_FAILS(hpl_kernel_create(ctx,
                                  &(hpl_kernel_desc){.source.glsl = SCALE_SRC("3.0"),
                                                     .variants = {{HPL_DEVICE_CPU,
                                                                   {.glsl = "#include <hplvk.glsl>\n"
                                                                            "this is not glsl;\n",
                                                                    .name = "cpu_variant.comp"}}}},
                                  &k),
                HPL_ERROR_COMPILE, "cpu_variant.comp:2:");
}

static void files_includes_defines(hpl_context *ctx)
{
    char *dir = th_tmpdir("kernels");
    if (!CHECK(dir != NULL, "no temporary directory"))
        return;
    char path[512], helper[512], broken[512], incdir[512], inchelper[512];
    snprintf(helper, sizeof helper, "%s/helper.glsl", dir);
    snprintf(path, sizeof path, "%s/main.comp", dir);
    snprintf(broken, sizeof broken, "%s/broken.comp", dir);
    const char *helper_src = "float helper_scale(float v) { return v * 4.0 + 1.0; }\n";
    const char *main_src = "#include <hplvk.glsl>\n"
                           "#include \"helper.glsl\"\n"
                           "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; };\n"
                           "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = helper_scale(hpl_at(x, i)); }\n";
    const char *broken_src = "#include <hplvk.glsl>\n"
                             "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; };\n"
                             "void main() { hpl_at(y, 0) = no_such_function(1.0); }\n";
    CHECK(th_write_file(helper, helper_src, strlen(helper_src)), "write %s", helper);
    CHECK(th_write_file(path, main_src, strlen(main_src)), "write %s", path);
    CHECK(th_write_file(broken, broken_src, strlen(broken_src)), "write %s", broken);

    /* From a file; "helper.glsl" found in the file's directory. */
    hpl_kernel k;
    if (CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.path = path}, &k))) {
        run_check(ctx, k, NULL, 0, 4.0f, 1.0f, "kernel from a file with #include \"helper.glsl\"");
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    /* A bare file name, as in the README (.path = "saxpy.comp"): the file's
     * directory is the working directory, searched for "helper.glsl". */
    char cwd[4096];
    if (CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd") && CHECK(chdir(dir) == 0, "chdir %s", dir)) {
        if (CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.path = "main.comp"}, &k))) {
            run_check(ctx, k, NULL, 0, 4.0f, 1.0f, "kernel from a bare file name with #include \"helper.glsl\"");
            CHECK_OK(hpl_kernel_destroy(ctx, k));
        }
        if (CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.path = "./main.comp"}, &k))) {
            run_check(ctx, k, NULL, 0, 4.0f, 1.0f, "kernel from ./main.comp");
            CHECK_OK(hpl_kernel_destroy(ctx, k));
        }
        /* A missing include says where it looked. */
        const char *lost_src = "#include <hplvk.glsl>\n#include \"lost.glsl\"\nvoid main() { }\n";
        CHECK(th_write_file("lost.comp", lost_src, strlen(lost_src)), "write lost.comp");
        CHECK_FAILS(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.path = "lost.comp"}, &k), HPL_ERROR_COMPILE,
                    "lost.glsl");
        CHECK_MSG("searched .");
        CHECK(chdir(cwd) == 0, "chdir %s", cwd);
    }
    /* A compile error in a file names the path and the line. */
    char want[600];
    snprintf(want, sizeof want, "broken.comp:3:");
    CHECK_FAILS(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.path = broken}, &k), HPL_ERROR_COMPILE, want);
    CHECK_MSG("no_such_function");

    /* From text, with include_dirs. */
    snprintf(incdir, sizeof incdir, "%s/inc", dir);
    snprintf(inchelper, sizeof inchelper, "%s/inc/helper2.glsl", dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", incdir);
    CHECK(system(cmd) == 0, "%s", cmd);
    const char *helper2 = "#define HELPER2_OFFSET 9.0\n";
    CHECK(th_write_file(inchelper, helper2, strlen(helper2)), "write %s", inchelper);
    const char *text = "#include <hplvk.glsl>\n"
                       "#include \"helper2.glsl\"\n"
                       "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; };\n"
                       "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i) * SCALE + HELPER2_OFFSET\n"
                       "#ifdef ADD_ONE\n"
                       "    + 1.0\n"
                       "#endif\n"
                       "    ; }\n";
    const char *const dirs[] = {incdir, NULL};
    if (CHECK_OK(hpl_kernel_create(ctx,
                                   &(hpl_kernel_desc){.source.glsl = text,
                                                      .include_dirs = dirs,
                                                      .defines = (const char *const[]){"SCALE=6.0", "ADD_ONE", NULL}},
                                   &k))) {
        run_check(ctx, k, NULL, 0, 6.0f, 10.0f, "text with include_dirs and defines");
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    /* Same text, other defines: another kernel, not the cached one. */
    if (CHECK_OK(hpl_kernel_create(ctx,
                                   &(hpl_kernel_desc){.source.glsl = text,
                                                      .include_dirs = dirs,
                                                      .defines = (const char *const[]){"SCALE=2.0", NULL}},
                                   &k))) {
        run_check(ctx, k, NULL, 0, 2.0f, 9.0f, "same text, different defines");
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    /* Without the include directory the include is not found. */
    CHECK_FAILS(hpl_kernel_create(ctx,
                                  &(hpl_kernel_desc){.source.glsl = text,
                                                     .defines = (const char *const[]){"SCALE=6.0", NULL}},
                                  &k),
                HPL_ERROR_COMPILE, "helper2.glsl");

    /* SPIR-V words, and the same words from a .spv file. */
    char spvpath[512];
    snprintf(spvpath, sizeof spvpath, "%s/kernel.spv", dir);
    CHECK(th_write_file(spvpath, spv_kernel, sizeof spv_kernel), "write %s", spvpath);
    hpl_arg s = hpl_f32(-1.5f);
    if (CHECK_OK(hpl_kernel_create(
            ctx, &(hpl_kernel_desc){.source = {.spirv = spv_kernel, .spirv_words = sizeof spv_kernel / 4}}, &k))) {
        run_check(ctx, k, &s, 1, -1.5f, 0.5f, "kernel from SPIR-V words");
        hpl_arg_info ai;
        CHECK(hpl_kernel_arg_count(ctx, k) == 3, "SPIR-V kernel: %d arguments", hpl_kernel_arg_count(ctx, k));
        if (CHECK_OK(hpl_kernel_get_arg_info(ctx, k, 2, &ai)))
            CHECK(strcmp(ai.name, "s") == 0 && ai.kind == HPL_ARG_SCALAR && ai.type == HPL_FLOAT32 && ai.offset == 96,
                  "SPIR-V kernel argument 2: name \"%s\" kind %d type %d offset %u", ai.name, ai.kind, ai.type,
                  ai.offset);
        if (CHECK_OK(hpl_kernel_get_arg_info(ctx, k, 0, &ai)))
            CHECK(strcmp(ai.name, "x") == 0 && ai.kind == HPL_ARG_ARRAY && ai.access == HPL_READ && ai.ndims == 1,
                  "SPIR-V kernel argument 0: name \"%s\" kind %d access %d ndims %d", ai.name, ai.kind, ai.access,
                  ai.ndims);
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    if (CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.path = spvpath}, &k))) {
        run_check(ctx, k, &s, 1, -1.5f, 0.5f, "kernel from a .spv file");
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    th_rmtree(dir);
    free(dir);
}

/* The argument block holds 16 KiB (hplvk.h chapter 5): a scalar far into
 * it is passed (it used to read 0 past 4 KiB), one past it is refused at
 * creation, naming it and the limit (past 64 KiB, eval used to overflow the
 * heap). */
/* y = 2x + add, with the scalar add at byte `offset` of the block. */
static void far_source(char *src, size_t size, const char *offset)
{
    snprintf(src, size,
             "#include <hplvk.glsl>\n"
             "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; layout(offset = %s) float add; };\n"
             "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = 2.0 * hpl_at(x, i) + add; }\n",
             offset);
}

static void far_arguments(hpl_context *ctx)
{
    static const char *const offsets[] = {"4096", "8192", "16376"};
    for (size_t i = 0; i < 3; i++) {
        char src[512];
        far_source(src, sizeof src, offsets[i]);
        hpl_kernel k;
        if (!CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.glsl = src}, &k)))
            continue;
        hpl_arg_info ai;
        if (CHECK_OK(hpl_kernel_get_arg_info(ctx, k, 2, &ai)))
            CHECK(ai.offset == (uint32_t)atoi(offsets[i]), "add at %u, want %s", ai.offset, offsets[i]);
        hpl_arg add = hpl_f32(7.0f);
        char what[64];
        snprintf(what, sizeof what, "a scalar at offset %s", offsets[i]);
        run_check(ctx, k, &add, 1, 2.0f, 7.0f, what);
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
    static const char *const too_far[] = {"16384", "65536", "1073741824"};
    for (size_t i = 0; i < 3; i++) {
        char src[512];
        far_source(src, sizeof src, too_far[i]);
        hpl_kernel k = {777};
        CHECK_FAILS(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = src, .name = "far.comp"}}, &k),
                    HPL_ERROR_KERNEL_SIGNATURE, "'add'");
        CHECK_MSG("16384 bytes");
        CHECK_MSG("far.comp");
        CHECK(k.id == 777, "hpl_kernel_create changed its out-parameter on failure");
    }
}

/* Shared memory past the device's maxComputeSharedMemorySize is refused
 * before the driver sees the kernel (the validation layer would report it;
 * a driver might fail at dispatch), naming the sizes; within it, it runs. */
static void shared_memory(hpl_context *ctx)
{
    hpl_device_info info;
    CHECK_OK(hpl_device_get_info(ctx, 0, &info));
    static const char *const sizes[] = {"64", "1000000"};
    for (int i = 0; i < 2; i++) {
        char src[768];
        snprintf(src, sizeof src,
                 "#include <hplvk.glsl>\n"
                 "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; };\n"
                 "layout(local_size_x = 64) in;\n"
                 "shared float tile[%s];\n"
                 "void main() { uint l = gl_LocalInvocationID.x; tile[l] = hpl_at(x, hpl_global_id.x); barrier();\n"
                 "              hpl_at(y, hpl_global_id.x) = 2.0 * tile[l] + 1.0; }\n",
                 sizes[i]);
        hpl_kernel k;
        if (!CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = src, .name = "shared.comp"}}, &k)))
            continue;
        if (i == 0) {
            run_check(ctx, k, NULL, 0, 2.0f, 1.0f, "64 floats of shared memory");
        } else {
            hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0), y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
            CHECK_FAILS(hpl_eval(ctx, k, &(hpl_launch){.global = {N / 64 * 64}}, HPL_ARGS(hpl_arr(x), hpl_arr(y))),
                        HPL_ERROR_TOO_LARGE, "4000000 bytes");
            CHECK_MSG("shared");
            CHECK_MSG(info.name);
            CHECK_OK(hpl_array_destroy(ctx, x));
            CHECK_OK(hpl_array_destroy(ctx, y));
        }
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
}

/* Raw SPIR-V with a fixed local size: reflected like a prelude kernel, runs,
 * keeps its size, and refuses another launch.local (hplvk.h chapter 5). */
static void raw_spirv_fixed_size(hpl_context *ctx)
{
    hpl_kernel k;
    if (!CHECK_OK(hpl_kernel_create(
            ctx, &(hpl_kernel_desc){.source = {.spirv = raw_fixed_spv, .spirv_words = sizeof raw_fixed_spv / 4}}, &k)))
        return;
    CHECK(hpl_kernel_arg_count(ctx, k) == 3, "raw SPIR-V: %d arguments, want 3", hpl_kernel_arg_count(ctx, k));
    static const struct {
        const char *name;
        hpl_arg_kind kind;
        hpl_access access;
        uint32_t offset;
    } want[] = {{"src", HPL_ARG_ARRAY, HPL_READ, 0}, {"dst", HPL_ARG_ARRAY, HPL_WRITE, 48}, {"k", HPL_ARG_SCALAR, 0, 96}};
    for (int i = 0; i < 3; i++) {
        hpl_arg_info ai;
        memset(&ai, 0, sizeof ai);
        if (!CHECK_OK(hpl_kernel_get_arg_info(ctx, k, i, &ai)))
            continue;
        CHECK(strcmp(ai.name, want[i].name) == 0 && ai.kind == want[i].kind && ai.type == HPL_FLOAT32 &&
                  ai.offset == want[i].offset,
              "raw SPIR-V arg %d: name \"%s\" kind %d type %s offset %u, want \"%s\" kind %d float offset %u", i,
              ai.name, ai.kind, hpl_type_name(ai.type), ai.offset, want[i].name, want[i].kind, want[i].offset);
        if (want[i].kind == HPL_ARG_ARRAY)
            CHECK(ai.ndims == 1 && ai.access == want[i].access, "raw SPIR-V arg %d (%s): ndims %d access %d", i,
                  want[i].name, ai.ndims, ai.access);
    }
    uint32_t ls[3] = {0, 0, 0};
    bool choosable = true;
    if (CHECK_OK(hpl_kernel_get_local_size(ctx, k, ls, &choosable))) {
        CHECK(ls[0] == 16 && ls[1] == 1 && ls[2] == 1, "raw SPIR-V local size %u,%u,%u, want 16,1,1", ls[0], ls[1],
              ls[2]);
        CHECK(!choosable, "raw SPIR-V with a fixed local size reported as choosable");
    }
    hpl_arg s = hpl_f32(3.0f);
    run_check(ctx, k, &s, 1, 3.0f, 0.25f, "raw SPIR-V with a fixed local size");
    /* Another local size cannot be applied to a fixed-size module. */
    hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0), y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    static const int codes[] = {HPL_ERROR_INVALID_ARGUMENT, HPL_ERROR_UNSUPPORTED, HPL_ERROR_ARGUMENT_MISMATCH,
                                HPL_ERROR_KERNEL_SIGNATURE};
    CHECK_FAILS_ANY(hpl_eval(ctx, k, &(hpl_launch){.local = {32, 1, 1}}, HPL_ARGS(hpl_arr(x), hpl_arr(y), s)), codes,
                    4, "local");
    CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){.local = {16, 1, 1}}, HPL_ARGS(hpl_arr(x), hpl_arr(y), s)));
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

static const char *info_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 2) c; hpl_in(float, 2) a; hpl_inout(int, 1) hist; int p; double d; uint64_t big;\n"
    "           hpl_in(uint64_t, 3) vol; float last; };\n"
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    hpl_at2(c, id.x, id.y) = hpl_at2(a, id.x, id.y) + float(p) + float(d) + float(big)\n"
    "        + float(hpl_at3(vol, 0, 0, 0)) + last;\n"
    "    if (id.x == 0 && id.y == 0) hpl_at(hist, 0) += 1;\n"
    "}\n";

static const char *ls_src =
    "#include <hplvk.glsl>\n"
    "layout(local_size_x = 16, local_size_y = 8) in;\n"
    "hpl_args { hpl_out(uint, 2) o; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(o, id.x, id.y) = gl_WorkGroupSize.x * 100u + gl_WorkGroupSize.y; }\n";

/* No declared local size: the library's choice, read back in every cell. */
static const char *chosen_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 3) o; };\n"
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    hpl_at3(o, id.x, id.y, id.z) = (gl_WorkGroupSize.x * 1000u + gl_WorkGroupSize.y) * 1000u + gl_WorkGroupSize.z;\n"
    "}\n";

static const char *noargs_src =
    "#include <hplvk.glsl>\n"
    "void main() { }\n";

static void reflection(hpl_context *ctx)
{
    hpl_kernel k = th_kernel(ctx, info_src);
    /* Offsets are the std140 offsets of the hpl_args members (checked with
     * spirv-dis on glslc's output). */
    static const struct {
        const char *name;
        hpl_arg_kind kind;
        hpl_type type;
        int ndims;
        hpl_access access;
        uint32_t offset;
    } want[] = {
        {"c", HPL_ARG_ARRAY, HPL_FLOAT32, 2, HPL_WRITE, 0},
        {"a", HPL_ARG_ARRAY, HPL_FLOAT32, 2, HPL_READ, 64},
        {"hist", HPL_ARG_ARRAY, HPL_INT32, 1, HPL_READ_WRITE, 128},
        {"p", HPL_ARG_SCALAR, HPL_INT32, 0, 0, 176},
        {"d", HPL_ARG_SCALAR, HPL_FLOAT64, 0, 0, 184},
        {"big", HPL_ARG_SCALAR, HPL_UINT64, 0, 0, 192},
        {"vol", HPL_ARG_ARRAY, HPL_UINT64, 3, HPL_READ, 208},
        {"last", HPL_ARG_SCALAR, HPL_FLOAT32, 0, 0, 336},
    };
    int n = hpl_kernel_arg_count(ctx, k);
    CHECK(n == 8, "hpl_kernel_arg_count = %d, want 8", n);
    for (int i = 0; i < 8 && i < n; i++) {
        hpl_arg_info ai;
        memset(&ai, 0, sizeof ai);
        if (!CHECK_OK(hpl_kernel_get_arg_info(ctx, k, i, &ai)))
            continue;
        CHECK(strcmp(ai.name, want[i].name) == 0, "arg %d: name \"%s\", want \"%s\"", i, ai.name, want[i].name);
        CHECK(ai.kind == want[i].kind, "arg %d (%s): kind %d, want %d", i, want[i].name, ai.kind, want[i].kind);
        CHECK(ai.type == want[i].type, "arg %d (%s): type %s, want %s", i, want[i].name, hpl_type_name(ai.type),
              hpl_type_name(want[i].type));
        CHECK(ai.offset == want[i].offset, "arg %d (%s): offset %u, want %u", i, want[i].name, ai.offset,
              want[i].offset);
        if (want[i].kind == HPL_ARG_ARRAY) {
            CHECK(ai.ndims == want[i].ndims, "arg %d (%s): ndims %d, want %d", i, want[i].name, ai.ndims,
                  want[i].ndims);
            CHECK(ai.access == want[i].access, "arg %d (%s): access %d, want %d", i, want[i].name, ai.access,
                  want[i].access);
        }
    }
    uint32_t ls[3] = {0, 0, 0};
    bool choosable = false;
    if (CHECK_OK(hpl_kernel_get_local_size(ctx, k, ls, &choosable))) {
        CHECK(ls[0] == 1 && ls[1] == 1 && ls[2] == 1, "undeclared local size reported as %u,%u,%u, want 1,1,1", ls[0],
              ls[1], ls[2]);
        CHECK(choosable, "undeclared local size must be choosable");
    }
    /* And it runs: c = a + p + d + big + vol[0,0,0] + last, hist[0] += 1. */
    hpl_array c = th_array(ctx, HPL_FLOAT32, 5, 6, 0), a = th_array(ctx, HPL_FLOAT32, 5, 6, 0);
    hpl_array hist = th_array(ctx, HPL_INT32, 3, 0, 0), vol = th_array(ctx, HPL_UINT64, 2, 2, 2);
    float ha[30];
    for (int i = 0; i < 30; i++)
        ha[i] = (float)i;
    CHECK_OK(hpl_array_write(ctx, a, ha, sizeof ha));
    uint64_t v = 1000;
    CHECK_OK(hpl_array_fill(ctx, vol, &v, 0));
    CHECK_OK(hpl_eval(ctx, k, NULL,
                      HPL_ARGS(hpl_arr(c), hpl_arr(a), hpl_arr(hist), hpl_i32(-3), hpl_f64(0.5), hpl_u64(20),
                               hpl_arr(vol), hpl_f32(0.25f))));
    const float *pc = th_access(ctx, c, HPL_READ);
    if (pc) {
        int bad = 0;
        for (int i = 0; i < 30; i++)
            bad += pc[i] != ha[i] - 3.0f + 0.5f + 20.0f + 1000.0f + 0.25f;
        CHECK(bad == 0, "reflection kernel: %d wrong (c[0]=%g)", bad, pc[0]);
    }
    const int32_t *ph = th_access(ctx, hist, HPL_READ);
    if (ph)
        CHECK(ph[0] == 1 && ph[1] == 0 && ph[2] == 0, "hist = %d,%d,%d want 1,0,0", ph[0], ph[1], ph[2]);
    CHECK_OK(hpl_array_destroy(ctx, c));
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, hist));
    CHECK_OK(hpl_array_destroy(ctx, vol));
    CHECK_OK(hpl_kernel_destroy(ctx, k));

    /* Declared 2-D local size. */
    hpl_kernel kl = th_kernel(ctx, ls_src);
    if (CHECK_OK(hpl_kernel_get_local_size(ctx, kl, ls, &choosable))) {
        CHECK(ls[0] == 16 && ls[1] == 8 && ls[2] == 1, "declared local size reported as %u,%u,%u, want 16,8,1", ls[0],
              ls[1], ls[2]);
        CHECK(!choosable, "a declared local size reported as choosable");
    }
    hpl_array o = th_array(ctx, HPL_UINT32, 20, 10, 0);
    CHECK_OK(hpl_eval(ctx, kl, NULL, HPL_ARGS(hpl_arr(o))));
    const uint32_t *po = th_access(ctx, o, HPL_READ);
    if (po) {
        int bad = 0;
        for (int i = 0; i < 200; i++)
            bad += po[i] != 1608u;
        CHECK(bad == 0, "declared 16x8 local size: %d elements saw another size (o[0]=%u)", bad, po[0]);
    }
    CHECK_OK(hpl_array_destroy(ctx, o));
    CHECK_OK(hpl_kernel_destroy(ctx, kl));

    /* No arguments at all: runs over an explicit domain. */
    hpl_kernel kn = th_kernel(ctx, noargs_src);
    CHECK(hpl_kernel_arg_count(ctx, kn) == 0, "argument-less kernel: %d arguments", hpl_kernel_arg_count(ctx, kn));
    CHECK_OK(hpl_eval(ctx, kn, &(hpl_launch){.global = {64}}, NULL, 0));
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_kernel_destroy(ctx, kn));
}

/* The library's local size puts up to 64 invocations along the domain's
 * last extended dimension (contiguous elements, row-major) before the
 * others, 256 in all: {2, 128} for a 2-D domain, not 16 x 16 (a subgroup
 * then reads one row's consecutive elements). */
static void chosen_local_size(hpl_context *ctx)
{
    hpl_device_info info;
    if (!CHECK_OK(hpl_device_get_info(ctx, 0, &info)) || info.max_workgroup_invocations < 256) {
        th_note("device allows fewer than 256 invocations: the choice is smaller, not checked here");
        return;
    }
    static const struct {
        uint64_t dims[3];
        uint32_t want[3];
    } cases[] = {
        {{300, 500, 1}, {2, 128, 1}}, {{20, 30, 70}, {2, 2, 64}}, {{1, 5000, 1}, {1, 256, 1}},
        {{5000, 1, 1}, {256, 1, 1}},  {{40, 3, 1}, {64, 4, 1}},   {{3, 40, 1}, {4, 64, 1}},
    };
    hpl_kernel k = th_kernel(ctx, chosen_src);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const uint64_t *d = cases[c].dims;
        hpl_array o = th_array(ctx, HPL_UINT32, d[0], d[1], d[2]);
        uint64_t n = d[0] * d[1] * d[2];
        uint32_t *got = malloc(n * sizeof *got);
        const uint32_t *w = cases[c].want;
        uint32_t want = (w[0] * 1000u + w[1]) * 1000u + w[2];
        if (got && CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(o)))) &&
            CHECK_OK(hpl_array_read(ctx, o, got, n * sizeof *got))) {
            uint64_t bad = 0;
            for (uint64_t i = 0; i < n; i++)
                bad += got[i] != want;
            CHECK(bad == 0, "domain %llux%llux%llu: local size %u (x*1e6 + y*1e3 + z) in %llu cells, want %u",
                  (unsigned long long)d[0], (unsigned long long)d[1], (unsigned long long)d[2], got[0],
                  (unsigned long long)bad, want);
        }
        free(got);
        CHECK_OK(hpl_array_destroy(ctx, o));
    }
}

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    variants(ctx);
    files_includes_defines(ctx);
    reflection(ctx);
    raw_spirv_fixed_size(ctx);
    far_arguments(ctx);
    shared_memory(ctx);
    chosen_local_size(ctx);
    return th_finish(ctx);
}
