// raw_range.glsl: a GPU's gather and key levels test a logit's membership
// in the chosen bin (or range) by the logit's own key, from the range of
// raw keys whose scaled logits' keys lie in it. On the device (raw_range_kat.comp), each
// edge against a search over every raw key with the host's IEEE division;
// then whole draws of bins whose edges every raw key around them reaches.
#include "vulkan/gpu_selftest.hpp"
#include "vulkan/vk_device.hpp"
#include "reference/detail.hpp"
#include "reference/reference.hpp"
#include "test_support.hpp"
#include "twin_compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kKeyNegInf = 0x007FFFFFu;  // keys.glsl: KEY_NEG_INF
constexpr uint32_t kKeyPosInf = 0xFF800000u;  // KEY_POS_INF

// keys.glsl's sieve_key_value is the twin's key_float.
using sieve::ref::detail::key_float;

// keys.glsl's sieve_key: subnormals (and -0) share zero's key, where the
// twin's float_key keeps subnormals apart.
uint32_t shader_key(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    if ((b & 0x7F800000u) == 0u) b = 0u;
    return b ^ (static_cast<uint32_t>(static_cast<int32_t>(b) >> 31) | 0x80000000u);
}

uint32_t scaled_key(uint32_t raw, float scale) {  // sieve_key(scaled_logit(raw's value, scale))
    const float f = key_float(raw);
    return shader_key(scale > 0.0f && scale != 1.0f ? f / scale : f);
}

// The first raw key (of the finite ones) whose scaled key reaches lo, and the
// last whose scaled key stays at or below hi: binary searches, the scaled key
// never falling as the raw key rises.
uint32_t first_reaching(float scale, uint32_t lo) {
    uint32_t a = kKeyNegInf + 1, b = kKeyPosInf;  // the answer is in [a, b]
    while (a < b) {
        const uint32_t mid = a + (b - a) / 2;
        if (scaled_key(mid, scale) >= lo) b = mid;
        else a = mid + 1;
    }
    return a;
}

uint32_t last_staying(float scale, uint32_t hi) {
    uint32_t a = kKeyNegInf, b = kKeyPosInf - 1;  // the answer is in [a, b]
    while (a < b) {
        const uint32_t mid = a + (b - a + 1) / 2;
        if (scaled_key(mid, scale) <= hi) a = mid;
        else b = mid - 1;
    }
    return a;
}

TEST(RawRange, EdgesAreTheRawKeysTheHostsDivisionPutsAtTheBinsEdges) {
    std::mt19937 rng(2026);
    std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
    std::uniform_int_distribution<int> exponent(-60, 60);
    std::uniform_int_distribution<uint32_t> width(0, 1u << 21);
    const float scales[] = {0.8f, 0.7f, 1.3f, 1.7f, 0.1f, 3.0f, 2.0f, 0.5f, 1e-3f, 977.0f, 1.0f, 0.0f};
    std::vector<sieve::RawRangeCase> cases;
    for (int i = 0; i < 600; ++i) {
        const float scale = scales[i % 12];
        // An edge's value times the scale, and a bin of up to a level-0
        // bin's keys (a key's top 11 bits) from there, of either sign.
        const float v = std::ldexp(mantissa(rng), exponent(rng)) * ((i / 12) % 3 == 0 ? -1.0f : 1.0f);
        const uint32_t lo = shader_key(v), hi = lo + width(rng);
        if (hi >= kKeyPosInf || lo <= kKeyNegInf) continue;
        cases.push_back({scale, lo, hi});
        // Bins whose edges are powers of two and the keys around them, where
        // the raw keys' spacing halves or doubles.
        const uint32_t p = shader_key(std::ldexp(1.0f, exponent(rng)));
        cases.push_back({scale, p - (i % 5), p + 1u + (i % 7)});
    }
    // A bin from just below zero to just above it: every zero and subnormal
    // raw key in it, whatever the scale.
    cases.push_back({0.8f, shader_key(-1e-20f), shader_key(1e-20f)});
    const size_t regular = cases.size();
    // Past what the search takes: the pass divides every logit.
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<sieve::RawRangeCase> divided = {
        {0.8f, shader_key(-inf), shader_key(1.0f)},     // -inf's key in the bin
        {0.8f, shader_key(1.0f), shader_key(inf)},      // +inf's
        {0.8f, shader_key(1e-35f), shader_key(1.0f)},   // an edge below 2^-100
        {0.8f, shader_key(1.0f), shader_key(1e35f)},    // above 2^100
        {1e-9f, shader_key(1.0f), shader_key(2.0f)},    // a scale below 2^-20
        {4e6f, shader_key(1.0f), shader_key(2.0f)},     // above 2^20
        {0.8f, shader_key(2.0f), shader_key(1.0f)},     // lo past hi
    };
    cases.insert(cases.end(), divided.begin(), divided.end());
    auto ctx = sieve_test::gpu_context();
    const std::vector<sieve::RawRange> got = sieve::raw_ranges_on_device(ctx.get(), cases);
    ASSERT_EQ(got.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const sieve::RawRangeCase& c = cases[i];
        SCOPED_TRACE("case " + std::to_string(i) + ": scale " + std::to_string(c.scale) + ", keys " +
                     std::to_string(c.lo) + " to " + std::to_string(c.hi));
        if (i >= regular) {
            EXPECT_FALSE(got[i].found);
            continue;
        }
        ASSERT_TRUE(got[i].found);
        EXPECT_EQ(got[i].lo, first_reaching(c.scale, c.lo));
        EXPECT_EQ(got[i].hi, last_staying(c.scale, c.hi));
    }
}

