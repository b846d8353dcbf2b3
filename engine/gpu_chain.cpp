// The GPU engine's chain: buffers allocated once for the chain's capacity, one
// descriptor set, command buffers recorded once per (kind, rows, vocab) and
// resubmitted; per-token values go through the persistently mapped parameter
// block, so steady-state sampling records and allocates nothing.
#include "gpu_context.hpp"
#include "gpu_params.hpp"
#include "gpu_plan.hpp"
#include "ingest.hpp"
#include "token_copy.hpp"
#include "slot_layout.hpp"
#include "vk_check.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>

#include <sieve/sieve_vulkan.h>

namespace sieve {

namespace {

// The buffers' word layouts (gpu_layout.h).
using namespace glsl;

// A submission's host wait. Generous: lavapipe compiles a pipeline's shader
// at its first dispatch, inside the submission (tens of seconds for the
// collect pass on a loaded 2-core machine).
constexpr uint64_t kWaitTimeoutNs = 120ull * 1000 * 1000 * 1000;

struct RowGroup {
    uint32_t window;     // the row window whose descriptor set it binds
    uint32_t row_base;   // its first row, counted from the window's first
    uint32_t rows;
    uint32_t args_base;  // its indirect dispatch arguments, in words
};

// The app's f32 rows as the passes bind them directly (sieve_sample_vulkan
// and friends): the buffer from the rows' offset, `stride` elements apart,
// through `size` (the app's stated buffer size).
struct DirectKey {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0, size = 0;
    uint64_t stride = 0;
    bool operator==(const DirectKey& o) const {
        return buffer == o.buffer && offset == o.offset && size == o.size && stride == o.stride;
    }
};

// How a zero-copy call's logits reach the passes: bound where the app keeps
// them (direct), or copied into the chain's logits buffer by the ingest pass
// (f16/bf16, an offset the device cannot bind, rows the history pass patches).
struct DeviceInput {
    bool direct = false;
    VkCommandBuffer ingest = VK_NULL_HANDLE;  // the ingest pass (not direct)
    IngestSource source;                      // the app's rows (its stride: a direct binding's)
};

struct Recording {
    VkCommandBuffer cmd = VK_NULL_HANDLE;  // null for a plan emitted into the app's command buffer
    RecordingKind kind = RecordingKind::Sample;
    uint32_t rows = 0, vocab = 0;
    InputsMode inputs = InputsMode::None;
    bool history = false;
    bool device_input = false;  // the logits are on the device already (no staging copy)
    bool direct = false;        // ... and bound where the app keeps them (direct_sets_): no ingest pass
    uint32_t stride = 0;        // elements from one row of the bound logits to the next
    bool logprobs = false;      // raw_stats.comp runs first
    bool wide = false;          // the wide passes are recorded (some row may take them)
    Plan plan;
    std::vector<RowGroup> groups;  // the plan's dispatches run once per group
    bool timestamps = false;       // one timestamp before the first and after every dispatch
    // How long a blocking wait on this recording usually takes (ns, 0 = not
    // yet known): where await starts polling (wait_spin_us).
    mutable double wait_ns = 0.0;
};

// The longest plan (raw stats, history, stats, 9 levels, gather) once per row in the worst case.
constexpr uint32_t kMaxPlanDispatches = 13;

bool has_top_p(const ChainConfig& config) {
    return std::find(config.samplers.begin(), config.samplers.end(), ref::SamplerKind::TopP) != config.samplers.end();
}

// The wide passes' WIDE_DIVISIONS for the chain (pipelines.hpp). A temperature
// sampler divides a row's values at most once (op_divide; greedy masking and
// a dynamic temperature, whose rows never take the wide passes, divide no
// more), so the chain's counts bound every row's.
uint32_t wide_divisions(const ChainConfig& config) {
    uint32_t all = 0, cut = 0;
    for (ref::SamplerKind k : config.samplers) {
        if (k == ref::SamplerKind::Temperature) ++all;
        if (k == ref::SamplerKind::TopP) cut = all;
    }
    return std::min(cut, WIDE_MAX_DIVISIONS) | (std::min(all, WIDE_MAX_DIVISIONS) << 8);
}

// Bins per chunk in a row's histograms: the levels' 16, or wide_histogram's
// (wide_bins: 256 on CPU devices) when the chain holds top-p.
uint32_t histogram_bins(const ChainConfig& config, const EffectiveLimits& limits) {
    return has_top_p(config) ? std::max(BINS, wide_bins(limits)) : BINS;
}

// List entries per row for a top-p cut past the candidate buffer (wide.glsl):
// half the vocabulary (as many bytes as the logits; LM-like rows at top-p 0.95
// gather about an eighth, rows of a few tied values up to a half), at most
// kMaxWideList, less when the rows' lists would pass maxStorageBufferRange.
// Rows whose cut needs more fall back to the CPU twin (counted); 0 without
// top-p.
uint32_t wide_list_capacity(const ChainConfig& config, const EffectiveLimits& limits, uint32_t window_rows) {
    if (!has_top_p(config)) return 0;
    const uint64_t per_row = limits.max_storage_buffer_range / 4 / static_cast<uint64_t>(window_rows);
    const uint64_t fixed = wide_row_words(limits.candidate_capacity, 0);
    if (per_row <= fixed) return 0;
    const uint64_t wanted = std::max<uint64_t>(limits.candidate_capacity, static_cast<uint64_t>(config.max_vocab) / 2);
    const uint64_t list = std::min<uint64_t>({kMaxWideList, wanted, (per_row - fixed) / 2});
    return list >= limits.candidate_capacity ? static_cast<uint32_t>(list) : 0;
}

// The history samplers' per-row block (history.comp): a bitmap of
// ceil(max_vocab / 32) words, 2^hash_bits entries of 4 words (at least twice
// the history capacity, so the table never fills), DRY's repeat counts, the
// bitmap's prefix counts and the adjusted logits by rank (common.glsl).
struct AdjustLayout {
    uint32_t hash_bits = 0;
    uint32_t bitmap_words = 0;
    uint64_t row_words = 0;
};

AdjustLayout adjust_layout(const ChainConfig& config) {
    AdjustLayout a;
    const uint32_t cap = static_cast<uint32_t>(config.history_capacity);
    a.hash_bits = 1;
    while ((1u << a.hash_bits) < 2 * cap) ++a.hash_bits;
    a.bitmap_words = (static_cast<uint32_t>(config.max_vocab) + 31) / 32;
    a.row_words = 2ull * a.bitmap_words + (4ull << a.hash_bits) + 2ull * cap;
    return a;
}

// Row windows: a chain whose per-row buffers pass maxStorageBufferRange (128
// MiB on lavapipe and many phones: 256 rows of 151936 f32 logits) is bound as
// several windows of rows, each its own descriptor set over the same buffers
// at an offset; the shaders index rows from the window's first (the push
// constants' row_base is window-relative). Buffers a row does not index (the
// slots, the dispatch arguments) are bound whole.
struct RowWindows {
    std::array<uint64_t, BINDING_STORAGE_COUNT> row_bytes{};  // per binding; 0 = bound whole
    uint32_t rows = 0;                                // rows per window
    uint32_t count = 0;                               // windows for max_rows
};

// wide_cap: the wide list's entries per row (0: no top-p).
RowWindows row_windows(const ChainConfig& config, const EffectiveLimits& limits, uint32_t max_chunks,
                       uint32_t wide_cap, const AdjustLayout* adjust) {
    RowWindows w;
    const uint64_t vocab = static_cast<uint64_t>(config.max_vocab);
    w.row_bytes = {vocab * 4,
                   PARAM_STRIDE * 4ull,
                   static_cast<uint64_t>(max_chunks) * CHUNK_STRIDE * 4,
                   ROW_STRIDE * 4ull,
                   0,
                   static_cast<uint64_t>(max_chunks) * histogram_bins(config, limits) * HIST_STRIDE * 4,
                   collect_row_words(limits.candidate_capacity) * 4,
                   RESULT_STRIDE * 4ull,
                   (2 * vocab + 2) * 4,
                   0,
                   row_input_words(static_cast<uint32_t>(vocab)) * 4ull,
                   wide_cap ? wide_row_words(limits.candidate_capacity, wide_cap) * 4 : 0,
                   adjust ? adjust->row_words * 4 : 0};
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

bool chain_has_history(const ChainConfig& config) {
    for (auto k : config.samplers)
        if (k == ref::SamplerKind::Penalties || k == ref::SamplerKind::Dry) return true;
    return false;
}

// The first penalties or dry that comes after another sampler and acts on
// this row, or null. The GPU applies them as it reads a logit (history.comp),
// i.e. before every other sampler, as llama.cpp's default order has them; a
// row where such a sampler acts is refused (the CPU backend takes any order).
const char* misplaced_history(const ChainConfig& config, const ref::RowParams& row) {
    bool other_before = false;
    for (size_t i = 0; i + 1 < config.samplers.size(); ++i) {
        const auto k = config.samplers[i];
        const bool history = k == ref::SamplerKind::Penalties || k == ref::SamplerKind::Dry;
        const bool acts = k == ref::SamplerKind::Penalties ? penalties_act(row) : dry_acts(row);
        if (history && other_before && acts) return ref::sampler_name(k);
        other_before = other_before || !history;
    }
    return nullptr;
}

class GpuChain final : public ChainImpl {
public:
    GpuChain(VulkanContext& context, const ChainConfig& config);
    ~GpuChain() override;
    int32_t max_bias_entries() const override { return kMaxGpuBiasEntries; }

    sieve_status sample(const LogitsView& logits, int32_t draws, int32_t* tokens, sieve_token* out,
                        std::string* message, bool commit) override;
    sieve_status distributions(const LogitsView& logits, const std::vector<int32_t>& wanted,
                               std::vector<std::vector<ref::Weighted>>* out, std::vector<sieve_status>* statuses,
                               std::string* message) override;
    sieve_status sample_device(const sieve_vulkan_logits& logits, sieve_token* out, std::string* message) override;
    void release_input() override {
        if (ingest_) ingest_->release_source();
        direct_key_.reset();  // rebound (and re-recorded) on the next use
        if (tokens_) tokens_->release_target();
    }
    void sample_async(const sieve_vulkan_logits& logits, const sieve_vulkan_sync* sync) override;
    sieve_status wait(uint64_t timeout_ns, sieve_token* out, std::string* message) override;
    void record(VkCommandBuffer cmd, const sieve_vulkan_logits& logits, const sieve_vulkan_sync* sync) override;
    sieve_status collect(sieve_token* out, std::string* message) override;
    const char* in_flight() const override {
        return !in_flight_ ? nullptr : in_flight_->recorded ? "sieve_chain_collect" : "sieve_chain_wait";
    }
    sieve_counters counters() const override;
    void plan_figures(int32_t rows, int32_t vocab, uint32_t* dispatches, uint32_t* row_passes) const override;
    void set_profiling(bool enabled) override;
    std::vector<sieve_stage_time> stage_times() const override { return stage_times_; }

protected:
    uint32_t* slot_record(int32_t slot) override {
        wait_pending();
        return static_cast<uint32_t*>(slot_state_.mapped) + static_cast<size_t>(slot) * slot_words(history_capacity());
    }

private:
    void release();
    // Window w's descriptor set (probabilities: binding 8, or the placeholder).
    VkDescriptorSet allocate_set(uint32_t window, VkBuffer probabilities);
    VkDescriptorSet new_set();  // allocated from pool_, unwritten
    void create_texel_views();
    // logits: binding 0 when it is not the chain's own logits buffer (the app's rows).
    void write_set(VkDescriptorSet set, uint32_t window, VkBuffer probabilities,
                   const VkDescriptorBufferInfo* logits = nullptr);
    uint32_t local_row(uint32_t row) const { return row % windows_.rows; }
    // Where row r of a call starts in a per-row buffer, in elements: windows
    // hold max_elems per row, a call's rows inside a window call_elems (the
    // shaders index row * pc.stride from the window's start).
    size_t row_at(uint32_t r, uint64_t max_elems, uint64_t call_elems) const {
        return static_cast<size_t>((r / windows_.rows) * windows_.rows * max_elems + (r % windows_.rows) * call_elems);
    }
    // input: where the logits come from (null: the host, through the upload).
    Recording describe(RecordingKind kind, uint32_t rows, uint32_t vocab, bool collect, const DeviceInput* input,
                       bool timestamps) const;
    // The chain's own command buffer for the shape, recorded on first use.
    const Recording& recording(RecordingKind kind, uint32_t rows, uint32_t vocab, bool collect,
                               const DeviceInput* input = nullptr);
    void emit(VkCommandBuffer cmd, const Recording& rec);
    bool use_collect(uint32_t rows) const;
    bool wide_direct(RecordingKind kind, uint32_t rows, uint32_t vocab, bool collect, bool wide, bool history,
                     bool logprobs) const;
    bool may_go_wide(uint32_t rows) const;
    sieve_token fallback(uint32_t row, const float* logits, uint32_t vocab, uint32_t step, bool commit,
                         std::string* message, sieve_status* first);
    void upload(const LogitsView& logits);
    sieve_status read_distribution(const LogitsView& logits, int32_t row, bool collect, std::vector<ref::Weighted>* out,
                                   std::string* message);
    void write_params(uint32_t rows, bool sample, bool commit);
    void arm_collect(const Recording& rec);
    void check_history_order(uint32_t rows) const;
    // prefix: a command buffer submitted ahead of the recording (the ingest
    // pass); suffix: one after it (the token copy); sync: the app's semaphores.
    void submit(const Recording& rec, VkCommandBuffer prefix, VkCommandBuffer suffix, const sieve_vulkan_sync* sync);
    // Waits for the fence; TIMEOUT (with `what`) leaves the submission pending.
    void await(uint64_t timeout_ns, const char* what, const Recording* timed = nullptr);
    // After a recording ran: the dispatches it launched, its stage times.
    void account(const Recording& rec);
    void submit_and_wait(const Recording& rec, VkCommandBuffer prefix = VK_NULL_HANDLE);
    // A zero-copy call up to its device work: the rows' checks, how its
    // logits reach the passes (bound directly, or the ingest pass), the rows'
    // parameters written.
    DeviceInput prepare_device_input(const sieve_vulkan_logits& in);
    // After its device work: the rows' results, the rows the twin finishes.
    sieve_status finish_device_input(uint32_t rows, uint32_t vocab, const DeviceInput& input, sieve_token* out,
                                     std::string* message);
    IngestSource ingest_source(const sieve_vulkan_logits& in) const;
    // The app's rows (src: as ingest_source splits them) can be bound as they
    // are (f32, aligned windows, no row patched by the history pass): the
    // passes read them there.
    bool can_bind_directly(const IngestSource& src, int32_t rows) const;
    // direct_sets_ bound to `key`'s rows; a change drops the recordings that used them.
    void bind_directly(const DirectKey& key);
    VkCommandBuffer ingest_command(const IngestSource& src);
    const float* ingested_rows_on_host(VkCommandBuffer ingest);
    void wait_pending();
    sieve_token read_result(uint32_t row, std::string* message, sieve_status* first) const;
    // Row i's raw log-probabilities (when asked for): from raw_stats.comp's
    // result words, or from the twin for a row it finished (host_row).
    void take_logprobs(uint32_t i, const sieve_token& t, const float* host_row, uint32_t vocab);

    Device& device_;
    Pipelines& pipelines_;
    EffectiveLimits limits_;
    sieve_device_type type_;
    uint32_t max_chunks_;

    std::atomic<uint64_t> allocations_{0};
    uint64_t submits_ = 0, recordings_ = 0, dispatches_ = 0, row_passes_ = 0, fallback_rows_ = 0;
    bool chain_collect_ = false;
    uint32_t input_words_ = 0;
    uint32_t wide_cap_ = 0;  // list entries per row for top-p cuts past the buffer (0: no top-p)
    AdjustLayout adjust_layout_;
    RowWindows windows_;

    Buffer logits_, staging_, params_, chunk_stats_, row_state_, slot_state_, histograms_, candidates_, results_;
    Buffer placeholder_, probabilities_, dispatch_args_, inputs_, wide_, adjust_;
    VkDescriptorPool pool_ = VK_NULL_HANDLE;
    std::vector<VkDescriptorSet> sets_, distribution_sets_;  // one per row window
    std::vector<VkDescriptorSet> direct_sets_;  // sets_ with the app's rows at binding 0 (made on first use)
    // On a CPU device the passes that stream rows of whole vec4s read the
    // chain's own logits through texel views (one per window, binding
    // kTexelBinding; create_texel_views); every other set binds the
    // placeholder's view there.
    bool texel_ = false;
    std::vector<VkBufferView> logits_views_;
    VkBufferView placeholder_view_ = VK_NULL_HANDLE;
    std::optional<DirectKey> direct_key_;       // what direct_sets_ bind now
    VkCommandPool command_pool_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    bool pending_ = false;  // a submission whose wait timed out
    bool profiling_ = false;
    VkQueryPool queries_ = VK_NULL_HANDLE;
    std::vector<sieve_stage_time> stage_times_;
    std::vector<float> scratch_;  // a row widened to f32 for the twin (fallback rows)
    std::unique_ptr<Ingest> ingest_;  // zero-copy input, made on first use
    std::unique_ptr<TokenCopy> tokens_;  // async token ids into the app's buffer, made on first use
    // A call made by sample_async (the fence is pending) or record (the app
    // submits it), finished by wait / collect; every other call is refused
    // meanwhile (check_idle), so the parameters it wrote, the slots and the
    // ingest command buffer stay as it left them.
    struct InFlight {
        bool recorded = false;
        Recording rec;      // its plan: the dispatches are counted when it finishes
        DeviceInput input;  // its logits (the ingest pass is re-submitted for rows the twin finishes)
    };
    std::optional<InFlight> in_flight_;
    VkCommandBuffer readback_ = VK_NULL_HANDLE;  // logits -> staging (fallback rows of device input)
    std::map<std::tuple<uint32_t, uint32_t, uint32_t, bool, bool, uint32_t, bool, bool, bool, bool, uint32_t, bool, bool>,
             Recording>
        recordings_by_shape_;
};

GpuChain::GpuChain(VulkanContext& context, const ChainConfig& config)
    : ChainImpl(config), device_(context.device()), pipelines_(context.pipelines()), limits_(device_.limits()),
      type_(limits_.plan_type), max_chunks_(max_chunks_for(limits_, type_)),
      chain_collect_(chain_needs_collect(config.samplers)),
      input_words_(row_input_words(static_cast<uint32_t>(config.max_vocab))), adjust_layout_(adjust_layout(config)) {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    const uint64_t rows = static_cast<uint64_t>(config.max_rows);
    const uint64_t vocab = static_cast<uint64_t>(config.max_vocab);
    const VkBufferUsageFlags storage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    const AdjustLayout* adjust = chain_has_history(config) ? &adjust_layout_ : nullptr;
    wide_cap_ = wide_list_capacity(config, limits_, row_windows(config, limits_, max_chunks_, 0, adjust).rows);
    windows_ = row_windows(config, limits_, max_chunks_, wide_cap_, adjust);
    try {
        const bool uma = device_.unified_memory();
        const VkBufferUsageFlags texel_usage = VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;
        logits_ = device_.create_buffer(rows * vocab * 4, storage | texel_usage | VK_BUFFER_USAGE_TRANSFER_DST_BIT, uma,
                                        &allocations_);
        if (!uma) staging_ = device_.create_buffer(rows * vocab * 4, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true, &allocations_);
        params_ = device_.create_buffer(rows * PARAM_STRIDE * 4, storage, true, &allocations_);
        chunk_stats_ = device_.create_buffer(rows * max_chunks_ * CHUNK_STRIDE * 4, storage, false, &allocations_);
        row_state_ = device_.create_buffer(rows * ROW_STRIDE * 4, storage | VK_BUFFER_USAGE_TRANSFER_DST_BIT, false,
                                           &allocations_);
        // Slots are host-visible: the host's slot operations (accept, reset,
        // copy, save/restore) work on them between calls without a submission;
        // the shaders append drawn tokens to them.
        const uint64_t slot_bytes =
            static_cast<uint64_t>(config.max_slots) * slot_words(static_cast<uint32_t>(config.history_capacity)) * 4;
        slot_state_ = device_.create_buffer(slot_bytes, storage, true, &allocations_);
        std::memset(slot_state_.mapped, 0, slot_bytes);
        histograms_ = device_.create_buffer(rows * max_chunks_ * histogram_bins(config, limits_) * HIST_STRIDE * 4,
                                            storage, false, &allocations_);
        candidates_ = device_.create_buffer(rows * collect_row_words(limits_.candidate_capacity) * 4, storage, false,
                                            &allocations_);
        inputs_ = device_.create_buffer(rows * input_words_ * 4, storage, true, &allocations_);
        // A transfer source too: the async token copy reads the ids from it.
        results_ = device_.create_buffer(rows * RESULT_STRIDE * 4, storage | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true,
                                         &allocations_);
        placeholder_ = device_.create_buffer(16, storage | texel_usage, false, &allocations_);
        create_texel_views();
        if (chain_has_history(config))
            adjust_ = device_.create_buffer(rows * adjust_layout_.row_words * 4, storage | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                            false, &allocations_);
        if (wide_cap_)
            wide_ = device_.create_buffer(rows * wide_row_words(limits_.candidate_capacity, wide_cap_) * 4, storage, false,
                                          &allocations_);
        // Written by each level's decision (scan.glsl), read by
        // vkCmdDispatchIndirect and, after the fence, by the host to count the
        // dispatches that ran.
        dispatch_args_ = device_.create_buffer(rows * GROUP_ARGS_WORDS * 4,
                                               storage | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                               true, &allocations_);

        // A sampling set and (on first use) a distribution set and a set
        // binding the app's rows per window.
        pool_ = create_storage_pool(device_, 3 * windows_.count, 3 * BINDING_STORAGE_COUNT * windows_.count,
                                    3 * windows_.count);
        for (uint32_t w = 0; w < windows_.count; ++w) sets_.push_back(allocate_set(w, placeholder_.buffer));

        VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        cp.queueFamilyIndex = device_.family();
        vk_check(vk.vkCreateCommandPool(dev, &cp, nullptr, &command_pool_), "vkCreateCommandPool");
        VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        vk_check(vk.vkCreateFence(dev, &fi, nullptr, &fence_), "vkCreateFence");

        // Row state (arrival counters) and the history blocks start at 0.
        VkCommandBuffer cmd = device_.allocate_command_buffer(command_pool_);
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        vk.vkBeginCommandBuffer(cmd, &bi);
        vk.vkCmdFillBuffer(cmd, row_state_.buffer, 0, VK_WHOLE_SIZE, 0);
        if (adjust_.buffer) vk.vkCmdFillBuffer(cmd, adjust_.buffer, 0, VK_WHOLE_SIZE, 0);
        VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                &barrier, 0, nullptr, 0, nullptr);
        vk_check(vk.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cmd;
        vk_check(device_.submit(si, fence_), "vkQueueSubmit");
        vk_check(vk.vkWaitForFences(dev, 1, &fence_, VK_TRUE, kWaitTimeoutNs), "vkWaitForFences");
        vk.vkResetFences(dev, 1, &fence_);
        vk.vkFreeCommandBuffers(dev, command_pool_, 1, &cmd);
    } catch (...) {
        release();
        throw;
    }
}

GpuChain::~GpuChain() { release(); }

void GpuChain::release() {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    if (fence_) {
        if (pending_) vk.vkWaitForFences(dev, 1, &fence_, VK_TRUE, kWaitTimeoutNs);
        vk.vkDestroyFence(dev, fence_, nullptr);
        fence_ = VK_NULL_HANDLE;
    }
    if (queries_) vk.vkDestroyQueryPool(dev, queries_, nullptr);
    queries_ = VK_NULL_HANDLE;
    ingest_.reset();
    tokens_.reset();
    if (command_pool_) vk.vkDestroyCommandPool(dev, command_pool_, nullptr);  // frees the recordings
    command_pool_ = VK_NULL_HANDLE;
    recordings_by_shape_.clear();
    if (pool_) vk.vkDestroyDescriptorPool(dev, pool_, nullptr);
    pool_ = VK_NULL_HANDLE;
    for (VkBufferView v : logits_views_) vk.vkDestroyBufferView(dev, v, nullptr);
    logits_views_.clear();
    if (placeholder_view_) vk.vkDestroyBufferView(dev, placeholder_view_, nullptr);
    placeholder_view_ = VK_NULL_HANDLE;
    for (Buffer* b : {&logits_, &staging_, &params_, &chunk_stats_, &row_state_, &slot_state_, &histograms_,
                      &candidates_, &results_, &placeholder_, &probabilities_, &dispatch_args_, &inputs_, &wide_,
                      &adjust_})
        device_.destroy_buffer(*b);
}

// Runs before anything is allocated, host or device. Per-row buffers beyond
// maxStorageBufferRange are split into row windows (row_windows), refused only
// when one row does not fit.
void check_capacity(const ChainConfig& config, const EffectiveLimits& limits, uint32_t max_chunks) {
    const uint64_t range = limits.max_storage_buffer_range;
    const AdjustLayout adjust = adjust_layout(config);
    const RowWindows windows = row_windows(config, limits, max_chunks, 0, chain_has_history(config) ? &adjust : nullptr);
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

VkDescriptorSet GpuChain::new_set() {
    VkDescriptorSetLayout layout = pipelines_.set_layout();
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = pool_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vk_check(device_.vk().vkAllocateDescriptorSets(device_.handle(), &ai, &set), "vkAllocateDescriptorSets");
    return set;
}

VkDescriptorSet GpuChain::allocate_set(uint32_t window, VkBuffer probabilities) {
    VkDescriptorSet set = new_set();
    write_set(set, window, probabilities);
    return set;
}

void GpuChain::write_set(VkDescriptorSet set, uint32_t window, VkBuffer probabilities,
                         const VkDescriptorBufferInfo* logits) {
    const VkBuffer buffers[BINDING_STORAGE_COUNT] = {logits_.buffer,     params_.buffer,     chunk_stats_.buffer,
                                             row_state_.buffer,  slot_state_.buffer, histograms_.buffer,
                                             candidates_.buffer, results_.buffer,    probabilities,
                                             dispatch_args_.buffer, inputs_.buffer,
                                             wide_.buffer ? wide_.buffer : placeholder_.buffer,
                                             adjust_.buffer ? adjust_.buffer : placeholder_.buffer};
    const uint64_t first = static_cast<uint64_t>(window) * windows_.rows;
    const uint64_t rows = std::min<uint64_t>(windows_.rows, static_cast<uint64_t>(config_.max_rows) - first);
    VkDescriptorBufferInfo infos[BINDING_STORAGE_COUNT];
    for (uint32_t b = 0; b < BINDING_STORAGE_COUNT; ++b) {
        const bool windowed = windows_.row_bytes[b] != 0 && buffers[b] != placeholder_.buffer;
        infos[b] = windowed ? VkDescriptorBufferInfo{buffers[b], first * windows_.row_bytes[b], rows * windows_.row_bytes[b]}
                            : VkDescriptorBufferInfo{buffers[b], 0, VK_WHOLE_SIZE};
    }
    if (logits) infos[0] = *logits;
    write_storage_set(device_, set, infos, BINDING_STORAGE_COUNT);
    write_texel_binding(device_, set, texel_ && !logits ? logits_views_[window] : placeholder_view_);
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
void GpuChain::create_texel_views() {
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
    placeholder_view_ = make_view(placeholder_.buffer, 0, 16);
    // Window w's logits: from its first row, whole vec4s.
    std::vector<std::pair<uint64_t, uint64_t>> windows;  // (offset, bytes)
    const uint64_t max_rows = static_cast<uint64_t>(config_.max_rows);
    for (uint32_t w = 0; w < windows_.count; ++w) {
        const uint64_t first = static_cast<uint64_t>(w) * windows_.rows;
        windows.emplace_back(first * windows_.row_bytes[0],
                             std::min<uint64_t>(windows_.rows, max_rows - first) * windows_.row_bytes[0] / 16 * 16);
    }
    const uint64_t align = std::max<uint64_t>(limits_.min_texel_offset_alignment, 1);
    bool texel = limits_.cpu_paths;  // a CPU device, unless the context asks for GPU-sized limits
    for (const auto& [offset, bytes] : windows)
        texel = texel && offset % align == 0 && bytes >= 16 && bytes / 16 <= limits_.max_texel_buffer_elements;
    for (const auto& [offset, bytes] : windows)
        if (texel) logits_views_.push_back(make_view(logits_.buffer, offset, bytes));
    texel_ = texel;
}

bool GpuChain::use_collect(uint32_t rows) const {
    if (chain_collect_) return true;
    for (uint32_t r = 0; r < rows; ++r)
        if (row_needs_collect(config_.samplers, rows_[r])) return true;
    return false;
}

// Whether the call's recording holds the wide passes: the chain has top-p and
// some row may take them (row_may_go_wide). Without them the pass constants
// say wide_cap 0, so no row is handed to them (llama.cpp's default chain,
// whose top-k bounds the array first: two empty indirect dispatches and their
// barriers less).
bool GpuChain::may_go_wide(uint32_t rows) const {
    if (wide_cap_ == 0) return false;
    for (uint32_t r = 0; r < rows; ++r)
        if (row_may_go_wide(config_.samplers, rows_[r], limits_.candidate_capacity)) return true;
    return false;
}

// The wide passes take the call's rows alone (gpu_plan.hpp: make_plan's
// wide_direct): a CPU device (the grid's bins are added by index), a row
// bigger than the buffer, every row eligible (row_wide_direct). wide: the
// call's may_go_wide.
bool GpuChain::wide_direct(RecordingKind kind, uint32_t rows, uint32_t vocab, bool collect, bool wide, bool history,
                           bool logprobs) const {
    if (!limits_.cpu_paths || kind != RecordingKind::Sample || !collect || !wide || history || logprobs ||
        greedy_terminal() || vocab <= limits_.candidate_capacity)
        return false;
    for (uint32_t r = 0; r < rows; ++r)
        if (!row_wide_direct(config_.samplers, rows_[r], limits_.candidate_capacity)) return false;
    return true;
}

// Every row starts at a multiple of 4 logits and holds whole vec4s: the
// passes' four-at-a-time variants may read them (the app's rows, bound
// directly, have their own stride).
static bool rows_of_whole_vec4s(const Recording& rec) { return rec.vocab % 4 == 0 && rec.stride % 4 == 0; }

// The plan of one call's shape (no command buffer yet).
Recording GpuChain::describe(RecordingKind kind, uint32_t rows, uint32_t vocab, bool collect,
                             const DeviceInput* input, bool timestamps) const {
    bool has_inputs = false, history = false;
    const bool logprobs = logprobs_n_ >= 0 && kind == RecordingKind::Sample;
    for (uint32_t r = 0; r < rows; ++r) {
        const bool adjusts = row_adjusts(config_.samplers, rows_[r]);
        // Rows kept unpatched for logprobs read their adjustments from the
        // history table, which only the inputs variant compiles.
        has_inputs = has_inputs || row_has_inputs(rows_[r]) || (logprobs && adjusts);
        history = history || adjusts;
    }
    Recording rec;
    rec.kind = kind;
    rec.rows = rows;
    rec.vocab = vocab;
    rec.inputs = has_inputs ? InputsMode::All : InputsMode::None;
    rec.history = history;
    rec.device_input = input != nullptr;
    rec.direct = input && input->direct;
    rec.stride = rec.direct ? input->source.stride : vocab;
    rec.logprobs = logprobs;
    rec.wide = may_go_wide(rows);
    rec.plan = make_plan(kind, greedy_terminal(), collect, rec.wide, history, vocab, limits_, type_, logprobs,
                         wide_direct(kind, rows, vocab, collect, rec.wide, history, logprobs));
    rec.timestamps = timestamps;
    if (rec.plan.dispatches.size() > kMaxPlanDispatches) fail(SIEVE_ERROR_INTERNAL, "plan longer than the timestamp pool");
    // Row groups never straddle a window.
    const uint32_t per_group = rows_per_group(rows, vocab, type_, rec.plan.min_row_passes);
    for (uint32_t first = 0; first < rows; first += windows_.rows) {
        const uint32_t in_window = std::min(windows_.rows, rows - first);
        for (uint32_t base = 0; base < in_window; base += per_group)
            rec.groups.push_back({first / windows_.rows, base, std::min(per_group, in_window - base),
                                  static_cast<uint32_t>(rec.groups.size()) * GROUP_ARGS_WORDS});
    }
    return rec;
}

const Recording& GpuChain::recording(RecordingKind kind, uint32_t rows, uint32_t vocab, bool collect,
                                     const DeviceInput* input) {
    Recording rec = describe(kind, rows, vocab, collect, input, profiling_);
    auto key = std::make_tuple(static_cast<uint32_t>(kind), rows, vocab, profiling_, collect,
                               static_cast<uint32_t>(rec.inputs), rec.history, rec.device_input, rec.logprobs,
                               rec.direct, rec.stride, rec.plan.wide_direct, rec.wide);
    auto it = recordings_by_shape_.find(key);
    if (it != recordings_by_shape_.end()) return it->second;

    const auto& vk = device_.vk();
    rec.cmd = device_.allocate_command_buffer(command_pool_);
    VkCommandBuffer cmd = rec.cmd;
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vk_check(vk.vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");

    emit(cmd, rec);
    vk_check(vk.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    ++recordings_;
    return recordings_by_shape_.emplace(key, rec).first->second;
}

// The plan's commands, into the chain's own command buffer or the app's
// (sieve_chain_record): every barrier the passes need, from the previous
// call's work at the start to the host's reads of the results at the end.
void GpuChain::emit(VkCommandBuffer cmd, const Recording& rec) {
    const auto& vk = device_.vk();
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    if (rec.direct) {
        // The app's writes of its rows (any earlier command on this queue: a
        // compute or transfer pass, a copy) before the passes read them where
        // they are: the ingest pass's first barrier, which this call skips.
        barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
        barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                &barrier, 0, nullptr, 0, nullptr);
    }
    // The previous call's shader writes (slot state, results) before this
    // one's reads and writes, its indirect reads of the dispatch arguments
    // before they are reset, and its transfers (the staging copy's writes, the
    // readback's and the token copy's reads of buffers this call rewrites).
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT |
                            VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vk.vkCmdPipelineBarrier(cmd,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT |
                                VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                            nullptr, 0, nullptr);
    if (!device_.unified_memory() && !rec.device_input) {
        VkBufferCopy region{0, 0,
                            (row_at(rec.rows - 1, static_cast<uint64_t>(config_.max_vocab), rec.vocab) + rec.vocab) * 4ull};
        vk.vkCmdCopyBuffer(cmd, staging_.buffer, logits_.buffer, 1, &region);
        barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
        vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                &barrier, 0, nullptr, 0, nullptr);
    }
    // Every indirect pass starts disarmed: x = 0 workgroups, y = its group's
    // rows, z = 1.
    for (const RowGroup& g : rec.groups) {
        uint32_t args[SHADER_ARGS_WORDS] = {};
        for (uint32_t i = 0; i + 3 < SHADER_ARGS_WORDS; i += 4) {
            args[i + 1] = g.rows;
            args[i + 2] = 1;
        }
        vk.vkCmdUpdateBuffer(cmd, dispatch_args_.buffer, static_cast<VkDeviceSize>(g.args_base) * 4, sizeof(args), args);
    }
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT, 0, 1, &barrier,
                            0, nullptr, 0, nullptr);
    const uint32_t n_queries = static_cast<uint32_t>(rec.plan.dispatches.size() * rec.groups.size()) + 1;
    if (rec.timestamps) {
        vk.vkCmdResetQueryPool(cmd, queries_, 0, n_queries);
        vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries_, 0);
    }
    uint32_t query = 1;
    for (const RowGroup& g : rec.groups) {
    VkDescriptorSet set =
        (rec.direct ? direct_sets_ : rec.kind == RecordingKind::Distribution ? distribution_sets_ : sets_)[g.window];
    vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines_.layout(), 0, 1, &set, 0, nullptr);
    for (const Dispatch& d : rec.plan.dispatches) {
        Push pc{rec.vocab, rec.stride, rec.plan.chunk_size, rec.plan.n_chunks, d.level, rec.plan.flags,
                         g.row_base, g.args_base, rec.wide ? wide_cap_ : 0u, history_capacity(), adjust_layout_.hash_bits,
                         adjust_layout_.bitmap_words};
        const bool collect_stage =
            d.stage == Stage::Collect || d.stage == Stage::CollectPlain || d.stage == Stage::CollectTail;
        const bool texel = texel_ && !rec.direct;  // the chain's own logits (create_texel_views)
        VkPipeline pipeline = collect_stage ? pipelines_.collect(d.stage, chain_ops(config_.samplers),
                                                                 chain_selector(config_.samplers), rec.inputs,
                                                                 rec.plan.small, texel)
                                            : pipelines_.get(d.stage, rec.inputs, rows_of_whole_vec4s(rec), texel,
                                                             wide_divisions(config_), rec.plan.wide_direct);
        vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
        vk.vkCmdPushConstants(cmd, pipelines_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), &pc);
        if (d.indirect == kNotIndirect)
            vk.vkCmdDispatch(cmd, d.per_chunk ? rec.plan.n_chunks : 1u, g.rows, 1);
        else
            vk.vkCmdDispatchIndirect(cmd, dispatch_args_.buffer,
                                     static_cast<VkDeviceSize>(g.args_base + d.indirect) * 4);
        // Each pass reads what the previous one wrote (and may write what it
        // read); a scan's writes may be the next dispatch's indirect arguments.
        barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
        barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
        vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT, 0, 1,
                                &barrier, 0, nullptr, 0, nullptr);
        if (rec.timestamps) vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries_, query++);
    }
    }
    // Results (and probabilities) become visible to the host after the fence.
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                            nullptr, 0, nullptr);
}

