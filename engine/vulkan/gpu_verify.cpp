// sieve_verify on the GPU: every position of every sequence is one row of one
// submission, with its sequence's parameters and slot, the slot's step plus
// the position, and the drafts before it seen by the penalties and DRY after
// the slot's history (RowPosition; the slot itself is neither read past nor
// written: ROW_HOLD_STEP, no commit). The match mode samples every position;
// the rejection mode reads every position's final distribution. The host
// then walks each sequence's positions with the twin's rule
// (reference/speculative.cpp) and commits the emitted tokens to the slot.
#include "vulkan/gpu_chain.hpp"

namespace sieve {

namespace {

// The chain's per-row state swapped for the positions' during the call, and
// back whatever happens.
struct PositionRows {
    PositionRows(std::vector<ref::RowParams>& rows, std::vector<int32_t>& slots, std::vector<RowPosition>& positions,
                 int32_t& logprobs)
        : rows_(rows), slots_(slots), positions_(positions), logprobs_(logprobs), saved_rows_(rows),
          saved_slots_(slots), saved_logprobs_(logprobs) {
        logprobs_ = -1;  // the positions' raw logprobs are not asked for
    }
    ~PositionRows() {
        rows_ = std::move(saved_rows_);
        slots_ = std::move(saved_slots_);
        positions_.clear();
        logprobs_ = saved_logprobs_;
    }
    std::vector<ref::RowParams>& rows_;
    std::vector<int32_t>& slots_;
    std::vector<RowPosition>& positions_;
    int32_t& logprobs_;
    std::vector<ref::RowParams> saved_rows_;
    std::vector<int32_t> saved_slots_;
    int32_t saved_logprobs_;
};

ref::RowResult as_result(const sieve_token& t) {
    ref::RowResult r;
    r.token = t.token;
    r.p = t.p;
    r.logprob = t.logprob;
    r.status = t.status;
    return r;
}

} // namespace

void GpuChain::verify_in_waves(const LogitsView& logits, const std::vector<Draft>& drafts,
                               const std::vector<int32_t>& first_row, std::vector<ref::Verification>* results,
                               std::vector<uint32_t>* steps) {
    const size_t n_seq = drafts.size();
    const size_t words = slot_words(history_capacity());
    std::vector<std::vector<uint32_t>> before(n_seq);
    std::vector<int32_t> slots(n_seq);
    for (size_t s = 0; s < n_seq; ++s) {
        slots[s] = slot_of(static_cast<int32_t>(s));
        const uint32_t* record = slot_record(slots[s]);
        before[s].assign(record, record + words);
        (*steps)[s] = record[S_STEP];
    }
    std::vector<size_t> active(n_seq);
    for (size_t s = 0; s < n_seq; ++s) active[s] = s;
    std::vector<float> packed, scratch;
    std::vector<sieve_token> sampled;
    // A call-level failure part way (the device lost, a wait that ran out)
    // leaves every slot as the call found it.
    const auto restore_all = [&] {
        for (size_t s = 0; s < n_seq; ++s) std::copy(before[s].begin(), before[s].end(), slot_record(slots[s]));
    };
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
                PositionRows swap(rows_, slot_of_row_, positions_, logprobs_n_);
                for (size_t k = 0; k < active.size(); ++k) {
                    rows_[k] = swap.saved_rows_[active[k]];
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
                    std::copy(before[s].begin(), before[s].end(), slot_record(slots[s]));  // as it was
                    continue;
                }
                v.tokens.push_back(as_result(sampled[k]));
                if (i < drafts[s].tokens.size() && sampled[k].token == drafts[s].tokens[i]) next.push_back(s);
            }
            active.swap(next);
        }
    } catch (...) {
        restore_all();
        throw;
    }
}

