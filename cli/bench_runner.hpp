// Measuring one benchmark case: the device (latency, plan figures, counters),
// a short profiled run (GPU time per stage), the calibration (floor), and the
// CPU twin in the same process.
#pragma once

#include "bench_device_input.hpp"
#include "bench_stats.hpp"
#include "bench_suite.hpp"
#include "llama_peer.hpp"
#include "options.hpp"

#include <sieve/sieve.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sieve_cli {

struct RunSettings {
    bool device_input = false;          // --input device: the logits in a device-local buffer (sieve_sample_vulkan)
    int32_t tokens = 200;
    int32_t warmup = 10;
    int32_t profile_tokens = 5;         // profiled tokens per case (timestamps cost ~50 us each on lavapipe)
    int32_t calibration_iterations = 20;
    double device_budget_s = 8.0;       // per case: the device stops early past this (after kMinTokens)
    double twin_budget_s = 1.5;         // per case, for the CPU twin
};
constexpr int kMinTokens = 10;          // a budget never cuts a measurement below this (nor below --tokens)
// With --peer, the device's tokens and llama.cpp's alternate in blocks of this
// many: both see the same load on the host, and neither runs right after the
// other on every token (token by token, llama.cpp's 20 ms full sorts of top-p
// left lavapipe's threads asleep and its caches cold before each of Sieve's
// tokens: its `top_p` measured 3 ms instead of 0.9).
constexpr int kPeerBlock = 10;
// The cases of a group are measured in rounds: each case's next kRoundTokens
// tokens, then the next case's, so a GPU whose clocks ramp with load favours
// none of them (the H200 gave one case p10 208 / median 864 us measured alone).
constexpr int kRoundTokens = kPeerBlock;
// On a CPU device without --peer: no clocks ramp there, but every switch to
// another case finds the caches holding the other case's rows and buffers
// (rounds of 10 measured lavapipe's cases 0-8% slower than back to back).
constexpr int kRoundTokensCpu = 50;
// Before a group's first round, back-to-back calls over its cases for at least
// this long (a GPU's clocks settle under load; a CPU device has none to settle).
constexpr double kClockWarmupGpuS = 0.2;
constexpr double kClockWarmupCpuS = 0.02;
// A group holds at most this many cases and this many bytes of logits: every
// case of a group keeps its chain, its logits and its device buffer alive.
constexpr size_t kGroupCases = 16;
constexpr double kGroupLogitBytes = 256.0 * 1024 * 1024;

struct StageTime {
    std::string stage;
    uint32_t level = 0;
    double gpu_us = 0;  // median over the profiled tokens
};

// The plan's estimate of a dispatch's GPU time on the reference GPU
// (sieve_chain_plan_estimate): an estimate, not a measurement.
struct StageEstimate {
    std::string stage;
    uint32_t level = 0;
    uint32_t workgroups = 0;
    bool indirect = false;
    double est_us = 0;
};

struct Calibration {
    double submit_us = 0, pass_us = 0, pass_total_us = 0;
    uint32_t iterations = 0;
};

// A verification case's own figures (BenchCase::verify): the device's
// latency per step is CaseResult::device, its counters CaseResult::delta.
struct VerifyFigures {
    std::string draft_probs;        // "none" (match) or "token" (rejection: q = 1, a greedy drafter's)
    int64_t accepted = 0;           // drafts accepted over the measured steps...
    int64_t offered = 0;            // ...of these
    LatencyStats baseline;          // per step: drafts + 1 sieve_sample calls, position by position
    sieve_counters baseline_delta{};  // over the baseline's measured steps
    double acceptance() const { return offered > 0 ? static_cast<double>(accepted) / static_cast<double>(offered) : 0.0; }
    std::optional<double> speedup(const LatencyStats& verify) const;  // baseline median / verify median
    // The step in baseline calls: verify median / (baseline median / (drafts +
    // 1)), what one step costs in ordinary sampling calls (issue 34: at most
    // 1.5 for 8 drafts).
    std::optional<double> step_in_calls(const LatencyStats& verify, int32_t drafts) const;
    // The baseline step's estimated GPU time on the reference GPU: drafts + 1
    // times the plan's of one call (an estimate, never a measurement; the
    // match mode only, where the plan is a GPU's: the step's own is the
    // case's `estimate`).
    std::optional<double> baseline_est_us;
};

struct CaseResult {
    BenchCase c;
    std::string status = "ok";  // "ok", "unsupported" (the device refused the chain), "failed"
    std::string message;
    int exit_code = 0;          // for "failed": the exit status it maps to

    LatencyStats device;
    bool device_cut = false;
    std::optional<std::pair<uint32_t, uint32_t>> plan;  // dispatches, row passes per token
    sieve_counters delta{};                              // over the measured tokens
    std::string input = "host";  // where the logits were: "host" (sieve_sample) or "device" (sieve_sample_vulkan)
    std::vector<StageTime> stages;
    int profiled_tokens = 0;
    std::optional<double> gpu_us;          // median over the profiled calls of their stages' sum
    // Where a profiled call's wall time went (sieve_chain_call_timing), each
    // figure the median over the profiled calls; none where the chain has no
    // device.
    std::optional<sieve_call_timing> call_timing;
    // The same calls as the bench timed them (call_us), and the library's own
    // time outside call_timing.wall_us (host_us: each call less its span from
    // the submit to the wait's return; the checks, the parameters and the
    // recording's look-up before, the tokens and the profile read after):
    // medians over the profiled calls.
    std::optional<double> call_us, host_us;
    std::vector<StageEstimate> estimate;   // the plan's, when it is a GPU's plan (else empty)
    std::optional<Calibration> calibration;
    std::string calibration_message;  // why there is none (CPU twin backend, a device limit...)

