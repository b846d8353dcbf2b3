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
    double per_sm = M::kLightPerSm;  // resident per SM: kHeavyPerSm where it holds much shared memory
    double last_us = 0;  // after the last wave, on a row's last workgroup alone (a fused tail, the wide passes' decisions)
};

uint32_t log2_ceil(uint32_t n) {
    uint32_t lg = 0;
    while ((1u << lg) < n) ++lg;
    return lg;
}

// The bitonic stages of sorting n entries padded to a power of two.
double sort_stages(uint32_t n) {
    const uint32_t lg = log2_ceil(n);
    return lg * (lg + 1) / 2.0;
}

// A workgroup's bitonic sort of n entries: its stages times the
// compare-exchanges each invocation makes per stage (n / 2 over the workgroup).
double sort_us(uint32_t n, uint32_t workgroup) {
    return M::kUsPerSortExchange * sort_stages(n) * std::ceil(n / (2.0 * workgroup));
}

// Today's GPU tail merge (collect_tail.glsl: sort_chunk_lists): lists that
// could outgrow the buffer cut by splitters (narrow_chunk_lists: their read,
// three barriers, each invocation's binary searches in every list's
// splitters), the offsets' scan (three barriers), the copy (a read), and
// log2(lists) rounds of merge paths, each pair cut to `need` (two
// barriers, invocation 0's placing of the pairs, a search for the pair, a
// co-rank search and three accesses an output an invocation).
// Rows whose lists are cut to min-p's floor first (locate_chunk_lists: a
// read of the lists' first entries, then each list's search over what its
// chunk listed, rounds of GPU_REACH_PROBES probes at once, a read each)
// merge their survivors alone, never narrowed: the estimate takes `need` of
// them, and `need` listed a chunk (a row whose survivors no chunk's list
// fills, as the bench's Zipf row at min-p 0.05, whose chunks list fewer:
// stated, not measured).
double merge_lists_us(const EstimateInputs& in, uint32_t chunks) {
    double us = 0;
    uint32_t n = static_cast<uint32_t>(
        std::min<uint64_t>(tail_merge_entries(in.need, chunks, in.capacity, in.workgroup), in.capacity));
    if (in.floored_lists) {
        constexpr uint32_t probes = glsl::GPU_REACH_PROBES;
        uint32_t rounds = 0;
        for (uint32_t w = in.need; w > 0; w = (w + probes) / (probes + 1) - 1) ++rounds;
        us += (1 + rounds) * M::kUsPerListRead;
        n = std::min(n, in.need);
    } else if (uint64_t{chunks} * in.need > in.capacity) {
        const uint32_t per = std::max(std::min(in.workgroup, in.capacity) / chunks, 1u);
        us += M::kUsPerListRead + 3 * M::kUsPerBarrier + M::kUsPerSharedAccess * chunks * (log2_ceil(per) + 1);
    }
    us += 3 * M::kUsPerBarrier + M::kUsPerListRead;
    // Each round's pairs keep their first `need` entries, packed (a pair
    // takes at most 2 need, and the round at most what the lists hold):
    // invocation 0 places them (two accesses a pair), and an invocation
    // finds its pair, its co-rank in two runs of at most `need` and merges
    // its share of the round's outputs.
    const uint32_t run = std::min(n, in.need);
    for (uint32_t runs = chunks; runs > 1; runs = (runs + 1) / 2) {
        const uint32_t pairs = (runs + 1) / 2;
        const double outputs = std::min<double>(double(pairs) * run, n);
        const double seg = std::ceil(outputs / in.workgroup);
        us += 2 * M::kUsPerBarrier +
              M::kUsPerSharedAccess * (2 * pairs + log2_ceil(pairs) + log2_ceil(2 * run) + 3 * seg);
    }
    return us;
}

