#version 450
#extension GL_GOOGLE_include_directive : require
// One radix level over the row chunk (one workgroup per row chunk): for the keys
// that still match the chosen prefix, the count and the exact 64-bit mass per
// 8-bit digit. Level 0 derives its state from the chunk statistics; later levels
// read what mass_scan chose. A resolved row returns at once.
#include "common.glsl"
#include "u64.glsl"
#include "row.glsl"

shared uint h_count[DIGITS];
shared uint h_lo[DIGITS];
shared uint h_hi[DIGITS];

void main() {
    uint row = gl_WorkGroupID.y;
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;

    uint prefix, lo, hi, max_key;
    if (pc.level == 0u) {
        RowStats s = merge_chunk_stats(row);
        if (row_status(s) != STATUS_OK || row_greedy(row)) return;  // uniform in the workgroup
        max_key = s.max_key;
        prefix = s.max_key;
        lo = first_level_lo(s);
        hi = lo + 8u;
    } else {
        uint o = row * ROW_STRIDE;
        if (row_state[o + R_PHASE] != PHASE_ACTIVE) return;       // uniform in the workgroup
        max_key = row_state[o + R_MAX_KEY];
        prefix = row_state[o + R_PREFIX];
        lo = row_state[o + R_LO];
        hi = row_state[o + R_HI];
    }
    float scale = row_scale(row);
    float max_scaled = sieve_key_value(max_key);
    uint digit_mask = (1u << (hi - lo)) - 1u;

    for (uint d = t; d < DIGITS; d += WG) {
        h_count[d] = 0u;
        h_lo[d] = 0u;
        h_hi[d] = 0u;
    }
    barrier();

    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);
    for (uint i = begin + t; i < end; i += WG) {
        float x = scaled_logit(logits[row * pc.stride + i], scale);
        uint k = sieve_key(x);
        if (!same_above(k, prefix, hi)) continue;
        uint d = (k >> lo) & digit_mask;
        atomicAdd(h_count[d], 1u);
        uvec2 q = sieve_mass(x, max_scaled);
        if (q != uvec2(0u)) U64_ATOMIC_ADD(h_lo[d], h_hi[d], q);
    }
    barrier();

    for (uint d = t; d < DIGITS; d += WG) {
        uint o = ((row * pc.n_chunks + chunk) * DIGITS + d) * 3u;
        histograms[o + 0u] = h_count[d];
        histograms[o + 1u] = h_lo[d];
        histograms[o + 2u] = h_hi[d];
    }
}
