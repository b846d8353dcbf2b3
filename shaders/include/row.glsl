// Per-row helpers shared by the passes: merging the chunk statistics, the row's
// mode (greedy or a draw), its RNG step and the first radix level.
#ifndef SIEVE_ROW_GLSL
#define SIEVE_ROW_GLSL

#include "philox.glsl"
#include "reduce.glsl"

// A chunk's statistics, for merge_chunk_stats.
void store_chunk_stats(uint row, uint chunk, RowStats s) {
    uint o = (row * pc.n_chunks + chunk) * CHUNK_STRIDE;
    chunk_stats[o + C_MAX_KEY] = s.max_key;
    chunk_stats[o + C_ARGMAX] = s.argmax;
    chunk_stats[o + C_MIN_FINITE_KEY] = s.min_finite_key;
    chunk_stats[o + C_BAD] = s.bad;
    chunk_stats[o + C_FIRST_BAD] = s.first_bad;
    chunk_stats[o + C_FINITE] = s.finite;
    chunk_stats[o + C_OVERFLOW] = s.overflow;
}

// Every workgroup that needs the row's statistics merges the (few) chunk
// results itself: cheaper than a dispatch of its own. The row's first
// `chunks` of its pc.n_chunks slots (a collect pass may split a row into
// fewer chunks than the slots its row holds: collect.glsl).
RowStats merge_chunk_stats(uint row, uint chunks) {
    RowStats s = row_stats_empty();
    for (uint c = gl_LocalInvocationID.x; c < chunks; c += WG) {
        uint o = (row * pc.n_chunks + c) * CHUNK_STRIDE;
        s = row_stats_combine(s, RowStats(chunk_stats[o + C_MAX_KEY], chunk_stats[o + C_ARGMAX],
                                          chunk_stats[o + C_MIN_FINITE_KEY], chunk_stats[o + C_BAD],
                                          chunk_stats[o + C_FIRST_BAD], chunk_stats[o + C_FINITE],
                                          chunk_stats[o + C_OVERFLOW]));
    }
    return wg_reduce_row_stats(s);
}

uint slot_flags(uint row) { return slot_state[param_u(row, P_SLOT) + S_FLAGS]; }

// mu = 2 * tau until the slot's first mirostat token (llama.cpp's init and reset).
float mirostat_mu(uint row) {
    uint slot = param_u(row, P_SLOT);
    return (slot_flags(row) & SLOT_MU_SET) != 0u ? uintBitsToFloat(slot_state[slot + S_MU])
                                                 : 2.0 * param_f(row, P_MIRO_TAU);
}

// llama.cpp: temperature <= 0 keeps only the first maximal logit, so the draw
// is the argmax; a chain ending in greedy is the argmax too.
bool row_greedy(uint row) { return (pc.flags & FLAG_GREEDY) != 0u || !(row_scale(row) > 0.0); }

// A finite logit that the temperature division turns into +-inf fails the row
// (the twin's rule, docs/semantics.md: llama.cpp's softmax would be NaN).
uint row_status(RowStats s) {
    if (s.bad != 0u || s.overflow != 0u) return STATUS_NON_FINITE;
    if (s.finite == 0u) return STATUS_ALL_MASKED;  // every logit -inf
    return STATUS_OK;
}

// The step of the row's slot (the host restarts it on reset and seed changes),
// plus the row's position in sieve_verify.
uint row_step(uint row) { return slot_state[param_u(row, P_SLOT) + S_STEP] + param_u(row, P_STEP_ADD); }

uint row_uniform(uint row) {
    return sieve_uniform_u32(params[row * PARAM_STRIDE + P_SEED], row_step(row), params[row * PARAM_STRIDE + P_DRAW]);
}

// Level 0 bins the finite scaled logits x by t = M - x over [0, M - min]: 16
// equal slices of the range below the maximum, the last one holding the rest.
// Monotone in x, so a bin is an interval of keys.
float level0_inv_width(uint max_key, uint min_key) {
    float range = sieve_key_value(max_key) - sieve_key_value(min_key);
    return (range > 0.0 && !isinf(range)) ? float(BINS) / range : 0.0;
}

uint level0_bin(float x, float max_scaled, float inv_width) {
    return uint(min((max_scaled - x) * inv_width, float(BINS - 1u)));
}

// What the selection levels left of the draw target inside the row's chosen
// bin: an exact 40-bit mass (scan.glsl writes it).
uvec2 row_target(uint row) {
    uint o = row * ROW_STRIDE;
    return uvec2(row_state[o + R_TARGET], row_state[o + R_TARGET_HI]);
}

// Levels >= 1 split the key interval [lo, hi] into 16 equal parts, bin 0 holding
// the largest keys (first in canonical order).
uint key_step(uint lo, uint hi) { return (hi - lo) / BINS + 1u; }
uint key_bin(uint k, uint hi, uint step) { return (hi - k) / step; }

// The raw logit a key level's member is at least (R_LEVEL_MODE: min-p's
// floor over a collect row's survivors), -inf for a whole row's levels. The
// key range alone does not decide it: a division by the temperature can
// bring a logit below the floor onto the floor's quotient.
float level_floor(uint row) {
    uint o = row * ROW_STRIDE;
    return (row_state[o + R_LEVEL_MODE] & LEVEL_FLOOR) != 0u ? uintBitsToFloat(row_state[o + R_LEVEL_FLOOR])
                                                              : NEG_INF;
}

#endif
