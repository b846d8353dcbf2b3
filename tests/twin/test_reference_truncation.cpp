// The CPU twin's truncating samplers (issue 3) against llama.cpp's own test
// vectors (tests/test-sampling.cpp: test_top_k, test_top_p, test_min_p, test_xtc,
// test_typical, test_top_n_sigma, test_temp_ext, test_sampler_queue) and the
// rules of src/llama-sampling.cpp: masked members counted by top-k's clamp,
// min_keep, XTC's size check and dynamic temperature's log N; chains in several
// orders giving different results where llama.cpp's would.
#include "reference/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace sieve::ref;

constexpr float kInf = INFINITY;

// llama.cpp's sampler_tester: logit = logf(p), ids in order.
CandidateArray from_probs(const std::vector<float>& probs) {
    std::vector<float> logits;
    for (float p : probs) logits.push_back(logf(p));
    return make_candidates(logits.data(), static_cast<int32_t>(logits.size()));
}

std::vector<double> sorted_desc(std::vector<double> v) {
    std::sort(v.begin(), v.end(), std::greater<double>());
    return v;
}

// The final distribution (softmax over the survivors, canonical order) equals
// `expected` (any order; zeros = masked members, which the distribution omits),
// renormalized, within llama.cpp's own tolerance (1e-5).
void expect_probs(const CandidateArray& cur, std::vector<float> expected) {
    std::vector<double> want;
    double sum = 0.0;
    for (float e : expected)
        if (e > 0.0f) {
            want.push_back(e);
            sum += e;
        }
    for (double& w : want) w /= sum;
    want = sorted_desc(want);
    std::vector<double> got;
    for (const Weighted& w : canonical_distribution(cur)) got.push_back(w.p);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "entry " << i;
}

std::vector<int32_t> ids_of(const CandidateArray& cur) {
    std::vector<int32_t> ids;
    for (const TokenData& td : cur.data) ids.push_back(td.id);
    std::sort(ids.begin(), ids.end());
    return ids;
}

const std::vector<float> kP4 = {0.1f, 0.2f, 0.3f, 0.4f};

// ---- temperature / temp_ext (test_temp, test_temp_ext) --------------------------

TEST(TwinTruncation, TemperatureVectors) {
    CandidateArray a = from_probs(kP4);
    apply_temperature(a, 1.0f);
    expect_probs(a, {0.1f, 0.2f, 0.3f, 0.4f});
    CandidateArray b = from_probs(kP4);
    apply_temperature(b, 0.0f);
    expect_probs(b, {0.0f, 0.0f, 0.0f, 1.0f});
    EXPECT_EQ(b.data.size(), 4u); // masked, not removed
}

TEST(TwinTruncation, TempExtVectors) {
    std::string message;
    CandidateArray a = from_probs(kP4);
    ASSERT_EQ(apply_temperature_ext(a, 1.0f, 0.0f, 1.0f, &message), SIEVE_OK);
    expect_probs(a, {0.1f, 0.2f, 0.3f, 0.4f});
    CandidateArray b = from_probs(kP4);
    ASSERT_EQ(apply_temperature_ext(b, 0.0f, 0.0f, 1.0f, &message), SIEVE_OK);
    expect_probs(b, {0.0f, 0.0f, 0.0f, 1.0f});
}

// ---- top-k (test_top_k) -----------------------------------------------------------

TEST(TwinTruncation, TopKVectors) {
    const std::pair<int32_t, std::vector<float>> cases[] = {
        {1, {1.0f}},
        {3, {0.44444f, 0.33333f, 0.22222f}},
        {4, {0.4f, 0.3f, 0.2f, 0.1f}},
        {0, {0.1f, 0.2f, 0.3f, 0.4f}},   // k <= 0: no-op
        {-5, {0.1f, 0.2f, 0.3f, 0.4f}},
        {100, {0.1f, 0.2f, 0.3f, 0.4f}}, // clamped to the array
    };
    for (const auto& [k, expected] : cases) {
        SCOPED_TRACE("k=" + std::to_string(k));
        CandidateArray cur = from_probs(kP4);
        apply_top_k(cur, k);
        expect_probs(cur, expected);
    }
}

