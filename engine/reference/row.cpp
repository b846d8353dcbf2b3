// One row through a chain: llama.cpp's llama_sampler_chain_apply (each sampler in
// order on the same candidate array) followed by the chain's selecting sampler.
#include "reference/detail.hpp"

#include <cmath>

namespace sieve::ref {

namespace {

enum class Final { Greedy, Dist, Mirostat, MirostatV2, AdaptiveP };

bool chain_has(const std::vector<SamplerKind>& chain, SamplerKind kind) {
    for (SamplerKind k : chain)
        if (k == kind) return true;
    return false;
}

const std::vector<int32_t> kNoHistory;

// Validates the chain and the row, builds the candidate array and runs every
// sampler before the final one. On success *final says how the token is picked.
// Every float parameter a sampler of the chain reads must be finite (llama.cpp
// gives NaN and infinities no meaning); the engine refuses them when they are
// set, the twin checks again for direct callers.
sieve_status check_params(const std::vector<SamplerKind>& chain, const RowParams& params, int32_t vocab,
                          const SlotState* state, std::string* message) {
    auto bad = [&](const char* name, float v) {
        *message = std::string(name) + " " + detail::format_float(v) + " is not finite";
        return SIEVE_ERROR_INVALID_PARAMETER;
    };
    auto invalid = [&](std::string text) {
        *message = std::move(text);
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
        case SamplerKind::Penalties:
            if (!std::isfinite(params.penalty_repeat)) return bad("penalty_repeat", params.penalty_repeat);
            if (!std::isfinite(params.penalty_freq)) return bad("penalty_freq", params.penalty_freq);
            if (!std::isfinite(params.penalty_present)) return bad("penalty_present", params.penalty_present);
            if (params.penalty_last_n < -1)
                return invalid("penalty_last_n " + std::to_string(params.penalty_last_n) +
                               " is negative (-1 = the whole history, 0 = off)");
            // llama.cpp multiplies or divides by it: 0 would give inf/NaN, a
            // negative value would turn penalties into rewards of flipped sign.
            if (!(params.penalty_repeat > 0.0f))
                return invalid("penalty_repeat " + detail::format_float(params.penalty_repeat) +
                               " is not positive (1 = off)");
            break;
        case SamplerKind::Dry:
            if (!std::isfinite(params.dry_multiplier)) return bad("dry_multiplier", params.dry_multiplier);
            if (!std::isfinite(params.dry_base)) return bad("dry_base", params.dry_base);
            if (params.dry_penalty_last_n < -1)
                return invalid("dry_penalty_last_n " + std::to_string(params.dry_penalty_last_n) +
                               " is negative (-1 = the whole history, 0 = off)");
            if (params.dry_allowed_length < 0)
                return invalid("dry_allowed_length " + std::to_string(params.dry_allowed_length) + " is negative");
            for (size_t b = 0; b < params.dry_sequence_breakers.size(); ++b) {
                const std::vector<int32_t>& seq = params.dry_sequence_breakers[b];
                if (seq.empty()) return invalid("DRY sequence breaker " + std::to_string(b) + " is empty");
                for (int32_t id : seq) {
                    if (id < 0 || id >= vocab)
                        return invalid("DRY sequence breaker " + std::to_string(b) + " has token " +
                                       std::to_string(id) + ", outside the vocabulary [0, " +
                                       std::to_string(vocab) + ")");
                }
            }
            break;
        case SamplerKind::Mirostat:
        case SamplerKind::MirostatV2:
            if (!std::isfinite(params.mirostat_tau)) return bad("mirostat_tau", params.mirostat_tau);
            if (!std::isfinite(params.mirostat_eta)) return bad("mirostat_eta", params.mirostat_eta);
            if (state && state->mu_set && !std::isfinite(state->mu)) {
                *message = "the slot's mirostat mu " + detail::format_float(state->mu) + " is not finite";
                return SIEVE_ERROR_INVALID_ARGUMENT;
            }
            break;
        case SamplerKind::AdaptiveP:
            if (!std::isfinite(params.adaptive_target)) return bad("adaptive_target", params.adaptive_target);
            if (!std::isfinite(params.adaptive_decay)) return bad("adaptive_decay", params.adaptive_decay);
            if (state && state->adaptive_set &&
                (!std::isfinite(state->adaptive_weighted_sum) || !std::isfinite(state->adaptive_total_weight))) {
                *message = "the slot's adaptive-p average (" + detail::format_float(state->adaptive_weighted_sum) +
                           " / " + detail::format_float(state->adaptive_total_weight) + ") is not finite";
                return SIEVE_ERROR_INVALID_ARGUMENT;
            }
            break;
        default:
            break;
        }
    }
    // The history is read by penalties and DRY; every token of it must be a
    // token of this call's vocabulary.
    if (state && (chain_has(chain, SamplerKind::Penalties) || chain_has(chain, SamplerKind::Dry))) {
        const std::vector<int32_t>& history = state->history;
        for (size_t i = 0; i < history.size(); ++i) {
            if (history[i] < 0 || history[i] >= vocab) {
                *message = "the slot's history has token " + std::to_string(history[i]) + " at position " +
                           std::to_string(i) + ", outside the vocabulary [0, " + std::to_string(vocab) + ")";
                return SIEVE_ERROR_INVALID_ARGUMENT;
            }
        }
    }
    return SIEVE_OK;
}

sieve_status fail_if_all_masked(const CandidateArray& cur, const char* sampler, std::string* message) {
    for (const TokenData& td : cur.data)
        if (td.logit != -INFINITY) return SIEVE_OK;
    *message = std::string(sampler) + " left every candidate of the row masked";
    return SIEVE_ERROR_ALL_MASKED;
}

sieve_status run_chain(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                       const RowParams& params, uint32_t step, uint32_t draw, const SlotState* state,
                       CandidateArray* cur, Final* final, std::string* message) {
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
        const bool selector = is_selector(kind);
        if (selector != (i + 1 == chain.size())) {
            *message = selector ? std::string("sampler '") + sampler_name(kind) + "' must be the last of the chain"
                                : "the sampler chain does not end with a sampler that picks the token (dist, "
                                  "greedy, mirostat, mirostat_v2 or adaptive_p)";
            return SIEVE_ERROR_INVALID_CHAIN;
        }
    }

