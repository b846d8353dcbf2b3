#include "vulkan/fence_wait.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace sieve {

double next_wait_expectation(double expected_ns, double took_ns, double signaled_asleep_before_ns, bool cpu_device) {
    // Follows the shorter waits closely and the longer ones slowly: a wait
    // that slept to the end measured the wake-up too, and one slow call
    // should not move the polling away from the usual finish.
    double e = expected_ns;
    e = e <= 0.0 ? took_ns : took_ns < e ? 0.5 * (e + took_ns) : e + (took_ns - e) / 16.0;
    // Signaled before E - W: the device finished earlier than that, and the
    // wait's time holds the thread's wake-up too, so it cannot teach a
    // shorter E: a wake-up longer than W keeps E there for good (lavapipe's
    // empty submission: about 25 us polled, 50 asleep). Where the device is
    // not the host's CPU, polling costs it nothing: E falls by W at least a
    // wait until the polling starts before the finish. A CPU device keeps
    // it: there an earlier poll takes a core from the device's threads
    // (lavapipe's calibration pass: 70 -> 120 us when E fell so).
    if (signaled_asleep_before_ns > 0.0 && !cpu_device) e = std::min(e, signaled_asleep_before_ns);
    return e;
}

VkResult wait_for_fence(const Device& device, VkFence fence, uint64_t timeout_ns, double* expected_ns) {
    const auto& vk = device.vk();
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    // A thread that sleeps on the fence can wake tens of microseconds after
    // the device finished (an NVIDIA H200: an empty submission waited for
    // asleep took 50 us; its sampling calls took 18 to 31 us past their GPU
    // time). With a window W (wait_spin_us) and waits known to take
    // about E, the thread sleeps until E - W, then polls the fence, yielding,
    // until E + W at most, then sleeps again: at most 2W of polling a call,
    // near its end, when a CPU device's own threads have mostly finished
    // (the last pass of a call is mostly one workgroup). A CPU device does
    // not poll by default (vk_device.hpp: default_wait_spin_us says why);
    // polling there from the start made top_p;temperature bimodal (the
    // poller took a core from the device's threads). Waits with nothing
    // known sleep at once.
    const double window = device.wait_spin_us() * 1000.0;
    bool done = false;
    double sleep_ns = 0.0;
    bool signaled_asleep = false;  // the fence signaled before the polling was to start
    if (expected_ns && *expected_ns > 0.0 && window > 0.0) {
        sleep_ns = std::min(*expected_ns - window, static_cast<double>(timeout_ns));
        if (sleep_ns > 0.0)
            signaled_asleep = done = vk.vkWaitForFences(device.handle(), 1, &fence, VK_TRUE,
                                                        static_cast<uint64_t>(sleep_ns)) == VK_SUCCESS;
        const auto until = start + std::chrono::nanoseconds(static_cast<int64_t>(
                                       std::min(*expected_ns + window, static_cast<double>(timeout_ns))));
        while (!done && Clock::now() < until) {
            const VkResult status = vk.vkGetFenceStatus(device.handle(), fence);
            if (status != VK_NOT_READY && status != VK_SUCCESS) break;  // the wait below reports it
            done = status == VK_SUCCESS;
            if (!done) std::this_thread::yield();
        }
    }
    if (!done) {
        const uint64_t spent = static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - start).count());
        const VkResult r =
            vk.vkWaitForFences(device.handle(), 1, &fence, VK_TRUE, timeout_ns - std::min(spent, timeout_ns));
        if (r != VK_SUCCESS) return r;
    }
    if (expected_ns) {
        const double took = static_cast<double>(std::chrono::nanoseconds(Clock::now() - start).count());
        *expected_ns = next_wait_expectation(*expected_ns, took, signaled_asleep ? sleep_ns : 0.0,
                                             device.info().type == SIEVE_DEVICE_CPU);
    }
    return VK_SUCCESS;
}

} // namespace sieve
