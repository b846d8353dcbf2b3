// The CPU twin (engine/reference/) against llama.cpp's semantics and test vectors.
#include "reference/detail.hpp"
#include "reference/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace sieve::ref;

std::vector<SamplerKind> chain_of(const char* text) {
    std::vector<SamplerKind> chain;
    std::string message;
    const sieve_status status = parse_chain(text, &chain, &message);
    EXPECT_EQ(status, SIEVE_OK) << text << ": " << message;
    return chain;
}

RowParams params_with(float temperature, uint32_t seed = 1234u) {
    RowParams params;
    params.temperature = temperature;
    params.seed = seed;
    return params;
}

std::map<int32_t, double> as_map(const std::vector<Weighted>& dist) {
    std::map<int32_t, double> m;
    for (const Weighted& w : dist) m[w.id] = w.p;
    return m;
}

// ---- temperature (llama_sampler_temp_impl) -----------------------------------

TEST(ReferenceTemperature, ZeroKeepsFirstMaxAndMasksTheRest) {
    const float logits[] = {1.0f, 3.0f, 2.0f, 3.0f, -INFINITY, 0.5f};
    CandidateArray cur = make_candidates(logits, 6);
    apply_temperature(cur, 0.0f);
    ASSERT_EQ(cur.data.size(), 6u); // entries stay: the array does not shrink
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(cur.data[i].id, static_cast<int32_t>(i));
        if (i == 1) {
            EXPECT_EQ(cur.data[i].logit, 3.0f); // the FIRST maximal logit survives, unchanged
        } else {
            EXPECT_EQ(cur.data[i].logit, -INFINITY) << i;
        }
    }
}

TEST(ReferenceTemperature, NegativeBehavesLikeZero) {
    const float logits[] = {0.25f, -1.0f, 7.0f, 7.0f, 7.0f};
    for (float t : {-0.0f, -0.5f, -1.0f, -1e30f, -FLT_MIN}) {
        CandidateArray cur = make_candidates(logits, 5);
        apply_temperature(cur, t);
        ASSERT_EQ(cur.data.size(), 5u);
        for (size_t i = 0; i < 5; ++i) EXPECT_EQ(cur.data[i].logit, i == 2 ? 7.0f : -INFINITY) << "t=" << t << " i=" << i;
    }
}

TEST(ReferenceTemperature, MaskedMembersAreStillCountedLater) {
    // After t <= 0 the candidate array still has vocab members (llama.cpp's later
    // samplers see cur_p->size == vocab), only one of them unmasked.
    std::vector<float> logits(1000);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i));
    CandidateArray cur = make_candidates(logits.data(), 1000);
    apply_temperature(cur, 0.0f);
    EXPECT_EQ(cur.data.size(), 1000u);
    const auto masked = std::count_if(cur.data.begin(), cur.data.end(), [](const TokenData& td) { return td.logit == -INFINITY; });
    EXPECT_EQ(masked, 999);
    const std::vector<Weighted> dist = canonical_distribution(cur);
    ASSERT_EQ(dist.size(), 1u);
    EXPECT_EQ(dist[0].id, static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    EXPECT_EQ(dist[0].p, 1.0);
}

TEST(ReferenceTemperature, PositiveDividesEachLogitAsFloat) {
    const float logits[] = {1.0f, -2.5f, 3.3f, -INFINITY, 0.0f, 1e-3f};
    for (float t : {0.8f, 1.0f, 1.5f, 1e-3f, 3.0f}) {
        CandidateArray cur = make_candidates(logits, 6);
        apply_temperature(cur, t);
        ASSERT_EQ(cur.data.size(), 6u);
        for (size_t i = 0; i < 6; ++i) {
            const float expected = logits[i] / t; // float division, as llama.cpp's `logit /= temp`
            EXPECT_EQ(cur.data[i].logit, expected) << "t=" << t << " i=" << i;
        }
    }
}

// llama.cpp tests/test-sampling.cpp:
//   test_temp({0.1f, 0.2f, 0.3f, 0.4f}, {0.1f, 0.2f, 0.3f, 0.4f}, 1.0f);
//   test_temp({0.1f, 0.2f, 0.3f, 0.4f}, {0.0f, 0.0f, 0.0f, 1.0f}, 0.0f);
// (logits = logf(probs), then temp, then dist; probabilities checked to 1e-5.)
TEST(ReferenceTemperature, LlamaCppTestVectors) {
    const std::vector<float> probs = {0.1f, 0.2f, 0.3f, 0.4f};
    std::vector<float> logits;
    for (float p : probs) logits.push_back(std::log(p));
    const auto chain = chain_of("temperature;dist");

    struct Case {
        float temp;
        std::vector<float> expected;
    };
    const Case cases[] = {{1.0f, {0.1f, 0.2f, 0.3f, 0.4f}}, {0.0f, {0.0f, 0.0f, 0.0f, 1.0f}}};
    for (const Case& c : cases) {
        std::vector<Weighted> dist;
        std::string message;
        ASSERT_EQ(row_distribution(chain, logits.data(), 4, params_with(c.temp), &dist, &message), SIEVE_OK) << message;
        const auto m = as_map(dist);
        for (int32_t id = 0; id < 4; ++id) {
            const double p = m.count(id) ? m.at(id) : 0.0; // masked members are omitted: p = 0
            EXPECT_NEAR(p, c.expected[static_cast<size_t>(id)], 1e-5) << "temp " << c.temp << " id " << id;
        }
    }
}

TEST(ReferenceTemperature, DistributionIsSoftmaxOfScaledLogits) {
    const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 0.5f, 3.25f, -INFINITY, -7.0f};
    const float t = 0.7f;
    std::vector<Weighted> dist;
    std::string message;
    ASSERT_EQ(row_distribution(chain_of("temp"), logits.data(), 7, params_with(t), &dist, &message), SIEVE_OK);
    double sum = 0.0;
    std::vector<double> w(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) {
        w[i] = logits[i] == -INFINITY ? 0.0 : std::exp(double(logits[i] / t) - double(3.25f / t));
        sum += w[i];
    }
    ASSERT_EQ(dist.size(), 6u);
    for (const Weighted& e : dist) EXPECT_NEAR(e.p, w[static_cast<size_t>(e.id)] / sum, 1e-15);
}

