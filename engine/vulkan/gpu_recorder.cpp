#include "vulkan/gpu_recorder.hpp"

#include "vulkan/gpu_params.hpp"
#include "vulkan/vk_check.hpp"

#include <algorithm>
#include <functional>

namespace sieve {

using namespace glsl;

Recorder::Recorder(Device& device, Pipelines& pipelines, ChainBuffers& buffers, Submitter& submitter,
                   const ChainConfig& config, const ChainAnalysis& chain, GpuCounters& counters)
    : device_(device), pipelines_(pipelines), buffers_(buffers), submitter_(submitter), config_(config), chain_(chain),
      counters_(counters), limits_(device.limits()), type_(limits_.plan_type) {}

Recording Recorder::describe(const RecordingKey& key) const {
    Recording rec;
    rec.key = key;
    const uint32_t history_groups =
        key.history ? history_groups_for(static_cast<uint32_t>(config_.history_capacity), key.rows, limits_) : 0u;
    // The key's plan with its key levels where `levels` puts them.
    auto plan_with = [&](KeyLevels levels) {
        Plan p = make_plan(key.kind, chain_.greedy, key.collect, key.wide, history_groups, key.vocab, limits_, type_,
                           key.logprobs, key.wide_direct, key.collect_variants, levels, key.floor_levels);
        // Only such a call's pipelines hold radix_chunk (VARIANT_PLAIN_RADIX,
        // VARIANT_GENERAL_RADIX): a CPU device would run its lines under a
        // lane mask for every chunk.
        if ((key.radix_plain || key.radix_general) && key.collect && !p.small) p.flags |= FLAG_RADIX_CHUNKS;
        if (p.dispatches.size() > kMaxPlanDispatches) fail(SIEVE_ERROR_INTERNAL, "plan longer than the timestamp pool");
        split_for_batch(&p, key.rows, key.vocab, limits_);
        return p;
    };
    rec.plan = plan_with(key.key_levels);
    // Key levels to put apart: a selection plan's after its level 0, or a
    // collect plan's after its tail (FLAG_FLOOR_LEVELS).
    const bool levels = (rec.plan.flags & FLAG_FLOOR_LEVELS) != 0 ||
                        std::any_of(rec.plan.dispatches.begin(), rec.plan.dispatches.end(),
                                    [](const Dispatch& d) { return d.stage == Stage::MassHistogram && d.level == 0; });
    if (key.key_levels == KeyLevels::Apart && levels && key.kind == RecordingKind::Sample) {
        rec.deep.plan = key_levels_plan(rec.plan, 1, kNearKeyLevels);
        rec.far.plan = key_levels_plan(rec.plan, kNearKeyLevels + 1, KEY_LEVELS);
        rec.first_near.plan = plan_with(KeyLevels::Near);
        rec.whole.plan = plan_with(KeyLevels::Inline);
    }
    // Row groups never straddle a window.
    const RowWindows& windows = buffers_.windows();
    const uint32_t per_group = rows_per_group(key.rows, key.vocab, type_, rec.plan.min_row_passes);
    for (uint32_t first = 0; first < key.rows; first += windows.rows) {
        const uint32_t in_window = std::min(windows.rows, key.rows - first);
        for (uint32_t base = 0; base < in_window; base += per_group)
            rec.groups.push_back({first / windows.rows, base, std::min(per_group, in_window - base),
                                  static_cast<uint32_t>(rec.groups.size()) * GROUP_ARGS_WORDS});
    }
    return rec;
}

const Recording& Recorder::recording(const RecordingKey& key) {
    auto it = by_key_.find(key);
    if (it != by_key_.end()) return it->second;
    Recording rec = describe(key);
    const auto& vk = device_.vk();
    // One of the recording's command buffers, allocated and filled.
    auto record = [&](const std::function<void(VkCommandBuffer)>& fill) {
        VkCommandBuffer cmd = device_.allocate_command_buffer(submitter_.command_pool());
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        vk_check(vk.vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
        fill(cmd);
        vk_check(vk.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        return cmd;
    };
    rec.cmd = record([&](VkCommandBuffer cmd) { emit(cmd, rec); });
    if (rec.has_deep()) {
        rec.deep.cmd = record([&](VkCommandBuffer cmd) { emit_deep(cmd, rec, rec.deep.plan); });
        rec.far.cmd = record([&](VkCommandBuffer cmd) { emit_deep(cmd, rec, rec.far.plan); });
        rec.first_near.cmd = record([&](VkCommandBuffer cmd) { emit(cmd, rec, &rec.first_near.plan); });
        rec.whole.cmd = record([&](VkCommandBuffer cmd) { emit(cmd, rec, &rec.whole.plan); });
    }
    ++counters_.recordings;
    return by_key_.emplace(key, rec).first->second;
}

void Recorder::drop_app_row_recordings() {
    for (auto it = by_key_.begin(); it != by_key_.end();) {
        if (it->second.key.app_rows) {
            device_.vk().vkFreeCommandBuffers(device_.handle(), submitter_.command_pool(), 1, &it->second.cmd);
            const Recording& r = it->second;
            for (VkCommandBuffer part : {r.deep.cmd, r.far.cmd, r.first_near.cmd, r.whole.cmd})
                if (part) device_.vk().vkFreeCommandBuffers(device_.handle(), submitter_.command_pool(), 1, &part);
            it = by_key_.erase(it);
        } else {
            ++it;
        }
    }
}

void Recorder::emit(VkCommandBuffer cmd, const Recording& rec, const Plan* plan) const {
    const auto& vk = device_.vk();
    // Profiling's call timing (Submitter::read_call_timing): the command
    // buffer's first and last commands on the GPU's clock.
    VkQueryPool span = submitter_.span_queries();
    if (rec.key.timestamps) {
        vk.vkCmdResetQueryPool(cmd, span, 0, 2);
        vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, span, 0);
    }
    emit_call(cmd, rec, plan ? *plan : rec.plan);
    if (rec.key.timestamps) vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, span, 1);
}

void Recorder::emit_call(VkCommandBuffer cmd, const Recording& rec, const Plan& emitted) const {
    const auto& vk = device_.vk();
    const RecordingKey& key = rec.key;
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    if (key.app_rows) {
        // The app's writes of its rows (any earlier command on this queue: a
        // compute or transfer pass, a copy) before the passes read them where
        // they are: the ingest pass's first barrier, which this call skips.
        barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
        barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                &barrier, 0, nullptr, 0, nullptr);
    }
    // The previous call's shader writes (slot state, results) before this
    // one's reads and writes, its indirect reads of the dispatch arguments
    // before they are reset, and its transfers (the staging copy's writes, the
    // readback's and the token copy's reads of buffers this call rewrites).
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT |
                            VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vk.vkCmdPipelineBarrier(cmd,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT |
                                VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                            nullptr, 0, nullptr);
    if (!device_.unified_memory() && !key.device_input) {
        VkBufferCopy region{0, 0,
                            buffers_.call_logits_bytes(key.rows, static_cast<uint64_t>(config_.max_vocab), key.vocab)};
        vk.vkCmdCopyBuffer(cmd, buffers_.staging.buffer, buffers_.logits.buffer, 1, &region);
        // The passes read the copied rows, and the history pass also writes
        // them in place (its adjusted logits): a write after the copy's write
        // needs the copy made available to it as well.
        barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                &barrier, 0, nullptr, 0, nullptr);
    }
    // Every indirect pass starts disarmed (x = 0 workgroups, y = its
    // group's rows, z = 1): the host writes that before each submission
    // (GpuChain::arm_args), after the previous call, which read them, has
    // finished, so no transfer and barrier start the call.
    emit_passes(cmd, rec, emitted);
}

