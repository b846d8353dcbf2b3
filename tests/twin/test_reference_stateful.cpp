// The CPU twin's stateful samplers: penalties, DRY, mirostat v1/v2 and adaptive-p
// against llama.cpp's rules (src/llama-sampler.cpp) and test vectors
// (tests/test-sampling.cpp), plus hand-checked edges and Sieve's checks.
#include "reference/detail.hpp"
#include "reference/reference.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace sieve::ref;

using sieve_test::twin_chain;

// llama.cpp's sampler_tester: logit = logf(p).
std::vector<float> logits_of(const std::vector<float>& probs) {
    std::vector<float> logits;
    for (float p : probs) logits.push_back(logf(p));
    return logits;
}

// The final softmax by id (masked and removed members: 0), as llama.cpp's dist
// leaves p in the array for test-sampling's check.
std::vector<double> probs_by_id(const CandidateArray& cur, size_t vocab) {
    std::vector<double> p(vocab, 0.0);
    for (const Weighted& w : canonical_distribution(cur)) p[static_cast<size_t>(w.id)] = w.p;
    return p;
}

std::vector<double> probs_by_id(const std::vector<Weighted>& dist, size_t vocab) {
    std::vector<double> p(vocab, 0.0);
    for (const Weighted& w : dist) p[static_cast<size_t>(w.id)] = w.p;
    return p;
}

void expect_probs(const std::vector<double>& got, const std::vector<float>& expected, double tolerance,
                  const std::string& what) {
    ASSERT_EQ(got.size(), expected.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tolerance) << what << " id " << i;
}

RowParams penalties_params(int32_t last_n, float repeat, float freq, float present) {
    RowParams params;
    params.penalty_last_n = last_n;
    params.penalty_repeat = repeat;
    params.penalty_freq = freq;
    params.penalty_present = present;
    return params;
}

RowParams dry_params(float multiplier, float base, int32_t allowed, int32_t last_n,
                     std::vector<std::vector<int32_t>> breakers = {}) {
    RowParams params;
    params.dry_multiplier = multiplier;
    params.dry_base = base;
    params.dry_allowed_length = allowed;
    params.dry_penalty_last_n = last_n;
    params.dry_sequence_breakers = std::move(breakers);
    return params;
}

std::vector<float> logits_after(const std::vector<float>& logits, void (*apply)(CandidateArray&, const std::vector<int32_t>&, const RowParams&),
                                const std::vector<int32_t>& history, const RowParams& params) {
    CandidateArray cur = make_candidates(logits.data(), static_cast<int32_t>(logits.size()));
    apply(cur, history, params);
    std::vector<float> out(logits.size());
    for (const TokenData& td : cur.data) out[static_cast<size_t>(td.id)] = td.logit;
    return out;
}

// ---- penalties (llama_sampler_penalties_apply) -----------------------------------

// tests/test-sampling.cpp, test_penalties: the window is the whole history
// (penalty_last_n = history size), probabilities from dist afterwards.
struct PenaltyVector {
    std::vector<int32_t> history;
    std::vector<float> expected;
    float repeat, freq, present;
};

TEST(ReferenceStatefulPenalties, LlamaCppVectors) {
    const std::vector<float> probs = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f};
    const PenaltyVector vectors[] = {
        {{0}, {0, 0.25f, 0.25f, 0.25f, 0.25f}, 50.0f, 0.0f, 0.0f},
        {{0, 1, 2}, {0, 0, 0, 0.5f, 0.5f}, 50.0f, 0.0f, 0.0f},
        {{0, 1, 2, 0, 0}, {0, 0, 0, 0.5f, 0.5f}, 50.0f, 0.0f, 0.0f},
        {{0}, {0.000011f, 0.249997f, 0.249997f, 0.249997f, 0.249997f}, 1.0f, 5.0f, 5.0f},
        {{0, 1, 2}, {0.000023f, 0.000023f, 0.000023f, 0.499966f, 0.499966f}, 1.0f, 5.0f, 5.0f},
        {{0, 1, 2, 0, 0}, {0.000000f, 0.000023f, 0.000023f, 0.499977f, 0.499977f}, 1.0f, 5.0f, 5.0f},
    };
    const std::vector<float> logits = logits_of(probs);
    for (const PenaltyVector& v : vectors) {
        const RowParams params =
            penalties_params(static_cast<int32_t>(v.history.size()), v.repeat, v.freq, v.present);
        CandidateArray cur = make_candidates(logits.data(), 5);
        apply_penalties(cur, v.history, params);
        expect_probs(probs_by_id(cur, 5), v.expected, 1e-5, "penalties");

        // The same through a chain, with the history in the slot.
        SlotState slot;
        slot.history = v.history;
        std::vector<Weighted> dist;
        std::string message;
        ASSERT_EQ(row_distribution(twin_chain("penalties"), logits.data(), 5, params, &dist, &message, 0, 0, &slot),
                  SIEVE_OK)
            << message;
        expect_probs(probs_by_id(dist, 5), v.expected, 1e-5, "penalties chain");
    }
}

TEST(ReferenceStatefulPenalties, FloatArithmeticAsLlamaCpp) {
    // logit <= 0 is multiplied, > 0 divided, then count * freq + present is
    // subtracted, each in float.
    const std::vector<float> logits = {1.5f, -0.75f, 0.0f, 3.0f, -INFINITY, 2.0f};
    const std::vector<int32_t> history = {0, 1, 1, 2, 4, 4, 4, 0, 0};
    const float repeat = 1.3f, freq = 0.37f, present = 0.11f;
    const std::vector<float> got =
        logits_after(logits, apply_penalties, history, penalties_params(-1, repeat, freq, present));
    auto penalize = [&](float l, int count) {
        l = l <= 0 ? l * repeat : l / repeat;
        return l - (static_cast<float>(count) * freq + static_cast<float>(count > 0) * present);
    };
    EXPECT_EQ(got[0], penalize(1.5f, 3));
    EXPECT_EQ(got[1], penalize(-0.75f, 2));
    EXPECT_EQ(got[2], penalize(0.0f, 1)); // 0 is multiplied: 0 - (0.37 + 0.11)
    EXPECT_EQ(got[3], 3.0f);              // not in the history: untouched
    EXPECT_EQ(got[4], -INFINITY);         // masked stays masked
    EXPECT_EQ(got[5], 2.0f);
    // Values by hand: 1.5 / 1.3 - (3 * 0.37 + 0.11) = 1.153846 - 1.22 = -0.066154.
    EXPECT_NEAR(got[0], -0.0661538, 1e-6);
    EXPECT_NEAR(got[1], -0.975 - 0.85, 1e-6);
    EXPECT_NEAR(got[2], -0.48, 1e-6);
}

TEST(ReferenceStatefulPenalties, OffWhenLastNZeroOrNeutral) {
    const std::vector<float> logits = {1.0f, -2.0f, 0.5f};
    const std::vector<int32_t> history = {0, 1, 2, 2};
    // last_n == 0: off, whatever the penalties.
    EXPECT_EQ(logits_after(logits, apply_penalties, history, penalties_params(0, 50.0f, 5.0f, 5.0f)), logits);
    // repeat 1, freq 0, present 0: off, whatever the window.
    EXPECT_EQ(logits_after(logits, apply_penalties, history, penalties_params(-1, 1.0f, 0.0f, 0.0f)), logits);
    // An empty history changes nothing either.
    EXPECT_EQ(logits_after(logits, apply_penalties, {}, penalties_params(-1, 2.0f, 1.0f, 1.0f)), logits);
    // Any one of the three on is enough.
    EXPECT_NE(logits_after(logits, apply_penalties, history, penalties_params(64, 1.0f, 0.0f, 0.25f)), logits);
}

