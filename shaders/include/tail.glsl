// The chain on the candidates, in one workgroup: a port of the CPU twin's
// candidate-array samplers (engine/reference/), each with the llama.cpp rule
// its twin cites. c_key/c_id hold the first n entries of llama.cpp's array in
// canonical order (value descending, ties by lower id; keys are of the current
// values); the entries after them ("the rest") are described, not stored:
//   REST_NONE     the array ends at n;
//   REST_MASKED   s_rest more entries, all -inf (masked members still count);
//   REST_UNKNOWN  s_rest more entries, the row's next values in canonical
//                 order: untouched so far (s_agg_ok: full-row aggregates
//                 describe the whole array), or, with s_agg_ok 0, cut short
//                 by a top-k past the buffer or partly masked by top-n-sigma
//                 (a later cut inside the buffer still finishes the row);
//   REST_CUT      an unknown number of them (a cut fell past the buffer).
// A sampler that needs what the rest hides sets s_fallback: the row goes to the
// CPU twin (cpu_fallback_rows), never a guess. Samplers keep the array in
// canonical order: llama.cpp's results depend only on the set and canonical
// cuts (docs/semantics.md). Probabilities are float here (the twin: double);
// the tests allow a difference only at a threshold, or in a dynamic
// temperature a few float steps from the twin's.
//
// Every function is called by the whole workgroup. The work over the
// candidates is spread over it (wg_scan.glsl): masses are exact 40-bit
// fixed-point integers (sieve_mass), so sums and cumulative sums do not
// depend on the order of additions; a cut is the first index any invocation
// offers (wg_first_*). Decisions are then taken by invocation 0 into shared
// memory and read after a barrier.
#ifndef SIEVE_TAIL_GLSL
#define SIEVE_TAIL_GLSL

#include "bitonic.glsl"
#include "u64.glsl"
#include "ksum.glsl"
#include "wg_scan.glsl"
#include "phase_clock.glsl"

const uint REST_NONE = 0u;
const uint REST_MASKED = 1u;
const uint REST_UNKNOWN = 2u;
const uint REST_CUT = 3u;

// 1 on a CPU device (EffectiveLimits::cpu_paths): top-p, min-p and the draw
// (collect_tail.glsl) decide on invocation 0 with serial loops, as before
// the workgroup-wide versions. On lavapipe each barrier costs microseconds
// (a switch through every SIMD batch of the workgroup) while a lone
// invocation's loop over 40 candidates costs about as much as one: the
// parallel forms' extra barriers (three to five per op) made the default
// chain's collect_tail slower there. A GPU takes the parallel forms.
layout(constant_id = SPEC_TAIL_SERIAL) const uint TAIL_SERIAL = 0u;

shared uint s_n, s_rest, s_rest_kind, s_fallback, s_status;
shared uint s_agg_ok;     // the array is still the whole row (the full-row aggregates describe it)
shared uint s_floor_ok;   // FLOOR_*: the collect pass ran min-p's floor (collect_chunk.glsl)
const uint FLOOR_NONE = 0u, FLOOR_WHOLE = 1u, FLOOR_OPEN = 2u;  // no floor; the rest fails min-p; unknown
shared float s_tprod;     // temperatures applied while the rest is REST_UNKNOWN
// min-p's survivors reach past the buffer, and the recording's key levels
// can draw from them (collect_tail.glsl: hand_to_levels): s_fallback is set
// too (nothing after min-p runs), and s_level_floor is min-p's threshold.
// 2: after a top-p whose cut fell past the buffer, which level 1 shows to
// lie past the survivors first (LEVEL_CUT_CHECK).
shared uint s_floor_levels;
shared float s_level_floor;
// Current value of the row's smallest finite logit; once the array is no
// longer the whole row (s_agg_ok 0), a lower bound of the rest's.
shared float s_rest_min;
shared float s_total;     // scratch: a mass total
// A top-p cut past the buffer that two more passes can finish (wide.glsl):
// set by op_top_p, cleared by any later sampler that would need more than the
// cut and the temperature divisions.
shared uint s_wide;
shared uint s_divisions;  // temperature divisions applied so far (op_divide)
shared uint s_wide_divisions, s_wide_kn, s_wide_idn;
shared float s_wide_mc, s_wide_rc, s_wide_lowest;
shared float s_wide_need;  // the cut's target, p times the row's mass (reference MC; not a deferred cut's)

float cand_value(uint i) { return sieve_key_value(c_key[i]); }

shared uint s_unsorted;  // resort_nearly_sorted: a finite entry out of canonical order

