// The plan: which passes a (chain, rows, vocab) records, how a row is split into
// chunks, and what that costs in dispatches and full-row reads.
#pragma once

#include "pipelines.hpp"

#include <cstdint>
#include <vector>

namespace sieve {

struct Dispatch {
    Stage stage;
    uint32_t level;
    bool per_chunk;  // grid x = chunks (else one workgroup per row)
};

enum class RecordingKind : uint32_t { Sample = 0, Distribution = 1 };

struct Plan {
    bool small = false;        // vocab <= CAP: finalize reads the row itself
    uint32_t n_chunks = 1;
    uint32_t chunk_size = 1;
    uint32_t flags = 0;
    std::vector<Dispatch> dispatches;
    uint32_t min_row_passes = 1;  // full-row reads when the first radix level resolves the draw
};

// Chunks depend on the vocabulary and the device only, never on the row count,
// so a row's results are the same whatever the batch.
uint32_t max_chunks_for(const EffectiveLimits& limits, sieve_device_type type);
void chunking(uint32_t vocab, const EffectiveLimits& limits, sieve_device_type type, uint32_t* n_chunks,
              uint32_t* chunk_size);

Plan make_plan(RecordingKind kind, bool greedy_chain, uint32_t vocab, const EffectiveLimits& limits,
               sieve_device_type type);

} // namespace sieve
