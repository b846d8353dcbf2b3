// The C API of sieve_vulkan.h's sampling calls: logits in the app's buffer,
// async submission and record-into (the verification's forms: api_verify.cpp).
#include "api/guard.hpp"
#include "api/vulkan_checks.hpp"

#include <string>

using namespace sieve;
using namespace sieve::api;

namespace sieve::api {

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

} // namespace sieve::api

extern "C" {

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

} // extern "C"
