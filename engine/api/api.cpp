// The C API of sieve.h: argument checks, exceptions turned into statuses and
// the thread's last-error message (api/guard.hpp). Nothing here samples; it
// forwards to ContextImpl/ChainImpl. sieve_vulkan.h: api_vulkan.cpp;
// speculative decoding: api_verify.cpp.
#include "api/guard.hpp"
#include "vulkan/calibration.hpp"
#include "vulkan/device_profile.hpp"
#include "chain/context.hpp"
#include "vulkan/gpu_context.hpp"
#include "vulkan/vk_instance.hpp"

#include <sieve/sieve.h>

#include <volk.h>

#include <sieve/sieve_vulkan.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <new>

using namespace sieve;
using namespace sieve::api;

namespace {

void check_param(const sieve_param& param) {
    const int32_t raw = raw_enum(param);
    if (raw < SIEVE_PARAM_TEMPERATURE || raw > SIEVE_PARAM_ADAPTIVE_DECAY)
        fail(SIEVE_ERROR_INVALID_PARAMETER, "unknown parameter " + std::to_string(raw));
}

sieve_context_options options_or_default(const sieve_context_options* options) {
    sieve_context_options o;
    sieve_context_options_init(&o);
    if (options) {
        // Fields were added at the end (wait_spin_us): an older caller's
        // struct ends before them and they keep their defaults.
        if (options->struct_size < offsetof(sieve_context_options, wait_spin_us))
            fail(SIEVE_ERROR_INVALID_ARGUMENT,
                 "sieve_context_options.struct_size is too small (call sieve_context_options_init)");
        std::memcpy(&o, options, std::min<size_t>(options->struct_size, sizeof(o)));
        o.struct_size = sizeof(o);
    }
    const int32_t backend = raw_enum(o.backend);
    if (backend != SIEVE_BACKEND_VULKAN && backend != SIEVE_BACKEND_CPU)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "unknown backend " + std::to_string(backend));
    if (o.disable_features & ~static_cast<uint32_t>(SIEVE_FEATURE_ALL))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "unknown feature bits in disable_features");
    // Vulkan guarantees every device these; the shaders are budgeted from them.
    if (o.max_shared_memory != 0 && o.max_shared_memory < 16384)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "max_shared_memory " + std::to_string(o.max_shared_memory) +
                                               " is below Vulkan's guaranteed 16384 bytes");
    if (o.max_workgroup_size != 0 && o.max_workgroup_size < 32)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "max_workgroup_size " + std::to_string(o.max_workgroup_size) +
                                               " is below the 32 invocations Sieve's shaders need");
    if (o.max_storage_buffer_range != 0 && o.max_storage_buffer_range < kMinStorageBufferRangeCap)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "max_storage_buffer_range " + std::to_string(o.max_storage_buffer_range) +
                                               " is below " + std::to_string(kMinStorageBufferRangeCap) +
                                               " bytes (a row of vocab 262144 in every per-row buffer)");
    if (o.wait_spin_us < -1 || o.wait_spin_us > kMaxWaitSpinUs)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "wait_spin_us " + std::to_string(o.wait_spin_us) +
                                               " is outside [-1, " + std::to_string(kMaxWaitSpinUs) + "]");
    if (raw_enum(o.backend) == SIEVE_BACKEND_VULKAN) {
        o.wait_spin_us = resolve_wait_spin(o.wait_spin_us);
        resolve_profile(o.profile);  // an unknown name fails here, before any Vulkan object exists
    } else if (o.profile && parse_profile(o.profile) != SIEVE_PROFILE_DEVICE) {
        fail(SIEVE_ERROR_INVALID_ARGUMENT, std::string("profile '") + o.profile +
                                               "' shapes the Vulkan backend's plans; the CPU backend has none");
    }
    return o;
}

} // namespace

