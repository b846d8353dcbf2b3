// Per-stage GPU times from timestamp queries (sieve_chain_set_profiling,
// sieve_chain_stage_times), and their bad input.
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

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
    // row_stats, level 0, key levels 1..8 (launched only when needed), gather
    // on a CPU device's plan; a GPU's plan (any device under SIEVE_PROFILE=gpu)
    // keeps the key levels apart, in later submissions this zipf row does
    // not need (plan.md, KeyLevels).
    const sieve_device_info info = gpu.device_info();
    const bool levels_inline = info.type == SIEVE_DEVICE_CPU && !(info.profile & SIEVE_PROFILE_GPU);
    ASSERT_EQ(stages.size(), levels_inline ? 11u : 3u);
    EXPECT_STREQ(stages.front().stage, "row_stats");
    EXPECT_STREQ(stages[1].stage, "mass_histogram");
    EXPECT_EQ(stages[1].level, 0u);
    if (levels_inline) {
        EXPECT_EQ(stages[9].level, 8u);
    }
    EXPECT_STREQ(stages.back().stage, "gather");
    for (auto& s : stages) EXPECT_GE(s.gpu_us, 0.0) << s.stage;
    EXPECT_GT(stages.front().gpu_us, 0.0) << "a pass over 151936 logits takes time";
    EXPECT_EQ(chain.counters().recordings, recordings + 1) << "profiling records its own command buffer";
    chain.set_profiling(false);
    chain.sample(logits.data(), 1, vocab);
    EXPECT_EQ(chain.counters().recordings, recordings + 1) << "the unprofiled recording is reused";
}

// The call's wall time split at the GPU's first and last command of the
// call's command buffer (sieve_chain_call_timing). With the device's clock on
// the host's (calibrated), the three parts add up to the wall time within the
// calibration's deviation, and neither host part is negative beyond it.
TEST(Profiling, CallTimingSplitsTheWallTimeAtTheGpu) {
    auto gpu = sieve_test::gpu_context();
    const int32_t vocab = 151936;
    auto logits = sieve_test::make_rows(Shape::Zipf, 1, vocab, 3);
    sieve::Chain chain(gpu, sieve_test::chain_desc("top_k;top_p;min_p;temperature;dist", 1, vocab, 0.8f, 9));
    sieve_call_timing t{};
    EXPECT_TRUE(sieve_test::Fails(sieve_chain_call_timing(chain.get(), &t), SIEVE_ERROR_INVALID_ARGUMENT,
                                  {"no profiled call"}));
    chain.sample(logits.data(), 1, vocab);
    EXPECT_TRUE(sieve_test::Fails(sieve_chain_call_timing(chain.get(), &t), SIEVE_ERROR_INVALID_ARGUMENT,
                                  {"no profiled call"}))
        << "a call without profiling is not timed";
    chain.set_profiling(true);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(chain.sample(logits.data(), 1, vocab)[0].status, SIEVE_OK);
        t = chain.call_timing();
        double stages = 0;
        for (const sieve_stage_time& s : chain.stage_times()) stages += s.gpu_us;
        EXPECT_GT(t.gpu_span_us, 0.0);
        EXPECT_GE(t.gpu_span_us, stages * 0.999) << "the span holds every stage";
        EXPECT_GE(t.wall_us, t.gpu_span_us);
        if (!t.calibrated) {
            EXPECT_EQ(t.submit_to_gpu_us, 0.0);
            EXPECT_EQ(t.gpu_to_host_us, 0.0);
            continue;
        }
        const double slack = t.deviation_us + 1.0;
        EXPECT_GE(t.submit_to_gpu_us, -slack);
        EXPECT_GE(t.gpu_to_host_us, -slack);
        EXPECT_NEAR(t.submit_to_gpu_us + t.gpu_span_us + t.gpu_to_host_us, t.wall_us, slack);
    }
    std::cout << "call timing: wall " << t.wall_us << " us = submit to GPU " << t.submit_to_gpu_us << " + GPU span "
              << t.gpu_span_us << " + GPU to host " << t.gpu_to_host_us << " (calibrated " << t.calibrated
              << ", deviation " << t.deviation_us << " us)\n";
    // Turned off and on again, the old timing is not reported as the new one's.
    chain.set_profiling(false);
    chain.set_profiling(true);
    EXPECT_TRUE(sieve_test::Fails(sieve_chain_call_timing(chain.get(), &t), SIEVE_ERROR_INVALID_ARGUMENT,
                                  {"no profiled call"}));
}

TEST(Profiling, CpuBackendHasNoStages) {
    auto cpu = sieve_test::cpu_context();
    sieve::Chain chain(cpu, sieve_test::chain_desc("temperature;dist", 1, 100, 0.8f, 9));
    chain.set_profiling(true);
    auto logits = sieve_test::make_rows(Shape::Gaussian, 1, 100, 1);
    chain.sample(logits.data(), 1, 100);
    EXPECT_TRUE(chain.stage_times().empty());
    sieve_call_timing t{};
    EXPECT_TRUE(sieve_test::Fails(sieve_chain_call_timing(chain.get(), &t), SIEVE_ERROR_INVALID_ARGUMENT, {"no device"}));
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
    sieve_call_timing timing{};
    EXPECT_TRUE(sieve_test::Fails(sieve_chain_call_timing(nullptr, &timing), SIEVE_ERROR_NULL_HANDLE, {"chain"}));
    EXPECT_TRUE(sieve_test::Fails(sieve_chain_call_timing(chain.get(), nullptr), SIEVE_ERROR_INVALID_ARGUMENT, {"out"}));
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
