// Issue 3 through the C API: logit bias and token bitmask on the CPU backend
// (they change the result as docs/semantics.md says), every bad input a specific
// status with a message (in the style of test_bad_input.cpp), the new per-row
// parameters (defaults, validation), and the GPU engine running bias, bitmask,
// dynamic temperature and the truncating samplers while still refusing
// penalties and DRY.
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

constexpr float kInf = std::numeric_limits<float>::infinity();


sieve::ChainDesc desc(const char* samplers, int32_t rows, int32_t vocab, float temperature = 1.0f,
                      uint32_t seed = 77u) {
    sieve::ChainDesc d;
    if (samplers) d.samplers(samplers);
    d.capacity(rows, vocab).temperature(temperature).seed(seed);
    return d;
}

std::map<int32_t, float> dist_map(sieve::Chain& chain, const std::vector<float>& logits, int32_t rows, int32_t vocab,
                                  int32_t row) {
    std::map<int32_t, float> m;
    for (const auto& e : chain.distribution(logits.data(), rows, vocab, row)) m[e.id] = e.p;
    return m;
}

void expect_same(const std::map<int32_t, float>& a, const std::map<int32_t, float>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (const auto& [id, p] : a) {
        ASSERT_TRUE(b.count(id)) << "id " << id;
        EXPECT_NEAR(p, b.at(id), 1e-6) << "id " << id;
    }
}

// ---- logit bias on the CPU backend ---------------------------------------------

TEST(BiasBitmaskCpu, BiasChangesTheDistributionAsAddedLogits) {
    sieve::Context ctx = cpu_context();
    const int32_t vocab = 50;
    const std::vector<float> logits = make_row(Shape::Zipf, vocab, 3);
    sieve::Chain biased(ctx, desc("top_k;temperature", 1, vocab, 0.7f));
    sieve::Chain plain(ctx, desc("top_k;temperature", 1, vocab, 0.7f));
    biased.set(SIEVE_PARAM_TOP_K, 10);
    plain.set(SIEVE_PARAM_TOP_K, 10);
    // Entries for one token add up (llama.cpp applies each entry); -inf bans.
    biased.set_logit_bias({5, 7, 5, 9}, {1.5f, -kInf, 0.25f, -2.0f});
    std::vector<float> by_hand = logits;
    by_hand[5] += 1.5f;
    by_hand[5] += 0.25f;
    by_hand[7] = -kInf;
    by_hand[9] += -2.0f;
    const auto got = dist_map(biased, logits, 1, vocab, 0);
    expect_same(got, dist_map(plain, by_hand, 1, vocab, 0));
    EXPECT_FALSE(got.count(7));
    // The same token drawn with the same seed and step.
    EXPECT_EQ(biased.sample(logits.data(), 1, vocab)[0].token, plain.sample(by_hand.data(), 1, vocab)[0].token);
    // n = 0 clears.
    biased.set_logit_bias({}, {});
    expect_same(dist_map(biased, logits, 1, vocab, 0), dist_map(plain, logits, 1, vocab, 0));
}

TEST(BiasBitmaskCpu, BiasIsPerRowAndGreedyFollowsIt) {
    sieve::Context ctx = cpu_context();
    const std::vector<float> row = {0.0f, 0.0f, 0.0f, 0.0f};
    std::vector<float> logits;
    for (int r = 0; r < 3; ++r) logits.insert(logits.end(), row.begin(), row.end());
    sieve::Chain chain(ctx, desc("greedy", 3, 4));
    chain.set_logit_bias({2}, {0.5f}, -1);
    chain.set_logit_bias({3}, {0.5f}, 1);
    const auto t = chain.sample(logits.data(), 3, 4);
    EXPECT_EQ(t[0].token, 2);
    EXPECT_EQ(t[1].token, 3);
    EXPECT_EQ(t[2].token, 2);
}

