// One selection level's decision for a row, run by the last histogram workgroup
// of the row to arrive: adds the chunks' bins (exact 40-bit masses: the same
// sums on every run and for every chunking) and finds the bin where the
// cumulative mass, taken in canonical order (largest logits first), passes the
// draw target. Level 0 also sets the row's total mass and the target
// floor(u * total / 2^32), as a small row's draw does (finalize.glsl); so does
// the first key level over a collect row's min-p survivors (R_LEVEL_MODE). It then
// arms what comes next through the indirect dispatch arguments: the next level
// while the bin is larger than the candidate buffer.
#ifndef SIEVE_SCAN_GLSL
#define SIEVE_SCAN_GLSL

#include "result.glsl"
#include "u64.glsl"

// mass_histogram.comp's tree of the per-invocation bins (each step, the upper
// half hands its bins to the lower half: WG * 64 bytes), then scan_level's
// batches of the chunks' bins.
shared uint s_tree[WG][BINS];

// The words of a chunk's bin scan_level reads: the mass (two words) and the
// count; key levels also the key range.
uint scan_words(uint level) { return level == 0u ? 3u : 5u; }

shared uint s_bin_mass_lo[BINS];
shared uint s_bin_mass_hi[BINS];
shared uint s_bin_count[BINS];
shared uint s_bin_kmin[BINS];
shared uint s_bin_kmax[BINS];

void arm(uint args, uint groups) { atomicMax(dispatch_args[pc.args_base + args], groups); }

// 1 where the plans hand a collect row's min-p survivors to the key levels
// (a GPU's: EffectiveLimits::floor_levels_plan); 0 compiles their check out
// of a CPU device's levels, which lavapipe would run under a lane mask in
// every level's decision (0.4% of temperature;dist's instructions there).
layout(constant_id = SPEC_FLOOR_LEVELS) const uint FLOOR_LEVELS = 1u;

// LEVEL_CUT_CHECK (tail.glsl: min_p_cut): min-p's survivors followed a
// top-p whose cut fell past the buffer. top-p keeps the smallest canonical
// prefix whose mass at the cut reaches p times the row's, so it kept every
// survivor of min-p's (a shorter prefix) where their mass stays below that.
// Level 1's bins hold exactly the survivors (the key range and the raw
// floor), each with its count and largest key: a member's raw logit is at
// most the key's value times the temperature (the division rounds to
// nearest, less than 2^-23 relative; 1e-6 more covers it and the product's
// rounding), so count x exp(that - the raw maximum) bounds a bin's mass at
// the cut from above. The cut's need is a float sum of the row's mass (the
// collect pass's aggregates, as the tail's top-p takes it); a bound within
// 0.1% of it is not trusted. Invocation 0.
bool cut_past_survivors(uint row) {
    uint o = row * ROW_STRIDE;
    float scale = row_scale(row);
    float top = uintBitsToFloat(row_state[o + R_LEVEL_CUT_MAX]);
    float need = uintBitsToFloat(row_state[o + R_LEVEL_CUT_NEED]);
    float bound = 0.0;
    for (uint b = 0u; b < BINS; ++b) {
        if (s_bin_count[b] == 0u) continue;
        float x = sieve_key_value(s_bin_kmax[b]) * scale;
        x += abs(x) * 1e-6;
        bound += float(s_bin_count[b]) * exp(min(x - top, 0.0));
    }
    return bound * 1.001 < need;
}

