#include "device_text.hpp"

namespace sieve_cli {

const char* device_type_name(sieve_device_type type) {
    switch (type) {
    case SIEVE_DEVICE_INTEGRATED_GPU: return "integrated_gpu";
    case SIEVE_DEVICE_DISCRETE_GPU: return "discrete_gpu";
    case SIEVE_DEVICE_VIRTUAL_GPU: return "virtual_gpu";
    case SIEVE_DEVICE_CPU: return "cpu";
    case SIEVE_DEVICE_OTHER: break;
    }
    return "other";
}

std::vector<std::string> feature_names(uint32_t features) {
    std::vector<std::string> out;
    if (features & SIEVE_FEATURE_SUBGROUP_ARITHMETIC) out.push_back("subgroup_arithmetic");
    if (features & SIEVE_FEATURE_16BIT_STORAGE) out.push_back("16bit_storage");
    if (features & SIEVE_FEATURE_TIMELINE_SEMAPHORE) out.push_back("timeline_semaphore");
    if (features & SIEVE_FEATURE_VULKAN_MEMORY_MODEL) out.push_back("vulkan_memory_model");
    return out;
}

std::string vk_version_string(uint32_t v) {
    // VK_API_VERSION_MAJOR/MINOR/PATCH: bits 22..28, 12..21, 0..11.
    return std::to_string((v >> 22) & 0x7Fu) + "." + std::to_string((v >> 12) & 0x3FFu) + "." + std::to_string(v & 0xFFFu);
}

std::string bytes_text(uint64_t bytes) {
    std::string s = std::to_string(bytes) + " B";
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) s += " (" + std::to_string(bytes >> 20) + " MiB)";
    else if (bytes >= 1024 && bytes % 1024 == 0) s += " (" + std::to_string(bytes >> 10) + " KiB)";
    return s;
}

std::string cpu_device_warning(const sieve_device_info& info) {
    return std::string("'") + info.name +
           "' is a CPU implementation of Vulkan: its timings do not predict a GPU's";
}

} // namespace sieve_cli
