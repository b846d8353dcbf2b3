#version 450
#extension GL_GOOGLE_include_directive : require
// The second dispatch of a truncating chain: one workgroup per row merges the
// chunks' sorted lists (collect.comp) into the row's top `need`, runs the
// chain on them (tail.glsl) and draws, or hands the row to the wide passes.
// A separate dispatch, not the chunks' last workgroup: a CPU device runs
// every line of a shader under a lane mask in every workgroup, taken or not,
// so the chunks' shader carries none of this code.
#include "common.glsl"
#include "row.glsl"
#include "result.glsl"
#include "agg.glsl"
#include "wide.glsl"
#include "tail.glsl"
#include "selectors.glsl"
#include "collect.glsl"

// sieve_chain_distribution: per row, at (2 * stride + 2) words: [count or
// STATUS_FALLBACK, step, count x (id, p bits)] in canonical order.
layout(std430, set = 0, binding = 8) writeonly buffer DistOut { uint dist_out[]; };

shared uint s_fill;
shared uint s_pos[MAX_COLLECT_CHUNKS], s_lim[MAX_COLLECT_CHUNKS];  // the merge's lists

void write_distribution(uint row, uint n, float total, uint step) {
    uint base = row * (2u * pc.stride + 2u);
    uint t = gl_LocalInvocationID.x;
    if (t == 0u) {  // the row's status, as sampling would report it
        results[row * RESULT_STRIDE + 3u] = s_status;
        results[row * RESULT_STRIDE + 7u] = row_state[row * ROW_STRIDE + R_FIRST_BAD];
    }
    if (s_fallback != 0u || s_status != STATUS_OK) {
        if (t == 0u) {
            dist_out[base] = s_fallback != 0u ? STATUS_FALLBACK : 0u;
            dist_out[base + 1u] = step;
        }
        return;
    }
    bool greedy = (pc.flags & FLAG_GREEDY) != 0u;
    float v0 = cand_value(0u);
    uint count = 0u;
    for (uint i = 0u; i < n; ++i) count += (greedy ? i == 0u : c_key[i] != KEY_NEG_INF) ? 1u : 0u;
    if (t == 0u) {
        dist_out[base] = count;
        dist_out[base + 1u] = step;
    }
    // Finite entries form a prefix of the canonical order.
    for (uint i = t; i < count; i += WG) {
        dist_out[base + 2u + 2u * i] = c_id[i];
        dist_out[base + 3u + 2u * i] = floatBitsToUint(greedy ? 1.0 : cand_mass(i, v0) / total);
    }
}

