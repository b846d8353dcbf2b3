#include "vulkan/slot_layout.hpp"

#include "api/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace sieve {

namespace {

constexpr uint32_t kBlobTag = 0x534C4F54u;  // "SLOT"

float as_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

uint32_t as_word(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

} // namespace

ref::SlotState slot_to_state(const uint32_t* slot, uint32_t capacity) {
    ref::SlotState s;
    s.history = slot_history(slot, capacity);
    s.mu_set = (slot[S_FLAGS] & SLOT_MU_SET) != 0;
    s.mu = as_float(slot[S_MU]);
    s.adaptive_set = (slot[S_FLAGS] & SLOT_ADAPTIVE_SET) != 0;
    s.adaptive_weighted_sum = as_float(slot[S_ADAPT_SUM]);
    s.adaptive_total_weight = as_float(slot[S_ADAPT_WEIGHT]);
    return s;
}

void slot_store_learnt(uint32_t* slot, const ref::SlotState& state) {
    slot[S_FLAGS] = (state.mu_set ? SLOT_MU_SET : 0u) | (state.adaptive_set ? SLOT_ADAPTIVE_SET : 0u);
    slot[S_MU] = as_word(state.mu);
    slot[S_ADAPT_SUM] = as_word(state.adaptive_weighted_sum);
    slot[S_ADAPT_WEIGHT] = as_word(state.adaptive_total_weight);
}

SlotHeader slot_header(const uint32_t* slot) {
    static_assert(S_STEP < 4 && S_COUNT < 4 && S_HEAD < 4, "the header's first four words");
    uint32_t words[4];
#if defined(__GNUC__) || defined(__clang__)
    // A volatile access keeps its width: a plain copy becomes the two
    // narrower loads the three words need.
    typedef uint32_t Words4 __attribute__((vector_size(16), aligned(4), may_alias));
    const Words4 loaded = *reinterpret_cast<const volatile Words4*>(slot);
    std::memcpy(words, &loaded, sizeof(words));
#else
    std::memcpy(words, slot, sizeof(words));
#endif
    SlotHeader h;
    h.step = words[S_STEP];
    h.count = words[S_COUNT];
    h.head = words[S_HEAD];
    return h;
}

void slot_append(uint32_t* slot, uint32_t capacity, const int32_t* tokens, size_t n) {
    slot_append(slot, capacity, slot_header(slot), tokens, n);
}

void slot_append(uint32_t* slot, uint32_t capacity, const SlotHeader& header, const int32_t* tokens, size_t n) {
    // The header is written once, not four words a token (a verification
    // appends up to drafts + 1 tokens to every sequence's slot).
    uint32_t head = header.head, count = header.count;
    uint32_t* ring = slot + SLOT_HEADER;
    for (size_t i = 0; i < n; ++i) {
        ring[head] = static_cast<uint32_t>(tokens[i]);
        head = (head + 1) % capacity;
        if (count < capacity) ++count;
    }
    slot[S_HEAD] = head;
    slot[S_COUNT] = count;
}

SlotUndo slot_undo_point(const uint32_t* slot, uint32_t capacity, size_t appends) {
    SlotUndo u;
    std::memcpy(u.header, slot, sizeof(u.header));
    const uint32_t head = u.header[S_HEAD];
    u.ring.resize(std::min<size_t>(appends, capacity));
    for (size_t i = 0; i < u.ring.size(); ++i) u.ring[i] = slot[SLOT_HEADER + (head + i) % capacity];
    return u;
}

void slot_undo(uint32_t* slot, uint32_t capacity, const SlotUndo& undo) {
    const uint32_t head = undo.header[S_HEAD];
    for (size_t i = 0; i < undo.ring.size(); ++i) slot[SLOT_HEADER + (head + i) % capacity] = undo.ring[i];
    std::memcpy(slot, undo.header, sizeof(undo.header));
}

void slot_reset(uint32_t* slot, uint32_t capacity) { std::memset(slot, 0, slot_words(capacity) * 4); }

std::vector<int32_t> slot_history(const uint32_t* slot, uint32_t capacity) {
    const uint32_t count = slot[S_COUNT], head = slot[S_HEAD];
    std::vector<int32_t> out(count);
    for (uint32_t i = 0; i < count; ++i)
        out[i] = static_cast<int32_t>(slot[SLOT_HEADER + (head + capacity - count + i) % capacity]);
    return out;
}

size_t slot_blob_bytes(uint32_t capacity) { return (2 + static_cast<size_t>(slot_words(capacity))) * 4; }

void slot_save(const uint32_t* slot, uint32_t capacity, void* blob) {
    auto* w = static_cast<uint32_t*>(blob);
    w[0] = kBlobTag;
    w[1] = capacity;
    std::memcpy(w + 2, slot, slot_words(capacity) * 4);
}

void slot_restore(uint32_t* slot, uint32_t capacity, uint32_t max_vocab, const void* blob, size_t bytes) {
    if (bytes != slot_blob_bytes(capacity))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "slot state of " + std::to_string(bytes) + " bytes; this chain's is " +
                                               std::to_string(slot_blob_bytes(capacity)));
    std::vector<uint32_t> w(bytes / 4);
    std::memcpy(w.data(), blob, bytes);
    if (w[0] != kBlobTag || w[1] != capacity)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "the data is not a slot state saved by a chain of history capacity " +
                                               std::to_string(capacity));
    if (w[2 + S_COUNT] > capacity || w[2 + S_HEAD] >= capacity)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "the slot state is inconsistent (history count or head past the capacity)");
    const uint32_t* rec = w.data() + 2;
    for (uint32_t word : {S_MU, S_ADAPT_SUM, S_ADAPT_WEIGHT}) {
        const bool set = (rec[S_FLAGS] & (word == S_MU ? SLOT_MU_SET : SLOT_ADAPTIVE_SET)) != 0;
        if (set && !std::isfinite(as_float(rec[word])))
            fail(SIEVE_ERROR_INVALID_ARGUMENT, std::string("the slot state's ") +
                                                   (word == S_MU ? "mirostat mu" : "adaptive-p average") +
                                                   " is not finite");
    }
    for (int32_t token : slot_history(rec, capacity))
        if (token < 0 || static_cast<uint32_t>(token) >= max_vocab)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "the slot state holds token " + std::to_string(token) +
                                                   ", outside this chain's vocab");
    std::memcpy(slot, w.data() + 2, slot_words(capacity) * 4);
}

} // namespace sieve
