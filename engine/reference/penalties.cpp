// Repetition, frequency and presence penalties. llama.cpp:
// llama_sampler_penalties_apply (src/llama-sampler.cpp, formerly
// src/llama-sampling.cpp), with the counts llama_sampler_penalties_accept keeps:
//     accept(token): token_count[token]++ over a ring buffer of the last
//                    penalty_last_n accepted tokens (the oldest leaves the count)
//     apply:
//     if ((penalty_last_n == 0) ||
//         (penalty_repeat == 1.0f && penalty_freq == 0.0f && penalty_present == 0.0f)) return;
//     for each candidate whose id has count > 0 in the window:
//         if (logit <= 0) logit *= penalty_repeat; else logit /= penalty_repeat;
//         logit -= float(count) * penalty_freq + float(count > 0) * penalty_present;
//     cur_p->sorted = false;
// The twin computes the counts from the slot's history instead of a ring buffer:
// the window is the last penalty_last_n tokens of the history (all of it when the
// history is shorter). penalty_last_n == -1 = the whole history (llama.cpp's
// common layer maps -1 to the context size; llama_sampler_init_penalties itself
// clamps negative values to 0, i.e. off, which the twin does for values below -1
// and the checks refuse). Float arithmetic exactly as llama.cpp's (the project
// builds with -std=c++17, so no contraction into FMAs), except that a masked
// member (-inf) is left as it is (see below). llama.cpp's own vectors
// (tests/test-sampling.cpp, test_penalties): repeat 50 with history {0} over
// {0.2 x 5} gives {0, 0.25, 0.25, 0.25, 0.25}.
#include "reference/detail.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace sieve::ref {

namespace detail {

size_t history_window(size_t history_size, int32_t last_n) {
    if (last_n == -1) return history_size;
    if (last_n <= 0) return 0;
    return std::min(history_size, static_cast<size_t>(last_n));
}

sieve_status apply_penalties_checked(CandidateArray& cur, const std::vector<int32_t>& history,
                                     const RowParams& params, std::string* message) {
    const float repeat = params.penalty_repeat;
    const float freq = params.penalty_freq;
    const float present = params.penalty_present;
    if (params.penalty_last_n == 0 || (repeat == 1.0f && freq == 0.0f && present == 0.0f)) return SIEVE_OK;

    const size_t window = history_window(history.size(), params.penalty_last_n);
    if (window == 0) return SIEVE_OK; // no counts: llama.cpp's loop finds no token, only `sorted` changes
    std::unordered_map<int32_t, int> count;
    count.reserve(window);
    for (size_t i = history.size() - window; i < history.size(); ++i) ++count[history[i]];

    sieve_status status = SIEVE_OK;
    for (TokenData& td : cur.data) {
        const auto it = count.find(td.id);
        if (it == count.end()) continue;
        const int n = it->second; // > 0
        // A masked member (-inf) stays masked. llama.cpp's arithmetic keeps it
        // at -inf too, except where the subtracted term is -inf or NaN (a huge
        // negative freq/present): -inf - -inf is NaN, which would make the
        // softmax NaN. Sieve leaves it masked there as well.
        if (td.logit == -INFINITY) continue;
        const float before = td.logit;
        if (td.logit <= 0) {
            td.logit *= repeat;
        } else {
            td.logit /= repeat;
        }
        td.logit -= static_cast<float>(n) * freq + static_cast<float>(n > 0) * present;
        // Sieve's rule: a penalty may mask a token (a logit driven to -inf, as a
        // huge repeat penalty does to a negative logit), but a logit made +inf or
        // NaN (a repeat penalty below 1 overflowing a division, negative or
        // infinite freq/present terms) would make the softmax NaN. The first
        // such logit is reported; every candidate is still penalized.
        if (status == SIEVE_OK && (std::isnan(td.logit) || td.logit == INFINITY)) {
            if (message) {
                *message = "penalties turned logit " + std::to_string(td.id) + " (" + format_float(before) +
                           ") into " + format_float(td.logit);
            }
            status = SIEVE_ERROR_NON_FINITE_LOGIT;
        }
    }
    cur.sorted = false;
    return status;
}

} // namespace detail

void apply_penalties(CandidateArray& cur, const std::vector<int32_t>& history, const RowParams& params) {
    (void)detail::apply_penalties_checked(cur, history, params, nullptr);
}

} // namespace sieve::ref