extern "C" {

SIEVE_API uint32_t sieve_version(void) { return SIEVE_VERSION; }

SIEVE_API const char* sieve_status_name(sieve_status status) {
    switch (status) {
    case SIEVE_OK: return "ok";
    case SIEVE_ERROR_NULL_HANDLE: return "null_handle";
    case SIEVE_ERROR_INVALID_ARGUMENT: return "invalid_argument";
    case SIEVE_ERROR_UNKNOWN_SAMPLER: return "unknown_sampler";
    case SIEVE_ERROR_UNSUPPORTED_SAMPLER: return "unsupported_sampler";
    case SIEVE_ERROR_INVALID_CHAIN: return "invalid_chain";
    case SIEVE_ERROR_INVALID_PARAMETER: return "invalid_parameter";
    case SIEVE_ERROR_CAPACITY: return "capacity";
    case SIEVE_ERROR_DEVICE_LIMIT: return "device_limit";
    case SIEVE_ERROR_NON_FINITE_LOGIT: return "non_finite_logit";
    case SIEVE_ERROR_ALL_MASKED: return "all_masked";
    case SIEVE_ERROR_NO_DEVICE: return "no_device";
    case SIEVE_ERROR_VULKAN: return "vulkan_error";
    case SIEVE_ERROR_DEVICE_LOST: return "device_lost";
    case SIEVE_ERROR_TIMEOUT: return "timeout";
    case SIEVE_ERROR_OUT_OF_MEMORY: return "out_of_memory";
    case SIEVE_ERROR_INTERNAL: return "internal";
    case SIEVE_ERROR_PENDING: return "pending";
    }
    return "unknown_status";
}

SIEVE_API const char* sieve_last_error(void) { return last_error(); }

SIEVE_API sieve_status sieve_enumerate_devices(sieve_device_info* infos, uint32_t* count) {
    return guarded([&] {
        if (!count) fail(SIEVE_ERROR_INVALID_ARGUMENT, "count is NULL");
        auto devices = list_devices(enumeration_instance().handle());
        if (!infos) {
            *count = static_cast<uint32_t>(devices.size());
            return SIEVE_OK;
        }
        uint32_t n = std::min<uint32_t>(*count, static_cast<uint32_t>(devices.size()));
        for (uint32_t i = 0; i < n; ++i) infos[i] = devices[i].info;
        *count = n;
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_profile_parse(const char* name, uint32_t* profile) {
    return guarded([&] {
        if (!profile) fail(SIEVE_ERROR_INVALID_ARGUMENT, "profile is NULL");
        *profile = resolve_profile(name);
        return SIEVE_OK;
    });
}

SIEVE_API const char* sieve_profile_name(uint32_t profile) { return profile_name(profile); }

SIEVE_API void sieve_context_options_init(sieve_context_options* options) {
    if (!options) return;
    std::memset(options, 0, sizeof(*options));
    options->struct_size = sizeof(*options);
    options->backend = SIEVE_BACKEND_VULKAN;
    options->validation = -1;
    options->wait_spin_us = -1;
}

SIEVE_API sieve_status sieve_context_create(const sieve_context_options* options, sieve_context** out) {
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        *out = nullptr;
        sieve_context_options o = options_or_default(options);
        auto ctx = std::make_unique<sieve_context>();
        ctx->impl = o.backend == SIEVE_BACKEND_CPU ? make_cpu_context() : make_vulkan_context(o);
        *out = ctx.release();
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_context_create_vulkan(const sieve_vulkan_device* device,
                                                   const sieve_context_options* options, sieve_context** out) {
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        *out = nullptr;
        if (!device) fail(SIEVE_ERROR_INVALID_ARGUMENT, "device is NULL");
        sieve_context_options o = options_or_default(options);
        auto ctx = std::make_unique<sieve_context>();
        ctx->impl = std::make_unique<VulkanContext>(*device, o);
        *out = ctx.release();
        return SIEVE_OK;
    });
}

SIEVE_API void sieve_context_destroy(sieve_context* context) { delete context; }

SIEVE_API sieve_status sieve_context_device_info(const sieve_context* context, sieve_device_info* out) {
    if (!context) return null_handle("context");
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        *out = context->impl->device_info();
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_context_calibrate(sieve_context* context, int32_t vocab, int32_t rows, int32_t iterations,
                                               sieve_calibration* out) {
    if (!context) return null_handle("context");
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        if (vocab <= 0 || rows <= 0 || iterations <= 0)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "calibration needs vocab, rows and iterations >= 1 (got " +
                                                   std::to_string(vocab) + ", " + std::to_string(rows) + ", " +
                                                   std::to_string(iterations) + ")");
        auto* vc = dynamic_cast<VulkanContext*>(context->impl.get());
        if (!vc) fail(SIEVE_ERROR_INVALID_ARGUMENT, "the CPU backend has no device to calibrate");
        *out = calibrate(vc->device(), static_cast<uint32_t>(vocab), static_cast<uint32_t>(rows),
                         static_cast<uint32_t>(iterations));
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_context_validation_messages(const sieve_context* context, uint64_t* out) {
    if (!context) return null_handle("context");
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        *out = context->impl->validation_messages();
        return SIEVE_OK;
    });
}

SIEVE_API void sieve_chain_desc_init(sieve_chain_desc* desc) {
    if (!desc) return;
    std::memset(desc, 0, sizeof(*desc));
    desc->struct_size = sizeof(*desc);
    desc->samplers = nullptr;
    desc->max_rows = 1;
    desc->max_vocab = 1;
    desc->temperature = 0.8f;  // llama.cpp's default
    desc->seed = SIEVE_SEED_RANDOM;
    desc->min_keep = 0;
    desc->max_slots = 0;         // = max_rows
    desc->history_capacity = 0;  // = 1024
}

SIEVE_API sieve_status sieve_chain_create(sieve_context* context, const sieve_chain_desc* desc, sieve_chain** out) {
    if (!context) return null_handle("context");
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        *out = nullptr;
        if (!desc) fail(SIEVE_ERROR_INVALID_ARGUMENT, "desc is NULL");
        ChainConfig config = make_chain_config(*desc);
        auto chain = std::make_unique<sieve_chain>();
        chain->context = context->impl;
        chain->impl = context->impl->create_chain(config);
        *out = chain.release();
        return SIEVE_OK;
    });
}

