#include "vulkan/gpu_submitter.hpp"

#include "vulkan/vk_check.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

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
    if (wait_ns && *wait_ns > 0.0 && window > 0.0) {
        const double sleep_ns = std::min(*wait_ns - window, static_cast<double>(timeout_ns));
        if (sleep_ns > 0.0)
            done = vk.vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, static_cast<uint64_t>(sleep_ns)) ==
                   VK_SUCCESS;
        const auto until = start + std::chrono::nanoseconds(static_cast<int64_t>(
                                       std::min(*wait_ns + window, static_cast<double>(timeout_ns))));
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
    if (wait_ns) {
        // Follows the shorter waits closely and the longer ones slowly: a
        // wait that slept to the end measured the wake-up too, and one slow
        // call should not move the polling away from the usual finish.
        const double took = static_cast<double>(std::chrono::nanoseconds(Clock::now() - start).count());
        double& e = *wait_ns;
        e = e <= 0.0 ? took : took < e ? 0.5 * (e + took) : e + (took - e) / 16.0;
    }
    vk.vkResetFences(device_.handle(), 1, &fence_);
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