// Restores canonical order after a monotone change of the values (a division
// by t > 0 can make equal values of different keys, never reverse two): the
// keys stay non-increasing, so only ids within a run of equal keys can be out
// of order. The workgroup checks each adjacent pair at once (s_unsorted, set
// to 0 by the caller before a barrier); only a row where the change made such
// a tie is sorted again (bitonic). Masked (-inf) members stay at the end in
// whatever order: no result depends on their order.
void resort_nearly_sorted(uint n) {
    for (uint i = 1u + gl_LocalInvocationID.x; i < n; i += WG)
        if (c_key[i] != KEY_NEG_INF && canonical_after(c_key[i - 1u], c_id[i - 1u], c_key[i], c_id[i]))
            s_unsorted = 1u;  // benign race: every writer writes the same
    barrier();
    if (s_unsorted != 0u) sort_prefix(n);  // uniform: shared, after a barrier
}

// Everything a sampler decides is valid only without a pending fallback.
bool tail_live() { return s_fallback == 0u && s_status == STATUS_OK; }

// The mass of entry i relative to entry 0 (the maximum).
float cand_mass(uint i, float v0) { return exp(cand_value(i) - v0); }

// This invocation's share of the masses of c[0, n) relative to entry 0 (every
// WG-th entry from its own).
uvec2 strided_mass(uint n) {
    float v0 = cand_value(0u);
    uvec2 part = uvec2(0u);
    for (uint i = gl_LocalInvocationID.x; i < n; i += WG) part = u64_add(part, sieve_mass(cand_value(i), v0));
    return part;
}

// The array's softmax total relative to its maximum, or -1 when the rest hides
// it, given `buffer_mass`, the exact masses of the n entries (the whole
// array's when the rest is known). Aggregates apply while the rest is
// untouched and the temperatures applied are the ones the mass was summed at.
float array_total_from(uint row, uvec2 buffer_mass, float agg_mass) {
    if (s_rest_kind == REST_UNKNOWN) {
        bool summed = (param_u(row, P_ROW_FLAGS) & ROW_NEED_MASS) != 0u;
        return (summed && s_agg_ok != 0u && s_tprod == param_f(row, P_AGG_T)) ? agg_mass : -1.0;
    }
    if (s_rest_kind == REST_CUT) return -1.0;
    return fixed40_value(buffer_mass);
}

// The same, computed by the whole workgroup (s_rest_kind read by all: call it
// after a barrier that follows its last change); every invocation gets it.
float array_total(uint row, uint n, float agg_mass) {
    bool rest_hides = s_rest_kind == REST_UNKNOWN || s_rest_kind == REST_CUT;
    uvec2 mass = rest_hides ? uvec2(0u) : wg_sum_u64(strided_mass(n));  // uniform: shared
    return array_total_from(row, mass, agg_mass);
}

// The same by one invocation (the serial paths, TAIL_SERIAL): a compensated
// float sum, -1 when the rest hides it.
float array_total_serial(uint row, uint n, float agg_mass) {
    if (s_rest_kind == REST_UNKNOWN) {
        bool summed = (param_u(row, P_ROW_FLAGS) & ROW_NEED_MASS) != 0u;
        return (summed && s_agg_ok != 0u && s_tprod == param_f(row, P_AGG_T)) ? agg_mass : -1.0;
    }
    if (s_rest_kind == REST_CUT) return -1.0;
    float v0 = cand_value(0u);
    vec2 total = vec2(0.0);
    for (uint i = 0u; i < n; ++i) ksum_add(total, cand_mass(i, v0));
    return total.x;
}

uint array_size_known(uint n) { return n + s_rest; }  // not for REST_CUT

// llama_sampler_temp_impl: t <= 0 keeps the first maximal logit (entry 0) and
// masks the others; else logit / t, a finite logit overflowing fails the row.
void op_divide(uint row, float temperature) {
    uint t = gl_LocalInvocationID.x;
    uint n = s_n;
    if (!(temperature > 0.0)) {
        for (uint i = 1u + t; i < n; i += WG) c_key[i] = KEY_NEG_INF;
        if (t == 0u) {
            if (s_rest_kind == REST_UNKNOWN) s_rest_kind = REST_MASKED;
            if (s_rest_kind == REST_CUT) s_fallback = 1u;  // the count of masked entries is unknown
        }
        barrier();
        return;
    }
    bool overflow = false;
    for (uint i = t; i < n; i += WG) {
        float v = cand_value(i);
        if (isinf(v)) continue;
        float x = sieve_div(v, temperature);
        overflow = overflow || isinf(x);
        c_key[i] = sieve_key(x);
    }
    if (overflow) s_status = STATUS_NON_FINITE;  // benign race: every writer writes the same
    if (t == 0u) {
        ++s_divisions;
        s_unsorted = 0u;  // resort_nearly_sorted's flag
    }
    barrier();
    if (t == 0u && s_rest_kind != REST_NONE && s_rest_kind != REST_MASKED) {
        // The rest's values are divided too: its extreme must not overflow.
        // Once the array is not the whole row (REST_CUT, or s_agg_ok 0:
        // past a top-p cut, L; past a top-k, top-n-sigma's mask or XTC's
        // drop, the row's smallest or the mask's threshold) the extreme is
        // a bound below the survivors: only the CPU twin can tell whether
        // one overflows (the twin divides survivors only, as llama.cpp's
        // array holds them).
        float x = sieve_div(s_rest_min, temperature);
        if (isinf(x) && !isinf(s_rest_min)) {
            if (s_rest_kind == REST_CUT || s_agg_ok == 0u) s_fallback = 1u;
            else s_status = STATUS_NON_FINITE;
        }
        s_rest_min = x;
        s_tprod *= temperature;
    }
    resort_nearly_sorted(n);  // the division can make equal values of different keys
}

