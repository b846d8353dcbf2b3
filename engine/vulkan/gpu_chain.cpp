// GpuChain (gpu_chain.hpp): construction, what a call records, host input
// (sieve_sample, sieve_sample_draws), distributions and the twin fallback.
#include "vulkan/gpu_chain.hpp"

#include "vulkan/gpu_estimate.hpp"
#include "vulkan/gpu_params.hpp"
#include "vulkan/gpu_plan.hpp"
#include "vulkan/slot_layout.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

namespace sieve {

using namespace glsl;


GpuChain::GpuChain(VulkanContext& context, const ChainConfig& config)
    : ChainImpl(config), device_(context.device()), limits_(device_.limits()),
      chain_(analyse_chain(config.samplers)),
      buffers_(device_, context.pipelines(), config_, chain_, max_chunks_for(limits_, limits_.plan_type),
               &counters_.allocations),
      submitter_(device_, static_cast<uint32_t>(config.max_rows), counters_),
      recorder_(device_, context.pipelines(), buffers_, submitter_, config_, chain_, counters_),
      device_input_(device_, buffers_, submitter_, counters_) {
    // Row state (arrival counters) and the history blocks start at 0.
    submitter_.run_once([this](VkCommandBuffer cmd) {
        buffers_.record_clear(cmd);
        VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        device_.vk().vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                                          1, &barrier, 0, nullptr, 0, nullptr);
    });
}

CallAnalysis GpuChain::analyse_call(RecordingKind kind, uint32_t rows, bool host_rows) const {
    RowContext at;
    at.capacity = limits_.candidate_capacity;
    at.workgroup_size = limits_.workgroup_size;
    at.cpu_paths = limits_.cpu_paths;
    at.wide_passes = buffers_.wide_cap() > 0;
    at.sample = kind == RecordingKind::Sample;
    at.keep_raw_logits = logprobs_n_ >= 0;
    at.host_rows = host_rows && !inputs_to_the_passes_;
    return sieve::analyse_call(chain_, config_.samplers, rows_.data(), rows, at);
}

RecordingKey GpuChain::key_for(const CallAnalysis& call, RecordingKind kind, uint32_t vocab, const DeviceInput* input,
                               bool timestamps, bool waited) const {
    RecordingKey key;
    key.kind = kind;
    key.rows = static_cast<uint32_t>(call.rows.size());
    key.vocab = vocab;
    key.timestamps = timestamps;
    key.collect = call.collect;
    key.chain_ops = call.collect ? call.chain_ops : 0;  // only the collect tail runs them
    key.logprobs = call.raw_stats;
    key.history = call.history;
    key.inputs = call.inputs ? InputsMode::All : InputsMode::None;
    key.device_input = input != nullptr;
    key.app_rows = input && input->in_place;
    key.stride = key.app_rows ? input->source.stride : vocab;
    key.wide = call.wide;
    // The wide passes alone need rows bigger than the buffer (make_plan).
    key.wide_direct = call.wide_direct && vocab > limits_.candidate_capacity;
    // arm_args's choice, over the call: every row plain, every group is;
    // none, none is; else the plan keeps both.
    bool plain = false, general = false;
    for (const RowAnalysis& a : call.rows) {
        const bool takes_plain = key.row_takes_plain(a);
        (takes_plain ? plain : general) = true;
        if (key.row_takes_radix(a)) (takes_plain ? key.radix_plain : key.radix_general) = true;
    }
    key.collect_variants = plain && general ? CollectVariants::Both
                           : plain         ? CollectVariants::Plain
                                           : CollectVariants::General;
    // min-p's survivors past the buffer (RowAnalysis::floor_levels): on a
    // GPU's plan the key levels after the collect pass, apart (a call rarely
    // needs them, and every min-p call would pay their empty dispatches); in
    // a call the app submits or leaves in flight the chain submits that part
    // when the call is finished (finish_key_levels), so every form draws the
    // same. A CPU device's plan leaves such a row to the CPU twin, which on
    // the same cores draws it faster than the passes (lavapipe, a Gaussian
    // row at min-p 0.05: the twin's 0.6 ms against 1.8 ms for level 1 and the
    // gather). Not beside raw_stats.
    key.floor_levels = limits_.floor_levels_plan() && kind == RecordingKind::Sample && call.collect &&
                       call.floor_levels && !call.raw_stats && !chain_.greedy && vocab > limits_.candidate_capacity;
    // A selection plan's: a CPU device's plan keeps them inline (an empty
    // level costs it little, a second submission more).
    const bool selection_apart = waited && limits_.plan_type != SIEVE_DEVICE_CPU && kind == RecordingKind::Sample &&
                                 !call.collect && !chain_.greedy && vocab > limits_.candidate_capacity;
    key.key_levels = selection_apart || key.floor_levels ? KeyLevels::Apart : KeyLevels::Inline;
    return key;
}

