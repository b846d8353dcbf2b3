// A sequence slot's state as words, the same for both backends: the GPU's
// slot buffer holds one such record per slot (shaders/glsl/slot.glsl mirrors
// it) and the CPU backend keeps the same records in host memory, so the host
// operations (accept, reset, copy, save/restore, history) exist once.
#pragma once

#include "reference/reference.hpp"

#include <cstdint>
#include <vector>

namespace sieve {

// Header words, then the history ring of `capacity` tokens.
enum : uint32_t {
    kSlotStep = 0,         // the RNG step of the slot's next token
    kSlotCount = 1,        // tokens in the ring (<= capacity)
    kSlotHead = 2,         // where the next token goes
    kSlotFlags = 3,        // kSlotMuSet | kSlotAdaptiveSet
    kSlotMu = 4,           // float: mirostat's mu
    kSlotAdaptiveSum = 5,  // float: adaptive-p's weighted sum
    kSlotAdaptiveWeight = 6,  // float: adaptive-p's total weight
    kSlotHeaderWords = 16,
};
enum : uint32_t { kSlotMuSet = 1, kSlotAdaptiveSet = 2 };

constexpr int32_t kDefaultHistoryCapacity = 1024;
constexpr int32_t kMaxHistoryCapacity = 65536;
// A row's DRY sequence breakers (the GPU keeps them in its row-input block).
constexpr int32_t kMaxDryBreakers = 64;
constexpr int32_t kMaxDryBreakerLength = 32;
constexpr int32_t kMaxDryBreakerTokens = 256;

inline uint32_t slot_words(uint32_t capacity) { return kSlotHeaderWords + capacity; }

// The slot's history, oldest first, and its sampler state, for the twin.
ref::SlotState slot_to_state(const uint32_t* slot, uint32_t capacity);
// Writes back what the twin's samplers learnt (mu, adaptive-p), not the history.
void slot_store_learnt(uint32_t* slot, const ref::SlotState& state);
// llama.cpp's accept: appends, the oldest token leaving a full ring.
void slot_append(uint32_t* slot, uint32_t capacity, const int32_t* tokens, size_t n);
void slot_reset(uint32_t* slot, uint32_t capacity);
// The newest `max` tokens of the history, oldest first.
std::vector<int32_t> slot_history(const uint32_t* slot, uint32_t capacity);

// The blob sieve_chain_save_slot writes: a tag, the capacity, the record.
size_t slot_blob_bytes(uint32_t capacity);
void slot_save(const uint32_t* slot, uint32_t capacity, void* blob);
// Throws INVALID_ARGUMENT for a blob of another size, tag or capacity, or one
// that is inconsistent (count or head past the capacity, a token outside
// [0, max_vocab), a learnt value set but not finite); the slot is unchanged then.
void slot_restore(uint32_t* slot, uint32_t capacity, uint32_t max_vocab, const void* blob, size_t bytes);

} // namespace sieve