// llama_sampler_top_k_impl: k <= 0 no-op; keep the first min(k, size).
void op_top_k(int k) {
    if (gl_LocalInvocationID.x == 0u && k > 0) {
        uint n = s_n, kk = uint(k);
        if (kk <= n) {
            s_n = kk;
            s_rest = 0u;
            s_rest_kind = REST_NONE;
        } else if (s_rest_kind == REST_MASKED) {
            s_rest = min(kk - n, s_rest);
        } else if (s_rest_kind == REST_UNKNOWN) {
            // k reaches into entries the buffer does not hold: the array is
            // now the row's first k, the rest's count known, its mass not.
            s_rest = min(kk - n, s_rest);
            s_agg_ok = 0u;
        } else if (s_rest_kind != REST_NONE) {
            s_fallback = 1u;  // past a cut the buffer does not end (REST_CUT): the k-th is unknown
        }
    }
    barrier();
}

// After a cut at `last` entries (last may pass n into a masked rest).
void keep_first(uint last) {
    uint n = s_n;
    if (last <= n) {
        s_n = last;
        s_rest = 0u;
        s_rest_kind = REST_NONE;
    } else {
        s_rest = last - n;  // REST_MASKED only
    }
}

// Leaves a top-p cut to the wide passes (wide.glsl), which find it past the
// buffer (invocation 0): the buffer's last entry, its maximum, the mass still
// needed past it (`rest`), and the lowest value the cut can reach, L, from
// the mass `bound` (a little lower for rounding). `divisions`: the
// temperature divisions they apply (WIDE_DEFERRED: they also sum the mass).
void hand_cut_to_wide(uint n, float p, float v0, uint divisions, float rest, float bound) {
    s_rest_kind = REST_CUT;
    s_agg_ok = 0u;
    s_wide = 1u;
    s_wide_divisions = divisions;
    s_wide_kn = c_key[n - 1u];
    s_wide_idn = c_id[n - 1u];
    s_wide_mc = v0;
    s_wide_rc = rest;
    s_wide_need = p * bound;
    float lowest = v0 + log((1.0 - p) * bound / float(pc.vocab));
    s_wide_lowest = lowest - 1e-4 * (abs(lowest) + 1.0);
    s_rest_min = max(s_rest_min, s_wide_lowest);  // the survivors' lowest value (op_divide)
}

// top-p's cut once the walk is done (invocation 0): `last` the entries it
// keeps (past n: the cumulative mass did not reach the target within the
// buffer with min_keep met), `reached` whether the buffer's mass reaches the
// target, `rest` the mass still needed past the buffer.
void top_p_cut(uint last, bool reached, uint n, uint min_keep, float p, float v0, float total, float rest) {
    if (last <= n) {
        keep_first(last);
    } else if (s_rest_kind == REST_MASKED) {
        // Masked members add no mass: the cut is where min_keep allows.
        keep_first(reached ? min(max(n + 1u, min_keep), n + s_rest) : n + s_rest);
    } else if (s_rest_kind == REST_UNKNOWN) {
        // The array is the whole row at these temperatures: the cut is the
        // canonical prefix whose mass reaches the target, which
        // wide_histogram/wide_gather find past the buffer.
        hand_cut_to_wide(n, p, v0, s_divisions, rest, total);
    }
}

// op_top_p by invocation 0 (TAIL_SERIAL): the cumulative sum walks the
// canonical order in a compensated float sum.
void op_top_p_serial(uint row, float p, uint min_keep, float agg_mass) {
    bool deferred = (param_u(row, P_ROW_FLAGS) & ROW_DEFER_TOP_P) != 0u && s_rest_kind == REST_UNKNOWN &&
                    pc.wide_cap > 0u && (pc.flags & FLAG_DISTRIBUTION) == 0u;
    if (gl_LocalInvocationID.x == 0u && p < 1.0 && deferred) {
        // The row's only cut, and nothing summed its mass: the wide passes
        // find the cut, in the buffer or past it (wide.glsl). They need the
        // buffer at these temperatures and its mass.
        uint n = s_n;
        float v0 = cand_value(0u);
        vec2 acc = vec2(0.0);
        uint keys = wide_cut_keys_at(row);
        for (uint i = 0u; i < n; ++i) {
            ksum_add(acc, cand_mass(i, v0));
            wide[keys + i] = c_key[i];
        }
        hand_cut_to_wide(n, p, v0, s_divisions | WIDE_DEFERRED, acc.x - acc.y, acc.x - acc.y);
    } else if (gl_LocalInvocationID.x == 0u && p < 1.0) {
        uint n = s_n;
        float total = array_total_serial(row, n, agg_mass);
        if (total < 0.0) {
            s_fallback = 1u;
        } else {
            float v0 = cand_value(0u), target = p * total;
            vec2 acc = vec2(0.0);
            uint last = 0xFFFFFFFFu;
            for (uint i = 0u; i < n; ++i) {
                ksum_add(acc, cand_mass(i, v0));
                if (acc.x >= target && i + 1u >= min_keep) {
                    last = i + 1u;
                    break;
                }
            }
            top_p_cut(last, acc.x >= target, n, min_keep, p, v0, total, target - (acc.x - acc.y));
        }
    }
    barrier();
}

