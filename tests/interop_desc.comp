// test_interop's own kernel through a descriptor set: the storage buffer is
// bound at an offset aligned to minStorageBufferOffsetAlignment, and the
// array starts `first` elements after it; v[first + i] += add.
#version 460
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, std430) buffer Data { uint v[]; } data;
layout(push_constant) uniform Push { uint first; uint count; uint add; } p;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < p.count)
        data.v[p.first + i] += p.add;
}
