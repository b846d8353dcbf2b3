// A sampler chain: the ordered samplers, its capacity and per-row parameters.
// The backends (GPU engine, CPU twin) implement sampling; the parameter logic
// and its validation live here once.
#pragma once

#include "api/error.hpp"
#include "chain/logits_view.hpp"
#include "reference/reference.hpp"

#include <cstdint>
#include <string>
#include <vector>

struct sieve_vulkan_logits;  // sieve_vulkan.h
struct sieve_vulkan_sync;
struct VkCommandBuffer_T;

namespace sieve {

struct SlotHeader;  // vulkan/slot_layout.hpp

struct ChainConfig {
    std::vector<ref::SamplerKind> samplers;  // parsed, ending in Dist or Greedy
    int32_t max_rows = 1;
    int32_t max_vocab = 1;
    float temperature = 0.8f;
    uint32_t seed = SIEVE_SEED_RANDOM;
    int32_t min_keep = 0;
    int32_t max_slots = 1;
    int32_t history_capacity = 1024;
};

// Validates a sieve_chain_desc and parses its samplers (throws Failure).
ChainConfig make_chain_config(const sieve_chain_desc& desc);

class ChainImpl {
public:
    explicit ChainImpl(const ChainConfig& config);
    virtual ~ChainImpl() = default;
    ChainImpl(const ChainImpl&) = delete;
    ChainImpl& operator=(const ChainImpl&) = delete;

    const ChainConfig& config() const { return config_; }

    void set_param(int32_t row, sieve_param param, double value);
    double get_param(int32_t row, sieve_param param) const;
    // Resets the slot the row maps to (-1: every slot).
    void reset(int32_t row);

    // Sequence slots (slot_layout.hpp). Validated here (throws Failure; a
    // failed call changes nothing).
    void set_slots(const int32_t* slots, int32_t n);
    void accept(int32_t row, const int32_t* tokens, int32_t n);
    void reset_slot(int32_t slot);
    void copy_slot(int32_t src, int32_t dst);
    size_t slot_state_size() const;
    void save_slot(int32_t slot, void* data, size_t size);
    void restore_slot(int32_t slot, const void* data, size_t size);
    std::vector<int32_t> slot_history(int32_t slot);
    void set_dry_breakers(int32_t row, const int32_t* tokens, const int32_t* lengths, int32_t n);
    // Throws INVALID_ARGUMENT when two of the call's rows map to one slot
    // (or a row to none); unit: what the caller calls a row ("sequence").
    void check_slots(int32_t rows, const char* unit = "row") const;

    // sieve_chain_set_logit_bias / sieve_chain_set_token_bitmask: validated here
    // (throws Failure; a failed call changes nothing). n = 0 / words = NULL clears.
    void set_logit_bias(int32_t row, const int32_t* tokens, const float* biases, int32_t n);
    void set_token_bitmask(int32_t row, const uint32_t* words, int32_t n_words);

    // sieve_chain_set_logprobs / sieve_chain_logprobs (validated here).
    void set_logprobs(int32_t n);
    sieve_logprobs logprobs(int32_t row) const;

    // Logit bias entries a row may have (the GPU keeps them in a fixed table;
    // more fail with SIEVE_ERROR_CAPACITY).
    virtual int32_t max_bias_entries() const { return INT32_MAX; }

