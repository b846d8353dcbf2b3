// A GPU chain's submissions: its command pool and fence, the submit and the
// host's wait, and the stage timestamps of profiling.
#pragma once

#include "vulkan/fence_wait.hpp"
#include "vulkan/gpu_counters.hpp"
#include "vulkan/gpu_plan.hpp"
#include "vulkan/vk_device.hpp"

#include <sieve/sieve_vulkan.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace sieve {

// The longest plan once per row in the worst case: a selection plan (raw
// stats, history, stats, 9 levels, gather: 13) or a collect plan whose key
// levels for min-p are inline (history, two collect variants, the wide
// passes, 8 levels, gather: 14; no raw stats beside them).
constexpr uint32_t kMaxPlanDispatches = 14;

class Submitter {
public:
    Submitter(Device& device, uint32_t max_rows, GpuCounters& counters);
    ~Submitter();
    Submitter(const Submitter&) = delete;
    Submitter& operator=(const Submitter&) = delete;

    VkCommandPool command_pool() const { return command_pool_; }
    // Records `fill` into a one-time command buffer, submits it and waits.
    void run_once(const std::function<void(VkCommandBuffer)>& fill);
    // Submits cmds[0..n) on the chain's fence; sync: the app's semaphores (may be null).
    void submit(const VkCommandBuffer* cmds, uint32_t n, const sieve_vulkan_sync* sync);
    // Waits for the fence; TIMEOUT (with `what`) leaves the submission
    // pending. wait_ns: how long such waits usually take (0 = not yet known),
    // where the wait starts polling, updated with this one (null: untimed).
    void await(uint64_t timeout_ns, const char* what, double* wait_ns = nullptr);
    // The wait a call allows its submission on this device (fence_wait.hpp).
    uint64_t wait_timeout_ns() const { return sieve::wait_timeout_ns(device_.info().type); }
    // Waits for a submission whose earlier wait timed out.
    void wait_pending();
    // Runs `fn` once no submission is pending: now, or once the pending
    // one's wait succeeds (a call that failed part way puts back what its
    // submission still writes, never under it). Dropped with the chain, and
    // never run after a lost device.
    void when_idle(std::function<void()> fn);
    // The same before the chain's pieces are destroyed: errors ignored.
    void drain();

    // Profiling: a query pool of timestamps, one before the first and one
    // after every dispatch of a recording.
    void set_profiling(bool enabled);
    bool profiling() const { return profiling_; }
    VkQueryPool queries() const { return queries_; }
    // After a recording with timestamps ran: its stage times (append: after
    // those read last, for a call's later submissions).
    void read_stage_times(const Plan& plan, const std::vector<RowGroup>& groups, bool append = false);
    const std::vector<sieve_stage_time>& stage_times() const { return stage_times_; }
    // Profiling's call timing (sieve_chain_call_timing): the recording's span
    // queries (a timestamp at its command buffer's start and end), written
    // only by recordings with timestamps.
    VkQueryPool span_queries() const { return span_queries_; }
    // After such a recording's submission and wait: the call's timing from the
    // host's times around the last submit and wait and the span queries.
    void read_call_timing();
    bool call_timing(sieve_call_timing* out) const;

private:
    void release();

    Device& device_;
    GpuCounters& counters_;
    uint32_t max_rows_;
    VkCommandPool command_pool_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    bool pending_ = false;  // a submission whose wait timed out
    std::vector<std::function<void()>> when_idle_;  // to run once it has finished
    bool profiling_ = false;
    VkQueryPool queries_ = VK_NULL_HANDLE;
    std::vector<sieve_stage_time> stage_times_;
    VkQueryPool span_queries_ = VK_NULL_HANDLE;
    uint64_t submit_ns_ = 0, wake_ns_ = 0;  // CLOCK_MONOTONIC around the last submit and wait (profiling)
    bool timed_ = false;
    sieve_call_timing timing_{};
};

} // namespace sieve
