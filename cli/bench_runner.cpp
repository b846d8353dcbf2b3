#include "bench_runner.hpp"

#include "exit_codes.hpp"

#include <sieve/sieve.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

namespace sieve_cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kResultBytes = 32.0;  // one result record per row (shaders/include/result.glsl: 8 words)

} // namespace

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

CaseResult& set_outcome(CaseResult& r, const std::string& status, const std::string& message, int exit_code) {
    r.status = status;
    r.message = message;
    r.exit_code = exit_code;
    return r;
}

void check_tokens(const std::vector<sieve_token>& tokens, const BenchCase& c) {
    for (size_t r = 0; r < tokens.size(); ++r)
        if (tokens[r].status != SIEVE_OK)
            throw CliError(exit_code_for(tokens[r].status),
                           c.name + ": row " + std::to_string(r) + " could not be sampled: " +
                               sieve_status_name(tokens[r].status),
                           tokens[r].status);
}

namespace {

// llama.cpp's tokens, timed in blocks between the device's (--peer).
struct PeerTiming {
    PeerChains* chains = nullptr;
    std::vector<double> us;
    std::string failure;  // set when a token failed: the peer stops there
    void tokens(const float* data, int32_t n, bool timed) {
        for (int32_t i = 0; i < n && chains && failure.empty(); ++i) {
            try {
                const Clock::time_point t0 = Clock::now();
                chains->token(data);
                if (timed) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
            } catch (const std::exception& e) {
                failure = e.what();
            }
        }
    }
};

double median_of(std::vector<double> v) { return latency_stats(std::move(v)).median; }

// GPU time per stage: a separate short run with timestamps after every
// dispatch (they cost ~50 us each on lavapipe, so these tokens are not timed).
// *gpu_us: the median over the calls of their stages' sum; *timing: each
// figure of the calls' sieve_chain_call_timing, its median; *call_us: the
// median of the calls as timed here; *host_us: the median of each call's
// time as timed here less its timing's wall_us.
std::vector<StageTime> profile_stages(sieve::Chain& chain, const BenchCase& c, const std::function<std::vector<sieve_token>()>& call,
                                      int32_t tokens, int* profiled, std::optional<double>* gpu_us,
                                      std::optional<sieve_call_timing>* timing, std::optional<double>* call_us,
                                      std::optional<double>* host_us) {
    chain.set_profiling(true);
    check_tokens(call(), c);  // records the profiled command buffer
    std::vector<std::vector<sieve_stage_time>> runs;
    std::vector<sieve_call_timing> timings;
    std::vector<double> whole, outside;
    for (int32_t i = 0; i < tokens; ++i) {
        const Clock::time_point t0 = Clock::now();
        const std::vector<sieve_token> sampled = call();
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        check_tokens(sampled, c);
        runs.push_back(chain.stage_times());
        sieve_call_timing t{};
        if (sieve_chain_call_timing(chain.get(), &t) == SIEVE_OK) {
            timings.push_back(t);
            whole.push_back(us);
            outside.push_back(us - t.wall_us);
        }
    }
    chain.set_profiling(false);
    *profiled = static_cast<int>(runs.size());
    if (!timings.empty()) {
        auto median = [&](double sieve_call_timing::*field) {
            std::vector<double> v;
            for (const sieve_call_timing& t : timings) v.push_back(t.*field);
            return median_of(std::move(v));
        };
        sieve_call_timing m = timings.front();  // calibrated: the same for every call of a chain
        m.wall_us = median(&sieve_call_timing::wall_us);
        m.gpu_span_us = median(&sieve_call_timing::gpu_span_us);
        m.submit_to_gpu_us = median(&sieve_call_timing::submit_to_gpu_us);
        m.gpu_to_host_us = median(&sieve_call_timing::gpu_to_host_us);
        m.deviation_us = median(&sieve_call_timing::deviation_us);
        *timing = m;
        *call_us = median_of(std::move(whole));
        *host_us = median_of(std::move(outside));
    }
    std::vector<StageTime> out;
    if (runs.empty() || runs.front().empty()) return out;
    // Calls of one shape run the same dispatches; take the median per position.
    const size_t n = runs.front().size();
    std::vector<double> totals;
    for (const auto& r : runs) {
        double sum = 0;
        for (const sieve_stage_time& t : r) sum += t.gpu_us;
        totals.push_back(sum);
    }
    *gpu_us = median_of(totals);
    for (size_t i = 0; i < n; ++i) {
        std::vector<double> v;
        for (const auto& r : runs)
            if (r.size() == n) v.push_back(r[i].gpu_us);
        out.push_back({runs.front()[i].stage, runs.front()[i].level, median_of(v)});
    }
    return out;
}

std::string library_message(const std::exception& e) { return e.what(); }

// Gives a history case's chain its accepted prefix and DRY breakers: every
// backend's chain starts from the same state.
void prime(sieve::Chain& chain, const CaseHistory& h) {
    if (!h.breakers.empty()) chain.set_dry_breakers(h.breakers);
    for (size_t r = 0; r < h.rows.size(); ++r) chain.accept(static_cast<int32_t>(r), h.rows[r]);
}

} // namespace

