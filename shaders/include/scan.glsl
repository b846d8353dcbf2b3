// One selection level's decision for a row, run by the last histogram workgroup
// of the row to arrive: adds the chunks' bins in chunk order (the same sums on
// every run) and finds the bin where the cumulative mass, taken in canonical
// order (largest logits first), passes the draw target. Level 0 also sets the
// row's total mass and the target u * total. It then arms what comes next
// through the indirect dispatch arguments: the next level while the bin is
// larger than the candidate buffer.
#ifndef SIEVE_SCAN_GLSL
#define SIEVE_SCAN_GLSL

// mass_histogram.comp's tree of the per-invocation bins (each step, the upper
// half hands its bins to the lower half: WG * 64 bytes), then scan_level's
// batches of the chunks' bins.
shared uint s_a[WG / 2u][BINS];
shared uint s_b[WG / 2u][BINS];

// Chunks whose bins one batch holds: a chunk's 2 x BINS words in each of s_a
// (mass, count) and s_b (smallest, largest key).
const uint SCAN_BATCH = WG / 4u;

shared float s_bin_mass[BINS];
shared uint s_bin_count[BINS];
shared uint s_bin_kmin[BINS];
shared uint s_bin_kmax[BINS];

void arm(uint args, uint groups) { atomicMax(dispatch_args[pc.args_base + args], groups); }

void scan_level(uint row, uint level) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    // Bin t's sums (WG >= 32 > BINS: device_profile.cpp). The chunks' bins
    // are read by the whole workgroup at once, a batch of chunks at a time,
    // into shared memory: one memory latency a batch, where one invocation a
    // bin walking the chunks waited one a chunk (64 on an H200). The sums
    // then take them in chunk order, as before.
    float bin_mass = 0.0;
    uint bin_count = 0u, bin_kmin = 0xFFFFFFFFu, bin_kmax = 0u;
    for (uint c0 = 0u; c0 < pc.n_chunks; c0 += SCAN_BATCH) {
        uint chunks = min(SCAN_BATCH, pc.n_chunks - c0);
        for (uint i = t; i < chunks * BINS; i += WG) {
            uint k = i / BINS, b = i % BINS;
            uint h = ((row * pc.n_chunks + c0 + k) * BINS + b) * HIST_STRIDE;
            s_a[2u * k][b] = histograms[h + H_MASS];
            s_a[2u * k + 1u][b] = histograms[h + H_COUNT];
            s_b[2u * k][b] = histograms[h + H_KEY_MIN];
            s_b[2u * k + 1u][b] = histograms[h + H_KEY_MAX];
        }
        barrier();
        if (t < BINS) {
            for (uint k = 0u; k < chunks; ++k) {
                bin_mass += uintBitsToFloat(s_a[2u * k][t]);
                bin_count += s_a[2u * k + 1u][t];
                bin_kmin = min(bin_kmin, s_b[2u * k][t]);
                bin_kmax = max(bin_kmax, s_b[2u * k + 1u][t]);
            }
        }
        barrier();  // the next batch overwrites them
    }
    if (t < BINS) {
        s_bin_mass[t] = bin_mass;
        s_bin_count[t] = bin_count;
        s_bin_kmin[t] = bin_kmin;
        s_bin_kmax[t] = bin_kmax;
    }
    barrier();
    if (t != 0u) return;

    uint max_key = row_state[o + R_MAX_KEY];
    uint min_key = row_state[o + R_MIN_KEY];
    float target;
    if (level == 0u) {
        float total = 0.0;
        for (uint b = 0u; b < BINS; ++b) total += s_bin_mass[b];
        row_state[o + R_TOTAL] = floatBitsToUint(total);
        target = float(row_uniform(row)) * 2.3283064365386963e-10 * total;  // u32 / 2^32 * total
    } else {
        target = uintBitsToFloat(row_state[o + R_TARGET]);
    }

    // Walk the bins in canonical order. Rounding can leave the target at or
    // past the last bin's end: the last bin with mass takes it then.
    uint chosen = BINS;
    uint last = 0u;
    for (uint b = 0u; b < BINS; ++b) {
        float m = s_bin_mass[b];
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
        target = s_bin_mass[last] * 0.99999994;
    }

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
    row_state[o + R_TARGET] = floatBitsToUint(target);
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
