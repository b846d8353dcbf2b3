// Per-stage GPU times from timestamp queries (sieve_chain_set_profiling,
// sieve_chain_stage_times), and their bad input.
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using sieve_test::Shape;

TEST(Profiling, StageTimesFollowThePlan) {
    auto gpu = sieve_test::gpu_context();
    const int32_t vocab = 151936;
    auto logits = sieve_test::make_rows(Shape::Zipf, 1, vocab, 3);
    sieve::Chain chain(gpu, sieve_test::chain_desc("temperature;dist", 1, vocab, 0.8f, 9));
    chain.sample(logits.data(), 1, vocab);
    EXPECT_TRUE(chain.stage_times().empty()) << "no stage times without profiling";
    const uint64_t recordings = chain.counters().recordings;
    chain.set_profiling(true);
    auto token = chain.sample(logits.data(), 1, vocab);
    ASSERT_EQ(token[0].status, SIEVE_OK);
    auto stages = chain.stage_times();
    // row_stats, level 0, key levels 1..8 (launched only when needed), gather.
    ASSERT_EQ(stages.size(), 11u);
    EXPECT_STREQ(stages.front().stage, "row_stats");
    EXPECT_STREQ(stages[1].stage, "mass_histogram");
    EXPECT_EQ(stages[1].level, 0u);
    EXPECT_EQ(stages[9].level, 8u);
    EXPECT_STREQ(stages.back().stage, "gather");
    for (auto& s : stages) EXPECT_GE(s.gpu_us, 0.0) << s.stage;
    EXPECT_GT(stages.front().gpu_us, 0.0) << "a pass over 151936 logits takes time";
    EXPECT_EQ(chain.counters().recordings, recordings + 1) << "profiling records its own command buffer";
    chain.set_profiling(false);
    chain.sample(logits.data(), 1, vocab);
    EXPECT_EQ(chain.counters().recordings, recordings + 1) << "the unprofiled recording is reused";
}

TEST(Profiling, CpuBackendHasNoStages) {
    auto cpu = sieve_test::cpu_context();
    sieve::Chain chain(cpu, sieve_test::chain_desc("temperature;dist", 1, 100, 0.8f, 9));
    chain.set_profiling(true);
    auto logits = sieve_test::make_rows(Shape::Gaussian, 1, 100, 1);
    chain.sample(logits.data(), 1, 100);
    EXPECT_TRUE(chain.stage_times().empty());
}

TEST(BadInputProfiling, NullHandlesAndPointers) {
    EXPECT_TRUE(sieve_test::Fails(sieve_chain_set_profiling(nullptr, 1), SIEVE_ERROR_NULL_HANDLE, {"chain"}));
    uint32_t count = 7;
    EXPECT_TRUE(sieve_test::Fails(sieve_chain_stage_times(nullptr, nullptr, 0, &count), SIEVE_ERROR_NULL_HANDLE,
                                  {"chain"}));
    EXPECT_EQ(count, 7u) << "outputs are not written on failure";
    auto gpu = sieve_test::gpu_context();
    sieve::Chain chain(gpu, sieve_test::chain_desc("temperature;dist", 1, 100, 0.8f, 9));
    EXPECT_TRUE(sieve_test::Fails(sieve_chain_stage_times(chain.get(), nullptr, 0, nullptr),
                                  SIEVE_ERROR_INVALID_ARGUMENT, {"count"}));
    EXPECT_TRUE(sieve_test::Fails(sieve_chain_stage_times(chain.get(), nullptr, 4, &count),
                                  SIEVE_ERROR_INVALID_ARGUMENT, {"out"}));
    // The chain is still usable.
    auto logits = sieve_test::make_rows(Shape::Gaussian, 1, 100, 1);
    EXPECT_EQ(chain.sample(logits.data(), 1, 100)[0].status, SIEVE_OK);
}

TEST(BadInputContextOptions, LimitsBelowWhatTheShadersNeed) {
    sieve_context_options o;
    sieve_context_options_init(&o);
    o.max_shared_memory = 8192;
    sieve_context* ctx = reinterpret_cast<sieve_context*>(static_cast<uintptr_t>(0x10));
    EXPECT_TRUE(sieve_test::Fails(sieve_context_create(&o, &ctx), SIEVE_ERROR_INVALID_ARGUMENT,
                                  {"max_shared_memory", "16384"}));
    EXPECT_EQ(ctx, nullptr);
    o.max_shared_memory = 0;
    o.max_workgroup_size = 16;
    EXPECT_TRUE(sieve_test::Fails(sieve_context_create(&o, &ctx), SIEVE_ERROR_INVALID_ARGUMENT,
                                  {"max_workgroup_size", "32"}));
    EXPECT_EQ(ctx, nullptr);
    o.max_workgroup_size = 0;
    o.max_storage_buffer_range = (4u << 20) - 4;
    EXPECT_TRUE(sieve_test::Fails(sieve_context_create(&o, &ctx), SIEVE_ERROR_INVALID_ARGUMENT,
                                  {"max_storage_buffer_range", "4194304"}));
    EXPECT_EQ(ctx, nullptr);
    // The least cap is taken, and a cap above the device's changes nothing.
    for (uint64_t cap : {uint64_t{4u << 20}, uint64_t{1} << 40}) {
        o.max_storage_buffer_range = cap;
        ASSERT_EQ(sieve_context_create(&o, &ctx), SIEVE_OK) << sieve_last_error();
        sieve_device_info info{};
        ASSERT_EQ(sieve_context_device_info(ctx, &info), SIEVE_OK);
        const uint64_t device = sieve::devices()[info.index].max_storage_buffer_range;
        EXPECT_EQ(info.max_storage_buffer_range, std::min(cap, device));
        sieve_context_destroy(ctx);
        ctx = nullptr;
    }
}

} // namespace
