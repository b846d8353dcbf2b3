#include "sample_verify.hpp"

#include "exit_codes.hpp"
#include "json_output.hpp"
#include "logits_source.hpp"
#include "sample_json.hpp"
#include "text_format.hpp"

#include <sieve/sieve.hpp>

#include <string>
#include <vector>

namespace sieve_cli {
namespace {

CliError usage(const std::string& message) { return CliError(kExitUsage, message); }

// The flags --draft cannot go with, and the ones that need it.
void check_flags(const SampleOptions& o) {
    if (!o.draft) {
        if (!o.draft_probs.empty()) throw usage("--draft-probs gives the draft model's probabilities: it needs --draft IDS");
        throw usage("--verify " + o.verify + " verifies draft tokens: it needs --draft IDS");
    }
    if (o.dump_dist) throw usage("--draft verifies drafts and cannot be combined with --dump-dist");
    if (o.draws > 0) throw usage("--draft verifies drafts and cannot be combined with --draws");
    if (o.logprobs >= 0) throw usage("--draft verifies drafts and cannot be combined with --logprobs");
    if (o.verify == "match" && !o.draft_probs.empty())
        throw usage("--verify match takes no --draft-probs (the draft model's probabilities are the rejection "
                    "mode's: --verify rejection)");
    if (o.verify == "rejection" && o.draft_probs.empty())
        throw usage("--verify rejection needs --draft-probs FILE (the draft model's probability of each draft "
                    "token, or its whole rows)");
}

// "" is no drafts (only the bonus token is sampled).
std::vector<int32_t> parse_draft(const std::string& text) {
    if (text.find_first_not_of(" \t") == std::string::npos) return {};
    std::vector<int32_t> ids = parse_token_ids("--draft", text);
    if (ids.size() > SIEVE_MAX_DRAFT)
        throw usage("--draft: " + std::to_string(ids.size()) + " draft tokens, at most " +
                    std::to_string(SIEVE_MAX_DRAFT) + " (SIEVE_MAX_DRAFT)");
    return ids;
}

struct DraftProbs {
    sieve_draft_probs kind = SIEVE_DRAFT_PROBS_NONE;
    std::vector<float> values;
};

// [n_draft] values: each draft token's q (SIEVE_DRAFT_PROBS_TOKEN);
// [n_draft, vocab]: q's whole rows (SIEVE_DRAFT_PROBS_DENSE). Told apart by size.
DraftProbs load_draft_probs(const std::string& path, size_t n_draft, int32_t vocab) {
    FloatInput f = load_floats(path, "--draft-probs");
    const size_t dense = n_draft * static_cast<size_t>(vocab);
    const std::string expected = "--draft-probs takes " + std::to_string(n_draft) +
                                 " values (each draft token's probability) or " + std::to_string(n_draft) + " x " +
                                 std::to_string(vocab) + " = " + std::to_string(dense) +
                                 " (the draft model's rows over the vocabulary)";
    DraftProbs p;
    if (f.data.size() == n_draft) p.kind = SIEVE_DRAFT_PROBS_TOKEN;
    else if (f.data.size() == dense) p.kind = SIEVE_DRAFT_PROBS_DENSE;
    else throw CliError(kExitBadInput, path + ": " + std::to_string(f.data.size()) + " values; " + expected);
    if (f.npy && f.shape.size() == 2 && p.kind == SIEVE_DRAFT_PROBS_DENSE &&
        (f.shape[0] != n_draft || f.shape[1] != static_cast<size_t>(vocab)))
        throw CliError(kExitBadInput, path + ": shape [" + std::to_string(f.shape[0]) + ", " +
                                          std::to_string(f.shape[1]) + "]; " + expected);
    p.values = std::move(f.data);
    return p;
}

const char* probs_name(sieve_draft_probs kind) {
    switch (kind) {
    case SIEVE_DRAFT_PROBS_DENSE: return "dense";
    case SIEVE_DRAFT_PROBS_TOKEN: return "token";
    default: return "none";
    }
}

// What each emitted token is: an accepted draft, the correction at the first
// rejected draft, or the bonus after the last draft.
const char* token_kind(size_t position, int32_t n_accepted, size_t n_draft) {
    if (static_cast<int32_t>(position) < n_accepted) return "accepted";
    return position < n_draft ? "correction" : "bonus";
}

std::string ids_text(const std::vector<int32_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s.empty() ? "(none)" : s;
}

} // namespace

void add_draft_flags(CLI::App& cmd, SampleOptions& o) {
    cmd.add_option_function<std::string>(
           "--draft", [&o](const std::string& ids) { o.draft = ids; },
           "verify these comma-separated draft token ids (0 to 16; \"\" = none) as speculative decoding does "
           "(sieve_verify): --logits must then hold n_draft + 1 rows, row i the model's output after the "
           "history and drafts 0..i-1; prints the accepted drafts and the emitted tokens")
        ->type_name("IDS");
    cmd.add_option("--draft-probs", o.draft_probs,
                   "the draft model's probabilities for --verify rejection (implied): a .npy or raw float32 file of "
                   "n_draft values (each draft token's q, e.g. 1 for a greedy drafter) or n_draft x vocab values "
                   "(q's rows over the vocabulary), told apart by their count")
        ->type_name("FILE");
    cmd.add_option("--verify", o.verify,
                   "how --draft is verified: match (llama.cpp's: sample each position, stop at the first token "
                   "that differs from the draft; the default) or rejection (speculative sampling against "
                   "--draft-probs)")
        ->check(CLI::IsMember({"match", "rejection"}));
}

bool verifies_drafts(const SampleOptions& o) { return o.draft || !o.draft_probs.empty() || !o.verify.empty(); }

int run_sample_verify(const SampleOptions& o, std::ostream& out, std::ostream& err) {
    check_flags(o);
    const std::vector<int32_t> draft = parse_draft(*o.draft);
    const size_t n_draft = draft.size();
    const sieve_verify_mode mode =
        o.verify == "rejection" || !o.draft_probs.empty() ? SIEVE_VERIFY_REJECTION : SIEVE_VERIFY_MATCH;
    const Logits logits = load_logits(o.logits, o.vocab, o.rows);
    const int32_t positions = static_cast<int32_t>(n_draft) + 1;
    if (logits.rows != positions)
        throw CliError(kExitBadInput, logits.source + ": " + std::to_string(logits.rows) + " row(s), but " +
                                          std::to_string(n_draft) + " draft token(s) need " +
                                          std::to_string(positions) + " (positions 0.." + std::to_string(n_draft) +
                                          ": n_draft + 1)");
    for (size_t i = 0; i < n_draft; ++i)
        if (draft[i] >= logits.vocab)
            throw usage("--draft: token " + std::to_string(i) + " (" + std::to_string(draft[i]) +
                        ") is outside the vocabulary of " + std::to_string(logits.vocab) + " tokens");
    DraftProbs probs;
    if (mode == SIEVE_VERIFY_REJECTION) probs = load_draft_probs(o.draft_probs, n_draft, logits.vocab);

    Device device = open_device(o.device);
    ChainSetup setup;
    sieve::Chain chain = make_chain(device, o.sampling, positions, logits.vocab, &setup);
    sieve_draft d;
    sieve_draft_init(&d, draft.empty() ? nullptr : draft.data(), static_cast<int32_t>(n_draft));
    d.probs_kind = probs.kind;
    d.probs = probs.values.empty() ? nullptr : probs.values.data();
    sieve_logits view;
    sieve_logits_init(&view, logits.data.data(), SIEVE_DTYPE_F32, positions, logits.vocab);
    sieve::Chain::Verified v;
    try {
        v = chain.verify(view, {d}, mode).at(0);
    } catch (const sieve::Error& e) {
        throw CliError(exit_code_for(e.status()), std::string("cannot verify the drafts: ") + e.what(), e.status());
    }
    const std::string message = v.status == SIEVE_OK ? "" : sieve_last_error();
    const std::vector<uint32_t> seeds = row_seeds(chain, 1);  // the sequence's: one slot, row 0's seed
    const char* mode_name = mode == SIEVE_VERIFY_MATCH ? "match" : "rejection";
    const std::vector<int32_t> accepted(draft.begin(), draft.begin() + (v.status == SIEVE_OK ? v.n_accepted : 0));

    if (o.json) {
        Json doc = sample_json_header(device, chain, o.sampling, setup, Json(seeds[0]), logits.vocab);
        doc["verify"] = mode_name;
        doc["draft_probs"] = probs_name(probs.kind);
        doc["draft"] = draft;
        if (v.status != SIEVE_OK) {
            doc["status"] = sieve_status_name(v.status);
            doc["message"] = message;
        } else {
            doc["n_accepted"] = v.n_accepted;
            doc["accepted"] = accepted;
            Json tokens = Json::array();
            for (size_t i = 0; i < v.tokens.size(); ++i) {
                const sieve_token& t = v.tokens[i];
                Json j;
                j["position"] = i;
                j["token"] = t.token;
                j["p"] = json_float(t.p);
                j["logprob"] = json_float(t.logprob);
                j["step"] = t.step;
                j["kind"] = token_kind(i, v.n_accepted, n_draft);
                j["draft"] = i < n_draft ? Json(draft[i]) : Json(nullptr);
                tokens.push_back(std::move(j));
            }
            doc["tokens"] = std::move(tokens);
        }
        print_json(out, doc);
    } else {
        out << "device: " << device.label << "\n";
        out << sample_text_header(chain, o.sampling, setup, seeds);
        if (!setup.history.empty())
            out << "\nhistory: " << setup.history.size() << " token(s) accepted before the drafts (capacity "
                << setup.history_capacity << ")";
        out << "\nlogits: " << logits.source << " (" << logits.rows << " x " << logits.vocab << "): positions 0.."
            << n_draft << "\n";
        out << "verify: " << mode_name << ", draft " << ids_text(draft);
        if (probs.kind != SIEVE_DRAFT_PROBS_NONE) out << ", draft probabilities: " << probs_name(probs.kind);
        out << "\n";
        if (v.status != SIEVE_OK) {
            out << "error " << sieve_status_name(v.status) << ": " << message << "\n";
        } else {
            for (size_t i = 0; i < v.tokens.size(); ++i) {
                const sieve_token& t = v.tokens[i];
                out << "position " << i << ": token " << t.token << "  p " << fixed(t.p, 6) << "  logprob "
                    << fixed(t.logprob, 6) << "  step " << t.step << "  " << token_kind(i, v.n_accepted, n_draft);
                if (i < n_draft) out << " (draft " << draft[i] << ")";
                out << "\n";
            }
            out << "accepted: " << ids_text(accepted) << "\n";
            out << "n_accepted: " << v.n_accepted << " of " << n_draft << "\n";
        }
    }
    if (v.status != SIEVE_OK) err << "sieve: error: " << sieve_status_name(v.status) << ": " << message << "\n";
    return v.status == SIEVE_OK ? kExitOk : exit_code_for(v.status);
}

} // namespace sieve_cli
