// `sieve sample --draft IDS` (speculative decoding's verification, sieve_verify)
// run as a user would: results derived by hand and from `sieve sample` run
// position by position over the history; each refused flag combination with
// its exit status and message; the C sample samples/speculative.c.
#include "cli_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
using sieve_test::Proc;

class CliVerify : public sieve_test::CliTest {
protected:
    std::string write_raw(const std::string& name, const std::vector<float>& data) const {
        const std::string p = path(name);
        std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(data.data()), sizeof(float) * data.size());
        return p;
    }
};

constexpr int kVocab = 16;
// The argmax of each of the five positions.
const std::vector<int> kTop = {3, 9, 12, 1, 7};

// Five positions of 16 logits: a low ramp, and the position's kTop entry far above it.
std::vector<float> five_positions() {
    std::vector<float> l;
    for (size_t p = 0; p < kTop.size(); ++p)
        for (int v = 0; v < kVocab; ++v) l.push_back(v == kTop[p] ? 5.0f : static_cast<float>((v * 5) % kVocab) * 0.1f);
    return l;
}

std::vector<int> tokens_of(const json& doc) {
    std::vector<int> t;
    for (const json& x : doc["tokens"]) t.push_back(x["token"].get<int>());
    return t;
}

std::vector<std::string> kinds_of(const json& doc) {
    std::vector<std::string> k;
    for (const json& x : doc["tokens"]) k.push_back(x["kind"].get<std::string>());
    return k;
}

// A greedy chain emits each position's argmax: drafts that are the argmaxes
// are accepted up to the first one that is not, whose position emits its
// argmax (the correction); all accepted, the last position adds the bonus.
TEST_F(CliVerify, GreedyAcceptsTheDraftsUpToTheFirstWrongOne) {
    const std::string f = write_npy("five.npy", 5, kVocab, five_positions());
    for (const std::string device : {"--device cpu", ""}) {
        SCOPED_TRACE(device.empty() ? "default device" : device);
        const std::string base = "sample --logits '" + f + "' --samplers greedy " + device;
        Proc wrong = sieve(base + " --draft 3,9,4,1 --json");
        ASSERT_EQ(wrong.code, 0) << describe(wrong);
        const json w = parse(wrong);
        EXPECT_EQ(w["verify"], "match");
        EXPECT_EQ(w["draft_probs"], "none");
        EXPECT_EQ(w["draft"], json({3, 9, 4, 1}));
        EXPECT_EQ(w["n_accepted"], 2);
        EXPECT_EQ(w["accepted"], json({3, 9}));
        EXPECT_EQ(tokens_of(w), (std::vector<int>{3, 9, 12}));
        EXPECT_EQ(kinds_of(w), (std::vector<std::string>{"accepted", "accepted", "correction"}));
        for (size_t i = 0; i < w["tokens"].size(); ++i) {
            const json& t = w["tokens"][i];
            EXPECT_EQ(t["position"], i);
            EXPECT_EQ(t["step"], i) << "a fresh slot: position i draws at step i";
            EXPECT_NEAR(t["p"].get<double>(), 1.0, 1e-6);
            EXPECT_NEAR(t["logprob"].get<double>(), 0.0, 1e-6);
        }
        EXPECT_EQ(w["tokens"][2]["draft"], 4);

        Proc right = sieve(base + " --draft 3,9,12,1 --json");
        ASSERT_EQ(right.code, 0) << describe(right);
        const json r = parse(right);
        EXPECT_EQ(r["n_accepted"], 4);
        EXPECT_EQ(tokens_of(r), kTop);
        EXPECT_EQ(r["tokens"][4]["kind"], "bonus");
        EXPECT_TRUE(r["tokens"][4]["draft"].is_null());

        Proc first = sieve(base + " --draft 2,9,12,1 --json");
        ASSERT_EQ(first.code, 0) << describe(first);
        EXPECT_EQ(parse(first)["n_accepted"], 0);
        EXPECT_EQ(tokens_of(parse(first)), (std::vector<int>{3}));

        Proc text = sieve(base + " --draft 3,9,4,1");
        ASSERT_EQ(text.code, 0) << describe(text);
        EXPECT_NE(text.out.find("accepted: 3,9\n"), std::string::npos) << text.out;
        EXPECT_NE(text.out.find("n_accepted: 2 of 4"), std::string::npos) << text.out;
        EXPECT_NE(text.out.find("position 2: token 12  p 1.000000  logprob 0.000000  step 2  correction (draft 4)"),
                  std::string::npos)
            << text.out;
    }
    // No drafts: one position, its token.
    const std::vector<float> five = five_positions();
    const std::string one = write_npy("one.npy", 0, kVocab, std::vector<float>(five.begin(), five.begin() + kVocab));
    Proc none = sieve("sample --logits '" + one + "' --samplers greedy --device cpu --draft '' --json");
    ASSERT_EQ(none.code, 0) << describe(none);
    EXPECT_EQ(parse(none)["n_accepted"], 0);
    EXPECT_EQ(tokens_of(parse(none)), (std::vector<int>{3}));
    EXPECT_EQ(parse(none)["tokens"][0]["kind"], "bonus");
}

