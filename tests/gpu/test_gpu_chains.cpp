// The truncating samplers on the GPU against the CPU twin (engine/reference/):
// top-k, top-p, min-p, typical, top-n-sigma, XTC, dynamic temperature, logit
// bias and token bitmask, alone and in chains (llama.cpp's default order
// included), over every test shape and several vocabularies, one and three
// rows per call, the full device and the constrained profile; rows whose
// survivors exceed the candidate buffer (the CPU-twin fallback); and the
// dispatch figures of llama.cpp's default chain.
//
// Agreement rules (docs/architecture.md, "Determinism"; the twin is the
// specification):
//  - distributions: the same status; the same survivor ids; every probability
//    within 1e-4 relative or 1e-7 absolute; total variation <= 1e-5. Survivor
//    sets may differ only where a keep/drop decision lies within 1e-6 of its
//    threshold: the twin run with that threshold (top-p, min-p, typical, XTC)
//    moved by 1e-6 must then give the GPU's survivors, and the GPU is held to
//    that run (counted and printed); likewise distributions that differ only
//    by a dynamic temperature within 16 float steps of the twin's;
//  - tokens: the same status and step; the same token unless the uniform lies
//    within 1e-6 of a CDF boundary of the twin's distribution (counted, at
//    most one per case); the drawn token's p within 1e-4 relative.
#include "reference/reference.hpp"
#include "vulkan/gpu_plan.hpp"
#include "test_support.hpp"
#include "twin_compare.hpp"
#include "twin_params.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using sieve::ref::RowParams;
using sieve::ref::SamplerKind;
using sieve::ref::Weighted;
using sieve_test::Profile;
using sieve_test::Shape;
using namespace sieve_test::twin;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr Shape kShapes[] = {Shape::Gaussian, Shape::Zipf, Shape::Peaked, Shape::Masked, Shape::Ties};

// llama.cpp's default chain without penalties and DRY.
const char* const kDefaultOrder = "top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature";


// ---- parameters: one RowParams drives both the GPU chain and the twin ----------

// Parameters that make every sampler of the chains below act (llama.cpp's
// defaults leave typical, top-n-sigma and XTC off).
RowParams active() {
    RowParams p;
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.9f;
    p.min_p = 0.05f;
    p.typical_p = 0.9f;
    p.top_n_sigma = 1.5f;
    p.xtc_probability = 1.0f;  // the coin (in [0, 1)) always fires
    p.xtc_threshold = 0.05f;
    return p;
}

// The parameter sets the cases name: "active", "k1000" (top-k 1000), "keep5"
// (min_keep 5), "dynatemp" (range 0.5, exponent 1), "xtc_coin" (XTC fires with
// probability 0.5) and "llama_defaults" (common_params_sampling's values).
RowParams preset(const std::string& name) {
    RowParams p = active();
    if (name == "k1000") p.top_k = 1000;
    if (name == "keep5") p.min_keep = 5;
    if (name == "dynatemp") {
        p.dynatemp_range = 0.5f;
        p.dynatemp_exponent = 1.0f;
    }
    if (name == "xtc_coin") p.xtc_probability = 0.5f;  // the coin decides, step by step
    if (name == "llama_defaults") p = RowParams();
    if (name == "top_k_off") {  // top-k 0: top-p's cut needs the row's whole mass, and it cuts before min-p does
        p = RowParams();
        p.top_k = 0;
        p.top_p = 0.5f;
        p.min_p = 0.01f;
    }
    return p;
}

// Sets every per-row parameter (and the row's bias and bitmask) on a chain.
void set_row(sieve::Chain& chain, int32_t row, const RowParams& p) {
    set_row_params(chain, row, p);
    std::vector<int32_t> tokens;
    std::vector<float> biases;
    for (const auto& b : p.logit_bias) {
        tokens.push_back(b.token);
        biases.push_back(b.bias);
    }
    chain.set_logit_bias(tokens, biases, row);
    chain.set_token_bitmask(p.token_bitmask, row);
}

// Whether a row's distribution changes from step to step: only XTC's coin
// depends on the step, and only when it may or may not fire.
bool coin_matters(const std::vector<SamplerKind>& kinds, const std::vector<RowParams>& params) {
    if (std::find(kinds.begin(), kinds.end(), SamplerKind::Xtc) == kinds.end()) return false;
    for (const auto& p : params)
        if (p.xtc_probability > 0.0f && p.xtc_probability < 1.0f) return true;
    return false;
}

// Samples `tokens` steps of every row on `chain` and compares each token with
// the twin's; the distribution is compared before the first sample (it does
// not advance the step) and, when XTC's coin varies, before every sample.
void run_and_compare(sieve::Chain& chain, const std::vector<SamplerKind>& kinds, const std::vector<float>& logits,
                     int32_t rows, int32_t vocab, const std::vector<RowParams>& params, int tokens, Tally* tally) {
    std::vector<Row> twin;
    for (int32_t r = 0; r < rows; ++r)
        twin.push_back({kinds, logits.data() + static_cast<size_t>(r) * vocab, vocab, params[static_cast<size_t>(r)]});
    const bool every_step = coin_matters(kinds, params);
    for (int step = 0; step < tokens; ++step) {
        const uint32_t s = static_cast<uint32_t>(step);
        for (int32_t r = 0; r < rows && (step == 0 || every_step); ++r) {
            SCOPED_TRACE("distribution, step " + std::to_string(step) + " row " + std::to_string(r));
            Row& row = twin[static_cast<size_t>(r)];
            row.params = params[static_cast<size_t>(r)];
            compare_distribution(gpu_distribution(chain, logits, rows, vocab, r), &row, s, tally);
        }
        std::vector<sieve_token> out(static_cast<size_t>(rows));
        const sieve_status status = sieve_sample(chain.get(), logits.data(), rows, vocab, out.data());
        ASSERT_TRUE(status == SIEVE_OK || sieve::Chain::row_level(status))
            << sieve_status_name(status) << ": " << sieve_last_error();
        for (int32_t r = 0; r < rows; ++r) {
            SCOPED_TRACE("token, step " + std::to_string(step) + " row " + std::to_string(r));
            compare_token(out[static_cast<size_t>(r)], twin[static_cast<size_t>(r)], s, tally);
        }
    }
}

void expect_rare(const Tally& tally) {
    EXPECT_LE(tally.token_near_cdf_boundary, 1) << "tokens that differ at a CDF boundary";
    if (tally.token_near_cdf_boundary + tally.token_near_tie_order + tally.cut_near_threshold +
            tally.dyn_temp_within_ulps >
        0)
        std::printf("allowed differences: %d tokens at a CDF boundary, %d over near-ties, %d distributions cut at a "
                    "threshold, %d at a dynamic temperature within %d float steps\n",
                    tally.token_near_cdf_boundary, tally.token_near_tie_order, tally.cut_near_threshold,
                    tally.dyn_temp_within_ulps, kDynTempUlps);
}

// Per-row parameters of a case: row r gets its own seed (and, with several
// rows, its own temperature, so rows are told apart in the parameter block).
std::vector<RowParams> row_params(const RowParams& base, int32_t rows, uint32_t salt) {
    std::vector<RowParams> out;
    const float temps[] = {1.0f, 1.3f, 0.6f};
    for (int32_t r = 0; r < rows; ++r) {
        RowParams p = base;
        p.seed = 1000u + 77u * static_cast<uint32_t>(r) + salt;
        if (rows > 1 && p.temperature > 0) p.temperature *= temps[r % 3];
        out.push_back(p);
    }
    return out;
}

// ---- 0. the threshold allowance itself (CPU only) --------------------------------

// The allowance accepts the other side of a threshold the data sits on, and
// nothing else: 40 tied logits under typical 0.9 put the cumulative sum on p
// (36 x 1/40), so keeping one entry more or less is explained while two more or
// less is not; on Gaussian logits no top-p cut moves.
TEST(GpuChainRules, ThresholdAllowanceIsNarrow) {
    const auto kinds = sieve_test::twin_chain("top_k;typ_p;temperature");
    ASSERT_FALSE(kinds.empty());
    std::vector<float> logits(100, -1.0f);
    for (int i = 0; i < 60; ++i) logits[static_cast<size_t>(i)] = 2.0f;
    RowParams params = active();
    params.top_k = 40;
    // The twin's survivors in typical's order: a prefix of the 40 tied entries.
    auto survivors = [&](size_t n) {
        std::map<int32_t, float> ids;
        for (size_t i = 0; i < n; ++i) ids[static_cast<int32_t>(i)] = 1.0f;
        return ids;
    };
    Row row{kinds, logits.data(), 100, params};
    sieve_status status;
    std::string message;
    const size_t n = twin_distribution(row, 0, &status, &message).size();
    ASSERT_EQ(status, SIEVE_OK) << message;
    ASSERT_TRUE(n == 36 || n == 37) << n;
    const size_t other = n == 36 ? 37 : 36;
    EXPECT_TRUE(explained_by_threshold(survivors(other), &row, 0)) << other << " of 40 tied entries";
    EXPECT_NE(row.params.typical_p, params.typical_p) << "the explaining run moved typical's threshold";
    for (size_t wrong : {n - 2, n + 2, size_t{40}}) {
        Row fresh{kinds, logits.data(), 100, params};
        EXPECT_FALSE(explained_by_threshold(survivors(wrong), &fresh, 0)) << wrong << " of 40 tied entries";
    }

    const auto gaussian = sieve_test::make_row(Shape::Gaussian, 1000, 5);
    const auto top_p = sieve_test::twin_chain("top_p;temperature");
    Row g{top_p, gaussian.data(), 1000, active()};
    std::vector<Weighted> dist;
    ASSERT_EQ(sieve::ref::row_distribution(top_p, gaussian.data(), 1000, g.params, &dist, &message, 0), SIEVE_OK);
    std::map<int32_t, float> one_less;
    for (size_t i = 0; i + 1 < dist.size(); ++i) one_less[dist[i].id] = static_cast<float>(dist[i].p);
    EXPECT_FALSE(explained_by_threshold(one_less, &g, 0)) << "the last of " << dist.size() << " top-p survivors";
}

// Typical's ranking allowance: three logits within 5e-7 of each other (a
// fuzz_diff finding) give typical scores about one float step of the entropy
// apart, which the twin ranks in double (the top logit least typical) and the
// GPU in float (all three alike: canonical order). The GPU's survivor after
// top-p is explained by the twin ranking on the grid, and is the GPU's;
// scores 0.08 apart explain no other survivor.
TEST(GpuChainRules, TypicalRankingAllowanceIsNarrow) {
    const char* text = "typ_p;temperature;top_p;dist";
    const auto kinds = sieve_test::twin_chain(text);
    ASSERT_FALSE(kinds.empty());
    RowParams params = active();
    params.temperature = 0.970717788f;
    params.typical_p = 0.480878621f;
    params.top_p = 0.460020065f;
    params.min_keep = 1;
    const std::vector<float> close = {-2.81914669e-36f, 5.09095401e-07f, 1.55842153e-26f};
    sieve_status status;
    std::string message;
    Row row{kinds, close.data(), 3, params};
    const auto twin = twin_distribution(row, 0, &status, &message);
    ASSERT_EQ(status, SIEVE_OK) << message;
    ASSERT_EQ(twin.size(), 1u);
    EXPECT_EQ(twin.begin()->first, 2) << "the twin's double ranks the top logit least typical";
    EXPECT_TRUE(explained_by_threshold(std::map<int32_t, float>{{1, 1.0f}}, &row, 0));
    EXPECT_EQ(row.params.typical_grid_ulps, kTypicalGridUlps) << "explained by typical's ranking on the grid";
    EXPECT_FALSE(explained_by_threshold(std::map<int32_t, float>{{0, 1.0f}}, &row, 0))
        << "ranked on the grid the three are alike: canonical order, token 1 first";

    auto ctx = sieve_test::gpu_context();
    sieve::Chain chain(ctx, sieve_test::chain_desc(text, 1, 3, params.temperature, 1));
    set_row(chain, 0, params);
    Tally tally;
    run_and_compare(chain, kinds, close, 1, 3, {params}, 2, &tally);

    // p 0.6, 0.3, 0.1: the most typical is the second (scores 0.39, 0.31,
    // 1.4), which typical 0.2 keeps alone; canonical order would keep the first.
    const auto typical = sieve_test::twin_chain("typ_p;dist");
    const std::vector<float> apart = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
    RowParams alone = active();
    alone.typical_p = 0.2f;
    alone.min_keep = 1;
    Row far{typical, apart.data(), 3, alone};
    const auto want = twin_distribution(far, 0, &status, &message);
    ASSERT_EQ(status, SIEVE_OK) << message;
    ASSERT_EQ(want.size(), 1u);
    EXPECT_EQ(want.begin()->first, 1);
    for (int32_t id : {0, 2}) {
        Row fresh{typical, apart.data(), 3, alone};
        EXPECT_FALSE(explained_by_threshold(std::map<int32_t, float>{{id, 1.0f}}, &fresh, 0)) << "token " << id;
    }
}

// The dynamic-temperature allowance: a distribution the twin gives with its
// dynamic temperature 5 float steps away is accepted (as a run at most 16
// steps away: where the division rounds, nearby temperatures give equal
// distributions), one 2000 steps away (2e-4 relative) is not, and without a
// dynamic range nothing is. The row makes the division ill-conditioned: logits
// near 4 over a temperature near 8.5e-4 (t -0.4636 with range 0.4645: the
// interval is [0, 8.6e-4]).
TEST(GpuChainRules, DynamicTemperatureAllowanceIsNarrow) {
    const auto kinds = sieve_test::twin_chain("temperature");
    ASSERT_FALSE(kinds.empty());
    std::vector<float> logits(64);
    std::mt19937 gen(3u);
    for (float& l : logits) l = 4.0f + static_cast<float>(gen() % 1000u) * 1e-5f;
    RowParams params;
    params.temperature = -0.463603944f;
    params.dynatemp_range = 0.464459121f;
    params.dynatemp_exponent = 1.41885853f;
    const auto as_gpu = [&](int32_t ulps) {
        Row moved{kinds, logits.data(), 64, params};
        moved.params.dynatemp_ulps = ulps;
        sieve_status status;
        std::string message;
        GpuDistribution d{SIEVE_OK, "", {}};
        for (const auto& [id, p] : twin_distribution(moved, 0, &status, &message)) d.p[id] = static_cast<float>(p);
        EXPECT_EQ(status, SIEVE_OK) << message;
        return d;
    };
    sieve_status status;
    std::string message;
    const Row plain{kinds, logits.data(), 64, params};
    const auto want = twin_distribution(plain, 0, &status, &message);
    for (int32_t ulps : {5, -5, 2000, -2000}) {
        SCOPED_TRACE(std::to_string(ulps) + " float steps");
        const GpuDistribution got = as_gpu(ulps);
        ASSERT_FALSE(agrees(got, want, [](int32_t, double, double) {})) << "the row is not ill-conditioned enough";
        Row row{kinds, logits.data(), 64, params};
        const bool near = std::abs(ulps) <= kDynTempUlps;
        EXPECT_EQ(explained_by_dynamic_temperature(got, &row, 0), near);
        if (near) {
            EXPECT_NE(row.params.dynatemp_ulps, 0);
            EXPECT_LE(std::abs(row.params.dynatemp_ulps), kDynTempUlps);
        }
    }
    RowParams fixed = params;
    fixed.dynatemp_range = 0.0f;
    fixed.temperature = 8.5e-4f;
    Row row{kinds, logits.data(), 64, fixed};
    EXPECT_FALSE(explained_by_dynamic_temperature(as_gpu(5), &row, 0)) << "no dynamic range, no allowance";
}

// The draw-order allowance: a token the twin did not draw is explained by
// near-ties only when its probability lies within kTieRel of the candidates it
// may swap with. Three equal logits: any of the three; logits 1e-3 apart (p
// 1e-3 apart, five times kTieRel): only the twin's token, at uniforms away
// from the CDF boundaries.
TEST(GpuChainRules, DrawOrderAllowanceIsNarrow) {
    const auto kinds = sieve_test::twin_chain("dist");
    ASSERT_FALSE(kinds.empty());
    RowParams params;
    int checked_far = 0;
    for (uint32_t step = 0; step < 64; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        const float equal[3] = {0.5f, 0.5f, 0.5f};
        const float apart[3] = {0.5f, 0.501f, 0.502f};
        const float near[3] = {0.5f, 0.5f + 2e-5f, 0.5f + 4e-5f};
        const auto twin_token = [&](const float* l) {
            return sieve::ref::sample_row(kinds, l, 3, params, step, 0, nullptr).token;
        };
        for (int32_t t = 0; t < 3; ++t) {
            EXPECT_EQ(draw_distance(kinds, equal, 3, params, step, nullptr, t, kTieRel), 0.0);
            EXPECT_EQ(draw_distance(kinds, near, 3, params, step, nullptr, t, kTieRel), 0.0);
            // Without the allowance, only the twin's own token lies in its interval.
            EXPECT_EQ(draw_distance(kinds, equal, 3, params, step, nullptr, t) == 0.0, t == twin_token(equal));
        }
        const int32_t want = twin_token(apart);
        const double u = sieve::ref::uniform_u32(params.seed, step, 0) / 4294967296.0;
        if (std::fabs(u - 1.0 / 3) < 0.01 || std::fabs(u - 2.0 / 3) < 0.01) continue;
        ++checked_far;
        for (int32_t t = 0; t < 3; ++t) {
            if (t != want) {
                EXPECT_FALSE(draw_explains(kinds, apart, 3, params, step, nullptr, t)) << "token " << t;
            }
        }
        EXPECT_TRUE(draw_explains(kinds, apart, 3, params, step, nullptr, want));
    }
    EXPECT_GE(checked_far, 40);
}

