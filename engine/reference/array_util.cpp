// Helpers on llama.cpp's candidate array shared by the samplers: the canonical
// sort, the softmax (llama_sampler_softmax_impl) and the first maximal entry.
#include "reference/detail.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

namespace sieve::ref::detail {

void radix_sort_u64(std::vector<uint64_t>& keys, unsigned low_bit) {
    constexpr unsigned kDigit = 11;
    constexpr uint64_t kMask = (uint64_t{1} << kDigit) - 1;
    std::vector<unsigned> shifts;
    for (unsigned s = low_bit; s < 64; s += kDigit) shifts.push_back(s);
    std::vector<size_t> counts(shifts.size() << kDigit, 0);
    for (uint64_t k : keys) {
        for (size_t d = 0; d < shifts.size(); ++d) ++counts[(d << kDigit) + ((k >> shifts[d]) & kMask)];
    }
    // Not value-initialised: every pass writes all of it (on a whole
    // vocabulary the zeroing and its page faults cost as much as a pass).
    std::unique_ptr<uint64_t[]> scratch(new uint64_t[keys.size()]);
    uint64_t* from = keys.data();
    uint64_t* to = scratch.get();
    for (size_t d = 0; d < shifts.size(); ++d) {
        size_t* bucket = &counts[d << kDigit];
        size_t total = 0;
        bool single_bucket = false;
        for (size_t b = 0; b <= kMask; ++b) {
            const size_t c = bucket[b];
            if (c == keys.size()) single_bucket = true;
            bucket[b] = total;
            total += c;
        }
        if (single_bucket) continue; // every key has this digit: the pass would be a copy
        for (size_t i = 0; i < keys.size(); ++i) to[bucket[(from[i] >> shifts[d]) & kMask]++] = from[i];
        std::swap(from, to);
    }
    if (from != keys.data()) std::copy(from, from + keys.size(), keys.begin());
}

namespace {

// Arrays shorter than this sort by comparisons; longer ones by radix (a
// whole vocabulary: std::sort took most of the twin's time in every chain
// that sorts the full row, about 15 ms at 151936 entries on this project's
// 2-core test machine).
constexpr size_t kRadixSortFrom = 1024;

// `order` (indices into `data`, at least kRadixSortFrom of them) in canonical
// order: an LSD radix sort of 64-bit keys, the descending logit key above the
// entry's position in `order`, stable on the upper half, so the entries of
// one key keep their positions. Where the ids do not ascend with the
// positions, each run of one key is then sorted by id: ties are short runs
// in a row's logits, and no table of the ids is needed (a cut's few
// survivors spread over a vocabulary's ids filled one of 2^20 entries a call).
void radix_canonical(const std::vector<TokenData>& data, std::vector<uint32_t>& order, bool ids_ascending) {
    const size_t n = order.size();
    std::vector<uint64_t> keys;
    keys.reserve(n);
    for (size_t j = 0; j < n; ++j) keys.push_back((uint64_t{~float_key(data[order[j]].logit)} << 32) | j);
    radix_sort_u64(keys, 32u);
    std::vector<uint32_t> sorted;
    sorted.reserve(n);
    for (uint64_t k : keys) sorted.push_back(order[static_cast<uint32_t>(k)]);
    order.swap(sorted);
    if (ids_ascending) return;
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        while (b < n && (keys[b] >> 32) == (keys[a] >> 32)) ++b;
        if (b - a > 1)
            std::sort(order.begin() + static_cast<std::ptrdiff_t>(a), order.begin() + static_cast<std::ptrdiff_t>(b),
                      [&](uint32_t x, uint32_t y) { return data[x].id < data[y].id; });
        a = b;
    }
}

} // namespace

std::vector<uint32_t> canonical_order(const std::vector<TokenData>& data, bool with_masked) {
    std::vector<uint32_t> order;
    order.reserve(data.size());
    bool in_order = true, ids_ascending = true;
    for (size_t i = 0; i < data.size(); ++i) {
        const TokenData& td = data[i];
        if (!with_masked && td.logit == -INFINITY) continue;
        if (!order.empty()) {
            const TokenData& before = data[order.back()];
            if (!canonical_before(before, td)) in_order = false;
            if (td.id <= before.id) ids_ascending = false;
        }
        order.push_back(static_cast<uint32_t>(i));
    }
    if (in_order) return order;  // already canonical (a sorted array a temperature left as it was)
    if (order.size() >= kRadixSortFrom)
        radix_canonical(data, order, ids_ascending);
    else
        std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return canonical_before(data[a], data[b]); });
    return order;
}

void sort_canonical(CandidateArray& cur) {
    const std::vector<uint32_t> order = canonical_order(cur.data, true);
    std::vector<TokenData> sorted;
    sorted.reserve(order.size());
    for (uint32_t i : order) sorted.push_back(cur.data[i]);
    cur.data.swap(sorted);
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