    // Arguments are validated by the caller (check_call). tokens may be null
    // when draws == 1. Returns SIEVE_OK or the first failing row's status, with
    // the row's message in *message. commit: the drawn tokens join their slots'
    // histories and mirostat/adaptive-p learn from them (sieve_sample); else
    // only the steps advance (sieve_sample_draws).
    virtual sieve_status sample(const LogitsView& logits, int32_t draws, int32_t* tokens, sieve_token* out,
                                std::string* message, bool commit) = 0;
    // The final distributions of the call's rows listed in `wanted`, from one
    // run of the chain (no state changes): (*out)[k] and (*statuses)[k] for
    // wanted[k]; returns the first failing row's status, its message in
    // *message.
    virtual sieve_status distributions(const LogitsView& logits, const std::vector<int32_t>& wanted,
                                       std::vector<std::vector<ref::Weighted>>* out,
                                       std::vector<sieve_status>* statuses, std::string* message) = 0;
    sieve_status distribution(const LogitsView& logits, int32_t row, std::vector<ref::Weighted>* out,
                              std::string* message);
    // Zero-copy input (sieve_sample_vulkan): the GPU backend only; validated
    // by the caller as far as sizes go.
    virtual sieve_status sample_device(const sieve_vulkan_logits& logits, sieve_token* out, std::string* message);
    virtual void release_input() {}
    // Async and record-into (sieve_vulkan.h), the GPU backend only; the logits
    // and the sync's token buffer are validated by the caller as far as sizes
    // go. sync may be null. A call in flight makes check_idle refuse the
    // chain's other calls until wait/collect finishes it.
    virtual void sample_async(const sieve_vulkan_logits& logits, const sieve_vulkan_sync* sync);
    virtual sieve_status wait(uint64_t timeout_ns, sieve_token* out, std::string* message);
    virtual void record(VkCommandBuffer_T* cmd, const sieve_vulkan_logits& logits, const sieve_vulkan_sync* sync);
    virtual sieve_status finish_recorded(sieve_token* out, std::string* message);
    // The call that finishes the one in flight ("sieve_chain_wait" or
    // "sieve_chain_collect"), or null when none is.
    virtual const char* in_flight() const { return nullptr; }
    // Throws SIEVE_ERROR_PENDING while a call is in flight.
    void check_idle() const;
    virtual sieve_counters counters() const = 0;
    virtual void plan_figures(int32_t rows, int32_t vocab, uint32_t* dispatches, uint32_t* row_passes) const = 0;
    // The plan's dispatches with their estimated GPU time (vulkan/gpu_estimate.hpp);
    // the CPU backend has none.
    virtual std::vector<sieve_stage_estimate> plan_estimate(int32_t, int32_t) const { return {}; }
    virtual void set_profiling(bool) {}
    virtual std::vector<sieve_stage_time> stage_times() const { return {}; }
    // The last profiled call's timing; false where there is none (the CPU backend, no profiled call yet).
    virtual bool call_timing(sieve_call_timing*) const { return false; }

    // sieve_verify (chain/verify.cpp): sequence s is row s (its parameters and
    // slot); its n_draft + 1 positions are consecutive rows of `logits`.
    // Validated here (call-level failures throw: no slot changes). Writes
    // tokens[] (one per logits row) and out[] (one per sequence); returns the
    // first failed sequence's status, its message in *message.
    struct Draft {
        std::vector<int32_t> tokens;
        ref::DraftProbs probs;
    };
    // device: the logits in the app's VkBuffer (sieve_verify_vulkan; `logits`
    // then gives only their shape), else NULL.
    sieve_status verify(const LogitsView& logits, const sieve_vulkan_logits* device, const std::vector<Draft>& drafts,
                        sieve_verify_mode mode, sieve_token* tokens, sieve_verified* out, std::string* message);
    // sieve_verify_vulkan_async (cmd null: submitted, sync may be null) and
    // sieve_chain_record_verify (recorded into cmd): verify's checks and device
    // work, left in flight; finish_verify (recorded: the collect, else a wait
    // of up to timeout_ns) writes tokens[] and out[] as verify does. The GPU
    // backend only. shape: the logits' shape, as verify's `logits`.
    virtual void verify_async(const LogitsView& shape, const sieve_vulkan_logits& logits, std::vector<Draft> drafts,
                              sieve_verify_mode mode, VkCommandBuffer_T* cmd, const sieve_vulkan_sync* sync);
    virtual sieve_status finish_verify(bool recorded, uint64_t timeout_ns, sieve_token* tokens, sieve_verified* out,
                                       std::string* message);

