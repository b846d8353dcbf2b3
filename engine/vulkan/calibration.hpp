// The device's floor for `sieve bench` (docs/bench.md): an empty
// submit-and-wait and one bare pass over rows x vocab logits, medians of
// `iterations` runs. sieve_context_calibrate (api.cpp) checks the arguments.
#pragma once

#include "vulkan/vk_device.hpp"

#include <sieve/sieve.h>

#include <cstdint>

namespace sieve {

sieve_calibration calibrate(Device& device, uint32_t vocab, uint32_t rows, uint32_t iterations);

} // namespace sieve