// The agreement rules' allowance for mirostat v1's k (kMirostatKRel: the
// GPU computes k in float as llama.cpp does, the twin in double; fuzz_diff's
// finding fuzz/corpus/fuzz_diff/mirostat-k-float-rounding) moves the twin's
// cut by one entry at most, on the few rows whose k lies that close to a whole
// number, and explains no cut two or more entries away.
TEST(GpuChainRules, MirostatKAllowanceIsNarrow) {
    const auto kinds = sieve_test::twin_chain("temperature;mirostat");
    ASSERT_FALSE(kinds.empty());
    constexpr int32_t kV = 4000;
    int moved_rows = 0, far_checked = 0;
    for (uint32_t seed = 0; seed < 200; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        const auto logits = sieve_test::make_rows(Shape::Zipf, 1, kV, 100 + seed);
        RowParams p;
        p.temperature = 1.0f;
        p.mirostat_tau = 1.5f + 0.0125f * static_cast<float>(seed);  // mu = 2 tau: k from about 10 to a few hundred
        const Row row{kinds, logits.data(), kV, p, nullptr};
        sieve_status status;
        std::string message;
        const auto base = twin_distribution(row, 0, &status, &message);
        ASSERT_EQ(status, SIEVE_OK) << message;
        for (const int d : {-1, 1}) {
            Row moved = row;
            moved.params.mirostat_k_rel = d * kMirostatKRel;
            const auto near = twin_distribution(moved, 0, &status, &message);
            const long diff = static_cast<long>(near.size()) - static_cast<long>(base.size());
            EXPECT_TRUE(diff == 0 || diff == d) << "k moved by 1e-4 moved the cut by " << diff;
            moved_rows += diff != 0;
            moved.params.mirostat_k_rel = d * 0.5;
            const auto far = twin_distribution(moved, 0, &status, &message);
            if (std::labs(static_cast<long>(far.size()) - static_cast<long>(base.size())) < 2) continue;
            ++far_checked;
            Row judged = row;
            EXPECT_FALSE(explained_by_threshold(far, &judged, 0)) << far.size() << " survivors against " << base.size();
        }
    }
    EXPECT_LE(moved_rows, 8);
    EXPECT_GE(far_checked, 100);
}

// fuzz_diff's finding (fuzz/corpus/fuzz_diff/adaptive-p-near-tie-order):
// logits float cannot tell apart give the twin three equal probabilities, and
// the GPU's exp of the -1.7e-11 difference may be one ULP below 1 (lavapipe's
// is), so adaptive-p's probabilities are a few ULP apart on the device and its
// canonical order puts token 2, the largest, first. The draw is the same
// uniform over the same distribution within tolerance; only the order of the
// near-tie differs, which the agreement rules allow (and count).
TEST(GpuChainRules, AdaptivePDrawOverANearTieEqualsTheTwin) {
    const auto kinds = sieve_test::twin_chain("min_p;xtc;temperature;adaptive_p");
    ASSERT_FALSE(kinds.empty());
    const std::vector<float> logits = {3.73152284e-37f, -1.71617911e-11f, 4.6759724e-26f};
    RowParams params;
    params.temperature = 0.295424819f;
    params.seed = 4189026715u;
    params.min_keep = 4;
    params.min_p = 0.69528538f;
    params.xtc_probability = 0.870741248f;
    params.xtc_threshold = 0.595205367f;
    params.dynatemp_range = 1.21482635f;
    params.dynatemp_exponent = 0.833631039f;
    params.adaptive_target = 0.722738981f;
    params.adaptive_decay = 0.344479352f;
    sieve::ref::SlotState state;
    state.history = {2, 1, 1, 1, 1, 1, 1, 1, 1};
    sieve::Context context = sieve_test::gpu_context();
    sieve::Chain chain(context, sieve_test::chain_desc("min_p;xtc;temperature;adaptive_p", 1, 3, params.temperature,
                                                       params.seed));
    set_row_params(chain, 0, params);
    chain.accept(0, state.history);
    Row row{kinds, logits.data(), 3, params, &state};
    Tally tally;
    compare_distribution(gpu_distribution(chain, logits, 1, 3, 0), &row, 0, &tally);
    compare_token(chain.sample(logits.data(), 1, 3)[0], row, 0, &tally);
    EXPECT_EQ(tally.token_near_cdf_boundary, 0);
    std::printf("%d token drawn over a near-tie in another order than the twin's\n", tally.token_near_tie_order);
}

// Dynamic temperature over rows of logits tied in four groups: the entropy
// adds each group's term hundreds of times, and a plain float sum's rounding
// errors do not cancel (they moved dyn_temp by 8e-5 relative and the
// distribution up to 1.7e-5 in total variation, at vocab 1024 and 1536 among
// these rows on lavapipe's own profile: fuzz_diff's finding). The GPU's
// compensated sum keeps it within float rounding of the twin's double. Mirostat
// at tau 10 and top-k at the vocabulary keep every token; the vocabularies stay
// below the context's candidate capacity (1024 under the constrained profile),
// so the GPU finishes the whole row (no twin fallback).
TEST(GpuChainRules, DynamicTemperatureOverManyTiesEqualsTheTwin) {
    sieve::Context context = sieve_test::gpu_context();
    const int32_t capacity = static_cast<int32_t>(context.device_info().candidate_capacity);
    ASSERT_GE(capacity, 512);
    for (const char* samplers : {"temperature;mirostat", "temperature;top_k"}) {
        const auto kinds = sieve_test::twin_chain(samplers);
        ASSERT_FALSE(kinds.empty());
        for (int32_t share : {1024, 1536, 1792}) for (uint32_t seed = 1; seed < 8; ++seed) {
            // The same shares of a smaller buffer.
            const int32_t vocab = share < capacity ? share : share * capacity / 2048;
            SCOPED_TRACE(std::string(samplers) + ", vocab " + std::to_string(vocab) + " seed " + std::to_string(seed));
            std::vector<float> logits(static_cast<size_t>(vocab));
            std::mt19937 gen(seed);
            for (float& l : logits) l = static_cast<float>(gen() % 4u);
            RowParams params;
            params.temperature = 0.8f;
            params.dynatemp_range = 2.0f;
            params.dynatemp_exponent = 3.0f;
            params.mirostat_tau = 10.0f;
            params.top_k = vocab;
            sieve::Chain chain(context, sieve_test::chain_desc(samplers, 1, vocab, params.temperature, 1u));
            chain.set(SIEVE_PARAM_DYNATEMP_RANGE, params.dynatemp_range);
            chain.set(SIEVE_PARAM_DYNATEMP_EXPONENT, params.dynatemp_exponent);
            chain.set(SIEVE_PARAM_MIROSTAT_TAU, params.mirostat_tau);
            chain.set(SIEVE_PARAM_TOP_K, params.top_k);
            Row row{kinds, logits.data(), vocab, params};
            Tally tally;
            compare_distribution(gpu_distribution(chain, logits, 1, vocab, 0), &row, 0, &tally);
            EXPECT_EQ(tally.cut_near_threshold + tally.dyn_temp_within_ulps, 0) << "agrees only by an allowance";
            EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u) << "the twin, not the GPU, finished the row";
        }
    }
}

// ---- 1. chains x shapes x vocabularies -----------------------------------------

struct Case {
    std::string chain;
    std::string preset;
    std::vector<int32_t> vocabs;
    int32_t rows = 1;
    Profile profile = Profile::Full;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
    const Case& c = info.param;
    std::string name = c.chain + "_" + c.preset;
    for (auto& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    name += "_v";
    for (size_t i = 0; i < c.vocabs.size(); ++i) name += (i ? "_" : "") + std::to_string(c.vocabs[i]);
    name += "_r" + std::to_string(c.rows);
    if (c.profile == Profile::Constrained) name += "_constrained";
    return name;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.chain << " (" << c.preset << ")"; }

class GpuChainVsTwin : public testing::TestWithParam<Case> {};

// Every shape, at every vocabulary of the case: the GPU's distributions and
// tokens equal the twin's under the agreement rules, three tokens per row.
TEST_P(GpuChainVsTwin, DistributionsAndTokensAgree) {
    const Case& c = GetParam();
    auto gpu = sieve_test::gpu_context(c.profile);
    const auto kinds = sieve_test::twin_chain(c.chain);
    ASSERT_FALSE(kinds.empty());
    const RowParams base = preset(c.preset);
    Tally tally;
    uint64_t fallback_rows = 0;
    for (int32_t vocab : c.vocabs) {
        for (Shape shape : kShapes) {
            SCOPED_TRACE(std::string(sieve_test::shape_name(shape)) + " vocab " + std::to_string(vocab));
            const uint32_t salt = static_cast<uint32_t>(vocab) + 10u * static_cast<uint32_t>(shape);
            const auto logits = sieve_test::make_rows(shape, c.rows, vocab, salt);
            const auto params = row_params(base, c.rows, salt);
            sieve::Chain chain(gpu, sieve_test::chain_desc(c.chain, c.rows, vocab, base.temperature, 1));
            for (int32_t r = 0; r < c.rows; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
            run_and_compare(chain, kinds, logits, c.rows, vocab, params, 3, &tally);
            fallback_rows += chain.counters().cpu_fallback_rows;
        }
    }
    expect_rare(tally);
    // top_k;temperature with k <= CAP / 2: the GPU finishes every row, so no
    // row may fall back to the twin, which would hide a wrong candidate list
    // behind the twin's right answer. (The constrained profile's 512-entry
    // buffer keeps 256 candidates a row: top-k 1000 goes to the twin there,
    // by design.)
    if (c.chain == "top_k;temperature" && static_cast<uint32_t>(base.top_k) <= gpu.device_info().candidate_capacity / 2) {
        EXPECT_EQ(fallback_rows, 0u);
    }
    std::printf("%llu rows (distributions and samples) fell back to the CPU twin\n",
                static_cast<unsigned long long>(fallback_rows));
}

std::vector<Case> chain_cases() {
    std::vector<Case> out;
    const std::vector<int32_t> small = {1, 1000}, medium = {32000}, large = {151936};
    // Each sampler alone before the temperature, temperature before a cut, the
    // default order and a few other orders; every one over 1, 1000 and 32000.
    const std::pair<const char*, const char*> chains[] = {
        {"top_k;temperature", "active"},
        {"top_k;temperature", "k1000"},
        {"top_p;temperature", "active"},
        {"min_p;temperature", "active"},
        {"typ_p;temperature", "active"},
        {"top_n_sigma;temperature", "active"},
        {"xtc;temperature", "active"},
        {"temperature;top_p", "active"},
        {kDefaultOrder, "active"},
        {"top_k;top_p;min_p;temperature", "active"},
        {"min_p;top_k;temperature", "active"},
        {"top_k;typ_p;temperature", "active"},
        {"top_k;xtc;temperature", "active"},
        {"top_k;xtc;temperature", "xtc_coin"},
        {"top_k;temperature;greedy", "active"},
        {"top_k;temperature", "dynatemp"},
    };
    for (const auto& [chain, p] : chains) {
        out.push_back({chain, p, small});
        out.push_back({chain, p, medium});
    }
    // min_keep 5: it decides on peaked rows (one token holds the mass).
    for (const char* chain : {"top_k;top_p;min_p;temperature", "top_k;typ_p;temperature", "top_k;xtc;temperature",
                              kDefaultOrder})
        out.push_back({chain, "keep5", {1000, 32000}});
    // Dynamic temperature over the whole row (no top-k to bound it).
    out.push_back({"temperature", "dynatemp", {1, 1000}});
    // LLM vocabularies, for a few chains.
    out.push_back({kDefaultOrder, "active", large});
    out.push_back({kDefaultOrder, "llama_defaults", {262144}});
    // Top-p the first cut with min-p after it: the collect pass sums the
    // row's mass (in the register picks' read on rows of whole vec4s), and
    // no row goes wide (min-p cuts in the buffer or sends the row to the twin).
    out.push_back({"top_k;top_p;min_p;temperature", "top_k_off", {1000, 32000, 151936}});
    out.push_back({"top_k;temperature", "active", large});
    out.push_back({"min_p;temperature", "active", large});
    out.push_back({"top_k;xtc;temperature", "active", large});
    out.push_back({"top_k;temperature", "dynatemp", large});
    // Three rows per call, each its own seed, logits and temperature.
    for (const char* chain : {kDefaultOrder, "top_k;temperature", "min_p;top_k;temperature", "top_k;typ_p;temperature"})
        out.push_back({chain, "active", {1000, 32000}, 3});
    out.push_back({"top_k;temperature", "dynatemp", {1000}, 3});
    // The constrained profile: a 512-entry candidate buffer, 128-wide workgroups.
    for (const char* chain : {kDefaultOrder, "top_k;temperature", "top_p;temperature", "top_k;typ_p;temperature",
                              "top_k;xtc;temperature"})
        out.push_back({chain, "active", {1000, 32000}, 1, Profile::Constrained});
    out.push_back({"top_k;temperature", "k1000", {32000}, 2, Profile::Constrained});
    out.push_back({"temperature", "dynatemp", {1000}, 1, Profile::Constrained});
    // top-k 1000 at an LLM vocabulary: each chunk keeps about 1000 (the
    // tail's merge of long lists).
    out.push_back({"top_k;temperature", "k1000", large});
    // The tail's two builds (tail.glsl: run_chain): SHORT_CHAIN_OPS samplers,
    // the last position of the short build, and one more, the long build.
    static_assert(sieve::glsl::SHORT_CHAIN_OPS == 8, "the chains below have 8 and 9 samplers");
    out.push_back({"top_k;typ_p;top_p;min_p;xtc;temperature;top_k;temperature", "active", medium});
    out.push_back({"top_k;typ_p;top_p;min_p;xtc;temperature;top_k;temperature;top_p", "active", medium});
    return out;
}

INSTANTIATE_TEST_SUITE_P(Chains, GpuChainVsTwin, testing::ValuesIn(chain_cases()), case_name);

// ---- 2. rows whose survivors exceed the candidate buffer -------------------------

// A case whose survivors overflow the GPU's candidate buffer still equals the
// twin, and cpu_fallback_rows counts the rows the CPU twin took: min-p with a
// floor far below the buffer, and --dump-dist of a top-p cut past the buffer
// (its samples are the wide passes', section 2b). The default chain over
// LM-like rows (top-k 40 first) never falls back.
struct OverflowCase {
    const char* chain;
    Shape shape;
    RowParams params;
    bool expect_fallback;
};

// ---- the ways a chunk forms its list (collect_chunk.glsl) ---------------------------

// Rows built to take each way a collect chunk forms its top `need`: LM-like
// rows (registers picks, radix select, rank sort); the best logits at
// consecutive ids, so a few invocations hold all of them and their lists
// drop some (the chunk is read again from the threshold), or hold them
// several to a picked group of 4; one per group of 4 in consecutive groups,
// so an invocation drops groups (its share is read again); three distinct
// values, so the threshold's key holds thousands of picks (read again,
// compactions); the best logits in the last chunk only; and a row whose top
// holds fewer distinct-key picks than `need` in every chunk but one. Each
// against the twin, llama.cpp's default chain and top-k alone, at 32000 and
// 151936, on the device and under the constrained profile. Kinds 9 and 10:
// the best thousands in one block of ids (as a script's tokens are), in any
// order and in id order, so the few invocations that hold them pass far more
// than PICK_LIMIT logits over the picks' threshold, which is raised over
// those logits alone (refine_tau). (Kind 7, the best
// 2400 at consecutive ids, and kind 8, 300 adjacent floats ten times each,
// are for large top-k: LargeTopKKeepsItsBest; kind 11, a tie group past the
// buffer in one chunk only, for LargeNeedOfSummedRowsKeepsItsBest.)
std::vector<float> collect_path_row(int kind, int32_t vocab, uint32_t seed) {
    if (kind == 0) return sieve_test::make_row(Shape::Zipf, vocab, seed);  // LM-like
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(vocab));
    for (auto& x : row) x = normal(rng);
    switch (kind) {
    case 1:  // the best 300 at consecutive ids in the middle of the row
        for (int32_t i = 0; i < 300; ++i) row[static_cast<size_t>(vocab / 2 + i)] = 10.0f + 0.01f * static_cast<float>(i % 97);
        break;
    case 2:  // three values: huge tie groups
        for (auto& x : row) x = static_cast<float>(rng() % 3);
        break;
    case 3:  // the best 60 in the last 1000 logits, the rest far below
        for (auto& x : row) x -= 30.0f;
        for (int32_t i = 0; i < 60; ++i) row[static_cast<size_t>(vocab - 1 - static_cast<int32_t>(rng() % 1000))] = 5.0f + normal(rng);
        break;
    case 5:  // the best 48 at consecutive ids: several in each of an invocation's picked groups
        for (int32_t i = 0; i < 48; ++i) row[static_cast<size_t>(vocab / 3 + i)] = 10.0f + 0.01f * static_cast<float>(i);
        break;
    case 6:  // the best 48 one per vec4 in consecutive vec4s: more than 4 groups in one invocation's share
        for (int32_t i = 0; i < 48; ++i) row[static_cast<size_t>(4 * (vocab / 12) + 4 * i + i % 4)] = 10.0f + 0.01f * static_cast<float>(i);
        break;
    case 7:  // the best 2400 at consecutive ids in two places (each chunk's, on a CPU device): four to a group of 4
        for (int32_t i = 0; i < 2400; ++i) {
            const int32_t at = (i % 2 == 0 ? vocab / 4 : 3 * (vocab / 4)) + i / 2;
            row[static_cast<size_t>(at)] = 10.0f + 0.001f * static_cast<float>(i % 997);
        }
        break;
    case 8:  // the best 3000 spread over the row: 300 adjacent floats, ten of each (a radix select to the last bit)
        for (int32_t i = 0; i < 3000; ++i) {
            float v = 10.0f;
            for (int32_t step = 0; step < i % 300; ++step) v = std::nextafter(v, 20.0f);
            row[static_cast<size_t>(i) * static_cast<size_t>(vocab / 3000)] = v;
        }
        break;
    case 9:  // the best 3000 in one block of ids, distinct values in no order
        for (int32_t i = 0; i < 3000; ++i)
            row[static_cast<size_t>(vocab / 5 + i)] = 10.0f + 0.001f * static_cast<float>((i * 1237) % 3000);
        break;
    case 10:  // the best 5000 at the lowest ids, in id order (each a little below the one before)
        for (int32_t i = 0; i < 5000; ++i) row[static_cast<size_t>(i)] = 10.0f - 0.001f * static_cast<float>(i);
        break;
    case 11:  // the best 500 in one block of ids, distinct, and after them 5000 ties below them
        for (int32_t i = 0; i < 500; ++i)
            row[static_cast<size_t>(vocab / 2 + i)] = 3.0f + 0.01f * static_cast<float>((i * 7) % 500);
        for (int32_t i = 500; i < 5500; ++i) row[static_cast<size_t>(vocab / 2 + i)] = 2.5f;
        break;
    default:  // mostly -inf, the finite ones spread thinly
        for (auto& x : row) x = (rng() % 500 == 0) ? normal(rng) : -kInf;
        break;
    }
    return row;
}

TEST(GpuChainCollectPaths, EveryWayAChunkKeepsItsBestEqualsTheTwin) {
    Tally tally;
    for (Profile profile : {Profile::Full, Profile::Constrained, Profile::Wide}) {
        auto gpu = sieve_test::gpu_context(profile);
        // min_p;temperature: the register picks over min-p's floor (collect_chunk.glsl:
        // pick_chunk), the invocations that dropped some re-reading their share
        // (kinds 3, 5 and 6), past PICK_LIMIT the collecting loop (kinds 1, 2, 4).
        for (const char* chain_text : {kDefaultOrder, "top_k;temperature", "min_p;temperature"}) {
            const auto kinds = sieve_test::twin_chain(chain_text);
            ASSERT_FALSE(kinds.empty());
            for (int32_t vocab : {32000, 151936}) {
                for (int kind : {0, 1, 2, 3, 4, 5, 6, 9, 10}) {
                    SCOPED_TRACE(std::string(chain_text) + " vocab " + std::to_string(vocab) + " row kind " +
                                 std::to_string(kind) + " profile " + std::to_string(static_cast<int>(profile)));
                    const uint32_t salt = static_cast<uint32_t>(vocab) + 31u * static_cast<uint32_t>(kind);
                    const auto logits = collect_path_row(kind, vocab, salt);
                    RowParams base = preset(kind == 4 ? "active" : "llama_defaults");
                    const auto params = row_params(base, 1, salt);
                    sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, 1, vocab, base.temperature, 1));
                    set_row(chain, 0, params[0]);
                    run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
                    // min-p keeps hundreds to thousands of kinds 1, 2, 4, 9 and
                    // 10 (their rows go to the twin, as before register picks).
                    const bool min_p_overflows = std::string(chain_text) == "min_p;temperature" &&
                                                 (kind == 1 || kind == 2 || kind == 4 || kind >= 9);
                    if (!min_p_overflows) {
                        EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u);
                    }
                }
            }
        }
    }
    expect_rare(tally);
}

