#include "gpu_plan.hpp"

#include <algorithm>

namespace sieve {

uint32_t max_chunks_for(const EffectiveLimits&, sieve_device_type type) {
    // A CPU implementation (lavapipe) runs a handful of workgroups in parallel:
    // more chunks only add merge work. A GPU needs many to fill it at batch 1.
    return type == SIEVE_DEVICE_CPU ? 4u : 64u;
}

void chunking(uint32_t vocab, const EffectiveLimits& limits, sieve_device_type type, uint32_t* n_chunks,
              uint32_t* chunk_size) {
    uint32_t min_chunk = limits.workgroup_size * 8u;  // at least 8 logits per invocation
    uint32_t n = std::clamp((vocab + min_chunk - 1) / min_chunk, 1u, max_chunks_for(limits, type));
    uint32_t size = (vocab + n - 1) / n;
    *chunk_size = size;
    *n_chunks = (vocab + size - 1) / size;
}

Plan make_plan(RecordingKind kind, bool greedy_chain, uint32_t vocab, const EffectiveLimits& limits,
               sieve_device_type type) {
    Plan p;
    chunking(vocab, limits, type, &p.n_chunks, &p.chunk_size);
    if (greedy_chain) p.flags |= kFlagGreedy;
    if (kind == RecordingKind::Distribution) {
        p.dispatches = {{Stage::RowStats, 0, true}, {Stage::MassHistogram, 0, true}, {Stage::MassScan, 0, false},
                        {Stage::Probabilities, 0, true}};
        p.min_row_passes = 3;
        p.min_dispatches = 4;
        return p;
    }
    p.small = vocab <= limits.candidate_capacity;
    if (p.small) {
        p.flags |= kFlagSmall;
        p.dispatches = {{Stage::Finalize, 0, false}};
        return p;
    }
    p.dispatches.push_back({Stage::RowStats, 0, true});
    if (!greedy_chain) {
        p.dispatches.push_back({Stage::MassHistogram, 0, true});
        p.dispatches.push_back({Stage::MassScan, 0, false});
        // Key levels are recorded for the worst case (8 x 4 bits) but launched
        // indirectly: a level no row needs gets zero workgroups.
        for (uint32_t level = 1; level <= kKeyLevels; ++level) {
            p.dispatches.push_back({Stage::MassHistogram, level, true, histogram_args(level)});
            p.dispatches.push_back({Stage::MassScan, level, false, scan_args(level)});
        }
        p.dispatches.push_back({Stage::Gather, 0, true, kGatherArgs});
    }
    p.dispatches.push_back({Stage::Finalize, 0, false});
    p.min_row_passes = greedy_chain ? 1 : 3;
    p.min_dispatches = greedy_chain ? 2 : 5;
    return p;
}

} // namespace sieve
