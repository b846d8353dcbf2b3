#version 450
#extension GL_GOOGLE_include_directive : require
// Copies the members of the chosen bin (at most CAP) into the row's candidate
// buffer (one workgroup per row chunk). Their order there does not matter:
// finalize sorts them canonically.
#include "common.glsl"

void main() {
    uint row = gl_WorkGroupID.y;
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    if (row_state[o + R_PHASE] != PHASE_GATHER) return;
    uint lo = row_state[o + R_KEY_LO];
    uint hi = row_state[o + R_KEY_HI];
    float scale = row_scale(row);

    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);
    for (uint i = begin + t; i < end; i += WG) {
        float x = scaled_logit(logits[row * pc.stride + i], scale);
        uint k = sieve_key(x);
        if (isinf(x) || k < lo || k > hi) continue;
        uint slot = atomicAdd(row_state[o + R_CAND_COUNT], 1u);
        if (slot < CAP) {
            candidates[(row * CAP + slot) * 2u + 0u] = k;
            candidates[(row * CAP + slot) * 2u + 1u] = i;
        }
    }
}
