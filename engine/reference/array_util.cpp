// Helpers on llama.cpp's candidate array shared by the samplers: the canonical
// sort, the softmax (llama_sampler_softmax_impl) and the first maximal entry.
#include "reference/detail.hpp"

#include <algorithm>
#include <cmath>

namespace sieve::ref::detail {

namespace {

// Arrays shorter than this sort by comparisons; longer ones by radix (a
// whole vocabulary: std::sort took most of the twin's time in every chain
// that sorts the full row, about 15 ms at 151936 entries on this project's
// 2-core test machine).
constexpr size_t kRadixSortFrom = 1024;

// Sorts 64-bit keys ascending on their upper 32 bits, stably (keys with
// equal upper halves keep their input order): an LSD radix sort in digits
// of 11, 11 and 10 bits, all counted in one read; a digit every key shares
// is skipped.
void radix_sort_upper_half(std::vector<uint64_t>& keys) {
    constexpr unsigned kDigits = 3, kDigitBits = 11;
    constexpr unsigned kShift[kDigits] = {32, 32 + kDigitBits, 32 + 2 * kDigitBits};
    constexpr uint64_t kMask = (uint64_t{1} << kDigitBits) - 1;
    const size_t n = keys.size();
    std::vector<size_t> counts(kDigits << kDigitBits, 0);
    size_t* const count[kDigits] = {&counts[0], &counts[size_t{1} << kDigitBits], &counts[size_t{2} << kDigitBits]};
    for (uint64_t k : keys) {
        ++count[0][(k >> kShift[0]) & kMask];
        ++count[1][(k >> kShift[1]) & kMask];
        ++count[2][(k >> kShift[2]) & kMask];
    }
    // The passes' other buffer, kept by the thread between calls (see
    // radix_canonical).
    thread_local std::vector<uint64_t> scratch;
    scratch.resize(n);
    uint64_t* from = keys.data();
    uint64_t* to = scratch.data();
    for (unsigned d = 0; d < kDigits; ++d) {
        size_t* bucket = count[d];
        size_t total = 0;
        bool single_bucket = false;
        for (size_t b = 0; b <= kMask; ++b) {
            const size_t c = bucket[b];
            if (c == n) single_bucket = true;
            bucket[b] = total;
            total += c;
        }
        if (single_bucket) continue;  // every key has this digit: the pass would be a copy
        for (size_t i = 0; i < n; ++i) to[bucket[(from[i] >> kShift[d]) & kMask]++] = from[i];
        std::swap(from, to);
    }
    if (from != keys.data()) keys.swap(scratch);  // an odd number of passes: the keys are in the scratch
}

// `order` (ascending indices into `data`, at least kRadixSortFrom of them)
// in canonical order: an LSD radix sort of 64-bit keys, the descending logit
// key above the index, stable on the upper half, so the entries of one key
// keep their order. Where the ids do not ascend with the indices, each run
// of one key is then sorted by id: ties are short runs in a row's logits,
// and no table of the ids is needed (a cut's few survivors spread over a
// vocabulary's ids filled one of 2^20 entries a call).
void radix_canonical(const std::vector<TokenData>& data, std::vector<uint32_t>& order, bool ids_ascending) {
    // Kept by the thread between calls, as radix_sort_upper_half's scratch:
    // fresh buffers of a vocabulary's keys took a page fault every 4 KiB
    // whenever the allocator handed them back to the system.
    const size_t n = order.size();
    thread_local std::vector<uint64_t> keys;
    keys.clear();
    for (uint32_t i : order) keys.push_back((uint64_t{~float_key(data[i].logit)} << 32) | i);
    radix_sort_upper_half(keys);
    for (size_t j = 0; j < n; ++j) order[j] = static_cast<uint32_t>(keys[j]);
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
    const TokenData* before = nullptr;
    for (size_t i = 0; i < data.size(); ++i) {
        const TokenData& td = data[i];
        if (!with_masked && td.logit == -INFINITY) continue;
        if (before) {
            in_order &= canonical_before(*before, td);
            ids_ascending &= td.id > before->id;
        }
        before = &td;
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
    // The sorted copy goes into the buffer the thread's previous sort left,
    // and this array's buffer is kept for the next (as radix_canonical's).
    thread_local std::vector<TokenData> sorted;
    sorted.clear();
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
