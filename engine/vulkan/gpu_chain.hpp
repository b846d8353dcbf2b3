// The GPU engine's chain (make_gpu_chain): buffers allocated once for the
// chain's capacity, one descriptor set per row window, command buffers
// recorded once per call shape and resubmitted; per-token values go through
// the persistently mapped parameter block, so steady-state sampling records
// and allocates nothing. GpuChain is the facade: what a call needs from its
// rows (row_analysis: the chain and the rows analysed once), and each call's
// order of work over the pieces (gpu_chain_buffers: the buffers and sets;
// gpu_recorder: the recordings; gpu_submitter: submissions, waits, stage
// times; gpu_counters: the counters; gpu_results: the results decoded;
// gpu_device_input: zero-copy input). gpu_chain.cpp: host input and distributions;
// gpu_chain_device.cpp: zero-copy, async and record-into calls.
#pragma once

#include "chain/chain.hpp"
#include "vulkan/gpu_chain_buffers.hpp"
#include "vulkan/gpu_context.hpp"
#include "vulkan/gpu_device_input.hpp"
#include "vulkan/gpu_estimate.hpp"
#include "vulkan/gpu_params.hpp"
#include "vulkan/gpu_recorder.hpp"
#include "vulkan/gpu_results.hpp"
#include "vulkan/gpu_submitter.hpp"
#include "vulkan/gpu_verify.hpp"
#include "vulkan/phase_log.hpp"
#include "vulkan/row_analysis.hpp"
#include "vulkan/slot_layout.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sieve {

class GpuChain final : public ChainImpl {
public:
    GpuChain(VulkanContext& context, const ChainConfig& config);
    ~GpuChain() override { submitter_.drain(); }
    int32_t max_bias_entries() const override { return kMaxGpuBiasEntries; }

    sieve_status sample(const LogitsView& logits, int32_t draws, int32_t* tokens, sieve_token* out,
                        std::string* message, bool commit) override;
    sieve_status distributions(const LogitsView& logits, const std::vector<int32_t>& wanted,
                               std::vector<std::vector<ref::Weighted>>* out, std::vector<sieve_status>* statuses,
                               std::string* message) override;
    sieve_status sample_device(const sieve_vulkan_logits& logits, sieve_token* out, std::string* message) override;
    void release_input() override {
        device_input_.release();
        buffers_.release_app_rows();  // rebound (and re-recorded) on the next use
    }
    void sample_async(const sieve_vulkan_logits& logits, const sieve_vulkan_sync* sync) override;
    sieve_status wait(uint64_t timeout_ns, sieve_token* out, std::string* message) override;
    void record(VkCommandBuffer cmd, const sieve_vulkan_logits& logits, const sieve_vulkan_sync* sync) override;
    sieve_status finish_recorded(sieve_token* out, std::string* message) override;
    void verify_async(const LogitsView& shape, const sieve_vulkan_logits& logits, std::vector<Draft> drafts,
                      sieve_verify_mode mode, VkCommandBuffer cmd, const sieve_vulkan_sync* sync) override;
    sieve_status finish_verify(bool recorded, uint64_t timeout_ns, sieve_token* tokens, sieve_verified* out,
                               std::string* message) override;
    const char* in_flight() const override {
        if (!in_flight_) return nullptr;
        if (in_flight_->verify)
            return in_flight_->recorded ? "sieve_chain_collect_verified" : "sieve_chain_wait_verified";
        return in_flight_->recorded ? "sieve_chain_collect" : "sieve_chain_wait";
    }
    sieve_counters counters() const override;
    void plan_figures(int32_t rows, int32_t vocab, uint32_t* dispatches, uint32_t* row_passes) const override;
    std::vector<sieve_stage_estimate> plan_estimate(int32_t rows, int32_t vocab) const override {
        return plan_estimate(rows, vocab, ShaderSet::Today);
    }
    // With the shaders of a measured run (tests/bench/test_estimate.cpp).
    // 30de833's also runs the plan as that baseline did: rows at the plan's
    // chunks in every pass, the tail merging by ranks, one history workgroup
    // per row.
    std::vector<sieve_stage_estimate> plan_estimate(int32_t rows, int32_t vocab, ShaderSet shaders) const;
    void set_profiling(bool enabled) override { submitter_.set_profiling(enabled); }
    std::vector<sieve_stage_time> stage_times() const override { return submitter_.stage_times(); }
    bool call_timing(sieve_call_timing* out) const override { return submitter_.call_timing(out); }
    // The row windows its buffers are bound in (gpu_chain_buffers.hpp): for
    // the tests that check a capacity past the binding range is split.
    const RowWindows& row_windows() const { return buffers_.windows(); }
    // For the tests of the passes that apply a bias and bitmask as they read
    // (row_logit, the general collect variant, the history table), which
    // device input takes: a host call's upload leaves them to the passes too.
    void leave_inputs_to_the_passes(bool on) { inputs_to_the_passes_ = on; }

protected:
    uint32_t* slot_record(int32_t slot) override {
        submitter_.wait_pending();
        return slot_words_at(slot);
    }
    // The same without the wait (Submitter::when_idle's functions).
    uint32_t* slot_words_at(int32_t slot) {
        return static_cast<uint32_t*>(buffers_.slot_state.mapped) +
               static_cast<size_t>(slot) * slot_words(history_capacity());
    }

private:
    // The first `rows` rows analysed for a call of `kind` (row_analysis.hpp):
    // what every decision below reads. host_rows: the logits come through
    // upload() (else from the app's device buffer).
    CallAnalysis analyse_call(RecordingKind kind, uint32_t rows, bool host_rows) const;
    // What a call of the analysed rows x `vocab` records; input: where its
    // logits come from (null: the host, through the upload); waited: the
    // chain submits the call and waits for it itself (submit_and_wait), so a
    // GPU's plan may keep its key levels apart (KeyLevels), else the app
    // submits or syncs it and everything is in the one command buffer.
    RecordingKey key_for(const CallAnalysis& call, RecordingKind kind, uint32_t vocab, const DeviceInput* input,
                         bool timestamps, bool waited) const;
    void check_history_order(uint32_t rows) const;

