#version 450
#extension GL_GOOGLE_include_directive : require
// One selection level over a row chunk (one workgroup per row chunk): the
// softmax mass of the finite scaled logits per bin, each logit's exact 40-bit
// mass trunc(exp(x - max) 2^40) (common.glsl: sieve_mass, the one the draw
// walks), summed in integers, and their count. Key levels also keep each
// bin's smallest and largest key: the next level splits exactly that range,
// so a bin of one repeated value is recognized at once. (Level 0 skips them:
// its bins' key ranges follow from the bin function, and this pass over the
// whole row is the one that costs.)
// Integer sums do not depend on their order: the bins are the same on every
// run and for any split of the row into chunks (gpu_plan.hpp:
// split_for_batch). Every invocation keeps its own 16 bins (selects on
// registers), then the workgroup adds them up. The last workgroup of the row
// to finish takes the level's decision (scan.glsl).
#include "common.glsl"
#include "row.glsl"
#include "arrive.glsl"
#include "scan.glsl"
#include "stretch.glsl"
#include "u64.glsl"
#include "logits4.glsl"
#include "raw_range.glsl"

// The indexed level 0's shared word: a bin's high mass words in bits 0..19,
// its count from bit 20. Over a span of 4 QUADS_PER_SPAN = 4092 logits an
// invocation adds at most 1 + 256 x 4092 < 2^20 to the high part (each mass
// is at most 2^40, the low word carries at most once more) and 4092 < 2^12
// to the count.
const uint HIGH_COUNT_ONE = 1u << 20;
const uint QUADS_PER_SPAN = 1023u;