void GpuChain::wait_pending() {
    if (pending_) await(kWaitTimeoutNs, "the previous submission is still running");
}

// Widening f16/bf16 to f32 happens here, in the one write to the mapped
// buffer the upload makes anyway.
void GpuChain::upload(const LogitsView& logits) {
    auto* dst = static_cast<float*>(device_.unified_memory() ? logits_.mapped : staging_.mapped);
    if (windows_.count == 1) return logits.pack_f32(dst);
    for (int32_t r = 0; r < logits.rows; ++r)
        logits.copy_row_f32(r, dst + row_at(static_cast<uint32_t>(r), static_cast<uint64_t>(config_.max_vocab),
                                            static_cast<uint64_t>(logits.vocab)));
}

// sample: a sampling call, whose recording holds the wide passes when the
// chain has top-p (a distribution's does not); commit: its tokens join their
// slots' histories.
void GpuChain::write_params(uint32_t rows, bool sample, bool commit) {
    auto* p = static_cast<uint32_t*>(params_.mapped);
    auto* inputs = static_cast<uint32_t*>(inputs_.mapped);
    const uint32_t max_vocab = static_cast<uint32_t>(config_.max_vocab);
    for (uint32_t r = 0; r < rows; ++r) {
        RowPlacement at;
        at.slot_offset = static_cast<uint32_t>(slot_of(static_cast<int32_t>(r))) * slot_words(history_capacity());
        at.capacity = limits_.candidate_capacity;
        at.inputs_offset = local_row(r) * input_words_;  // within the row's window
        at.max_vocab = max_vocab;
        // (A row that defers its top-p reaches it with no cut before: row_may_go_wide says
        // so too, so the call's recording holds the wide passes.)
        at.defer_top_p = sample && wide_cap_ > 0;
        at.commit = commit;
        at.logprobs = logprobs_n_;
        write_row_params(p + r * PARAM_STRIDE, config_.samplers, rows_[r], row_scale(static_cast<int32_t>(r)), at);
        uint32_t* block = inputs + static_cast<size_t>(r) * input_words_;
        if (row_has_inputs(rows_[r])) write_row_inputs(block, rows_[r], max_vocab);
        if (dry_acts(rows_[r]) && !rows_[r].dry_sequence_breakers.empty()) write_row_breakers(block, rows_[r], max_vocab);
    }
}