    std::string twin_status = "ok";   // "ok", "unsupported", "failed"
    std::string twin_message;
    LatencyStats twin;
    bool twin_cut = false;

    // --peer llama: llama.cpp on the same chain and logits, its tokens
    // alternating with the device's in blocks of kPeerBlock. "" without --peer; "ok"; "n/a" (llama.cpp
    // cannot run this chain, or the device did not run the case); "failed".
    std::string peer_status;
    std::string peer_message;
    LatencyStats peer;

    std::optional<VerifyFigures> verify;  // a verification case's (BenchCase::verify)

    // Derived (null when an input is missing).
    // Full-row passes per token and row: the plan's, or more when the rows
    // measured took more (top-p's cut past the candidate buffer: 3).
    std::optional<double> row_passes() const;
    std::optional<double> floor_us() const;
    std::optional<double> efficiency() const;  // floor / median
    std::optional<double> ratio() const;       // twin median / device median
    std::optional<double> peer_ratio() const;  // peer median / device median (> 1: Sieve is faster)
    std::optional<double> bytes_read() const;  // per token: row_passes() x rows x vocab x 4
    double bytes_written() const;              // per token: rows x 32 (one result record per row)
    std::optional<double> est_us() const;      // the estimate's sum over the plan's dispatches
};

// Runs one case on `device` and on `twin`. Never throws for what a case can
// cause (a refused chain, a failed row, a device error during the case): the
// result says it. The device's calibrations are cached per (rows, vocab).
class BenchRunner {
public:
    // `peer`: llama.cpp, timed with the device (null: no peer).
    // `vulkan`: the bench's own device, which `device` is a context on
    // (--input device); null otherwise.
    BenchRunner(const Device& device, const Device& twin, const RunSettings& settings,
                const LlamaLibrary* peer = nullptr, const BenchVulkan* vulkan = nullptr)
        : device_(device), twin_(twin), s_(settings), peer_(peer), vulkan_(vulkan) {}
    CaseResult run(const BenchCase& c) { return run_group({c}).front(); }
    // The cases measured together, their tokens alternating in rounds
    // (kRoundTokens); a verification case alone. Results in the cases' order.
    std::vector<CaseResult> run_group(const std::vector<BenchCase>& cases);

private:
    struct Live;
    const Device& device_;
    const Device& twin_;
    RunSettings s_;
    const LlamaLibrary* peer_;
    const BenchVulkan* vulkan_;
    std::shared_ptr<const Logits> logits_;  // the last built-in logits generated...
    std::string logits_key_;                // ...and their shape/vocab/rows
    std::map<std::pair<int32_t, int32_t>, std::pair<std::optional<Calibration>, std::string>> calibrations_;
    std::shared_ptr<const Logits> logits_for(const BenchCase& c);
    std::pair<std::optional<Calibration>, std::string> calibration_for(int32_t rows, int32_t vocab);
    CaseResult run_verify(const BenchCase& c);  // bench_verify.cpp
    // The plan's estimated GPU time per dispatch (sieve_chain_plan_estimate)
    // for rows x vocab, where the plan is a GPU's; else empty.
    std::vector<StageEstimate> gpu_estimate(const sieve::Chain& chain, int32_t rows, int32_t vocab) const;
    // Sets r.input; true, with r unsupported, where --input device has no
    // device buffers to read (the CPU twin backend).
    bool refuses_device_input(CaseResult& r) const;
    void start(Live& l);                         // builds, primes, uploads, warms up
    void finish(Live& l);                        // stages, calibration, the twin
    void warm_clocks(std::vector<std::unique_ptr<Live>>& live);
};

// Consecutive cases that run_group measures together (kGroupCases,
// kGroupLogitBytes; a verification case alone).
std::vector<std::vector<BenchCase>> case_groups(const std::vector<BenchCase>& cases);

// Latency of each call of `step` after `warmup` untimed ones, up to `steps`
// calls or, past kMinTokens, `budget_s` seconds; the chain's counters over
// the timed calls. (bench_runner.cpp)
struct Measurement {
    LatencyStats stats;
    bool cut = false;
    sieve_counters delta{};
};
sieve_counters counters_delta(const sieve_counters& a, const sieve_counters& b);
sieve_counters read_counters(const sieve::Chain& chain);
// A case that was not measured: its status ("failed": while sampling;
// "unsupported": the device refused it), message and exit status.
CaseResult& set_outcome(CaseResult& r, const std::string& status, const std::string& message, int exit_code);
// Throws CliError for the first row that could not be sampled.
void check_tokens(const std::vector<sieve_token>& tokens, const BenchCase& c);

} // namespace sieve_cli
