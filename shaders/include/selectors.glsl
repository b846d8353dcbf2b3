// The learning final samplers on the candidates (collect_chunk.glsl's tail): mirostat
// v1 and v2 cut the array before the draw, adaptive-p reshapes it; after the
// draw each learns from its own token (mu, the running average), stored in the
// row's slot when the call commits. Ports of the CPU twin
// (engine/reference/mirostat.cpp, adaptive_p.cpp), whose comments cite
// llama.cpp's rules and say where Sieve departs from them. A row whose array the
// buffer does not hold well enough goes to the twin (s_fallback), which then
// learns in the GPU's place (the host writes the slot).
#ifndef SIEVE_SELECTORS_GLSL
#define SIEVE_SELECTORS_GLSL

shared float s_sel_mu;         // mirostat: the mu the cut used
shared float s_sel_adapted;    // adaptive-p: the adapted target (< 0: a plain draw)
shared float s_sel_v0;         // adaptive-p: the array's maximum before the reshape

uint selector() { return CHAIN_SELECTOR; }

// slot_flags, mirostat_mu: row.glsl (the chunks read mu too, for the floor).

// Whether the buffer holds the array's whole live part.
bool array_whole() { return s_rest_kind == REST_NONE || s_rest_kind == REST_MASKED; }

// v2: the canonical prefix whose surprise -log2(p) is at most mu, at least one:
// it ends at the first entry whose surprise passes mu (the walk's rule),
// found by the whole workgroup at once.
void mirostat_v2_cut(uint row, float agg_mass) {
    uint n = s_n;
    float total = array_total(row, n, agg_mass);
    float mu = mirostat_mu(row);
    float v0 = cand_value(0u);
    wg_first_begin(n);
    if (total >= 0.0)  // uniform
        for (uint i = gl_LocalInvocationID.x; i < n; i += WG)
            if (-log2(cand_mass(i, v0) / total) > mu) wg_first_offer(i);
    uint keep = wg_first_end();
    if (gl_LocalInvocationID.x != 0u) return;
    s_sel_mu = mu;
    if (total < 0.0) {
        s_fallback = 1u;
        return;
    }
    // With the collect pass's floor whole (ROW_MU_FLOOR: collect.glsl,
    // row_floor_offset) every entry past the buffer fails mu.
    if (keep == n && !array_whole() && s_floor_ok != FLOOR_WHOLE) {
        s_fallback = 1u;  // the cut may fall among entries the buffer does not hold
        return;
    }
    keep_first(max(keep, 1u));
}

// v1: s_hat from the first m = 100 live entries' logit differences, k from it,
// then top-k (llama_sampler_mirostat_apply; the twin's definitions of the
// degenerate cases).
void mirostat_v1_cut(uint row) {
    const uint M = 100u;
    uint n = s_n;
    float mu = mirostat_mu(row);
    s_sel_mu = mu;
    uint live = 0u;
    while (live < n && c_key[live] != KEY_NEG_INF) ++live;
    if (live == n && !array_whole() && live < M) {
        s_fallback = 1u;  // the estimate needs entries the buffer does not hold
        return;
    }
    if (s_rest_kind == REST_CUT) {
        s_fallback = 1u;  // the array's size and live entries are unknown
        return;
    }
    uint size = array_size_known(n);  // llama.cpp's array size, masked members included
    uint keep;
    if (live < 2u) {
        keep = 1u;
    } else {
        float sum_tb = 0.0, sum_tt = 0.0;
        for (uint i = 0u; i + 1u < M && i + 1u < live; ++i) {
            float t_i = log(float(i + 2u) / float(i + 1u));
            float b_i = cand_value(i) - cand_value(i + 1u);
            sum_tb += t_i * b_i;
            sum_tt += t_i * t_i;
        }
        float s_hat = sum_tb / sum_tt;
        float eps = s_hat - 1.0;
        float nv = float(pc.vocab);
        // In logs, as the twin: eps * 2^mu overflows float for a huge s_hat
        // (a logit gap of 1e38) where k is about 1.
        float ratio = eps == 0.0 ? 1.0 / log(nv) : eps / (1.0 - pow(nv, -eps));
        float log_x = log(ratio) + mu * 0.6931471805599453;
        float k = s_hat == 0.0 ? (log_x > 0.0 ? float(size) : 1.0) : exp(log_x / s_hat);
        if (isinf(s_hat)) keep = 1u;  // the limit of x^(1/s_hat) = (s_hat 2^mu)^(1/s_hat)
        else if (isnan(k)) keep = 1u;
        else if (!(k < float(size))) keep = size;
        else keep = max(uint(k), 1u);
    }
    // llama_sampler_top_k_impl with k = keep (<= size).
    if (keep >= size) return;  // the whole array: no cut
    if (keep <= n || s_rest_kind == REST_MASKED) keep_first(keep);
    else s_fallback = 1u;      // the cut falls among entries the buffer does not hold
}

