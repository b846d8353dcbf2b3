// The C API: argument checks, exceptions turned into statuses and the thread's
// last-error message. Nothing here samples; it forwards to ContextImpl/ChainImpl.
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

namespace {

template <typename F>
sieve_status guarded(F&& f) {
    try {
        clear_last_error();
        return f();
    } catch (const Failure& e) {
        set_last_error(e.what());
        return e.status();
    } catch (const std::bad_alloc&) {
        set_last_error("out of host memory");
        return SIEVE_ERROR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        set_last_error(std::string("internal error: ") + e.what());
        return SIEVE_ERROR_INTERNAL;
    } catch (...) {
        set_last_error("internal error");
        return SIEVE_ERROR_INTERNAL;
    }
}

void check_param(const sieve_param& param) {
    const int32_t raw = raw_enum(param);
    if (raw < SIEVE_PARAM_TEMPERATURE || raw > SIEVE_PARAM_ADAPTIVE_DECAY)
        fail(SIEVE_ERROR_INVALID_PARAMETER, "unknown parameter " + std::to_string(raw));
}

sieve_status null_handle(const char* what) {
    set_last_error(std::string(what) + " handle is NULL");
    return SIEVE_ERROR_NULL_HANDLE;
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

// A sampling or verifying call whose failure is call-level (it throws:
// nothing was sampled) writes failed(status) into the rows of `out` the caller
// passed, at most the chain's max_rows, so no row reads as a stale result. A
// call that returns ran: its rows carry their own statuses.
template <typename Out, typename Failed, typename F>
sieve_status guarded_rows(sieve_chain* chain, Out* out, int32_t rows, Failed failed, F&& f) {
    bool ran = false;
    const sieve_status s = guarded([&] {
        const sieve_status r = f();
        ran = true;
        return r;
    });
    if (s == SIEVE_OK || ran || !out || rows <= 0) return s;
    const int32_t n = std::min(rows, chain->impl->config().max_rows);
    for (int32_t i = 0; i < n; ++i) out[i] = failed(s);
    return s;
}

template <typename F>
sieve_status guarded_sample(sieve_chain* chain, sieve_token* out, int32_t rows, F&& f) {
    return guarded_rows(
        chain, out, rows,
        [](sieve_status s) {
            sieve_token failed{};
            failed.token = -1;
            failed.status = s;
            return failed;
        },
        std::forward<F>(f));
}

int32_t rows_of(const sieve_logits* l) { return l && l->struct_size >= sizeof(sieve_logits) ? l->rows : 0; }
int32_t rows_of(const sieve_vulkan_logits* l) {
    return l && l->struct_size >= sizeof(sieve_vulkan_logits) ? l->rows : 0;
}

// The verify calls' arguments, checked: the logits' shape (from `shape`),
// the mode and the drafts (their tokens copied; a probability table stays
// the caller's). mode by reference: an unknown value is read as stored
// (raw_enum), never loaded as the enum (UBSan's enum check).
struct VerifyArgs {
    LogitsView view;
    sieve_verify_mode mode;
    std::vector<ChainImpl::Draft> drafts;
};

template <typename Shape>
VerifyArgs verify_args(const ChainImpl& impl, const sieve_draft* drafts, int32_t n_seq, const sieve_verify_mode& mode,
                       Shape shape) {
    if (!drafts) fail(SIEVE_ERROR_INVALID_ARGUMENT, "drafts is NULL");
    if (n_seq < 1 || n_seq > impl.config().max_rows)
        fail(SIEVE_ERROR_CAPACITY, "n_seq " + std::to_string(n_seq) + " is outside 1.." +
                                       std::to_string(impl.config().max_rows) + " (the chain's max_rows)");
    VerifyArgs args{shape(), SIEVE_VERIFY_MATCH, std::vector<ChainImpl::Draft>(static_cast<size_t>(n_seq))};
    // The caller's raw values are read as stored (raw_enum): an out-of-range
    // enum is refused, not undefined.
    const int32_t mode_value = raw_enum(mode);
    if (mode_value != SIEVE_VERIFY_MATCH && mode_value != SIEVE_VERIFY_REJECTION)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "unknown verify mode " + std::to_string(mode_value));
    args.mode = static_cast<sieve_verify_mode>(mode_value);
    for (int32_t i = 0; i < n_seq; ++i) {
        const sieve_draft& d = drafts[i];
        const std::string which = "drafts[" + std::to_string(i) + "]";
        if (d.struct_size < sizeof(sieve_draft))
            fail(SIEVE_ERROR_INVALID_ARGUMENT, which + ".struct_size is " + std::to_string(d.struct_size) +
                                                   " (sieve_draft_init sets it)");
        if (d.n_draft < 0 || d.n_draft > SIEVE_MAX_DRAFT)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, which + ".n_draft " + std::to_string(d.n_draft) +
                                                   " is outside 0.." + std::to_string(SIEVE_MAX_DRAFT));
        if (d.n_draft > 0 && !d.tokens) fail(SIEVE_ERROR_INVALID_ARGUMENT, which + ".tokens is NULL");
        const int32_t kind = raw_enum(d.probs_kind);
        if (kind < SIEVE_DRAFT_PROBS_NONE || kind > SIEVE_DRAFT_PROBS_TOKEN)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, which + ".probs_kind " + std::to_string(kind) + " is unknown");
        ChainImpl::Draft& to = args.drafts[static_cast<size_t>(i)];
        to.tokens.assign(d.tokens, d.tokens + d.n_draft);
        to.probs.kind = static_cast<sieve_draft_probs>(kind);
        to.probs.probs = d.probs;
        to.probs.vocab = args.view.vocab;
    }
    return args;
}