// llama_sampler_top_p_apply: p >= 1 no-op; the smallest canonical prefix with
// cumulative probability >= p and at least min_keep entries. The cumulative
// masses are exact fixed-point sums (a prefix sum over the workgroup's
// blocks): the cut is the first entry where the sum reaches the target, with
// the target in the same fixed point.
void op_top_p(uint row, float p, uint min_keep, float agg_mass) {
    if (!(p < 1.0)) return;  // uniform
    uint t = gl_LocalInvocationID.x;
    bool deferred = (param_u(row, P_ROW_FLAGS) & ROW_DEFER_TOP_P) != 0u && s_rest_kind == REST_UNKNOWN &&
                    pc.wide_cap > 0u && (pc.flags & FLAG_DISTRIBUTION) == 0u;  // uniform: shared
    uint n = s_n;
    float v0 = cand_value(0u);
    uint first, end;
    wg_block(n, first, end);
    uvec2 part = uvec2(0u);
    for (uint i = first; i < end; ++i) part = u64_add(part, sieve_mass(cand_value(i), v0));
    if (t == 0u) s_first = 0xFFFFFFFFu;  // ordered before the offers by the scan's barriers
    uvec2 mass;
    uvec2 before = wg_exclusive_u64(part, mass);
    if (deferred) {
        // The row's only cut, and nothing summed its mass: the wide passes
        // find the cut, in the buffer or past it (wide.glsl). They need the
        // buffer at these temperatures and its mass.
        uint keys = wide_cut_keys_at(row);
        for (uint i = t; i < n; i += WG) wide[keys + i] = c_key[i];
        if (t == 0u) hand_cut_to_wide(n, p, v0, s_divisions | WIDE_DEFERRED, fixed40_value(mass), fixed40_value(mass));
        barrier();
        return;
    }
    float total = array_total_from(row, mass, agg_mass);
    if (total < 0.0) {  // uniform: every invocation has the same total
        if (t == 0u) s_fallback = 1u;
        barrier();
        return;
    }
    float target_f = p * total;
    uvec2 target = fixed40(max(target_f, 0.0));
    // The first entry where the cumulative mass reaches the target: in the
    // first block whose end reaches it (a later block's first entry offers
    // too; the smallest wins).
    if (!u64_less(u64_add(before, part), target)) {
        uvec2 acc = before;
        for (uint i = first; i < end; ++i) {
            acc = u64_add(acc, sieve_mass(cand_value(i), v0));
            if (!u64_less(acc, target)) {
                wg_first_offer(i);
                break;
            }
        }
    }
    uint reach = wg_first_end();
    if (t == 0u) {
        // The walk's rule: the first i with cum >= target and i + 1 >= min_keep;
        // cumulative sums only grow, so past min_keep it is the first reach.
        uint last = reach < n ? max(reach + 1u, min_keep) : 0xFFFFFFFFu;
        top_p_cut(last, !u64_less(mass, target), n, min_keep, p, v0, total, target_f - fixed40_value(mass));
    }
    barrier();
}

