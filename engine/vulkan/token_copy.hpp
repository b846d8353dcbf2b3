// The sampled token ids copied into the app's VkBuffer on the device
// (sieve_vulkan_sync.token_buffer): the same submission that samples them
// writes them where the app's next decode reads them, no host round trip.
// Word 0 of each row's result is its token id, or 0xFFFFFFFF (-1) for a row
// the GPU did not finish (failed, or left to the CPU twin): a plain buffer
// copy, no shader.
#pragma once

#include "vulkan/vk_device.hpp"

#include <cstdint>

namespace sieve {

struct TokenTarget {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;  // a multiple of 4
    uint32_t rows = 0;

    bool operator==(const TokenTarget& o) const {
        return buffer == o.buffer && offset == o.offset && rows == o.rows;
    }
};

// Records into `cmd`: a barrier from the sampling passes' result writes to the
// copy, the copy of word 0 of each row's result (result_stride bytes apart in
// `results`) to the target, then a barrier that makes the ids visible to the
// host after the fence. A later reader on the device orders itself after the
// copy (a semaphore signal, or the reader's own barrier from TRANSFER).
void emit_token_copy(const Device& device, VkCommandBuffer cmd, VkBuffer results, uint32_t result_stride,
                     const TokenTarget& target);

// A command buffer of the chain's that holds emit_token_copy for the last
// target, re-recorded only when the target changes (the async path submits it
// after the chain's recording).
class TokenCopy {
public:
    TokenCopy(Device& device, VkBuffer results, uint32_t result_stride, VkCommandPool pool)
        : device_(device), results_(results), stride_(result_stride), pool_(pool) {}
    ~TokenCopy() { release_target(); }
    TokenCopy(const TokenCopy&) = delete;
    TokenCopy& operator=(const TokenCopy&) = delete;

    // No submission may be pending on the previous command buffer.
    VkCommandBuffer prepare(const TokenTarget& target, bool* recorded);
    // Forget the target (the command buffer names the app's buffer).
    void release_target();

private:
    Device& device_;
    VkBuffer results_;
    uint32_t stride_;
    VkCommandPool pool_;
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    TokenTarget current_{};
};

} // namespace sieve
