// Helpers on llama.cpp's candidate array shared by the samplers: the canonical
// sort, the softmax (llama_sampler_softmax_impl) and the first maximal entry.
#include "reference/detail.hpp"

#include <algorithm>
#include <cmath>

namespace sieve::ref::detail {

void sort_canonical(CandidateArray& cur) {
    std::sort(cur.data.begin(), cur.data.end(), canonical_before);
    cur.sorted = true;
}

std::vector<double> softmax_double(const CandidateArray& cur) {
    std::vector<double> p(cur.data.size(), 0.0);
    float max_l = -INFINITY;
    for (const TokenData& td : cur.data) max_l = std::max(max_l, td.logit);
    if (max_l == -INFINITY) return p; // every member masked: no mass anywhere
    double sum = 0.0;
    for (size_t i = 0; i < cur.data.size(); ++i) {
        const float l = cur.data[i].logit;
        if (l == -INFINITY) continue;
        p[i] = std::exp(static_cast<double>(l) - static_cast<double>(max_l));
        sum += p[i];
    }
    for (double& v : p) v /= sum;
    return p;
}

int64_t first_max_index(const CandidateArray& cur) {
    const auto& data = cur.data;
    if (data.empty()) return -1;
    size_t best = 0;
    for (size_t i = 1; i < data.size(); ++i) {
        const float a = data[i].logit;
        const float b = data[best].logit;
        if (a > b || (a == b && data[i].id < data[best].id)) best = i;
    }
    return static_cast<int64_t>(best);
}

} // namespace sieve::ref::detail