TEST(ReferenceStatefulPenalties, WindowIsTheLastNTokens) {
    const std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
    const std::vector<int32_t> history = {0, 0, 0, 1, 2, 2};
    // last_n 3: the window is {1, 2, 2}; token 0 (older) is not counted.
    std::vector<float> got = logits_after(logits, apply_penalties, history, penalties_params(3, 1.0f, 1.0f, 0.0f));
    EXPECT_EQ(got, (std::vector<float>{1.0f, 0.0f, -1.0f, 1.0f}));
    // -1: the whole history.
    got = logits_after(logits, apply_penalties, history, penalties_params(-1, 1.0f, 1.0f, 0.0f));
    EXPECT_EQ(got, (std::vector<float>{-2.0f, 0.0f, -1.0f, 1.0f}));
    // A window longer than the history is the whole history.
    EXPECT_EQ(logits_after(logits, apply_penalties, history, penalties_params(1000, 1.0f, 1.0f, 0.0f)), got);
    // last_n 1: only the newest token.
    got = logits_after(logits, apply_penalties, history, penalties_params(1, 1.0f, 0.0f, 0.5f));
    EXPECT_EQ(got, (std::vector<float>{1.0f, 1.0f, 0.5f, 1.0f}));
}

TEST(ReferenceStatefulPenalties, MaskingIsAllowedInfinityAndAllMaskedAreNot) {
    // A huge repeat penalty drives a very negative logit to -inf: a mask.
    const float logits[] = {-1e38f, 0.5f, 1.0f};
    SlotState slot;
    slot.history = {0};
    std::vector<Weighted> dist;
    std::string message;
    RowParams params = penalties_params(-1, 1e10f, 0.0f, 0.0f);
    ASSERT_EQ(row_distribution(twin_chain("penalties"), logits, 3, params, &dist, &message, 0, 0, &slot), SIEVE_OK)
        << message;
    ASSERT_EQ(dist.size(), 2u);
    EXPECT_EQ(dist[0].id, 2);
    EXPECT_EQ(dist[1].id, 1);

    // Every candidate masked: SIEVE_ERROR_ALL_MASKED.
    slot.history = {0, 1, 2};
    const float negative[] = {-1e38f, -2e38f, -3e38f};
    RowResult r = sample_row(twin_chain("penalties"), negative, 3, params, 0, 0, &slot);
    EXPECT_EQ(r.status, SIEVE_ERROR_ALL_MASKED) << r.message;
    EXPECT_EQ(r.token, -1);

    // A repeat penalty below 1 overflowing a positive logit to +inf fails the row.
    const float positive[] = {1e30f, 0.0f};
    slot.history = {0};
    r = sample_row(twin_chain("penalties"), positive, 2, penalties_params(-1, 1e-10f, 0.0f, 0.0f), 0, 0, &slot);
    EXPECT_EQ(r.status, SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_NE(r.message.find("penalties"), std::string::npos) << r.message;
}

TEST(ReferenceStatefulPenalties, BadParameters) {
    const float logits[] = {0.0f, 1.0f, 2.0f};
    const std::vector<SamplerKind> chain = twin_chain("penalties");
    auto status_of = [&](const RowParams& params, const SlotState* slot = nullptr) {
        SlotState copy = slot ? *slot : SlotState{};
        return sample_row(chain, logits, 3, params, 0, 0, &copy);
    };
    for (float bad : {NAN, INFINITY, -INFINITY}) {
        EXPECT_EQ(status_of(penalties_params(64, bad, 0.0f, 0.0f)).status, SIEVE_ERROR_INVALID_PARAMETER);
        EXPECT_EQ(status_of(penalties_params(64, 1.0f, bad, 0.0f)).status, SIEVE_ERROR_INVALID_PARAMETER);
        EXPECT_EQ(status_of(penalties_params(64, 1.0f, 0.0f, bad)).status, SIEVE_ERROR_INVALID_PARAMETER);
    }
    RowResult r = status_of(penalties_params(-2, 1.1f, 0.0f, 0.0f));
    EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_PARAMETER);
    EXPECT_NE(r.message.find("penalty_last_n -2"), std::string::npos) << r.message;
    for (float repeat : {0.0f, -0.0f, -1.5f}) {
        r = status_of(penalties_params(64, repeat, 0.0f, 0.0f));
        EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_PARAMETER) << repeat;
        EXPECT_NE(r.message.find("penalty_repeat"), std::string::npos) << r.message;
    }
    // History tokens outside [0, vocab).
    for (int32_t token : {3, -1, 1000}) {
        SlotState slot;
        slot.history = {0, token, 1};
        r = status_of(penalties_params(64, 1.1f, 0.0f, 0.0f), &slot);
        EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_ARGUMENT) << token;
        EXPECT_NE(r.message.find("position 1"), std::string::npos) << r.message;
    }
    // The checks apply with the sampler in the chain only.
    RowParams params = penalties_params(-5, NAN, 0.0f, 0.0f);
    EXPECT_EQ(sample_row(twin_chain("top_k"), logits, 3, params, 0).status, SIEVE_OK);
}

// ---- DRY (llama_sampler_dry_apply) ----------------------------------------------

struct DryVector {
    std::vector<float> probs;
    std::vector<int32_t> history;
    std::vector<float> expected;
    float multiplier, base;
    int32_t allowed, last_n;
    std::vector<std::vector<int32_t>> breakers;
};

TEST(ReferenceStatefulDry, LlamaCppVectors) {
    // tests/test-sampling.cpp, test_dry.
    const DryVector vectors[] = {
        {{0.25f, 0.25f, 0.25f, 0.25f}, {0, 1}, {0.25f, 0.25f, 0.25f, 0.25f}, 1.0f, 1.1f, 2, 4, {}},
        {{0.25f, 0.25f, 0.25f, 0.25f}, {0, 1, 2, 0, 1}, {0.296923f, 0.296923f, 0.109232f, 0.296923f}, 1.0f, 1.1f, 2, 5, {}},
        {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 3, 4, 0, 1}, {0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, 1.0f, 1.1f, 2, 6, {{3}}},
        {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 2, 0, 1}, {0.241818f, 0.241818f, 0.032727f, 0.241818f, 0.241818f}, 2.0f, 1.1f, 2, 5, {}},
        {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 2, 3, 4, 0, 1}, {0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, 1.0f, 1.1f, 4, 7, {}},
    };
    for (const DryVector& v : vectors) {
        const std::vector<float> logits = logits_of(v.probs);
        const int32_t vocab = static_cast<int32_t>(logits.size());
        const RowParams params = dry_params(v.multiplier, v.base, v.allowed, v.last_n, v.breakers);
        CandidateArray cur = make_candidates(logits.data(), vocab);
        apply_dry(cur, v.history, params);
        expect_probs(probs_by_id(cur, logits.size()), v.expected, 1e-5, "dry");

        SlotState slot;
        slot.history = v.history;
        std::vector<Weighted> dist;
        std::string message;
        ASSERT_EQ(row_distribution(twin_chain("dry"), logits.data(), vocab, params, &dist, &message, 0, 0, &slot),
                  SIEVE_OK)
            << message;
        expect_probs(probs_by_id(dist, logits.size()), v.expected, 1e-5, "dry chain");
    }
}