// Position i sees the history plus drafts 0..i-1: with a strong repeat
// penalty, an accepted draft is penalized at the next positions. The tokens
// are those of `sieve sample` run on each position alone with the history
// grown by the tokens before it, and those derived by hand.
TEST_F(CliVerify, MatchSeesTheHistoryAndTheDraftsBeforeEachPosition) {
    // Row i: `top` at 3, `second` at 2, the rest in [0, 0.7].
    const std::vector<std::pair<int, int>> rows = {{5, 2}, {2, 6}, {4, 1}, {6, 0}, {2, 3}};
    const int v = 8;
    std::vector<float> l;
    for (const auto& [top, second] : rows)
        for (int t = 0; t < v; ++t) l.push_back(t == top ? 3.0f : t == second ? 2.0f : static_cast<float>(t) * 0.1f);
    const std::string f = write_npy("pen.npy", rows.size(), v, l);
    // --history 5 penalizes row 0's top; each accepted token its later rows' tops.
    const std::vector<int> expected = {2, 6, 4, 0, 3};
    const std::string flags = " --samplers 'penalties;greedy' --repeat-penalty 10 --history 5 ";
    for (const std::string device : {"--device cpu", ""}) {
        SCOPED_TRACE(device.empty() ? "default device" : device);
        Proc all = sieve("sample --logits '" + f + "'" + flags + device + " --draft 2,6,4,0 --json");
        ASSERT_EQ(all.code, 0) << describe(all);
        const json doc = parse(all);
        EXPECT_EQ(doc["n_accepted"], 4);
        EXPECT_EQ(tokens_of(doc), expected);
        EXPECT_EQ(doc["history"], json({5}));
        // Position by position: row i alone, the history holding what came before it.
        std::string history = "5";
        for (size_t i = 0; i < rows.size(); ++i) {
            const std::string row = write_npy("row" + std::to_string(i) + ".npy", 0, v,
                                              std::vector<float>(l.begin() + i * v, l.begin() + (i + 1) * v));
            Proc one = sieve("sample --logits '" + row + "'" + flags.substr(0, flags.find("--history")) +
                             "--history " + history + " " + device + " --json");
            ASSERT_EQ(one.code, 0) << describe(one);
            const json o = parse(one);
            EXPECT_EQ(o["rows"][0]["token"], doc["tokens"][i]["token"]) << "position " << i;
            EXPECT_NEAR(o["rows"][0]["logprob"].get<double>(), doc["tokens"][i]["logprob"].get<double>(), 1e-6);
            history += "," + std::to_string(o["rows"][0]["token"].get<int>());
        }
        // A draft that would be the argmax without the history is rejected.
        Proc stale = sieve("sample --logits '" + f + "'" + flags + device + " --draft 2,2,4,0 --json");
        ASSERT_EQ(stale.code, 0) << describe(stale);
        EXPECT_EQ(parse(stale)["n_accepted"], 1);
        EXPECT_EQ(tokens_of(parse(stale)), (std::vector<int>{2, 6}));
    }
}

