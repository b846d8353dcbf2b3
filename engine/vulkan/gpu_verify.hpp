// sieve_verify's call on the GPU between its device work and its walk
// (gpu_verify.cpp): the positions' rows in place of the chain's rows, and
// what the positions gave.
#pragma once

#include "chain/chain.hpp"
#include "vulkan/gpu_params.hpp"
#include "vulkan/slot_layout.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace sieve {

// The chain's per-row state swapped for the positions' while the call's rows
// are the positions (its device work, the twin finishing fallback rows), and
// back whatever happens. Only the first `count` rows are saved and given back:
// the call uses no row past them (a row's parameters may hold a bitmask of
// vocab / 32 words, so the chain's other rows are not copied).
class PositionRows {
public:
    PositionRows(std::vector<ref::RowParams>& rows, std::vector<int32_t>& slots, std::vector<RowPosition>& positions,
                 int32_t& logprobs, size_t count)
        : rows_(rows), slots_(slots), positions_(positions), logprobs_(logprobs),
          saved_rows_(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(count)),
          saved_slots_(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(count)), saved_logprobs_(logprobs) {
        logprobs_ = -1;  // the positions' raw logprobs are not asked for
    }
    PositionRows(const PositionRows&) = delete;
    PositionRows& operator=(const PositionRows&) = delete;
    ~PositionRows() {
        std::move(saved_rows_.begin(), saved_rows_.end(), rows_.begin());
        std::copy(saved_slots_.begin(), saved_slots_.end(), slots_.begin());
        positions_.clear();
        logprobs_ = saved_logprobs_;
    }
    // The chain's own row `row` (sequence `row`'s parameters and slot).
    const ref::RowParams& saved_row(size_t row) const { return saved_rows_[row]; }
    int32_t saved_slot(size_t row) const { return saved_slots_[row]; }

private:
    std::vector<ref::RowParams>& rows_;
    std::vector<int32_t>& slots_;
    std::vector<RowPosition>& positions_;
    int32_t& logprobs_;
    std::vector<ref::RowParams> saved_rows_;
    std::vector<int32_t> saved_slots_;
    int32_t saved_logprobs_;
};

// One verification from its start to its walk: its own copy of the drafts
// (the rows' prefixes point into them), each sequence's first row and step.
struct VerifyCall {
    std::vector<ChainImpl::Draft> drafts;
    std::vector<int32_t> first_row;
    sieve_verify_mode mode = SIEVE_VERIFY_MATCH;
    int32_t rows = 0;
    int32_t vocab = 0;
    std::vector<SlotHeader> headers;  // each sequence's slot as the call found it (read once)
    // Each sequence's step at the start (its first position's).
    std::vector<uint32_t> steps() const {
        std::vector<uint32_t> out(headers.size());
        for (size_t s = 0; s < headers.size(); ++s) out[s] = headers[s].step;
        return out;
    }
    std::unique_ptr<PositionRows> swap;  // reset once the positions are read
};

// What the positions' rows gave: each row's sampled token (the match mode) or
// final distribution (the rejection mode), and its status.
struct PositionResults {
    std::vector<sieve_token> sampled;
    std::vector<std::vector<ref::Weighted>> dists;
    std::vector<sieve_status> statuses;
};

} // namespace sieve
