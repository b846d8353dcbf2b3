// Raw log-probabilities (issue 5, "Outputs"): the drawn token's probability and
// log-probability under the model's raw distribution (softmax of the logits as
// given) and the top-n raw log-probabilities (OpenAI's top_logprobs, n <= 20).
// The twin (reference/logprobs.cpp) is checked against values computed here by
// hand; the GPU (raw_stats.comp) against the twin: the same top ids in the same
// order, every log-probability within 1e-4. Asking for logprobs changes no
// token.
#include "test_support.hpp"
#include "twin_compare.hpp"

#include "reference/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(LogprobsTwin, SmallRowByHand) {
    // logits {1, 3, 3, -inf, 0}: Z = e + 2 e^3 + 1; ties by lower id; -inf has
    // no probability and never lists.
    const float logits[] = {1.0f, 3.0f, 3.0f, -kInf, 0.0f};
    const double log_z = std::log(std::exp(1.0) + 2 * std::exp(3.0) + 1.0);
    const auto raw = sieve::ref::raw_logprobs(logits, 5, 0, 20);
    EXPECT_NEAR(raw.log_z, log_z, 1e-12);
    EXPECT_NEAR(raw.token_logprob, 1.0 - log_z, 1e-12);
    ASSERT_EQ(raw.top.size(), 4u) << "only the finite logits list";
    const int32_t ids[] = {1, 2, 0, 4};
    const double values[] = {3.0, 3.0, 1.0, 0.0};
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(raw.top[i].id, ids[i]);
        EXPECT_NEAR(raw.top[i].p, values[i] - log_z, 1e-12);
    }
    EXPECT_EQ(sieve::ref::raw_logprobs(logits, 5, 2, 2).top.size(), 2u);
    EXPECT_TRUE(sieve::ref::raw_logprobs(logits, 5, 2, 0).top.empty());
    EXPECT_EQ(sieve::ref::raw_logprobs(logits, 5, 3, 1).token_logprob, -INFINITY);
}

enum class Where { Gpu, Cpu };

struct Case {
    const char* samplers;
    int32_t vocab;
    Shape shape;
    int32_t n;
    bool penalties;  // a history and a repeat penalty (the row is not patched in place)
};

class Logprobs : public testing::TestWithParam<Where> {};

// Row r's logprobs after a call that drew `token` from `row`: the twin's
// (the same top ids in the same order, every log-probability within 1e-4).
void expect_twins_logprobs(const sieve::Chain& chain, int32_t r, const float* row, int32_t vocab, int32_t token,
                           int32_t n) {
    sieve_logprobs lp{};
    ASSERT_EQ(sieve_chain_logprobs(chain.get(), r, &lp), SIEVE_OK) << sieve_last_error();
    const auto want = sieve::ref::raw_logprobs(row, vocab, token, n);
    EXPECT_NEAR(lp.raw_logprob, want.token_logprob, 1e-4);
    EXPECT_NEAR(lp.raw_p, std::exp(want.token_logprob), 1e-4 * std::exp(want.token_logprob) + 1e-9);
    ASSERT_EQ(lp.n_top, static_cast<int32_t>(want.top.size()));
    for (int32_t j = 0; j < lp.n_top; ++j) {
        EXPECT_EQ(lp.top_ids[j], want.top[static_cast<size_t>(j)].id) << "entry " << j;
        EXPECT_NEAR(lp.top_logprobs[j], want.top[static_cast<size_t>(j)].p, 1e-4) << "entry " << j;
    }
}

