// `sieve bench --json`: the run as one document (docs/bench-schema.json), and
// reading such a document back (--compare).
#pragma once

#include "bench_runner.hpp"
#include "json_output.hpp"

#include <optional>
#include <string>
#include <vector>

namespace sieve_cli {

// What the run was: device, settings, warnings; the cases are added per result.
struct RunInfo {
    const Device* device = nullptr;
    const Device* twin = nullptr;
    const LlamaLibrary* peer = nullptr;  // --peer llama, else null
    RunSettings settings;
    std::string suite;        // "default", "full", "tiny", or "file"
    std::string case_filter;
    std::string logits_file;
    SamplingOptions sampling; // the run's flags (each suite chain overrides its samplers/truncation)
    std::vector<std::string> warnings;
    std::string command_line; // as typed
    std::string date_utc;     // ISO 8601
    double wall_time_s = 0;
    std::optional<double> load_start, load_end;  // host 1-minute load average before and after
};

constexpr const char* kBenchSchemaId = "sieve-bench/1";

Json case_json(const CaseResult& r);
Json run_json(const RunInfo& info, const std::vector<CaseResult>& results);

// Microseconds rounded to the nanosecond (no 34.184999999999995 in JSON).
double round_us(double v);

// The current time as "2026-11-22T20:33:00Z".
std::string utc_now_iso();

// Reads a `sieve bench --json` document. Throws CliError (bad input) for a
// missing or unreadable file, invalid JSON, or JSON without a "cases" array.
Json read_bench_json(const std::string& path);

} // namespace sieve_cli
