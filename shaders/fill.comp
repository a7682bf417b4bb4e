#version 460
// Fills an array, viewed as 32-bit words, with a repeating pattern of one or two words.
#include <hplvk.glsl>
hpl_args { hpl_out(uint, 1) dst; uint word0; uint word1; uint words_per_element; };
void main() { uint i = hpl_global_id.x; hpl_at(dst, i) = (words_per_element == 2u && (i & 1u) == 1u) ? word1 : word0; }
