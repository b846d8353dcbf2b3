// Zero-copy input (sieve_sample_vulkan): the ingest pass reads the app's
// buffer of f32/f16/bf16 rows and writes Sieve's packed f32 logits
// (shaders/stages/ingest.comp). It has its own layouts and one descriptor set,
// and records into a command buffer of its own that is submitted ahead of the
// chain's recording: the chain's recordings stay independent of the app's
// buffer, and a new buffer re-records only this small command buffer.
#pragma once

#include "vulkan/vk_device.hpp"

#include <sieve/sieve.h>

#include <cstdint>
#include <vector>

namespace sieve {

// One row window of the chain's logits (gpu_chain_buffers.hpp: RowWindows) and the
// app's rows that fill it, resolved against the device's offset alignment.
struct IngestWindow {
    VkDeviceSize bind_offset = 0;  // of the app's rows, aligned to minStorageBufferOffsetAlignment
    VkDeviceSize bind_range = 0;   // bytes from bind_offset, a multiple of 4
    uint32_t first = 0;            // element index of the window's first row from bind_offset
    uint32_t rows = 0;
    VkDeviceSize dst_offset = 0;   // the window in the chain's logits
    VkDeviceSize dst_range = 0;

    bool operator==(const IngestWindow& o) const {
        return bind_offset == o.bind_offset && bind_range == o.bind_range && first == o.first && rows == o.rows &&
               dst_offset == o.dst_offset && dst_range == o.dst_range;
    }
};

struct IngestSource {
    VkBuffer buffer = VK_NULL_HANDLE;
    uint32_t stride = 0;           // elements between row starts
    sieve_dtype dtype = SIEVE_DTYPE_F32;
    uint32_t vocab = 0;
    std::vector<IngestWindow> windows;

    bool operator==(const IngestSource& o) const {
        return buffer == o.buffer && stride == o.stride && dtype == o.dtype && vocab == o.vocab && windows == o.windows;
    }
};

class Ingest {
public:
    // dst: the chain's f32 logits buffer; max_windows: its row windows (one
    // descriptor set and dispatch each). pool: the chain's command pool.
    Ingest(Device& device, VkBuffer dst, uint32_t max_windows, VkCommandPool pool);
    ~Ingest();
    Ingest(const Ingest&) = delete;
    Ingest& operator=(const Ingest&) = delete;

    // The command buffer that ingests `src`; re-recorded (and *recorded set)
    // only when the source differs from the last one. No submission may be
    // pending on it.
    VkCommandBuffer prepare(const IngestSource& src, bool* recorded);
    // Records the pass for the source of the last prepare() into `cmd` (the
    // command buffer of prepare(), or an app's for sieve_chain_record): a
    // barrier from every earlier write on the queue, the dispatch, and a
    // barrier that makes its writes visible to the host.
    void emit(VkCommandBuffer cmd) const;
    // Forget the source (the descriptor keeps no handle of the app's).
    void release_source();

private:
    void release();
    Device& device_;
    VkBuffer dst_;
    VkCommandPool command_pool_;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkPipeline pipelines_[4] = {};  // per ingest.comp INGEST_KIND, built on first use
    VkDescriptorPool pool_ = VK_NULL_HANDLE;
    std::vector<VkDescriptorSet> sets_;  // one per window
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    IngestSource current_{};
    bool valid_ = false;
};

} // namespace sieve
