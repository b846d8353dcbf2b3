#version 450
#extension GL_GOOGLE_include_directive : require
// Self-test: raw_range.glsl's raw_key_range, one workgroup a case, so the
// test suite can check each edge against the host's IEEE division.
#include "gpu_ids.h"
layout(constant_id = SPEC_WG) const uint WG = 64;
layout(local_size_x_id = SPEC_WG) in;
#include "raw_range.glsl"

layout(push_constant) uniform Push { uint count; } pc;
layout(std430, set = 0, binding = 0) readonly buffer Inputs { uint inputs[]; };   // [scale, lo, hi]
layout(std430, set = 0, binding = 1) writeonly buffer Outputs { uint outputs[]; }; // [found, klo, khi]

void main() {
    uint i = gl_WorkGroupID.x;
    if (i >= pc.count) return;  // uniform
    uint klo, khi;
    bool found = raw_key_range(uintBitsToFloat(inputs[i * 3u]), inputs[i * 3u + 1u], inputs[i * 3u + 2u], klo, khi);
    if (gl_LocalInvocationID.x == 0u) {
        outputs[i * 3u] = found ? 1u : 0u;
        outputs[i * 3u + 1u] = klo;
        outputs[i * 3u + 2u] = khi;
    }
}
