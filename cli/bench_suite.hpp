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
    // > 0: penalties and DRY on over this many tokens of history (the windows
    // and the history capacity), the history pre-filled with case_history().
    int32_t history_last_n = 0;
    std::shared_ptr<const Logits> logits;  // set for --logits; built-in shapes are generated when run
    // A verification case (suite "verify"): "match" or "rejection" ("" = a
    // sampling case). Each step verifies `drafts` drafts for each of `rows`
    // sequences in one sieve_verify call (rows x (drafts + 1) logits rows).
    std::string verify;
    int32_t drafts = 0;
};

// "<chain>/<shape>/v<vocab>/b<rows>", after "verify_<mode>_d<drafts>/" for a
// verification case, e.g. "verify_match_d4/default/peaked/v151936/b16".
std::string case_name(const BenchCase& c);

// Suites: "default" (a few minutes on lavapipe), "full" (the cross product),
// "verify" (speculative decoding's verification: sieve_verify against
// sieve_sample position by position), "tiny" (hidden: a few small cases for
// the test suite). Throws CliError
// (usage) for another name. `sampling` is the run's flags (temperature, seed...);
// each chain sets its own samplers and truncation parameters on top of it.
std::vector<BenchCase> suite_cases(const std::string& suite, const SamplingOptions& sampling);

// The case of --logits FILE with the run's own sampling flags.
BenchCase file_case(std::shared_ptr<const Logits> logits, const SamplingOptions& sampling);

// Cases whose name contains `filter` (all when it is empty).
std::vector<BenchCase> filter_cases(const std::vector<BenchCase>& cases, const std::string& filter);

// The built-in logits of a case's shape (rows x vocab).
Logits shape_logits(const std::string& shape, int32_t rows, int32_t vocab);

// The accepted prefix of a history case, the same for every backend: per row,
// history_last_n generated-looking tokens (case_history), and the DRY sequence
// breakers every row uses.
struct CaseHistory {
    std::vector<std::vector<int32_t>> rows;
    std::vector<std::vector<int32_t>> breakers;
};

// Deterministic and portable (integer arithmetic only): text-like token
// sequences built from each row's own likely tokens (its top logits, drawn
// Zipf-like by rank), with sentence breaks (the breaker tokens) and verbatim
// repeats of earlier spans; each row's history ends inside such a repeat, so
// DRY has a match to penalize from the first token on.
CaseHistory case_history(const Logits& logits, int32_t history_last_n);

// The suite names --suite accepts (tiny is not advertised).
const char* suite_names_help();

} // namespace sieve_cli