// min-p's cut once `pass` entries pass (entry 0 always does): invocation 0.
// levels: the row may take the key levels past the buffer (ROW_FLOOR_LEVELS
// in a recording that holds them); threshold: the cut's value.
void min_p_cut(uint pass, uint n, uint min_keep, bool levels, float threshold) {
    uint keep = max(pass, max(min_keep, 1u));
    // After a top-p whose cut fell past the buffer (REST_CUT) as before any
    // cut (REST_UNKNOWN): top-p keeps the row's maximum, so the floor holds,
    // and what it kept past the buffer is the row's next logits.
    if (s_floor_ok != FLOOR_NONE && (s_rest_kind == REST_UNKNOWN || s_rest_kind == REST_CUT)) {
        // The collect pass dropped logits below the floor (below this
        // threshold) and logits after the need-th best of their chunk;
        // the tail kept every entry at or above the row's floor, and knows
        // whether a chunk may have dropped a passing logit the second way
        // (collect_tail.glsl: floor_lists_whole). If none did, the buffer
        // is every logit at or above the row's floor, a prefix of the
        // canonical order: every passing logit is here, and min_keep may
        // keep failing ones up to the floor; the rest fails. Else (a list
        // full of them, or more than HALF in all) the buffer is the row's
        // first `need`, also a prefix: where a buffered entry fails, so
        // does the rest.
        if (s_floor_ok == FLOOR_WHOLE || pass < n) {
            s_rest = 0u;
            s_rest_kind = REST_NONE;
            if (keep > n) s_fallback = 1u;  // min_keep reaches below the floor
        } else {
            // Every buffered entry passes and more may past it: the
            // survivors are every logit at or above the threshold, a
            // canonical prefix of the row, which the key levels can draw
            // from where nothing but a temperature follows (the host's
            // ROW_FLOOR_LEVELS), nothing divided yet and min_keep is within
            // the buffer (a larger one may reach past the survivors). min-p
            // is the first cut, or follows a top-p whose cut fell past the
            // buffer (s_wide: top-p's own, the chain's one top-p): top-p's
            // survivors are a canonical prefix too, so the row's are the
            // shorter of the two, min-p's where top-p's cut lies past it,
            // which level 1 shows before it draws (LEVEL_CUT_CHECK).
            s_fallback = 1u;
            bool after_cut = s_rest_kind == REST_CUT && s_wide != 0u;
            if (levels && (s_rest_kind == REST_UNKNOWN || after_cut) && s_divisions == 0u && keep <= n) {
                s_floor_levels = after_cut ? 2u : 1u;
                s_level_floor = threshold;
            }
        }
    }
    s_floor_ok = FLOOR_NONE;
    if (pass < n || s_rest_kind == REST_NONE || s_rest_kind == REST_MASKED) {
        if (s_rest_kind == REST_NONE || s_rest_kind == REST_MASKED) keep = min(keep, n + s_rest);
        if (keep <= n || s_rest_kind == REST_MASKED) keep_first(keep);
        else s_fallback = 1u;  // min_keep reaches past the buffer
    } else {
        s_rest_kind = REST_CUT;  // every buffered entry passes: the cut is further
        s_agg_ok = 0u;
        s_wide = 0u;  // two cuts past the buffer: the wide passes find one
        if (keep > n) s_fallback = 1u;
    }
}

// op_min_p by invocation 0 (TAIL_SERIAL).
void op_min_p_serial(float p, uint min_keep, bool levels) {
    if (gl_LocalInvocationID.x == 0u && p > 0.0) {
        uint n = s_n;
        float threshold = cand_value(0u) + log(p);
        uint pass = 1u;  // the first token always matches
        while (pass < n && cand_value(pass) >= threshold) ++pass;
        min_p_cut(pass, n, min_keep, levels, threshold);
    }
    barrier();
}

// llama_sampler_min_p_apply: p <= 0 no-op; keep logit >= max + logf(p), at
// least max(1, min_keep) entries (its sorted fallback). The passing entries
// are the ones before the first failing one after entry 0 (the walk's rule),
// found by every invocation at once.
void op_min_p(float p, uint min_keep, bool levels) {
    if (!(p > 0.0)) return;  // uniform
    uint n = s_n;
    float threshold = cand_value(0u) + log(p);
    wg_first_begin(max(n, 1u));  // the first token always matches
    for (uint i = 1u + gl_LocalInvocationID.x; i < n; i += WG)
        if (!(cand_value(i) >= threshold)) wg_first_offer(i);
    uint pass = wg_first_end();
    if (gl_LocalInvocationID.x == 0u) min_p_cut(pass, n, min_keep, levels, threshold);
    barrier();
}

