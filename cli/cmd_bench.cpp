// `sieve bench`: the headless benchmark runner. A built-in suite of named cases
// (bench_suite.cpp), or one chain on the logits of a file; each case measured on
// the chosen device and on the CPU twin in the same run, with the device's
// calibration (bench_runner.cpp). Output: a table, --json / --json-out
// (docs/bench-schema.json), --report FILE.html; --compare A.json B.json.
#include "commands.hpp"

#include "bench_compare.hpp"
#include "bench_host.hpp"
#include "bench_json.hpp"
#include "bench_report_html.hpp"
#include "bench_runner.hpp"
#include "bench_suite.hpp"
#include "bench_device_input.hpp"
#include "device_text.hpp"
#include "exit_codes.hpp"
#include "json_output.hpp"
#include "llama_peer.hpp"
#include "logits_source.hpp"
#include "text_format.hpp"

#include <sieve/sieve.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace sieve_cli {
namespace {

std::string opt_fixed(const std::optional<double>& v, int decimals) { return v ? fixed(*v, decimals) : "-"; }

// Opens an output file before the run, so a bad path fails in a second, not
// after minutes of measuring. Exit 3: the path the user gave cannot be used.
std::ofstream open_output(const std::string& path, const char* flag) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw CliError(kExitBadInput, std::string("cannot write ") + flag + " '" + path + "': " + std::strerror(errno));
    return f;
}

void write_output(std::ofstream& f, const std::string& path, const char* flag, const std::string& text) {
    f << text;
    f.flush();
    if (!f) throw CliError(kExitBadInput, std::string("cannot write ") + flag + " '" + path + "': write failed");
}

// The cases this run measures: the file's chain, or the suite's cases with
// --samplers replacing the suite's chains and --rows its row counts.
std::vector<BenchCase> build_cases(const BenchOptions& o) {
    if (!o.logits.empty())
        return {file_case(std::make_shared<Logits>(load_logits(o.logits, o.vocab, o.rows)), o.sampling)};
    std::vector<BenchCase> suite = suite_cases(o.suite, o.sampling);
    std::vector<BenchCase> out;
    std::set<std::string> names;
    // --samplers or --mirostat: the user's chain replaces the suite's (the
    // history cases, which are the suite's chains with a history, are left out).
    const bool own_chain = !effective_samplers(o.sampling).empty();
    for (BenchCase c : suite) {
        if (own_chain) {
            if (c.history_last_n > 0) continue;
            c.chain = samplers_label(o.sampling);
            c.sampling = o.sampling;
            c.history_last_n = 0;
        }
        if (o.rows > 0) c.rows = o.rows;
        c.name = case_name(c);
        if (names.insert(c.name).second) out.push_back(c);
    }
    return out;
}

