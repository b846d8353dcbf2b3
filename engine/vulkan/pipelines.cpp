#include "vulkan/pipelines.hpp"

#include "vulkan/gpu_estimate.hpp"
#include "vulkan/pipeline_stats.hpp"
#include "vulkan/vk_check.hpp"

#include <sieve_shaders.hpp>

#include <algorithm>
#include <iterator>
#include <vector>

namespace sieve {

const char* stage_name(Stage stage) {
    switch (stage) {
    case Stage::RowStats: return "row_stats";
    case Stage::MassHistogram: return "mass_histogram";
    case Stage::Gather: return "gather";
    case Stage::Finalize: return "finalize";
    case Stage::Probabilities: return "probabilities";
    case Stage::Collect: return "collect";
    case Stage::WideHistogram: return "wide_histogram";
    case Stage::WideGather: return "wide_gather";
    case Stage::History: return "history";
    case Stage::RawStats: return "raw_stats";
    case Stage::CollectTail: return "collect_tail";
    case Stage::CollectPlain: return "collect_plain";
    default: return "?";
    }
}

uint32_t wide_bins(const EffectiveLimits& limits) {
    if (!limits.cpu_paths) return kWideGpuBins;
    // wide_histogram's columns in shared memory: at most WG x 64 words, and 1 KB for the rest.
    const bool fits = static_cast<uint64_t>(limits.workgroup_size) * 256 + 1024 <= limits.shared_memory;
    return fits ? kWideMaxBins : 16u;
}

VkPipeline create_compute_pipeline(Device& device, VkPipelineLayout layout, const shaders::Spirv& code,
                                   const Specialization& s, const PipelineUse& use) {
    const auto& vk = device.vk();
    VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    module_info.codeSize = code.size_bytes;
    module_info.pCode = code.words;
    VkShaderModule module = VK_NULL_HANDLE;
    vk_check(vk.vkCreateShaderModule(device.handle(), &module_info, nullptr, &module), "vkCreateShaderModule");

    // values[id] is the constant of SPEC_* id `id`.
    uint32_t values[SPEC_COUNT] = {};
    values[SPEC_WG] = s.workgroup_size;
    values[SPEC_CAP] = s.capacity;
    values[SPEC_INPUTS_MODE] = static_cast<uint32_t>(s.inputs);
    values[SPEC_CHAIN_OPS_LO] = static_cast<uint32_t>(s.chain_ops);
    values[SPEC_CHAIN_OPS_HI] = static_cast<uint32_t>(s.chain_ops >> 32);
    values[SPEC_CHAIN_SELECTOR] = s.selector;
    values[SPEC_COLLECT_VARIANT] = s.collect_variant;
    values[SPEC_TEXEL_READ] = s.texel_read;
    values[SPEC_INDEXED_BINS] = device.limits().cpu_paths ? 1u : 0u;
    values[SPEC_TAIL_SERIAL] = device.limits().cpu_paths ? 1u : 0u;
    values[SPEC_FLOOR_LEVELS] = device.limits().floor_levels_plan() ? 1u : 0u;
    values[SPEC_CHUNK_WG] = device.limits().workgroup_size;
    // The device's own arithmetic, whatever the plan: a CPU's vector division is IEEE's.
    values[SPEC_EXACT_DIVISION] = device.exact_division() ? 1u : 0u;
    values[SPEC_WIDE_BINS] = wide_bins(device.limits());
    values[SPEC_WIDE_DIVISIONS] = s.wide_divisions;
    values[SPEC_WIDE_DIRECT] = s.wide_direct;
    values[SPEC_WIDE_ROWS_X4] = s.wide_rows_x4;
    values[SPEC_INGEST_KIND] = s.ingest_kind;
    VkSpecializationMapEntry entries[SPEC_COUNT];
    for (uint32_t id = 0; id < SPEC_COUNT; ++id) entries[id] = {id, id * 4, 4};
    VkSpecializationInfo spec{SPEC_COUNT, entries, sizeof(values), values};
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = &spec;
    info.layout = layout;
    if (device.captures_pipeline_statistics()) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkResult r = vk.vkCreateComputePipelines(device.handle(), VK_NULL_HANDLE, 1, &info, nullptr, &pipeline);
    vk.vkDestroyShaderModule(device.handle(), module, nullptr);
    vk_check(r, "vkCreateComputePipelines");
    if (!device.pipeline_stats_file().empty()) {
        PipelineStatsLine line{device.info().name, code.name, use.stage, use.assumed_resident_per_unit,
                               device.warps_per_unit(), &s};
        if (device.captures_pipeline_statistics()) line.executables = read_pipeline_statistics(device, pipeline);
        line.absent = device.pipeline_statistics_absent();
        if (line.absent.empty() && line.executables.empty()) line.absent = "the driver reported no executable";
        append_pipeline_stats(device.pipeline_stats_file(), line);
    }
    return pipeline;
}

VkDescriptorSetLayout create_storage_set_layout(Device& device, uint32_t count, bool texel_binding) {
    std::vector<VkDescriptorSetLayoutBinding> bindings(count + (texel_binding ? 1 : 0));
    for (uint32_t i = 0; i < bindings.size(); ++i) {
        bindings[i] = VkDescriptorSetLayoutBinding{};
        bindings[i].binding = i;
        bindings[i].descriptorType =
            i < count ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
        bindings[i].descriptorCount = 1;
        bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    info.bindingCount = static_cast<uint32_t>(bindings.size());
    info.pBindings = bindings.data();
    VkDescriptorSetLayout layout = VK_NULL_HANDLE;
    vk_check(device.vk().vkCreateDescriptorSetLayout(device.handle(), &info, nullptr, &layout),
             "vkCreateDescriptorSetLayout");
    return layout;
}

void write_texel_binding(Device& device, VkDescriptorSet set, VkBufferView view) {
    VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    write.dstSet = set;
    write.dstBinding = BINDING_LOGITS_TEXELS;
    write.descriptorCount = 1;
    write.descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
    write.pTexelBufferView = &view;
    device.vk().vkUpdateDescriptorSets(device.handle(), 1, &write, 0, nullptr);
}

VkPipelineLayout create_pipeline_layout(Device& device, VkDescriptorSetLayout set_layout, uint32_t push_bytes) {
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    info.setLayoutCount = 1;
    info.pSetLayouts = &set_layout;
    info.pushConstantRangeCount = push_bytes ? 1 : 0;
    info.pPushConstantRanges = &range;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    vk_check(device.vk().vkCreatePipelineLayout(device.handle(), &info, nullptr, &layout), "vkCreatePipelineLayout");
    return layout;
}

VkDescriptorPool create_storage_pool(Device& device, uint32_t max_sets, uint32_t descriptors,
                                     uint32_t texel_descriptors) {
    const VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptors},
                                           {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, texel_descriptors}};
    VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    info.maxSets = max_sets;
    info.poolSizeCount = texel_descriptors ? 2 : 1;
    info.pPoolSizes = sizes;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    vk_check(device.vk().vkCreateDescriptorPool(device.handle(), &info, nullptr, &pool), "vkCreateDescriptorPool");
    return pool;
}

