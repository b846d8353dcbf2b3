#version 450
#extension GL_GOOGLE_include_directive : require
// Pass 1 over the row (one workgroup per row chunk): the chunk's maximal key and
// its first id, the smallest finite key, finite count, NaN/+Inf detection and
// logits the temperature division overflows. Keys are of the scaled logits.
// A row holding NaN or +Inf is reported by the later passes, never sampled.
#include "common.glsl"
#include "reduce.glsl"

void main() {
    uint row = gl_WorkGroupID.y;
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);

    uint max_key = 0u, argmax = 0xFFFFFFFFu, min_finite = 0xFFFFFFFFu;
    uint bad = 0u, first_bad = 0xFFFFFFFFu, finite = 0u, overflow = 0u;
    float scale = row_scale(row);
    for (uint i = begin + t; i < end; i += WG) {
        float f = logits[row * pc.stride + i];
        if (isnan(f) || (isinf(f) && f > 0.0)) {
            bad += 1u;
            first_bad = min(first_bad, i);
            continue;
        }
        float x = scaled_logit(f, scale);
        if (!isinf(f) && isinf(x)) overflow += 1u;  // the temperature division overflowed
        uint k = sieve_key(x);
        if (k > max_key) {  // ids grow within a thread: the first maximal stays
            max_key = k;
            argmax = i;
        }
        if (!isinf(x)) {
            min_finite = min(min_finite, k);
            finite += 1u;
        }
    }
    uvec2 am = wg_reduce_argmax(max_key, argmax);
    uvec2 mf = wg_reduce_min_sum(min_finite, finite);
    uvec2 bd = wg_reduce_min_sum(first_bad, bad);
    uvec2 of = wg_reduce_min_sum(0u, overflow);
    if (t == 0u) {
        uint o = (row * pc.n_chunks + chunk) * CHUNK_STRIDE;
        chunk_stats[o + C_MAX_KEY] = am.x;
        chunk_stats[o + C_ARGMAX] = am.y;
        chunk_stats[o + C_MIN_FINITE_KEY] = mf.x;
        chunk_stats[o + C_BAD] = bd.y;
        chunk_stats[o + C_FIRST_BAD] = bd.x;
        chunk_stats[o + C_FINITE] = mf.y;
        chunk_stats[o + C_OVERFLOW] = of.y;
    }
}