// Rows whose best logits fill one block of ids (refine_tau's rows), drawn at
// random: the block's place and length (50 to 20000 ids), its order (none,
// ascending, descending), how many of its logits share a value (none, or
// a few values each taken by many), a few best logits elsewhere (held by
// invocations that dropped nothing), top-k from 1 to 256 (the register
// picks' range), on the device's plan with 1 to 4 chunks a row and on the
// gpu profile's. Each against the twin.
TEST(GpuChainCollectPaths, BestLogitsInOneBlockOfIdsEqualTheTwin) {
    Tally tally;
    const char* chain_text = "top_k;temperature";
    const auto kinds = sieve_test::twin_chain(chain_text);
    ASSERT_FALSE(kinds.empty());
    const auto context_for = [](const std::string& plan) {
        if (plan != "gpu") return sieve_test::device_plan_context(plan.c_str());
        auto options = sieve_test::gpu_options();
        options.profile("gpu");
        return sieve::Context(options);
    };
    std::mt19937 rng(2026);
    for (const char* plan : {"1", "2", "4", "gpu"}) {
        sieve::Context gpu = context_for(plan);
        for (int trial = 0; trial < 6; ++trial) {
            const int32_t vocab = trial % 2 == 0 ? 32000 : 151936;
            const int32_t length = 50 + static_cast<int32_t>(rng() % 19951);
            const int32_t start = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab - length));
            const int order = static_cast<int>(rng() % 3);
            const uint32_t values = rng() % 2 == 0 ? 0u : 2u + rng() % 6;  // 0: distinct
            const int32_t top_k = 1 + static_cast<int32_t>(rng() % 256);
            SCOPED_TRACE(std::string("plan ") + plan + " vocab " + std::to_string(vocab) + " block " +
                         std::to_string(start) + "+" + std::to_string(length) + " order " + std::to_string(order) +
                         " values " + std::to_string(values) + " top-k " + std::to_string(top_k));
            std::normal_distribution<float> normal(0.0f, 1.0f);
            std::vector<float> logits(static_cast<size_t>(vocab));
            for (auto& x : logits) x = normal(rng);
            for (int32_t i = 0; i < length; ++i) {
                const uint32_t rank = order == 0 ? (static_cast<uint32_t>(i) * 7919u) % static_cast<uint32_t>(length)
                                      : order == 1 ? static_cast<uint32_t>(i)
                                                   : static_cast<uint32_t>(length - 1 - i);
                const uint32_t level = values == 0 ? rank : rank % values;
                logits[static_cast<size_t>(start + i)] = 10.0f + 0.0005f * static_cast<float>(level);
            }
            for (int j = 0; j < 20; ++j)
                logits[rng() % static_cast<uint32_t>(vocab)] = 10.0f + 0.0005f * static_cast<float>(rng() % 20000);
            RowParams base = preset("active");
            base.top_k = top_k;
            const auto params = row_params(base, 1, static_cast<uint32_t>(trial));
            sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, 1, vocab, base.temperature, 1));
            set_row(chain, 0, params[0]);
            run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
            EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u);
            if (testing::Test::HasFatalFailure()) return;
        }
    }
    expect_rare(tally);
}

// On a GPU plan, plain rows take about two workgroups per compute unit
// (collect_chunks_for_group; the gpu profile's stand-in 32 on a CPU device):
// at one and three rows more chunks than the plan's 8, whose lists the tail
// merges in shared memory (collect_tail.glsl: sort_chunk_lists), and every way
// a chunk forms its list equals the twin; at 64 rows one chunk a row; rows of
// the general variant (full-row sums) keep the plan's chunks whatever the
// batch, and the wide passes split by the batch too; with
// SIEVE_COMPUTE_UNITS=1, two chunks at one row.
TEST(GpuChainCollectPaths, RowsSplitByTheBatchEqualTheTwin) {
    Tally tally;
    auto options = sieve_test::gpu_options();
    options.profile("gpu");
    sieve::Context gpu(options);
    // The batch check's count is pinned to the stand-in's 32 units: a real
    // GPU's own count (132 on an H200) splits 64 rows too.
    auto pinned_units = [&] {
        sieve_test::ScopedEnv units("SIEVE_COMPUTE_UNITS", "32");
        return sieve::Context(options);
    };
    sieve::Context pinned = pinned_units();
    const uint32_t plan_chunks = 8;  // MAX_COLLECT_CHUNKS: what 151936 and 32000 take unsplit
    for (const char* chain_text : {kDefaultOrder, "top_k;temperature", "min_p;temperature"}) {
        const auto kinds = sieve_test::twin_chain(chain_text);
        ASSERT_FALSE(kinds.empty());
        for (int32_t vocab : {32000, 151936}) {
            for (int32_t rows : {1, 3}) {
                sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, rows, vocab, 1.0f, rows));
                const uint32_t split = sieve_test::stage_workgroups(chain, rows, vocab, "collect_plain");
                SCOPED_TRACE(std::string(chain_text) + " vocab " + std::to_string(vocab) + " rows " +
                             std::to_string(rows) + ": " + std::to_string(split) + " collect workgroups");
                EXPECT_GT(split, plan_chunks * static_cast<uint32_t>(rows));
                for (int kind : {0, 1, 2, 3, 4, 5, 6, 9, 10}) {
                    SCOPED_TRACE("row kind " + std::to_string(kind));
                    const uint32_t salt = static_cast<uint32_t>(vocab) + 31u * static_cast<uint32_t>(kind) + 7u * rows;
                    std::vector<float> logits;
                    for (int32_t r = 0; r < rows; ++r) {
                        const auto row = collect_path_row(kind, vocab, salt + static_cast<uint32_t>(r));
                        logits.insert(logits.end(), row.begin(), row.end());
                    }
                    RowParams base = preset(kind == 4 ? "active" : "llama_defaults");
                    const auto params = row_params(base, rows, salt);
                    for (int32_t r = 0; r < rows; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
                    const uint64_t fallback_before = chain.counters().cpu_fallback_rows;
                    run_and_compare(chain, kinds, logits, rows, vocab, params, 2, &tally);
                    const bool min_p_overflows = std::string(chain_text) == "min_p;temperature" &&
                                                 (kind == 1 || kind == 2 || kind == 4 || kind >= 9);
                    if (!min_p_overflows) {
                        EXPECT_EQ(chain.counters().cpu_fallback_rows, fallback_before);
                    }
                }
            }
            // 64 rows fill 32 units twice over: one chunk a row.
            sieve::Chain batch(pinned, sieve_test::chain_desc(chain_text, 64, vocab, 1.0f, 64));
            EXPECT_EQ(sieve_test::stage_workgroups(batch, 64, vocab, "collect_plain"), 64u) << chain_text;
        }
    }
    expect_rare(tally);
    // Top-n-sigma's mean and variance over the row (collect_chunk.glsl's
    // aggregates) take the general variant, whose rows are never split (the
    // row's sums would change with the batch).
    sieve::Chain summed(gpu, sieve_test::chain_desc("top_n_sigma;temperature", 1, 151936, 1.0f, 1));
    set_row(summed, 0, preset("active"));
    EXPECT_EQ(sieve_test::stage_workgroups(summed, 1, 151936, "collect"), plan_chunks);
    // The wide passes sum exact masses: one row in the slots' chunks (64 at
    // 151936 at the gpu profile's workgroup size), 64 rows in about four
    // workgroups a compute unit (two chunks a row on 32 units).
    sieve::Chain top_p(gpu, sieve_test::chain_desc("top_p;temperature", 1, 151936, 1.0f, 1));
    EXPECT_EQ(sieve_test::stage_workgroups(top_p, 1, 151936, "wide_histogram"), 64u);
    EXPECT_EQ(sieve_test::stage_workgroups(top_p, 1, 151936, "wide_gather"), 64u);
    sieve::Chain top_p_batch(pinned, sieve_test::chain_desc("top_p;temperature", 64, 151936, 1.0f, 1));
    const uint32_t wide_split = sieve::kStreamingWorkgroupsPerUnit * 32u / 64u * 64u;
    EXPECT_EQ(sieve_test::stage_workgroups(top_p_batch, 64, 151936, "wide_histogram"), wide_split);
    EXPECT_EQ(sieve_test::stage_workgroups(top_p_batch, 64, 151936, "wide_gather"), wide_split);
    // One compute unit: two chunks a row.
    sieve_test::ScopedEnv one("SIEVE_COMPUTE_UNITS", "1");
    sieve::Context narrow(options);
    sieve::Chain chain(narrow, sieve_test::chain_desc(kDefaultOrder, 1, 151936, 1.0f, 1));
    EXPECT_EQ(sieve_test::stage_workgroups(chain, 1, 151936, "collect_plain"), 2u);
}

// The stages of a plan (sieve_chain_plan_estimate), by name.
std::vector<std::string> plan_stages(const sieve::Chain& chain, int32_t rows, int32_t vocab) {
    std::vector<std::string> names;
    for (const sieve_stage_estimate& e : chain.plan_estimate(rows, vocab)) names.push_back(e.stage);
    return names;
}

bool has(const std::vector<std::string>& names, const char* name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// A plan records only the collect variants the call's rows take (an empty
// indirect dispatch costs a GPU its launch): plain rows the plain one, a
// top-n-sigma row or a logit bias the general one, a mix both; each row's
// tokens equal the twin's as the variants change from call to call (set_row
// sets the seed: each step starts the rows' streams again), which records
// once per set of variants.
TEST(GpuChainCollectPaths, PlansRecordTheVariantsTheRowsTake) {
    auto options = sieve_test::gpu_options();
    options.profile("gpu");
    sieve::Context gpu(options);
    const int32_t rows = 2, vocab = 32000;
    const char* chain_text = "top_n_sigma;top_k;temperature;dist";
    const auto kinds = sieve_test::twin_chain(chain_text);
    ASSERT_FALSE(kinds.empty());
    sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, rows, vocab, 1.0f, 1));
    RowParams plain = preset("active"), summed = preset("active");
    plain.top_n_sigma = -1.0f;  // off: no full-row sums
    summed.top_n_sigma = 2.0f;
    const auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 77);
    Tally tally;
    struct Step {
        const char* what;
        RowParams first, second;
        bool plain_variant, general_variant;
    };
    const Step steps[] = {{"plain rows", plain, plain, true, false},
                          {"summed rows", summed, summed, false, true},
                          {"one of each", plain, summed, true, true},
                          {"plain rows again", plain, plain, true, false}};
    uint64_t recordings = 0;
    for (const Step& s : steps) {
        SCOPED_TRACE(s.what);
        const std::vector<RowParams> params = {s.first, s.second};
        for (int32_t r = 0; r < rows; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
        const auto stages = plan_stages(chain, rows, vocab);
        EXPECT_EQ(has(stages, "collect_plain"), s.plain_variant);
        EXPECT_EQ(has(stages, "collect"), s.general_variant);
        recordings = chain.counters().recordings;
        run_and_compare(chain, kinds, logits, rows, vocab, params, 1, &tally);
    }
    EXPECT_EQ(chain.counters().recordings, recordings) << "the last step reuses the first's recordings";
    // A logit bias and a bitmask on a row: the upload writes them into the
    // row, whose passes then read it as a plain row; left to the passes
    // (which apply them as they read, as for the app's device buffers) they
    // keep every row from the plain variant. The tokens are the twin's
    // either way.
    RowParams biased = plain;
    biased.logit_bias = {{5, 1.5f}, {int32_t{vocab} - 3, -0.5f}};
    biased.token_bitmask.assign((vocab + 31) / 32, 0xFFFFFFFFu);
    biased.token_bitmask[7] = 0x0F0F0F0Fu;
    const std::vector<RowParams> with_inputs = {biased, plain};
    for (int32_t r = 0; r < rows; ++r) set_row(chain, r, with_inputs[static_cast<size_t>(r)]);
    const auto on_upload = plan_stages(chain, rows, vocab);
    EXPECT_TRUE(has(on_upload, "collect_plain"));
    EXPECT_FALSE(has(on_upload, "collect"));
    run_and_compare(chain, kinds, logits, rows, vocab, with_inputs, 1, &tally);
    sieve_test::leave_inputs_to_the_passes(chain);
    for (int32_t r = 0; r < rows; ++r) set_row(chain, r, with_inputs[static_cast<size_t>(r)]);
    const auto by_the_passes = plan_stages(chain, rows, vocab);
    EXPECT_FALSE(has(by_the_passes, "collect_plain"));
    EXPECT_TRUE(has(by_the_passes, "collect"));
    run_and_compare(chain, kinds, logits, rows, vocab, with_inputs, 1, &tally);
    expect_rare(tally);
}

// Top-k in the hundreds past the register picks: plain rows select it by
// radix over the chunk (collect_chunk.glsl: radix_chunk; a tie group past the
// buffer at the last level reads the chunk again, kind 2), so rows whose best
// logits sit four to a group (kind 7), one to a group (kind 6) or ten to a
// float (kind 8) keep the chunk's best `need`.
// Under the gpu profile the tail merges the lists in shared memory
// (collect_tail.glsl: sort_chunk_lists): 8 lists of up to 1000 (or 16 and
// 27 of 300, 13 of 600: a row split past 8 chunks, each list in its share of
// the row's words) could outgrow the buffer, so splitters cut them first
// (narrow_chunk_lists), and kind 2's ties (hundreds to a thousand entries of
// one key in every list, no cut) take merge paths in device memory instead.
// Chunks of at most 64 WG logits (top-k 600's 13, every chunk at 32000) go a
// radix level past the one that fits the buffer (radix_gathered).
TEST(GpuChainCollectPaths, LargeTopKKeepsItsBestEqualsTheTwin) {
    Tally tally;
    for (int profile = 0; profile < 3; ++profile) {
        auto options = sieve_test::gpu_options(profile == 1 ? Profile::Wide : Profile::Full);
        if (profile == 2) options.profile("gpu");
        sieve::Context gpu(options);
        const char* chain_text = "top_k;temperature";
        const auto kinds = sieve_test::twin_chain(chain_text);
        ASSERT_FALSE(kinds.empty());
        for (int32_t vocab : {32000, 151936}) {
            for (int kind : {0, 1, 2, 6, 7, 8}) {
                for (int32_t top_k : {300, 600, 1000}) {
                    SCOPED_TRACE("vocab " + std::to_string(vocab) + " row kind " + std::to_string(kind) + " top-k " +
                                 std::to_string(top_k) + " profile " + std::to_string(static_cast<int>(profile)));
                    const uint32_t salt = static_cast<uint32_t>(vocab) + 31u * static_cast<uint32_t>(kind);
                    const auto logits = collect_path_row(kind, vocab, salt);
                    RowParams base = preset("active");
                    base.top_k = top_k;
                    const auto params = row_params(base, 1, salt);
                    sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, 1, vocab, base.temperature, 1));
                    set_row(chain, 0, params[0]);
                    if (profile == 2 && top_k < 1000) {
                        // Past 8 chunks, lists of 300 and 600 in their shares of the row.
                        EXPECT_GT(sieve_test::stage_workgroups(chain, 1, vocab, "collect_plain"), 8u);
                    }
                    run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
                    // (A context whose candidate buffer cannot hold k twice,
                    // as SIEVE_PROFILE=constrained makes every context, hands
                    // the row to the twin.)
                    if (static_cast<uint32_t>(top_k) <= gpu.device_info().candidate_capacity / 2) {
                        EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u);
                    }
                }
            }
        }
    }
    expect_rare(tally);
}

