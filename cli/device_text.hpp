// Names and text for device properties (type, features, versions).
#pragma once

#include <sieve/sieve.h>

#include <string>
#include <vector>

namespace sieve_cli {

const char* device_type_name(sieve_device_type type);  // "discrete_gpu", "cpu", ...
std::vector<std::string> feature_names(uint32_t features);
std::string vk_version_string(uint32_t version);      // VK_MAKE_API_VERSION layout -> "1.3.238"
std::string bytes_text(uint64_t bytes);                // "134217728 (128 MiB)"

// The warning printed when timings come from a CPU implementation of Vulkan.
std::string cpu_device_warning(const sieve_device_info& info);

} // namespace sieve_cli