TEST_P(Logprobs, MatchTheTwinAndChangeNoToken) {
    sieve::Context ctx = GetParam() == Where::Gpu ? gpu_context() : cpu_context();
    const Case cases[] = {
        {"", 1000, Shape::Zipf, 20, false},
        {"", 32000, Shape::Ties, 20, false},
        {"top_k;temperature", 32000, Shape::Masked, 5, false},
        {"greedy", 32000, Shape::Gaussian, 0, false},
        {"penalties;top_k;temperature", 32000, Shape::Zipf, 3, true},
        {"", 151936, Shape::Zipf, 20, false},
        // A plan without the collect pass: a GPU's splits the row into its
        // most chunks (64), whose lists fill every place the merge holds.
        {"temperature;dist", 151936, Shape::Zipf, 20, false},
        // Rows not of whole vec4s: every logit read one by one.
        {"top_k;temperature", 32003, Shape::Gaussian, 7, false},
    };
    constexpr int32_t kRows = 3;
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string("chain '") + c.samplers + "', vocab " + std::to_string(c.vocab) + ", " +
                     shape_name(c.shape) + ", n " + std::to_string(c.n));
        sieve::ChainDesc desc = chain_desc(c.samplers, kRows, c.vocab, 0.8f, 3);
        sieve::Chain with(ctx, desc), without(ctx, desc);
        ASSERT_EQ(sieve_chain_set_logprobs(with.get(), c.n), SIEVE_OK) << sieve_last_error();
        if (c.penalties) {
            // The history: each row's likeliest tokens at the first step, so
            // that the penalty moves its top-k there.
            const auto first = make_rows(c.shape, kRows, c.vocab, 17);
            for (sieve::Chain* ch : {&with, &without}) {
                ch->set(SIEVE_PARAM_REPEAT_PENALTY, 1.5);
                for (int32_t r = 0; r < kRows; ++r) {
                    const float* row = first.data() + static_cast<size_t>(r) * c.vocab;
                    std::vector<int32_t> ids(static_cast<size_t>(c.vocab));
                    std::iota(ids.begin(), ids.end(), 0);
                    std::partial_sort(ids.begin(), ids.begin() + 5, ids.end(),
                                      [&](int32_t x, int32_t y) { return row[x] > row[y]; });
                    ch->accept(r, {ids[0], ids[1], ids[2], ids[3], ids[4]});
                }
            }
        }
        for (uint32_t step = 0; step < 3; ++step) {
            const auto logits = make_rows(c.shape, kRows, c.vocab, 17 + step);
            if (c.penalties && GetParam() == Where::Gpu) {
                // A distribution call keeps the raw row too, and reads the
                // penalties from the history pass's table: the same
                // distribution as the chain whose rows are patched.
                for (int32_t r = 0; r < kRows; ++r) {
                    SCOPED_TRACE("distribution, step " + std::to_string(step) + ", row " + std::to_string(r));
                    const auto patched = sieve_test::twin::gpu_distribution(without, logits, kRows, c.vocab, r);
                    const auto kept = sieve_test::twin::gpu_distribution(with, logits, kRows, c.vocab, r);
                    ASSERT_EQ(kept.status, SIEVE_OK) << kept.message;
                    EXPECT_EQ(kept.p, patched.p);
                }
            }
            const auto got = with.sample(logits.data(), kRows, c.vocab);
            const auto plain = without.sample(logits.data(), kRows, c.vocab);
            for (int32_t r = 0; r < kRows; ++r) {
                SCOPED_TRACE("step " + std::to_string(step) + ", row " + std::to_string(r));
                const sieve_token& t = got[static_cast<size_t>(r)];
                ASSERT_EQ(t.status, SIEVE_OK);
                EXPECT_EQ(t.token, plain[static_cast<size_t>(r)].token) << "asking for logprobs changed the token";
                EXPECT_EQ(t.p, plain[static_cast<size_t>(r)].p);
                expect_twins_logprobs(with, r, logits.data() + static_cast<size_t>(r) * c.vocab, c.vocab, t.token, c.n);
            }
        }
    }
}