TEST(TwinTruncation, TopKClampCountsMaskedMembers) {
    // Greedy masking leaves 1 unmasked member among 8; top-k 3 keeps 3 members
    // (the unmasked one and two masked ones), top-k 100 keeps all 8: the clamp is
    // to the array's size, masked members included.
    const float logits[] = {0.5f, 2.0f, 1.0f, -1.0f, 3.0f, 0.0f, -2.0f, 1.5f};
    CandidateArray cur = make_candidates(logits, 8);
    apply_temperature(cur, 0.0f);
    CandidateArray k3 = cur;
    apply_top_k(k3, 3);
    EXPECT_EQ(k3.data.size(), 3u);
    EXPECT_EQ(k3.data[0].id, 4);
    CandidateArray k100 = cur;
    apply_top_k(k100, 100);
    EXPECT_EQ(k100.data.size(), 8u);
}

TEST(TwinTruncation, TopKTiesAtTheCutKeepLowerIds) {
    const float logits[] = {1.0f, 2.0f, 2.0f, 2.0f, 0.0f, 2.0f};
    CandidateArray cur = make_candidates(logits, 6);
    apply_top_k(cur, 2);
    EXPECT_EQ(ids_of(cur), (std::vector<int32_t>{1, 2}));
    // -0 and +0 are one value: ties by id.
    const float zeros[] = {0.0f, -0.0f, 0.0f};
    CandidateArray z = make_candidates(zeros, 3);
    apply_top_k(z, 1);
    EXPECT_EQ(ids_of(z), (std::vector<int32_t>{0}));
}

// ---- top-p (test_top_p) -----------------------------------------------------------

TEST(TwinTruncation, TopPVectors) {
    const std::pair<float, std::vector<float>> cases[] = {
        {0.0f, {1.0f}},
        {0.7f, {0.571429f, 0.428571f}},
        {0.8f, {0.44444f, 0.33333f, 0.22222f}},
        {1.0f, {0.1f, 0.2f, 0.3f, 0.4f}},
        {-1.0f, {1.0f}},
        {1.5f, {0.1f, 0.2f, 0.3f, 0.4f}},
    };
    for (const auto& [p, expected] : cases) {
        SCOPED_TRACE("p=" + std::to_string(p));
        CandidateArray cur = from_probs(kP4);
        apply_top_p(cur, p, 0);
        expect_probs(cur, expected);
    }
    CandidateArray cur = from_probs(kP4);
    apply_top_p(cur, 0.7f, 0);
    EXPECT_EQ(ids_of(cur), (std::vector<int32_t>{2, 3}));
}

TEST(TwinTruncation, TopPMinKeep) {
    // cum_sum >= p && i + 1 >= min_keep: p = 0 keeps min_keep entries.
    CandidateArray cur = from_probs(kP4);
    apply_top_p(cur, 0.0f, 3);
    expect_probs(cur, {0.4f, 0.3f, 0.2f});
    // min_keep counts masked members: after greedy masking only token 3 has
    // mass, yet min_keep 3 keeps three members.
    CandidateArray masked = from_probs(kP4);
    apply_temperature(masked, 0.0f);
    apply_top_p(masked, 0.5f, 3);
    EXPECT_EQ(masked.data.size(), 3u);
    expect_probs(masked, {1.0f});
}

// ---- min-p (test_min_p) -----------------------------------------------------------

TEST(TwinTruncation, MinPVectors) {
    const std::pair<float, std::vector<float>> cases[] = {
        {0.00f, {0.1f, 0.2f, 0.3f, 0.4f}},
        {0.24f, {0.1f, 0.2f, 0.3f, 0.4f}},
        {0.26f, {0.2f / 0.9f, 0.3f / 0.9f, 0.4f / 0.9f}},
        {0.49f, {0.2f / 0.9f, 0.3f / 0.9f, 0.4f / 0.9f}},
        {0.51f, {0.3f / 0.7f, 0.4f / 0.7f}},
        {0.74f, {0.3f / 0.7f, 0.4f / 0.7f}},
        {0.76f, {1.0f}},
        {1.00f, {1.0f}},
        {1.05f, {1.0f}},   // min-p above 1: nothing passes, the sorted fallback keeps the top token
        {1000.0f, {1.0f}},
        {-0.5f, {0.1f, 0.2f, 0.3f, 0.4f}},
    };
    for (const auto& [p, expected] : cases) {
        SCOPED_TRACE("p=" + std::to_string(p));
        CandidateArray cur = from_probs(kP4);
        apply_min_p(cur, p, 0);
        expect_probs(cur, expected);
    }
    CandidateArray top = from_probs(kP4);
    apply_min_p(top, 1.05f, 0);
    EXPECT_EQ(ids_of(top), (std::vector<int32_t>{3}));
}

