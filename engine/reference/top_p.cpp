// top-p (nucleus). llama.cpp: llama_sampler_top_p_apply (src/llama-sampling.cpp):
//     if (ctx->p >= 1.0f) return;
//     llama_sampler_softmax_impl(cur_p, false);     // p over the whole array
//     ... sort by logit descending ...
//     for (i = 0; i < size; ++i) {
//         cum_sum += pdata[i].p;
//         if (cum_sum >= ctx->p && i + 1 >= ctx->min_keep) { last_idx = i + 1; break; }
//     }
//     cur_p->size = last_idx;                      // last_idx = size when never reached
// So p <= 0 keeps the first entry (or min_keep entries). Masked members have
// p = 0 and count towards min_keep. The twin sums double probabilities in
// canonical order (llama.cpp: float); ties at the cut keep the lower ids.
#include "reference/detail.hpp"

#include <algorithm>

namespace sieve::ref {

void apply_top_p(CandidateArray& cur, float p, size_t min_keep) {
    if (p >= 1.0f) return;
    if (cur.data.empty()) return;
    if (!cur.sorted) detail::sort_canonical(cur);
    // The array is sorted now (llama.cpp: sorted = true after top-p), so the
    // softmax is in canonical order.
    const std::vector<double> prob = detail::softmax_double(cur);
    const double target = static_cast<double>(p);
    double cum = 0.0;
    size_t last = cur.data.size();
    for (size_t i = 0; i < cur.data.size(); ++i) {
        cum += prob[i];
        if (cum >= target && i + 1 >= min_keep) {
            last = i + 1;
            break;
        }
    }
    cur.data.resize(last);
}

} // namespace sieve::ref
