// Distance of a draw's uniform from the nearest CDF boundary of the twin's
// distribution at `step`: where it is within rounding, the GPU and the twin
// may draw different tokens (docs/contracts.md, "Determinism"). Without gtest, so the
// soak (tools/soak) shares it with the tests (twin_compare.hpp).
#pragma once

#include "reference/reference.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sieve_test::twin {

inline double boundary_distance(const std::vector<sieve::ref::SamplerKind>& kinds, const float* logits, int32_t vocab,
                                const sieve::ref::RowParams& params, uint32_t step,
                                const sieve::ref::SlotState* state = nullptr) {
    std::vector<sieve::ref::Weighted> dist;
    std::string message;
    if (sieve::ref::row_distribution(kinds, logits, vocab, params, &dist, &message, step, 0, state) != SIEVE_OK)
        return 1.0;
    double total = 0;
    for (const auto& w : dist) total += w.p;
    const double u = sieve::ref::uniform_u32(params.seed, step, 0) / 4294967296.0;
    double cum = 0, best = 1.0;
    for (const auto& w : dist) {
        cum += w.p / total;
        best = std::min(best, std::fabs(cum - u));
    }
    return best;
}

} // namespace sieve_test::twin
