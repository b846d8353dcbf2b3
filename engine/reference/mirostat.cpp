// Mirostat v1 and v2 (final selectors: they pick the token). llama.cpp:
// llama_sampler_mirostat_apply and llama_sampler_mirostat_v2_apply
// (src/llama-sampler.cpp, formerly src/llama-sampling.cpp):
//
//   v1 (m = 100, n_vocab = the vocabulary size):
//     softmax, sorted (llama_sampler_softmax_impl(cur_p, true));
//     for (i = 0; i < m - 1 && i < size - 1; ++i) {
//         t_i = logf((i + 2) / (i + 1));  b_i = logf(p_i / p_{i+1});
//         sum_ti_bi += t_i * b_i;  sum_ti_sq += t_i * t_i;
//     }
//     s_hat = sum_ti_bi / sum_ti_sq;  epsilon_hat = s_hat - 1;
//     k = powf((epsilon_hat * powf(2, mu)) / (1 - powf(n_vocab, -epsilon_hat)), 1 / s_hat);
//     top-k with max(int(k), 1); softmax again; draw; then the update below.
//   v2:
//     softmax, sorted; cut the array at the first candidate with -log2f(p) > mu
//     (a prefix: p descends); size 0 -> 1; softmax again; draw; the update.
//   The update (both): observed_surprise = -log2f(p of the drawn token) under the
//     distribution it was drawn from; e = observed_surprise - tau; mu = mu - eta * e
//     (float). mu = 2 * tau at init and reset (llama_sampler_init_mirostat[_v2],
//     ..._reset); the twin sets it at the slot's first use (SlotState::mu_set).
//
// Sieve's departures:
// - The draw is Sieve's: the canonical distribution (canonical_distribution) and
//   the inverse CDF with the row's Philox uniform, exactly as dist draws, instead
//   of llama_sample_dist's std::discrete_distribution on the sampler's mt19937.
// - v1's k is computed in logs (k = exp(log x / s_hat)), so a huge s_hat or mu
//   overflows nothing: logits {0, 0, 0, -1.7e38} give s_hat ~ 1e38 and k ~ 1,
//   llama.cpp's answer (its b_i = log(p / 0) = inf makes k = inf^0 = 1).
// - v1's estimate is in double (the GPU's in float, as llama.cpp's: where k
//   lies within float rounding of a whole number the two keep one entry
//   apart, which the agreement rules allow: RowParams::mirostat_k_rel), and
//   b_i = logit_i - logit_{i+1}, which is
//   log(p_i / p_{i+1}) without the softmax's rounding or underflow. The pairs are
//   those of the unmasked candidates in canonical order (the first min(m, live)).
//   llama.cpp's loop also takes pairs with masked members (p = 0), where b_i is
//   +inf or NaN and k becomes int(inf/NaN), undefined behaviour (INT_MIN on x86,
//   so k = 1); the twin leaves masked members out of the estimate.
// - One candidate (fewer than 2 unmasked members): there is no pair and
//   llama.cpp's s_hat is 0/0. The twin keeps that one candidate (k = 1, what
//   llama.cpp gets on x86 from int(NaN)); it is drawn with p = 1, surprise 0, so
//   mu rises by eta * tau.
// - epsilon_hat == 0 (s_hat exactly 1): llama.cpp's k is 0/0 = NaN. The twin
//   takes the limit, k = 2^mu / ln(n_vocab).
// - k at or beyond the array's size (including +inf, e.g. 2^mu overflowing)
//   keeps the whole array; llama.cpp's int(k) is undefined there (INT_MIN on
//   x86, k = 1). A NaN k (not reachable from finite parameters) keeps one.
// - v2's surprise -log2(p) is compared with mu in double (p from the double
//   softmax). The update is llama.cpp's float arithmetic, with the surprise
//   computed in double and rounded to float.
#include "reference/detail.hpp"

#include <algorithm>
#include <cmath>