SIEVE_API void sieve_chain_destroy(sieve_chain* chain) { delete chain; }

SIEVE_API sieve_status sieve_chain_set_param(sieve_chain* chain, int32_t row, sieve_param param, double value) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        check_param(param);
        chain->impl->set_param(row, param, value);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_get_param(const sieve_chain* chain, int32_t row, sieve_param param, double* value) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!value) fail(SIEVE_ERROR_INVALID_ARGUMENT, "value is NULL");
        check_param(param);
        *value = chain->impl->get_param(row, param);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_reset(sieve_chain* chain, int32_t row) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->reset(row);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_set_slots(sieve_chain* chain, const int32_t* slots, int32_t n) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->set_slots(slots, n);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_accept(sieve_chain* chain, int32_t row, const int32_t* tokens, int32_t n) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->accept(row, tokens, n);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_copy_slot(sieve_chain* chain, int32_t src_slot, int32_t dst_slot) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->copy_slot(src_slot, dst_slot);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_reset_slot(sieve_chain* chain, int32_t slot) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->reset_slot(slot);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_slot_state_size(const sieve_chain* chain, size_t* bytes) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!bytes) fail(SIEVE_ERROR_INVALID_ARGUMENT, "bytes is NULL");
        *bytes = chain->impl->slot_state_size();
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_save_slot(sieve_chain* chain, int32_t slot, void* data, size_t size) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->save_slot(slot, data, size);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_restore_slot(sieve_chain* chain, int32_t slot, const void* data, size_t size) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->restore_slot(slot, data, size);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_slot_history(sieve_chain* chain, int32_t slot, int32_t* tokens, int32_t capacity,
                                                int32_t* count) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        if (!count) fail(SIEVE_ERROR_INVALID_ARGUMENT, "count is NULL");
        if (capacity < 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "negative capacity");
        if (capacity > 0 && !tokens) fail(SIEVE_ERROR_INVALID_ARGUMENT, "tokens is NULL");
        const std::vector<int32_t> history = chain->impl->slot_history(slot);
        *count = static_cast<int32_t>(history.size());
        const int32_t n = std::min(capacity, *count);
        for (int32_t i = 0; i < n; ++i) tokens[i] = history[history.size() - static_cast<size_t>(n) + static_cast<size_t>(i)];
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_set_dry_breakers(sieve_chain* chain, int32_t row, const int32_t* tokens,
                                                    const int32_t* lengths, int32_t n) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->set_dry_breakers(row, tokens, lengths, n);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_set_logit_bias(sieve_chain* chain, int32_t row, const int32_t* tokens,
                                                  const float* biases, int32_t n) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->set_logit_bias(row, tokens, biases, n);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_set_token_bitmask(sieve_chain* chain, int32_t row, const uint32_t* words,
                                                     int32_t n_words) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->set_token_bitmask(row, words, n_words);
        return SIEVE_OK;
    });
}

