// How many chunks a collect pass splits a row group's rows into
// (collect_chunks_for_group, gpu_plan.hpp): on a GPU plan, plain rows take
// about two workgroups per compute unit over the group (more chunks than the
// plan's at small batches, fewer at large ones), never more than the
// statistics' slots or kMostSplitChunks, never so many that a list outgrows
// its share of the row's words or the tail's merge (cut by splitters) its
// buffer, but no fewer, and always a count whose chunks all hold logits in
// the shaders' formula (collect.glsl: collect_chunk_size).
#include "vulkan/gpu_estimate.hpp"
#include "vulkan/gpu_plan.hpp"
#include "vulkan/vk_device.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace {

using sieve::EffectiveLimits;
using sieve::Plan;

EffectiveLimits gpu_limits(uint32_t capacity, uint32_t compute_units, sieve_device_type type = SIEVE_DEVICE_DISCRETE_GPU,
                           uint32_t workgroup = 256) {
    EffectiveLimits l;
    l.workgroup_size = workgroup;
    l.candidate_capacity = capacity;
    l.plan_type = type;
    l.compute_units = compute_units;
    return l;
}

Plan collect_plan(uint32_t vocab, const EffectiveLimits& limits) {
    return sieve::make_plan(sieve::RecordingKind::Sample, false, true, false, 0u, vocab, limits, limits.plan_type);
}

TEST(CollectSplit, AnH200SplitsOneRowOfTheDefaultChainInto32Chunks) {
    const EffectiveLimits h200 = gpu_limits(4096, 132);
    const Plan p = collect_plan(151936, h200);
    EXPECT_EQ(p.n_chunks, 8u);
    EXPECT_EQ(p.collect_slots, 64u);
    // One row: 264 workgroups would fit the SMs, but the tail merges 32 lists at most.
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 1, 40, true, h200), sieve::kMostSplitChunks);
    EXPECT_EQ(sieve::kMostSplitChunks, 32u);
    // Eight rows: about two workgroups per SM over the group (33), capped.
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 8, 40, true, h200), 32u);
    // Sixteen rows: 16 chunks a row.
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 16, 40, true, h200), 16u);
    // 64 rows: 4 chunks a row; 256 rows: one.
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 64, 40, true, h200), 4u);
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 256, 40, true, h200), 1u);
    // Top-k 1000: 16 lists of 1000 fill their shares of the row's 32768
    // words (17 would not), and splitters cut them to at most 2071 for the
    // tail's buffer of 4096; at CAP 2048 the shares allow 8.
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 1, 1000, true, h200), 16u);
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 1, 1000, true, gpu_limits(2048, 132)), 8u);
    // Top-k 300: 32 lists of 300 (512 entries a share), cut to at most 1554.
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 1, 300, true, h200), 32u);
    // Top-k 600 at CAP 2048: 13 shares of 630 entries (14 would hold 585).
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 1, 600, true, gpu_limits(2048, 132)), 13u);
    // The general variant's rows (full-row sums) are never split.
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 1, 40, false, h200), 8u);
}

// Why top-k 1000 takes 16 chunks at one row on an H200: by the estimate
// (gpu_estimate.cpp; stated and fitted constants, not a measurement) each
// chunk's three reads of half the logits (two radix levels, the gather) save
// more than the tail's fourth merge round and its splitters cost.
TEST(CollectSplit, TheEstimateRanksSixteenChunksOfTopK1000AheadOfEightOnAnH200) {
    const EffectiveLimits h200 = gpu_limits(4096, 132);
    const Plan p = collect_plan(151936, h200);
    const std::vector<sieve::RowGroup> groups = {{0, 0, 1, 0}};
    const auto estimate = [&](uint32_t chunks) {
        sieve::EstimateInputs in;
        in.plan = &p;
        in.groups = &groups;
        in.vocab = 151936;
        in.capacity = h200.candidate_capacity;
        in.workgroup = h200.workgroup_size;
        in.need = 1000;
        in.chain_ops = 2;
        in.collect_chunks = {chunks};
        double us = 0;
        for (const sieve::StageEstimate& e : sieve::estimate_plan(in)) us += e.est_us;
        return us;
    };
    const double eight = estimate(8), sixteen = estimate(16);
    std::printf("top-k 1000, one row, H200 (estimated): 8 chunks %.1f us, 16 chunks %.1f us\n", eight, sixteen);
    EXPECT_LT(sixteen + 5.0, eight);
}

