// The CPU backend: the twin itself, row by row. It is what `--device cpu` runs
// and what `sieve bench` compares the GPU against. Its slots are the same word
// records as the GPU's (slot_layout.hpp), in host memory.
#include "chain/context.hpp"
#include "api/error.hpp"
#include "vulkan/slot_layout.hpp"

#include <cstring>

namespace sieve {

namespace {

class CpuChain final : public ChainImpl {
public:
    explicit CpuChain(const ChainConfig& config)
        : ChainImpl(config),
          slots_(static_cast<size_t>(config.max_slots) * slot_words(static_cast<uint32_t>(config.history_capacity)), 0u) {}

    sieve_status sample(const LogitsView& logits, int32_t draws, int32_t* tokens, sieve_token* out,
                        std::string* message, bool commit) override {
        const int32_t rows = logits.rows, vocab = logits.vocab;
        sieve_status first = SIEVE_OK;
        begin_logprobs(rows);
        // The rows' slots as the twin takes them, read once per call: draws of
        // one call share the distribution (no slot changes between them).
        std::vector<ref::SlotState> states(static_cast<size_t>(rows));
        for (int32_t r = 0; r < rows; ++r)
            states[static_cast<size_t>(r)] = slot_to_state(slot_record(slot_of(r)), history_capacity());
        for (int32_t d = 0; d < draws; ++d) {
            ++submits_;
            for (int32_t r = 0; r < rows; ++r) {
                uint32_t* slot = slot_record(slot_of(r));
                const uint32_t step = slot[S_STEP];
                const ref::RowParams& params = params_for(r, d);
                ref::SlotState learnt = states[static_cast<size_t>(r)];
                const float* row = logits.row_f32(r, &scratch_);
                ref::RowResult res = ref::sample_row(config_.samplers, row, vocab, params, step, 0, &learnt);
                if (res.status == SIEVE_OK && logprobs_n_ >= 0)
                    store_logprobs(r, ref::raw_logprobs(row, vocab, res.token, logprobs_n_));
                sieve_token t{};
                t.token = res.status == SIEVE_OK ? res.token : -1;
                t.p = res.p;
                t.logprob = res.logprob;
                t.status = res.status;
                t.seed = rows_[static_cast<size_t>(r)].seed;
                t.step = step;
                t.row_passes = 0;
                if (res.status == SIEVE_OK) {
                    slot[S_STEP] = step + 1;
                    if (commit) {
                        slot_store_learnt(slot, learnt);
                        slot_append(slot, history_capacity(), &res.token, 1);
                    }
                } else if (first == SIEVE_OK) {
                    first = res.status;
                    *message = "row " + std::to_string(r) + ": " + res.message;
                }
                if (out) out[r] = t;
                if (tokens) tokens[static_cast<size_t>(r) * draws + d] = t.token;
            }
        }
        return first;
    }

    sieve_status distributions(const LogitsView& logits, const std::vector<int32_t>& wanted,
                               std::vector<std::vector<ref::Weighted>>* out, std::vector<sieve_status>* statuses,
                               std::string* message) override {
        // The distribution each row's next token would be drawn from: at its
        // slot's current step (XTC's coin depends on it) and state, changing
        // neither.
        sieve_status first = SIEVE_OK;
        out->assign(wanted.size(), {});
        statuses->assign(wanted.size(), SIEVE_OK);
        for (size_t k = 0; k < wanted.size(); ++k) {
            const int32_t row = wanted[k];
            const uint32_t* slot = slot_record(slot_of(row));
            const ref::SlotState state = slot_to_state(slot, history_capacity());
            std::string why;
            const sieve_status s = ref::row_distribution(config_.samplers, logits.row_f32(row, &scratch_), logits.vocab,
                                                         row_params(row), &(*out)[k], &why, slot[S_STEP], 0, &state);
            (*statuses)[k] = s;
            if (s != SIEVE_OK && first == SIEVE_OK) {
                first = s;
                *message = "row " + std::to_string(row) + ": " + why;
            }
        }
        return first;
    }

    sieve_counters counters() const override {
        sieve_counters c{};
        c.submits = submits_;
        return c;
    }

    void plan_figures(int32_t, int32_t, uint32_t* dispatches, uint32_t* row_passes) const override {
        *dispatches = 0;
        *row_passes = 0;
    }

protected:
    uint32_t* slot_record(int32_t slot) override {
        return slots_.data() + static_cast<size_t>(slot) * slot_words(history_capacity());
    }

private:
    // A row's parameters, built once per call (the bias list and bitmask are
    // copied once, not once per draw).
    const ref::RowParams& params_for(int32_t r, int32_t draw) {
        if (draw == 0) {
            if (params_cache_.size() < rows_.size()) params_cache_.resize(rows_.size());
            params_cache_[static_cast<size_t>(r)] = row_params(r);
        }
        return params_cache_[static_cast<size_t>(r)];
    }

    std::vector<uint32_t> slots_;
    std::vector<ref::RowParams> params_cache_;
    std::vector<float> scratch_;  // a row widened to f32 (f16/bf16 input)
    uint64_t submits_ = 0;
};

class CpuContext final : public ContextImpl {
public:
    sieve_backend backend() const override { return SIEVE_BACKEND_CPU; }
    sieve_device_info device_info() const override {
        sieve_device_info info{};
        std::strncpy(info.name, "cpu (Sieve CPU twin)", sizeof(info.name) - 1);
        std::strncpy(info.driver, "reference", sizeof(info.driver) - 1);
        info.type = SIEVE_DEVICE_CPU;
        return info;
    }
    std::unique_ptr<ChainImpl> create_chain(const ChainConfig& config) override {
        // Host memory is this backend's device memory: like a GPU chain beyond
        // its device's limits, a chain whose rows' parameters and slot records
        // need more than 1 GiB is refused before anything is allocated (a huge
        // max_slots would otherwise zero-fill gigabytes or die in the allocator).
        constexpr uint64_t kMaxChainBytes = 1ull << 30;
        const uint64_t bytes =
            static_cast<uint64_t>(config.max_rows) * sizeof(ref::RowParams) +
            static_cast<uint64_t>(config.max_slots) * slot_words(static_cast<uint32_t>(config.history_capacity)) * 4;
        if (bytes > kMaxChainBytes)
            fail(SIEVE_ERROR_DEVICE_LIMIT, "capacity of " + std::to_string(config.max_rows) + " rows and " +
                                               std::to_string(config.max_slots) + " slots with a history of " +
                                               std::to_string(config.history_capacity) + " tokens needs " +
                                               std::to_string(bytes) + " bytes of host memory; the CPU backend " +
                                               "serves at most " + std::to_string(kMaxChainBytes));
        return std::make_unique<CpuChain>(config);
    }
};

} // namespace

std::unique_ptr<ContextImpl> make_cpu_context() { return std::make_unique<CpuContext>(); }

} // namespace sieve
