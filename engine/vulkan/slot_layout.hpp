// A sequence slot's state as words, the same for both backends: the GPU's
// slot buffer holds one such record per slot (its words: gpu_layout.h's S_*,
// which the shaders read) and the CPU backend keeps the same records in host
// memory, so the host operations (accept, reset, copy, save/restore, history)
// exist once.
#pragma once

#include "reference/reference.hpp"

#include <gpu_layout.h>

#include <cstdint>
#include <vector>

namespace sieve {

// SLOT_HEADER words (S_STEP, S_COUNT, S_HEAD, S_FLAGS: SLOT_*, S_MU,
// S_ADAPT_SUM, S_ADAPT_WEIGHT), then the history ring of `capacity` tokens.
using glsl::S_STEP, glsl::S_COUNT, glsl::S_HEAD, glsl::S_FLAGS, glsl::S_MU, glsl::S_ADAPT_SUM, glsl::S_ADAPT_WEIGHT;
using glsl::SLOT_HEADER, glsl::SLOT_MU_SET, glsl::SLOT_ADAPTIVE_SET;

constexpr int32_t kDefaultHistoryCapacity = 1024;
constexpr int32_t kMaxHistoryCapacity = 65536;
// A row's DRY sequence breakers (the GPU keeps them in its row-input block).
constexpr int32_t kMaxDryBreakers = 64;
constexpr int32_t kMaxDryBreakerLength = 32;
constexpr int32_t kMaxDryBreakerTokens = 256;

inline uint32_t slot_words(uint32_t capacity) { return SLOT_HEADER + capacity; }

// The slot's history, oldest first, and its sampler state, for the twin.
ref::SlotState slot_to_state(const uint32_t* slot, uint32_t capacity);
// Writes back what the twin's samplers learnt (mu, adaptive-p), not the history.
void slot_store_learnt(uint32_t* slot, const ref::SlotState& state);
// The header words an append and a verification read (S_STEP, S_COUNT,
// S_HEAD, among its first four), in one 16-byte load: on a GPU the slot is
// device memory the host reads uncached, a PCIe round trip a load.
struct SlotHeader {
    uint32_t step = 0, count = 0, head = 0;
};
SlotHeader slot_header(const uint32_t* slot);
// llama.cpp's accept: appends, the oldest token leaving a full ring. The
// second form appends after a header the caller read (slot_header) and the
// slot has kept since: it reads no word of the slot.
void slot_append(uint32_t* slot, uint32_t capacity, const int32_t* tokens, size_t n);
void slot_append(uint32_t* slot, uint32_t capacity, const SlotHeader& header, const int32_t* tokens, size_t n);
void slot_reset(uint32_t* slot, uint32_t capacity);

// What sampling with commit can change in a slot over up to `appends` tokens
// (the header: step, count, head, learnt state; the ring words from the head
// on), to put the record back as it was. A learner chain's verification keeps
// one per sequence rather than the whole record, which on a GPU is device
// memory the host reads uncached.
struct SlotUndo {
    uint32_t header[SLOT_HEADER];
    std::vector<uint32_t> ring;  // the `appends` ring words from the head on
};
SlotUndo slot_undo_point(const uint32_t* slot, uint32_t capacity, size_t appends);
void slot_undo(uint32_t* slot, uint32_t capacity, const SlotUndo& undo);

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