// llama_sampler_top_n_sigma_apply: n <= 0 or size <= 1 no-op; mask (-inf) the
// logits below max - n * sigma (mean and sigma over the finite logits).
void op_top_n_sigma(float nsig, Agg agg) {
    uint t = gl_LocalInvocationID.x;
    uint n = s_n;
    bool tiny = s_rest_kind != REST_CUT && n + s_rest <= 1u;
    bool applies = nsig > 0.0 && !tiny;  // uniform: shared, after a barrier
    // The array's own mean and sigma when every member is known: two
    // compensated sums over the workgroup (the twin sums in double).
    float local_mean = 0.0, local_sigma = 0.0, local_count = 0.0;
    if (applies && (s_rest_kind == REST_NONE || s_rest_kind == REST_MASKED)) {
        vec2 sum = vec2(0.0);
        uint count = 0u;
        for (uint i = t; i < n; i += WG) {
            float v = cand_value(i);
            if (isinf(v)) continue;
            ksum_add(sum, v);
            ++count;
        }
        float total = wg_sum_ksum(sum);
        local_count = float(wg_sum_u64(uvec2(count, 0u)).x);
        local_mean = local_count > 0.0 ? total / local_count : 0.0;
        vec2 acc = vec2(0.0);
        for (uint i = t; i < n; i += WG) {
            float v = cand_value(i);
            if (isinf(v)) continue;
            ksum_add(acc, (v - local_mean) * (v - local_mean));
        }
        float m2 = wg_sum_ksum(acc);
        local_sigma = local_count > 0.0 ? sqrt(m2 / local_count) : 0.0;
    }
    if (t == 0u) {
        s_total = NEG_INF;  // the threshold, -inf = nothing to do
        if (applies) {
            float mean, sigma;
            bool ok = true;
            if (s_rest_kind == REST_UNKNOWN) {
                ok = s_agg_ok != 0u && agg.count > 0.0;
                mean = agg.mean / s_tprod;
                sigma = sqrt(agg.m2 / agg.count) / s_tprod;
            } else if (s_rest_kind == REST_CUT) {
                ok = false;
            } else {
                mean = local_mean;
                sigma = local_sigma;
                ok = local_count > 0.0;
            }
            if (!ok && s_rest_kind != REST_NONE && s_rest_kind != REST_MASKED) s_fallback = 1u;
            if (ok) {
                float threshold = cand_value(0u) - nsig * sigma;
                s_total = threshold;
                if (s_rest_kind == REST_UNKNOWN) {
                    // The rest lies below the buffer's last entry: all of it
                    // masked, or (survivors past the buffer) those below the
                    // threshold, which leaves its count and the maximum (a
                    // top-k or min-p after it cuts inside the buffer) but not
                    // its mass.
                    if (cand_value(n - 1u) < threshold) {
                        s_rest_kind = REST_MASKED;
                    } else {
                        s_agg_ok = 0u;
                        s_rest_min = max(s_rest_min, threshold);
                    }
                }
            }
        }
    }
    barrier();
    float threshold = s_total;
    if (!isinf(threshold) || threshold > 0.0)
        for (uint i = t; i < s_n; i += WG)
            if (cand_value(i) < threshold) c_key[i] = KEY_NEG_INF;  // masked, kept: a suffix already
    barrier();
}

// llama_sample_xtc_apply: off when probability <= 0, threshold > 0.5 or fewer
// than two entries; fires when coin <= probability; then drops all but the last
// of the leading entries with p >= threshold, when min_keep allows.
void op_xtc(uint row, float probability, float threshold, uint min_keep, uint coin_u32, float agg_mass) {
    uint t = gl_LocalInvocationID.x;
    uint n = s_n;
    bool small = s_rest_kind != REST_CUT && n + s_rest < 2u;
    float coin = float(coin_u32) * 2.3283064365386963e-10;
    if (probability <= 0.0 || threshold > 0.5 || small || coin > probability) return;  // uniform: shared, after a barrier
    float total = array_total(row, n, agg_mass);
    if (total < 0.0) {  // uniform
        if (t == 0u) s_fallback = 1u;
        barrier();
        return;
    }
    // The leading run of entries with p >= threshold ends before the first
    // entry that fails (the walk's rule), found by every invocation at once.
    float v0 = cand_value(0u);
    wg_first_begin(n);
    for (uint i = t; i < n; i += WG)
        if (!(cand_mass(i, v0) >= threshold * total)) wg_first_offer(i);
    uint fails = wg_first_end();
    bool to_end = fails == n;
    uint pos_last = fails == 0u ? 0u : fails - 1u;
    uint drop = 0u;
    if (to_end && s_rest_kind == REST_UNKNOWN) {
        if (t == 0u) s_fallback = 1u;  // the leading run may go on past the buffer
    } else if (n + s_rest - pos_last >= min_keep && pos_last > 0u) {
        drop = pos_last;
    }
    // The shift, WG entries at a time: each reads its entry, then (after a
    // barrier) writes it; a later round reads only entries no round wrote.
    for (uint base = 0u; base + drop < n && drop > 0u; base += WG) {
        uint i = base + t;
        bool moves = i + drop < n;
        uint k = 0u, id = 0u;
        if (moves) {
            k = c_key[i + drop];
            id = c_id[i + drop];
        }
        barrier();
        if (moves) {
            c_key[i] = k;
            c_id[i] = id;
        }
    }
    if (t == 0u && drop > 0u) {
        s_n = n - drop;
        s_agg_ok = 0u;  // the full-row mass no longer describes the array
    }
    barrier();
}

// Probability and entropy over the whole array (the whole workgroup; every
// invocation gets it): every member known (REST_NONE or REST_MASKED, whose
// members have p = 0). The sums are compensated: tie groups add the same term
// hundreds of times, whose rounding errors in a plain float sum do not cancel
// (2048 tied logits once moved the entropy, and dynamic temperature with it,
// by 3e-5 relative).
float array_entropy(uint n, float total) {
    float v0 = cand_value(0u);
    vec2 h = vec2(0.0);
    for (uint i = gl_LocalInvocationID.x; i < n; i += WG) {
        float q = cand_mass(i, v0) / total;
        // A subnormal p counts as 0 on every device (the twin's rule: dynatemp.cpp).
        if (q >= FLT_MIN_NORMAL) ksum_add(h, -q * log(q));
    }
    return wg_sum_ksum(h);
}

