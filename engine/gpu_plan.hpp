// The plan: which passes a (chain, rows, vocab) records, how a row is split into
// chunks, and what that costs in dispatches and full-row reads.
#pragma once

#include "pipelines.hpp"

#include <cstdint>
#include <vector>

namespace sieve {

constexpr uint32_t kDirect = UINT32_MAX;

struct Dispatch {
    Stage stage;
    uint32_t level;
    bool per_chunk;                  // grid x = chunks (else one workgroup per row)
    uint32_t indirect = kDirect;     // else: uint offset of its VkDispatchIndirectCommand
};

// Mirrors common.glsl: each level's decision arms the next level.
constexpr uint32_t kKeyLevels = 8;
constexpr uint32_t kBins = 16;
constexpr uint32_t kDispatchArgsWords = 72;
inline uint32_t histogram_args(uint32_t level) { return level * 8; }

enum class RecordingKind : uint32_t { Sample = 0, Distribution = 1 };

struct Plan {
    bool small = false;        // vocab <= CAP: finalize reads the row itself
    uint32_t n_chunks = 1;
    uint32_t chunk_size = 1;
    uint32_t flags = 0;
    std::vector<Dispatch> dispatches;
    uint32_t min_row_passes = 1;  // full-row reads when the first level resolves the draw
    uint32_t min_dispatches = 1;  // dispatches that launch workgroups in that case
};

// Chunks depend on the vocabulary and the device only, never on the row count,
// so a row's results are the same whatever the batch.
uint32_t max_chunks_for(const EffectiveLimits& limits, sieve_device_type type);
void chunking(uint32_t vocab, const EffectiveLimits& limits, sieve_device_type type, uint32_t* n_chunks,
              uint32_t* chunk_size);

// On a CPU device one pass over many rows evicts them from the cache before the
// next pass comes back to them, so rows go in groups whose logits stay cached:
// every pass of a group, then the next group. A GPU takes all rows at once.
// Results do not depend on it: a row's work is the same in any group.
uint32_t rows_per_group(uint32_t rows, uint32_t vocab, sieve_device_type type);

Plan make_plan(RecordingKind kind, bool greedy_chain, uint32_t vocab, const EffectiveLimits& limits,
               sieve_device_type type);

} // namespace sieve
