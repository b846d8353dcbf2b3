// Header-only C++ RAII wrapper over the C API (sieve.h). It never bypasses the C
// API: every call goes through it, failures become sieve::Error exceptions that
// carry the status and the library's message.
#pragma once

#include "sieve.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sieve {

class Error : public std::runtime_error {
public:
    Error(sieve_status status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    sieve_status status() const noexcept { return status_; }

private:
    sieve_status status_;
};

inline void check(sieve_status status) {
    if (status != SIEVE_OK) {
        throw Error(status, std::string(sieve_status_name(status)) + ": " + sieve_last_error());
    }
}

inline std::vector<sieve_device_info> devices() {
    uint32_t count = 0;
    check(sieve_enumerate_devices(nullptr, &count));
    std::vector<sieve_device_info> infos(count);
    if (count > 0) check(sieve_enumerate_devices(infos.data(), &count));
    infos.resize(count);
    return infos;
}

struct ContextOptions {
    sieve_context_options raw;
    ContextOptions() { sieve_context_options_init(&raw); }
    ContextOptions& backend(sieve_backend b) { raw.backend = b; return *this; }
    ContextOptions& device(const char* d) { raw.device = d; return *this; }
    ContextOptions& validation(int32_t v) { raw.validation = v; return *this; }
    ContextOptions& constrained(uint32_t disable_features, uint32_t max_shared, uint32_t max_wg) {
        raw.disable_features = disable_features;
        raw.max_shared_memory = max_shared;
        raw.max_workgroup_size = max_wg;
        return *this;
    }
    // "device", "gpu", "constrained" or "gpu,constrained" (sieve.h: sieve_profile_bits);
    // nullptr = env SIEVE_PROFILE. The string must outlive the context's creation.
    ContextOptions& profile(const char* name) { raw.profile = name; return *this; }
    // Microseconds a blocking call polls before it sleeps (-1: env or default; 0: none).
    ContextOptions& wait_spin(int32_t us) { raw.wait_spin_us = us; return *this; }
    // A cap on the binding range the plans use (0: the device's maxStorageBufferRange).
    ContextOptions& max_storage_buffer_range(uint64_t bytes) { raw.max_storage_buffer_range = bytes; return *this; }
    ContextOptions& on_message(sieve_message_callback cb, void* user) {
        raw.message_callback = cb;
        raw.message_user_data = user;
        return *this;
    }
};

class Context {
public:
    Context() : Context(ContextOptions()) {}
    explicit Context(const ContextOptions& options) { check(sieve_context_create(&options.raw, &handle_)); }
    explicit Context(sieve_context* adopt) noexcept : handle_(adopt) {}
    ~Context() { sieve_context_destroy(handle_); }
    Context(Context&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
    Context& operator=(Context&& o) noexcept {
        if (this != &o) {
            sieve_context_destroy(handle_);
            handle_ = std::exchange(o.handle_, nullptr);
        }
        return *this;
    }
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    sieve_context* get() const noexcept { return handle_; }
    sieve_device_info device_info() const {
        sieve_device_info info{};
        check(sieve_context_device_info(handle_, &info));
        return info;
    }
    uint64_t validation_messages() const {
        uint64_t n = 0;
        check(sieve_context_validation_messages(handle_, &n));
        return n;
    }

private:
    sieve_context* handle_ = nullptr;
};

struct ChainDesc {
    sieve_chain_desc raw;
    std::string samplers_storage;
    ChainDesc() { sieve_chain_desc_init(&raw); }
    ChainDesc& samplers(std::string s) {
        samplers_storage = std::move(s);
        raw.samplers = samplers_storage.c_str();
        return *this;
    }
    ChainDesc& capacity(int32_t rows, int32_t vocab) { raw.max_rows = rows; raw.max_vocab = vocab; return *this; }
    ChainDesc& temperature(float t) { raw.temperature = t; return *this; }
    ChainDesc& seed(uint32_t s) { raw.seed = s; return *this; }
    ChainDesc& min_keep(int32_t m) { raw.min_keep = m; return *this; }
    ChainDesc& slots(int32_t n) { raw.max_slots = n; return *this; }
    ChainDesc& history_capacity(int32_t n) { raw.history_capacity = n; return *this; }
};

class Chain {
public:
    Chain(const Context& context, const ChainDesc& desc) {
        sieve_chain_desc d = desc.raw;
        d.samplers = desc.samplers_storage.empty() ? desc.raw.samplers : desc.samplers_storage.c_str();
        check(sieve_chain_create(context.get(), &d, &handle_));
    }
    ~Chain() { sieve_chain_destroy(handle_); }
    Chain(Chain&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
    Chain& operator=(Chain&& o) noexcept {
        if (this != &o) {
            sieve_chain_destroy(handle_);
            handle_ = std::exchange(o.handle_, nullptr);
        }
        return *this;
    }
    Chain(const Chain&) = delete;
    Chain& operator=(const Chain&) = delete;

    sieve_chain* get() const noexcept { return handle_; }

    void set(sieve_param param, double value, int32_t row = -1) { check(sieve_chain_set_param(handle_, row, param, value)); }
    double get_param(sieve_param param, int32_t row) const {
        double v = 0;
        check(sieve_chain_get_param(handle_, row, param, &v));
        return v;
    }
    void reset(int32_t row = -1) { check(sieve_chain_reset(handle_, row)); }

    // Sequence slots (sieve.h): rows -> slots, host-chosen tokens, slot copies
    // and snapshots, a slot's history, a row's DRY breakers.
    void set_slots(const std::vector<int32_t>& slots) {
        check(sieve_chain_set_slots(handle_, slots.empty() ? nullptr : slots.data(), static_cast<int32_t>(slots.size())));
    }
    void accept(int32_t row, const std::vector<int32_t>& tokens) {
        check(sieve_accept(handle_, row, tokens.data(), static_cast<int32_t>(tokens.size())));
    }
    void copy_slot(int32_t src, int32_t dst) { check(sieve_chain_copy_slot(handle_, src, dst)); }
    void reset_slot(int32_t slot) { check(sieve_chain_reset_slot(handle_, slot)); }
    std::vector<uint8_t> save_slot(int32_t slot) {
        size_t n = 0;
        check(sieve_chain_slot_state_size(handle_, &n));
        std::vector<uint8_t> blob(n);
        check(sieve_chain_save_slot(handle_, slot, blob.data(), blob.size()));
        return blob;
    }
    void restore_slot(int32_t slot, const std::vector<uint8_t>& blob) {
        check(sieve_chain_restore_slot(handle_, slot, blob.data(), blob.size()));
    }
    std::vector<int32_t> slot_history(int32_t slot) {
        int32_t count = 0;
        check(sieve_chain_slot_history(handle_, slot, nullptr, 0, &count));
        std::vector<int32_t> tokens(static_cast<size_t>(count));
        check(sieve_chain_slot_history(handle_, slot, tokens.data(), count, &count));
        return tokens;
    }
    void set_dry_breakers(const std::vector<std::vector<int32_t>>& breakers, int32_t row = -1) {
        std::vector<int32_t> tokens, lengths;
        for (const auto& b : breakers) {
            tokens.insert(tokens.end(), b.begin(), b.end());
            lengths.push_back(static_cast<int32_t>(b.size()));
        }
        check(sieve_chain_set_dry_breakers(handle_, row, tokens.data(), lengths.data(),
                                           static_cast<int32_t>(lengths.size())));
    }
    // llama.cpp's --logit-bias for a row (-1 = every row); empty clears.
    void set_logit_bias(const std::vector<int32_t>& tokens, const std::vector<float>& biases, int32_t row = -1) {
        if (tokens.size() != biases.size())
            throw Error(SIEVE_ERROR_INVALID_ARGUMENT, "invalid_argument: tokens and biases differ in length");
        check(sieve_chain_set_logit_bias(handle_, row, tokens.data(), biases.data(),
                                         static_cast<int32_t>(tokens.size())));
    }
    // A row's allowed-token bitmask (-1 = every row); empty clears.
    void set_token_bitmask(const std::vector<uint32_t>& words, int32_t row = -1) {
        check(sieve_chain_set_token_bitmask(handle_, row, words.empty() ? nullptr : words.data(),
                                            static_cast<int32_t>(words.size())));
    }

    // Throws only for call-level failures; per-row failures are in each token's
    // status (the C call's row-failure status is not an exception here).
    std::vector<sieve_token> sample(const float* logits, int32_t rows, int32_t vocab) {
        std::vector<sieve_token> out(rows > 0 ? static_cast<size_t>(rows) : 0);
        sieve_status s = sieve_sample(handle_, logits, rows, vocab, out.data());
        if (s != SIEVE_OK && !row_level(s)) check(s);
        return out;
    }

    // f32/f16/bf16 logits with a row stride (sieve_sample_logits).
    std::vector<sieve_token> sample(const sieve_logits& logits) {
        std::vector<sieve_token> out(logits.rows > 0 ? static_cast<size_t>(logits.rows) : 0);
        sieve_status s = sieve_sample_logits(handle_, &logits, out.data());
        if (s != SIEVE_OK && !row_level(s)) check(s);
        return out;
    }

    // One sequence's verification (sieve_verify): its emitted tokens (accepted
    // drafts and one more), its status and how many drafts were accepted.
    struct Verified {
        sieve_status status = SIEVE_OK;
        int32_t n_accepted = 0;
        std::vector<sieve_token> tokens;
    };

    // Verifies drafts[s] for sequence s (row s) over logits holding every
    // sequence's n_draft + 1 positions back to back. Throws on a call-level
    // failure; a failed sequence carries its status.
    std::vector<Verified> verify(const sieve_logits& logits, const std::vector<sieve_draft>& drafts,
                                 sieve_verify_mode mode) {
        std::vector<sieve_token> tokens(logits.rows > 0 ? static_cast<size_t>(logits.rows) : 0);
        std::vector<sieve_verified> out(drafts.size());
        sieve_status s = sieve_verify(handle_, &logits, drafts.data(), static_cast<int32_t>(drafts.size()), mode,
                                      tokens.data(), out.data());
        if (s != SIEVE_OK && !row_level(s)) check(s);
        std::vector<Verified> result(drafts.size());
        size_t row = 0;
        for (size_t i = 0; i < drafts.size(); ++i) {
            result[i].status = out[i].status;
            result[i].n_accepted = out[i].n_accepted;
            result[i].tokens.assign(tokens.begin() + static_cast<std::ptrdiff_t>(row),
                                    tokens.begin() + static_cast<std::ptrdiff_t>(row + out[i].n_tokens));
            row += static_cast<size_t>(drafts[i].n_draft) + 1;
        }
        return result;
    }

    std::vector<int32_t> draws(const float* logits, int32_t rows, int32_t vocab, int32_t n,
                               std::vector<sieve_token>* last = nullptr) {
        std::vector<int32_t> tokens(static_cast<size_t>(rows > 0 ? rows : 0) * static_cast<size_t>(n > 0 ? n : 0));
        std::vector<sieve_token> out(rows > 0 ? static_cast<size_t>(rows) : 0);
        sieve_status s = sieve_sample_draws(handle_, logits, rows, vocab, n, tokens.data(), out.data());
        if (s != SIEVE_OK && !row_level(s)) check(s);
        if (last) *last = std::move(out);
        return tokens;
    }

    struct Entry {
        int32_t id;
        float p;
    };
    std::vector<Entry> distribution(const float* logits, int32_t rows, int32_t vocab, int32_t row) {
        int32_t count = 0;
        check(sieve_chain_distribution(handle_, logits, rows, vocab, row, nullptr, nullptr, 0, &count));
        std::vector<int32_t> ids(static_cast<size_t>(count));
        std::vector<float> probs(static_cast<size_t>(count));
        check(sieve_chain_distribution(handle_, logits, rows, vocab, row, ids.data(), probs.data(), count, &count));
        std::vector<Entry> out(static_cast<size_t>(count));
        for (size_t i = 0; i < out.size(); ++i) out[i] = {ids[i], probs[i]};
        return out;
    }

    sieve_counters counters() const {
        sieve_counters c{};
        check(sieve_chain_counters(handle_, &c));
        return c;
    }
    void set_profiling(bool enabled) { check(sieve_chain_set_profiling(handle_, enabled ? 1 : 0)); }
    sieve_call_timing call_timing() const {
        sieve_call_timing t{};
        check(sieve_chain_call_timing(handle_, &t));
        return t;
    }
    std::vector<sieve_stage_time> stage_times() const {
        uint32_t n = 0;
        check(sieve_chain_stage_times(handle_, nullptr, 0, &n));
        std::vector<sieve_stage_time> out(n);
        if (n > 0) check(sieve_chain_stage_times(handle_, out.data(), n, &n));
        out.resize(n);
        return out;
    }
    std::pair<uint32_t, uint32_t> plan_figures(int32_t rows, int32_t vocab) const {
        uint32_t d = 0, p = 0;
        check(sieve_chain_plan_figures(handle_, rows, vocab, &d, &p));
        return {d, p};
    }
    // An estimate of each dispatch's GPU time on the reference GPU, not a measurement.
    std::vector<sieve_stage_estimate> plan_estimate(int32_t rows, int32_t vocab) const {
        uint32_t n = 0;
        check(sieve_chain_plan_estimate(handle_, rows, vocab, nullptr, 0, &n));
        std::vector<sieve_stage_estimate> out(n);
        if (n > 0) check(sieve_chain_plan_estimate(handle_, rows, vocab, out.data(), n, &n));
        out.resize(n);
        return out;
    }

    // Row-level statuses: the call ran, some rows could not be sampled.
    static bool row_level(sieve_status s) {
        return s == SIEVE_ERROR_NON_FINITE_LOGIT || s == SIEVE_ERROR_ALL_MASKED;
    }

private:
    sieve_chain* handle_ = nullptr;
};

} // namespace sieve
