// The last workgroup of a chunked pass reads what the row's chunks left with
// the whole workgroup, a batch of chunks at a time, and adds them in chunk
// order (docs/architecture/plan.md: the last-workgroup handoff). At 256
// invocations one batch holds a GPU plan's 64 chunks; at 32 the batches are
// several: scan.glsl's WG / 4 chunks (8 batches), wide_histogram's WG x 16
// words (3 batches of 30 chunks), wide_gather's WG chunks (2). The collect
// tail's aggregates (merge_chunk_aggs) are at most 8 chunks' at any size.
// Either way the tokens (and the survivors where listed) must equal the
// twin's, and the batched passes must have run.
#include "reference/reference.hpp"
#include "test_support.hpp"
#include "twin_compare.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using sieve_test::Shape;

// A GPU's plan (the gpu profile) at a given workgroup size.
sieve::Context gpu_plan_context(uint32_t workgroup) {
    sieve::ContextOptions o = sieve_test::gpu_options();
    o.constrained(0, 0, workgroup).profile("gpu");
    return sieve::Context(o);
}

struct Case {
    const char* samplers;
    Shape shape;
    float top_p;
    float top_n_sigma;
    float flatten;        // the rows' logits times this (small: dist's key levels run)
    float ramp;           // plus ramp x i / vocab: chunks of different means and masses
    uint32_t min_passes;  // what each row's token must report: the batched passes ran
    bool listing;         // the survivors too (sieve_chain_distribution)
};

void expect_twin_tokens(uint32_t workgroup, const Case& c) {
    auto gpu = gpu_plan_context(workgroup);
    ASSERT_EQ(gpu.device_info().workgroup_size, workgroup);
    const int32_t rows = 2, vocab = 151936;
    const float temperature = 0.8f;
    sieve::Chain chain(gpu, sieve_test::chain_desc(c.samplers, rows, vocab, temperature, 5));
    sieve::ref::RowParams params;
    params.temperature = temperature;
    params.top_p = c.top_p;
    params.top_n_sigma = c.top_n_sigma;
    params.seed = 5;  // the chain's, every row's
    for (int32_t r = 0; r < rows; ++r) {
        chain.set(SIEVE_PARAM_TOP_P, c.top_p, r);
        chain.set(SIEVE_PARAM_TOP_N_SIGMA, c.top_n_sigma, r);
    }
    const auto kinds = sieve_test::twin_chain(c.samplers);
    sieve_test::twin::Tally tally;
    const uint64_t fallbacks = chain.counters().cpu_fallback_rows;
    for (uint32_t step = 0; step < 3; ++step) {
        std::vector<float> logits = sieve_test::make_rows(c.shape, rows, vocab, 17u + step);
        for (size_t i = 0; i < logits.size(); ++i)
            logits[i] = logits[i] * c.flatten + c.ramp * static_cast<float>(i % vocab) / vocab;
        for (int32_t r = 0; r < rows && c.listing; ++r) {
            SCOPED_TRACE("survivors, step " + std::to_string(step) + " row " + std::to_string(r));
            sieve_test::twin::Row row{kinds, logits.data() + static_cast<size_t>(r) * vocab, vocab, params};
            sieve_test::twin::compare_distribution(sieve_test::twin::gpu_distribution(chain, logits, rows, vocab, r),
                                                   &row, step, &tally);
        }
        const std::vector<sieve_token> got = chain.sample(logits.data(), rows, vocab);
        for (int32_t r = 0; r < rows; ++r) {
            SCOPED_TRACE("step " + std::to_string(step) + " row " + std::to_string(r));
            const float* row = logits.data() + static_cast<size_t>(r) * vocab;
            sieve_test::twin::compare_token(got[static_cast<size_t>(r)], sieve_test::twin::Row{kinds, row, vocab, params},
                                            step, &tally);
            EXPECT_GE(got[static_cast<size_t>(r)].row_passes, c.min_passes);
        }
    }
    EXPECT_EQ(chain.counters().cpu_fallback_rows, fallbacks);
    EXPECT_LE(tally.token_near_cdf_boundary + tally.token_near_tie_order + tally.cut_near_threshold, 1);
}

const Case kCases[] = {
    // mass_histogram level 0 (scan_level): 64 chunks.
    {"temperature;dist", Shape::Zipf, 1.0f, -1.0f, 1.0f, 0.0f, 3, false},
    // ... and key levels past it: logits within about 0.1.
    {"temperature;dist", Shape::Gaussian, 1.0f, -1.0f, 0.025f, 0.0f, 4, false},
    // The collect tail's aggregates: top-n-sigma's cut at the row's mean
    // and sigma (at 0.5 sigma inside the buffer: no fallback), its survivors
    // compared.
    {"top_n_sigma;top_p;temperature;dist", Shape::Gaussian, 0.9f, 0.5f, 1.0f, 6.0f, 1, true},
    // wide_histogram (its cut in the buffer or past it) and wide_gather.
    {"top_p;temperature;dist", Shape::Zipf, 0.9f, -1.0f, 1.0f, 0.0f, 3, false},
};

TEST(LastWorkgroupBatches, SeveralBatchesAtSmallWorkgroupsEqualTheTwin) {
    for (const Case& c : kCases) {
        SCOPED_TRACE(std::string(c.samplers) + " " + sieve_test::shape_name(c.shape));
        expect_twin_tokens(32, c);
    }
}

TEST(LastWorkgroupBatches, OneBatchAtAGpusWorkgroupsEqualsTheTwin) {
    for (const Case& c : kCases) {
        SCOPED_TRACE(std::string(c.samplers) + " " + sieve_test::shape_name(c.shape));
        expect_twin_tokens(256, c);
    }
}

} // namespace