// sieve_verify and sieve_verify_vulkan: the checks of the drafts and the
// call, then the chain's verification. A call-level failure (nothing
// verified) writes its status into out[s] for s < min(n_seq, max_rows).
template <typename Shape>
sieve_status verify_call(sieve_chain* chain, const sieve_draft* drafts, int32_t n_seq, const sieve_verify_mode& mode,
                         sieve_token* tokens, sieve_verified* out, Shape shape, const sieve_vulkan_logits* device) {
    return guarded_rows(chain, out, n_seq, [](sieve_status s) { return sieve_verified{s, 0, 0}; }, [&] {
        ChainImpl& impl = *chain->impl;
        impl.check_idle();
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        if (!tokens) fail(SIEVE_ERROR_INVALID_ARGUMENT, "tokens is NULL");
        const VerifyArgs args = verify_args(impl, drafts, n_seq, mode, shape);
        std::string message;
        const sieve_status r = impl.verify(args.view, device, args.drafts, args.mode, tokens, out, &message);
        if (r != SIEVE_OK) set_last_error(message);
        return r;
    });
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
        MessageSink sink;
        Instance instance(false, &sink);
        auto devices = list_devices(instance.handle());
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

SIEVE_API void sieve_vulkan_logits_init(sieve_vulkan_logits* logits, VkBuffer buffer, VkDeviceSize size,
                                        sieve_dtype dtype, int32_t rows, int32_t vocab) {
    if (!logits) return;
    *logits = sieve_vulkan_logits{};
    logits->struct_size = sizeof(sieve_vulkan_logits);
    logits->buffer = buffer;
    logits->size = size;
    logits->dtype = dtype;
    logits->rows = rows;
    logits->vocab = vocab;
}

namespace {

// The buffer's struct, layout and extent (what sieve_verify_vulkan checks of
// its logits, whose rows are positions, not the chain's rows).
void check_vulkan_buffer(ChainImpl& impl, const sieve_vulkan_logits* logits) {
    if (!logits) fail(SIEVE_ERROR_INVALID_ARGUMENT, "logits is NULL");
    if (logits->struct_size < sizeof(sieve_vulkan_logits))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "sieve_vulkan_logits.struct_size is " + std::to_string(logits->struct_size) +
                                               "; set it to sizeof(sieve_vulkan_logits) (sieve_vulkan_logits_init does)");
    if (logits->buffer == VK_NULL_HANDLE) fail(SIEVE_ERROR_INVALID_ARGUMENT, "buffer is VK_NULL_HANDLE");
    const int64_t stride = impl.check_layout(logits, raw_enum(logits->dtype), logits->rows, logits->vocab, logits->row_stride);
    const uint64_t elem = dtype_bytes(logits->dtype);
    if (logits->offset % elem != 0)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "offset " + std::to_string(logits->offset) + " is not a multiple of the " +
                                               dtype_name(logits->dtype) + " element size " + std::to_string(elem));
    // The rows' extent, read in whole 4-byte words.
    const uint64_t extent = ((static_cast<uint64_t>(logits->rows - 1) * static_cast<uint64_t>(stride) +
                              static_cast<uint64_t>(logits->vocab)) * elem + 3) / 4 * 4;
    if (logits->offset > logits->size || extent > logits->size - logits->offset)
        fail(SIEVE_ERROR_INVALID_ARGUMENT,
             "the buffer is too small: " + std::to_string(logits->rows) + " rows x row_stride " +
                 std::to_string(stride) + " " + dtype_name(logits->dtype) + " need " + std::to_string(extent) +
                 " bytes from offset " + std::to_string(logits->offset) + "; its size is " +
                 std::to_string(logits->size));
}

