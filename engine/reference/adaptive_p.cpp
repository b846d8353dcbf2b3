// adaptive-p (a final selector: it takes dist's place). llama.cpp:
// llama_sampler_adaptive_p_apply / _accept / _reset and
// llama_sampler_init_adaptive_p (src/llama-sampler.cpp; PR 17927):
//
//   init:   decay = clamp(decay, 0, 0.99);
//           weighted_sum = target / (1 - decay); total_weight = 1 / (1 - decay)
//           (the raw target: the average starts at `target`, as if every earlier
//           token had had it); reset restores the same values.
//   apply:  softmax over the array, unsorted (llama_sampler_softmax_impl(cur_p, false));
//           target < 0: a plain draw from that distribution, nothing stored;
//           else: original_probs = the p's;
//                 target' = clamp(target, 0, 1);
//                 adapted = clamp(total_weight == 0 ? target'
//                                 : 2 * target' - weighted_sum / total_weight, 0, 1);
//                 every logit that is not -inf becomes
//                     dist = |(p - adapted) * INV_WIDTH|,
//                     logit = PEAK_LOGIT_VALUE - SHARPNESS * dist * dist / (1 + dist)
//                 with DISTRIBUTION_WIDTH = 0.3, INV_WIDTH = 1 / 0.3,
//                 PEAK_LOGIT_VALUE = 5, SHARPNESS = 10 (all float);
//                 softmax, draw; remember (token, its original p) as pending.
//   accept(token): only if token is the pending one (a token adaptive-p drew):
//                 weighted_sum = original_p + decay * weighted_sum;
//                 total_weight = 1 + decay * total_weight. Pending is cleared.
//
// In the twin the slot carries the running average (SlotState::adaptive_*), set
// at its first use with a target >= 0 (from that row's target and decay), and
// sample_row applies the update at the draw, with the drawn token: what
// llama.cpp's accept does when the caller accepts the token adaptive-p drew.
// Tokens the slot accepts without adaptive-p drawing them (prompt, forced
// tokens) never touch the average, as in llama.cpp. A negative target is a plain
// draw (exactly dist) and neither sets nor updates the average. The draw is
// Sieve's canonical inverse CDF with the Philox uniform (llama.cpp:
// std::discrete_distribution on the sampler's mt19937). The original
// probabilities come from the double softmax and enter the transform rounded to
// float (llama.cpp's p is float); the transform and the average are float, as
// llama.cpp's.
#include "reference/detail.hpp"

#include <algorithm>
#include <cmath>

namespace sieve::ref::detail {

namespace {

constexpr float kDistributionWidth = 0.3f;
constexpr float kPeakLogitValue = 5.0f;
constexpr float kSharpness = 10.0f;
constexpr float kInvWidth = 1.0f / kDistributionWidth;

float clamped_decay(float decay) { return std::clamp(decay, 0.0f, 0.99f); }

} // namespace

AdaptiveAverage adaptive_average(const SlotState* state, const RowParams& params) {
    if (state && state->adaptive_set) return AdaptiveAverage{state->adaptive_weighted_sum, state->adaptive_total_weight};
    const float decay = clamped_decay(params.adaptive_decay);
    return AdaptiveAverage{params.adaptive_target / (1.0f - decay), 1.0f / (1.0f - decay)};
}

float adaptive_target(const AdaptiveAverage& average, float target) {
    const float t = std::clamp(target, 0.0f, 1.0f);
    const float adapted = average.total_weight == 0.0f ? t : 2.0f * t - (average.weighted_sum / average.total_weight);
    return std::clamp(adapted, 0.0f, 1.0f);
}

std::vector<float> adaptive_transform(CandidateArray& cur, float adapted) {
    const std::vector<double> p = softmax_double(cur);
    std::vector<float> original(p.size());
    for (size_t i = 0; i < cur.data.size(); ++i) {
        original[i] = static_cast<float>(p[i]);
        TokenData& td = cur.data[i];
        if (td.logit == -INFINITY) continue; // masked members stay masked
        const float dist = std::abs((original[i] - adapted) * kInvWidth);
        td.logit = kPeakLogitValue - kSharpness * dist * dist / (1.0f + dist);
    }
    cur.sorted = false;
    return original;
}

AdaptiveAverage adaptive_update(const AdaptiveAverage& average, float original_p, float decay) {
    const float d = clamped_decay(decay);
    return AdaptiveAverage{original_p + d * average.weighted_sum, 1.0f + d * average.total_weight};
}

} // namespace sieve::ref::detail
