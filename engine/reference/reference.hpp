// The CPU twin: every sampler with llama.cpp's exact semantics. This is the
// executable specification the GPU engine is tested against, and the CPU backend
// (SIEVE_BACKEND_CPU, `--device cpu`) runs it directly.
#pragma once

#include <sieve/sieve.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace sieve::ref {

// llama.cpp's llama_token_data / llama_token_data_array, exactly: masking samplers
// set logits to -inf without removing entries, later samplers count them.
struct TokenData {
    int32_t id;
    float logit;
    float p;
};

// `sorted` is llama.cpp's flag with one tightening: in the twin it means "in
// canonical order" (logit descending, ties by lower id), so every cut breaks ties
// the same way. Samplers that may leave equal logits out of id order (temperature)
// clear it; llama.cpp's results never depend on the flag except through the order
// among equal logits, which llama.cpp leaves unspecified.
struct CandidateArray {
    std::vector<TokenData> data;
    int64_t selected = -1;
    bool sorted = false;
};

enum class SamplerKind {
    // implemented
    Temperature,   // with dynamic temperature (llama_sampler_init_temp_ext)
    Greedy,
    Dist,
    TopNSigma,
    TopK,
    TypicalP,
    TopP,
    MinP,
    Xtc,
    // the samplers that read the slot's history
    Penalties,
    Dry,
    // not implemented yet: parsed, then rejected
    Infill,
    // final selectors that learn from their own draws (the slot's state)
    Mirostat,
    MirostatV2,
    AdaptiveP,
};

const char* sampler_name(SamplerKind kind);
bool sampler_implemented(SamplerKind kind);
// Samplers that pick the token and therefore end a chain: dist, greedy,
// mirostat, mirostat_v2, adaptive_p.
bool is_selector(SamplerKind kind);

// llama.cpp's default --samplers order.
extern const char* const kDefaultChain;

// Parses llama.cpp sampler names (and llama.cpp's aliases) separated by ';' or
// ','. NULL or "" = kDefaultChain. Appends Dist when the chain does not end with
// Dist or Greedy. Unknown name -> SIEVE_ERROR_UNKNOWN_SAMPLER; a known but not yet
// implemented sampler -> SIEVE_ERROR_UNSUPPORTED_SAMPLER; anything after the
// final Dist/Greedy -> SIEVE_ERROR_INVALID_CHAIN. *message says which name.
sieve_status parse_chain(const char* text, std::vector<SamplerKind>* out, std::string* message);

// One entry of a row's logit bias (llama_logit_bias): added to the token's logit.
struct LogitBias {
    int32_t token;
    float bias;
};

// A row's parameters, with llama.cpp's defaults (common_params_sampling).
struct RowParams {
    float temperature = 0.8f;
    uint32_t seed = 0;     // already resolved (never SIEVE_SEED_RANDOM here)
    int32_t min_keep = 0;
    int32_t top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    float typical_p = 1.0f;
    float top_n_sigma = -1.0f;
    float xtc_probability = 0.0f;
    float xtc_threshold = 0.1f;
    float dynatemp_range = 0.0f;
    float dynatemp_exponent = 1.0f;
    // Not a sampler parameter: the agreement rules between the GPU and the
    // twin (tests/support/twin_compare.hpp) move the twin's dynamic temperature, once
    // rounded to float, by this many float steps. The GPU computes the entropy
    // and the power in float, landing a few steps from the twin's double; where
    // logits / temperature are large, the float division (llama.cpp's) turns
    // one step into a visible change of the distribution. 0 everywhere else.
    int32_t dynatemp_ulps = 0;
    // Not a sampler parameter either: mirostat v1's k is multiplied by 1 +
    // this before it is truncated. The GPU computes k in float, as llama.cpp
    // does (s_hat summed over up to 99 pairs, then a log, a power and an exp),
    // the twin in double; where k lies within that rounding of a whole number
    // they keep one entry apart. The agreement rules move it by 1e-4 either
    // way. 0 everywhere else.
    double mirostat_k_rel = 0.0;
    // Not a sampler parameter either: typical's scores |-log p - H| are
    // compared as the cells of a grid of this many float steps of max(1, H)
    // (shifted by half a step where typical_grid_shifted) they fall in;
    // scores in one cell keep canonical order. The GPU computes them in
    // float (a Vulkan log is 3 steps off), the twin in double; where two
    // members' scores lie within that rounding (logits a few float steps
    // apart) they rank either way. The agreement rules try such grids. 0
    // everywhere else.
    int32_t typical_grid_ulps = 0;
    bool typical_grid_shifted = false;
    // Applied before the chain: the bias as llama.cpp's common chain does (its
    // first sampler), the bitmask (bit id%32 of word id/32 set = allowed) as
    // structured-output engines produce it. Empty = none.
    std::vector<LogitBias> logit_bias;
    std::vector<uint32_t> token_bitmask;
    // Not a sampler parameter: a value the chain gives a row each time
    // either of the two above is set on it, never the same to two rows (0:
    // none given), so that equal versions mean equal inputs (a copy of the
    // row, as a verification's position, carries its version) and a GPU
    // writes a row's inputs into device memory only when they changed.
    uint64_t inputs_version = 0;

