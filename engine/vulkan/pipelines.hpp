// The compute pipelines of one device: one shader per stage, all sharing one
// descriptor-set layout (the buffers of shaders/include/common.glsl, gpu_ids.h's
// bindings) and one push-constant block (gpu_layout.h's Push), specialized for
// the device's effective limits.
#pragma once

#include "vulkan/gpu_params.hpp"
#include "vulkan/vk_device.hpp"

#include <gpu_ids.h>
#include <gpu_layout.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <mutex>

namespace sieve {

namespace shaders {
struct Spirv;  // sieve_shaders.hpp (generated)
}

enum class Stage : uint32_t {
    RowStats,
    MassHistogram,
    Gather,
    Finalize,
    Probabilities,
    Collect,
    WideHistogram,
    WideGather,
    History,
    RawStats,
    CollectTail,
    CollectPlain,
    Count
};

const char* stage_name(Stage stage);

// The storage buffers of the passes' set (gpu_ids.h: BINDING_*), before the
// texel binding (BINDING_LOGITS_TEXELS: the logits again as vec4 texels,
// logits4.glsl's TEXEL_READ; gpu_chain_buffers.cpp: create_texel_views says when).
static_assert(BINDING_LOGITS_TEXELS == BINDING_STORAGE_COUNT, "the texel binding follows the storage buffers");

// wide.glsl's WIDE_DIVISIONS (SPEC_WIDE_DIVISIONS): the most temperature
// divisions a chain's rows take before the top-p cut | in all << 8, each at
// most WIDE_MAX_DIVISIONS (row_analysis.cpp: wide_divisions); the wide passes
// compute no division beyond them. kWideAnyDivisions covers every chain.
constexpr uint32_t kWideAnyDivisions = glsl::WIDE_MAX_DIVISIONS | (glsl::WIDE_MAX_DIVISIONS << 8);

// What the shaders read besides the logits (common.glsl's INPUTS_MODE): calls
// where no row has a bias or bitmask compile none of it, since on a CPU device
// its lookups, inlined wherever a logit is read, slow the whole pass even for
// rows that never reach them (rows with only a history have their adjusted
// logits written into the row by history.comp).
enum class InputsMode : uint32_t {
    None = 0,  // the logits as they are
    All = 1,   // the token bitmask, logit bias and history table
};
constexpr uint32_t kInputsModes = 2;

class Pipelines {
public:
    explicit Pipelines(Device& device);
    ~Pipelines();
    Pipelines(const Pipelines&) = delete;
    Pipelines& operator=(const Pipelines&) = delete;