    // Throws CAPACITY / INVALID_ARGUMENT for sizes the chain cannot take.
    void check_call(const float* logits, int32_t rows, int32_t vocab) const;
    // The same for a sieve_logits (its struct_size, dtype and row stride too).
    LogitsView check_call(const sieve_logits* logits) const;
    // The dtype, sizes and row stride of any input; returns the stride in
    // elements (0 resolved to vocab).
    // dtype: the caller's value as stored (raw_enum), checked before it is read as a sieve_dtype.
    int64_t check_layout(const void* data, int32_t dtype, int32_t rows, int32_t vocab, int64_t row_stride) const;
    // Throws INVALID_ARGUMENT when a row's bitmask is shorter than `vocab` needs,
    // its logit bias or its slot's history names a token >= vocab, and
    // INVALID_PARAMETER when its DRY breakers do (call-level: nothing is
    // sampled; the twin refuses the same rows).
    void check_row_inputs(int32_t rows, int32_t vocab);

protected:
    using Row = ref::RowParams;

    // A backend's own verification of every sequence (checked already;
    // first_row[s]: the logits row of sequence s's position 0; device: as
    // verify's): fills each sequence's result and its slot's step before the
    // call, and commits the successful ones (commit_verified). Returns false
    // to leave it to the twin (verify_on_host, host logits only), which the
    // CPU backend always does.
    virtual bool verify_sequences(const LogitsView&, const sieve_vulkan_logits*, const std::vector<Draft>&,
                                  const std::vector<int32_t>&, sieve_verify_mode, std::vector<ref::Verification>*,
                                  std::vector<uint32_t>*) {
        return false;
    }
    void verify_on_host(const LogitsView& logits, const std::vector<Draft>& drafts, const std::vector<int32_t>& first_row,
                        sieve_verify_mode mode, std::vector<ref::Verification>* results, std::vector<uint32_t>* steps);
    // The emitted tokens join the slot of `sequence`, whose step becomes the
    // header's step + their number; header: the slot's as the call found it
    // (slot_header), which the call left as it was; learnt: the slot's
    // learnt state after them (match mode; NULL leaves it).
    void commit_verified(int32_t sequence, const SlotHeader& header, const ref::Verification& v,
                         const ref::SlotState* learnt);
    // Each sequence's emitted tokens into tokens[] (its n_draft + 1 rows from
    // first_row[s]; -1 past them) and its counts into out[s]; returns the
    // first failed sequence's status, its message in *message.
    sieve_status write_verified(const std::vector<Draft>& drafts, const std::vector<int32_t>& first_row,
                                const std::vector<ref::Verification>& results, const std::vector<uint32_t>& steps,
                                sieve_token* tokens, sieve_verified* out, std::string* message) const;
    // sieve_verify's checks; returns each sequence's first logits row.
    std::vector<int32_t> check_verify(const LogitsView& logits, const std::vector<Draft>& drafts,
                                      sieve_verify_mode mode);

    // The words of a slot's record (slot_layout.hpp): host memory for the CPU
    // backend, the mapped slot buffer for the GPU (which first waits for any
    // submission still using it).
    virtual uint32_t* slot_record(int32_t slot) = 0;
    uint32_t history_capacity() const { return static_cast<uint32_t>(config_.history_capacity); }
    int32_t slot_of(int32_t row) const { return slot_of_row_[static_cast<size_t>(row)]; }

    // A row's parameters as the twin takes them.
    ref::RowParams row_params(int32_t row) const;
    bool greedy_terminal() const;
    // The temperature product the GPU divides by (1 without a temperature
    // sampler; <= 0 means llama.cpp's greedy masking).
    float row_scale(int32_t row) const;

    // Logprobs of the last sampling call: the backends start a call with
    // begin_logprobs(rows) and fill each successful row (when logprobs_n_ >= 0).
    void begin_logprobs(int32_t rows);
    void store_logprobs(int32_t row, const ref::RawLogprobs& raw);
    int32_t logprobs_n_ = -1;  // -1: off

    ChainConfig config_;
    std::vector<Row> rows_;
    std::vector<int32_t> slot_of_row_;

private:
    uint64_t inputs_versions_ = 0;  // the last RowParams::inputs_version given
    std::vector<sieve_logprobs> last_logprobs_;
    std::vector<bool> last_logprobs_valid_;
    void set_one(int32_t row, sieve_param param, double value);
    void check_slot(int32_t slot, const char* what) const;
    void check_history_tokens(int32_t rows, int32_t vocab);
};

} // namespace sieve