    const sieve_status status = check_logits(logits, vocab, message);
    if (status != SIEVE_OK) return status;
    {
        const sieve_status s = check_params(chain, params, vocab, state, message);
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
    const std::vector<int32_t>& history = state ? state->history : kNoHistory;
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
        switch (chain[i]) {
        case SamplerKind::Temperature:
            s = apply_temperature_ext(*cur, params.temperature, params.dynatemp_range, params.dynatemp_exponent,
                                      message, params.dynatemp_ulps);
            if (s != SIEVE_OK) return s;
            break;
        case SamplerKind::TopK: apply_top_k(*cur, params.top_k); break;
        case SamplerKind::TopP: apply_top_p(*cur, params.top_p, min_keep); break;
        case SamplerKind::MinP: apply_min_p(*cur, params.min_p, min_keep); break;
        case SamplerKind::TypicalP:
            apply_typical(*cur, params.typical_p, min_keep, params.typical_grid_ulps, params.typical_grid_shifted);
            break;
        case SamplerKind::TopNSigma: apply_top_n_sigma(*cur, params.top_n_sigma); break;
        case SamplerKind::Xtc: {
            const double coin = static_cast<double>(xtc_coin_u32(params.seed, step, draw)) / 4294967296.0;
            apply_xtc(*cur, params.xtc_probability, params.xtc_threshold, min_keep, coin);
            break;
        }
        case SamplerKind::Penalties:
            s = detail::apply_penalties_checked(*cur, history, params, message);
            if (s != SIEVE_OK) return s;
            s = fail_if_all_masked(*cur, "penalties", message);
            if (s != SIEVE_OK) return s;
            break;
        case SamplerKind::Dry:
            s = detail::apply_dry_checked(*cur, history, params, message);
            if (s != SIEVE_OK) return s;
            s = fail_if_all_masked(*cur, "DRY", message);
            if (s != SIEVE_OK) return s;
            break;
        default:
            *message = std::string("sampler '") + sampler_name(chain[i]) + "' is not implemented yet";
            return SIEVE_ERROR_UNSUPPORTED_SAMPLER;
        }
    }
    switch (chain.back()) {
    case SamplerKind::Greedy: *final = Final::Greedy; break;
    case SamplerKind::Mirostat: *final = Final::Mirostat; break;
    case SamplerKind::MirostatV2: *final = Final::MirostatV2; break;
    case SamplerKind::AdaptiveP: *final = Final::AdaptiveP; break;
    default: *final = Final::Dist; break;
    }
    return SIEVE_OK;
}