// llama_sampler_typical_apply (with the twin's 0 * log 0 = 0): rank by
// |-log p - H|, keep until the cumulative probability is > p with at least
// min_keep entries. Ranking sorts (score, canonical index) in c_key/c_id; the
// entries wait in the row's scratch (candidates buffer) meanwhile. The
// cumulative probability is an exact fixed-point prefix sum of the masses in
// score order, compared with p * total in the same fixed point.
void op_typical(uint row, float p, uint min_keep, uint scratch) {
    uint t = gl_LocalInvocationID.x;
    if (!(p < 1.0)) return;  // uniform
    if (s_rest_kind == REST_UNKNOWN || s_rest_kind == REST_CUT) {  // uniform: shared, after a barrier
        if (t == 0u) s_fallback = 1u;
        barrier();
        return;
    }
    uint n = s_n;
    float total = array_total(row, n, 0.0);
    float v0 = cand_value(0u);
    float h = array_entropy(n, total);
    for (uint i = t; i < n; i += WG) {
        candidates[scratch + 2u * i] = c_key[i];
        candidates[scratch + 2u * i + 1u] = c_id[i];
    }
    memoryBarrierBuffer();
    barrier();
    for (uint i = t; i < n; i += WG) {
        float q = cand_mass(i, v0) / total;
        // Ascending score = descending key of its complement; p = 0 ranks last.
        c_key[i] = q > 0.0 ? ~sieve_key(abs(-log(q) - h)) : 1u;
        c_id[i] = i;
    }
    barrier();
    sort_prefix(n);
    uint first, end;
    wg_block(n, first, end);
    uvec2 part = uvec2(0u);
    for (uint j = first; j < end; ++j)
        part = u64_add(part, sieve_mass(sieve_key_value(candidates[scratch + 2u * c_id[j]]), v0));
    if (t == 0u) s_first = 0xFFFFFFFFu;  // ordered before the offers by the scan's barriers
    uvec2 mass;
    uvec2 before = wg_exclusive_u64(part, mass);
    uvec2 target = fixed40(max(p * total, 0.0));
    // The first j where the cumulative mass passes the target.
    if (u64_less(target, u64_add(before, part))) {
        uvec2 acc = before;
        for (uint j = first; j < end; ++j) {
            acc = u64_add(acc, sieve_mass(sieve_key_value(candidates[scratch + 2u * c_id[j]]), v0));
            if (u64_less(target, acc)) {
                wg_first_offer(j);
                break;
            }
        }
    }
    uint over = wg_first_end();
    if (t == 0u) {
        // The walk's rule: the first j with cum > p and j + 1 >= min_keep;
        // cumulative sums only grow, so past min_keep it is the first one over.
        uint last = over < n ? max(over + 1u, min_keep) : 0xFFFFFFFFu;
        if (last > n) {
            // Into the masked rest (p = 0 members, ranked last), or everything.
            uint size = n + s_rest;
            last = u64_less(target, mass) ? min(max(n + 1u, min_keep), size) : size;
        }
        s_total = float(last);
    }
    barrier();
    uint last = uint(s_total);
    uint keep = min(last, n);
    uint moved = scratch + 2u * CAP;  // the kept entries in score order
    for (uint j = t; j < keep; j += WG) {
        uint idx = c_id[j];
        candidates[moved + 2u * j] = candidates[scratch + 2u * idx];
        candidates[moved + 2u * j + 1u] = candidates[scratch + 2u * idx + 1u];
    }
    memoryBarrierBuffer();
    barrier();
    for (uint j = t; j < keep; j += WG) {
        c_key[j] = candidates[moved + 2u * j];
        c_id[j] = candidates[moved + 2u * j + 1u];
    }
    if (t == 0u) keep_first(last);
    barrier();
    sort_prefix(s_n);
}

// llama_sampler_temp_ext_apply with range > 0: entropy-scaled temperature
// between max(0, t - range) and t + range, normalized by log(size) (masked
// members count); no-op with one entry. Then the division (or greedy masking).
void op_dynatemp(uint row, float temperature, float range, float exponent) {
    uint t = gl_LocalInvocationID.x;
    bool rest_hides = s_rest_kind == REST_UNKNOWN || s_rest_kind == REST_CUT;  // uniform: shared, after a barrier
    uint n = s_n, size = n + s_rest;
    float h = 0.0;
    if (!rest_hides && size > 1u) h = array_entropy(n, array_total(row, n, 0.0));
    if (t == 0u) {
        s_wide = 0u;  // its divisor is not the row's temperature
        s_total = NEG_INF;  // no-op marker
        if (rest_hides) {
            s_fallback = 1u;
        } else if (size > 1u) {
            float min_t = max(0.0, temperature - range), max_t = temperature + range;
            float base = h / log(float(size));
            float f = base > 0.0 ? pow(base, exponent) : (exponent > 0.0 ? 0.0 : (exponent == 0.0 ? 1.0 : uintBitsToFloat(0x7F800000u)));
            s_total = min_t + (max_t - min_t) * f;
            // Below float's normal range it is 0 (greedy masking) on every
            // device, flushing or not (the twin's rule: apply_temperature).
            if (abs(s_total) < FLT_MIN_NORMAL) s_total = 0.0;
        }
    }
    barrier();
    float dyn = s_total;
    if (s_fallback == 0u && !(isinf(dyn) && dyn < 0.0)) {  // uniform: shared state after a barrier
        if (isinf(dyn)) {  // a finite logit / inf is 0; masked members stay masked
            for (uint i = t; i < s_n; i += WG)
                if (c_key[i] != KEY_NEG_INF) c_key[i] = sieve_key(0.0);
            barrier();
            sort_prefix(s_n);
        } else {
            op_divide(row, dyn);
        }
    }
}