// Every check sieve_sample_vulkan makes before the device sees the call: the
// descriptor, its sizes against the buffer and the chain, the rows' inputs and
// slots (shared by the synchronous, async and recorded calls).
// The shape of a verify call's logits in the app's buffer, checked.
LogitsView vulkan_shape(ChainImpl& impl, const sieve_vulkan_logits* logits) {
    check_vulkan_buffer(impl, logits);
    return LogitsView{nullptr, logits->dtype, logits->rows, logits->vocab,
                      logits->row_stride ? logits->row_stride : logits->vocab};
}

void check_vulkan_logits(ChainImpl& impl, const sieve_vulkan_logits* logits) {
    check_vulkan_buffer(impl, logits);
    impl.check_row_inputs(logits->rows, logits->vocab);
    impl.check_slots(logits->rows);
}

// The parts of a sieve_vulkan_sync that need no device: its struct, the
// semaphore combinations and the token buffer's room for `rows` ids.
// record: sieve_chain_record, which takes only the token buffer.
void check_sync(const sieve_vulkan_sync* sync, int32_t rows, bool record) {
    if (!sync) return;
    if (sync->struct_size < sizeof(sieve_vulkan_sync))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "sieve_vulkan_sync.struct_size is " + std::to_string(sync->struct_size) +
                                               "; set it to sizeof(sieve_vulkan_sync) (sieve_vulkan_sync_init does)");
    if (record && (sync->wait_semaphore != VK_NULL_HANDLE || sync->signal_semaphore != VK_NULL_HANDLE))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "sieve_chain_record takes only the token buffer of a sieve_vulkan_sync: "
                                           "the semaphores belong to the app's submission of the command buffer");
    if (sync->timeline != 0 && sync->timeline != 1)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "timeline is " + std::to_string(sync->timeline) + "; 1 = timeline, 0 = binary");
    if (sync->timeline == 0 && sync->wait_semaphore != VK_NULL_HANDLE &&
        sync->wait_semaphore == sync->signal_semaphore)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "the same binary semaphore to wait on and to signal");
    if (sync->timeline == 1 && sync->signal_semaphore != VK_NULL_HANDLE) {
        if (sync->signal_value == 0)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "a timeline signal_value of 0 (a timeline starts at 0 and only grows)");
        if (sync->wait_semaphore == sync->signal_semaphore && sync->signal_value <= sync->wait_value)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "signal_value " + std::to_string(sync->signal_value) +
                                                   " is not past wait_value " + std::to_string(sync->wait_value) +
                                                   " on the same timeline semaphore");
    }
    if (sync->token_buffer != VK_NULL_HANDLE) {
        if (sync->token_offset % 4 != 0)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "token_offset " + std::to_string(sync->token_offset) +
                                                   " is not a multiple of 4 (int32 token ids)");
        const uint64_t need = static_cast<uint64_t>(rows) * 4;
        if (sync->token_offset > sync->token_buffer_size || need > sync->token_buffer_size - sync->token_offset)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "the token buffer is too small: " + std::to_string(rows) +
                                                   " token ids need " + std::to_string(need) + " bytes from offset " +
                                                   std::to_string(sync->token_offset) + "; its size is " +
                                                   std::to_string(sync->token_buffer_size));
    }
}

} // namespace

