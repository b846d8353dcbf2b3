// GpuChain's calls on logits already on the device (sieve_sample_vulkan,
// sieve_sample_vulkan_async and sieve_chain_wait, sieve_chain_record and
// sieve_chain_collect; sieve_verify's forms: gpu_verify.cpp).
#include "vulkan/gpu_chain.hpp"

#include "vulkan/gpu_params.hpp"

#include <sieve/sieve_vulkan.h>

namespace sieve {

using namespace glsl;

DeviceInput GpuChain::prepare_device_input(const sieve_vulkan_logits& in, RecordingKind kind, bool commit) {
    submitter_.wait_pending();
    check_history_order(static_cast<uint32_t>(in.rows));
    if (kind == RecordingKind::Distribution) buffers_.ensure_distribution_output();
    call_ = analyse_call(kind, static_cast<uint32_t>(in.rows), false);
    DeviceInput input;
    input.source = device_input_.source(in);
    // Sampling and distributions alike read the app's rows where they are
    // when the passes can (a verification's rejection mode: no ingest pass).
    input.in_place = DeviceInputs::can_bind_in_place(input.source, call_.history);
    if (input.in_place) {
        const AppRows rows{in.buffer, in.offset, in.size, input.source.stride};
        if (!buffers_.app_rows_bound(rows)) {
            // The recordings that bind the app's rows would see the new rows
            // through a rewritten set, which invalidates them: they are
            // dropped (recorded again on their next use).
            recorder_.drop_app_row_recordings();
            buffers_.bind_app_rows(rows);
        }
    } else {
        input.ingest = device_input_.ingest_command(input.source);
    }
    write_params(commit);
    return input;
}

uint32_t GpuChain::ingest_dispatches(uint32_t rows) const {
    const uint32_t windows = buffers_.windows().rows;
    return (rows + windows - 1) / windows;  // the ingest pass: one per window
}

GpuChain::HostRowFn GpuChain::device_host_rows(const DeviceInput& input, uint32_t rows, uint32_t vocab) {
    // The twin reads the rows from the host: the ingest pass brings them into
    // the chain's buffer (for rows bound in place too: then it is the call's
    // one ingest, counted here; else it runs again, since the history pass
    // may have patched Sieve's copy), read on the first row asked for.
    return [this, &input, rows, vocab, host = static_cast<const float*>(nullptr)](int32_t i) mutable {
        if (!host) {
            VkCommandBuffer ingest = input.in_place ? device_input_.ingest_command(input.source) : input.ingest;
            if (input.in_place) counters_.count_ingest(ingest_dispatches(rows));
            host = device_input_.rows_on_host(
                ingest, buffers_.call_logits_bytes(rows, static_cast<uint64_t>(config_.max_vocab), vocab));
        }
        return host + buffers_.row_at(static_cast<uint32_t>(i), static_cast<uint64_t>(config_.max_vocab), vocab);
    };
}

sieve_status GpuChain::finish_device_input(uint32_t r, uint32_t v, const DeviceInput& input, sieve_token* out,
                                           std::string* message, bool commit) {
    begin_logprobs(static_cast<int32_t>(r));
    // The ingest pass reads the app's row once more.
    sieve_status first = SIEVE_OK;
    finish_rows(r, v, commit, input.in_place ? 0 : 1, device_host_rows(input, r, v), out, message, &first);
    return first;
}

const Recording& GpuChain::run_device_input(RecordingKind kind, uint32_t vocab, const DeviceInput& input) {
    const Recording& rec = recorder_.recording(key_for(call_, kind, vocab, &input, submitter_.profiling(), true));
    submit_and_wait(rec, input.ingest);
    return rec;
}

sieve_status GpuChain::sample_device(const sieve_vulkan_logits& in, sieve_token* out, std::string* message) {
    const DeviceInput input = prepare_device_input(in);
    const uint32_t r = static_cast<uint32_t>(in.rows), v = static_cast<uint32_t>(in.vocab);
    run_device_input(RecordingKind::Sample, v, input);
    return finish_device_input(r, v, input, out, message);
}

void GpuChain::check_timeline(const sieve_vulkan_sync* sync) const {
    if (sync && sync->timeline == 1 && !(limits_.features & SIEVE_FEATURE_TIMELINE_SEMAPHORE))
        fail(SIEVE_ERROR_DEVICE_LIMIT, "timeline semaphores are not usable on this context: the app enables "
                                       "timelineSemaphore on its device and states SIEVE_FEATURE_TIMELINE_SEMAPHORE in "
                                       "sieve_vulkan_device.enabled_features (else use binary semaphores, timeline = 0)");
}

void GpuChain::launch(RecordingKind kind, uint32_t r, uint32_t v, DeviceInput input, VkCommandBuffer cmd,
                      const sieve_vulkan_sync* sync, std::unique_ptr<VerifyCall> verify) {
    const bool copy = sync && sync->token_buffer;
    const TokenTarget target = copy ? TokenTarget{sync->token_buffer, sync->token_offset, r} : TokenTarget{};
    if (cmd) {
        // The same commands as the chain's own recording, minus the timestamps
        // (the query pool is the chain's, read only after its own fences).
        Recording rec = recorder_.describe(key_for(call_, kind, v, &input, false, false));
        arm_args(rec);
        if (!input.in_place) device_input_.emit_ingest(cmd);
        recorder_.emit(cmd, rec);
        if (copy) emit_token_copy(device_, cmd, buffers_.results.buffer, RESULT_STRIDE * 4, target);
        ++counters_.recordings;
        in_flight_ = InFlight{true, std::move(rec), std::move(input), std::move(verify)};
        return;
    }
    const Recording& rec = recorder_.recording(key_for(call_, kind, v, &input, submitter_.profiling(), false));
    arm_args(rec);
    VkCommandBuffer cmds[3];
    uint32_t n = 0;
    if (input.ingest) cmds[n++] = input.ingest;
    cmds[n++] = rec.cmd;
    if (copy) cmds[n++] = device_input_.token_copy(target);
    submitter_.submit(cmds, n, sync);
    in_flight_ = InFlight{false, rec, std::move(input), std::move(verify)};
}

void GpuChain::check_finisher(bool verify, bool recorded) const {
    if (static_cast<bool>(in_flight_->verify) == verify && in_flight_->recorded == recorded) return;
    const bool recorded_call = in_flight_->recorded;
    const char* made_by = in_flight_->verify
                              ? (recorded_call ? "sieve_chain_record_verify" : "sieve_verify_vulkan_async")
                              : (recorded_call ? "sieve_chain_record" : "sieve_sample_vulkan_async");
    fail(SIEVE_ERROR_INVALID_ARGUMENT, std::string("the call in flight ") +
                                           (in_flight_->verify ? "is a verification" : "samples rows, not drafts") +
                                           ", made by " + made_by + ": " + in_flight() + " finishes it");
}

GpuChain::InFlight GpuChain::take_in_flight() {
    InFlight call = std::move(*in_flight_);
    in_flight_.reset();
    account(call.rec, call.rec.plan, !call.input.in_place, false);
    finish_key_levels(call.rec);
    return call;
}

// A call the app submitted (or the chain left in flight) whose collect tail
// handed rows to the key levels (min-p's survivors past the buffer, its
// results for them pending: STATUS_FALLBACK, token -1, as a twin's row reads
// in the app's token buffer): the levels' part of the chain's own recording
// of that key, submitted and waited for now, as the twin's rows read their
// logits back now (device_host_rows). The app keeps its logits until the
// call is finished either way.
void GpuChain::finish_key_levels(const Recording& rec) {
    if (!rec.key.floor_levels || !rec.has_deep() || !levels_armed(rec, 1)) return;
    finish_levels_apart(recorder_.recording(rec.key), false);
}

void GpuChain::sample_async(const sieve_vulkan_logits& in, const sieve_vulkan_sync* sync) {
    check_timeline(sync);
    DeviceInput input = prepare_device_input(in);
    launch(RecordingKind::Sample, static_cast<uint32_t>(in.rows), static_cast<uint32_t>(in.vocab), std::move(input),
           VK_NULL_HANDLE, sync, nullptr);
}

sieve_status GpuChain::wait(uint64_t timeout_ns, sieve_token* out, std::string* message) {
    if (!in_flight_) return ChainImpl::wait(timeout_ns, out, message);
    check_finisher(false, false);
    await_in_flight(timeout_ns, "the sampling submission has not finished yet; it stays in flight: wait again",
                    [&](sieve_status status) {
                        // Every row of the call reads as failed, not as a stale result.
                        sieve_token failed{};
                        failed.token = -1;
                        failed.status = status;
                        for (uint32_t i = 0; i < in_flight_->rec.key.rows; ++i) out[i] = failed;
                    });
    const InFlight call = take_in_flight();
    return finish_device_input(call.rec.key.rows, call.rec.key.vocab, call.input, out, message);
}

void GpuChain::record(VkCommandBuffer cmd, const sieve_vulkan_logits& in, const sieve_vulkan_sync* sync) {
    DeviceInput input = prepare_device_input(in);
    launch(RecordingKind::Sample, static_cast<uint32_t>(in.rows), static_cast<uint32_t>(in.vocab), std::move(input),
           cmd, sync, nullptr);
}

sieve_status GpuChain::finish_recorded(sieve_token* out, std::string* message) {
    if (!in_flight_) return ChainImpl::finish_recorded(out, message);
    check_finisher(false, true);
    const InFlight call = take_in_flight();
    return finish_device_input(call.rec.key.rows, call.rec.key.vocab, call.input, out, message);
}

} // namespace sieve