    void upload(const LogitsView& logits);
    // The parameter blocks of the call's rows (call_); commit: its tokens
    // join their slots' histories.
    void write_params(bool commit);
    // The recording's indirect arguments before each submission of its
    // first part: the shaders' disarmed, the collect variants armed.
    void arm_args(const Recording& rec);
    // Submits the recording (after prefix, the ingest pass, if any), waits,
    // counts it; then, where the recording keeps its key levels apart and
    // level 0 left some row's bin larger than the candidate buffer, its key
    // levels' parts the same way (finish_levels_apart). A recording whose
    // recent calls needed them often (Recording::deep_rate, far_rate) runs
    // its near levels, or all, with its first part instead.
    void submit_and_wait(const Recording& rec, VkCommandBuffer prefix = VK_NULL_HANDLE);
    // Whether the parts submitted so far armed key level `level` for a row
    // group (the arguments as the host reads them after the wait).
    bool levels_armed(const Recording& rec, uint32_t level) const;
    // One part of the recording's: submitted alone, waited for, counted
    // (its stage times after the call's).
    void submit_part(const Recording& rec, const RecordedPart& part);
    // After a recording's first part (with its near levels: deep_ran), the
    // key levels' parts still armed: the near levels where level 1 is, then
    // the far ones where the near ones armed the first of them.
    void finish_levels_apart(const Recording& rec, bool deep_ran);
    // A finished call the app submitted: its key levels' part, where its
    // tail armed it (gpu_chain_device.cpp).
    void finish_key_levels(const Recording& rec);
    // The one count of a call's device work once it finished
    // (GpuCounters): the recording's dispatches that launched, the ingest
    // pass that brought its rows in (ingest), and a distribution's row
    // passes (it has no per-row results: the plan's minimum, and the ingest
    // pass's read). A sampled row's passes come from its result (finish_rows).
    // plan: the recording's part that ran (Recording: plan, or a
    // RecordedPart's); append_stages: its stage times
    // follow the call's first part's.
    void account(const Recording& rec, const Plan& plan, bool ingest, bool append_stages);