void scan_level(uint row, uint level) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    // Bin t's sums (WG >= 32 > BINS: device_profile.cpp). The chunks' bins
    // are read by the whole workgroup at once, a batch of chunks at a time,
    // into shared memory: one memory latency a batch, where one invocation a
    // bin walking the chunks waited one a chunk (64 on an H200). The sums are
    // exact, in any order.
    uint words = scan_words(level);
    uint batch = WG / words;
    uvec2 bin_mass = uvec2(0u);
    uint bin_count = 0u, bin_kmin = 0xFFFFFFFFu, bin_kmax = 0u;
    for (uint c0 = 0u; c0 < pc.n_chunks; c0 += batch) {
        uint chunks = min(batch, pc.n_chunks - c0);
        for (uint i = t; i < chunks * BINS; i += WG) {
            uint k = i / BINS, b = i % BINS;
            uint h = ((row * pc.n_chunks + c0 + k) * BINS + b) * HIST_STRIDE;
            s_tree[words * k][b] = histograms[h + H_MASS_LO];
            s_tree[words * k + 1u][b] = histograms[h + H_MASS_HI];
            s_tree[words * k + 2u][b] = histograms[h + H_COUNT];
            if (words > 3u) {
                s_tree[words * k + 3u][b] = histograms[h + H_KEY_MIN];
                s_tree[words * k + 4u][b] = histograms[h + H_KEY_MAX];
            }
        }
        barrier();
        if (t < BINS) {
            for (uint k = 0u; k < chunks; ++k) {
                bin_mass = u64_add(bin_mass, uvec2(s_tree[words * k][t], s_tree[words * k + 1u][t]));
                bin_count += s_tree[words * k + 2u][t];
                if (words > 3u) {
                    bin_kmin = min(bin_kmin, s_tree[words * k + 3u][t]);
                    bin_kmax = max(bin_kmax, s_tree[words * k + 4u][t]);
                }
            }
        }
        barrier();  // the next batch overwrites them
    }
    if (t < BINS) {
        s_bin_mass_lo[t] = bin_mass.x;
        s_bin_mass_hi[t] = bin_mass.y;
        s_bin_count[t] = bin_count;
        s_bin_kmin[t] = bin_kmin;
        s_bin_kmax[t] = bin_kmax;
    }
    barrier();
    if (t != 0u) return;

    uint max_key = row_state[o + R_MAX_KEY];
    uint min_key = row_state[o + R_MIN_KEY];
    uvec2 target;
    uint mode = row_state[o + R_LEVEL_MODE];
    if (FLOOR_LEVELS != 0u && (mode & LEVEL_CUT_CHECK) != 0u && !cut_past_survivors(row)) {
        // Not shown: the twin draws the row (its result already reads as
        // the twin's, the collect tail's hand_to_levels), and its step
        // advances as a row handed to the twin's does.
        row_state[o + R_PHASE] = PHASE_DONE;
        advance_step(row, row_step(row));
        return;
    }
    if (level == 0u || (mode & LEVEL_TARGET_PENDING) != 0u) {
        // The row's total (or, handed over by the collect tail, its
        // survivors': every one of them lies in level 1's key range).
        uvec2 total = uvec2(0u);
        for (uint b = 0u; b < BINS; ++b) total = u64_add(total, uvec2(s_bin_mass_lo[b], s_bin_mass_hi[b]));
        row_state[o + R_TOTAL] = floatBitsToUint(fixed40_value(total));
        row_state[o + R_LEVEL_MODE] = mode & ~(LEVEL_TARGET_PENDING | LEVEL_CUT_CHECK);
        target = u64_mul_u32_shr32(total, row_uniform(row));  // u32 / 2^32 of the total, exactly
    } else {
        target = row_target(row);
    }

    // Walk the bins in canonical order. The target is below the bins' exact
    // total (the row's, or at a key level the mass of the previous level's
    // bin, whose members these bins split), so a bin takes it; `last` only
    // keeps a damaged state from choosing past the bins.
    uint chosen = BINS;
    uint last = 0u;
    for (uint b = 0u; b < BINS; ++b) {
        uvec2 m = uvec2(s_bin_mass_lo[b], s_bin_mass_hi[b]);
        if (m == uvec2(0u)) continue;
        last = b;
        if (u64_less(target, m)) {
            chosen = b;
            break;
        }
        target = u64_sub(target, m);
    }
    if (chosen == BINS) chosen = last;

    // The chosen bin's members lie in this key range: the next level splits it
    // (and a range of one key is a tie group). Key levels measured it; for
    // level 0 two binary searches over keys find the keys whose bin is the
    // chosen one (level0_bin is non-increasing in the key, and these are the
    // very float operations the histogram used).
    uint new_lo = s_bin_kmin[chosen], new_hi = s_bin_kmax[chosen];
    if (level == 0u) {
        float max_scaled = sieve_key_value(max_key);
        float inv_width = level0_inv_width(max_key, min_key);
        uint a = min_key, z = max_key;  // largest key whose bin is >= chosen
        while (a < z) {
            uint mid = a + (z - a + 1u) / 2u;
            if (level0_bin(sieve_key_value(mid), max_scaled, inv_width) >= chosen) a = mid; else z = mid - 1u;
        }
        new_hi = a;
        a = min_key;
        z = max_key;  // smallest key whose bin is <= chosen
        while (a < z) {
            uint mid = a + (z - a) / 2u;
            if (level0_bin(sieve_key_value(mid), max_scaled, inv_width) <= chosen) z = mid; else a = mid + 1u;
        }
        new_lo = a;
    }

    uint count = s_bin_count[chosen];
    row_state[o + R_KEY_LO] = new_lo;
    row_state[o + R_KEY_HI] = new_hi;
    row_state[o + R_TARGET] = target.x;
    row_state[o + R_TARGET_HI] = target.y;
    row_state[o + R_BUCKET_COUNT] = count;
    row_state[o + R_BIN] = chosen;
    row_state[o + R_PASSES] += 1u;
    if (count <= CAP) {
        row_state[o + R_PHASE] = PHASE_GATHER;
    } else if (new_lo == new_hi || level == KEY_LEVELS) {
        row_state[o + R_PHASE] = PHASE_TIE;  // > CAP members share one exact key
    } else {
        row_state[o + R_PHASE] = PHASE_ACTIVE;
        arm((level + 1u) * LEVEL_ARGS_STRIDE, pc.n_chunks);
    }
}

#endif