// Leaves the row to wide_histogram and wide_gather: what the cut knows, the
// buffer's entries at the draw's temperatures, and their mass.
void hand_to_wide(uint row, uint n) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    uint buf = wide_buffer_at(row);
    for (uint i = t; i < n; i += WG) {
        wide[buf + 2u * i] = c_key[i];
        wide[buf + 2u * i + 1u] = c_id[i];
    }
    if (t != 0u) return;
    float v0 = cand_value(0u);
    uvec2 bd = uvec2(0u);
    for (uint i = 0u; i < n; ++i) bd = u64_add(bd, sieve_mass(cand_value(i), v0));
    float vn = sieve_key_value(s_wide_kn);
    float lowest = min(s_wide_lowest, vn);
    float scale = wide_scale(vn - lowest, max(abs(vn), abs(lowest)), false);  // the bins' grid (wide.glsl: wide_bin)
    row_state[o + R_WIDE_KN] = s_wide_kn;
    row_state[o + R_WIDE_IDN] = s_wide_idn;
    row_state[o + R_WIDE_MC] = floatBitsToUint(s_wide_mc);
    row_state[o + R_WIDE_MD] = floatBitsToUint(v0);
    row_state[o + R_WIDE_L] = floatBitsToUint(lowest);
    row_state[o + R_WIDE_INVW] = floatBitsToUint(scale);
    row_state[o + R_WIDE_TOP] = floatBitsToUint(wide_grid(vn, scale));
    row_state[o + R_WIDE_NT] = s_wide_divisions | (s_divisions << 16u);  // (WIDE_DEFERRED in s_wide_divisions)
    row_state[o + R_WIDE_RC] = floatBitsToUint(s_wide_rc);
    row_state[o + R_WIDE_BD] = floatBitsToUint(u64_to_float(bd) * 9.094947017729282e-13);  // / 2^40
    row_state[o + R_WIDE_N] = n;
    row_state[o + R_WIDE_KEEP] = param_u(row, P_MIN_KEEP);
    row_state[o + R_WIDE_PHASE] = WIDE_HIST;
    atomicMax(dispatch_args[pc.args_base + WIDE_HIST_ARGS], pc.n_chunks);
}

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    bind_row(row);
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    bool small = (pc.flags & FLAG_SMALL) != 0u;
    uint need = clamp(param_u(row, P_NEED), 1u, HALF);
    uint row_flags = param_u(row, P_ROW_FLAGS);
    uint region = row * ROW_WORDS;

    RowStats s = merge_chunk_stats(row);
    Agg a;
    uint n;
    if (small) {
        // The whole row, sorted, is chunk 0's list (its aggregates are empty:
        // the tail computes what it needs from the array).
        n = pc.vocab;
        for (uint i = t; i < n; i += WG) {
            c_key[i] = candidates[region + 2u * i];
            c_id[i] = candidates[region + 2u * i + 1u];
        }
        a = agg_empty();
        barrier();
    } else {
        if (t == 0u) {
            Agg m = agg_empty();
            for (uint c = 0u; c < pc.n_chunks; ++c) m = agg_combine(m, read_agg((row * pc.n_chunks + c) * CHUNK_STRIDE));
            red_agg[0][0] = m.count;
            red_agg[1][0] = m.mean;
            red_agg[2][0] = m.m2;
            red_agg[3][0] = m.mmax;
            red_agg[4][0] = m.msum;
        }
        // The chunks' lists are sorted: one invocation walks their heads (in
        // the candidates buffer) into the row's top `need`, at most need x
        // chunks reads. (Sorting them together in one workgroup costs a
        // barrier per stage: on a CPU device about 2 ms for top-k 1000.)
        if (t == 0u) {
            for (uint c = 0u; c < pc.n_chunks; ++c) {
                s_pos[c] = chunk_list_at(row, c);
                s_lim[c] = s_pos[c] + 2u * chunk_stats[(row * pc.n_chunks + c) * CHUNK_STRIDE + C_KEPT];
            }
            uint made = 0u;
            for (; made < need; ++made) {
                uint best = 0xFFFFFFFFu, bk = 0u, bi = 0u;
                for (uint c = 0u; c < pc.n_chunks; ++c) {
                    uint at_c = s_pos[c];
                    if (at_c >= s_lim[c]) continue;
                    uint k = candidates[at_c], i = candidates[at_c + 1u];
                    if (best == 0xFFFFFFFFu || canonical_after(bk, bi, k, i)) {
                        best = c;
                        bk = k;
                        bi = i;
                    }
                }
                if (best == 0xFFFFFFFFu) break;
                c_key[made] = bk;
                c_id[made] = bi;
                s_pos[best] += 2u;
            }
            s_fill = made;
        }
        barrier();
        n = s_fill;
        a = Agg(red_agg[0][0], red_agg[1][0], red_agg[2][0], red_agg[3][0], red_agg[4][0]);
        // The row's maximum is its first candidate (canonical: the first maximal id).
        s.max_key = c_key[0];
        s.argmax = c_id[0];
        s.finite = n > 0u && c_key[0] > KEY_NEG_INF ? 1u : 0u;
    }

    uint status = row_status(s);
    uint step = row_step(row);
    if (t == 0u) {
        row_state[o + R_STATUS] = status;
        row_state[o + R_FIRST_BAD] = s.first_bad;
        s_n = n;
        s_rest = pc.vocab - n;
        s_rest_kind = n == pc.vocab ? REST_NONE : (c_key[n - 1u] == KEY_NEG_INF ? REST_MASKED : REST_UNKNOWN);
        s_fallback = 0u;
        s_status = status;
        s_agg_ok = 1u;
        s_tprod = 1.0;
        s_rest_min = sieve_key_value(s.min_finite_key);
        // Nothing was dropped for the top-need cut (n < need): the rest is
        // exactly what the min-p floor dropped.
        s_floor_ok = (row_flags & ROW_FLOOR) != 0u ? 1u : 0u;
        s_need = need;
        s_wide = 0u;
        s_divisions = 0u;
        row_state[o + R_WIDE_PHASE] = WIDE_NONE;
    }
    // The buffer reads below follow this workgroup's own writes (scratch).
    memoryBarrierBuffer();
    barrier();
    if (status == STATUS_OK) run_chain(row, a, region);
    barrier();
    selector_before_draw(row, a.msum, region);

    // The draw: greedy takes entry 0 (the first maximal logit); dist walks the
    // canonical order by exact 40-bit masses (finalize.glsl's rule).
    n = s_n;
    bool greedy = (pc.flags & FLAG_GREEDY) != 0u;
    // A top-p cut past the buffer, then only temperatures: the wide passes
    // finish the row (wide.glsl). (--dump-dist of such a row, which lists
    // thousands of survivors, stays with the CPU twin.)
    bool wide_row = s_rest_kind == REST_CUT && s_wide != 0u && tail_live() && !greedy && pc.wide_cap > 0u &&
                    (pc.flags & FLAG_DISTRIBUTION) == 0u &&  // uniform: shared, after run_chain's barrier
                    (CHAIN_SELECTOR == SELECT_DIST || CHAIN_SELECTOR == SELECT_ADAPTIVE) &&  // mirostat's draw learns
                    s_divisions <= WIDE_MAX_DIVISIONS;
    if (wide_row) {
        hand_to_wide(row, n);
        return;
    }
    if (t == 0u && tail_live() && !greedy) {
        float total = array_total(row, n, a.msum);
        if (total < 0.0) s_fallback = 1u;
        s_total = total;
    }
    barrier();
    if ((pc.flags & FLAG_DISTRIBUTION) != 0u) {
        write_distribution(row, n, s_total, step);
        return;
    }
    if (t != 0u) return;
    // A failed row fails whatever else is unsure (its step stays; a row
    // handed to the twin advances it, the twin drawing its token).
    if (s_status != STATUS_OK) {
        write_result(row, 0xFFFFFFFFu, 0.0, 0.0, s_status, step, 1u);
        return;
    }
    if (s_fallback != 0u) {
        write_result(row, 0xFFFFFFFFu, 0.0, 0.0, STATUS_FALLBACK, step, 1u);
        advance_step(row, step);
        return;
    }
    if (greedy) {
        write_result(row, c_id[0], 1.0, 0.0, STATUS_OK, step, 1u);
        advance_step(row, step);
        return;
    }
    float v0 = cand_value(0u);
    float total = s_total;
    bool whole = s_rest_kind == REST_NONE || s_rest_kind == REST_MASKED;
    uvec2 exact = uvec2(0u);
    if (whole)
        for (uint i = 0u; i < n; ++i) exact = u64_add(exact, sieve_mass(cand_value(i), v0));
    else
        exact = fixed40(total);
    if (whole) total = u64_to_float(exact) * 9.094947017729282e-13;  // / 2^40
    uvec2 target = u64_mul_u32_shr32(exact, row_uniform(row));
    uint token = 0xFFFFFFFFu;
    uvec2 q = uvec2(0u);
    bool found = false;
    for (uint i = 0u; i < n; ++i) {
        uvec2 qi = sieve_mass(cand_value(i), v0);
        if (qi == uvec2(0u)) continue;
        token = c_id[i];
        q = qi;
        if (u64_less(target, qi)) {
            found = true;
            break;
        }
        target = u64_sub(target, qi);
    }
    if (!found && !whole) {  // the draw falls past the buffer
        write_result(row, 0xFFFFFFFFu, 0.0, 0.0, STATUS_FALLBACK, step, 1u);
        advance_step(row, step);
        return;
    }
    float p = u64_to_float(q) * 9.094947017729282e-13 / total;
    selector_learn(row, token, p, region);
    write_result(row, token, p, log(p), STATUS_OK, step, 1u);
    advance_step(row, step);
}
