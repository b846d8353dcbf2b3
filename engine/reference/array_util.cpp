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

// Ids out of order are found again through a table of this many entries at
// least (a vocabulary's: a few survivors of a cut spread over its ids), or
// of 4 entries a member.
constexpr size_t kIdTableFrom = size_t{1} << 20;

// `order` (indices into `data`, at least kRadixSortFrom of them) in canonical
// order by an LSD radix sort of 64-bit keys: the descending logit key above,
// below it the entry's index where the ids ascend with it (a stable sort of
// the upper half keeps ties in id order), else the id, found again through a
// table of the ids. False, `order` untouched, where the ids are not distinct
// non-negative values of a table's size (kIdTableFrom).
bool radix_canonical(const std::vector<TokenData>& data, std::vector<uint32_t>& order, bool ids_ascending,
                     int32_t lowest, int32_t highest) {
    const size_t n = order.size();
    std::vector<uint64_t> keys;
    keys.reserve(n);
    std::vector<uint32_t> at;  // id -> index, for ids out of order
    if (!ids_ascending) {
        if (lowest < 0 || static_cast<size_t>(highest) >= std::max(4 * n, kIdTableFrom)) return false;
        at.assign(static_cast<size_t>(highest) + 1, UINT32_MAX);
    }
    for (size_t j = 0; j < n; ++j) {
        const TokenData& td = data[order[j]];
        uint32_t low = order[j];
        if (!ids_ascending) {
            uint32_t& slot = at[static_cast<size_t>(td.id)];
            if (slot != UINT32_MAX) return false;  // a repeated id
            slot = order[j];
            low = static_cast<uint32_t>(td.id);
        }
        keys.push_back((uint64_t{~float_key(td.logit)} << 32) | low);
    }
    radix_sort_u64(keys, ids_ascending ? 32u : 0u);
    for (size_t j = 0; j < n; ++j) {
        const uint32_t low = static_cast<uint32_t>(keys[j]);
        order[j] = ids_ascending ? low : at[low];
    }
    return true;
}

} // namespace

std::vector<uint32_t> canonical_order(const std::vector<TokenData>& data, bool with_masked) {
    std::vector<uint32_t> order;
    order.reserve(data.size());
    bool in_order = true, ids_ascending = true;
    int32_t lowest = INT32_MAX, highest = INT32_MIN;
    for (size_t i = 0; i < data.size(); ++i) {
        const TokenData& td = data[i];
        if (!with_masked && td.logit == -INFINITY) continue;
        if (!order.empty()) {
            const TokenData& before = data[order.back()];
            if (!canonical_before(before, td)) in_order = false;
            if (td.id <= before.id) ids_ascending = false;
        }
        lowest = std::min(lowest, td.id);
        highest = std::max(highest, td.id);
        order.push_back(static_cast<uint32_t>(i));
    }
    if (in_order) return order;  // already canonical (a sorted array a temperature left as it was)
    if (order.size() >= kRadixSortFrom && radix_canonical(data, order, ids_ascending, lowest, highest)) return order;
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
