// A radix select's bin choice, shared by collect_chunk.glsl (a chunk's threshold)
// and collect_tail.glsl (the row's, over the chunks' lists): 256 bins of one
// 8-bit digit, counted by shared atomics into c_id[bins, bins + 256)
// (bitonic.glsl).
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

#endif
