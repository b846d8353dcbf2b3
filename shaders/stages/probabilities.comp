#version 450
#extension GL_GOOGLE_include_directive : require
// The final distribution over the full row (one workgroup per row chunk), for
// sieve_chain_distribution / `sieve sample --dump-dist`: p = exp(x - max) /
// total, the masses the draw uses; -1 marks masked (-inf) members,
// which are not candidates of the draw. Greedy rows: 1 for the argmax.
#include "common.glsl"
#include "u64.glsl"
#include "row.glsl"

layout(std430, set = 0, binding = BINDING_OUTPUT) writeonly buffer Probabilities { float probabilities[]; };

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    bind_row(row);
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);
    uint status = row_state[o + R_STATUS];
    bool greedy = row_greedy(row);
    uint max_key = row_state[o + R_MAX_KEY];
    uint argmax = row_state[o + R_ARGMAX];
    float scale = row_scale(row);
    float max_scaled = sieve_key_value(max_key);
    float total = uintBitsToFloat(row_state[o + R_TOTAL]);
    if (chunk == 0u && t == 0u) {  // the row's status, as sampling would report it
        results[row * RESULT_STRIDE + 3u] = status;
        results[row * RESULT_STRIDE + 7u] = row_state[o + R_FIRST_BAD];
    }
    for (uint i = begin + t; i < end; i += WG) {
        float f = row_logit(row, i);
        float p = -1.0;
        if (status == STATUS_OK) {
            if (greedy) {
                p = i == argmax ? 1.0 : -1.0;
            } else if (!isinf(f)) {
                p = exp(scaled_logit(f, scale) - max_scaled) / total;
            }
        }
        // Rows of the vocabulary, whatever the logits' stride (the app's rows
        // may be spaced wider: SetKind::AppRowsDistribution).
        probabilities[row * pc.vocab + i] = p;
    }
}