// A GPU's value level: a logit's value F (in the chunk where INSIDE) into the
// invocation's bins, by selects (main's mass_lo, mass_hi, count); -inf is
// masked, no mass (a row with +inf failed before this pass).
#define ADD_VALUE_MASS(F, INSIDE)                                            \
    {                                                                        \
        float x_ = scaled_logit(F, scale);                                   \
        if ((INSIDE) && !isinf(x_)) {                                        \
            uint bin_ = level0_bin(x_, max_scaled, inv_width);               \
            uvec2 q_ = sieve_mass(x_, max_scaled);                           \
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {                    \
                bool here = bin_ == b;                                       \
                uint carry;                                                  \
                mass_lo[b] = uaddCarry(mass_lo[b], here ? q_.x : 0u, carry); \
                mass_hi[b] += (here ? q_.y : 0u) + carry;                    \
                count[b] += here ? 1u : 0u;                                  \
            }                                                                \
        }                                                                    \
    }

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    bind_row(row);
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    if (row_state[o + R_PHASE] != PHASE_ACTIVE) return;  // uniform in the workgroup

    bool value_level = pc.level == 0u;
    uint max_key = row_state[o + R_MAX_KEY];
    float max_scaled = sieve_key_value(max_key);
    float inv_width = level0_inv_width(max_key, row_state[o + R_MIN_KEY]);
    uint lo = row_state[o + R_KEY_LO];
    uint hi = row_state[o + R_KEY_HI];
    uint step = key_step(lo, hi);
    float scale = row_scale(row);

    uint mass_lo[BINS], mass_hi[BINS], count[BINS], kmin[BINS], kmax[BINS];
    [[unroll]] for (uint b = 0u; b < BINS; ++b) {
        mass_lo[b] = 0u;
        mass_hi[b] = 0u;
        count[b] = 0u;
        kmin[b] = 0xFFFFFFFFu;
        kmax[b] = 0u;
    }
    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);
    if (value_level && INDEXED_BINS != 0u) {
        // A CPU device pays for each loop trip: four logits per trip, each
        // invocation's quads a contiguous stretch (stretch.glsl), added into
        // the bins by index (common.glsl).
        // Two indexed arrays a logit, not three: the high mass word and the
        // count share one (high_count), emptied into mass_hi and count every
        // QUADS_PER_SPAN quads, before either part can overflow.
        uint j_first, j_stop;
        stretch_share(0u, (end - begin + 3u) / 4u, j_first, j_stop);
        for (uint span = j_first; span < j_stop; span += QUADS_PER_SPAN * RUN_LANES) {
            uint high_count[BINS];
            [[unroll]] for (uint b = 0u; b < BINS; ++b) high_count[b] = 0u;
            uint span_stop = min(j_stop, span + QUADS_PER_SPAN * RUN_LANES);
            for (uint j = span; j < span_stop; j += RUN_LANES) {
                vec4 f4 = chunk_quad(row, begin, end, j);
                [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                    float x = scaled_logit(f4[c], scale);
                    bool live = begin + 4u * j + c < end && !isinf(x);  // -inf: no mass (a row with +inf failed)
                    uint bin = live ? level0_bin(x, max_scaled, inv_width) : 0u;
                    uvec2 q = live ? sieve_mass(x, max_scaled) : uvec2(0u);
                    uint carry;
                    mass_lo[bin] = uaddCarry(mass_lo[bin], q.x, carry);
                    high_count[bin] += q.y + carry + (live ? HIGH_COUNT_ONE : 0u);
                }
            }
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                mass_hi[b] += high_count[b] & (HIGH_COUNT_ONE - 1u);
                count[b] += high_count[b] / HIGH_COUNT_ONE;
            }
        }
    } else if (value_level) {
        // A GPU: four quads a trip (logits4.glsl), as row_stats and the
        // gather read.
#define VALUE_QUAD(F4, I0) [[unroll]] for (uint c = 0u; c < 4u; ++c) ADD_VALUE_MASS((F4)[c], (I0) + c < end)
        FOR_CHUNK_QUADS4(row, begin, end, VALUE_QUAD)
    } else {
        float raw_floor = level_floor(row);
        // A GPU's long chunks know the range's logits by their raw keys
        // (raw_range.glsl) and divide only those, where every logit was
        // divided to be tested.
        uint raw_lo, raw_hi;
        bool raw = INDEXED_BINS == 0u && raw_range_pays(pc.chunk_size) && raw_key_range(scale, lo, hi, raw_lo, raw_hi);
        for (uint i = begin + t; i < end; i += WG) {
            float f = row_logit(row, i);
            if (raw) {  // outside the range's raw keys: not divided
                uint kr = sieve_key(f);
                if (kr < raw_lo || kr > raw_hi) continue;
            }
            float x = scaled_logit(f, scale);
            uint k = sieve_key(x);
            if (isinf(x) || k < lo || k > hi || !(f >= raw_floor)) continue;
            uint bin = key_bin(k, hi, step);
            uvec2 q = sieve_mass(x, max_scaled);
            uint carry;
            if (INDEXED_BINS != 0u) {  // common.glsl; the same sums as the selects
                mass_lo[bin] = uaddCarry(mass_lo[bin], q.x, carry);
                mass_hi[bin] += q.y + carry;
                count[bin] += 1u;
                kmin[bin] = min(kmin[bin], k);
                kmax[bin] = max(kmax[bin], k);
                continue;
            }
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                bool here = bin == b;
                mass_lo[b] = uaddCarry(mass_lo[b], here ? q.x : 0u, carry);
                mass_hi[b] += (here ? q.y : 0u) + carry;
                count[b] += here ? 1u : 0u;
                kmin[b] = here ? min(kmin[b], k) : kmin[b];
                kmax[b] = here ? max(kmax[b], k) : kmax[b];
            }
        }
    }

