// The CPU twin: every sampler with llama.cpp's exact semantics. This is the
// executable specification the GPU engine is tested against, and the CPU backend
// (SIEVE_BACKEND_CPU, `--device cpu`) runs it directly.
#pragma once

#include <sieve/sieve.h>

#include <array>
#include <cstdint>
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

struct CandidateArray {
    std::vector<TokenData> data;
    int64_t selected = -1;
    bool sorted = false;
};

enum class SamplerKind {
    // implemented
    Temperature,
    Greedy,
    Dist,
    // llama.cpp samplers not implemented yet: parsed, then rejected
    Penalties,
    Dry,
    TopNSigma,
    TopK,
    TypicalP,
    TopP,
    MinP,
    Xtc,
    Infill,
    Mirostat,
    MirostatV2,
    AdaptiveP,
};

const char* sampler_name(SamplerKind kind);
bool sampler_implemented(SamplerKind kind);

// llama.cpp's default --samplers order.
extern const char* const kDefaultChain;

// Parses llama.cpp sampler names (and llama.cpp's aliases) separated by ';' or
// ','. NULL or "" = kDefaultChain. Appends Dist when the chain does not end with
// Dist or Greedy. Unknown name -> SIEVE_ERROR_UNKNOWN_SAMPLER; a known but not yet
// implemented sampler -> SIEVE_ERROR_UNSUPPORTED_SAMPLER; anything after the
// final Dist/Greedy -> SIEVE_ERROR_INVALID_CHAIN. *message says which name.
sieve_status parse_chain(const char* text, std::vector<SamplerKind>* out, std::string* message);

struct RowParams {
    float temperature = 0.8f;
    uint32_t seed = 0;     // already resolved (never SIEVE_SEED_RANDOM here)
    int32_t min_keep = 0;
};

// ---- Philox4x32-10 (Random123), identical to shaders/glsl/philox.glsl --------
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// The high key word Sieve uses for its streams.
constexpr uint32_t kPhiloxKeyHi = 0x53455645u; // "SEVE"

// The 32-bit uniform of draw `draw` at row step `step` for `seed`:
// philox4x32_10({step, draw, 0, 0}, {seed, kPhiloxKeyHi})[0]. The uniform in
// [0, 1) is u32 / 2^32.
uint32_t uniform_u32(uint32_t seed, uint32_t step, uint32_t draw);

// ---- logits checks ---------------------------------------------------------
// SIEVE_OK, SIEVE_ERROR_NON_FINITE_LOGIT (NaN or +Inf; message names the first
// offending index) or SIEVE_ERROR_ALL_MASKED (every logit -Inf).
sieve_status check_logits(const float* logits, int32_t vocab, std::string* message);

// ---- samplers on the candidate array (llama.cpp semantics) -----------------
CandidateArray make_candidates(const float* logits, int32_t vocab);
// llama_sampler_temp_impl: t <= 0 keeps the first maximal logit and sets every
// other logit to -inf (entries stay); otherwise logit /= t.
void apply_temperature(CandidateArray& cur, float temperature);
// llama_sampler_greedy_apply: the first maximal logit.
int64_t greedy_index(const CandidateArray& cur);

// The final distribution over the candidates as Sieve's draw uses it:
// probabilities exp(logit - max) / sum in double, in canonical order
// (descending probability, ties by lower id), masked (-inf) members omitted.
struct Weighted {
    int32_t id;
    double p;
};
std::vector<Weighted> canonical_distribution(const CandidateArray& cur);

// Inverse CDF in canonical order: the first entry whose cumulative probability
// exceeds u = u32 / 2^32. Returns the index into `dist`.
size_t draw_inverse_cdf(const std::vector<Weighted>& dist, uint32_t u32);

// ---- a whole row through a chain -------------------------------------------
struct RowResult {
    int32_t token = -1;
    float p = 0.0f;
    float logprob = 0.0f;
    sieve_status status = SIEVE_OK;
    std::string message;
};

// Runs `chain` (from parse_chain) over one row. `step` is the row's RNG step,
// `draw` the draw index within the step (0 for plain sampling).
RowResult sample_row(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                     const RowParams& params, uint32_t step, uint32_t draw = 0);

// The distribution sample_row would draw from (empty with a status on bad input).
sieve_status row_distribution(const std::vector<SamplerKind>& chain, const float* logits, int32_t vocab,
                              const RowParams& params, std::vector<Weighted>* out, std::string* message);

} // namespace sieve::ref