void print_header(std::ostream& out, const Device& device, const std::vector<std::string>& warnings, const BenchOptions& o,
                  const std::vector<BenchCase>& cases, const LlamaLibrary* peer) {
    const size_t n_cases = cases.size();
    out << "sieve bench: device '" << device.label << "'";
    if (device.has_info && !device.cpu_twin)
        out << " (" << device_type_name(device.info.type) << ", driver " << device.info.driver << ", Vulkan "
            << vk_version_string(device.info.api_version) << ", profile " << sieve_profile_name(device.info.profile)
            << ")";
    out << " vs the CPU twin" << (peer ? " and llama.cpp" : "") << ", " << n_cases << " case(s)\n";
    if (peer)
        out << "peer: llama.cpp " << peer->version << " (" << peer->path << "), on the CPU, in blocks of " << kPeerBlock << " tokens alternating with "
            << "the device's: fill the candidates from the row, llama_sampler_apply (the chain with its dist), "
            << "llama_sampler_accept; one chain per row\n";
    for (const std::string& w : warnings) out << "warning: " << w << "\n";
    out << "logits: " << (o.input == "device" ? "in a device-local buffer (sieve_sample_vulkan)" : "from host memory (sieve_sample, the upload included)")
        << "; measured tokens in rounds of " << kRoundTokens << " (" << kRoundTokensCpu
        << " on a CPU device without --peer) alternating between the cases, after "
        << fixed(kClockWarmupGpuS * 1000, 0) << " ms of back-to-back calls on a GPU\n";
    out << "latency per token in us (one sample call for all rows): " << o.tokens << " tokens after " << o.warmup
        << " warm-up (a case stops early after 8 s on the device, " << fixed(o.twin_budget_s, 1)
        << " s on the twin, never before " << kMinTokens << " tokens); GPU stages from a separate run of "
        << o.profile_tokens
        << " profiled tokens (on a GPU after " << fixed(kClockWarmupGpuS * 1000, 0)
        << " ms of back-to-back calls; timestamps add their own cost)\n";
    const std::string vk = o.input == "device" ? "_vulkan" : "";
    if (std::any_of(cases.begin(), cases.end(), [](const BenchCase& c) { return !c.verify.empty(); }))
        out << "verify_* cases: per step (one sieve_verify" << vk
            << " call for every sequence's drafts; a token above is a step), against drafts + 1 sieve_sample" << vk
            << " calls per step, alternating in blocks of "
            << kPeerBlock << " steps; no profiled tokens (docs/bench.md, \"Speculative decoding\")\n";
    out << pad("case", 34, false) << pad("median", 10, true) << pad("p10", 10, true) << pad("p90", 10, true)
        << pad("twin", 10, true) << pad("twin/dev", 9, true) << pad("disp", 5, true) << pad("passes", 7, true)
        << pad("MB/tok", 8, true) << pad("floor", 9, true) << pad("eff", 6, true) << pad("submit", 8, true)
        << pad("gpu", 9, true) << pad("est", 9, true);
    if (peer) out << pad("llama", 10, true) << pad("llama/dev", 10, true);
    out << "\n";
    out.flush();
}

// A per-token figure: an integer as is, else two decimals.
std::string figure(double v) { return v == std::floor(v) ? std::to_string(static_cast<long long>(v)) : fixed(v, 2); }

// A verification case's line: acceptance, the baseline, figures per step.
void print_verify(std::ostream& out, const CaseResult& r) {
    const VerifyFigures& f = *r.verify;
    const int n = r.device.count, nb = f.baseline.count;
    auto per = [](uint64_t total, int count) { return count ? figure(static_cast<double>(total) / count) : "-"; };
    out << "    verify " << r.c.verify << ", " << r.c.drafts << " drafts x " << r.c.rows << " sequence(s)"
        << (f.draft_probs == "token" ? " (q = 1 per draft)" : "") << ": acceptance " << fixed(100.0 * f.acceptance(), 1)
        << "% (" << f.accepted << " of " << f.offered << ")\n";
    const std::string vk = r.input == "device" ? "_vulkan" : "";
    out << "      per step: sieve_verify" << vk << " " << fixed(r.device.median, 1) << " us, " << per(r.delta.submits, n)
        << " submits, " << per(r.delta.dispatches, n) << " dispatches, " << per(r.delta.row_passes, n)
        << " row passes; " << r.c.drafts + 1 << " x sieve_sample" << vk << " " << (nb ? fixed(f.baseline.median, 1) : "-")
        << " us (p10 " << (nb ? fixed(f.baseline.p10, 1) : "-") << ", p90 " << (nb ? fixed(f.baseline.p90, 1) : "-")
        << "), " << per(f.baseline_delta.submits, nb) << " submits, " << per(f.baseline_delta.dispatches, nb)
        << " dispatches, " << per(f.baseline_delta.row_passes, nb) << " row passes; baseline / verify "
        << opt_fixed(f.speedup(r.device), 2) << "; the step in baseline calls "
        << opt_fixed(f.step_in_calls(r.device, r.c.drafts), 2) << "\n";
    if (f.baseline_est_us && r.est_us())
        out << "      ESTIMATED on the reference GPU (the plans, not a measurement): the step " << fixed(*r.est_us(), 1)
            << " us, the baseline step " << fixed(*f.baseline_est_us, 1) << " us, the step in baseline calls "
            << fixed(*r.est_us() * (r.c.drafts + 1) / *f.baseline_est_us, 2) << "\n";
}

