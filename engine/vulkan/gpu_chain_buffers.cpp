#include "vulkan/gpu_chain_buffers.hpp"

#include "vulkan/gpu_params.hpp"
#include "vulkan/gpu_plan.hpp"
#include "vulkan/slot_layout.hpp"
#include "vulkan/vk_check.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

namespace sieve {

using namespace glsl;

namespace {

// Bins per chunk in a row's histograms: the levels' 16, or wide_histogram's
// (wide_bins: 256 on CPU devices) when the chain holds top-p.
uint32_t histogram_bins(const ChainAnalysis& chain, const EffectiveLimits& limits) {
    return chain.top_p ? std::max(BINS, wide_bins(limits)) : BINS;
}

// List entries per row for a top-p cut past the candidate buffer (wide.glsl):
// half the vocabulary (as many bytes as the logits; LM-like rows at top-p 0.95
// gather about an eighth, rows of a few tied values up to a half), at most
// kMaxWideList, less when the rows' lists would pass maxStorageBufferRange.
// Rows whose cut needs more fall back to the CPU twin (counted); 0 without
// top-p.
uint32_t wide_list_capacity(const ChainConfig& config, const ChainAnalysis& chain, const EffectiveLimits& limits,
                            uint32_t window_rows) {
    if (!chain.top_p) return 0;
    const uint64_t per_row = limits.max_storage_buffer_range / 4 / static_cast<uint64_t>(window_rows);
    const uint64_t fixed = wide_row_words(limits.candidate_capacity, 0);
    if (per_row <= fixed) return 0;
    const uint64_t wanted = std::max<uint64_t>(limits.candidate_capacity, static_cast<uint64_t>(config.max_vocab) / 2);
    const uint64_t list = std::min<uint64_t>({kMaxWideList, wanted, (per_row - fixed) / 2});
    return list >= limits.candidate_capacity ? static_cast<uint32_t>(list) : 0;
}

// wide_cap: the wide list's entries per row (0: no top-p).
RowWindows row_windows(const ChainConfig& config, const ChainAnalysis& chain, const EffectiveLimits& limits,
                       uint32_t max_chunks, uint32_t wide_cap, const AdjustLayout* adjust) {
    RowWindows w;
    const uint64_t vocab = static_cast<uint64_t>(config.max_vocab);
    w.row_bytes[BINDING_LOGITS] = vocab * 4;
    w.row_bytes[BINDING_PARAMS] = PARAM_STRIDE * 4ull;
    w.row_bytes[BINDING_CHUNK_STATS] = static_cast<uint64_t>(max_chunks) * CHUNK_STRIDE * 4;
    w.row_bytes[BINDING_ROW_STATE] = ROW_STRIDE * 4ull;
    w.row_bytes[BINDING_SLOT_STATE] = 0;
    w.row_bytes[BINDING_HISTOGRAMS] =
        static_cast<uint64_t>(max_chunks) * histogram_bins(chain, limits) * HIST_STRIDE * 4;
    w.row_bytes[BINDING_CANDIDATES] = collect_row_words(limits.candidate_capacity) * 4;
    w.row_bytes[BINDING_RESULTS] = RESULT_STRIDE * 4ull;
    w.row_bytes[BINDING_OUTPUT] = (2 * vocab + 2) * 4;
    w.row_bytes[BINDING_DISPATCH_ARGS] = 0;
    w.row_bytes[BINDING_ROW_INPUTS] = row_input_words(static_cast<uint32_t>(vocab)) * 4ull;
    w.row_bytes[BINDING_WIDE] = wide_cap ? wide_row_words(limits.candidate_capacity, wide_cap) * 4 : 0;
    w.row_bytes[BINDING_ADJUST] = adjust ? adjust->row_words * 4 : 0;
    uint64_t fit = UINT64_MAX;
    int widest = 0;
    for (uint32_t b = 0; b < BINDING_STORAGE_COUNT; ++b)
        if (w.row_bytes[b] && limits.max_storage_buffer_range / w.row_bytes[b] < fit) {
            fit = limits.max_storage_buffer_range / w.row_bytes[b];
            widest = static_cast<int>(b);
        }
    const uint64_t rows = static_cast<uint64_t>(config.max_rows);
    if (fit < rows) {
        // Window offsets (a window's rows times each row size) must be
        // multiples of minStorageBufferOffsetAlignment (a power of two): a
        // window holds a multiple of `unit` rows.
        const uint64_t align = std::max<uint64_t>(1, limits.min_storage_offset_alignment);
        uint64_t unit = 1;
        for (uint64_t bytes : w.row_bytes)
            if (bytes) unit = std::max(unit, align / std::gcd(align, bytes));  // powers of two: the max is the lcm
        fit -= fit % unit;
    }
    if (fit == 0)
        fail(SIEVE_ERROR_DEVICE_LIMIT, "one row of vocab " + std::to_string(config.max_vocab) + " needs " +
                                           std::to_string(w.row_bytes[static_cast<size_t>(widest)]) +
                                           " bytes in binding " + std::to_string(widest) +
                                           "; this device's maxStorageBufferRange is " +
                                           std::to_string(limits.max_storage_buffer_range));
    w.rows = static_cast<uint32_t>(std::min<uint64_t>(fit, rows));
    w.count = static_cast<uint32_t>((rows + w.rows - 1) / w.rows);
    return w;
}

} // namespace

AdjustLayout adjust_layout(const ChainConfig& config) {
    AdjustLayout a;
    const uint32_t cap = static_cast<uint32_t>(config.history_capacity);
    a.hash_bits = 1;
    while ((1u << a.hash_bits) < 2 * cap) ++a.hash_bits;
    a.bitmap_words = (static_cast<uint32_t>(config.max_vocab) + 31) / 32;
    a.row_words = SIEVE_ADJUST_ROW_WORDS(uint64_t{a.bitmap_words}, a.hash_bits, uint64_t{cap});
    return a;
}

void check_capacity(const ChainConfig& config, const ChainAnalysis& chain, const EffectiveLimits& limits,
                    uint32_t max_chunks) {
    const uint64_t range = limits.max_storage_buffer_range;
    const AdjustLayout adjust = adjust_layout(config);
    const RowWindows windows = row_windows(config, chain, limits, max_chunks, 0, chain.history ? &adjust : nullptr);
    const uint64_t slot_bytes = static_cast<uint64_t>(config.max_slots) *
                                slot_words(static_cast<uint32_t>(config.history_capacity)) * 4;
    if (slot_bytes > range)
        fail(SIEVE_ERROR_DEVICE_LIMIT, "capacity of " + std::to_string(config.max_slots) + " slots with a history of " +
                                           std::to_string(config.history_capacity) +
                                           " tokens needs more slot space than maxStorageBufferRange");
    // Each buffer is one allocation, whatever its windows.
    for (uint32_t b = 0; b < BINDING_STORAGE_COUNT; ++b) {
        const uint64_t bytes = windows.row_bytes[b] * static_cast<uint64_t>(config.max_rows);
        if (bytes > limits.max_allocation_size)
            fail(SIEVE_ERROR_DEVICE_LIMIT, "capacity " + std::to_string(config.max_rows) + " rows x " +
                                               std::to_string(config.max_vocab) + " needs " + std::to_string(bytes) +
                                               " bytes in one allocation (binding " + std::to_string(b) +
                                               "); this device's maxMemoryAllocationSize is " +
                                               std::to_string(limits.max_allocation_size));
    }
    if (windows.rows > limits.max_workgroup_count_y)
        fail(SIEVE_ERROR_DEVICE_LIMIT, "max_rows exceeds this device's maxComputeWorkGroupCount[1]");
}

ChainBuffers::ChainBuffers(Device& device, Pipelines& pipelines, const ChainConfig& config, const ChainAnalysis& chain,
                           uint32_t max_chunks, std::atomic<uint64_t>* allocations)
    : device_(device), pipelines_(pipelines), config_(config), limits_(device.limits()),
      input_words_(row_input_words(static_cast<uint32_t>(config.max_vocab))), adjust_layout_(sieve::adjust_layout(config)),
      allocations_(allocations) {
    const uint64_t rows = static_cast<uint64_t>(config.max_rows);
    const uint64_t vocab = static_cast<uint64_t>(config.max_vocab);
    const VkBufferUsageFlags storage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    const AdjustLayout* adjust_rows = chain.history ? &adjust_layout_ : nullptr;
    wide_cap_ = wide_list_capacity(config, chain, limits_,
                                   row_windows(config, chain, limits_, max_chunks, 0, adjust_rows).rows);
    windows_ = row_windows(config, chain, limits_, max_chunks, wide_cap_, adjust_rows);
    try {
        const bool uma = device_.unified_memory();
        const VkBufferUsageFlags texel_usage = VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;
        // A transfer destination for the upload, and a source for reading
        // back the rows the twin finishes (device_host_rows).
        logits = device_.create_buffer(rows * vocab * 4,
                                       storage | texel_usage | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                           VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                       uma ? HostAccess::Writes : HostAccess::None, allocations_);
        // The upload's source, and where the host reads back rows the twin
        // finishes from the app's buffer (device_host_rows): system memory.
        if (!uma)
            staging = device_.create_buffer(rows * vocab * 4,
                                            VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                            HostAccess::Reads, allocations_);
        params = device_.create_buffer(rows * PARAM_STRIDE * 4, storage, HostAccess::Writes, allocations_);
        chunk_stats = device_.create_buffer(rows * max_chunks * CHUNK_STRIDE * 4, storage, HostAccess::None, allocations_);
        row_state = device_.create_buffer(rows * ROW_STRIDE * 4, storage | VK_BUFFER_USAGE_TRANSFER_DST_BIT, HostAccess::None,
                                          allocations_);
        // Slots are host-visible: the host's slot operations (accept, reset,
        // copy, save/restore) work on them between calls without a submission;
        // the shaders append drawn tokens to them and the history pass walks
        // them, which must not cross PCIe: device-local where it can be.
        const uint64_t slot_bytes =
            static_cast<uint64_t>(config.max_slots) * slot_words(static_cast<uint32_t>(config.history_capacity)) * 4;
        slot_state = device_.create_buffer(slot_bytes, storage, HostAccess::Writes, allocations_);
        std::memset(slot_state.mapped, 0, slot_bytes);
        histograms = device_.create_buffer(rows * max_chunks * histogram_bins(chain, limits_) * HIST_STRIDE * 4,
                                           storage, HostAccess::None, allocations_);
        candidates = device_.create_buffer(rows * collect_row_words(limits_.candidate_capacity) * 4, storage,
                                           HostAccess::None, allocations_);
        inputs = device_.create_buffer(rows * input_words_ * 4, storage, HostAccess::Writes, allocations_);
        // A transfer source too: the async token copy reads the ids from it.
        // The host reads every row's result after each call.
        results = device_.create_buffer(rows * RESULT_STRIDE * 4, storage | VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                        HostAccess::Reads, allocations_);
#ifdef SIEVE_PHASE_CLOCK
        std::memset(results.mapped, 0xFF, rows * RESULT_STRIDE * 4);  // every phase mark unset (phase_log.hpp)
#endif
        placeholder = device_.create_buffer(16, storage | texel_usage, HostAccess::None, allocations_);
        create_texel_views();
        if (adjust_rows)
            adjust = device_.create_buffer(rows * adjust_layout_.row_words * 4,
                                           storage | VK_BUFFER_USAGE_TRANSFER_DST_BIT, HostAccess::None, allocations_);
        if (wide_cap_)
            wide = device_.create_buffer(rows * wide_row_words(limits_.candidate_capacity, wide_cap_) * 4, storage,
                                         HostAccess::None, allocations_);
        // Written by each level's decision (scan.glsl, shader atomics: kept in
        // device memory) and by the host (arm_args), read by
        // vkCmdDispatchIndirect. On a GPU's plan it is copied at the end of
        // each call into args_readback, where the host counts the dispatches
        // that ran (a few words a call: on a discrete GPU a host read of
        // device-local memory is an uncached PCIe round trip, about 0.9 us a
        // word on the H200); a CPU device's plan reads it where it is
        // (args_for_host).
        dispatch_args = device_.create_buffer(rows * GROUP_ARGS_WORDS * 4,
                                              storage | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT |
                                                  VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                              HostAccess::Writes, allocations_);
        args_readback = device_.create_buffer(rows * GROUP_ARGS_WORDS * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                              HostAccess::Reads, allocations_);

        // A sampling set and (on first use) a distribution set and the two
        // binding the app's rows per window.
        pool_ = create_storage_pool(device_, 4 * windows_.count, 4 * BINDING_STORAGE_COUNT * windows_.count,
                                    4 * windows_.count);
        for (uint32_t w = 0; w < windows_.count; ++w) {
            sets_.push_back(new_set());
            write_set(sets_.back(), w, placeholder.buffer);
        }
    } catch (...) {
        release();
        throw;
    }
}

ChainBuffers::~ChainBuffers() { release(); }

void ChainBuffers::release() {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    if (pool_) vk.vkDestroyDescriptorPool(dev, pool_, nullptr);
    pool_ = VK_NULL_HANDLE;
    for (VkBufferView v : logits_views_) vk.vkDestroyBufferView(dev, v, nullptr);
    logits_views_.clear();
    if (placeholder_view_) vk.vkDestroyBufferView(dev, placeholder_view_, nullptr);
    placeholder_view_ = VK_NULL_HANDLE;
    for (Buffer* b : {&logits, &staging, &params, &chunk_stats, &row_state, &slot_state, &histograms, &candidates,
                      &results, &placeholder, &probabilities, &dispatch_args, &args_readback, &inputs, &wide, &adjust})
        device_.destroy_buffer(*b);
}

void ChainBuffers::record_clear(VkCommandBuffer cmd) const {
    const auto& vk = device_.vk();
    vk.vkCmdFillBuffer(cmd, row_state.buffer, 0, VK_WHOLE_SIZE, 0);
    if (adjust.buffer) vk.vkCmdFillBuffer(cmd, adjust.buffer, 0, VK_WHOLE_SIZE, 0);
}

VkDescriptorSet ChainBuffers::set(SetKind kind, uint32_t window) const {
    switch (kind) {
    case SetKind::AppRows: return app_row_sets_[window];
    case SetKind::AppRowsDistribution: return app_row_distribution_sets_[window];
    case SetKind::Distribution: return distribution_sets_[window];
    default: return sets_[window];
    }
}

VkDescriptorSet ChainBuffers::new_set() {
    VkDescriptorSetLayout layout = pipelines_.set_layout();
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = pool_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vk_check(device_.vk().vkAllocateDescriptorSets(device_.handle(), &ai, &set), "vkAllocateDescriptorSets");
    return set;
}

void ChainBuffers::write_set(VkDescriptorSet set, uint32_t window, VkBuffer output,
                             const VkDescriptorBufferInfo* app_logits) {
    VkBuffer buffers[BINDING_STORAGE_COUNT];
    buffers[BINDING_LOGITS] = logits.buffer;
    buffers[BINDING_PARAMS] = params.buffer;
    buffers[BINDING_CHUNK_STATS] = chunk_stats.buffer;
    buffers[BINDING_ROW_STATE] = row_state.buffer;
    buffers[BINDING_SLOT_STATE] = slot_state.buffer;
    buffers[BINDING_HISTOGRAMS] = histograms.buffer;
    buffers[BINDING_CANDIDATES] = candidates.buffer;
    buffers[BINDING_RESULTS] = results.buffer;
    buffers[BINDING_OUTPUT] = output;
    buffers[BINDING_DISPATCH_ARGS] = dispatch_args.buffer;
    buffers[BINDING_ROW_INPUTS] = inputs.buffer;
    buffers[BINDING_WIDE] = wide.buffer ? wide.buffer : placeholder.buffer;
    buffers[BINDING_ADJUST] = adjust.buffer ? adjust.buffer : placeholder.buffer;
    const uint64_t first = static_cast<uint64_t>(window) * windows_.rows;
    const uint64_t rows = std::min<uint64_t>(windows_.rows, static_cast<uint64_t>(config_.max_rows) - first);
    VkDescriptorBufferInfo infos[BINDING_STORAGE_COUNT];
    for (uint32_t b = 0; b < BINDING_STORAGE_COUNT; ++b) {
        const bool windowed = windows_.row_bytes[b] != 0 && buffers[b] != placeholder.buffer;
        infos[b] = windowed ? VkDescriptorBufferInfo{buffers[b], first * windows_.row_bytes[b], rows * windows_.row_bytes[b]}
                            : VkDescriptorBufferInfo{buffers[b], 0, VK_WHOLE_SIZE};
    }
    if (app_logits) infos[BINDING_LOGITS] = *app_logits;
    write_storage_set(device_, set, infos, BINDING_STORAGE_COUNT);
    write_texel_binding(device_, set, texel_ && !app_logits ? logits_views_[window] : placeholder_view_);
}

// Lavapipe (Mesa 22.3) loads an SSBO element whose address differs between
// lanes one lane at a time (a branch on the lane's mask, a bounds check and a
// scalar load each: gallivm's emit_load_mem); a texel fetch goes through its
// sampler's gathers. A bare vec4 pass over a row of 151936, submit included,
// took 138 us median that way and 102 us through a texel buffer. So on a CPU
// device the passes that stream the chain's own rows read them through texel
// views (logits4.glsl); a GPU keeps the storage path, which it loads as fast.
// Each window's logits need a view (its offset a multiple of
// minTexelBufferOffsetAlignment, at most maxTexelBufferElements vec4s), else
// the storage path stays.
void ChainBuffers::create_texel_views() {
    const auto& vk = device_.vk();
    auto make_view = [&](VkBuffer buffer, VkDeviceSize offset, VkDeviceSize range) {
        VkBufferViewCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
        info.buffer = buffer;
        info.format = VK_FORMAT_R32G32B32A32_SFLOAT;
        info.offset = offset;
        info.range = range;
        VkBufferView view = VK_NULL_HANDLE;
        vk_check(vk.vkCreateBufferView(device_.handle(), &info, nullptr, &view), "vkCreateBufferView");
        return view;
    };
    placeholder_view_ = make_view(placeholder.buffer, 0, 16);
    // Window w's logits: from its first row, whole vec4s.
    std::vector<std::pair<uint64_t, uint64_t>> windows;  // (offset, bytes)
    const uint64_t max_rows = static_cast<uint64_t>(config_.max_rows);
    for (uint32_t w = 0; w < windows_.count; ++w) {
        const uint64_t first = static_cast<uint64_t>(w) * windows_.rows;
        windows.emplace_back(first * windows_.row_bytes[BINDING_LOGITS],
                             std::min<uint64_t>(windows_.rows, max_rows - first) * windows_.row_bytes[BINDING_LOGITS] /
                                 16 * 16);
    }
    const uint64_t align = std::max<uint64_t>(limits_.min_texel_offset_alignment, 1);
    bool texel = limits_.cpu_paths;  // a CPU device, unless the context asks for GPU-sized limits
    for (const auto& [offset, bytes] : windows)
        texel = texel && offset % align == 0 && bytes >= 16 && bytes / 16 <= limits_.max_texel_buffer_elements;
    for (const auto& [offset, bytes] : windows)
        if (texel) logits_views_.push_back(make_view(logits.buffer, offset, bytes));
    texel_ = texel;
}

void ChainBuffers::ensure_distribution_output() {
    if (probabilities.buffer) return;
    probabilities = device_.create_buffer(static_cast<uint64_t>(config_.max_rows) * (2ull * config_.max_vocab + 2) * 4,
                                          VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, HostAccess::Reads, allocations_);
    for (uint32_t w = 0; w < windows_.count; ++w) {
        distribution_sets_.push_back(new_set());
        write_set(distribution_sets_.back(), w, probabilities.buffer);
    }
    // New sets: no recording binds them yet.
    if (app_rows_) write_app_row_sets(&app_row_distribution_sets_, probabilities.buffer);
}

void ChainBuffers::bind_app_rows(const AppRows& rows) {
    app_rows_ = rows;
    write_app_row_sets(&app_row_sets_, placeholder.buffer);
    if (probabilities.buffer) write_app_row_sets(&app_row_distribution_sets_, probabilities.buffer);
}

void ChainBuffers::write_app_row_sets(std::vector<VkDescriptorSet>* sets, VkBuffer output) {
    const AppRows& rows = *app_rows_;
    for (uint32_t w = 0; w < windows_.count; ++w) {
        if (sets->size() <= w) sets->push_back(new_set());
        // Window w's rows from its first row through the app's buffer (or as
        // far as one binding reaches): the rows of any call that fits.
        const VkDeviceSize offset = rows.offset + static_cast<VkDeviceSize>(w) * windows_.rows * rows.stride * 4;
        // (A window past the app's buffer, which no call of these rows
        // reaches, keeps the chain's own logits.)
        const VkDeviceSize reach = rows.size - std::min(offset, rows.size);
        const VkDescriptorBufferInfo app_logits{
            rows.buffer, offset, std::min<VkDeviceSize>(reach, limits_.max_storage_buffer_range) / 4 * 4};
        write_set((*sets)[w], w, output, app_logits.range > 0 ? &app_logits : nullptr);
    }
}

} // namespace sieve
