// Candidate export (issue 5, "Outputs"): a GPU prefix of the chain whose
// survivors go to the host for CPU samplers. Every row's candidates are the
// distribution the chain's draw would use (sieve_chain_distribution of that
// row, which the GPU-vs-twin tests hold to the twin), in canonical order, with
// logit = ln p; a capacity truncates to the most probable; a failed row has 0;
// no state changes.
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

enum class Where { Gpu, Cpu };

class Candidates : public testing::TestWithParam<Where> {};

TEST_P(Candidates, EveryRowsSurvivorsAsItsDistribution) {
    sieve::Context ctx = GetParam() == Where::Gpu ? gpu_context() : cpu_context();
    constexpr int32_t kRows = 3;
    for (const char* samplers : {"top_k;top_p;min_p;temperature", "min_p;temperature"})
        for (int32_t vocab : {1000, 32000}) {
            SCOPED_TRACE(std::string(samplers) + ", vocab " + std::to_string(vocab));
            sieve::Chain chain(ctx, chain_desc(samplers, kRows, vocab, 0.7f, 4));
            const auto logits = make_rows(Shape::Zipf, kRows, vocab, 31);
            sieve_logits in;
            sieve_logits_init(&in, logits.data(), SIEVE_DTYPE_F32, kRows, vocab);
            constexpr int32_t kCap = 64;
            std::vector<sieve_candidate> out(kRows * kCap);
            std::vector<int32_t> counts(kRows, -1);
            ASSERT_EQ(sieve_chain_candidates(chain.get(), &in, out.data(), kCap, counts.data()), SIEVE_OK)
                << sieve_last_error();
            for (int32_t r = 0; r < kRows; ++r) {
                SCOPED_TRACE("row " + std::to_string(r));
                const auto want = chain.distribution(logits.data(), kRows, vocab, r);
                ASSERT_EQ(counts[static_cast<size_t>(r)], static_cast<int32_t>(want.size()));
                ASSERT_GT(counts[static_cast<size_t>(r)], 0);
                for (int32_t i = 0; i < std::min(kCap, counts[static_cast<size_t>(r)]); ++i) {
                    const sieve_candidate& c = out[static_cast<size_t>(r) * kCap + i];
                    EXPECT_EQ(c.id, want[static_cast<size_t>(i)].id) << "entry " << i;
                    EXPECT_EQ(c.p, want[static_cast<size_t>(i)].p) << "entry " << i;
                    EXPECT_FLOAT_EQ(c.logit, std::log(c.p));
                }
            }
            EXPECT_EQ(chain.counters().recordings > 0, GetParam() == Where::Gpu);
            // No state changed: the next sample is at step 0.
            EXPECT_EQ(chain.sample(logits.data(), kRows, vocab)[0].step, 0u);
        }
}

TEST_P(Candidates, FailedRowAndBadInput) {
    sieve::Context ctx = GetParam() == Where::Gpu ? gpu_context() : cpu_context();
    constexpr int32_t kRows = 2, kVocab = 1000;
    sieve::Chain chain(ctx, chain_desc("top_k;temperature", kRows, kVocab, 0.7f, 4));
    auto logits = make_rows(Shape::Zipf, kRows, kVocab, 9);
    logits[3] = std::numeric_limits<float>::quiet_NaN();  // row 0 fails
    sieve_logits in;
    sieve_logits_init(&in, logits.data(), SIEVE_DTYPE_F32, kRows, kVocab);
    std::vector<sieve_candidate> out(kRows * 8);
    std::vector<int32_t> counts(kRows, -1);
    EXPECT_TRUE(Fails(sieve_chain_candidates(chain.get(), &in, out.data(), 8, counts.data()),
                      SIEVE_ERROR_NON_FINITE_LOGIT, {"row 0"}));
    EXPECT_EQ(counts[0], 0);
    EXPECT_EQ(counts[1], 40) << "top-k 40 survivors of the good row";
    EXPECT_TRUE(Fails(sieve_chain_candidates(chain.get(), &in, out.data(), 8, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"counts"}));
    EXPECT_TRUE(Fails(sieve_chain_candidates(chain.get(), &in, out.data(), -1, counts.data()),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"negative capacity"}));
    EXPECT_TRUE(Fails(sieve_chain_candidates(chain.get(), &in, nullptr, 8, counts.data()), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"out"}));
    EXPECT_TRUE(Fails(sieve_chain_candidates(chain.get(), nullptr, out.data(), 8, counts.data()),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"logits"}));
    EXPECT_TRUE(Fails(sieve_chain_candidates(nullptr, &in, out.data(), 8, counts.data()), SIEVE_ERROR_NULL_HANDLE,
                      {"chain"}));
    // Capacity 0: counts only.
    logits[3] = 1.0f;
    ASSERT_EQ(sieve_chain_candidates(chain.get(), &in, nullptr, 0, counts.data()), SIEVE_OK) << sieve_last_error();
    EXPECT_EQ(counts[0], 40);
}

INSTANTIATE_TEST_SUITE_P(Backends, Candidates, testing::Values(Where::Gpu, Where::Cpu),
                         [](const testing::TestParamInfo<Where>& info) {
                             return info.param == Where::Gpu ? std::string("Gpu") : std::string("Cpu");
                         });

} // namespace
