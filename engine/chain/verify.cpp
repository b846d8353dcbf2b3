// sieve_verify at the chain level: the call's checks, then each sequence's
// verification, its emitted tokens written out and its slot advanced by them.
// The rule itself is the twin's (reference/speculative.cpp); a backend with a
// faster way (the GPU: every position of every sequence in one submission)
// overrides verify_sequences, and falls back here where it has none.
#include "chain/chain.hpp"

#include "vulkan/slot_layout.hpp"

namespace sieve {

std::vector<int32_t> ChainImpl::check_verify(const LogitsView& logits, const std::vector<Draft>& drafts,
                                             sieve_verify_mode mode) {
    // n_seq in 1..max_rows and a known mode: the entry point checks (verify_call).
    const int32_t n_seq = static_cast<int32_t>(drafts.size());
    if (mode == SIEVE_VERIFY_REJECTION && ref::chain_learns(config_.samplers))
        fail(SIEVE_ERROR_INVALID_CHAIN, "the rejection mode takes no chain with mirostat, mirostat_v2 or adaptive_p "
                                        "(their update depends on how a token was drawn)");
    std::vector<int32_t> first_row(drafts.size());
    int64_t rows = 0;
    for (int32_t s = 0; s < n_seq; ++s) {
        first_row[static_cast<size_t>(s)] = static_cast<int32_t>(std::min<int64_t>(rows, INT32_MAX));
        rows += static_cast<int64_t>(drafts[static_cast<size_t>(s)].tokens.size()) + 1;
    }
    if (rows != logits.rows)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "the drafts need " + std::to_string(rows) +
                                               " rows of logits (n_draft + 1 per sequence), the logits have " +
                                               std::to_string(logits.rows));
    for (int32_t s = 0; s < n_seq; ++s) {
        std::string why;
        const Draft& d = drafts[static_cast<size_t>(s)];
        if (ref::check_draft(d.tokens, d.probs, logits.vocab, mode, &why) != SIEVE_OK)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "sequence " + std::to_string(s) + ": " + why);
    }
    check_row_inputs(n_seq, logits.vocab);
    check_slots(n_seq, "sequence");
    return first_row;
}

sieve_status ChainImpl::verify(const LogitsView& logits, const sieve_vulkan_logits* device,
                               const std::vector<Draft>& drafts, sieve_verify_mode mode, sieve_token* tokens,
                               sieve_verified* out, std::string* message) {
    const std::vector<int32_t> first_row = check_verify(logits, drafts, mode);
    std::vector<ref::Verification> results(drafts.size());
    std::vector<uint32_t> steps(drafts.size());
    if (!verify_sequences(logits, device, drafts, first_row, mode, &results, &steps)) {
        if (device) sample_device(*device, nullptr, nullptr);  // refuses with sample_device's words
        verify_on_host(logits, drafts, first_row, mode, &results, &steps);
    }
    return write_verified(drafts, first_row, results, steps, tokens, out, message);
}

sieve_status ChainImpl::write_verified(const std::vector<Draft>& drafts, const std::vector<int32_t>& first_row,
                                       const std::vector<ref::Verification>& results,
                                       const std::vector<uint32_t>& steps, sieve_token* tokens, sieve_verified* out,
                                       std::string* message) const {
    sieve_status first = SIEVE_OK;
    for (size_t s = 0; s < drafts.size(); ++s) {
        const ref::Verification& v = results[s];
        const int32_t row0 = first_row[s];
        const int32_t positions = static_cast<int32_t>(drafts[s].tokens.size()) + 1;
        sieve_verified& o = out[s];
        o.status = v.status;
        o.n_tokens = v.status == SIEVE_OK ? static_cast<int32_t>(v.tokens.size()) : 0;
        o.n_accepted = o.n_tokens > 0 ? o.n_tokens - 1 : 0;
        for (int32_t i = 0; i < positions; ++i) {
            sieve_token t{};
            t.token = -1;
            t.status = v.status;
            if (i < o.n_tokens) {
                t.token = v.tokens[static_cast<size_t>(i)].token;
                t.p = v.tokens[static_cast<size_t>(i)].p;
                t.logprob = v.tokens[static_cast<size_t>(i)].logprob;
                t.seed = rows_[s].seed;
                t.step = steps[s] + static_cast<uint32_t>(i);
            }
            tokens[row0 + i] = t;
        }
        if (v.status != SIEVE_OK && first == SIEVE_OK) {
            first = v.status;
            *message = "sequence " + std::to_string(s) + ": " + v.message;
        }
    }
    return first;
}

void ChainImpl::verify_async(const LogitsView& shape, const sieve_vulkan_logits& logits, std::vector<Draft> drafts,
                             sieve_verify_mode mode, VkCommandBuffer_T*, const sieve_vulkan_sync*) {
    check_verify(shape, drafts, mode);
    sample_device(logits, nullptr, nullptr);  // refuses with sample_device's words
}

sieve_status ChainImpl::finish_verify(bool recorded, uint64_t, sieve_token*, sieve_verified*, std::string*) {
    fail(SIEVE_ERROR_INVALID_ARGUMENT,
         recorded ? "nothing to collect: no sieve_chain_record_verify call is in flight"
                  : "nothing to wait for: no sieve_verify_vulkan_async call is in flight");
}

void ChainImpl::verify_on_host(const LogitsView& logits, const std::vector<Draft>& drafts,
                               const std::vector<int32_t>& first_row, sieve_verify_mode mode,
                               std::vector<ref::Verification>* results, std::vector<uint32_t>* steps) {
    std::vector<std::vector<float>> scratch(static_cast<size_t>(SIEVE_MAX_DRAFT) + 1);
    for (size_t s = 0; s < drafts.size(); ++s) {
        const Draft& d = drafts[s];
        uint32_t* slot = slot_record(slot_of(static_cast<int32_t>(s)));
        ref::SlotState state = slot_to_state(slot, history_capacity());
        const SlotHeader header = slot_header(slot);
        const uint32_t step = header.step;
        std::vector<const float*> rows(d.tokens.size() + 1);
        for (size_t i = 0; i < rows.size(); ++i)
            rows[i] = logits.row_f32(first_row[s] + static_cast<int32_t>(i), &scratch[i]);
        const ref::RowParams params = row_params(static_cast<int32_t>(s));
        ref::Verification& v = (*results)[s];
        v = mode == SIEVE_VERIFY_MATCH
                ? ref::verify_match(config_.samplers, rows, logits.vocab, params, d.tokens, step, &state)
                : ref::verify_rejection(config_.samplers, rows, logits.vocab, params, d.tokens, d.probs, step, &state);
        (*steps)[s] = step;
        if (v.status != SIEVE_OK) continue;
        commit_verified(static_cast<int32_t>(s), header, v, mode == SIEVE_VERIFY_MATCH ? &state : nullptr);
    }
}

void ChainImpl::commit_verified(int32_t sequence, const SlotHeader& header, const ref::Verification& v,
                                const ref::SlotState* learnt) {
    uint32_t* slot = slot_record(slot_of(sequence));
    std::vector<int32_t> emitted;
    for (const ref::RowResult& r : v.tokens) emitted.push_back(r.token);
    slot_append(slot, history_capacity(), header, emitted.data(), emitted.size());
    if (learnt) slot_store_learnt(slot, *learnt);
    slot[S_STEP] = header.step + static_cast<uint32_t>(emitted.size());
}

} // namespace sieve
