#include "bench_runner.hpp"

#include "exit_codes.hpp"

#include <sieve/sieve.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

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

// Times each sample call (one token for every row) after `warmup` untimed ones;
// stops early, after at least kMinTokens, once `budget_s` seconds of sampling
// are spent. With a peer, it runs as many tokens as the device, in blocks.
Measurement measure(sieve::Chain& chain, const BenchCase& c, const float* data, int32_t warmup, int32_t tokens,
                    double budget_s, PeerTiming* peer = nullptr) {
    for (int32_t i = 0; i < warmup; ++i) check_tokens(chain.sample(data, c.rows, c.vocab), c);
    if (peer) peer->tokens(data, warmup, false);
    Measurement m;
    std::vector<double> us;
    us.reserve(static_cast<size_t>(tokens));
    const sieve_counters before = read_counters(chain);
    double spent_s = 0;
    int32_t pending = 0;  // device tokens the peer has yet to match
    for (int32_t i = 0; i < tokens; ++i) {
        const Clock::time_point t0 = Clock::now();
        std::vector<sieve_token> out = chain.sample(data, c.rows, c.vocab);
        const Clock::time_point t1 = Clock::now();
        check_tokens(out, c);
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        spent_s += std::chrono::duration<double>(Clock::now() - t0).count();
        const bool cut = i + 1 >= kMinTokens && i + 1 < tokens && spent_s > budget_s;
        if (peer && (++pending == kPeerBlock || cut || i + 1 == tokens)) {
            peer->tokens(data, pending, true);
            pending = 0;
        }
        if (cut) {
            m.cut = true;
            break;
        }
    }
    m.delta = counters_delta(before, read_counters(chain));
    m.stats = latency_stats(std::move(us));
    return m;
}

double median_of(std::vector<double> v) { return latency_stats(std::move(v)).median; }

// GPU time per stage: a separate short run with timestamps after every
// dispatch (they cost ~50 us each on lavapipe, so these tokens are not timed).
std::vector<StageTime> profile_stages(sieve::Chain& chain, const BenchCase& c, const float* data, int32_t tokens,
                                      int* profiled) {
    chain.set_profiling(true);
    check_tokens(chain.sample(data, c.rows, c.vocab), c);  // records the profiled command buffer
    std::vector<std::vector<sieve_stage_time>> runs;
    for (int32_t i = 0; i < tokens; ++i) {
        check_tokens(chain.sample(data, c.rows, c.vocab), c);
        runs.push_back(chain.stage_times());
    }
    chain.set_profiling(false);
    *profiled = static_cast<int>(runs.size());
    std::vector<StageTime> out;
    if (runs.empty()) return out;
    // Calls of one shape run the same dispatches; take the median per position.
    const size_t n = runs.front().size();
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

CaseResult BenchRunner::run(const BenchCase& c) {
    if (!c.verify.empty()) return run_verify(c);
    CaseResult r;
    r.c = c;
    r.c.logits.reset();  // results do not keep the logits alive
    std::shared_ptr<const Logits> logits;
    const float* data = nullptr;
    CaseHistory history;  // a history case's accepted prefix, the same for the device and the twin

    // The device. Building the chain is where a device refuses a case.
    if (peer_) {
        r.peer_status = "n/a";
        r.peer_message = "the device did not run this case";
    }
    try {
        ChainSetup setup;
        sieve::Chain chain = make_chain(device_, c.sampling, c.rows, c.vocab, &setup);
        logits = logits_for(c);  // after the chain: a refused case generates nothing
        data = logits->data.data();
        if (c.history_last_n > 0) history = case_history(*logits, c.history_last_n);
        try {
            r.plan = chain.plan_figures(c.rows, c.vocab);
        } catch (const sieve::Error&) {
            r.plan.reset();  // the CPU twin backend has no plan
        }
        // llama.cpp's chains start from the state Sieve's does: --history, then the case's prefix.
        std::unique_ptr<PeerChains> peer_chains;
        if (peer_) {
            const auto& breakers = history.breakers.empty() ? setup.breakers : history.breakers;
            try {
                peer_chains = PeerChains::build(*peer_, chain, c.sampling, c.rows, c.vocab, breakers, &r.peer_message);
                for (int32_t row = 0; peer_chains && row < c.rows; ++row) {
                    peer_chains->accept(row, setup.history);
                    if (static_cast<size_t>(row) < history.rows.size()) peer_chains->accept(row, history.rows[static_cast<size_t>(row)]);
                }
            } catch (const std::exception& e) {  // the chain's parameters could not be read: the peer only fails
                peer_chains.reset();
                r.peer_status = "failed";
                r.peer_message = e.what();
            }
        }
        try {
            prime(chain, history);
            PeerTiming peer{peer_chains.get(), {}, {}};
            const Measurement m = measure(chain, c, data, s_.warmup, s_.tokens, s_.device_budget_s,
                                          peer_chains ? &peer : nullptr);
            r.device = m.stats;
            r.device_cut = m.cut;
            r.delta = m.delta;
            if (peer_chains) {
                r.peer_status = peer.failure.empty() ? "ok" : "failed";
                r.peer_message = peer.failure;
                r.peer = latency_stats(std::move(peer.us));
            }
            if (!device_.cpu_twin && s_.profile_tokens > 0)
                r.stages = profile_stages(chain, c, data, s_.profile_tokens, &r.profiled_tokens);
        } catch (const CliError& e) {
            return set_outcome(r, "failed", e.what(), e.exit_code());
        } catch (const sieve::Error& e) {
            return set_outcome(r, "failed", library_message(e), exit_code_for(e.status()));
        }
    } catch (const CliError& e) {
        // The chain could not be built for this device (unsupported sampler,
        // chain too long, capacity beyond a device limit): not measurable here.
        return set_outcome(r, "unsupported", e.what(), e.exit_code());
    }

    auto [cal, why] = calibration_for(c.rows, c.vocab);
    r.calibration = cal;
    r.calibration_message = why;

    // The CPU twin, same logits, same flags.
    try {
        sieve::Chain chain = make_chain(twin_, c.sampling, c.rows, c.vocab);
        prime(chain, history);
        const Measurement m = measure(chain, c, data, std::min(s_.warmup, 2), s_.tokens, s_.twin_budget_s);
        r.twin = m.stats;
        r.twin_cut = m.cut;
    } catch (const CliError& e) {
        r.twin_status = e.exit_code() == kExitUsage ? "unsupported" : "failed";
        r.twin_message = e.what();
    } catch (const sieve::Error& e) {
        r.twin_status = "failed";
        r.twin_message = library_message(e);
    }
    return r;
}

} // namespace sieve_cli
