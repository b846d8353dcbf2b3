#include "options.hpp"

#include "chain_names.hpp"
#include "exit_codes.hpp"
#include "input_stream.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace sieve_cli {
namespace {

bool is_cpu(const std::string& s) {
    std::string l = s;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return l == "cpu";
}

CliError from_library(const sieve::Error& e, const std::string& what) {
    return CliError(exit_code_for(e.status()), what + ": " + e.what(), e.status());
}

} // namespace

void add_sampling_flags(CLI::App& cmd, SamplingOptions& o) {
    cmd.add_option("--samplers", o.samplers,
                   "samplers in order, llama.cpp names separated by ';' (default: llama.cpp's default chain; "
                   "adaptive_p, wherever named, runs last, as in llama.cpp)")
        ->type_name("NAMES");
    cmd.add_option("--sampling-seq,--sampler-seq", o.sampling_seq,
                   "the chain as llama.cpp's letters, e.g. edskypmxt (d dry, e penalties, k top_k, y typ_p, p top_p, "
                   "s top_n_sigma, m min_p, t temperature, x xtc, a adaptive_p; not with --samplers)")
        ->type_name("LETTERS");
    cmd.add_option("--temp", o.temp, "temperature (<= 0: greedy masking)")->capture_default_str();
    cmd.add_option("-s,--seed", o.seed, "RNG seed; 4294967295 or -1 = random (the seed used is reported)")
        ->check(in_range(-1, 0xFFFFFFFFll, "a seed is a 32-bit value, 0 to 4294967295 (or -1 = random)"))
        ->capture_default_str();
    cmd.add_option("--min-keep", o.min_keep, "minimum candidates every truncating sampler keeps")
        ->check(at_least(0, "a sampler keeps 0 or more candidates"))
        ->capture_default_str();
    cmd.add_option("--top-k", o.top_k, "top-k sampling (<= 0 = off)")->capture_default_str();
    cmd.add_option("--top-p", o.top_p, "top-p sampling (>= 1 = off)")->capture_default_str();
    cmd.add_option("--min-p", o.min_p, "min-p sampling (<= 0 = off)")->capture_default_str();
    cmd.add_option("--typical", o.typical_p, "locally typical sampling, parameter p (>= 1 = off)")
        ->capture_default_str();
    cmd.add_option("--top-n-sigma,--top-nsigma", o.top_n_sigma, "top-n-sigma sampling (<= 0 = off)")->capture_default_str();
    cmd.add_option("--xtc-probability", o.xtc_probability, "XTC probability (<= 0 = off)")->capture_default_str();
    cmd.add_option("--xtc-threshold", o.xtc_threshold, "XTC threshold (> 0.5 = off)")->capture_default_str();
    cmd.add_option("--dynatemp-range", o.dynatemp_range,
                   "dynamic temperature range: temperature in [temp - range, temp + range] (<= 0 = off)")
        ->capture_default_str();
    cmd.add_option("--dynatemp-exp", o.dynatemp_exponent, "dynamic temperature exponent")->capture_default_str();
    cmd.add_option("-l,--logit-bias", o.logit_bias,
                   "TOKEN_ID(+|-)BIAS added to that token's logit in every row, e.g. 15043+1 or 15043-inf "
                   "(repeatable)")
        ->take_last()
        ->allow_extra_args(false);
    // Penalties and DRY: they read each row's slot history (--history, then the
    // tokens the run draws). llama.cpp's -1 windows are refused by the library.
    cmd.add_option_function<int32_t>(
        "--repeat-last-n", [&o](const int32_t& n) { o.repeat_last_n = n; },
        "last N tokens of the history the penalties consider (default 64, at most the history capacity; 0 = off; "
        "llama.cpp's -1 is refused: give the window in tokens)");
    cmd.add_option("--repeat-penalty", o.repeat_penalty, "penalize repeated tokens (1.0 = off)")->capture_default_str();
    cmd.add_option("--frequency-penalty", o.frequency_penalty, "repeat alpha frequency penalty (0.0 = off)")
        ->capture_default_str();
    cmd.add_option("--presence-penalty", o.presence_penalty, "repeat alpha presence penalty (0.0 = off)")
        ->capture_default_str();
    cmd.add_option("--dry-multiplier", o.dry_multiplier, "DRY sampling multiplier (0.0 = off)")->capture_default_str();
    cmd.add_option("--dry-base", o.dry_base, "DRY sampling base value")->capture_default_str();
    cmd.add_option("--dry-allowed-length", o.dry_allowed_length, "allowed length for DRY sampling")
        ->capture_default_str();
    cmd.add_option_function<int32_t>(
        "--dry-penalty-last-n", [&o](const int32_t& n) { o.dry_penalty_last_n = n; },
        "DRY penalty for the last N tokens (0 = off; default: the history capacity; llama.cpp's -1 is refused)");
    cmd.add_option("--dry-sequence-breaker", o.dry_sequence_breakers,
                   "one DRY sequence breaker as comma-separated token ids, e.g. 13 or 29871,13 (repeatable; none by "
                   "default: Sieve has no vocabulary to tokenize llama.cpp's; 'none' drops those given before it)")
        ->allow_extra_args(false);
    cmd.add_option("--mirostat", o.mirostat,
                   "Mirostat sampling: 0 = off, 1 = Mirostat, 2 = Mirostat 2.0 (the chain becomes temperature;mirostat "
                   "or temperature;mirostat_v2, as llama.cpp's; not with --samplers)")
        ->check(in_range(0, 2, "mirostat is 0 (off), 1 (Mirostat) or 2 (Mirostat 2.0)"))
        ->capture_default_str();
    cmd.add_option("--mirostat-lr", o.mirostat_lr, "Mirostat learning rate, parameter eta")->capture_default_str();
    cmd.add_option("--mirostat-ent", o.mirostat_ent, "Mirostat target entropy, parameter tau")->capture_default_str();
    cmd.add_option_function<float>(
        "--adaptive-target", [&o](const float& v) { o.adaptive_target = v; },
        "adaptive-p target probability (< 0 = a plain draw; default: the library's)");
    cmd.add_option_function<float>("--adaptive-decay", [&o](const float& v) { o.adaptive_decay = v; },
                                   "adaptive-p decay (default: the library's)");
    cmd.add_option("--history", o.history,
                   "comma-separated token ids accepted into every row's history before sampling, oldest first (what "
                   "llama.cpp's accept would have seen: the prompt and the tokens generated so far)")
        ->type_name("IDS");
    cmd.add_option("--history-file", o.history_file,
                   "the --history ids from a file ('-' = stdin), separated by commas or white space (for histories "
                   "longer than a command line takes)")
        ->type_name("FILE");
    cmd.add_option_function<int32_t>(
        "--history-capacity", [&o](const int32_t& n) { o.history_capacity = n; },
        "tokens of history each row's slot keeps (default: the library's, raised to what --history or a last-n "
        "needs)")
        ->check(at_least(0, "a slot keeps 0 or more tokens of history"));
}

