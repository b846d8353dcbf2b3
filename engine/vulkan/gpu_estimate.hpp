// An estimate of each dispatch's GPU time on the reference GPU (an NVIDIA H200,
// 132 SMs) from what the plan knows: its workgroups, the logits the busiest
// workgroup reads, its serial steps and the launch. Constants fitted to the
// H200 stage times of commits 30de833 (the shaders it had) and 521950c (the
// rebuilt collect, tail and history passes; docs/architecture/estimate.md).
// An estimate, never a measurement: it is how designs are compared where no
// GPU is lent.
#pragma once

#include "vulkan/gpu_plan.hpp"

#include <cstdint>
#include <vector>

namespace sieve {

// The shaders a plan is estimated with: those a measured run had, whose
// figures the constants were fitted to (30de833: its collect select, its
// history pass visiting every hash entry; 521950c: the tail sorting the
// lists whole), or today's.
enum class ShaderSet { Of30de833, Of521950c, Today };

// What a call's plan is estimated from, beyond the plan and its row groups.
struct EstimateInputs {
    const Plan* plan = nullptr;
    const std::vector<RowGroup>* groups = nullptr;
    uint32_t vocab = 0;
    uint32_t capacity = 4096;     // CAP, the candidate buffer
    uint32_t workgroup = 256;     // WG, the plan's workgroup size (the constants were fitted at 256)
    uint32_t need = 1;            // the most candidates a row's collect pass keeps (P_NEED)
    uint32_t chain_ops = 0;       // the chain's samplers before the draw, penalties and DRY left out
    uint32_t history_tokens = 0;  // the longest history window the history pass reads
    bool collect_plain = true;    // the host arms collect_chunk.glsl's plain variant (else the general one)
    bool aggregates = false;      // some row's chain reads the full-row aggregates (ROW_NEED_SIGMA, ROW_NEED_MASS)
    bool floored_lists = false;   // every row's tail cuts its lists to min-p's floor (ROW_FLOOR)
    uint32_t raw_logprobs = 0;    // the raw log-probabilities' top n (sieve_chain_set_logprobs; 0: none or off)
    ShaderSet shaders = ShaderSet::Today;
    // Per row group (as `groups`): the chunks its collect pass splits a row
    // into (collect_chunks_for_group); empty: the plan's n_chunks.
    std::vector<uint32_t> collect_chunks;
};

struct StageEstimate {
    Stage stage;
    uint32_t level = 0;
    uint32_t workgroups = 0;  // expected to launch, over the row groups (0: left empty, see below)
    bool indirect = false;    // the data or the host decides its grid when the call runs
    double est_us = 0;
};

// One entry per plan dispatch (summed over the row groups), in the plan's
// order. Indirect dispatches are estimated as the rows are expected to take
// them: the collect variant the host arms runs and the other is empty; the
// selection levels past the first are empty (the first level usually
// resolves the row); the wide passes run (a top-p may cut past the buffer).
std::vector<StageEstimate> estimate_plan(const EstimateInputs& in);

// The workgroups of a stage today's estimate takes as resident at once on a
// compute unit (kPicksPerSm, kHeavyPerSm or kLightPerSm): what the
// pipelines' statistics check (pipeline_stats.hpp).
double assumed_resident_per_unit(Stage stage);

// The model's constants (fitted or stated: estimate.md says which).
struct EstimateModel {
    static constexpr double kSms = 132;                   // the reference GPU's SMs
    static constexpr double kLaunchUs = 5.0;              // a dispatch with its barrier and timestamp, empty or not
    static constexpr double kBytesPerUs = 4.3e6;          // device bandwidth: 4.3 TB/s (a bound, not fitted)
    static constexpr double kReadUsPerLogit = 0.00066;    // one workgroup reading its chunk (latency-bound)
    // 30de833's shaders (ShaderSet::Of30de833):
    static constexpr double kCollectUs = 59.3;            // collect_chunk.glsl's fixed serial work per chunk
    static constexpr double kCollectUsPerNeed = 0.20;     // ... per candidate kept (compactions, the sorted list)
    static constexpr double kTailUs = 17.5;               // collect_tail.glsl per row
    static constexpr double kTailUsPerOp = 17.0;          // ... per op of the chain
    static constexpr double kTailUsPerNeed = 0.71;        // ... per candidate merged and run through the chain
    static constexpr double kHistoryUs = 47.1;            // history.comp per row
    static constexpr double kHistoryUsPerToken = 0.0839;  // ... per history token in its window
    // Today's shaders, fitted to 521950c's default suite (its 64-row run at
    // v151936 summed its stage times past the wall clock and was left out;
    // estimate.md). collect_chunk.glsl's
    // register picks (need <= kPickLimit): a fixed term, the read; no term
    // per candidate kept (every case kept 64: nothing told it apart).
    static constexpr double kPicksUs = 14.0;
    // ... two resident per SM (fitted: 256 workgroups at 64 and 256 rows took
    // one wave's time, 23 and 28 us).
    static constexpr double kPicksPerSm = 2;
    // A GPU plan's chunks with a need past the register picks
    // (FLAG_RADIX_CHUNKS, radix_chunk): four levels (521950c's level cost)
    // and a gather re-read a chunk the first read left in cache, counted as
    // two reads, and a sort of the buffer; today's, in chunks of at most 64
    // WG logits, a level more, a read more, and a sort of the need's power
    // of two (gpu_estimate.cpp: radix_chunk_us).
    static constexpr double kRadixChunkReads = 2.0;
    // 521950c's GPU tail (FLAG_SORT_MERGE) sorted the chunks' lists in
    // shared memory: per bitonic stage, ceil(n / 2 / 256) compare-exchanges
    // per invocation (16 chunks' lists took 34 us, 32 chunks' 48); a fixed
    // term and one per op of the chain. Past the buffer it selected first
    // (its levels' cost was not told apart from the sort's: 0).
    // ... its fitted terms hold the aggregates' merge, which 521950c's
    // invocation 0 read chunk by chunk for every row; today's tail reads
    // them at once, only for rows whose chain needs them: its estimate is
    // 521950c's less kChunkReadUs a read it no longer waits for.
    static constexpr double kSortTailUs = 8.0;
    static constexpr double kSortTailUsPerOp = 3.25;
    static constexpr double kUsPerSortExchange = 0.065;
    static constexpr double kUsPerSelectLevelOf521950c = 0.0;
    // Today's tail merges the lists in pairs of runs (collect_tail.glsl:
    // merge_list_runs), lists that could outgrow the buffer cut by splitters
    // first (narrow_chunk_lists). Stated, not fitted (no GPU has run it): a
    // barrier costs a bitonic stage (its barrier and four accesses, an upper
    // bound), a shared access a quarter of one; a read of the lists'
    // entries, every invocation's loads independent, one memory round trip.
    static constexpr double kUsPerBarrier = kUsPerSortExchange;
    static constexpr double kUsPerSharedAccess = kUsPerSortExchange / 4;
    static constexpr double kUsPerListRead = 0.75;
    static constexpr uint32_t kPickLimit = 512;  // collect_chunk.glsl's PICK_LIMIT at 256-wide workgroups
    // history.comp now visits only the hash entries in use.
    static constexpr double kGpuHistoryUs = 20.0;
    // ... and per history token of its share: 30de833's 0.0839 held the hash
    // entries its pass visited whatever the window. The wall clock of
    // 521950c's 64-row call over 4096 tokens (204.7 us: 256 building
    // workgroups of 1024 positions, the clearing dispatch, the collect pass,
    // the tail, the submit) bounds it: the estimate of that call stays below
    // it up to 0.079 (Estimate.StaysUnderTheWallClockOf521950cAtSixtyFourRows).
    // Taken at that bound, not fitted: the one-row figures (64 positions a
    // workgroup) cannot tell it from the fixed term.
    static constexpr double kGpuHistoryUsPerToken = 0.078;
    // The wide passes: 30de833's per logit of a chunk (its 8 chunks a row);
    // since 521950c a fixed term per chunk workgroup besides the read, and
    // the row's last workgroup's work (the decision, the resolve) once, both
    // fitted to 521950c's one row (64 workgroups, one wave: 45.6 and 68.6 us)
    // and 64 rows (4096 workgroups, 32 waves: 168.5 and 345.0 us): a chunk
    // workgroup took 3.96 and 8.9 us, the last one 36.6 and 54.7 more.
    static constexpr double kWideHistogramUsPerLogit = 0.00858;
    static constexpr double kWideGatherUsPerLogit = 0.0211;
    static constexpr double kWideHistogramUs = 2.4;
    static constexpr double kWideHistogramLastUs = 36.6;
    static constexpr double kWideGatherUs = 7.3;
    // 521950c's gather read its chunk twice (count, then write the taken
    // entries): its fitted term holds the second read at that run's chunks
    // (64 a row at 151936, 2374 logits). Today's reads once on a GPU (the
    // taken entries wait in shared memory; a second read only past CAP of
    // them in a chunk): its term is the fitted one less that read.
    static constexpr double kWideGatherChunkOf521950c = 2374;
    static constexpr double kWideGatherLastUs = 54.7;
    // 521950c's last workgroups read the chunks' words one chunk after
    // another (64 at 151936); today's read them at once (wide_histogram:
    // decide, wide_gather: resolve): their last term less kChunkReadUs for
    // each read no longer waited for.
    static constexpr double kWideChunksOf521950c = 64;
    // 521950c's resolve read the row's list four times where the draw fell
    // in the buffer (b*'s key range, a selection level, the final range, the
    // draw's masses); today's two (the gather's workgroups find the range,
    // the cut's selection sums the draw's masses as it goes). A read of the
    // bench row's list (b* about 8100 entries at 151936: 32 an invocation, 8
    // batches of 4 independent loads) stated as 8 of the tail's list reads.
    // Today's two load 8 entries a batch (wide_gather.comp: LIST_LOADS):
    // each half of that.
    static constexpr double kWideListReadsSaved = 2;
    static constexpr double kWideListReadsLeft = 2;
    static constexpr double kWideListReadUs = 8 * kUsPerListRead;
    static constexpr double kRowStatsUs = 5.7;            // per chunk, besides the read
    // The last workgroup's dependent read of what one chunk left (an L2
    // round trip): stated, from mass_histogram level 0 against row_stats
    // over the same 64 chunks at one row (33.5 against 17.3 us at 521950c),
    // less about 3 us for the bins' tree and the searches, over 64 chunks.
    // 521950c's last workgroups read the chunks' results one chunk at a
    // time; today's read a batch of chunks at once (plan.md): today's
    // estimate of a pass is the fitted one less the reads it saves.
    static constexpr double kChunkReadUs = 0.2;
    static constexpr double kMassHistogramUs = 25.4;
    static constexpr double kGatherUs = 6.8;
    static constexpr double kOtherPassUs = 6.0;           // passes without an H200 figure (stated, not fitted)
    // The raw log-probabilities pass (raw_stats.comp) on each chunk's
    // workgroup and again on the row's last: a maximum and a sum, then n
    // workgroup-wide picks of the next best entry. 521950c's took a tree of
    // log2(WG) barrier steps each (and one to broadcast: the max and sum one
    // each), and the last workgroup read the chunks' lists again every round
    // (a dependent read, kChunkReadUs); today's take two steps each (a fold
    // by groups of 16), the max and sum two together, and the lists are read
    // once. A step: a barrier and a shared access. Stated, no GPU has run
    // either.
    static constexpr double kRawStepUs = kUsPerBarrier + kUsPerSharedAccess;
    static constexpr double kHeavyPerSm = 1;              // shared-memory-heavy workgroups resident per SM (fitted)
    static constexpr double kLightPerSm = 4;              // streaming workgroups per SM (stated, not fitted)
};

} // namespace sieve