// One sampler of the chain. `op` is a specialization constant after
// CHAIN_OP(): the driver folds this if-chain to the one call it needs, so a
// workgroup never walks the code of samplers the chain does not hold (a CPU
// device would execute every branch under a lane mask).
void run_op(uint row, uint op, Agg agg, uint scratch) {
    if (op == OP_END || !tail_live()) return;  // uniform: shared state after a barrier
    uint min_keep = param_u(row, P_MIN_KEEP);
    if (op == OP_TEMPERATURE) {
        float range = param_f(row, P_DYN_RANGE);
        if (range > 0.0) op_dynatemp(row, param_f(row, P_TEMPERATURE), range, param_f(row, P_DYN_EXPONENT));
        else op_divide(row, param_f(row, P_TEMPERATURE));
    } else if (op == OP_TOP_K) {
        op_top_k(int(param_u(row, P_TOP_K)));
    } else if (op == OP_TOP_P) {
        if (TAIL_SERIAL != 0u) op_top_p_serial(row, param_f(row, P_TOP_P), min_keep, agg.msum);
        else op_top_p(row, param_f(row, P_TOP_P), min_keep, agg.msum);
    } else if (op == OP_MIN_P) {
        bool levels = (pc.flags & FLAG_FLOOR_LEVELS) != 0u && (param_u(row, P_ROW_FLAGS) & ROW_FLOOR_LEVELS) != 0u;
        if (TAIL_SERIAL != 0u) op_min_p_serial(param_f(row, P_MIN_P), min_keep, levels);
        else op_min_p(param_f(row, P_MIN_P), min_keep, levels);
    } else if (op == OP_TYPICAL) {
        op_typical(row, param_f(row, P_TYPICAL), min_keep, scratch);
    } else if (op == OP_TOP_N_SIGMA) {
        op_top_n_sigma(param_f(row, P_N_SIGMA), agg);
    } else if (op == OP_XTC) {
        uint coin = sieve_xtc_coin_u32(param_u(row, P_SEED), row_step(row), param_u(row, P_DRAW));
        op_xtc(row, param_f(row, P_XTC_PROB), param_f(row, P_XTC_THRESHOLD), min_keep, coin, agg.msum);
    }
    barrier();
}

// Runs the chain (before its draw) in the user's order. agg: the full-row
// aggregates. Each position is a copy of run_op, every sampler in it, until
// the driver folds CHAIN_OP(); a driver that inlines before it folds (Mesa's
// NIR) works through every copy (lavapipe, collect_fused for two samplers:
// 4.5 s a pipeline with 16 positions, 2.3 s with 4). So chains of at most
// SHORT_CHAIN_OPS samplers take a build with that many positions
// (SIEVE_SHORT_CHAIN: cmake/SieveShaders.cmake, Pipelines::collect).
void run_chain(uint row, Agg agg, uint scratch) {
    run_op(row, CHAIN_OP(0u), agg, scratch);
    phase_op(row, 0u);
    run_op(row, CHAIN_OP(1u), agg, scratch);
    phase_op(row, 1u);
    run_op(row, CHAIN_OP(2u), agg, scratch);
    phase_op(row, 2u);
    run_op(row, CHAIN_OP(3u), agg, scratch);
    phase_op(row, 3u);
    run_op(row, CHAIN_OP(4u), agg, scratch);
    phase_op(row, 4u);
    run_op(row, CHAIN_OP(5u), agg, scratch);
    phase_op(row, 5u);
    run_op(row, CHAIN_OP(6u), agg, scratch);
    phase_op(row, 6u);
    run_op(row, CHAIN_OP(7u), agg, scratch);
    phase_op(row, 7u);
#ifndef SIEVE_SHORT_CHAIN  // SHORT_CHAIN_OPS positions
    run_op(row, CHAIN_OP(8u), agg, scratch);
    run_op(row, CHAIN_OP(9u), agg, scratch);
    run_op(row, CHAIN_OP(10u), agg, scratch);
    run_op(row, CHAIN_OP(11u), agg, scratch);
    run_op(row, CHAIN_OP(12u), agg, scratch);
    run_op(row, CHAIN_OP(13u), agg, scratch);
    run_op(row, CHAIN_OP(14u), agg, scratch);
    run_op(row, CHAIN_OP(15u), agg, scratch);
#endif
}

#endif