std::optional<double> CaseResult::row_passes() const {
    if (!plan) return std::nullopt;
    const double tokens = static_cast<double>(device.count) * c.rows;
    const double measured = tokens > 0 ? static_cast<double>(delta.row_passes) / tokens : 0.0;
    return std::max(static_cast<double>(plan->second), measured);
}

std::optional<double> CaseResult::floor_us() const {
    const auto passes = row_passes();
    if (!calibration || !passes) return std::nullopt;
    return *passes * calibration->pass_us + calibration->submit_us;
}

std::optional<double> CaseResult::efficiency() const {
    const auto f = floor_us();
    if (!f || device.count == 0 || device.median <= 0) return std::nullopt;
    return *f / device.median;
}

std::optional<double> CaseResult::ratio() const {
    if (twin.count == 0 || device.count == 0 || device.median <= 0) return std::nullopt;
    return twin.median / device.median;
}

std::optional<double> CaseResult::peer_ratio() const {
    if (peer_status != "ok" || peer.count == 0 || device.count == 0 || device.median <= 0) return std::nullopt;
    return peer.median / device.median;
}

std::optional<double> CaseResult::bytes_read() const {
    const auto passes = row_passes();
    if (!passes) return std::nullopt;
    return *passes * c.rows * static_cast<double>(c.vocab) * 4.0;
}

double CaseResult::bytes_written() const { return c.rows * kResultBytes; }

std::shared_ptr<const Logits> BenchRunner::logits_for(const BenchCase& c) {
    if (c.logits) return c.logits;
    // Only the last shape is kept: consecutive cases share it, and the full
    // suite's logits together would take gigabytes.
    const std::string key = c.shape + "/" + std::to_string(c.vocab) + "/" + std::to_string(c.rows);
    if (key != logits_key_ || !logits_) {
        logits_.reset();
        logits_ = std::make_shared<Logits>(shape_logits(c.shape, c.rows, c.vocab));
        logits_key_ = key;
    }
    return logits_;
}

std::pair<std::optional<Calibration>, std::string> BenchRunner::calibration_for(int32_t rows, int32_t vocab) {
    auto it = calibrations_.find({rows, vocab});
    if (it != calibrations_.end()) return it->second;
    std::pair<std::optional<Calibration>, std::string> r;
    if (device_.cpu_twin) {
        r.second = "the CPU twin backend has no device to calibrate";
    } else {
        sieve_calibration cal{};
        const sieve_status s = sieve_context_calibrate(device_.context->get(), vocab, rows, s_.calibration_iterations, &cal);
        if (s == SIEVE_OK) r.first = Calibration{cal.submit_us, cal.pass_us, cal.pass_total_us, cal.iterations};
        else r.second = std::string(sieve_status_name(s)) + ": " + sieve_last_error();
    }
    calibrations_[{rows, vocab}] = r;
    return r;
}