// Arms one of collect.comp's two variants per row group, from the parameter
// blocks write_params just wrote: the plain one when every row of the group
// can take it (row_block_plain; no bias or bitmask in the call, rows of whole
// vec4s), else the general one. Host-written indirect arguments, so a change
// of a row's parameters re-records nothing. The caller has waited for the
// previous submission, which read them.
void GpuChain::arm_collect(const Recording& rec) {
    if (std::none_of(rec.plan.dispatches.begin(), rec.plan.dispatches.end(),
                     [](const Dispatch& d) { return d.stage == Stage::CollectPlain; }))
        return;
    auto* args = static_cast<uint32_t*>(dispatch_args_.mapped);
    const auto* params = static_cast<const uint32_t*>(params_.mapped);
    for (const RowGroup& g : rec.groups) {
        bool plain = rec.inputs == InputsMode::None && rows_of_whole_vec4s(rec);
        const uint32_t first = g.window * windows_.rows + g.row_base;
        for (uint32_t r = first; plain && r < first + g.rows; ++r)
            plain = row_block_plain(params + static_cast<size_t>(r) * PARAM_STRIDE, limits_.workgroup_size,
                                    limits_.candidate_capacity);
        const uint32_t on[3] = {rec.plan.n_chunks, g.rows, 1}, off[3] = {0, g.rows, 1};
        std::memcpy(args + g.args_base + COLLECT_PLAIN_ARGS, plain ? on : off, sizeof(on));
        std::memcpy(args + g.args_base + COLLECT_GENERAL_ARGS, plain ? off : on, sizeof(on));
    }
}

