// `sieve bench`: per-token latency of sampling chains on the chosen device and on
// the CPU twin, in one run. Built-in suite: "greedy" and "temperature;dist" at
// vocab 32000, 151936 and 262144 on deterministic LM-like (Zipf) logits; or one
// chain on the logits of a file (--logits) with the given sampling flags.
#include "commands.hpp"

#include "bench_stats.hpp"
#include "device_text.hpp"
#include "exit_codes.hpp"
#include "json_output.hpp"
#include "logits_source.hpp"

#include <sieve/sieve.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace sieve_cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int32_t kSuiteVocabs[] = {32000, 151936, 262144};
// The suite's chains: the case label, the samplers ("" = llama.cpp's default
// chain) and the top-p they run with (issue 3's cases: top-p 0.9 without top-k).
struct SuiteChain {
    const char* label;
    const char* samplers;
    float top_p;
};
constexpr SuiteChain kSuiteChains[] = {
    {"greedy", "greedy", 0.95f},
    {"temperature;dist", "temperature;dist", 0.95f},
    {"default", "", 0.95f},
    {"top_p;temperature", "top_p;temperature", 0.9f},
    {"min_p;temperature", "min_p;temperature", 0.95f},
};
constexpr int kMinTokens = 10;          // a time budget never cuts a measurement below this
constexpr double kDeviceBudgetS = 8.0;  // per case, on the device

struct Case {
    std::string name;
    SamplingOptions sampling;
    int32_t vocab = 0;
    int32_t rows = 0;
    std::shared_ptr<const Logits> logits;  // shared by the cases of one shape
};

struct Measurement {
    LatencyStats stats;
    bool budget_cut = false;
    sieve_counters delta{};  // counters over the measured tokens
};

std::string case_name(const std::string& chain, int32_t vocab, int32_t rows) {
    return chain + "/v" + std::to_string(vocab) + "/b" + std::to_string(rows);
}

std::vector<Case> build_cases(const BenchOptions& o) {
    std::vector<Case> cases;
    if (!o.logits.empty()) {
        auto l = std::make_shared<Logits>(load_logits(o.logits, o.vocab, o.rows));
        Case c;
        c.sampling = o.sampling;
        c.vocab = l->vocab;
        c.rows = l->rows;
        c.name = case_name(samplers_label(o.sampling), c.vocab, c.rows);
        c.logits = l;
        cases.push_back(c);
        return cases;
    }
    std::vector<SuiteChain> chains;
    if (!o.sampling.samplers.empty()) chains.push_back({o.sampling.samplers.c_str(), o.sampling.samplers.c_str(), o.sampling.top_p});
    else chains.assign(std::begin(kSuiteChains), std::end(kSuiteChains));
    for (int32_t vocab : kSuiteVocabs) {
        for (const SuiteChain& chain : chains) {
            Case c;
            c.sampling = o.sampling;
            c.sampling.samplers = chain.samplers;
            c.sampling.top_p = chain.top_p;
            c.vocab = vocab;
            c.rows = o.rows > 0 ? o.rows : 1;
            c.name = case_name(chain.label, vocab, c.rows);
            cases.push_back(c);
        }
    }
    return cases;
}

sieve_counters counters_delta(const sieve_counters& a, const sieve_counters& b) {
    return {b.submits - a.submits, b.recordings - a.recordings, b.dispatches - a.dispatches,
            b.allocations - a.allocations, b.row_passes - a.row_passes, b.cpu_fallback_rows - a.cpu_fallback_rows};
}

sieve_counters read_counters(const sieve::Chain& chain) {
    try {
        return chain.counters();
    } catch (const sieve::Error&) {
        return sieve_counters{};
    }
}

void check_tokens(const std::vector<sieve_token>& tokens, const Case& c) {
    for (size_t r = 0; r < tokens.size(); ++r) {
        if (tokens[r].status != SIEVE_OK)
            throw CliError(exit_code_for(tokens[r].status),
                           c.name + ": row " + std::to_string(r) + " could not be sampled: " +
                               sieve_status_name(tokens[r].status) + ": " + sieve_last_error(),
                           tokens[r].status);
    }
}

// Times each sample call (one token for every row) after `warmup` untimed ones;
// stops early, after at least kMinTokens, once `budget_s` seconds are spent.
Measurement measure(sieve::Chain& chain, const Case& c, int32_t warmup, int32_t tokens, double budget_s) {
    const float* data = c.logits->data.data();
    for (int32_t i = 0; i < warmup; ++i) check_tokens(chain.sample(data, c.rows, c.vocab), c);
    Measurement m;
    std::vector<double> us;
    us.reserve(static_cast<size_t>(tokens));
    const sieve_counters before = read_counters(chain);
    const Clock::time_point start = Clock::now();
    for (int32_t i = 0; i < tokens; ++i) {
        const Clock::time_point t0 = Clock::now();
        std::vector<sieve_token> out = chain.sample(data, c.rows, c.vocab);
        const Clock::time_point t1 = Clock::now();
        check_tokens(out, c);
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        if (i + 1 >= kMinTokens && i + 1 < tokens && std::chrono::duration<double>(t1 - start).count() > budget_s) {
            m.budget_cut = true;
            break;
        }
    }
    m.delta = counters_delta(before, read_counters(chain));
    m.stats = latency_stats(std::move(us));
    return m;
}