// Widening f16/bf16 to f32 happens here, in the one write to the mapped
// buffer the upload makes anyway, and so do a row's bias and bitmask where
// the analysis leaves them to the upload (RowAnalysis::inputs_on_upload).
void GpuChain::upload(const LogitsView& logits) {
    auto* dst = static_cast<float*>(device_.unified_memory() ? buffers_.logits.mapped : buffers_.staging.mapped);
    const auto row_at = [&](int32_t r) {
        return dst + buffers_.row_at(static_cast<uint32_t>(r), static_cast<uint64_t>(config_.max_vocab),
                                     static_cast<uint64_t>(logits.vocab));
    };
    const bool inputs = std::any_of(call_.rows.begin(), call_.rows.end(),
                                    [](const RowAnalysis& a) { return a.inputs_on_upload; });
    if (buffers_.windows().count == 1 && !inputs) return logits.pack_f32(dst);
    for (int32_t r = 0; r < logits.rows; ++r) {
        if (call_.rows[static_cast<size_t>(r)].inputs_on_upload)
            copy_row_with_inputs(rows_[static_cast<size_t>(r)], logits.row_f32(r, &scratch_), row_at(r), logits.vocab);
        else
            logits.copy_row_f32(r, row_at(r));
    }
}

void GpuChain::write_params(bool commit) {
    const uint32_t rows = static_cast<uint32_t>(call_.rows.size());
    params_written_.resize(static_cast<size_t>(config_.max_rows) * PARAM_STRIDE);
    inputs_written_.resize(static_cast<size_t>(config_.max_rows));
    uint32_t* p = params_written_.data();
    auto* inputs = static_cast<uint32_t*>(buffers_.inputs.mapped);
    const uint32_t max_vocab = static_cast<uint32_t>(config_.max_vocab);
    const uint32_t input_words = buffers_.input_words();
    for (uint32_t r = 0; r < rows; ++r) {
        RowPlacement at;
        const RowAnalysis& a = call_.rows[r];
        at.slot_offset = static_cast<uint32_t>(slot_of(static_cast<int32_t>(r))) * slot_words(history_capacity());
        at.inputs_offset = buffers_.local_row(r) * input_words;  // within the row's window
        at.max_vocab = max_vocab;
        at.commit = commit;
        at.logprobs = logprobs_n_;
        write_row_params(p + r * PARAM_STRIDE, a, rows_[r], row_scale(static_cast<int32_t>(r)), at);
        uint32_t* block = inputs + static_cast<size_t>(r) * input_words;
        // A row's bias and bitmask (up to 38 KB at 151936) cross PCIe on a
        // discrete GPU: written once a version, not every call.
        uint64_t& written = inputs_written_[r];
        const uint64_t version = rows_[r].inputs_version;
        if (a.inputs && (version == 0 || version != written)) {
            write_row_inputs(block, rows_[r], max_vocab);
            written = version;
        }
        if (a.dry && !rows_[r].dry_sequence_breakers.empty()) write_row_breakers(block, rows_[r], max_vocab);
        if (!positions_.empty()) write_row_position(p + r * PARAM_STRIDE, block, at.inputs_offset, max_vocab, positions_[r]);
    }
    std::memcpy(buffers_.params.mapped, p, static_cast<size_t>(rows) * PARAM_STRIDE * 4);
}

