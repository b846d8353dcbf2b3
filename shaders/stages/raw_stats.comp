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
#include "stretch.glsl"
#include "logits4.glsl"

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

// Each logit (f, id i) of the chunk [begin, end) of the row as the model gave
// it (subnormals as zeros) to FUNC(f, i), each invocation's in increasing i:
// where the row's stride is a multiple of 4, the chunk's vec4-aligned middle
// four a load, in contiguous stretches (stretch.glsl), two loads a trip; the
// unaligned ends one by one. (Lavapipe loads a storage buffer's scalars lane
// by lane, checking each one's bounds: logits4.glsl.)
#define FOR_RAW_LOGITS(ROW, BEGIN, END, FUNC)                                        \
    {                                                                                \
        uint a4_ = (pc.stride & 3u) == 0u ? min(((BEGIN) + 3u) & ~3u, (END)) : (END); \
        uint e4_ = max((END) & ~3u, a4_);                                            \
        for (uint i_ = (BEGIN) + t; i_ < a4_; i_ += WG) FUNC(raw_logit(ROW, i_), i_); \
        uint row4_ = (ROW) * pc.stride / 4u, q_, q_stop_;                            \
        stretch_share(a4_ / 4u, e4_ / 4u, q_, q_stop_);                              \
        for (; q_ + RUN_LANES < q_stop_; q_ += 2u * RUN_LANES) {                     \
            vec4 fa_ = row_vec4(row4_ + q_), fb_ = row_vec4(row4_ + q_ + RUN_LANES); \
            [[unroll]] for (uint c_ = 0u; c_ < 4u; ++c_) FUNC(fa_[c_], 4u * q_ + c_); \
            [[unroll]] for (uint c_ = 0u; c_ < 4u; ++c_) FUNC(fb_[c_], 4u * (q_ + RUN_LANES) + c_); \
        }                                                                            \
        for (; q_ < q_stop_; q_ += RUN_LANES) {                                      \
            vec4 fa_ = row_vec4(row4_ + q_);                                         \
            [[unroll]] for (uint c_ = 0u; c_ < 4u; ++c_) FUNC(fa_[c_], 4u * q_ + c_); \
        }                                                                            \
        for (uint i_ = e4_ + t; i_ < (END); i_ += WG) FUNC(raw_logit(ROW, i_), i_);  \
    }

float raw_logit(uint row, uint i) { return flush_subnormal(logits[row * pc.stride + i]); }

// This invocation's share, in two reads of it (the second from cache): its
// maximum and its TOPN best (take_raw), then its sum of exp at that maximum
// (add_raw_mass: one exp per logit; an online rescaled sum would take two, or
// a divergent branch). The best are kept sorted (best first) in fixed places,
// so on a GPU a logit that does not enter (almost all) costs one compare with
// the last, and one that does a pass of selects over the places (a CPU
// device runs that pass for every logit, under a lane mask): no index that
// varies by invocation, which a GPU would put in local memory and a CPU
// device turns into a loop over the lanes.
uint g_n;  // the top entries asked for (P_LOGPROBS, at most TOPN)
float g_max, g_sum;
uint g_top_key[TOPN], g_top_id[TOPN];

void take_raw(float f, uint i) {
    if (isnan(f) || isinf(f)) return;
    g_max = max(g_max, f);
    uint k = sieve_key(f);
    if (g_n == 0u || !before(k, i, g_top_key[TOPN - 1u], g_top_id[TOPN - 1u])) return;
    // Place j takes the entry before it where (k, i) comes before that one,
    // else (k, i) where it comes before place j's (from the last place up, so
    // each reads its neighbour's old entry).
    [[unroll]] for (uint j = TOPN - 1u; j > 0u; --j) {
        bool above = before(k, i, g_top_key[j - 1u], g_top_id[j - 1u]);
        bool here = before(k, i, g_top_key[j], g_top_id[j]);
        g_top_key[j] = above ? g_top_key[j - 1u] : here ? k : g_top_key[j];
        g_top_id[j] = above ? g_top_id[j - 1u] : here ? i : g_top_id[j];
    }
    if (before(k, i, g_top_key[0], g_top_id[0])) {
        g_top_key[0] = k;
        g_top_id[0] = i;
    }
}

void add_raw_mass(float f, uint i) {
    if (!isnan(f) && !isinf(f)) g_sum += exp(f - g_max);
}

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint n = min(param_u(row, P_LOGPROBS), TOPN);
    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);

    g_n = n;
    g_max = NEG_INF;
    g_sum = 0.0;
    [[unroll]] for (uint j = 0u; j < TOPN; ++j) {
        g_top_key[j] = 0u;  // (0, NONE_ID): after every logit
        g_top_id[j] = NONE_ID;
    }
    FOR_RAW_LOGITS(row, begin, end, take_raw)
    FOR_RAW_LOGITS(row, begin, end, add_raw_mass)
    float m = g_max, sum = g_sum;
    wg_max_sum(m, sum);
    uint scratch = (row * pc.n_chunks + chunk) * BINS * HIST_STRIDE;
    if (t == 0u) {
        histograms[scratch] = floatBitsToUint(m);
        histograms[scratch + 1u] = floatBitsToUint(sum);
    }
    // The chunk's n best: n rounds, each taking the workgroup's first among
    // the invocations' first entries; the winner's entries move up a place.
    for (uint r = 0u; r < n; ++r) {
        uint key = g_top_key[0], id = g_top_id[0];
        uint offered = id;
        wg_first(key, id);
        if (offered != NONE_ID && offered == id) {  // ids are distinct: this invocation's
            // (Its last place keeps its entry: an invocation wins at most
            // n <= TOPN rounds, so no round reaches it again.)
            [[unroll]] for (uint j = 0u; j + 1u < TOPN; ++j) {
                g_top_key[j] = g_top_key[j + 1u];
                g_top_id[j] = g_top_id[j + 1u];
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