void write_storage_set(Device& device, VkDescriptorSet set, const VkBuffer* buffers, uint32_t count) {
    std::vector<VkDescriptorBufferInfo> infos(count);
    for (uint32_t i = 0; i < count; ++i) infos[i] = VkDescriptorBufferInfo{buffers[i], 0, VK_WHOLE_SIZE};
    write_storage_set(device, set, infos.data(), count);
}

void write_storage_set(Device& device, VkDescriptorSet set, const VkDescriptorBufferInfo* infos, uint32_t count) {
    std::vector<VkWriteDescriptorSet> writes(count);
    for (uint32_t i = 0; i < count; ++i) {
        writes[i] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = set;
        writes[i].dstBinding = i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
    }
    device.vk().vkUpdateDescriptorSets(device.handle(), count, writes.data(), 0, nullptr);
}

Pipelines::Pipelines(Device& device) : device_(device) {
    set_layout_ = create_storage_set_layout(device, BINDING_STORAGE_COUNT, true);  // + BINDING_LOGITS_TEXELS
    layout_ = create_pipeline_layout(device, set_layout_, sizeof(glsl::Push));

    // The subgroup-arithmetic variant where the device has it (and the profile
    // allows it), with at least 4 invocations per subgroup (reduce.glsl sizes
    // its per-subgroup array by that); the portable one everywhere else.
    const auto& lim = device.limits();
    uses_subgroups_ = (lim.features & SIEVE_FEATURE_SUBGROUP_ARITHMETIC) && device.info().subgroup_size >= 4;
    uses_memory_model_ = (lim.features & SIEVE_FEATURE_VULKAN_MEMORY_MODEL) != 0;
}

