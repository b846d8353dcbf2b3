// The collect tail runs only the samplers that act on some row of the call
// (engine/vulkan/row_analysis.cpp: CallAnalysis::chain_ops): one that every
// row's parameters switch off is a no-op in llama.cpp, so leaving it out of
// the call's pipeline must change no token, and the pipeline built for the
// call must hold the others alone. A call where only the temperature acts
// takes no collect pass at all (CallAnalysis::collect): temperature;dist's plan.
#include "pipeline_stats_file.hpp"
#include "test_support.hpp"

#include <gpu_layout.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

namespace {

using namespace sieve::glsl;
using sieve_test::Shape;

// llama.cpp's default chain, whose defaults leave top-n-sigma, typical and XTC off.
const char* const kFull = "top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature;dist";
const char* const kActing = "top_k;top_p;min_p;temperature;dist";

// The CHAIN_OPS of the collect-stage pipelines a context built while
// SIEVE_PIPELINE_STATS named `path`.
std::set<uint64_t> collect_chain_ops(const std::string& path) {
    std::set<uint64_t> out;
    for (const auto& j : sieve_test::read_pipeline_stats(path)) {
        const std::string stage = j.at("stage");
        if (stage == "collect" || stage == "collect_plain" || stage == "collect_tail")
            out.insert(j.at("specialization").at("chain_ops").get<uint64_t>());
    }
    return out;
}

TEST(LiveOps, SamplersOffInEveryRowAreLeftOutOfTheTailsPipeline) {
    const std::string path = sieve_test::pipeline_stats_path("sieve_live_ops");
    std::remove(path.c_str());
    const int32_t rows = 2, vocab = 20000;
    const auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 3);
    const uint64_t acting = OP_TOP_K | OP_TOP_P << 4 | OP_MIN_P << 8 | uint64_t{OP_TEMPERATURE} << 12;
    const uint64_t with_xtc =
        OP_TOP_K | OP_TOP_P << 4 | OP_MIN_P << 8 | uint64_t{OP_XTC} << 12 | uint64_t{OP_TEMPERATURE} << 16;
    std::set<uint64_t> defaults, xtc_on_one_row;
    {
        sieve_test::ScopedEnv env("SIEVE_PIPELINE_STATS", path.c_str());
        const sieve::Context ctx = sieve_test::gpu_context();
        sieve::Chain chain(ctx, sieve_test::chain_desc(kFull, rows, vocab, 0.8f, 7));
        for (const sieve_token& t : chain.sample(logits.data(), rows, vocab)) EXPECT_EQ(t.status, SIEVE_OK);
        defaults = collect_chain_ops(path);
        chain.set(SIEVE_PARAM_XTC_PROBABILITY, 0.5, 1);  // the second row only
        for (const sieve_token& t : chain.sample(logits.data(), rows, vocab)) EXPECT_EQ(t.status, SIEVE_OK);
        xtc_on_one_row = collect_chain_ops(path);
    }
    std::remove(path.c_str());
    EXPECT_EQ(defaults, std::set<uint64_t>{acting}) << "top-n-sigma, typical and XTC are off in every row";
    EXPECT_EQ(xtc_on_one_row, (std::set<uint64_t>{acting, with_xtc})) << "XTC acts on a row: the next call runs it";
}

