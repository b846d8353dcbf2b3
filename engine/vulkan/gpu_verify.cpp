// sieve_verify on the GPU: every position of every sequence is one row of one
// submission, with its sequence's parameters and slot, the slot's step plus
// the position, and the drafts before it seen by the penalties and DRY after
// the slot's history (RowPosition; the slot itself is neither read past nor
// written: ROW_HOLD_STEP, no commit). The match mode samples every position;
// the rejection mode reads every position's final distribution. The host
// then walks each sequence's positions with the twin's rule
// (reference/speculative.cpp) and commits the emitted tokens to the slot.
// From the app's buffer the same work is submitted and waited for, submitted
// and left in flight (sieve_verify_vulkan_async), or recorded into the app's
// command buffer (sieve_chain_record_verify); finish_verify walks it then.
#include "vulkan/gpu_chain.hpp"

#include "vulkan/gpu_verify.hpp"

namespace sieve {

namespace {

ref::RowResult as_result(const sieve_token& t) {
    ref::RowResult r;
    r.token = t.token;
    r.p = t.p;
    r.logprob = t.logprob;
    r.status = t.status;
    return r;
}

RecordingKind kind_of(sieve_verify_mode mode) {
    return mode == SIEVE_VERIFY_MATCH ? RecordingKind::Sample : RecordingKind::Distribution;
}

// Every row of a call of `rows`, in order (the rows whose distributions are read).
std::vector<int32_t> all_rows(int32_t rows) {
    std::vector<int32_t> wanted(static_cast<size_t>(rows));
    for (int32_t r = 0; r < rows; ++r) wanted[static_cast<size_t>(r)] = r;
    return wanted;
}

} // namespace

std::unique_ptr<VerifyCall> GpuChain::begin_positions(std::vector<Draft> drafts, std::vector<int32_t> first_row,
                                                      sieve_verify_mode mode, int32_t rows, int32_t vocab) {
    submitter_.wait_pending();
    auto call = std::make_unique<VerifyCall>();
    call->drafts = std::move(drafts);
    call->first_row = std::move(first_row);
    call->mode = mode;
    call->rows = rows;
    call->vocab = vocab;
    call->headers.resize(call->drafts.size());
    call->swap =
        std::make_unique<PositionRows>(rows_, slot_of_row_, positions_, logprobs_n_, static_cast<size_t>(rows));
    positions_.assign(static_cast<size_t>(rows), RowPosition{});
    for (size_t s = 0; s < call->drafts.size(); ++s) {
        call->headers[s] = slot_header(slot_record(call->swap->saved_slot(s)));
        const std::vector<int32_t>& tokens = call->drafts[s].tokens;
        for (size_t i = 0; i <= tokens.size(); ++i) {
            const size_t row = static_cast<size_t>(call->first_row[s]) + i;
            rows_[row] = call->swap->saved_row(s);
            slot_of_row_[row] = call->swap->saved_slot(s);
            const uint32_t position = static_cast<uint32_t>(i);
            positions_[row] = RowPosition{position, tokens.data(), position};
        }
    }
    return call;
}

void GpuChain::read_positions(const VerifyCall& call, const Recording& rec, const DeviceInput& input,
                              PositionResults* res) {
    const uint32_t rows = static_cast<uint32_t>(call.rows), vocab = static_cast<uint32_t>(call.vocab);
    std::string message;  // each row's status is walked per sequence
    if (call.mode == SIEVE_VERIFY_MATCH) {
        res->sampled.resize(rows);
        finish_device_input(rows, vocab, input, res->sampled.data(), &message, false);
        res->statuses.resize(rows);
        for (uint32_t r = 0; r < rows; ++r) res->statuses[r] = res->sampled[r].status;
        return;
    }
    // The distributions' rows were read where the app keeps them or came
    // through the ingest pass (prepare_positions: counted with the
    // recording, account); rows read on the host (the fallback, a chain
    // without a collect pass) have the ingest pass run for them.
    read_distributions(call.vocab, all_rows(call.rows), rec.key.collect, device_host_rows(input, rows, vocab),
                       &res->dists, &res->statuses, &message);
}

std::vector<ref::Verification> GpuChain::walk_positions(const VerifyCall& call, const PositionResults& res) {
    std::vector<ref::Verification> results(call.drafts.size());
    for (size_t s = 0; s < call.drafts.size(); ++s) {
        const Draft& d = call.drafts[s];
        const uint32_t step = call.headers[s].step;
        results[s] = ref::walk_sequence(d.tokens.size(), [&](size_t i) {
            const size_t row = static_cast<size_t>(call.first_row[s]) + i;
            ref::PositionOutcome o;
            o.status = res.statuses[row];
            if (o.status != SIEVE_OK) {
                o.message = sieve_status_name(o.status);
                return o;
            }
            if (call.mode == SIEVE_VERIFY_REJECTION)
                return ref::rejection_position(res.dists[row], d.tokens, d.probs, i, rows_[s].seed,
                                               step + static_cast<uint32_t>(i));
            o.token = as_result(res.sampled[row]);
            o.go_on = ref::match_goes_on(d.tokens, i, o.token.token);
            return o;
        });
        if (results[s].status == SIEVE_OK) commit_verified(static_cast<int32_t>(s), call.headers[s], results[s], nullptr);
    }
    return results;
}

void GpuChain::verify_in_waves(const LogitsView& logits, const std::vector<Draft>& drafts,
                               const std::vector<int32_t>& first_row, std::vector<ref::Verification>* results,
                               std::vector<uint32_t>* steps) {
    const size_t n_seq = drafts.size();
    const uint32_t capacity = history_capacity();
    // What the waves can change in each slot (at most drafts + 1 tokens), to
    // put back: not the whole record, read uncached on a GPU.
    std::vector<SlotUndo> before(n_seq);
    std::vector<int32_t> slots(n_seq);
    for (size_t s = 0; s < n_seq; ++s) {
        slots[s] = slot_of(static_cast<int32_t>(s));
        before[s] = slot_undo_point(slot_record(slots[s]), capacity, drafts[s].tokens.size() + 1);
        (*steps)[s] = before[s].header[S_STEP];
    }
    std::vector<size_t> active(n_seq);
    for (size_t s = 0; s < n_seq; ++s) active[s] = s;
    std::vector<float> packed, scratch;
    std::vector<sieve_token> sampled;
    try {
        for (size_t i = 0; !active.empty(); ++i) {
            const int32_t rows = static_cast<int32_t>(active.size());
            packed.resize(static_cast<size_t>(rows) * static_cast<size_t>(logits.vocab));
            for (size_t k = 0; k < active.size(); ++k) {
                const float* row = logits.row_f32(first_row[active[k]] + static_cast<int32_t>(i), &scratch);
                std::copy(row, row + logits.vocab, packed.begin() + static_cast<std::ptrdiff_t>(k * logits.vocab));
            }
            sampled.assign(active.size(), sieve_token{});
            std::string message;
            {
                PositionRows swap(rows_, slot_of_row_, positions_, logprobs_n_, n_seq);
                for (size_t k = 0; k < active.size(); ++k) {
                    rows_[k] = swap.saved_row(active[k]);
                    slot_of_row_[k] = slots[active[k]];
                }
                sample(LogitsView::f32(packed.data(), rows, logits.vocab), 1, nullptr, sampled.data(), &message, true);
            }
            std::vector<size_t> next;
            for (size_t k = 0; k < active.size(); ++k) {
                const size_t s = active[k];
                ref::Verification& v = (*results)[s];
                if (sampled[k].status != SIEVE_OK) {
                    v.status = sampled[k].status;
                    v.message = "position " + std::to_string(i) + ": " + sieve_status_name(sampled[k].status);
                    v.tokens.clear();
                    slot_undo(slot_record(slots[s]), capacity, before[s]);  // as it was
                    continue;
                }
                v.tokens.push_back(as_result(sampled[k]));
                if (i < drafts[s].tokens.size() && sampled[k].token == drafts[s].tokens[i]) next.push_back(s);
            }
            active.swap(next);
        }
    } catch (...) {
        // A call-level failure part way (a wait that ran out, the device
        // lost) leaves every slot as the call found it: once the failed
        // wave's submission has finished, since it still writes them (after
        // a wait that ran out, at the chain's next wait that succeeds).
        submitter_.when_idle([this, capacity, slots = std::move(slots), before = std::move(before)] {
            for (size_t s = 0; s < slots.size(); ++s) slot_undo(slot_words_at(slots[s]), capacity, before[s]);
        });
        throw;
    }
}

std::vector<float> GpuChain::rows_from_device(const sieve_vulkan_logits& in) {
    submitter_.wait_pending();
    const uint32_t rows = static_cast<uint32_t>(in.rows), vocab = static_cast<uint32_t>(in.vocab);
    const float* host = device_input_.rows_on_host(
        device_input_.ingest_command(device_input_.source(in)),
        buffers_.call_logits_bytes(rows, static_cast<uint64_t>(config_.max_vocab), vocab));
    counters_.count_ingest(ingest_dispatches(rows));
    counters_.count_row_passes(rows);
    std::vector<float> packed(static_cast<size_t>(rows) * vocab);
    for (uint32_t r = 0; r < rows; ++r) {
        const float* row = host + buffers_.row_at(r, static_cast<uint64_t>(config_.max_vocab), vocab);
        std::copy(row, row + vocab, packed.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * vocab));
    }
    return packed;
}

