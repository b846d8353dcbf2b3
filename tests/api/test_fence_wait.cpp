// How a blocking call's wait learns when to poll (engine/vulkan/fence_wait.hpp:
// next_wait_expectation). No device: the rule alone, and a model of a device
// that finishes at T and a sleeping thread that wakes L after the signal.
#include "vulkan/fence_wait.hpp"

#include <gtest/gtest.h>

namespace {

using sieve::next_wait_expectation;

TEST(FenceWait, TheFirstWaitIsTheExpectation) {
    EXPECT_DOUBLE_EQ(next_wait_expectation(0.0, 50e3, 0.0, false), 50e3);
    EXPECT_DOUBLE_EQ(next_wait_expectation(0.0, 50e3, 0.0, true), 50e3);
}

TEST(FenceWait, FollowsShorterWaitsCloselyAndLongerOnesSlowly) {
    EXPECT_DOUBLE_EQ(next_wait_expectation(100e3, 60e3, 0.0, false), 80e3);
    EXPECT_DOUBLE_EQ(next_wait_expectation(100e3, 260e3, 0.0, false), 110e3);
    EXPECT_DOUBLE_EQ(next_wait_expectation(100e3, 260e3, 0.0, true), 110e3);
}

TEST(FenceWait, SignaledAsleepOnAGpuFallsToWhereThePollingWasToStart) {
    // The wait took 60 us with the wake-up, the fence having signaled before
    // the 40 us the thread slept until.
    EXPECT_DOUBLE_EQ(next_wait_expectation(60e3, 60e3, 40e3, false), 40e3);
    // A CPU device keeps polling late (its threads are the device's).
    EXPECT_DOUBLE_EQ(next_wait_expectation(60e3, 60e3, 40e3, true), 60e3);
    // Not past what the wait itself taught.
    EXPECT_DOUBLE_EQ(next_wait_expectation(100e3, 30e3, 80e3, false), 65e3);
}

// A device that finishes T after the submit and a thread that wakes L after
// the signal when asleep, polled with a window W: the expectation after n
// waits of the rule (wait_for_fence's phases, simplified).
double settle(double t, double l, double w, bool cpu_device, int n, double* last_took) {
    double e = 0.0;
    for (int i = 0; i < n; ++i) {
        const double sleep_until = e > 0.0 ? e - w : 0.0;
        double took, signaled_before = 0.0;
        if (e <= 0.0) {
            took = t + l;  // nothing known: asleep at once
        } else if (sleep_until > t) {
            took = t + l;  // signaled while asleep
            signaled_before = sleep_until;
        } else if (e + w >= t) {
            took = t;  // the polling saw it
        } else {
            took = t + l;  // the polling gave up first: asleep again
        }
        *last_took = took;
        e = next_wait_expectation(e, took, signaled_before, cpu_device);
    }
    return e;
}

TEST(FenceWait, AWakeUpLongerThanTheWindowNoLongerHoldsAGpuWaitLate) {
    // An empty submission: finished after 10 us, a sleeping thread woken 40
    // us later, a window of 20 us.
    double took = 0.0;
    settle(10e3, 40e3, 20e3, false, 8, &took);
    EXPECT_DOUBLE_EQ(took, 10e3) << "the polling sees the finish";
    settle(10e3, 40e3, 20e3, true, 8, &took);
    EXPECT_DOUBLE_EQ(took, 50e3) << "a CPU device's wait stays asleep";
    // A wake-up within the window never needed it.
    settle(100e3, 15e3, 20e3, true, 8, &took);
    EXPECT_DOUBLE_EQ(took, 100e3);
}

// A CPU device may compile a pipeline inside its first submission: its wait
// allows that; a GPU's reports a hang sooner.
TEST(FenceWait, ACpuDeviceWaitsLongerForItsFirstCompiles) {
    EXPECT_EQ(sieve::wait_timeout_ns(SIEVE_DEVICE_CPU), 600ull * 1000 * 1000 * 1000);
    for (sieve_device_type gpu : {SIEVE_DEVICE_DISCRETE_GPU, SIEVE_DEVICE_INTEGRATED_GPU, SIEVE_DEVICE_VIRTUAL_GPU,
                                  SIEVE_DEVICE_OTHER})
        EXPECT_EQ(sieve::wait_timeout_ns(gpu), 120ull * 1000 * 1000 * 1000) << gpu;
}

// A CPU device's calls do not poll by default (the polling thread would take
// a core from the device's own); a GPU's poll 20 us around the finish.
TEST(FenceWait, OnlyAGpuPollsByDefault) {
    EXPECT_EQ(sieve::default_wait_spin_us(SIEVE_DEVICE_CPU), 0);
    for (sieve_device_type gpu : {SIEVE_DEVICE_DISCRETE_GPU, SIEVE_DEVICE_INTEGRATED_GPU, SIEVE_DEVICE_VIRTUAL_GPU,
                                  SIEVE_DEVICE_OTHER})
        EXPECT_EQ(sieve::default_wait_spin_us(gpu), 20) << gpu;
}

}  // namespace
