// What sieve_chain_counters reports for a GPU chain. The dispatches and the
// row passes are counted here only, from what ran: a recording's dispatches
// that launched workgroups (read from its armed indirect arguments), the
// ingest pass's, and the full-row reads a call's rows report.
#pragma once

#include "vulkan/gpu_plan.hpp"

#include <atomic>
#include <cstdint>
#include <vector>

namespace sieve {

class GpuCounters {
public:
    std::atomic<uint64_t> allocations{0};
    uint64_t submits = 0, recordings = 0, fallback_rows = 0;

    // A recording that ran: the dispatches it states and the indirect ones
    // whose arguments (`args`, the row groups' blocks) launched workgroups.
    void count_recording(const Plan& plan, const std::vector<RowGroup>& groups, const uint32_t* args);
    // The ingest pass: one dispatch per row window of the rows it brought in.
    void count_ingest(uint32_t windows) { dispatches_ += windows; }
    // Full-row reads (a row's result says how many it took).
    void count_row_passes(uint64_t passes) { row_passes_ += passes; }

    uint64_t dispatches() const { return dispatches_; }
    uint64_t row_passes() const { return row_passes_; }

private:
    uint64_t dispatches_ = 0, row_passes_ = 0;
};

} // namespace sieve