// Before each submission of a recording's first part (the previous call,
// which read them, has finished: the host waited for it), its indirect
// arguments, host-written: every pass the shaders arm starts disarmed (x = 0
// workgroups, y = the group's rows, z = 1), and one of collect_chunk.glsl's
// two variants per row group is armed from the call's analysis: the plain
// one when every row of the group can take it (RowAnalysis::collect_plain;
// no bias or bitmask in the call, rows of whole vec4s), else the general one.
// A change of a row's parameters re-records nothing, and no transfer and
// barrier start the call on the GPU. A plan without indirect passes
// (greedy's one pass) reads none.
void GpuChain::arm_args(const Recording& rec) {
    if (!rec.has_deep() && !has_indirect(rec.plan)) return;
    auto* args = static_cast<uint32_t*>(buffers_.dispatch_args.mapped);
    for (const RowGroup& g : rec.groups) {
        uint32_t* block = args + g.args_base;
        for (uint32_t i = 0; i + 3 < SHADER_ARGS_WORDS; i += 4) {
            block[i] = 0;
            block[i + 1] = g.rows;
            block[i + 2] = 1;
            block[i + 3] = 0;
        }
    }
    const auto& ds = rec.plan.dispatches;
    if (std::none_of(ds.begin(), ds.end(),
                     [](const Dispatch& d) { return d.stage == Stage::CollectPlain || d.stage == Stage::Collect; }) ||
        rec.plan.small)
        return;
    // Where no shader arms any argument, the recording copies none back:
    // the host's count reads the values written here (args_for_host).
    uint32_t* mirror = buffers_.args_copied() && !rec.shader_arms_args()
                           ? static_cast<uint32_t*>(buffers_.args_readback.mapped)
                           : nullptr;
    for (const RowGroup& g : rec.groups) {
        bool plain = true;
        const uint32_t first = g.window * buffers_.windows().rows + g.row_base;
        uint32_t most_need = 1;
        for (uint32_t r = first; plain && r < first + g.rows; ++r) {
            plain = rec.key.row_takes_plain(call_.rows[r]);
            most_need = std::max(most_need, std::clamp(call_.rows[r].need, 1u, limits_.candidate_capacity / 2));
        }
        const uint32_t chunks = collect_chunks_for_group(rec.plan, rec.key.vocab, g.rows, most_need, plain, limits_);
        const uint32_t on[3] = {chunks, g.rows, 1}, off[3] = {0, g.rows, 1};
        for (uint32_t* to : {args, mirror}) {
            if (!to) continue;
            std::memcpy(to + g.args_base + COLLECT_PLAIN_ARGS, plain ? on : off, sizeof(on));
            std::memcpy(to + g.args_base + COLLECT_GENERAL_ARGS, plain ? off : on, sizeof(on));
        }
    }
}

void GpuChain::account(const Recording& rec, const Plan& plan, bool ingest, bool append_stages) {
    counters_.count_recording(plan, rec.groups, buffers_.args_for_host());
    if (ingest) counters_.count_ingest(ingest_dispatches(rec.key.rows));
    // A distribution's rows are counted at the plan's minimum (the indirect
    // levels it may add are not seen).
    if (rec.key.kind == RecordingKind::Distribution)
        counters_.count_row_passes((static_cast<uint64_t>(plan.min_row_passes) + (ingest ? 1 : 0)) * rec.key.rows);
    if (rec.key.timestamps) submitter_.read_stage_times(plan, rec.groups, append_stages);
}

bool GpuChain::levels_armed(const Recording& rec, uint32_t level) const {
    const uint32_t* args = buffers_.args_for_host();
    return std::any_of(rec.groups.begin(), rec.groups.end(),
                       [&](const RowGroup& g) { return args[g.args_base + histogram_args(level)] != 0; });
}

void GpuChain::submit_part(const Recording& rec, const RecordedPart& part) {
    submitter_.submit(&part.cmd, 1, nullptr);
    submitter_.await(submitter_.wait_timeout_ns(), "sampling did not finish within the wait timeout", &part.wait_ns);
    account(rec, part.plan, false, true);
}