// The full chain at its defaults draws what the chain of its acting samplers
// draws, token for token, probability for probability, call after call
// (shapes whose rows go through the chunks and through the small variant).
TEST(LiveOps, TokensAreThoseOfTheChainWithoutTheSamplersThatAreOff) {
    const sieve::Context ctx = sieve_test::gpu_context();
    const int32_t rows = 3;
    for (const int32_t vocab : {1000, 20000}) {
        for (const Shape shape : {Shape::Zipf, Shape::Gaussian, Shape::Ties}) {
            sieve::Chain full(ctx, sieve_test::chain_desc(kFull, rows, vocab, 0.8f, 11));
            sieve::Chain acting(ctx, sieve_test::chain_desc(kActing, rows, vocab, 0.8f, 11));
            for (uint32_t call = 0; call < 4; ++call) {
                SCOPED_TRACE(testing::Message() << "vocab " << vocab << ", shape " << sieve_test::shape_name(shape)
                                                << ", call " << call);
                const auto logits = sieve_test::make_rows(shape, rows, vocab, 100 + call);
                const auto a = full.sample(logits.data(), rows, vocab);
                const auto b = acting.sample(logits.data(), rows, vocab);
                for (int32_t r = 0; r < rows; ++r) {
                    EXPECT_EQ(a[r].status, SIEVE_OK);
                    EXPECT_EQ(a[r].status, b[r].status);
                    EXPECT_EQ(a[r].token, b[r].token) << "row " << r;
                    EXPECT_EQ(a[r].p, b[r].p) << "row " << r;
                    EXPECT_EQ(a[r].step, b[r].step) << "row " << r;
                }
            }
        }
    }
}

// A call where every sampler but the temperature is off (top-k 0, top-p 1,
// min-p 0 and the default chain's off ones) draws as temperature;dist does,
// token for token, through the same plan (its dispatches and row passes), and
// never sends a row to the CPU twin; the next call with top-k on takes the
// collect pass again.
TEST(LiveOps, OnlyATemperatureActingTakesThePlanOfRowsWithoutTruncation) {
    const sieve::Context ctx = sieve_test::gpu_context();
    const int32_t rows = 2;
    for (const int32_t vocab : {1000, 151936}) {
        sieve::Chain full(ctx, sieve_test::chain_desc(kFull, rows, vocab, 0.8f, 5));
        sieve::Chain plain(ctx, sieve_test::chain_desc("temperature;dist", rows, vocab, 0.8f, 5));
        full.set(SIEVE_PARAM_TOP_K, 0);
        full.set(SIEVE_PARAM_TOP_P, 1.0);
        full.set(SIEVE_PARAM_MIN_P, 0.0);
        for (uint32_t call = 0; call < 3; ++call) {
            SCOPED_TRACE(testing::Message() << "vocab " << vocab << ", call " << call);
            const auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 40 + call);
            const sieve_counters full_before = full.counters(), plain_before = plain.counters();
            const auto a = full.sample(logits.data(), rows, vocab);
            const auto b = plain.sample(logits.data(), rows, vocab);
            const sieve_counters full_after = full.counters(), plain_after = plain.counters();
            for (int32_t r = 0; r < rows; ++r) {
                EXPECT_EQ(a[r].status, SIEVE_OK);
                EXPECT_EQ(a[r].token, b[r].token) << "row " << r;
                EXPECT_EQ(a[r].p, b[r].p) << "row " << r;
            }
            EXPECT_EQ(full_after.dispatches - full_before.dispatches, plain_after.dispatches - plain_before.dispatches);
            EXPECT_EQ(full_after.row_passes - full_before.row_passes, plain_after.row_passes - plain_before.row_passes);
            EXPECT_EQ(full_after.cpu_fallback_rows, full_before.cpu_fallback_rows);
        }
        // top-k on in one row: the collect pass, a plan of its own (on a big
        // row: one dispatch, two on a CPU device's plan, against three; a
        // small row's plans are one dispatch either way).
        if (vocab <= 1000) continue;
        full.set(SIEVE_PARAM_TOP_K, 40, 1);
        const auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 50);
        const auto before = full.counters();
        for (const sieve_token& t : full.sample(logits.data(), rows, vocab)) EXPECT_EQ(t.status, SIEVE_OK);
        const auto after_full = full.counters();
        const auto plain_before = plain.counters();
        plain.sample(logits.data(), rows, vocab);
        const auto plain_after = plain.counters();
        EXPECT_NE(after_full.dispatches - before.dispatches, plain_after.dispatches - plain_before.dispatches)
            << "vocab " << vocab << ": top-k acts on a row, the collect pass's plan";
    }
}

} // namespace