TEST(TwinTruncation, MinPFallbackHonoursMinKeep) {
    // Only token 3 passes 0.76; min_keep 2 sends llama.cpp to the sorted fallback,
    // which keeps the top 2.
    CandidateArray cur = from_probs(kP4);
    apply_min_p(cur, 0.76f, 2);
    expect_probs(cur, {0.3f / 0.7f, 0.4f / 0.7f});
    // min-p above 1 with min_keep 3.
    CandidateArray big = from_probs(kP4);
    apply_min_p(big, 2.0f, 3);
    expect_probs(big, {0.2f, 0.3f, 0.4f});
    // Masked members are in the array, so min_keep can keep them: only token 0
    // passes 0.9; the fallback keeps the top 3 of the sorted array: tokens 0, 3
    // and the masked token 1 (the lower id of the two -inf members).
    const float logits[] = {1.0f, -kInf, -kInf, 0.0f};
    CandidateArray m = make_candidates(logits, 4);
    apply_min_p(m, 0.9f, 3);
    EXPECT_EQ(ids_of(m), (std::vector<int32_t>{0, 1, 3}));
    expect_probs(m, {static_cast<float>(std::exp(1.0)), 1.0f});
}

// ---- typical (test_typical) ---------------------------------------------------------

TEST(TwinTruncation, TypicalVectors) {
    // llama.cpp checks the kept entries' (unrenormalized) p.
    CandidateArray a = from_probs({0.97f, 0.01f, 0.01f, 0.01f});
    apply_typical(a, 0.5f, 0);
    EXPECT_EQ(ids_of(a), (std::vector<int32_t>{0}));
    CandidateArray b = from_probs({0.4f, 0.2f, 0.2f, 0.2f});
    apply_typical(b, 0.5f, 0);
    EXPECT_EQ(ids_of(b), (std::vector<int32_t>{1, 2, 3}));
    expect_probs(b, {0.2f, 0.2f, 0.2f});
    // p >= 1: no-op.
    CandidateArray c = from_probs(kP4);
    apply_typical(c, 1.0f, 0);
    expect_probs(c, {0.1f, 0.2f, 0.3f, 0.4f});
}

TEST(TwinTruncation, TypicalMinKeepAndMaskedMembers) {
    CandidateArray a = from_probs({0.4f, 0.2f, 0.2f, 0.2f});
    apply_typical(a, 0.1f, 0); // 0.2 > 0.1 at once: one 0.2 kept (the lowest id)
    EXPECT_EQ(ids_of(a), (std::vector<int32_t>{1}));
    CandidateArray b = from_probs({0.4f, 0.2f, 0.2f, 0.2f});
    apply_typical(b, 0.1f, 4);
    EXPECT_EQ(b.data.size(), 4u);
    // A masked member: llama.cpp's entropy is NaN (-0 * log 0); the twin takes
    // 0 log 0 = 0, so the result is that of the unmasked members, and the masked
    // member ranks last.
    const std::vector<float> with_mask = {logf(0.4f), logf(0.2f), -kInf, logf(0.2f), logf(0.2f)};
    CandidateArray m = make_candidates(with_mask.data(), 5);
    apply_typical(m, 0.5f, 0);
    EXPECT_EQ(ids_of(m), (std::vector<int32_t>{1, 3, 4}));
    CandidateArray all = make_candidates(with_mask.data(), 5);
    apply_typical(all, 0.99999f, 5);
    ASSERT_EQ(all.data.size(), 5u);
    EXPECT_EQ(all.data.back().id, 2); // score +inf: last
}

