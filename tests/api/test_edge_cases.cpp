// Regression tests for the fuzzing report of issue 23: each case held the CPU
// backend (the twin) and the GPU to llama.cpp's rule where they disagreed, and
// each runs on both backends with the answer written out.
#include "test_support.hpp"

#include <sieve/sieve.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <utility>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

using Backend = OnBackend;


class EdgeCases : public testing::TestWithParam<Backend> {
protected:
    sieve::Context ctx_ = backend_context(GetParam());

    sieve::Chain chain(const std::string& samplers, int32_t vocab, float temperature = 0.8f, int32_t rows = 1) {
        return sieve::Chain(ctx_, chain_desc(samplers, rows, vocab, temperature, 1234u));
    }
};

using Dist = std::vector<sieve::Chain::Entry>;

void expect_dist(const Dist& got, const std::vector<std::pair<int32_t, float>>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        SCOPED_TRACE("entry " + std::to_string(i));
        EXPECT_EQ(got[i].id, want[i].first);
        EXPECT_NEAR(got[i].p, want[i].second, 1e-6);
    }
}

// ---- top-n-sigma past float's range -------------------------------------------
// llama.cpp sums the squared deviations in float: with a logit of -6.5e27 the
// sum is infinite, so sigma is and nothing is masked; the huge logit stays, at
// probability 0 (fuzz_diff's finding: the twin, in double, masked it).

TEST_P(EdgeCases, TopNSigmaOverflowMasksNothing) {
    sieve::Chain c = chain("top_n_sigma;temperature", 3);
    c.set(SIEVE_PARAM_TOP_N_SIGMA, 1.25);
    const std::vector<float> logits = {1.86e-30f, -6.51e27f, 5.22e-14f};
    expect_dist(c.distribution(logits.data(), 1, 3, 0), {{2, 0.5f}, {0, 0.5f}, {1, 0.0f}});
    // Within float's range the same shape masks the outlier.
    const std::vector<float> small = {0.0f, -1.0e6f, 0.0f};
    expect_dist(c.distribution(small.data(), 1, 3, 0), {{0, 0.5f}, {2, 0.5f}});
}

// ---- typical over probabilities equal in float -----------------------------------
// Logits 1.86e-30 and 5.2e-14 are equal to float's softmax (p 0.5 each; the
// third is -6.5e27, p 0): llama.cpp's scores tie, and canonical order (higher
// logit first) keeps token 2. The twin ranked by the double difference of
// 5e-14 and kept token 0 (fuzz_diff's finding).

TEST_P(EdgeCases, TypicalRanksProbabilitiesEqualInFloatAsTies) {
    sieve::Chain c = chain("typ_p", 3, 1.0f);
    c.set(SIEVE_PARAM_TYPICAL_P, 0.48);
    c.set(SIEVE_PARAM_MIN_KEEP, 1);
    const std::vector<float> logits = {1.86e-30f, -6.51e27f, 5.22e-14f};
    expect_dist(c.distribution(logits.data(), 1, 3, 0), {{2, 1.0f}});
}

// ---- 1. XTC at its threshold ------------------------------------------------
// llama.cpp compares its float p with the threshold: ten equal logits give
// p = 0.1f exactly, which is >= 0.1f, so XTC fires and keeps one token (the
// double 0.1 is below 0.1f: the twin used to keep all ten). The kept one is
// the last of the tied run in canonical order: the highest id.

TEST_P(EdgeCases, XtcFiresAtTheThresholdInFloat) {
    for (const auto& [vocab, threshold] : {std::pair<int32_t, float>{10, 0.1f}, {5, 0.2f}}) {
        SCOPED_TRACE("vocab " + std::to_string(vocab));
        sieve::Chain c = chain("xtc", vocab);
        c.set(SIEVE_PARAM_XTC_PROBABILITY, 1.0);
        c.set(SIEVE_PARAM_XTC_THRESHOLD, threshold);
        const std::vector<float> logits(static_cast<size_t>(vocab), 0.0f);
        expect_dist(c.distribution(logits.data(), 1, vocab, 0), {{vocab - 1, 1.0f}});
        const auto t = c.sample(logits.data(), 1, vocab);
        EXPECT_EQ(t[0].status, SIEVE_OK);
        EXPECT_EQ(t[0].token, vocab - 1);
    }
}