// Rejection against the draft model's probabilities, each draft's alone or
// dense rows: under greedy the chain's distribution is one-hot, so a draft
// that is the argmax is always accepted (p = 1 >= u q) and any other never
// (p = 0); the correction is the argmax (the residual's only mass).
TEST_F(CliVerify, RejectionWithPerTokenOrDenseDraftProbabilities) {
    const std::string f = write_npy("five.npy", 5, kVocab, five_positions());
    const std::string token_q = write_raw("q.f32", {0.5f, 0.25f, 1.0f, 0.75f});
    std::vector<float> uniform(4 * kVocab, 1.0f / kVocab);
    const std::string dense_npy = write_npy("dense.npy", 4, kVocab, uniform);
    const std::string dense_raw = write_raw("dense.f32", uniform);
    for (const std::string device : {"--device cpu", ""}) {
        for (const auto& [q, kind] : std::vector<std::pair<std::string, std::string>>{
                 {token_q, "token"}, {dense_npy, "dense"}, {dense_raw, "dense"}}) {
            for (const std::string mode : {"", "--verify rejection "}) {
                SCOPED_TRACE(device + " " + q + " " + mode);
                Proc r = sieve("sample --logits '" + f + "' --samplers greedy --seed 7 " + device + " --draft 3,9,4,1 " +
                               mode + "--draft-probs '" + q + "' --json");
                ASSERT_EQ(r.code, 0) << describe(r);
                const json doc = parse(r);
                EXPECT_EQ(doc["verify"], "rejection");
                EXPECT_EQ(doc["draft_probs"], kind);
                EXPECT_EQ(doc["n_accepted"], 2);
                EXPECT_EQ(tokens_of(doc), (std::vector<int>{3, 9, 12}));
            }
        }
    }
}

// The rejection mode accepts with probability min(1, p / q): two equally
// likely tokens, a draft of one with q = 1 is accepted about half the time
// over seeds, with q = 0.5 always.
TEST_F(CliVerify, RejectionAcceptsWithProbabilityPOverQ) {
    std::vector<float> l(2 * 4, -30.0f);
    l[1] = l[2] = 0.0f;           // position 0: ids 1 and 2, p = 0.5 each
    l[4 + 3] = 0.0f;              // position 1 (the bonus): id 3
    const std::string f = write_npy("half.npy", 2, 4, l);
    const std::string q = write_raw("q.f32", {1.0f});
    int accepted = 0;
    const int runs = 40;
    for (int seed = 0; seed < runs; ++seed) {
        Proc r = sieve("sample --logits '" + f + "' --samplers 'temperature;dist' --temp 1 --seed " +
                       std::to_string(seed) + " --device cpu --draft 1 --draft-probs '" + q + "' --json");
        ASSERT_EQ(r.code, 0) << describe(r);
        const json doc = parse(r);
        const std::vector<int> t = tokens_of(doc);
        if (doc["n_accepted"] == 1) {
            ++accepted;
            EXPECT_EQ(t, (std::vector<int>{1, 3}));
        } else {
            EXPECT_EQ(t, (std::vector<int>{2})) << "the residual max(0, p - q) holds id 2 alone";
        }
    }
    EXPECT_GT(accepted, 8) << "binomial(40, 0.5) is below 9 with probability < 1e-4";
    EXPECT_LT(accepted, 32);
    // q = 0.5 = p: always accepted (min(1, p / q) = 1), where matching a draw
    // would accept half of the time.
    const std::string half = write_raw("half.f32", {0.5f});
    for (int seed = 0; seed < 12; ++seed) {
        Proc r = sieve("sample --logits '" + f + "' --samplers 'temperature;dist' --temp 1 --seed " +
                       std::to_string(seed) + " --device cpu --draft 1 --draft-probs '" + half + "' --json");
        ASSERT_EQ(r.code, 0) << describe(r);
        EXPECT_EQ(tokens_of(parse(r)), (std::vector<int>{1, 3})) << "seed " << seed;
    }
}