// The distribution the final sampler draws from at the slot's state `state`
// (NULL = a fresh slot), for every final sampler but greedy. For adaptive-p with
// a target >= 0, *original gets each candidate's probability before the
// transform, aligned with cur.data; it is left empty otherwise.
std::vector<Weighted> final_distribution(Final final, CandidateArray& cur, int32_t vocab, const RowParams& params,
                                         const SlotState* state, std::vector<float>* original) {
    original->clear();
    switch (final) {
    case Final::Mirostat:
        return detail::mirostat_v1_distribution(cur, vocab, detail::mirostat_mu(state, params.mirostat_tau),
                                                params.mirostat_k_rel);
    case Final::MirostatV2:
        return detail::mirostat_v2_distribution(cur, detail::mirostat_mu(state, params.mirostat_tau));
    case Final::AdaptiveP:
        if (params.adaptive_target >= 0.0f) {
            const detail::AdaptiveAverage average = detail::adaptive_average(state, params);
            *original = detail::adaptive_transform(cur, detail::adaptive_target(average, params.adaptive_target));
        }
        break; // a negative target is a plain draw
    case Final::Greedy:
    case Final::Dist:
        break;
    }
    return canonical_distribution(cur);
}

} // namespace

RowResult sample_row(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                     const RowParams& params, uint32_t step, uint32_t draw, SlotState* state) {
    RowResult result;
    CandidateArray cur;
    Final final = Final::Dist;
    result.status = run_chain(chain, logits, vocab, params, step, draw, state, &cur, &final, &result.message);
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

    // dist, mirostat, adaptive-p: the final distribution (softmax over the
    // unmasked candidates, canonical order) at the slot's state, then the inverse
    // CDF with the row's Philox uniform.
    std::vector<float> original;
    const std::vector<Weighted> dist = final_distribution(final, cur, vocab, params, state, &original);
    if (dist.empty()) {
        result.status = SIEVE_ERROR_ALL_MASKED;
        result.message = kEveryCandidateMasked;
        return result;
    }
    const size_t index = draw_inverse_cdf(dist, uniform_u32(params.seed, step, draw));
    result.token = dist[index].id;
    result.p = static_cast<float>(dist[index].p);
    result.logprob = static_cast<float>(std::log(dist[index].p));

    // The learning samplers' update from their own draw (a fresh local slot when
    // the caller keeps none).
    SlotState local;
    SlotState& slot = state ? *state : local;
    if (final == Final::Mirostat || final == Final::MirostatV2) {
        const float mu = detail::mirostat_mu(state, params.mirostat_tau);
        slot.mu = detail::mirostat_update(mu, dist[index].p, params.mirostat_tau, params.mirostat_eta);
        slot.mu_set = true;
    } else if (final == Final::AdaptiveP && !original.empty()) {
        float original_p = 0.0f;
        for (size_t i = 0; i < cur.data.size(); ++i) {
            if (cur.data[i].id == result.token) {
                original_p = original[i];
                break;
            }
        }
        const detail::AdaptiveAverage updated =
            detail::adaptive_update(detail::adaptive_average(state, params), original_p, params.adaptive_decay);
        slot.adaptive_weighted_sum = updated.weighted_sum;
        slot.adaptive_total_weight = updated.total_weight;
        slot.adaptive_set = true;
    }
    return result;
}

sieve_status row_distribution(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                              const RowParams& params, std::vector<Weighted>* out, std::string* message,
                              uint32_t step, uint32_t draw, const SlotState* state) {
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
    const sieve_status status = run_chain(chain, logits, vocab, params, step, draw, state, &cur, &final, &msg);
    if (status != SIEVE_OK) return status;
    if (final == Final::Greedy) {
        const int64_t index = greedy_index(cur);
        out->push_back(Weighted{cur.data[static_cast<size_t>(index)].id, 1.0});
        return SIEVE_OK;
    }
    std::vector<float> original;
    *out = final_distribution(final, cur, vocab, params, state, &original);
    if (out->empty()) {
        msg = kEveryCandidateMasked;
        return SIEVE_ERROR_ALL_MASKED;
    }
    return SIEVE_OK;
}

} // namespace sieve::ref
