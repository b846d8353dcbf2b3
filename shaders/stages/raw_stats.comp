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

// The workgroup's reductions take two barriers each, not a tree's log2(WG)
// (the per-chunk top-n below makes n of them in a row: 2n barriers instead of
// 9n at 256 invocations): one invocation of each group of FAN folds its
// group's offers, then every invocation folds the groups' results itself, in
// group order (so a float sum has one order on every run).
const uint FAN = 16u;  // WG is a power of two >= 32 (device_profile.cpp)
const uint GROUPS = WG / FAN;
shared uint s_group_key[GROUPS];
shared uint s_group_id[GROUPS];
shared float s_group_max[GROUPS];
shared float s_group_sum[GROUPS];

// Canonical order: a before b.
bool before(uint ka, uint ia, uint kb, uint ib) { return ka > kb || (ka == kb && ia < ib); }

// The workgroup's first (key, id) in canonical order; invocations offer
// (0, NONE_ID) for nothing. (The next call's first writes wait for this
// one's readers at its first barrier.)
void wg_first(inout uint key, inout uint id) {
    uint t = gl_LocalInvocationID.x;
    s_key[t] = key;
    s_id[t] = id;
    barrier();
    if (t < GROUPS) {
        uint k = s_key[t * FAN], i = s_id[t * FAN];
        for (uint j = t * FAN + 1u; j < (t + 1u) * FAN; ++j)
            if (before(s_key[j], s_id[j], k, i)) {
                k = s_key[j];
                i = s_id[j];
            }
        s_group_key[t] = k;
        s_group_id[t] = i;
    }
    barrier();
    key = s_group_key[0];
    id = s_group_id[0];
    for (uint g = 1u; g < GROUPS; ++g)
        if (before(s_group_key[g], s_group_id[g], key, id)) {
            key = s_group_key[g];
            id = s_group_id[g];
        }
}

// The workgroup's maximum and its sum rescaled to it (an invocation's sum is
// at its own maximum m).
void wg_max_sum(inout float m, inout float sum) {
    uint t = gl_LocalInvocationID.x;
    s_max[t] = m;
    s_sum[t] = sum;
    barrier();
    if (t < GROUPS) {
        float gm = NEG_INF;
        for (uint j = t * FAN; j < (t + 1u) * FAN; ++j) gm = max(gm, s_max[j]);
        float gs = 0.0;
        for (uint j = t * FAN; j < (t + 1u) * FAN; ++j) gs += s_sum[j] > 0.0 ? s_sum[j] * exp(s_max[j] - gm) : 0.0;
        s_group_max[t] = gm;
        s_group_sum[t] = gs;
    }
    barrier();
    m = NEG_INF;
    for (uint g = 0u; g < GROUPS; ++g) m = max(m, s_group_max[g]);
    sum = 0.0;
    for (uint g = 0u; g < GROUPS; ++g)
        sum += s_group_sum[g] > 0.0 ? s_group_sum[g] * exp(s_group_max[g] - m) : 0.0;
}

// Chunk-list entries an invocation of the last workgroup holds through the
// merge's rounds: every chunk's n <= TOPN, a plan splitting a row into at
// most MAX_ROW_CHUNKS chunks (gpu_plan.cpp: max_chunks_for).
const uint HELD = (MAX_ROW_CHUNKS * TOPN + WG - 1u) / WG;

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint n = min(param_u(row, P_LOGPROBS), TOPN);
    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);

    // This invocation's share, in two reads of it (the second from cache): its
    // maximum and its TOPN best, then its sum of exp at that maximum (one exp
    // per logit; an online rescaled sum would take two, or a divergent branch).
    // The best are kept sorted (best first) in fixed places, so a logit that
    // does not enter (almost all) costs one compare with the last, and one
    // that does a pass of selects over the places: no index that varies by
    // invocation, which a GPU would put in local memory and a CPU device
    // turns into a loop over the lanes.
    float m = NEG_INF, sum = 0.0;
    uint top_key[TOPN], top_id[TOPN];
    [[unroll]] for (uint j = 0u; j < TOPN; ++j) {
        top_key[j] = 0u;  // (0, NONE_ID): after every logit
        top_id[j] = NONE_ID;
    }
    for (uint i = begin + t; i < end; i += WG) {
        float f = flush_subnormal(logits[row * pc.stride + i]);
        if (isnan(f) || isinf(f)) continue;
        m = max(m, f);
        if (n == 0u) continue;
        uint k = sieve_key(f);
        if (!before(k, i, top_key[TOPN - 1u], top_id[TOPN - 1u])) continue;
        // Place j takes the entry before it where (k, i) comes before that
        // one, else (k, i) where it comes before place j's (from the last
        // place up, so each reads its neighbour's old entry).
        [[unroll]] for (uint j = TOPN - 1u; j > 0u; --j) {
            bool above = before(k, i, top_key[j - 1u], top_id[j - 1u]);
            bool here = before(k, i, top_key[j], top_id[j]);
            top_key[j] = above ? top_key[j - 1u] : here ? k : top_key[j];
            top_id[j] = above ? top_id[j - 1u] : here ? i : top_id[j];
        }
        if (before(k, i, top_key[0], top_id[0])) {
            top_key[0] = k;
            top_id[0] = i;
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
    // the invocations' first entries; the winner's entries move up a place.
    for (uint r = 0u; r < n; ++r) {
        uint key = top_key[0], id = top_id[0];
        uint offered = id;
        wg_first(key, id);
        if (offered != NONE_ID && offered == id) {  // ids are distinct: this invocation's
            // (Its last place keeps its entry: an invocation wins at most
            // n <= TOPN rounds, so no round reaches it again.)
            [[unroll]] for (uint j = 0u; j + 1u < TOPN; ++j) {
                top_key[j] = top_key[j + 1u];
                top_id[j] = top_id[j + 1u];
            }
        }
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
    // lists hold distinct ids, so this walks the merged order. Each invocation
    // loads its share of the lists once, before the rounds, where reading it
    // every round would wait n times for memory.
    uint total = pc.n_chunks * n;
    uint held_key[HELD], held_id[HELD];
    [[unroll]] for (uint h = 0u; h < HELD; ++h) {
        uint e = t + h * WG;
        held_key[h] = 0u;
        held_id[h] = NONE_ID;
        if (e < total) {
            uint at = (row * pc.n_chunks + e / n) * BINS * HIST_STRIDE + 2u + 2u * (e % n);
            held_key[h] = histograms[at];
            held_id[h] = histograms[at + 1u];
        }
    }
    uint last_key = 0xFFFFFFFFu, last_id = 0u, found = 0u;
    uint o = row * RESULT_STRIDE;
    for (uint r = 0u; r < n; ++r) {
        uint key = 0u, id = NONE_ID;
        [[unroll]] for (uint h = 0u; h < HELD; ++h) {
            if (h * WG >= total) break;  // uniform
            uint k = held_key[h], i = held_id[h];
            if (i != NONE_ID && before(last_key, last_id, k, i) && (id == NONE_ID || before(k, i, key, id))) {
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