void GpuChain::submit(const Recording& rec, VkCommandBuffer prefix, VkCommandBuffer suffix,
                      const sieve_vulkan_sync* sync) {
    VkCommandBuffer cmds[3];
    uint32_t n = 0;
    if (prefix) cmds[n++] = prefix;
    cmds[n++] = rec.cmd;
    if (suffix) cmds[n++] = suffix;
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = n;
    si.pCommandBuffers = cmds;
    // The wait covers every stage: the first commands are a transfer (the
    // argument resets) and compute passes, and the semaphore's memory
    // dependency must reach them all.
    const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    if (sync) {
        if (sync->wait_semaphore) {
            si.waitSemaphoreCount = 1;
            si.pWaitSemaphores = &sync->wait_semaphore;
            si.pWaitDstStageMask = &wait_stage;
        }
        if (sync->signal_semaphore) {
            si.signalSemaphoreCount = 1;
            si.pSignalSemaphores = &sync->signal_semaphore;
        }
        if (sync->timeline == 1) {
            values.waitSemaphoreValueCount = si.waitSemaphoreCount;
            values.pWaitSemaphoreValues = &sync->wait_value;
            values.signalSemaphoreValueCount = si.signalSemaphoreCount;
            values.pSignalSemaphoreValues = &sync->signal_value;
            si.pNext = &values;
        }
    }
    vk_check(device_.submit(si, fence_), "vkQueueSubmit");
    ++submits_;
    pending_ = true;
}

