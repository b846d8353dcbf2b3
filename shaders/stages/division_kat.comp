#version 450
#extension GL_GOOGLE_include_directive : require
// Self-test: division.glsl's correct_quotient from a start `skew` ulps away
// from the device's own quotient, so the test suite can check the correction
// against the host's IEEE division on any device (a CPU device's division is
// already exact: only a skewed start exercises the steps there).
#include "division.glsl"

#include "gpu_ids.h"
layout(constant_id = SPEC_WG) const uint WG = 64;
layout(local_size_x_id = SPEC_WG) in;
layout(push_constant) uniform Push { uint count; } pc;
layout(std430, set = 0, binding = 0) readonly buffer Inputs { uint inputs[]; };   // [x, y, skew (int)]
layout(std430, set = 0, binding = 1) writeonly buffer Outputs { uint outputs[]; }; // [x / y]

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    float x = uintBitsToFloat(inputs[i * 3u]);
    float y = uintBitsToFloat(inputs[i * 3u + 1u]);
    int skew = int(inputs[i * 3u + 2u]);
    float q = x / y;
    if (!isinf(q) && !isnan(q) && q != 0.0) q = uintBitsToFloat(uint(int(floatBitsToUint(q)) + skew));
    outputs[i] = floatBitsToUint(correct_quotient(x, y, q));
}
