// Draws on the GPU follow the distribution (chi-square goodness of fit, at least
// 100 000 draws, significance 0.001) and seeds reproduce, whatever the batch.
#include "reference/reference.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

namespace {

using sieve_test::Profile;
using sieve_test::Shape;

// Upper 0.001 critical value of chi-square with k degrees of freedom
// (Wilson-Hilferty; z = 3.0902 is the standard normal's 0.999 quantile).
double chi_square_critical_0001(int k) {
    const double z = 3.090232306167813;
    const double a = 2.0 / (9.0 * k);
    return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// Many rows with the same logits and different seeds give many independent
// draws per submission; tokens below `min_expected` expected counts are pooled.
// `samplers` with the given top-p and min_keep (others at their defaults).
void check_goodness_of_fit(const std::vector<float>& row, float temperature, int32_t rows, int32_t rounds,
                           Profile profile, const char* samplers = "temperature;dist", float top_p = 1.0f,
                           int32_t min_keep = 0) {
    const int32_t vocab = static_cast<int32_t>(row.size());
    auto gpu = sieve_test::gpu_context(profile);
    auto desc = sieve_test::chain_desc(samplers, rows, vocab, temperature, 0);
    sieve::Chain chain(gpu, desc);
    for (int32_t r = 0; r < rows; ++r) {
        chain.set(SIEVE_PARAM_SEED, 1000003.0 * r + 17, r);
        chain.set(SIEVE_PARAM_TOP_P, top_p, r);
        chain.set(SIEVE_PARAM_MIN_KEEP, min_keep, r);
    }
    std::vector<float> logits;
    for (int32_t r = 0; r < rows; ++r) logits.insert(logits.end(), row.begin(), row.end());

    std::vector<int32_t> tokens = chain.draws(logits.data(), rows, vocab, rounds);
    std::map<int32_t, double> counts;
    for (int32_t t : tokens) {
        ASSERT_GE(t, 0);
        counts[t] += 1;
    }
    const double n = static_cast<double>(tokens.size());
    ASSERT_GE(n, 100000.0);
    if (top_p < 1.0f) {
        // Every draw by the wide passes, no row to the twin: after the collect
        // pass (three row passes), or alone (two: wide.glsl, WIDE_DIRECT,
        // the plan's figures).
        uint32_t dispatches = 0, plan_passes = 0;
        ASSERT_EQ(sieve_chain_plan_figures(chain.get(), rows, vocab, &dispatches, &plan_passes), SIEVE_OK);
        const uint64_t passes = plan_passes == 2 ? 2 : 3;
        const sieve_counters c = chain.counters();
        EXPECT_EQ(c.cpu_fallback_rows, 0u);
        EXPECT_EQ(c.row_passes, passes * static_cast<uint64_t>(n));
    }

    const auto kinds = sieve_test::twin_chain(samplers);
    ASSERT_FALSE(kinds.empty());
    std::string message;
    sieve::ref::RowParams params;
    params.temperature = temperature;
    params.top_p = top_p;
    params.min_keep = min_keep;
    std::vector<sieve::ref::Weighted> dist;
    ASSERT_EQ(sieve::ref::row_distribution(kinds, row.data(), vocab, params, &dist, &message), SIEVE_OK);

    double chi = 0, pooled_expected = 0, pooled_observed = 0;
    int cells = 0;
    for (auto& w : dist) {
        double expected = w.p * n;
        double observed = counts.count(w.id) ? counts[w.id] : 0.0;
        if (expected < 20.0) {
            pooled_expected += expected;
            pooled_observed += observed;
            continue;
        }
        chi += (observed - expected) * (observed - expected) / expected;
        ++cells;
    }
    if (pooled_expected >= 5.0) {
        chi += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
        ++cells;
    } else {
        EXPECT_LE(pooled_observed, 20.0) << "tokens the distribution makes rare were drawn often";
    }
    ASSERT_GE(cells, 2);
    const double critical = chi_square_critical_0001(cells - 1);
    std::printf("GPU chi-square %.3f (df %d, critical %.3f at 0.001, %.0f draws)\n", chi, cells - 1, critical, n);
    EXPECT_LT(chi, critical);
}

// `vocab`, doubled until it passes the device's candidate capacity: rows up to
// the capacity are drawn whole by one workgroup (no collect or wide pass), so
// a test of the deeper passes needs a row past it (2200 on lavapipe, whose
// capacity is 2048; 4400 where it is 4096).
int32_t vocab_past_capacity(int32_t vocab) {
    const auto gpu = sieve_test::gpu_context();
    const int32_t capacity = static_cast<int32_t>(gpu.device_info().candidate_capacity);
    while (vocab <= capacity) vocab *= 2;
    return vocab;
}

TEST(GpuStatistics, ChiSquareSmallVocabulary) {
    // One-dispatch path: 20 tokens, 256 rows x 400 rounds = 102400 draws.
    check_goodness_of_fit(sieve_test::make_row(Shape::Gaussian, 20, 3), 1.0f, 256, 400, Profile::Full);
}

TEST(GpuStatistics, ChiSquareRadixPathWithTies) {
    // Radix path (vocab above the candidate capacity), LM-like with ties:
    // 64 rows x 1600 rounds = 102400 draws.
    auto row = sieve_test::make_row(Shape::Zipf, 3000, 4);
    for (size_t i = 0; i < row.size(); i += 2) row[i] = std::round(row[i] * 4.0f) / 4.0f;
    check_goodness_of_fit(row, 0.9f, 64, 1600, Profile::Full);
}

TEST(GpuStatistics, ChiSquareConstrainedProfile) {
    // Under the constrained profile the candidate buffer holds 1024: 3000
    // tokens take the selection-level path there.
    check_goodness_of_fit(sieve_test::make_row(Shape::Gaussian, 3000, 5), 1.0f, 128, 800, Profile::Constrained);
}

TEST(GpuStatistics, ChiSquareTopPCutPastTheBuffer) {
    // top-p 0.9 over LM-like logits keeps several hundred of 2200 tokens (of
    // a vocabulary past the device's candidate capacity), past the candidate
    // buffer a cut by mass keeps: the wide passes cut and draw (wide.glsl). At
    // temperature 1.5 after the cut about half the draws land past the
    // buffer (its 64 entries hold about 11.4 of 21.5 in r^-0.73), in the bins
    // the histogram bounded. 256 rows x 400 rounds = 102400 draws. min_keep 2
    // (below the survivors' count, so the same distribution) keeps the rows on
    // the collect pass, whose buffer keeps min_keep entries; ChiSquareTopPDirect
    // takes the same rows through the wide passes alone.
    check_goodness_of_fit(sieve_test::make_row(Shape::Zipf, vocab_past_capacity(2200), 6), 1.5f, 256, 400,
                          Profile::Full, "top_p;temperature", 0.9f, 2);
}

TEST(GpuStatistics, ChiSquareTopPDirect) {
    // The same cut and draw with min_keep 0: on a CPU device the wide passes
    // take the rows alone (wide.glsl: WIDE_DIRECT), no buffer, bins below the
    // row's maximum.
    check_goodness_of_fit(sieve_test::make_row(Shape::Zipf, vocab_past_capacity(2200), 6), 1.5f, 256, 400,
                          Profile::Full, "top_p;temperature", 0.9f, 0);
}

// Same seed -> same tokens across runs (fresh chains) and across batch sizes:
// row r of a batch of 256 gives, bit for bit, what it gives alone.
// Polling the fence near the expected finish (wait_spin_us) changes when the
// host reads the results, never what it reads: the same tokens and
// probabilities with no polling, with a GPU's default window (from the second
// call on: sleep, poll, sleep again) and with a window longer than any call
// (polling from the start), on the wide passes and the collect pass.
TEST(GpuDeterminism, WaitSpinChangesNoToken) {
    const int32_t rows = 2, vocab = 32000, steps = 6;
    const auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 12);
    auto run = [&](int32_t spin, const char* samplers) {
        sieve::Context ctx(sieve_test::gpu_options().wait_spin(spin));
        sieve::Chain chain(ctx, sieve_test::chain_desc(samplers, rows, vocab, 0.9f, 42));
        std::vector<sieve_token> out;
        for (int s = 0; s < steps; ++s) {
            auto t = chain.sample(logits.data(), rows, vocab);
            out.insert(out.end(), t.begin(), t.end());
        }
        return out;
    };
    for (const char* samplers : {"top_p;temperature", "top_k;top_p;min_p;temperature"}) {
        SCOPED_TRACE(samplers);
        const auto a = run(0, samplers);
        for (int32_t window : {20, 100000}) {
            SCOPED_TRACE(window);
            const auto b = run(window, samplers);
            ASSERT_EQ(a.size(), b.size());
            for (size_t i = 0; i < a.size(); ++i) {
                ASSERT_EQ(a[i].status, SIEVE_OK);
                EXPECT_EQ(a[i].token, b[i].token) << "token " << i;
                EXPECT_EQ(std::memcmp(&a[i].p, &b[i].p, sizeof(float)), 0) << "token " << i;
            }
        }
    }
}

TEST(GpuDeterminism, SameSeedSameTokensAcrossRunsAndBatchSizes) {
    auto gpu = sieve_test::gpu_context();
    for (int32_t vocab : {800, 32000}) {
        const int32_t rows = 256, steps = 3;
        auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 9);
        auto run = [&](int32_t batch, int32_t first_row) {
            auto desc = sieve_test::chain_desc("temperature;dist", batch, vocab, 1.1f, 0);
            sieve::Chain chain(gpu, desc);
            for (int32_t r = 0; r < batch; ++r) chain.set(SIEVE_PARAM_SEED, 500 + first_row + r, r);
            std::vector<sieve_token> out;
            for (int s = 0; s < steps; ++s) {
                auto t = chain.sample(logits.data() + static_cast<size_t>(first_row) * vocab, batch, vocab);
                out.insert(out.end(), t.begin(), t.end());
            }
            return out;
        };
        auto full = run(rows, 0);
        auto again = run(rows, 0);
        for (size_t i = 0; i < full.size(); ++i) {
            ASSERT_EQ(full[i].token, again[i].token);
            ASSERT_EQ(std::memcmp(&full[i].p, &again[i].p, sizeof(float)), 0) << "p must be bit-identical";
        }
        for (int32_t r : {0, 1, 77, 255}) {
            auto alone = run(1, r);
            for (int s = 0; s < steps; ++s) {
                const sieve_token& a = alone[static_cast<size_t>(s)];
                const sieve_token& b = full[static_cast<size_t>(s) * rows + r];
                ASSERT_EQ(a.token, b.token) << "vocab " << vocab << " row " << r << " step " << s;
                ASSERT_EQ(std::memcmp(&a.p, &b.p, sizeof(float)), 0);
            }
        }
    }
}

