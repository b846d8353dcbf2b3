// What collect_chunk.glsl (the chunks) and collect_tail.glsl (the row's merge,
// chain and draw) share: where a chunk leaves its sorted list and statistics.
#ifndef SIEVE_COLLECT_GLSL
#define SIEVE_COLLECT_GLSL

const uint HALF = CAP / 2u;
// Words of the candidates buffer per row: the chunks' lists (up to 8 chunks of
// CAP / 2 entries, or up to MAX_ROW_CHUNKS of an equal share; a row that fits
// the buffer leaves all of it as chunk 0's list), later the tail's scratch
// (2 x CAP entries). MAX_COLLECT_CHUNKS, MAX_ROW_CHUNKS: gpu_layout.h.
const uint ROW_WORDS = MAX_COLLECT_CHUNKS * CAP;

// min-p's floor (ROW_FLOOR) below a maximum's key: a logit whose key is below
// it can never pass min-p (tail.glsl: op_min_p). Conservative: rounding never
// drops a logit the tail would keep (P_FLOOR is itself a little generous:
// row_analysis.cpp). The chunks floor what they read from their running
// maximum; the tail floors their lists from the row's.
uint min_p_floor_key(uint max_key, float floor_offset) {
    float wv = sieve_key_value(max_key);
    return sieve_key(wv + floor_offset - 1e-5 * abs(wv));
}

// The row's floor below its maximum in raw logits (ROW_FLOOR): min-p's,
// from the host (P_FLOOR), or mirostat v2's (ROW_MU_FLOOR), from the slot's
// mu as the tail reads it (selectors.glsl): a token whose surprise -log2(p)
// is at most mu has p >= 2^-mu, and p is at most its mass relative to the
// maximum (the total holds the maximum's 1), so its value is at least the
// maximum's - mu ln 2 at the selector's temperatures (P_AGG_T); a little
// lower for rounding. A mu below 0 keeps the maximum alone (the floor at
// it); one that bounds nothing (NaN, +inf) gives -inf.
float row_floor_offset(uint row, uint flags) {
    if ((flags & ROW_MU_FLOOR) == 0u) return param_f(row, P_FLOOR);
    float offset = -param_f(row, P_AGG_T) * (mirostat_mu(row) * 0.6931471805599453 * (1.0 + 1e-5) + 1e-3);
    return isnan(offset) ? NEG_INF : min(offset, 0.0);
}

// Chunk c's list, of a row split into n chunks: (key, id) pairs in canonical
// order. More than MAX_COLLECT_CHUNKS chunks share the row's words equally
// (the host splits a row so only where each share holds `need` entries:
// gpu_plan.hpp, chunk_list_pairs).
uint chunk_list_words(uint n) { return n <= MAX_COLLECT_CHUNKS ? HALF * 2u : (ROW_WORDS / n) & ~1u; }

uint chunk_list_at(uint row, uint c, uint n) { return row * ROW_WORDS + c * chunk_list_words(n); }

// The entries a chunk keeps: `need` (P_NEED, clamped), or, for a row with
// min-p's floor (ROW_FLOOR), its whole share of the buffer (up to HALF; at
// most PICKS_PER_INVOCATION x CHUNK_WG where it sums aggregates), which holds
// `need` (the host splits rows so). Such a row's survivors are bounded by
// min-p's floor, not by a count; the more of them a chunk keeps, the fewer
// rows go to the CPU twin because a chunk's list was full (collect_tail.glsl:
// floor_lists_whole), while the split, chosen for `need`, stays: a GPU's
// one-row plan (32 chunks) keeps CAP / 8 (512 at an H200's CAP of 4096), a
// batch's or a CPU device's plan (at most MAX_COLLECT_CHUNKS) HALF. The tail
// calls this too (the same row's flags and split give the same count), and the
// host's chunk_keep (gpu_plan.hpp) is its twin.
uint chunk_need(uint row, uint n) {
    uint need = clamp(param_u(row, P_NEED), 1u, HALF);
    uint flags = param_u(row, P_ROW_FLAGS);
    if ((flags & ROW_FLOOR) == 0u) return need;
    uint keep = min(chunk_list_words(n) / 2u, HALF);
    if ((flags & (ROW_NEED_SIGMA | ROW_NEED_MASS)) != 0u) keep = min(keep, PICKS_PER_INVOCATION * CHUNK_WG);
    return max(need, keep);
}

// Logits per chunk of a row split into n chunks: a multiple of 4 (collect_chunk.glsl
// reads plain rows four at a time). The host's collect_chunk_size
// (gpu_plan.cpp) is the same formula: it chooses n so that every chunk holds
// logits.
uint collect_chunk_size(uint n) { return ((pc.vocab + n - 1u) / n + 3u) / 4u * 4u; }

// The chunks the row group's collect pass split each row into (the indirect
// x of the variant that ran; the host arms it: gpu_chain.cpp arm_collect),
// for collect_tail.comp. The chunks, and a tail in their last workgroup
// (collect_fused.comp), read their own gl_NumWorkGroups.x instead.
uint collect_chunks() {
    if ((pc.flags & FLAG_SMALL) != 0u) return 1u;
    return max(dispatch_args[pc.args_base + COLLECT_PLAIN_ARGS], dispatch_args[pc.args_base + COLLECT_GENERAL_ARGS]);
}

void write_agg(uint o, Agg a) {
    chunk_stats[o + C_AGG + 0u] = floatBitsToUint(a.count);
    chunk_stats[o + C_AGG + 1u] = floatBitsToUint(a.mean);
    chunk_stats[o + C_AGG + 2u] = floatBitsToUint(a.m2);
    chunk_stats[o + C_AGG + 3u] = floatBitsToUint(a.mmax);
    chunk_stats[o + C_AGG + 4u] = floatBitsToUint(a.msum);
}

Agg read_agg(uint o) {
    return Agg(uintBitsToFloat(chunk_stats[o + C_AGG + 0u]), uintBitsToFloat(chunk_stats[o + C_AGG + 1u]),
               uintBitsToFloat(chunk_stats[o + C_AGG + 2u]), uintBitsToFloat(chunk_stats[o + C_AGG + 3u]),
               uintBitsToFloat(chunk_stats[o + C_AGG + 4u]));
}

#endif