// A case being measured: its chain, logits and device buffer stay alive
// while its group's rounds run.
struct BenchRunner::Live {
    CaseResult r;
    bool measuring = false;  // set up and warmed; false once measured, failed or refused
    std::optional<sieve::Chain> chain;
    std::shared_ptr<const Logits> logits;
    const float* data = nullptr;
    CaseHistory history;
    std::unique_ptr<PeerChains> peer_chains;
    PeerTiming peer;
    std::unique_ptr<DeviceLogits> device_logits;
    std::function<std::vector<sieve_token>()> call;  // one measured call: every row's token
    std::vector<double> us;
    double spent_s = 0;
    sieve_counters before{};
};

std::optional<double> CaseResult::est_us() const {
    if (estimate.empty()) return std::nullopt;
    double sum = 0;
    for (const StageEstimate& e : estimate) sum += e.est_us;
    return sum;
}

std::vector<std::vector<BenchCase>> case_groups(const std::vector<BenchCase>& cases) {
    std::vector<std::vector<BenchCase>> groups;
    double bytes = 0;
    for (const BenchCase& c : cases) {
        const double b = static_cast<double>(c.rows) * c.vocab * sizeof(float);
        const bool alone = !c.verify.empty();
        if (groups.empty() || alone || !groups.back().front().verify.empty() || groups.back().size() >= kGroupCases ||
            bytes + b > kGroupLogitBytes) {
            groups.emplace_back();
            bytes = 0;
        }
        groups.back().push_back(c);
        bytes += b;
    }
    return groups;
}

std::vector<StageEstimate> BenchRunner::gpu_estimate(const sieve::Chain& chain, int32_t rows, int32_t vocab) const {
    // The estimate describes a GPU's plan: a GPU device's, or any device's under the gpu profile.
    const bool gpu_plan = device_.has_info && !device_.cpu_twin &&
                          (device_.info.type != SIEVE_DEVICE_CPU || (device_.info.profile & SIEVE_PROFILE_GPU));
    std::vector<StageEstimate> out;
    if (!gpu_plan) return out;
    try {
        for (const sieve_stage_estimate& e : chain.plan_estimate(rows, vocab))
            out.push_back({e.stage, e.level, e.workgroups, e.indirect != 0, e.est_us});
    } catch (const sieve::Error&) {
        out.clear();
    }
    return out;
}

bool BenchRunner::refuses_device_input(CaseResult& r) const {
    r.input = s_.device_input ? "device" : "host";
    if (!s_.device_input || vulkan_) return false;
    set_outcome(r, "unsupported", "--input device needs a Vulkan device: the CPU twin backend has no device buffers",
                kExitUsage);
    return true;
}

void BenchRunner::start(Live& l) {
    CaseResult& r = l.r;
    const BenchCase& c = r.c;
    if (peer_) {
        r.peer_status = "n/a";
        r.peer_message = "the device did not run this case";
    }
    if (refuses_device_input(r)) return;
    try {
        // Building the chain is where a device refuses a case.
        ChainSetup setup;
        l.chain.emplace(make_chain(device_, c.sampling, c.rows, c.vocab, &setup));
        sieve::Chain& chain = *l.chain;
        if (!l.logits) l.logits = logits_for(c);  // after the chain: a refused case generates nothing
        l.data = l.logits->data.data();
        if (c.history_last_n > 0) l.history = case_history(*l.logits, c.history_last_n);
        try {
            r.plan = chain.plan_figures(c.rows, c.vocab);
        } catch (const sieve::Error&) {
            r.plan.reset();  // the CPU twin backend has no plan
        }
        r.estimate = gpu_estimate(chain, c.rows, c.vocab);
        if (vulkan_) {
            std::string why;
            l.device_logits = vulkan_->upload(l.data, c.rows, c.vocab, &why);
            if (!l.device_logits) {
                set_outcome(r, "unsupported", "--input device: " + why, kExitDevice);
                l.chain.reset();
                return;
            }
            l.call = [&l] { return l.device_logits->sample(*l.chain); };
        } else {
            l.call = [&l, &c] { return l.chain->sample(l.data, c.rows, c.vocab); };
        }
        // llama.cpp's chains start from the state Sieve's does: --history, then the case's prefix.
        if (peer_) {
            const auto& breakers = l.history.breakers.empty() ? setup.breakers : l.history.breakers;
            try {
                l.peer_chains = PeerChains::build(*peer_, chain, c.sampling, c.rows, c.vocab, breakers, &r.peer_message);
                for (int32_t row = 0; l.peer_chains && row < c.rows; ++row) {
                    l.peer_chains->accept(row, setup.history);
                    if (static_cast<size_t>(row) < l.history.rows.size())
                        l.peer_chains->accept(row, l.history.rows[static_cast<size_t>(row)]);
                }
            } catch (const std::exception& e) {  // the chain's parameters could not be read: the peer only fails
                l.peer_chains.reset();
                r.peer_status = "failed";
                r.peer_message = e.what();
            }
        }
        l.peer.chains = l.peer_chains.get();
        try {
            prime(chain, l.history);
            for (int32_t i = 0; i < s_.warmup; ++i) check_tokens(l.call(), c);
            l.peer.tokens(l.data, s_.warmup, false);
            l.us.reserve(static_cast<size_t>(s_.tokens));
            l.measuring = true;
        } catch (const CliError& e) {
            set_outcome(r, "failed", e.what(), e.exit_code());
        } catch (const sieve::Error& e) {
            set_outcome(r, "failed", library_message(e), exit_code_for(e.status()));
        }
    } catch (const CliError& e) {
        // The chain could not be built for this device (unsupported sampler,
        // chain too long, capacity beyond a device limit): not measurable here.
        set_outcome(r, "unsupported", e.what(), e.exit_code());
    }
    if (!l.measuring) l.chain.reset();
}

