// The agreement rules between the GPU and the CPU twin (the twin is the
// specification), shared by the GPU test files:
//  - distributions: the same status; the same survivor ids; every probability
//    within 1e-4 relative or 1e-7 absolute; total variation <= 1e-5. Survivor
//    sets may differ only where a keep/drop decision lies within 1e-6 of its
//    threshold: the twin run with that threshold (top-p, min-p, typical, XTC)
//    moved by 1e-6 must then give the GPU's survivors, and the GPU is held to
//    that run (counted and printed); typical's ranking likewise where
//    members' scores lie within float rounding of each other (the twin with
//    its scores compared on a grid of 8 float steps of max(1, entropy), or
//    on that grid shifted by half a step: scores within 4 steps share a cell
//    of one of them);
//  - dynamic temperature: the GPU computes it (entropy, power) in float and
//    lands within a few float steps of the twin's double, rounded; where
//    logits / temperature are large the float division turns one step into a
//    visible change. Where the distributions disagree, a twin run with its
//    dynamic temperature moved by at most 16 float steps (2e-6 relative) that
//    agrees is accepted, and the GPU is held to it (counted and printed);
//  - tokens: the same status and step; the same token unless the draw explains
//    the GPU's (twin_boundary.hpp): the uniform lies within 1e-6 of the GPU
//    token's CDF interval in the twin's distribution (counted), or of the
//    interval it holds when candidates within 2e-4 relative of its probability,
//    which the distribution rule cannot tell apart, are ordered either way
//    (counted); the drawn token's p within 1e-4 relative.
#pragma once

#include "reference/reference.hpp"
#include "twin_boundary.hpp"

#include <sieve/sieve.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace sieve_test::twin {

using sieve::ref::RowParams;
using sieve::ref::SamplerKind;
using sieve::ref::Weighted;

// Tolerances of the agreement rules above.
constexpr double kProbRel = 1e-4, kProbAbs = 1e-7, kMaxTvd = 1e-5;  // kNearBoundary, kTieRel: twin_boundary.hpp
// Mirostat v1's k, which the GPU computes in float (RowParams::mirostat_k_rel).
constexpr double kMirostatKRel = 1e-4;
constexpr int32_t kDynTempUlps = 16;
// Typical's scores |-log p - H|, which the GPU computes in float (a Vulkan log
// is within 3 float steps; p and H are rounded too): members this close rank
// either way (RowParams::typical_grid_ulps).
constexpr int32_t kTypicalGridUlps = 8;
static_assert(kTieRel == 2 * kProbRel, "near-ties are what the distribution rule cannot order");

// ---- thresholds: the twin with a cut's threshold moved by 1e-6 -------------------