bool GpuChain::verify_sequences(const LogitsView& logits, const sieve_vulkan_logits* device,
                                const std::vector<Draft>& drafts, const std::vector<int32_t>& first_row,
                                sieve_verify_mode mode, std::vector<ref::Verification>* results,
                                std::vector<uint32_t>* steps) {
    if (mode == SIEVE_VERIFY_MATCH && ref::chain_learns(config_.samplers)) {
        if (!device) {
            verify_in_waves(logits, drafts, first_row, results, steps);
            return true;
        }
        // Each wave reads its positions on the host: the rows come back once.
        const std::vector<float> rows = rows_from_device(*device);
        verify_in_waves(LogitsView::f32(rows.data(), logits.rows, logits.vocab), drafts, first_row, results, steps);
        return true;
    }
    std::unique_ptr<VerifyCall> call = begin_positions(drafts, first_row, mode, logits.rows, logits.vocab);
    PositionResults res;
    std::string message;  // each row's status is walked per sequence
    if (device) {
        const DeviceInput input = prepare_positions(*call, *device);
        const Recording& rec = run_device_input(kind_of(mode), static_cast<uint32_t>(logits.vocab), input);
        read_positions(*call, rec, input, &res);
    } else if (mode == SIEVE_VERIFY_MATCH) {
        res.sampled.resize(static_cast<size_t>(logits.rows));
        sample(logits, 1, nullptr, res.sampled.data(), &message, false);
        for (const sieve_token& t : res.sampled) res.statuses.push_back(t.status);
    } else {
        distributions(logits, all_rows(logits.rows), &res.dists, &res.statuses, &message);
    }
    call->swap.reset();  // the chain's own rows again: the walk commits to their slots
    *results = walk_positions(*call, res);
    *steps = call->steps();
    return true;
}