TEST(ReferenceStatefulDry, PenaltyIsMultiplierTimesBaseToTheExcess) {
    // history 5 1 2 3 4 | 5 1 2 3: the suffix "5 1 2 3" (4 tokens) appeared before,
    // followed by 4, so 4 gets 0.8 * 1.75^(4 - 2); nothing else repeats.
    const std::vector<float> logits(8, 0.0f);
    const std::vector<int32_t> history = {5, 1, 2, 3, 4, 5, 1, 2, 3};
    const std::vector<float> got = logits_after(logits, apply_dry, history, dry_params(0.8f, 1.75f, 2, -1));
    const float penalty = static_cast<float>(0.8 * std::pow(1.75, 2.0)); // double pow, as llama.cpp's std::pow(float, int)
    EXPECT_NEAR(penalty, 2.45f, 1e-6f);
    for (size_t id = 0; id < got.size(); ++id) EXPECT_EQ(got[id], id == 4 ? -penalty : 0.0f) << id;
}

TEST(ReferenceStatefulDry, EarlyReturns) {
    const std::vector<float> logits(6, 0.0f);
    const std::vector<int32_t> history = {0, 1, 2, 0, 1}; // penalizes 2 when on
    auto penalized = [&](const RowParams& params, const std::vector<int32_t>& h) {
        return logits_after(logits, apply_dry, h, params) != logits;
    };
    EXPECT_TRUE(penalized(dry_params(1.0f, 1.1f, 2, -1), history));
    EXPECT_FALSE(penalized(dry_params(0.0f, 1.1f, 2, -1), history));     // multiplier 0
    EXPECT_FALSE(penalized(dry_params(1.0f, 0.999f, 2, -1), history));   // base < 1
    EXPECT_TRUE(penalized(dry_params(1.0f, 1.0f, 2, -1), history));       // base 1 is on (penalty = multiplier)
    EXPECT_FALSE(penalized(dry_params(1.0f, 1.1f, 2, 0), history));       // last_n 0
    EXPECT_FALSE(penalized(dry_params(1.0f, 1.1f, 2, -1), {0, 0}));       // window length <= allowed length
    EXPECT_FALSE(penalized(dry_params(1.0f, 1.1f, 2, -1), {}));           // no history
    EXPECT_FALSE(penalized(dry_params(1.0f, 1.1f, 5, -1), history));      // window 5 <= allowed 5
}

TEST(ReferenceStatefulDry, WindowIsTheLastNTokens) {
    const std::vector<float> logits(4, 0.0f);
    const std::vector<int32_t> history = {0, 1, 2, 0, 1};
    const float one = static_cast<float>(1.0 * std::pow(1.1, 0.0));
    // -1 and any window covering "0 1 2 0 1": token 2 gets multiplier * base^0.
    for (int32_t last_n : {-1, 5, 6, 1000}) {
        EXPECT_EQ(logits_after(logits, apply_dry, history, dry_params(1.0f, 1.1f, 2, last_n)),
                  (std::vector<float>{0.0f, 0.0f, -one, 0.0f}))
            << last_n;
    }
    // Window of 4 ({1 2 0 1}): "1" repeats but is shorter than 2; of 3: no repeat.
    for (int32_t last_n : {3, 4}) {
        EXPECT_EQ(logits_after(logits, apply_dry, history, dry_params(1.0f, 1.1f, 2, last_n)), logits) << last_n;
    }
    // allowed length 1 over the window of 4: "1" repeated once, followed by 2.
    EXPECT_EQ(logits_after(logits, apply_dry, history, dry_params(1.0f, 1.1f, 1, 4)),
              (std::vector<float>{0.0f, 0.0f, -one, 0.0f}));
}

TEST(ReferenceStatefulDry, MaxRepeatPerToken) {
    // The z-algorithm example in llama.cpp's comments: last tokens a b c c b c y a b c
    // (a=0 b=1 c=2 y=3) have repeat counts 0 0 3 1 0 2 0 0 0 0: the next c would
    // extend a b c (3), b would extend c (1), y would extend b c (2). With allowed
    // length 1 those are penalized base^(len - 1): c by 1.5^2, b by 1.5^0, y by 1.5^1.
    const std::vector<float> logits(5, 0.0f);
    const std::vector<int32_t> history = {0, 1, 2, 2, 1, 2, 3, 0, 1, 2};
    const std::vector<float> got = logits_after(logits, apply_dry, history, dry_params(1.0f, 1.5f, 1, -1));
    EXPECT_EQ(got[0], 0.0f);
    EXPECT_EQ(got[1], -1.0f);
    EXPECT_EQ(got[2], -2.25f);
    EXPECT_EQ(got[3], -1.5f);
    EXPECT_EQ(got[4], 0.0f);
}

TEST(ReferenceStatefulDry, MaskedCandidatesStayMasked) {
    const std::vector<float> logits = {0.0f, 0.0f, -INFINITY, 0.0f};
    const std::vector<float> got = logits_after(logits, apply_dry, {0, 1, 2, 0, 1}, dry_params(1.0f, 1.1f, 2, -1));
    EXPECT_EQ(got, logits);
}

TEST(ReferenceStatefulDry, ExponentCap) {
    // llama.cpp: FLOAT_MAX_LOG / log(base) in float, truncated, for base > 1.000001.
    EXPECT_EQ(dry_max_exponent(1.75f), 158);
    EXPECT_EQ(dry_max_exponent(2.0f), 128);
    EXPECT_EQ(dry_max_exponent(10.0f), 38);
    EXPECT_EQ(dry_max_exponent(1e10f), 3);
    EXPECT_EQ(dry_max_exponent(1.000002f), 43780112);
    EXPECT_EQ(dry_max_exponent(1.000001f), 0); // not > 1.000001f: no cap
    EXPECT_EQ(dry_max_exponent(1.0f), 0);
    EXPECT_EQ(dry_max_exponent(0.5f), 0);

    // base 1e10 caps the exponent at 3: a repeat of 6 with allowed length 1 would
    // give 1e-30 * 1e10^5 = 1e20; capped it is 1e-30 * 1e10^3, about 1.
    const std::vector<float> logits(8, 0.0f);
    const std::vector<int32_t> history = {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6};
    const std::vector<float> got = logits_after(logits, apply_dry, history, dry_params(1e-30f, 1e10f, 1, -1));
    const float capped = static_cast<float>(static_cast<double>(1e-30f) * std::pow(static_cast<double>(1e10f), 3.0));
    EXPECT_NEAR(capped, 1.0f, 1e-6f);
    EXPECT_EQ(got[1], -capped);
    for (size_t id : {0u, 2u, 3u, 4u, 5u, 6u, 7u}) EXPECT_EQ(got[id], 0.0f) << id;
}

