#version 450
#extension GL_GOOGLE_include_directive : require
// One selection level over a row chunk (one workgroup per row chunk): the
// softmax mass exp(x - max) and the count of the finite scaled logits per bin.
// Key levels also keep each bin's smallest and largest key: the next level
// splits exactly that range, so a bin of one repeated value is recognized at
// once. (Level 0 skips them: its bins' key ranges follow from the bin function,
// and this pass over the whole row is the one that costs.)
// No atomics: every invocation keeps its own 16 bins (selects on registers),
// then the workgroup adds them up in a fixed order, so the sums are the same on
// every run. The last workgroup of the row to finish takes the level's decision
// (scan.glsl).
#include "common.glsl"
#include "row.glsl"
#include "arrive.glsl"
#include "scan.glsl"
#include "stretch.glsl"

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

    float mass[BINS];
    uint count[BINS], kmin[BINS], kmax[BINS];
    [[unroll]] for (uint b = 0u; b < BINS; ++b) {
        mass[b] = 0.0;
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
                mass[bin] += live ? exp(x - max_scaled) : 0.0;
                count[bin] += live ? 1u : 0u;
            }
        }
    } else if (value_level) {
        for (uint i = begin + t; i < end; i += WG) {
            float x = scaled_logit(row_logit(row, i), scale);
            if (isinf(x)) continue;  // -inf: masked, no mass (a row with +inf failed)
            uint bin = level0_bin(x, max_scaled, inv_width);
            float w = exp(x - max_scaled);
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                mass[b] += bin == b ? w : 0.0;
                count[b] += bin == b ? 1u : 0u;
            }
        }
    } else {
        for (uint i = begin + t; i < end; i += WG) {
            float x = scaled_logit(row_logit(row, i), scale);
            uint k = sieve_key(x);
            if (isinf(x) || k < lo || k > hi) continue;
            uint bin = key_bin(k, hi, step);
            float w = exp(x - max_scaled);
            if (INDEXED_BINS != 0u) {  // common.glsl; the same sums as the selects
                mass[bin] += w;
                count[bin] += 1u;
                kmin[bin] = min(kmin[bin], k);
                kmax[bin] = max(kmax[bin], k);
                continue;
            }
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                bool here = bin == b;
                mass[b] += here ? w : 0.0;
                count[b] += here ? 1u : 0u;
                kmin[b] = here ? min(kmin[b], k) : kmin[b];
                kmax[b] = here ? max(kmax[b], k) : kmax[b];
            }
        }
    }

    // Two rounds of the tree through the same shared arrays (scan.glsl's s_a,
    // s_b): mass and count, then (key levels) the key range.
    for (uint half_size = WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (t >= half_size && t < 2u * half_size) {
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                s_a[t - half_size][b] = floatBitsToUint(mass[b]);
                s_b[t - half_size][b] = count[b];
            }
        }
        barrier();
        if (t < half_size) {
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                mass[b] += uintBitsToFloat(s_a[t][b]);
                count[b] += s_b[t][b];
            }
        }
        barrier();
    }
    for (uint half_size = value_level ? 0u : WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (t >= half_size && t < 2u * half_size) {
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                s_a[t - half_size][b] = kmin[b];
                s_b[t - half_size][b] = kmax[b];
            }
        }
        barrier();
        if (t < half_size) {
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                kmin[b] = min(kmin[b], s_a[t][b]);
                kmax[b] = max(kmax[b], s_b[t][b]);
            }
        }
        barrier();
    }

    if (t == 0u) {
        uint h = (row * pc.n_chunks + chunk) * BINS * HIST_STRIDE;
        [[unroll]] for (uint b = 0u; b < BINS; ++b) {
            histograms[h + HIST_STRIDE * b + H_MASS] = floatBitsToUint(mass[b]);
            histograms[h + HIST_STRIDE * b + H_COUNT] = count[b];
            histograms[h + HIST_STRIDE * b + H_KEY_MIN] = kmin[b];
            histograms[h + HIST_STRIDE * b + H_KEY_MAX] = kmax[b];
        }
    }
    if (last_to_arrive(row)) scan_level(row, pc.level);
}