TEST(BiasBitmaskCpu, BiasThatMasksEverythingOrOverflows) {
    sieve::Context ctx = cpu_context();
    sieve::Chain chain(ctx, desc("temperature", 2, 3));
    const std::vector<float> logits = {1.0f, 2.0f, 3.0f, 3e38f, 0.0f, 0.0f};
    chain.set_logit_bias({0, 1, 2}, {-kInf, -kInf, -kInf}, 0);
    chain.set_logit_bias({0}, {3e38f}, 1);
    std::vector<sieve_token> out(2);
    EXPECT_TRUE(Fails(sieve_sample(chain.get(), logits.data(), 2, 3, out.data()), SIEVE_ERROR_ALL_MASKED,
                      {"row 0", "logit bias"}));
    EXPECT_EQ(out[0].status, SIEVE_ERROR_ALL_MASKED);
    EXPECT_EQ(out[0].token, -1);
    EXPECT_EQ(out[1].status, SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_EQ(out[1].token, -1);
    // Clearing makes both rows good again, at step 0 (no step was used).
    chain.set_logit_bias({}, {});
    EXPECT_EQ(sieve_sample(chain.get(), logits.data(), 2, 3, out.data()), SIEVE_OK) << sieve_last_error();
    EXPECT_EQ(out[0].step, 0u);
    EXPECT_EQ(out[1].step, 0u);
}

// ---- token bitmask on the CPU backend --------------------------------------------

std::vector<uint32_t> mask_of(const std::vector<int32_t>& allowed, int32_t words) {
    std::vector<uint32_t> m(static_cast<size_t>(words), 0u);
    for (int32_t id : allowed) m[static_cast<size_t>(id / 32)] |= 1u << (id % 32);
    return m;
}

TEST(BiasBitmaskCpu, BitmaskRestrictsToAllowedTokens) {
    sieve::Context ctx = cpu_context();
    const int32_t vocab = 70; // 3 words
    const std::vector<float> logits = make_row(Shape::Gaussian, vocab, 11);
    sieve::Chain masked(ctx, desc("top_p;temperature", 1, vocab, 0.9f));
    sieve::Chain plain(ctx, desc("top_p;temperature", 1, vocab, 0.9f));
    const std::vector<int32_t> allowed = {0, 31, 32, 33, 64, 69};
    std::vector<uint32_t> words = mask_of(allowed, 3);
    words[2] |= 0xFFFFFFC0u; // bits for ids >= 70: ignored
    masked.set_token_bitmask(words);
    std::vector<float> by_hand(static_cast<size_t>(vocab), -kInf);
    for (int32_t id : allowed) by_hand[static_cast<size_t>(id)] = logits[static_cast<size_t>(id)];
    const auto got = dist_map(masked, logits, 1, vocab, 0);
    expect_same(got, dist_map(plain, by_hand, 1, vocab, 0));
    for (const auto& [id, p] : got) EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), id) != allowed.end()) << id;
    for (int i = 0; i < 20; ++i) {
        const int32_t t = masked.sample(logits.data(), 1, vocab)[0].token;
        EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), t) != allowed.end()) << t;
    }
    // NULL clears.
    masked.set_token_bitmask({});
    expect_same(dist_map(masked, logits, 1, vocab, 0), dist_map(plain, logits, 1, vocab, 0));
}

TEST(BiasBitmaskCpu, BitmaskAllowingNothingIsAllMaskedForThatRowOnly) {
    sieve::Context ctx = cpu_context();
    const int32_t vocab = 40;
    std::vector<float> logits = make_rows(Shape::Zipf, 2, vocab, 5);
    sieve::Chain chain(ctx, desc(nullptr, 2, vocab)); // llama.cpp's default chain
    std::vector<uint32_t> nothing = {0u, 0xFFFFFF00u}; // only ids >= 40: outside the vocab
    chain.set_token_bitmask(nothing, 1);
    std::vector<sieve_token> out(2);
    EXPECT_TRUE(Fails(sieve_sample(chain.get(), logits.data(), 2, vocab, out.data()), SIEVE_ERROR_ALL_MASKED,
                      {"row 1", "bitmask"}));
    EXPECT_EQ(out[0].status, SIEVE_OK);
    EXPECT_EQ(out[0].step, 0u);
    EXPECT_EQ(out[1].status, SIEVE_ERROR_ALL_MASKED);
    EXPECT_EQ(out[1].token, -1);
    EXPECT_EQ(sieve_sample(chain.get(), logits.data(), 2, vocab, out.data()), SIEVE_ERROR_ALL_MASKED);
    EXPECT_EQ(out[0].step, 1u);
    chain.set_token_bitmask({}, 1);
    EXPECT_EQ(sieve_sample(chain.get(), logits.data(), 2, vocab, out.data()), SIEVE_OK) << sieve_last_error();
    EXPECT_EQ(out[1].step, 0u); // the failed row never advanced
}