void GpuChain::await(uint64_t timeout_ns, const char* what, const Recording* timed) {
    const auto& vk = device_.vk();
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    // A thread that sleeps on the fence can wake tens of microseconds after
    // the device finished. With a window W (wait_spin_us) and a recording
    // whose waits are known to take about E, the thread sleeps until E - W,
    // then polls the fence, yielding, until E + W at most, then sleeps again:
    // at most 2W of polling a call, near its end, when a CPU device's own
    // threads have mostly finished (the last pass of a call is mostly one
    // workgroup). On lavapipe, 2 cores, W = 20: llama.cpp's default chain
    // at vocab 151936 about 320 -> 300 us per token; polling from the start
    // instead made top_p;temperature bimodal (the poller took a core from the
    // device's threads). Waits with nothing known sleep at once.
    const double window = device_.wait_spin_us() * 1000.0;
    bool done = false;
    if (timed && timed->wait_ns > 0.0 && window > 0.0) {
        const double sleep_ns = std::min(timed->wait_ns - window, static_cast<double>(timeout_ns));
        if (sleep_ns > 0.0)
            done = vk.vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, static_cast<uint64_t>(sleep_ns)) ==
                   VK_SUCCESS;
        const auto until = start + std::chrono::nanoseconds(static_cast<int64_t>(
                                       std::min(timed->wait_ns + window, static_cast<double>(timeout_ns))));
        while (!done && Clock::now() < until) {
            const VkResult status = vk.vkGetFenceStatus(device_.handle(), fence_);
            if (status != VK_NOT_READY && status != VK_SUCCESS) break;  // the wait below reports it
            done = status == VK_SUCCESS;
            if (!done) std::this_thread::yield();
        }
    }
    if (!done) {
        const uint64_t spent = static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - start).count());
        VkResult r = vk.vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, timeout_ns - std::min(spent, timeout_ns));
        if (r == VK_TIMEOUT) fail(SIEVE_ERROR_TIMEOUT, what);
        vk_check(r, "vkWaitForFences");
    }
    if (timed) {
        // Follows the shorter waits closely and the longer ones slowly: a
        // wait that slept to the end measured the wake-up too, and one slow
        // call should not move the polling away from the usual finish.
        const double took = static_cast<double>(std::chrono::nanoseconds(Clock::now() - start).count());
        double& e = timed->wait_ns;
        e = e <= 0.0 ? took : took < e ? 0.5 * (e + took) : e + (took - e) / 16.0;
    }
    vk.vkResetFences(device_.handle(), 1, &fence_);
    pending_ = false;
}

void GpuChain::submit_and_wait(const Recording& rec, VkCommandBuffer prefix) {
    submit(rec, prefix, VK_NULL_HANDLE, nullptr);
    await(kWaitTimeoutNs, "sampling did not finish within the wait timeout", &rec);
    account(rec);
}