TEST_F(CliVerify, RefusedCombinationsSayWhy) {
    const std::string f = write_npy("five.npy", 5, kVocab, five_positions());
    const std::string q = write_raw("q.f32", {1.0f, 1.0f, 1.0f, 1.0f});
    const std::string base = "sample --logits '" + f + "' --device cpu ";
    struct Case {
        std::string args;
        int code;
        std::string message;
    };
    const std::vector<Case> cases = {
        {"--draft-probs '" + q + "'", 2, "--draft-probs gives the draft model's probabilities: it needs --draft IDS"},
        {"--verify rejection", 2, "--verify rejection verifies draft tokens: it needs --draft IDS"},
        {"--draft 3,9,12,1 --verify match --draft-probs '" + q + "'", 2, "--verify match takes no --draft-probs"},
        {"--draft 3,9,12,1 --verify rejection", 2, "--verify rejection needs --draft-probs FILE"},
        {"--draft 3,9,12,1 --verify greedy", 2, "--verify"},
        {"--draft 3,9,12,1 --dump-dist", 2, "cannot be combined with --dump-dist"},
        {"--draft 3,9,12,1 --draws 5", 2, "cannot be combined with --draws"},
        {"--draft 3,9,12,1 --logprobs 2", 2, "cannot be combined with --logprobs"},
        {"--draft 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,0,1", 2, "17 draft tokens, at most 16"},
        {"--draft 3,x,12,1", 2, "--draft '3,x,12,1': token 1 ('x') is not a token id"},
        {"--draft 3,9,16,1", 2, "--draft: token 2 (16) is outside the vocabulary of 16 tokens"},
        {"--draft 3,9", 3, "5 row(s), but 2 draft token(s) need 3 (positions 0..2: n_draft + 1)"},
        {"--draft 3,9,12,1 --draft-probs '" + write_raw("three.f32", {1, 1, 1}) + "'", 3,
         "3 values; --draft-probs takes 4 values (each draft token's probability) or 4 x 16 = 64"},
        {"--draft 3,9,12,1 --draft-probs '" + write_npy("t.npy", kVocab, 4, std::vector<float>(64, 0.25f)) + "'", 3,
         "shape [16, 4]"},
        {"--draft 3,9,12,1 --draft-probs '" + write_raw("bad.f32", {1.0f, 2.0f, 1.0f, 1.0f}) + "'", 3,
         "cannot verify the drafts"},
        {"--draft 3,9,12,1 --draft-probs '" + write_npy("half.npy", 4, kVocab, std::vector<float>(64, 0.5f / kVocab)) + "'",
         3, "cannot verify the drafts"},
        {"--draft 3,9,12,1 --mirostat 2 --draft-probs '" + q + "'", 2, "mirostat"},
        {"--draft 3,9,12,1 --draft-probs '" + path("missing.f32") + "'", 3, "missing.f32"},
    };
    for (const Case& c : cases) {
        Proc r = sieve(base + c.args);
        EXPECT_EQ(r.code, c.code) << c.args << "\n" << describe(r);
        EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
        Proc j = sieve(base + c.args + " --json");
        EXPECT_EQ(j.code, c.code) << c.args << " --json\n" << describe(j);
    }
}

// A position the chain cannot sample fails the sequence: its status, exit 3.
TEST_F(CliVerify, NonFiniteLogitsFailTheSequence) {
    std::vector<float> l = five_positions();
    l[kVocab + 4] = NAN;  // position 1
    const std::string f = write_npy("nan.npy", 5, kVocab, l);
    for (const std::string device : {"--device cpu", ""}) {
        Proc r = sieve("sample --logits '" + f + "' --samplers greedy " + device + " --draft 3,9,12,1 --json");
        EXPECT_EQ(r.code, 3) << describe(r);
        const json doc = parse(r);
        EXPECT_EQ(doc["status"], "non_finite_logit") << r.out;
        EXPECT_NE(doc["message"].get<std::string>().find("position 1"), std::string::npos) << r.out;
        EXPECT_FALSE(doc.contains("tokens")) << r.out;
    }
}

// The C sample: two sequences' drafts of different lengths verified in one
// call per step, each token checked against sampling position by position;
// it fails on any difference or failed status.
TEST_F(CliVerify, SpeculativeExampleSucceeds) {
    Proc r = run_program(SIEVE_SPECULATIVE_PATH, "");
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_NE(r.out.find("speculative: ok"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("step 4:"), std::string::npos) << r.out;
}

} // namespace