// The same failures on the GPU, on both of its paths: the selection levels
// (temperature) and the collect pass (a truncating sampler).
TEST(BiasBitmaskGpu, MaskingEverythingOrOverflowingFailsThatRowOnly) {
    sieve::Context ctx = gpu_context();
    for (const char* samplers : {"temperature", "top_k;temperature"}) {
        for (int32_t vocab : {40, 5000}) {
            SCOPED_TRACE(std::string(samplers) + " vocab " + std::to_string(vocab));
            std::vector<float> logits = make_rows(Shape::Zipf, 3, vocab, 5);
            logits[static_cast<size_t>(2 * vocab)] = 3e38f;
            sieve::Chain chain(ctx, desc(samplers, 3, vocab));
            const std::vector<uint32_t> nothing((static_cast<size_t>(vocab) + 31) / 32, 0u);
            chain.set_token_bitmask(nothing, 1);
            chain.set_logit_bias({0}, {3e38f}, 2);  // 3e38 + 3e38 overflows: NON_FINITE
            std::vector<sieve_token> out(3);
            EXPECT_TRUE(Fails(sieve_sample(chain.get(), logits.data(), 3, vocab, out.data()), SIEVE_ERROR_ALL_MASKED,
                              {"row 1", "bitmask"}));
            EXPECT_EQ(out[0].status, SIEVE_OK);
            EXPECT_EQ(out[1].status, SIEVE_ERROR_ALL_MASKED);
            EXPECT_EQ(out[1].token, -1);
            EXPECT_EQ(out[2].status, SIEVE_ERROR_NON_FINITE_LOGIT);
            EXPECT_EQ(out[2].token, -1);
            // A bias of -inf on every token: masked too.
            std::vector<int32_t> all(static_cast<size_t>(std::min(vocab, 1024)));
            for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
            if (vocab <= 1024) {
                chain.set_token_bitmask({}, 1);
                chain.set_logit_bias(all, std::vector<float>(all.size(), -kInf), 1);
                EXPECT_EQ(sieve_sample(chain.get(), logits.data(), 3, vocab, out.data()), SIEVE_ERROR_ALL_MASKED);
                EXPECT_EQ(out[1].status, SIEVE_ERROR_ALL_MASKED);
            }
            // Cleared: every row samples again, and row 0 went on stepping.
            chain.set_token_bitmask({}, 1);
            chain.set_logit_bias({}, {});
            EXPECT_EQ(sieve_sample(chain.get(), logits.data(), 3, vocab, out.data()), SIEVE_OK) << sieve_last_error();
            EXPECT_EQ(out[0].step, vocab <= 1024 ? 2u : 1u);
        }
    }
}

// A GPU row holds at most 1024 bias entries: more is a capacity error that
// changes nothing.
TEST(BiasBitmaskGpu, TooManyBiasEntriesIsCapacity) {
    sieve::Context ctx = gpu_context();
    sieve::Chain chain(ctx, desc("top_k;temperature", 1, 5000));
    std::vector<int32_t> tokens(1025);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i);
    const std::vector<float> bias(tokens.size(), 1.0f);
    EXPECT_TRUE(Fails(sieve_chain_set_logit_bias(chain.get(), 0, tokens.data(), bias.data(), 1025), SIEVE_ERROR_CAPACITY,
                      {"1025", "1024"}));
    EXPECT_EQ(sieve_chain_set_logit_bias(chain.get(), 0, tokens.data(), bias.data(), 1024), SIEVE_OK);
}

// ---- bad input: bias and bitmask ------------------------------------------------------

class BiasBitmaskBadInput : public testing::Test {
protected:
    static constexpr int32_t kRows = 2;
    static constexpr int32_t kVocab = 100; // 4 words
    void SetUp() override {
        ctx_ = std::make_unique<sieve::Context>(cpu_context());
        chain_ = std::make_unique<sieve::Chain>(*ctx_, desc("top_k;temperature", kRows, kVocab));
        logits_ = make_rows(Shape::Zipf, kRows, kVocab, 21);
        chain_->set_logit_bias({3}, {2.0f});
        before_ = dist_map(*chain_, logits_, kRows, kVocab, 0);
    }
    // The chain still samples, with the bias it had before the failed call.
    void expect_unchanged() { expect_same(dist_map(*chain_, logits_, kRows, kVocab, 0), before_); }