void GpuChain::account(const Recording& rec) {
    const auto& vk = device_.vk();
    // Dispatches that launched workgroups: the direct ones and the armed
    // indirect ones.
    const auto* args = static_cast<const uint32_t*>(dispatch_args_.mapped);
    for (const RowGroup& g : rec.groups)
        for (const Dispatch& d : rec.plan.dispatches)
            dispatches_ += (d.indirect == kNotIndirect || args[g.args_base + d.indirect] != 0) ? 1 : 0;
    if (rec.timestamps) {
        // One figure per stage of the plan, summed over the row groups.
        const size_t per_group = rec.plan.dispatches.size();
        const uint32_t n = static_cast<uint32_t>(per_group * rec.groups.size()) + 1;
        std::vector<uint64_t> ticks(n);
        vk_check(vk.vkGetQueryPoolResults(device_.handle(), queries_, 0, n, n * sizeof(uint64_t), ticks.data(),
                                          sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                 "vkGetQueryPoolResults");
        stage_times_.assign(per_group, sieve_stage_time{});
        for (size_t i = 0; i < per_group; ++i) {
            std::snprintf(stage_times_[i].stage, sizeof(stage_times_[i].stage), "%s",
                          stage_name(rec.plan.dispatches[i].stage));
            stage_times_[i].level = rec.plan.dispatches[i].level;
        }
        for (uint32_t q = 0; q + 1 < n; ++q)
            stage_times_[q % per_group].gpu_us +=
                static_cast<double>(ticks[q + 1] - ticks[q]) * limits_.timestamp_period_ns / 1000.0;
    }
}

void GpuChain::set_profiling(bool enabled) {
    if (enabled && !limits_.timestamps)
        fail(SIEVE_ERROR_DEVICE_LIMIT, "this device's compute queue has no timestamps");
    if (enabled && !queries_) {
        VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qi.queryCount = 1 + kMaxPlanDispatches * static_cast<uint32_t>(config_.max_rows);
        vk_check(device_.vk().vkCreateQueryPool(device_.handle(), &qi, nullptr, &queries_), "vkCreateQueryPool");
    }
    profiling_ = enabled;
    stage_times_.clear();
}

sieve_token GpuChain::read_result(uint32_t row, std::string* message, sieve_status* first) const {
    const auto* res = static_cast<const uint32_t*>(results_.mapped) + row * RESULT_STRIDE;
    sieve_token t{};
    t.status = static_cast<sieve_status>(res[3]);
    t.token = t.status == SIEVE_OK ? static_cast<int32_t>(res[0]) : -1;
    std::memcpy(&t.p, &res[1], 4);
    std::memcpy(&t.logprob, &res[2], 4);
    t.seed = res[4];
    t.step = res[5];
    t.row_passes = res[6];
    if (t.status != SIEVE_OK && *first == SIEVE_OK) {
        *first = t.status;
        std::string what;
        if (t.status == SIEVE_ERROR_NON_FINITE_LOGIT) {
            what = res[7] != 0xFFFFFFFFu ? "logit " + std::to_string(res[7]) + " is NaN or +Inf"
                                         : "the temperature division overflows a logit to +-Inf";
        } else if (t.status == SIEVE_ERROR_ALL_MASKED) {
            // The twin's words (reference/row.cpp).
            const bool mask = !rows_[row].token_bitmask.empty(), bias = !rows_[row].logit_bias.empty();
            what = mask && bias ? "the token bitmask and logit bias leave every token of the row masked"
                   : mask       ? "the token bitmask allows no token of the row"
                   : bias       ? "the logit bias leaves every token of the row masked"
                                : "every logit is -Inf";
        } else {
            what = sieve_status_name(t.status);
        }
        *message = "row " + std::to_string(row) + ": " + what;
    }
    return t;
}

void GpuChain::take_logprobs(uint32_t i, const sieve_token& t, const float* host_row, uint32_t vocab) {
    if (logprobs_n_ < 0 || t.status != SIEVE_OK) return;
    if (host_row) return store_logprobs(static_cast<int32_t>(i), ref::raw_logprobs(host_row, static_cast<int32_t>(vocab),
                                                                                   t.token, logprobs_n_));
    const auto* res = static_cast<const uint32_t*>(results_.mapped) + static_cast<size_t>(i) * RESULT_STRIDE;
    const auto as_float = [](uint32_t w) {
        float f;
        std::memcpy(&f, &w, 4);
        return static_cast<double>(f);
    };
    ref::RawLogprobs raw;
    raw.log_z = as_float(res[RES_RAW_MAX]) + std::log(as_float(res[RES_RAW_SUM]));
    raw.token_logprob = as_float(res[RES_RAW_TOKEN]) - raw.log_z;
    const uint32_t n = std::min<uint32_t>(res[RES_RAW_COUNT], static_cast<uint32_t>(logprobs_n_));
    for (uint32_t j = 0; j < n; ++j)
        raw.top.push_back({static_cast<int32_t>(res[RES_RAW_IDS + j]), as_float(res[RES_RAW_LOGITS + j]) - raw.log_z});
    store_logprobs(static_cast<int32_t>(i), raw);
}

void GpuChain::check_history_order(uint32_t rows) const {
    for (uint32_t r = 0; r < rows; ++r)
        if (const char* misplaced = misplaced_history(config_, rows_[r]))
            fail(SIEVE_ERROR_UNSUPPORTED_SAMPLER,
                 "row " + std::to_string(r) + ": '" + misplaced +
                     "' acts after another sampler; the GPU backend runs penalties and dry only as the chain's first "
                     "samplers (llama.cpp's default order); the CPU backend takes any order");
}

sieve_status GpuChain::sample(const LogitsView& logits, int32_t draws, int32_t* tokens, sieve_token* out,
                              std::string* message, bool commit) {
    wait_pending();
    check_history_order(static_cast<uint32_t>(logits.rows));
    const uint32_t r = static_cast<uint32_t>(logits.rows), v = static_cast<uint32_t>(logits.vocab);
    const Recording& rec = recording(RecordingKind::Sample, r, v, use_collect(r));
    upload(logits);
    write_params(r, true, commit);
    arm_collect(rec);
    // The history pass writes adjusted logits into rows without a bias or
    // bitmask (ROW_PATCH): each further draw starts from the model's logits
    // again (with a staging buffer the recording copies them in itself).
    bool in_place = false;
    for (uint32_t i = 0; i < r; ++i) in_place = in_place || row_adjusts_in_place(config_.samplers, rows_[i]);
    in_place = in_place && logprobs_n_ < 0;  // see write_row_params
    sieve_status first = SIEVE_OK;
    begin_logprobs(logits.rows);
    for (int32_t d = 0; d < draws; ++d) {
        if (d > 0 && in_place && device_.unified_memory()) upload(logits);
        submit_and_wait(rec);
        for (uint32_t i = 0; i < r; ++i) {
            const auto* res = static_cast<const uint32_t*>(results_.mapped) + i * RESULT_STRIDE;
            const bool twin = res[3] == STATUS_FALLBACK;
            const float* host_row = twin ? logits.row_f32(static_cast<int32_t>(i), &scratch_) : nullptr;
            sieve_token t = twin ? fallback(i, host_row, v, res[5], commit, message, &first)
                                 : read_result(i, message, &first);
            take_logprobs(i, t, host_row, v);
            row_passes_ += t.row_passes;
            if (out) out[i] = t;
            if (tokens) tokens[static_cast<size_t>(i) * draws + d] = t.token;
        }
    }
    return first;
}

// The app's rows as the ingest pass binds them: the descriptor's offset
// aligned down to minStorageBufferOffsetAlignment, the rest an element index.
// The app's rows as the ingest pass binds them, one row window at a time: a
// window's rows bound from their offset aligned down to
// minStorageBufferOffsetAlignment (the rest an element index), written into
// that window of the chain's logits.
IngestSource GpuChain::ingest_source(const sieve_vulkan_logits& in) const {
    const uint64_t elem = dtype_bytes(in.dtype);
    const uint64_t stride = in.row_stride == 0 ? static_cast<uint64_t>(in.vocab) : static_cast<uint64_t>(in.row_stride);
    const uint64_t align = std::max<uint64_t>(limits_.min_storage_offset_alignment, 1);
    const uint64_t rows = static_cast<uint64_t>(in.rows);
    IngestSource src;
    src.buffer = in.buffer;
    src.stride = static_cast<uint32_t>(std::min<uint64_t>(stride, UINT32_MAX));
    src.dtype = in.dtype;
    src.vocab = static_cast<uint32_t>(in.vocab);
    for (uint64_t first = 0; first < rows; first += windows_.rows) {
        const uint64_t n = std::min<uint64_t>(windows_.rows, rows - first);
        IngestWindow w;
        const uint64_t offset = in.offset + first * stride * elem;
        w.bind_offset = offset / align * align;
        const uint64_t extent = ((n - 1) * stride + static_cast<uint64_t>(in.vocab)) * elem;
        w.bind_range = (offset - w.bind_offset + extent + 3) / 4 * 4;
        if (w.bind_range > limits_.max_storage_buffer_range || stride > UINT32_MAX)
            fail(SIEVE_ERROR_DEVICE_LIMIT, std::to_string(n) + " rows x row_stride " + std::to_string(stride) + " " +
                                               dtype_name(in.dtype) + " span " + std::to_string(w.bind_range) +
                                               " bytes; this device binds at most " +
                                               std::to_string(limits_.max_storage_buffer_range) +
                                               " (maxStorageBufferRange): a smaller row stride or fewer rows");
        w.first = static_cast<uint32_t>((offset - w.bind_offset) / elem);
        w.rows = static_cast<uint32_t>(n);
        w.dst_offset = (first / windows_.rows) * windows_.rows * windows_.row_bytes[0];
        w.dst_range = n * static_cast<uint64_t>(in.vocab) * 4;
        src.windows.push_back(w);
    }
    return src;
}

// Rows the GPU hands to the twin need their logits on the host: the ingest
// pass runs again (the history pass may have patched Sieve's copy) and the
// rows are read from the mapped buffer (or a staging copy of it).
const float* GpuChain::ingested_rows_on_host(VkCommandBuffer ingest) {
    const auto& vk = device_.vk();
    std::vector<VkCommandBuffer> cmds{ingest};
    if (!device_.unified_memory()) {
        if (!readback_) {
            readback_ = device_.allocate_command_buffer(command_pool_);
            VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
            vk_check(vk.vkBeginCommandBuffer(readback_, &bi), "vkBeginCommandBuffer");
            VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
            barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
            barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
            vk.vkCmdPipelineBarrier(readback_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                                    &barrier, 0, nullptr, 0, nullptr);
            VkBufferCopy region{0, 0, logits_.size};
            vk.vkCmdCopyBuffer(readback_, logits_.buffer, staging_.buffer, 1, &region);
            barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
            barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
            vk.vkCmdPipelineBarrier(readback_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                    &barrier, 0, nullptr, 0, nullptr);
            vk_check(vk.vkEndCommandBuffer(readback_), "vkEndCommandBuffer");
            ++recordings_;
        }
        cmds.push_back(readback_);
    }
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = static_cast<uint32_t>(cmds.size());
    si.pCommandBuffers = cmds.data();
    vk_check(device_.submit(si, fence_), "vkQueueSubmit");
    ++submits_;
    pending_ = true;
    await(kWaitTimeoutNs, "reading the rows back did not finish within the wait timeout");
    return static_cast<const float*>(device_.unified_memory() ? logits_.mapped : staging_.mapped);
}

bool GpuChain::can_bind_directly(const IngestSource& src, int32_t rows) const {
    if (src.dtype != SIEVE_DTYPE_F32) return false;
    // A stride of whole vec4s over rows that are not: the passes' four-at-a-
    // time loops assume the row ends on a vec4 (the chain's own rows do).
    if (src.stride % 4 == 0 && src.vocab % 4 != 0) return false;
    // The history pass writes adjusted logits into the row (ROW_PATCH): never
    // into the app's buffer.
    for (int32_t r = 0; r < rows; ++r)
        if (row_adjusts(config_.samplers, rows_[r])) return false;
    // Each row window is bound from its first row: an offset the device binds
    // (ingest_source aligned each window's binding down to it, and refused
    // spans past maxStorageBufferRange).
    for (const IngestWindow& w : src.windows)
        if (w.first != 0) return false;
    return true;
}

void GpuChain::bind_directly(const DirectKey& key) {
    if (direct_key_ && *direct_key_ == key) return;
    const auto& vk = device_.vk();
    // The recordings that bind direct_sets_ would see the new rows through a
    // rewritten set, which invalidates them: they are dropped (recorded again
    // on their next use). The previous call has finished (wait_pending).
    for (auto it = recordings_by_shape_.begin(); it != recordings_by_shape_.end();) {
        if (it->second.direct) {
            vk.vkFreeCommandBuffers(device_.handle(), command_pool_, 1, &it->second.cmd);
            it = recordings_by_shape_.erase(it);
        } else {
            ++it;
        }
    }
    for (uint32_t w = 0; w < windows_.count; ++w) {
        if (direct_sets_.size() <= w) direct_sets_.push_back(new_set());
        // Window w's rows from its first row through the app's buffer (or as
        // far as one binding reaches): the rows of any call that fits.
        const VkDeviceSize offset = key.offset + static_cast<VkDeviceSize>(w) * windows_.rows * key.stride * 4;
        // (A window past the app's buffer, which no call of this key reaches,
        // keeps the chain's own logits.)
        const VkDeviceSize reach = key.size - std::min(offset, key.size);
        const VkDescriptorBufferInfo logits{
            key.buffer, offset, std::min<VkDeviceSize>(reach, limits_.max_storage_buffer_range) / 4 * 4};
        write_set(direct_sets_[w], w, placeholder_.buffer, logits.range > 0 ? &logits : nullptr);
    }
    direct_key_ = key;
}

VkCommandBuffer GpuChain::ingest_command(const IngestSource& src) {
    if (!ingest_)
        ingest_ = std::make_unique<Ingest>(device_, logits_.buffer, windows_.count, command_pool_);
    bool recorded = false;
    VkCommandBuffer ingest = ingest_->prepare(src, &recorded);
    if (recorded) ++recordings_;
    return ingest;
}

DeviceInput GpuChain::prepare_device_input(const sieve_vulkan_logits& in) {
    wait_pending();
    check_history_order(static_cast<uint32_t>(in.rows));
    DeviceInput input;
    input.source = ingest_source(in);
    input.direct = can_bind_directly(input.source, in.rows);
    if (input.direct) {
        bind_directly({in.buffer, in.offset, in.size, input.source.stride});
    } else {
        input.ingest = ingest_command(input.source);
    }
    write_params(static_cast<uint32_t>(in.rows), true, true);
    return input;
}

sieve_status GpuChain::finish_device_input(uint32_t r, uint32_t v, const DeviceInput& input, sieve_token* out,
                                           std::string* message) {
    const uint32_t ingest_dispatches = (r + windows_.rows - 1) / windows_.rows;  // the ingest pass: one per window
    if (!input.direct) dispatches_ += ingest_dispatches;
    sieve_status first = SIEVE_OK;
    begin_logprobs(static_cast<int32_t>(r));
    const float* host_rows = nullptr;
    for (uint32_t i = 0; i < r; ++i) {
        const auto* res = static_cast<const uint32_t*>(results_.mapped) + i * RESULT_STRIDE;
        sieve_token t;
        if (res[3] == STATUS_FALLBACK) {
            // The twin reads the rows from the host: the ingest pass brings
            // them into the chain's buffer (for rows bound directly too).
            if (!host_rows) {
                VkCommandBuffer ingest = input.direct ? ingest_command(input.source) : input.ingest;
                if (input.direct) dispatches_ += ingest_dispatches;
                host_rows = ingested_rows_on_host(ingest);
            }
            const float* row = host_rows + row_at(i, static_cast<uint64_t>(config_.max_vocab), v);
            t = fallback(i, row, v, res[5], true, message, &first);
            take_logprobs(i, t, row, v);
        } else {
            t = read_result(i, message, &first);
            take_logprobs(i, t, nullptr, v);
        }
        if (!input.direct) t.row_passes += 1;  // the ingest pass reads the app's row
        row_passes_ += t.row_passes;
        out[i] = t;
    }
    return first;
}

sieve_status GpuChain::sample_device(const sieve_vulkan_logits& in, sieve_token* out, std::string* message) {
    const DeviceInput input = prepare_device_input(in);
    const uint32_t r = static_cast<uint32_t>(in.rows), v = static_cast<uint32_t>(in.vocab);
    const Recording& rec = recording(RecordingKind::Sample, r, v, use_collect(r), &input);
    arm_collect(rec);
    submit_and_wait(rec, input.ingest);
    return finish_device_input(r, v, input, out, message);
}

void GpuChain::sample_async(const sieve_vulkan_logits& in, const sieve_vulkan_sync* sync) {
    if (sync && sync->timeline == 1 && !(limits_.features & SIEVE_FEATURE_TIMELINE_SEMAPHORE))
        fail(SIEVE_ERROR_DEVICE_LIMIT, "timeline semaphores are not usable on this context: the app enables "
                                       "timelineSemaphore on its device and states SIEVE_FEATURE_TIMELINE_SEMAPHORE in "
                                       "sieve_vulkan_device.enabled_features (else use binary semaphores, timeline = 0)");
    DeviceInput input = prepare_device_input(in);
    const uint32_t r = static_cast<uint32_t>(in.rows), v = static_cast<uint32_t>(in.vocab);
    const Recording& rec = recording(RecordingKind::Sample, r, v, use_collect(r), &input);
    arm_collect(rec);
    VkCommandBuffer tokens = VK_NULL_HANDLE;
    if (sync && sync->token_buffer) {
        if (!tokens_) tokens_ = std::make_unique<TokenCopy>(device_, results_.buffer, RESULT_STRIDE * 4, command_pool_);
        bool recorded = false;
        tokens = tokens_->prepare({sync->token_buffer, sync->token_offset, r}, &recorded);
        if (recorded) ++recordings_;
    }
    submit(rec, input.ingest, tokens, sync);
    in_flight_ = InFlight{false, rec, std::move(input)};
}

sieve_status GpuChain::wait(uint64_t timeout_ns, sieve_token* out, std::string* message) {
    if (!in_flight_) return ChainImpl::wait(timeout_ns, out, message);
    if (in_flight_->recorded)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "the call in flight was recorded into the app's command buffer "
                                           "(sieve_chain_record): sieve_chain_collect finishes it");
    try {
        await(timeout_ns, "the sampling submission has not finished yet; it stays in flight: wait again");
    } catch (const Failure& f) {
        if (f.status() != SIEVE_ERROR_TIMEOUT) in_flight_.reset();  // device lost: nothing more will come
        throw;
    }
    InFlight call = std::move(*in_flight_);
    in_flight_.reset();
    account(call.rec);
    return finish_device_input(call.rec.rows, call.rec.vocab, call.input, out, message);
}