// The GPU computes probabilities and sums in float, the twin in double, so a
// keep/drop decision may differ where a value lies within rounding of its
// threshold (rows of tied logits put sums exactly on p: 36 x 1/40 = 0.9).
// Such a difference is accepted only when the twin, run with that sampler's
// threshold moved by 1e-6 (relative), gives the GPU's survivors; the GPU is
// then held to that run of the twin with the usual tolerances.
//
// top-p and typical compare a cumulative probability with p, XTC a
// probability with its threshold: those parameters move by a factor 1 +- 1e-6.
// min-p compares a logit with max + logf(p): p moves by exp(+-1e-6 * scale),
// scale bounding |threshold| (the row's largest |logit| over the smallest
// temperature, plus |log p|). Mirostat v1's k (a top-k it computes from the
// candidates, in float on the GPU as in llama.cpp, in double in the twin)
// moves by a factor 1 +- kMirostatKRel (reasoned: a float sum over 99 pairs
// holds s_hat to about 6e-6 relative, which moves k by log k times that,
// 4e-5 at k ~ 500). Typical's ranking is tried on a grid of
// kTypicalGridUlps float steps (-1) and on that grid shifted by half a step
// (+1): scores within half a step of each other share a cell of one of them
// and rank canonically there.
inline std::vector<RowParams> nudged_params(const std::vector<SamplerKind>& kinds, const float* logits, int32_t vocab,
                                     const RowParams& base) {
    const auto has = [&](SamplerKind k) { return std::find(kinds.begin(), kinds.end(), k) != kinds.end(); };
    float max_abs = 1.0f;
    for (int32_t i = 0; i < vocab; ++i)
        if (std::isfinite(logits[i])) max_abs = std::max(max_abs, std::fabs(logits[i]));
    const double t = base.temperature > 0 ? std::min(1.0, static_cast<double>(base.temperature)) : 1.0;
    const double min_p_scale = max_abs / t + std::fabs(std::log(std::max(base.min_p, 1e-30f)));

    // One entry per threshold the chain holds: how to move it down (-1) or up (+1).
    std::vector<std::function<void(RowParams&, int)>> moves;
    if (has(SamplerKind::TopP)) moves.push_back([](RowParams& p, int d) { p.top_p *= 1.0f + d * 1e-6f; });
    if (has(SamplerKind::TypicalP)) {
        moves.push_back([](RowParams& p, int d) { p.typical_p *= 1.0f + d * 1e-6f; });
        moves.push_back([](RowParams& p, int d) {
            p.typical_grid_ulps = kTypicalGridUlps;
            p.typical_grid_shifted = d > 0;
        });
    }
    if (has(SamplerKind::Xtc)) moves.push_back([](RowParams& p, int d) { p.xtc_threshold *= 1.0f + d * 1e-6f; });
    if (has(SamplerKind::Mirostat)) moves.push_back([](RowParams& p, int d) { p.mirostat_k_rel = d * kMirostatKRel; });
    if (has(SamplerKind::MinP))
        moves.push_back([=](RowParams& p, int d) {
            p.min_p = static_cast<float>(p.min_p * std::exp(d * kNearBoundary * min_p_scale));
        });

    // Every combination but the identity, single moves first.
    std::vector<std::pair<int, RowParams>> out;
    int combos = 1;
    for (size_t i = 0; i < moves.size(); ++i) combos *= 3;
    for (int c = 1; c < combos; ++c) {
        RowParams p = base;
        int moved = 0;
        for (size_t i = 0, code = static_cast<size_t>(c); i < moves.size(); ++i, code /= 3) {
            if (code % 3 == 0) continue;      // this threshold stays
            moves[i](p, code % 3 == 1 ? -1 : +1);
            ++moved;
        }
        out.push_back({moved, p});
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<RowParams> params;
    for (auto& [moved, p] : out) params.push_back(p);
    return params;
}

// draw_distance: twin_boundary.hpp.

// ---- comparing one row ---------------------------------------------------------

// One row as both sides see it.
struct Row {
    const std::vector<SamplerKind>& kinds;
    const float* logits;
    int32_t vocab;
    RowParams params;
    const sieve::ref::SlotState* state = nullptr;  // the row's slot (history, learnt state); NULL = fresh
};

// Differences the agreement rules allow. Tokens at a CDF boundary must be rare
// (at most one per case); cuts at a threshold and draws over near-ties are
// reported, not limited: rows of tied logits put sums exactly on a threshold,
// and probabilities exactly equal, by construction.
struct Tally {
    int token_near_cdf_boundary = 0;
    int token_near_tie_order = 0;
    int cut_near_threshold = 0;
    int dyn_temp_within_ulps = 0;
};

struct GpuDistribution {
    sieve_status status;
    std::string message;
    std::map<int32_t, float> p;  // by id
};

// sieve_chain_distribution through the C API (the C++ wrapper throws on a row
// failure; here the status is compared).
inline GpuDistribution gpu_distribution(sieve::Chain& chain, const std::vector<float>& logits, int32_t rows, int32_t vocab,
                                 int32_t row) {
    std::vector<int32_t> ids(static_cast<size_t>(vocab));
    std::vector<float> probs(static_cast<size_t>(vocab));
    int32_t count = 0;
    GpuDistribution out;
    out.status = sieve_chain_distribution(chain.get(), logits.data(), rows, vocab, row, ids.data(), probs.data(),
                                          vocab, &count);
    if (out.status != SIEVE_OK) {
        out.message = sieve_last_error();
        return out;
    }
    EXPECT_LE(count, vocab);
    for (int32_t i = 0; i < std::min(count, vocab); ++i) {
        EXPECT_EQ(out.p.count(ids[static_cast<size_t>(i)]), 0u) << "id " << ids[static_cast<size_t>(i)] << " twice";
        out.p[ids[static_cast<size_t>(i)]] = probs[static_cast<size_t>(i)];
    }
    return out;
}

inline std::map<int32_t, double> twin_distribution(const Row& row, uint32_t step, sieve_status* status, std::string* message) {
    std::vector<Weighted> want;
    *status = sieve::ref::row_distribution(row.kinds, row.logits, row.vocab, row.params, &want, message, step, 0,
                                           row.state);
    std::map<int32_t, double> out;
    for (const auto& w : want) out[w.id] = w.p;
    return out;
}

template <class A, class B>
bool same_ids(const std::map<int32_t, A>& a, const std::map<int32_t, B>& b) {
    if (a.size() != b.size()) return false;
    // Two declarations: one `auto` may not deduce two types (clang refuses it).
    auto i = a.begin();
    auto j = b.begin();
    for (; i != a.end(); ++i, ++j)
        if (i->first != j->first) return false;
    return true;
}

inline std::string difference_text(const std::map<int32_t, float>& gpu, const std::map<int32_t, double>& twin) {
    std::ostringstream s;
    auto list = [&](const auto& a, const auto& b) {
        int n = 0;
        for (const auto& [id, p] : a)
            if (!b.count(id) && n++ < 12) s << " " << id;
        if (n > 12) s << " ... (" << n << ")";
    };
    s << "only on the GPU {";
    list(gpu, twin);
    s << " }, only in the twin {";
    list(twin, gpu);
    s << " } (" << gpu.size() << " vs " << twin.size() << " survivors)";
    return s.str();
}

// Whether the twin, run with one or more thresholds moved by 1e-6
// (nudged_params), keeps exactly the survivors `ids`; if so row->params
// becomes that run's parameters.
template <class P>
bool explained_by_threshold(const std::map<int32_t, P>& ids, Row* row, uint32_t step) {
    Row moved = *row;
    for (const RowParams& p : nudged_params(row->kinds, row->logits, row->vocab, row->params)) {
        moved.params = p;
        sieve_status status;
        std::string message;
        if (same_ids(ids, twin_distribution(moved, step, &status, &message)) && status == SIEVE_OK) {
            row->params = p;
            return true;
        }
    }
    return false;
}

// Whether the GPU's distribution agrees with `want` (the same survivors, each
// p within tolerance, total variation within kMaxTvd); `report` adds gtest
// failures for what does not.
template <class Report>
bool agrees(const GpuDistribution& got, const std::map<int32_t, double>& want, Report report) {
    if (!same_ids(got.p, want)) return false;
    bool ok = true;
    double tvd = 0;
    for (const auto& [id, p] : want) {
        const double g = got.p.at(id);
        if (!(std::fabs(g - p) <= std::max(kProbRel * p, kProbAbs))) ok = false, report(id, g, p);
        tvd += std::fabs(g - p);
    }
    if (!(tvd / 2 <= kMaxTvd)) ok = false, report(-1, tvd / 2, kMaxTvd);
    return ok;
}

// Whether the twin, its dynamic temperature moved by 1..kDynTempUlps float
// steps either way, agrees with the GPU's distribution; if so row->params
// becomes that run's parameters.
inline bool explained_by_dynamic_temperature(const GpuDistribution& got, Row* row, uint32_t step) {
    if (!(row->params.dynatemp_range > 0.0f) ||
        std::find(row->kinds.begin(), row->kinds.end(), SamplerKind::Temperature) == row->kinds.end())
        return false;
    Row moved = *row;
    for (int32_t k = 1; k <= kDynTempUlps; ++k)
        for (int32_t ulps : {k, -k}) {
            moved.params.dynatemp_ulps = row->params.dynatemp_ulps + ulps;
            sieve_status status;
            std::string message;
            const auto want = twin_distribution(moved, step, &status, &message);
            if (status == SIEVE_OK && agrees(got, want, [](int32_t, double, double) {})) {
                row->params = moved.params;
                return true;
            }
        }
    return false;
}

// The GPU's distribution of `row` at `step` against the twin's. When the
// survivors differ only by a cut at a threshold, or the distributions only by
// a dynamic temperature a few float steps away, row->params becomes the twin's
// parameters that reproduce the GPU's (the token is compared with that run
// too), counted in *tally.
inline void compare_distribution(const GpuDistribution& got, Row* row, uint32_t step, Tally* tally) {
    sieve_status status;
    std::string message;
    auto want = twin_distribution(*row, step, &status, &message);
    ASSERT_EQ(got.status, status) << "GPU: " << got.message << " / twin: " << message;
    if (status != SIEVE_OK) return;
    if (!same_ids(got.p, want)) {
        if (explained_by_threshold(got.p, row, step)) {
            ++tally->cut_near_threshold;
            want = twin_distribution(*row, step, &status, &message);
        } else {
            ASSERT_TRUE(explained_by_dynamic_temperature(got, row, step))
                << "survivors differ: " << difference_text(got.p, want)
                << ", and no top-p/min-p/typical/XTC threshold moved by 1e-6 (mirostat's k by 1e-4; typical's "
                   "ranking on a grid of "
                << kTypicalGridUlps << " float steps) explains it, nor "
                   "a dynamic temperature moved by "
                << kDynTempUlps << " float steps";
            ++tally->dyn_temp_within_ulps;
            return;
        }
    }
    if (agrees(got, want, [](int32_t, double, double) {})) return;
    if (explained_by_dynamic_temperature(got, row, step)) {
        ++tally->dyn_temp_within_ulps;
        return;
    }
    agrees(got, want, [](int32_t id, double g, double p) {
        if (id < 0)
            ADD_FAILURE() << "total variation distance " << g << " > " << p;
        else
            ADD_FAILURE() << "id " << id << ": GPU p " << g << ", twin p " << p;
    });
}

// The GPU's token of `row` at `step` against the twin's.
inline void compare_token(const sieve_token& got, const Row& row, uint32_t step, Tally* tally) {
    sieve::ref::SlotState learnt = row.state ? *row.state : sieve::ref::SlotState();
    const auto want = sieve::ref::sample_row(row.kinds, row.logits, row.vocab, row.params, step, 0, &learnt);
    ASSERT_EQ(got.status, want.status) << want.message;
    EXPECT_EQ(got.step, step);
    EXPECT_EQ(got.seed, row.params.seed);
    if (want.status != SIEVE_OK) return;
    if (got.token != want.token) {
        const double boundary =
            draw_distance(row.kinds, row.logits, row.vocab, row.params, step, row.state, got.token);
        if (boundary < kNearBoundary) {
            ++tally->token_near_cdf_boundary;
            return;
        }
        const double tie =
            draw_distance(row.kinds, row.logits, row.vocab, row.params, step, row.state, got.token, kTieRel);
        EXPECT_LT(tie, kNearBoundary) << "GPU token " << got.token << " (p " << got.p << "), twin token " << want.token
                                      << " (p " << want.p << "); the uniform is " << boundary
                                      << " from the GPU token's CDF interval, " << tie
                                      << " from it with near-ties ordered either way";
        if (tie < kNearBoundary) ++tally->token_near_tie_order;
        return;
    }
    EXPECT_LE(std::fabs(got.p - want.p), kProbRel * want.p) << "p of token " << got.token;
}

// A one-row chain's token of `row` at seed `seed` (set now: its step starts
// again at 0) against the twin's at the chain's temperature.
inline void sample_against_twin(sieve::Chain& chain, const std::vector<SamplerKind>& kinds,
                                const std::vector<float>& row, float temperature, uint32_t seed, Tally* tally) {
    chain.set(SIEVE_PARAM_SEED, seed, 0);
    const int32_t vocab = static_cast<int32_t>(row.size());
    const std::vector<sieve_token> got = chain.sample(row.data(), 1, vocab);
    RowParams params;
    params.temperature = temperature;
    params.seed = seed;
    compare_token(got[0], Row{kinds, row.data(), vocab, params}, 0, tally);
}

} // namespace sieve_test::twin
