#version 450
#extension GL_GOOGLE_include_directive : require
// The last pass (one workgroup per row): the row's status, then either the
// argmax (greedy, temperature <= 0) or the draw: the candidates sorted into
// canonical order and walked by exact cumulative mass until it passes the
// target. Writes the result and advances the row's step.
//
// Small rows (vocab <= CAP) come here directly: this pass reads the row itself,
// so the whole token costs one dispatch.
#include "common.glsl"
#include "u64.glsl"
#include "row.glsl"
#include "bitonic.glsl"

shared uint s_token;
shared uint s_scan_found;
shared uint s_flags[WG];

void write_result(uint row, uint token, float p, float logprob, uint status, uint step, uint passes) {
    uint o = row * RESULT_STRIDE;
    results[o + 0u] = token;
    results[o + 1u] = floatBitsToUint(p);
    results[o + 2u] = floatBitsToUint(logprob);
    results[o + 3u] = status;
    results[o + 4u] = params[row * PARAM_STRIDE + P_SEED];
    results[o + 5u] = step;
    results[o + 6u] = passes;
    results[o + 7u] = row_state[row * ROW_STRIDE + R_FIRST_BAD];
}

void advance_step(uint row, uint step) {
    slot_state[row * SLOT_STRIDE + S_STEP] = step + 1u;
    slot_state[row * SLOT_STRIDE + S_GENERATION] = params[row * PARAM_STRIDE + P_GENERATION];
}

uint next_pow2(uint n) { return n <= 1u ? 1u : 1u << uint(findMSB(n - 1u) + 1); }