namespace {
// What the statistics line says a plan stage's pipeline is for.
PipelineUse use_of(Stage stage) { return {stage_name(stage), assumed_resident_per_unit(stage)}; }

// The stages whose shaders stream a plain row through logits4.glsl's
// row_vec4, which a CPU device reads through the texel binding.
bool reads_texels(Stage stage) {
    switch (stage) {
        case Stage::RowStats:
        case Stage::RawStats:
        case Stage::MassHistogram:
        case Stage::Gather:
        case Stage::WideHistogram:
        case Stage::WideGather:
            return true;
        default:
            return false;
    }
}
}  // namespace

VkPipeline Pipelines::get(Stage stage, InputsMode inputs, bool rows_x4, bool texel, uint32_t wide_divisions,
                          bool wide_direct) {
    const bool wide = stage == Stage::WideHistogram || stage == Stage::WideGather;
    texel = texel && reads_texels(stage);
    const bool x4 = rows_x4 && inputs == InputsMode::None;
    const auto& lim = device_.limits();
    if (wide) {
        // Built per chain shape on first use (WIDE_ROWS_X4 only without bias or
        // bitmask: the vec4 map reads the row as it is).
        std::lock_guard<std::mutex> lock(variants_mutex_);
        const auto key = std::make_tuple(static_cast<uint32_t>(stage), static_cast<uint32_t>(inputs), x4,
                                         texel && x4, wide_divisions, wide_direct);
        VkPipeline& p = wide_[key];
        if (!p) {
            const shaders::Spirv& code = spirv(stage);
            // A CPU device runs them with 8 invocations, one SIMD batch of
            // lavapipe's: its workgroup is a thread that runs each batch in
            // turn up to every barrier, so the columns of 256 bins and the
            // resolve's levels cost an eighth of a 64-wide group's switches
            // and shared accesses (top_p at 151936, 7 alternating runs: 1261
            // -> 1087 us median with 128 bins). A GPU keeps the full width.
            const uint32_t wg = lim.cpu_paths ? std::min<uint32_t>(lim.workgroup_size, 8u) : lim.workgroup_size;
            Specialization s;
            s.workgroup_size = wg;
            s.capacity = lim.candidate_capacity;
            s.inputs = inputs;
            s.wide_rows_x4 = x4 ? 1u : 0u;
            s.texel_read = texel && x4 ? 1u : 0u;
            s.wide_divisions = wide_divisions;
            s.wide_direct = wide_direct ? 1u : 0u;
            p = create_compute_pipeline(device_, layout_, code, s, use_of(stage));
        }
        return p;
    }
    // Every stage is built on first use: a context pays only for the stages
    // its chains run (a driver that compiles from SPIR-V takes tens to
    // hundreds of milliseconds a pipeline). A stage reading whole vec4s
    // through the texel binding has a slot of its own (x4: inputs is None).
    const bool texel_read = texel && x4;
    std::lock_guard<std::mutex> lock(variants_mutex_);
    VkPipeline& p = texel_read ? texel_[static_cast<uint32_t>(stage)]
                               : pipelines_[static_cast<uint32_t>(inputs)][static_cast<uint32_t>(stage)];
    if (!p) {
        const shaders::Spirv& code = spirv(stage);
        Specialization s;
        s.workgroup_size = lim.workgroup_size;
        s.capacity = lim.candidate_capacity;
        s.inputs = inputs;
        s.texel_read = texel_read ? 1u : 0u;
        p = create_compute_pipeline(device_, layout_, code, s, use_of(stage));
    }
    return p;
}