    // The stateful samplers (they read the slot's history and state, SlotState),
    // with llama.cpp's names and common_params_sampling defaults.
    // penalties (llama_sampler_init_penalties): off when last_n == 0 or all three
    // values are neutral (1, 0, 0). last_n -1 = the whole history given.
    int32_t penalty_last_n = 64;
    float penalty_repeat = 1.0f;
    float penalty_freq = 0.0f;
    float penalty_present = 0.0f;
    // DRY (llama_sampler_init_dry): off when multiplier == 0, base < 1 or
    // last_n == 0; last_n -1 = the whole history given (llama.cpp: the context).
    float dry_multiplier = 0.0f;
    float dry_base = 1.75f;
    int32_t dry_allowed_length = 2;
    int32_t dry_penalty_last_n = -1;
    // Sequence breakers as token-id sequences, head token first (llama.cpp's
    // token-level constructor, llama_sampler_init_dry_testing; tails are not
    // clamped, as there). None by default: Sieve has no vocabulary to tokenize
    // llama.cpp's string breakers ({"\n", ":", "\"", "*"}). An empty sequence
    // or a token outside the call's vocab is SIEVE_ERROR_INVALID_PARAMETER.
    std::vector<std::vector<int32_t>> dry_sequence_breakers;
    // mirostat v1 / v2 (llama_sampler_init_mirostat[_v2]): tau (target
    // surprise), eta (learning rate); v1 uses m = 100.
    float mirostat_tau = 5.0f;
    float mirostat_eta = 0.1f;
    // adaptive-p (llama_sampler_init_adaptive_p): target < 0 = a plain draw
    // (clamped to [0, 1] otherwise); decay clamped to [0, 0.99].
    float adaptive_target = -1.0f;
    float adaptive_decay = 0.9f;
};

// What a sequence slot carries between tokens: its accepted tokens and the
// state of the samplers that learn (llama.cpp keeps these inside each sampler;
// Sieve keeps one per slot so sequences can move between batch rows).
struct SlotState {
    std::vector<int32_t> history;  // accepted tokens, oldest first (llama.cpp's accept order)
    // mirostat v1/v2: mu. llama.cpp sets mu = 2 * tau at init and reset; the
    // twin does so at first use (mu_set false), with the row's tau then. Each
    // mirostat draw updates it: mu -= eta * (-log2(p drawn) - tau).
    bool mu_set = false;
    float mu = 0.0f;
    // adaptive-p's running average of the original probabilities of the tokens
    // it drew, as llama.cpp keeps it (llama_sampler_adaptive_p::weighted_sum =
    // sum p_i decay^i, total_weight = sum decay^i). Set at the first adaptive-p
    // draw with a target >= 0, to llama.cpp's initial values target / (1 - decay)
    // and 1 / (1 - decay) (decay clamped to [0, 0.99]); then each such draw
    // makes weighted_sum = p_orig + decay * weighted_sum, total_weight =
    // 1 + decay * total_weight. Only adaptive-p's own draws update it (a
    // negative target is a plain draw and leaves it alone).
    bool adaptive_set = false;
    float adaptive_weighted_sum = 0.0f;
    float adaptive_total_weight = 0.0f;
};

// ---- Philox4x32-10 (Random123), identical to shaders/include/philox.glsl --------
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// The high key word Sieve uses for its streams.
constexpr uint32_t kPhiloxKeyHi = 0x53455645u; // "SEVE"

// The 32-bit uniform of draw `draw` at row step `step` for `seed`:
// philox4x32_10({step, draw, 0, 0}, {seed, kPhiloxKeyHi})[0]. The uniform in
// [0, 1) is u32 / 2^32.
uint32_t uniform_u32(uint32_t seed, uint32_t step, uint32_t draw);

