// sieve_context_calibrate: the device's floor for `sieve bench` (an empty
// submit, a bare pass over rows x vocab), and its bad input.
#include "test_support.hpp"

#include <gtest/gtest.h>

namespace {

TEST(Calibration, MeasuresSubmitAndABarePass) {
    auto gpu = sieve_test::gpu_context();
    sieve_calibration c{};
    ASSERT_EQ(sieve_context_calibrate(gpu.get(), 151936, 2, 5, &c), SIEVE_OK) << sieve_last_error();
    EXPECT_GT(c.submit_us, 0.0);
    EXPECT_GT(c.pass_total_us, 0.0);
    EXPECT_GE(c.pass_us, 0.0);
    EXPECT_LE(c.pass_us, c.pass_total_us);
    EXPECT_EQ(c.iterations, 5u);
    EXPECT_GE(c.workgroups, 2u) << "at least one workgroup per row";
    EXPECT_EQ(c.workgroups % 2u, 0u) << "the same chunks for every row";
    // A vocabulary that is not a multiple of 4 and smaller than a workgroup's reach.
    ASSERT_EQ(sieve_context_calibrate(gpu.get(), 3, 1, 1, &c), SIEVE_OK) << sieve_last_error();
    EXPECT_EQ(c.workgroups, 1u);
}

TEST(Calibration, BadInput) {
    auto gpu = sieve_test::gpu_context();
    sieve_calibration c{};
    EXPECT_EQ(sieve_context_calibrate(nullptr, 100, 1, 1, &c), SIEVE_ERROR_NULL_HANDLE);
    EXPECT_EQ(sieve_context_calibrate(gpu.get(), 100, 1, 1, nullptr), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(sieve_context_calibrate(gpu.get(), 0, 1, 1, &c), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(sieve_context_calibrate(gpu.get(), 100, -1, 1, &c), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(sieve_context_calibrate(gpu.get(), 100, 1, 0, &c), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(sieve_last_error()).find("iterations"), std::string::npos) << sieve_last_error();
    // More logits than one storage buffer may address.
    const uint64_t range = gpu.device_info().max_storage_buffer_range;
    const int32_t rows = static_cast<int32_t>(range / (4u * 262144u) + 1);
    EXPECT_EQ(sieve_context_calibrate(gpu.get(), 262144, rows, 1, &c), SIEVE_ERROR_DEVICE_LIMIT);
    EXPECT_NE(std::string(sieve_last_error()).find("maxStorageBufferRange"), std::string::npos);
    // The CPU twin has no device.
    auto cpu = sieve_test::cpu_context();
    EXPECT_EQ(sieve_context_calibrate(cpu.get(), 100, 1, 1, &c), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(sieve_last_error()).find("CPU backend"), std::string::npos);
}

} // namespace