// The collect tail's serial work on its one workgroup per row (a dispatch of
// its own, or the chunks' last workgroup: Plan::fused_tail).
double tail_us(const EstimateInputs& in, uint32_t chunks) {
    const Plan& p = *in.plan;
    // The aggregates' merge (collect_tail.glsl: merge_chunk_aggs): today
    // one read for rows that need them, none for the others, where
    // 521950c's fitted figure waited for one a chunk.
    const double aggregate_reads = in.shaders != ShaderSet::Today ? 0.0 : (in.aggregates ? 1.0 : 0.0) - chunks;
    // 30de833's merge by ranks (binary searches), fitted; a CPU plan's merge
    // paths, which no GPU runs, are charged alike.
    if (!(p.flags & glsl::FLAG_SORT_MERGE))
        return M::kTailUs + M::kTailUsPerOp * in.chain_ops + M::kTailUsPerNeed * in.need;
    const uint32_t entries = chunks * in.need;  // the lists' entries, at most
    const double merge = in.shaders == ShaderSet::Today ? merge_lists_us(in, chunks)
                         : entries <= in.capacity
                             ? sort_us(entries, in.workgroup)
                             : 4 * M::kUsPerSelectLevelOf521950c + sort_us(in.capacity, in.workgroup);
    return M::kSortTailUs + M::kChunkReadUs * aggregate_reads + M::kSortTailUsPerOp * in.chain_ops + merge;
}

// A GPU plan's radix chunk (collect_chunk.glsl: radix_chunk) of `logits`
// past its levels' fixed cost: its reads of the chunk, `read` each (a
// level's from the cache counted as the first), and its sort. Its levels
// stop where at most CAP logits reach the edge (one level for top-k 1000: up
// to CAP sorted); today's, in chunks of at most RADIX_DEEP_LOGITS_PER_LANE x
// WG logits, go on until the need's power of two (radix_gathered: on the
// bench's Zipf rows one more level, then a sort of 1024 for top-k 1000),
// where the sort they halve costs more than the read.
double radix_chunk_us(const EstimateInputs& in, double logits, double read) {
    const bool deeper =
        in.shaders == ShaderSet::Today && logits <= double(glsl::RADIX_DEEP_LOGITS_PER_LANE) * in.workgroup;
    if (!deeper) return M::kRadixChunkReads * read + sort_us(in.capacity, in.workgroup);
    const uint32_t gathered = std::min(in.capacity, 1u << log2_ceil(in.need));
    return (M::kRadixChunkReads + 1) * read + sort_us(gathered, in.workgroup);
}

} // namespace

double assumed_resident_per_unit(Stage stage) {
    switch (stage) {
    case Stage::CollectPlain:
    case Stage::Collect: return M::kPicksPerSm;
    case Stage::CollectTail:
    case Stage::WideHistogram:
    case Stage::WideGather:
    case Stage::Finalize: return M::kHeavyPerSm;
    default: return M::kLightPerSm;
    }
}

