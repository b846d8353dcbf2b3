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

// Exact-mass selection levels inside the workgroup: the candidates' keys in
// [lo, hi] split into 16 equal key ranges, masses added exactly (40-bit fixed
// point, so the order of additions does not matter), the range holding the
// target kept, until at most FINAL candidates remain. Cheaper than sorting all
// candidates: a handful of barriers per level instead of one per sort stage.
const uint FINAL = 16u;
const uint BIN_THREADS = WG < 32u ? WG : 32u;

shared uint f_qlo[BIN_THREADS][BINS];
shared uint f_qhi[BIN_THREADS][BINS];
shared uint f_cnt[BIN_THREADS][BINS];
shared uint f_lo, f_hi, f_state;
shared uvec2 f_target, f_total;

const uint SELECT_GOING = 0u;
const uint SELECT_FINAL = 1u;  // at most FINAL candidates in [f_lo, f_hi]
const uint SELECT_TIE = 2u;    // more than FINAL candidates share the key f_lo

// Candidate i's place after j in canonical order (key descending, id ascending).
bool after(uint ki, uint ii, uint kj, uint ij) { return ki < kj || (ki == kj && ii > ij); }

// The token at `target` among the candidates in canonical order, walking exact
// masses; rounding past the end gives the last one with mass.
void walk_sorted(uint n, uvec2 target, float max_scaled, out uint token, out uvec2 q) {
    token = 0xFFFFFFFFu;
    q = uvec2(0u);
    for (uint i = 0u; i < n; ++i) {
        uvec2 qi = sieve_mass(sieve_key_value(c_key[i]), max_scaled);
        if (qi == uvec2(0u)) continue;
        token = c_id[i];
        q = qi;
        if (u64_less(target, qi)) break;
        target = u64_sub(target, qi);
    }
}

// c_key/c_id hold n candidates whose finite keys lie in [lo, hi]. small: the
// whole row, in id order (the target is drawn here from their exact total);
// else a bin whose remaining target and total the selection levels left in
// row_state.
void draw_candidates(uint row, uint n, bool small, uint lo, uint hi, uint passes) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    float max_scaled = sieve_key_value(row_state[o + R_MAX_KEY]);
    if (t == 0u) {
        f_lo = lo;
        f_hi = hi;
        f_state = SELECT_GOING;
        f_target = small ? uvec2(0u) : row_target(row);
    }
    for (uint level = 0u; level <= KEY_LEVELS; ++level) {
        barrier();
        uint l = f_lo, h = f_hi, step = key_step(l, h);
        if (t < BIN_THREADS) {
            uvec2 q[BINS];
            uint c[BINS];
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                q[b] = uvec2(0u);
                c[b] = 0u;
            }
            for (uint i = t; i < n; i += BIN_THREADS) {
                uint k = c_key[i];
                if (k < l || k > h) continue;
                uint bin = key_bin(k, h, step);
                uvec2 qi = sieve_mass(sieve_key_value(k), max_scaled);
                [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                    bool here = bin == b;
                    q[b] = u64_add(q[b], here ? qi : uvec2(0u));
                    c[b] += here ? 1u : 0u;
                }
            }
            [[unroll]] for (uint b = 0u; b < BINS; ++b) {
                f_qlo[t][b] = q[b].x;
                f_qhi[t][b] = q[b].y;
                f_cnt[t][b] = c[b];
            }
        }
        barrier();
        if (t < BINS) {  // column t: only this invocation reads and writes it
            uvec2 q = uvec2(0u);
            uint c = 0u;
            for (uint j = 0u; j < BIN_THREADS; ++j) {
                q = u64_add(q, uvec2(f_qlo[j][t], f_qhi[j][t]));
                c += f_cnt[j][t];
            }
            f_qlo[0][t] = q.x;
            f_qhi[0][t] = q.y;
            f_cnt[0][t] = c;
        }
        barrier();
        if (t == 0u) {
            uvec2 target = f_target;
            if (small && level == 0u) {
                uvec2 total = uvec2(0u);
                for (uint b = 0u; b < BINS; ++b) total = u64_add(total, uvec2(f_qlo[0][b], f_qhi[0][b]));
                f_total = total;
                target = u64_mul_u32_shr32(total, row_uniform(row));
            }
            uint chosen = BINS, last = 0u;
            for (uint b = 0u; b < BINS; ++b) {
                uvec2 m = uvec2(f_qlo[0][b], f_qhi[0][b]);
                if (m == uvec2(0u)) continue;
                last = b;
                if (u64_less(target, m)) {
                    chosen = b;
                    break;
                }
                target = u64_sub(target, m);
            }
            if (chosen == BINS) {  // the target is below the bins' exact total: a damaged state only
                chosen = last;
                target = u64_sub(uvec2(f_qlo[0][last], f_qhi[0][last]), uvec2(1u, 0u));
            }
            uint new_hi = h - chosen * step;
            uint new_lo = new_hi - l >= step - 1u ? new_hi - (step - 1u) : l;
            uint count = f_cnt[0][chosen];
            f_lo = new_lo;
            f_hi = new_hi;
            f_target = target;
            f_state = count <= FINAL ? SELECT_FINAL : (new_lo == new_hi ? SELECT_TIE : SELECT_GOING);
        }
        barrier();
        if (f_state != SELECT_GOING) break;  // uniform: read after the barrier
    }
    if (t != 0u && !(f_state == SELECT_TIE && !small)) return;

    uint step = row_step(row);
    float total = small ? fixed40_value(f_total) : uintBitsToFloat(row_state[o + R_TOTAL]);
    uint token;
    uvec2 q;
    if (f_state == SELECT_FINAL) {
        // At most FINAL members: move them to the front, insertion-sorted
        // canonically (a write never passes the read position), and walk.
        uint m = 0u;
        for (uint i = 0u; i < n && m < FINAL; ++i) {
            uint k = c_key[i];
            if (k < f_lo || k > f_hi) continue;
            uint id = c_id[i];
            uint j = m++;
            for (; j > 0u && after(c_key[j - 1u], c_id[j - 1u], k, id); --j) {
                c_key[j] = c_key[j - 1u];
                c_id[j] = c_id[j - 1u];
            }
            c_key[j] = k;
            c_id[j] = id;
        }
        walk_sorted(m, f_target, max_scaled, token, q);
    } else if (small) {
        // A tie group of one key: the (target / q)-th member in id order, and
        // the small path's candidates are in id order.
        q = sieve_mass(sieve_key_value(f_lo), max_scaled);
        uint j = u64_div(f_target, q).x;
        token = 0xFFFFFFFFu;
        for (uint i = 0u; i < n; ++i) {
            if (c_key[i] != f_lo) continue;
            token = c_id[i];
            if (j == 0u) break;
            --j;
        }
    } else {
        // Gathered candidates are in no particular order: sort them all
        // canonically (the whole workgroup) and walk from the bin's target.
        sort_prefix(n);
        if (t != 0u) return;
        walk_sorted(n, row_target(row), max_scaled, token, q);
    }
    float p = fixed40_value(q) / total;
    write_result(row, token, p, log(p), STATUS_OK, step, passes);
    advance_step(row, step);
}