    VkDescriptorSetLayout set_layout() const { return set_layout_; }
    VkPipelineLayout layout() const { return layout_; }
    // A stage other than the collect stages (collect()), built on first use
    // (thread-safe: chains of one context share it).
    // inputs: the variant that reads the rows' inputs (InputsMode).
    // rows_x4: the call's rows are whole vec4s (its vocab a multiple of 4);
    // the wide passes then take a variant with only the vec4 map (built on
    // first use) when the call has no bias or bitmask.
    // texel: the chain's own logits, which such rows read through the texel
    // binding (logits4.glsl's TEXEL_READ; the stages that stream the row:
    // reads_texels).
    // wide_divisions: the wide passes' WIDE_DIVISIONS (they are built per
    // value on first use).
    // wide_direct: the wide passes for a call of direct rows (wide.glsl: WIDE_DIRECT).
    VkPipeline get(Stage stage, InputsMode inputs, bool rows_x4 = false, bool texel = false,
                   uint32_t wide_divisions = kWideAnyDivisions, bool wide_direct = false);
    // A collect stage's pipeline (Collect, CollectPlain or CollectTail)
    // specialized for the samplers a call's tail runs (its ops, as
    // row_analysis.hpp's CallAnalysis::chain_ops encodes them), built on
    // first use and shared by the context's chains.
    // small: the plan's rows fit the candidate buffer (collect_chunk.glsl's small
    // variant); texel: the plain and general variants read whole vec4s
    // through the texel binding (TEXEL_READ); fused: Collect or CollectPlain with the tail in
    // the last chunk workgroup (collect_fused.comp, Plan::fused_tail);
    // radix: CollectPlain or Collect with radix_chunk (FLAG_RADIX_CHUNKS).
    VkPipeline collect(Stage stage, uint64_t ops, uint32_t selector, InputsMode inputs, bool small,
                       bool texel = false, bool fused = false, bool radix = false);
    bool uses_subgroups() const { return uses_subgroups_; }
    // The handoff shaders' Vulkan memory model variants (arrive.glsl).
    bool uses_memory_model() const { return uses_memory_model_; }

private:
    Device& device_;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkPipeline pipelines_[kInputsModes][static_cast<uint32_t>(Stage::Count)] = {};
    // The stages of pipelines_ that read rows of whole vec4s without bias or
    // bitmask through the texel binding (TEXEL_READ), by stage.
    VkPipeline texel_[static_cast<uint32_t>(Stage::Count)] = {};
    // The wide passes by (stage, inputs, WIDE_ROWS_X4, TEXEL_READ, WIDE_DIVISIONS).
    std::map<std::tuple<uint32_t, uint32_t, bool, bool, uint32_t, bool>, VkPipeline> wide_;
    std::mutex variants_mutex_;  // pipelines_, texel_, wide_
    bool uses_subgroups_ = false;
    bool uses_memory_model_ = false;
    std::mutex collect_mutex_;
    std::map<std::tuple<uint32_t, uint64_t, uint32_t, uint32_t, bool, bool, bool, bool>, VkPipeline> collect_;
    // The stage's embedded SPIR-V, the subgroup variant where it is used.
    const shaders::Spirv& spirv(Stage stage) const;
    // collect_fused.comp and collect_tail.comp, their short builds (tail.glsl:
    // run_chain's positions) where short_chain.
    const shaders::Spirv& fused_spirv(bool short_chain) const;
    const shaders::Spirv& tail_spirv(bool short_chain) const;
    void release();
};

// A descriptor-set layout of `count` storage buffers at bindings 0..count-1,
// for compute; and a set's bindings 0..count-1 pointed at `buffers` (whole).
// texel_binding: one uniform texel buffer after them, at binding `count`.
VkDescriptorSetLayout create_storage_set_layout(Device& device, uint32_t count, bool texel_binding = false);
void write_storage_set(Device& device, VkDescriptorSet set, const VkBuffer* buffers, uint32_t count);
// The same with a range of each buffer (infos[i] for binding i).
void write_storage_set(Device& device, VkDescriptorSet set, const VkDescriptorBufferInfo* infos, uint32_t count);

// A pipeline layout of one set layout and a compute push-constant block of
// push_bytes (none when 0); a pool of storage-buffer descriptors for max_sets
// sets of `descriptors` in all.
VkPipelineLayout create_pipeline_layout(Device& device, VkDescriptorSetLayout set_layout, uint32_t push_bytes);
// texel_descriptors: uniform texel buffers besides.
VkDescriptorPool create_storage_pool(Device& device, uint32_t max_sets, uint32_t descriptors,
                                     uint32_t texel_descriptors = 0);
// Points binding BINDING_LOGITS_TEXELS of `set` at `view`.
void write_texel_binding(Device& device, VkDescriptorSet set, VkBufferView view);

// wide.glsl's value bins (SPEC_WIDE_BINS): 256 with the CPU paths
// (EffectiveLimits::cpu_paths) when the workgroup's columns fit the shared
// memory (WG x 256 bytes), else 16; kWideGpuBins on a GPU, which adds into
// them by shared atomics (2 words a bin); at most 256 (wide_gather's
// resolve). A top-p chain's histograms are sized for wide_bins
// (gpu_chain_buffers.cpp: histogram_bins).
constexpr uint32_t kWideMaxBins = 256;
// A GPU's: the flat rows' bins (N(0, 1) at 151936, top-p 0.9) hold few
// enough members for the list where 16 held more in most draws (each
// gathered bin's members grow with its width); more bins lengthen the last
// workgroup's sums of the chunks' bins.
constexpr uint32_t kWideGpuBins = 64;
uint32_t wide_bins(const EffectiveLimits& limits);


// The values of gpu_ids.h's specialization constants (SPEC_*); a shader
// reads those it declares. INDEXED_BINS and WIDE_BINS come from the device.
struct Specialization {
    uint32_t workgroup_size = 0;                  // SPEC_WG
    uint32_t capacity = 0;                        // SPEC_CAP
    InputsMode inputs = InputsMode::None;         // SPEC_INPUTS_MODE
    uint64_t chain_ops = 0;                       // SPEC_CHAIN_OPS_LO, SPEC_CHAIN_OPS_HI
    uint32_t selector = 0;                        // SPEC_CHAIN_SELECTOR
    uint32_t collect_variant = 0;                 // SPEC_COLLECT_VARIANT (collect_chunk.glsl)
    uint32_t texel_read = 0;                      // SPEC_TEXEL_READ
    uint32_t wide_divisions = kWideAnyDivisions;  // SPEC_WIDE_DIVISIONS
    uint32_t wide_direct = 0;                     // SPEC_WIDE_DIRECT
    uint32_t wide_rows_x4 = 0;                    // SPEC_WIDE_ROWS_X4
    uint32_t ingest_kind = 0;                     // SPEC_INGEST_KIND (ingest.comp)
};

// What a pipeline is built for, for its statistics line (pipeline_stats.hpp):
// the stage it runs and the workgroups the estimate assumes resident a
// compute unit for it (0: no estimated stage).
struct PipelineUse {
    const char* stage = "";
    double assumed_resident_per_unit = 0;
};

// Builds a compute pipeline from embedded SPIR-V with these specialization
// constants (and its statistics line where SIEVE_PIPELINE_STATS asks).
VkPipeline create_compute_pipeline(Device& device, VkPipelineLayout layout, const shaders::Spirv& code,
                                   const Specialization& spec, const PipelineUse& use);

} // namespace sieve