// llama.cpp's default seed 0xFFFFFFFF means "pick one": the seed used is
// reported, and feeding it back reproduces the tokens.
TEST(GpuDeterminism, RandomSeedIsReportedAndReproduces) {
    auto gpu = sieve_test::gpu_context();
    const int32_t vocab = 3000;
    auto logits = sieve_test::make_rows(Shape::Gaussian, 1, vocab, 2);
    auto desc = sieve_test::chain_desc("temperature;dist", 1, vocab, 1.5f, SIEVE_SEED_RANDOM);
    sieve::Chain chain(gpu, desc);
    std::vector<int32_t> first;
    uint32_t seed = 0;
    for (int i = 0; i < 8; ++i) {
        auto t = chain.sample(logits.data(), 1, vocab);
        ASSERT_EQ(t[0].status, SIEVE_OK);
        EXPECT_NE(t[0].seed, SIEVE_SEED_RANDOM);
        if (i == 0) seed = t[0].seed;
        EXPECT_EQ(t[0].seed, seed);
        first.push_back(t[0].token);
    }
    EXPECT_EQ(chain.get_param(SIEVE_PARAM_SEED, 0), static_cast<double>(seed));
    auto replay_desc = sieve_test::chain_desc("temperature;dist", 1, vocab, 1.5f, seed);
    sieve::Chain replay(gpu, replay_desc);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(replay.sample(logits.data(), 1, vocab)[0].token, first[static_cast<size_t>(i)]);
}

