#include "vulkan/gpu_params.hpp"

#include "vulkan/slot_layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sieve {

namespace {

using ref::SamplerKind;
// The parameter block's words (P_*), the row flags (ROW_*), the ops (OP_*).
using namespace glsl;

uint32_t op_of(SamplerKind kind) {
    switch (kind) {
    case SamplerKind::Temperature: return OP_TEMPERATURE;
    case SamplerKind::TopK: return OP_TOP_K;
    case SamplerKind::TopP: return OP_TOP_P;
    case SamplerKind::MinP: return OP_MIN_P;
    case SamplerKind::TypicalP: return OP_TYPICAL;
    case SamplerKind::TopNSigma: return OP_TOP_N_SIGMA;
    case SamplerKind::Xtc: return OP_XTC;
    default: return OP_END;  // penalties and DRY (the history pass applies them first: history.comp); the draw
    }
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// How many candidates the collect pass keeps and which full-row aggregates
// the tail may need, walking the chain as the tail will: while nothing has
// cut the array, a sampler that needs the row's softmax mass (top-p, XTC, the
// draw) reads it at the temperatures applied so far (agg_t); top-n-sigma reads
// the row's mean and variance. The first top-k <= CAP / 2 bounds the rest of
// the chain to its k candidates (a greedy masking to one).
struct Needs {
    uint32_t need;
    uint32_t flags = 0;
    float agg_t = 1.0f;
    float floor = 0.0f;  // ROW_FLOOR: min-p's ln(p) in raw logits (times the temperatures before it)
};

// Candidates kept when no top-k bounds the chain: rows whose survivors pass
// them go to the CPU twin (cpu_fallback_rows).
constexpr uint32_t kUnboundedNeed = 64;

// Whether a sampler acts on this row (a parameter may switch it off: the
// llama.cpp meanings of k <= 0, p >= 1, min-p <= 0, n <= 0, XTC's bounds).
bool acts(SamplerKind kind, const ref::RowParams& row) {
    switch (kind) {
    case SamplerKind::Temperature: return true;
    case SamplerKind::TopK: return row.top_k > 0;
    case SamplerKind::TopP: return row.top_p < 1.0f;
    case SamplerKind::MinP: return row.min_p > 0.0f;
    case SamplerKind::TypicalP: return row.typical_p < 1.0f;
    case SamplerKind::TopNSigma: return row.top_n_sigma > 0.0f;
    case SamplerKind::Xtc: return row.xtc_probability > 0.0f && row.xtc_threshold <= 0.5f;
    default: return false;  // penalties and DRY: the history pass applies them before the chain (history.comp)
    }
}

// A top-p that is the row's only cut, with nothing after it but positive
// temperatures and the draw: the wide passes can find its cut from the full
// row's mass themselves, so the collect pass skips the row's softmax sum (an
// exp per logit and the scalar loop, about half its cost on a CPU device).
bool top_p_only_cut(const std::vector<SamplerKind>& samplers, size_t at, const ref::RowParams& row) {
    if (samplers.back() != SamplerKind::Dist || row.dynatemp_range > 0.0f || !(row.temperature > 0.0f)) return false;
    for (size_t i = at + 1; i + 1 < samplers.size(); ++i)
        if (samplers[i] != SamplerKind::Temperature && acts(samplers[i], row)) return false;
    return true;
}

Needs analyse(const std::vector<SamplerKind>& samplers, const ref::RowParams& row, uint32_t half, bool defer_top_p) {
    Needs n;
    n.need = std::min(kUnboundedNeed, half);
    float tprod = 1.0f;
    bool mass = false, xtc_before = false, cut_before = false;
    // After min-p has acted the rest of the array is never "unknown" again:
    // its cut falls inside the buffer (the rest is dropped) or past it (the
    // row goes to the CPU twin; op_min_p in tail.glsl), so the draw never
    // needs the row's mass, and the collect pass need not sum it (an exp
    // per logit, and no register picks for rows with aggregates).
    bool min_p_cut = false;
    auto want_mass = [&] {
        if (!mass) n.agg_t = tprod;
        mass = true;
        n.flags |= ROW_NEED_MASS;
    };
    for (size_t i = 0; i + 1 < samplers.size(); ++i) {
        if (samplers[i] != SamplerKind::Temperature && !acts(samplers[i], row)) continue;  // off for this row
        switch (samplers[i]) {
        case SamplerKind::Temperature:
            if (row.dynatemp_range > 0.0f) return n;  // entropy over the array: bounded or the CPU twin
            if (!(row.temperature > 0.0f)) return n;  // greedy masking: every entry is known after it
            tprod *= row.temperature;
            break;
        case SamplerKind::TopK:
            if (!xtc_before) n.need = std::min<uint32_t>(static_cast<uint32_t>(row.top_k), half);
            return n;
        case SamplerKind::TopP:
            // A cut past the buffer keeps at least min_keep entries: the
            // wide passes need them in the buffer (wide_histogram counts no
            // members of its bins), up to half the buffer.
            n.need = std::min(std::max(n.need, row.min_keep > 0 ? static_cast<uint32_t>(row.min_keep) : 0u), half);
            if (defer_top_p && !cut_before && !mass && !(n.flags & ROW_NEED_SIGMA) && top_p_only_cut(samplers, i, row)) {
                n.flags |= ROW_DEFER_TOP_P;
                return n;
            }
            want_mass();
            cut_before = true;
            break;
        case SamplerKind::MinP:
            // The chain's first cut: the collect pass may drop what can never
            // pass it (slightly more generous than the threshold: rounding).
            min_p_cut = true;
            if (!cut_before && row.min_p < 1.0f) {
                n.flags |= ROW_FLOOR;
                n.floor = static_cast<float>(static_cast<double>(tprod) * std::log(static_cast<double>(row.min_p)) * (1.0 + 1e-5));
            }
            cut_before = true;
            break;
        case SamplerKind::TypicalP:
            cut_before = true;
            break;
        case SamplerKind::Xtc:
            want_mass();
            xtc_before = true;
            cut_before = true;
            break;
        case SamplerKind::TopNSigma:
            n.flags |= ROW_NEED_SIGMA;
            cut_before = true;
            break;
        default: break;
        }
    }
    switch (samplers.back()) {
    case SamplerKind::Dist:
        if (!min_p_cut) want_mass();
        break;
    case SamplerKind::Mirostat:
    case SamplerKind::MirostatV2:
    case SamplerKind::AdaptiveP:
        // The learning selectors see as much of the array as the buffer holds
        // (mirostat v2 at mu = 10 keeps tokens down to p = 2^-10).
        n.need = half;
        want_mass();
        break;
    default: break;
    }
    return n;
}

} // namespace

bool chain_needs_collect(const std::vector<SamplerKind>& samplers) {
    for (SamplerKind k : samplers)
        if (op_of(k) > OP_TEMPERATURE) return true;
    return chain_selector(samplers) != SELECT_DIST;
}

uint32_t chain_selector(const std::vector<SamplerKind>& samplers) {
    switch (samplers.back()) {
    case SamplerKind::Mirostat: return SELECT_MIROSTAT;
    case SamplerKind::MirostatV2: return SELECT_MIROSTAT_V2;
    case SamplerKind::AdaptiveP: return SELECT_ADAPTIVE;
    default: return SELECT_DIST;
    }
}

bool row_needs_collect(const std::vector<SamplerKind>& samplers, const ref::RowParams& row) {
    if (!(row.dynatemp_range > 0.0f)) return false;
    return std::find(samplers.begin(), samplers.end(), SamplerKind::Temperature) != samplers.end();
}

uint64_t chain_ops(const std::vector<SamplerKind>& samplers) {
    uint64_t ops = 0;
    uint32_t n = 0;
    for (size_t i = 0; i + 1 < samplers.size() && n < MAX_CHAIN_OPS; ++i) {
        const uint32_t op = op_of(samplers[i]);
        if (op == OP_END) continue;
        ops |= static_cast<uint64_t>(op) << (4 * n++);
    }
    return ops;
}

uint32_t row_breakers_offset(uint32_t max_vocab) { return 2 + 2 * ((max_vocab + 31) / 32) + 2 * kMaxGpuBiasEntries; }

uint32_t row_prefix_offset(uint32_t max_vocab) {
    return row_breakers_offset(max_vocab) + 1 + kMaxDryBreakers + kMaxDryBreakerTokens;
}

uint32_t row_input_words(uint32_t max_vocab) { return row_prefix_offset(max_vocab) + SIEVE_MAX_DRAFT; }

void write_row_position(uint32_t* block, uint32_t* inputs, uint32_t inputs_offset, uint32_t max_vocab,
                        const RowPosition& at) {
    block[P_STEP_ADD] = at.step_add;
    block[P_PREFIX] = inputs_offset + row_prefix_offset(max_vocab);
    block[P_PREFIX_LEN] = at.prefix_len;
    block[P_ROW_FLAGS] |= ROW_HOLD_STEP;
    for (uint32_t i = 0; i < at.prefix_len; ++i) inputs[row_prefix_offset(max_vocab) + i] = static_cast<uint32_t>(at.prefix[i]);
}

// llama_sampler_penalties_apply returns at once when penalty_last_n == 0 or
// every value is neutral; llama_sampler_dry_apply when multiplier == 0,
// base < 1 or dry_penalty_last_n == 0.
bool penalties_act(const ref::RowParams& row) {
    return row.penalty_last_n != 0 &&
           !(row.penalty_repeat == 1.0f && row.penalty_freq == 0.0f && row.penalty_present == 0.0f);
}

bool dry_acts(const ref::RowParams& row) {
    return row.dry_multiplier != 0.0f && row.dry_base >= 1.0f && row.dry_penalty_last_n != 0;
}

bool row_adjusts_in_place(const std::vector<SamplerKind>& samplers, const ref::RowParams& row) {
    return row_adjusts(samplers, row) && !row_has_inputs(row);
}

bool row_adjusts(const std::vector<SamplerKind>& samplers, const ref::RowParams& row) {
    for (SamplerKind k : samplers)
        if ((k == SamplerKind::Penalties && penalties_act(row)) || (k == SamplerKind::Dry && dry_acts(row))) return true;
    return false;
}

bool row_has_inputs(const ref::RowParams& row) { return !row.logit_bias.empty() || !row.token_bitmask.empty(); }

bool row_may_go_wide(const std::vector<SamplerKind>& samplers, const ref::RowParams& row, uint32_t capacity) {
    const uint32_t bound = std::min(kUnboundedNeed, capacity / 2);
    for (size_t i = 0; i + 1 < samplers.size(); ++i) {
        const SamplerKind k = samplers[i];
        if (k == SamplerKind::Temperature && !(row.dynatemp_range > 0.0f) && row.temperature > 0.0f) continue;
        if (k != SamplerKind::Temperature && !acts(k, row)) continue;
        // A top-k first, within the candidates the collect pass keeps for it:
        // the tail knows the whole array after it (op_top_k). Anything else:
        // maybe.
        return !(k == SamplerKind::TopK && static_cast<uint32_t>(row.top_k) <= bound);
    }
    return false;
}

bool row_wide_direct(const std::vector<SamplerKind>& samplers, const ref::RowParams& row, uint32_t capacity) {
    // No buffer keeps min_keep entries (llama.cpp keeps at least one anyway),
    // penalties and DRY run in a pass of their own, and the wide passes divide
    // at most WIDE_MAX_DIVISIONS times (wide.glsl).
    if (row.min_keep > 1 || row_adjusts(samplers, row)) return false;
    if (std::count(samplers.begin(), samplers.end(), SamplerKind::Temperature) > WIDE_MAX_DIVISIONS) return false;
    return (analyse(samplers, row, capacity / 2, true).flags & ROW_DEFER_TOP_P) != 0;
}

bool row_block_plain(const uint32_t* block, uint32_t workgroup_size, uint32_t capacity) {
    // collect.comp: aggregates = want_sigma || want_mass; pick_chunk needs
    // need <= PROBE * WG (PROBE = 4), or min-p's floor (ROW_FLOOR: it keeps
    // what is at or above the floor, whatever the need), and
    // 2 * PROBE * WG <= CAP.
    const uint32_t need = std::clamp(block[P_NEED], 1u, capacity / 2);
    return (block[P_ROW_FLAGS] & (ROW_NEED_SIGMA | ROW_NEED_MASS)) == 0 &&
           (need <= 4 * workgroup_size || (block[P_ROW_FLAGS] & ROW_FLOOR) != 0) && 8 * workgroup_size <= capacity;
}

void write_row_params(uint32_t* p, const std::vector<SamplerKind>& samplers, const ref::RowParams& row, float scale,
                      const RowPlacement& at) {
    std::memset(p, 0, PARAM_STRIDE * 4);
    const Needs needs = analyse(samplers, row, at.capacity / 2, at.defer_top_p);
    p[P_SCALE] = bits(scale);
    p[P_SEED] = row.seed;
    p[P_SLOT] = at.slot_offset;
    p[P_DRAW] = 0;
    uint32_t flags = needs.flags | (row_has_inputs(row) ? ROW_HAS_INPUTS : 0u) | (at.commit ? ROW_COMMIT : 0u);
    // The history samplers (history.comp). Sieve's last_n are never -1 (the
    // engine refuses it); the window is the slot's history up to last_n.
    const bool has_penalties = std::find(samplers.begin(), samplers.end(), SamplerKind::Penalties) != samplers.end();
    const bool has_dry = std::find(samplers.begin(), samplers.end(), SamplerKind::Dry) != samplers.end();
    const bool pen = has_penalties && penalties_act(row), dry = has_dry && dry_acts(row);
    if (pen || dry) flags |= ROW_ADJUST;
    // Without a bias or bitmask the history pass writes the adjusted logits
    // into the row (the host uploads it again before every submission).
    // A chain asking for logprobs keeps the model's logits in the row: the
    // result reads the drawn token's raw logit there.
    if (row_adjusts_in_place(samplers, row) && at.logprobs < 0) flags |= ROW_PATCH;
    if (dry && std::find(samplers.begin(), samplers.end(), SamplerKind::Dry) <
                   std::find(samplers.begin(), samplers.end(), SamplerKind::Penalties))
        flags |= ROW_DRY_FIRST;
    p[P_PEN_LAST_N] = pen ? static_cast<uint32_t>(std::max(row.penalty_last_n, 0)) : 0u;
    p[P_REPEAT] = bits(row.penalty_repeat);
    p[P_FREQ] = bits(row.penalty_freq);
    p[P_PRESENT] = bits(row.penalty_present);
    p[P_DRY_LAST_N] = dry ? static_cast<uint32_t>(std::max(row.dry_penalty_last_n, 0)) : 0u;
    p[P_DRY_MULT] = bits(dry ? row.dry_multiplier : 0.0f);
    p[P_DRY_BASE] = bits(row.dry_base);
    p[P_DRY_ALLOWED] = static_cast<uint32_t>(std::max(row.dry_allowed_length, 0));
    p[P_DRY_MAX_EXP] = static_cast<uint32_t>(std::max(ref::dry_max_exponent(row.dry_base), 0));
    p[P_BREAKERS] = dry && !row.dry_sequence_breakers.empty() ? at.inputs_offset + row_breakers_offset(at.max_vocab)
                                                              : NO_INPUTS;
    p[P_ROW_FLAGS] = flags;
    p[P_MIRO_TAU] = bits(row.mirostat_tau);
    p[P_MIRO_ETA] = bits(row.mirostat_eta);
    p[P_ADAPT_TARGET] = bits(row.adaptive_target);
    p[P_ADAPT_DECAY] = bits(row.adaptive_decay);
    p[P_TEMPERATURE] = bits(row.temperature);
    p[P_TOP_K] = static_cast<uint32_t>(row.top_k);
    p[P_TOP_P] = bits(row.top_p);
    p[P_MIN_P] = bits(row.min_p);
    p[P_TYPICAL] = bits(row.typical_p);
    p[P_N_SIGMA] = bits(row.top_n_sigma);
    p[P_XTC_PROB] = bits(row.xtc_probability);
    p[P_XTC_THRESHOLD] = bits(row.xtc_threshold);
    p[P_DYN_RANGE] = bits(row.dynatemp_range);
    p[P_DYN_EXPONENT] = bits(row.dynatemp_exponent);
    p[P_MIN_KEEP] = static_cast<uint32_t>(std::max(row.min_keep, 0));
    p[P_AGG_T] = bits(needs.agg_t);
    p[P_NEED] = needs.need;
    p[P_LOGPROBS] = static_cast<uint32_t>(std::max(at.logprobs, 0));
    p[P_INPUTS] = at.inputs_offset;
    p[P_FLOOR] = bits(needs.floor);
}

void write_row_inputs(uint32_t* block, const ref::RowParams& row, uint32_t max_vocab) {
    const uint32_t words = (max_vocab + 31) / 32;
    std::vector<ref::LogitBias> bias = row.logit_bias;
    // By token, entries of one token in list order (the order they add up in).
    std::stable_sort(bias.begin(), bias.end(), [](const auto& a, const auto& b) { return a.token < b.token; });
    block[0] = static_cast<uint32_t>(bias.size());
    block[1] = words;
    uint32_t* masks = block + 2;
    for (uint32_t w = 0; w < words; ++w) {
        masks[2 * w] = row.token_bitmask.empty() ? 0xFFFFFFFFu : (w < row.token_bitmask.size() ? row.token_bitmask[w] : 0u);
        masks[2 * w + 1] = 0;
    }
    uint32_t* entries = masks + 2 * words;
    for (size_t e = 0; e < bias.size(); ++e) {
        const uint32_t t = static_cast<uint32_t>(bias[e].token);
        masks[2 * (t / 32) + 1] |= 1u << (t % 32);
        entries[2 * e] = t;
        entries[2 * e + 1] = bits(bias[e].bias);
    }
}

void write_row_breakers(uint32_t* block, const ref::RowParams& row, uint32_t max_vocab) {
    uint32_t* b = block + row_breakers_offset(max_vocab);
    b[0] = static_cast<uint32_t>(row.dry_sequence_breakers.size());
    uint32_t o = 1;
    for (const auto& seq : row.dry_sequence_breakers) {
        b[o++] = static_cast<uint32_t>(seq.size());
        for (int32_t t : seq) b[o++] = static_cast<uint32_t>(t);
    }
}

} // namespace sieve
