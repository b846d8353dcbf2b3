// The final distribution and the draw. llama.cpp's dist sampler
// (llama_sampler_dist_apply) takes a softmax over every candidate of the array and
// walks it in array order with a uniform from std::mt19937. Sieve keeps the same
// distribution but fixes an order and an RNG that a GPU can reproduce: the softmax
// in double over the unmasked candidates, walked in canonical order (logit
// descending, ties by lower id) with a Philox uniform.
#include "reference/detail.hpp"

#include <algorithm>
#include <cmath>

namespace sieve::ref {

std::vector<Weighted> canonical_distribution(const CandidateArray& cur) {
    const auto& data = cur.data;
    std::vector<Weighted> out;

    // The unmasked members (masked = -inf, as llama.cpp's masking samplers leave
    // them) in canonical order: logit descending, ties by lower id. Sorting by
    // the logit (not by p) makes the order exact: p is a monotone function of
    // the logit. The words carry each member's logit and id: the walk reads
    // them in order, not the array at random.
    const std::vector<uint64_t>& order = detail::canonical_words(data, false, detail::WordLow::Id);
    const size_t unmasked = order.size();
    if (unmasked == 0) return out;

    // Softmax in double: w_i = exp(l_i - max), p_i = w_i / sum (summed in canonical
    // order). llama.cpp computes the same in float (expf, float p).
    out.resize(unmasked);
    const double max_d = static_cast<double>(detail::word_logit(order[0]));
    double sum = 0.0;
    for (size_t j = 0; j < unmasked; ++j) {
        const double w = canonical_weight(detail::word_logit(order[j]), max_d);
        out[j] = Weighted{detail::word_id(order[j]), w};
        sum += w;
    }
    for (Weighted& w : out) w.p /= sum;
    return out;
}

size_t draw_inverse_cdf(const std::vector<Weighted>& dist, uint32_t u32) {
    if (dist.empty()) return 0; // callers never draw from an empty distribution
    double total = 0.0;
    for (const Weighted& w : dist) total += w.p;
    // u = u32 / 2^32 in [0, 1); the target mass is u times the total mass, so a
    // total that rounds away from 1 does not bias the draw.
    const double target = (static_cast<double>(u32) / 4294967296.0) * total;
    double cumulative = 0.0;
    size_t last_nonzero = 0;
    for (size_t i = 0; i < dist.size(); ++i) {
        cumulative += dist[i].p;
        if (dist[i].p > 0.0) last_nonzero = i;
        if (cumulative > target) return i;
    }
    // Only reachable through rounding: the last entry that has any mass.
    return last_nonzero;
}

} // namespace sieve::ref
