// Steady-state sampling records nothing and allocates nothing: the engine's
// counters prove it. Per-token values (temperature, seed) go through the
// parameter block without re-recording.
#include "test_support.hpp"

#include <gtest/gtest.h>

namespace {

using sieve_test::Shape;

TEST(GpuSteadyState, NoRecordingNoAllocationPerToken) {
    auto gpu = sieve_test::gpu_context();
    for (int32_t vocab : {1000, 151936}) {
        for (const char* samplers : {"temperature;dist", "greedy"}) {
            const int32_t rows = 4;
            auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 1);
            sieve::Chain chain(gpu, sieve_test::chain_desc(samplers, rows, vocab, 0.8f, 1));
            const sieve_counters created = chain.counters();
            EXPECT_GT(created.allocations, 0u);
            chain.sample(logits.data(), rows, vocab);  // first call records
            const sieve_counters warm = chain.counters();
            EXPECT_EQ(warm.recordings, 1u);
            EXPECT_EQ(warm.allocations, created.allocations);
            const int tokens = 20;
            for (int i = 0; i < tokens; ++i) {
                chain.set(SIEVE_PARAM_TEMPERATURE, 0.5 + 0.1 * i);  // per-token values: no re-record
                if (i % 5 == 0) chain.set(SIEVE_PARAM_SEED, i, i % rows);
                auto t = chain.sample(logits.data(), rows, vocab);
                for (auto& tok : t) ASSERT_EQ(tok.status, SIEVE_OK);
            }
            const sieve_counters after = chain.counters();
            auto [dispatches, passes] = chain.plan_figures(rows, vocab);
            EXPECT_EQ(after.recordings, warm.recordings) << samplers << " re-recorded in steady state";
            EXPECT_EQ(after.allocations, warm.allocations) << samplers << " allocated in steady state";
            // One submission a call; on a GPU's plan a second for a call
            // whose row needs the key levels (gpu_plan.hpp: KeyLevels::Apart).
            EXPECT_GE(after.submits, warm.submits + tokens);
            EXPECT_LE(after.submits, warm.submits + 2 * tokens);
            // Executed dispatches: at least the plan's minimum per token (more
            // when a row needs further selection levels).
            EXPECT_GE(after.dispatches, warm.dispatches + static_cast<uint64_t>(tokens) * dispatches);
            EXPECT_GE(after.row_passes - warm.row_passes, static_cast<uint64_t>(tokens) * rows * passes);
            std::printf("%s vocab %d: %u dispatches, >= %u row passes per token\n", samplers, vocab, dispatches, passes);
        }
    }
}

TEST(GpuSteadyState, PlanFigures) {
    auto gpu = sieve_test::gpu_context();
    sieve::Chain dist(gpu, sieve_test::chain_desc("temperature;dist", 1, 262144, 0.8f, 1));
    sieve::Chain greedy(gpu, sieve_test::chain_desc("greedy", 1, 262144, 0.8f, 1));
    // A row that fits the candidate buffer: one dispatch reads it once.
    const int32_t cap = static_cast<int32_t>(gpu.device_info().candidate_capacity);
    ASSERT_GE(cap, 64);
    EXPECT_EQ(dist.plan_figures(1, cap), std::make_pair(1u, 1u));
    EXPECT_EQ(greedy.plan_figures(1, cap), std::make_pair(1u, 1u));
    EXPECT_EQ(dist.plan_figures(1, cap + 1), std::make_pair(3u, 3u));
    // Greedy over a large row: row stats, whose last workgroup per row answers.
    EXPECT_EQ(greedy.plan_figures(1, 151936), std::make_pair(1u, 1u));
    // dist when level 0 resolves the draw: stats, level-0 histogram (its last
    // workgroup decides), gather (its last workgroup draws): three dispatches,
    // three row passes.
    EXPECT_EQ(dist.plan_figures(1, 151936), std::make_pair(3u, 3u));
}