std::string effective_samplers(const SamplingOptions& o) {
    if (o.mirostat == 1) return "temperature;mirostat";
    if (o.mirostat == 2) return "temperature;mirostat_v2";
    if (!o.sampling_seq.empty()) {
        if (!o.samplers.empty())
            throw CliError(kExitUsage, "--samplers and --sampling-seq both name the chain: give one of them");
        return samplers_in_run_order(samplers_from_letters(o.sampling_seq));
    }
    return samplers_in_run_order(o.samplers);
}

std::vector<int32_t> parse_token_ids(const std::string& flag, const std::string& text) {
    auto bad = [&](const std::string& why) {
        return CliError(kExitUsage, flag + " '" + text + "': " + why + " (expected comma-separated token ids, e.g. 13,29871)");
    };
    std::vector<int32_t> ids;
    size_t start = 0;
    for (;;) {
        const size_t comma = text.find(',', start);
        std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const size_t first = item.find_first_not_of(" \t");
        const size_t last = item.find_last_not_of(" \t");
        item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
        const std::string which = "token " + std::to_string(ids.size());
        if (item.empty()) throw bad(text.find_first_not_of(" \t") == std::string::npos ? "no token id" : which + " is empty");
        if (item[0] == '-' && item.size() > 1 && std::isdigit(static_cast<unsigned char>(item[1])))
            throw bad(which + " (" + item + ") is negative");
        if (item.find_first_not_of("0123456789") != std::string::npos)
            throw bad(which + " ('" + item + "') is not a token id");
        errno = 0;
        const unsigned long long v = std::strtoull(item.c_str(), nullptr, 10);
        if (errno != 0 || v > static_cast<unsigned long long>(INT32_MAX)) throw bad(which + " (" + item + ") is out of range");
        ids.push_back(static_cast<int32_t>(v));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return ids;
}

LogitBiasEntry parse_logit_bias(const std::string& text) {
    // llama.cpp (common/arg.cpp): `ss >> key && ss >> sign && getline(ss, value)`,
    // sign '+' or '-', bias = stof(value) * (sign == '-' ? -1 : 1).
    auto bad = [&](const std::string& why) {
        return CliError(kExitUsage, "--logit-bias '" + text + "': " + why + " (expected TOKEN_ID(+|-)BIAS, e.g. 15043+1 or 15043-inf)");
    };
    size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t digits_start = i;
    if (i < text.size() && text[i] == '-') ++i;  // a negative id parses (and is refused by the library)
    const size_t id_start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == id_start) throw bad("no token id");
    errno = 0;
    const long long id = std::strtoll(text.substr(digits_start, i - digits_start).c_str(), nullptr, 10);
    if (errno != 0 || id < INT32_MIN || id > INT32_MAX) throw bad("token id out of range");
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= text.size() || (text[i] != '+' && text[i] != '-')) throw bad("no '+' or '-' after the token id");
    const float sign = text[i] == '-' ? -1.0f : 1.0f;
    const std::string value = text.substr(i + 1);
    char* end = nullptr;
    errno = 0;
    const float magnitude = std::strtof(value.c_str(), &end);
    if (value.empty() || end == value.c_str()) throw bad("no bias value");
    while (*end && std::isspace(static_cast<unsigned char>(*end))) ++end;
    if (*end) throw bad("trailing characters after the bias");
    // strtof turns a value past float's range into inf (ERANGE): refused either
    // sign, as "+1e39" is; only a written "inf" is infinite.
    if (errno == ERANGE && std::isinf(magnitude)) throw bad("the bias is beyond float range (|bias| <= 3.4e38; -inf bans)");
    const float bias = sign * magnitude;
    if (std::isnan(bias)) throw bad("the bias is NaN");
    if (bias == INFINITY) throw bad("a +inf bias is refused (finite or -inf only)");
    return LogitBiasEntry{static_cast<int32_t>(id), bias};
}

