// The pipelines' statistics file (SIEVE_PIPELINE_STATS,
// engine/vulkan/pipeline_stats.hpp) a test points a context at: a path of
// this process's own, and the lines written there, one JSON object each.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace sieve_test {

inline std::string pipeline_stats_path(const std::string& stem) {
    return (std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(getpid()) + ".jsonl")).string();
}

inline std::vector<nlohmann::json> read_pipeline_stats(const std::string& path) {
    std::vector<nlohmann::json> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
}

} // namespace sieve_test
