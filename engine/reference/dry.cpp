// DRY ("don't repeat yourself"). llama.cpp: llama_sampler_dry_apply
// (src/llama-sampler.cpp, ported there from koboldcpp PR 982), with the window
// llama_sampler_dry_accept keeps (a ring buffer of the last effective last_n
// accepted tokens) and the breakers as llama_sampler_init_dry_testing takes them.
//
// Early returns, in llama.cpp's order:
//     dry_multiplier == 0 || dry_base < 1 || dry_penalty_last_n == 0 -> no-op
//     last_n_repeat = min(history, effective last_n)   (-1 = all of it; llama.cpp:
//                     also min'd with the context size, which the twin does not know)
//     last_n_repeat <= dry_allowed_length                -> no-op
// Step 1, restart sequences: walk the window from the newest token (i = 0) back;
// at the first i whose token heads a breaker whose tail (the tokens after the
// head, in order) ends the history at i, take the longest such tail (only tails
// with len <= i can match) and set rep_limit = i - len; no breaker seen leaves
// rep_limit = last_n_repeat. rep_limit < dry_allowed_length -> no-op.
// Step 2, the reverse Z-algorithm over the window: repeat[last - k] = the length
// of the longest suffix of the window that also ends k tokens before its end,
// capped at rep_limit (llama.cpp caps each value as it stores it; the Z-box copy
// reuses capped values, which gives min(Z, rep_limit) all the same).
// Step 3: for each position whose repeat length is >= dry_allowed_length, the
// token that followed it would extend the repeat; keep each token's maximum.
// Step 4: exponent = max_repeat - dry_allowed_length, capped at dry_max_exponent
// when the cap is positive; penalty = float(double(multiplier) * pow(double(base),
// exponent)) (llama.cpp's std::pow(float, int) is the double overload), subtracted
// from the logit in float. A candidate that heads a single-token breaker (empty
// tail) is never penalized, and neither is a masked one (-inf; Sieve's rule, see
// step 4's code). sorted = false.
//
// Breakers. llama_sampler_init_dry_testing takes token sequences, head first:
// an empty sequence is skipped (with a warning); the others go into a multimap
// head -> tail, tails unclamped. (Only the string constructor, llama_sampler_init_dry,
// clamps a breaker to MAX_CHAR_LEN = 40 characters and its tokenized tails to
// MAX_SEQ_LEN = 20 tokens, when it tokenizes; token sequences reach the sampler
// as given.) The twin follows the token constructor: empty sequences skipped
// (check_params refuses them before the chain runs), tails as given.
//
// llama.cpp's own vectors (tests/test-sampling.cpp, test_dry): history
// {0, 1, 2, 0, 1}, multiplier 1, base 1.1, allowed 2, last_n 5 over {0.25 x 4}
// gives {0.296923, 0.296923, 0.109232, 0.296923}.
#include "reference/detail.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace sieve::ref {

// llama.cpp: FLOAT_MAX_LOG = 88.7228391f (about log(FLT_MAX)); max_exponent = 0,
// or FLOAT_MAX_LOG / std::log(dry_base) (float division, truncated to int) when
// dry_base > 1.000001f.
int32_t dry_max_exponent(float base) {
    constexpr float kFloatMaxLog = 88.7228391f;
    if (!(base > 1.000001f)) return 0;
    return static_cast<int32_t>(kFloatMaxLog / std::log(base));
}