    std::unique_ptr<sieve::Context> ctx_;
    std::unique_ptr<sieve::Chain> chain_;
    std::vector<float> logits_;
    std::map<int32_t, float> before_;
};

TEST_F(BiasBitmaskBadInput, BiasTokenOutOfRange) {
    for (int32_t token : {kVocab, -1, 1 << 30}) {
        const int32_t t[] = {1, token};
        const float b[] = {1.0f, 1.0f};
        for (int32_t row : {0, -1})
            EXPECT_TRUE(Fails(sieve_chain_set_logit_bias(chain_->get(), row, t, b, 2), SIEVE_ERROR_INVALID_ARGUMENT,
                              {"token " + std::to_string(token), "outside"}));
    }
    expect_unchanged();
}

TEST_F(BiasBitmaskBadInput, BiasNaNOrPlusInf) {
    for (float bad : {std::nanf(""), kInf}) {
        const int32_t t[] = {4};
        const float b[] = {bad};
        EXPECT_TRUE(Fails(sieve_chain_set_logit_bias(chain_->get(), -1, t, b, 1), SIEVE_ERROR_INVALID_ARGUMENT,
                          {"bias", "-inf"}));
    }
    expect_unchanged();
}

TEST_F(BiasBitmaskBadInput, BiasCountsPointersAndRows) {
    const int32_t t[] = {4};
    const float b[] = {1.0f};
    EXPECT_TRUE(Fails(sieve_chain_set_logit_bias(chain_->get(), 0, t, b, -1), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"negative"}));
    EXPECT_TRUE(Fails(sieve_chain_set_logit_bias(chain_->get(), 0, nullptr, b, 1), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"tokens", "NULL"}));
    EXPECT_TRUE(Fails(sieve_chain_set_logit_bias(chain_->get(), 0, t, nullptr, 1), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"biases", "NULL"}));
    EXPECT_TRUE(Fails(sieve_chain_set_logit_bias(chain_->get(), kRows, t, b, 1), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"row " + std::to_string(kRows)}));
    EXPECT_TRUE(Fails(sieve_chain_set_logit_bias(chain_->get(), -2, t, b, 1), SIEVE_ERROR_INVALID_ARGUMENT, {"row -2"}));
    EXPECT_TRUE(Fails(sieve_chain_set_logit_bias(nullptr, 0, t, b, 1), SIEVE_ERROR_NULL_HANDLE, {"chain"}));
    expect_unchanged();
}

TEST_F(BiasBitmaskBadInput, BiasTokenBeyondTheCallsVocab) {
    // Token 80 is inside the chain's vocab (100) but not a 50-token call's: the
    // call is refused, nothing sampled: every row of out[] holds the call's
    // status and no token (sieve.h), never stale results.
    chain_->set_logit_bias({80}, {1.0f}, 1);
    std::vector<sieve_token> out(kRows);
    for (auto& t : out) t.token = 7, t.status = SIEVE_OK, t.step = 1234;
    EXPECT_TRUE(Fails(sieve_sample(chain_->get(), logits_.data(), kRows, 50, out.data()), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"row 1", "token 80", "vocab"}));
    for (const auto& t : out) {
        EXPECT_EQ(t.status, SIEVE_ERROR_INVALID_ARGUMENT) << "a call-level failure left a row's stale result";
        EXPECT_EQ(t.token, -1);
        EXPECT_EQ(t.step, 0u);
    }
    int32_t count = 0;
    EXPECT_TRUE(Fails(sieve_chain_distribution(chain_->get(), logits_.data(), kRows, 50, 0, nullptr, nullptr, 0, &count),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"token 80"}));
    EXPECT_EQ(sieve_sample(chain_->get(), logits_.data(), kRows, kVocab, out.data()), SIEVE_OK) << sieve_last_error();
    EXPECT_EQ(out[0].status, SIEVE_OK);
    EXPECT_GE(out[0].token, 0);
}

