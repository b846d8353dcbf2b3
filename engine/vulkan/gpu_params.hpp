// What the host writes for each row before a submission: the parameter block
// (common.glsl's P_*), the chain as a list of GPU sampler ops, and the row's
// logit bias / token bitmask block (common.glsl's RowInputs).
#pragma once

#include "reference/reference.hpp"

#include <gpu_layout.h>

#include <cstdint>
#include <vector>

namespace sieve {

// Logit bias entries a GPU row can hold.
constexpr int32_t kMaxGpuBiasEntries = 1024;

// Whether the chain needs the collect pass (a truncating sampler); a row with a
// dynamic temperature needs it too (row_needs_collect).
bool chain_needs_collect(const std::vector<ref::SamplerKind>& samplers);
// The collect pass's CHAIN_SELECTOR for the chain's final sampler
// (selectors.glsl): 0 dist or greedy, 1 mirostat, 2 mirostat v2, 3 adaptive-p.
uint32_t chain_selector(const std::vector<ref::SamplerKind>& samplers);
bool row_needs_collect(const std::vector<ref::SamplerKind>& samplers, const ref::RowParams& row);

// The chain before its draw as the shaders' CHAIN_OPS (4 bits per sampler,
// first in the low bits, at most MAX_CHAIN_OPS; penalties and DRY, which the
// history pass applies before the chain, are left out).
uint64_t chain_ops(const std::vector<ref::SamplerKind>& samplers);

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

// Whether the row's penalties or DRY change any logit this call (they read
// the slot's history: history.comp), from the sampler's own off-switches.
bool penalties_act(const ref::RowParams& row);
bool dry_acts(const ref::RowParams& row);
bool row_adjusts(const std::vector<ref::SamplerKind>& samplers, const ref::RowParams& row);
// Whether history.comp writes the row's adjusted logits into the row itself
// (ROW_PATCH: it adjusts and has no bias or bitmask).
bool row_adjusts_in_place(const std::vector<ref::SamplerKind>& samplers, const ref::RowParams& row);

// Writes the row's parameter block (PARAM_STRIDE words). scale: the product of
// the chain's temperatures for the selection-level path; slot_offset: the word
// offset of the row's slot record; capacity: the device's candidate capacity;
// inputs_offset: the word offset of the row's RowInputs block; defer_top_p:
// the call's recording runs the wide passes (wide.glsl), which may take over a
// top-p that is the chain's only cut; commit: the drawn token joins the slot's
// history (sieve_sample).
struct RowPlacement {
    uint32_t slot_offset = 0;
    uint32_t capacity = 0;
    uint32_t inputs_offset = 0;
    uint32_t max_vocab = 0;
    bool defer_top_p = false;
    bool commit = false;
    int32_t logprobs = -1;  // top raw log-probabilities wanted (-1: off; then the row may be patched in place)
};
// Whether collect.comp's plain variant serves the row whose parameter block
// (written by write_row_params) this is: no full-row aggregates and a `need`
// the register picks hold (at most 4 per invocation, 8 x workgroup_size <=
// capacity). The bias/bitmask and the vec4 map are the recording's business.
bool row_block_plain(const uint32_t* block, uint32_t workgroup_size, uint32_t capacity);

// Whether the collect tail may hand the row to the wide passes (a top-p cut
// past the buffer): false when an acting top-k of at most what the buffer
// keeps comes before every other acting sampler (llama.cpp's default chain).
// Conservative: true wherever unsure. capacity: the device's candidate capacity.
bool row_may_go_wide(const std::vector<ref::SamplerKind>& samplers, const ref::RowParams& row, uint32_t capacity);

// Whether the wide passes can take the row alone, from the row itself
// (wide.glsl: WIDE_DIRECT): top-p is its only cut (ROW_DEFER_TOP_P), with
// min_keep <= 1, no penalties or DRY acting, at most WIDE_MAX_DIVISIONS
// temperature samplers. capacity: the device's candidate capacity.
bool row_wide_direct(const std::vector<ref::SamplerKind>& samplers, const ref::RowParams& row, uint32_t capacity);

void write_row_params(uint32_t* block, const std::vector<ref::SamplerKind>& samplers, const ref::RowParams& row,
                      float scale, const RowPlacement& at);

// Whether the row has a logit bias or a token bitmask, and its RowInputs block;
// the DRY breakers go at row_breakers_offset of the same block.
bool row_has_inputs(const ref::RowParams& row);
void write_row_inputs(uint32_t* block, const ref::RowParams& row, uint32_t max_vocab);
void write_row_breakers(uint32_t* block, const ref::RowParams& row, uint32_t max_vocab);

} // namespace sieve