// The GPU tail's splitters (collect_tail.glsl: narrow_chunk_lists) where
// chunks hold fewer logits than the row's k (4100 logits in 8 chunks at a
// workgroup of 64): such a list is shorter than the need, its last
// splitters repeat its last entry, and what a splitter vouches for stops at
// the list's length; and where they hold more (4100 to 151936 logits, 3 to
// 8 chunks). Rows under top-k 800 and 1000, Zipf-like, or masked but for
// one logit in 500, and besides a block of up to 3000, or the first 1500 ids
// falling with the id (the first list wholly above the next), equal the
// twin. Those sizes are for a candidate buffer of 2048 (lavapipe's); a
// larger buffer (an H200's 4096) scales them, so that the lists still
// outgrow it together.
std::vector<float> short_list_row(int kind, int32_t vocab, uint32_t seed, int32_t scale) {
    // collect_path_row's Zipf-like kind 0, or its kind 4 (masked but one in 500).
    std::vector<float> row = collect_path_row(kind == 0 ? 0 : 4, vocab, seed);
    std::mt19937 rng(seed + 1u);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    if (kind == 2)
        for (int32_t i = vocab / 3; i < std::min(vocab / 3 + 3000 * scale, vocab); ++i)
            row[static_cast<size_t>(i)] = normal(rng);
    if (kind == 3)
        for (int32_t i = 0; i < std::min(1500 * scale, vocab); ++i)
            row[static_cast<size_t>(i)] = 10.0f - 0.001f * static_cast<float>(i) / static_cast<float>(scale);
    return row;
}

TEST(GpuChainCollectPaths, LargeTopKOverShortListsEqualsTheTwin) {
    Tally tally;
    auto options = sieve_test::gpu_options();
    options.profile("gpu");
    const char* chain_text = "top_k;temperature";
    const auto kinds = sieve_test::twin_chain(chain_text);
    ASSERT_FALSE(kinds.empty());
    bool short_lists = false;
    struct Config {
        const char* units;
        uint32_t workgroup;  // 64: chunks of at least 8 x 64 logits, 513 at 4100: fewer than k
    };
    for (const Config config : {Config{"2", 0}, Config{"32", 0}, Config{"32", 64}}) {
        const char* units = config.units;
        sieve_test::ScopedEnv env("SIEVE_COMPUTE_UNITS", units);
        if (config.workgroup != 0) options.constrained(0, 0, config.workgroup);
        sieve::Context gpu(options);
        const uint32_t capacity = gpu.device_info().candidate_capacity;
        const int32_t scale = static_cast<int32_t>(std::max(capacity / 2048u, 1u));
        for (int32_t vocab : {4100, 32000, 151936}) {
            for (int32_t top_k : {800 * scale, 1000 * scale}) {
                sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, 1, vocab, 1.0f, 1));
                for (int kind = 0; kind < 4; ++kind) {
                    const uint32_t salt = static_cast<uint32_t>(vocab) + 31u * static_cast<uint32_t>(kind);
                    const auto logits = short_list_row(kind, vocab, salt, scale);
                    RowParams base = preset("active");
                    base.top_k = top_k;
                    const auto params = row_params(base, 1, salt);
                    set_row(chain, 0, params[0]);
                    const uint32_t chunks = sieve_test::stage_workgroups(chain, 1, vocab, "collect_plain");
                    ASSERT_GT(chunks, 0u);
                    SCOPED_TRACE(std::string("units ") + units + " vocab " + std::to_string(vocab) + " top-k " +
                                 std::to_string(top_k) + " row kind " + std::to_string(kind) + ": " +
                                 std::to_string(chunks) + " chunks");
                    // The lists could outgrow the buffer together: the splitters cut them.
                    EXPECT_GT(chunks * static_cast<uint32_t>(top_k), capacity);
                    short_lists = short_lists || static_cast<uint32_t>(vocab) / chunks < static_cast<uint32_t>(top_k);
                    run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
                    EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u);
                }
            }
        }
    }
    EXPECT_TRUE(short_lists);
    expect_rare(tally);
}

// A large top-k's chunks find the row's NaN and +Inf on their first read
// (radix_chunk; on a CPU device the register-counted level,
// radix_chunk_nibbles): the row fails naming the first, in whichever chunk
// it lies, and the other row samples.
TEST(GpuChainCollectPaths, LargeTopKRowsNameTheirFirstBadLogit) {
    constexpr int32_t kVocab = 151936;
    for (int profile = 0; profile < 2; ++profile) {
        auto options = sieve_test::gpu_options(Profile::Full);
        if (profile == 1) options.profile("gpu");
        sieve::Context gpu(options);
        for (const auto& [nan_at, inf_at] : {std::pair{120001, 130000}, std::pair{90007, 3}, std::pair{5, 150000}}) {
            SCOPED_TRACE("profile " + std::to_string(profile) + " NaN at " + std::to_string(nan_at) + ", +Inf at " +
                         std::to_string(inf_at));
            sieve::Chain chain(gpu, sieve_test::chain_desc("top_k;temperature", 2, kVocab, 0.8f, 7));
            RowParams base = preset("active");
            base.top_k = 1000;
            const auto params = row_params(base, 2, 5);
            for (int32_t r = 0; r < 2; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
            auto logits = sieve_test::make_rows(Shape::Zipf, 2, kVocab, 17);
            logits[static_cast<size_t>(kVocab + nan_at)] = std::numeric_limits<float>::quiet_NaN();
            logits[static_cast<size_t>(kVocab + inf_at)] = kInf;
            std::vector<sieve_token> out(2);
            const std::string first = "logit " + std::to_string(std::min(nan_at, inf_at)) + " is NaN or +Inf";
            const sieve_status status = sieve_sample(chain.get(), logits.data(), 2, kVocab, out.data());
            EXPECT_TRUE(sieve_test::Fails(status, SIEVE_ERROR_NON_FINITE_LOGIT, {"row 1", first}));
            EXPECT_EQ(out[0].status, SIEVE_OK);
            EXPECT_EQ(out[1].status, SIEVE_ERROR_NON_FINITE_LOGIT);
        }
    }
}

// The same in the general variant (a logit bias the passes apply as they
// read, as for the app's device buffers: the call's inputs), whose
// chunks take a large need by the deep probe's threshold
// (deep_probe_threshold, one pick per group of 4 on rows of whole vec4s) and
// the collecting loop's compactions.
TEST(GpuChainCollectPaths, LargeTopKOfBiasedRowsKeepsItsBestEqualsTheTwin) {
    Tally tally;
    for (int profile = 0; profile < 2; ++profile) {
        auto options = sieve_test::gpu_options(Profile::Full);
        if (profile == 1) options.profile("gpu");
        sieve::Context gpu(options);
        const char* chain_text = "top_k;temperature";
        const auto kinds = sieve_test::twin_chain(chain_text);
        ASSERT_FALSE(kinds.empty());
        const int32_t vocab = 151936;
        for (int kind : {0, 2, 6, 7}) {
            SCOPED_TRACE("row kind " + std::to_string(kind) + " profile " + std::to_string(profile));
            const uint32_t salt = static_cast<uint32_t>(vocab) + 31u * static_cast<uint32_t>(kind);
            const auto logits = collect_path_row(kind, vocab, salt);
            RowParams base = preset("active");
            base.top_k = 1000;
            auto params = row_params(base, 1, salt);
            params[0].logit_bias = {{static_cast<int32_t>(salt % static_cast<uint32_t>(vocab)), 0.25f}};
            sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, 1, vocab, base.temperature, 1));
            sieve_test::leave_inputs_to_the_passes(chain);
            set_row(chain, 0, params[0]);
            const auto stages = plan_stages(chain, 1, vocab);
            EXPECT_FALSE(has(stages, "collect_plain"));
            run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
            // (A buffer that cannot hold k twice, SIEVE_PROFILE=constrained's,
            // hands the row to the twin.)
            if (static_cast<uint32_t>(base.top_k) <= gpu.device_info().candidate_capacity / 2) {
                EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u);
            }
        }
    }
    expect_rare(tally);
}

// A large need on rows that sum the full-row aggregates (the general
// variant): their chunks select it by radix over the chunk as plain rows do
// (radix_chunk), summing the row's spread (top-n-sigma's) and its mass
// (top-p's, the draw's) in the first read; where ties at the last level pass
// the buffer (kind 2 in every chunk, kind 11 in one) the collecting loop reads
// the chunk again, keeping those sums (summed again, that chunk's would
// weigh twice in kind 11's). Top-n-sigma before a top-k of 1000, and top-p
// before it, each cut from the sums, equal the twin.
TEST(GpuChainCollectPaths, LargeNeedOfSummedRowsKeepsItsBestEqualsTheTwin) {
    Tally tally;
    for (int profile = 0; profile < 2; ++profile) {
        auto options = sieve_test::gpu_options(Profile::Full);
        if (profile == 1) options.profile("gpu");
        sieve::Context gpu(options);
        const int32_t vocab = 151936;
        for (const char* chain_text : {"top_n_sigma;top_k;temperature", "top_p;top_k;temperature"}) {
            const auto kinds = sieve_test::twin_chain(chain_text);
            ASSERT_FALSE(kinds.empty());
            for (int kind : {0, 2, 11}) {
                SCOPED_TRACE(std::string(chain_text) + " row kind " + std::to_string(kind) + " profile " +
                             std::to_string(profile));
                const uint32_t salt = static_cast<uint32_t>(vocab) + 31u * static_cast<uint32_t>(kind);
                const auto logits = collect_path_row(kind, vocab, salt);
                RowParams base = preset("active");
                base.top_k = 1000;
                base.top_n_sigma = 2.5f;
                base.top_p = 0.5f;
                const auto params = row_params(base, 1, salt);
                sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, 1, vocab, base.temperature, 1));
                set_row(chain, 0, params[0]);
                const auto stages = plan_stages(chain, 1, vocab);
                EXPECT_TRUE(has(stages, "collect"));
                EXPECT_FALSE(has(stages, "collect_plain"));
                run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
                if (static_cast<uint32_t>(base.top_k) <= gpu.device_info().candidate_capacity / 2) {
                    EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u);
                }
            }
        }
    }
    expect_rare(tally);
}

// A CPU device's plan splits a row into one chunk per compute unit, at most
// four (gpu_plan.cpp: chunks_for; its hardware threads, or
// SIEVE_COMPUTE_UNITS), and its tail folds the chunks' lists in one at a time
// by merge paths (collect_tail.glsl: merge_chunk_lists): with three and four
// chunks, the fold over the merged run and a chunk's list, for top-k 40 and
// 1000 and llama.cpp's default chain, on rows whose best logits sit in one
// place (kind 1), in two chunks (kind 7), in tie groups of thousands (kind 2)
// or spread (kinds 0, 6), equals the twin. On a GPU the same units split the
// row for the GPU's merge, which the twin judges the same way.
TEST(GpuChainCollectPaths, ListsOfThreeAndFourChunksMergeEqualTheTwin) {
    Tally tally;
    const int32_t vocab = 32000;
    for (const char* units : {"3", "4"}) {
        sieve::Context device = sieve_test::device_plan_context(units);
        const bool cpu_plan = device.device_info().type == SIEVE_DEVICE_CPU;
        for (const char* chain_text : {"top_k;temperature", kDefaultOrder}) {
            const auto kinds = sieve_test::twin_chain(chain_text);
            ASSERT_FALSE(kinds.empty());
            for (int32_t top_k : {40, 1000}) {
                if (top_k != 40 && std::string(chain_text) == kDefaultOrder) continue;  // the default chain's k is 40
                for (int kind : {0, 1, 2, 6, 7}) {
                    SCOPED_TRACE(std::string(chain_text) + " units " + units + " top-k " + std::to_string(top_k) +
                                 " row kind " + std::to_string(kind));
                    const uint32_t salt = 977u * static_cast<uint32_t>(kind) + static_cast<uint32_t>(top_k);
                    const auto logits = collect_path_row(kind, vocab, salt);
                    // llama.cpp's defaults for its default chain (the active
                    // preset's typical and min-p cut whole rows, which the twin takes).
                    RowParams base = preset(std::string(chain_text) == kDefaultOrder ? "llama_defaults" : "active");
                    base.top_k = top_k;
                    const auto params = row_params(base, 1, salt);
                    sieve::Chain chain(device, sieve_test::chain_desc(chain_text, 1, vocab, base.temperature, 1));
                    set_row(chain, 0, params[0]);
                    if (cpu_plan) {  // the plain variant's chunks, or the general one's (top-n-sigma's sums)
                        const char* stage =
                            has(plan_stages(chain, 1, vocab), "collect_plain") ? "collect_plain" : "collect";
                        EXPECT_EQ(sieve_test::stage_workgroups(chain, 1, vocab, stage), static_cast<uint32_t>(std::stoi(units)));
                    }
                    run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
                    EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u);
                }
            }
        }
    }
    expect_rare(tally);
}

TEST(GpuChainOverflow, FallbackRowsEqualTheTwinAndAreCounted) {
    auto gpu = sieve_test::gpu_context();
    const int32_t vocab = 151936;
    RowParams wide_top_p = active();
    wide_top_p.top_p = 0.99f;
    RowParams low_min_p = active();
    low_min_p.min_p = 0.001f;
    const OverflowCase cases[] = {
        {"top_p;temperature", Shape::Gaussian, wide_top_p, true},
        {"min_p;temperature", Shape::Gaussian, low_min_p, true},
        {kDefaultOrder, Shape::Zipf, active(), false},
        {kDefaultOrder, Shape::Zipf, RowParams(), false},
    };
    for (const auto& oc : cases) {
        SCOPED_TRACE(std::string(oc.chain) + " over " + sieve_test::shape_name(oc.shape));
        const auto kinds = sieve_test::twin_chain(oc.chain);
        ASSERT_FALSE(kinds.empty());
        const auto logits = sieve_test::make_rows(oc.shape, 1, vocab, 4242);
        const auto params = row_params(oc.params, 1, 5);
        sieve::Chain chain(gpu, sieve_test::chain_desc(oc.chain, 1, vocab, oc.params.temperature, 1));
        set_row(chain, 0, params[0]);
        Tally tally;
        run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
        expect_rare(tally);
        const uint64_t fallback = chain.counters().cpu_fallback_rows;
        std::printf("%s: %llu CPU fallback rows in 2 distributions + 2 samples\n", oc.chain,
                    static_cast<unsigned long long>(fallback));
        if (oc.expect_fallback)
            EXPECT_GT(fallback, 0u) << "survivors beyond the candidate buffer, yet no CPU fallback was counted";
        else
            EXPECT_EQ(fallback, 0u) << "a top-k-bounded chain fell back to the CPU";
    }
}

// A flat LM row: N(0, 1) with `survivors` tokens at 9 + U(0, 1), the first
// `consecutive` of them at consecutive ids from vocab / 3, the others at
// distinct random ids (drawn from `rng` in this order, so a seed is a row).
std::vector<float> flat_row(int32_t vocab, int32_t survivors, int32_t consecutive, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> high(9.0f, 10.0f);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (auto& x : logits) x = normal(rng);
    std::vector<bool> taken(static_cast<size_t>(vocab), false);
    for (int32_t i = 0; i < survivors; ++i) {
        int32_t at = i < consecutive ? vocab / 3 + i : static_cast<int32_t>(rng() % vocab);
        while (taken[static_cast<size_t>(at)]) at = (at + 1) % vocab;
        taken[static_cast<size_t>(at)] = true;
        logits[static_cast<size_t>(at)] = high(rng);
    }
    return logits;
}

// Whether top-p (p, min_keep) cuts `logits` inside what the tail's buffer
// holds of the row's canonical order: each chunk of `chunk_size` lists its
// best logits at or above its own floor (its maximum + ln min_p), at most
// `keeps`, and the merge keeps the first `keeps` of them. Where it does, the
// tail finishes the row whatever min-p after it finds, even with a list full.
bool top_p_cut_in_lists(const std::vector<float>& logits, int32_t chunk_size, int32_t keeps, float p, float min_p,
                        int32_t min_keep) {
    const std::vector<Weighted> order = sieve::ref::canonical_distribution(
        sieve::ref::make_candidates(logits.data(), static_cast<int32_t>(logits.size())));
    const size_t chunks = (logits.size() + static_cast<size_t>(chunk_size) - 1) / static_cast<size_t>(chunk_size);
    std::vector<float> chunk_floor(chunks, -INFINITY);
    for (size_t i = 0; i < logits.size(); ++i)
        chunk_floor[i / static_cast<size_t>(chunk_size)] =
            std::max(chunk_floor[i / static_cast<size_t>(chunk_size)], logits[i] + std::log(min_p));
    std::vector<int32_t> listed(chunks, 0);
    int32_t held = 0;  // the canonical prefix the lists hold
    for (const Weighted& w : order) {
        const size_t c = static_cast<size_t>(w.id) / static_cast<size_t>(chunk_size);
        if (listed[c] == keeps || logits[static_cast<size_t>(w.id)] < chunk_floor[c]) break;
        ++listed[c];
        ++held;
    }
    held = std::min(held, keeps);
    double sum = 0.0;
    int32_t cut = 0;  // llama.cpp's: the first prefix reaching p of the mass, at least min_keep
    for (const Weighted& w : order) {
        sum += w.p;
        if (++cut >= min_keep && sum >= p) break;
    }
    return cut <= held;
}

