// Flags shared by `sample` and `bench` (device choice, sampling flags) and what
// they turn into: a context and a chain.
#pragma once

#include <CLI/CLI.hpp>
#include <sieve/sieve.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sieve_cli {

struct SamplingOptions {
    std::string samplers;            // "" = llama.cpp's default chain (the library's)
    std::string sampling_seq;        // --sampling-seq letters ("" = not given; not with --samplers)
    float temp = 0.8f;               // llama.cpp default
    int64_t seed = SIEVE_SEED_RANDOM; // 4294967295 (or -1) = random; the seed used is reported
    int32_t min_keep = 0;
    // The truncating samplers, llama.cpp's flags and defaults (common_params_sampling).
    int32_t top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    float typical_p = 1.0f;          // --typical
    float top_n_sigma = -1.0f;
    float xtc_probability = 0.0f;
    float xtc_threshold = 0.1f;
    float dynatemp_range = 0.0f;
    float dynatemp_exponent = 1.0f;  // --dynatemp-exp
    // --logit-bias TOKEN(+|-)BIAS, repeatable, as llama.cpp parses it; applied to every row.
    std::vector<std::string> logit_bias;
    // The samplers that read the slot's history (penalties, DRY), llama.cpp's
    // flags and defaults; applied to every row.
    std::optional<int32_t> repeat_last_n;  // unset = the library's: llama.cpp's 64, at most the history capacity
    float repeat_penalty = 1.0f;
    float frequency_penalty = 0.0f;
    float presence_penalty = 0.0f;
    float dry_multiplier = 0.0f;
    float dry_base = 1.75f;
    int32_t dry_allowed_length = 2;
    std::optional<int32_t> dry_penalty_last_n;     // unset = the library's: the history capacity
    std::vector<std::string> dry_sequence_breakers; // each "ID,ID,...": one breaker sequence (none by default)
    // --mirostat 1|2: the chain becomes "temperature;mirostat" / "temperature;mirostat_v2"
    // (llama.cpp's common sampler: logit bias -> temperature -> mirostat).
    int32_t mirostat = 0;
    float mirostat_lr = 0.1f;   // eta
    float mirostat_ent = 5.0f;  // tau
    std::optional<float> adaptive_target;  // unset = the library's default
    std::optional<float> adaptive_decay;   // unset = the library's default
    // --history "ID,ID,...": accepted into every row's slot before sampling, oldest first.
    std::string history;
    std::string history_file;  // --history-file PATH: the same ids from a file (commas or white space)
    // unset = the library's default, raised to what --history or a last-n needs.
    std::optional<int32_t> history_capacity;
};

// The chain a run builds: --samplers (or --sampling-seq's letters) in the
// order common_sampler_init runs them, "temperature;mirostat(_v2)" for
// --mirostat 1|2, or "" (the library's, llama.cpp's default chain). Throws
// CliError (usage) for --samplers with --sampling-seq or a letter it does not know.
std::string effective_samplers(const SamplingOptions& o);

// Comma-separated token ids ("15043,29889"), as --history and
// --dry-sequence-breaker take them. Throws CliError (usage) naming `flag` for an
// empty list or element, a non-numeric or negative id, or one beyond int32.
// Ids beyond the vocabulary are the library's to refuse.
std::vector<int32_t> parse_token_ids(const std::string& flag, const std::string& text);

// One --logit-bias value, "15043+1", "15043-inf", "7-0.5": llama.cpp's
// TOKEN_ID(+/-)BIAS. Throws CliError (usage) for anything else, NaN and +inf.
struct LogitBiasEntry {
    int32_t token;
    float bias;
};
LogitBiasEntry parse_logit_bias(const std::string& text);

// --samplers, --temp, --seed, --min-keep, --top-k, --top-p, --min-p, --typical,
// --top-n-sigma, --xtc-probability, --xtc-threshold, --dynatemp-range,
// --dynatemp-exp, --logit-bias, --repeat-last-n, --repeat-penalty,
// --frequency-penalty, --presence-penalty, --dry-multiplier, --dry-base,
// --dry-allowed-length, --dry-penalty-last-n, --dry-sequence-breaker, --mirostat,
// --mirostat-lr, --mirostat-ent, --adaptive-target, --adaptive-decay with
// llama.cpp's names and defaults; --history, --history-capacity.
void add_sampling_flags(CLI::App& cmd, SamplingOptions& o);
// --device N|NAME|cpu
void add_device_flag(CLI::App& cmd, std::string& device);

// Checks of an integer flag that say what the value may be when it is refused
// ("--vocab: -4: a vocabulary holds at least 1 token"), where CLI11's own
// (PositiveNumber, Range) answer with a range of doubles. `what` completes
// the sentence, e.g. "a vocabulary holds at least 1 token". The help keeps
// CLI11's words for the type (POSITIVE, NONNEGATIVE, INT in [lo - hi]).
CLI::Validator at_least(int64_t min, const std::string& what);
CLI::Validator in_range(int64_t lo, int64_t hi, const std::string& what);
// A real number above 0 ("--twin-budget: 0: the twin's budget is ...").
CLI::Validator above_zero(const std::string& what);

// effective_samplers(), or "llama.cpp default" when that is "".
std::string samplers_label(const SamplingOptions& o);

// Run after every flag of a command is added: a value flag refuses an empty or
// malformed value (exit 2, naming the flag and what it takes), except those in
// `may_be_empty`.
void check_flag_values(CLI::App& cmd, const std::vector<std::string>& may_be_empty = {});

// A context on the chosen device: "cpu" selects the CPU twin backend, "" the
// library's choice (SIEVE_DEVICE, else automatic), anything else is passed on as
// the device string (index or name substring).
struct Device {
    std::unique_ptr<sieve::Context> context;
    bool cpu_twin = false;
    bool has_info = false;
    sieve_device_info info{};
    std::string label;   // the device name, or "cpu (CPU twin)"
};
Device open_device(const std::string& device);
Device open_cpu_twin();

// What make_chain set up beyond the flags' values.
struct ChainSetup {
    std::vector<std::string> chain;             // the samplers that run, canonical names, final sampler included
    int32_t history_capacity = 0;               // the chain's (the library's default, raised, or --history-capacity)
    std::vector<LogitBiasEntry> bias;           // --logit-bias, as set on every row
    std::vector<int32_t> history;               // accepted into every row's slot
    std::vector<std::vector<int32_t>> breakers; // DRY sequence breakers of every row
};

// Builds the chain for rows x vocab, sets every row's parameters and DRY
// breakers, and accepts --history into every row's slot. A chain without
// penalties or DRY keeps only the history its flags need (a slot's history is
// rows x capacity of device memory: 60000 rows at the default 1024 tokens do
// not fit a device that 60000 rows of temperature;dist fit). A flag the library
// refuses is a usage error carrying the library's status and message; other
// library failures become CliError with the mapped exit code and, for sampler
// errors, a hint about what is implemented.
sieve::Chain make_chain(const Device& device, const SamplingOptions& o, int32_t rows, int32_t vocab,
                        ChainSetup* setup = nullptr);

} // namespace sieve_cli
