// The samplers of this issue on llama.cpp's candidate array (src/llama-sampler.cpp,
// formerly src/llama-sampling.cpp).
#include "reference/detail.hpp"

#include <cmath>

namespace sieve::ref {

// llama_sampler_sample builds the array from the logits row: {id, logit, 0} for
// every token, selected = -1, sorted = false. Subnormal logits become zeros
// (flush_subnormal): a GPU may flush them, and did (1.5e-43 next to zeros was
// the maximum for the twin and a tie for the GPU).
CandidateArray make_candidates(const float* logits, int32_t vocab) {
    CandidateArray cur;
    if (!logits || vocab <= 0) return cur;
    cur.data.resize(static_cast<size_t>(vocab));
    for (int32_t i = 0; i < vocab; ++i) cur.data[static_cast<size_t>(i)] = TokenData{i, flush_subnormal(logits[i]), 0.0f};
    return cur;
}

// llama_sampler_temp_impl, exactly:
//   t <= 0: scan with strict '>', keep the first maximal logit, write -inf over
//           every other entry (entries stay; later samplers still count them);
//   t > 0:  logit /= t (float division).
// "First" is in array order in llama.cpp. On an array in id order (the array as
// llama_sampler_sample builds it) that is the lowest id among the maxima; after a
// sorting sampler llama.cpp's order among equal logits is unspecified
// (std::sort), so the twin always takes the lowest id: the canonical order.
void apply_temperature(CandidateArray& cur, float temperature) {
    auto& data = cur.data;
    if (data.empty()) return;
    // Sieve's rule: a subnormal temperature, given or dynamic, is 0 (a device
    // may flush it; llama.cpp would divide and overflow).
    temperature = flush_subnormal(temperature);
    // The twin's `sorted` means "in canonical order": a division can merge
    // neighbouring logits out of id order, masking reorders, so later cuts sort again.
    cur.sorted = false;
    if (temperature <= 0.0f) {
        const size_t keep = static_cast<size_t>(detail::first_max_index(cur));
        for (size_t i = 0; i < data.size(); ++i)
            if (i != keep) data[i].logit = -INFINITY;
        return;
    }
    for (TokenData& td : data) td.logit /= temperature;
}

// llama_sampler_greedy_apply: selected = 0, then the first index with a strictly
// greater logit wins (ties keep the lowest index; the twin: the lowest id, see
// apply_temperature).
int64_t greedy_index(const CandidateArray& cur) { return detail::first_max_index(cur); }

namespace detail {

sieve_status apply_temperature_checked(CandidateArray& cur, float temperature, std::string* message) {
    temperature = flush_subnormal(temperature);  // apply_temperature's rule
    if (std::isnan(temperature) || std::isinf(temperature)) {
        if (message) *message = "temperature " + format_float(temperature) + " is not finite";
        return SIEVE_ERROR_INVALID_PARAMETER;
    }
    if (temperature <= 0.0f) {
        apply_temperature(cur, temperature);
        return SIEVE_OK;
    }
    // Same division as apply_temperature, checking each result.
    cur.sorted = false;
    for (TokenData& td : cur.data) {
        const float before = td.logit;
        td.logit = before / temperature;
        if (std::isinf(td.logit) && std::isfinite(before)) {
            if (message) {
                *message = "temperature " + format_float(temperature) + " overflowed logit " + std::to_string(td.id) +
                           " (" + format_float(before) + ") to " + format_float(td.logit);
            }
            return SIEVE_ERROR_NON_FINITE_LOGIT;
        }
    }
    return SIEVE_OK;
}

} // namespace detail

} // namespace sieve::ref
