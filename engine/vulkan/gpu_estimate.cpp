#include "vulkan/gpu_estimate.hpp"

#include <algorithm>
#include <cmath>

namespace sieve {
namespace {

using M = EstimateModel;

// One workgroup's serial time for a dispatch: its fixed steps, those that
// grow with what it keeps or runs, and the read of its share of the row.
struct Work {
    double serial_us = 0;
    double logits = 0;   // logits the workgroup reads
    bool heavy = false;  // holds much shared memory: kHeavyPerSm resident per SM
};

// The bitonic stages of sorting n entries padded to a power of two.
double sort_stages(uint32_t n) {
    uint32_t lg = 0;
    while ((1u << lg) < n) ++lg;
    return lg * (lg + 1) / 2.0;
}

// `chunks`: the chunks the group's collect pass splits a row into.
Work work_of(const Dispatch& d, const EstimateInputs& in, uint32_t chunks) {
    const Plan& p = *in.plan;
    const bool collect = d.stage == Stage::CollectPlain || d.stage == Stage::Collect;
    const bool wide = d.stage == Stage::WideHistogram || d.stage == Stage::WideGather;
    const double chunk = !d.per_chunk ? in.vocab
                         : collect    ? collect_chunk_size(in.vocab, chunks)
                         : wide       ? wide_chunk_size(p, in.vocab)
                                      : p.chunk_size;
    const double read = chunk * M::kReadUsPerLogit;
    switch (d.stage) {
    case Stage::CollectPlain:
        if ((p.flags & glsl::FLAG_RADIX_CHUNKS) && in.need > M::kPickLimit)
            return {4 * M::kUsPerSelectLevel + 5 * read + M::kUsPerSortStage * sort_stages(in.capacity), chunk, true};
        return {M::kCollectUs + M::kCollectUsPerNeed * in.need + read, chunk, true};
    case Stage::Collect:
        return {M::kCollectUs + M::kCollectUsPerNeed * in.need + read, chunk, true};
    case Stage::CollectTail: {
        const uint32_t entries = chunks * in.need;  // the lists' entries, at most
        const double merge = !(p.flags & glsl::FLAG_SORT_MERGE) ? M::kTailUsPerNeed * in.need
                             : entries <= in.capacity
                                 ? M::kUsPerSortStage * sort_stages(entries)
                                 : 4 * M::kUsPerSelectLevel + M::kUsPerSortStage * sort_stages(in.capacity);
        return {M::kTailUs + M::kTailUsPerOp * in.chain_ops + merge, 0, true};
    }
    case Stage::WideHistogram: return {M::kWideHistogramUsPerLogit * chunk, chunk, true};
    case Stage::WideGather: return {M::kWideGatherUsPerLogit * chunk, chunk, true};
    case Stage::History: {
        // The clearing dispatch of a split pass: the previous call's entries,
        // no history walked (stated). Otherwise the fixed part and this
        // workgroup's share of the window.
        if (d.level == glsl::HISTORY_CLEAR) return {M::kOtherPassUs, 0, false};
        const uint32_t groups = d.level == glsl::HISTORY_BUILD ? std::max(p.history_groups, 1u) : 1u;
        return {M::kHistoryUs + M::kHistoryUsPerToken * std::ceil(double(in.history_tokens) / groups), 0, true};
    }
    case Stage::RowStats: return {M::kRowStatsUs + read, chunk, false};
    case Stage::MassHistogram: return {M::kMassHistogramUs + read, chunk, false};
    case Stage::Gather: return {M::kGatherUs + read, chunk, false};
    case Stage::Finalize: return {M::kOtherPassUs + read, chunk, true};
    default: return {M::kOtherPassUs + read, chunk, false};
    }
}

// Whether the rows are expected to launch an indirect dispatch's grid.
bool expected_to_run(const Dispatch& d, const EstimateInputs& in) {
    if (d.indirect == kNotIndirect) return true;
    switch (d.stage) {
    case Stage::CollectPlain: return in.collect_plain;
    case Stage::Collect: return !in.collect_plain;
    case Stage::WideHistogram:
    case Stage::WideGather: return true;
    default: return false;  // selection levels past the first
    }
}

} // namespace

std::vector<StageEstimate> estimate_plan(const EstimateInputs& in) {
    std::vector<StageEstimate> out;
    const Plan& p = *in.plan;
    for (const Dispatch& d : p.dispatches) {
        StageEstimate e{d.stage, d.level, 0, d.indirect != kNotIndirect, 0.0};
        const bool runs = expected_to_run(d, in);
        const bool collect = d.stage == Stage::CollectPlain || d.stage == Stage::Collect;
        const bool wide = d.stage == Stage::WideHistogram || d.stage == Stage::WideGather;
        for (size_t gi = 0; gi < in.groups->size(); ++gi) {
            const RowGroup& g = (*in.groups)[gi];
            const uint32_t chunks = gi < in.collect_chunks.size() ? in.collect_chunks[gi] : p.n_chunks;
            const Work w = work_of(d, in, chunks);
            const uint32_t per_row = collect && d.per_chunk ? chunks
                                     : wide && d.per_chunk  ? p.collect_slots
                                                            : workgroups_per_row(p, d);
            const uint32_t groups = runs ? g.rows * per_row : 0u;
            e.workgroups += groups;
            if (groups == 0) {
                e.est_us += M::kLaunchUs;
                continue;
            }
            // Workgroups run in waves of what the SMs hold at once; the device's
            // bandwidth bounds the whole dispatch's read from below.
            const double resident = M::kSms * (w.heavy ? M::kHeavyPerSm : M::kLightPerSm);
            const double waves = std::ceil(groups / resident);
            const double bytes = w.logits * 4.0 * groups;
            e.est_us += M::kLaunchUs + std::max(waves * w.serial_us, bytes / M::kBytesPerUs);
        }
        out.push_back(e);
    }
    return out;
}

} // namespace sieve