namespace detail {

sieve_status apply_dry_checked(CandidateArray& cur, const std::vector<int32_t>& history, const RowParams& params,
                               std::string* message) {
    const float multiplier = params.dry_multiplier;
    const float base = params.dry_base;
    const int32_t allowed = params.dry_allowed_length;
    if (multiplier == 0.0f || base < 1.0f || params.dry_penalty_last_n == 0) return SIEVE_OK;

    const size_t window = history_window(history.size(), params.dry_penalty_last_n);
    const int n = static_cast<int>(window); // llama.cpp's last_n_repeat
    if (n <= allowed || n == 0) return SIEVE_OK; // n == 0 only with a negative allowed length: nothing to scan
    // rat(i): the token i places before the newest (rat(0) = the last accepted).
    const int32_t* newest = history.data() + history.size() - 1;
    auto rat = [newest](int i) { return *(newest - i); };

    // The breakers: head -> tails (empty sequences skipped).
    std::unordered_multimap<int32_t, const std::vector<int32_t>*> breakers;
    for (const std::vector<int32_t>& seq : params.dry_sequence_breakers) {
        if (!seq.empty()) breakers.emplace(seq[0], &seq);
    }

    // Step 1: the restart sequence nearest the end limits the repeat length.
    int rep_limit = n;
    for (int i = 0; i < n; ++i) {
        const auto range = breakers.equal_range(rat(i));
        int longest = -1;
        for (auto it = range.first; it != range.second; ++it) {
            const std::vector<int32_t>& seq = *it->second;
            const int tail = static_cast<int>(seq.size()) - 1;
            if (tail <= longest || tail > i) continue;
            bool match = true;
            for (int j = 0; j < tail && match; ++j) match = seq[static_cast<size_t>(j) + 1] == rat(i - j - 1);
            if (match) longest = tail;
        }
        if (longest >= 0) {
            rep_limit = i - longest;
            break;
        }
    }
    if (rep_limit < allowed) return SIEVE_OK;

    // Step 2: the reverse Z-algorithm. repeat[last - k] for k = 1 .. n-1 is the
    // length of the common run of rat(0..) and rat(k..), capped at rep_limit.
    std::vector<int> repeat(static_cast<size_t>(n), 0);
    const int last = n - 1;
    int lt = 0;
    int rt = 0;
    for (int k = 1; k < n; ++k) {
        if (k > rt) {
            int len = 0;
            while (len + k < n && rat(len) == rat(len + k)) ++len;
            repeat[static_cast<size_t>(last - k)] = std::min(len, rep_limit);
            if (len > 0) {
                lt = k;
                rt = k + len - 1;
            }
        } else {
            const int pair = k - lt;
            const int right = rt - k + 1;
            if (repeat[static_cast<size_t>(last - pair)] < right) {
                repeat[static_cast<size_t>(last - k)] = std::min(repeat[static_cast<size_t>(last - pair)], rep_limit);
            } else {
                int i = rt + 1;
                while (i < n && rat(i) == rat(i - k)) ++i;
                repeat[static_cast<size_t>(last - k)] = std::min(i - k, rep_limit);
                lt = k;
                rt = i - 1;
            }
        }
    }

    // Step 3: the longest repeat each next token would extend.
    std::unordered_map<int32_t, int> max_repeat;
    for (int i = 0; i + 1 < n; ++i) {
        const int len = repeat[static_cast<size_t>(i)];
        if (len < allowed) continue;
        const int32_t token = rat(n - 2 - i);
        auto it = max_repeat.find(token);
        if (it == max_repeat.end()) {
            max_repeat.emplace(token, len);
        } else if (it->second < len) {
            it->second = len;
        }
    }
    if (max_repeat.empty()) {
        cur.sorted = false; // llama.cpp clears the flag on this path too
        return SIEVE_OK;
    }

    // Step 4: the penalties.
    const int32_t max_exponent = dry_max_exponent(base);
    sieve_status status = SIEVE_OK;
    for (TokenData& td : cur.data) {
        const auto found = max_repeat.find(td.id);
        if (found == max_repeat.end()) continue;
        bool single_token_breaker = false;
        const auto range = breakers.equal_range(td.id);
        for (auto it = range.first; it != range.second && !single_token_breaker; ++it)
            single_token_breaker = it->second->size() == 1;
        if (single_token_breaker) continue;
        // A masked member (-inf) stays masked, as in the penalties: -inf minus
        // a penalty that overflowed to -inf (a negative multiplier) is NaN.
        if (td.logit == -INFINITY) continue;
        int exponent = found->second - allowed;
        if (max_exponent > 0 && exponent > max_exponent) exponent = max_exponent;
        const float penalty = static_cast<float>(static_cast<double>(multiplier) *
                                                 std::pow(static_cast<double>(base), static_cast<double>(exponent)));
        const float before = td.logit;
        td.logit -= penalty;
        // Sieve's rule, as for the penalties: a penalty may mask (a finite logit
        // minus an infinite penalty is -inf, which llama.cpp's cap does not prevent
        // once the multiplier exceeds about 1), but +inf or NaN (a negative
        // multiplier) would make the softmax NaN.
        if (status == SIEVE_OK && (std::isnan(td.logit) || td.logit == INFINITY)) {
            if (message) {
                *message = "DRY turned logit " + std::to_string(td.id) + " (" + format_float(before) + ") into " +
                           format_float(td.logit);
            }
            status = SIEVE_ERROR_NON_FINITE_LOGIT;
        }
    }
    cur.sorted = false;
    return status;
}

} // namespace detail

void apply_dry(CandidateArray& cur, const std::vector<int32_t>& history, const RowParams& params) {
    (void)detail::apply_dry_checked(cur, history, params, nullptr);
}

} // namespace sieve::ref
