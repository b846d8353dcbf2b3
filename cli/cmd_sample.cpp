// `sieve sample`: one token per row (or the final distribution, or N draws) from
// logits in a .npy or raw float32 file.
#include "commands.hpp"

#include "draw_progress.hpp"
#include "exit_codes.hpp"
#include "json_output.hpp"
#include "logits_source.hpp"
#include "sample_json.hpp"
#include "sample_verify.hpp"

#include <sieve/sieve.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace sieve_cli {
namespace {

constexpr size_t kHumanListLimit = 20;  // candidates / counts shown per row without --json

// Work a flag could make unbounded is refused past these (exit 3, docs/contracts.md,
// "The CLI"): --draws 2147483647 was an 8 GiB token buffer and hours of work.
constexpr int64_t kMaxDrawsPerRow = 1000000;
constexpr int64_t kMaxDrawnTokens = int64_t(1) << 24;  // rows x draws: a 64 MiB token buffer

void check_draws(int32_t draws) {
    if (draws > kMaxDrawsPerRow)
        throw CliError(kExitBadInput, "--draws " + std::to_string(draws) + " is beyond the limit of " +
                                          std::to_string(kMaxDrawsPerRow) + " draws per row");
}

void check_drawn_tokens(int32_t draws, int32_t rows) {
    const int64_t tokens = int64_t(draws) * rows;
    if (tokens > kMaxDrawnTokens)
        throw CliError(kExitBadInput, "--draws " + std::to_string(draws) + " over " + std::to_string(rows) +
                                          " rows is " + std::to_string(tokens) + " tokens, beyond the limit of " +
                                          std::to_string(kMaxDrawnTokens) + " (rows x draws)");
}

// --logprobs reports the sampled token's; --dump-dist and --draws sample none.
void check_logprobs_combination(const SampleOptions& o) {
    if (o.logprobs >= 0 && (o.dump_dist || o.draws > 0))
        throw CliError(kExitUsage, std::string("--logprobs reports the sampled token's log-probabilities and cannot be "
                                               "combined with ") + (o.dump_dist ? "--dump-dist" : "--draws") +
                                       " (which sample no single token)");
}

std::string row_message(sieve_status status, int32_t row, const std::string& library_message) {
    if (!library_message.empty()) return library_message;
    switch (status) {
    case SIEVE_ERROR_NON_FINITE_LOGIT: return "row " + std::to_string(row) + " holds NaN or +Inf logits";
    case SIEVE_ERROR_ALL_MASKED: return "every logit of row " + std::to_string(row) + " is -inf";
    default: return std::string(sieve_status_name(status)) + " in row " + std::to_string(row);
    }
}

// Collects per-row failures: the library's message goes with the first failed row
// (it describes the failing call), the others get a message of their own.
struct RowFailures {
    sieve_status first = SIEVE_OK;
    std::string library_message;
    std::string message(sieve_status status, int32_t row) {
        if (first == SIEVE_OK) {
            first = status;
            return row_message(status, row, library_message);
        }
        return row_message(status, row, "");
    }
};

std::string fmt(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

struct RowResult {
    Json json;            // the JSON row object
    std::string text;     // its human form
    bool failed = false;
    std::string error;    // "row r: status: message" for stderr
};

} // namespace

CLI::App* add_sample_command(CLI::App& app, SampleOptions& o) {
    CLI::App* cmd = app.add_subcommand("sample", "sample one token per row from logits in a file");
    cmd->add_option("--logits", o.logits,
                    ".npy (float32/float16, shape [V] or [B,V]) or raw little-endian float32 file; '-' reads stdin")
        ->required()
        ->type_name("FILE");
    cmd->add_option("--vocab", o.vocab, "vocabulary size (required for raw float32; checked against a .npy)")
        ->check(at_least(1, "a vocabulary holds at least 1 token"));
    cmd->add_option("--rows", o.rows, "rows to sample (must match the file, or repeat a one-row file)")
        ->check(at_least(1, "a call samples at least 1 row"));
    add_sampling_flags(*cmd, o.sampling);
    add_device_flag(*cmd, o.device);
    cmd->add_flag("--dump-dist", o.dump_dist, "print each row's final distribution (survivors, canonical order)");
    cmd->add_option("--logprobs", o.logprobs,
                    "print each token's raw log-probability (softmax of the logits as given) and the N most "
                    "probable tokens' (0..20)")
        ->check(in_range(0, SIEVE_MAX_TOP_LOGPROBS, "the top log-probabilities are 0 to " +
                                                        std::to_string(SIEVE_MAX_TOP_LOGPROBS) + " tokens"));
    cmd->add_option("--draws", o.draws, "draw N tokens per row from the same distribution and print the counts")
        ->check(at_least(1, "a row is drawn at least once"));
    add_draft_flags(*cmd, o);
    cmd->add_flag("--json", o.json, "print one JSON document");
    check_flag_values(*cmd, {"--draft"});  // --draft "" verifies no drafts (only the bonus token)
    return cmd;
}

int run_sample(const SampleOptions& o, std::ostream& out, std::ostream& err) {
    if (verifies_drafts(o)) return run_sample_verify(o, out, err);
    check_logprobs_combination(o);
    check_draws(o.draws);
    const Logits logits = load_logits(o.logits, o.vocab, o.rows);
    check_drawn_tokens(o.draws, logits.rows);
    Device device = open_device(o.device);
    ChainSetup setup;
    sieve::Chain chain = make_chain(device, o.sampling, logits.rows, logits.vocab, &setup);
    const bool sample_one = !o.dump_dist && o.draws == 0;

    std::vector<RowResult> rows(static_cast<size_t>(logits.rows));
    for (int32_t r = 0; r < logits.rows; ++r) {
        rows[r].json["row"] = r;
        rows[r].text = "row " + std::to_string(r) + ":";
    }
    RowFailures failures;
    auto fail_row = [&](int32_t r, sieve_status s) {
        if (rows[r].failed) return;
        rows[r].failed = true;
        const std::string msg = failures.message(s, r);
        rows[r].json = row_error_json(r, s, msg);
        rows[r].text = "row " + std::to_string(r) + ": error " + sieve_status_name(s) + ": " + msg;
        rows[r].error = "row " + std::to_string(r) + ": " + sieve_status_name(s) + ": " + msg;
    };
    // Every row's seed as the chain holds it (a random seed is drawn per row),
    // reported in every mode: row 0's is the contract's "seed".
    const std::vector<uint32_t> seeds = row_seeds(chain, logits.rows);
    const bool seeds_differ = std::any_of(seeds.begin(), seeds.end(), [&](uint32_t s) { return s != seeds[0]; });
    auto note_seed = [&](int32_t r, const sieve_token* t) {
        rows[r].json["seed"] = seeds[r];
        if (t) rows[r].json["step"] = t->step;
    };

    if (sample_one && o.logprobs >= 0) sieve::check(sieve_chain_set_logprobs(chain.get(), o.logprobs));
    if (sample_one) {
        std::vector<sieve_token> tokens = chain.sample(logits.data.data(), logits.rows, logits.vocab);
        failures.library_message = sieve_last_error();
        for (int32_t r = 0; r < logits.rows; ++r) {
            const sieve_token& t = tokens[r];
            if (t.status != SIEVE_OK) { fail_row(r, t.status); continue; }
            Json& j = rows[r].json;
            j["token"] = t.token;
            j["p"] = json_float(t.p);
            j["logprob"] = json_float(t.logprob);
            note_seed(r, &t);
            rows[r].text += " token " + std::to_string(t.token) + "  p " + fmt("%.6f", t.p) + "  logprob " +
                            fmt("%.6f", t.logprob);
            if (o.logprobs < 0) continue;
            sieve_logprobs lp{};
            sieve::check(sieve_chain_logprobs(chain.get(), r, &lp));
            j["raw_p"] = json_float(lp.raw_p);
            j["raw_logprob"] = json_float(lp.raw_logprob);
            Json top = Json::array();
            for (int32_t i = 0; i < lp.n_top; ++i)
                top.push_back({{"id", lp.top_ids[i]}, {"logprob", json_float(lp.top_logprobs[i])}});
            j["top_logprobs"] = std::move(top);
            rows[r].text += "  raw logprob " + fmt("%.6f", lp.raw_logprob);
            for (int32_t i = 0; i < lp.n_top; ++i)
                rows[r].text += "\n  " + std::to_string(lp.top_ids[i]) + "  " + fmt("%.6f", lp.top_logprobs[i]);
        }
    }

    if (o.dump_dist) {
        for (int32_t r = 0; r < logits.rows; ++r) {
            if (rows[r].failed) continue;
            int32_t count = 0;
            sieve_status s = sieve_chain_distribution(chain.get(), logits.data.data(), logits.rows, logits.vocab, r,
                                                      nullptr, nullptr, 0, &count);
            std::vector<int32_t> ids;
            std::vector<float> probs;
            if (s == SIEVE_OK) {
                ids.resize(static_cast<size_t>(count));
                probs.resize(static_cast<size_t>(count));
                s = sieve_chain_distribution(chain.get(), logits.data.data(), logits.rows, logits.vocab, r, ids.data(),
                                             probs.data(), count, &count);
                ids.resize(static_cast<size_t>(std::min<int32_t>(count, static_cast<int32_t>(ids.size()))));
            }
            if (s != SIEVE_OK) {
                if (!sieve::Chain::row_level(s)) sieve::check(s); // a call-level failure: the whole run fails
                failures.library_message = failures.first == SIEVE_OK ? sieve_last_error() : "";
                fail_row(r, s);
                continue;
            }
            note_seed(r, nullptr);
            Json cands = Json::array();
            for (size_t i = 0; i < ids.size(); ++i) cands.push_back({{"id", ids[i]}, {"p", json_float(probs[i])}});
            rows[r].json["count"] = ids.size();
            rows[r].json["candidates"] = std::move(cands);
            std::string& t = rows[r].text;
            t += " " + std::to_string(ids.size()) + " candidates (id p, canonical order)";
            for (size_t i = 0; i < ids.size() && i < kHumanListLimit; ++i)
                t += "\n  " + std::to_string(ids[i]) + "  " + fmt("%.6f", probs[i]);
            if (ids.size() > kHumanListLimit) t += "\n  ... " + std::to_string(ids.size() - kHumanListLimit) + " more";
        }
    }

    if (o.draws > 0) {
        std::vector<sieve_token> last;
        DrawProgress progress(err, o.draws, logits.rows);
        std::vector<int32_t> tokens = chain.draws(logits.data.data(), logits.rows, logits.vocab, o.draws, &last);
        progress.stop();
        const std::string library_message = sieve_last_error();
        for (int32_t r = 0; r < logits.rows; ++r) {
            if (rows[r].failed) continue;
            if (last[r].status != SIEVE_OK) {
                if (failures.first == SIEVE_OK) failures.library_message = library_message;
                fail_row(r, last[r].status);
                continue;
            }
            std::map<int32_t, int64_t> counts;
            for (int32_t i = 0; i < o.draws; ++i) ++counts[tokens[static_cast<size_t>(r) * o.draws + i]];
            std::vector<std::pair<int32_t, int64_t>> sorted(counts.begin(), counts.end());
            std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
            Json c = Json::object();
            for (const auto& [id, n] : sorted) c[std::to_string(id)] = n;
            rows[r].json["draws"] = o.draws;
            rows[r].json["counts"] = std::move(c);
            note_seed(r, nullptr);
            std::string& t = rows[r].text;
            t += "\n  " + std::to_string(o.draws) + " draws, " + std::to_string(sorted.size()) + " distinct tokens (id count share)";
            for (size_t i = 0; i < sorted.size() && i < kHumanListLimit; ++i)
                t += "\n  " + std::to_string(sorted[i].first) + "  " + std::to_string(sorted[i].second) + "  " +
                     fmt("%.4f", static_cast<double>(sorted[i].second) / o.draws);
            if (sorted.size() > kHumanListLimit) t += "\n  ... " + std::to_string(sorted.size() - kHumanListLimit) + " more";
        }
    }

    const int code = failures.first == SIEVE_OK ? kExitOk : exit_code_for(failures.first);
    if (o.json) {
        Json doc = sample_json_header(device, chain, o.sampling, setup, Json(seeds[0]), logits.vocab);
        Json arr = Json::array();
        for (RowResult& r : rows) arr.push_back(std::move(r.json));
        doc["rows"] = std::move(arr);
        print_json(out, doc);
    } else {
        out << "device: " << device.label << "\n";
        out << sample_text_header(chain, o.sampling, setup, seeds);
        if (!setup.history.empty())
            out << "\nhistory: " << setup.history.size() << " token(s) accepted into every row (capacity "
                << setup.history_capacity << ")";
        out << "\nlogits: " << logits.source << " (" << logits.rows << " x " << logits.vocab << ")\n";
        for (const RowResult& r : rows) {
            out << r.text;
            if (seeds_differ && r.json.contains("seed")) out << "  (seed " << r.json["seed"].get<uint32_t>() << ")";
            out << "\n";
        }
    }
    // A script reading stdout alone still sees why the exit status is 3.
    for (const RowResult& r : rows)
        if (r.failed) err << "sieve: error: " << r.error << "\n";
    return code;
}

} // namespace sieve_cli
