#include "vulkan/pipeline_stats.hpp"

#include "vulkan/pipelines.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace sieve {
namespace {

// A JSON string: quotes, backslashes and control characters escaped.
std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string statistic_value(const VkPipelineExecutableStatisticKHR& s) {
    switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return std::to_string(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return std::to_string(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%.17g", s.value.f64);
        return buf;
    }
    default: return "null";
    }
}

} // namespace

std::string pipeline_stats_path() {
    const char* env = std::getenv("SIEVE_PIPELINE_STATS");
    return env ? env : "";
}

std::string pipeline_stats_json(const PipelineStatsLine& line) {
    std::string j = "{\"device\":" + json_string(line.device) + ",\"shader\":" + json_string(line.shader) +
                    ",\"stage\":" + json_string(line.stage);
    if (const Specialization* s = line.spec) {
        j += ",\"workgroup\":" + std::to_string(s->workgroup_size) + ",\"capacity\":" + std::to_string(s->capacity) +
             ",\"specialization\":{\"inputs\":" + std::to_string(static_cast<uint32_t>(s->inputs)) +
             ",\"chain_ops\":" + std::to_string(s->chain_ops) + ",\"selector\":" + std::to_string(s->selector) +
             ",\"collect_variant\":" + std::to_string(s->collect_variant) +
             ",\"texel_read\":" + std::to_string(s->texel_read) +
             ",\"wide_divisions\":" + std::to_string(s->wide_divisions) +
             ",\"wide_direct\":" + std::to_string(s->wide_direct) +
             ",\"wide_rows_x4\":" + std::to_string(s->wide_rows_x4) +
             ",\"ingest_kind\":" + std::to_string(s->ingest_kind) + "}";
    }
    char assumed[32];
    std::snprintf(assumed, sizeof(assumed), "%g", line.assumed_resident_per_unit);
    j += std::string(",\"assumed_resident_per_unit\":") + (line.assumed_resident_per_unit > 0 ? assumed : "null");
    j += ",\"warps_per_unit\":" + (line.warps_per_unit ? std::to_string(line.warps_per_unit) : std::string("null"));
    if (!line.absent.empty()) return j + ",\"executables\":null,\"absent\":" + json_string(line.absent) + "}";
    j += ",\"executables\":[";
    for (size_t e = 0; e < line.executables.size(); ++e) {
        const PipelineExecutable& x = line.executables[e];
        j += std::string(e ? "," : "") + "{\"name\":" + json_string(x.name) + ",\"statistics\":{";
        for (size_t i = 0; i < x.statistics.size(); ++i)
            j += std::string(i ? "," : "") + json_string(x.statistics[i].name) + ":" + x.statistics[i].value;
        j += "}}";
    }
    return j + "]}";
}

std::vector<PipelineExecutable> read_pipeline_statistics(const Device& device, VkPipeline pipeline) {
    const auto& vk = device.vk();
    VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
    info.pipeline = pipeline;
    uint32_t n = 0;
    if (vk.vkGetPipelineExecutablePropertiesKHR(device.handle(), &info, &n, nullptr) != VK_SUCCESS) return {};
    std::vector<VkPipelineExecutablePropertiesKHR> props(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
    if (vk.vkGetPipelineExecutablePropertiesKHR(device.handle(), &info, &n, props.data()) < VK_SUCCESS) return {};
    std::vector<PipelineExecutable> out;
    for (uint32_t e = 0; e < n; ++e) {
        VkPipelineExecutableInfoKHR which{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
        which.pipeline = pipeline;
        which.executableIndex = e;
        uint32_t m = 0;
        if (vk.vkGetPipelineExecutableStatisticsKHR(device.handle(), &which, &m, nullptr) != VK_SUCCESS) continue;
        std::vector<VkPipelineExecutableStatisticKHR> stats(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
        if (vk.vkGetPipelineExecutableStatisticsKHR(device.handle(), &which, &m, stats.data()) < VK_SUCCESS) continue;
        PipelineExecutable x{props[e].name, {}};
        for (uint32_t i = 0; i < m; ++i) x.statistics.push_back({stats[i].name, statistic_value(stats[i])});
        out.push_back(std::move(x));
    }
    return out;
}

void append_pipeline_stats(const std::string& path, const PipelineStatsLine& line) {
    static std::mutex mutex;
    if (path.empty()) return;
    const std::string text = pipeline_stats_json(line) + "\n";
    std::lock_guard<std::mutex> lock(mutex);
    if (std::FILE* f = std::fopen(path.c_str(), "a")) {
        std::fputs(text.c_str(), f);
        std::fclose(f);
    }
}

} // namespace sieve