void GpuChain::finish_levels_apart(const Recording& rec, bool deep_ran) {
    if (!deep_ran && levels_armed(rec, 1)) {
        // Rows whose bin holds more than CAP logits are still active: the
        // first part's gather left them (their results unwritten).
        submit_part(rec, rec.deep);
        deep_ran = true;
    }
    // ... and rows the near levels left so.
    if (deep_ran && levels_armed(rec, kNearKeyLevels + 1))
        submit_part(rec, rec.far);
}

void GpuChain::submit_and_wait(const Recording& rec, VkCommandBuffer prefix) {
    arm_args(rec);
    // The recording's first part, or, while its recent calls kept needing
    // the key levels, that part with the near levels or the whole plan.
    const RecordedPart* instead = !rec.has_deep()                       ? nullptr
                                  : rec.far_rate > kWholeAboveDeepRate  ? &rec.whole
                                  : rec.deep_rate > kWholeAboveDeepRate ? &rec.first_near
                                                                        : nullptr;
    const VkCommandBuffer cmds[2] = {prefix, instead ? instead->cmd : rec.cmd};
    submitter_.submit(prefix ? cmds : cmds + 1, prefix ? 2 : 1, nullptr);
    submitter_.await(submitter_.wait_timeout_ns(), "sampling did not finish within the wait timeout",
                     instead ? &instead->wait_ns : &rec.wait_ns);
    account(rec, instead ? instead->plan : rec.plan, prefix != VK_NULL_HANDLE, false);
    if (rec.key.timestamps) submitter_.read_call_timing();  // the first submission's
    if (!rec.has_deep()) return;
    // Whichever ran, level 0 armed level 1 where a row needs it, and the
    // near levels their next where one still does.
    rec.deep_rate += ((levels_armed(rec, 1) ? 1.0 : 0.0) - rec.deep_rate) * kDeepRateWeight;
    if (instead != &rec.whole) finish_levels_apart(rec, instead == &rec.first_near);
    rec.far_rate += ((levels_armed(rec, kNearKeyLevels + 1) ? 1.0 : 0.0) - rec.far_rate) * kDeepRateWeight;
}

void GpuChain::check_history_order(uint32_t rows) const {
    for (uint32_t r = 0; r < rows; ++r)
        if (const char* misplaced = misplaced_history(config_.samplers, rows_[r]))
            fail(SIEVE_ERROR_UNSUPPORTED_SAMPLER,
                 "row " + std::to_string(r) + ": '" + misplaced +
                     "' acts after another sampler; the GPU backend runs penalties and dry only as the chain's first "
                     "samplers (llama.cpp's default order); the CPU backend takes any order");
}


ref::SlotState GpuChain::row_state(int32_t row) {
    ref::SlotState state = slot_to_state(slot_record(slot_of(row)), history_capacity());
    if (!positions_.empty()) {
        const RowPosition& at = positions_[static_cast<size_t>(row)];
        state.history.insert(state.history.end(), at.prefix, at.prefix + at.prefix_len);
    }
    return state;
}

sieve_token GpuChain::twin_row(uint32_t row, const float* logits, uint32_t vocab, uint32_t step, bool commit,
                               std::string* message, sieve_status* first) {
    ++counters_.fallback_rows;
    uint32_t* slot = slot_record(slot_of(static_cast<int32_t>(row)));
    ref::SlotState state = row_state(static_cast<int32_t>(row));
    const ref::RowResult res = ref::sample_row(config_.samplers, logits, static_cast<int32_t>(vocab),
                                               row_params(static_cast<int32_t>(row)), step, 0, &state);
    if (res.status == SIEVE_OK && commit) {
        slot_store_learnt(slot, state);
        slot_append(slot, history_capacity(), &res.token, 1);
    }
    sieve_token t{};
    t.status = res.status;
    t.token = res.status == SIEVE_OK ? res.token : -1;
    t.p = res.p;
    t.logprob = res.logprob;
    t.seed = rows_[row].seed;
    t.step = step;
    t.row_passes = 1;
    if (t.status != SIEVE_OK && *first == SIEVE_OK) {
        *first = t.status;
        *message = "row " + std::to_string(row) + ": " + res.message;
    }
    return t;
}