namespace {

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
    // A fused tail runs after the last chunk of its row, on that workgroup
    // (the tail adds little shared memory to the chunks': residency as
    // fitted, stated).
    const double fused_tail = collect && p.fused_tail ? tail_us(in, chunks) : 0.0;
    const double resident = assumed_resident_per_unit(d.stage);  // today's shaders'
    switch (d.stage) {
    case Stage::CollectPlain:
    case Stage::Collect:
        // The radix chunks run in the picks' pipeline (collect_chunk.glsl's
        // plain variant, and today the general one too): its shared memory
        // and registers, so its residency.
        if ((p.flags & glsl::FLAG_RADIX_CHUNKS) && in.need > M::kPickLimit &&
            (d.stage == Stage::CollectPlain || in.shaders == ShaderSet::Today))
            return {4 * M::kUsPerSelectLevelOf521950c + radix_chunk_us(in, chunk, read), chunk, resident, fused_tail};
        if (in.shaders == ShaderSet::Of30de833)
            return {M::kCollectUs + M::kCollectUsPerNeed * in.need + read, chunk, M::kHeavyPerSm};
        return {M::kPicksUs + read, chunk, resident, fused_tail};
    case Stage::CollectTail: return {tail_us(in, chunks), 0, resident};
    case Stage::WideHistogram:
    case Stage::WideGather: {
        const bool histogram = d.stage == Stage::WideHistogram;
        if (in.shaders == ShaderSet::Of30de833)
            return {(histogram ? M::kWideHistogramUsPerLogit : M::kWideGatherUsPerLogit) * chunk, chunk, M::kHeavyPerSm};
        const bool today = in.shaders == ShaderSet::Today;
        const double saved = today ? M::kChunkReadUs * (M::kWideChunksOf521950c - 1) : 0.0;
        const double reads_saved =
            today && !histogram ? (M::kWideListReadsSaved + M::kWideListReadsLeft / 2) * M::kWideListReadUs : 0;
        const double gather = M::kWideGatherUs - M::kWideGatherChunkOf521950c * M::kReadUsPerLogit + (today ? 0 : read);
        return {(histogram ? M::kWideHistogramUs : gather) + read, chunk, resident,
                (histogram ? M::kWideHistogramLastUs : M::kWideGatherLastUs) - saved - reads_saved};
    }
    case Stage::History: {
        // The clearing dispatch 521950c had before a split pass: the
        // previous call's entries, no history walked (stated). Otherwise the
        // fixed part and this workgroup's share of the window.
        if (d.level == glsl::HISTORY_CLEAR) return {M::kOtherPassUs, 0, M::kLightPerSm};
        const uint32_t groups = d.level == glsl::HISTORY_BUILD ? std::max(p.history_groups, 1u) : 1u;
        // Since 521950c the pass holds little shared memory (its hash lives in
        // the slot's buffer): streaming residency. One resident a SM would
        // give 521950c's 256 building workgroups at 64 rows two waves, 217
        // us, more than that whole call's wall clock (204.7 us).
        const bool baseline = in.shaders == ShaderSet::Of30de833;
        const double fixed = baseline ? M::kHistoryUs : M::kGpuHistoryUs;
        const double per_token = baseline ? M::kHistoryUsPerToken : M::kGpuHistoryUsPerToken;
        return {fixed + per_token * std::ceil(double(in.history_tokens) / groups), 0,
                baseline ? M::kHeavyPerSm : resident};
    }
    case Stage::RowStats: return {M::kRowStatsUs + read, chunk, resident};
    case Stage::MassHistogram: {
        // The last workgroup's reads of the chunks' bins (scan.glsl): today a
        // batch of WG / 4 chunks at once, where the fitted figure waited for
        // one read a chunk.
        const double saved =
            in.shaders != ShaderSet::Today ? 0.0 : p.n_chunks - std::ceil(p.n_chunks / (in.workgroup / 4.0));
        return {M::kMassHistogramUs - M::kChunkReadUs * saved + read, chunk, resident};
    }
    case Stage::Gather: return {M::kGatherUs + read, chunk, resident};
    case Stage::RawStats: {
        const double n = in.raw_logprobs;
        const bool today = in.shaders == ShaderSet::Today;
        const double tree = log2_ceil(in.workgroup) + 1.0;
        const double steps = today ? 2 * n + 2 : (n + 2) * tree;
        const double list_reads = n == 0 ? 0 : today ? 1 : n;
        const double rounds = steps * M::kRawStepUs;
        return {M::kOtherPassUs + rounds + read, chunk, resident, rounds + list_reads * M::kChunkReadUs};
    }
    default: return {M::kOtherPassUs + read, chunk, resident};
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
                                     : wide && d.per_chunk  ? p.wide_chunks
                                                            : workgroups_per_row(p, d);
            const uint32_t groups = runs ? g.rows * per_row : 0u;
            e.workgroups += groups;
            if (groups == 0) {
                e.est_us += M::kLaunchUs;
                continue;
            }
            // Workgroups run in waves of what the SMs hold at once; the device's
            // bandwidth bounds the whole dispatch's read from below.
            const double resident = M::kSms * w.per_sm;
            const double waves = std::ceil(groups / resident);
            const double bytes = w.logits * 4.0 * groups;
            e.est_us += M::kLaunchUs + std::max(waves * w.serial_us, bytes / M::kBytesPerUs) + w.last_us;
        }
        out.push_back(e);
    }
    return out;
}

} // namespace sieve