// min-p first without a top-k, or after top-p 0.95 (llama.cpp's default chain
// with top-k off, whose top-p cut falls past the buffer on most of these
// rows): a chunk keeps its best logits over min-p's floor, as many as its
// share of the candidate buffer holds (CAP / 8 at a GPU's one-row split of 32,
// half the buffer in a plan of at most MAX_COLLECT_CHUNKS chunks, at most 4 an
// invocation after top-p, whose chunks sum the row's mass: collect.glsl,
// chunk_need; at least top-p's min_keep), and the tail keeps every listed
// logit at or above the row's floor, so the GPU finishes a row with hundreds
// of survivors spread over its chunks (a flat LM row at temperature 1). The
// twin takes the row only where a chunk's list is full of logits that reach
// the floor (it may have dropped passing ones), where more than half the
// candidate buffer survives, or where min_keep reaches below the floor (the
// distribution, which lists the survivors, always; a sampling call of min-p
// first on a GPU's plan goes to the key levels instead:
// SurvivorsPastTheBufferTakeTheKeyLevels; after top-p, not where its cut lies
// inside the lists: top_p_cut_in_lists): the test works out which from the
// plan's chunks and asserts the fallback count both ways, tokens and
// distributions against the twin. Rows: N(0, 1) with S tokens at 9 + U(0, 1)
// (all of them pass min-p 0.05, nothing else does), at random ids or some of
// them at consecutive ids (one chunk full: 400 of 600 fill a list after top-p
// at 64 invocations, 1100 of 1200 at 256, neither one of min-p first's HALF).
TEST(GpuChainMinP, SurvivorsSpreadOverTheChunksStayOnTheGpu) {
    const int32_t vocab = 151936;
    struct FlatCase {
        int32_t survivors;    // kHalf: half the candidate buffer
        int32_t consecutive;  // of them at consecutive ids (kHalf: all)
        int32_t min_keep;     // beside 0
    };
    const int32_t kHalf = -1;
    const FlatCase cases[] = {{100, 0, 0},   {300, 0, 290}, {300, 0, 310},   {900, 0, 0},      {1600, 0, 0},
                              {300, 150, 0}, {600, 400, 0}, {1200, 1100, 0}, {kHalf, kHalf, 0}};
    int on_gpu = 0, to_twin = 0;
    for (const char* chain_text : {"min_p;temperature", "top_p;min_p;temperature"}) {
        const auto kinds = sieve_test::twin_chain(chain_text);
        ASSERT_FALSE(kinds.empty());
        const bool after_top_p = std::string(chain_text).rfind("top_p", 0) == 0;
        for (Profile profile : {Profile::Full, Profile::Constrained, Profile::Wide}) {
            auto gpu = sieve_test::gpu_context(profile);
            const uint32_t cap = sieve_test::limits_of(gpu).candidate_capacity;

            for (FlatCase fc : cases) {
                if (fc.survivors == kHalf) fc.survivors = static_cast<int32_t>(cap / 2);
                if (fc.consecutive == kHalf) fc.consecutive = fc.survivors;
                SCOPED_TRACE(std::string(chain_text) + ", profile " + std::to_string(static_cast<int>(profile)) + ", " +
                             std::to_string(fc.survivors) + " survivors, " + std::to_string(fc.consecutive) +
                             " of them at consecutive ids, min_keep " + std::to_string(fc.min_keep));
                const uint32_t salt = 17u * static_cast<uint32_t>(fc.survivors) + static_cast<uint32_t>(fc.consecutive);
                std::mt19937 rng(salt);
                const std::vector<float> logits = flat_row(vocab, fc.survivors, fc.consecutive, rng);
                RowParams base;
                base.temperature = 1.0f;
                base.min_p = 0.05f;
                base.top_p = 0.95f;
                base.min_keep = fc.min_keep;
                const auto params = row_params(base, 1, salt);
                sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, 1, vocab, base.temperature, 1));
                set_row(chain, 0, params[0]);
                // The plan's chunks of the row (collect_chunk_size's split) and the
                // survivors each holds.
                int32_t chunks = 0;
                for (const auto& e : chain.plan_estimate(1, vocab))
                    if (std::string(e.stage) == "collect_plain" || std::string(e.stage) == "collect")
                        chunks = std::max(chunks, static_cast<int32_t>(e.workgroups));  // the variant the row takes
                ASSERT_GT(chunks, 0);
                const int32_t chunk_size = ((vocab + chunks - 1) / chunks + 3) / 4 * 4;
                // What each chunk keeps (collect.glsl: chunk_need; the host's
                // chunk_keep): top-p's need is min_keep where that is more than 64.
                const uint32_t need = std::max(64u, after_top_p ? static_cast<uint32_t>(fc.min_keep) : 0u);
                const uint32_t flags = sieve::glsl::ROW_FLOOR | (after_top_p ? sieve::glsl::ROW_NEED_MASS : 0u);
                const int32_t keeps = static_cast<int32_t>(sieve::chunk_keep(
                    need, flags, static_cast<uint32_t>(chunks), cap, sieve_test::limits_of(gpu).workgroup_size));
                const float threshold = *std::max_element(logits.begin(), logits.end()) + std::log(0.05f);
                std::vector<int32_t> per_chunk(static_cast<size_t>(chunks), 0);
                for (int32_t i = 0; i < vocab; ++i)
                    if (logits[static_cast<size_t>(i)] >= threshold) ++per_chunk[static_cast<size_t>(i / chunk_size)];
                // (Or, with a list full, where top-p cuts inside the lists.)
                const bool whole = (*std::max_element(per_chunk.begin(), per_chunk.end()) < keeps &&
                                    fc.survivors <= static_cast<int32_t>(cap / 2) && fc.min_keep <= fc.survivors) ||
                                   (after_top_p && top_p_cut_in_lists(logits, chunk_size, keeps, base.top_p,
                                                                      base.min_p, fc.min_keep));
                Tally tally;
                run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
                expect_rare(tally);
                const uint64_t fallback = chain.counters().cpu_fallback_rows;
                if (whole) {
                    EXPECT_EQ(fallback, 0u) << "every survivor was in the lists, yet the twin took the row";
                    ++on_gpu;
                } else {
                    EXPECT_GT(fallback, 0u) << "survivors past the lists, yet no CPU fallback was counted";
                    ++to_twin;
                }
            }
        }
    }
    // Both ways are exercised on this device (1600 survivors pass half the
    // buffer; half the buffer at consecutive ids fills a chunk's list).
    EXPECT_GT(on_gpu, 0);
    EXPECT_GT(to_twin, 0);
}

// A cut whose survivors reach past the candidate buffer but keep its order
// (top-n-sigma's mask of what lies below its threshold, a top-k larger than
// the buffer) leaves the rest's count known and its mass not: a later cut
// inside the buffer (top-k, min-p) still finishes the row on the GPU, and
// only what needs the survivors' mass (the draw, top-p) sends it to the twin
// (tail.glsl: op_top_n_sigma, op_top_k). llama.cpp's default chain with
// top-n-sigma on runs it before its top-k 40. Rows: N(0, 1) with S tokens at
// 9 + U(0, 1) at random ids (top-n-sigma 1 keeps them, about 9 and up). A
// temperature after such a cut must not overflow the rest's smallest value,
// which is then a bound (op_divide): one logit at -1e9 (top-n-sigma masks
// it) at temperature 1e-30 stays on the GPU, below the mask's threshold; one
// at -2e38 at temperature 0.5 overflows the GPU's float variance, so its
// top-n-sigma masks nothing, and that logit overflows where the twin's
// top-n-sigma (double) or the top-k has dropped it: the twin takes the row,
// no failed status.
TEST(GpuChainTopNSigma, SurvivorsPastTheBufferFinishWhereALaterCutFallsInside) {
    const int32_t vocab = 151936;
    const int32_t kCap = -1;  // top-k: the candidate buffer's capacity
    struct SpreadCase {
        const char* chain;
        int32_t top_k;
        float min_p;
        int32_t survivors;
        float planted;  // one logit at this value (0: none)
        float temperature;
        bool expect_fallback;
    };
    // Few chains (a cold pipeline build takes seconds on a CPU device): a
    // top-k or min-p that is 0 leaves its sampler out of the pipeline.
    const SpreadCase cases[] = {
        {kDefaultOrder, 40, 0.05f, 300, 0.0f, 1.0f, false},
        {kDefaultOrder, 40, 0.05f, 1500, 0.0f, 1.0f, false},
        {"top_n_sigma;min_p;temperature", 0, 0.9f, 300, 0.0f, 1.0f, false},
        {"top_n_sigma;min_p;temperature", 0, 0.05f, 300, 0.0f, 1.0f, true},
        {"top_n_sigma;temperature;top_k", 0, 0.0f, 300, 0.0f, 1.0f, true},
        {"top_n_sigma;temperature;top_k", 40, 0.0f, 300, -1e9f, 1e-30f, false},
        {"top_n_sigma;temperature;top_k", 40, 0.0f, 300, -2e38f, 0.5f, true},
        {"top_k;temperature;min_p", kCap, 0.9f, 300, 0.0f, 1.0f, false},
        {"top_k;temperature;min_p", kCap, 0.0f, 300, 0.0f, 1.0f, true},
        {"top_k;temperature;min_p", kCap, 0.9f, 300, -2e38f, 0.5f, true},
    };
    for (Profile profile : {Profile::Full, Profile::Constrained}) {
        auto gpu = sieve_test::gpu_context(profile);
        const uint32_t cap = sieve_test::limits_of(gpu).candidate_capacity;
        for (const SpreadCase& sc : cases) {
            SCOPED_TRACE(std::string(sc.chain) + ", profile " + std::to_string(static_cast<int>(profile)) + ", " +
                         std::to_string(sc.survivors) + " survivors, one at " + std::to_string(sc.planted) +
                         ", temperature " + std::to_string(sc.temperature));
            const auto kinds = sieve_test::twin_chain(sc.chain);
            ASSERT_FALSE(kinds.empty());
            const uint32_t salt = 31u * static_cast<uint32_t>(sc.survivors) + static_cast<uint32_t>(sc.top_k);
            std::mt19937 rng(salt);
            std::vector<float> logits = flat_row(vocab, sc.survivors, 0, rng);
            if (sc.planted != 0.0f) logits[static_cast<size_t>(vocab / 2)] = sc.planted;
            RowParams base;
            base.temperature = sc.temperature;
            base.top_n_sigma = 1.0f;
            base.top_k = sc.top_k == kCap ? static_cast<int32_t>(cap) : sc.top_k;
            base.top_p = 0.95f;
            base.min_p = sc.min_p;
            const auto params = row_params(base, 1, salt);
            sieve::Chain chain(gpu, sieve_test::chain_desc(sc.chain, 1, vocab, base.temperature, 1));
            set_row(chain, 0, params[0]);
            Tally tally;
            run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
            expect_rare(tally);
            const uint64_t fallback = chain.counters().cpu_fallback_rows;
            if (sc.expect_fallback)
                EXPECT_GT(fallback, 0u) << "the survivors' mass is past the buffer, yet no CPU fallback was counted";
            else
                EXPECT_EQ(fallback, 0u) << "a cut inside the buffer follows, yet the twin took the row";
        }
    }
}

// Mirostat v2 after a temperature (llama.cpp's chain for it) keeps p >=
// 2^-mu: the collect pass drops what lies below the row's maximum - mu ln 2
// (at the temperature), mu read from the slot as the tail reads it
// (collect.glsl: row_floor_offset), and where the chunks' lists hold every
// logit over that floor the cut knows the rest fails, even where every
// listed entry passes (selectors.glsl: mirostat_v2_cut; without that, the
// floored lists would send such a row to the twin, where the buffer of the
// row's first `need` held failing entries to end the cut on before the
// floor). Rows: N(0, 1) with one token at 30 and five at 30 -
// 3.25 (they pass mu = 10 at temperature 0.5, nothing else does); a flat row
// (150 tokens at 9 + U(0, 1), all passing: within half the constrained
// profile's buffer), and the same at consecutive ids (one chunk holds more
// than its register picks take: the collecting loop reads it again from the
// floor, the aggregates already summed); a Zipf row; the first row with its
// maximum biased down to 20 and three tokens at 25 in its chunk (they pass,
// below the unbiased maximum's floor: a chunk that no register picks read
// floors from its biased maximum, read first: collect_chunk.glsl,
// floor_from_chunk_max).
// The token and the distribution of the first step against the twin, no
// fallback.
TEST(GpuChainMirostat, V2FloorFromTheSlotsMuKeepsItsSurvivors) {
    const int32_t vocab = 151936;
    const auto kinds = sieve_test::twin_chain("temperature;mirostat_v2");
    ASSERT_FALSE(kinds.empty());
    for (Profile profile : {Profile::Full, Profile::Constrained}) {
        auto gpu = sieve_test::gpu_context(profile);
        for (int shape = 0; shape < 5; ++shape) {
            SCOPED_TRACE("profile " + std::to_string(static_cast<int>(profile)) + ", row " + std::to_string(shape));
            std::vector<float> logits;
            if (shape == 2) {
                logits = sieve_test::make_rows(Shape::Zipf, 1, vocab, 91);
            } else {
                std::mt19937 rng(97u + static_cast<uint32_t>(shape));
                const bool flat = shape == 1 || shape == 3;
                logits = flat_row(vocab, flat ? 150 : 0, shape == 3 ? 150 : 0, rng);
                if (!flat) {
                    logits[static_cast<size_t>(vocab / 2)] = 30.0f;
                    for (int32_t i = 1; i <= 5; ++i) logits[static_cast<size_t>(vocab / 2 + 7919 * i)] = 30.0f - 3.25f;
                }
                if (shape == 4)
                    for (int32_t i = 1; i <= 3; ++i) logits[static_cast<size_t>(vocab / 2 + 101 * i)] = 25.0f;
            }
            RowParams base;
            base.temperature = 0.5f;
            base.mirostat_tau = 5.0f;
            base.mirostat_eta = 0.1f;
            if (shape == 4) base.logit_bias = {{vocab / 2, -10.0f}};
            const auto params = row_params(base, 1, 61u + static_cast<uint32_t>(shape));
            sieve::Chain chain(gpu, sieve_test::chain_desc("temperature;mirostat_v2", 1, vocab, base.temperature, 1));
            if (shape == 4) sieve_test::leave_inputs_to_the_passes(chain);  // the bias as the passes read
            set_row(chain, 0, params[0]);
            Tally tally;
            run_and_compare(chain, kinds, logits, 1, vocab, params, 1, &tally);
            expect_rare(tally);
            EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u) << "the survivors were in the lists, yet the twin took the row";
        }
    }
}

// A row for min-p 0.05 around its threshold: N(0, 1), one token at 10 and
// 20 at 9 + U(0, 1) spread over the row (they pass); *below: the value 10
// float steps under llama.cpp's threshold (max + logf(p)), which fails it
// but reaches the row's floor.
std::vector<float> row_around_min_p_threshold(int32_t vocab, uint32_t seed, float* below) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> high(9.0f, 9.9f);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (auto& x : logits) x = normal(rng);
    logits[1000] = 10.0f;
    for (int32_t i = 0; i < 20; ++i) logits[static_cast<size_t>(3000 + 7001 * i)] = high(rng);
    *below = 10.0f + std::log(0.05f);
    for (int32_t step = 0; step < 10; ++step) *below = std::nextafter(*below, 0.0f);
    return logits;
}

// min-p 0.05 with `min_keep` (temperature 1 after it) over one row, tokens
// and distributions against the twin; returns the rows the twin took.
uint64_t min_p_fallback_rows(const sieve::Context& gpu, const std::vector<float>& logits, int32_t min_keep,
                             uint32_t salt) {
    const int32_t vocab = static_cast<int32_t>(logits.size());
    const auto kinds = sieve_test::twin_chain("min_p;temperature");
    EXPECT_FALSE(kinds.empty());
    RowParams base;
    base.temperature = 1.0f;
    base.min_p = 0.05f;
    base.min_keep = min_keep;
    const auto params = row_params(base, 1, salt);
    sieve::Chain chain(gpu, sieve_test::chain_desc("min_p;temperature", 1, vocab, base.temperature, 1));
    set_row(chain, 0, params[0]);
    Tally tally;
    run_and_compare(chain, kinds, logits, 1, vocab, params, 2, &tally);
    expect_rare(tally);
    return chain.counters().cpu_fallback_rows;
}

// min_keep past min-p's survivors on a row whose lists hold every logit at
// or above the row's floor (slightly below min-p's threshold, for rounding):
// those lists are a prefix of the canonical order, so min_keep takes the
// failing logits listed just below the threshold on the GPU, in order, and
// goes to the twin only past them. The row: 20 tokens at 9 + U(0, 1), one at
// 10, five at 10 to 14 float steps below min-p's threshold (llama.cpp's
// max + logf(p): they fail it, but reach the floor), the rest N(0, 1).
TEST(GpuChainMinP, MinKeepTakesTheListedLogitsBelowTheThreshold) {
    const int32_t vocab = 151936;
    float below;
    std::vector<float> logits = row_around_min_p_threshold(vocab, 4711, &below);
    for (int32_t i = 0; i < 5; ++i) {
        logits[static_cast<size_t>(5000 + 9001 * i)] = below;
        below = std::nextafter(below, 0.0f);
    }
    for (Profile profile : {Profile::Full, Profile::Constrained, Profile::Wide}) {
        auto gpu = sieve_test::gpu_context(profile);
        // 21 pass; 23 and 26 reach into the five below; 27 past them.
        for (int32_t min_keep : {23, 26, 27}) {
            SCOPED_TRACE("profile " + std::to_string(static_cast<int>(profile)) + ", min_keep " +
                         std::to_string(min_keep));
            const uint64_t fallback = min_p_fallback_rows(gpu, logits, min_keep, static_cast<uint32_t>(min_keep));
            if (min_keep <= 26) {
                EXPECT_EQ(fallback, 0u) << "min_keep within the listed logits";
            } else {
                EXPECT_GT(fallback, 0u) << "min_keep past the listed logits";
            }
        }
    }
}