void BenchRunner::warm_clocks(std::vector<std::unique_ptr<Live>>& live) {
    // Every group: the profiled tokens, calibration and twin of the group
    // before let a GPU idle (and its clocks drop).
    const bool gpu = device_.has_info && device_.info.type != SIEVE_DEVICE_CPU;
    const double least_s = gpu ? kClockWarmupGpuS : kClockWarmupCpuS;
    const Clock::time_point t0 = Clock::now();
    bool any = true;
    while (any && std::chrono::duration<double>(Clock::now() - t0).count() < least_s) {
        any = false;
        for (auto& l : live) {
            if (!l->measuring) continue;
            try {
                check_tokens(l->call(), l->r.c);
                any = true;
            } catch (const CliError& e) {
                set_outcome(l->r, "failed", e.what(), e.exit_code());
                l->measuring = false;
            } catch (const sieve::Error& e) {
                set_outcome(l->r, "failed", library_message(e), exit_code_for(e.status()));
                l->measuring = false;
            }
        }
    }
}

void BenchRunner::finish(Live& l) {
    CaseResult& r = l.r;
    const BenchCase& c = r.c;
    if (l.chain && r.status == "ok") {
        r.delta = counters_delta(l.before, read_counters(*l.chain));
        r.device = latency_stats(std::move(l.us));
        if (l.peer_chains) {
            r.peer_status = l.peer.failure.empty() ? "ok" : "failed";
            r.peer_message = l.peer.failure;
            r.peer = latency_stats(std::move(l.peer.us));
        }
        try {
            if (!device_.cpu_twin && s_.profile_tokens > 0) {
                // The case before this one left the GPU idle through its
                // calibration and twin: its clocks are down again (an H200's
                // stage times came out above its wall clock). Busy first.
                if (device_.has_info && device_.info.type != SIEVE_DEVICE_CPU) {
                    const Clock::time_point t0 = Clock::now();
                    while (std::chrono::duration<double>(Clock::now() - t0).count() < kClockWarmupGpuS)
                        check_tokens(l.call(), c);
                }
                r.stages = profile_stages(*l.chain, c, l.call, s_.profile_tokens, &r.profiled_tokens, &r.gpu_us,
                                          &r.call_timing, &r.call_us, &r.host_us);
            }
        } catch (const CliError& e) {
            set_outcome(r, "failed", e.what(), e.exit_code());
        } catch (const sieve::Error& e) {
            set_outcome(r, "failed", library_message(e), exit_code_for(e.status()));
        }
    }
    // The buffer before the chain that last read it, the chain before the
    // next case's (a group's chains would otherwise all stay alive).
    try {
        if (l.chain && l.device_logits) l.device_logits->release_from(*l.chain);
    } catch (const sieve::Error&) {
        // the chain goes with it
    }
    l.device_logits.reset();
    l.chain.reset();
    l.peer_chains.reset();
    if (r.status != "ok") return;

    auto [cal, why] = calibration_for(c.rows, c.vocab);
    r.calibration = cal;
    r.calibration_message = why;

    // The CPU twin, same logits, same flags, from host memory.
    try {
        sieve::Chain chain = make_chain(twin_, c.sampling, c.rows, c.vocab);
        prime(chain, l.history);
        for (int32_t i = 0; i < std::min(s_.warmup, 2); ++i) check_tokens(chain.sample(l.data, c.rows, c.vocab), c);
        std::vector<double> us;
        double spent_s = 0;
        for (int32_t i = 0; i < s_.tokens; ++i) {
            const Clock::time_point t0 = Clock::now();
            std::vector<sieve_token> out = chain.sample(l.data, c.rows, c.vocab);
            const Clock::time_point t1 = Clock::now();
            check_tokens(out, c);
            us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            spent_s += std::chrono::duration<double>(Clock::now() - t0).count();
            if (i + 1 >= kMinTokens && i + 1 < s_.tokens && spent_s > s_.twin_budget_s) {
                r.twin_cut = true;
                break;
            }
        }
        r.twin = latency_stats(std::move(us));
    } catch (const CliError& e) {
        r.twin_status = e.exit_code() == kExitUsage ? "unsupported" : "failed";
        r.twin_message = e.what();
    } catch (const sieve::Error& e) {
        r.twin_status = "failed";
        r.twin_message = library_message(e);
    }
}