void print_row(std::ostream& out, const CaseResult& r) {
    if (r.status != "ok") {
        out << pad(r.c.name, 34, false) << "  " << r.status << ": " << r.message << "\n";
        out.flush();
        return;
    }
    const auto mb = r.bytes_read();
    out << pad(r.c.name, 34, false) << pad(fixed(r.device.median, 1), 10, true) << pad(fixed(r.device.p10, 1), 10, true)
        << pad(fixed(r.device.p90, 1), 10, true) << pad(r.twin.count ? fixed(r.twin.median, 1) : "-", 10, true)
        << pad(opt_fixed(r.ratio(), 2), 9, true)
        << pad(r.device.count ? figure(static_cast<double>(r.delta.dispatches) / r.device.count) : "-", 5, true)
        << pad(r.row_passes() ? figure(*r.row_passes()) : "-", 7, true)
        << pad(mb ? fixed((*mb + r.bytes_written()) / 1e6, 2) : "-", 8, true) << pad(opt_fixed(r.floor_us(), 1), 9, true)
        << pad(opt_fixed(r.efficiency(), 2), 6, true)
        << pad(r.calibration ? fixed(r.calibration->submit_us, 1) : "-", 8, true) << pad(opt_fixed(r.gpu_us, 1), 9, true)
        << pad(opt_fixed(r.est_us(), 1), 9, true);
    if (!r.peer_status.empty())
        out << pad(r.peer_status == "ok" ? fixed(r.peer.median, 1) : r.peer_status, 10, true)
            << pad(opt_fixed(r.peer_ratio(), 2), 10, true);
    out << "\n";
    if (!r.stages.empty()) {
        out << "    gpu stages:";
        const bool matched = r.estimate.size() == r.stages.size();
        for (size_t i = 0; i < r.stages.size(); ++i) {
            const StageTime& s = r.stages[i];
            out << " " << s.stage << (s.level ? " L" + std::to_string(s.level) : "") << " " << fixed(s.gpu_us, 1);
            if (matched && r.estimate[i].stage == s.stage) out << " (est " << fixed(r.estimate[i].est_us, 1) << ")";
        }
        out << " us\n";
    }
    if (r.call_timing) {
        const sieve_call_timing& t = *r.call_timing;
        out << "    profiled call: " << fixed(t.wall_us, 1) << " us = ";
        if (t.calibrated) out << fixed(t.submit_to_gpu_us, 1) << " submit to GPU + ";
        out << fixed(t.gpu_span_us, 1) << " on the GPU";
        if (t.calibrated) out << " + " << fixed(t.gpu_to_host_us, 1) << " GPU to host";
        if (r.host_us) out << "; " << fixed(*r.host_us, 1) << " us more in the library, outside the submit and wait";
        out << "\n";
    }
    if (r.verify) print_verify(out, r);
    if (r.twin_status != "ok") out << "    twin " << r.twin_status << ": " << r.twin_message << "\n";
    if (!r.peer_status.empty() && r.peer_status != "ok")
        out << "    llama.cpp " << r.peer_status << ": " << r.peer_message << "\n";
    if (r.delta.recordings || r.delta.allocations)
        out << "    note: " << r.delta.recordings << " recordings and " << r.delta.allocations
            << " allocations during the measured tokens\n";
    if (r.delta.cpu_fallback_rows && r.device.count)
        out << "    note: " << fixed(static_cast<double>(r.delta.cpu_fallback_rows) / r.device.count, 2)
            << " rows per token went to the CPU twin (survivors past the candidate buffer)\n";
    if (r.device_cut) out << "    note: the device stopped after " << r.device.count << " tokens (time budget)\n";
    out.flush();
}