void main() {
    uint row = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    bool small = (pc.flags & FLAG_SMALL) != 0u;
    bool greedy = row_greedy(row);
    float scale = row_scale(row);
    uint step = row_step(row);

    RowStats s;
    uint status, phase = PHASE_GATHER, n = 0u, passes;
    if (small) {
        // Stats and candidates straight from the row.
        uint mk = 0u, am = 0xFFFFFFFFu, mn = 0xFFFFFFFFu, bad = 0u, fb = 0xFFFFFFFFu, fin = 0u, of = 0u;
        for (uint i = t; i < pc.vocab; i += WG) {
            float f = logits[row * pc.stride + i];
            uint k = 0u;
            if (isnan(f) || (isinf(f) && f > 0.0)) {
                bad += 1u;
                fb = min(fb, i);
            } else {
                float x = scaled_logit(f, scale);
                if (!isinf(f) && isinf(x)) of += 1u;
                k = sieve_key(x);
                if (k > mk) {
                    mk = k;
                    am = i;
                }
                if (!isinf(x)) {
                    fin += 1u;
                    mn = min(mn, k);
                }
            }
            c_key[i] = k;
            c_id[i] = i;
        }
        uvec2 r = wg_reduce_argmax(mk, am);
        s.max_key = r.x;
        s.argmax = r.y;
        r = wg_reduce_min_sum(fb, bad);
        s.first_bad = r.x;
        s.bad = r.y;
        r = wg_reduce_min_sum(mn, fin);
        s.min_finite_key = r.x;
        s.finite = r.y;
        r = wg_reduce_min_sum(0u, of);
        s.overflow = r.y;
        status = row_status(s);
        if (t == 0u) row_state[o + R_FIRST_BAD] = s.first_bad;
        n = pc.vocab;
        passes = 1u;
    } else {
        s = merge_chunk_stats(row);
        status = row_status(s);
        if (status == STATUS_OK && !greedy) status = row_state[o + R_STATUS];
        if (greedy || status != STATUS_OK) {
            if (t == 0u) row_state[o + R_FIRST_BAD] = s.first_bad;
            passes = 1u;
        } else {
            phase = row_state[o + R_PHASE];
            passes = row_state[o + R_PASSES] + 1u;  // + the gather (or the tie scan)
            if (phase == PHASE_GATHER) {
                n = min(row_state[o + R_CAND_COUNT], CAP);
                for (uint i = t; i < n; i += WG) {
                    c_key[i] = candidates[(row * CAP + i) * 2u + 0u];
                    c_id[i] = candidates[(row * CAP + i) * 2u + 1u];
                }
            }
        }
    }
    if (status != STATUS_OK) {
        if (t == 0u) write_result(row, 0xFFFFFFFFu, 0.0, 0.0, status, step, passes);
        return;
    }
    if (greedy) {
        if (t == 0u) {
            write_result(row, s.argmax, 1.0, 0.0, STATUS_OK, step, passes);
            advance_step(row, step);
        }
        return;
    }

    float max_scaled = sieve_key_value(s.max_key);

    if (phase == PHASE_TIE) {
        // More than CAP members share one key, hence one mass w: the token is the
        // (target / w)-th of them in id order. Find its chunk from the last
        // level's per-chunk counts, then scan that chunk in id order.
        uint key = row_state[o + R_KEY_LO];
        uint bin = row_state[o + R_BIN];
        float w = exp(sieve_key_value(key) - max_scaled);
        float target = uintBitsToFloat(row_state[o + R_TARGET]);
        uint members = row_state[o + R_BUCKET_COUNT];
        uint j = min(uint(target / w), members - 1u);
        uint chunk = 0u;
        for (; chunk < pc.n_chunks; ++chunk) {
            uint c = histograms[((row * pc.n_chunks + chunk) * BINS + bin) * HIST_STRIDE + H_COUNT];
            if (j < c) break;
            j -= c;
        }
        chunk = min(chunk, pc.n_chunks - 1u);
        if (t == 0u) {
            s_token = 0xFFFFFFFFu;
            s_scan_found = 0u;
        }
        barrier();
        uint begin = chunk * pc.chunk_size;
        uint end = min(begin + pc.chunk_size, pc.vocab);
        for (uint base = begin; base < end; base += WG) {
            uint i = base + t;
            s_flags[t] = (i < end && load_key(row, i, scale) == key) ? 1u : 0u;
            barrier();
            if (t == 0u) {
                for (uint x = 0u; x < WG; ++x) {
                    if (s_flags[x] == 0u) continue;
                    if (j == 0u) {
                        s_token = base + x;
                        s_scan_found = 1u;
                        break;
                    }
                    j -= 1u;
                }
            }
            barrier();
            if (s_scan_found != 0u) break;  // uniform: read after the barrier
        }
        if (t == 0u) {
            float p = w / uintBitsToFloat(row_state[o + R_TOTAL]);
            write_result(row, s_token, p, log(p), STATUS_OK, step, passes);
            advance_step(row, step);
        }
        return;
    }

    // Candidates into canonical order; padding sorts last (key 0 is below -inf's).
    uint m = next_pow2(max(n, 1u));
    for (uint i = n + t; i < m; i += WG) {
        c_key[i] = 0u;
        c_id[i] = 0xFFFFFFFFu;
    }
    barrier();
    bitonic_sort_canonical(m);

    if (t == 0u) {
        // The walk adds exact 40-bit fixed-point masses in canonical order.
        uvec2 target;
        float total;
        if (small) {
            uvec2 sum = uvec2(0u);
            for (uint i = 0u; i < n; ++i) sum = u64_add(sum, sieve_mass(sieve_key_value(c_key[i]), max_scaled));
            target = u64_mul_u32_shr32(sum, row_uniform(row));
            total = u64_to_float(sum) * 9.094947017729282e-13;  // / 2^40
        } else {
            target = fixed40(uintBitsToFloat(row_state[o + R_TARGET]));
            total = uintBitsToFloat(row_state[o + R_TOTAL]);
        }
        uint token = 0xFFFFFFFFu;
        uvec2 q = uvec2(0u);
        for (uint i = 0u; i < n; ++i) {
            uvec2 qi = sieve_mass(sieve_key_value(c_key[i]), max_scaled);
            if (qi == uvec2(0u)) continue;
            token = c_id[i];  // rounding past the end: the last member with mass
            q = qi;
            if (u64_less(target, qi)) break;
            target = u64_sub(target, qi);
        }
        float p = u64_to_float(q) * 9.094947017729282e-13 / total;
        write_result(row, token, p, log(p), STATUS_OK, step, passes);
        advance_step(row, step);
    }
}
