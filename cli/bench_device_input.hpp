// `sieve bench --input device`: logits already in a device-local VkBuffer, as an
// inference engine holds them. The bench makes its own Vulkan instance and
// device on the physical device the run chose (the loader opened at run time:
// the CLI links no Vulkan), a Sieve context on it (sieve_context_create_vulkan),
// and per case a device-local buffer its logits are uploaded to once; each
// measured call is sieve_sample_vulkan on that buffer.
#pragma once

#include "options.hpp"

#include <sieve/sieve.hpp>

#include <memory>
#include <string>
#include <vector>

namespace sieve_cli {

// Whether SIEVE_VALIDATION asks for the validation layer, as the library reads
// it: the app's device of --input device gets it too, and the bench warns
// that its timings then include the layer.
bool validation_wanted();

class BenchVulkan;

// One case's logits in a device-local buffer of the bench's device.
class DeviceLogits {
public:
    ~DeviceLogits();
    DeviceLogits(const DeviceLogits&) = delete;
    DeviceLogits& operator=(const DeviceLogits&) = delete;
    // sieve_sample_vulkan on the buffer; throws sieve::Error as Chain::sample does.
    std::vector<sieve_token> sample(sieve::Chain& chain) const { return sample(chain, 0, rows_); }
    // The same on rows [first, first + rows) of the buffer.
    std::vector<sieve_token> sample(sieve::Chain& chain, int32_t first, int32_t rows) const;
    // sieve_verify_vulkan on the whole buffer (every sequence's positions back
    // to back); each sequence's outcome, the tokens left in the library's
    // call. Throws sieve::Error on a call-level failure, as Chain::verify does.
    std::vector<sieve_verified> verify(sieve::Chain& chain, const std::vector<sieve_draft>& drafts,
                                       sieve_verify_mode mode) const;
    // Makes the chain forget the buffer (sieve_chain_release_input) before it goes.
    void release_from(sieve::Chain& chain) const;

private:
    friend class BenchVulkan;
    DeviceLogits() = default;
    const BenchVulkan* vk_ = nullptr;
    struct Handles;
    std::unique_ptr<Handles> h_;
    int32_t rows_ = 0, vocab_ = 0;
};

class BenchVulkan {
public:
    // The instance and device on the physical device `chosen` describes (the
    // context the run opened first), with the optional features it supports
    // enabled; with SIEVE_VALIDATION=1 the validation layer on, its messages
    // on stderr as the library prints its own. Throws CliError (exit 4).
    static std::unique_ptr<BenchVulkan> open(const sieve_device_info& chosen);
    ~BenchVulkan();
    BenchVulkan(const BenchVulkan&) = delete;
    BenchVulkan& operator=(const BenchVulkan&) = delete;

    // A Sieve context on this device (the profile from env SIEVE_PROFILE, as
    // every command). Throws CliError.
    std::unique_ptr<sieve::Context> make_context() const;
    // rows x vocab floats uploaded into a new device-local buffer; null, with
    // the reason in *why, when the device cannot hold it.
    std::unique_ptr<DeviceLogits> upload(const float* data, int32_t rows, int32_t vocab, std::string* why) const;

    struct Api;
private:
    BenchVulkan() = default;
    friend class DeviceLogits;
    std::unique_ptr<Api> api_;
};

} // namespace sieve_cli
