// The subcommands of `sieve`: each registers its flags on the app and runs from
// the parsed options, writing to out/err. Errors are thrown (CliError,
// sieve::Error) and turned into exit statuses by run_cli.
#pragma once

#include "options.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace sieve_cli {

struct DevicesOptions {
    bool json = false;
};
CLI::App* add_devices_command(CLI::App& app, DevicesOptions& o);
int run_devices(const DevicesOptions& o, std::ostream& out, std::ostream& err);

struct SampleOptions {
    std::string logits;
    int32_t vocab = 0;   // 0 = from the file (.npy); required for raw float32
    int32_t rows = 0;    // 0 = the file's rows
    SamplingOptions sampling;
    std::string device;
    bool dump_dist = false;
    int32_t logprobs = -1;  // --logprobs N: raw log-probabilities, the token's and the top N
    int32_t draws = 0;
    bool json = false;
    // --draft IDS: verify these draft tokens (sieve_verify) over the file's
    // n_draft + 1 positions instead of sampling each row.
    std::optional<std::string> draft;
    std::string draft_probs;  // --draft-probs FILE: the draft model's q ([n_draft] or [n_draft, vocab])
    std::string verify;       // --verify match|rejection ("" = match, or rejection with --draft-probs)
};
CLI::App* add_sample_command(CLI::App& app, SampleOptions& o);
int run_sample(const SampleOptions& o, std::ostream& out, std::ostream& err);

struct BenchOptions {
    bool json = false;
    int32_t tokens = 200;
    int32_t warmup = 10;
    int32_t rows = 0;    // 0 = 1 for the built-in suite, the file's rows for --logits
    std::string case_filter;
    bool list = false;
    std::string device;
    std::string logits;  // given: benchmark this one chain on these logits
    int32_t vocab = 0;
    SamplingOptions sampling = [] {  // llama.cpp's defaults with a fixed seed: runs are reproducible
        SamplingOptions s;
        s.seed = 1234;
        return s;
    }();
    double twin_budget_s = 1.5;  // time budget per case for the CPU twin
    std::string suite = "default";  // default | full | verify | tiny (hidden, for the tests)
    std::string report;             // --report FILE.html
    std::string json_out;           // --json-out FILE: the JSON document written to a file
    std::vector<std::string> compare;  // --compare A.json B.json
    std::string peer;                  // --peer llama[=PATH]: llama.cpp timed beside Sieve ("" = none)
    int32_t profile_tokens = 5;     // profiled tokens per case (GPU time per stage)
    int32_t calibration_iterations = 20;
    std::string input = "host";     // --input host|device: where the logits are when sampled
    std::string command_line;       // the command as typed, for the record (set by run_cli)
};
CLI::App* add_bench_command(CLI::App& app, BenchOptions& o);
int run_bench(const BenchOptions& o, std::ostream& out, std::ostream& err);

} // namespace sieve_cli
