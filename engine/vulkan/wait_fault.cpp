#include "vulkan/wait_fault.hpp"

#include <atomic>

namespace sieve::wait_fault {

namespace {

std::atomic<int64_t> waits_left{-1};  // < 0: disarmed
std::atomic<int32_t> armed_result{VK_SUCCESS};

} // namespace

void arm(uint32_t after, VkResult result) {
    armed_result.store(result);
    waits_left.store(after);
}

void disarm() { waits_left.store(-1); }

VkResult filter(VkResult waited) {
    if (waits_left.load(std::memory_order_relaxed) < 0) return waited;
    // 0 before the decrement: this is the armed wait (and the seam is
    // disarmed by it, at -1).
    return waits_left.fetch_sub(1) == 0 ? static_cast<VkResult>(armed_result.load()) : waited;
}

} // namespace sieve::wait_fault