// XTC's coin: the second word of the same Philox block,
// philox4x32_10({step, draw, 0, 0}, {seed, kPhiloxKeyHi})[1]; the coin in [0, 1)
// is u32 / 2^32. Independent of the draw's uniform (word 0).
uint32_t xtc_coin_u32(uint32_t seed, uint32_t step, uint32_t draw);

// ---- logits checks ---------------------------------------------------------
// SIEVE_OK, SIEVE_ERROR_NON_FINITE_LOGIT (NaN or +Inf; message names the first
// offending index) or SIEVE_ERROR_ALL_MASKED (every logit -Inf).
sieve_status check_logits(const float* logits, int32_t vocab, std::string* message);

// ---- samplers on the candidate array (llama.cpp semantics) -----------------
// A subnormal input logit reads as zero of its sign (Sieve's rule on ingest:
// Vulkan lets a device flush denormals, so the GPU flushes them by their bits
// and the twin does the same). Other values pass unchanged.
inline float flush_subnormal(float f) {
    uint32_t u = 0;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7F800000u) == 0u) u &= 0x80000000u;
    std::memcpy(&f, &u, sizeof u);
    return f;
}
// The array of the logits as read on ingest (flush_subnormal).
CandidateArray make_candidates(const float* logits, int32_t vocab);
// llama_sampler_temp_impl: t <= 0 keeps the first maximal logit and sets every
// other logit to -inf (entries stay); otherwise logit /= t.
void apply_temperature(CandidateArray& cur, float temperature);
// llama_sampler_greedy_apply: the first maximal logit (ties: the lowest id, which
// is llama.cpp's first maximal entry of an array in id order).
int64_t greedy_index(const CandidateArray& cur);

// The truncating samplers, each llama.cpp's rule (see its source file and
// docs/semantics.md). Samplers that sort leave the array in canonical order
// (logit descending, ties by lower id); removed entries leave the array, masked
// entries (-inf) stay and are counted.
// llama_sampler_top_k_impl: k <= 0 no-op; keep the first min(k, size).
void apply_top_k(CandidateArray& cur, int32_t k);
// llama_sampler_top_p_apply: p >= 1 no-op; smallest canonical prefix with
// cumulative probability >= p and at least min_keep entries.
void apply_top_p(CandidateArray& cur, float p, size_t min_keep);
// llama_sampler_min_p_apply: p <= 0 no-op; logit >= max + logf(p), else the
// sorted fallback (at least max(1, min_keep) entries).
void apply_min_p(CandidateArray& cur, float p, size_t min_keep);
// llama_sampler_typical_apply: p >= 1 no-op; rank by |-log p - H|, keep until the
// cumulative probability is > p with at least min_keep entries.
// grid_ulps, grid_shifted: RowParams::typical_grid_ulps, typical_grid_shifted
// (the agreement rules' move; 0 otherwise).
void apply_typical(CandidateArray& cur, float p, size_t min_keep, int32_t grid_ulps = 0, bool grid_shifted = false);
// llama_sampler_top_n_sigma_apply: n <= 0 or size <= 1 no-op; mask (-inf) the
// logits below max - n * sigma (mean and sigma over the finite logits).
void apply_top_n_sigma(CandidateArray& cur, float n);
// llama_sample_xtc_apply with the coin given (u in [0, 1)).
void apply_xtc(CandidateArray& cur, float probability, float threshold, size_t min_keep, double coin);
// llama_sampler_temp_ext_apply: range > 0 = dynamic temperature, else plain
// temperature. Returns what apply_temperature_checked returns. `ulps` moves
// the dynamic temperature, once rounded to float, by that many float steps
// (RowParams::dynatemp_ulps: for the agreement tests only).
sieve_status apply_temperature_ext(CandidateArray& cur, float temperature, float range, float exponent,
                                   std::string* message, int32_t ulps = 0);
// The temperature the dynamic sampler would use on `cur` (range > 0, size > 1).
double dynamic_temperature(const CandidateArray& cur, float temperature, float range, float exponent);

// Before the chain. The bitmask sets every disallowed token to -inf; it needs at
// least ceil(size / 32) words (SIEVE_ERROR_INVALID_ARGUMENT otherwise). The bias
// adds each entry to its token's logit (entries for one token add up, in list
// order); a token outside the array or a NaN/+inf bias is
// SIEVE_ERROR_INVALID_ARGUMENT, a finite logit driven to +/-inf
// SIEVE_ERROR_NON_FINITE_LOGIT.
sieve_status apply_token_bitmask(CandidateArray& cur, const std::vector<uint32_t>& words, std::string* message);
sieve_status apply_logit_bias(CandidateArray& cur, const std::vector<LogitBias>& bias, std::string* message);