TEST(ReferenceTemperature, OverflowFailsTheRow) {
    const auto chain = chain_of("temperature;dist");
    const float up[] = {1e37f, 1.0f};
    RowResult r = sample_row(chain, up, 2, params_with(1e-3f), 0);
    EXPECT_EQ(r.status, SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_EQ(r.token, -1);
    EXPECT_NE(r.message.find("temperature"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("overflow"), std::string::npos) << r.message;

    const float down[] = {1.0f, -1e37f}; // to -inf: also an overflow, not a mask
    r = sample_row(chain, down, 2, params_with(1e-3f), 0);
    EXPECT_EQ(r.status, SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_NE(r.message.find("logit 1"), std::string::npos) << r.message;

    // -inf divided stays -inf (a mask, not an overflow); FLT_MAX / 1 is finite.
    const float fine[] = {FLT_MAX, -INFINITY, -FLT_MAX};
    r = sample_row(chain, fine, 3, params_with(1.0f), 0);
    EXPECT_EQ(r.status, SIEVE_OK) << r.message;
    EXPECT_EQ(r.token, 0);
}

TEST(ReferenceTemperature, NonFiniteTemperatureIsRejected) {
    const float logits[] = {0.0f, 1.0f};
    for (float t : {NAN, INFINITY, -INFINITY}) {
        const RowResult r = sample_row(chain_of("temperature"), logits, 2, params_with(t), 0);
        EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_PARAMETER) << t;
        EXPECT_EQ(r.token, -1);
    }
    // A chain without temperature does not read it.
    EXPECT_EQ(sample_row(chain_of("dist"), logits, 2, params_with(NAN), 0).status, SIEVE_OK);
}

TEST(ReferenceTemperature, NonPositiveTemperatureThroughDistIsDeterministic) {
    const float logits[] = {0.5f, 2.0f, -1.0f, 2.0f};
    const auto chain = chain_of("temperature;dist");
    for (float t : {0.0f, -1.0f}) {
        for (uint32_t step = 0; step < 50; ++step) {
            const RowResult r = sample_row(chain, logits, 4, params_with(t, step * 7919u), step);
            ASSERT_EQ(r.status, SIEVE_OK);
            EXPECT_EQ(r.token, 1);
            EXPECT_EQ(r.p, 1.0f);
            EXPECT_EQ(r.logprob, 0.0f);
        }
    }
}

// ---- greedy (llama_sampler_greedy_apply) -------------------------------------

TEST(ReferenceGreedy, FirstMaximumWinsTies) {
    const float logits[] = {2.0f, 5.0f, -1.0f, 5.0f, 5.0f};
    CandidateArray cur = make_candidates(logits, 5);
    EXPECT_EQ(greedy_index(cur), 1);

    const RowResult r = sample_row(chain_of("greedy"), logits, 5, params_with(0.8f), 0);
    ASSERT_EQ(r.status, SIEVE_OK);
    EXPECT_EQ(r.token, 1);
    EXPECT_EQ(r.p, 1.0f);
    EXPECT_EQ(r.logprob, 0.0f);

    std::vector<Weighted> dist;
    std::string message;
    ASSERT_EQ(row_distribution(chain_of("greedy"), logits, 5, params_with(0.8f), &dist, &message), SIEVE_OK);
    ASSERT_EQ(dist.size(), 1u);
    EXPECT_EQ(dist[0].id, 1);
    EXPECT_EQ(dist[0].p, 1.0);
}

TEST(ReferenceGreedy, SkipsMaskedAndHandlesEdges) {
    const float logits[] = {-INFINITY, -INFINITY, -3.0f, -INFINITY};
    EXPECT_EQ(sample_row(chain_of("greedy"), logits, 4, params_with(0.8f), 0).token, 2);
    CandidateArray empty;
    EXPECT_EQ(greedy_index(empty), -1);
    // Greedy sees the logits after temperature (llama.cpp runs the chain in order).
    const float close[] = {1.0f, 1.0000001f};
    EXPECT_EQ(sample_row(chain_of("temperature;greedy"), close, 2, params_with(1.0f), 0).token, 1);
}

// ---- canonical distribution and the draw -------------------------------------

TEST(ReferenceDistribution, CanonicalOrderIsLogitDescendingTiesByLowerId) {
    const float logits[] = {1.0f, 3.0f, 1.0f, 3.0f, -INFINITY, 2.0f, 1.0f};
    CandidateArray cur = make_candidates(logits, 7);
    const std::vector<Weighted> dist = canonical_distribution(cur);
    const std::vector<int32_t> expected_ids = {1, 3, 5, 0, 2, 6}; // id 4 (masked) omitted
    ASSERT_EQ(dist.size(), expected_ids.size());
    double sum = 0.0;
    for (size_t i = 0; i < dist.size(); ++i) {
        EXPECT_EQ(dist[i].id, expected_ids[i]) << i;
        sum += dist[i].p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-15);
    EXPECT_EQ(dist[0].p, dist[1].p); // equal logits, equal probabilities
    EXPECT_EQ(dist[3].p, dist[4].p);
    const double z = 2 * std::exp(0.0) + std::exp(-1.0) + 3 * std::exp(-2.0);
    EXPECT_NEAR(dist[0].p, 1.0 / z, 1e-15);
    EXPECT_NEAR(dist[2].p, std::exp(-1.0) / z, 1e-15);
}

TEST(ReferenceDistribution, SignedZerosTieByLowerId) {
    const float logits[] = {-0.0f, 0.0f, -0.0f};
    const std::vector<Weighted> dist = canonical_distribution(make_candidates(logits, 3));
    ASSERT_EQ(dist.size(), 3u);
    for (int32_t i = 0; i < 3; ++i) EXPECT_EQ(dist[static_cast<size_t>(i)].id, i);
}

TEST(ReferenceDistribution, LargeRowsMatchAComparatorSort) {
    // Large rows take the radix path: it must give exactly the order a
    // comparator sort gives (logit descending, ties by lower id), with many ties,
    // both zeros, negative values and masked members.
    std::mt19937 rng(99);
    for (int32_t vocab : {1023, 1024, 5000, 151936}) {
        std::vector<float> logits(static_cast<size_t>(vocab));
        for (float& l : logits) {
            const uint32_t r = rng();
            if (r % 17 == 0) l = -INFINITY;
            else if (r % 13 == 0) l = (r & 1) ? 0.0f : -0.0f;
            else l = static_cast<float>(static_cast<int>(r % 4001) - 2000) / 64.0f; // few distinct values: ties
        }
        const std::vector<Weighted> dist = canonical_distribution(make_candidates(logits.data(), vocab));
        std::vector<int32_t> ids;
        for (int32_t i = 0; i < vocab; ++i) if (logits[static_cast<size_t>(i)] != -INFINITY) ids.push_back(i);
        std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
            const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
            if (la != lb) return la > lb;
            return a < b;
        });
        ASSERT_EQ(dist.size(), ids.size()) << vocab;
        for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(dist[i].id, ids[i]) << "vocab " << vocab << " position " << i;
    }
}