TEST_F(BiasBitmaskBadInput, BitmaskSizes) {
    const std::vector<uint32_t> words(5, 0xFFFFFFFFu);
    EXPECT_TRUE(Fails(sieve_chain_set_token_bitmask(chain_->get(), 0, words.data(), 0), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"word count 0"}));
    EXPECT_TRUE(Fails(sieve_chain_set_token_bitmask(chain_->get(), 0, words.data(), -3), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"word count -3"}));
    EXPECT_TRUE(Fails(sieve_chain_set_token_bitmask(chain_->get(), 0, words.data(), 5), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"5 words", "longer"}));
    EXPECT_TRUE(Fails(sieve_chain_set_token_bitmask(chain_->get(), 7, words.data(), 4), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"row 7"}));
    EXPECT_TRUE(Fails(sieve_chain_set_token_bitmask(nullptr, 0, words.data(), 4), SIEVE_ERROR_NULL_HANDLE, {"chain"}));
    expect_unchanged();
    // 3 words cover a 96-token call but not a 100-token one: the call fails.
    ASSERT_EQ(sieve_chain_set_token_bitmask(chain_->get(), 1, words.data(), 3), SIEVE_OK) << sieve_last_error();
    std::vector<sieve_token> out(kRows);
    EXPECT_TRUE(Fails(sieve_sample(chain_->get(), logits_.data(), kRows, kVocab, out.data()),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"row 1", "3 words", "needs 4"}));
    std::vector<int32_t> tokens(kRows);
    EXPECT_TRUE(Fails(sieve_sample_draws(chain_->get(), logits_.data(), kRows, kVocab, 1, tokens.data(), nullptr),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"bitmask"}));
    EXPECT_EQ(sieve_sample(chain_->get(), logits_.data(), kRows, 96, out.data()), SIEVE_OK) << sieve_last_error();
    EXPECT_EQ(out[1].step, 0u);
}

// ---- the new parameters ------------------------------------------------------------------

struct ParamCase {
    sieve_param param;
    const char* name;
    double llama_default;
};
const ParamCase kParams[] = {
    {SIEVE_PARAM_TOP_K, "top_k", 40},
    {SIEVE_PARAM_TOP_P, "top_p", 0.95f},
    {SIEVE_PARAM_MIN_P, "min_p", 0.05f},
    {SIEVE_PARAM_TYPICAL_P, "typical_p", 1.0},
    {SIEVE_PARAM_TOP_N_SIGMA, "top_n_sigma", -1.0},
    {SIEVE_PARAM_XTC_PROBABILITY, "xtc_probability", 0.0},
    {SIEVE_PARAM_XTC_THRESHOLD, "xtc_threshold", 0.1f},
    {SIEVE_PARAM_DYNATEMP_RANGE, "dynatemp_range", 0.0},
    {SIEVE_PARAM_DYNATEMP_EXPONENT, "dynatemp_exponent", 1.0},
};

class NewParams : public testing::TestWithParam<bool /*gpu*/> {
protected:
    void SetUp() override {
        ctx_ = std::make_unique<sieve::Context>(GetParam() ? gpu_context() : cpu_context());
        chain_ = std::make_unique<sieve::Chain>(*ctx_, desc(GetParam() ? "temperature;dist" : nullptr, 3, 64));
    }
    std::vector<double> snapshot() const {
        std::vector<double> v;
        for (int32_t r = 0; r < 3; ++r)
            for (const auto& c : kParams) v.push_back(chain_->get_param(c.param, r));
        return v;
    }
    std::unique_ptr<sieve::Context> ctx_;
    std::unique_ptr<sieve::Chain> chain_;
};

TEST_P(NewParams, LlamaCppDefaultsAndRoundTrip) {
    for (const auto& c : kParams)
        for (int32_t r = 0; r < 3; ++r) EXPECT_EQ(chain_->get_param(c.param, r), c.llama_default) << c.name;
    chain_->set(SIEVE_PARAM_TOP_K, -7, 1);
    chain_->set(SIEVE_PARAM_MIN_P, 1.5, 2);
    chain_->set(SIEVE_PARAM_TOP_P, 0.25);
    EXPECT_EQ(chain_->get_param(SIEVE_PARAM_TOP_K, 1), -7);
    EXPECT_EQ(chain_->get_param(SIEVE_PARAM_TOP_K, 0), 40);
    EXPECT_EQ(chain_->get_param(SIEVE_PARAM_MIN_P, 2), 1.5);
    for (int32_t r = 0; r < 3; ++r) EXPECT_EQ(chain_->get_param(SIEVE_PARAM_TOP_P, r), 0.25);
}