// adaptive-p: every live entry's logit becomes 5 - 10 d^2 / (1 + d), d =
// |p - adapted| / 0.3, p its probability over the array; the original p's are
// kept (id, p) in the row's scratch for the update.
void adaptive_reshape(uint row, uint scratch) {
    uint t = gl_LocalInvocationID.x;
    float target = param_f(row, P_ADAPT_TARGET);
    // The whole workgroup sums the masses (uniform: a parameter, shared state after a barrier).
    float array_mass = target >= 0.0 && array_whole() ? array_total(row, s_n, 0.0) : 0.0;
    if (t == 0u) {
        s_sel_adapted = -1.0;
        if (target >= 0.0) {
            if (!array_whole()) {
                s_fallback = 1u;  // every member's probability is needed
            } else {
                s_total = array_mass;
                s_sel_v0 = cand_value(0u);
                uint slot = param_u(row, P_SLOT);
                float decay = clamp(param_f(row, P_ADAPT_DECAY), 0.0, 0.99);
                bool set = (slot_flags(row) & SLOT_ADAPTIVE_SET) != 0u;
                float ws = set ? uintBitsToFloat(slot_state[slot + S_ADAPT_SUM]) : target / (1.0 - decay);
                float tw = set ? uintBitsToFloat(slot_state[slot + S_ADAPT_WEIGHT]) : 1.0 / (1.0 - decay);
                float tc = clamp(target, 0.0, 1.0);
                s_sel_adapted = clamp(tw == 0.0 ? tc : 2.0 * tc - ws / tw, 0.0, 1.0);
            }
        }
    }
    barrier();
    if (!(s_sel_adapted >= 0.0) || !tail_live()) return;
    uint n = s_n;
    // From shared values taken before the barrier: the loop below rewrites c_key.
    float v0 = s_sel_v0;
    float total = s_total;
    float adapted = s_sel_adapted;
    const float INV_WIDTH = 1.0 / 0.3;
    for (uint i = t; i < n; i += WG) {
        float p = c_key[i] == KEY_NEG_INF ? 0.0 : cand_mass(i, v0) / total;
        candidates[scratch + 2u * i] = c_id[i];
        candidates[scratch + 2u * i + 1u] = floatBitsToUint(p);
        if (c_key[i] == KEY_NEG_INF) continue;  // masked members stay masked
        precise float d = abs((p - adapted) * INV_WIDTH);
        precise float x = 5.0 - 10.0 * d * d / (1.0 + d);
        c_key[i] = sieve_key(x);
    }
    barrier();
    sort_prefix(n);
}

// Before the draw (the whole workgroup).
void selector_before_draw(uint row, float agg_mass, uint scratch) {
    uint sel = selector();
    if (sel == 0u) return;
    if (sel == SELECT_ADAPTIVE) {
        adaptive_reshape(row, scratch);
        return;
    }
    if (tail_live()) {  // uniform: shared, after run_chain's barrier
        if (sel == SELECT_MIROSTAT_V2) mirostat_v2_cut(row, agg_mass);  // the whole workgroup
        else if (gl_LocalInvocationID.x == 0u) mirostat_v1_cut(row);
    }
    barrier();
}

// After the draw of `token` with probability p under the final distribution
// (invocation 0): the update, stored when the call commits (sieve_sample).
void selector_learn(uint row, uint token, float p, uint scratch) {
    uint sel = selector();
    if (sel == 0u || (pc.flags & FLAG_DISTRIBUTION) != 0u || (param_u(row, P_ROW_FLAGS) & ROW_COMMIT) == 0u) return;
    uint slot = param_u(row, P_SLOT);
    if (sel == SELECT_ADAPTIVE) {
        if (!(s_sel_adapted >= 0.0)) return;
        float original = 0.0;
        for (uint i = 0u; i < s_n; ++i)
            if (candidates[scratch + 2u * i] == token) original = uintBitsToFloat(candidates[scratch + 2u * i + 1u]);
        float decay = clamp(param_f(row, P_ADAPT_DECAY), 0.0, 0.99);
        float target = param_f(row, P_ADAPT_TARGET);
        bool set = (slot_state[slot + S_FLAGS] & SLOT_ADAPTIVE_SET) != 0u;
        precise float ws = set ? uintBitsToFloat(slot_state[slot + S_ADAPT_SUM]) : target / (1.0 - decay);
        precise float tw = set ? uintBitsToFloat(slot_state[slot + S_ADAPT_WEIGHT]) : 1.0 / (1.0 - decay);
        ws = original + decay * ws;
        tw = 1.0 + decay * tw;
        slot_state[slot + S_ADAPT_SUM] = floatBitsToUint(ws);
        slot_state[slot + S_ADAPT_WEIGHT] = floatBitsToUint(tw);
        slot_state[slot + S_FLAGS] |= SLOT_ADAPTIVE_SET;
        return;
    }
    // mirostat: e = -log2(p) - tau; mu -= eta * e (llama.cpp's float update).
    precise float surprise = -log2(p);
    precise float e = surprise - param_f(row, P_MIRO_TAU);
    precise float mu = s_sel_mu - param_f(row, P_MIRO_ETA) * e;
    slot_state[slot + S_MU] = floatBitsToUint(mu);
    slot_state[slot + S_FLAGS] |= SLOT_MU_SET;
}

#endif