// More than CAP members share one key, hence one mass w: the token is the
// (target / w)-th of them in id order, the target being what the levels left
// of it inside the group (exact 40-bit masses, scan.glsl), so the member does
// not depend on the chunking. tie_members (every chunk) counts the chunk's
// members of the group.
shared uint s_tie_members;

// Logit i of the row is a member of the tie group of `key` (at or above the
// levels' raw floor too: row.glsl, level_floor).
bool tie_member(uint row, uint i, float scale, uint key, float raw_floor) {
    float f = row_logit(row, i);
    return sieve_key(scaled_logit(f, scale)) == key && f >= raw_floor;
}

void tie_members(uint row, uint chunk) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    float scale = row_scale(row);
    uint key = row_state[o + R_KEY_LO];
    if (t == 0u) s_tie_members = 0u;
    barrier();
    uint members = 0u;
    uint end = min((chunk + 1u) * pc.chunk_size, pc.vocab);
    float raw_floor = level_floor(row);
    for (uint i = chunk * pc.chunk_size + t; i < end; i += WG) members += tie_member(row, i, scale, key, raw_floor) ? 1u : 0u;
    atomicAdd(s_tie_members, members);
    barrier();
    if (t == 0u) chunk_stats[(row * pc.n_chunks + chunk) * CHUNK_STRIDE + C_TIE] = s_tie_members;
}

// The last workgroup, after every chunk's tie_members: the member's chunk from
// the chunks' member counts, then that chunk scanned in id order.
void draw_tie(uint row, uint passes) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    float scale = row_scale(row);
    float max_scaled = sieve_key_value(row_state[o + R_MAX_KEY]);
    uint key = row_state[o + R_KEY_LO];
    uvec2 w = sieve_mass(sieve_key_value(key), max_scaled);  // > 0: the levels chose a bin with mass
    uvec2 jj = u64_div(row_target(row), w);
    uint j = jj.y == 0u ? jj.x : 0xFFFFFFFFu;
    uint chunk = 0u;
    for (; chunk < pc.n_chunks; ++chunk) {
        uint c = chunk_stats[(row * pc.n_chunks + chunk) * CHUNK_STRIDE + C_TIE];
        if (j < c) break;
        j -= c;
    }
    if (t == 0u) {
        s_token = 0xFFFFFFFFu;
        s_found = 0u;
    }
    barrier();
    uint begin = chunk * pc.chunk_size;
    uint end = chunk < pc.n_chunks ? min(begin + pc.chunk_size, pc.vocab) : begin;  // past the group (a damaged state): no scan
    float raw_floor = level_floor(row);
    for (uint base = begin; base < end; base += WG) {
        uint i = base + t;
        s_flags[t] = (i < end && tie_member(row, i, scale, key, raw_floor)) ? 1u : 0u;
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
        if (s_found == 0u) {  // a damaged state only (the exact target lies in the group): the twin
            write_fallback(row, step, passes);
            return;
        }
        float p = fixed40_value(w) / uintBitsToFloat(row_state[o + R_TOTAL]);
        write_result(row, s_token, p, log(p), STATUS_OK, step, passes);
        advance_step(row, step);
    }
}

#endif