TEST_P(NewParams, RejectedValuesChangeNothing) {
    const auto before = snapshot();
    for (const auto& c : kParams) {
        SCOPED_TRACE(c.name);
        for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL})
            for (int32_t row : {1, -1})
                EXPECT_TRUE(Fails(sieve_chain_set_param(chain_->get(), row, c.param, bad),
                                  SIEVE_ERROR_INVALID_PARAMETER, {c.name, "finite"}));
        if (c.param != SIEVE_PARAM_TOP_K) {
            EXPECT_TRUE(Fails(sieve_chain_set_param(chain_->get(), -1, c.param, 1e39), SIEVE_ERROR_INVALID_PARAMETER,
                              {c.name, "float range"}));
        }
    }
    for (double bad : {2.5, 2147483648.0, -2147483649.0, 1e39})
        EXPECT_TRUE(Fails(sieve_chain_set_param(chain_->get(), 0, SIEVE_PARAM_TOP_K, bad), SIEVE_ERROR_INVALID_PARAMETER,
                          {"top_k", "integer"}));
    EXPECT_EQ(snapshot(), before);
    const auto logits = make_rows(Shape::Zipf, 3, 64, 4);
    EXPECT_EQ(sieve_sample(chain_->get(), logits.data(), 3, 64, std::vector<sieve_token>(3).data()), SIEVE_OK)
        << sieve_last_error();
}

INSTANTIATE_TEST_SUITE_P(BiasBitmask, NewParams, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "Gpu" : "Cpu"; });

// ---- the GPU engine: bias, bitmask, dynamic temperature, truncating samplers -----------

// The GPU accepts a logit bias, a token bitmask and a dynamic temperature (all
// refused before the truncating samplers ran there) and samples what the CPU
// backend samples with them; clearing still works. (test_gpu_chains.cpp holds
// the full GPU-vs-twin comparison with bias and bitmask.)
TEST(BiasBitmaskGpu, AcceptsBiasBitmaskAndDynatempLikeTheCpu) {
    sieve::Context gpu = gpu_context();
    sieve::Context cpu = cpu_context();
    const int32_t vocab = 300;
    const auto logits = make_rows(Shape::Zipf, 2, vocab, 8);
    sieve::Chain chain(gpu, desc("top_k;temperature", 2, vocab, 0.8f, 5u));
    sieve::Chain twin(cpu, desc("top_k;temperature", 2, vocab, 0.8f, 5u));
    std::vector<uint32_t> words(10, 0xFFFFFFFFu);
    words[0] = 0u;  // ids 0..31 disallowed in row 0
    for (sieve::Chain* c : {&chain, &twin}) {
        const int32_t t[] = {40, 41, 40, 299};
        const float b[] = {2.0f, -kInf, 0.5f, 1.0f};  // token 40 twice: 2.5 in all
        EXPECT_EQ(sieve_chain_set_logit_bias(c->get(), -1, t, b, 4), SIEVE_OK) << sieve_last_error();
        EXPECT_EQ(sieve_chain_set_token_bitmask(c->get(), 0, words.data(), 10), SIEVE_OK) << sieve_last_error();
        EXPECT_EQ(sieve_chain_set_param(c->get(), -1, SIEVE_PARAM_DYNATEMP_RANGE, 0.5), SIEVE_OK) << sieve_last_error();
        EXPECT_EQ(c->get_param(SIEVE_PARAM_DYNATEMP_RANGE, 1), 0.5);
    }
    expect_same(dist_map(chain, logits, 2, vocab, 0), dist_map(twin, logits, 2, vocab, 0));
    for (int step = 0; step < 3; ++step) {
        const auto a = chain.sample(logits.data(), 2, vocab);
        const auto c = twin.sample(logits.data(), 2, vocab);
        for (size_t r = 0; r < 2; ++r) {
            ASSERT_EQ(a[r].status, SIEVE_OK) << sieve_last_error();
            EXPECT_EQ(a[r].token, c[r].token) << "step " << step << " row " << r;
            EXPECT_NE(a[r].token, 41) << "token 41 is banned";
            EXPECT_NEAR(a[r].p, c[r].p, 1e-4f * c[r].p);
        }
        EXPECT_GE(a[0].token, 32) << "row 0's bitmask disallows ids below 32";
    }
    // Clearing works on the GPU too.
    EXPECT_EQ(sieve_chain_set_logit_bias(chain.get(), -1, nullptr, nullptr, 0), SIEVE_OK);
    EXPECT_EQ(sieve_chain_set_token_bitmask(chain.get(), -1, nullptr, 0), SIEVE_OK);
    EXPECT_EQ(chain.sample(logits.data(), 2, vocab)[0].status, SIEVE_OK);
}

