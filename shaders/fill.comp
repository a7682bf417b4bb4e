#version 460
// Fills a (sub)array viewed as 32-bit words, innermost dimension first
// (x runs along a row, words included), with a repeating pattern of one or
// two words per element.
#include <hplvk.glsl>
hpl_args { hpl_out(uint, 3) dst; uint word0; uint word1; uint words_per_element; };
void main()
{
    uvec3 id = hpl_global_id;
    hpl_at3(dst, id.x, id.y, id.z) = (words_per_element == 2u && (id.x & 1u) == 1u) ? word1 : word0;
}