    // The call's rows after its device work, the one loop over them: each
    // row's result, or the twin's for the rows the GPU left to it (their
    // logits on the host from host_row(i)), its logprobs and counters.
    // extra_passes: full-row reads besides the passes' (the ingest pass).
    // *first: the call's first failing status (SIEVE_OK until then), whose
    // row's message goes to *message.
    template <typename HostRow>
    void finish_rows(uint32_t rows, uint32_t vocab, bool commit, uint32_t extra_passes, HostRow host_row,
                     sieve_token* out, std::string* message, sieve_status* first);
    // The GPU stopped where the row's survivors reach past its candidate
    // buffer (tail.glsl); the twin samples the row at the step the GPU used
    // (and advanced), from the slot's history, and commits the token as the
    // GPU would.
    sieve_token twin_row(uint32_t row, const float* logits, uint32_t vocab, uint32_t step, bool commit,
                         std::string* message, sieve_status* first);
    // A row's logits on the host (the caller's, or read back from the device).
    using HostRowFn = std::function<const float*(int32_t)>;
    // The distributions of the rows in `wanted` after a distribution
    // recording ran (collect: its key's); as distributions() returns them.
    sieve_status read_distributions(int32_t vocab, const std::vector<int32_t>& wanted, bool collect,
                                    const HostRowFn& host_row, std::vector<std::vector<ref::Weighted>>* out,
                                    std::vector<sieve_status>* statuses, std::string* message);
    sieve_status read_distribution(int32_t vocab, int32_t row, bool collect, const HostRowFn& host_row,
                                   std::vector<ref::Weighted>* out, std::string* message);
    // SIEVE_ERROR_DEVICE_LIMIT for a timeline sync the context may not use.
    void check_timeline(const sieve_vulkan_sync* sync) const;
    // The slot of `row` as the twin takes it, with the row's prefix when the
    // call is sieve_verify's.
    ref::SlotState row_state(int32_t row);

    // sieve_verify (gpu_verify.cpp): every position of every sequence as one
    // row of one submission (a sample, or the distributions for the rejection
    // mode), each with its sequence's parameters and slot, its step and its
    // drafts before it (positions_); the host then walks each sequence's
    // positions. The match mode of a chain with mirostat or adaptive-p, whose
    // position's learnt state depends on the draw before it, goes in waves
    // (verify_in_waves; from the app's buffer, over its rows read back once).
    bool verify_sequences(const LogitsView& logits, const sieve_vulkan_logits* device, const std::vector<Draft>& drafts,
                          const std::vector<int32_t>& first_row, sieve_verify_mode mode,
                          std::vector<ref::Verification>* results, std::vector<uint32_t>* steps) override;
    // Position i of every sequence still matching its drafts, one submission
    // per position: sieve_sample on the real slots, which learn and advance as
    // the sequential loop makes them; a sequence that fails gets its slot back.
    void verify_in_waves(const LogitsView& logits, const std::vector<Draft>& drafts,
                         const std::vector<int32_t>& first_row, std::vector<ref::Verification>* results,
                         std::vector<uint32_t>* steps);
    // The call's rows become its positions (VerifyCall::swap until reset).
    std::unique_ptr<VerifyCall> begin_positions(std::vector<Draft> drafts, std::vector<int32_t> first_row,
                                                sieve_verify_mode mode, int32_t rows, int32_t vocab);
    // The positions' input from the app's buffer (prepare_device_input for
    // the mode's recording; the distributions' rows always through the ingest
    // pass: their descriptor sets bind no app rows).
    DeviceInput prepare_positions(const VerifyCall& call, const sieve_vulkan_logits& in);
    // After the positions' device work from the app's buffer: each row's
    // token or distribution (the twin finishing the rows left to it).
    void read_positions(const VerifyCall& call, const Recording& rec, const DeviceInput& input, PositionResults* res);
    // Each sequence's positions walked to its first mismatch or rejection,
    // the emitted tokens committed to its slot (the chain's own rows again).
    std::vector<ref::Verification> walk_positions(const VerifyCall& call, const PositionResults& res);
    // The app's rows as f32 on the host, packed (the ingest pass and a read-back).
    std::vector<float> rows_from_device(const sieve_vulkan_logits& in);

    // A zero-copy call up to its device work: the rows' checks, how its
    // logits reach the passes, the rows' parameters written. kind: the
    // recording it takes (a distribution's reads the chain's own logits, so
    // its rows come through the ingest pass); commit: the tokens join their
    // slots (sieve_verify's positions: not).
    DeviceInput prepare_device_input(const sieve_vulkan_logits& in, RecordingKind kind = RecordingKind::Sample,
                                     bool commit = true);
    // After its device work: the rows' results, the rows the twin finishes.
    sieve_status finish_device_input(uint32_t rows, uint32_t vocab, const DeviceInput& input, sieve_token* out,
                                     std::string* message, bool commit = true);
    // The synchronous device work of a zero-copy call (its rows analysed by
    // prepare_device_input): its recording armed, submitted after the ingest
    // pass (if any) and waited for.
    const Recording& run_device_input(RecordingKind kind, uint32_t vocab, const DeviceInput& input);
    // The ingest pass's dispatches for `rows` (one per row window).
    uint32_t ingest_dispatches(uint32_t rows) const;
    // The call's rows on the host for the twin (the ingest pass and a
    // read-back on the first row asked for).
    HostRowFn device_host_rows(const DeviceInput& input, uint32_t rows, uint32_t vocab);

