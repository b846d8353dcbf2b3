// XTC (exclude top choices). llama.cpp: llama_sample_xtc_apply
// (src/llama-sampling.cpp):
//     if (ctx->probability <= 0.0f || ctx->threshold > 0.5f || cur_p->size < 2) return;
//     chance = uniform float in [0, 1) from the sampler's mt19937;
//     if (chance > ctx->probability) return;
//     llama_sampler_softmax_impl(cur_p, true);          // sorted, p over the array
//     pos_last = last i of the leading run with data[i].p >= threshold (0 if none);
//     if (cur_p->size - pos_last >= ctx->min_keep && pos_last > 0) {
//         cur_p->data += pos_last; cur_p->size -= pos_last;   // drop all but the last
//     }
// The size check counts masked members (they are in the array). The coin: Sieve
// uses the row's Philox stream instead of a second mt19937,
// coin = xtc_coin_u32(seed, step, draw) / 2^32 (word 1 of the draw's Philox block;
// the draw uses word 0). Probabilities are double (llama.cpp: float), but the
// threshold test is llama.cpp's float one: p rounded to float, `p >= threshold`
// (ten equal logits give p = 0.1 in double, below 0.1f, yet exactly 0.1f in
// float, so llama.cpp fires there). The kept token of a tied run is the last
// in canonical order: the highest id among the ties.
#include "reference/detail.hpp"

namespace sieve::ref {

void apply_xtc(CandidateArray& cur, float probability, float threshold, size_t min_keep, double coin) {
    if (probability <= 0.0f || threshold > 0.5f || cur.data.size() < 2) return;
    if (coin > static_cast<double>(probability)) return;
    if (!cur.sorted) detail::sort_canonical(cur);
    const std::vector<double> prob = detail::softmax_double(cur);
    size_t pos_last = 0;
    for (size_t i = 0; i < prob.size(); ++i) {
        if (static_cast<float>(prob[i]) >= threshold) {
            pos_last = i;
        } else {
            break;
        }
    }
    if (cur.data.size() - pos_last >= min_keep && pos_last > 0) {
        cur.data.erase(cur.data.begin(), cur.data.begin() + static_cast<std::ptrdiff_t>(pos_last));
    }
}

} // namespace sieve::ref
