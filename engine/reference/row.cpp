// One row through a chain: llama.cpp's llama_sampler_chain_apply (each sampler in
// order on the same candidate array) followed by the chain's selecting sampler.
#include "reference/detail.hpp"

#include <cmath>

namespace sieve::ref {

namespace {

enum class Final { Greedy, Dist };

// Validates the chain and the row, builds the candidate array and runs every
// sampler before the final one. On success *final says how the token is picked.
// Every float parameter a sampler of the chain reads must be finite (llama.cpp
// gives NaN and infinities no meaning); the engine refuses them when they are
// set, the twin checks again for direct callers.
sieve_status check_params(const std::vector<SamplerKind>& chain, const RowParams& params, std::string* message) {
    auto bad = [&](const char* name, float v) {
        *message = std::string(name) + " " + detail::format_float(v) + " is not finite";
        return SIEVE_ERROR_INVALID_PARAMETER;
    };
    for (SamplerKind kind : chain) {
        switch (kind) {
        case SamplerKind::Temperature:
            if (!std::isfinite(params.dynatemp_range)) return bad("dynatemp_range", params.dynatemp_range);
            if (!std::isfinite(params.dynatemp_exponent)) return bad("dynatemp_exponent", params.dynatemp_exponent);
            break;
        case SamplerKind::TopP:
            if (!std::isfinite(params.top_p)) return bad("top_p", params.top_p);
            break;
        case SamplerKind::MinP:
            if (!std::isfinite(params.min_p)) return bad("min_p", params.min_p);
            break;
        case SamplerKind::TypicalP:
            if (!std::isfinite(params.typical_p)) return bad("typical_p", params.typical_p);
            break;
        case SamplerKind::TopNSigma:
            if (!std::isfinite(params.top_n_sigma)) return bad("top_n_sigma", params.top_n_sigma);
            break;
        case SamplerKind::Xtc:
            if (!std::isfinite(params.xtc_probability)) return bad("xtc_probability", params.xtc_probability);
            if (!std::isfinite(params.xtc_threshold)) return bad("xtc_threshold", params.xtc_threshold);
            break;
        default:
            break;
        }
    }
    return SIEVE_OK;
}

sieve_status run_chain(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                       const RowParams& params, uint32_t step, uint32_t draw, CandidateArray* cur, Final* final,
                       std::string* message) {
    if (chain.empty()) {
        *message = "the sampler chain is empty";
        return SIEVE_ERROR_INVALID_CHAIN;
    }
    for (size_t i = 0; i < chain.size(); ++i) {
        const SamplerKind kind = chain[i];
        if (!sampler_implemented(kind)) {
            *message = std::string("sampler '") + sampler_name(kind) + "' is not implemented yet";
            return SIEVE_ERROR_UNSUPPORTED_SAMPLER;
        }
        const bool selector = kind == SamplerKind::Greedy || kind == SamplerKind::Dist;
        if (selector != (i + 1 == chain.size())) {
            *message = selector ? std::string("sampler '") + sampler_name(kind) + "' must be the last of the chain"
                                : "the sampler chain does not end with 'dist' or 'greedy'";
            return SIEVE_ERROR_INVALID_CHAIN;
        }
    }

    const sieve_status status = check_logits(logits, vocab, message);
    if (status != SIEVE_OK) return status;
    {
        const sieve_status s = check_params(chain, params, message);
        if (s != SIEVE_OK) return s;
    }

    *cur = make_candidates(logits, vocab);

    // Before the chain: the token bitmask, then the logit bias (llama.cpp's common
    // chain runs the bias as its first sampler).
    const bool had_bitmask = !params.token_bitmask.empty();
    sieve_status s = apply_token_bitmask(*cur, params.token_bitmask, message);
    if (s != SIEVE_OK) return s;
    s = apply_logit_bias(*cur, params.logit_bias, message);
    if (s != SIEVE_OK) return s;
    if (had_bitmask || !params.logit_bias.empty()) {
        bool any = false;
        for (const TokenData& td : cur->data) any = any || td.logit != -INFINITY;
        if (!any) {
            *message = had_bitmask ? "the token bitmask and logit bias leave every token of the row masked"
                                   : "the logit bias leaves every token of the row masked";
            if (had_bitmask && params.logit_bias.empty()) *message = "the token bitmask allows no token of the row";
            return SIEVE_ERROR_ALL_MASKED;
        }
    }

    const size_t min_keep = static_cast<size_t>(params.min_keep > 0 ? params.min_keep : 0);
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
        switch (chain[i]) {
        case SamplerKind::Temperature:
            s = apply_temperature_ext(*cur, params.temperature, params.dynatemp_range, params.dynatemp_exponent,
                                      message);
            if (s != SIEVE_OK) return s;
            break;
        case SamplerKind::TopK: apply_top_k(*cur, params.top_k); break;
        case SamplerKind::TopP: apply_top_p(*cur, params.top_p, min_keep); break;
        case SamplerKind::MinP: apply_min_p(*cur, params.min_p, min_keep); break;
        case SamplerKind::TypicalP: apply_typical(*cur, params.typical_p, min_keep); break;
        case SamplerKind::TopNSigma: apply_top_n_sigma(*cur, params.top_n_sigma); break;
        case SamplerKind::Xtc: {
            const double coin = static_cast<double>(xtc_coin_u32(params.seed, step, draw)) / 4294967296.0;
            apply_xtc(*cur, params.xtc_probability, params.xtc_threshold, min_keep, coin);
            break;
        }
        case SamplerKind::Penalties:
            // llama_sampler_penalties_apply returns at once when
            // penalty_last_n == 0 || (repeat == 1 && freq == 0 && present == 0):
            // llama.cpp's defaults (1.0, 0.0, 0.0). Sieve has no way to set them
            // yet, so the sampler is exactly that no-op.
            break;
        case SamplerKind::Dry:
            // llama_sampler_dry_apply returns at once when dry_multiplier == 0
            // (llama.cpp's default); as for penalties, it cannot be enabled yet.
            break;
        default:
            *message = std::string("sampler '") + sampler_name(chain[i]) + "' is not implemented yet";
            return SIEVE_ERROR_UNSUPPORTED_SAMPLER;
        }
    }
    *final = chain.back() == SamplerKind::Greedy ? Final::Greedy : Final::Dist;
    return SIEVE_OK;
}

} // namespace

