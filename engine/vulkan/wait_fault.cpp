#include "vulkan/wait_fault.hpp"

#include <atomic>

namespace sieve::wait_fault {

namespace {

// Waits still to pass before the failing ones, and the failing ones left:
// one word, so that a wait takes its decision with one atomic operation.
// Negative: disarmed.
std::atomic<int64_t> state{-1};
std::atomic<int32_t> armed_result{VK_SUCCESS};

int64_t pack(uint32_t pass, uint32_t fail) { return (int64_t{pass} << 32) | fail; }

} // namespace

void arm(uint32_t after, VkResult result, uint32_t times) {
    armed_result.store(result);
    state.store(times == 0 ? -1 : pack(after, times));
}

void disarm() { state.store(-1); }

VkResult filter(VkResult waited) {
    int64_t now = state.load(std::memory_order_relaxed);
    while (now >= 0) {
        const uint32_t pass = static_cast<uint32_t>(now >> 32), fail = static_cast<uint32_t>(now);
        const int64_t next = pass > 0 ? pack(pass - 1, fail) : fail > 1 ? pack(0, fail - 1) : -1;
        if (state.compare_exchange_weak(now, next)) return pass > 0 ? waited : static_cast<VkResult>(armed_result.load());
    }
    return waited;
}

} // namespace sieve::wait_fault