// Contexts made while it lives correct every quotient, as a GPU's passes do
// (vk_device.hpp: exact_division_for_tests).
class ExactDivision {
public:
    ExactDivision() : before_(sieve::exact_division_for_tests(true)) {}
    ~ExactDivision() { sieve::exact_division_for_tests(before_); }

private:
    bool before_;
};

// Rows whose logits are 20000 consecutive floats around 1.0 (every raw key
// there), the rest -100: the chosen bins of dist's selection levels are key
// ranges inside the run, and their edges' raw keys are logits of the row, as
// are the keys next to them. A gather that missed or added an edge's logit
// would draw another token (a member missing shifts every later one's share
// of the bin's mass) or fail the row to the twin. At temperatures below and
// above 1 (below 1.0 some scaled keys take two raw keys: ties; above it a
// raw key a scaled key, with gaps) the tokens equal the twin's, none from
// the twin. (An edge's member missed at a bin's low end shifts only a draw
// that falls on it: the search's own test above pins both edges.)
TEST(RawRange, DrawsFromRunsOfConsecutiveFloatsEqualTheTwin) {
    const int32_t vocab = 151936;
    const std::string samplers = "temperature;dist";
    const auto kinds = sieve_test::twin_chain(samplers);
    sieve_test::twin::Tally tally;
    // Every quotient corrected, as on a GPU (a CPU device divides exactly:
    // the test switch). One compute unit: 4 chunks a row, long enough for
    // the raw keys (raw_range_pays); the stand-in GPU's 32: 64 chunks a row,
    // every logit divided. Both draw the same.
    ExactDivision exact;
    for (const char* units : {"1", "32"}) {
        sieve::ContextOptions o = sieve_test::gpu_options();
        o.profile("gpu");
        sieve_test::ScopedEnv env("SIEVE_COMPUTE_UNITS", units);
        sieve::Context gpu(o);
        for (float temperature : {0.8f, 1.3f}) {
            SCOPED_TRACE(std::string("units ") + units + ", temperature " + std::to_string(temperature));
            sieve::Chain chain(gpu, sieve_test::chain_desc(samplers, 1, vocab, temperature, 9));
            for (uint32_t step = 0; step < 24; ++step) {
                std::vector<float> row(static_cast<size_t>(vocab), -100.0f);
                const uint32_t start = (step * 7919u) % static_cast<uint32_t>(vocab), one = shader_key(1.0f);
                for (uint32_t i = 0; i < 20000; ++i)
                    row[(start + i) % static_cast<uint32_t>(vocab)] = key_float(one - 10000u + i);
                sieve_test::twin::sample_against_twin(chain, kinds, row, temperature, 31u + step, &tally);
            }
            EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u);
        }
    }
    EXPECT_LE(tally.token_near_cdf_boundary + tally.token_near_tie_order, 1);
}

} // namespace