RowResult sample_row(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                     const RowParams& params, uint32_t step, uint32_t draw, SlotState* /*state*/) {
    RowResult result;
    CandidateArray cur;
    Final final = Final::Dist;
    result.status = run_chain(chain, logits, vocab, params, step, draw, &cur, &final, &result.message);
    if (result.status != SIEVE_OK) return result;

    if (final == Final::Greedy) {
        // llama_sampler_greedy_apply. The final distribution is degenerate: the
        // argmax with probability 1.
        const int64_t index = greedy_index(cur);
        result.token = cur.data[static_cast<size_t>(index)].id;
        result.p = 1.0f;
        result.logprob = 0.0f;
        return result;
    }

    // dist: softmax over the unmasked candidates, inverse CDF in canonical order.
    const std::vector<Weighted> dist = canonical_distribution(cur);
    if (dist.empty()) { // unreachable: check_logits and temperature leave a finite logit
        result.status = SIEVE_ERROR_ALL_MASKED;
        result.message = "every candidate is masked";
        return result;
    }
    const size_t index = draw_inverse_cdf(dist, uniform_u32(params.seed, step, draw));
    result.token = dist[index].id;
    result.p = static_cast<float>(dist[index].p);
    result.logprob = static_cast<float>(std::log(dist[index].p));
    return result;
}

sieve_status row_distribution(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                              const RowParams& params, std::vector<Weighted>* out, std::string* message,
                              uint32_t step, uint32_t draw, const SlotState* /*state*/) {
    std::string local_message;
    std::string& msg = message ? *message : local_message;
    msg.clear();
    if (!out) {
        msg = "row_distribution: out is NULL";
        return SIEVE_ERROR_INVALID_ARGUMENT;
    }
    out->clear();
    CandidateArray cur;
    Final final = Final::Dist;
    const sieve_status status = run_chain(chain, logits, vocab, params, step, draw, &cur, &final, &msg);
    if (status != SIEVE_OK) return status;
    if (final == Final::Greedy) {
        const int64_t index = greedy_index(cur);
        out->push_back(Weighted{cur.data[static_cast<size_t>(index)].id, 1.0});
        return SIEVE_OK;
    }
    *out = canonical_distribution(cur);
    return SIEVE_OK;
}

} // namespace sieve::ref
