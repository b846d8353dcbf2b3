// A radix select's levels, shared by collect_chunk.glsl (a chunk's threshold,
// over its logits or its picks) and collect_tail.glsl (the row's, over the
// chunks' lists): 256 bins of one 8-bit digit, counted by shared atomics into
// c_id[bins, bins + 256) (bitonic.glsl), and the bin that reaches `need`.
#ifndef SIEVE_RADIX_GLSL
#define SIEVE_RADIX_GLSL

#include "bitonic.glsl"

shared uint s_sel_bin, s_sel_above;
shared uint s_bin_sums[16];

// From the top bin down, the bin where `above` plus the counts (c_id from
// `bins` on) reaches `need` (bins counted, after a barrier): s_sel_bin (0xFFFFFFFF: never, fewer
// than `need` in all) and s_sel_above, the count above it (or the total). In
// two steps: 16 sums of 16 bins in parallel, then one invocation walks at
// most 16 sums and 16 bins, 32 serial shared reads instead of up to 256 (on
// a GPU the serial walk was most of a chunk workgroup's fixed time at 4
// levels). Ends with a barrier.
void select_bin(uint above, uint need, uint bins) {
    uint t = gl_LocalInvocationID.x;
    for (uint g = t; g < 16u; g += WG) {
        uint sum = 0u;
        [[unroll]] for (uint b = 0u; b < 16u; ++b) sum += c_id[bins + 16u * g + b];
        s_bin_sums[g] = sum;
    }
    barrier();
    if (t == 0u) {
        uint acc = above, g = 16u;
        while (g > 0u && acc + s_bin_sums[g - 1u] < need) acc += s_bin_sums[--g];
        uint b = 16u * g;  // the group holding the bin (if any): its bins from the top
        while (g > 0u && b > 16u * (g - 1u) && acc + c_id[bins + b - 1u] < need) acc += c_id[bins + --b];
        s_sel_bin = g == 0u ? 0xFFFFFFFFu : b - 1u;
        s_sel_above = acc;
    }
    barrier();
}

// A radix select's level: 8 bits of the key a level, from the top
// (shift 24, 16, 8, 0); a level counts the keys whose bits above its digit
// are the levels' `prefix` so far. A level is
//     radix_clear(bins);  ...radix_count(k, prefix, shift, bins) for each key...
//     found = radix_choose(need, bins, prefix, above, m);
// and its edge, prefix << shift, has m keys at or above it.

// Zeroes the bins c_id[bins, bins + RADIX_BINS). Ends with a barrier.
void radix_clear(uint bins) {
    for (uint b = gl_LocalInvocationID.x; b < RADIX_BINS; b += WG) c_id[bins + b] = 0u;
    barrier();
}

// Counts key k into its digit's bin when it is in the level.
void radix_count(uint k, uint prefix, uint shift, uint bins) {
    if (shift == 24u || (k >> (shift + 8u)) == prefix) atomicAdd(c_id[bins + ((k >> shift) & 255u)], 1u);
}

// Ends a level of a `bits`-bit digit (8; 4: bins 0 to 15 counted, the
// others 0), its counts done: the bin where the count from the top reaches
// `need` (select_bin). Found: `prefix` takes its digit, `above` the count
// above the bin and `m` the count at or above it. Not found (fewer than
// `need` in all): false, `prefix` unchanged, `above` and `m` the total.
// Begins and ends with a barrier (the next level clears the bins).
bool radix_choose_digit(uint need, uint bins, uint bits, inout uint prefix, inout uint above, out uint m) {
    barrier();
    select_bin(above, need, bins);
    uint bin = s_sel_bin;
    bool found = bin != 0xFFFFFFFFu;
    if (found) prefix = (prefix << bits) | bin;
    m = s_sel_above + (found ? c_id[bins + bin] : 0u);
    above = s_sel_above;
    barrier();
    return found;
}

// radix_choose_digit for the 8-bit levels.
bool radix_choose(uint need, uint bins, inout uint prefix, inout uint above, out uint m) {
    return radix_choose_digit(need, bins, 8u, prefix, above, m);
}

#endif
