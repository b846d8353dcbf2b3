#version 450
#extension GL_GOOGLE_include_directive : require
// Self-test: Philox4x32-10 on the device for given (counter, key) pairs, so the
// test suite can check the GPU against Random123's known-answer vectors.
#include "philox.glsl"

#include "gpu_ids.h"
layout(constant_id = SPEC_WG) const uint WG = 64;
layout(local_size_x_id = SPEC_WG) in;
layout(push_constant) uniform Push { uint count; } pc;
layout(std430, set = 0, binding = 0) readonly buffer Inputs { uint inputs[]; };   // [ctr0..3, key0..1]
layout(std430, set = 0, binding = 1) writeonly buffer Outputs { uint outputs[]; }; // [out0..3]

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    uvec4 ctr = uvec4(inputs[i * 6u], inputs[i * 6u + 1u], inputs[i * 6u + 2u], inputs[i * 6u + 3u]);
    uvec2 key = uvec2(inputs[i * 6u + 4u], inputs[i * 6u + 5u]);
    uvec4 r = philox4x32_10(ctr, key);
    outputs[i * 4u] = r.x;
    outputs[i * 4u + 1u] = r.y;
    outputs[i * 4u + 2u] = r.z;
    outputs[i * 4u + 3u] = r.w;
}