// The order-preserving key: floats in ascending order (both zeros, both
// infinities, subnormals, the extremes, random values of both signs) get
// ascending keys, strictly where the floats differ, and -0 takes +0's; the
// key's inverse gives each float back.
TEST(ReferenceSort, FloatKeyKeepsTheFloatsOrder) {
    std::vector<float> values = {-INFINITY, -FLT_MAX, -1.0f, -FLT_MIN, -FLT_TRUE_MIN, -0.0f, 0.0f,
                                 FLT_TRUE_MIN, FLT_MIN, 1.0f, FLT_MAX, INFINITY};
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> uniform(-100.0f, 100.0f);
    for (int i = 0; i < 2000; ++i) values.push_back(uniform(rng));
    std::sort(values.begin(), values.end());
    for (size_t i = 1; i < values.size(); ++i) {
        const uint32_t a = detail::float_key(values[i - 1]), b = detail::float_key(values[i]);
        if (values[i - 1] == values[i])
            EXPECT_EQ(a, b) << values[i - 1] << " and " << values[i];
        else
            EXPECT_LT(a, b) << values[i - 1] << " before " << values[i];
    }
    EXPECT_EQ(detail::float_key(-0.0f), detail::float_key(0.0f));
    EXPECT_EQ(detail::float_key(0.0f), 0x80000000u);  // zero's key, as common.glsl's sieve_key
    // key_float is its inverse: every float comes back bit for bit (a NaN
    // too), -0 as +0.
    values.push_back(std::numeric_limits<float>::quiet_NaN());
    values.push_back(-std::numeric_limits<float>::quiet_NaN());
    for (float v : values) {
        const float back = detail::key_float(detail::float_key(v));
        uint32_t vb, bb;
        std::memcpy(&vb, &v, sizeof vb);
        std::memcpy(&bb, &back, sizeof bb);
        if (v == 0.0f)
            EXPECT_EQ(bb, 0u) << "zero's key gives +0";
        else
            EXPECT_EQ(bb, vb) << v;
    }
}

// The twin's sort (detail::canonical_words, sort_canonical): by radix from
// 1024 entries (then each run of one key by id where the ids do not
// ascend), by comparisons below; the same order as a comparator sort either
// way, entries carried whole. Arrays with ties, both zeros and masked
// members, their ids ascending, shuffled, sparse (gaps up to 3x the size),
// spread (ids past 2^20), negative, and an array already in canonical
// order; and ids that repeat (no sampler makes such an array: the order
// among an id's entries is then left open, the ids and logits in order are
// checked).
TEST(ReferenceSort, CanonicalOrderMatchesAComparatorSort) {
    std::mt19937 rng(7);
    enum class Ids { Ascending, Shuffled, Sparse, Spread, Negative, Sorted, Repeated };
    for (int32_t n : {5, 1023, 1024, 5000, 151936}) {
        for (Ids ids : {Ids::Ascending, Ids::Shuffled, Ids::Sparse, Ids::Spread, Ids::Negative, Ids::Sorted,
                        Ids::Repeated}) {
            SCOPED_TRACE("size " + std::to_string(n) + ", ids " + std::to_string(static_cast<int>(ids)));
            std::vector<int32_t> id(static_cast<size_t>(n));
            const int32_t scale = ids == Ids::Sparse ? 3 : ids == Ids::Spread ? std::max(10, (1 << 21) / n) : 1;
            for (int32_t i = 0; i < n; ++i)
                id[static_cast<size_t>(i)] = ids == Ids::Repeated ? i / 2 : i * scale - (ids == Ids::Negative ? n / 2 : 0);
            if (ids != Ids::Ascending && ids != Ids::Sorted) std::shuffle(id.begin(), id.end(), rng);
            CandidateArray cur;
            for (int32_t i = 0; i < n; ++i) {
                const uint32_t r = rng();
                float l = static_cast<float>(static_cast<int>(r % 4001) - 2000) / 64.0f;  // few distinct values: ties
                if (r % 17 == 0) l = -INFINITY;
                if (r % 13 == 0) l = (r & 1) ? 0.0f : -0.0f;
                cur.data.push_back({id[static_cast<size_t>(i)], l, static_cast<float>(i)});
            }
            std::vector<TokenData> expected = cur.data;
            std::sort(expected.begin(), expected.end(), detail::canonical_before);
            if (ids == Ids::Sorted) cur.data = expected;
            for (bool with_masked : {true, false}) {
                for (detail::WordLow low : {detail::WordLow::Index, detail::WordLow::Id}) {
                    SCOPED_TRACE(std::string("masked kept ") + (with_masked ? "yes" : "no") + ", low half " +
                                 (low == detail::WordLow::Id ? "id" : "index"));
                    const std::vector<uint64_t> order = detail::canonical_words(cur.data, with_masked, low);
                    size_t j = 0;
                    for (const TokenData& e : expected) {
                        if (!with_masked && e.logit == -INFINITY) continue;
                        ASSERT_LT(j, order.size());
                        const uint64_t w = order[j];
                        if (low == detail::WordLow::Index) {
                            const TokenData& at = cur.data[static_cast<uint32_t>(w)];
                            ASSERT_EQ(at.id, e.id) << "position " << j;
                            ASSERT_EQ(detail::float_key(at.logit), detail::float_key(e.logit)) << "position " << j;
                        } else {
                            ASSERT_EQ(detail::word_id(w), e.id) << "position " << j;
                        }
                        // The word's logit is the entry's (key_float's round trip: FloatKeyKeepsTheFloatsOrder).
                        ASSERT_EQ(detail::float_key(detail::word_logit(w)), detail::float_key(e.logit)) << "position " << j;
                        ++j;
                    }
                    EXPECT_EQ(j, order.size());
                }
            }
            detail::sort_canonical(cur);
            EXPECT_TRUE(cur.sorted);
            ASSERT_EQ(cur.data.size(), expected.size());
            for (size_t j = 0; j < expected.size(); ++j) {
                ASSERT_EQ(cur.data[j].id, expected[j].id) << "position " << j;
                ASSERT_EQ(detail::float_key(cur.data[j].logit), detail::float_key(expected[j].logit)) << "position " << j;
                if (ids == Ids::Repeated) continue;
                ASSERT_EQ(cur.data[j].p, expected[j].p) << "position " << j;  // the entry whole
                ASSERT_EQ(std::signbit(cur.data[j].logit), std::signbit(expected[j].logit)) << "position " << j;
            }
            if (ids == Ids::Repeated) {  // every entry once: the p are the entries' indices
                std::vector<float> seen;
                for (const TokenData& e : cur.data) seen.push_back(e.p);
                std::sort(seen.begin(), seen.end());
                for (int32_t i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], static_cast<float>(i));
            }
        }
    }
}

