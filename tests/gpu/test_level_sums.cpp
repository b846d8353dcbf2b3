// The selection levels sum exact 40-bit masses (mass_histogram.comp). On a
// CPU device's own plan level 0 keeps a bin's high mass words and its count in
// one word per invocation (HIGH_COUNT_ONE), emptied every 4092 logits an
// invocation reads; a row of two million logits gives each invocation more
// than that (at most 4 chunks of 64 invocations: 7812 each). Rows of equal
// logits (every mass the largest, 2^40) are the high part's worst case; a
// nearly flat row fills every bin. On other devices the same rows run the
// register path. Every draw must equal the twin's.
#include "reference/reference.hpp"
#include "test_support.hpp"
#include "twin_compare.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using sieve_test::Shape;

TEST(LevelSums, RowsLongerThanAnInvocationsSpanEqualTheTwin) {
    constexpr int32_t kVocab = 2000000, kRows = 2;
    const std::string samplers = "temperature;dist";
    const float temperature = 1.0f;
    sieve::Context ctx = sieve_test::gpu_context();
    sieve::Chain chain(ctx, sieve_test::chain_desc(samplers, kRows, kVocab, temperature, 0));
    for (int32_t r = 0; r < kRows; ++r) chain.set(SIEVE_PARAM_SEED, 4100 + r, r);
    const auto kinds = sieve_test::twin_chain(samplers);
    std::vector<float> logits(static_cast<size_t>(kRows) * kVocab, 0.0f);  // row 0: one tie group
    const std::vector<float> flat = sieve_test::make_row(Shape::Gaussian, kVocab, 17);
    for (int32_t i = 0; i < kVocab; ++i) logits[static_cast<size_t>(kVocab) + i] = 0.001f * flat[static_cast<size_t>(i)];
    sieve_test::twin::Tally tally;
    for (uint32_t step = 0; step < 4; ++step) {
        const std::vector<sieve_token> got = chain.sample(logits.data(), kRows, kVocab);
        for (int32_t r = 0; r < kRows; ++r) {
            SCOPED_TRACE("step " + std::to_string(step) + " row " + std::to_string(r));
            sieve::ref::RowParams params;
            params.temperature = temperature;
            params.seed = 4100u + static_cast<uint32_t>(r);
            sieve_test::twin::compare_token(
                got[static_cast<size_t>(r)],
                sieve_test::twin::Row{kinds, logits.data() + static_cast<size_t>(r) * kVocab, kVocab, params}, step,
                &tally);
        }
    }
    EXPECT_EQ(tally.token_near_cdf_boundary + tally.token_near_tie_order, 0);
}

} // namespace
