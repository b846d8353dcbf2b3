// The raw log-probabilities outputs (OpenAI's logprobs / top_logprobs over the
// model's distribution before any sampler): the twin of raw_stats.comp.
#include "reference.hpp"

#include <algorithm>
#include <cmath>

namespace sieve::ref {

RawLogprobs raw_logprobs(const float* raw, int32_t vocab, int32_t token, int32_t n) {
    // The logits as read on ingest: subnormals are zeros (make_candidates).
    std::vector<float> logits(raw, raw + vocab);
    for (float& f : logits) f = flush_subnormal(f);
    RawLogprobs out;
    double m = -INFINITY;
    for (int32_t i = 0; i < vocab; ++i)
        if (std::isfinite(logits[i])) m = std::max(m, static_cast<double>(logits[i]));
    double sum = 0.0;
    for (int32_t i = 0; i < vocab; ++i)
        if (std::isfinite(logits[i])) sum += std::exp(static_cast<double>(logits[i]) - m);
    out.log_z = m + std::log(sum);
    out.token_logprob = static_cast<double>(logits[token]) - out.log_z;
    if (n <= 0) return out;
    std::vector<int32_t> ids;
    ids.reserve(static_cast<size_t>(vocab));
    for (int32_t i = 0; i < vocab; ++i)
        if (std::isfinite(logits[i])) ids.push_back(i);
    const size_t k = std::min(ids.size(), static_cast<size_t>(n));
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](int32_t a, int32_t b) {
        return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
    });
    for (size_t j = 0; j < k; ++j) out.top.push_back({ids[j], static_cast<double>(logits[ids[j]]) - out.log_z});
    return out;
}

} // namespace sieve::ref