// Three tied above the threshold and one below: the first two go; the tied
// token that stays is the highest id of the three.
TEST_P(EdgeCases, XtcTieAboveTheThresholdKeepsTheHighestId) {
    const std::vector<float> logits = {0.0f, 0.0f, 0.0f, -10.0f};
    sieve::Chain c = chain("xtc", 4, 1.0f);
    c.set(SIEVE_PARAM_XTC_PROBABILITY, 1.0);
    c.set(SIEVE_PARAM_XTC_THRESHOLD, 0.3);
    const double w = std::exp(-10.0);
    expect_dist(c.distribution(logits.data(), 1, 4, 0),
                {{2, static_cast<float>(1.0 / (1.0 + w))}, {3, static_cast<float>(w / (1.0 + w))}});
}

// XTC at a threshold <= 0: every p is >= 0, so it keeps the least probable
// entry alone (llama.cpp's rule), which is a masked one when the row has -inf
// logits (fuzz_diff's finding: min_p;xtc;temperature;adaptive_p with
// threshold 0). The row fails with SIEVE_ERROR_ALL_MASKED, its distribution
// as its draw (both used to report an empty distribution as success).
TEST_P(EdgeCases, XtcKeepingOnlyAMaskedEntryFailsTheRow) {
    const std::vector<float> logits = {0.0f, 1.0f, -INFINITY, 2.0f};
    for (const char* samplers : {"xtc", "xtc;temperature;adaptive_p", "min_p;xtc;temperature;adaptive_p"}) {
        SCOPED_TRACE(samplers);
        sieve::Chain c = chain(samplers, 4, 0.5f);
        c.set(SIEVE_PARAM_XTC_PROBABILITY, 1.0);
        c.set(SIEVE_PARAM_XTC_THRESHOLD, 0.0);
        c.set(SIEVE_PARAM_ADAPTIVE_TARGET, 0.05);
        c.set(SIEVE_PARAM_MIN_P, 0.0);  // off, as in the finding (min-p would cut the -inf first)
        int32_t ids[4], count = -1;
        float probs[4];
        EXPECT_EQ(sieve_chain_distribution(c.get(), logits.data(), 1, 4, 0, ids, probs, 4, &count),
                  SIEVE_ERROR_ALL_MASKED);
        EXPECT_NE(std::string(sieve_last_error()).find("XTC"), std::string::npos) << sieve_last_error();
        sieve_token t{};
        EXPECT_EQ(sieve_sample(c.get(), logits.data(), 1, 4, &t), SIEVE_ERROR_ALL_MASKED);
        EXPECT_EQ(t.token, -1);
        // Without the -inf the least probable entry is a finite one, and XTC keeps it.
        const std::vector<float> finite = {0.0f, 1.0f, -5.0f, 2.0f};
        expect_dist(c.distribution(finite.data(), 1, 4, 0), {{2, 1.0f}});
    }
}

// Dynamic temperature over a row one logit dominates (fuzz_diff's finding:
// 162.6 against at most 17.6): llama.cpp's float p is 1 for it and 0 for the
// rest, so the entropy is exactly 0 and dyn_temp is min_temp, here 0: greedy
// masking keeps the maximum alone. The twin's double p (1 - 1e-61, 1e-63)
// gave a temperature of 3e-10 instead, and adaptive-p then spread the mass
// over every other token.
TEST_P(EdgeCases, DynamicTemperatureOfADominatedRowIsTheMinimum) {
    const std::vector<float> logits = {2.0f, 17.5f, 162.6f, 9.3f, 1.6e-37f, 4.0f};
    for (const char* samplers : {"temperature;adaptive_p", "temperature;dist"}) {
        SCOPED_TRACE(samplers);
        sieve::Chain c = chain(samplers, 6, 0.8f);
        c.set(SIEVE_PARAM_DYNATEMP_RANGE, 1.99);
        c.set(SIEVE_PARAM_DYNATEMP_EXPONENT, 0.168);
        c.set(SIEVE_PARAM_ADAPTIVE_TARGET, 0.07);
        expect_dist(c.distribution(logits.data(), 1, 6, 0), {{2, 1.0f}});
        EXPECT_EQ(c.sample(logits.data(), 1, 6)[0].token, 2);
    }
}