TEST(CollectSplit, ACpuDeviceKeepsThePlansChunks) {
    const EffectiveLimits cpu = gpu_limits(2048, 2, SIEVE_DEVICE_CPU);
    const Plan p = collect_plan(151936, cpu);
    EXPECT_EQ(p.collect_slots, p.n_chunks);
    EXPECT_EQ(sieve::collect_chunks_for_group(p, 151936, 1, 40, true, cpu), p.n_chunks);
}

// Whether a row split into `chunks` keeps lists of `need` entries in their
// shares of the row's words (collect.glsl: 8 CAP / chunks words past 8
// chunks, rounded to a pair) and the tail's merge in its buffer
// (collect_tail.glsl: all lists at once, or what the splitters leave).
bool split_fits(uint32_t chunks, uint32_t need, const EffectiveLimits& limits) {
    if (chunks <= sieve::glsl::MAX_COLLECT_CHUNKS) return true;
    const uint32_t cap = limits.candidate_capacity;
    const uint32_t per = std::max(std::min(limits.workgroup_size, cap) / chunks, 1u);
    const uint32_t merged = chunks * need <= cap ? chunks * need : need + (chunks + 1) * ((need + per - 1) / per);
    return need <= (8 * cap / chunks & ~1u) / 2 && merged <= cap;
}

// One group's split: the slots, kMostSplitChunks, the compute units, logits
// in every chunk, the lists' shares and the tail's buffer, and no fewer
// chunks than those allow. Returns whether it differs from the plan's.
bool expect_split(const Plan& p, const EffectiveLimits& limits, uint32_t vocab, uint32_t rows, uint32_t need) {
    const uint32_t n = sieve::collect_chunks_for_group(p, vocab, rows, need, true, limits);
    SCOPED_TRACE("cap " + std::to_string(limits.candidate_capacity) + " units " + std::to_string(limits.compute_units) +
                 " wg " + std::to_string(limits.workgroup_size) + " vocab " + std::to_string(vocab) + " rows " +
                 std::to_string(rows) + " need " + std::to_string(need) + ": " + std::to_string(n) + " chunks");
    EXPECT_GE(n, 1u);
    EXPECT_LE(n, p.collect_slots);
    EXPECT_LE(n, sieve::kMostSplitChunks);
    const uint32_t size = sieve::collect_chunk_size(vocab, n);
    EXPECT_EQ(size % 4, 0u);
    EXPECT_EQ((vocab + size - 1) / size, n) << "a chunk without logits";
    EXPECT_TRUE(split_fits(n, need, limits)) << "a list outgrows its share of the row's words, or the merge its buffer";
    const uint32_t most = std::min({p.collect_slots, sieve::kMostSplitChunks, std::max(2 * limits.compute_units / rows, 1u)});
    if (n < most && sieve::collect_chunks_holding_logits(vocab, n + 1) == n + 1) {
        EXPECT_FALSE(split_fits(n + 1, need, limits)) << "one more chunk would fit";
    }
    if (n > 1) {
        EXPECT_LE(n * rows, 2 * limits.compute_units) << "more than two workgroups per compute unit";
    }
    return n != p.n_chunks;
}

TEST(CollectSplit, EverySplitFitsTheSlotsTheBufferAndHoldsLogitsInEveryChunk) {
    int split = 0;
    for (uint32_t capacity : {512u, 2048u, 4096u}) {
        for (uint32_t units : {1u, 8u, 32u, 132u, 1000u}) {
            for (uint32_t workgroup : {64u, 256u}) {
                const EffectiveLimits limits = gpu_limits(capacity, units, SIEVE_DEVICE_DISCRETE_GPU, workgroup);
                for (uint32_t vocab : {capacity + 1, 20000u, 32000u, 128256u, 151936u, 262144u, 262147u}) {
                    const Plan p = collect_plan(vocab, limits);
                    if (p.small) continue;  // one chunk, no collect split (covered by the plan tests)
                    ASSERT_LE(p.collect_slots, static_cast<uint32_t>(sieve::glsl::MAX_ROW_CHUNKS));
                    for (uint32_t rows : {1u, 2u, 3u, 7u, 64u}) {
                        for (uint32_t need : {1u, 7u, 40u, 64u, 300u, 600u, 1000u, capacity / 2}) {
                            if (need > capacity / 2) continue;  // the host clamps a row's need to CAP / 2
                            split += expect_split(p, limits, vocab, rows, need) ? 1 : 0;
                        }
                    }
                }
            }
        }
    }
    EXPECT_GT(split, 100);
}

} // namespace