namespace {

// A sampling call past its size checks: the rows' inputs and slots, then the
// backend. One token per row committed to the slots (sieve_sample), or `draws`
// tokens per row into `tokens` committing nothing (sieve_sample_draws).
sieve_status sample_checked(sieve::ChainImpl& impl, const sieve::LogitsView& logits, sieve_token* out,
                            int32_t draws = 1, int32_t* tokens = nullptr) {
    impl.check_row_inputs(logits.rows, logits.vocab);
    impl.check_slots(logits.rows);
    std::string message;
    sieve_status s = impl.sample(logits, draws, tokens, out, &message, tokens == nullptr);
    if (s != SIEVE_OK) set_last_error(message);
    return s;
}

} // namespace

SIEVE_API sieve_status sieve_sample(sieve_chain* chain, const float* logits, int32_t rows, int32_t vocab,
                                    sieve_token* out) {
    if (!chain) return null_handle("chain");
    return guarded_sample(chain, out, rows, [&] {
        chain->impl->check_idle();
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        chain->impl->check_call(logits, rows, vocab);
        return sample_checked(*chain->impl, LogitsView::f32(logits, rows, vocab), out);
    });
}

SIEVE_API void sieve_logits_init(sieve_logits* logits, const void* data, sieve_dtype dtype, int32_t rows,
                                 int32_t vocab) {
    if (!logits) return;
    *logits = sieve_logits{};
    logits->struct_size = sizeof(sieve_logits);
    logits->data = data;
    logits->dtype = dtype;
    logits->rows = rows;
    logits->vocab = vocab;
}

SIEVE_API sieve_status sieve_sample_logits(sieve_chain* chain, const sieve_logits* logits, sieve_token* out) {
    if (!chain) return null_handle("chain");
    return guarded_sample(chain, out, rows_of(logits), [&] {
        chain->impl->check_idle();
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        return sample_checked(*chain->impl, chain->impl->check_call(logits), out);
    });
}

SIEVE_API sieve_status sieve_sample_draws(sieve_chain* chain, const float* logits, int32_t rows, int32_t vocab,
                                          int32_t draws, int32_t* tokens, sieve_token* out) {
    if (!chain) return null_handle("chain");
    return guarded_sample(chain, out, rows, [&] {
        chain->impl->check_idle();
        if (!tokens) fail(SIEVE_ERROR_INVALID_ARGUMENT, "tokens is NULL");
        if (draws <= 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "draws must be >= 1");
        chain->impl->check_call(logits, rows, vocab);
        return sample_checked(*chain->impl, LogitsView::f32(logits, rows, vocab), out, draws, tokens);
    });
}