// Every truncating sampler, alone and in llama.cpp's order, runs on the GPU;
// so do chains holding penalties and DRY at their (disabled) defaults, in any
// position, llama.cpp's default chain among them.
TEST(BiasBitmaskGpu, TruncatingSamplersPenaltiesAndDryRunOnGpu) {
    sieve::Context gpu = gpu_context();
    const auto logits = make_rows(Shape::Zipf, 1, 100, 3);
    for (const char* samplers : {"top_k;temperature", "top-p", "min_p", "typ_p", "top_n_sigma", "xtc",
                                 "top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature", "top_k;temperature;greedy"}) {
        try {
            sieve::Chain chain(gpu, desc(samplers, 1, 100));
            chain.set(SIEVE_PARAM_TYPICAL_P, 0.9);
            chain.set(SIEVE_PARAM_TOP_N_SIGMA, 1.5);
            chain.set(SIEVE_PARAM_XTC_PROBABILITY, 1.0);
            EXPECT_EQ(chain.sample(logits.data(), 1, 100)[0].status, SIEVE_OK) << samplers;
        } catch (const sieve::Error& e) {
            ADD_FAILURE() << samplers << ": " << e.what();
        }
    }
    // Penalties and DRY at llama.cpp's defaults are no-ops on both backends, in
    // any position, so chains holding them -- llama.cpp's default chain among
    // them -- give the twin's tokens (tests/gpu/test_gpu_history.cpp switches them on).
    sieve::Context cpu = cpu_context();
    for (const char* samplers : {"penalties", "dry", "penalties;top_k;temperature", "top_k;dry;dist", "", "  "}) {
        sieve_chain_desc raw = desc(nullptr, 1, 100, 0.8f, 21u).raw;
        raw.samplers = *samplers ? samplers : nullptr;
        sieve_chain *g = nullptr, *c = nullptr;
        ASSERT_EQ(sieve_chain_create(gpu.get(), &raw, &g), SIEVE_OK) << samplers << ": " << sieve_last_error();
        ASSERT_EQ(sieve_chain_create(cpu.get(), &raw, &c), SIEVE_OK) << samplers << ": " << sieve_last_error();
        for (int step = 0; step < 3; ++step) {
            sieve_token a{}, b{};
            EXPECT_EQ(sieve_sample(g, logits.data(), 1, 100, &a), SIEVE_OK) << samplers;
            EXPECT_EQ(sieve_sample(c, logits.data(), 1, 100, &b), SIEVE_OK) << samplers;
            EXPECT_EQ(a.token, b.token) << samplers << " step " << step;
        }
        sieve_chain_destroy(g);
        sieve_chain_destroy(c);
    }
}

// ---- the CPU backend runs any chain of them, in any order ------------------------------

