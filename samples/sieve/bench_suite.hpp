// The cases `sieve bench` runs: the built-in suites (named chains x logits
// shapes x vocabularies x rows), or one chain on the logits of a file.
#pragma once

#include "logits_source.hpp"
#include "options.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sieve_cli {

struct BenchCase {
    std::string name;      // "<chain>/<shape>/v<vocab>/b<rows>", e.g. "default/zipf/v151936/b1"
    std::string chain;     // the chain's label, e.g. "default", "top_k1000"
    std::string shape;     // "zipf", "flat", "peaked", or "file"
    SamplingOptions sampling;
    int32_t vocab = 0;
    int32_t rows = 0;
    // The case needs penalties and DRY switched on (repeat penalty, DRY
    // multiplier, a history): see bench_suite.cpp, penalties_unsupported().
    bool penalties = false;
    std::shared_ptr<const Logits> logits;  // set for --logits; built-in shapes are generated when run
};

// Suites: "default" (a few minutes on lavapipe), "full" (the cross product),
// "tiny" (hidden: a few small cases for the test suite). Throws CliError
// (usage) for another name. `sampling` is the run's flags (temperature, seed...);
// each chain sets its own samplers and truncation parameters on top of it.
std::vector<BenchCase> suite_cases(const std::string& suite, const SamplingOptions& sampling);

// The case of --logits FILE with the run's own sampling flags.
BenchCase file_case(std::shared_ptr<const Logits> logits, const SamplingOptions& sampling);

// Cases whose name contains `filter` (all when it is empty).
std::vector<BenchCase> filter_cases(const std::vector<BenchCase>& cases, const std::string& filter);

// The built-in logits of a case's shape (rows x vocab).
Logits shape_logits(const std::string& shape, int32_t rows, int32_t vocab);

// Why a penalties case cannot run with this library, or "" once it can.
std::string penalties_unsupported();

// The suite names --suite accepts (tiny is not advertised).
const char* suite_names_help();

} // namespace sieve_cli
