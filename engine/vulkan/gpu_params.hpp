// What the host writes for each row before a submission: the parameter block
// (common.glsl's P_*), the chain as a list of GPU sampler ops, and the row's
// logit bias / token bitmask block (common.glsl's RowInputs).
#pragma once

#include "reference/reference.hpp"
#include "vulkan/row_analysis.hpp"

#include <gpu_layout.h>

#include <cstdint>
#include <vector>

namespace sieve {

// Logit bias entries a GPU row can hold.
constexpr int32_t kMaxGpuBiasEntries = 1024;

// Words of one row's RowInputs block for a chain of capacity max_vocab: the
// bitmask and bias, then the DRY breakers at row_breakers_offset, then
// sieve_verify's prefix (up to SIEVE_MAX_DRAFT tokens) at row_prefix_offset.
uint32_t row_input_words(uint32_t max_vocab);
uint32_t row_breakers_offset(uint32_t max_vocab);
uint32_t row_prefix_offset(uint32_t max_vocab);

// A row that is one position of a sequence's draft (sieve_verify): its step
// past the slot's, and the drafts before it, which the history samplers see
// after the slot's history. The slot keeps its step (ROW_HOLD_STEP).
struct RowPosition {
    uint32_t step_add = 0;
    const int32_t* prefix = nullptr;
    uint32_t prefix_len = 0;
};
// Into the row's parameter block (after write_row_params) and its RowInputs
// block (inputs_offset: the block's word offset as the shaders index it).
void write_row_position(uint32_t* block, uint32_t* inputs, uint32_t inputs_offset, uint32_t max_vocab,
                        const RowPosition& at);

// Writes the row's parameter block (PARAM_STRIDE words) from its analysis
// (row_analysis.hpp: need, flags, floor). scale: the product of the chain's
// temperatures for the selection-level path; slot_offset: the word offset of
// the row's slot record; inputs_offset: the word offset of the row's
// RowInputs block; commit: the drawn token joins the slot's history
// (sieve_sample).
struct RowPlacement {
    uint32_t slot_offset = 0;
    uint32_t inputs_offset = 0;
    uint32_t max_vocab = 0;
    bool commit = false;
    int32_t logprobs = -1;  // top raw log-probabilities wanted (-1: off)
};
void write_row_params(uint32_t* block, const RowAnalysis& analysis, const ref::RowParams& row, float scale,
                      const RowPlacement& at);

// The row's RowInputs block (a row with RowAnalysis::inputs);
// the DRY breakers go at row_breakers_offset of the same block.
void write_row_inputs(uint32_t* block, const ref::RowParams& row, uint32_t max_vocab);
void write_row_breakers(uint32_t* block, const ref::RowParams& row, uint32_t max_vocab);

// The upload's copy of a row with RowAnalysis::inputs_on_upload: the model's
// logits src into dst with the row's bias and bitmask applied, as the passes'
// row_logit would apply them as they read (common.glsl).
void copy_row_with_inputs(const ref::RowParams& row, const float* src, float* dst, int32_t vocab);

} // namespace sieve