DeviceInput GpuChain::prepare_positions(const VerifyCall& call, const sieve_vulkan_logits& in) {
    return prepare_device_input(in, kind_of(call.mode), false);
}

void GpuChain::verify_async(const LogitsView& shape, const sieve_vulkan_logits& in, std::vector<Draft> drafts,
                            sieve_verify_mode mode, VkCommandBuffer cmd, const sieve_vulkan_sync* sync) {
    std::vector<int32_t> first_row = check_verify(shape, drafts, mode);
    if (mode == SIEVE_VERIFY_MATCH && ref::chain_learns(config_.samplers))
        fail(SIEVE_ERROR_INVALID_ARGUMENT,
             "the match mode of a chain with mirostat, mirostat_v2 or adaptive_p verifies one position after "
             "another, each from the one before: sieve_verify_vulkan does, its async and recorded forms do not");
    check_timeline(sync);
    std::unique_ptr<VerifyCall> call = begin_positions(std::move(drafts), std::move(first_row), mode, shape.rows,
                                                       shape.vocab);
    DeviceInput input = prepare_positions(*call, in);
    launch(kind_of(mode), static_cast<uint32_t>(shape.rows), static_cast<uint32_t>(shape.vocab), std::move(input), cmd,
           sync, std::move(call));
}

sieve_status GpuChain::finish_verify(bool recorded, uint64_t timeout_ns, sieve_token* tokens, sieve_verified* out,
                                     std::string* message) {
    if (!in_flight_) return ChainImpl::finish_verify(recorded, timeout_ns, tokens, out, message);
    check_finisher(true, recorded);
    if (!recorded)
        await_in_flight(timeout_ns, "the verification has not finished yet; it stays in flight: wait again",
                        [&](sieve_status status) {
                            // Every sequence and position of the call reads as failed
                            // (no slot was touched).
                            const VerifyCall& call = *in_flight_->verify;
                            for (size_t s = 0; s < call.drafts.size(); ++s) out[s] = sieve_verified{status, 0, 0};
                            sieve_token failed{};
                            failed.token = -1;
                            failed.status = status;
                            for (int32_t i = 0; i < call.rows; ++i) tokens[i] = failed;
                        });
    InFlight done = take_in_flight();
    VerifyCall& call = *done.verify;
    PositionResults res;
    read_positions(call, done.rec, done.input, &res);
    call.swap.reset();  // the chain's own rows again: the walk commits to their slots
    const std::vector<ref::Verification> results = walk_positions(call, res);
    return write_verified(call.drafts, call.first_row, results, call.steps(), tokens, out, message);
}

} // namespace sieve