namespace {

// The history pass's split (history_groups_for): one workgroup per 64
// positions of the capacity, on a GPU at most about four workgroups per
// compute unit over the rows (a streaming pass) and 64 a row; on a CPU
// device one per compute unit over the rows and 4 a row (lavapipe's thread
// per workgroup). The plan then builds with that many workgroups in one
// dispatch (the previous call's last workgroup left the hash empty: no
// clearing dispatch).
TEST(HistorySplit, AGpuSplitsALongHistoryByTheCapacityAndTheBatch) {
    const EffectiveLimits h200 = gpu_limits(4096, 132);
    EXPECT_EQ(sieve::history_groups_for(4096, 1, h200), 64u);
    EXPECT_EQ(sieve::history_groups_for(4096, 8, h200), 64u);
    EXPECT_EQ(sieve::history_groups_for(4096, 16, h200), 33u);
    EXPECT_EQ(sieve::history_groups_for(4096, 64, h200), 8u);
    EXPECT_EQ(sieve::history_groups_for(4096, 256, h200), 2u);
    EXPECT_EQ(sieve::history_groups_for(4096, 1024, h200), 1u);
    EXPECT_EQ(sieve::history_groups_for(64, 1, h200), 1u);
    EXPECT_EQ(sieve::history_groups_for(65, 1, h200), 2u);
    EXPECT_EQ(sieve::history_groups_for(1u << 16, 1, h200), 64u);
    const EffectiveLimits two_cores = gpu_limits(4096, 2, SIEVE_DEVICE_CPU);
    EXPECT_EQ(sieve::history_groups_for(4096, 1, two_cores), 2u);
    EXPECT_EQ(sieve::history_groups_for(4096, 2, two_cores), 1u);
    EXPECT_EQ(sieve::history_groups_for(64, 1, two_cores), 1u);
    EXPECT_EQ(sieve::history_groups_for(4096, 1, gpu_limits(4096, 1, SIEVE_DEVICE_CPU)), 1u);
    EXPECT_EQ(sieve::history_groups_for(4096, 1, gpu_limits(4096, 132, SIEVE_DEVICE_CPU)), 4u);
    EXPECT_EQ(sieve::history_groups_for(4096, 8, gpu_limits(4096, 16, SIEVE_DEVICE_CPU)), 2u);

    using sieve::Stage;
    const auto history_levels = [&](uint32_t groups) {
        const Plan p = sieve::make_plan(sieve::RecordingKind::Sample, false, true, false, groups, 151936, h200,
                                        h200.plan_type);
        std::vector<std::pair<uint32_t, uint32_t>> out;  // (level, workgroups per row)
        for (const sieve::Dispatch& d : p.dispatches)
            if (d.stage == Stage::History) out.emplace_back(d.level, sieve::workgroups_per_row(p, d));
        return out;
    };
    using Levels = std::vector<std::pair<uint32_t, uint32_t>>;
    EXPECT_EQ(history_levels(0), Levels{});
    EXPECT_EQ(history_levels(1), (Levels{{sieve::glsl::HISTORY_WHOLE, 1u}}));
    EXPECT_EQ(history_levels(33), (Levels{{sieve::glsl::HISTORY_BUILD, 33u}}));
    // The estimate's plan of 521950c, which had the clearing dispatch.
    Plan measured = sieve::make_plan(sieve::RecordingKind::Sample, false, true, false, 33, 151936, h200, h200.plan_type);
    const uint32_t dispatches = measured.min_dispatches;
    sieve::separate_history_clear(&measured);
    ASSERT_GE(measured.dispatches.size(), 2u);
    EXPECT_EQ(measured.dispatches[0].stage, Stage::History);
    EXPECT_EQ(measured.dispatches[0].level, sieve::glsl::HISTORY_CLEAR);
    EXPECT_EQ(measured.dispatches[1].level, sieve::glsl::HISTORY_BUILD);
    EXPECT_EQ(measured.min_dispatches, dispatches + 1);
}

} // namespace