SIEVE_API sieve_status sieve_chain_distribution(sieve_chain* chain, const float* logits, int32_t rows,
                                                int32_t vocab, int32_t row, int32_t* ids, float* probs,
                                                int32_t capacity, int32_t* count) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        if (!count) fail(SIEVE_ERROR_INVALID_ARGUMENT, "count is NULL");
        if (capacity < 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "negative capacity");
        if (capacity > 0 && (!ids || !probs)) fail(SIEVE_ERROR_INVALID_ARGUMENT, "ids or probs is NULL");
        chain->impl->check_call(logits, rows, vocab);
        chain->impl->check_row_inputs(rows, vocab);
        if (row < 0 || row >= rows) fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(row) + " is outside 0.." + std::to_string(rows - 1));
        chain->impl->check_slots(rows);
        std::vector<ref::Weighted> dist;
        std::string message;
        sieve_status s = chain->impl->distribution(LogitsView::f32(logits, rows, vocab), row, &dist, &message);
        if (s != SIEVE_OK) fail(s, message);
        *count = static_cast<int32_t>(dist.size());
        for (int32_t i = 0; i < std::min(capacity, *count); ++i) {
            ids[i] = dist[static_cast<size_t>(i)].id;
            probs[i] = static_cast<float>(dist[static_cast<size_t>(i)].p);
        }
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_candidates(sieve_chain* chain, const sieve_logits* logits, sieve_candidate* out,
                                              int32_t capacity, int32_t* counts) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!counts) fail(SIEVE_ERROR_INVALID_ARGUMENT, "counts is NULL");
        if (capacity < 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "negative capacity " + std::to_string(capacity));
        if (capacity > 0 && !out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        ChainImpl& impl = *chain->impl;
        impl.check_idle();
        const LogitsView view = impl.check_call(logits);
        impl.check_row_inputs(view.rows, view.vocab);
        impl.check_slots(view.rows);
        std::vector<int32_t> wanted(static_cast<size_t>(view.rows));
        for (int32_t r = 0; r < view.rows; ++r) wanted[static_cast<size_t>(r)] = r;
        std::vector<std::vector<ref::Weighted>> dists;
        std::vector<sieve_status> statuses;
        std::string message;
        const sieve_status s = impl.distributions(view, wanted, &dists, &statuses, &message);
        for (int32_t r = 0; r < view.rows; ++r) {
            const auto& d = dists[static_cast<size_t>(r)];
            const bool ok = statuses[static_cast<size_t>(r)] == SIEVE_OK;
            counts[r] = ok ? static_cast<int32_t>(d.size()) : 0;
            for (int32_t i = 0; ok && i < std::min(capacity, counts[r]); ++i) {
                sieve_candidate& c = out[static_cast<size_t>(r) * capacity + i];
                c.id = d[static_cast<size_t>(i)].id;
                c.p = static_cast<float>(d[static_cast<size_t>(i)].p);
                c.logit = static_cast<float>(std::log(d[static_cast<size_t>(i)].p));
            }
        }
        if (s != SIEVE_OK) set_last_error(message);
        return s;
    });
}

SIEVE_API sieve_status sieve_chain_set_logprobs(sieve_chain* chain, int32_t n) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();  // the call in flight reads the setting when it is finished
        chain->impl->set_logprobs(n);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_logprobs(const sieve_chain* chain, int32_t row, sieve_logprobs* out) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        *out = chain->impl->logprobs(row);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_counters(const sieve_chain* chain, sieve_counters* out) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        *out = chain->impl->counters();
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_plan_figures(const sieve_chain* chain, int32_t rows, int32_t vocab,
                                                uint32_t* dispatches, uint32_t* row_passes) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!dispatches || !row_passes) fail(SIEVE_ERROR_INVALID_ARGUMENT, "output pointer is NULL");
        chain->impl->check_call(reinterpret_cast<const float*>(chain), rows, vocab);
        chain->impl->plan_figures(rows, vocab, dispatches, row_passes);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_plan_estimate(const sieve_chain* chain, int32_t rows, int32_t vocab,
                                                 sieve_stage_estimate* out, uint32_t capacity, uint32_t* count) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!count) fail(SIEVE_ERROR_INVALID_ARGUMENT, "count is NULL");
        if (capacity > 0 && !out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        chain->impl->check_call(reinterpret_cast<const float*>(chain), rows, vocab);
        const auto stages = chain->impl->plan_estimate(rows, vocab);
        *count = static_cast<uint32_t>(stages.size());
        for (uint32_t i = 0; i < std::min<uint32_t>(capacity, *count); ++i) out[i] = stages[i];
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_set_profiling(sieve_chain* chain, int32_t enabled) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->set_profiling(enabled != 0);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_call_timing(const sieve_chain* chain, sieve_call_timing* out) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        if (!chain->impl->call_timing(out))
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "no profiled call to time: the chain's backend has no device, or no "
                                               "sampling call has run since sieve_chain_set_profiling turned it on");
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_stage_times(const sieve_chain* chain, sieve_stage_time* out, uint32_t capacity,
                                               uint32_t* count) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!count) fail(SIEVE_ERROR_INVALID_ARGUMENT, "count is NULL");
        if (capacity > 0 && !out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        auto times = chain->impl->stage_times();
        *count = static_cast<uint32_t>(times.size());
        for (uint32_t i = 0; i < std::min<uint32_t>(capacity, *count); ++i) out[i] = times[i];
        return SIEVE_OK;
    });
}

} // extern "C"
