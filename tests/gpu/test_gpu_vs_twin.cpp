// Every GPU path against the CPU twin on seeded rows of several shapes and sizes,
// several rows per call and several tokens per row (the GPU advances each row's
// step itself), on the full device and under the constrained profile.
//
// Agreement rules (docs/contracts.md, "Determinism"): the status always agrees;
// the probability of the drawn token agrees within float tolerance; the token
// agrees except where the uniform falls within 1e-6 of a CDF boundary of the
// twin's double-precision distribution (counted, and required to be rare).
#include "reference/reference.hpp"
#include "test_support.hpp"
#include "twin_compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

namespace {

using sieve_test::Profile;
using sieve_test::Shape;

struct Case {
    std::string chain;
    Shape shape;
    int32_t vocab;
    int32_t rows;
    float temperature;
    Profile profile;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
    const Case& c = info.param;
    std::string chain = c.chain;
    for (auto& ch : chain)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    std::string t = c.temperature < 0 ? "neg" : std::to_string(static_cast<int>(c.temperature * 100));
    return chain + "_" + sieve_test::shape_name(c.shape) + "_v" + std::to_string(c.vocab) + "_r" +
           std::to_string(c.rows) + "_t" + t + (c.profile == Profile::Constrained ? "_constrained" : c.profile == Profile::Wide ? "_wide" : "");
}

class GpuVsTwin : public ::testing::TestWithParam<Case> {};

TEST_P(GpuVsTwin, TokensAndProbabilitiesAgree) {
    const Case& c = GetParam();
    const int tokens = c.vocab >= 100000 ? 3 : 6;
    auto gpu = sieve_test::gpu_context(c.profile);
    auto desc = sieve_test::chain_desc(c.chain, c.rows, c.vocab, c.temperature, 1000u + c.vocab);
    sieve::Chain chain(gpu, desc);
    for (int32_t r = 0; r < c.rows; ++r) chain.set(SIEVE_PARAM_SEED, 77u * r + c.vocab, r);

    const auto kinds = sieve_test::twin_chain(c.chain);
    ASSERT_FALSE(kinds.empty());

    int mismatches = 0;
    sieve_test::twin::Tally tally;
    for (int step = 0; step < tokens; ++step) {
        auto logits = sieve_test::make_rows(c.shape, c.rows, c.vocab, 31u * step + 7u);
        auto got = chain.sample(logits.data(), c.rows, c.vocab);
        for (int32_t r = 0; r < c.rows; ++r) {
            const float* row = logits.data() + static_cast<size_t>(r) * c.vocab;
            sieve::ref::RowParams params;
            params.temperature = c.temperature;
            params.seed = 77u * r + c.vocab;
            auto want = sieve::ref::sample_row(kinds, row, c.vocab, params, static_cast<uint32_t>(step));
            SCOPED_TRACE("step " + std::to_string(step) + " row " + std::to_string(r));
            ASSERT_EQ(got[r].status, want.status) << want.message;
            EXPECT_EQ(got[r].step, static_cast<uint32_t>(step));
            EXPECT_EQ(got[r].seed, params.seed);
            if (want.status != SIEVE_OK) continue;
            ASSERT_GE(got[r].row_passes, 1u);
            if (got[r].token != want.token) {
                ++mismatches;
                sieve_test::twin::compare_token(got[r], sieve_test::twin::Row{kinds, row, c.vocab, params},
                                                static_cast<uint32_t>(step), &tally);
                continue;
            }
            EXPECT_NEAR(got[r].p, want.p, 1e-5f + 1e-4f * want.p);
            if (want.p > 1e-30f) {
                EXPECT_NEAR(got[r].logprob, want.logprob, 1e-3f);
            }
        }
    }
    if (mismatches > 0)
        std::printf("token mismatches: %d at a CDF boundary, %d over near-ties\n", tally.token_near_cdf_boundary,
                    tally.token_near_tie_order);
    EXPECT_LE(mismatches, 1);
}

std::vector<Case> cases() {
    std::vector<Case> out;
    const Shape shapes[] = {Shape::Gaussian, Shape::Zipf, Shape::Peaked, Shape::Masked, Shape::Ties};
    // 1..1024: the one-dispatch path (the whole row fits the candidate buffer);
    // above: row stats, radix levels by mass, gather, finalize.
    const int32_t vocabs[] = {1, 2, 7, 100, 1000, 1024, 2048, 2049, 5000, 32000, 151936, 262144};
    for (Shape s : shapes)
        for (int32_t v : vocabs) {
            if (v >= 151936 && (s == Shape::Peaked || s == Shape::Gaussian)) continue;  // keep the suite quick
            out.push_back({"temperature;dist", s, v, v >= 100000 ? 2 : 3, 0.8f, Profile::Full});
        }
    for (int32_t v : {1, 3, 1000, 5000, 151936}) {
        out.push_back({"greedy", Shape::Ties, v, 3, 0.8f, Profile::Full});
        out.push_back({"temperature;dist", Shape::Ties, v, 3, 0.0f, Profile::Full});   // greedy masking
        out.push_back({"temperature;dist", Shape::Zipf, v, 3, -1.0f, Profile::Full});  // negative: same rule
        out.push_back({"dist", Shape::Zipf, v, 2, 0.8f, Profile::Full});               // no temperature: T = 1
        out.push_back({"temperature;dist", Shape::Gaussian, v, 2, 1.7f, Profile::Full});
    }
    out.push_back({"temperature;temperature;dist", Shape::Gaussian, 3000, 2, 1.3f, Profile::Full});
    // The constrained profile (16 KiB shared memory, 128-invocation workgroups,
    // no optional features) changes the candidate capacity and the chunking.
    for (Shape s : shapes)
        for (int32_t v : {1, 500, 512, 513, 4096, 40000})
            out.push_back({"temperature;dist", s, v, 2, 0.8f, Profile::Constrained});
    out.push_back({"greedy", Shape::Ties, 40000, 2, 0.8f, Profile::Constrained});
    // 256-invocation workgroups, as GPUs run the shaders.
    for (Shape s : {Shape::Zipf, Shape::Ties, Shape::Masked})
        for (int32_t v : {1000, 2048, 5000, 151936})
            out.push_back({"temperature;dist", s, v, 2, 0.8f, Profile::Wide});
    out.push_back({"greedy", Shape::Gaussian, 151936, 2, 0.8f, Profile::Wide});
    return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuVsTwin, ::testing::ValuesIn(cases()), case_name);

// Rows whose whole vocabulary shares a handful of values: after four radix
// levels more candidates than fit the buffer share one exact key, and the draw
// picks among them by id (the tie path of finalize.comp).
TEST(GpuVsTwinTies, HugeTieGroupsPickByLowerId) {
    for (auto profile : {Profile::Full, Profile::Constrained}) {
        auto gpu = sieve_test::gpu_context(profile);
        const int32_t vocab = 70000;
        std::vector<float> logits(vocab);
        for (int32_t i = 0; i < vocab; ++i) logits[i] = (i % 3 == 0) ? 1.0f : -2.0f;  // 23334 ties at the top
        auto desc = sieve_test::chain_desc("temperature;dist", 1, vocab, 1.0f, 5);
        sieve::Chain chain(gpu, desc);
        const auto kinds = sieve_test::twin_chain("temperature;dist");
        ASSERT_FALSE(kinds.empty());
        for (uint32_t step = 0; step < 12; ++step) {
            auto got = chain.sample(logits.data(), 1, vocab);
            sieve::ref::RowParams params;
            params.temperature = 1.0f;
            params.seed = 5;
            auto want = sieve::ref::sample_row(kinds, logits.data(), vocab, params, step);
            ASSERT_EQ(got[0].status, SIEVE_OK) << sieve_last_error();
            EXPECT_EQ(got[0].token, want.token) << "step " << step;
            EXPECT_NEAR(got[0].p, want.p, 1e-6f);
        }
    }
}

// A division by the temperature can make two different logits equal; the
// pair then takes canonical order again, the lower id first, although the
// larger logit came first before. Here the two tokens hold nearly all the mass
// and the larger logit has the higher id, so a draw that kept the order from
// before the division would pick the other token whenever the uniform falls in
// the first half. No near-tie allowance: the twin's order is exact.
TEST(GpuVsTwinTies, TiesTheTemperatureMakesTakeTheLowerIdFirst) {
    const float t = 1.7f;
    float low = 1.99f;  // the first float whose quotient equals its successor's
    while (!(low / t == std::nextafter(low, 3.0f) / t)) low = std::nextafter(low, 3.0f);
    const float high = std::nextafter(low, 3.0f);
    ASSERT_LT(low, 2.0f);
    ASSERT_EQ(low / t, high / t);
    const int32_t vocab = 5000;
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (int32_t i = 0; i < vocab; ++i) logits[static_cast<size_t>(i)] = -40.0f - 0.001f * static_cast<float>(i % 97);
    logits[1200] = low;
    logits[3700] = high;  // first before the division, second after it
    for (const char* text : {"top_k;temperature;dist", "top_k;top_p;min_p;temperature;dist"}) {
        SCOPED_TRACE(text);
        auto gpu = sieve_test::gpu_context();
        sieve::Chain chain(gpu, sieve_test::chain_desc(text, 1, vocab, t, 11));
        const auto kinds = sieve_test::twin_chain(text);
        sieve::ref::RowParams params;
        params.temperature = t;
        params.seed = 11;
        int first_half = 0;
        for (uint32_t step = 0; step < 16; ++step) {
            const auto got = chain.sample(logits.data(), 1, vocab);
            const auto want = sieve::ref::sample_row(kinds, logits.data(), vocab, params, step);
            ASSERT_EQ(got[0].status, SIEVE_OK) << sieve_last_error();
            ASSERT_EQ(want.status, SIEVE_OK) << want.message;
            EXPECT_EQ(got[0].token, want.token) << "step " << step;
            EXPECT_NEAR(got[0].p, want.p, 1e-6f);
            first_half += want.token == 1200;
        }
        // Both orders are exercised: the test can tell them apart.
        EXPECT_GT(first_half, 0);
        EXPECT_LT(first_half, 16);
    }
}

// row_stats reads rows of whole vec4s four logits at a time and a chunk's
// unaligned ends one by one: at vocab 5004 two chunks split at 2502, inside a
// vec4. The maximum at each position around the split and the row's ends is
// found (greedy), and so are the row's minimum (dist's level 0 range) and
// its finite count (a lone finite logit elsewhere).
TEST(GpuRowStats, UnalignedChunkEndsAreRead) {
    auto gpu = sieve_test::gpu_context();
    const int32_t vocab = 5004;
    auto greedy = sieve::Chain(gpu, sieve_test::chain_desc("greedy", 1, vocab, 1.0f, 3));
    auto dist = sieve::Chain(gpu, sieve_test::chain_desc("temperature;dist", 1, vocab, 1.0f, 3));
    const auto kinds = sieve_test::twin_chain("temperature;dist");
    ASSERT_FALSE(kinds.empty());
    const float inf = std::numeric_limits<float>::infinity();
    uint32_t step = 0;
    for (int32_t at : {0, 1, 2, 3, 2498, 2499, 2500, 2501, 2502, 2503, 2504, 2505, 5000, 5001, 5002, 5003}) {
        SCOPED_TRACE("position " + std::to_string(at));
        std::vector<float> row(static_cast<size_t>(vocab));
        for (int32_t i = 0; i < vocab; ++i) row[static_cast<size_t>(i)] = -0.001f * static_cast<float>(i % 997);
        row[static_cast<size_t>(at)] = 4.0f;
        EXPECT_EQ(greedy.sample(row.data(), 1, vocab)[0].token, at);
        // Everything masked but `at`: one finite logit, the draw must take it.
        std::vector<float> lone(static_cast<size_t>(vocab), -inf);
        lone[static_cast<size_t>(at)] = -3.0f;
        auto got = dist.sample(lone.data(), 1, vocab);
        ASSERT_EQ(got[0].status, SIEVE_OK) << sieve_last_error();
        EXPECT_EQ(got[0].token, at);
        // The minimum at `at` sets level 0's range: the draw still agrees with the twin.
        row[static_cast<size_t>(at)] = -30.0f;
        got = dist.sample(row.data(), 1, vocab);
        sieve::ref::RowParams params;
        params.temperature = 1.0f;
        params.seed = 3;
        auto want = sieve::ref::sample_row(kinds, row.data(), vocab, params, step + 1);
        ASSERT_EQ(got[0].status, SIEVE_OK) << sieve_last_error();
        EXPECT_EQ(got[0].token, want.token);
        EXPECT_NEAR(got[0].p, want.p, 1e-5f);
        step += 2;
    }
}

// Edge rows: vocab 1, all -inf but one, huge and tiny logits.
TEST(GpuVsTwinEdges, EdgeRows) {
    auto gpu = sieve_test::gpu_context();
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<std::vector<float>> rows = {
        {3.5f},
        {-inf, -inf, 2.0f, -inf},
        {1e37f, -1e37f, 9e36f, 1e37f},
        {1e-38f, -1e-38f, 0.0f, -0.0f, 1e-45f},
        {-3e38f, 3e38f},
    };
    // A large row that is all -inf but one.
    std::vector<float> big(50000, -inf);
    big[31337] = -5.0f;
    rows.push_back(big);
    const auto kinds = sieve_test::twin_chain("temperature;dist");
    ASSERT_FALSE(kinds.empty());
    for (float t : {1.0f, 0.8f, 0.0f}) {
        for (auto& row : rows) {
            const int32_t v = static_cast<int32_t>(row.size());
            auto desc = sieve_test::chain_desc("temperature;dist", 1, v, t, 99);
            sieve::Chain chain(gpu, desc);
            for (uint32_t step = 0; step < 4; ++step) {
                auto got = chain.sample(row.data(), 1, v);
                sieve::ref::RowParams params;
                params.temperature = t;
                params.seed = 99;
                auto want = sieve::ref::sample_row(kinds, row.data(), v, params, step);
                SCOPED_TRACE("vocab " + std::to_string(v) + " t " + std::to_string(t));
                ASSERT_EQ(got[0].status, want.status) << want.message;
                if (want.status != SIEVE_OK) continue;
                EXPECT_EQ(got[0].token, want.token);
                EXPECT_NEAR(got[0].p, want.p, 1e-5f);
            }
        }
    }
}

// The final distribution (sieve_chain_distribution, `--dump-dist`) computed on
// the GPU equals the twin's, in canonical order.
TEST(GpuVsTwinDistribution, FinalDistributionAgrees) {
    auto gpu = sieve_test::gpu_context();
    for (int32_t v : {5, 1000, 5000, 32000}) {
        for (float t : {0.7f, 1.0f, 0.0f}) {
            for (Shape s : {Shape::Zipf, Shape::Ties, Shape::Masked}) {
                auto logits = sieve_test::make_rows(s, 2, v, 11);
                auto desc = sieve_test::chain_desc("temperature;dist", 2, v, t, 1);
                sieve::Chain chain(gpu, desc);
                auto got = chain.distribution(logits.data(), 2, v, 1);
                const auto kinds = sieve_test::twin_chain("temperature;dist");
                ASSERT_FALSE(kinds.empty());
                std::string message;
                sieve::ref::RowParams params;
                params.temperature = t;
                std::vector<sieve::ref::Weighted> want;
                ASSERT_EQ(sieve::ref::row_distribution(kinds, logits.data() + v, v, params, &want, &message), SIEVE_OK);
                SCOPED_TRACE("vocab " + std::to_string(v) + " t " + std::to_string(t) + " " + sieve_test::shape_name(s));
                ASSERT_EQ(got.size(), want.size());
                double sum = 0;
                for (size_t i = 0; i < got.size(); ++i) {
                    ASSERT_EQ(got[i].id, want[i].id) << "position " << i;
                    EXPECT_NEAR(got[i].p, want[i].p, 1e-6 + 1e-4 * want[i].p);
                    sum += got[i].p;
                }
                EXPECT_NEAR(sum, 1.0, 1e-4);
            }
        }
    }
}

// A row whose survivors reach past the candidate buffer with no cut bounding
// them (top-k off, XTC that does not fire) is listed whole: the GPU hands it
// to the twin, as its draw does (it listed only the buffer's 64 before: found
// by the llama.cpp parity tests, tests/llama).
TEST(GpuVsTwinDistribution, SurvivorsPastTheBufferAreAllListed) {
    auto gpu = sieve_test::gpu_context();
    const int32_t v = 32000;
    for (const char* samplers : {"top_k;dist", "xtc;dist", "top_k;temperature;dist"}) {
        auto logits = sieve_test::make_rows(Shape::Gaussian, 1, v, 5);
        sieve::Chain chain(gpu, sieve_test::chain_desc(samplers, 1, v, 0.8f, 1));
        chain.set(SIEVE_PARAM_TOP_K, 0);
        chain.set(SIEVE_PARAM_XTC_PROBABILITY, 1.0);
        chain.set(SIEVE_PARAM_XTC_THRESHOLD, 0.3);  // no token reaches p 0.3: XTC does not fire
        auto got = chain.distribution(logits.data(), 1, v, 0);
        sieve::ref::RowParams params;
        params.temperature = 0.8f;
        params.top_k = 0;
        params.xtc_probability = 1.0f;
        params.xtc_threshold = 0.3f;
        std::vector<sieve::ref::Weighted> want;
        std::string message;
        ASSERT_EQ(sieve::ref::row_distribution(sieve_test::twin_chain(samplers), logits.data(), v, params, &want, &message),
                  SIEVE_OK);
        SCOPED_TRACE(samplers);
        ASSERT_EQ(want.size(), static_cast<size_t>(v));
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); i += 997) EXPECT_EQ(got[i].id, want[i].id) << "position " << i;
    }
}

} // namespace