TEST(ReferenceStatefulDry, MultiTokenBreakerLimitsTheRepeat) {
    // 7 8 1 2 3 9 | 7 8 1 2 3: the suffix "7 8 1 2 3" (5) appeared before, followed by 9.
    const std::vector<float> logits(10, 0.0f);
    const std::vector<int32_t> history = {7, 8, 1, 2, 3, 9, 7, 8, 1, 2, 3};
    const float base = 2.0f;
    // No breakers: 9 gets 2^(5 - 2).
    std::vector<float> got = logits_after(logits, apply_dry, history, dry_params(1.0f, base, 2, -1));
    EXPECT_EQ(got[9], -8.0f);
    // Breaker "7 8": the newest occurrence ends 3 tokens before the end, so
    // rep_limit = 3 and the repeat counts as 3: 2^(3 - 2).
    got = logits_after(logits, apply_dry, history, dry_params(1.0f, base, 2, -1, {{7, 8}}));
    EXPECT_EQ(got[9], -2.0f);
    // A breaker whose tail does not match ("7 5") changes nothing.
    got = logits_after(logits, apply_dry, history, dry_params(1.0f, base, 2, -1, {{7, 5}}));
    EXPECT_EQ(got[9], -8.0f);
    // The longest matching tail among breakers with the same head wins ("7" and
    // "7 8": rep_limit = 4 - 1 = 3).
    got = logits_after(logits, apply_dry, history, dry_params(1.0f, base, 2, -1, {{7}, {7, 8}}));
    EXPECT_EQ(got[9], -2.0f);
    // Only "7": rep_limit = 4, 2^(4 - 2).
    got = logits_after(logits, apply_dry, history, dry_params(1.0f, base, 2, -1, {{7}}));
    EXPECT_EQ(got[9], -4.0f);
    // rep_limit < allowed length: 7 8 1 5 7 8 1 would penalize 5 by 2^(3-2)
    // without breakers; with "7 8" only 1 token follows the breaker: no-op.
    const std::vector<int32_t> short_tail = {7, 8, 1, 5, 7, 8, 1};
    EXPECT_EQ(logits_after(logits, apply_dry, short_tail, dry_params(1.0f, base, 2, -1))[5], -2.0f);
    EXPECT_EQ(logits_after(logits, apply_dry, short_tail, dry_params(1.0f, base, 2, -1, {{7, 8}})), logits);
}

TEST(ReferenceStatefulDry, SingleTokenBreakersAreNeverPenalized) {
    // 1 2 3 1 2 4 1 2: the suffix "1 2" was followed by 3 and by 4.
    const std::vector<float> logits(6, 0.0f);
    const std::vector<int32_t> history = {1, 2, 3, 1, 2, 4, 1, 2};
    std::vector<float> got = logits_after(logits, apply_dry, history, dry_params(1.0f, 1.5f, 2, -1));
    EXPECT_EQ(got[3], -1.0f);
    EXPECT_EQ(got[4], -1.0f);
    // "3" as a single-token breaker: 3 is spared (4 still penalized).
    got = logits_after(logits, apply_dry, history, dry_params(1.0f, 1.5f, 2, -1, {{3}}));
    EXPECT_EQ(got[3], 0.0f);
    EXPECT_EQ(got[4], -1.0f);
    // 3 heading a multi-token breaker is not spared.
    got = logits_after(logits, apply_dry, history, dry_params(1.0f, 1.5f, 2, -1, {{3, 5}}));
    EXPECT_EQ(got[3], -1.0f);
    // Both: the single-token one spares it.
    got = logits_after(logits, apply_dry, history, dry_params(1.0f, 1.5f, 2, -1, {{3, 5}, {3}}));
    EXPECT_EQ(got[3], 0.0f);
}

TEST(ReferenceStatefulDry, InfinitePenaltyMasksNegativeMultiplierFails) {
    // 1 2 1 2 1: "1 2 1" repeats, so 2 gets 1e30 * 1e10^(3 - 1) = 1e50, which
    // overflows float: the token is masked (-inf), which is allowed.
    const float logits[] = {0.0f, 0.5f, 1.0f};
    SlotState slot;
    slot.history = {1, 2, 1, 2, 1};
    std::vector<Weighted> dist;
    std::string message;
    ASSERT_EQ(row_distribution(twin_chain("dry"), logits, 3, dry_params(1e30f, 1e10f, 1, -1), &dist, &message, 0, 0,
                               &slot),
              SIEVE_OK)
        << message;
    ASSERT_EQ(dist.size(), 2u); // token 2 (it would extend "1 2 1 2 1") masked
    EXPECT_EQ(dist[0].id, 1);
    EXPECT_EQ(dist[1].id, 0);
    // A negative multiplier overflowing to +inf fails the row.
    const RowResult r = sample_row(twin_chain("dry"), logits, 3, dry_params(-1e30f, 1e10f, 1, -1), 0, 0, &slot);
    EXPECT_EQ(r.status, SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_NE(r.message.find("DRY"), std::string::npos) << r.message;
}

// A masked member (-inf) stays masked whatever the penalties or DRY subtract:
// a term of -inf (a huge negative freq/present, a negative DRY multiplier that
// overflows) would make llama.cpp's -inf - -inf a NaN, and the softmax NaN.
// The draw is over the unmasked members, with finite probabilities.
TEST(ReferenceStatefulMasked, MaskedMembersStayMaskedUnderInfiniteTerms) {
    const float logits[] = {0.0f, 0.5f, -INFINITY};
    auto expect_two_survivors = [&](const char* chain, const RowParams& params, std::vector<int32_t> history) {
        SCOPED_TRACE(chain);
        SlotState slot;
        slot.history = std::move(history);
        std::vector<Weighted> dist;
        std::string message;
        ASSERT_EQ(row_distribution(twin_chain(chain), logits, 3, params, &dist, &message, 0, 0, &slot), SIEVE_OK)
            << message;
        ASSERT_EQ(dist.size(), 2u);
        EXPECT_EQ(dist[0].id, 1);
        EXPECT_EQ(dist[1].id, 0);
        for (uint32_t step = 0; step < 8; ++step) {
            SlotState copy = slot;
            const RowResult r = sample_row(twin_chain(chain), logits, 3, params, step, 0, &copy);
            ASSERT_EQ(r.status, SIEVE_OK) << r.message;
            EXPECT_NE(r.token, 2);
            EXPECT_TRUE(r.p > 0.0f && r.p < 1.0f) << r.p;
        }
    };
    // count 2 x -3e38 overflows the subtracted term to -inf; only the masked
    // token is in the window, so no finite logit meets it.
    expect_two_survivors("penalties", penalties_params(-1, 1.0f, -3e38f, 0.0f), {2, 2});
    // A NaN term (count x freq = +inf, present = -inf after the overflow).
    expect_two_survivors("penalties", penalties_params(-1, 1.0f, 3e38f, -3e38f), {2, 2});
    // "0 2 0 2 0": the suffix "0 2 0" was followed by 2, so 2 alone gets DRY's
    // penalty, -1e30 x 1e10^2, which overflows float to -inf.
    expect_two_survivors("dry", dry_params(-1e30f, 1e10f, 1, -1), {0, 2, 0, 2, 0});
}

TEST(ReferenceStatefulDry, BadParameters) {
    const float logits[] = {0.0f, 1.0f, 2.0f};
    const std::vector<SamplerKind> chain = twin_chain("dry");
    auto run = [&](const RowParams& params) {
        SlotState slot;
        slot.history = {0, 1, 0, 1};
        return sample_row(chain, logits, 3, params, 0, 0, &slot);
    };
    EXPECT_EQ(run(dry_params(0.8f, 1.75f, 2, -1, {{2}, {0, 1}})).status, SIEVE_OK);
    for (float bad : {NAN, INFINITY, -INFINITY}) {
        EXPECT_EQ(run(dry_params(bad, 1.75f, 2, -1)).status, SIEVE_ERROR_INVALID_PARAMETER);
        EXPECT_EQ(run(dry_params(0.8f, bad, 2, -1)).status, SIEVE_ERROR_INVALID_PARAMETER);
    }
    RowResult r = run(dry_params(0.8f, 1.75f, 2, -2));
    EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_PARAMETER);
    EXPECT_NE(r.message.find("dry_penalty_last_n -2"), std::string::npos) << r.message;
    r = run(dry_params(0.8f, 1.75f, -1, 4));
    EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_PARAMETER);
    EXPECT_NE(r.message.find("dry_allowed_length"), std::string::npos) << r.message;
    r = run(dry_params(0.8f, 1.75f, 2, -1, {{1}, {}}));
    EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_PARAMETER);
    EXPECT_NE(r.message.find("breaker 1 is empty"), std::string::npos) << r.message;
    r = run(dry_params(0.8f, 1.75f, 2, -1, {{1, 3}}));
    EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_PARAMETER);
    EXPECT_NE(r.message.find("token 3"), std::string::npos) << r.message;
    EXPECT_EQ(run(dry_params(0.8f, 1.75f, 2, -1, {{-1}})).status, SIEVE_ERROR_INVALID_PARAMETER);

    SlotState slot;
    slot.history = {0, 3};
    r = sample_row(chain, logits, 3, dry_params(0.8f, 1.75f, 2, -1), 0, 0, &slot);
    EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(r.message.find("token 3 at position 1"), std::string::npos) << r.message;
}

