// The one analysis of a GPU chain and of a call's rows. Every decision about a
// call reads it: what its recording holds (the collect pass, the history pass,
// the inputs variant, the wide passes, the wide passes alone), what each row's
// parameter block says (need, flags, floor) and which collect variant a row
// takes. The GPU engine walks a chain's samplers against a row's parameters
// here and nowhere else.
#pragma once

#include "reference/reference.hpp"

#include <cstdint>
#include <vector>

namespace sieve {

// What the chain alone decides, whatever its rows' parameters.
struct ChainAnalysis {
    bool greedy = false;       // the chain ends in greedy
    bool top_p = false;        // the wide buffers and histogram bins (gpu_chain_buffers.cpp)
    bool history = false;      // penalties or DRY: the history pass's buffers
    bool temperature = false;  // some temperature sampler
    uint32_t temperatures = 0;
    // Samplers before the draw besides penalties and DRY (the history pass
    // applies those first): the GPU runs at most MAX_CHAIN_OPS.
    uint32_t ops = 0;
    uint32_t selector = 0;       // CHAIN_SELECTOR (selectors.glsl)
    uint32_t wide_divisions = 0; // the wide passes' WIDE_DIVISIONS (pipelines.hpp)
};
ChainAnalysis analyse_chain(const std::vector<ref::SamplerKind>& samplers);

// What a row's analysis depends on besides the chain and the row: the device
// and the call.
struct RowContext {
    uint32_t capacity = 0;        // the device's candidate capacity
    uint32_t workgroup_size = 0;  // the device's (collect_chunk.glsl's plain variant)
    bool cpu_paths = false;       // a CPU device (the wide passes may run alone)
    // The chain has a wide buffer (top-p): a call's recording may hold the
    // wide passes; a sampling call's may let them take over a top-p that is a
    // row's only cut (ROW_DEFER_TOP_P).
    bool wide_passes = false;
    bool sample = true;           // a sampling call (else a distribution)
    bool keep_raw_logits = false; // the chain asks for raw log-probabilities
    // The logits come from the host (sieve_sample, a distribution call): the
    // upload can write a row's bias and bitmask into the row it copies, unless
    // the chain asks for raw log-probabilities (raw_stats reads the model's
    // logits in the row).
    bool host_rows = false;
    bool inputs_on_upload() const { return host_rows && !keep_raw_logits; }
    bool defer_top_p() const { return sample && wide_passes; }
    bool raw_stats() const { return sample && keep_raw_logits; }  // the recording's raw_stats pass
};

struct RowAnalysis {
    // The collect pass (collect_chunk.glsl, tail.glsl): the candidates it keeps,
    // the row's flags but the call's own (ROW_COMMIT, ROW_HOLD_STEP), the
    // temperature its mass is summed at, min-p's floor (ROW_FLOOR).
    uint32_t need = 0;
    uint32_t flags = 0;
    float agg_t = 1.0f;
    float floor = 0.0f;
    bool collect = false;        // a dynamic temperature: the collect pass even if the chain needs none
    bool collect_plain = false;  // collect_chunk.glsl's plain variant serves it (no aggregates, a need its picks hold)
    // Its chunks keep the need by a radix select (radix_chunk): a need past
    // the shader's RADIX_FROM, no min-p floor.
    bool radix_chunk = false;
    // The history pass (history.comp): penalties or DRY of the chain act on
    // this row this call.
    bool penalties = false;
    bool dry = false;
    bool adjusts() const { return penalties || dry; }
    // A logit bias or a token bitmask: applied by the passes as they read a
    // logit (ROW_HAS_INPUTS: row_logit, the general collect variant), or
    // written into the row by the host's upload (inputs_on_upload), after
    // which the passes read a row without them (the plain variant, ROW_PATCH).
    bool inputs = false;
    bool inputs_on_upload = false;
    // The wide passes: the collect tail may hand the row to them (a top-p cut
    // past the buffer); they may take it alone (WIDE_DIRECT).
    bool may_go_wide = false;
    bool wide_direct = false;
    // min-p's survivors past the buffer may take the key levels
    // (ROW_FLOOR_LEVELS): min-p is the row's only cut or follows one top-p,
    // then at most one temperature and dist (floor_levels in
    // row_analysis.cpp).
    bool floor_levels = false;
};
RowAnalysis analyse_row(const ChainAnalysis& chain, const std::vector<ref::SamplerKind>& samplers,
                        const ref::RowParams& row, const RowContext& at);

// A call's rows analysed and folded into what its recording holds.
struct CallAnalysis {
    std::vector<RowAnalysis> rows;
    // The collect pass: a sampler but a temperature acts on some row, or a
    // learning selector, or a row's dynamic temperature.
    bool collect = false;
    bool history = false;      // some row adjusts: the history pass runs first
    bool inputs = false;       // the inputs variant (some bias or bitmask, or adjustments read from the history table)
    bool raw_stats = false;    // raw_stats.comp runs first
    bool wide = false;         // the wide passes are recorded (some row may take them)
    bool wide_direct = false;  // the wide passes alone (every row's; rows bigger than the buffer: the key's)
    bool patched = false;      // some row's adjusted logits are written into the row (ROW_PATCH)
    bool floor_levels = false; // some row may take the key levels past the buffer (RowAnalysis::floor_levels)
    // The chain's samplers (but penalties and DRY) that act on some row of
    // the call: the collect tail's pipeline runs these only. Their count, and
    // as the shaders' CHAIN_OPS (4 bits per sampler, first in the low bits).
    uint32_t ops = 0;
    uint64_t chain_ops = 0;
};
CallAnalysis analyse_call(const ChainAnalysis& chain, const std::vector<ref::SamplerKind>& samplers,
                          const ref::RowParams* rows, uint32_t n, const RowContext& at);

// The first penalties or DRY that comes after another sampler and acts on
// the row, or null. The GPU applies them as it reads a logit (history.comp),
// i.e. before every other sampler, as llama.cpp's default order has them; a
// row where such a sampler acts is refused (the CPU backend takes any order).
const char* misplaced_history(const std::vector<ref::SamplerKind>& samplers, const ref::RowParams& row);

} // namespace sieve