// The final distribution over the candidates as Sieve's draw uses it:
// probabilities exp(logit - max) / sum in double, in canonical order
// (descending probability, ties by lower id), masked (-inf) members omitted.
struct Weighted {
    int32_t id;
    double p;
};
std::vector<Weighted> canonical_distribution(const CandidateArray& cur);
// A member's weight in it, before the division by the sum: exp(logit - max) in
// double, max the first member's logit in canonical order.
inline double canonical_weight(float logit, double max) { return std::exp(static_cast<double>(logit) - max); }

// Inverse CDF in canonical order: the first entry whose cumulative probability
// exceeds u = u32 / 2^32. Returns the index into `dist`.
size_t draw_inverse_cdf(const std::vector<Weighted>& dist, uint32_t u32);

// ---- the stateful samplers (llama.cpp semantics) ----------------------------
// `history` is the slot's accepted tokens, oldest first; each sampler reads its
// last last_n of them (all of them for last_n -1). These functions are
// llama.cpp's rules alone; sample_row also checks the parameters and the history
// and fails a row whose logit a penalty turns into +inf or NaN (see
// docs/semantics.md). Mirostat and adaptive-p run only as final selectors,
// through sample_row / row_distribution.
// llama_sampler_penalties_apply: counts over the window; logit <= 0 multiplied
// by the repeat penalty, > 0 divided; then logit -= count*freq + (count>0)*present.
void apply_penalties(CandidateArray& cur, const std::vector<int32_t>& history, const RowParams& params);
// llama_sampler_dry_apply: restart sequences (breakers), the reverse
// Z-algorithm, penalty multiplier * base^(len - allowed_length) with the
// exponent cap for base > 1.000001; single-token breakers are never penalized.
void apply_dry(CandidateArray& cur, const std::vector<int32_t>& history, const RowParams& params);
// The DRY exponent cap llama.cpp computes: 0 (no cap) unless base > 1.000001.
int32_t dry_max_exponent(float base);

// ---- a whole row through a chain -------------------------------------------
struct RowResult {
    int32_t token = -1;
    float p = 0.0f;
    float logprob = 0.0f;
    sieve_status status = SIEVE_OK;
    std::string message;
};

// Runs `chain` (from parse_chain) over one row. `step` is the row's RNG step,
// `draw` the draw index within the step (0 for plain sampling). `state` is the
// row's slot (NULL = an empty history and fresh state): the penalties and DRY
// read its history; mirostat and adaptive-p read and update their state in it
// (the draw's token is NOT appended to the history: the caller accepts it).
RowResult sample_row(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                     const RowParams& params, uint32_t step, uint32_t draw = 0, SlotState* state = nullptr);

// A chain can leave only masked candidates where the row had finite logits:
// XTC at a threshold <= 0 keeps the least probable entry alone, in llama.cpp
// too, and that is a masked one (p 0 >= 0) in a row with -inf logits. The
// row then fails with SIEVE_ERROR_ALL_MASKED and this message (llama.cpp's
// softmax would divide 0 by 0).
inline constexpr const char* kEveryCandidateMasked =
    "every candidate is masked (the chain left no finite logit: XTC at a threshold <= 0 keeps only the least "
    "probable entry, a masked one in a row with -inf logits)";

// The distribution sample_row would draw from at the same step and draw (empty
// with a status on bad input or SIEVE_ERROR_ALL_MASKED where no candidate is
// left unmasked). The step matters only to XTC's coin.
// The slot's state is read, never changed.
sieve_status row_distribution(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                              const RowParams& params, std::vector<Weighted>* out, std::string* message,
                              uint32_t step = 0, uint32_t draw = 0, const SlotState* state = nullptr);

// ---- speculative decoding's verification (sieve_verify; speculative.cpp) -------
// Whether the chain has a sampler that learns from its own draws (mirostat,
// mirostat_v2, adaptive_p): the rejection mode refuses those chains.
bool chain_learns(const std::vector<SamplerKind>& chain);