void Recorder::emit_deep(VkCommandBuffer cmd, const Recording& rec, const Plan& part) const {
    // The parts before: their shader writes (row state, histograms, the next
    // level's indirect arguments) and their arguments' copy, earlier in
    // submission order, before this part's passes and copy. Nothing is reset:
    // the levels continue from the arguments the level before armed.
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                            VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    device_.vk().vkCmdPipelineBarrier(
        cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
        &barrier, 0, nullptr, 0, nullptr);
    emit_passes(cmd, rec, part);
}

void Recorder::emit_passes(VkCommandBuffer cmd, const Recording& rec, const Plan& plan) const {
    const auto& vk = device_.vk();
    const RecordingKey& key = rec.key;
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    const uint32_t n_queries = static_cast<uint32_t>(plan.dispatches.size() * rec.groups.size()) + 1;
    VkQueryPool queries = submitter_.queries();
    if (key.timestamps) {
        vk.vkCmdResetQueryPool(cmd, queries, 0, n_queries);
        vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, 0);
    }
    const bool distribution = key.kind == RecordingKind::Distribution;
    const SetKind sets = key.app_rows ? (distribution ? SetKind::AppRowsDistribution : SetKind::AppRows)
                                      : distribution ? SetKind::Distribution
                                                     : SetKind::Sample;
    const AdjustLayout& adjust = buffers_.adjust_layout();
    uint32_t query = 1;
    for (const RowGroup& g : rec.groups) {
        VkDescriptorSet set = buffers_.set(sets, g.window);
        vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines_.layout(), 0, 1, &set, 0, nullptr);
        for (const Dispatch& d : plan.dispatches) {
            const bool collect_stage =
                d.stage == Stage::Collect || d.stage == Stage::CollectPlain || d.stage == Stage::CollectTail;
            // The collect passes index the chunk statistics by the slots a row
            // holds (a row may be split into more chunks than the plan's:
            // collect.glsl); the wide passes, and a collect plan's key
            // levels and gather, split a row into their own chunks (the
            // collect tail arms them so: on_wide_chunks); the others take
            // the plan's chunks.
            const bool wide_stage = on_wide_chunks(plan, d);
            Push pc{key.vocab,
                    key.stride,
                    wide_stage ? wide_chunk_size(plan, key.vocab) : plan.chunk_size,
                    collect_stage ? plan.collect_slots : wide_stage ? plan.wide_chunks : plan.n_chunks,
                    d.level,
                    plan.flags,
                    g.row_base,
                    g.args_base,
                    key.wide ? buffers_.wide_cap() : 0u,
                    static_cast<uint32_t>(config_.history_capacity),
                    adjust.hash_bits,
                    adjust.bitmap_words,
                    plan.wide_chunks};
            const bool texel = buffers_.texel() && !key.app_rows;  // the chain's own logits (create_texel_views)
            VkPipeline pipeline =
                collect_stage ? pipelines_.collect(d.stage, key.chain_ops, chain_.selector, key.inputs,
                                                   plan.small, texel, plan.fused_tail,
                                                   (plan.flags & FLAG_RADIX_CHUNKS) != 0 &&
                                                       (d.stage == Stage::CollectPlain ? key.radix_plain
                                                                                       : key.radix_general))
                              : pipelines_.get(d.stage, key.inputs, key.rows_of_whole_vec4s(), texel,
                                               chain_.wide_divisions, plan.wide_direct);
            vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
            vk.vkCmdPushConstants(cmd, pipelines_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), &pc);
            if (d.indirect == kNotIndirect)
                vk.vkCmdDispatch(cmd, workgroups_per_row(plan, d), g.rows, 1);
            else
                vk.vkCmdDispatchIndirect(cmd, buffers_.dispatch_args.buffer,
                                         static_cast<VkDeviceSize>(g.args_base + d.indirect) * 4);
            // Each pass reads what the previous one wrote (and may write what it
            // read); a scan's writes may be the next dispatch's indirect arguments.
            barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
            barrier.dstAccessMask =
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
            vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT, 0, 1,
                                    &barrier, 0, nullptr, 0, nullptr);
            if (key.timestamps) vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, query++);
        }
    }
    // On a GPU's plan, the indirect arguments the dispatches ran with, for
    // the host's count (GpuChain::account) and its choice to submit the key
    // levels' part (GpuChain::levels_armed), copied where the host reads
    // them cached (ChainBuffers::args_for_host). Only where a shader armed
    // some: the host writes its own there itself (GpuChain::arm_args), and
    // a call of the collect variants alone ends at its dispatch.
    if (buffers_.args_copied() && rec.shader_arms_args()) {
        barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
        vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                                &barrier, 0, nullptr, 0, nullptr);
        std::vector<VkBufferCopy> regions;
        for (const RowGroup& g : rec.groups) {
            const VkDeviceSize at = static_cast<VkDeviceSize>(g.args_base) * 4;
            regions.push_back({at, at, GROUP_ARGS_WORDS * 4});
        }
        vk.vkCmdCopyBuffer(cmd, buffers_.dispatch_args.buffer, buffers_.args_readback.buffer,
                           static_cast<uint32_t>(regions.size()), regions.data());
    }
    // Results, probabilities and the arguments' copy become visible to the
    // host after the fence.
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

} // namespace sieve
