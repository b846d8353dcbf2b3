// A twin RowParams applied to a chain's row through the C API, every
// parameter the twin's row takes (logit bias and bitmask aside: they are
// inputs of the call). One mapping for the tests, the differential fuzzer
// and the soak. Without gtest.
#pragma once

#include "reference/reference.hpp"

#include <sieve/sieve.hpp>

#include <utility>
#include <vector>

namespace sieve_test::twin {

// Sets row `row` (-1 = every row) of `chain` to `p`; the first refused value's
// status (sieve_last_error() says why), SIEVE_OK when all were taken.
inline sieve_status set_row_params(sieve_chain* chain, int32_t row, const sieve::ref::RowParams& p) {
    const std::pair<sieve_param, double> values[] = {
        {SIEVE_PARAM_TEMPERATURE, p.temperature}, {SIEVE_PARAM_SEED, p.seed},
        {SIEVE_PARAM_MIN_KEEP, p.min_keep}, {SIEVE_PARAM_TOP_K, p.top_k}, {SIEVE_PARAM_TOP_P, p.top_p},
        {SIEVE_PARAM_MIN_P, p.min_p}, {SIEVE_PARAM_TYPICAL_P, p.typical_p}, {SIEVE_PARAM_TOP_N_SIGMA, p.top_n_sigma},
        {SIEVE_PARAM_XTC_PROBABILITY, p.xtc_probability}, {SIEVE_PARAM_XTC_THRESHOLD, p.xtc_threshold},
        {SIEVE_PARAM_DYNATEMP_RANGE, p.dynatemp_range}, {SIEVE_PARAM_DYNATEMP_EXPONENT, p.dynatemp_exponent},
        {SIEVE_PARAM_REPEAT_LAST_N, p.penalty_last_n}, {SIEVE_PARAM_REPEAT_PENALTY, p.penalty_repeat},
        {SIEVE_PARAM_FREQUENCY_PENALTY, p.penalty_freq}, {SIEVE_PARAM_PRESENCE_PENALTY, p.penalty_present},
        {SIEVE_PARAM_DRY_MULTIPLIER, p.dry_multiplier}, {SIEVE_PARAM_DRY_BASE, p.dry_base},
        {SIEVE_PARAM_DRY_ALLOWED_LENGTH, p.dry_allowed_length}, {SIEVE_PARAM_DRY_PENALTY_LAST_N, p.dry_penalty_last_n},
        {SIEVE_PARAM_MIROSTAT_TAU, p.mirostat_tau}, {SIEVE_PARAM_MIROSTAT_ETA, p.mirostat_eta},
        {SIEVE_PARAM_ADAPTIVE_TARGET, p.adaptive_target}, {SIEVE_PARAM_ADAPTIVE_DECAY, p.adaptive_decay}};
    for (const auto& [param, value] : values) {
        // A negative window is the twin's "the whole history given"; the API
        // has none: the chain's default window, its history capacity, is the
        // same while the history fits (a window set earlier is left as it is).
        const bool window = param == SIEVE_PARAM_REPEAT_LAST_N || param == SIEVE_PARAM_DRY_PENALTY_LAST_N;
        if (window && value < 0) continue;
        if (sieve_status s = sieve_chain_set_param(chain, row, param, value); s != SIEVE_OK) return s;
    }
    std::vector<int32_t> tokens, lengths;
    for (const auto& b : p.dry_sequence_breakers) {
        tokens.insert(tokens.end(), b.begin(), b.end());
        lengths.push_back(static_cast<int32_t>(b.size()));
    }
    return sieve_chain_set_dry_breakers(chain, row, tokens.data(), lengths.data(), static_cast<int32_t>(lengths.size()));
}

// The same through the C++ wrapper: a refused value throws sieve::Error.
inline void set_row_params(sieve::Chain& chain, int32_t row, const sieve::ref::RowParams& p) {
    sieve::check(set_row_params(chain.get(), row, p));
}

} // namespace sieve_test::twin
