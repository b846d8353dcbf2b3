// Sieve's side of a parity case: a chain of the case's samplers on one
// backend (kept per sampler list and reused: every parameter, the bias, the
// breakers and the slot are set afresh for each case), its final distribution
// (sieve_chain_distribution), and a draw steered to a given token.
#pragma once

#include "parity_case.hpp"

#include "reference/reference.hpp"

#include <sieve/sieve.hpp>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sieve_llama_test {

constexpr int32_t kMaxVocab = 262144;

struct SieveDistribution {
    sieve_status status = SIEVE_OK;
    std::string message;
    std::vector<int32_t> ids;  // canonical order
    std::vector<float> probs;
    std::map<int32_t, double> p;  // by id
};

class SieveSide {
public:
    explicit SieveSide(const sieve::Context& context) : context_(context) {}

    // The chain for `c`, with c's parameters and history in slot 0.
    sieve_chain* prepare(const Case& c) {
        auto& chain = chains_[c.samplers];
        if (!chain) {
            sieve::ChainDesc d;
            d.samplers(c.samplers).capacity(1, kMaxVocab);
            chain = std::make_unique<sieve::Chain>(context_, d);
        }
        sieve_chain* h = chain->get();
        const Params& p = c.params;
        const std::pair<sieve_param, double> values[] = {
            {SIEVE_PARAM_TEMPERATURE, p.temp},
            {SIEVE_PARAM_SEED, p.seed},
            {SIEVE_PARAM_MIN_KEEP, p.min_keep},
            {SIEVE_PARAM_TOP_K, p.top_k},
            {SIEVE_PARAM_TOP_P, p.top_p},
            {SIEVE_PARAM_MIN_P, p.min_p},
            {SIEVE_PARAM_TYPICAL_P, p.typ_p},
            {SIEVE_PARAM_TOP_N_SIGMA, p.top_n_sigma},
            {SIEVE_PARAM_XTC_PROBABILITY, p.xtc_probability},
            {SIEVE_PARAM_XTC_THRESHOLD, p.xtc_threshold},
            {SIEVE_PARAM_DYNATEMP_RANGE, p.dynatemp_range},
            {SIEVE_PARAM_DYNATEMP_EXPONENT, p.dynatemp_exponent},
            {SIEVE_PARAM_REPEAT_LAST_N, p.penalty_last_n},
            {SIEVE_PARAM_REPEAT_PENALTY, p.penalty_repeat},
            {SIEVE_PARAM_FREQUENCY_PENALTY, p.penalty_freq},
            {SIEVE_PARAM_PRESENCE_PENALTY, p.penalty_present},
            {SIEVE_PARAM_DRY_MULTIPLIER, p.dry_multiplier},
            {SIEVE_PARAM_DRY_BASE, p.dry_base},
            {SIEVE_PARAM_DRY_ALLOWED_LENGTH, p.dry_allowed_length},
            {SIEVE_PARAM_DRY_PENALTY_LAST_N, p.dry_penalty_last_n},
            {SIEVE_PARAM_MIROSTAT_TAU, p.mirostat_tau},
            {SIEVE_PARAM_MIROSTAT_ETA, p.mirostat_eta},
            {SIEVE_PARAM_ADAPTIVE_TARGET, p.adaptive_target},
            {SIEVE_PARAM_ADAPTIVE_DECAY, p.adaptive_decay},
        };
        for (auto [param, value] : values)
            EXPECT_EQ(sieve_chain_set_param(h, -1, param, value), SIEVE_OK) << sieve_last_error();
        std::vector<int32_t> bias_ids;
        std::vector<float> bias_values;
        for (auto [id, b] : p.logit_bias) {
            bias_ids.push_back(id);
            bias_values.push_back(b);
        }
        EXPECT_EQ(sieve_chain_set_logit_bias(h, -1, bias_ids.data(), bias_values.data(),
                                             static_cast<int32_t>(bias_ids.size())),
                  SIEVE_OK)
            << sieve_last_error();
        std::vector<int32_t> tokens, lengths;
        for (const auto& b : p.dry_breakers) {
            tokens.insert(tokens.end(), b.begin(), b.end());
            lengths.push_back(static_cast<int32_t>(b.size()));
        }
        EXPECT_EQ(sieve_chain_set_dry_breakers(h, -1, tokens.data(), lengths.data(), static_cast<int32_t>(lengths.size())),
                  SIEVE_OK)
            << sieve_last_error();
        EXPECT_EQ(sieve_chain_reset(h, -1), SIEVE_OK);
        if (!c.history.empty()) {
            EXPECT_EQ(sieve_accept(h, 0, c.history.data(), static_cast<int32_t>(c.history.size())), SIEVE_OK)
                << sieve_last_error();
        }
        return h;
    }

private:
    const sieve::Context& context_;
    std::map<std::string, std::unique_ptr<sieve::Chain>> chains_;
};

inline SieveDistribution sieve_distribution(sieve_chain* chain, const std::vector<float>& row) {
    const int32_t vocab = static_cast<int32_t>(row.size());
    SieveDistribution out;
    out.ids.resize(row.size());
    out.probs.resize(row.size());
    int32_t count = 0;
    out.status = sieve_chain_distribution(chain, row.data(), 1, vocab, 0, out.ids.data(), out.probs.data(), vocab, &count);
    if (out.status != SIEVE_OK) {
        out.message = sieve_last_error();
        count = 0;
    }
    out.ids.resize(static_cast<size_t>(count));
    out.probs.resize(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) out.p[out.ids[static_cast<size_t>(i)]] = out.probs[static_cast<size_t>(i)];
    return out;
}

// A seed whose first draw (step 0) from `dist` lands well inside `token`'s
// share of the CDF: Sieve's draw (Philox, docs/semantics.md) steered to the
// token llama.cpp's mt19937 picked, so that both sides' learnt state
// (mirostat's mu, adaptive-p's average) follow the same token. -1 when none
// is found (a token with no mass).
inline int64_t seed_drawing(const SieveDistribution& dist, int32_t token) {
    double total = 0, lo = -1, hi = -1;
    for (float q : dist.probs) total += q;
    double cum = 0;
    for (size_t i = 0; i < dist.ids.size(); ++i) {
        if (dist.ids[i] == token) lo = cum / total;
        cum += dist.probs[i];
        if (dist.ids[i] == token) hi = cum / total;
    }
    if (lo < 0 || hi - lo < 1e-6) return -1;
    const double margin = std::min(1e-5, (hi - lo) / 4);
    for (uint32_t s = 0; s < 50000000u; ++s) {
        const double u = sieve::ref::uniform_u32(s, 0, 0) / 4294967296.0;
        if (u > lo + margin && u < hi - margin) return s;
    }
    return -1;
}

} // namespace sieve_llama_test