// A chunk's list full of logits that reach the row's floor but fail min-p
// (a few float steps below its threshold): the chunk may have dropped more
// of them, yet the buffer is the row's first `need`, and a buffered entry
// fails, so the rest fails too: the GPU finishes the row. The row: one token
// at 10, 20 at 9 + U(0, 1) spread over it, 300 at consecutive ids 10 float
// steps below the threshold, the rest N(0, 1). (On a plan whose chunks keep
// half the buffer the 300 fit a list; on a GPU's one-row split of 32 chunks
// of 64 they fill one.)
TEST(GpuChainMinP, AListFullOfFailingLogitsStillCuts) {
    const int32_t vocab = 151936;
    float below;
    std::vector<float> logits = row_around_min_p_threshold(vocab, 815, &below);
    for (int32_t i = 0; i < 300; ++i) logits[static_cast<size_t>(vocab / 2 + i)] = below;
    for (Profile profile : {Profile::Full, Profile::Constrained, Profile::Wide}) {
        SCOPED_TRACE("profile " + std::to_string(static_cast<int>(profile)));
        auto gpu = sieve_test::gpu_context(profile);
        EXPECT_EQ(min_p_fallback_rows(gpu, logits, 0, 3), 0u);
    }
}

// A chunk whose own floor (its maximum + ln p: at or below the row's) more
// than half the candidate buffer reaches, though the row's floor few do:
// the register picks cut its logits over that floor to its best `need` by a
// refining pass (collect_chunk.glsl, pick_chunk), the row's survivors stay
// on the GPU. The row: N(0, 1), 150 tokens at 5.2 + U(0, 0.5) at random ids,
// one at 12; min-p 0.001 (ln p about -6.9) puts the floor of a chunk without
// the 12 near -1.2, where about 89% of its logits pass, and the row's near
// 5.1, which the 151 pass. A temperature of 4 after min-p gives the 150 most
// of the mass, so the draws land on them.
TEST(GpuChainMinP, ChunksCrowdedOverTheirOwnFloorKeepTheirBest) {
    const int32_t vocab = 151936;
    std::mt19937 rng(4242);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> near(5.2f, 5.7f);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (auto& x : logits) x = normal(rng);
    for (int32_t i = 0; i < 150; ++i) logits[rng() % static_cast<uint32_t>(vocab)] = near(rng);
    logits[static_cast<size_t>(vocab - 7)] = 12.0f;
    const auto kinds = sieve_test::twin_chain("min_p;temperature");
    ASSERT_FALSE(kinds.empty());
    for (Profile profile : {Profile::Full, Profile::Constrained, Profile::Wide}) {
        SCOPED_TRACE("profile " + std::to_string(static_cast<int>(profile)));
        auto gpu = sieve_test::gpu_context(profile);
        RowParams base;
        base.temperature = 4.0f;
        base.min_p = 0.001f;
        const auto params = row_params(base, 1, 99);
        sieve::Chain chain(gpu, sieve_test::chain_desc("min_p;temperature", 1, vocab, base.temperature, 1));
        set_row(chain, 0, params[0]);
        Tally tally;
        run_and_compare(chain, kinds, logits, 1, vocab, params, 4, &tally);
        expect_rare(tally);
        EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u) << "every survivor was in the lists, yet the twin took the row";
    }
}

// The plans the key levels' tests over min-p's survivors run on: a GPU's
// (full and constrained buffers) and the device's own.
struct FloorPlan {
    const char* name;
    Profile profile;
    const char* options_profile;  // null: the device's own (SIEVE_PROFILE's)
};
const FloorPlan kFloorPlans[] = {{"a GPU's plan", Profile::Full, "gpu"},
                                 {"a GPU's plan, constrained", Profile::Constrained, "gpu,constrained"},
                                 {"the device's", Profile::Full, nullptr}};

sieve::Context floor_plan_context(const FloorPlan& plan) {
    sieve::ContextOptions options = sieve_test::gpu_options(plan.profile);
    if (plan.options_profile) options.profile(plan.options_profile);
    return sieve::Context(options);
}

// Whether the context's plan draws min-p's survivors past the buffer by the
// key levels: every plan but a CPU device's own, which leaves them to the twin.
bool draws_floor_levels(const sieve::Context& gpu) {
    const sieve_device_info info = gpu.device_info();
    return !(info.type == SIEVE_DEVICE_CPU && !(info.profile & SIEVE_PROFILE_GPU));
}

// min-p first whose survivors reach past the candidate buffer, with nothing
// after it but a temperature and dist: on a GPU's plan the collect tail hands
// the row to the key levels (level 1 over the key range from min-p's
// threshold to the maximum at the temperature, its members at or above the
// raw threshold, forming the target from their exact total) and the gather
// draws, in the recording's later parts; on a CPU device's plan the twin
// draws (gpu_chain.cpp: floor_levels). Tokens against the twin over five
// steps (the last two submit the near levels with the first part at once), two rows a call (their
// own temperatures and seeds; in one case a top-k 1000 row beside the min-p
// row), the row passes each token took, and the fallback count, on a GPU's
// plan (full and constrained buffers) and the device's own.
// Rows, with min-p 0.05:
// - N(0, 1): about 10000 of 151936 survive, at temperature 1 and 1.3; with
//   the row's bias left to the passes (row_logit), its best token masked.
// - At a floor where a division merges: the maximum 2^20 (min-p's threshold
//   2^20 + ln 0.05 rounds to 2^20 - 3 on every device, whatever its log's
//   last bits), `at` logits at the threshold and `at` one float step below
//   it, where the temperature (chosen so) gives both the same quotient: in
//   the key range, but failing min-p, so the levels, the gather and the tie
//   draw must test the raw logit. 3000 of each make a tie group past the
//   buffer (the tie draw), 1500 of each a bin the gather takes (the full
//   buffer; a tie group under the constrained one). The rest N(0, 1).
std::vector<float> merged_floor_row(int32_t vocab, int32_t at, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (auto& x : logits) x = normal(rng);
    const float top = 1048576.0f, threshold = 1048573.0f;
    const float below = std::nextafter(threshold, 0.0f);
    logits[7] = top;
    for (int32_t i = 0; i < 2 * at; ++i) logits[static_cast<size_t>(1000 + 23 * i)] = i % 2 == 0 ? threshold : below;
    return logits;
}

// A temperature at which min-p's threshold of merged_floor_row and the
// float below it divide to the same quotient (IEEE division, the twin's and
// the GPU's).
float merging_temperature() {
    const float threshold = 1048573.0f, below = std::nextafter(threshold, 0.0f);
    for (float t = 1.5f; t < 2.0f; t = std::nextafter(t, 2.0f) + 0.001f)
        if (below / t == threshold / t) return t;
    ADD_FAILURE() << "no temperature merges the threshold and the float below it";
    return 1.0f;
}

TEST(GpuChainMinP, SurvivorsPastTheBufferTakeTheKeyLevels) {
    const int32_t vocab = 151936;
    struct Case {
        const char* name;
        std::vector<float> logits;  // two rows
        float temperature;          // row 0's (row_params gives row 1 its own)
        bool bias;                  // a bias the passes apply (row 0 of each)
        // Row 0 a top-k 1000 without min-p instead (a GPU's radix chunks, where
        // the buffer holds twice that), in top_k;min_p;temperature: the plan
        // holds both kinds of row.
        bool top_k_row = false;
    };
    const float merging = merging_temperature();
    std::vector<float> gaussian(2 * static_cast<size_t>(vocab));
    std::mt19937 rng(2024);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& x : gaussian) x = normal(rng);
    auto merged = [&](int32_t at) {
        std::vector<float> two = merged_floor_row(vocab, at, 5);
        const auto other = merged_floor_row(vocab, at, 6);
        two.insert(two.end(), other.begin(), other.end());
        return two;
    };
    const Case cases[] = {{"gaussian", gaussian, 1.0f, false},
                          {"gaussian, bias", gaussian, 1.0f, true},
                          {"merged floor, tie group", merged(3000), merging, false},
                          {"merged floor, gathered bin", merged(1500), merging, false},
                          {"gaussian, beside a top-k row", gaussian, 1.0f, false, true}};
    for (const FloorPlan& plan : kFloorPlans) {
        sieve::Context gpu = floor_plan_context(plan);
        const bool levels = draws_floor_levels(gpu);
        for (const Case& c : cases) {
            SCOPED_TRACE(std::string(plan.name) + ", " + c.name);
            RowParams base;
            base.temperature = c.temperature;
            base.min_p = 0.05f;
            auto params = row_params(base, 2, 31);
            params[1].temperature = c.temperature == 1.0f ? 1.3f : c.temperature;
            if (c.bias) {
                const float* row = c.logits.data();
                const int32_t best = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
                params[0].logit_bias = {{best, -kInf}, {11, 0.5f}, {4099, 0.25f}, {90001, -0.5f}};
            }
            const char* chain_text = c.top_k_row ? "top_k;min_p;temperature" : "min_p;temperature";
            const auto case_kinds = sieve_test::twin_chain(chain_text);
            if (c.top_k_row) {
                // (At most half the buffer: a larger top-k goes to the twin.)
                params[0].top_k = static_cast<int32_t>(std::min(1000u, sieve_test::limits_of(gpu).candidate_capacity / 2));
                params[0].min_p = 0.0f;
                params[1].top_k = 0;
            }
            sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, 2, vocab, c.temperature, 1));
            for (int32_t r = 0; r < 2; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
            if (c.bias) sieve_test::leave_inputs_to_the_passes(chain);
            Tally tally;
            // Five calls: the fourth and fifth submit the near levels with the
            // first part at once
            // (three of three calls needed the levels: kWholeAboveDeepRate).
            const uint32_t steps = 5;
            for (uint32_t step = 0; step < steps; ++step) {
                const auto got = chain.sample(c.logits.data(), 2, vocab);
                ASSERT_EQ(got.size(), 2u);
                for (int32_t r = 0; r < 2; ++r) {
                    SCOPED_TRACE("step " + std::to_string(step) + " row " + std::to_string(r));
                    const size_t at = static_cast<size_t>(r);
                    compare_token(got[at], Row{case_kinds, c.logits.data() + at * vocab, vocab, params[at]}, step,
                                  &tally);
                    // The collect pass, level 1 (at least) and the gather.
                    const bool past = !(c.top_k_row && r == 0);
                    if (levels) {
                        EXPECT_EQ(got[at].row_passes >= 3u, past) << got[at].row_passes << " row passes";
                    }
                }
            }
            expect_rare(tally);
            const uint64_t fallback = chain.counters().cpu_fallback_rows;
            const uint64_t past_rows = (c.top_k_row ? 1u : 2u) * steps;
            if (levels)
                EXPECT_EQ(fallback, 0u) << "min-p's survivors past the buffer went to the twin on a GPU's plan";
            else
                EXPECT_EQ(fallback, past_rows) << "a CPU device's plan leaves them to the twin";
        }
    }
}

// The key levels draw min-p's survivors only where nothing but a temperature
// follows min-p and nothing divides before it (row_analysis.cpp:
// floor_levels; tail.glsl: min_p_cut): a top-k after min-p, a temperature
// before it, a second or a dynamic temperature, or a min_keep the buffer does not hold
// (it may reach past the survivors) leave the row to the twin on a GPU's plan
// too. N(0, 1) rows, min-p 0.05 (about 10000 survive).
TEST(GpuChainMinP, OtherSamplersAroundMinPKeepTheTwin) {
    const int32_t vocab = 151936;
    std::vector<float> logits(2 * static_cast<size_t>(vocab));
    std::mt19937 rng(77);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& x : logits) x = normal(rng);
    sieve::ContextOptions options = sieve_test::gpu_options();
    options.profile("gpu");
    sieve::Context gpu(options);
    struct Case {
        const char* chain;
        int32_t min_keep;
        float dynatemp_range;
    };
    for (const Case c : {Case{"min_p;top_k;temperature", 0, 0.0f}, Case{"temperature;min_p", 0, 0.0f},
                         Case{"min_p;temperature;temperature", 0, 0.0f}, Case{"min_p;temperature", 20000, 0.0f},
                         Case{"min_p;temperature", 0, 0.5f}}) {
        SCOPED_TRACE(std::string(c.chain) + ", min_keep " + std::to_string(c.min_keep) + ", dynamic range " +
                     std::to_string(c.dynatemp_range));
        const auto kinds = sieve_test::twin_chain(c.chain);
        ASSERT_FALSE(kinds.empty());
        RowParams base;
        base.temperature = 0.8f;
        base.min_p = 0.05f;
        base.top_k = 5000;  // past the buffer: the rows' survivors stay past it
        base.min_keep = c.min_keep;
        base.dynatemp_range = c.dynatemp_range;
        const auto params = row_params(base, 2, 41);
        sieve::Chain chain(gpu, sieve_test::chain_desc(c.chain, 2, vocab, base.temperature, 1));
        for (int32_t r = 0; r < 2; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
        Tally tally;
        for (uint32_t step = 0; step < 2; ++step) {
            const auto got = chain.sample(logits.data(), 2, vocab);
            for (int32_t r = 0; r < 2; ++r) {
                const size_t at = static_cast<size_t>(r);
                compare_token(got[at], Row{kinds, logits.data() + at * vocab, vocab, params[at]}, step, &tally);
            }
        }
        expect_rare(tally);
        EXPECT_EQ(chain.counters().cpu_fallback_rows, 4u) << "the key levels drew a row whose chain needs the twin";
    }
}

// The share of a row's mass (raw logits) at or above min-p's threshold.
double min_p_share(const float* row, int32_t vocab, float min_p) {
    const float top = *std::max_element(row, row + vocab);
    const float threshold = top + std::log(min_p);
    double all = 0.0, kept = 0.0;
    for (int32_t i = 0; i < vocab; ++i) {
        const double m = sieve::ref::canonical_weight(row[i], top);
        all += m;
        kept += row[i] >= threshold ? m : 0.0;
    }
    return kept / all;
}