VkPipeline Pipelines::collect(Stage stage, uint64_t ops, uint32_t selector, InputsMode inputs, bool small,
                              bool texel, bool fused, bool radix) {
    std::lock_guard<std::mutex> lock(collect_mutex_);
    small = small && stage == Stage::Collect;
    // The chunks' variants, plain and general: both read whole vec4s (their
    // register picks and radix levels; the general one's through the texel
    // view cost lavapipe a third fewer instructions a call where rows sum the
    // aggregates) and may hold radix_chunk.
    const bool chunks = stage == Stage::CollectPlain || (stage == Stage::Collect && !small);
    texel = texel && chunks;
    radix = radix && chunks;
    const bool tail = stage == Stage::CollectTail;
    fused = fused && !tail;
    const auto key = std::make_tuple(static_cast<uint32_t>(stage), ops, selector, static_cast<uint32_t>(inputs),
                                     small, texel, fused, radix);
    auto it = collect_.find(key);
    if (it != collect_.end()) return it->second;
    // The tail's short build where the chain's samplers fit its positions
    // (tail.glsl: run_chain); ops holds them from the lowest nibble up.
    const bool short_chain = (ops >> (4u * glsl::SHORT_CHAIN_OPS)) == 0u;
    const shaders::Spirv& code = fused ? fused_spirv(short_chain) : tail ? tail_spirv(short_chain) : spirv(stage);
    const auto& lim = device_.limits();
    // collect_chunk.glsl's COLLECT_VARIANT: 0 general, 1 plain, 2 small, 3 plain with radix_chunk, 4 general
    // with radix_chunk.
    const uint32_t collect_variant = stage == Stage::CollectPlain ? (radix ? 3u : 1u) : small ? 2u : radix ? 4u : 0u;
    // The tail runs one workgroup per row, over a few dozen candidates and
    // mostly in one invocation; a CPU device runs each line of it once per
    // SIMD batch of the workgroup, so there it gets 8 invocations, one batch
    // of lavapipe's (measured on lavapipe, default chain at 151936: 541 -> 431
    // us per token with 16 against 64; 355 -> 348 with 8 against 16, min_p
    // 326 -> 317). A GPU keeps the full workgroup.
    const bool cpu = lim.plan_type == SIEVE_DEVICE_CPU;
    const uint32_t wg = tail && cpu ? std::min<uint32_t>(lim.workgroup_size, 8u) : lim.workgroup_size;
    Specialization s;
    s.workgroup_size = wg;
    s.capacity = lim.candidate_capacity;
    s.inputs = inputs;
    s.chain_ops = ops;
    s.selector = selector;
    s.collect_variant = collect_variant;
    s.texel_read = texel ? 1u : 0u;
    VkPipeline p = create_compute_pipeline(device_, layout_, code, s, use_of(stage));
    collect_.emplace(key, p);
    return p;
}

const shaders::Spirv& Pipelines::fused_spirv(bool short_chain) const {
    // It has a last-workgroup handoff (arrive.glsl): a memory model variant too.
    if (short_chain) {
        if (uses_memory_model_)
            return uses_subgroups_ ? shaders::collect_fused_subgroup_vmm_short : shaders::collect_fused_vmm_short;
        return uses_subgroups_ ? shaders::collect_fused_subgroup_short : shaders::collect_fused_short;
    }
    if (uses_memory_model_) return uses_subgroups_ ? shaders::collect_fused_subgroup_vmm : shaders::collect_fused_vmm;
    return uses_subgroups_ ? shaders::collect_fused_subgroup : shaders::collect_fused;
}

const shaders::Spirv& Pipelines::tail_spirv(bool short_chain) const {
    if (!short_chain) return spirv(Stage::CollectTail);
    return uses_subgroups_ ? shaders::collect_tail_subgroup_short : shaders::collect_tail_short;
}