#ifdef SIEVE_SUBGROUP
    // Integer sums, exact in any order: subgroup arithmetic (u64.glsl:
    // subgroup_add_u64), then invocation b adds bin b's partials of the
    // subgroups (the same bins whatever the subgroup size), through
    // scan.glsl's s_tree (a subgroup has >= 4 invocations: pipelines.cpp, so
    // 3 words a subgroup fit WG rows).
    uint g = gl_SubgroupID;
    [[unroll]] for (uint b = 0u; b < BINS; ++b) {
        uvec2 m = subgroup_add_u64(uvec2(mass_lo[b], mass_hi[b]));
        uint n = subgroupAdd(count[b]);
        if (subgroupElect()) {
            s_tree[3u * g][b] = m.x;
            s_tree[3u * g + 1u][b] = m.y;
            s_tree[3u * g + 2u][b] = n;
        }
    }
    barrier();
    uvec2 bin_mass = uvec2(0u);
    uint bin_count = 0u, bin_kmin = 0xFFFFFFFFu, bin_kmax = 0u;
    if (t < BINS) {
        for (uint k = 0u; k < gl_NumSubgroups; ++k) {
            bin_mass = u64_add(bin_mass, uvec2(s_tree[3u * k][t], s_tree[3u * k + 1u][t]));
            bin_count += s_tree[3u * k + 2u][t];
        }
    }
    if (!value_level) {  // uniform: the level is a push constant
        barrier();  // s_tree read above
        [[unroll]] for (uint b = 0u; b < BINS; ++b) {
            uint lo_key = subgroupMin(kmin[b]), hi_key = subgroupMax(kmax[b]);
            if (subgroupElect()) {
                s_tree[2u * g][b] = lo_key;
                s_tree[2u * g + 1u][b] = hi_key;
            }
        }
        barrier();
        if (t < BINS) {
            for (uint k = 0u; k < gl_NumSubgroups; ++k) {
                bin_kmin = min(bin_kmin, s_tree[2u * k][t]);
                bin_kmax = max(bin_kmax, s_tree[2u * k + 1u][t]);
            }
        }
    }
    if (t < BINS) {
        uint h = ((row * pc.n_chunks + chunk) * BINS + t) * HIST_STRIDE;
        histograms[h + H_MASS_LO] = bin_mass.x;
        histograms[h + H_MASS_HI] = bin_mass.y;
        histograms[h + H_COUNT] = bin_count;
        histograms[h + H_KEY_MIN] = bin_kmin;
        histograms[h + H_KEY_MAX] = bin_kmax;
    }
#else
    // The tree of the invocations' bins (each step, the upper half hands its
    // bins to the lower half through scan.glsl's s_tree): the masses, then
    // the counts with (key levels) the smallest keys, then (key levels) the
    // largest.
    for (uint half_size = WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (t >= half_size && t < 2u * half_size) {
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                s_tree[t - half_size][b] = mass_lo[b];
                s_tree[t][b] = mass_hi[b];
            }
        }
        barrier();
        if (t < half_size) {
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                uvec2 m = u64_add(uvec2(mass_lo[b], mass_hi[b]), uvec2(s_tree[t][b], s_tree[t + half_size][b]));
                mass_lo[b] = m.x;
                mass_hi[b] = m.y;
            }
        }
        barrier();
    }
    for (uint half_size = WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (t >= half_size && t < 2u * half_size) {
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                s_tree[t - half_size][b] = count[b];
                s_tree[t][b] = kmin[b];
            }
        }
        barrier();
        if (t < half_size) {
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                count[b] += s_tree[t][b];
                kmin[b] = min(kmin[b], s_tree[t + half_size][b]);
            }
        }
        barrier();
    }
    for (uint half_size = value_level ? 0u : WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (t >= half_size && t < 2u * half_size) {
            [[unroll]] for (uint b = 0u; b < BINS; ++b) s_tree[t - half_size][b] = kmax[b];
        }
        barrier();
        if (t < half_size) {
            [[unroll]] for (uint b = 0u; b < BINS; ++b) kmax[b] = max(kmax[b], s_tree[t][b]);
        }
        barrier();
    }

    if (t == 0u) {
        uint h = (row * pc.n_chunks + chunk) * BINS * HIST_STRIDE;
        [[unroll]] for (uint b = 0u; b < BINS; ++b) {
            histograms[h + HIST_STRIDE * b + H_MASS_LO] = mass_lo[b];
            histograms[h + HIST_STRIDE * b + H_MASS_HI] = mass_hi[b];
            histograms[h + HIST_STRIDE * b + H_COUNT] = count[b];
            histograms[h + HIST_STRIDE * b + H_KEY_MIN] = kmin[b];
            histograms[h + HIST_STRIDE * b + H_KEY_MAX] = kmax[b];
        }
    }
#endif
    if (last_to_arrive(row)) scan_level(row, pc.level);
}