namespace sieve::ref::detail {

namespace {

constexpr int32_t kMirostatM = 100; // common_sampler_init passes m = 100

} // namespace

float mirostat_mu(const SlotState* state, float tau) {
    if (state && state->mu_set) return state->mu;
    return 2.0f * tau;
}

size_t mirostat_v1_keep(const CandidateArray& sorted, int32_t n_vocab, float mu, double k_rel) {
    const auto& data = sorted.data;
    size_t live = 0;
    while (live < data.size() && data[live].logit != -INFINITY) ++live;
    if (live < 2) return 1;

    double sum_ti_bi = 0.0;
    double sum_ti_sq = 0.0;
    for (size_t i = 0; i + 1 < static_cast<size_t>(kMirostatM) && i + 1 < live; ++i) {
        const double t_i = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
        const double b_i = static_cast<double>(data[i].logit) - static_cast<double>(data[i + 1].logit);
        sum_ti_bi += t_i * b_i;
        sum_ti_sq += t_i * t_i;
    }
    const double s_hat = sum_ti_bi / sum_ti_sq; // >= 0: canonical order makes every b_i >= 0
    const double epsilon_hat = s_hat - 1.0;
    const double n = static_cast<double>(n_vocab);
    // k = x^(1/s_hat), x = epsilon_hat 2^mu / (1 - n^-epsilon_hat), in logs: the
    // product overflows for a huge s_hat (a gap of 1e38 between two logits) or
    // mu, where k itself is finite (near 1). epsilon_hat >= -1, so the ratio is
    // positive.
    const double ratio = epsilon_hat == 0.0 ? 1.0 / std::log(n) : epsilon_hat / (1.0 - std::pow(n, -epsilon_hat));
    const double log_x = std::log(ratio) + static_cast<double>(mu) * std::log(2.0);
    const double k = std::exp(log_x / s_hat) * (1.0 + k_rel); // s_hat == 0: x^inf, i.e. 0, 1 (NaN: log_x 0) or inf
    if (std::isnan(k)) return 1;
    if (!(k < static_cast<double>(data.size()))) return data.size();
    return std::max<size_t>(static_cast<size_t>(k), 1);
}

std::vector<Weighted> mirostat_v1_distribution(CandidateArray& cur, int32_t n_vocab, float mu, double k_rel) {
    if (!cur.sorted) sort_canonical(cur);
    const size_t keep = mirostat_v1_keep(cur, n_vocab, mu, k_rel);
    apply_top_k(cur, static_cast<int32_t>(std::min<size_t>(keep, static_cast<size_t>(INT32_MAX))));
    return canonical_distribution(cur);
}

std::vector<Weighted> mirostat_v2_distribution(CandidateArray& cur, float mu) {
    if (!cur.sorted) sort_canonical(cur);
    // The probabilities canonical_distribution gives the whole array, only as
    // far as the cut: its list of a whole vocabulary took more time than the
    // rest of the call. The unmasked members come first in canonical order,
    // in the order it sums them.
    const auto& data = cur.data;
    size_t unmasked = 0;
    while (unmasked < data.size() && data[unmasked].logit != -INFINITY) ++unmasked;
    const double max_d = unmasked > 0 ? static_cast<double>(data[0].logit) : 0.0;
    double sum = 0.0;
    for (size_t j = 0; j < unmasked; ++j) sum += canonical_weight(data[j].logit, max_d);
    size_t keep = 0;
    const double limit = static_cast<double>(mu);
    while (keep < unmasked && !(-std::log2(canonical_weight(data[keep].logit, max_d) / sum) > limit)) ++keep;
    keep = std::max<size_t>(keep, 1);
    cur.data.resize(keep);
    return canonical_distribution(cur);
}

float mirostat_update(float mu, double p, float tau, float eta) {
    const float observed_surprise = static_cast<float>(-std::log2(p));
    const float e = observed_surprise - tau;
    return mu - eta * e;
}

} // namespace sieve::ref::detail