const shaders::Spirv& Pipelines::spirv(Stage stage) const {
    // Indexed by Stage (CollectPlain is collect_chunk.glsl's plain variant).
    static const shaders::Spirv* const portable[] = {
        &shaders::row_stats,   &shaders::mass_histogram, &shaders::gather,      &shaders::finalize,
        &shaders::probabilities, &shaders::collect,      &shaders::wide_histogram, &shaders::wide_gather,
        &shaders::history,     &shaders::raw_stats,      &shaders::collect_tail, &shaders::collect};
    static const shaders::Spirv* const with_subgroups[] = {
        &shaders::row_stats_subgroup,   &shaders::mass_histogram_subgroup, &shaders::gather_subgroup,
        &shaders::finalize_subgroup,    &shaders::probabilities_subgroup,  &shaders::collect_subgroup,
        &shaders::wide_histogram_subgroup, &shaders::wide_gather_subgroup, &shaders::history_subgroup,
        &shaders::raw_stats_subgroup,   &shaders::collect_tail_subgroup,   &shaders::collect_subgroup};
    // The stages with a last-workgroup handoff (arrive.glsl) also exist for
    // the Vulkan memory model; the others have none (nullptr).
    static const shaders::Spirv* const memory_model[] = {
        &shaders::row_stats_vmm, &shaders::mass_histogram_vmm, &shaders::gather_vmm, nullptr, nullptr, nullptr,
        &shaders::wide_histogram_vmm, &shaders::wide_gather_vmm, nullptr, &shaders::raw_stats_vmm, nullptr, nullptr};
    static const shaders::Spirv* const memory_model_subgroups[] = {
        &shaders::row_stats_subgroup_vmm, &shaders::mass_histogram_subgroup_vmm, &shaders::gather_subgroup_vmm,
        nullptr, nullptr, nullptr, &shaders::wide_histogram_subgroup_vmm, &shaders::wide_gather_subgroup_vmm,
        nullptr, &shaders::raw_stats_subgroup_vmm, nullptr, nullptr};
    static_assert(std::size(portable) == static_cast<size_t>(Stage::Count), "one shader per stage");
    static_assert(std::size(with_subgroups) == static_cast<size_t>(Stage::Count), "one shader per stage");
    static_assert(std::size(memory_model) == static_cast<size_t>(Stage::Count), "one entry per stage");
    static_assert(std::size(memory_model_subgroups) == static_cast<size_t>(Stage::Count), "one entry per stage");
    const uint32_t i = static_cast<uint32_t>(stage);
    if (uses_memory_model_) {
        const shaders::Spirv* vmm = (uses_subgroups_ ? memory_model_subgroups : memory_model)[i];
        if (vmm) return *vmm;
    }
    return *(uses_subgroups_ ? with_subgroups : portable)[i];
}

Pipelines::~Pipelines() { release(); }

void Pipelines::release() {
    const auto& vk = device_.vk();
    for (auto& variant : pipelines_)
        for (VkPipeline& p : variant) {
            if (p) vk.vkDestroyPipeline(device_.handle(), p, nullptr);
            p = VK_NULL_HANDLE;
        }
    for (VkPipeline& p : texel_) {
        if (p) vk.vkDestroyPipeline(device_.handle(), p, nullptr);
        p = VK_NULL_HANDLE;
    }
    for (auto& [key, p] : wide_)
        if (p) vk.vkDestroyPipeline(device_.handle(), p, nullptr);
    wide_.clear();
    for (auto& [key, p] : collect_) vk.vkDestroyPipeline(device_.handle(), p, nullptr);
    collect_.clear();
    if (layout_) vk.vkDestroyPipelineLayout(device_.handle(), layout_, nullptr);
    if (set_layout_) vk.vkDestroyDescriptorSetLayout(device_.handle(), set_layout_, nullptr);
    layout_ = VK_NULL_HANDLE;
    set_layout_ = VK_NULL_HANDLE;
}

} // namespace sieve