// ---- mirostat v1 / v2 (llama_sampler_mirostat_apply, _v2_apply) ------------------

RowParams mirostat_params(float tau, float eta, uint32_t seed = 42u) {
    RowParams params;
    params.mirostat_tau = tau;
    params.mirostat_eta = eta;
    params.seed = seed;
    return params;
}

// Zipf logits -s log(i + 1): log(p_i / p_{i+1}) = s log((i + 2) / (i + 1)), so
// mirostat's s_hat is s.
std::vector<float> zipf_logits(size_t n, double s) {
    std::vector<float> logits(n);
    for (size_t i = 0; i < n; ++i) logits[i] = static_cast<float>(-s * std::log(static_cast<double>(i + 1)));
    return logits;
}

TEST(ReferenceStatefulMirostat, V1KeepsKFromTheZipfEstimate) {
    // s_hat = 2, epsilon = 1, n = 1000: k = (2^mu / (1 - 1000^-1))^(1/2).
    const std::vector<float> logits = zipf_logits(1000, 2.0);
    const std::vector<SamplerKind> chain = twin_chain("mirostat");
    struct Case {
        float mu;
        size_t k;
    };
    // mu 10 (2 * tau for tau 5): sqrt(1024 / 0.999) = 32.02; mu 12: 64.03; mu 3: 2.83.
    for (const Case c : {Case{10.0f, 32}, Case{12.0f, 64}, Case{3.0f, 2}}) {
        SlotState slot;
        if (c.mu != 10.0f) {
            slot.mu_set = true;
            slot.mu = c.mu;
        }
        std::vector<Weighted> dist;
        std::string message;
        ASSERT_EQ(row_distribution(chain, logits.data(), 1000, mirostat_params(5.0f, 0.1f), &dist, &message, 0, 0,
                                   &slot),
                  SIEVE_OK)
            << message;
        ASSERT_EQ(dist.size(), c.k) << c.mu;
        double norm = 0.0;
        for (size_t i = 0; i < c.k; ++i) norm += 1.0 / static_cast<double>((i + 1) * (i + 1));
        for (size_t i = 0; i < c.k; ++i) {
            EXPECT_EQ(dist[i].id, static_cast<int32_t>(i));
            EXPECT_NEAR(dist[i].p, 1.0 / static_cast<double>((i + 1) * (i + 1)) / norm, 1e-6);
        }
    }
}

TEST(ReferenceStatefulMirostat, V1EstimateUsesTheUnmaskedMembersAndTheCallsVocab) {
    // The same Zipf head over 50 live tokens and 950 masked ones: the estimate
    // uses the 49 live pairs (s_hat = 2), n = the call's vocab 1000: k = 32.
    std::vector<float> logits = zipf_logits(1000, 2.0);
    for (size_t i = 50; i < logits.size(); ++i) logits[i] = -INFINITY;
    std::vector<Weighted> dist;
    std::string message;
    ASSERT_EQ(row_distribution(twin_chain("mirostat"), logits.data(), 1000, mirostat_params(5.0f, 0.1f), &dist,
                               &message),
              SIEVE_OK)
        << message;
    EXPECT_EQ(dist.size(), 32u);
    // A call with vocab 30 (the first 30 logits, all live): k =
    // sqrt(1024 / (1 - 1/30)) = 32.5 >= the size, so all 30 are kept.
    ASSERT_EQ(row_distribution(twin_chain("mirostat"), logits.data(), 30, mirostat_params(5.0f, 0.1f), &dist,
                               &message),
              SIEVE_OK);
    EXPECT_EQ(dist.size(), 30u);
}

TEST(ReferenceStatefulMirostat, V1DegenerateEstimates) {
    const std::vector<SamplerKind> chain = twin_chain("mirostat");
    std::vector<Weighted> dist;
    std::string message;
    auto keep = [&](const std::vector<float>& logits, float mu) {
        SlotState slot;
        slot.mu_set = true;
        slot.mu = mu;
        EXPECT_EQ(row_distribution(chain, logits.data(), static_cast<int32_t>(logits.size()), mirostat_params(5.0f, 0.1f),
                                   &dist, &message, 0, 0, &slot),
                  SIEVE_OK)
            << message;
        return dist.size();
    };
    // All logits equal: s_hat = 0, k = (2^mu / (n - 1))^inf: everything when
    // 2^mu > n - 1, one token (the lowest id) when smaller.
    const std::vector<float> flat(10, 0.5f);
    EXPECT_EQ(keep(flat, 10.0f), 10u);
    EXPECT_EQ(keep(flat, 2.0f), 1u);
    EXPECT_EQ(dist[0].id, 0);
    // 2^mu overflowing: k = inf keeps the whole array; 2^mu underflowing: k = 0 -> 1.
    const std::vector<float> zipf = zipf_logits(200, 1.5);
    EXPECT_EQ(keep(zipf, 5000.0f), 200u);
    EXPECT_EQ(keep(zipf, -5000.0f), 1u);
    EXPECT_EQ(dist[0].id, 0);
    // One live candidate: kept, drawn with p = 1.
    const std::vector<float> one = {-INFINITY, 2.0f, -INFINITY};
    EXPECT_EQ(keep(one, 10.0f), 1u);
    EXPECT_EQ(dist[0].id, 1);
    EXPECT_EQ(dist[0].p, 1.0);
    const std::vector<float> vocab_one = {3.0f};
    EXPECT_EQ(keep(vocab_one, 10.0f), 1u);
}

