#include "vulkan/gpu_submitter.hpp"

#include "vulkan/fence_wait.hpp"
#include "vulkan/vk_check.hpp"

#include <cstdio>

namespace sieve {

Submitter::Submitter(Device& device, uint32_t max_rows, GpuCounters& counters)
    : device_(device), counters_(counters), max_rows_(max_rows) {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    try {
        VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        cp.queueFamilyIndex = device_.family();
        vk_check(vk.vkCreateCommandPool(dev, &cp, nullptr, &command_pool_), "vkCreateCommandPool");
        VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        vk_check(vk.vkCreateFence(dev, &fi, nullptr, &fence_), "vkCreateFence");
    } catch (...) {
        release();
        throw;
    }
}

Submitter::~Submitter() { release(); }

void Submitter::release() {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    if (fence_) {
        drain();
        vk.vkDestroyFence(dev, fence_, nullptr);
        fence_ = VK_NULL_HANDLE;
    }
    if (queries_) vk.vkDestroyQueryPool(dev, queries_, nullptr);
    queries_ = VK_NULL_HANDLE;
    if (command_pool_) vk.vkDestroyCommandPool(dev, command_pool_, nullptr);  // frees the recordings
    command_pool_ = VK_NULL_HANDLE;
}

void Submitter::run_once(const std::function<void(VkCommandBuffer)>& fill) {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    VkCommandBuffer cmd = device_.allocate_command_buffer(command_pool_);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vk.vkBeginCommandBuffer(cmd, &bi);
    fill(cmd);
    vk_check(vk.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    vk_check(device_.submit(si, fence_), "vkQueueSubmit");
    vk_check(vk.vkWaitForFences(dev, 1, &fence_, VK_TRUE, kWaitTimeoutNs), "vkWaitForFences");
    vk.vkResetFences(dev, 1, &fence_);
    vk.vkFreeCommandBuffers(dev, command_pool_, 1, &cmd);
}

void Submitter::submit(const VkCommandBuffer* cmds, uint32_t n, const sieve_vulkan_sync* sync) {
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
    ++counters_.submits;
    pending_ = true;
}

void Submitter::await(uint64_t timeout_ns, const char* what, double* wait_ns) {
    const VkResult r = wait_for_fence(device_, fence_, timeout_ns, wait_ns);
    if (r == VK_TIMEOUT) fail(SIEVE_ERROR_TIMEOUT, what);
    vk_check(r, "vkWaitForFences");
    device_.vk().vkResetFences(device_.handle(), 1, &fence_);
    pending_ = false;
}

void Submitter::drain() {
    if (pending_) device_.vk().vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, kWaitTimeoutNs);
    pending_ = false;
}

void Submitter::wait_pending() {
    if (pending_) await(kWaitTimeoutNs, "the previous submission is still running");
}

void Submitter::read_stage_times(const Plan& plan, const std::vector<RowGroup>& groups, bool append) {
    const auto& vk = device_.vk();
    // One figure per stage of the plan, summed over the row groups.
    const size_t per_group = plan.dispatches.size();
    const uint32_t n = static_cast<uint32_t>(per_group * groups.size()) + 1;
    std::vector<uint64_t> ticks(n);
    vk_check(vk.vkGetQueryPoolResults(device_.handle(), queries_, 0, n, n * sizeof(uint64_t), ticks.data(),
                                      sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
             "vkGetQueryPoolResults");
    const size_t first = append ? stage_times_.size() : 0;
    stage_times_.resize(first + per_group);
    for (size_t i = 0; i < per_group; ++i) {
        sieve_stage_time& t = stage_times_[first + i];
        t = sieve_stage_time{};
        std::snprintf(t.stage, sizeof(t.stage), "%s", stage_name(plan.dispatches[i].stage));
        t.level = plan.dispatches[i].level;
    }
    for (uint32_t q = 0; q + 1 < n; ++q)
        stage_times_[first + q % per_group].gpu_us +=
            static_cast<double>(ticks[q + 1] - ticks[q]) * device_.limits().timestamp_period_ns / 1000.0;
}

void Submitter::set_profiling(bool enabled) {
    if (enabled && !device_.limits().timestamps)
        fail(SIEVE_ERROR_DEVICE_LIMIT, "this device's compute queue has no timestamps");
    if (enabled && !queries_) {
        VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qi.queryCount = 1 + kMaxPlanDispatches * max_rows_;
        vk_check(device_.vk().vkCreateQueryPool(device_.handle(), &qi, nullptr, &queries_), "vkCreateQueryPool");
    }
    profiling_ = enabled;
    stage_times_.clear();
}

} // namespace sieve
