// What collect.comp (the chunks) and collect_tail.comp (the row's merge,
// chain and draw) share: where a chunk leaves its sorted list and statistics.
#ifndef SIEVE_COLLECT_GLSL
#define SIEVE_COLLECT_GLSL

const uint HALF = CAP / 2u;
// Words of the candidates buffer per row: the chunks' lists (up to 8 chunks of
// CAP / 2 entries; a row that fits the buffer leaves all of it as chunk 0's
// list), later the tail's scratch (2 x CAP entries). MAX_COLLECT_CHUNKS:
// gpu_layout.h.
const uint ROW_WORDS = MAX_COLLECT_CHUNKS * CAP;

// Chunk c's list: (key, id) pairs in canonical order.
uint chunk_list_at(uint row, uint c) { return row * ROW_WORDS + c * HALF * 2u; }

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
