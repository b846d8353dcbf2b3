#include "vulkan/gpu_device_input.hpp"

#include "vulkan/vk_check.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace sieve {

IngestSource DeviceInputs::source(const sieve_vulkan_logits& in) const {
    const EffectiveLimits& limits = device_.limits();
    const RowWindows& windows = buffers_.windows();
    const uint64_t elem = dtype_bytes(in.dtype);
    const uint64_t stride = in.row_stride == 0 ? static_cast<uint64_t>(in.vocab) : static_cast<uint64_t>(in.row_stride);
    const uint64_t align = std::max<uint64_t>(limits.min_storage_offset_alignment, 1);
    const uint64_t rows = static_cast<uint64_t>(in.rows);
    IngestSource src;
    src.buffer = in.buffer;
    src.stride = static_cast<uint32_t>(std::min<uint64_t>(stride, UINT32_MAX));
    src.dtype = in.dtype;
    src.vocab = static_cast<uint32_t>(in.vocab);
    for (uint64_t first = 0; first < rows; first += windows.rows) {
        const uint64_t n = std::min<uint64_t>(windows.rows, rows - first);
        IngestWindow w;
        const uint64_t offset = in.offset + first * stride * elem;
        w.bind_offset = offset / align * align;
        const uint64_t extent = ((n - 1) * stride + static_cast<uint64_t>(in.vocab)) * elem;
        w.bind_range = (offset - w.bind_offset + extent + 3) / 4 * 4;
        if (w.bind_range > limits.max_storage_buffer_range || stride > UINT32_MAX)
            fail(SIEVE_ERROR_DEVICE_LIMIT, std::to_string(n) + " rows x row_stride " + std::to_string(stride) + " " +
                                               dtype_name(in.dtype) + " span " + std::to_string(w.bind_range) +
                                               " bytes; this device binds at most " +
                                               std::to_string(limits.max_storage_buffer_range) +
                                               " (maxStorageBufferRange): a smaller row stride or fewer rows");
        w.first = static_cast<uint32_t>((offset - w.bind_offset) / elem);
        w.rows = static_cast<uint32_t>(n);
        w.dst_offset = (first / windows.rows) * windows.rows * windows.row_bytes[BINDING_LOGITS];
        w.dst_range = n * static_cast<uint64_t>(in.vocab) * 4;
        src.windows.push_back(w);
    }
    return src;
}

bool DeviceInputs::can_bind_in_place(const IngestSource& src, bool some_row_adjusts) {
    if (src.dtype != SIEVE_DTYPE_F32) return false;
    // A stride of whole vec4s over rows that are not: the passes' four-at-a-
    // time loops assume the row ends on a vec4 (the chain's own rows do).
    if (src.stride % 4 == 0 && src.vocab % 4 != 0) return false;
    // The history pass writes adjusted logits into the row (ROW_PATCH): never
    // into the app's buffer.
    if (some_row_adjusts) return false;
    // Each row window is bound from its first row: an offset the device binds
    // (source() aligned each window's binding down to it, and refused spans
    // past maxStorageBufferRange).
    for (const IngestWindow& w : src.windows)
        if (w.first != 0) return false;
    return true;
}

VkCommandBuffer DeviceInputs::ingest_command(const IngestSource& src) {
    if (!ingest_)
        ingest_ = std::make_unique<Ingest>(device_, buffers_.logits.buffer, buffers_.windows().count,
                                           submitter_.command_pool());
    bool recorded = false;
    VkCommandBuffer ingest = ingest_->prepare(src, &recorded);
    if (recorded) ++counters_.recordings;
    return ingest;
}

const float* DeviceInputs::rows_on_host(VkCommandBuffer ingest, uint64_t bytes) {
    const auto& vk = device_.vk();
    std::vector<VkCommandBuffer> cmds{ingest};
    if (!device_.unified_memory()) {
        // Only the call's rows cross to the host, not the buffer's capacity
        // (the last read-back has finished: each call awaits its own).
        if (readback_ && readback_bytes_ != bytes) {
            vk.vkFreeCommandBuffers(device_.handle(), submitter_.command_pool(), 1, &readback_);
            readback_ = VK_NULL_HANDLE;
        }
        if (!readback_) {
            readback_ = device_.allocate_command_buffer(submitter_.command_pool());
            VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
            vk_check(vk.vkBeginCommandBuffer(readback_, &bi), "vkBeginCommandBuffer");
            VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
            barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
            barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
            vk.vkCmdPipelineBarrier(readback_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                                    &barrier, 0, nullptr, 0, nullptr);
            VkBufferCopy region{0, 0, bytes};
            readback_bytes_ = bytes;
            vk.vkCmdCopyBuffer(readback_, buffers_.logits.buffer, buffers_.staging.buffer, 1, &region);
            barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
            barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
            vk.vkCmdPipelineBarrier(readback_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                    &barrier, 0, nullptr, 0, nullptr);
            vk_check(vk.vkEndCommandBuffer(readback_), "vkEndCommandBuffer");
            ++counters_.recordings;
        }
        cmds.push_back(readback_);
    }
    submitter_.submit(cmds.data(), static_cast<uint32_t>(cmds.size()), nullptr);
    submitter_.await(submitter_.wait_timeout_ns(), "reading the rows back did not finish within the wait timeout");
    return static_cast<const float*>(device_.unified_memory() ? buffers_.logits.mapped : buffers_.staging.mapped);
}

VkCommandBuffer DeviceInputs::token_copy(const TokenTarget& target) {
    if (!tokens_)
        tokens_ = std::make_unique<TokenCopy>(device_, buffers_.results.buffer, glsl::RESULT_STRIDE * 4,
                                              submitter_.command_pool());
    bool recorded = false;
    VkCommandBuffer cmd = tokens_->prepare(target, &recorded);
    if (recorded) ++counters_.recordings;
    return cmd;
}

void DeviceInputs::release() {
    if (ingest_) ingest_->release_source();
    if (tokens_) tokens_->release_target();
}

} // namespace sieve
