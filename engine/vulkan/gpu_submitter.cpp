#include "vulkan/gpu_submitter.hpp"

#include "vulkan/fence_wait.hpp"
#include "vulkan/vk_check.hpp"
#include "vulkan/wait_fault.hpp"

#include <cstdio>
#include <ctime>

namespace sieve {

namespace {

// The host clock of the call timing: the one VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT names.
uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

} // namespace

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
    if (span_queries_) vk.vkDestroyQueryPool(dev, span_queries_, nullptr);
    span_queries_ = VK_NULL_HANDLE;
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
    vk_check(vk.vkWaitForFences(dev, 1, &fence_, VK_TRUE, wait_timeout_ns()), "vkWaitForFences");
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
    if (profiling_) submit_ns_ = monotonic_ns();
    vk_check(device_.submit(si, fence_), "vkQueueSubmit");
    ++counters_.submits;
    pending_ = true;
}

void Submitter::await(uint64_t timeout_ns, const char* what, double* wait_ns) {
    const VkResult r = wait_fault::filter(wait_for_fence(device_, fence_, timeout_ns, wait_ns));
    if (r == VK_TIMEOUT) fail(SIEVE_ERROR_TIMEOUT, what);
    vk_check(r, "vkWaitForFences");
    if (profiling_) wake_ns_ = monotonic_ns();
    device_.vk().vkResetFences(device_.handle(), 1, &fence_);
    pending_ = false;
    std::vector<std::function<void()>> done;
    done.swap(when_idle_);
    for (const auto& fn : done) fn();
}

void Submitter::when_idle(std::function<void()> fn) {
    if (pending_) when_idle_.push_back(std::move(fn));
    else fn();
}

void Submitter::drain() {
    if (pending_) device_.vk().vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, wait_timeout_ns());
    pending_ = false;
}

void Submitter::wait_pending() {
    if (pending_) await(wait_timeout_ns(), "the previous submission is still running");
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

void Submitter::read_call_timing() {
    const auto& vk = device_.vk();
    uint64_t span[2] = {};
    vk_check(vk.vkGetQueryPoolResults(device_.handle(), span_queries_, 0, 2, sizeof(span), span, sizeof(uint64_t),
                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
             "vkGetQueryPoolResults");
    const double period_ns = device_.limits().timestamp_period_ns;
    sieve_call_timing t{};
    t.wall_us = static_cast<double>(wake_ns_ - submit_ns_) / 1000.0;
    t.gpu_span_us = static_cast<double>(span[1] - span[0]) * period_ns / 1000.0;
    // One reading of both clocks, after the call: a device tick d is host
    // time host - (device - d) x period. A reading that fails leaves the
    // timing uncalibrated (it is a measurement: the call itself succeeded).
    VkCalibratedTimestampInfoEXT domains[2] = {{VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT},
                                               {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT}};
    domains[0].timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
    domains[1].timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    uint64_t now[2] = {}, deviation_ns = 0;
    if (device_.calibrated_timestamps() &&
        vk.vkGetCalibratedTimestampsEXT(device_.handle(), 2, domains, now, &deviation_ns) == VK_SUCCESS) {
        auto host_ns = [&](uint64_t ticks) {
            return static_cast<double>(now[1]) - static_cast<double>(now[0] - ticks) * period_ns;
        };
        t.submit_to_gpu_us = (host_ns(span[0]) - static_cast<double>(submit_ns_)) / 1000.0;
        t.gpu_to_host_us = (static_cast<double>(wake_ns_) - host_ns(span[1])) / 1000.0;
        t.deviation_us = static_cast<double>(deviation_ns) / 1000.0;
        t.calibrated = 1;
    }
    timing_ = t;
    timed_ = true;
}

bool Submitter::call_timing(sieve_call_timing* out) const {
    if (!timed_) return false;
    *out = timing_;
    return true;
}

void Submitter::set_profiling(bool enabled) {
    if (enabled && !device_.limits().timestamps)
        fail(SIEVE_ERROR_DEVICE_LIMIT, "this device's compute queue has no timestamps");
    if (enabled && !queries_) {
        VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qi.queryCount = 1 + kMaxPlanDispatches * max_rows_;
        vk_check(device_.vk().vkCreateQueryPool(device_.handle(), &qi, nullptr, &queries_), "vkCreateQueryPool");
        qi.queryCount = 2;
        vk_check(device_.vk().vkCreateQueryPool(device_.handle(), &qi, nullptr, &span_queries_), "vkCreateQueryPool");
    }
    if (enabled && !profiling_) timed_ = false;  // a timing from before is not this profiling's
    profiling_ = enabled;
    stage_times_.clear();
}

} // namespace sieve