// A dynamic temperature below float's smallest normal (fuzz_diff's finding:
// 7.2e-39, which the twin divided by and overflowed while lavapipe, flushing
// it, masked greedily): both backends read it as 0, the greedy masking of a
// temperature <= 0. Here one logit of 40 over 999 zeros gives the entropy
// 2.5e-14 of its maximum and dyn_temp = 2 * (2.5e-14)^3 = 3.2e-41.
TEST_P(EdgeCases, SubnormalDynamicTemperatureIsZero) {
    std::vector<float> logits(1000, 0.0f);
    logits[123] = 40.0f;
    for (const char* samplers : {"temperature;dist", "temperature;top_k;dist"}) {
        SCOPED_TRACE(samplers);
        sieve::Chain c = chain(samplers, 1000, 1.0f);
        c.set(SIEVE_PARAM_DYNATEMP_RANGE, 1.0);
        c.set(SIEVE_PARAM_DYNATEMP_EXPONENT, 3.0);
        const auto t = c.sample(logits.data(), 1, 1000);
        EXPECT_EQ(t[0].status, SIEVE_OK) << sieve_last_error();
        EXPECT_EQ(t[0].token, 123);
        expect_dist(c.distribution(logits.data(), 1, 1000, 0), {{123, 1.0f}});
    }
}

// A subnormal temperature reads as 0 (greedy masking), as a subnormal logit
// does: a device that flushes it would otherwise mask where the twin divides
// and overflows.
TEST_P(EdgeCases, SubnormalTemperatureIsZero) {
    const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
    for (float temperature : {1.0e-40f, -1.0e-40f}) {
        SCOPED_TRACE(temperature);
        sieve::Chain c = chain("temperature;dist", 5, temperature);
        const auto t = c.sample(logits.data(), 1, 5);
        EXPECT_EQ(t[0].status, SIEVE_OK) << sieve_last_error();
        EXPECT_EQ(t[0].token, 1);
        expect_dist(c.distribution(logits.data(), 1, 5, 0), {{1, 1.0f}});
        EXPECT_EQ(c.get_param(SIEVE_PARAM_TEMPERATURE, 0), 0.0);
        c.set(SIEVE_PARAM_TEMPERATURE, 2.0);
        c.set(SIEVE_PARAM_TEMPERATURE, temperature);  // set, not created
        EXPECT_EQ(c.get_param(SIEVE_PARAM_TEMPERATURE, 0), 0.0);
        EXPECT_EQ(c.sample(logits.data(), 1, 5)[0].token, 1);
    }
}

// ---- 2. Subnormal logits ------------------------------------------------------
// A device may flush denormals (Vulkan), so both backends read a subnormal
// logit as a zero of its sign: 1.5e-43 among zeros is a tie, and greedy
// masking keeps the lowest id (token 0), with or without far-off logits.

TEST_P(EdgeCases, SubnormalLogitIsZeroForGreedyMasking) {
    const std::vector<float> with_far = {0, 0, 0, 0, -1e6f, 1.5e-43f, -1e6f, 0, 0, 0, 0, 0, 0};
    std::vector<float> without = with_far;
    without[4] = without[6] = 0.0f;
    for (const std::vector<float>* logits : {&with_far, static_cast<const std::vector<float>*>(&without)}) {
        sieve::Chain c = chain("typ_p;temperature", 13, 0.0f);
        c.set(SIEVE_PARAM_TYPICAL_P, 0.0);
        const auto t = c.sample(logits->data(), 1, 13);
        EXPECT_EQ(t[0].status, SIEVE_OK);
        EXPECT_EQ(t[0].token, 0);
        sieve::Chain g = chain("greedy", 13);
        EXPECT_EQ(g.sample(logits->data(), 1, 13)[0].token, 0);
    }
}

