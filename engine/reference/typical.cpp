// Locally typical sampling. llama.cpp: llama_sampler_typical_apply
// (src/llama-sampling.cpp):
//     if (ctx->p >= 1.0f) return;
//     llama_sampler_softmax_impl(cur_p, true);                 // sorted, p over the array
//     entropy = sum -p_i * logf(p_i);
//     score_i = fabsf(-logf(p_i) - entropy);
//     sort indices by score ascending;
//     for (i...) { cum_sum += p[idx]; if (cum_sum > ctx->p && (min_keep == 0 || i >= min_keep - 1))
//                  { last_idx = i + 1; break; } }
//     keep the first last_idx in score order; sorted = false.
// Departure: with a masked member (p = 0) llama.cpp computes -0 * logf(0) = NaN,
// so its entropy and every score are NaN and the result is arbitrary. The twin
// takes 0 * log 0 = 0 (the limit): the entropy is that of the unmasked members,
// and a p = 0 member's score is +inf (ranked last). Probabilities, entropy and
// scores are in double (llama.cpp: float), except that a score is taken of the
// probability rounded to float: members whose probabilities are equal in float
// (logits closer than float resolves, 1e-30 and 5e-14 say) score the same, as
// in llama.cpp and on the GPU, where double would rank them by a difference
// float never sees. Equal scores keep canonical order.
#include "reference/detail.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sieve::ref {
namespace detail {

// In canonical order -log p never falls, so |-log p - H| falls and then
// rises (as does a grid step of it, a monotone map): the order is the merge
// of the falling run, read backwards a group of equal scores at a time, with
// the rising one, which is linear where a sort of the whole row was not.
std::vector<size_t> order_by_score(const std::vector<double>& score) {
    const size_t n = score.size();
    std::vector<size_t> order;
    order.reserve(n);
    size_t rise = 1;  // the falling run is [0, rise)
    while (rise < n && score[rise] <= score[rise - 1]) ++rise;
    bool shaped = true;  // no NaN, and the rest rises
    for (size_t i = 0; i < n && shaped; ++i) shaped = !std::isnan(score[i]) && (i <= rise || score[i] >= score[i - 1]);
    if (!shaped) {
        order.resize(n);
        std::iota(order.begin(), order.end(), size_t{0});
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
        return order;
    }
    size_t fall = std::min(rise, n);  // the falling run's entries not taken yet: [0, fall)
    size_t up = fall;
    while (fall > 0 || up < n) {
        if (fall > 0 && (up == n || score[fall - 1] <= score[up])) {
            // The falling run's lowest score, its equal ones in index order;
            // at a tie they come first (their indices are lower).
            size_t group = fall - 1;
            while (group > 0 && score[group - 1] == score[fall - 1]) --group;
            for (size_t i = group; i < fall; ++i) order.push_back(i);
            fall = group;
        } else {
            order.push_back(up++);
        }
    }
    return order;
}

} // namespace detail

void apply_typical(CandidateArray& cur, float p, size_t min_keep, int32_t grid_ulps, bool grid_shifted) {
    if (p >= 1.0f) return;
    if (cur.data.empty()) return;
    detail::sort_canonical(cur);
    const std::vector<double> prob = detail::softmax_double(cur);
    double entropy = 0.0;
    for (double q : prob)
        if (q > 0.0) entropy -= q * std::log(q);
    std::vector<double> score(prob.size());
    for (size_t i = 0; i < prob.size(); ++i)
        score[i] = prob[i] > 0.0 ? std::fabs(-std::log(static_cast<double>(static_cast<float>(prob[i]))) - entropy)
                                 : INFINITY;
    if (grid_ulps > 0) {  // the agreement rules' move (RowParams::typical_grid_ulps)
        const double step = grid_ulps * std::ldexp(std::max(1.0, entropy), -23);
        for (double& s : score)
            if (std::isfinite(s)) s = std::floor(s / step + (grid_shifted ? 0.5 : 0.0));
    }
    const std::vector<size_t> order = detail::order_by_score(score);

    const double target = static_cast<double>(p);
    double cum = 0.0;
    size_t last = order.size();
    for (size_t i = 0; i < order.size(); ++i) {
        cum += prob[order[i]];
        if (cum > target && (min_keep == 0 || i + 1 >= min_keep)) {
            last = i + 1;
            break;
        }
    }
    std::vector<TokenData> kept;
    kept.reserve(last);
    for (size_t i = 0; i < last; ++i) kept.push_back(cur.data[order[i]]);
    cur.data = std::move(kept);
    cur.sorted = false;
}

} // namespace sieve::ref
