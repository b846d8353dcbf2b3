#include "vulkan/ingest.hpp"

#include "vulkan/pipelines.hpp"
#include "vulkan/vk_check.hpp"

#include <sieve_shaders.hpp>

namespace sieve {

namespace {

// Mirrors `Push` in ingest.comp.
struct IngestPush {
    uint32_t vocab;
    uint32_t dtype;
    uint32_t first;
    uint32_t stride;
};

// ingest.comp's INGEST_KIND: the dtype's, or f32 four at a time when the
// rows allow it (every window's first element, the stride and the vocab
// multiples of 4).
constexpr uint32_t kKindF32x4 = 3;
uint32_t ingest_kind(const IngestSource& src) {
    bool aligned = src.dtype == SIEVE_DTYPE_F32 && src.stride % 4 == 0 && src.vocab % 4 == 0;
    for (const IngestWindow& w : src.windows) aligned = aligned && w.first % 4 == 0;
    return aligned ? kKindF32x4 : static_cast<uint32_t>(src.dtype);
}

// Elements each invocation widens: mirrors PER_INVOCATION in ingest.comp.
uint32_t ingest_per_invocation(uint32_t kind) { return kind == kKindF32x4 ? 64 : 16; }

} // namespace

Ingest::Ingest(Device& device, VkBuffer dst, uint32_t max_windows, VkCommandPool pool)
    : device_(device), dst_(dst), command_pool_(pool) {
    const auto& vk = device.vk();
    VkDevice dev = device.handle();
    try {
        set_layout_ = create_storage_set_layout(device, 2);
        layout_ = create_pipeline_layout(device, set_layout_, sizeof(IngestPush));
        pool_ = create_storage_pool(device, max_windows, 2 * max_windows);
        const std::vector<VkDescriptorSetLayout> layouts(max_windows, set_layout_);
        sets_.resize(max_windows);
        VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        ai.descriptorPool = pool_;
        ai.descriptorSetCount = max_windows;
        ai.pSetLayouts = layouts.data();
        vk_check(vk.vkAllocateDescriptorSets(dev, &ai, sets_.data()), "vkAllocateDescriptorSets");
    } catch (...) {
        release();
        throw;
    }
}

Ingest::~Ingest() { release(); }

void Ingest::release() {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    if (cmd_) vk.vkFreeCommandBuffers(dev, command_pool_, 1, &cmd_);
    if (pool_) vk.vkDestroyDescriptorPool(dev, pool_, nullptr);
    for (VkPipeline& p : pipelines_) {
        if (p) vk.vkDestroyPipeline(dev, p, nullptr);
        p = VK_NULL_HANDLE;
    }
    if (layout_) vk.vkDestroyPipelineLayout(dev, layout_, nullptr);
    if (set_layout_) vk.vkDestroyDescriptorSetLayout(dev, set_layout_, nullptr);
    cmd_ = VK_NULL_HANDLE;
    pool_ = VK_NULL_HANDLE;
    layout_ = VK_NULL_HANDLE;
    set_layout_ = VK_NULL_HANDLE;
}

void Ingest::release_source() {
    // The set still names the old buffer; it is rewritten before its next use.
    if (cmd_) device_.vk().vkFreeCommandBuffers(device_.handle(), command_pool_, 1, &cmd_);
    cmd_ = VK_NULL_HANDLE;
    valid_ = false;
    current_ = IngestSource{};
}

VkCommandBuffer Ingest::prepare(const IngestSource& src, bool* recorded) {
    *recorded = false;
    if (valid_ && src == current_) return cmd_;
    const auto& vk = device_.vk();
    // A fresh command buffer (the chain's pool does not reset single ones).
    if (cmd_) vk.vkFreeCommandBuffers(device_.handle(), command_pool_, 1, &cmd_);
    cmd_ = VK_NULL_HANDLE;
    valid_ = false;
    cmd_ = device_.allocate_command_buffer(command_pool_);
    const uint32_t kind = ingest_kind(src);
    if (!pipelines_[kind]) {  // built on the first source of its kind
        Specialization s;
        s.workgroup_size = device_.limits().workgroup_size;
        s.capacity = device_.limits().candidate_capacity;
        s.ingest_kind = kind;
        pipelines_[kind] =
            create_compute_pipeline(device_, layout_, shaders::ingest, s, PipelineUse{"ingest"});
    }
    for (size_t w = 0; w < src.windows.size(); ++w) {
        const IngestWindow& win = src.windows[w];
        const VkDescriptorBufferInfo infos[2] = {{dst_, win.dst_offset, win.dst_range},
                                                 {src.buffer, win.bind_offset, win.bind_range}};
        write_storage_set(device_, sets_[w], infos, 2);
    }

    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vk_check(vk.vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
    current_ = src;
    emit(cmd_);
    vk_check(vk.vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
    valid_ = true;
    *recorded = true;
    return cmd_;
}

void Ingest::emit(VkCommandBuffer cmd) const {
    const auto& vk = device_.vk();
    // The app's writes of the logits (any earlier command on this queue:
    // a compute or transfer pass, a copy) before this pass reads them, and
    // the previous sampling call's reads of Sieve's logits before they are
    // overwritten.
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                            &barrier, 0, nullptr, 0, nullptr);
    const uint32_t kind = ingest_kind(current_);
    vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines_[kind]);
    const uint32_t per_group = device_.limits().workgroup_size * ingest_per_invocation(kind);
    for (size_t w = 0; w < current_.windows.size(); ++w) {
        // Windows write disjoint parts of the logits: no barrier between them.
        const IngestWindow& win = current_.windows[w];
        vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &sets_[w], 0, nullptr);
        const IngestPush push{current_.vocab, static_cast<uint32_t>(current_.dtype), win.first, current_.stride};
        vk.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), &push);
        vk.vkCmdDispatch(cmd, (current_.vocab + per_group - 1) / per_group, win.rows, 1);
    }
    // The chain's recording, next in the same submission, starts with a
    // compute-to-compute barrier that makes these writes visible to it. When
    // the host reads the rows back (rows the twin finishes), they must be
    // visible to it after the fence too.
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                            nullptr, 0, nullptr);
}

} // namespace sieve