// sort_canonical over arrays whose entries it rebuilds from their keys (ids
// the indices, one p for all, no -0: the array make_candidates built, a
// temperature or penalties after) and over the same arrays just short of
// that (a -0 logit, one p apart, two ids swapped), which it reads entry by
// entry: each the comparator sort's array, bit for bit. Logits with ties,
// masked members, +0, a NaN and an infinity.
TEST(ReferenceSort, SortCanonicalRebuildsOnlyEntriesItsKeysGiveBack) {
    std::mt19937 rng(11);
    enum class Spoil { None, NegativeZero, OneP, SwappedIds };
    for (int32_t n : {3, 1500, 151936}) {
        for (Spoil spoil : {Spoil::None, Spoil::NegativeZero, Spoil::OneP, Spoil::SwappedIds}) {
            SCOPED_TRACE("size " + std::to_string(n) + ", spoiled " + std::to_string(static_cast<int>(spoil)));
            std::vector<float> logits(static_cast<size_t>(n));
            for (float& l : logits) {
                const uint32_t r = rng();
                l = static_cast<float>(static_cast<int>(r % 4001) - 2000) / 64.0f;  // few distinct values: ties
                if (r % 17 == 0) l = -INFINITY;
                if (r % 13 == 0) l = 0.0f;
            }
            logits[static_cast<size_t>(n) / 2] = std::numeric_limits<float>::quiet_NaN();
            logits[0] = INFINITY;
            CandidateArray cur = make_candidates(logits.data(), n);
            for (TokenData& e : cur.data) e.p = 0.25f;
            const size_t at = static_cast<size_t>(n) - 1;
            if (spoil == Spoil::NegativeZero) cur.data[at].logit = -0.0f;
            if (spoil == Spoil::OneP) cur.data[at].p = 0.5f;
            if (spoil == Spoil::SwappedIds) std::swap(cur.data[0].id, cur.data[at].id);
            std::vector<TokenData> expected = cur.data;
            std::sort(expected.begin(), expected.end(), detail::canonical_before);
            detail::sort_canonical(cur);
            ASSERT_EQ(cur.data.size(), expected.size());
            for (size_t j = 0; j < expected.size(); ++j) {
                ASSERT_EQ(cur.data[j].id, expected[j].id) << "position " << j;
                uint32_t got[2], want[2];
                std::memcpy(&got[0], &cur.data[j].logit, 4);
                std::memcpy(&got[1], &cur.data[j].p, 4);
                std::memcpy(&want[0], &expected[j].logit, 4);
                std::memcpy(&want[1], &expected[j].p, 4);
                ASSERT_EQ(got[0], want[0]) << "the logit's bits at position " << j;
                ASSERT_EQ(got[1], want[1]) << "p's bits at position " << j;
            }
        }
    }
}

// Typical's order by score against std::stable_sort: scores that fall and
// then rise (typical's shape over a canonical array), with ties inside each
// run and across them, infinite scores at the end, and sequences of other
// shapes (random, a NaN) that take the sort.
TEST(ReferenceSort, OrderByScoreIsAStableSort) {
    std::mt19937 rng(11);
    enum class Shape { FallThenRise, Falling, Rising, Random, WithNaN };
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{300}, size_t{5000}}) {
        for (Shape shape : {Shape::FallThenRise, Shape::Falling, Shape::Rising, Shape::Random, Shape::WithNaN}) {
            SCOPED_TRACE("size " + std::to_string(n) + ", shape " + std::to_string(static_cast<int>(shape)));
            std::vector<double> score(n);
            for (double& s : score) s = static_cast<double>(rng() % 9) * 0.25;  // few values: ties
            const size_t turn = n == 0 ? 0 : rng() % n;
            if (shape == Shape::FallThenRise) {
                std::sort(score.begin(), score.begin() + static_cast<std::ptrdiff_t>(turn), std::greater<double>());
                std::sort(score.begin() + static_cast<std::ptrdiff_t>(turn), score.end());
                if (n > 3) score[n - 1] = score[n - 2] = INFINITY;  // masked members
            } else if (shape == Shape::Falling) {
                std::sort(score.begin(), score.end(), std::greater<double>());
            } else if (shape == Shape::Rising) {
                std::sort(score.begin(), score.end());
            } else if (shape == Shape::WithNaN && n > 0) {
                std::sort(score.begin(), score.end());
                score[turn] = NAN;
            }
            std::vector<size_t> expected(n);
            for (size_t i = 0; i < n; ++i) expected[i] = i;
            if (shape != Shape::WithNaN)
                std::stable_sort(expected.begin(), expected.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
            const std::vector<size_t> order = detail::order_by_score(score);
            ASSERT_EQ(order.size(), n);
            if (shape == Shape::WithNaN) {  // the sort's order is unspecified: every index once
                std::vector<size_t> seen = order;
                std::sort(seen.begin(), seen.end());
                EXPECT_EQ(seen, expected);
                continue;
            }
            for (size_t i = 0; i < n; ++i) ASSERT_EQ(order[i], expected[i]) << "position " << i;
        }
    }
}