// Warnings that say when the figures deserve less trust: a busy host, or
// cases whose latencies spread widely (p90 above 1.5 x the median).
void add_noise_warnings(RunInfo& info, const std::vector<CaseResult>& results) {
    const unsigned threads = std::thread::hardware_concurrency();
    const double load = std::max(info.load_start.value_or(0), info.load_end.value_or(0));
    if (threads > 0 && load >= 0.75 * threads)
        info.warnings.push_back("the host was busy (load average " + fixed(load, 2) + " on " + std::to_string(threads) +
                                " hardware threads): other processes competed with the measurement");
    std::string noisy;
    int n = 0;
    for (const CaseResult& r : results)
        if (r.status == "ok" && r.device.count && r.device.p90 > 1.5 * r.device.median) {
            if (n < 5) noisy += (noisy.empty() ? "" : ", ") + r.c.name;
            ++n;
        }
    if (n > 0)
        info.warnings.push_back(std::to_string(n) + " case(s) with p90 above 1.5 x the median (" + noisy +
                                (n > 5 ? ", ..." : "") + "): their timings are noisy");
}

// Progress on the terminal only: a line on stderr that rewrites itself.
struct Progress {
    bool on;
    explicit Progress(std::ostream& err) : on(&err == &std::cerr && isatty(STDERR_FILENO)) {}
    void show(size_t i, size_t n, const std::string& name) {
        if (on) std::cerr << "\r\033[K[" << i + 1 << "/" << n << "] " << name << std::flush;
    }
    void done() {
        if (on) std::cerr << "\r\033[K" << std::flush;
    }
};

} // namespace

CLI::App* add_bench_command(CLI::App& app, BenchOptions& o) {
    CLI::App* cmd = app.add_subcommand(
        "bench", "benchmark sampling chains on a device against the CPU twin (built-in suite, or one chain on --logits)");
    cmd->add_flag("--json", o.json, "print one JSON document on stdout (docs/bench-schema.json)");
    cmd->add_option("--json-out", o.json_out, "also write the JSON document to this file (with --compare: the comparison)")
        ->type_name("PATH");
    cmd->add_option("--report", o.report, "write a self-contained HTML report (plots, table) to this file (not with --compare)")
        ->type_name("PATH");
    cmd->add_option("--compare", o.compare, "compare two `sieve bench --json` files: per-case ratio B/A of the median")
        ->expected(2)
        ->type_name("A.json B.json");
    cmd->add_option("--peer", o.peer,
                    "also time llama.cpp on each case (its libllama loaded at run time): llama = the one "
                    "scripts/fetch_llama.sh fetched into the build, llama=PATH = that libllama")
        ->type_name("llama[=PATH]");
    cmd->add_option("--suite", o.suite, std::string("built-in suite: ") + suite_names_help())->capture_default_str();
    cmd->add_option("--tokens", o.tokens, "measured tokens per case, after warm-up")
        ->check(at_least(1, "a case measures at least 1 token"))->capture_default_str();
    cmd->add_option("--warmup", o.warmup, "untimed warm-up tokens per case")
        ->check(at_least(0, "a case warms up with 0 or more tokens"))->capture_default_str();
    cmd->add_option("--rows", o.rows, "rows sampled per call (replaces the suite's), or rows of --logits (a one-row file is repeated)")
        ->check(in_range(1, 4096, "a bench call samples 1 to 4096 rows"));
    cmd->add_option("--case", o.case_filter, "run only the cases whose name contains this substring");
    cmd->add_flag("--list", o.list, "list the cases and exit");
    add_device_flag(*cmd, o.device);
    cmd->add_option("--logits", o.logits, "benchmark one chain on the logits of this file (.npy or raw float32; '-' = stdin)")
        ->type_name("FILE");
    cmd->add_option("--vocab", o.vocab, "vocabulary size of a raw float32 --logits file")
        ->check(at_least(1, "a vocabulary holds at least 1 token"));
    cmd->add_option("--twin-budget", o.twin_budget_s, "seconds per case the CPU twin may take before it stops early")
        ->check(above_zero("the twin's budget is a positive number of seconds"))->capture_default_str();
    cmd->add_option("--profile-tokens", o.profile_tokens, "profiled tokens per case for the GPU time per stage (0 = none)")
        ->check(at_least(0, "a case profiles 0 or more tokens"))->capture_default_str();
    cmd->add_option("--calibration-iterations", o.calibration_iterations, "submits per calibration measurement")
        ->check(at_least(1, "a calibration measures at least 1 submit"))->capture_default_str();
    cmd->add_option("--input", o.input,
                    "where the logits are: host (sieve_sample, the upload included) or device (already in a "
                    "device-local VkBuffer: sieve_sample_vulkan, as an inference engine calls it)")
        ->check(CLI::IsMember({"host", "device"}))->capture_default_str();
    add_sampling_flags(*cmd, o.sampling);
    check_flag_values(*cmd);
    return cmd;
}