// A row of 18 finite logits among -inf, where a chunk's read takes logits
// one by one: the row's first and last two, and the two at each end of a
// chunk of 2374 (151936 / 64: the gpu profile's plan for this chain, and an
// H200's at one row), past or before its vec4-aligned middle. Every one is
// reported, in order, and counts in the sum.
TEST_P(Logprobs, EveryFiniteLogitCountsWhereverItLies) {
    sieve::Context ctx = GetParam() == Where::Gpu ? gpu_context() : cpu_context();
    constexpr int32_t kVocab = 151936, kChunk = kVocab / 64;
    std::vector<int32_t> ids = {0, 1, kVocab - 2, kVocab - 1};
    for (int32_t c : {0, 2, 30, 62}) ids.insert(ids.end(), {(c + 1) * kChunk - 2, (c + 1) * kChunk - 1});
    for (int32_t c : {1, 31, 63}) ids.insert(ids.end(), {c * kChunk, c * kChunk + 1});
    std::vector<float> row(static_cast<size_t>(kVocab), -kInf);
    for (size_t j = 0; j < ids.size(); ++j) row[static_cast<size_t>(ids[j])] = 0.25f * static_cast<float>(j) - 2.0f;
    sieve::Chain chain(ctx, chain_desc("temperature;dist", 1, kVocab, 0.8f, 3));
    ASSERT_EQ(sieve_chain_set_logprobs(chain.get(), 20), SIEVE_OK) << sieve_last_error();
    const auto out = chain.sample(row.data(), 1, kVocab);
    ASSERT_EQ(out[0].status, SIEVE_OK);
    expect_twins_logprobs(chain, 0, row.data(), kVocab, out[0].token, 20);
    sieve_logprobs lp{};
    ASSERT_EQ(sieve_chain_logprobs(chain.get(), 0, &lp), SIEVE_OK);
    EXPECT_EQ(lp.n_top, static_cast<int32_t>(ids.size()));
}

// Every refused call: its status, its message, and logprobs that stay right.
TEST_P(Logprobs, BadInput) {
    sieve::Context ctx = GetParam() == Where::Gpu ? gpu_context() : cpu_context();
    constexpr int32_t kRows = 2, kVocab = 1000;
    sieve::Chain chain(ctx, chain_desc("", kRows, kVocab, 0.8f, 3));
    sieve_logprobs lp{};
    EXPECT_TRUE(Fails(sieve_chain_logprobs(chain.get(), 0, &lp), SIEVE_ERROR_INVALID_ARGUMENT, {"off"}));
    EXPECT_TRUE(Fails(sieve_chain_set_logprobs(chain.get(), 21), SIEVE_ERROR_INVALID_ARGUMENT, {"21", "-1..20"}));
    EXPECT_TRUE(Fails(sieve_chain_set_logprobs(chain.get(), -2), SIEVE_ERROR_INVALID_ARGUMENT, {"-2"}));
    EXPECT_TRUE(Fails(sieve_chain_set_logprobs(nullptr, 1), SIEVE_ERROR_NULL_HANDLE, {"chain"}));
    ASSERT_EQ(sieve_chain_set_logprobs(chain.get(), 4), SIEVE_OK);
    EXPECT_TRUE(Fails(sieve_chain_logprobs(chain.get(), 0, &lp), SIEVE_ERROR_INVALID_ARGUMENT, {"no sampling call"}));
    auto logits = make_rows(Shape::Zipf, kRows, kVocab, 5);
    logits[kVocab + 7] = std::numeric_limits<float>::quiet_NaN();  // row 1 fails
    const auto out = chain.sample(logits.data(), kRows, kVocab);
    EXPECT_EQ(out[1].status, SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_TRUE(Fails(sieve_chain_logprobs(chain.get(), 1, &lp), SIEVE_ERROR_INVALID_ARGUMENT, {"row 1 failed"}));
    EXPECT_TRUE(Fails(sieve_chain_logprobs(chain.get(), 2, &lp), SIEVE_ERROR_INVALID_ARGUMENT, {"row 2", "0..1"}));
    EXPECT_TRUE(Fails(sieve_chain_logprobs(chain.get(), -1, &lp), SIEVE_ERROR_INVALID_ARGUMENT, {"row -1"}));
    EXPECT_TRUE(Fails(sieve_chain_logprobs(chain.get(), 0, nullptr), SIEVE_ERROR_INVALID_ARGUMENT, {"out"}));
    ASSERT_EQ(sieve_chain_logprobs(chain.get(), 0, &lp), SIEVE_OK) << sieve_last_error();
    const auto want = sieve::ref::raw_logprobs(logits.data(), kVocab, out[0].token, 4);
    EXPECT_NEAR(lp.raw_logprob, want.token_logprob, 1e-4);
    EXPECT_EQ(lp.n_top, 4);
}

INSTANTIATE_TEST_SUITE_P(Backends, Logprobs, testing::Values(Where::Gpu, Where::Cpu),
                         [](const testing::TestParamInfo<Where>& info) {
                             return info.param == Where::Gpu ? std::string("Gpu") : std::string("Cpu");
                         });

} // namespace
