// The C API of speculative decoding: sieve_verify (sieve.h) and its forms
// over the app's buffer (sieve_vulkan.h): the drafts' checks, then the
// chain's verification (chain/verify.cpp).
#include "api/guard.hpp"
#include "api/vulkan_checks.hpp"

#include <sieve/sieve.h>
#include <sieve/sieve_vulkan.h>

#include <string>
#include <utility>
#include <vector>

using namespace sieve;
using namespace sieve::api;

namespace {

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

} // extern "C"
