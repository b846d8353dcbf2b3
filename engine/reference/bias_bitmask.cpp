// What runs before the chain: the token bitmask and the logit bias.
//
// Logit bias: llama.cpp's common chain adds llama_sampler_init_logit_bias as its
// first sampler; llama_sampler_logit_bias_apply adds each entry's bias to its
// token's logit (entries for the same token add up, in list order; -inf bans the
// token). llama.cpp skips token ids outside the vocabulary silently; Sieve refuses
// them (SIEVE_ERROR_INVALID_ARGUMENT), and refuses NaN and +inf biases. A finite
// logit that the bias drives to +/-inf fails the row (SIEVE_ERROR_NON_FINITE_LOGIT),
// as an overflowing temperature does.
//
// Token bitmask (Sieve's, as structured-output engines produce it): ceil(V / 32)
// words, bit (id % 32) of word (id / 32) set = allowed; disallowed tokens become
// -inf before the chain. llama.cpp's grammar sampler instead checks the sampled
// token and resamples; Sieve masks first, which gives the distribution restricted
// to the allowed tokens.
//
// Order: the bitmask is applied first, then the bias. Both only lower logits to
// -inf or add to them, so the logits are the same in either order; applying the
// mask first means a bias overflow on a disallowed token is not an error.
#include "reference/detail.hpp"

#include <cmath>

namespace sieve::ref {

sieve_status apply_token_bitmask(CandidateArray& cur, const std::vector<uint32_t>& words, std::string* message) {
    if (words.empty()) return SIEVE_OK;
    const size_t needed = (cur.data.size() + 31) / 32;
    if (words.size() < needed) {
        if (message)
            *message = "the token bitmask has " + std::to_string(words.size()) + " words; vocab " +
                       std::to_string(cur.data.size()) + " needs " + std::to_string(needed);
        return SIEVE_ERROR_INVALID_ARGUMENT;
    }
    for (TokenData& td : cur.data) {
        const uint32_t id = static_cast<uint32_t>(td.id);
        if (!((words[id / 32] >> (id % 32)) & 1u)) td.logit = -INFINITY;
    }
    return SIEVE_OK;
}

sieve_status apply_logit_bias(CandidateArray& cur, const std::vector<LogitBias>& bias, std::string* message) {
    if (bias.empty()) return SIEVE_OK;
    for (const LogitBias& b : bias) {
        if (b.token < 0 || static_cast<size_t>(b.token) >= cur.data.size()) {
            if (message)
                *message = "logit bias token " + std::to_string(b.token) + " is outside the vocab 0.." +
                           std::to_string(static_cast<int64_t>(cur.data.size()) - 1);
            return SIEVE_ERROR_INVALID_ARGUMENT;
        }
        if (std::isnan(b.bias) || b.bias == INFINITY) {
            if (message)
                *message = "logit bias of token " + std::to_string(b.token) + " is " + detail::format_float(b.bias) +
                           " (NaN and +inf are refused; -inf bans the token)";
            return SIEVE_ERROR_INVALID_ARGUMENT;
        }
    }
    // The array is the one make_candidates built (index == id): the bias runs
    // before every sampler, as in llama.cpp's common chain.
    for (const LogitBias& b : bias) {
        TokenData& td = cur.data[static_cast<size_t>(b.token)];
        const float before = td.logit;
        td.logit = before + b.bias;
        if (std::isinf(td.logit) && std::isfinite(before) && std::isfinite(b.bias)) {
            if (message)
                *message = "logit bias " + detail::format_float(b.bias) + " overflowed logit " + std::to_string(td.id) +
                           " (" + detail::format_float(before) + ") to " + detail::format_float(td.logit);
            return SIEVE_ERROR_NON_FINITE_LOGIT;
        }
    }
    return SIEVE_OK;
}

} // namespace sieve::ref