// A long array (the twin's radix sort, then typical's order by score, a
// merge of its falling and rising runs): four logit levels of many members
// each at shuffled ids. Typical leaves the array in score order, equal
// scores (a level's members) in canonical order (id ascending), and cuts
// where the cumulative probability passes p; the levels' scores, worked out
// here, fix that order and cut.
TEST(TwinTruncation, TypicalOverALongArrayKeepsScoreOrder) {
    const float level[] = {0.0f, -0.5f, -1.5f, -3.0f};
    const int32_t count[] = {900, 1300, 1500, 1300};
    std::vector<float> logits;
    for (int32_t l = 0; l < 4; ++l) logits.insert(logits.end(), static_cast<size_t>(count[l]), level[l]);
    std::mt19937 rng(5);
    std::shuffle(logits.begin(), logits.end(), rng);
    double z = 0.0;
    for (int32_t l = 0; l < 4; ++l) z += count[l] * std::exp(static_cast<double>(level[l]));
    double entropy = 0.0;
    double prob[4], score[4];
    for (int32_t l = 0; l < 4; ++l) {
        prob[l] = std::exp(static_cast<double>(level[l])) / z;
        entropy -= count[l] * prob[l] * std::log(prob[l]);
    }
    for (int32_t l = 0; l < 4; ++l)
        score[l] = std::fabs(-std::log(static_cast<double>(static_cast<float>(prob[l]))) - entropy);
    int32_t by_score[] = {0, 1, 2, 3};
    std::sort(by_score, by_score + 4, [&](int32_t a, int32_t b) { return score[a] < score[b]; });
    ASSERT_NE(score[by_score[0]], score[by_score[1]]);  // the levels' order is strict
    for (float p : {0.3f, 0.8f}) {
        SCOPED_TRACE("p " + std::to_string(p));
        std::vector<int32_t> expected;  // ids: levels by score, each in id order, up to the cut
        double cum = 0.0;
        for (int32_t l : by_score)
            for (int32_t id = 0; id < static_cast<int32_t>(logits.size()) && cum <= p; ++id)
                if (logits[static_cast<size_t>(id)] == level[l]) {
                    expected.push_back(id);
                    cum += prob[l];
                }
        CandidateArray cur = make_candidates(logits.data(), static_cast<int32_t>(logits.size()));
        apply_typical(cur, p, 0);
        ASSERT_EQ(cur.data.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(cur.data[i].id, expected[i]) << "position " << i;
    }
}

// ---- top-n-sigma (test_top_n_sigma) -------------------------------------------------

TEST(TwinTruncation, TopNSigmaVectors) {
    CandidateArray a = from_probs(kP4);
    apply_top_n_sigma(a, 1.0f);
    EXPECT_EQ(a.data.size(), 4u); // masked, not removed
    expect_probs(a, {0.0f, 0.0f, 0.428571f, 0.571429f});
    CandidateArray b = from_probs(kP4);
    apply_top_n_sigma(b, 0.0f); // n == 0 is a no-op (llama.cpp PR #13345)
    expect_probs(b, {0.1f, 0.2f, 0.3f, 0.4f});
    CandidateArray c = from_probs(kP4);
    apply_top_n_sigma(c, 3.0f);
    expect_probs(c, {0.1f, 0.2f, 0.3f, 0.4f});
    CandidateArray d = from_probs(kP4);
    apply_top_n_sigma(d, -1.0f); // llama.cpp's default: off
    expect_probs(d, {0.1f, 0.2f, 0.3f, 0.4f});
}

TEST(TwinTruncation, TopNSigmaStatisticsOverFiniteLogitsOnly) {
    // Same finite logits plus masked members: the same survivors (the -inf
    // members are not in the mean or sigma), the array keeps every member.
    const std::vector<float> logits = {logf(0.1f), -kInf, logf(0.2f), logf(0.3f), -kInf, logf(0.4f)};
    CandidateArray cur = make_candidates(logits.data(), 6);
    apply_top_n_sigma(cur, 1.0f);
    EXPECT_EQ(cur.data.size(), 6u);
    expect_probs(cur, {0.3f, 0.4f});
    // One member: no-op (size <= 1).
    const float one = 3.0f;
    CandidateArray single = make_candidates(&one, 1);
    apply_top_n_sigma(single, 1.0f);
    expect_probs(single, {1.0f});
}

// ---- XTC (test_xtc) -------------------------------------------------------------------

TEST(TwinTruncation, XtcVectors) {
    // llama.cpp: probability 0.99 with its mt19937(0) coin; the twin takes the
    // coin as an argument (0.5 <= 0.99: it fires).
    const std::vector<float> p = {0.4f, 0.3f, 0.2f, 0.1f};
    const std::pair<float, std::vector<float>> cases[] = {
        {0.09f, {0.1f}},
        {0.19f, {0.2f, 0.1f}},
        {0.29f, {0.3f, 0.2f, 0.1f}},
        {0.39f, {0.4f, 0.3f, 0.2f, 0.1f}}, // only one qualifies: XTC should not
    };
    for (const auto& [t, expected] : cases) {
        SCOPED_TRACE("threshold=" + std::to_string(t));
        CandidateArray cur = from_probs(p);
        apply_xtc(cur, 0.99f, t, 0, 0.5);
        expect_probs(cur, expected);
    }
}

TEST(TwinTruncation, XtcOffSwitchesAndCoin) {
    const std::vector<float> p = {0.4f, 0.3f, 0.2f, 0.1f};
    auto run = [&](float probability, float threshold, size_t min_keep, double coin) {
        CandidateArray cur = from_probs(p);
        apply_xtc(cur, probability, threshold, min_keep, coin);
        return cur.data.size();
    };
    EXPECT_EQ(run(0.0f, 0.09f, 0, 0.0), 4u);   // probability <= 0: off
    EXPECT_EQ(run(1.0f, 0.51f, 0, 0.0), 4u);   // threshold > 0.5: off
    EXPECT_EQ(run(0.5f, 0.09f, 0, 0.5), 1u);   // coin == probability: fires (chance > p returns)
    EXPECT_EQ(run(0.5f, 0.09f, 0, 0.5000001), 4u);
    EXPECT_EQ(run(1.0f, 0.09f, 2, 0.0), 4u);   // size - pos_last = 1 < min_keep 2
    EXPECT_EQ(run(1.0f, 0.19f, 2, 0.0), 2u);   // 4 - 2 = 2 >= 2
    const float one = 1.0f;
    CandidateArray single = make_candidates(&one, 1);
    apply_xtc(single, 1.0f, 0.0f, 0, 0.0);     // fewer than two candidates: off
    EXPECT_EQ(single.data.size(), 1u);
}

TEST(TwinTruncation, XtcSizeCheckCountsMaskedMembers) {
    // Two tokens of 0.5 and two masked members: pos_last = 1, size - pos_last =
    // 3 >= min_keep 3, so XTC removes token 0. Without the masked members (size 2)
    // it would not.
    const float with_masked[] = {logf(0.5f), logf(0.5f), -kInf, -kInf};
    CandidateArray a = make_candidates(with_masked, 4);
    apply_xtc(a, 1.0f, 0.4f, 3, 0.0);
    expect_probs(a, {0.0f, 1.0f});
    EXPECT_EQ(canonical_distribution(a)[0].id, 1);
    CandidateArray b = make_candidates(with_masked, 2);
    apply_xtc(b, 1.0f, 0.4f, 3, 0.0);
    expect_probs(b, {0.5f, 0.5f});
}

TEST(TwinTruncation, XtcCoinIsPhiloxWordOne) {
    for (uint32_t seed : {0u, 1u, 1234u, 0xDEADBEEFu})
        for (uint32_t step : {0u, 1u, 77u}) {
            const auto block = philox4x32_10({step, 0u, 0u, 0u}, {seed, kPhiloxKeyHi});
            EXPECT_EQ(xtc_coin_u32(seed, step, 0), block[1]);
            EXPECT_EQ(uniform_u32(seed, step, 0), block[0]);
        }
    // Through a row: the coin decides. Probability just below the coin: off;
    // at the coin: fires.
    const std::vector<SamplerKind> chain = {SamplerKind::Xtc, SamplerKind::Dist};
    const std::vector<float> logits = {logf(0.4f), logf(0.3f), logf(0.2f), logf(0.1f)};
    RowParams params;
    params.seed = 4321u;
    params.xtc_threshold = 0.09f;
    const uint32_t step = 5;
    const double coin = xtc_coin_u32(params.seed, step, 0) / 4294967296.0;
    std::vector<Weighted> dist;
    std::string message;
    params.xtc_probability = std::nextafter(static_cast<float>(coin), 0.0f);
    if (static_cast<double>(params.xtc_probability) < coin) {
        ASSERT_EQ(row_distribution(chain, logits.data(), 4, params, &dist, &message, step), SIEVE_OK) << message;
        EXPECT_EQ(dist.size(), 4u) << "coin " << coin << " > probability: XTC must not fire";
    }
    params.xtc_probability = std::nextafter(static_cast<float>(coin), 2.0f);
    ASSERT_EQ(row_distribution(chain, logits.data(), 4, params, &dist, &message, step), SIEVE_OK) << message;
    ASSERT_EQ(dist.size(), 1u);
    EXPECT_EQ(dist[0].id, 3);
    const RowResult r = sample_row(chain, logits.data(), 4, params, step);
    EXPECT_EQ(r.token, 3);
}

// ---- dynamic temperature -----------------------------------------------------------------

double entropy_of(const std::vector<double>& p) {
    double h = 0.0;
    for (double q : p)
        if (q > 0.0) h -= q * std::log(q);
    return h;
}

TEST(TwinTruncation, DynamicTemperatureFormula) {
    // llama_sampler_temp_ext_apply: dyn = min + (max - min) * (H / log N)^exponent.
    const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
    const double h = entropy_of(p);
    for (float exponent : {1.0f, 2.0f, 0.5f}) {
        SCOPED_TRACE("exponent " + std::to_string(exponent));
        const float t = 1.0f, range = 0.5f;
        const double want_t = 0.5 + 1.0 * std::pow(h / std::log(4.0), exponent);
        CandidateArray cur = from_probs(kP4);
        EXPECT_NEAR(dynamic_temperature(cur, t, range, exponent), want_t, 1e-6);
        std::string message;
        ASSERT_EQ(apply_temperature_ext(cur, t, range, exponent, &message), SIEVE_OK) << message;
        std::vector<float> expected;
        for (double q : p) expected.push_back(static_cast<float>(std::pow(q, 1.0 / want_t)));
        expect_probs(cur, expected);
    }
}

TEST(TwinTruncation, DynamicTemperatureLogNCountsMaskedMembers) {
    // The same two live tokens, with and without three masked members: N = 5 vs 2
    // changes the normalized entropy and so the temperature.
    const float live[] = {0.0f, -1.0f, -kInf, -kInf, -kInf};
    CandidateArray two = make_candidates(live, 2);
    CandidateArray five = make_candidates(live, 5);
    const double p0 = 1.0 / (1.0 + std::exp(-1.0));
    const double h = entropy_of({p0, 1.0 - p0});
    EXPECT_NEAR(dynamic_temperature(two, 1.0f, 0.8f, 1.0f), 0.2 + 1.6 * h / std::log(2.0), 1e-6);
    EXPECT_NEAR(dynamic_temperature(five, 1.0f, 0.8f, 1.0f), 0.2 + 1.6 * h / std::log(5.0), 1e-6);
    std::string message;
    ASSERT_EQ(apply_temperature_ext(two, 1.0f, 0.8f, 1.0f, &message), SIEVE_OK);
    ASSERT_EQ(apply_temperature_ext(five, 1.0f, 0.8f, 1.0f, &message), SIEVE_OK);
    EXPECT_GT(canonical_distribution(five)[0].p, canonical_distribution(two)[0].p + 1e-3)
        << "more members -> lower normalized entropy -> lower temperature -> sharper";
}

TEST(TwinTruncation, DynamicTemperatureEdges) {
    std::string message;
    // One candidate: no-op (not even the plain temperature).
    const float one = 5.0f;
    CandidateArray single = make_candidates(&one, 1);
    ASSERT_EQ(apply_temperature_ext(single, 0.5f, 0.3f, 1.0f, &message), SIEVE_OK);
    EXPECT_EQ(single.data[0].logit, 5.0f);
    // Zero entropy with min_temp 0: dyn_temp 0 -> greedy masking.
    const float peaked[] = {1.0f, -kInf, -kInf};
    CandidateArray g = make_candidates(peaked, 3);
    ASSERT_EQ(apply_temperature_ext(g, 0.5f, 0.5f, 1.0f, &message), SIEVE_OK);
    expect_probs(g, {1.0f});
    // range <= 0: the plain temperature.
    CandidateArray plain = from_probs(kP4);
    ASSERT_EQ(apply_temperature_ext(plain, 0.5f, 0.0f, 1.0f, &message), SIEVE_OK);
    expect_probs(plain, {0.01f, 0.04f, 0.09f, 0.16f});
    // Negative exponent, zero entropy: infinite temperature; masked stay masked.
    CandidateArray inf_t = make_candidates(peaked, 3);
    ASSERT_EQ(apply_temperature_ext(inf_t, 1.0f, 0.5f, -1.0f, &message), SIEVE_OK);
    expect_probs(inf_t, {1.0f});
}

// ---- llama.cpp's test_sampler_queue ------------------------------------------------------

void sampler_queue(size_t n_vocab, const std::string& sequence, int top_k, float top_p, float min_p) {
    SCOPED_TRACE("queue " + sequence + " k=" + std::to_string(top_k) + " p=" + std::to_string(top_p) +
                 " min_p=" + std::to_string(min_p));
    std::vector<float> logits(n_vocab);
    for (size_t i = 0; i < n_vocab; ++i) logits[i] = logf(static_cast<float>(i));
    CandidateArray cur = make_candidates(logits.data(), static_cast<int32_t>(n_vocab));
    int32_t min_token_id = 0;
    const int32_t max_token_id = static_cast<int32_t>(n_vocab) - 1;
    for (char s : sequence) {
        switch (s) {
        case 'k': apply_top_k(cur, top_k); break;
        case 'p': apply_top_p(cur, top_p, 1); break;
        case 'm': apply_min_p(cur, min_p, 1); break;
        default: FAIL() << "unknown sampler";
        }
        const int size = static_cast<int>(cur.data.size());
        const std::vector<int32_t> ids = ids_of(cur);
        if (s == 'k') {
            const int expected_size = std::min(size, top_k);
            min_token_id = std::max(min_token_id, static_cast<int32_t>(n_vocab - top_k));
            ASSERT_EQ(size, expected_size);
            EXPECT_EQ(ids.back(), max_token_id);
            EXPECT_EQ(ids.front(), min_token_id);
        } else if (s == 'p') {
            const int softmax_divisor =
                static_cast<int>(n_vocab * (n_vocab - 1) / 2) - min_token_id * (min_token_id - 1) / 2;
            const int softmax_numerator_target = static_cast<int>(ceilf(top_p * softmax_divisor));
            min_token_id = static_cast<int32_t>(n_vocab);
            int expected_size = 0;
            int cumsum = 0;
            do {
                min_token_id--;
                expected_size++;
                cumsum += min_token_id;
            } while (cumsum < softmax_numerator_target);
            if (min_token_id == 1) {
                min_token_id--;
                expected_size += 1;
            }
            ASSERT_EQ(size, expected_size);
            EXPECT_EQ(ids.back(), max_token_id);
            EXPECT_EQ(ids.front(), min_token_id);
        } else {
            int expected_size = static_cast<int>(ceilf((1.0f - min_p) * n_vocab));
            expected_size = std::max(expected_size, 1);
            expected_size = std::min(expected_size, size);
            min_token_id = static_cast<int32_t>(floorf(min_p * n_vocab));
            min_token_id = std::max(min_token_id, 1);
            min_token_id = std::max(min_token_id, static_cast<int32_t>(n_vocab - size));
            min_token_id = std::min(min_token_id, static_cast<int32_t>(n_vocab - 1));
            ASSERT_EQ(size, expected_size);
            EXPECT_EQ(ids.back(), max_token_id);
            EXPECT_EQ(ids.front(), min_token_id);
        }
    }
}

TEST(TwinTruncation, LlamaCppSamplerQueue) {
    sampler_queue(10000, "k", 10000, 1.0f, 1.0f);
    sampler_queue(10000, "k", 1, 1.0f, 1.0f);
    sampler_queue(10000, "p", 10000, 1.0f, 1.0f);
    sampler_queue(10000, "p", 10000, 0.0f, 1.0f);
    sampler_queue(10000, "m", 10000, 1.0f, 1.0f);
    sampler_queue(10000, "m", 10000, 1.0f, 1e-12f);
    sampler_queue(10000, "k", 100, 1.0000f, 1.0f);
    sampler_queue(10000, "p", 10000, 0.0003f, 1.0f);
    sampler_queue(10000, "p", 10000, 0.8000f, 1.0f);
    sampler_queue(10000, "m", 10000, 1.0000f, 9997.9f / 9999.0f);
    sampler_queue(10000, "m", 10000, 1.0000f, 0.1f);
    for (const char* q : {"kp", "km", "pk", "pm", "mk", "kpm", "kmp", "pkm", "pmk", "mkp", "mpk"})
        sampler_queue(10000, q, 100, 0.8f, 0.1f);
    sampler_queue(10000, "mp", 100, 0.8f, 9997.9f / 9999.0f);
    sampler_queue(10000, "mp", 100, 0.8f, 0.1f);
}

// ---- whole rows: order matters, llama.cpp's default chain -----------------------------------

std::vector<SamplerKind> chain_of(const char* text) {
    std::vector<SamplerKind> chain;
    std::string message;
    EXPECT_EQ(parse_chain(text, &chain, &message), SIEVE_OK) << text << ": " << message;
    return chain;
}

std::map<int32_t, double> dist_of(const char* chain, const std::vector<float>& logits, const RowParams& params) {
    std::vector<Weighted> dist;
    std::string message;
    EXPECT_EQ(row_distribution(chain_of(chain), logits.data(), static_cast<int32_t>(logits.size()), params, &dist,
                               &message),
              SIEVE_OK)
        << message;
    std::map<int32_t, double> m;
    for (const Weighted& w : dist) m[w.id] = w.p;
    return m;
}

TEST(TwinTruncation, TemperatureBeforeOrAfterTopP) {
    // top-p 0.7 sees T=1 probabilities {0.1, 0.2, 0.3, 0.4} in llama.cpp's default
    // order (temperature last) and keeps {3, 2}; temperature 2 first flattens them
    // so top-p keeps {3, 2, 1}.
    const std::vector<float> logits = {logf(0.1f), logf(0.2f), logf(0.3f), logf(0.4f)};
    RowParams params;
    params.temperature = 2.0f;
    params.top_p = 0.7f;
    const auto after = dist_of("top_p;temperature", logits, params);
    const auto before = dist_of("temperature;top_p", logits, params);
    EXPECT_EQ(after.size(), 2u);
    EXPECT_EQ(before.size(), 3u);
    // After: softmax of logits / 2 over {2, 3}: sqrt(0.3) : sqrt(0.4).
    const double a = std::sqrt(0.3), b = std::sqrt(0.4);
    EXPECT_NEAR(after.at(3), b / (a + b), 1e-6);
}

TEST(TwinTruncation, OrderChangesResultsLikeLlamaCpp) {
    const std::vector<float> logits = {logf(0.05f), logf(0.15f), logf(0.35f), logf(0.45f)};
    RowParams params;
    params.temperature = 1.0f;
    params.top_k = 3;
    params.min_p = 0.5f;
    params.top_p = 0.5f;
    // top_k 3 then top_p 0.5: top-p sees the softmax over the 3 left (0.45/0.95 =
    // 0.47 < 0.5), keeps {3, 2}; top_p 0.5 alone over all 4 sees 0.45 < 0.5 too,
    // also {3, 2}; min_p 0.5 keeps p >= 0.225: {3, 2}.
    EXPECT_EQ(dist_of("top_k;top_p", logits, params).size(), 2u);
    EXPECT_EQ(dist_of("min_p;top_k", logits, params).size(), 2u);
    // Greedy masking first leaves one live token; top-k and min-p keep it.
    params.temperature = 0.0f;
    EXPECT_EQ(dist_of("temperature;top_k;min_p", logits, params).size(), 1u);
    // XTC before vs after top-k 2: with threshold 0.3 and probability 1, XTC
    // first removes token 3 (two qualify: 0.45, 0.35) leaving {2, 1, 0}, then
    // top-k 2 keeps {2, 1}; top-k first keeps {3, 2}, renormalized 0.5625 and
    // 0.4375, both >= 0.3, so XTC leaves {2}.
    params.temperature = 1.0f;
    params.top_k = 2;
    params.xtc_probability = 1.0f;
    params.xtc_threshold = 0.3f;
    const auto xk = dist_of("xtc;top_k", logits, params);
    const auto kx = dist_of("top_k;xtc", logits, params);
    EXPECT_EQ(xk.size(), 2u);
    EXPECT_TRUE(xk.count(2) && xk.count(1));
    ASSERT_EQ(kx.size(), 1u);
    EXPECT_TRUE(kx.count(2));
}

TEST(TwinTruncation, DefaultChainWithLlamaCppDefaults) {
    // penalties, dry (disabled), top_n_sigma (-1: off), top_k 40, typ_p 1 (off),
    // top_p 0.95, min_p 0.05, xtc (probability 0: off), temperature 0.8.
    std::vector<float> logits(1000);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = -0.01f * static_cast<float>(i * i % 997);
    RowParams params; // llama.cpp's defaults
    const auto got = dist_of("", logits, params);
    // The same by hand: top-k 40 (canonical), top-p 0.95 over their softmax,
    // min-p 0.05, then /0.8.
    CandidateArray cur = make_candidates(logits.data(), 1000);
    apply_top_k(cur, 40);
    apply_top_p(cur, 0.95f, 0);
    apply_min_p(cur, 0.05f, 0);
    apply_temperature(cur, 0.8f);
    const auto want = canonical_distribution(cur);
    ASSERT_EQ(got.size(), want.size());
    for (const Weighted& w : want) EXPECT_NEAR(got.at(w.id), w.p, 1e-12);
    EXPECT_LE(got.size(), 40u);
}

TEST(TwinTruncation, NonFiniteParametersAreRefusedByTheTwin) {
    const std::vector<float> logits = {0.0f, 1.0f};
    std::vector<Weighted> dist;
    std::string message;
    RowParams params;
    params.top_p = NAN;
    EXPECT_EQ(row_distribution(chain_of("top_p"), logits.data(), 2, params, &dist, &message),
              SIEVE_ERROR_INVALID_PARAMETER);
    EXPECT_NE(message.find("top_p"), std::string::npos) << message;
    params = RowParams{};
    params.dynatemp_exponent = INFINITY;
    EXPECT_EQ(row_distribution(chain_of("temperature"), logits.data(), 2, params, &dist, &message),
              SIEVE_ERROR_INVALID_PARAMETER);
    // Unused by the chain: not checked.
    EXPECT_EQ(row_distribution(chain_of("top_k"), logits.data(), 2, params, &dist, &message), SIEVE_OK);
}

} // namespace
