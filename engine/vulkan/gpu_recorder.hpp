// A GPU chain's recordings: what a call records (its key, its plan, its row
// groups), the commands and barriers it records, and the cache of the
// chain's own command buffers, recorded once per key and resubmitted.
#pragma once

#include "vulkan/gpu_chain_buffers.hpp"
#include "vulkan/gpu_plan.hpp"
#include "vulkan/gpu_submitter.hpp"
#include "vulkan/row_analysis.hpp"

#include <map>
#include <tuple>
#include <vector>

namespace sieve {

// Everything a call's commands depend on: calls with equal keys share one
// recording (the per-token values go through the mapped parameter block).
struct RecordingKey {
    RecordingKind kind = RecordingKind::Sample;
    uint32_t rows = 0, vocab = 0;
    bool timestamps = false;   // one timestamp before the first and after every dispatch
    bool collect = false;      // the collect pass (make_plan)
    InputsMode inputs = InputsMode::None;
    bool history = false;      // the history pass runs first
    bool device_input = false; // the logits are on the device already (no staging copy)
    bool app_rows = false;     // ... and bound where the app keeps them (SetKind::AppRows): no ingest pass
    uint32_t stride = 0;       // elements from one row of the bound logits to the next
    bool logprobs = false;     // raw_stats.comp runs first
    bool wide = false;         // the wide passes are recorded (some row may take them)
    bool wide_direct = false;  // the wide passes alone, from the rows (make_plan, wide.glsl: WIDE_DIRECT)
    CollectVariants collect_variants = CollectVariants::Both;  // collect_chunk.glsl's the row groups take
    // Some row of collect_chunk.glsl's plain (general) variant keeps its need
    // by radix_chunk (FLAG_RADIX_CHUNKS): that variant's pipeline holds it.
    bool radix_plain = false, radix_general = false;
    KeyLevels key_levels = KeyLevels::Inline;  // a selection chain's key levels: in the plan or apart
    // A collect call's key levels for min-p's survivors past the buffer
    // (make_plan: floor_levels; FLAG_FLOOR_LEVELS), where key_levels puts them.
    bool floor_levels = false;
    uint64_t chain_ops = 0;    // the samplers the collect tail runs: those acting on some row (CallAnalysis)

    // Every row starts at a multiple of 4 logits and holds whole vec4s: the
    // passes' four-at-a-time variants may read them (the app's rows, bound in
    // place, have their own stride).
    bool rows_of_whole_vec4s() const { return vocab % 4 == 0 && stride % 4 == 0; }
    // Whether collect_chunk.glsl's plain variant may read a row of this call: its
    // analysis allows it (no full-row sums), no bias or bitmask, whole vec4s.
    bool row_takes_plain(const RowAnalysis& a) const { return a.collect_plain && reads_vec4s_as_they_are(); }
    // Whether a row's chunks may take radix_chunk: its analysis asks for it,
    // and they read whole vec4s as the plain variant's do.
    bool row_takes_radix(const RowAnalysis& a) const { return a.radix_chunk && reads_vec4s_as_they_are(); }
    // No bias or bitmask for the passes in the call, and whole vec4s: the
    // collect pass may read its rows four at a time as they are.
    bool reads_vec4s_as_they_are() const { return inputs == InputsMode::None && rows_of_whole_vec4s(); }

    auto tie() const {
        return std::tie(kind, rows, vocab, timestamps, collect, inputs, history, device_input, logprobs, app_rows,
                        stride, wide_direct, wide, collect_variants, radix_plain, radix_general, key_levels,
                        floor_levels, chain_ops);
    }
    bool operator<(const RecordingKey& o) const { return tie() < o.tie(); }
};

// A command buffer of a recording besides its first part: its plan, its
// commands, and how long a blocking wait on it usually takes (Recording::wait_ns).
struct RecordedPart {
    Plan plan;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    mutable double wait_ns = 0.0;
};

struct Recording {
    RecordingKey key;
    VkCommandBuffer cmd = VK_NULL_HANDLE;  // null for a plan emitted into the app's command buffer
    Plan plan;
    std::vector<RowGroup> groups;  // the plan's dispatches run once per group
    // How long a blocking wait on this recording usually takes (ns, 0 = not
    // yet known): where Submitter::await starts polling.
    mutable double wait_ns = 0.0;
    // KeyLevels::Apart: the key levels' parts (key_levels_plan; a collect
    // plan's, FLAG_FLOOR_LEVELS, for min-p's survivors): levels
    // 1..kNearKeyLevels (deep), submitted only when the first part armed
    // level 1, and the far levels (far), only when the near ones armed the
    // first of them (GpuChain::finish_levels_apart). No dispatches otherwise.
    RecordedPart deep, far;
    // ... the first part with its near levels (first_near, as
    // KeyLevels::Near records it), submitted instead while deep_rate, the
    // share of recent calls that needed level 1, is above
    // kWholeAboveDeepRate; and the whole plan (whole, KeyLevels::Inline),
    // while far_rate, the share that needed the far levels, is.
    RecordedPart first_near, whole;
    mutable double deep_rate = 0.0, far_rate = 0.0;
    bool has_deep() const { return !deep.plan.dispatches.empty(); }
    // Whether the call's indirect arguments are known only after it ran (a
    // shader arms some): then a GPU's plan copies them for the host's count
    // (Recorder::emit_passes); else the host's own values are all of them
    // and it writes them there itself (GpuChain::arm_args).
    bool shader_arms_args() const { return has_deep() || has_shader_armed(plan); }
};

class Recorder {
public:
    Recorder(Device& device, Pipelines& pipelines, ChainBuffers& buffers, Submitter& submitter,
             const ChainConfig& config, const ChainAnalysis& chain, GpuCounters& counters);

    // The plan and row groups of a key (no command buffer).
    Recording describe(const RecordingKey& key) const;
    // The chain's own command buffer for the key, recorded on first use.
    const Recording& recording(const RecordingKey& key);
    // The plan's commands, into the chain's own command buffer or the app's
    // (sieve_chain_record): every barrier the passes need, from the previous
    // call's work at the start to the host's reads of the results at the end.
    // plan: one of the recording's parts' (first_near, whole), else
    // rec.plan. With timestamps, framed by the call timing's span queries.
    void emit(VkCommandBuffer cmd, const Recording& rec, const Plan* plan = nullptr) const;
    // A key levels' part of a recording that has them (Recording::deep,
    // far): after the parts before it, from the row state and indirect
    // arguments they left.
    void emit_deep(VkCommandBuffer cmd, const Recording& rec, const Plan& part) const;
    // Frees the recordings that bind the app's rows (their sets are about to
    // be rewritten; recorded again on their next use). Nothing may be pending.
    void drop_app_row_recordings();

private:
    // emit's commands: the barriers and transfers before the passes, the passes.
    void emit_call(VkCommandBuffer cmd, const Recording& rec, const Plan& plan) const;
    // A plan's dispatches over the row groups (timestamps after each when the
    // key asks), then the arguments' copy for the host's count and the
    // barrier that makes the results visible to the host.
    void emit_passes(VkCommandBuffer cmd, const Recording& rec, const Plan& plan) const;

    Device& device_;
    Pipelines& pipelines_;
    ChainBuffers& buffers_;
    Submitter& submitter_;
    const ChainConfig& config_;
    const ChainAnalysis& chain_;  // its ops, selector, greedy draw, wide divisions
    GpuCounters& counters_;
    const EffectiveLimits& limits_;
    sieve_device_type type_;
    std::map<RecordingKey, Recording> by_key_;
};

} // namespace sieve