namespace {

// An integer flag's value and whether it is in [lo, hi]: "" when it is,
// else what is wrong with it followed by what the flag takes.
std::string check_integer(const std::string& text, int64_t lo, int64_t hi, const std::string& what) {
    if (text.empty()) return "an empty value; " + what;
    size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::out_of_range&) {
        return text + ": " + what;
    } catch (const std::exception&) {
        return "'" + text + "' is not an integer; " + what;
    }
    if (used != text.size()) return "'" + text + "' is not an integer; " + what;
    return v < lo || v > hi ? text + ": " + what : std::string();
}

// What a value flag takes, in words, from CLI11's type name.
std::string value_words(const CLI::Option& opt) {
    const std::string type = opt.get_type_name();
    if (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0) return "an integer";
    if (type.rfind("FLOAT", 0) == 0) return "a number";
    if (type == "NAMES") return "sampler names separated by ';'";
    if (type == "LETTERS") return "sampler letters";
    if (type == "IDS") return "comma-separated token ids";
    if (type == "FILE") return "a file ('-' = stdin)";
    if (type == "PATH") return "a file path";
    return type.empty() || type == "TEXT" ? std::string("a value") : type;
}

// Refuses "" and, for numbers, text that is not one (CLI11 would read "" as 0).
CLI::Validator well_formed(const std::string& words) {
    return CLI::Validator(
        [words](std::string& text) -> std::string {
            if (text.empty()) return "an empty value; it takes " + words;
            if (words != "an integer" && words != "a number") return {};
            const char* begin = text.c_str();
            char* end = nullptr;
            errno = 0;
            if (words == "an integer") (void)std::strtoll(begin, &end, 10);
            else (void)std::strtod(begin, &end);
            while (end && *end && std::isspace(static_cast<unsigned char>(*end))) ++end;
            if (end == begin || (end && *end)) return "'" + text + "' is not " + words;
            return {};
        },
        "");
}

} // namespace

