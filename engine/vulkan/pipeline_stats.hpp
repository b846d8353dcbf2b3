// The compiled pipelines' statistics, for the estimate's residency
// (docs/architecture/estimate.md: workgroups resident a compute unit, which
// the H200's stage times could not tell apart from their serial work). Where
// the environment variable SIEVE_PIPELINE_STATS names a file when a context
// makes its device, every compute pipeline the context builds appends one
// JSON line to it (a context made without it writes none, whatever the
// variable says later): the shader variant, its workgroup size and
// specialization, the stage it runs and the residency the estimate assumes
// for that stage, and the driver's statistics of its compiled code
// (VK_KHR_pipeline_executable_properties; NVIDIA's hold the register count),
// or why there are none. tools/pipeline_stats/residency.py turns NVIDIA's
// into workgroups resident an SM (scripts/gpu_check.sh runs it).
#pragma once

#include "vulkan/vk_device.hpp"

#include <string>
#include <vector>

namespace sieve {

struct Specialization;

// The file SIEVE_PIPELINE_STATS names, or empty (none wanted).
std::string pipeline_stats_path();

// One statistic of a compiled executable: its name and its value as JSON
// text (a number, true or false).
struct PipelineStatistic {
    std::string name;
    std::string value;
};

struct PipelineExecutable {
    std::string name;  // the driver's (a compute pipeline has one)
    std::vector<PipelineStatistic> statistics;
};

// What a line says of one pipeline. `executables` is empty and `absent` says
// why where the driver gave no statistics.
struct PipelineStatsLine {
    std::string device;
    std::string shader;  // the embedded variant (sieve_shaders.hpp's name)
    std::string stage;   // what the engine runs it for (a plan stage's name, ingest, calibrate, ...)
    double assumed_resident_per_unit = 0;  // the estimate's, 0 where it estimates no such stage
    uint32_t warps_per_unit = 0;           // 0: unknown
    const Specialization* spec = nullptr;
    std::vector<PipelineExecutable> executables;
    std::string absent;
};

// The line, one JSON object, without its newline.
std::string pipeline_stats_json(const PipelineStatsLine& line);

// The statistics of `pipeline`, built with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR
// on a device that captures them.
std::vector<PipelineExecutable> read_pipeline_statistics(const Device& device, VkPipeline pipeline);

// Appends the line to `path` (the file its device was made with: opened
// for each line, contexts of one run may name different ones). Nothing
// where it cannot be opened: a diagnostic never fails a call.
void append_pipeline_stats(const std::string& path, const PipelineStatsLine& line);

} // namespace sieve