// top-n-sigma over zeros and one subnormal: sigma is 0, nothing is masked, and
// XTC (threshold 0.05 over twelve equal p) keeps the highest id.
TEST_P(EdgeCases, SubnormalLogitIsZeroForTopNSigmaAndXtc) {
    std::vector<float> logits(12, 0.0f);
    logits[3] = 1.0e-40f;
    logits[7] = -2.0e-39f;
    sieve::Chain c = chain("top_n_sigma;xtc;dist", 12, 1.0f);
    c.set(SIEVE_PARAM_TOP_N_SIGMA, 1.0);
    c.set(SIEVE_PARAM_XTC_PROBABILITY, 1.0);
    c.set(SIEVE_PARAM_XTC_THRESHOLD, 0.05);
    expect_dist(c.distribution(logits.data(), 1, 12, 0), {{11, 1.0f}});
    // Without XTC: all twelve, equal.
    sieve::Chain d = chain("top_n_sigma;dist", 12, 1.0f);
    d.set(SIEVE_PARAM_TOP_N_SIGMA, 1.0);
    const Dist all = d.distribution(logits.data(), 1, 12, 0);
    ASSERT_EQ(all.size(), 12u);
    for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(all[i].id, static_cast<int32_t>(i));
        EXPECT_NEAR(all[i].p, 1.0f / 12, 1e-6);
    }
}

// The raw log-probabilities see the same zeros: a subnormal ties with 0 and
// the lower id ranks first.
TEST_P(EdgeCases, SubnormalLogitIsZeroForLogprobs) {
    const std::vector<float> logits = {-1.0f, 0.0f, 1.5e-43f, -2.0f};
    sieve::Chain c = chain("greedy", 4);
    ASSERT_EQ(sieve_chain_set_logprobs(c.get(), 3), SIEVE_OK);
    const auto t = c.sample(logits.data(), 1, 4);
    ASSERT_EQ(t[0].status, SIEVE_OK);
    EXPECT_EQ(t[0].token, 1);
    sieve_logprobs lp{};
    ASSERT_EQ(sieve_chain_logprobs(c.get(), 0, &lp), SIEVE_OK) << sieve_last_error();
    ASSERT_EQ(lp.n_top, 3);
    EXPECT_EQ(lp.top_ids[0], 1);
    EXPECT_EQ(lp.top_ids[1], 2);
    EXPECT_EQ(lp.top_ids[2], 0);
    EXPECT_FLOAT_EQ(lp.top_logprobs[0], lp.top_logprobs[1]);
}

// ---- 3. Mirostat v1 with a huge finite logit --------------------------------
// llama.cpp: p = {1/3, 1/3, 1/3, 0}, so b_2 = log(p_2 / 0) = inf, s_hat = inf
// and k = inf^(1/inf) = 1: one token. The GPU's float eps * 2^mu overflowed
// to inf and kept the whole array.

TEST_P(EdgeCases, MirostatV1HugeGapKeepsOneToken) {
    const std::vector<float> logits = {0.0f, 0.0f, 0.0f, -1.7e38f};
    sieve::Chain c = chain("temperature;mirostat", 4);
    expect_dist(c.distribution(logits.data(), 1, 4, 0), {{0, 1.0f}});
    const auto t = c.sample(logits.data(), 1, 4);
    EXPECT_EQ(t[0].status, SIEVE_OK);
    EXPECT_EQ(t[0].token, 0);
    EXPECT_EQ(t[0].p, 1.0f);
}

// A gap large enough that every p past the first is 0 in float: the same rule.
TEST_P(EdgeCases, MirostatV1GapsBeyondFloatOverflow) {
    const std::vector<float> logits = {3.0e38f, 0.0f, -3.0e38f, -3.0e38f, 1.0f};
    sieve::Chain c = chain("mirostat", 5);
    expect_dist(c.distribution(logits.data(), 1, 5, 0), {{0, 1.0f}});
}

// ---- 4. Parameters that would make a slot's learnt state infinite ----------
// mirostat tau 2e38 (mu = 2 tau = inf), eta 3e38 (the first update overflows)
// and adaptive-p target 3e38 (its average starts at target / (1 - decay)) are
// refused at the set call, naming the parameter and the accepted range.