CLI::Validator at_least(int64_t min, const std::string& what) {
    return CLI::Validator(
        [min, what](std::string& text) { return check_integer(text, min, INT64_MAX, what); },
        min == 0 ? "NONNEGATIVE" : min == 1 ? "POSITIVE" : "INT >= " + std::to_string(min));
}

CLI::Validator in_range(int64_t lo, int64_t hi, const std::string& what) {
    return CLI::Validator([lo, hi, what](std::string& text) { return check_integer(text, lo, hi, what); },
                          "INT in [" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

CLI::Validator above_zero(const std::string& what) {
    return CLI::Validator(
        [what](std::string& text) -> std::string {
            if (text.empty()) return "an empty value; " + what;
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || *end) return "'" + text + "' is not a number; " + what;
            return v > 0 && std::isfinite(v) ? std::string() : text + ": " + what;
        },
        "POSITIVE");
}

void check_flag_values(CLI::App& cmd, const std::vector<std::string>& may_be_empty) {
    for (CLI::Option* opt : cmd.get_options()) {
        if (opt->get_type_size() == 0) continue;  // a flag without a value
        const std::string name = opt->get_name();
        if (name == "--help" || std::find(may_be_empty.begin(), may_be_empty.end(), name) != may_be_empty.end()) continue;
        opt->check(well_formed(value_words(*opt)));
    }
}

void add_device_flag(CLI::App& cmd, std::string& device) {
    cmd.add_option("--device", device,
                   "device: index or name substring (see `sieve devices`), or 'cpu' for the CPU twin "
                   "(default: SIEVE_DEVICE, else the best device)")
        ->type_name("N|NAME|cpu");
}

std::string samplers_label(const SamplingOptions& o) {
    const std::string s = effective_samplers(o);
    return s.empty() ? std::string("llama.cpp default") : s;
}

Device open_cpu_twin() { return open_device("cpu"); }

Device open_device(const std::string& device) {
    // SIEVE_DEVICE is read here rather than left to the library, so that
    // SIEVE_DEVICE=cpu picks the CPU twin as --device cpu does, and a bad value
    // is said to come from the environment.
    std::string chosen = device;
    bool from_env = false;
    if (chosen.empty()) {
        const char* env = std::getenv("SIEVE_DEVICE");
        if (env && *env) {
            chosen = env;
            from_env = true;
        }
    }
    Device d;
    d.cpu_twin = is_cpu(chosen);
    sieve::ContextOptions opts;
    if (d.cpu_twin) opts.backend(SIEVE_BACKEND_CPU);
    else if (!chosen.empty()) opts.device(chosen.c_str());
    try {
        d.context = std::make_unique<sieve::Context>(opts);
    } catch (const sieve::Error& e) {
        std::string which = d.cpu_twin ? "the CPU twin" : chosen.empty() ? "the default device" : "device '" + chosen + "'";
        if (from_env) which += " (SIEVE_DEVICE='" + chosen + "', from the environment)";
        throw from_library(e, "cannot open " + which);
    }
    try {
        d.info = d.context->device_info();
        d.has_info = true;
    } catch (const sieve::Error&) {
        d.has_info = false; // the CPU twin may have no device to describe
    }
    if (d.cpu_twin) d.label = "cpu (CPU twin)";
    else d.label = d.has_info ? std::string(d.info.name) : std::string("unknown device");
    return d;
}

namespace {

// --history-file: ids separated by commas or white space, at most 16 MiB.
std::vector<int32_t> read_history_file(const std::string& path) {
    InputStream in(path);
    constexpr uint64_t kMaxBytes = uint64_t(16) << 20;  // 65536 ids of 11 characters fit many times over
    if (in.size() && *in.size() > kMaxBytes)
        throw CliError(kExitBadInput, "--history-file " + in.name() + ": " + std::to_string(*in.size()) +
                                          " bytes, beyond the limit of " + std::to_string(kMaxBytes));
    std::vector<uint8_t> bytes;
    in.read(bytes, kMaxBytes + 1);
    if (bytes.size() > kMaxBytes)
        throw CliError(kExitBadInput, "--history-file " + in.name() + ": more than " + std::to_string(kMaxBytes) +
                                          " bytes, beyond the limit");
    // Commas and white space separate ids (empty items are skipped); each id
    // is then checked as --history's are.
    std::string list;
    std::string item;
    auto flush = [&] {
        if (!item.empty()) list += (list.empty() ? "" : ",") + item;
        item.clear();
    };
    for (uint8_t b : bytes) {
        if (b == ',' || std::isspace(b)) flush();
        else item += static_cast<char>(b);
    }
    flush();
    if (list.empty()) return {};
    return parse_token_ids("--history-file " + in.name(), list);
}

} // namespace

sieve::Chain make_chain(const Device& device, const SamplingOptions& o, int32_t rows, int32_t vocab,
                        ChainSetup* setup) {
    // Everything the CLI itself can refuse, before the device does any work.
    if (o.mirostat != 0 && (!o.samplers.empty() || !o.sampling_seq.empty()))
        throw CliError(kExitUsage, "--mirostat " + std::to_string(o.mirostat) + " makes the chain '" +
                                       effective_samplers(o) + "' (as llama.cpp's common sampler does); it cannot "
                                       "be combined with " + (o.samplers.empty() ? "--sampling-seq" : "--samplers"));
    if (!o.history.empty() && !o.history_file.empty())
        throw CliError(kExitUsage, "--history and --history-file both give the history: give one of them");
    ChainSetup local;
    ChainSetup& s = setup ? *setup : local;
    s.bias.clear();
    std::vector<int32_t> bias_tokens;
    std::vector<float> bias_values;
    for (const std::string& text : o.logit_bias) {
        const LogitBiasEntry e = parse_logit_bias(text);
        s.bias.push_back(e);
        bias_tokens.push_back(e.token);
        bias_values.push_back(e.bias);
    }
    s.breakers.clear();
    // llama.cpp's "none" drops the breakers given before it.
    for (const std::string& text : o.dry_sequence_breakers) {
        if (text == "none") s.breakers.clear();
        else s.breakers.push_back(parse_token_ids("--dry-sequence-breaker", text));
    }
    if (!o.history_file.empty()) s.history = read_history_file(o.history_file);
    else s.history = o.history.empty() ? std::vector<int32_t>{} : parse_token_ids("--history", o.history);

    sieve::ChainDesc desc;
    const std::string samplers = effective_samplers(o);
    s.chain = chain_that_runs(samplers);
    if (!samplers.empty()) desc.samplers(samplers);
    else desc.raw.samplers = nullptr; // the library's (llama.cpp's) default chain
    desc.capacity(rows, vocab).temperature(o.temp).min_keep(o.min_keep);
    desc.seed(o.seed < 0 ? SIEVE_SEED_RANDOM : static_cast<uint32_t>(o.seed));
    if (o.history_capacity) desc.history_capacity(*o.history_capacity);

    // What the history must hold: the --history tokens and the windows asked
    // for (a negative window is the library's to refuse, below).
    int32_t needed = static_cast<int32_t>(std::min<size_t>(s.history.size(), INT32_MAX));
    std::string needed_by = "the --history of " + std::to_string(s.history.size()) + " tokens";
    auto need = [&](int32_t n, const std::string& flag) {
        if (n > needed) {
            needed = n;
            needed_by = flag + " " + std::to_string(n);
        }
    };
    if (o.repeat_last_n) need(*o.repeat_last_n, "--repeat-last-n");
    if (o.dry_penalty_last_n) need(*o.dry_penalty_last_n, "--dry-penalty-last-n");
    // No sampler reads the history: the slots keep what the flags give, not
    // the library's default (rows x 1024 tokens of device memory).
    if (!o.history_capacity && !reads_history(s.chain)) desc.history_capacity(std::max(needed, 1));

    auto build = [&](const std::string& raised) {
        try {
            return sieve::Chain(*device.context, desc);
        } catch (const sieve::Error& e) {
            const std::string what = "cannot build the chain '" + samplers_label(o) + "' for " + std::to_string(rows) +
                                     " x " + std::to_string(vocab);
            // A history capacity the library refuses is the flags' doing.
            if ((o.history_capacity || !raised.empty()) &&
                (e.status() == SIEVE_ERROR_CAPACITY || e.status() == SIEVE_ERROR_INVALID_ARGUMENT))
                throw CliError(kExitUsage,
                               what + (raised.empty() ? " with --history-capacity " + std::to_string(desc.raw.history_capacity)
                                                      : raised) +
                                   ": " + e.what(),
                               e.status());
            CliError err = from_library(e, what);
            if (e.status() == SIEVE_ERROR_UNSUPPORTED_SAMPLER && samplers.empty() && !device.cpu_twin)
                throw CliError(err.exit_code(),
                               std::string(err.what()) +
                                   " (llama.cpp's default chain needs samplers the GPU engine does not run yet; "
                                   "use --device cpu, or choose a chain with --samplers, e.g. --samplers "
                                   "\"temperature;dist\")",
                               e.status());
            if (e.status() == SIEVE_ERROR_DEVICE_LIMIT || e.status() == SIEVE_ERROR_OUT_OF_MEMORY)
                throw CliError(err.exit_code(),
                               std::string(err.what()) +
                                   (reads_history(s.chain)
                                        ? " (each row's slot keeps its history on the device: fewer --rows or a "
                                          "smaller --history-capacity fit)"
                                        : " (fewer --rows fit)"),
                               e.status());
            throw err;
        }
    };
    sieve::Chain chain = build("");
    // DRY's window defaults to the history capacity: the library's default
    // capacity, read back rather than restated.
    auto get = [&](sieve_param p) {
        try {
            return chain.get_param(p, 0);
        } catch (const sieve::Error& e) {
            throw from_library(e, "cannot read the chain's parameters");
        }
    };
    s.history_capacity = static_cast<int32_t>(get(SIEVE_PARAM_DRY_PENALTY_LAST_N));
    if (!o.history_capacity && needed > s.history_capacity) {
        desc.history_capacity(needed);
        { sieve::Chain smaller = std::move(chain); }  // its device memory goes before the larger chain's comes
        chain = build(" with a history capacity raised to " + std::to_string(needed) + " for " + needed_by);
        s.history_capacity = needed;
    }

    // Per-row parameters (every row): llama.cpp's flags.
    struct Param {
        const char* flag;
        sieve_param param;
        double value;
    };
    std::vector<Param> params = {
        {"--top-k", SIEVE_PARAM_TOP_K, static_cast<double>(o.top_k)},
        {"--top-p", SIEVE_PARAM_TOP_P, o.top_p},
        {"--min-p", SIEVE_PARAM_MIN_P, o.min_p},
        {"--typical", SIEVE_PARAM_TYPICAL_P, o.typical_p},
        {"--top-n-sigma", SIEVE_PARAM_TOP_N_SIGMA, o.top_n_sigma},
        {"--xtc-probability", SIEVE_PARAM_XTC_PROBABILITY, o.xtc_probability},
        {"--xtc-threshold", SIEVE_PARAM_XTC_THRESHOLD, o.xtc_threshold},
        {"--dynatemp-range", SIEVE_PARAM_DYNATEMP_RANGE, o.dynatemp_range},
        {"--dynatemp-exp", SIEVE_PARAM_DYNATEMP_EXPONENT, o.dynatemp_exponent},
        {"--repeat-penalty", SIEVE_PARAM_REPEAT_PENALTY, o.repeat_penalty},
        {"--frequency-penalty", SIEVE_PARAM_FREQUENCY_PENALTY, o.frequency_penalty},
        {"--presence-penalty", SIEVE_PARAM_PRESENCE_PENALTY, o.presence_penalty},
        {"--dry-multiplier", SIEVE_PARAM_DRY_MULTIPLIER, o.dry_multiplier},
        {"--dry-base", SIEVE_PARAM_DRY_BASE, o.dry_base},
        {"--dry-allowed-length", SIEVE_PARAM_DRY_ALLOWED_LENGTH, static_cast<double>(o.dry_allowed_length)},
        {"--mirostat-ent", SIEVE_PARAM_MIROSTAT_TAU, o.mirostat_ent},
        {"--mirostat-lr", SIEVE_PARAM_MIROSTAT_ETA, o.mirostat_lr},
    };
    if (o.repeat_last_n) params.push_back({"--repeat-last-n", SIEVE_PARAM_REPEAT_LAST_N, static_cast<double>(*o.repeat_last_n)});
    if (o.dry_penalty_last_n)
        params.push_back({"--dry-penalty-last-n", SIEVE_PARAM_DRY_PENALTY_LAST_N, static_cast<double>(*o.dry_penalty_last_n)});
    if (o.adaptive_target) params.push_back({"--adaptive-target", SIEVE_PARAM_ADAPTIVE_TARGET, *o.adaptive_target});
    if (o.adaptive_decay) params.push_back({"--adaptive-decay", SIEVE_PARAM_ADAPTIVE_DECAY, *o.adaptive_decay});
    for (const Param& p : params) {
        try {
            chain.set(p.param, p.value);
        } catch (const sieve::Error& e) {
            // A flag's value the library refuses: a usage error with its message.
            throw CliError(kExitUsage, std::string("cannot set the sampling parameters: ") + p.flag + ": " + e.what(),
                           e.status());
        }
    }
    // A flag the library refuses (token outside the vocab, or not on this
    // device) is a usage error.
    if (!bias_tokens.empty()) {
        try {
            chain.set_logit_bias(bias_tokens, bias_values);
        } catch (const sieve::Error& e) {
            throw CliError(kExitUsage, std::string("--logit-bias: ") + e.what(), e.status());
        }
    }
    if (!s.breakers.empty()) {
        try {
            chain.set_dry_breakers(s.breakers);
        } catch (const sieve::Error& e) {
            throw CliError(kExitUsage, std::string("--dry-sequence-breaker: ") + e.what(), e.status());
        }
    }
    if (!s.history.empty()) {
        for (int32_t r = 0; r < rows; ++r) {
            try {
                chain.accept(r, s.history);
            } catch (const sieve::Error& e) {
                throw CliError(kExitUsage, std::string("--history: ") + e.what(), e.status());
            }
        }
    }
    return chain;
}

} // namespace sieve_cli
