// What the passes leave for the host, decoded: a row's result words
// (gpu_layout.h's RES_*), its raw log-probabilities (raw_stats.comp) and a
// distribution call's output (collect_tail.glsl's list or
// probabilities.comp's row).
#pragma once

#include "reference/reference.hpp"

#include <sieve/sieve.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sieve {

// Whether the GPU left the row to the CPU twin (STATUS_FALLBACK): its
// survivors reach past the candidate buffer.
bool result_left_to_twin(const uint32_t* res);
// The step the GPU drew the row at (and advanced its slot past).
uint32_t result_step(const uint32_t* res);
// Row `row`'s token from its result words; a failed row's message in *message
// when it is the call's first failure (*first, SIEVE_OK until then). row: the
// row's parameters (the words of an all-masked row's message).
sieve_token decode_result(uint32_t row, const uint32_t* res, const ref::RowParams& params, std::string* message,
                          sieve_status* first);
// The raw log-probabilities raw_stats.comp left in the result words: the
// token's and the top n (at most what it found).
ref::RawLogprobs decode_raw_logprobs(const uint32_t* res, int32_t n);

// A distribution of collect_tail.glsl's list: [count or STATUS_FALLBACK,
// step, (id, p) x count]. Left to the twin: false, with the step in *step.
bool decode_distribution_list(const uint32_t* words, std::vector<ref::Weighted>* out, uint32_t* step);
// A distribution of probabilities.comp's full row: p >= 0 for the survivors,
// in canonical order (the logit the draw sees descending, ties by lower id).
// logits: the row as given (its vocab entries), scale: the temperature
// product the shaders divide by.
void decode_distribution_row(const float* p, const float* logits, uint32_t vocab, float scale,
                             std::vector<ref::Weighted>* out);

} // namespace sieve
