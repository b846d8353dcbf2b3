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

namespace {

// Stable LSD radix sort of 64-bit keys on their upper 32 bits (digits of 11, 11
// and 10 bits, histograms from one read pass; a digit every key shares is
// skipped); entries with equal upper halves keep their input order.
void radix_sort_upper32(std::vector<uint64_t>& keys) {
    constexpr int kShift[3] = {32, 43, 54};
    constexpr uint64_t kMask = 0x7FFu;
    std::vector<size_t> counts(3 * 2048, 0);
    for (uint64_t k : keys) {
        for (int d = 0; d < 3; ++d) ++counts[d * 2048 + ((k >> kShift[d]) & kMask)];
    }
    std::vector<uint64_t> scratch(keys.size());
    for (int d = 0; d < 3; ++d) {
        size_t* bucket = &counts[static_cast<size_t>(d) * 2048];
        size_t total = 0;
        bool single_bucket = false;
        for (size_t b = 0; b < 2048; ++b) {
            const size_t c = bucket[b];
            if (c == keys.size()) single_bucket = true;
            bucket[b] = total;
            total += c;
        }
        if (single_bucket) continue; // every key has this digit: the pass would be a copy
        for (uint64_t k : keys) scratch[bucket[(k >> kShift[d]) & kMask]++] = k;
        keys.swap(scratch);
    }
}

} // namespace

std::vector<Weighted> canonical_distribution(const CandidateArray& cur) {
    const auto& data = cur.data;
    std::vector<Weighted> out;

    // The unmasked members (masked = -inf, as llama.cpp's masking samplers leave
    // them) and their maximum.
    float max_l = -INFINITY;
    size_t unmasked = 0;
    bool ids_ascending = true;
    int32_t previous_id = INT32_MIN;
    for (const TokenData& td : data) {
        if (td.logit == -INFINITY) continue;
        ++unmasked;
        max_l = std::max(max_l, td.logit);
        if (td.id <= previous_id) ids_ascending = false;
        previous_id = td.id;
    }
    if (unmasked == 0) return out;

    // Canonical order: logit descending, ties by lower id. Sorting by the logit (not
    // by p) makes the order exact: p is a monotone function of the logit.
    std::vector<uint32_t> order;
    order.reserve(unmasked);
    if (ids_ascending) {
        // Key = descending logit key (high half) | array index (low half). Array
        // order is id order here, so a stable sort on the high half breaks ties by
        // lower id.
        std::vector<uint64_t> keys;
        keys.reserve(unmasked);
        for (size_t i = 0; i < data.size(); ++i) {
            if (data[i].logit == -INFINITY) continue;
            keys.push_back((uint64_t{~detail::float_key(data[i].logit)} << 32) | static_cast<uint32_t>(i));
        }
        if (keys.size() < 1024) {
            std::sort(keys.begin(), keys.end()); // index order = id order for ties
        } else {
            radix_sort_upper32(keys);
        }
        for (uint64_t k : keys) order.push_back(static_cast<uint32_t>(k));
    } else {
        for (size_t i = 0; i < data.size(); ++i) {
            if (data[i].logit != -INFINITY) order.push_back(static_cast<uint32_t>(i));
        }
        std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
            const uint32_t ka = detail::float_key(data[a].logit);
            const uint32_t kb = detail::float_key(data[b].logit);
            if (ka != kb) return ka > kb;
            return data[a].id < data[b].id;
        });
    }

    // Softmax in double: w_i = exp(l_i - max), p_i = w_i / sum (summed in canonical
    // order). llama.cpp computes the same in float (expf, float p).
    out.resize(unmasked);
    const double max_d = static_cast<double>(max_l);
    double sum = 0.0;
    for (size_t j = 0; j < unmasked; ++j) {
        const TokenData& td = data[order[j]];
        const double w = std::exp(static_cast<double>(td.logit) - max_d);
        out[j] = Weighted{td.id, w};
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