sieve_status GpuChain::sample(const LogitsView& logits, int32_t draws, int32_t* tokens, sieve_token* out,
                              std::string* message, bool commit) {
    submitter_.wait_pending();
    check_history_order(static_cast<uint32_t>(logits.rows));
    const uint32_t r = static_cast<uint32_t>(logits.rows), v = static_cast<uint32_t>(logits.vocab);
    call_ = analyse_call(RecordingKind::Sample, r, true);
    const Recording& rec =
        recorder_.recording(key_for(call_, RecordingKind::Sample, v, nullptr, submitter_.profiling(), true));
    upload(logits);
    write_params(commit);
    // The history pass writes adjusted logits into rows without a bias or
    // bitmask (ROW_PATCH): each further draw starts from the model's logits
    // again (with a staging buffer the recording copies them in itself).
    const bool patched = call_.patched;
    sieve_status first = SIEVE_OK;
    begin_logprobs(logits.rows);
    drawn_.resize(r);
    for (int32_t d = 0; d < draws; ++d) {
        if (d > 0 && patched && device_.unified_memory()) upload(logits);
        submit_and_wait(rec);
        finish_rows(
            r, v, commit, 0, [&](uint32_t i) { return logits.row_f32(static_cast<int32_t>(i), &scratch_); },
            drawn_.data(), message, &first);
        for (uint32_t i = 0; i < r; ++i) {
            if (out) out[i] = drawn_[i];
            if (tokens) tokens[static_cast<size_t>(i) * draws + d] = drawn_[i].token;
        }
    }
    return first;
}

sieve_status GpuChain::distributions(const LogitsView& logits, const std::vector<int32_t>& wanted,
                                     std::vector<std::vector<ref::Weighted>>* out, std::vector<sieve_status>* statuses,
                                     std::string* message) {
    const int32_t rows = logits.rows, vocab = logits.vocab;
    submitter_.wait_pending();
    check_history_order(static_cast<uint32_t>(rows));
    buffers_.ensure_distribution_output();
    const uint32_t r = static_cast<uint32_t>(rows), v = static_cast<uint32_t>(vocab);
    call_ = analyse_call(RecordingKind::Distribution, r, true);
    const RecordingKey key = key_for(call_, RecordingKind::Distribution, v, nullptr, submitter_.profiling(), true);
    const Recording& rec = recorder_.recording(key);
    upload(logits);
    write_params(false);
    submit_and_wait(rec);
    return read_distributions(vocab, wanted, key.collect,
                              [&](int32_t row) { return logits.row_f32(row, &scratch_); }, out, statuses, message);
}

sieve_status GpuChain::read_distributions(int32_t vocab, const std::vector<int32_t>& wanted, bool collect,
                                          const HostRowFn& host_row, std::vector<std::vector<ref::Weighted>>* out,
                                          std::vector<sieve_status>* statuses, std::string* message) {
    sieve_status first = SIEVE_OK;
    out->assign(wanted.size(), {});
    statuses->assign(wanted.size(), SIEVE_OK);
    for (size_t k = 0; k < wanted.size(); ++k) {
        std::string why;
        const sieve_status s = read_distribution(vocab, wanted[k], collect, host_row, &(*out)[k], &why);
        (*statuses)[k] = s;
        if (s != SIEVE_OK && first == SIEVE_OK) {
            first = s;
            *message = why;
        }
    }
    return first;
}

// Row `row`'s distribution from the distribution recording's output.
// The twin's rule (ref::kEveryCandidateMasked): a chain that left no
// unmasked candidate fails the row, as its draw does.
static sieve_status all_masked_if_empty(const std::vector<ref::Weighted>& list, int32_t row, std::string* message) {
    if (!list.empty()) return SIEVE_OK;
    *message = "row " + std::to_string(row) + ": " + ref::kEveryCandidateMasked;
    return SIEVE_ERROR_ALL_MASKED;
}