    // A call made by sample_async (the fence is pending) or record (the app
    // submits it), finished by wait / collect; every other call is refused
    // meanwhile (check_idle), so the parameters it wrote, the slots and the
    // ingest command buffer stay as it left them.
    struct InFlight {
        bool recorded = false;
        Recording rec;      // its plan: the dispatches are counted when it finishes
        DeviceInput input;  // its logits (the ingest pass is re-submitted for rows the twin finishes)
        std::unique_ptr<VerifyCall> verify;  // a verification's positions (finish_verify), else null
    };
    // A zero-copy call's device work left in flight: submitted with the
    // sync's semaphores and token copy (cmd null), or recorded into the app's
    // command buffer cmd; verify: a verification's positions.
    void launch(RecordingKind kind, uint32_t rows, uint32_t vocab, DeviceInput input, VkCommandBuffer cmd,
                const sieve_vulkan_sync* sync, std::unique_ptr<VerifyCall> verify);
    // INVALID_ARGUMENT, naming its finisher, unless the call in flight is the
    // kind this finisher takes (verify: a verification; recorded).
    void check_finisher(bool verify, bool recorded) const;
    // Waits for the async call in flight. A failure other than the timeout
    // (the device lost) drops the call after failed(status) has marked its
    // outputs; a timeout keeps it. Rethrows both.
    template <typename Failed>
    void await_in_flight(uint64_t timeout_ns, const char* still_running, Failed failed);
    // The finished call taken out of flight, its plan counted.
    InFlight take_in_flight();

    Device& device_;
    EffectiveLimits limits_;
    ChainAnalysis chain_;  // the chain's samplers, analysed once (row_analysis.hpp)
    GpuCounters counters_;
    // Declared in the order they are made; destroyed in reverse (the inputs'
    // command buffers before the pool, the pool before the buffers).
    ChainBuffers buffers_;
    Submitter submitter_;
    Recorder recorder_;
    DeviceInputs device_input_;
    std::optional<InFlight> in_flight_;
    std::vector<float> scratch_;       // a row widened to f32 for the twin (fallback rows)
    // The parameter blocks as last written, copied to the mapped buffer whole:
    // that may be device memory the host reads uncached (HostAccess), and
    // write_row_position reads a block back.
    std::vector<uint32_t> params_written_;
    // The inputs_version whose bias and bitmask each row's input block holds
    // (0: none known): write_params writes a block only when its row's differ.
    std::vector<uint64_t> inputs_written_;
    // The rows of the call under way, analysed at its start (sample,
    // distributions, prepare_device_input): its key, its parameter blocks and
    // its collect variants read it.
    CallAnalysis call_;
    std::vector<RowPosition> positions_;  // per row during sieve_verify's submission, else empty
    std::vector<sieve_token> drawn_;  // one draw's tokens (sample)
    bool inputs_to_the_passes_ = false;  // leave_inputs_to_the_passes
};

template <typename Failed>
inline void GpuChain::await_in_flight(uint64_t timeout_ns, const char* still_running, Failed failed) {
    try {
        submitter_.await(timeout_ns, still_running);
    } catch (const Failure& f) {
        if (f.status() != SIEVE_ERROR_TIMEOUT) {  // device lost: nothing more will come
            failed(f.status());
            in_flight_.reset();
        }
        throw;
    }
}

template <typename HostRow>
inline void GpuChain::finish_rows(uint32_t rows, uint32_t vocab, bool commit, uint32_t extra_passes, HostRow host_row,
                           sieve_token* out, std::string* message, sieve_status* first) {
    const auto* results = static_cast<const uint32_t*>(buffers_.results.mapped);
    for (uint32_t i = 0; i < rows; ++i) {
        const uint32_t* res = results + static_cast<size_t>(i) * glsl::RESULT_STRIDE;
        const bool twin = result_left_to_twin(res);
        const float* row = twin ? host_row(i) : nullptr;
        sieve_token t = twin ? twin_row(i, row, vocab, result_step(res), commit, message, first)
                             : decode_result(i, res, rows_[i], message, first);
        if (logprobs_n_ >= 0 && t.status == SIEVE_OK)
            store_logprobs(static_cast<int32_t>(i),
                           row ? ref::raw_logprobs(row, static_cast<int32_t>(vocab), t.token, logprobs_n_)
                               : decode_raw_logprobs(res, logprobs_n_));
        t.row_passes += extra_passes;
        counters_.count_row_passes(t.row_passes);
        out[i] = t;
    }
#ifdef SIEVE_PHASE_CLOCK
    log_phases(static_cast<uint32_t*>(buffers_.results.mapped), rows);
#endif
}

} // namespace sieve
