// A GPU chain's zero-copy input (sieve_sample_vulkan and friends): how the
// app's rows reach the passes (bound in place, or copied by the ingest pass),
// how the rows the twin finishes come back to the host, and the async token
// copy into the app's buffer.
#pragma once

#include "vulkan/gpu_chain_buffers.hpp"
#include "vulkan/gpu_submitter.hpp"
#include "vulkan/ingest.hpp"
#include "vulkan/token_copy.hpp"

#include <sieve/sieve_vulkan.h>

#include <memory>

namespace sieve {

// How one zero-copy call's logits reach the passes: bound where the app keeps
// them (in place), or copied into the chain's logits buffer by the ingest pass
// (f16/bf16, an offset the device cannot bind, rows the history pass patches).
struct DeviceInput {
    bool in_place = false;
    VkCommandBuffer ingest = VK_NULL_HANDLE;  // the ingest pass (not in place)
    IngestSource source;                      // the app's rows (its stride: an in-place binding's)
};

class DeviceInputs {
public:
    DeviceInputs(Device& device, ChainBuffers& buffers, Submitter& submitter, GpuCounters& counters)
        : device_(device), buffers_(buffers), submitter_(submitter), counters_(counters) {}

    // The app's rows as the ingest pass binds them, one row window at a time:
    // a window's rows bound from their offset aligned down to
    // minStorageBufferOffsetAlignment (the rest an element index), written
    // into that window of the chain's logits.
    IngestSource source(const sieve_vulkan_logits& in) const;
    // The app's rows (as source() splits them) can be bound as they are (f32,
    // aligned windows, no row patched by the history pass: some_row_adjusts
    // false): the passes read them there.
    static bool can_bind_in_place(const IngestSource& src, bool some_row_adjusts);
    // The ingest pass's command buffer for `src` (recorded when it changes).
    VkCommandBuffer ingest_command(const IngestSource& src);
    // The ingest pass for the last source, into the app's command buffer.
    void emit_ingest(VkCommandBuffer cmd) { ingest_->emit(cmd); }
    // Rows the GPU hands to the twin need their logits on the host: the ingest
    // pass runs again (the history pass may have patched Sieve's copy) and
    // the rows are read from the mapped buffer (or a staging copy of its
    // first `bytes`, the call's rows: ChainBuffers::call_logits_bytes).
    const float* rows_on_host(VkCommandBuffer ingest, uint64_t bytes);
    // The token copy into the app's buffer (recorded when the target changes).
    VkCommandBuffer token_copy(const TokenTarget& target);
    // Forget the app's buffers (their command buffers name them).
    void release();

private:
    Device& device_;
    ChainBuffers& buffers_;
    Submitter& submitter_;
    GpuCounters& counters_;
    std::unique_ptr<Ingest> ingest_;     // made on first use
    std::unique_ptr<TokenCopy> tokens_;  // made on first use
    VkCommandBuffer readback_ = VK_NULL_HANDLE;  // logits -> staging (rows_on_host without unified memory)
    uint64_t readback_bytes_ = 0;                // what readback_ copies: the call's rows, recorded again when they change
};

} // namespace sieve
