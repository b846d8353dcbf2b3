// A GPU chain's buffers: their sizes (one table, from the chain's capacity and
// the device's limits), their allocations, the row windows they are bound in,
// the descriptor sets over them and the texel views of the logits.
#pragma once

#include "chain/chain.hpp"
#include "vulkan/pipelines.hpp"
#include "vulkan/row_analysis.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

namespace sieve {

// The history samplers' per-row block (history.comp): a bitmap of
// ceil(max_vocab / 32) words, 2^hash_bits entries of ADJ_ENTRY words (at least
// twice the history capacity, so the table never fills), DRY's repeat counts,
// the bitmap's prefix counts, the adjusted logits by rank and the list of
// the entries in use (gpu_layout.h).
struct AdjustLayout {
    uint32_t hash_bits = 0;
    uint32_t bitmap_words = 0;
    uint64_t row_words = 0;
};
AdjustLayout adjust_layout(const ChainConfig& config);

// Row windows: a chain whose per-row buffers pass maxStorageBufferRange (128
// MiB on lavapipe and many phones: 256 rows of 151936 f32 logits) is bound as
// several windows of rows, each its own descriptor set over the same buffers
// at an offset; the shaders index rows from the window's first (the push
// constants' row_base is window-relative). Buffers a row does not index (the
// slots, the dispatch arguments) are bound whole.
struct RowWindows {
    std::array<uint64_t, BINDING_STORAGE_COUNT> row_bytes{};  // per binding; 0 = bound whole
    uint32_t rows = 0;                                        // rows per window
    uint32_t count = 0;                                       // windows for max_rows
};

// Runs before anything is allocated, host or device: throws DEVICE_LIMIT for a
// capacity the device cannot hold (per-row buffers beyond
// maxStorageBufferRange are split into row windows, refused only when one row
// does not fit).
void check_capacity(const ChainConfig& config, const ChainAnalysis& chain, const EffectiveLimits& limits,
                    uint32_t max_chunks);

// The app's f32 rows as the passes bind them in place (sieve_sample_vulkan
// and friends): the buffer from the rows' offset, `stride` elements apart,
// through `size` (the app's stated buffer size).
struct AppRows {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0, size = 0;
    uint64_t stride = 0;
    bool operator==(const AppRows& o) const {
        return buffer == o.buffer && offset == o.offset && size == o.size && stride == o.stride;
    }
};

// Which descriptor sets a recording binds: the sampling sets, the
// distribution sets (binding 8: the probabilities), or either with the app's
// rows at binding 0.
enum class SetKind { Sample, Distribution, AppRows, AppRowsDistribution };

class ChainBuffers {
public:
    // allocations: counts the device allocations (sieve_counters).
    // chain: the chain's analysis (its top-p and history samplers).
    ChainBuffers(Device& device, Pipelines& pipelines, const ChainConfig& config, const ChainAnalysis& chain,
                 uint32_t max_chunks, std::atomic<uint64_t>* allocations);
    ~ChainBuffers();
    ChainBuffers(const ChainBuffers&) = delete;
    ChainBuffers& operator=(const ChainBuffers&) = delete;

    const RowWindows& windows() const { return windows_; }
    const AdjustLayout& adjust_layout() const { return adjust_layout_; }
    uint32_t wide_cap() const { return wide_cap_; }  // list entries per row for top-p cuts past the buffer (0: no top-p)
    uint32_t input_words() const { return input_words_; }
    // The passes that stream the chain's own rows of whole vec4s read them
    // through texel views (create_texel_views says when).
    bool texel() const { return texel_; }