SIEVE_API sieve_status sieve_sample_vulkan(sieve_chain* chain, const sieve_vulkan_logits* logits, sieve_token* out) {
    if (!chain) return null_handle("chain");
    return guarded_sample(chain, out, rows_of(logits), [&] {
        chain->impl->check_idle();
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        check_vulkan_logits(*chain->impl, logits);
        std::string message;
        sieve_status s = chain->impl->sample_device(*logits, out, &message);
        if (s != SIEVE_OK) set_last_error(message);
        return s;
    });
}

SIEVE_API sieve_status sieve_verify_vulkan(sieve_chain* chain, const sieve_vulkan_logits* logits,
                                           const sieve_draft* drafts, int32_t n_seq, sieve_verify_mode mode,
                                           sieve_token* tokens, sieve_verified* out) {
    if (!chain) return null_handle("chain");
    return verify_call(
        chain, drafts, n_seq, mode, tokens, out, [&] { return vulkan_shape(*chain->impl, logits); }, logits);
}

namespace {

// sieve_verify_vulkan_async (record false) and sieve_chain_record_verify.
sieve_status launch_verify(sieve_chain* chain, bool record, VkCommandBuffer cmd, const sieve_vulkan_logits* logits,
                           const sieve_draft* drafts, int32_t n_seq, const sieve_verify_mode& mode,
                           const sieve_vulkan_sync* sync) {
    return guarded([&] {
        ChainImpl& impl = *chain->impl;
        impl.check_idle();
        if (record && cmd == VK_NULL_HANDLE) fail(SIEVE_ERROR_INVALID_ARGUMENT, "cmd is VK_NULL_HANDLE");
        VerifyArgs args = verify_args(impl, drafts, n_seq, mode, [&] { return vulkan_shape(impl, logits); });
        if (sync && sync->struct_size >= sizeof(sieve_vulkan_sync) && sync->token_buffer != VK_NULL_HANDLE)
            fail(SIEVE_ERROR_INVALID_ARGUMENT,
                 "a verification copies no token ids into the app's buffer (the tokens it emits are known once the "
                 "host has walked the positions, at sieve_chain_wait_verified): token_buffer must be VK_NULL_HANDLE");
        check_sync(sync, 0, false);
        impl.verify_async(args.view, *logits, std::move(args.drafts), args.mode, cmd, sync);
        return SIEVE_OK;
    });
}

// sieve_chain_wait_verified (recorded false) and sieve_chain_collect_verified.
sieve_status finish_verify(sieve_chain* chain, bool recorded, uint64_t timeout_ns, sieve_token* tokens,
                           sieve_verified* out) {
    return guarded([&] {
        if (!tokens) fail(SIEVE_ERROR_INVALID_ARGUMENT, "tokens is NULL");
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        std::string message;
        const sieve_status s = chain->impl->finish_verify(recorded, timeout_ns, tokens, out, &message);
        if (s != SIEVE_OK) set_last_error(message);
        return s;
    });
}

} // namespace

SIEVE_API sieve_status sieve_verify_vulkan_async(sieve_chain* chain, const sieve_vulkan_logits* logits,
                                                 const sieve_draft* drafts, int32_t n_seq, sieve_verify_mode mode,
                                                 const sieve_vulkan_sync* sync) {
    if (!chain) return null_handle("chain");
    return launch_verify(chain, false, VK_NULL_HANDLE, logits, drafts, n_seq, mode, sync);
}

