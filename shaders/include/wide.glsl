// A top-p cut past the candidate buffer ("wide" rows): top-p 0.9 over LM-like
// logits at T = 1 keeps thousands of tokens, more than the collect pass keeps
// per row. Its survivors are still a condition over the full row: the smallest
// canonical prefix of the row whose mass reaches p. The collect pass's tail
// (tail.glsl: op_top_p) leaves what it knows in row_state; two more passes
// over the row finish the cut and the draw on the GPU, launched indirectly
// (zero workgroups when no row of the call needs them):
//
//   wide_histogram  64 or 256 value bins of the entries after the buffer, in
//                   [L, v_n]: their mass at the cut's temperatures. Its last
//                   workgroup finds the bin where the cumulative mass reaches
//                   p (b*) and, from bounds on the bins' masses at the draw's
//                   temperatures, the run of bins the draw can land in,
//                   whatever the exact cut inside b*.
//   wide_gather     those bins' members into the row's list, and the draw's
//                   masses of the other bins before b*, summed; its last
//                   workgroup finds the exact cut inside b* and draws.
//
// L is a value below which the cut cannot fall: the entries below it, at most
// V of them, each with mass < exp(L - M) = (1 - p) * total / V, hold less than
// 1 - p of the mass, so the prefix reaching p ends at or above L. (A deferred
// row, whose total is not known yet, takes the buffer's mass for the total: a
// lower L, still a bound.)
//
// The values are the chain's, exactly: raw logit (bias, bitmask) divided by
// the row's temperature once per temperature sampler, in order, as op_divide
// and the twin do. Sums inside the list are 40-bit fixed point (exact, so the
// order the list was filled in does not matter), and so are the chunks' sums
// of the bins, so the passes may split a row into any number of chunks (by
// the batch on a GPU: gpu_plan.hpp, split_for_batch) and draw the same
// token. (A direct row's bins, on a CPU device, each chunk's anchored at its
// own maximum, are float sums in a fixed order of a fixed chunking.) Where
// the steps below compare masses in float, they take these exact sums' float
// values. A row the GPU cannot finish this way (bins too large for the
// list, min_keep past the start of the bins, a draw outside the bounds) goes
// to the CPU twin as before (STATUS_FALLBACK), counted.
#ifndef SIEVE_WIDE_GLSL
#define SIEVE_WIDE_GLSL

#include "row.glsl"
#include "result.glsl"

// The row's words R_WIDE_* and the passes' arguments WIDE_*_ARGS: gpu_layout.h.
const uint WIDE_NONE = 0u;
const uint WIDE_HIST = 1u;
const uint WIDE_GATHER = 2u;

// The collect pass did not sum the row's mass (ROW_DEFER_TOP_P: top-p is the
// row's only cut): wide_histogram sums it, finds the cut (in the buffer or
// past it) and, when the cut falls in the buffer, draws there.
const uint WIDE_DEFERRED = 0x80000000u;

// Direct rows (R_WIDE_NT): no collect pass and no buffer; wide_histogram
// (WIDE_DIRECT) read the row first (below).
const uint WIDE_NT_DIRECT = 0x8000u;

// Rows where top-p is the only cut, on a CPU device, with min_keep <= 1, skip
// the collect pass and its tail (the host arms this per call when every row
// is such a row: gpu_chain.cpp, wide_direct): wide_histogram, built with
// WIDE_DIRECT = 1, reads each chunk twice in one dispatch (its statistics and
// maximum, then the bins; the second read finds the chunk in the cache) and
// bins the whole row by value below the row's maximum M, over a window of
// ln(V / (1 - p)) + 1, below which the mass cannot reach 1 - p of the total
// (the at most V entries under it each hold less than (1 - p) / V of the
// maximum's mass). Each chunk's bins are anchored at its own maximum on the
// same grid (wide_bin: exact, so the last workgroup shifts them by whole bins
// and the gather bins every value as the histogram did). Two dispatches, two
// reads of the row, instead of four and three (top_p at 151936 on lavapipe:
// see docs/perf-log.md). Both passes are built for it (the gather then
// has no buffer to test against).
layout(constant_id = SPEC_WIDE_DIRECT) const uint WIDE_DIRECT = 0u;

