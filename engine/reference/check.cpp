// Validation of a row of logits before any sampler runs. llama.cpp does not check
// its logits (a NaN there makes its softmax NaN and its draw arbitrary); Sieve
// rejects such rows with a specific status instead of inventing a token.
#include "reference/detail.hpp"

#include <cmath>
#include <cstdio>

namespace sieve::ref {

namespace detail {

std::string format_float(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.9g", value);
    return buffer;
}

} // namespace detail

sieve_status check_logits(const float* logits, int32_t vocab, std::string* message) {
    if (message) message->clear();
    if (!logits || vocab <= 0) {
        if (message) *message = !logits ? "logits is NULL" : "vocab " + std::to_string(vocab) + " is not positive";
        return SIEVE_ERROR_INVALID_ARGUMENT;
    }
    bool any_unmasked = false;
    for (int32_t i = 0; i < vocab; ++i) {
        const float v = logits[i];
        if (std::isnan(v) || v == INFINITY) {
            if (message) *message = "logit " + std::to_string(i) + " is " + detail::format_float(v) + " (non-finite)";
            return SIEVE_ERROR_NON_FINITE_LOGIT;
        }
        if (v != -INFINITY) any_unmasked = true;
    }
    if (!any_unmasked) {
        if (message) *message = "every logit of the row is -inf (all " + std::to_string(vocab) + " masked)";
        return SIEVE_ERROR_ALL_MASKED;
    }
    return SIEVE_OK;
}

} // namespace sieve::ref