// The step advances once per sampled token; reset and a new seed restart it.
TEST(GpuDeterminism, StepAdvancesAndResets) {
    auto gpu = sieve_test::gpu_context();
    const int32_t vocab = 4000;
    auto logits = sieve_test::make_rows(Shape::Gaussian, 2, vocab, 3);
    auto desc = sieve_test::chain_desc("temperature;dist", 2, vocab, 1.0f, 42);
    sieve::Chain chain(gpu, desc);
    std::vector<int32_t> first;
    for (uint32_t i = 0; i < 5; ++i) {
        auto t = chain.sample(logits.data(), 2, vocab);
        EXPECT_EQ(t[0].step, i);
        EXPECT_EQ(t[1].step, i);
        first.push_back(t[0].token);
    }
    chain.reset(0);
    auto t = chain.sample(logits.data(), 2, vocab);
    EXPECT_EQ(t[0].step, 0u);
    EXPECT_EQ(t[1].step, 5u);  // row 1 was not reset
    EXPECT_EQ(t[0].token, first[0]);
    chain.set(SIEVE_PARAM_SEED, 42, 1);
    t = chain.sample(logits.data(), 2, vocab);
    EXPECT_EQ(t[1].step, 0u);
    // draws advance the step once per draw
    auto tokens = chain.draws(logits.data(), 2, vocab, 3);
    std::vector<sieve_token> last;
    chain.draws(logits.data(), 2, vocab, 1, &last);
    EXPECT_EQ(last[0].step, 5u);
    EXPECT_EQ(tokens[0 * 3 + 2], first[4]);  // row 0 at step 4 again (after reset: steps 0,1 sampled, draws 2,3,4)
}

} // namespace
