// Helpers on llama.cpp's candidate array shared by the samplers: the canonical
// sort, the softmax (llama_sampler_softmax_impl) and the first maximal entry.
#include "reference/detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

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
    // canonical_words).
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

// A word's low half for an entry's id: the int32 id with its sign bit
// flipped, so that unsigned order is the ids' order.
constexpr uint32_t kIdBias = 0x80000000u;

} // namespace

const std::vector<uint64_t>& canonical_words(const std::vector<TokenData>& data, bool with_masked, WordLow low) {
    // Kept by the thread between calls, as radix_sort_upper_half's scratch:
    // fresh buffers of a vocabulary's words took a page fault every 4 KiB
    // whenever the allocator handed them back to the system.
    thread_local std::vector<uint64_t> words;
    words.resize(data.size());  // written through a pointer, then cut to the entries taken
    uint64_t* out = words.data();
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
        const uint32_t low_half = low == WordLow::Id ? static_cast<uint32_t>(td.id) ^ kIdBias : static_cast<uint32_t>(i);
        *out++ = (uint64_t{~float_key(td.logit)} << 32) | low_half;
    }
    words.resize(static_cast<size_t>(out - words.data()));
    if (in_order) return words;  // already canonical (a sorted array a temperature left as it was)
    // A word's id, for the order among entries of one key.
    const auto id_of = [&](uint64_t w) {
        return low == WordLow::Id ? word_id(w) : data[static_cast<uint32_t>(w)].id;
    };
    if (words.size() < kRadixSortFrom) {
        std::sort(words.begin(), words.end(), [&](uint64_t a, uint64_t b) {
            return (a >> 32) < (b >> 32) || ((a >> 32) == (b >> 32) && id_of(a) < id_of(b));
        });
        return words;
    }
    // The radix sort is stable on the key: where the ids ascend with the
    // entries, each key's entries are already in id order. Otherwise each
    // run of one key is sorted by id: ties are short runs in a row's logits,
    // and no table of the ids is needed (a cut's few survivors spread over a
    // vocabulary's ids filled one of 2^20 entries a call).
    radix_sort_upper_half(words);
    if (ids_ascending) return words;
    const size_t n = words.size();
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        while (b < n && (words[b] >> 32) == (words[a] >> 32)) ++b;
        if (b - a > 1)
            std::sort(words.begin() + static_cast<std::ptrdiff_t>(a), words.begin() + static_cast<std::ptrdiff_t>(b),
                      [&](uint64_t x, uint64_t y) { return id_of(x) < id_of(y); });
        a = b;
    }
    return words;
}

int32_t word_id(uint64_t word) { return static_cast<int32_t>(static_cast<uint32_t>(word) ^ kIdBias); }

namespace {

// Whether each entry of `data` is rebuilt bit for bit from its index and its
// key: the ids are the indices (the array make_candidates built), all share
// one p, and no logit is -0 (whose key is +0's). Stops at the first entry
// that is not, which after a softmax is the second.
bool rebuilt_from_keys(const std::vector<TokenData>& data) {
    if (data.empty()) return false;
    uint32_t p0;
    std::memcpy(&p0, &data[0].p, sizeof p0);
    for (size_t i = 0; i < data.size(); ++i) {
        uint32_t p, logit;
        std::memcpy(&p, &data[i].p, sizeof p);
        std::memcpy(&logit, &data[i].logit, sizeof logit);
        if (data[i].id != static_cast<int32_t>(i) || p != p0 || logit == 0x80000000u) return false;
    }
    return true;
}

} // namespace

void sort_canonical(CandidateArray& cur) {
    const bool rebuild = rebuilt_from_keys(cur.data);
    const float p = rebuild ? cur.data[0].p : 0.0f;
    const std::vector<uint64_t>& order = canonical_words(cur.data, true, WordLow::Index);
    // The sorted copy goes into the buffer the thread's previous sort left,
    // and this array's buffer is kept for the next (as canonical_words').
    // Entries the words give back whole are written from them in order
    // rather than read from the array at random (a cache miss an entry
    // over a vocabulary).
    thread_local std::vector<TokenData> sorted;
    sorted.resize(order.size());
    TokenData* out = sorted.data();
    if (rebuild)
        for (uint64_t w : order) *out++ = TokenData{static_cast<int32_t>(static_cast<uint32_t>(w)), word_logit(w), p};
    else
        for (uint64_t w : order) *out++ = cur.data[static_cast<uint32_t>(w)];
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
