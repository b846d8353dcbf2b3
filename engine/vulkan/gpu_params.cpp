#include "vulkan/gpu_params.hpp"

#include "vulkan/slot_layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sieve {

namespace {

// The parameter block's words (P_*), the row flags (ROW_*).
using namespace glsl;

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

} // namespace

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

void write_row_params(uint32_t* p, const RowAnalysis& a, const ref::RowParams& row, float scale,
                      const RowPlacement& at) {
    std::memset(p, 0, PARAM_STRIDE * 4);
    p[P_SCALE] = bits(scale);
    p[P_SEED] = row.seed;
    p[P_SLOT] = at.slot_offset;
    p[P_DRAW] = 0;
    const bool pen = a.penalties, dry = a.dry;
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
    p[P_ROW_FLAGS] = a.flags | (at.commit ? ROW_COMMIT : 0u);
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
    p[P_AGG_T] = bits(a.agg_t);
    p[P_NEED] = a.need;
    p[P_LOGPROBS] = static_cast<uint32_t>(std::max(at.logprobs, 0));
    p[P_INPUTS] = at.inputs_offset;
    p[P_FLOOR] = bits(a.floor);
}

void write_row_inputs(uint32_t* block, const ref::RowParams& row, uint32_t max_vocab) {
    const uint32_t words = (max_vocab + 31) / 32;
    std::vector<ref::LogitBias> bias = row.logit_bias;
    // By token, entries of one token in list order (the order they add up in).
    std::stable_sort(bias.begin(), bias.end(), [](const auto& a, const auto& b) { return a.token < b.token; });
    block[0] = static_cast<uint32_t>(bias.size());
    block[1] = words;
    uint32_t* masks = block + 2;
    // Each word's bias bits from the sorted entries as it goes: the block is
    // device memory on a discrete GPU, which the host writes, never reads
    // (an uncached PCIe round trip a word).
    size_t e = 0;
    for (uint32_t w = 0; w < words; ++w) {
        masks[2 * w] = row.token_bitmask.empty() ? 0xFFFFFFFFu : (w < row.token_bitmask.size() ? row.token_bitmask[w] : 0u);
        uint32_t biased = 0;
        for (; e < bias.size() && static_cast<uint32_t>(bias[e].token) / 32 == w; ++e)
            biased |= 1u << (static_cast<uint32_t>(bias[e].token) % 32);
        masks[2 * w + 1] = biased;
    }
    uint32_t* entries = masks + 2 * words;
    for (size_t i = 0; i < bias.size(); ++i) {
        entries[2 * i] = static_cast<uint32_t>(bias[i].token);
        entries[2 * i + 1] = bits(bias[i].bias);
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

// row_logit's rules: NaN and +Inf stay (the row fails on them whatever the
// mask says: the twin checks the model's logits first); a disallowed token
// is -inf; then the bias entries add up in list order onto the logit read
// as on ingest (flush_subnormal), and a finite logit a finite bias drives to
// +-inf is NaN (the row fails, as the twin's apply_logit_bias does). A
// subnormal sum reads as zero in the passes (they flush what they read),
// where the twin keeps it: docs/semantics.md.
// The copy and the mask are one pass over the row: a word that allows
// every token is copied as it is.
void copy_row_with_inputs(const ref::RowParams& row, const float* src, float* dst, int32_t vocab) {
    const auto fails = [](float f) { return std::isnan(f) || f == INFINITY; };
    const uint32_t v = static_cast<uint32_t>(vocab);
    if (row.token_bitmask.empty()) std::memcpy(dst, src, static_cast<size_t>(v) * 4);
    else
        for (uint32_t w = 0; w * 32 < v; ++w) {
            const uint32_t allowed = w < row.token_bitmask.size() ? row.token_bitmask[w] : 0u;
            const uint32_t begin = 32 * w, end = std::min(v, begin + 32);
            if (allowed == 0xFFFFFFFFu) {
                std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin) * 4);
                continue;
            }
            for (uint32_t i = begin; i < end; ++i)
                dst[i] = ((allowed >> (i % 32)) & 1u) || fails(src[i]) ? src[i] : -INFINITY;
        }
    // A bias adds to an allowed token whose logit does not fail the row.
    const auto biased = [&](uint32_t t) {
        const bool allowed = row.token_bitmask.empty() ||
                             (t / 32 < row.token_bitmask.size() && ((row.token_bitmask[t / 32] >> (t % 32)) & 1u));
        return allowed && !fails(src[t]);
    };
    // Each biased token from its flushed logit, then every entry in list order.
    for (const ref::LogitBias& e : row.logit_bias) {
        const uint32_t t = static_cast<uint32_t>(e.token);
        if (biased(t)) dst[t] = ref::flush_subnormal(src[t]);
    }
    for (const ref::LogitBias& e : row.logit_bias) {
        const uint32_t t = static_cast<uint32_t>(e.token);
        if (!biased(t)) continue;
        const float before = dst[t], after = before + e.bias;
        dst[t] = std::isinf(after) && !std::isinf(before) && !std::isinf(e.bias) ? NAN : after;
    }
}

} // namespace sieve
