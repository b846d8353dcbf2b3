// The draw of one row by one workgroup, once the candidates are known: either
// the candidates (sorted into canonical order and walked by exact 40-bit
// fixed-point mass until the target is passed) or a tie group larger than the
// candidate buffer (the target's index among equal masses, in id order).
#ifndef SIEVE_FINALIZE_GLSL
#define SIEVE_FINALIZE_GLSL

#include "bitonic.glsl"
#include "result.glsl"
#include "u64.glsl"

shared uint s_token;
shared uint s_found;
shared uint s_flags[WG];

uint next_pow2(uint n) { return n <= 1u ? 1u : 1u << uint(findMSB(n - 1u) + 1); }

// c_key/c_id hold n candidates. small: the whole row (the target is drawn
// here from their exact total); else a bin whose remaining target, total and
// count the selection levels left in row_state.
void draw_candidates(uint row, uint n, bool small, uint passes) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    uint m = next_pow2(max(n, 1u));
    for (uint i = n + t; i < m; i += WG) {  // padding sorts last: key 0 is below -inf's
        c_key[i] = 0u;
        c_id[i] = 0xFFFFFFFFu;
    }
    barrier();
    bitonic_sort_canonical(m);
    if (t != 0u) return;

    float max_scaled = sieve_key_value(row_state[o + R_MAX_KEY]);
    uint step = row_step(row);
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

// More than CAP members share one key, hence one mass w: the token is the
// (target / w)-th of them in id order. Its chunk comes from the last level's
// per-chunk counts, then that chunk is scanned in id order.
void draw_tie(uint row, uint passes) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    float scale = row_scale(row);
    float max_scaled = sieve_key_value(row_state[o + R_MAX_KEY]);
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
        s_found = 0u;
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
                    s_found = 1u;
                    break;
                }
                j -= 1u;
            }
        }
        barrier();
        if (s_found != 0u) break;  // uniform: read after the barrier
    }
    if (t == 0u) {
        uint step = row_step(row);
        float p = w / uintBitsToFloat(row_state[o + R_TOTAL]);
        write_result(row, s_token, p, log(p), STATUS_OK, step, passes);
        advance_step(row, step);
    }
}

#endif
