// The app's logits for the external-device tests: a device-local tensor the
// app fills with its own queue work, the same values in host memory, and the
// checks that compare Sieve's results bit for bit (test_zero_copy.cpp,
// test_async.cpp).
#pragma once

#include "app_device.hpp"
#include "half_bits.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace sieve_test {

// The app's side: a device-local tensor of `rows` rows `stride` elements
// apart from byte `offset`, filled from a staging buffer by a copy on the
// queue that nobody waits for.
struct AppLogits {
    AppDevice::AppBuffer staging, tensor;
    std::vector<unsigned char> bytes;  // what the tensor holds
    sieve_vulkan_logits desc{};
    sieve_logits host{};               // the same values in host memory
};

inline AppLogits make_app_logits(AppDevice& app, sieve_dtype dtype, Shape shape, int32_t rows, int32_t vocab, int64_t stride,
                          VkDeviceSize offset, uint32_t seed) {
    AppLogits a;
    const size_t elem = dtype == SIEVE_DTYPE_F32 ? 4 : 2;
    const VkDeviceSize size = offset + static_cast<VkDeviceSize>(stride) * rows * elem + 64;
    a.bytes.assign(size, 0xFF);  // NaN in every format outside the rows
    const auto values = make_rows(shape, rows, vocab, seed);
    for (int32_t r = 0; r < rows; ++r)
        for (int32_t i = 0; i < vocab; ++i) {
            const float v = values[static_cast<size_t>(r) * vocab + i];
            unsigned char* at = a.bytes.data() + offset + (static_cast<size_t>(r) * stride + i) * elem;
            if (elem == 4) std::memcpy(at, &v, 4);
            else {
                const uint16_t h = to_half_bits(v, dtype);
                std::memcpy(at, &h, 2);
            }
        }
    a.staging = app.make_buffer(size, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true);
    std::memcpy(a.staging.mapped, a.bytes.data(), size);
    // (A transfer source too: tests read it back to see Sieve never wrote it.)
    a.tensor = app.make_buffer(size,
                               VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                               false);
    sieve_vulkan_logits_init(&a.desc, a.tensor.buffer, size, dtype, rows, vocab);
    a.desc.offset = offset;
    a.desc.row_stride = stride;
    sieve_logits_init(&a.host, a.bytes.data() + offset, dtype, rows, vocab);
    a.host.row_stride = stride;
    return a;
}

// enabled_features: what the app states it enabled (sieve_vulkan_device).
// max_storage_buffer_range: the cap the context plans with (0: the device's).
inline std::unique_ptr<sieve::Context> app_context(AppDevice& app, uint32_t enabled_features = 0,
                                                   uint64_t max_storage_buffer_range = 0) {
    const sieve_vulkan_device handles = app.handles(enabled_features);
    sieve::ContextOptions options;
    options.on_message(count_validation_message, nullptr).max_storage_buffer_range(max_storage_buffer_range);
    sieve_context* raw = nullptr;
    EXPECT_EQ(sieve_context_create_vulkan(&handles, &options.raw, &raw), SIEVE_OK) << sieve_last_error();
    return std::make_unique<sieve::Context>(raw);
}

inline void expect_same(const std::vector<sieve_token>& a, const std::vector<sieve_token>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t r = 0; r < a.size(); ++r) {
        SCOPED_TRACE("row " + std::to_string(r));
        ASSERT_EQ(a[r].status, SIEVE_OK);
        ASSERT_EQ(b[r].status, SIEVE_OK);
        EXPECT_EQ(a[r].token, b[r].token);
        EXPECT_EQ(std::memcmp(&a[r].p, &b[r].p, 4), 0) << a[r].p << " vs " << b[r].p;
        EXPECT_EQ(std::memcmp(&a[r].logprob, &b[r].logprob, 4), 0);
        EXPECT_EQ(a[r].step, b[r].step);
    }
}

inline std::vector<sieve_token> sample_vulkan(sieve::Chain& chain, const sieve_vulkan_logits& in) {
    std::vector<sieve_token> out(static_cast<size_t>(in.rows));
    EXPECT_EQ(sieve_sample_vulkan(chain.get(), &in, out.data()), SIEVE_OK) << sieve_last_error();
    return out;
}

} // namespace sieve_test