SIEVE_API sieve_status sieve_chain_wait_verified(sieve_chain* chain, uint64_t timeout_ns, sieve_token* tokens,
                                                 sieve_verified* out) {
    if (!chain) return null_handle("chain");
    return finish_verify(chain, false, timeout_ns, tokens, out);
}

SIEVE_API sieve_status sieve_chain_record_verify(sieve_chain* chain, VkCommandBuffer cmd,
                                                 const sieve_vulkan_logits* logits, const sieve_draft* drafts,
                                                 int32_t n_seq, sieve_verify_mode mode) {
    if (!chain) return null_handle("chain");
    return launch_verify(chain, true, cmd, logits, drafts, n_seq, mode, nullptr);
}

SIEVE_API sieve_status sieve_chain_collect_verified(sieve_chain* chain, sieve_token* tokens, sieve_verified* out) {
    if (!chain) return null_handle("chain");
    return finish_verify(chain, true, 0, tokens, out);
}

SIEVE_API void sieve_vulkan_sync_init(sieve_vulkan_sync* sync) {
    if (!sync) return;
    *sync = sieve_vulkan_sync{};
    sync->struct_size = sizeof(sieve_vulkan_sync);
}

SIEVE_API sieve_status sieve_sample_vulkan_async(sieve_chain* chain, const sieve_vulkan_logits* logits,
                                                 const sieve_vulkan_sync* sync) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        check_vulkan_logits(*chain->impl, logits);
        check_sync(sync, logits->rows, false);
        chain->impl->sample_async(*logits, sync);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_wait(sieve_chain* chain, uint64_t timeout_ns, sieve_token* out) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        std::string message;
        sieve_status s = chain->impl->wait(timeout_ns, out, &message);
        if (s != SIEVE_OK) set_last_error(message);
        return s;
    });
}

SIEVE_API sieve_status sieve_chain_record(sieve_chain* chain, VkCommandBuffer cmd, const sieve_vulkan_logits* logits,
                                          const sieve_vulkan_sync* sync) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        if (cmd == VK_NULL_HANDLE) fail(SIEVE_ERROR_INVALID_ARGUMENT, "cmd is VK_NULL_HANDLE");
        check_vulkan_logits(*chain->impl, logits);
        check_sync(sync, logits->rows, true);
        chain->impl->record(cmd, *logits, sync);
        return SIEVE_OK;
    });
}

SIEVE_API sieve_status sieve_chain_collect(sieve_chain* chain, sieve_token* out) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        std::string message;
        sieve_status s = chain->impl->finish_recorded(out, &message);
        if (s != SIEVE_OK) set_last_error(message);
        return s;
    });
}

SIEVE_API sieve_status sieve_chain_release_input(sieve_chain* chain) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->release_input();
        return SIEVE_OK;
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

SIEVE_API void sieve_draft_init(sieve_draft* draft, const int32_t* tokens, int32_t n_draft) {
    if (!draft) return;
    *draft = sieve_draft{};
    draft->struct_size = sizeof(sieve_draft);
    draft->n_draft = n_draft;
    draft->tokens = tokens;
    draft->probs_kind = SIEVE_DRAFT_PROBS_NONE;
}

SIEVE_API sieve_status sieve_verify(sieve_chain* chain, const sieve_logits* logits, const sieve_draft* drafts,
                                    int32_t n_seq, sieve_verify_mode mode, sieve_token* tokens, sieve_verified* out) {
    if (!chain) return null_handle("chain");
    return verify_call(chain, drafts, n_seq, mode, tokens, out, [&] { return chain->impl->check_call(logits); },
                       nullptr);
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

SIEVE_API sieve_status sieve_chain_set_profiling(sieve_chain* chain, int32_t enabled) {
    if (!chain) return null_handle("chain");
    return guarded([&] {
        chain->impl->check_idle();
        chain->impl->set_profiling(enabled != 0);
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
