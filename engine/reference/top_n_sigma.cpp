// top-n-sigma. llama.cpp: llama_sampler_top_n_sigma_apply (src/llama-sampling.cpp):
//     if (ctx->n <= 0.0f || cur_p->size <= 1) return;
//     max, mean over the logits != -inf; std = sqrt(sum (l - mean)^2 / count);
//     for each entry: if (logit < max - n * std) logit = -INFINITY;   // masked, kept
//     llama_sampler_softmax_impl(cur_p, true);                        // sorts
// A masking sampler: the array does not shrink, later samplers count the masked
// members. n = 0 is a no-op (llama.cpp PR #13345). The twin computes mean, sigma
// and the threshold in double (llama.cpp: float), but keeps llama.cpp's float
// overflow: when the sum or the sum of squares passes float's range, llama.cpp's
// sigma is infinite, its threshold -inf, and nothing is masked (logits
// 0, -6.5e27, 0: a square of 4e55; the GPU's float sums agree).
#include "reference/detail.hpp"

#include <cfloat>
#include <cmath>

namespace sieve::ref {

void apply_top_n_sigma(CandidateArray& cur, float n) {
    if (n <= 0.0f || cur.data.size() <= 1) return;
    double max = -INFINITY;
    double sum = 0.0;
    size_t count = 0;
    for (const TokenData& td : cur.data) {
        if (td.logit == -INFINITY) continue;
        max = std::max(max, static_cast<double>(td.logit));
        sum += td.logit;
        ++count;
    }
    if (count == 0) return;
    const double mean = sum / static_cast<double>(count);
    double acc = 0.0;
    for (const TokenData& td : cur.data) {
        if (td.logit == -INFINITY) continue;
        const double d = static_cast<double>(td.logit) - mean;
        acc += d * d;
    }
    if (std::fabs(sum) > FLT_MAX || acc > FLT_MAX) {  // llama.cpp's float sums overflow: nothing masked
        detail::sort_canonical(cur);
        return;
    }
    const double sigma = std::sqrt(acc / static_cast<double>(count));
    const double threshold = max - static_cast<double>(n) * sigma;
    for (TokenData& td : cur.data)
        if (static_cast<double>(td.logit) < threshold) td.logit = -INFINITY;
    detail::sort_canonical(cur);
}

} // namespace sieve::ref