TEST(ReferenceStatefulMirostat, V2KeepsSurprisesUpToMuAndAtLeastOne) {
    // p = {0.5, 0.25, 0.125, 0.125}: surprises 1, 2, 3, 3 bits.
    const std::vector<float> logits = logits_of({0.5f, 0.25f, 0.125f, 0.125f});
    const std::vector<SamplerKind> chain = twin_chain("mirostat_v2");
    struct Case {
        float mu;
        std::vector<float> expected;
    };
    const Case cases[] = {
        {3.5f, {0.5f, 0.25f, 0.125f, 0.125f}},
        {2.5f, {2.0f / 3.0f, 1.0f / 3.0f, 0.0f, 0.0f}},
        {1.5f, {1.0f, 0.0f, 0.0f, 0.0f}},
        {0.5f, {1.0f, 0.0f, 0.0f, 0.0f}},  // nothing qualifies: the first is kept
        {-3.0f, {1.0f, 0.0f, 0.0f, 0.0f}}, // even with a negative mu
    };
    for (const Case& c : cases) {
        SlotState slot;
        slot.mu_set = true;
        slot.mu = c.mu;
        std::vector<Weighted> dist;
        std::string message;
        ASSERT_EQ(row_distribution(chain, logits.data(), 4, mirostat_params(5.0f, 0.1f), &dist, &message, 0, 0, &slot),
                  SIEVE_OK)
            << message;
        expect_probs(probs_by_id(dist, 4), c.expected, 1e-6, "mu " + std::to_string(c.mu));
        EXPECT_EQ(slot.mu, c.mu); // row_distribution leaves the slot alone
    }
}

TEST(ReferenceStatefulMirostat, MuStartsAtTwiceTauAndFollowsTheSurprise) {
    // One live candidate: p = 1, surprise 0, so each draw raises mu by eta * tau:
    // 2 * 5 = 10 -> 10.5 -> 11 -> 11.5, for both versions.
    const float logits[] = {-INFINITY, 0.0f, -INFINITY};
    for (const char* name : {"mirostat", "mirostat_v2"}) {
        SlotState slot;
        for (float expected : {10.5f, 11.0f, 11.5f}) {
            const RowResult r = sample_row(twin_chain(name), logits, 3, mirostat_params(5.0f, 0.1f), 0, 0, &slot);
            ASSERT_EQ(r.status, SIEVE_OK) << r.message;
            EXPECT_EQ(r.token, 1);
            EXPECT_EQ(r.p, 1.0f);
            EXPECT_TRUE(slot.mu_set);
            EXPECT_EQ(slot.mu, expected) << name;
        }
    }
    // A slot's mu is used as it is (not re-initialized from tau).
    SlotState slot;
    slot.mu_set = true;
    slot.mu = -1.0f;
    ASSERT_EQ(sample_row(twin_chain("mirostat_v2"), logits, 3, mirostat_params(5.0f, 0.1f), 0, 0, &slot).status,
              SIEVE_OK);
    EXPECT_EQ(slot.mu, -0.5f); // -1 - 0.1 * (0 - 5)
}

TEST(ReferenceStatefulMirostat, UpdateUsesTheDrawnTokensSurpriseOverSteps) {
    // Several steps of v2 over a fixed row: each step draws from the distribution
    // row_distribution shows at the slot's mu, and mu -= eta * (-log2 p - tau)
    // with p under that (renormalized) distribution.
    const std::vector<float> logits = logits_of({0.4f, 0.3f, 0.15f, 0.1f, 0.05f});
    for (const char* name : {"mirostat", "mirostat_v2"}) {
        const std::vector<SamplerKind> chain = twin_chain(name);
        const RowParams params = mirostat_params(1.5f, 0.5f, 7u);
        SlotState slot;
        float mu = 3.0f; // 2 * tau
        bool saw_cut = false;
        for (uint32_t step = 0; step < 12; ++step) {
            std::vector<Weighted> dist;
            std::string message;
            ASSERT_EQ(row_distribution(chain, logits.data(), 5, params, &dist, &message, step, 0, &slot), SIEVE_OK);
            saw_cut = saw_cut || dist.size() < 5;
            const size_t index = draw_inverse_cdf(dist, uniform_u32(params.seed, step, 0));
            const RowResult r = sample_row(chain, logits.data(), 5, params, step, 0, &slot);
            ASSERT_EQ(r.status, SIEVE_OK) << r.message;
            EXPECT_EQ(r.token, dist[index].id);
            EXPECT_EQ(r.p, static_cast<float>(dist[index].p));
            const float surprise = static_cast<float>(-std::log2(dist[index].p));
            mu = mu - 0.5f * (surprise - 1.5f);
            EXPECT_EQ(slot.mu, mu) << name << " step " << step;
        }
        EXPECT_TRUE(saw_cut) << name; // the tau was low enough to truncate at some step
    }
}

TEST(ReferenceStatefulMirostat, DrawIsSievesInverseCdf) {
    // With a mu so high that nothing is cut, mirostat draws exactly what dist draws.
    const std::vector<float> logits = logits_of({0.1f, 0.2f, 0.3f, 0.25f, 0.15f});
    for (uint32_t step = 0; step < 20; ++step) {
        SlotState slot;
        slot.mu_set = true;
        slot.mu = 50.0f;
        const RowResult miro = sample_row(twin_chain("mirostat_v2"), logits.data(), 5, mirostat_params(5.0f, 0.1f, 99u),
                                          step, 3, &slot);
        RowParams dist_params;
        dist_params.seed = 99u;
        const RowResult dist = sample_row(twin_chain("dist"), logits.data(), 5, dist_params, step, 3);
        ASSERT_EQ(miro.status, SIEVE_OK);
        EXPECT_EQ(miro.token, dist.token) << step;
        EXPECT_EQ(miro.p, dist.p);
    }
}

TEST(ReferenceStatefulMirostat, WithoutASlotEachCallStartsFresh) {
    const std::vector<float> logits = zipf_logits(300, 1.2);
    const RowParams params = mirostat_params(3.0f, 0.2f, 5u);
    const RowResult a = sample_row(twin_chain("mirostat"), logits.data(), 300, params, 4);
    const RowResult b = sample_row(twin_chain("mirostat"), logits.data(), 300, params, 4);
    SlotState fresh;
    const RowResult c = sample_row(twin_chain("mirostat"), logits.data(), 300, params, 4, 0, &fresh);
    ASSERT_EQ(a.status, SIEVE_OK);
    EXPECT_EQ(a.token, b.token);
    EXPECT_EQ(a.token, c.token);
    EXPECT_EQ(a.p, c.p);
}