// Plans whose figures no chunking changes (greedy, and the selection levels'
// exact sums: dist, the distribution) split by the batch as the plain collect
// pass does; logprobs, whose float sums do depend on it, keep the plan's
// chunks.
TEST(BatchSplit, AnH200SplitsGreedyAndSelectionRowsByTheBatch) {
    const EffectiveLimits h200 = gpu_limits(4096, 132);
    auto plan = [&](uint32_t rows, bool greedy_chain, const EffectiveLimits& limits,
                    sieve::RecordingKind kind = sieve::RecordingKind::Sample, bool logprobs = false) {
        Plan p = sieve::make_plan(kind, greedy_chain, false, false, 0u, 151936, limits, limits.plan_type, logprobs);
        sieve::split_for_batch(&p, rows, 151936, limits);
        return p;
    };
    // Four workgroups a compute unit over the call's rows (528 on an H200).
    EXPECT_EQ(plan(1, true, h200).n_chunks, 64u);  // the plan's chunks (528 would exceed them)
    EXPECT_EQ(plan(4, true, h200).n_chunks, 64u);
    EXPECT_EQ(plan(16, true, h200).n_chunks, 33u);
    EXPECT_EQ(plan(64, true, h200).n_chunks, 8u);
    EXPECT_EQ(plan(256, true, h200).n_chunks, 2u);
    EXPECT_EQ(plan(1024, true, h200).n_chunks, 1u);
    const Plan p64 = plan(64, true, h200);
    EXPECT_GE(p64.n_chunks * p64.chunk_size, 151936u);
    EXPECT_LT((p64.n_chunks - 1) * p64.chunk_size, 151936u);  // every chunk holds logits
    // dist: statistics, the selection levels and the gather.
    EXPECT_EQ(plan(64, false, h200).n_chunks, 8u);
    EXPECT_EQ(plan(1, false, h200).n_chunks, 64u);
    EXPECT_EQ(plan(64, false, h200, sieve::RecordingKind::Distribution).n_chunks, 8u);
    // Logprobs' sums keep the vocabulary's chunks.
    EXPECT_EQ(plan(64, false, h200, sieve::RecordingKind::Sample, true).n_chunks, 64u);
    EXPECT_EQ(plan(64, true, h200, sieve::RecordingKind::Sample, true).n_chunks, 64u);
    // A CPU device keeps its plan.
    const EffectiveLimits cpu = gpu_limits(2048, 2, SIEVE_DEVICE_CPU);
    const Plan own = sieve::make_plan(sieve::RecordingKind::Sample, true, false, false, 0u, 151936, cpu, cpu.plan_type);
    EXPECT_EQ(plan(64, true, cpu).n_chunks, own.n_chunks);
    EXPECT_EQ(plan(64, false, cpu).n_chunks, own.n_chunks);
}

// A top-p plan's wide passes (exact sums, wide.glsl) split their rows by the
// batch as the streaming passes do, at most the collect slots' 64; the
// collect pass's own chunks and slots stay; a CPU device keeps the slots'.
TEST(BatchSplit, AnH200SplitsTheWidePassesRowsByTheBatch) {
    const EffectiveLimits h200 = gpu_limits(4096, 132);
    auto plan = [&](uint32_t rows, const EffectiveLimits& limits) {
        Plan p = sieve::make_plan(sieve::RecordingKind::Sample, false, true, true, 0u, 151936, limits, limits.plan_type);
        sieve::split_for_batch(&p, rows, 151936, limits);
        return p;
    };
    const Plan one = plan(1, h200), batch = plan(64, h200);
    EXPECT_EQ(one.wide_chunks, 64u);
    EXPECT_EQ(plan(16, h200).wide_chunks, 33u);
    EXPECT_EQ(batch.wide_chunks, 8u);
    EXPECT_EQ(plan(1024, h200).wide_chunks, 1u);
    EXPECT_EQ(batch.collect_slots, one.collect_slots);
    EXPECT_EQ(batch.n_chunks, one.n_chunks);
    const uint32_t size = sieve::wide_chunk_size(batch, 151936);
    EXPECT_EQ(size % 4, 0u);  // the wide passes read plain rows four logits a load
    EXPECT_GE(batch.wide_chunks * size, 151936u);
    EXPECT_LT((batch.wide_chunks - 1) * size, 151936u);  // every chunk holds logits
    for (const sieve::Dispatch& d : batch.dispatches) {
        if (d.stage == sieve::Stage::WideHistogram || d.stage == sieve::Stage::WideGather) {
            EXPECT_EQ(sieve::workgroups_per_row(batch, d), 8u);
        }
    }
    const EffectiveLimits cpu = gpu_limits(2048, 2, SIEVE_DEVICE_CPU);
    const Plan own = plan(64, cpu);
    EXPECT_EQ(own.wide_chunks, own.collect_slots);
    EXPECT_EQ(own.wide_chunks, plan(1, cpu).wide_chunks);
}
