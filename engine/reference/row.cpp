// One row through a chain: llama.cpp's llama_sampler_chain_apply (each sampler in
// order on the same candidate array) followed by the chain's selecting sampler.
#include "reference/detail.hpp"

#include <cmath>

namespace sieve::ref {

namespace {

enum class Final { Greedy, Dist };

// Validates the chain and the row, builds the candidate array and runs every
// sampler before the final one. On success *final says how the token is picked.
sieve_status run_chain(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                       const RowParams& params, CandidateArray* cur, Final* final, std::string* message) {
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

    *cur = make_candidates(logits, vocab);
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
        switch (chain[i]) {
        case SamplerKind::Temperature: {
            const sieve_status s = detail::apply_temperature_checked(*cur, params.temperature, message);
            if (s != SIEVE_OK) return s;
            break;
        }
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
                     const RowParams& params, uint32_t step, uint32_t draw) {
    RowResult result;
    CandidateArray cur;
    Final final = Final::Dist;
    result.status = run_chain(chain, logits, vocab, params, &cur, &final, &result.message);
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
                              const RowParams& params, std::vector<Weighted>* out, std::string* message) {
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
    const sieve_status status = run_chain(chain, logits, vocab, params, &cur, &final, &msg);
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
