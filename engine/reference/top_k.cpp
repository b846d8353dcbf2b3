// top-k. llama.cpp: llama_sampler_top_k_impl (src/llama-sampling.cpp):
//     if (k <= 0) return;
//     k = std::min(k, (int) cur_p->size);
//     if (!cur_p->sorted) llama_token_data_array_partial_sort_inplace(cur_p, k);
//     cur_p->size = k;
// The clamp is to the array's size, so masked (-inf) members count: top-k 50
// after greedy masking of a 100-token row keeps the unmasked token and 49 masked
// ones. llama.cpp's partial sort leaves the order among equal logits unspecified;
// the twin sorts canonically, so a tie at the cut keeps the lower ids.
#include "reference/detail.hpp"

#include <algorithm>

namespace sieve::ref {

void apply_top_k(CandidateArray& cur, int32_t k) {
    if (k <= 0) return;
    const size_t keep = std::min(static_cast<size_t>(k), cur.data.size());
    if (!cur.sorted) {
        // A lambda, not the function's address: the comparisons inline.
        std::partial_sort(cur.data.begin(), cur.data.begin() + static_cast<std::ptrdiff_t>(keep), cur.data.end(),
                          [](const TokenData& a, const TokenData& b) { return detail::canonical_before(a, b); });
        cur.sorted = true;
    }
    cur.data.resize(keep);
}

} // namespace sieve::ref
