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
        uint j_first, j_stop;
        stretch_share(0u, (end - begin + 3u) / 4u, j_first, j_stop);
        for (uint j = j_first; j < j_stop; j += RUN_LANES) {
            vec4 f4 = row_quad(row, begin + 4u * j, end);
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                float x = scaled_logit(f4[c], scale);
                bool live = begin + 4u * j + c < end && !isinf(x);  // -inf: no mass (a row with +inf failed)
                uint bin = live ? level0_bin(x, max_scaled, inv_width) : 0u;
                uvec2 q = live ? sieve_mass(x, max_scaled) : uvec2(0u);
                uint carry;
                mass_lo[bin] = uaddCarry(mass_lo[bin], q.x, carry);
                mass_hi[bin] += q.y + carry;
                count[bin] += live ? 1u : 0u;
            }
        }
    } else if (value_level) {
        for (uint i = begin + t; i < end; i += WG) {
            float x = scaled_logit(row_logit(row, i), scale);
            if (isinf(x)) continue;  // -inf: masked, no mass (a row with +inf failed)
            uint bin = level0_bin(x, max_scaled, inv_width);
            uvec2 q = sieve_mass(x, max_scaled);
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                bool here = bin == b;
                uint carry;
                mass_lo[b] = uaddCarry(mass_lo[b], here ? q.x : 0u, carry);
                mass_hi[b] += (here ? q.y : 0u) + carry;
                count[b] += here ? 1u : 0u;
            }
        }
    } else {
        for (uint i = begin + t; i < end; i += WG) {
            float x = scaled_logit(row_logit(row, i), scale);
            uint k = sieve_key(x);
            if (isinf(x) || k < lo || k > hi) continue;
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
    if (last_to_arrive(row)) scan_level(row, pc.level);
}