bool GpuChain::verify_sequences(const LogitsView& logits, const sieve_vulkan_logits* device,
                                const std::vector<Draft>& drafts, const std::vector<int32_t>& first_row,
                                sieve_verify_mode mode, std::vector<ref::Verification>* results,
                                std::vector<uint32_t>* steps) {
    if (mode == SIEVE_VERIFY_MATCH && ref::chain_learns(config_.samplers)) {
        if (device) return false;
        verify_in_waves(logits, drafts, first_row, results, steps);
        return true;
    }
    if (device && mode == SIEVE_VERIFY_REJECTION)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "the rejection mode reads every position's distribution back, which "
                                           "Sieve does from logits in host memory only (sieve_verify)");
    const size_t n_seq = drafts.size();
    const int32_t rows = logits.rows;
    std::vector<sieve_token> sampled;
    std::vector<std::vector<ref::Weighted>> dists;
    std::vector<sieve_status> statuses;
    {
        submitter_.wait_pending();
        PositionRows swap(rows_, slot_of_row_, positions_, logprobs_n_);
        positions_.assign(static_cast<size_t>(rows), RowPosition{});
        for (size_t s = 0; s < n_seq; ++s) {
            (*steps)[s] = slot_record(swap.saved_slots_[s])[S_STEP];
            for (size_t i = 0; i <= drafts[s].tokens.size(); ++i) {
                const size_t row = static_cast<size_t>(first_row[s]) + i;
                rows_[row] = swap.saved_rows_[s];
                slot_of_row_[row] = swap.saved_slots_[s];
                const uint32_t position = static_cast<uint32_t>(i);
                positions_[row] = RowPosition{position, drafts[s].tokens.data(), position};
            }
        }
        std::string message;
        if (mode == SIEVE_VERIFY_MATCH && device) {
            sampled.resize(static_cast<size_t>(rows));
            const DeviceInput input = prepare_device_input(*device, false);
            const Recording& rec = recorder_.recording(key_for(RecordingKind::Sample, static_cast<uint32_t>(rows),
                                                               static_cast<uint32_t>(logits.vocab), &input,
                                                               submitter_.profiling()));
            arm_collect(rec);
            submit_and_wait(rec, input.ingest);
            finish_device_input(static_cast<uint32_t>(rows), static_cast<uint32_t>(logits.vocab), input,
                                sampled.data(), &message, false);
        } else if (mode == SIEVE_VERIFY_MATCH) {
            sampled.resize(static_cast<size_t>(rows));
            sample(logits, 1, nullptr, sampled.data(), &message, false);
        } else {
            std::vector<int32_t> wanted(static_cast<size_t>(rows));
            for (int32_t r = 0; r < rows; ++r) wanted[static_cast<size_t>(r)] = r;
            distributions(logits, wanted, &dists, &statuses, &message);
        }
    }
    for (size_t s = 0; s < n_seq; ++s) {
        const Draft& d = drafts[s];
        ref::Verification& v = (*results)[s];
        const uint32_t step = (*steps)[s];
        const uint32_t seed = rows_[s].seed;
        for (size_t i = 0; i <= d.tokens.size(); ++i) {
            const size_t row = static_cast<size_t>(first_row[s]) + i;
            const sieve_status status = mode == SIEVE_VERIFY_MATCH ? sampled[row].status : statuses[row];
            if (status != SIEVE_OK) {
                v.status = status;
                v.message = "position " + std::to_string(i) + ": " + sieve_status_name(status);
                v.tokens.clear();
                break;
            }
            bool go_on = false;
            if (mode == SIEVE_VERIFY_MATCH) {
                v.tokens.push_back(as_result(sampled[row]));
                go_on = i < d.tokens.size() && sampled[row].token == d.tokens[i];
            } else if (i == d.tokens.size()) {
                v.tokens.push_back(ref::bonus_draw(dists[row], seed, step + static_cast<uint32_t>(i)));
            } else {
                const ref::RejectionStep r =
                    ref::rejection_step(dists[row], d.tokens[i], d.probs, i, seed, step + static_cast<uint32_t>(i));
                v.tokens.push_back(r.token);
                go_on = r.accepted;
            }
            if (!go_on) break;
        }
        if (v.status == SIEVE_OK) commit_verified(static_cast<int32_t>(s), step, v, nullptr);
    }
    return true;
}

} // namespace sieve