double per_token(uint64_t total, int count) { return count > 0 ? static_cast<double>(total) / count : 0.0; }

// Microseconds to the nanosecond for JSON (no 34.184999999999995).
double us(double v) { return std::round(v * 1000.0) / 1000.0; }

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string pad(const std::string& s, size_t width, bool right) {
    if (s.size() >= width) return s;
    return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

} // namespace

CLI::App* add_bench_command(CLI::App& app, BenchOptions& o) {
    CLI::App* cmd = app.add_subcommand(
        "bench", "per-token sampling latency on a device and on the CPU twin (built-in suite, or one chain on --logits)");
    cmd->add_flag("--json", o.json, "print one JSON document");
    cmd->add_option("--tokens", o.tokens, "measured tokens per case, after warm-up")
        ->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--warmup", o.warmup, "untimed warm-up tokens per case")
        ->check(CLI::NonNegativeNumber)->capture_default_str();
    cmd->add_option("--rows", o.rows, "rows sampled per call (built-in suite: default 1), or rows of --logits (a one-row file is repeated)")
        ->check(CLI::Range(1, 4096));
    cmd->add_option("--case", o.case_filter, "run only the cases whose name contains this substring");
    cmd->add_flag("--list", o.list, "list the cases and exit");
    add_device_flag(*cmd, o.device);
    cmd->add_option("--logits", o.logits, "benchmark one chain on the logits of this file (.npy or raw float32)");
    cmd->add_option("--vocab", o.vocab, "vocabulary size of a raw float32 --logits file")->check(CLI::PositiveNumber);
    cmd->add_option("--twin-budget", o.twin_budget_s, "seconds per case the CPU twin may take before it stops early")
        ->check(CLI::PositiveNumber)->capture_default_str();
    add_sampling_flags(*cmd, o.sampling);
    return cmd;
}