void GpuChain::record(VkCommandBuffer cmd, const sieve_vulkan_logits& in, const sieve_vulkan_sync* sync) {
    DeviceInput input = prepare_device_input(in);
    const uint32_t r = static_cast<uint32_t>(in.rows), v = static_cast<uint32_t>(in.vocab);
    // The same commands as the chain's own recording, minus the timestamps
    // (the query pool is the chain's, read only after its own fences).
    Recording rec = describe(RecordingKind::Sample, r, v, use_collect(r), &input, false);
    arm_collect(rec);
    if (!input.direct) ingest_->emit(cmd);
    emit(cmd, rec);
    if (sync && sync->token_buffer)
        emit_token_copy(device_, cmd, results_.buffer, RESULT_STRIDE * 4, {sync->token_buffer, sync->token_offset, r});
    ++recordings_;
    in_flight_ = InFlight{true, std::move(rec), std::move(input)};
}

sieve_status GpuChain::collect(sieve_token* out, std::string* message) {
    if (!in_flight_) return ChainImpl::collect(out, message);
    if (!in_flight_->recorded)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "the call in flight was submitted by sieve_sample_vulkan_async: "
                                           "sieve_chain_wait finishes it");
    InFlight call = std::move(*in_flight_);
    in_flight_.reset();
    account(call.rec);
    return finish_device_input(call.rec.rows, call.rec.vocab, call.input, out, message);
}

