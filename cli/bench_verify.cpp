// The verify suite's cases (speculative decoding): per step, one sieve_verify
// call verifying every sequence's drafts, against the baseline of llama.cpp's
// loop, drafts + 1 sieve_sample calls position by position (each call samples
// that position of every sequence and accepts it into the sequence's slot).
// The two alternate in blocks of kPeerBlock steps on the device, so both see
// the same load; the CPU twin's verification is timed after them.
#include "bench_runner.hpp"

#include "exit_codes.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

namespace sieve_cli {
namespace {

using Clock = std::chrono::steady_clock;

// The inputs of a step: the logits sequence by sequence (sieve_verify's
// layout) and position by position (the baseline's), drafts of each position's
// argmax and, for the rejection mode, each draft's q = 1 (a greedy drafter's).
struct StepInputs {
    int32_t sequences = 0, positions = 0, vocab = 0;
    std::vector<float> by_position;
    std::vector<std::vector<int32_t>> drafts;
    std::vector<float> q;
    std::vector<sieve_draft> views;
    sieve_logits logits{};
};

StepInputs step_inputs(const BenchCase& c, const Logits& l) {
    StepInputs in;
    in.sequences = c.rows;
    in.positions = c.drafts + 1;
    in.vocab = c.vocab;
    const size_t v = static_cast<size_t>(c.vocab);
    in.by_position.resize(l.data.size());
    in.q.assign(static_cast<size_t>(c.drafts), 1.0f);
    for (int32_t s = 0; s < in.sequences; ++s) {
        std::vector<int32_t> d;
        for (int32_t i = 0; i < in.positions; ++i) {
            const float* row = l.row(s * in.positions + i);
            std::copy(row, row + v, in.by_position.begin() + static_cast<std::ptrdiff_t>((static_cast<size_t>(i) * in.sequences + s) * v));
            if (i < c.drafts) d.push_back(static_cast<int32_t>(std::max_element(row, row + v) - row));
        }
        in.drafts.push_back(std::move(d));
    }
    for (const std::vector<int32_t>& d : in.drafts) {
        sieve_draft view;
        sieve_draft_init(&view, d.data(), static_cast<int32_t>(d.size()));
        if (c.verify == "rejection") {
            view.probs_kind = SIEVE_DRAFT_PROBS_TOKEN;
            view.probs = in.q.data();
        }
        in.views.push_back(view);
    }
    sieve_logits_init(&in.logits, l.data.data(), SIEVE_DTYPE_F32, in.sequences * in.positions, in.vocab);
    return in;
}

sieve_verify_mode mode_of(const BenchCase& c) {
    return c.verify == "rejection" ? SIEVE_VERIFY_REJECTION : SIEVE_VERIFY_MATCH;
}

// The step's logits in device-local buffers (--input device), as an engine
// holds them: every sequence's positions back to back (sieve_verify_vulkan)
// and position by position (the baseline's sieve_sample_vulkan calls). Null
// members: host logits (sieve_verify, sieve_sample).
struct DeviceSteps {
    std::unique_ptr<DeviceLogits> by_sequence, by_position;
};

// The drafts accepted over the sequences of one step's outcome (Chain::Verified
// or sieve_verified); throws on a sequence that could not be verified.
template <class Verified>
int64_t accepted_drafts(const BenchCase& c, const std::vector<Verified>& out) {
    int64_t accepted = 0;
    for (size_t s = 0; s < out.size(); ++s) {
        if (out[s].status != SIEVE_OK)
            throw CliError(exit_code_for(out[s].status),
                           c.name + ": sequence " + std::to_string(s) + " could not be verified: " +
                               sieve_status_name(out[s].status) + ": " + sieve_last_error(),
                           out[s].status);
        accepted += out[s].n_accepted;
    }
    return accepted;
}

// One verification step; returns the drafts accepted over the sequences.
int64_t verify_step(sieve::Chain& chain, const BenchCase& c, const StepInputs& in, const DeviceSteps& dev) {
    if (dev.by_sequence) return accepted_drafts(c, dev.by_sequence->verify(chain, in.views, mode_of(c)));
    return accepted_drafts(c, chain.verify(in.logits, in.views, mode_of(c)));
}

// The baseline step: every position, one sample call for all sequences.
void baseline_step(sieve::Chain& chain, const BenchCase& c, const StepInputs& in, const DeviceSteps& dev) {
    const size_t block = static_cast<size_t>(in.sequences) * static_cast<size_t>(in.vocab);
    for (int32_t i = 0; i < in.positions; ++i)
        check_tokens(dev.by_position
                         ? dev.by_position->sample(chain, i * in.sequences, in.sequences)
                         : chain.sample(in.by_position.data() + static_cast<size_t>(i) * block, in.sequences, in.vocab),
                     c);
}

// Times steps of one kind.
struct Timed {
    std::function<void()> step;
    std::vector<double> us;
    sieve_counters before{};
    void run(int32_t n) {
        for (int32_t i = 0; i < n; ++i) {
            const Clock::time_point t0 = Clock::now();
            step();
            us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
    }
    double spent_s() const {
        double s = 0;
        for (double u : us) s += u;
        return s / 1e6;
    }
};

} // namespace

std::optional<double> VerifyFigures::speedup(const LatencyStats& verify) const {
    if (baseline.count == 0 || verify.count == 0 || verify.median <= 0) return std::nullopt;
    return baseline.median / verify.median;
}

std::optional<double> VerifyFigures::step_in_calls(const LatencyStats& verify, int32_t drafts) const {
    if (baseline.count == 0 || verify.count == 0 || baseline.median <= 0) return std::nullopt;
    return verify.median * (drafts + 1) / baseline.median;
}

CaseResult BenchRunner::run_verify(const BenchCase& c) {
    CaseResult r;
    r.c = c;
    r.c.logits.reset();
    VerifyFigures f;
    f.draft_probs = c.verify == "rejection" ? "token" : "none";
    BenchCase rows_case = c;  // the logits: every sequence's positions
    rows_case.rows = c.rows * (c.drafts + 1);
    if (peer_) {
        r.peer_status = "n/a";
        r.peer_message = "llama.cpp has no verification to time";
    }
    r.calibration_message = "a verification case has no floor";
    if (refuses_device_input(r)) return r;
    std::shared_ptr<const Logits> logits;
    try {
        DeviceSteps dev;  // declared before the chains, which go first
        sieve::Chain verifying = make_chain(device_, c.sampling, rows_case.rows, c.vocab);
        sieve::Chain looping = make_chain(device_, c.sampling, c.rows, c.vocab);
        // The step's plan and the baseline call's, estimated where the plan is
        // a GPU's: the match mode's one call samples every position (the
        // rejection mode's distribution plan is not in the model).
        if (c.verify == "match") {
            r.estimate = gpu_estimate(verifying, rows_case.rows, c.vocab);
            double call = 0;
            for (const StageEstimate& e : gpu_estimate(looping, c.rows, c.vocab)) call += e.est_us;
            if (!r.estimate.empty() && call > 0) f.baseline_est_us = call * (c.drafts + 1);
            else r.estimate.clear();
        }
        logits = logits_for(rows_case);
        const StepInputs in = step_inputs(c, *logits);
        if (vulkan_) {
            std::string why;
            dev.by_sequence = vulkan_->upload(logits->data.data(), rows_case.rows, c.vocab, &why);
            if (dev.by_sequence) dev.by_position = vulkan_->upload(in.by_position.data(), rows_case.rows, c.vocab, &why);
            if (!dev.by_position) return set_outcome(r, "unsupported", "--input device: " + why, kExitDevice);
        }
        int64_t accepted = 0;
        Timed v{[&] { accepted += verify_step(verifying, c, in, dev); }, {}, {}};
        Timed b{[&] { baseline_step(looping, c, in, dev); }, {}, {}};
        try {
            v.run(s_.warmup);
            b.run(s_.warmup);
            v.us.clear();
            b.us.clear();
            accepted = 0;
            v.before = read_counters(verifying);
            b.before = read_counters(looping);
            // Blocks of kPeerBlock steps each, alternating, until --tokens steps
            // of each or (past kMinTokens) the device's budget for both.
            while (static_cast<int32_t>(v.us.size()) < s_.tokens) {
                const int32_t n = std::min<int32_t>(kPeerBlock, s_.tokens - static_cast<int32_t>(v.us.size()));
                v.run(n);
                b.run(n);
                const int32_t done = static_cast<int32_t>(v.us.size());
                if (done >= kMinTokens && done < s_.tokens && v.spent_s() + b.spent_s() > s_.device_budget_s) {
                    r.device_cut = true;
                    break;
                }
            }
            r.delta = counters_delta(v.before, read_counters(verifying));
            f.baseline_delta = counters_delta(b.before, read_counters(looping));
            r.device = latency_stats(v.us);
            f.baseline = latency_stats(b.us);
            f.accepted = accepted;
            f.offered = static_cast<int64_t>(v.us.size()) * c.rows * c.drafts;
        } catch (const CliError& e) {
            return set_outcome(r, "failed", e.what(), e.exit_code());
        } catch (const sieve::Error& e) {
            // A chain the mode refuses (the rejection mode and a learning sampler).
            return set_outcome(r, e.status() == SIEVE_ERROR_INVALID_CHAIN ? "unsupported" : "failed", e.what(),
                               exit_code_for(e.status()));
        }
    } catch (const CliError& e) {
        return set_outcome(r, "unsupported", e.what(), e.exit_code());
    }
    r.verify = f;

    // The CPU twin's verification of the same steps.
    try {
        sieve::Chain twin = make_chain(twin_, c.sampling, rows_case.rows, c.vocab);
        const StepInputs in = step_inputs(c, *logits);
        Timed t{[&] { verify_step(twin, c, in, DeviceSteps{}); }, {}, {}};
        t.run(std::min(s_.warmup, 2));
        t.us.clear();
        while (static_cast<int32_t>(t.us.size()) < s_.tokens) {
            t.run(1);
            if (static_cast<int32_t>(t.us.size()) >= kMinTokens && t.spent_s() > s_.twin_budget_s) {
                r.twin_cut = static_cast<int32_t>(t.us.size()) < s_.tokens;
                break;
            }
        }
        r.twin = latency_stats(t.us);
    } catch (const CliError& e) {
        r.twin_status = e.exit_code() == kExitUsage ? "unsupported" : "failed";
        r.twin_message = e.what();
    } catch (const sieve::Error& e) {
        r.twin_status = "failed";
        r.twin_message = e.what();
    }
    return r;
}

} // namespace sieve_cli