// The draft model's probabilities of one sequence (sieve_draft).
struct DraftProbs {
    sieve_draft_probs kind = SIEVE_DRAFT_PROBS_NONE;
    const float* probs = nullptr;  // DENSE: [n_draft][vocab]; TOKEN: [n_draft]
    int32_t vocab = 0;
};
// A dense row of draft probabilities sums to 1 within this.
constexpr double kDraftSumTolerance = 1e-3;

// SIEVE_OK, or SIEVE_ERROR_INVALID_ARGUMENT with the reason: more than
// SIEVE_MAX_DRAFT drafts, an id outside [0, vocab), probabilities the mode
// does not take, a NaN/negative/infinite value, a row not summing to 1.
sieve_status check_draft(const std::vector<int32_t>& tokens, const DraftProbs& q, int32_t vocab,
                         sieve_verify_mode mode, std::string* message);

// One position of the rejection mode over the target's final distribution p
// (canonical order): accepted (token = the draft) or the correction.
struct RejectionStep {
    bool accepted = false;
    RowResult token;
};
RejectionStep rejection_step(const std::vector<Weighted>& p, int32_t draft, const DraftProbs& q, size_t position,
                             uint32_t seed, uint32_t step);
// After every draft is accepted: the chain's ordinary draw from p at `step`.
RowResult bonus_draw(const std::vector<Weighted>& p, uint32_t seed, uint32_t step);

// A sequence verified: its emitted tokens (accepted drafts and one more), or a
// status (nothing emitted). rows holds the n_draft + 1 positions' logits; step
// is the slot's step before the call. *state (may be NULL) receives the slot
// after the call, the emitted tokens in its history (learnt state updated in
// the match mode); the caller advances the step by the number emitted. A
// failure leaves *state as it was.
struct Verification {
    sieve_status status = SIEVE_OK;
    std::string message;
    std::vector<RowResult> tokens;
};
// One position of a sequence's walk: a failure (status, message), or the
// token it emits and whether the walk goes on to the next position.
struct PositionOutcome {
    sieve_status status = SIEVE_OK;
    std::string message;
    RowResult token;
    bool go_on = false;
};
// The walk both backends take: positions 0..n_draft in order, each one's
// outcome from at(i), up to the first that does not go on; a failed position
// fails the sequence (nothing emitted). The twin computes a position in at();
// the GPU reads what its submission computed for it.
template <typename At>
Verification walk_sequence(size_t n_draft, At at) {
    Verification v;
    for (size_t i = 0; i <= n_draft; ++i) {
        PositionOutcome o = at(i);
        if (o.status != SIEVE_OK) {
            v.status = o.status;
            v.message = "position " + std::to_string(i) + ": " + o.message;
            v.tokens.clear();
            return v;
        }
        v.tokens.push_back(o.token);
        if (!o.go_on) break;
    }
    return v;
}
// The match mode's rule: the walk goes on while the emitted token is the draft.
inline bool match_goes_on(const std::vector<int32_t>& drafts, size_t i, int32_t token) {
    return i < drafts.size() && token == drafts[i];
}
// The rejection mode's position i over p: the draft's test, or after the last
// draft (i == drafts.size()) the bonus (never going on).
PositionOutcome rejection_position(const std::vector<Weighted>& p, const std::vector<int32_t>& drafts,
                                   const DraftProbs& q, size_t i, uint32_t seed, uint32_t step);
Verification verify_match(const std::vector<SamplerKind>& chain, const std::vector<const float*>& rows, int32_t vocab,
                          const RowParams& params, const std::vector<int32_t>& drafts, uint32_t step,
                          SlotState* state);
Verification verify_rejection(const std::vector<SamplerKind>& chain, const std::vector<const float*>& rows,
                              int32_t vocab, const RowParams& params, const std::vector<int32_t>& drafts,
                              const DraftProbs& q, uint32_t step, SlotState* state);

// ---- raw log-probabilities (sieve_chain_set_logprobs) ---------------------------
// The softmax of the logits as given (temperature 1, no sampler), in double:
// log Z = max + log(sum exp(logit - max)) over the finite logits (-inf has
// probability 0; a row with NaN or +inf fails before this is asked). The drawn
// token's log-probability and the n best tokens, logit descending, ties by
// lower id (OpenAI's top_logprobs).
struct RawLogprobs {
    double log_z = 0.0;
    double token_logprob = 0.0;
    std::vector<Weighted> top;  // id, log-probability
};
RawLogprobs raw_logprobs(const float* logits, int32_t vocab, int32_t token, int32_t n);

} // namespace sieve::ref