// The value bins over [L, v_n]: 256 where a CPU device adds into them by
// index (common.glsl: INDEXED_BINS; the cost per logit does not grow with the
// bins) and the wide passes run 8 invocations a workgroup, so that b* and the
// draw's bins hold few members to gather and select (top-p 0.95 over the
// bench's Zipf rows at 151936: b* 1426 members, 5388 with 64 bins); 64 on a
// GPU, added by shared atomics (16 on a CPU device whose shared memory
// cannot hold the columns). At most 256: the resolve sums the gathered bins
// in its 256 selection slots (wide_gather.comp). The host chooses
// (pipelines.cpp).
layout(constant_id = SPEC_WIDE_BINS) const uint WIDE_BINS = 16u;

// A row's block in `wide` (gpu_plan.hpp: wide_row_words): the buffer's
// entries (key at the draw, id), the buffer's keys at the cut (deferred rows),
// then the list (key at the cut, id).
uint wide_base(uint row) { return row * (2u * CAP + 2u * pc.wide_cap); }
uint wide_buffer_at(uint row) { return wide_base(row); }
uint wide_cut_keys_at(uint row) { return wide_base(row) + CAP; }
uint wide_list_at(uint row) { return wide_base(row) + 2u * CAP; }

// A chunk's words in `histograms` (a block of WIDE_BINS x HIST_STRIDE words,
// of which the wide passes use 2 WIDE_BINS + 6): wide_histogram's masses at
// the cut, bin b's at WH_BIN(b), and below L at WH_BELOW; wide_gather's sums
// of the draw's masses outside its run, before it at WH_BEFORE_RUN, between
// it and b* at WH_AFTER_RUN. Each an exact 40-bit fixed-point sum in two
// words (low, high), but a direct row's bins and mass below L: a float in
// the first word (wide_histogram.comp).
uint wide_hist_at(uint row, uint chunk) { return (row * pc.n_chunks + chunk) * WIDE_BINS * HIST_STRIDE; }
uint WH_BIN(uint b) { return 2u * b; }
const uint WH_BELOW = 2u * WIDE_BINS;
const uint WH_BEFORE_RUN = WH_BELOW + 2u;
const uint WH_AFTER_RUN = WH_BEFORE_RUN + 2u;

// The exact sum at word w of a chunk's block h.
uvec2 wide_hist_u64(uint h, uint w) { return uvec2(histograms[h + w], histograms[h + w + 1u]); }
void store_wide_hist_u64(uint h, uint w, uvec2 v) {
    histograms[h + w] = v.x;
    histograms[h + w + 1u] = v.y;
}

// The list's entries as pairs (the list starts at an even word): one load or
// store per entry, which a CPU device runs lane by lane, instead of two.
layout(std430, set = 0, binding = BINDING_WIDE) coherent buffer WidePairs { uvec2 wide_pairs[]; };

// The most temperature divisions a row's values take before the cut and in
// all (spec constant 10: the chain's temperature samplers before its last
// top-p | all of them << 8, each at most WIDE_MAX_DIVISIONS; the host sets it
// per chain, row_analysis.cpp: ChainAnalysis::wide_divisions). A division no row of the chain
// can take is not computed: a CPU device pays for every select's both sides
// per logit (top_p;temperature: one division a logit instead of eight).
layout(constant_id = SPEC_WIDE_DIVISIONS) const uint WIDE_DIVISIONS = WIDE_MAX_DIVISIONS | (WIDE_MAX_DIVISIONS << 8u);
const uint WIDE_CUT_DIVISIONS = WIDE_DIVISIONS & 0xFFu;
const uint WIDE_ALL_DIVISIONS = WIDE_DIVISIONS >> 8u;

// n divisions by t, one at a time (op_divide's and the twin's rounding), for
// n up to `most` (a specialization constant; the collect tail hands a row with
// more than WIDE_MAX_DIVISIONS temperature samplers to the CPU twin). Selects,
// not a loop: a CPU device pays for a loop's machinery per logit even when it
// runs no trip (a loop here was about a third of wide_histogram's time on
// lavapipe).
float wide_divide(float x, float t, uint n, uint most) {
    x = most > 0u && n > 0u ? x / t : x;
    x = most > 1u && n > 1u ? x / t : x;
    x = most > 2u && n > 2u ? x / t : x;
    x = most > 3u && n > 3u ? x / t : x;
    return x;
}

// The row goes to the CPU twin at this step (counted by the host); passes:
// the row passes it took.
void wide_fallback(uint row, uint passes) {
    write_fallback(row, row_step(row), passes);
    row_state[row * ROW_STRIDE + R_WIDE_PHASE] = WIDE_NONE;
}

bool wide_after(uint ka, uint ia, uint kb, uint ib) { return ka < kb || (ka == kb && ia > ib); }

