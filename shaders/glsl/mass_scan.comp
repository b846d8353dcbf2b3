#version 450
#extension GL_GOOGLE_include_directive : require
// One selection level's decision (one workgroup per row): adds the chunks' bins
// in chunk order and finds the bin where the cumulative mass, taken in canonical
// order (largest logits first), passes the draw target. Level 0 also sets the
// row's status, its total mass and the target u * total. It then arms the next
// pass through the indirect dispatch arguments: the next level if the bin is
// still too large, else the gather.
#include "common.glsl"
#include "row.glsl"

shared float s_mass[BINS];
shared uint s_count[BINS];
shared uint s_kmin[BINS];
shared uint s_kmax[BINS];

void arm(uint args, uint groups) {
    atomicMax(dispatch_args[args], groups);
}

void main() {
    uint row = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;

    RowStats s;
    if (pc.level == 0u) {
        s = merge_chunk_stats(row);
        uint status = row_status(s);
        bool greedy = row_greedy(row);
        if (t == 0u) {
            row_state[o + R_STATUS] = status;
            row_state[o + R_MAX_KEY] = s.max_key;
            row_state[o + R_ARGMAX] = s.argmax;
            row_state[o + R_FIRST_BAD] = s.first_bad;
            row_state[o + R_PASSES] = 1u;
            row_state[o + R_CAND_COUNT] = 0u;
            if (status != STATUS_OK || greedy) row_state[o + R_PHASE] = PHASE_DONE;
        }
        if (status != STATUS_OK || greedy) return;
    } else {
        if (row_state[o + R_PHASE] != PHASE_ACTIVE) return;
    }

    for (uint b = t; b < BINS; b += WG) {
        float mass = 0.0;
        uint count = 0u, kmin = 0xFFFFFFFFu, kmax = 0u;
        for (uint c = 0u; c < pc.n_chunks; ++c) {
            uint h = ((row * pc.n_chunks + c) * BINS + b) * HIST_STRIDE;
            mass += uintBitsToFloat(histograms[h + H_MASS]);
            count += histograms[h + H_COUNT];
            kmin = min(kmin, histograms[h + H_KEY_MIN]);
            kmax = max(kmax, histograms[h + H_KEY_MAX]);
        }
        s_mass[b] = mass;
        s_count[b] = count;
        s_kmin[b] = kmin;
        s_kmax[b] = kmax;
    }
    barrier();
    if (t != 0u) return;

    float target;
    if (pc.level == 0u) {
        float total = 0.0;
        for (uint b = 0u; b < BINS; ++b) total += s_mass[b];
        row_state[o + R_TOTAL] = floatBitsToUint(total);
        // u = u32 / 2^32 in [0, 1)
        target = float(row_uniform(row)) * 2.3283064365386963e-10 * total;
    } else {
        target = uintBitsToFloat(row_state[o + R_TARGET]);
    }

    // Walk the bins in canonical order. Rounding can leave the target at or
    // past the last bin's end: the last bin with mass takes it then.
    uint chosen = BINS;
    uint last = 0u;
    for (uint b = 0u; b < BINS; ++b) {
        float m = s_mass[b];
        if (m <= 0.0) continue;
        last = b;
        if (target < m) {
            chosen = b;
            break;
        }
        target -= m;
    }
    if (chosen == BINS) {
        chosen = last;
        target = s_mass[last] * 0.99999994;
    }

    // The chosen bin's members lie in this key range: the next level splits it
    // (and a range of one key is a tie group). Key levels measured it; for
    // level 0 two binary searches over keys find the keys whose bin is the
    // chosen one (level0_bin is non-increasing in the key, and these are the
    // very float operations the histogram used).
    uint new_lo = s_kmin[chosen], new_hi = s_kmax[chosen];
    if (pc.level == 0u) {
        float max_scaled = sieve_key_value(s.max_key);
        float inv_width = level0_inv_width(s);
        uint a = s.min_finite_key, z = s.max_key;  // largest key whose bin is >= chosen
        while (a < z) {
            uint mid = a + (z - a + 1u) / 2u;
            if (level0_bin(sieve_key_value(mid), max_scaled, inv_width) >= chosen) a = mid; else z = mid - 1u;
        }
        new_hi = a;
        a = s.min_finite_key;
        z = s.max_key;  // smallest key whose bin is <= chosen
        while (a < z) {
            uint mid = a + (z - a) / 2u;
            if (level0_bin(sieve_key_value(mid), max_scaled, inv_width) <= chosen) z = mid; else a = mid + 1u;
        }
        new_lo = a;
    }

    uint count = s_count[chosen];
    row_state[o + R_KEY_LO] = new_lo;
    row_state[o + R_KEY_HI] = new_hi;
    row_state[o + R_TARGET] = floatBitsToUint(target);
    row_state[o + R_BUCKET_COUNT] = count;
    row_state[o + R_BIN] = chosen;
    row_state[o + R_PASSES] += 1u;
    if (count <= CAP) {
        row_state[o + R_PHASE] = PHASE_GATHER;
        arm(GATHER_ARGS, pc.n_chunks);
    } else if (new_lo == new_hi || pc.level == KEY_LEVELS) {
        row_state[o + R_PHASE] = PHASE_TIE;  // > CAP members share one exact key
    } else {
        row_state[o + R_PHASE] = PHASE_ACTIVE;
        arm((pc.level + 1u) * 8u, pc.n_chunks);
        arm((pc.level + 1u) * 8u + 4u, 1u);
    }
}