// A new shape (rows, vocab) records once, then is reused.
TEST(GpuSteadyState, OneRecordingPerShape) {
    auto gpu = sieve_test::gpu_context();
    sieve::Chain chain(gpu, sieve_test::chain_desc("temperature;dist", 8, 5000, 0.8f, 1));
    auto logits = sieve_test::make_rows(Shape::Gaussian, 8, 5000, 1);
    for (int i = 0; i < 3; ++i) {
        chain.sample(logits.data(), 8, 5000);
        chain.sample(logits.data(), 3, 5000);
        chain.sample(logits.data(), 8, 4000);
    }
    EXPECT_EQ(chain.counters().recordings, 3u);
}

// The samplers acting on a call's rows are part of its recording
// (row_analysis.hpp: CallAnalysis): a call that switches XTC on, and one
// that switches every truncating sampler off (temperature;dist's plan),
// record once each; alternating among them then records and allocates
// nothing more.
TEST(GpuSteadyState, OneRecordingPerSetOfActingSamplers) {
    auto gpu = sieve_test::gpu_context();
    const int32_t rows = 2, vocab = 20000;
    auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 2);
    sieve::Chain chain(gpu, sieve_test::chain_desc("", rows, vocab, 0.8f, 1));  // llama.cpp's default chain
    const auto call = [&](int which) {
        chain.set(SIEVE_PARAM_XTC_PROBABILITY, which == 1 ? 0.5 : 0.0);
        chain.set(SIEVE_PARAM_TOP_K, which == 2 ? 0 : 40);
        chain.set(SIEVE_PARAM_TOP_P, which == 2 ? 1.0 : 0.95);
        chain.set(SIEVE_PARAM_MIN_P, which == 2 ? 0.0 : 0.05);
        for (const sieve_token& t : chain.sample(logits.data(), rows, vocab)) ASSERT_EQ(t.status, SIEVE_OK);
    };
    const sieve_counters created = chain.counters();
    for (int which = 0; which < 3; ++which) call(which);
    const sieve_counters warm = chain.counters();
    EXPECT_EQ(warm.recordings, created.recordings + 3) << "the defaults, XTC on, only the temperature";
    for (int i = 0; i < 9; ++i) call((i * 2) % 3);
    const sieve_counters after = chain.counters();
    EXPECT_EQ(after.recordings, warm.recordings);
    EXPECT_EQ(after.allocations, warm.allocations);
}

// On a CPU device a plan that reads each row more than once runs rows in groups
// whose logits stay in the cache (all passes of a group, then the next): more
// dispatches per call, the same results (the determinism tests compare batches
// of 256 with single rows). A plan that reads each row once (the collect pass)
// takes all rows in one grid, as a GPU does.
TEST(GpuSteadyState, RowGroupsOnCpuDevices) {
    auto gpu = sieve_test::gpu_context();
    sieve::Chain chain(gpu, sieve_test::chain_desc("temperature;dist", 64, 151936, 0.8f, 1));
    auto one = chain.plan_figures(1, 151936);
    auto many = chain.plan_figures(64, 151936);
    // Row groups are a CPU device's plan; under the gpu profile it records a GPU's.
    const sieve_device_info info = gpu.device_info();
    if (info.type == SIEVE_DEVICE_CPU && !(info.profile & SIEVE_PROFILE_GPU)) {
        EXPECT_GT(many.first, one.first) << "64 rows of 151936 do not fit one cache-sized group";
    } else {
        EXPECT_EQ(many.first, one.first) << "a GPU takes all rows in one grid";
    }
    EXPECT_EQ(many.second, one.second) << "row passes are per row";
    sieve::Chain once(gpu, sieve_test::chain_desc("", 64, 151936, 0.8f, 1));  // llama.cpp's default chain
    auto one_row = once.plan_figures(1, 151936);
    auto rows = once.plan_figures(64, 151936);
    EXPECT_EQ(one_row.second, 1u) << "the default chain reads each row once";
    EXPECT_EQ(rows.first, one_row.first) << "a plan reading each row once takes all rows in one grid";
}

} // namespace