// The GPU stopped where the row's survivors reach past its candidate buffer
// (tail.glsl); the twin samples the row at the step the GPU used (and
// advanced), from the slot's history, and commits the token as the GPU would.
sieve_token GpuChain::fallback(uint32_t row, const float* logits, uint32_t vocab, uint32_t step, bool commit,
                               std::string* message, sieve_status* first) {
    ++fallback_rows_;
    uint32_t* slot = slot_record(slot_of(static_cast<int32_t>(row)));
    ref::SlotState state = slot_to_state(slot, history_capacity());
    const ref::RowResult res = ref::sample_row(config_.samplers, logits, static_cast<int32_t>(vocab),
                                               row_params(static_cast<int32_t>(row)), step, 0, &state);
    if (res.status == SIEVE_OK && commit) {
        slot_store_learnt(slot, state);
        slot_append(slot, history_capacity(), &res.token, 1);
    }
    sieve_token t{};
    t.status = res.status;
    t.token = res.status == SIEVE_OK ? res.token : -1;
    t.p = res.p;
    t.logprob = res.logprob;
    t.seed = rows_[row].seed;
    t.step = step;
    t.row_passes = 1;
    if (t.status != SIEVE_OK && *first == SIEVE_OK) {
        *first = t.status;
        *message = "row " + std::to_string(row) + ": " + res.message;
    }
    return t;
}

sieve_status GpuChain::distributions(const LogitsView& logits, const std::vector<int32_t>& wanted,
                                     std::vector<std::vector<ref::Weighted>>* out, std::vector<sieve_status>* statuses,
                                     std::string* message) {
    const int32_t rows = logits.rows, vocab = logits.vocab;
    wait_pending();
    check_history_order(static_cast<uint32_t>(rows));
    if (!probabilities_.buffer) {
        // Allocated on first use: --dump-dist is an inspection path, not the
        // steady state, so it does not cost every chain a second logits buffer.
        probabilities_ = device_.create_buffer(static_cast<uint64_t>(config_.max_rows) * (2ull * config_.max_vocab + 2) * 4,
                                               VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, &allocations_);
        for (uint32_t w = 0; w < windows_.count; ++w) distribution_sets_.push_back(allocate_set(w, probabilities_.buffer));
    }
    const uint32_t r = static_cast<uint32_t>(rows), v = static_cast<uint32_t>(vocab);
    const bool collect = use_collect(r);
    const Recording& rec = recording(RecordingKind::Distribution, r, v, collect);
    upload(logits);
    write_params(r, false, false);
    arm_collect(rec);
    submit_and_wait(rec);
    sieve_status first = SIEVE_OK;
    out->assign(wanted.size(), {});
    statuses->assign(wanted.size(), SIEVE_OK);
    for (size_t k = 0; k < wanted.size(); ++k) {
        std::string why;
        const sieve_status s = read_distribution(logits, wanted[k], collect, &(*out)[k], &why);
        (*statuses)[k] = s;
        if (s != SIEVE_OK && first == SIEVE_OK) {
            first = s;
            *message = why;
        }
    }
    return first;
}

// Row `row`'s distribution from the distribution recording's output.
sieve_status GpuChain::read_distribution(const LogitsView& logits, int32_t row, bool collect,
                                         std::vector<ref::Weighted>* out, std::string* message) {
    const int32_t vocab = logits.vocab;
    const uint32_t v = static_cast<uint32_t>(vocab);
    if (collect) {
        // collect.comp's list: [count or STATUS_FALLBACK, step, (id, p) x count].
        const auto* words = static_cast<const uint32_t*>(probabilities_.mapped) +
                            row_at(static_cast<uint32_t>(row), 2ull * config_.max_vocab + 2, 2ull * v + 2);
        sieve_status status = SIEVE_OK;
        out->clear();
        if (words[0] == STATUS_FALLBACK) {
            ++fallback_rows_;
            const ref::SlotState state = slot_to_state(slot_record(slot_of(row)), history_capacity());
            return ref::row_distribution(config_.samplers, logits.row_f32(row, &scratch_), vocab,
                                         row_params(row), out, message, words[1], 0, &state);
        }
        read_result(static_cast<uint32_t>(row), message, &status);
        if (status != SIEVE_OK) return status;
        for (uint32_t i = 0; i < words[0]; ++i) {
            float p;
            std::memcpy(&p, &words[3 + 2 * i], 4);
            out->push_back({static_cast<int32_t>(words[2 + 2 * i]), static_cast<double>(p)});
        }
        return SIEVE_OK;
    }
    // The row's status comes from the same checks as sampling.
    const float* p = static_cast<const float*>(probabilities_.mapped) +
                     row_at(static_cast<uint32_t>(row), 2ull * config_.max_vocab + 2, v);
    sieve_status status = SIEVE_OK;
    read_result(static_cast<uint32_t>(row), message, &status);
    if (status != SIEVE_OK) return status;
    struct Entry {
        float p, scaled;
        int32_t id;
    };
    std::vector<Entry> order;
    out->clear();
    // Canonical order: the logit the draw sees descending, ties by lower id.
    // The probability is monotone in it (bias and penalties included, which
    // only the GPU applied); where probabilities tie (underflow to 0) the raw
    // logit divided by the temperature, as the shaders divide, decides.
    const float* l = logits.row_f32(row, &scratch_);
    const float scale = row_scale(row);
    for (uint32_t i = 0; i < v; ++i)
        if (p[i] >= 0.0f) order.push_back({p[i], scale > 0.0f ? l[i] / scale : l[i], static_cast<int32_t>(i)});
    std::sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) {
        if (a.p != b.p) return a.p > b.p;
        if (a.scaled != b.scaled) return a.scaled > b.scaled;
        return a.id < b.id;
    });
    for (const Entry& e : order) out->push_back({e.id, static_cast<double>(e.p)});
    return SIEVE_OK;
}

sieve_counters GpuChain::counters() const {
    sieve_counters c{};
    c.submits = submits_;
    c.recordings = recordings_;
    c.dispatches = dispatches_;
    c.allocations = allocations_.load();
    c.row_passes = row_passes_;
    c.cpu_fallback_rows = fallback_rows_;
    return c;
}

void GpuChain::plan_figures(int32_t rows, int32_t vocab, uint32_t* dispatches, uint32_t* row_passes) const {
    bool history = false;
    for (int32_t r = 0; r < rows; ++r) history = history || row_adjusts(config_.samplers, rows_[static_cast<size_t>(r)]);
    const bool collect = use_collect(static_cast<uint32_t>(rows)), logprobs = logprobs_n_ >= 0;
    const bool wide = may_go_wide(static_cast<uint32_t>(rows));
    Plan p = make_plan(RecordingKind::Sample, greedy_terminal(), collect, wide, history, static_cast<uint32_t>(vocab),
                       limits_, type_, logprobs,
                       wide_direct(RecordingKind::Sample, static_cast<uint32_t>(rows), static_cast<uint32_t>(vocab),
                                   collect, wide, history, logprobs));
    const uint32_t per_group =
        rows_per_group(static_cast<uint32_t>(rows), static_cast<uint32_t>(vocab), type_, p.min_row_passes);
    uint32_t groups = 0;
    for (uint32_t first = 0; first < static_cast<uint32_t>(rows); first += windows_.rows)
        groups += (std::min(windows_.rows, static_cast<uint32_t>(rows) - first) + per_group - 1) / per_group;
    *dispatches = p.min_dispatches * groups;
    *row_passes = p.min_row_passes;
}

} // namespace

std::unique_ptr<ChainImpl> make_gpu_chain(VulkanContext& context, const ChainConfig& config) {
    const EffectiveLimits& limits = context.device().limits();
    check_capacity(config, limits, max_chunks_for(limits, limits.plan_type));
    size_t ops = 0;
    for (size_t i = 0; i + 1 < config.samplers.size(); ++i)
        ops += (config.samplers[i] != ref::SamplerKind::Penalties && config.samplers[i] != ref::SamplerKind::Dry) ? 1 : 0;

    if (ops > glsl::MAX_CHAIN_OPS)
        fail(SIEVE_ERROR_INVALID_CHAIN, "a chain of " + std::to_string(ops) + " samplers before its draw; the GPU runs at most " +
                                            std::to_string(glsl::MAX_CHAIN_OPS));
    return std::make_unique<GpuChain>(context, config);
}

} // namespace sieve
