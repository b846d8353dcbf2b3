#version 450
#extension GL_GOOGLE_include_directive : require
// Raw log-probabilities (sieve_chain_set_logprobs): one pass over the row as
// the model gave it (temperature 1, before bias, penalties and every sampler),
// run first in the plan when a chain asks for logprobs. Per chunk workgroup:
// the chunk's maximal finite logit, its sum of exp(logit - max), and its
// P_LOGPROBS best tokens in
// canonical order (logit descending, ties by lower id). The last chunk
// workgroup of the row merges them into the row's result words (result.glsl's
// RES_RAW_*): the host forms log Z = max + log(sum) and every log-probability
// from it, in double. Non-finite logits take no part (a row holding NaN or
// +Inf fails in the passes that follow; -Inf has probability 0).
// Scratch: the row's histogram space, which no pass reads before writing it.
#include "common.glsl"
#include "arrive.glsl"

const uint TOPN = MAX_RAW_LOGPROBS;      // SIEVE_MAX_TOP_LOGPROBS
const uint CHUNK_WORDS = 2u + 2u * TOPN;  // max, sum, TOPN x (key, id)
const uint NONE_ID = 0xFFFFFFFFu;

shared uint s_key[WG];
shared uint s_id[WG];
shared float s_max[WG];
shared float s_sum[WG];

// Canonical order: a before b.
bool before(uint ka, uint ia, uint kb, uint ib) { return ka > kb || (ka == kb && ia < ib); }

// The workgroup's first (key, id) in canonical order; invocations offer
// (0, NONE_ID) for nothing.
void wg_first(inout uint key, inout uint id) {
    uint t = gl_LocalInvocationID.x;
    s_key[t] = key;
    s_id[t] = id;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s && before(s_key[t + s], s_id[t + s], s_key[t], s_id[t])) {
            s_key[t] = s_key[t + s];
            s_id[t] = s_id[t + s];
        }
        barrier();
    }
    key = s_key[0];
    id = s_id[0];
    barrier();
}

// The workgroup's maximum and rescaled sum.
void wg_max_sum(inout float m, inout float sum) {
    uint t = gl_LocalInvocationID.x;
    s_max[t] = m;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) s_max[t] = max(s_max[t], s_max[t + s]);
        barrier();
    }
    float wg_m = s_max[0];
    s_sum[t] = sum > 0.0 ? sum * exp(m - wg_m) : 0.0;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) s_sum[t] += s_sum[t + s];
        barrier();
    }
    m = wg_m;
    sum = s_sum[0];
    barrier();
}

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint n = min(param_u(row, P_LOGPROBS), TOPN);
    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);

    // This invocation's share, in two reads of it (the second from cache): its
    // maximum and its n best, then its sum of exp at that maximum (one exp
    // per logit; an online rescaled sum would take two, or a divergent branch).
    // The n best are unsorted in a small array; the worst of them is kept in
    // scalars, so a logit that does not enter (almost all) costs one compare.
    float m = NEG_INF, sum = 0.0;
    uint top_key[TOPN], top_id[TOPN];
    uint count = 0u, worst = 0u, worst_key = 0u, worst_id = NONE_ID;
    for (uint i = begin + t; i < end; i += WG) {
        float f = flush_subnormal(logits[row * pc.stride + i]);
        if (isnan(f) || isinf(f)) continue;
        m = max(m, f);
        if (n == 0u) continue;
        uint k = sieve_key(f);
        if (count == n && !before(k, i, worst_key, worst_id)) continue;
        if (count < n) {
            top_key[count] = k;
            top_id[count] = i;
            ++count;
        } else {
            top_key[worst] = k;
            top_id[worst] = i;
        }
        if (count == n) {
            worst = 0u;
            for (uint j = 1u; j < n; ++j)
                if (before(top_key[worst], top_id[worst], top_key[j], top_id[j])) worst = j;
            worst_key = top_key[worst];
            worst_id = top_id[worst];
        }
    }
    for (uint i = begin + t; i < end; i += WG) {
        float f = flush_subnormal(logits[row * pc.stride + i]);
        if (!isnan(f) && !isinf(f)) sum += exp(f - m);
    }
    wg_max_sum(m, sum);
    uint scratch = (row * pc.n_chunks + chunk) * BINS * HIST_STRIDE;
    if (t == 0u) {
        histograms[scratch] = floatBitsToUint(m);
        histograms[scratch + 1u] = floatBitsToUint(sum);
    }
    // The chunk's n best: n rounds, each taking the workgroup's first among
    // the invocations' best untaken entries.
    uint taken = 0u;
    for (uint r = 0u; r < n; ++r) {
        uint key = 0u, id = NONE_ID, mine = TOPN;
        for (uint j = 0u; j < count; ++j)
            if ((taken & (1u << j)) == 0u && (mine == TOPN || before(top_key[j], top_id[j], key, id))) {
                key = top_key[j];
                id = top_id[j];
                mine = j;
            }
        uint offered = id;
        wg_first(key, id);
        if (mine != TOPN && offered == id) taken |= 1u << mine;
        if (t == 0u) {
            histograms[scratch + 2u + 2u * r] = key;
            histograms[scratch + 3u + 2u * r] = id;
        }
    }
    if (!last_to_arrive(row)) return;

    // The row: its maximum, its sum at that maximum, its n best.
    float rm = NEG_INF, rsum = 0.0;
    for (uint c = t; c < pc.n_chunks; c += WG) {
        uint o = (row * pc.n_chunks + c) * BINS * HIST_STRIDE;
        float cm = uintBitsToFloat(histograms[o]), cs = uintBitsToFloat(histograms[o + 1u]);
        if (cs <= 0.0) continue;
        if (cm > rm) {
            rsum = rsum * exp(rm - cm) + cs;
            rm = cm;
        } else {
            rsum += cs * exp(cm - rm);
        }
    }
    wg_max_sum(rm, rsum);
    // Each round takes the first entry after the previous winner: the chunks'
    // lists hold distinct ids, so this walks the merged order.
    uint last_key = 0xFFFFFFFFu, last_id = 0u, found = 0u;
    uint o = row * RESULT_STRIDE;
    for (uint r = 0u; r < n; ++r) {
        uint key = 0u, id = NONE_ID;
        for (uint e = t; e < pc.n_chunks * n; e += WG) {
            uint c = e / n, j = e % n;
            uint at = (row * pc.n_chunks + c) * BINS * HIST_STRIDE + 2u + 2u * j;
            uint k = histograms[at], i = histograms[at + 1u];
            if (i == NONE_ID || !before(last_key, last_id, k, i)) continue;
            if (id == NONE_ID || before(k, i, key, id)) {
                key = k;
                id = i;
            }
        }
        wg_first(key, id);
        if (id != NONE_ID) {
            found = r + 1u;
            last_key = key;
            last_id = id;
        }
        if (t == 0u) {
            results[o + RES_RAW_IDS + r] = id;
            results[o + RES_RAW_LOGITS + r] = floatBitsToUint(sieve_key_value(key));
        }
    }
    if (t == 0u) {
        results[o + RES_RAW_MAX] = floatBitsToUint(rm);
        results[o + RES_RAW_SUM] = floatBitsToUint(rsum);
        results[o + RES_RAW_COUNT] = found;
    }
}