TEST(BiasBitmaskCpu, AnyOrderRunsAndMatchesTheTwin) {
    sieve::Context ctx = cpu_context();
    const int32_t vocab = 2000;
    const auto logits = make_rows(Shape::Zipf, 2, vocab, 13);
    for (const char* samplers :
         {"top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature", "temperature;min_p;top_p", "xtc;top_k;greedy",
          "typ_p;temperature;top_n_sigma", "penalties;dry;top_k;dist", "min_p;min_p;top_k;top_k;temp;temp"}) {
        SCOPED_TRACE(samplers);
        sieve::Chain chain(ctx, desc(samplers, 2, vocab, 0.7f, 99u));
        chain.set(SIEVE_PARAM_TOP_K, 50);
        chain.set(SIEVE_PARAM_TYPICAL_P, 0.9);
        chain.set(SIEVE_PARAM_TOP_N_SIGMA, 2.0);
        chain.set(SIEVE_PARAM_XTC_PROBABILITY, 0.5);
        chain.set(SIEVE_PARAM_DYNATEMP_RANGE, 0.3, 1);
        const auto t = chain.sample(logits.data(), 2, vocab);
        for (int r = 0; r < 2; ++r) {
            EXPECT_EQ(t[static_cast<size_t>(r)].status, SIEVE_OK) << sieve_last_error();
            EXPECT_GE(t[static_cast<size_t>(r)].token, 0);
        }
        const auto d = chain.distribution(logits.data(), 2, vocab, 1);
        EXPECT_FALSE(d.empty());
        std::vector<int32_t> tokens = chain.draws(logits.data(), 2, vocab, 50);
        for (int32_t tok : tokens) EXPECT_GE(tok, 0);
    }
}

// ---- the CLI: llama.cpp's flags on --device cpu ------------------------------------------

std::string run(const std::string& args, int* status) {
    const std::string cmd = std::string(SIEVE_CLI_PATH) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int rc = p ? pclose(p) : -1;
    *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    return out;
}

TEST(BiasBitmaskCli, LlamaCppFlagsOnTheCpu) {
    const std::string file = testing::TempDir() + "sieve_issue3_p4.raw";
    {
        const float v[] = {logf(0.1f), logf(0.2f), logf(0.3f), logf(0.4f)};
        FILE* f = fopen(file.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        fwrite(v, sizeof v, 1, f);
        fclose(f);
    }
    int rc = -1;
    std::string out = run("sample --logits '" + file + "' --vocab 4 --device cpu --samplers top_p --top-p 0.7 "
                          "--dump-dist --json", &rc);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("\"id\":3"), std::string::npos) << out;
    EXPECT_NE(out.find("\"count\":2"), std::string::npos) << out;
    // The default chain runs on the CPU backend.
    out = run("sample --logits '" + file + "' --vocab 4 --device cpu --json", &rc);
    EXPECT_EQ(rc, 0) << out;
    // Every new flag parses; --logit-bias -inf bans token 3.
    out = run("sample --logits '" + file + "' --vocab 4 --device cpu --top-k 3 --top-p 0.99 --min-p 0.01 "
              "--typical 0.999 --top-n-sigma 5 --xtc-probability 0.1 --xtc-threshold 0.4 --dynatemp-range 0.2 "
              "--dynatemp-exp 1.5 --logit-bias 3-inf --logit-bias 0+0.5 --dump-dist --json", &rc);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out.find("\"id\":3"), std::string::npos) << out;
    // Bad --logit-bias values are usage errors.
    for (const char* bad : {"3", "x+1", "3*1", "3+", "3+inf", "3+nan", "9+1"}) {
        out = run("sample --logits '" + file + "' --vocab 4 --device cpu --logit-bias '" + bad + "'", &rc);
        EXPECT_EQ(rc, 2) << bad << ": " << out;
        EXPECT_NE(out.find("logit-bias"), std::string::npos) << out;
    }
    // The same flags on the GPU give the twin's distribution.
    const std::string flags = " --top-k 3 --top-p 0.99 --min-p 0.01 --typical 0.999 --top-n-sigma 5 "
                              "--xtc-probability 0.1 --xtc-threshold 0.4 --dynatemp-range 0.2 --dynatemp-exp 1.5 "
                              "--logit-bias 3-inf --logit-bias 0+0.5 --dump-dist --seed 3";
    const std::string cpu = run("sample --logits '" + file + "' --vocab 4 --device cpu" + flags, &rc);
    EXPECT_EQ(rc, 0) << cpu;
    const std::string gpu = run("sample --logits '" + file + "' --vocab 4" + flags, &rc);
    EXPECT_EQ(rc, 0) << gpu;
    EXPECT_EQ(gpu.substr(gpu.find("row 0")), cpu.substr(cpu.find("row 0")));
}

} // namespace