TEST_P(EdgeCases, LearntStateParametersAreBounded) {
    sieve::Chain c = chain("temperature;mirostat", 8);
    const std::pair<sieve_param, const char*> params[] = {
        {SIEVE_PARAM_MIROSTAT_TAU, "mirostat_tau"},
        {SIEVE_PARAM_MIROSTAT_ETA, "mirostat_eta"},
        {SIEVE_PARAM_ADAPTIVE_TARGET, "adaptive_target"},
    };
    for (const auto& [param, name] : params) {
        SCOPED_TRACE(name);
        const double before = c.get_param(param, 0);
        for (double v : {2e38, 3e38, -3e38, 1.0000001e6, -1.0000001e6})
            for (int32_t row : {0, -1})
                EXPECT_TRUE(Fails(sieve_chain_set_param(c.get(), row, param, v), SIEVE_ERROR_INVALID_PARAMETER,
                                  {name, "[-1e6, 1e6]"}));
        EXPECT_EQ(c.get_param(param, 0), before) << "a refused set changed the parameter";
        for (double v : {1e6, -1e6, 0.5}) EXPECT_EQ(sieve_chain_set_param(c.get(), 0, param, v), SIEVE_OK) << v;
        c.set(param, before);
    }
}

// At the limits the slot stays usable on both backends: every call samples
// and its saved state restores.
TEST_P(EdgeCases, LearntStateStaysFiniteAtTheLimits) {
    for (const char* samplers : {"temperature;mirostat", "temperature;mirostat_v2", "adaptive_p"}) {
        SCOPED_TRACE(samplers);
        sieve::Chain c = chain(samplers, 64);
        c.set(SIEVE_PARAM_MIROSTAT_TAU, 1e6);
        c.set(SIEVE_PARAM_MIROSTAT_ETA, 1e6);
        c.set(SIEVE_PARAM_ADAPTIVE_TARGET, 1e6);
        const auto logits = make_rows(Shape::Gaussian, 1, 64, 5);
        for (int i = 0; i < 4; ++i) {
            sieve_token t{};
            ASSERT_EQ(sieve_sample(c.get(), logits.data(), 1, 64, &t), SIEVE_OK) << "call " << i << ": "
                                                                                 << sieve_last_error();
            EXPECT_EQ(t.status, SIEVE_OK);
        }
        const std::vector<uint8_t> blob = c.save_slot(0);
        EXPECT_EQ(sieve_chain_restore_slot(c.get(), 0, blob.data(), blob.size()), SIEVE_OK) << sieve_last_error();
    }
}

// ---- 6. out[] after a call-level failure -------------------------------------
// Every row the caller passed (up to the chain's max_rows) carries the call's
// status and token -1, instead of whatever the caller's array held.

std::vector<sieve_token> stale(size_t n) {
    sieve_token t{};
    t.token = 12345;
    t.p = 0.5f;
    t.status = SIEVE_OK;
    t.step = 77;
    return std::vector<sieve_token>(n, t);
}

void expect_failed_rows(const std::vector<sieve_token>& out, size_t written, sieve_status want) {
    for (size_t i = 0; i < out.size(); ++i) {
        SCOPED_TRACE("row " + std::to_string(i));
        if (i < written) {
            EXPECT_EQ(out[i].status, want);
            EXPECT_EQ(out[i].token, -1);
            EXPECT_EQ(out[i].p, 0.0f);
            EXPECT_EQ(out[i].step, 0u);
        } else {
            EXPECT_EQ(out[i].token, 12345) << "a row past max_rows was written";
        }
    }
}