TEST(ReferenceStatefulMirostat, AfterTemperatureAsLlamaCppsCommonChain) {
    // common_sampler_init with mirostat = 1: temp then mirostat. Temperature 0
    // leaves one live token, which is kept and drawn.
    const std::vector<float> logits = logits_of({0.1f, 0.2f, 0.4f, 0.3f});
    RowParams params = mirostat_params(5.0f, 0.1f);
    params.temperature = 0.0f;
    SlotState slot;
    const RowResult r = sample_row(twin_chain("temperature;mirostat"), logits.data(), 4, params, 0, 0, &slot);
    ASSERT_EQ(r.status, SIEVE_OK) << r.message;
    EXPECT_EQ(r.token, 2);
    EXPECT_EQ(r.p, 1.0f);
    EXPECT_EQ(slot.mu, 10.5f);
}

TEST(ReferenceStatefulMirostat, BadParameters) {
    const float logits[] = {0.0f, 1.0f};
    for (const char* name : {"mirostat", "mirostat_v2"}) {
        for (float bad : {NAN, INFINITY, -INFINITY}) {
            EXPECT_EQ(sample_row(twin_chain(name), logits, 2, mirostat_params(bad, 0.1f), 0).status,
                      SIEVE_ERROR_INVALID_PARAMETER);
            EXPECT_EQ(sample_row(twin_chain(name), logits, 2, mirostat_params(5.0f, bad), 0).status,
                      SIEVE_ERROR_INVALID_PARAMETER);
        }
        SlotState slot;
        slot.mu_set = true;
        slot.mu = NAN;
        const RowResult r = sample_row(twin_chain(name), logits, 2, mirostat_params(5.0f, 0.1f), 0, 0, &slot);
        EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(r.message.find("mu"), std::string::npos) << r.message;
    }
}

// ---- adaptive-p (llama_sampler_adaptive_p_apply / _accept) ---------------------

RowParams adaptive_params(float target, float decay, uint32_t seed = 11u) {
    RowParams params;
    params.adaptive_target = target;
    params.adaptive_decay = decay;
    params.seed = seed;
    return params;
}

TEST(ReferenceStatefulAdaptiveP, NegativeTargetIsAPlainDraw) {
    const std::vector<float> logits = logits_of({0.1f, 0.5f, 0.4f});
    RowParams dist_params;
    dist_params.seed = 11u;
    for (uint32_t step = 0; step < 10; ++step) {
        SlotState slot;
        const RowResult a = sample_row(twin_chain("adaptive_p"), logits.data(), 3, adaptive_params(-1.0f, 0.9f), step,
                                       0, &slot);
        const RowResult d = sample_row(twin_chain("dist"), logits.data(), 3, dist_params, step);
        ASSERT_EQ(a.status, SIEVE_OK);
        EXPECT_EQ(a.token, d.token);
        EXPECT_EQ(a.p, d.p);
        EXPECT_FALSE(slot.adaptive_set); // nothing stored
    }
}

TEST(ReferenceStatefulAdaptiveP, FirstDrawTransformsAroundTheTarget) {
    // p = {0.5, 0.3, 0.2}, target 0.5, decay 0.9: the average starts at
    // 0.5 / 0.1 over 1 / 0.1, so adapted = 2 * 0.5 - 0.5 = 0.5. dist = |p - 0.5| / 0.3
    // = {0, 2/3, 1}, logit = 5 - 10 d^2 / (1 + d) = {5, 2.3333, 0}, softmax
    // {0.929177, 0.064562, 0.006261}.
    const std::vector<float> logits = logits_of({0.5f, 0.3f, 0.2f});
    const RowParams params = adaptive_params(0.5f, 0.9f);
    SlotState slot;
    std::vector<Weighted> dist;
    std::string message;
    ASSERT_EQ(row_distribution(twin_chain("adaptive_p"), logits.data(), 3, params, &dist, &message, 0, 0, &slot),
              SIEVE_OK)
        << message;
    expect_probs(probs_by_id(dist, 3), {0.929177f, 0.064562f, 0.006261f}, 2e-6, "adaptive");
    EXPECT_FALSE(slot.adaptive_set); // row_distribution reads only

    // The draw updates the average with the drawn token's ORIGINAL probability.
    const RowResult r = sample_row(twin_chain("adaptive_p"), logits.data(), 3, params, 0, 0, &slot);
    ASSERT_EQ(r.status, SIEVE_OK);
    const double original[] = {0.5, 0.3, 0.2};
    const float initial_sum = 0.5f / (1.0f - 0.9f); // 4.99999905 in float
    const float initial_weight = 1.0f / (1.0f - 0.9f);
    EXPECT_TRUE(slot.adaptive_set);
    EXPECT_NEAR(slot.adaptive_weighted_sum, original[r.token] + 0.9 * initial_sum, 1e-6);
    EXPECT_EQ(slot.adaptive_total_weight, 1.0f + 0.9f * initial_weight);
    EXPECT_NEAR(r.p, probs_by_id(dist, 3)[static_cast<size_t>(r.token)], 1e-7);
}

TEST(ReferenceStatefulAdaptiveP, TheAverageSteersTheTargetOverSteps) {
    // Each step: adapted = clamp(2 * target - sum / weight, 0, 1); the transform
    // around it; the draw; sum = p_orig + decay * sum, weight = 1 + decay * weight.
    const std::vector<float> probs = {0.45f, 0.25f, 0.15f, 0.1f, 0.05f};
    const std::vector<float> logits = logits_of(probs);
    const RowParams params = adaptive_params(0.3f, 0.7f, 3u);
    const std::vector<SamplerKind> chain = twin_chain("temperature;adaptive_p");
    RowParams with_temp = params;
    with_temp.temperature = 1.0f;
    SlotState slot;
    float sum = 0.3f / (1.0f - 0.7f);
    float weight = 1.0f / (1.0f - 0.7f);
    std::map<int32_t, int> seen;
    for (uint32_t step = 0; step < 40; ++step) {
        const float adapted = std::clamp(2.0f * 0.3f - sum / weight, 0.0f, 1.0f);
        std::vector<double> expected(5);
        double total = 0.0;
        for (size_t i = 0; i < 5; ++i) {
            const float d = std::fabs((probs[i] - adapted) * (1.0f / 0.3f));
            expected[i] = std::exp(static_cast<double>(5.0f - 10.0f * d * d / (1.0f + d)));
            total += expected[i];
        }
        std::vector<Weighted> dist;
        std::string message;
        ASSERT_EQ(row_distribution(chain, logits.data(), 5, with_temp, &dist, &message, step, 0, &slot), SIEVE_OK);
        const std::vector<double> got = probs_by_id(dist, 5);
        for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(got[i], expected[i] / total, 1e-5) << "step " << step;

        const RowResult r = sample_row(chain, logits.data(), 5, with_temp, step, 0, &slot);
        ASSERT_EQ(r.status, SIEVE_OK);
        ++seen[r.token];
        sum = probs[static_cast<size_t>(r.token)] + 0.7f * sum;
        weight = 1.0f + 0.7f * weight;
        EXPECT_NEAR(slot.adaptive_weighted_sum, sum, 1e-5) << "step " << step;
        EXPECT_NEAR(slot.adaptive_total_weight, weight, 1e-6) << "step " << step;
        sum = slot.adaptive_weighted_sum; // follow the twin's float value exactly
    }
    EXPECT_GE(seen.size(), 3u); // the draws moved around the target
}

