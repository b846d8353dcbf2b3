#version 450
#extension GL_GOOGLE_include_directive : require  // gpu_ids.h
// Zero-copy input (sieve_sample_vulkan): reads f32, f16 or bf16 logits from the
// application's own buffer (rows `stride` elements apart, from element `first`
// of the bound range) and writes them as packed f32 [rows][vocab] into the
// engine's logits buffer, where every later pass reads them.
// Integer work only: the f32 bits are written as they are (no float op that a
// GPU could flush to zero), and f16 is widened by hand, exactly, with
// subnormals, Inf and NaN kept (the row check then rejects Inf and NaN).
// Self-contained (no common.glsl): its own bindings and push block.
// Grid: x = ceil(vocab / (WG x PER_INVOCATION)), y = rows. Each invocation
// widens PER_INVOCATION elements, WG (or WG groups of 4) apart: one workgroup
// per element group would be thousands per row, and a CPU device pays a fixed
// cost per workgroup (lavapipe: about 0.7 ms for one row of 151936 with 2374
// workgroups).

#include "gpu_ids.h"
layout(constant_id = SPEC_WG) const uint WG = 64;
// What the pipeline reads (ingest.cpp builds one per kind): a CPU device runs
// every branch under a lane mask, so the f16 widening would cost f32 rows too.
layout(constant_id = SPEC_INGEST_KIND) const uint INGEST_KIND = 0u;
const uint KIND_F32 = 0u, KIND_F16 = 1u, KIND_BF16 = 2u;
// f32 rows whose first element, stride and vocab are multiples of 4: four
// elements per load and store (a CPU device moves scalar loads lane by lane).
const uint KIND_F32X4 = 3u;
// Elements per invocation: mirrors ingest_per_invocation (ingest.cpp).
const uint PER_INVOCATION = INGEST_KIND == KIND_F32X4 ? 64u : 16u;
layout(local_size_x_id = SPEC_WG) in;
layout(push_constant) uniform Push {
    uint vocab;
    uint dtype;   // 0 f32, 1 f16, 2 bf16 (sieve_dtype; INGEST_KIND says the same)
    uint first;   // element index of row 0 in the bound range
    uint stride;  // elements between row starts
} pc;
layout(std430, set = 0, binding = 0) writeonly buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 0) writeonly buffer Dst4 { uvec4 dst4[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src4 { uvec4 src4[]; };

uint half_bits_to_float_bits(uint h) {
    const uint sign = (h & 0x8000u) << 16;
    const uint e = (h >> 10) & 0x1Fu;
    const uint m = h & 0x3FFu;
    if (e == 0x1Fu) return sign | 0x7F800000u | (m << 13);
    if (e != 0u) return sign | ((e + 112u) << 23) | (m << 13);
    if (m == 0u) return sign;
    // Subnormal: m * 2^-24 with its leading bit at p becomes 1.x * 2^(p-24).
    const uint p = uint(findMSB(m));
    return sign | ((p + 103u) << 23) | ((m << (23u - p)) & 0x7FFFFFu);
}

void main() {
    const uint row = gl_WorkGroupID.y;
    if (INGEST_KIND == KIND_F32X4) {
        const uint base = gl_WorkGroupID.x * WG * PER_INVOCATION / 4u;
        const uint end = min(base + WG * PER_INVOCATION / 4u, pc.vocab / 4u);
        const uint src_row = (pc.first + row * pc.stride) / 4u, dst_row = row * (pc.vocab / 4u);
        for (uint g = base + gl_LocalInvocationID.x; g < end; g += WG) dst4[dst_row + g] = src4[src_row + g];
        return;
    }
    const uint begin = gl_WorkGroupID.x * WG * PER_INVOCATION + gl_LocalInvocationID.x;
    const uint end = min(begin + WG * PER_INVOCATION, pc.vocab);
    for (uint i = begin; i < end; i += WG) {
        const uint e = pc.first + row * pc.stride + i;
        uint bits;
        if (INGEST_KIND == KIND_F32) {
            bits = src[e];
        } else {
            const uint word = src[e >> 1];
            const uint h = (e & 1u) != 0u ? word >> 16 : word & 0xFFFFu;
            bits = INGEST_KIND == KIND_F16 ? half_bits_to_float_bits(h) : h << 16;
        }
        dst[row * pc.vocab + i] = bits;
    }
}
