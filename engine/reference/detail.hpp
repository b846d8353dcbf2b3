// Internal helpers of the CPU twin shared between its source files (not part of the
// interface the engine uses).
#pragma once

#include "reference/reference.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace sieve::ref::detail {

// Order-preserving 32-bit key of a float: a < b (as floats) <=> key(a) < key(b)
// for non-NaN values; -0 and +0 share the key of +0 (they compare equal as
// floats). The same mapping the GPU's radix selection uses (DESIGN.md).
inline uint32_t float_key(float f) {
    if (f == 0.0f) f = 0.0f; // -0 -> +0
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// apply_temperature that also reports overflow: after a t > 0 division a finite
// logit that became +/-inf fails the row with SIEVE_ERROR_NON_FINITE_LOGIT (Sieve's
// rule; llama.cpp would go on with an infinite logit and a NaN softmax). A NaN or
// infinite temperature is SIEVE_ERROR_INVALID_PARAMETER.
sieve_status apply_temperature_checked(CandidateArray& cur, float temperature, std::string* message);

std::string format_float(double value);

// Canonical order: logit descending (by float_key, so -0 == +0), ties by lower id.
inline bool canonical_before(const TokenData& a, const TokenData& b) {
    const uint32_t ka = float_key(a.logit);
    const uint32_t kb = float_key(b.logit);
    if (ka != kb) return ka > kb;
    return a.id < b.id;
}

// Sorts the whole array in canonical order and marks it sorted. Where llama.cpp
// sorts (std::sort / std::partial_sort by logit, unspecified order among equal
// logits), the twin sorts canonically: ties at every cut go to the lower id.
void sort_canonical(CandidateArray& cur);

// The probabilities llama_sampler_softmax_impl writes into the array, in double:
// p_i = exp(l_i - max) / sum over the whole array (masked members get 0), aligned
// with cur.data. llama.cpp computes them in float.
std::vector<double> softmax_double(const CandidateArray& cur);

// The index of the maximal logit, ties by lowest id (-1 for an empty array).
int64_t first_max_index(const CandidateArray& cur);

// ---- the stateful samplers --------------------------------------------------

// How many of the history's last tokens a sampler with window `last_n` reads:
// last_n == -1 = all of them, last_n <= 0 otherwise = none (llama.cpp clamps a
// negative last_n to 0, i.e. off), else min(size, last_n).
size_t history_window(size_t history_size, int32_t last_n);

// apply_penalties / apply_dry, also reporting Sieve's rule: a finite logit the
// penalty turns into +inf or NaN is SIEVE_ERROR_NON_FINITE_LOGIT (-inf is a mask
// and allowed). The array is penalized the same way either way.
sieve_status apply_penalties_checked(CandidateArray& cur, const std::vector<int32_t>& history,
                                     const RowParams& params, std::string* message);
sieve_status apply_dry_checked(CandidateArray& cur, const std::vector<int32_t>& history, const RowParams& params,
                               std::string* message);

} // namespace sieve::ref::detail