// llama.cpp's default chain with top-k off (top-p, then min-p 0.05) over
// N(0, 1) rows: top-p's cut falls past the buffer, and min-p's survivors
// (about 10000, about a third of the row's mass) reach past it too. Both
// keep a canonical prefix; on a GPU's plan the key levels draw min-p's
// where level 1 shows that top-p's cut lies past it (scan.glsl:
// cut_past_survivors), and the twin draws where it does not. Each row's
// top-p: llama.cpp's 0.95; 1.25 times the survivors' share (shown: the
// bound is within that of their mass); 0.9 times it (the cut lies inside
// the survivors, past the buffer: never shown). Tokens against the twin
// over four steps, two rows a call (temperatures 0.8 and 1.3), the row
// passes, and the fallback count, on a GPU's plan (full and constrained
// buffers) and the device's own.
TEST(GpuChainMinP, AfterATopPCutPastTheBufferTakesTheKeyLevels) {
    const int32_t vocab = 151936;
    const std::vector<float> logits = sieve_test::make_rows(Shape::Flat, 2, vocab, 4242);
    const char* chain_text = "top_k;top_p;min_p;temperature";
    const auto kinds = sieve_test::twin_chain(chain_text);
    ASSERT_FALSE(kinds.empty());
    struct Case {
        double of_share;  // top-p as a multiple of the row's min_p_share (0: 0.95)
        bool shown;       // level 1 shows top-p's cut past min-p's survivors
    };
    for (const FloorPlan& plan : kFloorPlans) {
        sieve::Context gpu = floor_plan_context(plan);
        const bool levels = draws_floor_levels(gpu);
        for (const Case c : {Case{0.0, true}, Case{1.25, true}, Case{0.9, false}}) {
            SCOPED_TRACE(std::string(plan.name) + ", top-p " + std::to_string(c.of_share) + " of the share");
            RowParams base;
            base.temperature = 0.8f;
            base.top_k = 0;
            base.top_p = 0.95f;
            base.min_p = 0.05f;
            auto params = row_params(base, 2, 53);
            params[1].temperature = 1.3f;
            for (size_t r = 0; r < 2 && c.of_share > 0.0; ++r)
                params[r].top_p =
                    static_cast<float>(c.of_share * min_p_share(logits.data() + r * vocab, vocab, base.min_p));
            sieve::Chain chain(gpu, sieve_test::chain_desc(chain_text, 2, vocab, base.temperature, 1));
            for (int32_t r = 0; r < 2; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
            Tally tally;
            const uint32_t steps = 4;
            for (uint32_t step = 0; step < steps; ++step) {
                const auto got = chain.sample(logits.data(), 2, vocab);
                ASSERT_EQ(got.size(), 2u);
                for (int32_t r = 0; r < 2; ++r) {
                    SCOPED_TRACE("step " + std::to_string(step) + " row " + std::to_string(r));
                    const size_t at = static_cast<size_t>(r);
                    compare_token(got[at], Row{kinds, logits.data() + at * vocab, vocab, params[at]}, step, &tally);
                    // The collect pass, level 1 (at least) and the gather.
                    if (levels && c.shown) {
                        EXPECT_GE(got[at].row_passes, 3u);
                    }
                }
            }
            expect_rare(tally);
            const uint64_t fallback = chain.counters().cpu_fallback_rows;
            if (levels && c.shown)
                EXPECT_EQ(fallback, 0u) << "min-p's survivors after top-p's cut went to the twin on a GPU's plan";
            else
                EXPECT_EQ(fallback, 2u * steps) << "the twin draws where the cut is not shown past the survivors";
        }
    }
}

// ---- 2b. top-p whose cut falls past the candidate buffer, on the GPU ------------

// top-p 0.9 without top-k over LM-like rows keeps thousands of tokens: the
// collect pass hands the row to wide_histogram and wide_gather (wide.glsl),
// which find the cut and draw on the GPU (3 row passes, no CPU fallback). A
// top-p that is the row's only cut always goes there (the collect pass does
// not sum the row's mass); when its cut falls in the buffer (a peaked row),
// wide_histogram draws (2 row passes).
// Tokens equal the twin's under the agreement rules, over several steps, two
// rows per call with their own temperatures and seeds, for temperature after
// and before the cut, two temperatures, min_keep, and tie groups larger than
// the candidate buffer (f16-like rows: the cut and the draw fall inside one).
std::vector<sieve::ref::LogitBias> bias_for(const float* row, int32_t vocab, uint32_t seed);  // section 3

struct WideCase {
    const char* chain;
    Shape shape;
    int32_t vocab;
    float top_p;
    int32_t min_keep;
    uint32_t passes;  // row passes of every token
    // A logit bias the passes apply as they read (as for the app's device
    // buffers: they read logits through row_logit, not four at a time).
    bool bias = false;
};

TEST(GpuChainWideTopP, TokensEqualTheTwinWithoutFallback) {
    auto gpu = sieve_test::gpu_context();
    const WideCase cases[] = {
        {"top_p;temperature", Shape::Zipf, 32000, 0.9f, 0, 3},
        {"top_p;temperature", Shape::Zipf, 151936, 0.9f, 0, 3},
        {"top_p;temperature", Shape::Zipf, 262144, 0.95f, 0, 3},
        {"temperature;top_p", Shape::Zipf, 151936, 0.9f, 0, 3},
        {"top_p;temperature;temperature", Shape::Zipf, 32000, 0.8f, 0, 3},
        // divisions before the cut and after it (wide.glsl: WIDE_DIVISIONS 1 | 3 << 8)
        {"temperature;top_p;temperature;temperature", Shape::Zipf, 151936, 0.9f, 0, 3},
        // the most temperature divisions the wide passes apply (wide.glsl: WIDE_MAX_DIVISIONS)
        {"top_p;temperature;temperature;temperature;temperature", Shape::Zipf, 32000, 0.9f, 0, 3},
        {"top_p;temperature", Shape::Zipf, 32000, 0.9f, 200, 3},
        {"top_p;temperature", Shape::Ties, 32000, 0.5f, 0, 3},
        {"top_p;temperature", Shape::Gaussian, 32000, 0.6f, 0, 3},
        // A flat row whose cut and draw fall among tens of thousands of
        // members: a GPU's wide bins hold few enough of them for the list.
        {"top_p;temperature", Shape::Flat, 151936, 0.9f, 0, 3},
        {"top_p;temperature", Shape::Masked, 151936, 0.9f, 0, 3},
        {"top_p;temperature", Shape::Peaked, 32000, 0.9f, 0, 2},
        {"top_p;temperature", Shape::Peaked, 32000, 0.9f, 3, 2},
        {"top_p;temperature", Shape::Zipf, 151936, 0.9f, 0, 3, true},
        // top-k 40 first: the cut is in the buffer, the wide passes launch nothing
        {"top_k;top_p;min_p;temperature", Shape::Zipf, 32000, 0.9f, 0, 1},
    };
    const int32_t rows = 2;
    const int tokens = 8;
    for (const auto& wc : cases) {
        SCOPED_TRACE(std::string(wc.chain) + " over " + sieve_test::shape_name(wc.shape) + ", vocab " +
                     std::to_string(wc.vocab) + ", top-p " + std::to_string(wc.top_p) + ", min_keep " +
                     std::to_string(wc.min_keep));
        const auto kinds = sieve_test::twin_chain(wc.chain);
        ASSERT_FALSE(kinds.empty());
        const auto logits = sieve_test::make_rows(wc.shape, rows, wc.vocab, 31u + static_cast<uint32_t>(wc.vocab));
        RowParams base = active();
        base.top_p = wc.top_p;
        base.min_keep = wc.min_keep;
        auto params = row_params(base, rows, 9);
        if (wc.bias)
            for (int32_t r = 0; r < rows; ++r)
                params[static_cast<size_t>(r)].logit_bias =
                    bias_for(logits.data() + static_cast<size_t>(r) * wc.vocab, wc.vocab, 40u + static_cast<uint32_t>(r));
        sieve::Chain chain(gpu, sieve_test::chain_desc(wc.chain, rows, wc.vocab, base.temperature, 1));
        if (wc.bias) sieve_test::leave_inputs_to_the_passes(chain);
        for (int32_t r = 0; r < rows; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
        // Rows the wide passes take alone (wide.glsl: WIDE_DIRECT, a CPU
        // device; GpuChainWidePlan says when) take two passes each.
        uint32_t plan_dispatches = 0, plan_passes = 0;
        ASSERT_EQ(sieve_chain_plan_figures(chain.get(), rows, wc.vocab, &plan_dispatches, &plan_passes), SIEVE_OK);
        const uint32_t want_passes = plan_passes == 2 ? 2u : wc.passes;
        std::vector<Row> twin;
        for (int32_t r = 0; r < rows; ++r)
            twin.push_back({kinds, logits.data() + static_cast<size_t>(r) * wc.vocab, wc.vocab, params[static_cast<size_t>(r)]});
        Tally tally;
        int wide_tokens = 0;
        for (int step = 0; step < tokens; ++step) {
            std::vector<sieve_token> out(static_cast<size_t>(rows));
            const sieve_status status = sieve_sample(chain.get(), logits.data(), rows, wc.vocab, out.data());
            ASSERT_EQ(status, SIEVE_OK) << sieve_last_error();
            for (int32_t r = 0; r < rows; ++r) {
                SCOPED_TRACE("step " + std::to_string(step) + " row " + std::to_string(r));
                const sieve_token& got = out[static_cast<size_t>(r)];
                compare_token(got, twin[static_cast<size_t>(r)], static_cast<uint32_t>(step), &tally);
                wide_tokens += got.row_passes == want_passes ? 1 : 0;
            }
        }
        expect_rare(tally);
        const sieve_counters c = chain.counters();
        std::printf("%s over %s, vocab %d: %d of %d tokens in %u row passes, %llu CPU fallback rows\n", wc.chain,
                    sieve_test::shape_name(wc.shape), wc.vocab, wide_tokens, rows * tokens, want_passes,
                    static_cast<unsigned long long>(c.cpu_fallback_rows));
        EXPECT_EQ(c.cpu_fallback_rows, 0u) << "a top-p cut went to the CPU twin";
        EXPECT_EQ(wide_tokens, rows * tokens) << "every token should take " << want_passes << " row passes";
    }
}

// A GPU plan's wide passes split a row into fewer chunks as the batch grows
// (gpu_plan.hpp: split_for_batch); their sums are exact (wide.glsl), so a
// row draws the same token with the same p, to the bit, alone and among 64
// rows, over 64 chunks or two. Every token took the wide passes (a deferred
// cut inside the buffer draws in wide_histogram: two row passes; most go on
// to wide_gather: three), none the CPU twin.
TEST(GpuChainWideTopP, RowsSplitByTheBatchDrawTheSameTokens) {
    auto options = sieve_test::gpu_options();
    options.profile("gpu");
    sieve_test::ScopedEnv units("SIEVE_COMPUTE_UNITS", "32");
    sieve::Context gpu(options);
    const int32_t vocab = 151936, rows = 64, steps = 2;
    const auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 57);
    RowParams base = active();
    base.top_p = 0.9f;
    const auto params = row_params(base, rows, 21);
    for (const char* text : {"top_p;temperature", "temperature;top_p;temperature;temperature"}) {
        SCOPED_TRACE(text);
        auto run = [&](int32_t batch, int32_t first_row, uint32_t expect_workgroups) {
            sieve::Chain chain(gpu, sieve_test::chain_desc(text, batch, vocab, 1.0f, 1));
            EXPECT_EQ(sieve_test::stage_workgroups(chain, batch, vocab, "wide_gather"), expect_workgroups);
            for (int32_t r = 0; r < batch; ++r) set_row(chain, r, params[static_cast<size_t>(first_row + r)]);
            std::vector<sieve_token> out;
            for (int s = 0; s < steps; ++s) {
                auto t = chain.sample(logits.data() + static_cast<size_t>(first_row) * vocab, batch, vocab);
                out.insert(out.end(), t.begin(), t.end());
            }
            EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u);
            for (const sieve_token& t : out) EXPECT_GE(t.row_passes, 2u) << "a token outside the wide passes";
            return out;
        };
        const auto full = run(rows, 0, 2u * rows);
        const auto gathered = std::count_if(full.begin(), full.end(), [](const sieve_token& t) { return t.row_passes == 3; });
        EXPECT_GT(gathered, rows) << "most tokens should be drawn past the buffer (wide_gather)";
        for (int32_t r : {0, 5, 63}) {
            const auto alone = run(1, r, 64u);
            for (int s = 0; s < steps; ++s) {
                const sieve_token& a = alone[static_cast<size_t>(s)];
                const sieve_token& b = full[static_cast<size_t>(s) * rows + r];
                ASSERT_EQ(a.token, b.token) << "row " << r << " step " << s;
                ASSERT_EQ(std::memcmp(&a.p, &b.p, sizeof(float)), 0) << "row " << r << " step " << s;
            }
        }
    }
}

// One row of `logits` sampled 3 times through `samplers`: every token equals
// the twin's, and every one went to the CPU twin (counted), or none did.
void expect_twin_fallbacks_on(const char* samplers, const std::vector<float>& logits, const RowParams& base,
                              uint32_t params_seed, bool fall_back = true) {
    auto gpu = sieve_test::gpu_context();
    const int32_t vocab = static_cast<int32_t>(logits.size()), rows = 1;
    const auto kinds = sieve_test::twin_chain(samplers);
    ASSERT_FALSE(kinds.empty());
    const auto params = row_params(base, rows, params_seed);
    sieve::Chain chain(gpu, sieve_test::chain_desc(samplers, rows, vocab, base.temperature, 1));
    set_row(chain, 0, params[0]);
    Row twin{kinds, logits.data(), vocab, params[0]};
    Tally tally;
    for (uint32_t step = 0; step < 3; ++step) {
        std::vector<sieve_token> out(1);
        ASSERT_EQ(sieve_sample(chain.get(), logits.data(), rows, vocab, out.data()), SIEVE_OK) << sieve_last_error();
        compare_token(out[0], twin, step, &tally);
    }
    expect_rare(tally);
    EXPECT_EQ(chain.counters().cpu_fallback_rows, fall_back ? 3u : 0u);
    if (!fall_back) {
        // Three tokens by the wide passes: after the collect pass, or alone (WIDE_DIRECT).
        uint32_t dispatches = 0, passes = 0;
        ASSERT_EQ(sieve_chain_plan_figures(chain.get(), rows, vocab, &dispatches, &passes), SIEVE_OK);
        EXPECT_EQ(chain.counters().row_passes, passes == 2 ? 6u : 9u) << "three tokens by the wide passes";
    }
}

// The same over one row of Zipf logits (vocab 32000).
void expect_twin_fallbacks(const char* samplers, const RowParams& base, uint32_t logits_seed, uint32_t params_seed) {
    expect_twin_fallbacks_on(samplers, sieve_test::make_rows(Shape::Zipf, 1, 32000, logits_seed), base, params_seed);
}

// Top-p 0.5 over a row whose cut falls past the buffer, drawn by the wide
// passes every time: min_keep 2 keeps the row on the collect pass (the
// buffer); 0 lets a CPU device's wide passes take it alone.
void expect_wide_passes_at_half(const std::vector<float>& logits, uint32_t params_seed) {
    RowParams base = active();
    base.top_p = 0.5f;
    for (int32_t min_keep : {2, 0}) {
        SCOPED_TRACE("min_keep " + std::to_string(min_keep));
        base.min_keep = min_keep;
        expect_twin_fallbacks_on("top_p;temperature", logits, base, params_seed, false);
    }
}

// A top-p cut past the buffer that the wide passes do not finish (a second
// cut past the buffer: min-p with a floor far below) still equals the twin, by
// the CPU fallback, counted.
TEST(GpuChainWideTopP, TwoCutsPastTheBufferFallBack) {
    RowParams base = active();
    base.min_p = 1e-6f;
    expect_twin_fallbacks("top_p;min_p;temperature", base, 77, 3);
}

// One temperature sampler more than the wide passes apply (WIDE_MAX_DIVISIONS
// = 4, unrolled there): the row goes to the CPU twin, counted, with its result.
TEST(GpuChainWideTopP, FiveTemperaturesFallBack) {
    RowParams base = active();
    base.top_p = 0.9f;
    base.temperature = 0.9f;
    expect_twin_fallbacks("temperature;top_p;temperature;temperature;temperature;temperature", base, 78, 4);
}

// b* holds more members than the list (half the vocabulary): a tie group of
// 31900 logits under 100 larger ones, top-p 0.9 cutting inside it. The gather
// finds the overflow (wide_histogram counts no members) and the row goes to
// the CPU twin, counted, with its result.
TEST(GpuChainWideTopP, ListOverflowFallsBack) {
    std::vector<float> logits(32000, 0.0f);
    for (size_t i = 0; i < 100; ++i) logits[i * 311] = 5.0f - 0.01f * static_cast<float>(i);
    RowParams base = active();
    base.top_p = 0.9f;
    expect_twin_fallbacks_on("top_p;temperature", logits, base, 5);
}

// The cut in the first bin after the buffer (b* = 0, no bin before it for
// the draw): 64 logits at 10 fill the buffer, 1000 tied at 9.99 hold the cut
// (top-p 0.5), the rest at 0. Tokens and probabilities equal the twin's,
// every one by the wide passes (alone on a CPU device, the cut in the bin
// right below the maximum's: bins of 1/16 there, 10 and 9.99 apart).
TEST(GpuChainWideTopP, CutInTheFirstBin) {
    std::vector<float> logits(32000, 0.0f);
    for (size_t i = 0; i < 1064; ++i) logits[i * 29] = i < 64 ? 10.0f : 9.99f;
    expect_wide_passes_at_half(logits, 7);
}

// The cut inside a tie group of b* that other members of b* rank before:
// 64 logits at 10 fill the buffer, 200 at 9.992 and 1000 tied at 9.99 share
// the bin after it, top-p 0.5 falls about 370 into the tie group. The cut's
// selection finds the group by its levels, then its member by rank; the
// draw's total holds the 200 members before the group (about a third of the
// kept mass), summed by those levels, and the group's members up to the cut.
TEST(GpuChainWideTopP, CutInsideATieGroupBelowOtherMembersOfItsBin) {
    std::vector<float> logits(32000, 0.0f);
    for (size_t i = 0; i < 1264; ++i) logits[i * 23] = i < 64 ? 10.0f : i < 264 ? 9.992f : 9.99f;
    expect_wide_passes_at_half(logits, 11);
}

// A deferred top-p's cut inside the buffer that min_keep moves (wide_histogram:
// cut_in_buffer): one logit holds about 93% of the mass, four more 2% each,
// so top-p 0.9 keeps one entry and min_keep 3 keeps three, tied ones in id
// order. Every token is drawn by wide_histogram (two row passes), none by the
// CPU twin; tokens and probabilities equal the twin's (the leading token's p
// is about 0.96 with three kept, 1 with one).
TEST(GpuChainWideTopP, MinKeepMovesACutInsideTheBuffer) {
    auto gpu = sieve_test::gpu_context();
    const int32_t vocab = 32000, rows = 2, tokens = 24;
    std::vector<float> logits(static_cast<size_t>(rows) * vocab, -30.0f);
    for (int32_t r = 0; r < rows; ++r) {
        float* row = logits.data() + static_cast<size_t>(r) * vocab;
        row[100 + r] = 0.0f;
        for (int32_t i = 0; i < 4; ++i) row[5000 + 997 * i - r] = std::log(0.02f);
    }
    RowParams base = active();
    base.temperature = 1.0f;
    base.top_p = 0.9f;
    base.min_keep = 3;
    const auto params = row_params(base, rows, 17);
    const auto kinds = sieve_test::twin_chain("top_p;temperature");
    ASSERT_FALSE(kinds.empty());
    sieve::Chain chain(gpu, sieve_test::chain_desc("top_p;temperature", rows, vocab, base.temperature, 1));
    std::vector<Row> twin;
    for (int32_t r = 0; r < rows; ++r) {
        set_row(chain, r, params[static_cast<size_t>(r)]);
        twin.push_back({kinds, logits.data() + static_cast<size_t>(r) * vocab, vocab, params[static_cast<size_t>(r)]});
    }
    Tally tally;
    int kept_past_the_cut = 0;
    for (int step = 0; step < tokens; ++step) {
        std::vector<sieve_token> out(static_cast<size_t>(rows));
        ASSERT_EQ(sieve_sample(chain.get(), logits.data(), rows, vocab, out.data()), SIEVE_OK) << sieve_last_error();
        for (int32_t r = 0; r < rows; ++r) {
            SCOPED_TRACE("step " + std::to_string(step) + " row " + std::to_string(r));
            const sieve_token& got = out[static_cast<size_t>(r)];
            compare_token(got, twin[static_cast<size_t>(r)], static_cast<uint32_t>(step), &tally);
            EXPECT_EQ(got.row_passes, 2u) << "drawn by wide_histogram";
            kept_past_the_cut += got.token != 100 + r ? 1 : 0;
        }
    }
    expect_rare(tally);
    EXPECT_EQ(chain.counters().cpu_fallback_rows, 0u);
    std::printf("%d of %d tokens past top-p's own cut (kept by min_keep)\n", kept_past_the_cut, rows * tokens);
}