sieve_status GpuChain::read_distribution(int32_t vocab, int32_t row, bool collect, const HostRowFn& host_row,
                                         std::vector<ref::Weighted>* out, std::string* message) {
    const uint32_t v = static_cast<uint32_t>(vocab), i = static_cast<uint32_t>(row);
    const auto* res = static_cast<const uint32_t*>(buffers_.results.mapped) + static_cast<size_t>(i) * RESULT_STRIDE;
    const uint64_t max_words = 2ull * config_.max_vocab + 2;
    sieve_status status = SIEVE_OK;
    if (collect) {
        const auto* words = static_cast<const uint32_t*>(buffers_.probabilities.mapped) +
                            buffers_.row_at(i, max_words, 2ull * v + 2);
        std::vector<ref::Weighted> list;
        uint32_t step = 0;
        out->clear();
        if (!decode_distribution_list(words, &list, &step)) {
            ++counters_.fallback_rows;
            const ref::SlotState state = row_state(row);
            return ref::row_distribution(config_.samplers, host_row(row), vocab, row_params(row), out, message, step, 0,
                                         &state);
        }
        decode_result(i, res, rows_[i], message, &status);
        if (status != SIEVE_OK) return status;
        *out = std::move(list);
        return all_masked_if_empty(*out, row, message);
    }
    // The row's status comes from the same checks as sampling.
    decode_result(i, res, rows_[i], message, &status);
    out->clear();
    if (status != SIEVE_OK) return status;
    const float* p = static_cast<const float*>(buffers_.probabilities.mapped) + buffers_.row_at(i, max_words, v);
    decode_distribution_row(p, host_row(row), v, row_scale(row), out);
    return all_masked_if_empty(*out, row, message);
}

sieve_counters GpuChain::counters() const {
    sieve_counters c{};
    c.submits = counters_.submits;
    c.recordings = counters_.recordings;
    c.dispatches = counters_.dispatches();
    c.allocations = counters_.allocations.load();
    c.row_passes = counters_.row_passes();
    c.cpu_fallback_rows = counters_.fallback_rows;
    return c;
}

void GpuChain::plan_figures(int32_t rows, int32_t vocab, uint32_t* dispatches, uint32_t* row_passes) const {
    const CallAnalysis call = analyse_call(RecordingKind::Sample, static_cast<uint32_t>(rows), true);
    const Recording rec =
        recorder_.describe(key_for(call, RecordingKind::Sample, static_cast<uint32_t>(vocab), nullptr, false, true));
    *dispatches = rec.plan.min_dispatches * static_cast<uint32_t>(rec.groups.size());
    *row_passes = rec.plan.min_row_passes;
}