int run_bench(const BenchOptions& o, std::ostream& out, std::ostream& err) {
    if (!o.compare.empty()) {
        if (o.compare.size() != 2) throw CliError(kExitUsage, "--compare takes two files: A.json B.json");
        if (!o.report.empty())
            throw CliError(kExitUsage, "--report writes a run's report and cannot be combined with --compare (the "
                                       "comparison goes to stdout, or to --json-out as JSON)");
        std::ofstream json_file;
        if (!o.json_out.empty()) json_file = open_output(o.json_out, "--json-out");
        const Comparison c = compare_runs(o.compare[0], o.compare[1], o.case_filter);
        if (o.json) print_json(out, c.doc);
        else print_comparison(out, c);
        if (json_file.is_open()) write_output(json_file, o.json_out, "--json-out", c.doc.dump(2) + "\n");
        if (o.json)
            for (const std::string& w : c.warnings) err << "warning: " << w << "\n";
        return kExitOk;
    }
    const auto start = std::chrono::steady_clock::now();
    const std::vector<BenchCase> all = build_cases(o);
    const std::vector<BenchCase> cases = filter_cases(all, o.case_filter);
    if (o.list) {
        if (o.json) {
            Json names = Json::array();
            for (const BenchCase& c : cases) names.push_back(c.name);
            print_json(out, Json{{"cases", names}});
        } else {
            for (const BenchCase& c : cases) out << c.name << "\n";
        }
        return kExitOk;
    }
    if (cases.empty()) {
        std::string names;
        for (size_t i = 0; i < all.size() && i < 20; ++i) names += (i ? ", " : "") + all[i].name;
        if (all.size() > 20) names += ", ... (--list shows all " + std::to_string(all.size()) + ")";
        throw CliError(kExitUsage, "no case matches --case '" + o.case_filter + "' (cases: " + names + ")");
    }
    std::ofstream report_file, json_file;
    if (!o.report.empty()) report_file = open_output(o.report, "--report");
    if (!o.json_out.empty()) json_file = open_output(o.json_out, "--json-out");

    // The peer is loaded before anything is measured: a bad --peer fails in a
    // second, and a run without --peer never touches llama.cpp.
    std::unique_ptr<LlamaLibrary> peer;
    if (!o.peer.empty()) peer = LlamaLibrary::open(parse_peer(o.peer).path);

    Device twin = open_cpu_twin();
    // The user's own chain and flags (--samplers, --logit-bias, --history...)
    // are checked once on the twin: a typo is a usage error, not a suite of
    // "unsupported".
    {
        int32_t vocab = 1;
        for (const BenchCase& c : cases) vocab = std::max(vocab, c.vocab);
        make_chain(twin, o.sampling, 1, vocab);
    }
    // --input device: the bench's own Vulkan device on the same GPU, and the
    // context on it replaces the library's own (declared first: it outlives the context).
    std::unique_ptr<BenchVulkan> vulkan;
    Device device = open_device(o.device);
    if (o.input == "device" && !device.cpu_twin) {
        vulkan = BenchVulkan::open(device.info);
        device.context = vulkan->make_context();
        device.info = device.context->device_info();
    }
    RunInfo info;
    info.device = &device;
    info.twin = &twin;
    info.settings.device_input = o.input == "device";
    info.settings.tokens = o.tokens;
    info.settings.warmup = o.warmup;
    info.settings.profile_tokens = o.profile_tokens;
    info.settings.calibration_iterations = o.calibration_iterations;
    info.settings.twin_budget_s = o.twin_budget_s;
    info.suite = o.logits.empty() ? o.suite : "file";
    info.case_filter = o.case_filter;
    info.logits_file = o.logits;
    info.sampling = o.sampling;
    info.date_utc = utc_now_iso();
    info.command_line = o.command_line;
    info.load_start = host_load_average();
    info.peer = peer.get();
    if (device.has_info && !device.cpu_twin && device.info.type == SIEVE_DEVICE_CPU)
        info.warnings.push_back(cpu_device_warning(device.info));
    if (!device.cpu_twin && validation_wanted())
        info.warnings.push_back("validation layers on (SIEVE_VALIDATION): every call's timing includes the layer's "
                                "checks of its submission");
    if (device.cpu_twin) info.warnings.push_back("--device cpu: the device measured is the CPU twin itself (no calibration, no stages)");
    if (!o.json) print_header(out, device, info.warnings, o, cases, peer.get());
    const size_t n_header_warnings = info.warnings.size();

    BenchRunner runner(device, twin, info.settings, peer.get(), vulkan.get());
    Progress progress(err);
    std::vector<CaseResult> results;
    size_t done = 0;
    for (const std::vector<BenchCase>& group : case_groups(cases)) {
        progress.show(done, cases.size(), group.size() > 1 ? std::to_string(group.size()) + " cases in rounds" : group.front().name);
        for (CaseResult& r : runner.run_group(group)) {
            progress.done();
            if (!o.json) print_row(out, r);
            results.push_back(std::move(r));
        }
        done += group.size();
    }
    info.load_end = host_load_average();
    add_noise_warnings(info, results);
    std::vector<std::string> twin_short;
    for (const CaseResult& r : results)
        if (r.twin_cut) twin_short.push_back(r.c.name + " (" + std::to_string(r.twin.count) + " tokens)");
    if (!twin_short.empty()) {
        std::string list;
        for (const std::string& s : twin_short) list += (list.empty() ? "" : ", ") + s;
        info.warnings.push_back("the CPU twin measured fewer tokens to keep the run short: " + list);
    }
    info.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const Json doc = run_json(info, results);
    if (o.json) {
        print_json(out, doc);
        for (const std::string& w : info.warnings) err << "warning: " << w << "\n";
    } else {
        for (size_t i = n_header_warnings; i < info.warnings.size(); ++i) out << "note: " << info.warnings[i] << "\n";
        out << "twin/dev = twin median / device median (> 1: the device is faster); disp, passes = dispatches and "
               "full-row passes per token (measured; the plan's minimum is in the JSON); MB/tok = bytes the device reads and writes per token (estimate); "
               "floor = passes x bare pass + empty submit (calibrated in this run); eff = floor / median; "
               "submit = the empty submit-and-wait alone; gpu = GPU time per call (timestamps, profiled calls); "
               "est = the plan's ESTIMATED GPU time on the reference GPU, an H200 (a model, not a measurement: "
               "docs/architecture/estimate.md; only where the plan is a GPU's) (docs/bench.md)\n";
        if (peer) out << "llama = llama.cpp's median; llama/dev = llama.cpp's median / the device's (> 1: Sieve is faster)\n";
        out << "wall time " << fixed(info.wall_time_s, 1) << " s\n";
    }
    if (json_file.is_open()) write_output(json_file, o.json_out, "--json-out", doc.dump(2) + "\n");
    if (report_file.is_open()) write_output(report_file, o.report, "--report", report_html(doc));

    for (const CaseResult& r : results)
        if (r.status == "failed") {
            err << "sieve: error: " << r.c.name << " failed: " << r.message << "\n";
            return r.exit_code ? r.exit_code : kExitDevice;
        }
    // One chain on the user's logits that the device refuses: that is the answer, an error.
    if (!o.logits.empty() && results.size() == 1 && results[0].status == "unsupported") {
        err << "sieve: error: " << results[0].message << "\n";
        return results[0].exit_code ? results[0].exit_code : kExitUsage;
    }
    return kExitOk;
}

} // namespace sieve_cli