int run_bench(const BenchOptions& o_in, std::ostream& out, std::ostream& err) {
    BenchOptions o = o_in;
    std::vector<Case> all = build_cases(o);
    std::vector<Case> cases;
    for (const Case& c : all)
        if (o.case_filter.empty() || c.name.find(o.case_filter) != std::string::npos) cases.push_back(c);
    if (o.list) {
        if (o.json) {
            Json names = Json::array();
            for (const Case& c : cases) names.push_back(c.name);
            print_json(out, Json{{"cases", names}});
        } else {
            for (const Case& c : cases) out << c.name << "\n";
        }
        return kExitOk;
    }
    if (cases.empty()) {
        std::string names;
        for (const Case& c : all) names += (names.empty() ? "" : ", ") + c.name;
        throw CliError(kExitUsage, "no case matches --case '" + o.case_filter + "' (cases: " + names + ")");
    }

    Device device = open_device(o.device);
    Device twin = open_cpu_twin();
    std::vector<std::string> warnings;
    if (device.has_info && !device.cpu_twin && device.info.type == SIEVE_DEVICE_CPU) warnings.push_back(cpu_device_warning(device.info));
    if (device.cpu_twin) warnings.push_back("--device cpu: the device measured is the CPU twin itself");
    if (!o.json) {
        out << "sieve bench: device '" << device.label << "'";
        if (device.has_info && !device.cpu_twin)
            out << " (" << device_type_name(device.info.type) << ", Vulkan " << vk_version_string(device.info.api_version) << ")";
        out << " vs the CPU twin\n";
        for (const std::string& w : warnings) out << "warning: " << w << "\n";
        out << "latency per token in microseconds (one sample call for all rows): " << o.tokens << " tokens after "
            << o.warmup << " warm-up; the twin stops after " << fixed(o.twin_budget_s, 1) << " s per case (at least "
            << kMinTokens << " tokens)\n";
        out << pad("case", 30, false) << pad("vocab", 8, true) << pad("rows", 6, true) << pad("median", 10, true)
            << pad("p10", 10, true) << pad("p90", 10, true) << pad("twin_med", 11, true) << pad("twin/dev", 10, true)
            << pad("disp", 6, true) << pad("passes", 8, true) << "\n";
        out.flush();
    }

    // Built-in logits, generated once per shape.
    std::map<std::pair<int32_t, int32_t>, std::shared_ptr<const Logits>> generated;
    Json json_cases = Json::array();
    std::vector<std::string> twin_short;
    for (Case& c : cases) {
        if (!c.logits) {
            auto& slot = generated[{c.rows, c.vocab}];
            if (!slot) slot = std::make_shared<Logits>(zipf_logits(c.rows, c.vocab));
            c.logits = slot;
        }
        sieve::Chain chain = make_chain(device, c.sampling, c.rows, c.vocab);
        uint32_t plan_dispatches = 0, plan_passes = 0;
        bool have_plan = true;
        try {
            std::tie(plan_dispatches, plan_passes) = chain.plan_figures(c.rows, c.vocab);
        } catch (const sieve::Error&) {
            have_plan = false;
        }
        const Measurement dev = measure(chain, c, o.warmup, o.tokens, kDeviceBudgetS);
        sieve::Chain twin_chain = make_chain(twin, c.sampling, c.rows, c.vocab);
        const Measurement tw = measure(twin_chain, c, std::min(o.warmup, 2), o.tokens, o.twin_budget_s);
        if (tw.budget_cut) twin_short.push_back(c.name + " (" + std::to_string(tw.stats.count) + " tokens)");
        const double ratio = dev.stats.median > 0 ? tw.stats.median / dev.stats.median : 0.0;
        const int n = dev.stats.count;

        Json j;
        j["name"] = c.name;
        j["samplers"] = samplers_label(c.sampling);
        j["vocab"] = c.vocab;
        j["rows"] = c.rows;
        j["tokens"] = n;
        j["median_us"] = us(dev.stats.median);
        j["p10_us"] = us(dev.stats.p10);
        j["p90_us"] = us(dev.stats.p90);
        j["min_us"] = us(dev.stats.min);
        j["twin_tokens"] = tw.stats.count;
        j["twin_median_us"] = us(tw.stats.median);
        j["twin_p10_us"] = us(tw.stats.p10);
        j["twin_p90_us"] = us(tw.stats.p90);
        j["ratio"] = std::round(ratio * 10000.0) / 10000.0;  // twin_median_us / median_us: > 1 means the device is faster than the twin
        j["dispatches"] = have_plan ? Json(plan_dispatches) : Json(nullptr);
        j["row_passes"] = have_plan ? Json(plan_passes) : Json(nullptr);
        j["measured_dispatches"] = per_token(dev.delta.dispatches, n);
        j["measured_row_passes"] = per_token(dev.delta.row_passes, n);
        j["submits"] = per_token(dev.delta.submits, n);
        j["steady_recordings"] = dev.delta.recordings;
        j["steady_allocations"] = dev.delta.allocations;
        j["cpu_fallback_rows"] = per_token(dev.delta.cpu_fallback_rows, n);
        json_cases.push_back(j);

        if (!o.json) {
            out << pad(c.name, 30, false) << pad(std::to_string(c.vocab), 8, true) << pad(std::to_string(c.rows), 6, true)
                << pad(fixed(dev.stats.median, 1), 10, true) << pad(fixed(dev.stats.p10, 1), 10, true)
                << pad(fixed(dev.stats.p90, 1), 10, true) << pad(fixed(tw.stats.median, 1), 11, true)
                << pad(fixed(ratio, 2), 10, true) << pad(have_plan ? std::to_string(plan_dispatches) : "?", 6, true)
                << pad(have_plan ? std::to_string(plan_passes) : "?", 8, true) << "\n";
            if (dev.delta.recordings || dev.delta.allocations)
                out << "  note: " << dev.delta.recordings << " recordings and " << dev.delta.allocations
                    << " allocations during the measured tokens\n";
            if (dev.delta.cpu_fallback_rows)
                out << "  note: " << fixed(per_token(dev.delta.cpu_fallback_rows, n), 2)
                    << " rows per token went to the CPU twin (survivors past the candidate buffer)\n";
            if (dev.budget_cut) out << "  note: the device stopped after " << n << " tokens (" << kDeviceBudgetS << " s budget)\n";
            out.flush();
        }
    }
    if (!twin_short.empty()) {
        std::string list;
        for (const std::string& s : twin_short) list += (list.empty() ? "" : ", ") + s;
        warnings.push_back("the CPU twin measured fewer tokens to keep the run short: " + list);
        if (!o.json) out << "note: the CPU twin measured fewer tokens to keep the run short: " << list << "\n";
    }
    if (!o.json) out << "twin/dev = twin median / device median (> 1: the device is faster); disp, passes = dispatches and full-row passes per token (plan)\n";

    if (o.json) {
        Json doc;
        doc["device"] = device.label;
        doc["backend"] = device.cpu_twin ? "cpu" : "vulkan";
        if (device.has_info && !device.cpu_twin) doc["device_type"] = device_type_name(device.info.type);
        doc["twin"] = twin.label;
        doc["tokens"] = o.tokens;
        doc["warmup"] = o.warmup;
        doc["unit"] = "us per token (one sample call for all rows)";
        doc["warnings"] = warnings;
        doc["cases"] = std::move(json_cases);
        print_json(out, doc);
        for (const std::string& w : warnings) err << "warning: " << w << "\n";
    }
    return kExitOk;
}

} // namespace sieve_cli