// Logits of a million (float steps of 1/16 there: large tie groups): the
// bins' grid holds every value exactly only at a coarser scale (wide.glsl:
// wide_scale). After the collect pass the bins take it (bins of a unit or
// more; a list overflow would go to the twin); the wide passes alone fix their
// scale before they see the row, so such a row goes to the CPU twin there
// (wide_grid_fits), counted. Tokens equal the twin's either way.
TEST(GpuChainWideTopP, HugeLogits) {
    auto logits = sieve_test::make_rows(Shape::Zipf, 1, 32000, 80);
    for (float& x : logits) x += 1.0e6f;
    auto gpu = sieve_test::gpu_context();
    const int32_t vocab = 32000;
    const auto kinds = sieve_test::twin_chain("top_p;temperature");
    for (int32_t min_keep : {2, 0}) {
        SCOPED_TRACE("min_keep " + std::to_string(min_keep));
        RowParams base = active();
        base.top_p = 0.9f;
        base.min_keep = min_keep;
        const auto params = row_params(base, 1, 8);
        sieve::Chain chain(gpu, sieve_test::chain_desc("top_p;temperature", 1, vocab, base.temperature, 1));
        set_row(chain, 0, params[0]);
        Row twin{kinds, logits.data(), vocab, params[0]};
        Tally tally;
        for (uint32_t step = 0; step < 3; ++step) {
            std::vector<sieve_token> out(1);
            ASSERT_EQ(sieve_sample(chain.get(), logits.data(), 1, vocab, out.data()), SIEVE_OK) << sieve_last_error();
            compare_token(out[0], twin, step, &tally);
        }
        expect_rare(tally);
        uint32_t dispatches = 0, passes = 0;
        ASSERT_EQ(sieve_chain_plan_figures(chain.get(), 1, vocab, &dispatches, &passes), SIEVE_OK);
        if (passes == 2) {
            EXPECT_EQ(chain.counters().cpu_fallback_rows, 3u) << "the wide passes alone cannot bin these values";
        }
    }
}

// Which calls the wide passes take alone (wide.glsl: WIDE_DIRECT): on a CPU
// device (its own paths: not under the constrained profile), rows whose only
// cut is top-p with min_keep <= 1 and no penalties, past the buffer; the plan
// then holds two dispatches and two row passes. Elsewhere the collect pass
// comes first (one row pass at least).
TEST(GpuChainWidePlan, DirectOnlyWhereTheWidePassesFinishAlone) {
    auto gpu = sieve_test::gpu_context();
    const sieve_device_info info = gpu.device_info();
    // (Any profile turns a CPU device's own paths off: constrained caps its
    // limits, gpu records a GPU's plan.)
    const bool cpu_paths = info.type == SIEVE_DEVICE_CPU && info.profile == SIEVE_PROFILE_DEVICE;
    struct Case {
        const char* chain;
        int32_t vocab;
        int32_t min_keep;
        float top_p;
        bool direct;
    };
    const int32_t big = static_cast<int32_t>(info.candidate_capacity) * 2;
    const Case cases[] = {
        {"top_p;temperature", 151936, 0, 0.95f, true},
        {"top_p;temperature", big, 1, 0.9f, true},
        {"temperature;top_p;temperature", big, 0, 0.9f, true},
        {"top_p;temperature", big, 2, 0.9f, false},                       // min_keep: the buffer keeps it
        {"top_p;temperature", big, 0, 1.0f, false},                       // top-p off: no cut, no collect pass
        {"top_p;temperature", static_cast<int32_t>(info.candidate_capacity), 0, 0.9f, false},  // fits the buffer
        {"top_k;top_p;min_p;temperature", 151936, 0, 0.95f, false},       // llama.cpp's default order
        {"top_p;min_p;temperature", big, 0, 0.9f, false},                 // a second cut
        {"top_p;greedy", big, 0, 0.9f, false},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(c.chain) + ", vocab " + std::to_string(c.vocab) + ", min_keep " +
                     std::to_string(c.min_keep) + ", top-p " + std::to_string(c.top_p));
        sieve::Chain chain(gpu, sieve_test::chain_desc(c.chain, 2, c.vocab, 0.8f, 1));
        for (int32_t r = 0; r < 2; ++r) {
            chain.set(SIEVE_PARAM_MIN_KEEP, c.min_keep, r);
            chain.set(SIEVE_PARAM_TOP_P, c.top_p, r);
        }
        uint32_t dispatches = 0, passes = 0;
        ASSERT_EQ(sieve_chain_plan_figures(chain.get(), 2, c.vocab, &dispatches, &passes), SIEVE_OK);
        const bool direct = c.direct && cpu_paths;
        // A call without a cut takes the plan of rows without truncation
        // (row_stats, mass_histogram, gather), the others one collect pass.
        EXPECT_EQ(passes, !(c.top_p < 1.0f) ? 3u : direct ? 2u : 1u);
        if (direct) {
            EXPECT_EQ(dispatches, 2u);
        }
    }
    // One row of the call not eligible: the whole call takes the collect pass.
    sieve::Chain mixed(gpu, sieve_test::chain_desc("top_p;temperature", 2, big, 0.8f, 1));
    mixed.set(SIEVE_PARAM_MIN_KEEP, 5, 1);
    uint32_t dispatches = 0, passes = 0;
    ASSERT_EQ(sieve_chain_plan_figures(mixed.get(), 2, big, &dispatches, &passes), SIEVE_OK);
    EXPECT_EQ(passes, 1u);
    mixed.set(SIEVE_PARAM_MIN_KEEP, 0, 1);
    ASSERT_EQ(sieve_chain_plan_figures(mixed.get(), 2, big, &dispatches, &passes), SIEVE_OK);
    EXPECT_EQ(passes, cpu_paths ? 2u : 1u);
}

// min_keep past half the candidate buffer (the collect pass keeps min_keep
// entries for a top-p cut, up to CAP / 2): the wide passes cannot tell ranks
// past the buffer, so the row goes to the CPU twin, counted.
TEST(GpuChainWideTopP, MinKeepPastHalfTheBufferFallsBack) {
    RowParams base = active();
    base.top_p = 0.9f;
    base.min_keep = static_cast<int32_t>(sieve_test::gpu_context().device_info().candidate_capacity);
    expect_twin_fallbacks("top_p;temperature", base, 79, 6);
}

// ---- 3. logit bias and token bitmask on the GPU ----------------------------------

// A bias on several tokens: the row's best token banned (-inf), one token
// listed twice (the entries add up), others pushed up and down.
std::vector<sieve::ref::LogitBias> bias_for(const float* row, int32_t vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    const int32_t best = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
    auto any = [&] { return static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab)); };
    const int32_t twice = any();
    std::vector<sieve::ref::LogitBias> b = {{best, -kInf}, {twice, 3.0f}, {any(), 8.0f}, {any(), -2.5f},
                                            {twice, 1.25f}, {any(), 0.5f}};
    return b;
}

// Random words (about half the tokens allowed), or only `few` allowed tokens.
std::vector<uint32_t> bitmask_for(int32_t vocab, uint32_t seed, int few = 0) {
    std::mt19937 rng(seed);
    const size_t words = (static_cast<size_t>(vocab) + 31) / 32;
    std::vector<uint32_t> m(words, 0u);
    if (few == 0) {
        for (auto& w : m) w = static_cast<uint32_t>(rng());
        m[0] |= 1u;  // never empty
    } else {
        for (int i = 0; i < few; ++i) {
            const uint32_t id = rng() % static_cast<uint32_t>(vocab);
            m[id / 32] |= 1u << (id % 32);
        }
    }
    return m;
}

struct InputsCase {
    std::string chain;
    int32_t vocab;
    // Left to the passes, which apply them as they read (as for the app's
    // device buffers), else written into the row by the upload.
    bool by_the_passes;
};

void PrintTo(const InputsCase& c, std::ostream* os) {
    *os << c.chain << " at " << c.vocab << (c.by_the_passes ? ", by the passes" : ", on upload");
}

class GpuInputsVsTwin : public testing::TestWithParam<InputsCase> {};

// Three rows, each with its own inputs: row 0 a bias and a random bitmask,
// row 1 a bitmask allowing five tokens, row 2 a bias only; over Zipf rows (and
// Gaussian ones below 100000 tokens). The GPU's distributions and tokens equal
// the twin's, whether the upload writes the inputs into the rows or the
// passes apply them as they read.
TEST_P(GpuInputsVsTwin, BiasAndBitmaskAgree) {
    const InputsCase& c = GetParam();
    auto gpu = sieve_test::gpu_context();
    const auto kinds = sieve_test::twin_chain(c.chain);
    ASSERT_FALSE(kinds.empty());
    const int32_t rows = 3;
    Tally tally;
    for (Shape shape : {Shape::Zipf, Shape::Gaussian}) {
        if (c.vocab > 100000 && shape == Shape::Gaussian) continue;  // keep the suite quick
        SCOPED_TRACE(sieve_test::shape_name(shape));
        const uint32_t salt = static_cast<uint32_t>(c.vocab) + static_cast<uint32_t>(shape);
        const auto logits = sieve_test::make_rows(shape, rows, c.vocab, salt);
        auto params = row_params(active(), rows, salt);
        const float* row0 = logits.data();
        const float* row2 = logits.data() + 2 * static_cast<size_t>(c.vocab);
        params[0].logit_bias = bias_for(row0, c.vocab, salt);
        params[0].token_bitmask = bitmask_for(c.vocab, salt);
        params[1].token_bitmask = bitmask_for(c.vocab, salt + 1, 5);
        params[2].logit_bias = bias_for(row2, c.vocab, salt + 2);
        sieve::Chain chain(gpu, sieve_test::chain_desc(c.chain, rows, c.vocab, 0.8f, 1));
        if (c.by_the_passes) sieve_test::leave_inputs_to_the_passes(chain);
        for (int32_t r = 0; r < rows; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
        run_and_compare(chain, kinds, logits, rows, c.vocab, params, 3, &tally);
        // Other inputs on the same chain (row 0 a bias alone, row 1 another
        // bitmask, row 2's kept): the passes read them, not what the calls
        // before wrote (a row's block is written when its inputs change).
        params[0].logit_bias = bias_for(row2, c.vocab, salt + 3);
        params[0].token_bitmask.clear();
        params[1].token_bitmask = bitmask_for(c.vocab, salt + 4, 5);
        for (int32_t r = 0; r < rows; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
        run_and_compare(chain, kinds, logits, rows, c.vocab, params, 2, &tally);
    }
    expect_rare(tally);
}

std::vector<InputsCase> inputs_cases() {
    std::vector<InputsCase> out;
    for (const char* chain : {"temperature;dist", "greedy", "top_k;temperature", kDefaultOrder})
        for (int32_t vocab : {1000, 151936})
            for (bool by_the_passes : {false, true}) out.push_back({chain, vocab, by_the_passes});
    return out;
}

INSTANTIATE_TEST_SUITE_P(Inputs, GpuInputsVsTwin, testing::ValuesIn(inputs_cases()),
                         [](const testing::TestParamInfo<InputsCase>& info) {
                             std::string name = info.param.chain == kDefaultOrder ? "default_order" : info.param.chain;
                             for (auto& ch : name)
                                 if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             return name + "_v" + std::to_string(info.param.vocab) +
                                    (info.param.by_the_passes ? "_by_the_passes" : "_on_upload");
                         });

// The upload writes a row's bias and bitmask by the passes' rules (row_logit):
// a NaN or +Inf the bitmask disallows still fails the row (the model's
// logits are checked first); a bias overflowing a disallowed token is no
// error; a token's entries add up in list order (an overflow on the way fails
// the row, the same entries in the other order do not); a subnormal logit
// reads as zero before its bias adds to it (its token ties the row's other
// logits instead of passing them). Statuses and tokens equal the twin's,
// written on upload and applied by the passes, on a small row and a big one.
TEST(GpuInputsRules, TheUploadWritesThemByThePassesRules) {
    auto gpu = sieve_test::gpu_context();
    constexpr float kHuge = 3e38f;
    const float kTiny = 2e-38f;  // normal (FLT_MIN is 1.18e-38)
    const int32_t rows = 6, t = 9;
    const sieve_status want[rows] = {SIEVE_ERROR_NON_FINITE_LOGIT, SIEVE_ERROR_NON_FINITE_LOGIT, SIEVE_OK,
                                     SIEVE_ERROR_NON_FINITE_LOGIT, SIEVE_OK, SIEVE_OK};
    for (const char* text : {"greedy", "top_k;temperature"})
        for (const int32_t vocab : {40, 5000})
            for (const bool by_the_passes : {false, true}) {
                SCOPED_TRACE(std::string(text) + " at " + std::to_string(vocab) +
                             (by_the_passes ? ", by the passes" : ", on upload"));
                const auto kinds = sieve_test::twin_chain(text);
                ASSERT_FALSE(kinds.empty());
                auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 3);
                auto at = [&](int32_t r, int32_t i) -> float& { return logits[static_cast<size_t>(r * vocab + i)]; };
                std::vector<uint32_t> without_t((static_cast<size_t>(vocab) + 31) / 32, 0xFFFFFFFFu);
                without_t[0] &= ~(1u << t);
                std::vector<RowParams> params(rows, active());
                for (int32_t r = 0; r < rows; ++r) {
                    params[static_cast<size_t>(r)].temperature = 1.0f;
                    params[static_cast<size_t>(r)].seed = 50u + static_cast<uint32_t>(r);
                }
                at(0, t) = std::numeric_limits<float>::quiet_NaN();
                at(1, t) = kInf;
                for (int32_t r = 0; r < 3; ++r) params[static_cast<size_t>(r)].token_bitmask = without_t;
                at(2, t) = kHuge;
                params[2].logit_bias = {{t, kHuge}};
                at(3, t) = -kHuge;  // to -inf on the way: NaN (a mask would read -inf)
                params[3].logit_bias = {{t, -kHuge}, {t, kHuge}};
                at(4, t) = -kHuge;
                params[4].logit_bias = {{t, kHuge}, {t, -kHuge}};
                for (int32_t i = 0; i < vocab; ++i) at(5, i) = kTiny;
                at(5, t) = 1e-40f;
                params[5].logit_bias = {{t, kTiny}};
                sieve::Chain chain(gpu, sieve_test::chain_desc(text, rows, vocab, 1.0f, 1));
                if (by_the_passes) sieve_test::leave_inputs_to_the_passes(chain);
                for (int32_t r = 0; r < rows; ++r) set_row(chain, r, params[static_cast<size_t>(r)]);
                std::vector<sieve_token> out(static_cast<size_t>(rows));
                const sieve_status status = sieve_sample(chain.get(), logits.data(), rows, vocab, out.data());
                EXPECT_EQ(status, SIEVE_ERROR_NON_FINITE_LOGIT) << sieve_last_error();
                Tally tally;
                for (int32_t r = 0; r < rows; ++r) {
                    SCOPED_TRACE("row " + std::to_string(r));
                    const sieve_token& got = out[static_cast<size_t>(r)];
                    EXPECT_EQ(got.status, want[r]);
                    compare_token(got, Row{kinds, &at(r, 0), vocab, params[static_cast<size_t>(r)]}, 0, &tally);
                }
                if (std::string(text) == "greedy") {
                    EXPECT_EQ(out[5].token, 0) << "the subnormal logit read as zero ties the others";
                }
                expect_rare(tally);
            }
}

// ---- 4. dispatch figures of llama.cpp's default order ----------------------------

// llama.cpp's default chain (without penalties and DRY) at its default
// parameters over 151936 logits: one collect pass reads the row once, and the
// whole token costs two dispatches on a CPU device's plan (the chunks, the
// tail) and one on a GPU's (the tail in the chunks' last workgroup).
TEST(GpuChainFigures, DefaultOrderIsOneRowPass) {
    auto gpu = sieve_test::gpu_context();
    const sieve_device_info info = gpu.device_info();
    const bool cpu_plan = info.type == SIEVE_DEVICE_CPU && !(info.profile & SIEVE_PROFILE_GPU);
    const int32_t vocab = 151936;
    const auto logits = sieve_test::make_rows(Shape::Zipf, 1, vocab, 17);
    sieve::Chain chain(gpu, sieve_test::chain_desc(kDefaultOrder, 1, vocab, 0.8f, 3));
    const sieve_counters before = chain.counters();
    const auto token = chain.sample(logits.data(), 1, vocab);
    ASSERT_EQ(token[0].status, SIEVE_OK) << sieve_last_error();
    const sieve_counters after = chain.counters();
    const auto [plan_dispatches, plan_row_passes] = chain.plan_figures(1, vocab);
    const uint64_t dispatches = after.dispatches - before.dispatches;
    std::cout << "default order, vocab " << vocab << ": " << dispatches << " dispatches, " << token[0].row_passes
              << " row passes for the token; plan: " << plan_dispatches << " dispatches, " << plan_row_passes
              << " row passes; " << after.cpu_fallback_rows << " CPU fallback rows\n";
    testing::Test::RecordProperty("dispatches", static_cast<int>(dispatches));
    testing::Test::RecordProperty("plan_dispatches", static_cast<int>(plan_dispatches));
    testing::Test::RecordProperty("plan_row_passes", static_cast<int>(plan_row_passes));
    EXPECT_EQ(plan_dispatches, cpu_plan ? 2u : 1u);
    EXPECT_EQ(dispatches, plan_dispatches);
    EXPECT_EQ(plan_row_passes, 1u);
    EXPECT_EQ(token[0].row_passes, 1u);
    EXPECT_EQ(after.cpu_fallback_rows, 0u);
    EXPECT_EQ(after.submits - before.submits, 1u);
}

} // namespace