TEST_P(EdgeCases, CallLevelFailureWritesEveryRowsStatus) {
    constexpr int32_t kRows = 3, kVocab = 16;
    sieve::Chain c = chain("top_k;temperature", kVocab, 0.8f, kRows);
    const auto logits = make_rows(Shape::Gaussian, kRows + 1, kVocab, 3);
    {
        auto out = stale(kRows);
        const sieve_status s = sieve_sample(c.get(), logits.data(), kRows, 0, out.data());
        EXPECT_EQ(s, SIEVE_ERROR_CAPACITY);
        expect_failed_rows(out, kRows, s);
    }
    {
        auto out = stale(kRows);
        const sieve_status s = sieve_sample(c.get(), nullptr, kRows, kVocab, out.data());
        EXPECT_EQ(s, SIEVE_ERROR_INVALID_ARGUMENT);
        expect_failed_rows(out, kRows, s);
    }
    {
        // More rows than the chain holds: the first max_rows are written.
        auto out = stale(kRows + 1);
        const sieve_status s = sieve_sample(c.get(), logits.data(), kRows + 1, kVocab, out.data());
        EXPECT_NE(s, SIEVE_OK);
        expect_failed_rows(out, kRows, s);
    }
    {
        // A bias naming a token past this call's vocab (call-level).
        c.set_logit_bias({15}, {1.0f}, 1);
        auto out = stale(kRows);
        const sieve_status s = sieve_sample(c.get(), logits.data(), kRows, 8, out.data());
        EXPECT_EQ(s, SIEVE_ERROR_INVALID_ARGUMENT) << sieve_last_error();
        expect_failed_rows(out, kRows, s);
        std::vector<int32_t> tokens(kRows * 2, -7);
        out = stale(kRows);
        const sieve_status d = sieve_sample_draws(c.get(), logits.data(), kRows, 8, 2, tokens.data(), out.data());
        EXPECT_EQ(d, SIEVE_ERROR_INVALID_ARGUMENT);
        expect_failed_rows(out, kRows, d);
        sieve_logits l;
        sieve_logits_init(&l, logits.data(), SIEVE_DTYPE_F32, kRows, 8);
        out = stale(kRows);
        const sieve_status g = sieve_sample_logits(c.get(), &l, out.data());
        EXPECT_EQ(g, SIEVE_ERROR_INVALID_ARGUMENT);
        expect_failed_rows(out, kRows, g);
        c.set_logit_bias({}, {}, 1);
    }
    // A row-level failure leaves the other rows' results.
    auto bad = logits;
    bad[static_cast<size_t>(kVocab) + 2] = NAN;
    auto out = stale(kRows);
    EXPECT_EQ(sieve_sample(c.get(), bad.data(), kRows, kVocab, out.data()), SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_EQ(out[0].status, SIEVE_OK);
    EXPECT_GE(out[0].token, 0);
    EXPECT_EQ(out[1].status, SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_EQ(out[2].status, SIEVE_OK);
}

INSTANTIATE_TEST_SUITE_P(EdgeCases, EdgeCases, testing::Values(Backend::Gpu, Backend::Cpu),
                         backend_name);

} // namespace

// Found by fuzz/fuzz_chain: the CPU backend allocated max_slots slot records
// (and max_rows rows' parameters) with no bound, so max_slots 2^31 - 1 asked the
// allocator for about 9 TB (out of memory at best; a moderately huge value
// zero-filled gigabytes). It refuses such a chain like a GPU beyond its limits.
TEST(EdgeCases, CpuBackendRefusesHugeCapacities) {
    sieve::Context ctx = sieve_test::cpu_context();
    const std::pair<int32_t, int32_t> cases[] = {{1, std::numeric_limits<int32_t>::max()},
                                                 {std::numeric_limits<int32_t>::max(), 1}};
    for (const auto& [rows, slots] : cases) {
        sieve_chain_desc d;
        sieve_chain_desc_init(&d);
        d.samplers = "penalties;dist";
        d.max_rows = rows;
        d.max_vocab = 100;
        d.max_slots = slots;
        d.history_capacity = 1024;
        sieve_chain* out = reinterpret_cast<sieve_chain*>(static_cast<uintptr_t>(0x10));
        EXPECT_EQ(sieve_chain_create(ctx.get(), &d, &out), SIEVE_ERROR_DEVICE_LIMIT) << rows << " rows, " << slots << " slots";
        EXPECT_NE(std::string(sieve_last_error()).find("CPU backend"), std::string::npos) << sieve_last_error();
        EXPECT_EQ(out, nullptr);
    }
    // A large but servable chain is still made.
    sieve_chain_desc d;
    sieve_chain_desc_init(&d);
    d.max_rows = 64;
    d.max_vocab = 1000;
    d.max_slots = 4096;
    d.history_capacity = 4096;
    sieve_chain* chain = nullptr;
    ASSERT_EQ(sieve_chain_create(ctx.get(), &d, &chain), SIEVE_OK) << sieve_last_error();
    sieve_chain_destroy(chain);
}