TEST(ReferenceDistribution, ArrayNotInIdOrderStillCanonical) {
    // A candidate array whose ids are not ascending (as later, sorting samplers
    // leave it) still yields the canonical order.
    CandidateArray cur;
    cur.data = {{9, 1.0f, 0}, {2, 1.0f, 0}, {5, 4.0f, 0}, {0, -INFINITY, 0}, {7, 1.0f, 0}};
    const std::vector<Weighted> dist = canonical_distribution(cur);
    const std::vector<int32_t> expected = {5, 2, 7, 9};
    ASSERT_EQ(dist.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(dist[i].id, expected[i]);
}

TEST(ReferenceDraw, Boundaries) {
    const std::vector<Weighted> dist = {{7, 0.25}, {3, 0.25}, {9, 0.5}};
    EXPECT_EQ(draw_inverse_cdf(dist, 0u), 0u);           // u = 0 -> first entry
    EXPECT_EQ(draw_inverse_cdf(dist, 0x3FFFFFFFu), 0u);  // just below 0.25
    EXPECT_EQ(draw_inverse_cdf(dist, 0x40000000u), 1u);  // u = 0.25: cumulative must EXCEED the target
    EXPECT_EQ(draw_inverse_cdf(dist, 0x7FFFFFFFu), 1u);
    EXPECT_EQ(draw_inverse_cdf(dist, 0x80000000u), 2u);  // u = 0.5
    EXPECT_EQ(draw_inverse_cdf(dist, 0xFFFFFFFFu), 2u);  // u max -> last entry

    // Trailing zero-probability entries (exp underflow) are never drawn: u max
    // gives the last entry that has mass.
    const std::vector<Weighted> tail = {{0, 0.75}, {1, 0.25}, {2, 0.0}, {3, 0.0}};
    EXPECT_EQ(draw_inverse_cdf(tail, 0xFFFFFFFFu), 1u);
    EXPECT_EQ(draw_inverse_cdf(tail, 0u), 0u);

    // The target scales with the total mass (an unnormalized list draws the same).
    const std::vector<Weighted> scaled = {{7, 1.0}, {3, 1.0}, {9, 2.0}};
    for (uint32_t u : {0u, 0x3FFFFFFFu, 0x40000000u, 0x80000000u, 0xFFFFFFFFu}) {
        EXPECT_EQ(draw_inverse_cdf(scaled, u), draw_inverse_cdf(dist, u)) << u;
    }
}

TEST(ReferenceDraw, UnderflowedLogitIsNeverDrawn) {
    const float logits[] = {0.0f, -1000.0f}; // exp(-1000) = 0 in double
    const std::vector<Weighted> dist = canonical_distribution(make_candidates(logits, 2));
    ASSERT_EQ(dist.size(), 2u); // still a member (not -inf), with p = 0
    EXPECT_EQ(dist[1].p, 0.0);
    EXPECT_EQ(draw_inverse_cdf(dist, 0xFFFFFFFFu), 0u);
}

TEST(ReferenceDraw, SampleRowUsesPhiloxUniformAndCanonicalOrder) {
    std::vector<float> logits(64);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::cos(0.37f * static_cast<float>(i)) * 2.0f;
    const auto chain = chain_of("temperature;dist");
    const RowParams params = params_with(0.9f, 31337u);
    CandidateArray cur = make_candidates(logits.data(), 64);
    apply_temperature(cur, 0.9f);
    const std::vector<Weighted> dist = canonical_distribution(cur);
    for (uint32_t step = 0; step < 200; ++step) {
        for (uint32_t draw = 0; draw < 2; ++draw) {
            const RowResult r = sample_row(chain, logits.data(), 64, params, step, draw);
            ASSERT_EQ(r.status, SIEVE_OK);
            const size_t index = draw_inverse_cdf(dist, uniform_u32(params.seed, step, draw));
            EXPECT_EQ(r.token, dist[index].id);
            EXPECT_EQ(r.p, static_cast<float>(dist[index].p));
            EXPECT_EQ(r.logprob, static_cast<float>(std::log(dist[index].p)));
        }
    }
}

// ---- edge rows ---------------------------------------------------------------

TEST(ReferenceRow, VocabOne) {
    const float logits[] = {-3.5f};
    for (const char* chain : {"temperature;dist", "greedy", "dist", "temperature;greedy"}) {
        for (float t : {0.8f, 0.0f, -1.0f}) {
            const RowResult r = sample_row(chain_of(chain), logits, 1, params_with(t), 17u);
            ASSERT_EQ(r.status, SIEVE_OK) << chain;
            EXPECT_EQ(r.token, 0);
            EXPECT_EQ(r.p, 1.0f);
            EXPECT_EQ(r.logprob, 0.0f);
        }
    }
    const float masked[] = {-INFINITY};
    EXPECT_EQ(sample_row(chain_of("dist"), masked, 1, params_with(0.8f), 0).status, SIEVE_ERROR_ALL_MASKED);
}

TEST(ReferenceRow, AllMaskedButOne) {
    std::vector<float> logits(1000, -INFINITY);
    logits[637] = -12.0f;
    for (uint32_t step = 0; step < 20; ++step) {
        for (const char* chain : {"temperature;dist", "greedy"}) {
            const RowResult r = sample_row(chain_of(chain), logits.data(), 1000, params_with(0.8f, step), step);
            ASSERT_EQ(r.status, SIEVE_OK);
            EXPECT_EQ(r.token, 637);
            EXPECT_EQ(r.p, 1.0f);
            EXPECT_EQ(r.logprob, 0.0f);
        }
    }
    std::vector<Weighted> dist;
    std::string message;
    ASSERT_EQ(row_distribution(chain_of("dist"), logits.data(), 1000, params_with(0.8f), &dist, &message), SIEVE_OK);
    ASSERT_EQ(dist.size(), 1u);
    EXPECT_EQ(dist[0].id, 637);
}

TEST(ReferenceRow, HugeLogits) {
    const float logits[] = {1e37f, -1e37f, 1e37f, 0.0f, 3e38f, -3e38f};
    std::vector<Weighted> dist;
    std::string message;
    // t = 1: the max is 3e38; every other finite logit underflows to p = 0.
    ASSERT_EQ(row_distribution(chain_of("dist"), logits, 6, params_with(1.0f), &dist, &message), SIEVE_OK) << message;
    ASSERT_EQ(dist.size(), 6u);
    EXPECT_EQ(dist[0].id, 4);
    EXPECT_EQ(dist[0].p, 1.0);
    EXPECT_EQ(dist[1].id, 0);
    EXPECT_EQ(dist[2].id, 2);
    EXPECT_EQ(dist[3].id, 3);
    EXPECT_EQ(dist[4].id, 1);
    EXPECT_EQ(dist[5].id, 5);
    for (size_t i = 1; i < 6; ++i) EXPECT_EQ(dist[i].p, 0.0);
    for (uint32_t step = 0; step < 20; ++step) EXPECT_EQ(sample_row(chain_of("dist"), logits, 6, params_with(1.0f), step).token, 4);

    // Two equal huge maxima split the mass evenly; t = 0.8 keeps them finite (1.25e37).
    const float pair[] = {1e37f, 1e37f, 0.0f};
    ASSERT_EQ(row_distribution(chain_of("temperature"), pair, 3, params_with(0.8f), &dist, &message), SIEVE_OK);
    ASSERT_EQ(dist.size(), 3u);
    EXPECT_EQ(dist[0].p, 0.5);
    EXPECT_EQ(dist[1].p, 0.5);
    EXPECT_EQ(dist[2].p, 0.0);
    EXPECT_EQ(sample_row(chain_of("temperature"), pair, 3, params_with(0.8f), 0).p, 0.5f);
}

TEST(ReferenceRow, TinyLogits) {
    // Differences near FLT_MIN are invisible to exp in double: the
    // probabilities are uniform, and the order still follows the (normal)
    // logits exactly. Subnormals (1e-45) read as zeros (issue 23: a GPU may
    // flush them), so they tie with 0 and keep id order.
    const float logits[] = {-2e-38f, 2e-38f, 0.0f, 1e-45f, -1e-45f};
    std::vector<Weighted> dist;
    std::string message;
    ASSERT_EQ(row_distribution(chain_of("temperature;dist"), logits, 5, params_with(0.8f), &dist, &message), SIEVE_OK);
    const std::vector<int32_t> expected = {1, 2, 3, 4, 0};
    ASSERT_EQ(dist.size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(dist[i].id, expected[i]);
        EXPECT_NEAR(dist[i].p, 0.2, 1e-15);
    }
    EXPECT_EQ(sample_row(chain_of("greedy"), logits, 5, params_with(0.8f), 0).token, 1);
}

TEST(ReferenceRow, SameSeedSameTokenDifferentStepsDiffer) {
    std::vector<float> logits(32000);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (float& l : logits) l = normal(rng);
    const auto chain = chain_of("temperature;dist");
    std::map<int32_t, int> seen;
    for (uint32_t step = 0; step < 64; ++step) {
        const RowResult a = sample_row(chain, logits.data(), 32000, params_with(1.0f, 77u), step);
        const RowResult b = sample_row(chain, logits.data(), 32000, params_with(1.0f, 77u), step);
        ASSERT_EQ(a.status, SIEVE_OK);
        EXPECT_EQ(a.token, b.token);
        EXPECT_EQ(a.p, b.p);
        ++seen[a.token];
    }
    // A flat-ish 32000-way distribution: 64 steps give (almost) all different tokens.
    EXPECT_GT(seen.size(), 50u);
    // Another seed gives another sequence.
    int same = 0;
    for (uint32_t step = 0; step < 64; ++step) {
        same += sample_row(chain, logits.data(), 32000, params_with(1.0f, 77u), step).token ==
                sample_row(chain, logits.data(), 32000, params_with(1.0f, 78u), step).token;
    }
    EXPECT_LT(same, 8);
}

// ---- check_logits --------------------------------------------------------------

TEST(ReferenceCheckLogits, Statuses) {
    std::string message;
    const float ok[] = {0.0f, -INFINITY, 1.0f, -FLT_MAX, FLT_MAX};
    EXPECT_EQ(check_logits(ok, 5, &message), SIEVE_OK);
    EXPECT_TRUE(message.empty());

    const float nan_row[] = {0.0f, 1.0f, 2.0f, NAN, INFINITY};
    EXPECT_EQ(check_logits(nan_row, 5, &message), SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_NE(message.find("logit 3"), std::string::npos) << message;
    EXPECT_NE(message.find("nan"), std::string::npos) << message;

    const float inf_row[] = {-INFINITY, 0.0f, INFINITY, NAN};
    EXPECT_EQ(check_logits(inf_row, 4, &message), SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_NE(message.find("logit 2"), std::string::npos) << message;
    EXPECT_NE(message.find("inf"), std::string::npos) << message;

    const float masked[] = {-INFINITY, -INFINITY, -INFINITY};
    EXPECT_EQ(check_logits(masked, 3, &message), SIEVE_ERROR_ALL_MASKED);
    EXPECT_FALSE(message.empty());

    const float nan_and_masked[] = {-INFINITY, NAN}; // non-finite is reported first
    EXPECT_EQ(check_logits(nan_and_masked, 2, &message), SIEVE_ERROR_NON_FINITE_LOGIT);

    EXPECT_EQ(check_logits(ok, 0, &message), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(check_logits(ok, -3, &message), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(check_logits(nullptr, 5, &message), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(check_logits(ok, 5, nullptr), SIEVE_OK); // message is optional
}

TEST(ReferenceCheckLogits, BadRowsThroughSampleRow) {
    const auto chain = chain_of("temperature;dist");
    const float nan_row[] = {0.0f, NAN};
    RowResult r = sample_row(chain, nan_row, 2, params_with(0.8f), 0);
    EXPECT_EQ(r.status, SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_EQ(r.token, -1);
    EXPECT_NE(r.message.find("logit 1"), std::string::npos);

    const float masked[] = {-INFINITY, -INFINITY};
    r = sample_row(chain, masked, 2, params_with(0.8f), 0);
    EXPECT_EQ(r.status, SIEVE_ERROR_ALL_MASKED);
    EXPECT_EQ(r.token, -1);

    r = sample_row(chain, nullptr, 2, params_with(0.8f), 0);
    EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_ARGUMENT);
    r = sample_row(chain, masked, 0, params_with(0.8f), 0);
    EXPECT_EQ(r.status, SIEVE_ERROR_INVALID_ARGUMENT);

    std::vector<Weighted> dist = {{1, 1.0}};
    std::string message;
    EXPECT_EQ(row_distribution(chain, nan_row, 2, params_with(0.8f), &dist, &message), SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_TRUE(dist.empty());
    EXPECT_FALSE(message.empty());
}

// ---- parse_chain ---------------------------------------------------------------

TEST(ReferenceParseChain, LlamaCppNamesAndAliases) {
    // common_sampler_types_from_names (canonical and alternative names) and the
    // selecting samplers. Each parses to the expected kind; unimplemented ones are
    // recognised (UNSUPPORTED, not UNKNOWN).
    const std::pair<const char*, SamplerKind> names[] = {
        {"dry", SamplerKind::Dry},           {"top_k", SamplerKind::TopK},
        {"top-k", SamplerKind::TopK},        {"top_p", SamplerKind::TopP},
        {"top-p", SamplerKind::TopP},        {"nucleus", SamplerKind::TopP},
        {"top_n_sigma", SamplerKind::TopNSigma}, {"top-n-sigma", SamplerKind::TopNSigma},
        {"typ_p", SamplerKind::TypicalP},    {"typical_p", SamplerKind::TypicalP},
        {"typical-p", SamplerKind::TypicalP}, {"typ-p", SamplerKind::TypicalP},
        {"typ", SamplerKind::TypicalP},      {"typical", SamplerKind::TypicalP},
        {"min_p", SamplerKind::MinP},        {"min-p", SamplerKind::MinP},
        {"temperature", SamplerKind::Temperature}, {"temp", SamplerKind::Temperature},
        {"xtc", SamplerKind::Xtc},           {"infill", SamplerKind::Infill},
        {"penalties", SamplerKind::Penalties}, {"adaptive_p", SamplerKind::AdaptiveP},
        {"adaptive-p", SamplerKind::AdaptiveP}, {"greedy", SamplerKind::Greedy},
        {"dist", SamplerKind::Dist},         {"mirostat", SamplerKind::Mirostat},
        {"mirostat_v2", SamplerKind::MirostatV2},
    };
    for (const auto& [name, kind] : names) {
        std::vector<SamplerKind> chain;
        std::string message;
        const sieve_status status = parse_chain(name, &chain, &message);
        if (sampler_implemented(kind)) {
            ASSERT_EQ(status, SIEVE_OK) << name << ": " << message;
            EXPECT_EQ(chain.front(), kind) << name;
        } else {
            EXPECT_EQ(status, SIEVE_ERROR_UNSUPPORTED_SAMPLER) << name << ": " << message;
            EXPECT_NE(message.find("not implemented yet"), std::string::npos) << message;
            EXPECT_NE(message.find(sampler_name(kind)), std::string::npos) << message;
        }
    }
}

TEST(ReferenceParseChain, ImplementedSet) {
    // Every llama.cpp sampler but infill: the truncating ones, penalties and DRY,
    // and the learning selectors (mirostat v1/v2, adaptive-p).
    for (SamplerKind kind : {SamplerKind::Temperature, SamplerKind::Greedy, SamplerKind::Dist, SamplerKind::TopNSigma,
                             SamplerKind::TopK, SamplerKind::TypicalP, SamplerKind::TopP, SamplerKind::MinP,
                             SamplerKind::Xtc, SamplerKind::Penalties, SamplerKind::Dry, SamplerKind::Mirostat,
                             SamplerKind::MirostatV2, SamplerKind::AdaptiveP}) {
        EXPECT_TRUE(sampler_implemented(kind)) << sampler_name(kind);
    }
    EXPECT_FALSE(sampler_implemented(SamplerKind::Infill));
}

TEST(ReferenceParseChain, SeparatorsWhitespaceAndDistAppended) {
    using V = std::vector<SamplerKind>;
    EXPECT_EQ(chain_of("temperature"), (V{SamplerKind::Temperature, SamplerKind::Dist}));
    EXPECT_EQ(chain_of("temp;dist"), (V{SamplerKind::Temperature, SamplerKind::Dist}));
    EXPECT_EQ(chain_of("  temp , dist  "), (V{SamplerKind::Temperature, SamplerKind::Dist}));
    EXPECT_EQ(chain_of("temperature;temp,\ttemperature ;"), (V{SamplerKind::Temperature, SamplerKind::Temperature,
                                                               SamplerKind::Temperature, SamplerKind::Dist}));
    EXPECT_EQ(chain_of("greedy"), (V{SamplerKind::Greedy}));
    EXPECT_EQ(chain_of("temperature;greedy"), (V{SamplerKind::Temperature, SamplerKind::Greedy}));
    EXPECT_EQ(chain_of("dist"), (V{SamplerKind::Dist}));
    EXPECT_EQ(std::string(sampler_name(SamplerKind::TypicalP)), "typ_p");
}

TEST(ReferenceParseChain, UnknownUnsupportedInvalid) {
    std::vector<SamplerKind> chain = {SamplerKind::Greedy};
    std::string message;
    EXPECT_EQ(parse_chain("temperature;foo;dist", &chain, &message), SIEVE_ERROR_UNKNOWN_SAMPLER);
    EXPECT_EQ(message, "unknown sampler 'foo'");
    EXPECT_TRUE(chain.empty());
    EXPECT_EQ(parse_chain("Temperature", &chain, &message), SIEVE_ERROR_UNKNOWN_SAMPLER); // case-sensitive, as llama.cpp
    EXPECT_EQ(parse_chain("top k", &chain, &message), SIEVE_ERROR_UNKNOWN_SAMPLER);

    EXPECT_EQ(parse_chain("infill;temperature", &chain, &message), SIEVE_ERROR_UNSUPPORTED_SAMPLER);
    EXPECT_EQ(message, "sampler 'infill' is not implemented yet");
    EXPECT_EQ(parse_chain("temperature;infill;dist", &chain, &message), SIEVE_ERROR_UNSUPPORTED_SAMPLER);
    EXPECT_NE(message.find("'infill'"), std::string::npos) << message;
    EXPECT_EQ(parse_chain("temperature;mirostat-v2", &chain, &message), SIEVE_OK) << message;
    EXPECT_EQ(chain, (std::vector<SamplerKind>{SamplerKind::Temperature, SamplerKind::MirostatV2}));
    EXPECT_EQ(parse_chain("mirostat;temperature", &chain, &message), SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(parse_chain("adaptive_p;dist", &chain, &message), SIEVE_ERROR_INVALID_CHAIN);

    // Nothing may follow the sampler that picks the token.
    EXPECT_EQ(parse_chain("dist;temperature", &chain, &message), SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_NE(message.find("temperature"), std::string::npos) << message;
    EXPECT_EQ(parse_chain("greedy;dist", &chain, &message), SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(parse_chain("dist;dist", &chain, &message), SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(parse_chain("greedy;infill", &chain, &message), SIEVE_ERROR_INVALID_CHAIN); // order before support
    EXPECT_EQ(parse_chain("foo;greedy;dist", &chain, &message), SIEVE_ERROR_UNKNOWN_SAMPLER); // unknown first
    EXPECT_EQ(parse_chain(";", &chain, &message), SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(parse_chain(" , ; ", &chain, &message), SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(parse_chain("temperature", nullptr, &message), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(parse_chain("temperature", &chain, nullptr), SIEVE_OK); // message is optional
}

TEST(ReferenceParseChain, DefaultChainIsLlamaCpps) {
    EXPECT_STREQ(kDefaultChain, "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature");
    using K = SamplerKind;
    const std::vector<SamplerKind> expected = {K::Penalties, K::Dry,  K::TopNSigma, K::TopK,        K::TypicalP,
                                               K::TopP,      K::MinP, K::Xtc,       K::Temperature, K::Dist};
    for (const char* text : {static_cast<const char*>(nullptr), "", "   "}) {
        std::vector<SamplerKind> chain;
        std::string message;
        EXPECT_EQ(parse_chain(text, &chain, &message), SIEVE_OK) << message; // issue 3: the twin runs it
        EXPECT_EQ(chain, expected);
    }
}

TEST(ReferenceParseChain, SampleRowRejectsMalformedChains) {
    const float logits[] = {0.0f, 1.0f};
    EXPECT_EQ(sample_row({}, logits, 2, params_with(0.8f), 0).status, SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(sample_row({SamplerKind::Temperature}, logits, 2, params_with(0.8f), 0).status, SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(sample_row({SamplerKind::Dist, SamplerKind::Temperature}, logits, 2, params_with(0.8f), 0).status,
              SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(sample_row({SamplerKind::Infill, SamplerKind::Dist}, logits, 2, params_with(0.8f), 0).status,
              SIEVE_ERROR_UNSUPPORTED_SAMPLER);
    EXPECT_EQ(sample_row({SamplerKind::Mirostat, SamplerKind::Dist}, logits, 2, params_with(0.8f), 0).status,
              SIEVE_ERROR_INVALID_CHAIN);
    EXPECT_EQ(sample_row({SamplerKind::Temperature, SamplerKind::AdaptiveP}, logits, 2, params_with(0.8f), 0).status,
              SIEVE_OK);
}

// ---- statistics ----------------------------------------------------------------

// Upper quantile z of the standard normal: 1 - Phi(z) = alpha, by bisection on
// erfc (1 - Phi(z) = erfc(z / sqrt 2) / 2).
double normal_upper_quantile(double alpha) {
    double lo = 0.0, hi = 40.0;
    for (int i = 0; i < 200; ++i) {
        const double mid = 0.5 * (lo + hi);
        if (0.5 * std::erfc(mid / std::sqrt(2.0)) > alpha) lo = mid; else hi = mid;
    }
    return 0.5 * (lo + hi);
}

// Chi-square critical value for k degrees of freedom at significance alpha,
// Wilson-Hilferty: (X/k)^(1/3) is about normal with mean 1 - 2/(9k) and variance
// 2/(9k).
double chi_square_critical(int k, double alpha) {
    const double z = normal_upper_quantile(alpha);
    const double v = 2.0 / (9.0 * k);
    return k * std::pow(1.0 - v + z * std::sqrt(v), 3.0);
}

TEST(ReferenceStatistics, CriticalValuesAreRight) {
    EXPECT_NEAR(normal_upper_quantile(0.001), 3.090232306, 1e-6);
    // Tabulated chi-square 0.999 quantiles: k=4 18.467, k=9 27.877, k=19 43.820.
    EXPECT_NEAR(chi_square_critical(4, 0.001), 18.467, 0.3);
    EXPECT_NEAR(chi_square_critical(9, 0.001), 27.877, 0.2);
    EXPECT_NEAR(chi_square_critical(19, 0.001), 43.820, 0.2);
}

struct ChiSquare {
    double statistic;
    double critical;
};

// 100000 twin draws of `logits` through `chain`: one draw per step (as
// sieve_sample advances the step) or per draw index, fixed seed.
ChiSquare chi_square_of_draws(const std::vector<float>& logits, const char* chain_text, float temperature,
                              uint32_t seed, bool vary_draw) {
    const auto chain = chain_of(chain_text);
    const int32_t vocab = static_cast<int32_t>(logits.size());
    std::vector<Weighted> dist;
    std::string message;
    EXPECT_EQ(row_distribution(chain, logits.data(), vocab, params_with(temperature, seed), &dist, &message), SIEVE_OK);
    const int n = 100000;
    std::map<int32_t, int> counts;
    for (int i = 0; i < n; ++i) {
        const uint32_t step = vary_draw ? 5u : static_cast<uint32_t>(i);
        const uint32_t draw = vary_draw ? static_cast<uint32_t>(i) : 0u;
        const RowResult r = sample_row(chain, logits.data(), vocab, params_with(temperature, seed), step, draw);
        EXPECT_EQ(r.status, SIEVE_OK);
        ++counts[r.token];
    }
    double statistic = 0.0;
    int cells = 0;
    for (const Weighted& w : dist) {
        const double expected = n * w.p;
        EXPECT_GE(expected, 5.0) << "choose a distribution whose cells expect at least 5 draws";
        const double observed = counts.count(w.id) ? counts.at(w.id) : 0;
        statistic += (observed - expected) * (observed - expected) / expected;
        ++cells;
        counts.erase(w.id);
    }
    EXPECT_TRUE(counts.empty()) << "drew a token outside the distribution";
    const ChiSquare result{statistic, chi_square_critical(cells - 1, 0.001)};
    std::printf("chi-square %.3f (df %d, critical %.3f at 0.001)\n", result.statistic, cells - 1, result.critical);
    return result;
}

TEST(ReferenceStatistics, ChiSquareSmallDistribution) {
    // llama.cpp's test distribution {0.1, 0.2, 0.3, 0.4} plus a small one.
    std::vector<float> logits;
    for (float p : {0.1f, 0.2f, 0.3f, 0.4f, 0.02f}) logits.push_back(std::log(p));
    const ChiSquare over_steps = chi_square_of_draws(logits, "dist", 1.0f, 20240601u, false);
    EXPECT_LT(over_steps.statistic, over_steps.critical) << "df 4";
    const ChiSquare over_draws = chi_square_of_draws(logits, "dist", 1.0f, 99u, true);
    EXPECT_LT(over_draws.statistic, over_draws.critical) << "df 4";
}

TEST(ReferenceStatistics, ChiSquareWithTemperatureAndTies) {
    // 20 tokens, Zipf-like with ties and a masked member, through temperature 0.7.
    std::vector<float> logits;
    for (int i = 0; i < 20; ++i) logits.push_back(-0.45f * std::log(1.0f + static_cast<float>(i / 2)));
    logits.push_back(-INFINITY);
    const ChiSquare c = chi_square_of_draws(logits, "temperature;dist", 0.7f, 4242u, false);
    EXPECT_LT(c.statistic, c.critical) << "df 19";
}

} // namespace