TEST(ReferenceStatefulAdaptiveP, OnlyItsOwnDrawsUpdateTheAverage) {
    const std::vector<float> logits = logits_of({0.6f, 0.3f, 0.1f});
    SlotState slot;
    slot.adaptive_set = true;
    slot.adaptive_weighted_sum = 2.0f;
    slot.adaptive_total_weight = 4.0f;
    // Other chains, accepted tokens, a negative target: the average stays.
    RowParams params = adaptive_params(0.5f, 0.9f);
    ASSERT_EQ(sample_row(twin_chain("dist"), logits.data(), 3, params, 0, 0, &slot).status, SIEVE_OK);
    ASSERT_EQ(sample_row(twin_chain("mirostat"), logits.data(), 3, params, 1, 0, &slot).status, SIEVE_OK);
    slot.history.push_back(0);
    ASSERT_EQ(sample_row(twin_chain("adaptive_p"), logits.data(), 3, adaptive_params(-0.5f, 0.9f), 2, 0, &slot).status,
              SIEVE_OK);
    EXPECT_EQ(slot.adaptive_weighted_sum, 2.0f);
    EXPECT_EQ(slot.adaptive_total_weight, 4.0f);
    // The slot's average is used as it is: adapted = 2 * 0.5 - 2 / 4 = 0.5.
    const RowResult r = sample_row(twin_chain("adaptive_p"), logits.data(), 3, params, 3, 0, &slot);
    ASSERT_EQ(r.status, SIEVE_OK);
    const float original[] = {0.6f, 0.3f, 0.1f};
    EXPECT_NEAR(slot.adaptive_weighted_sum, original[r.token] + 0.9f * 2.0f, 1e-6);
    EXPECT_EQ(slot.adaptive_total_weight, 1.0f + 0.9f * 4.0f);
}

TEST(ReferenceStatefulAdaptiveP, ClampsAndMasks) {
    const std::vector<float> logits = {logf(0.6f), -INFINITY, logf(0.4f), logf(0.0001f)};
    std::vector<Weighted> dist;
    std::string message;
    // target 2: clamped to 1 in the transform, but the average starts at the raw
    // target (2 / (1 - d) over 1 / (1 - d) = 2): adapted = clamp(2 - 2) = 0, so the
    // least likely token is favoured. The masked token stays masked.
    ASSERT_EQ(row_distribution(twin_chain("adaptive_p"), logits.data(), 4, adaptive_params(2.0f, 0.5f), &dist, &message),
              SIEVE_OK)
        << message;
    ASSERT_EQ(dist.size(), 3u);
    EXPECT_EQ(dist[0].id, 3);
    // decay 1.5 is clamped to 0.99: the weight starts at 1 / 0.01 = 100.
    SlotState slot;
    ASSERT_EQ(sample_row(twin_chain("adaptive_p"), logits.data(), 4, adaptive_params(0.5f, 1.5f), 0, 0, &slot).status,
              SIEVE_OK);
    const float start = 1.0f / (1.0f - 0.99f);
    EXPECT_EQ(slot.adaptive_total_weight, 1.0f + 0.99f * start);
    // decay -1 is clamped to 0: the average is the last draw's probability alone.
    SlotState fresh;
    const RowResult r =
        sample_row(twin_chain("adaptive_p"), logits.data(), 4, adaptive_params(0.5f, -1.0f), 0, 0, &fresh);
    ASSERT_EQ(r.status, SIEVE_OK);
    EXPECT_EQ(fresh.adaptive_total_weight, 1.0f);
    EXPECT_NEAR(fresh.adaptive_weighted_sum, std::exp(static_cast<double>(logits[static_cast<size_t>(r.token)])) /
                                                 (0.6 + 0.4 + 0.0001),
                1e-6);
}

TEST(ReferenceStatefulAdaptiveP, BadParameters) {
    const float logits[] = {0.0f, 1.0f};
    for (float bad : {NAN, INFINITY, -INFINITY}) {
        EXPECT_EQ(sample_row(twin_chain("adaptive_p"), logits, 2, adaptive_params(bad, 0.9f), 0).status,
                  SIEVE_ERROR_INVALID_PARAMETER);
        EXPECT_EQ(sample_row(twin_chain("adaptive_p"), logits, 2, adaptive_params(0.5f, bad), 0).status,
                  SIEVE_ERROR_INVALID_PARAMETER);
    }
    SlotState slot;
    slot.adaptive_set = true;
    slot.adaptive_weighted_sum = INFINITY;
    slot.adaptive_total_weight = 1.0f;
    const RowResult r = sample_row(twin_chain("adaptive_p"), logits, 2, adaptive_params(0.5f, 0.9f), 0, 0, &slot);
    EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(r.message.find("adaptive-p"), std::string::npos) << r.message;
}

// ---- the chain ------------------------------------------------------------------

TEST(ReferenceStatefulChain, DefaultChainReadsTheSlot) {
    // llama.cpp's default chain starts with penalties and DRY: with the slot's
    // history and parameters set, its distribution is the one after both.
    std::vector<float> logits(16);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(static_cast<double>(i)) * 2.0);
    RowParams params = penalties_params(8, 1.3f, 0.1f, 0.2f);
    params.dry_multiplier = 0.8f;
    params.dry_sequence_breakers = {{9}};
    params.top_k = 0;
    params.top_p = 1.0f;
    params.min_p = 0.0f;
    params.temperature = 1.0f;
    SlotState slot;
    slot.history = {3, 4, 5, 6, 1, 3, 4, 5, 9, 3, 4};
    std::vector<Weighted> dist;
    std::string message;
    ASSERT_EQ(row_distribution(twin_chain(""), logits.data(), 16, params, &dist, &message, 0, 0, &slot), SIEVE_OK)
        << message;
    CandidateArray cur = make_candidates(logits.data(), 16);
    apply_penalties(cur, slot.history, params);
    apply_dry(cur, slot.history, params);
    const std::vector<double> expected = probs_by_id(cur, 16);
    const std::vector<double> got = probs_by_id(dist, 16);
    for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(got[i], expected[i], 1e-12) << i;
    // And they changed something: 5 follows "3 4" (DRY) and the window's tokens are penalized.
    const std::vector<double> plain = probs_by_id(canonical_distribution(make_candidates(logits.data(), 16)), 16);
    EXPECT_LT(got[5], plain[5]);
    EXPECT_GT(got[0], plain[0]);
    // The slot's history is not changed by sampling.
    ASSERT_EQ(sample_row(twin_chain(""), logits.data(), 16, params, 0, 0, &slot).status, SIEVE_OK);
    EXPECT_EQ(slot.history.size(), 11u);
}

TEST(ReferenceStatefulChain, SelectorsMustBeLast) {
    const float logits[] = {0.0f, 1.0f};
    EXPECT_EQ(sample_row({SamplerKind::Mirostat, SamplerKind::Temperature}, logits, 2, RowParams{}, 0).status,
              SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(sample_row({SamplerKind::AdaptiveP, SamplerKind::Dist}, logits, 2, RowParams{}, 0).status,
              SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(sample_row({SamplerKind::Temperature, SamplerKind::MirostatV2}, logits, 2, RowParams{}, 0).status,
              SIEVE_OK);
}

} // namespace
