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
// floats). The same mapping the GPU's radix selection uses (docs/contracts.md, "Determinism").
// Written without branches: over a row's logits of both signs a branch on
// the sign is mispredicted half the time, which cost the twin's canonical
// sort more than its radix passes.
inline uint32_t float_key(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    u &= 0u - static_cast<uint32_t>((u << 1) != 0u);  // -0 -> +0
    return u ^ (static_cast<uint32_t>(static_cast<int32_t>(u) >> 31) | 0x80000000u);
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
    return (ka > kb) | ((ka == kb) & (a.id < b.id));  // no branch: see float_key
}

// The float whose key is `key`: float_key's inverse (-0 comes back as +0).
inline float key_float(uint32_t key) {
    const uint32_t u = key ^ (((key >> 31) - 1u) | 0x80000000u);
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// `data`'s entries in canonical order, the masked (-inf) ones left out
// unless `with_masked`, as 64-bit words: ~float_key(logit) above the entry's
// index (WordLow::Index) or its id (WordLow::Id: word_id). By comparisons for
// short arrays, else by a radix sort (the same order: canonical order is
// total over distinct ids). With the id and the key in the word, a walk in
// canonical order reads no entry (word_logit, word_id). The words are the
// thread's, valid until its next call.
enum class WordLow : uint8_t { Index, Id };
const std::vector<uint64_t>& canonical_words(const std::vector<TokenData>& data, bool with_masked, WordLow low);
// A word's logit (-0 as +0, which compares and weighs the same) and id (WordLow::Id).
inline float word_logit(uint64_t word) { return key_float(~static_cast<uint32_t>(word >> 32)); }
int32_t word_id(uint64_t word);

// Sorts the whole array in canonical order and marks it sorted. Where llama.cpp
// sorts (std::sort / std::partial_sort by logit, unspecified order among equal
// logits), the twin sorts canonically: ties at every cut go to the lower id.
void sort_canonical(CandidateArray& cur);

// The probabilities llama_sampler_softmax_impl writes into the array, in double:
// p_i = exp(l_i - max) / sum over the whole array (masked members get 0), aligned
// with cur.data. llama.cpp computes them in float.
std::vector<double> softmax_double(const CandidateArray& cur);

// The indices of `score` ascending by score, equal scores in index order: a
// stable sort (typical's). Linear where the scores fall and then rise, as
// typical's do over a canonical array; any other sequence (a NaN among them)
// takes std::stable_sort.
std::vector<size_t> order_by_score(const std::vector<double>& score);

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

// mirostat (mirostat.cpp). The mu a draw uses: the slot's, or 2 * tau before its
// first use (or without a slot).
float mirostat_mu(const SlotState* state, float tau);
// v1's k on a canonically sorted array: how many entries its top-k keeps (>= 1).
// k_rel: RowParams::mirostat_k_rel (the agreement rules' move; 0 otherwise).
size_t mirostat_v1_keep(const CandidateArray& sorted, int32_t n_vocab, float mu, double k_rel = 0.0);
// The distribution each version draws from at `mu` (cur is sorted and cut).
std::vector<Weighted> mirostat_v1_distribution(CandidateArray& cur, int32_t n_vocab, float mu, double k_rel = 0.0);
std::vector<Weighted> mirostat_v2_distribution(CandidateArray& cur, float mu);
// mu after drawing a token of probability p: mu - eta * (-log2(p) - tau), float.
float mirostat_update(float mu, double p, float tau, float eta);

// adaptive-p (adaptive_p.cpp). Its running average of the original
// probabilities of the tokens it drew.
struct AdaptiveAverage {
    float weighted_sum;
    float total_weight;
};
// The slot's average, or llama.cpp's initial one (target / (1 - decay),
// 1 / (1 - decay), decay clamped to [0, 0.99]) before its first use.
AdaptiveAverage adaptive_average(const SlotState* state, const RowParams& params);
// The step's adapted target: clamp(2 * clamp(target, 0, 1) - average, 0, 1).
float adaptive_target(const AdaptiveAverage& average, float target);
// Replaces every unmasked logit with the transform around `adapted`; returns the
// original probabilities (the softmax before the transform), aligned with cur.data.
std::vector<float> adaptive_transform(CandidateArray& cur, float adapted);
// The average after a draw of a token whose original probability was original_p.
AdaptiveAverage adaptive_update(const AdaptiveAverage& average, float original_p, float decay);

} // namespace sieve::ref::detail