// The bins are a grid of value: bin b holds the values v at the cut's
// temperatures with floor(v s) = top - b, clamped to the bins; bin 0 is the
// top. Every pass computes floor(v s) the same way, so it bins every value
// the same way; floor(v s) is clamped to +-2^22, where float still holds
// every integer and their differences exactly, and the scale keeps the values
// well inside (wide_scale), else the row goes to the CPU twin
// (wide_grid_fits). Direct rows take a power of two for s: v s is exact, so
// "v >= (top_c - WIDE_BINS + 1) / s" is "in a bin" on every chunk's anchor.
const float WIDE_GRID_LIMIT = 4194304.0;
float wide_grid(float v, float s) { return floor(clamp(v * s, -WIDE_GRID_LIMIT, WIDE_GRID_LIMIT)); }
uint wide_bin(float v, float top, float s) { return uint(clamp(top - wide_grid(v, s), 0.0, float(WIDE_BINS - 1u))); }

// The scale s that fits a range of values into the bins, WIDE_BINS / s >=
// range (the lowest bin takes what the grid's offset leaves below), and keeps
// values of the given magnitude inside the grid's exact range, |v| s <= 2^20
// (huge logits: coarser bins); pow2: the largest power of two with
// (WIDE_BINS - 1) / s >= range (a window of whole bins).
float wide_scale(float range, float magnitude, bool pow2) {
    float s = range > 0.0 ? float(pow2 ? WIDE_BINS - 1u : WIDE_BINS) / range : 1048576.0;
    s = min(s, 1048576.0 / max(magnitude, 1.0));
    return pow2 ? exp2(max(floor(log2(s)), -126.0)) : s;
}

// Whether the values [lo, hi] stay inside the grid's exact range at scale s
// (wide_scale's bound).
bool wide_grid_fits(float lo, float hi, float s) { return max(abs(lo), abs(hi)) * s <= 1048576.0; }

// Row passes the gather's answer took: direct rows skipped the collect pass.
uint wide_gather_passes(uint row) { return (row_state[row * ROW_STRIDE + R_WIDE_NT] & WIDE_NT_DIRECT) != 0u ? 2u : 3u; }

// Whether bin b is gathered: b* or in the run [clo, cend) before it.
bool wide_gathered(uint b, uint bstar, uint clo, uint cend) { return b == bstar || (b >= clo && b < cend); }

// BODY(F4, J) for every quad J in [J_FIRST, J_STOP) (an invocation's stretch,
// stretch.glsl) of the chunk of row ROW that starts at BEGIN: F4 its logits,
// through the vec4 map where VMAP says the row allows it, else row_quad
// (those at or past END repeat the chunk's last, for BODY to mask). Rows of
// whole vec4s (WIDE_ROWS_X4) load four quads a trip first: a CPU device loads
// a vector lane by lane, each waiting on memory, and independent loads
// overlap (the collect pass's loop, collect_chunk.glsl). (The caller includes
// stretch.glsl and logits4.glsl.)
#define FOR_WIDE_QUADS(ROW, BEGIN, END, VMAP, J_FIRST, J_STOP, BODY)                                 \
    {                                                                                               \
        uint j_ = (J_FIRST);                                                                        \
        if (WIDE_ROWS_X4 != 0u) {                                                                   \
            uint q0_ = ((ROW) * pc.stride + (BEGIN)) / 4u;                                          \
            for (; j_ + 3u * RUN_LANES < (J_STOP); j_ += 4u * RUN_LANES) {                          \
                vec4 fa_ = row_vec4(q0_ + j_), fb_ = row_vec4(q0_ + j_ + RUN_LANES);                \
                vec4 fc_ = row_vec4(q0_ + j_ + 2u * RUN_LANES), fd_ = row_vec4(q0_ + j_ + 3u * RUN_LANES); \
                BODY(fa_, j_)                                                                       \
                BODY(fb_, j_ + RUN_LANES)                                                           \
                BODY(fc_, j_ + 2u * RUN_LANES)                                                      \
                BODY(fd_, j_ + 3u * RUN_LANES)                                                      \
            }                                                                                       \
        }                                                                                           \
        for (; j_ < (J_STOP); j_ += RUN_LANES) {                                                    \
            vec4 f4_ = (VMAP) ? row_vec4(((ROW) * pc.stride + (BEGIN)) / 4u + j_)                   \
                              : row_quad(ROW, (BEGIN) + 4u * j_, END);                              \
            BODY(f4_, j_)                                                                           \
        }                                                                                           \
    }

#endif