std::vector<CaseResult> BenchRunner::run_group(const std::vector<BenchCase>& cases) {
    if (cases.size() == 1 && !cases.front().verify.empty()) return {run_verify(cases.front())};
    std::vector<std::unique_ptr<Live>> live;
    for (const BenchCase& c : cases) {
        live.push_back(std::make_unique<Live>());
        live.back()->r.c = c;
        live.back()->r.c.logits.reset();  // results do not keep the logits alive
        live.back()->logits = c.logits;   // --logits FILE's (built-in shapes are generated in start)
        start(*live.back());
    }
    warm_clocks(live);
    for (auto& l : live)
        if (l->measuring) l->before = read_counters(*l->chain);

    // Rounds: each case's next kRoundTokens measured tokens in turn (with a
    // peer, as many of llama.cpp's after each block), until every case has
    // its tokens or spent its budget (never below kMinTokens).
    const bool gpu = device_.has_info && device_.info.type != SIEVE_DEVICE_CPU;
    const int32_t round_tokens = gpu || peer_ ? kRoundTokens : kRoundTokensCpu;
    for (bool any = true; any;) {
        any = false;
        for (auto& lp : live) {
            Live& l = *lp;
            if (!l.measuring) continue;
            const BenchCase& c = l.r.c;
            int32_t block = 0;
            try {
                while (block < round_tokens && static_cast<int32_t>(l.us.size()) < s_.tokens) {
                    const Clock::time_point t0 = Clock::now();
                    std::vector<sieve_token> out = l.call();
                    const Clock::time_point t1 = Clock::now();
                    check_tokens(out, c);
                    l.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
                    l.spent_s += std::chrono::duration<double>(Clock::now() - t0).count();
                    ++block;
                    const int32_t n = static_cast<int32_t>(l.us.size());
                    if (n >= kMinTokens && n < s_.tokens && l.spent_s > s_.device_budget_s) {
                        l.r.device_cut = true;
                        break;
                    }
                }
            } catch (const CliError& e) {
                set_outcome(l.r, "failed", e.what(), e.exit_code());
                l.measuring = false;
            } catch (const sieve::Error& e) {
                set_outcome(l.r, "failed", library_message(e), exit_code_for(e.status()));
                l.measuring = false;
            }
            if (block > 0) l.peer.tokens(l.data, block, true);
            if (l.measuring && !l.r.device_cut && static_cast<int32_t>(l.us.size()) < s_.tokens) any = true;
        }
    }
    std::vector<CaseResult> out;
    for (auto& l : live) {
        finish(*l);
        out.push_back(std::move(l->r));
    }
    return out;
}

} // namespace sieve_cli