std::vector<sieve_stage_estimate> GpuChain::plan_estimate(int32_t rows, int32_t vocab, ShaderSet shaders) const {
    const bool baseline = shaders == ShaderSet::Of30de833;
    const uint32_t r = static_cast<uint32_t>(rows);
    const CallAnalysis call = analyse_call(RecordingKind::Sample, r, true);
    RecordingKey key = key_for(call, RecordingKind::Sample, static_cast<uint32_t>(vocab), nullptr, false, true);
    // The measured runs recorded both collect variants, one left empty, and
    // the key levels inline.
    if (shaders != ShaderSet::Today) {
        key.collect_variants = CollectVariants::Both;
        key.key_levels = KeyLevels::Inline;
        key.floor_levels = false;  // they had none
    }
    Recording rec = recorder_.describe(key);
    // The measured runs chunked every row of these plans by the vocabulary
    // alone (chunking), whatever the batch.
    if (shaders != ShaderSet::Today && same_for_any_chunking(rec.plan))
        chunking(static_cast<uint32_t>(vocab), limits_, limits_.plan_type, &rec.plan.n_chunks, &rec.plan.chunk_size);
    // Their wide passes took the collect pass's chunk slots.
    if (shaders != ShaderSet::Today) rec.plan.wide_chunks = rec.plan.collect_slots;
    // Their tail was a dispatch of its own.
    if (shaders != ShaderSet::Today) separate_tail(&rec.plan);
    if (baseline) {  // the plan's chunks everywhere, the tail's ranks, one history workgroup per row
        rec.plan.flags &= ~(FLAG_SORT_MERGE | FLAG_RADIX_CHUNKS);
        rec.plan.collect_slots = rec.plan.n_chunks;
        rec.plan.wide_chunks = rec.plan.n_chunks;
        for (Dispatch& d : rec.plan.dispatches)
            if (d.stage == Stage::History) d.level = HISTORY_WHOLE;
        rec.plan.history_groups = std::min(rec.plan.history_groups, 1u);
    } else if (shaders != ShaderSet::Today) {
        separate_history_clear(&rec.plan);  // 521950c cleared the hash in a dispatch of its own
    }
    EstimateInputs in;
    in.capacity = limits_.candidate_capacity;
    in.workgroup = limits_.workgroup_size;
    in.plan = &rec.plan;
    in.groups = &rec.groups;
    in.vocab = static_cast<uint32_t>(vocab);
    // Every sampler of the chain, those a call leaves out of its tail
    // (CallAnalysis::chain_ops: off in every row) too: the per-op term was
    // fitted on tails that ran the off ones beside the acting ones, and no
    // figure says what an off one cost.
    in.chain_ops = chain_.ops;
    in.shaders = shaders;
    // What each row keeps and which collect variant it takes, as the call
    // would write them (write_params).
    in.collect_plain = true;
    in.floored_lists = r > 0;
    in.raw_logprobs = logprobs_n_ > 0 ? static_cast<uint32_t>(logprobs_n_) : 0u;
    const uint32_t capacity = history_capacity();
    for (uint32_t i = 0; i < r; ++i) {
        const RowAnalysis& a = call.rows[i];
        in.need = std::max(in.need, std::clamp(a.need, 1u, std::max(limits_.candidate_capacity / 2, 1u)));
        in.collect_plain = in.collect_plain && rec.key.row_takes_plain(a);
        in.aggregates = in.aggregates || (a.flags & (ROW_NEED_SIGMA | ROW_NEED_MASS)) != 0;
        in.floored_lists = in.floored_lists && (a.flags & ROW_FLOOR) != 0;
        auto window = [&](int32_t last_n) { return last_n < 0 ? capacity : std::min(static_cast<uint32_t>(last_n), capacity); };
        if (a.penalties) in.history_tokens = std::max(in.history_tokens, window(rows_[i].penalty_last_n));
        if (a.dry) in.history_tokens = std::max(in.history_tokens, window(rows_[i].dry_penalty_last_n));
    }
    // Only the collect plain variant splits rows further (arm_args); the
    // general one takes the plan's chunks whatever collect_chunks says.
    for (const RowGroup& g : rec.groups)
        in.collect_chunks.push_back(in.collect_plain && !baseline
                                        ? collect_chunks_for_group(rec.plan, in.vocab, g.rows, in.need, true, limits_)
                                        : rec.plan.n_chunks);
    std::vector<sieve_stage_estimate> out;
    for (const StageEstimate& e : estimate_plan(in)) {
        sieve_stage_estimate s{};
        std::snprintf(s.stage, sizeof s.stage, "%s", stage_name(e.stage));
        s.level = e.level;
        s.workgroups = e.workgroups;
        s.indirect = e.indirect ? 1 : 0;
        s.est_us = e.est_us;
        out.push_back(s);
    }
    return out;
}

std::unique_ptr<ChainImpl> make_gpu_chain(VulkanContext& context, const ChainConfig& config) {
    const EffectiveLimits& limits = context.device().limits();
    const ChainAnalysis chain = analyse_chain(config.samplers);
    check_capacity(config, chain, limits, max_chunks_for(limits, limits.plan_type));
    if (chain.ops > glsl::MAX_CHAIN_OPS)
        fail(SIEVE_ERROR_INVALID_CHAIN, "a chain of " + std::to_string(chain.ops) +
                                            " samplers before its draw; the GPU runs at most " +
                                            std::to_string(glsl::MAX_CHAIN_OPS));
    return std::make_unique<GpuChain>(context, config);
}

} // namespace sieve