    // A row's index inside its window.
    uint32_t local_row(uint32_t row) const { return row % windows_.rows; }
    // Where row r of a call starts in a per-row buffer, in elements: windows
    // hold max_elems per row, a call's rows inside a window call_elems (the
    // shaders index row * pc.stride from the window's start).
    size_t row_at(uint32_t r, uint64_t max_elems, uint64_t call_elems) const {
        return static_cast<size_t>((r / windows_.rows) * windows_.rows * max_elems + (r % windows_.rows) * call_elems);
    }
    // The bytes of the logits buffer a call of `rows` rows of `vocab` logits
    // spans, from its start (what the upload and the read-back copy).
    uint64_t call_logits_bytes(uint32_t rows, uint64_t max_vocab, uint32_t vocab) const {
        return (row_at(rows - 1, max_vocab, vocab) + vocab) * 4ull;
    }

    // Records the first fill: row state (arrival counters) and the history
    // blocks start at 0.
    void record_clear(VkCommandBuffer cmd) const;

    VkDescriptorSet set(SetKind kind, uint32_t window) const;
    // The distribution output (binding 8) and its sets, allocated on first
    // use: --dump-dist is an inspection path, not the steady state, so it does
    // not cost every chain a second logits buffer.
    void ensure_distribution_output();
    // Whether the AppRows sets bind `rows` now.
    bool app_rows_bound(const AppRows& rows) const { return app_rows_ && *app_rows_ == rows; }
    // Points the AppRows sets (and the AppRowsDistribution sets, once the
    // distribution output is there) at `rows`. Rewriting a set invalidates
    // the recordings that bind it: the caller drops them first. The previous
    // call has finished.
    void bind_app_rows(const AppRows& rows);
    // Forget the app's rows (rebound on the next use).
    void release_app_rows() { app_rows_.reset(); }

    Buffer logits, staging, params, chunk_stats, row_state, slot_state, histograms, candidates, results;
    Buffer placeholder, probabilities, dispatch_args, inputs, wide, adjust;
    Buffer args_readback;  // dispatch_args as the call's dispatches ran it, in host-cached memory
    // Where the host reads the indirect arguments a call ran with: the copy
    // on a GPU's plan (the recording makes it: gpu_recorder.cpp), else the
    // arguments themselves (a CPU device's memory is the host's).
    bool args_copied() const { return limits_.plan_type != SIEVE_DEVICE_CPU; }
    const uint32_t* args_for_host() const {
        return static_cast<const uint32_t*>(args_copied() ? args_readback.mapped : dispatch_args.mapped);
    }

private:
    void release();
    VkDescriptorSet new_set();  // allocated from pool_, unwritten
    // Window w's set (probabilities: binding 8, or the placeholder); app_logits:
    // binding 0 when it is not the chain's own logits buffer (the app's rows).
    void write_set(VkDescriptorSet set, uint32_t window, VkBuffer output,
                   const VkDescriptorBufferInfo* app_logits = nullptr);
    // Writes `sets` (made where missing), one per window, with the app's rows
    // app_rows_ at binding 0 and `output` at binding 8.
    void write_app_row_sets(std::vector<VkDescriptorSet>* sets, VkBuffer output);
    void create_texel_views();

    Device& device_;
    Pipelines& pipelines_;
    const ChainConfig& config_;
    const EffectiveLimits& limits_;
    uint32_t input_words_ = 0;
    uint32_t wide_cap_ = 0;
    AdjustLayout adjust_layout_;
    RowWindows windows_;
    std::atomic<uint64_t>* allocations_;
    VkDescriptorPool pool_ = VK_NULL_HANDLE;
    std::vector<VkDescriptorSet> sets_, distribution_sets_;  // one per row window
    // sets_ and distribution_sets_ with the app's rows at binding 0 (made on first use)
    std::vector<VkDescriptorSet> app_row_sets_, app_row_distribution_sets_;
    std::optional<AppRows> app_rows_;  // what the app-row sets bind now
    // Texel views of the chain's logits (one per window, binding
    // BINDING_LOGITS_TEXELS); every other set binds the placeholder's view.
    bool texel_ = false;
    std::vector<VkBufferView> logits_views_;
    VkBufferView placeholder_view_ = VK_NULL_HANDLE;
};

} // namespace sieve
