// Whether a draw explains a token the GPU drew and the twin did not
// (docs/contracts.md, "Determinism"). Two ways the same uniform can pick
// different tokens while both sides follow the contract:
//  - the uniform lies within rounding of a CDF boundary of the twin's
//    distribution (the GPU's sums are float);
//  - candidates whose probabilities are equal in the twin, or within the
//    distribution rule's tolerance of each other, are ordered differently: the
//    GPU's exp is a few ULP (exp(-1e-11) may be 1 - 2^-24), so a tie in the
//    twin can be a near-tie on the device and its canonical order (descending p,
//    ties by id) then puts another member of the tie first.
// Without gtest, so the soak (tools/soak) shares it with the tests (twin_compare.hpp).
#pragma once

#include "reference/reference.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sieve_test::twin {

// A uniform this close to a token's CDF interval explains the token.
constexpr double kNearBoundary = 1e-6;
// Candidates whose probabilities lie within this of each other (relative) may
// be drawn in either order: the distribution rule lets each side's p be 1e-4
// from the twin's (twin_compare.hpp, kProbRel).
constexpr double kTieRel = 2e-4;

// Distance of the draw's uniform at `step` from the CDF interval that `token`
// holds in the twin's distribution (0 inside it; 1 where the twin does not keep
// the token or fails). With tie_rel > 0 the interval is the widest `token` can
// hold when every candidate whose probability is within tie_rel (relative) of
// the token's is ordered either way: it starts after the candidates clearly
// above and spans the whole near-tie group.
inline double draw_distance(const std::vector<sieve::ref::SamplerKind>& kinds, const float* logits, int32_t vocab,
                            const sieve::ref::RowParams& params, uint32_t step, const sieve::ref::SlotState* state,
                            int32_t token, double tie_rel = 0.0) {
    std::vector<sieve::ref::Weighted> dist;
    std::string message;
    if (sieve::ref::row_distribution(kinds, logits, vocab, params, &dist, &message, step, 0, state) != SIEVE_OK)
        return 1.0;
    double total = 0;
    for (const auto& w : dist) total += w.p;
    const auto at = std::find_if(dist.begin(), dist.end(), [&](const sieve::ref::Weighted& w) { return w.id == token; });
    if (at == dist.end() || total <= 0) return 1.0;
    const double p = at->p;
    double lo = 0, width = 0;
    if (tie_rel <= 0) {
        for (auto w = dist.begin(); w != at; ++w) lo += w->p;
        width = p;
    } else {
        for (const auto& w : dist) {
            const double near = tie_rel * std::max(w.p, p);
            if (w.p > p + near) lo += w.p;
            else if (w.p >= p - near) width += w.p;
        }
    }
    lo /= total;
    const double hi = lo + width / total;
    const double u = sieve::ref::uniform_u32(params.seed, step, 0) / 4294967296.0;
    if (u >= lo && u < hi) return 0.0;
    return u < lo ? lo - u : u - hi;
}

// Whether the draw explains `token` by a CDF boundary or by the order of near-ties.
inline bool draw_explains(const std::vector<sieve::ref::SamplerKind>& kinds, const float* logits, int32_t vocab,
                          const sieve::ref::RowParams& params, uint32_t step, const sieve::ref::SlotState* state,
                          int32_t token) {
    return draw_distance(kinds, logits, vocab, params, step, state, token) < kNearBoundary ||
           draw_distance(kinds, logits, vocab, params, step, state, token, kTieRel) < kNearBoundary;
}

} // namespace sieve_test::twin
