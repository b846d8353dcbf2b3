// Temperature with a dynamic range. llama.cpp's common chain runs "temperature" as
// llama_sampler_init_temp_ext(temp, dynatemp_range, dynatemp_exponent);
// llama_sampler_temp_ext_apply (src/llama-sampling.cpp):
//     if (delta > 0) {
//         min_temp = max(0, temp - delta); max_temp = temp + delta;
//         if (cur_p->size <= 1) return;                       // masked members count
//         max_entropy = -logf(1.0f / cur_p->size);            // log N, N = array size
//         llama_sampler_softmax_impl(cur_p, true);             // sorted, p over the array
//         entropy = -sum_{p > 0} p * logf(p);
//         dyn_temp = min_temp + (max_temp - min_temp) * powf(entropy / max_entropy, exponent);
//         llama_sampler_temp_impl(cur_p, dyn_temp);            // dyn_temp <= 0: greedy masking
//     } else llama_sampler_temp_impl(cur_p, temp);
// The twin computes min/max, the entropy and dyn_temp in double and divides by
// dyn_temp rounded to float (the same float division as plain temperature). If
// dyn_temp is +inf (a negative exponent with zero entropy), every finite logit
// becomes 0 and masked members stay masked (llama.cpp: -inf / inf = NaN).
#include "reference/detail.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace sieve::ref {

double dynamic_temperature(const CandidateArray& cur, float temperature, float range, float exponent) {
    const double t = temperature;
    const double min_temp = std::max(0.0, t - static_cast<double>(range));
    const double max_temp = t + static_cast<double>(range);
    const double max_entropy = std::log(static_cast<double>(cur.data.size()));
    const std::vector<double> prob = detail::softmax_double(cur);
    // llama.cpp's p is float: each term takes p rounded to float, and a p
    // below float's smallest normal counts as 0 (a device may flush it, as
    // Sieve reads subnormal logits). A row one logit dominates then has
    // entropy exactly 0 and dyn_temp exactly min_temp (0: greedy masking), as
    // in llama.cpp, where double's 1 - 1e-61 and 1e-63 would give a tiny
    // positive temperature instead.
    double entropy = 0.0;
    for (double q : prob) {
        const float p = static_cast<float>(q);
        if (p >= FLT_MIN) entropy -= static_cast<double>(p) * std::log(static_cast<double>(p));
    }
    const double normalized = entropy / max_entropy;
    return min_temp + (max_temp - min_temp) * std::pow(normalized, static_cast<double>(exponent));
}

sieve_status apply_temperature_ext(CandidateArray& cur, float temperature, float range, float exponent,
                                   std::string* message, int32_t ulps) {
    if (!(range > 0.0f)) return detail::apply_temperature_checked(cur, temperature, message);
    if (cur.data.size() <= 1) return SIEVE_OK;
    detail::sort_canonical(cur);
    float dyn = static_cast<float>(dynamic_temperature(cur, temperature, range, exponent));
    for (int32_t i = 0; i < ulps && std::isfinite(dyn); ++i) dyn = std::nextafter(dyn, INFINITY);
    for (int32_t i = 0; i > ulps && std::isfinite(dyn); --i) dyn = std::nextafter(dyn, -INFINITY);
    if (std::isinf(dyn)) {
        for (TokenData& td : cur.data)
            if (td.logit != -INFINITY) td.logit = td.logit / dyn;
        cur.sorted = false;
        return SIEVE_OK;
    }
    const sieve_status s = detail::apply_temperature_checked(cur, dyn, message);
    if (s != SIEVE_OK && message) *message = "dynamic " + *message;
    return s;
}

} // namespace sieve::ref
