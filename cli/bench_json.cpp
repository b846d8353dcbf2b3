#include "bench_json.hpp"

#include "bench_host.hpp"
#include "device_text.hpp"
#include "exit_codes.hpp"

#include <sieve/sieve.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

namespace sieve_cli {
namespace {

Json opt(const std::optional<double>& v, bool us = true) {
    if (!v) return nullptr;
    return us ? Json(round_us(*v)) : Json(*v);
}

double per_token(uint64_t total, int count) { return count > 0 ? static_cast<double>(total) / count : 0.0; }

std::string version_string() {
    const uint32_t v = sieve_version();
    return std::to_string(SIEVE_VERSION_GET_MAJOR(v)) + "." + std::to_string(SIEVE_VERSION_GET_MINOR(v)) + "." +
           std::to_string(SIEVE_VERSION_GET_PATCH(v));
}

// A verification case's figures: per step (one sieve_verify call for every
// sequence; sieve_verify_vulkan with --input device) and for the baseline
// step (drafts + 1 sieve_sample calls; sieve_sample_vulkan).
Json verify_json(const CaseResult& r) {
    const VerifyFigures& f = *r.verify;
    const BenchCase& c = r.c;
    const int n = r.device.count;
    const int nb = f.baseline.count;
    Json v;
    v["mode"] = c.verify;
    v["drafts"] = c.drafts;
    v["sequences"] = c.rows;
    v["draft_probs"] = f.draft_probs;
    v["accepted"] = f.accepted;
    v["offered"] = f.offered;
    v["acceptance"] = std::round(f.acceptance() * 10000.0) / 10000.0;
    v["submits_per_step"] = per_token(r.delta.submits, n);
    v["dispatches_per_step"] = per_token(r.delta.dispatches, n);
    v["row_passes_per_step"] = per_token(r.delta.row_passes, n);
    v["baseline_calls"] = c.drafts + 1;
    v["baseline_steps"] = nb;
    v["baseline_median_us"] = nb ? Json(round_us(f.baseline.median)) : Json(nullptr);
    v["baseline_p10_us"] = nb ? Json(round_us(f.baseline.p10)) : Json(nullptr);
    v["baseline_p90_us"] = nb ? Json(round_us(f.baseline.p90)) : Json(nullptr);
    v["baseline_submits_per_step"] = per_token(f.baseline_delta.submits, nb);
    v["baseline_dispatches_per_step"] = per_token(f.baseline_delta.dispatches, nb);
    v["baseline_row_passes_per_step"] = per_token(f.baseline_delta.row_passes, nb);
    const auto speedup = f.speedup(r.device);
    v["speedup"] = speedup ? Json(std::round(*speedup * 10000.0) / 10000.0) : Json(nullptr);
    v["baseline_est_us"] = f.baseline_est_us ? Json(std::round(*f.baseline_est_us * 1000.0) / 1000.0) : Json(nullptr);
    const auto in_calls = f.step_in_calls(r.device, c.drafts);
    v["step_in_calls"] = in_calls ? Json(std::round(*in_calls * 10000.0) / 10000.0) : Json(nullptr);
    return v;
}

} // namespace

double round_us(double v) { return std::round(v * 1000.0) / 1000.0; }

std::string utc_now_iso() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

Json case_json(const CaseResult& r) {
    const BenchCase& c = r.c;
    Json j;
    j["name"] = c.name;
    j["chain"] = c.chain;
    j["shape"] = c.shape;
    j["samplers"] = samplers_label(c.sampling);
    j["vocab"] = c.vocab;
    j["rows"] = c.rows;
    j["input"] = r.input;
    j["status"] = r.status;
    if (r.status != "ok") {
        j["message"] = r.message;
        return j;
    }
    const int n = r.device.count;
    j["tokens"] = n;
    j["budget_cut"] = r.device_cut;
    j["median_us"] = round_us(r.device.median);
    j["p10_us"] = round_us(r.device.p10);
    j["p90_us"] = round_us(r.device.p90);
    j["min_us"] = round_us(r.device.min);
    j["max_us"] = round_us(r.device.max);
    j["per_row_us"] = round_us(r.device.median / c.rows);
    j["twin_status"] = r.twin_status;
    if (r.twin_status != "ok") j["twin_message"] = r.twin_message;
    j["twin_tokens"] = r.twin.count;
    j["twin_median_us"] = r.twin.count ? Json(round_us(r.twin.median)) : Json(nullptr);
    j["twin_p10_us"] = r.twin.count ? Json(round_us(r.twin.p10)) : Json(nullptr);
    j["twin_p90_us"] = r.twin.count ? Json(round_us(r.twin.p90)) : Json(nullptr);
    const auto ratio = r.ratio();
    j["ratio"] = ratio ? Json(std::round(*ratio * 10000.0) / 10000.0) : Json(nullptr);
    if (!r.peer_status.empty()) {
        j["peer_status"] = r.peer_status;
        if (r.peer_status != "ok") j["peer_message"] = r.peer_message;
        const bool has = r.peer_status == "ok" && r.peer.count > 0;
        j["peer_tokens"] = r.peer.count;
        j["peer_median_us"] = has ? Json(round_us(r.peer.median)) : Json(nullptr);
        j["peer_p10_us"] = has ? Json(round_us(r.peer.p10)) : Json(nullptr);
        j["peer_p90_us"] = has ? Json(round_us(r.peer.p90)) : Json(nullptr);
        const auto pr = r.peer_ratio();
        j["peer_ratio"] = pr ? Json(std::round(*pr * 10000.0) / 10000.0) : Json(nullptr);
    }
    j["dispatches"] = r.plan ? Json(r.plan->first) : Json(nullptr);
    j["row_passes"] = r.plan ? Json(r.plan->second) : Json(nullptr);
    j["measured_dispatches"] = per_token(r.delta.dispatches, n);
    // The engine counts row passes summed over rows; per row, like the plan's figure.
    j["measured_row_passes"] = per_token(r.delta.row_passes, n) / c.rows;
    j["submits"] = per_token(r.delta.submits, n);
    j["steady_recordings"] = r.delta.recordings;
    j["steady_allocations"] = r.delta.allocations;
    j["cpu_fallback_rows"] = per_token(r.delta.cpu_fallback_rows, n);
    j["bytes_read"] = opt(r.bytes_read(), false);
    j["bytes_written"] = r.bytes_written();
    // A stage's estimate beside its time where the measured dispatches are the plan's.
    const bool matched = r.estimate.size() == r.stages.size();
    Json stages = Json::array();
    for (size_t i = 0; i < r.stages.size(); ++i) {
        const StageTime& s = r.stages[i];
        Json st{{"stage", s.stage}, {"level", s.level}, {"gpu_us", round_us(s.gpu_us)}};
        if (matched && r.estimate[i].stage == s.stage) st["est_us"] = round_us(r.estimate[i].est_us);
        stages.push_back(std::move(st));
    }
    j["stages"] = std::move(stages);
    j["profiled_tokens"] = r.profiled_tokens;
    j["gpu_us"] = opt(r.gpu_us);
    if (r.call_timing) {
        const sieve_call_timing& t = *r.call_timing;
        j["call_timing"] = Json{{"wall_us", round_us(t.wall_us)},
                                {"gpu_span_us", round_us(t.gpu_span_us)},
                                {"submit_to_gpu_us", t.calibrated ? Json(round_us(t.submit_to_gpu_us)) : Json(nullptr)},
                                {"gpu_to_host_us", t.calibrated ? Json(round_us(t.gpu_to_host_us)) : Json(nullptr)},
                                {"deviation_us", t.calibrated ? Json(round_us(t.deviation_us)) : Json(nullptr)},
                                {"call_us", opt(r.call_us)},
                                {"host_us", opt(r.host_us)}};
    } else {
        j["call_timing"] = nullptr;
    }
    // An estimate of the plan's GPU time on the reference GPU, never a measurement
    // (docs/architecture/estimate.md): null where the plan is not a GPU's.
    j["est_us"] = opt(r.est_us());
    Json estimate = Json::array();
    for (const StageEstimate& e : r.estimate)
        estimate.push_back(Json{{"stage", e.stage}, {"level", e.level}, {"workgroups", e.workgroups},
                                {"indirect", e.indirect}, {"est_us", round_us(e.est_us)}});
    j["estimate"] = std::move(estimate);
    j["submit_us"] = r.calibration ? Json(round_us(r.calibration->submit_us)) : Json(nullptr);
    if (r.calibration) {
        j["calibration"] = Json{{"submit_us", round_us(r.calibration->submit_us)},
                                {"pass_us", round_us(r.calibration->pass_us)},
                                {"pass_total_us", round_us(r.calibration->pass_total_us)},
                                {"iterations", r.calibration->iterations}};
    } else {
        j["calibration"] = nullptr;
        j["calibration_message"] = r.calibration_message;
    }
    j["floor_us"] = opt(r.floor_us());
    const auto eff = r.efficiency();
    j["efficiency"] = eff ? Json(std::round(*eff * 10000.0) / 10000.0) : Json(nullptr);
    if (r.verify) j["verify"] = verify_json(r);
    return j;
}

Json run_json(const RunInfo& info, const std::vector<CaseResult>& results) {
    const Device& d = *info.device;
    Json doc;
    doc["schema"] = kBenchSchemaId;
    doc["device"] = d.label;
    doc["backend"] = d.cpu_twin ? "cpu" : "vulkan";
    const bool has_info = d.has_info && !d.cpu_twin;
    doc["device_type"] = has_info ? Json(device_type_name(d.info.type)) : Json(nullptr);
    doc["cpu_implementation"] = d.cpu_twin || (has_info && d.info.type == SIEVE_DEVICE_CPU);
    doc["driver"] = has_info ? Json(d.info.driver) : Json(nullptr);
    doc["profile"] = has_info ? Json(sieve_profile_name(d.info.profile)) : Json(nullptr);
    // The host's fence wait as the environment set it (the context refuses a
    // malformed value before the run starts): the wall-clock figures depend on it.
    const char* spin = std::getenv("SIEVE_WAIT_SPIN_US");
    doc["wait_spin_us"] = spin && *spin ? Json(std::strtol(spin, nullptr, 10)) : Json(nullptr);
    doc["device_info"] = has_info ? device_json(d.info) : Json(nullptr);
    doc["library_version"] = version_string();
    doc["input"] = info.settings.device_input ? "device" : "host";
    doc["twin"] = info.twin->label;
    doc["peer"] = info.peer ? Json{{"name", "llama.cpp"},
                                   {"version", info.peer->version},
                                   {"library", info.peer->path},
                                   {"system_info", info.peer->system_info},
                                   {"block_tokens", kPeerBlock}}
                            : Json(nullptr);
    doc["date"] = info.date_utc;
    doc["command"] = info.command_line;
    doc["host_threads"] = std::thread::hardware_concurrency();
    const std::string cpu = host_cpu_model();
    doc["host_cpu"] = cpu.empty() ? Json(nullptr) : Json(cpu);
    // Other work on the host skews every figure: a load average near or above
    // host_threads during the run means the numbers are not the machine's best.
    doc["host_load"] = Json{{"start", info.load_start ? Json(*info.load_start) : Json(nullptr)},
                            {"end", info.load_end ? Json(*info.load_end) : Json(nullptr)}};
    const RunSettings& s = info.settings;
    Json settings;
    settings["suite"] = info.suite;
    settings["case_filter"] = info.case_filter;
    settings["logits"] = info.logits_file.empty() ? Json(nullptr) : Json(info.logits_file);
    settings["input"] = s.device_input ? "device" : "host";
    settings["tokens"] = s.tokens;
    settings["warmup"] = s.warmup;
    settings["profile_tokens"] = s.profile_tokens;
    settings["calibration_iterations"] = s.calibration_iterations;
    settings["device_budget_s"] = s.device_budget_s;
    settings["twin_budget_s"] = s.twin_budget_s;
    settings["temperature"] = json_float(info.sampling.temp);
    settings["seed"] = info.sampling.seed;
    doc["settings"] = std::move(settings);
    doc["tokens"] = s.tokens;  // the original top-level fields stay (docs/contracts.md, "The CLI")
    doc["warmup"] = s.warmup;
    doc["unit"] = "us per token (one sample call for all rows)";
    doc["warnings"] = info.warnings;
    doc["wall_time_s"] = std::round(info.wall_time_s * 1000.0) / 1000.0;
    Json cases = Json::array();
    for (const CaseResult& r : results) cases.push_back(case_json(r));
    doc["cases"] = std::move(cases);
    return doc;
}

Json read_bench_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw CliError(kExitBadInput, "cannot read '" + path + "': " + std::strerror(errno));
    std::stringstream ss;
    ss << in.rdbuf();
    Json doc;
    try {
        doc = Json::parse(ss.str());
    } catch (const nlohmann::json::exception& e) {
        // parse_error, and out_of_range for a number past double (1e400).
        throw CliError(kExitBadInput, "'" + path + "' is not valid JSON: " + e.what());
    }
    if (!doc.is_object() || !doc.contains("cases") || !doc["cases"].is_array())
        throw CliError(kExitBadInput, "'" + path + "' is not a `sieve bench --json` document (no \"cases\" array)");
    for (const Json& c : doc["cases"])
        if (!c.is_object() || !c.contains("name") || !c["name"].is_string())
            throw CliError(kExitBadInput, "'" + path + "': a case without a \"name\" string");
        else if (c.contains("status") && !c["status"].is_string())
            throw CliError(kExitBadInput, "'" + path + "': case '" + c["name"].get<std::string>() +
                                              "' has a \"status\" that is not a string");
    return doc;
}

} // namespace sieve_cli
