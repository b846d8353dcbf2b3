// Issue 35: the flags as a llama.cpp user types them. An empty or malformed
// value is a usage error naming the flag and what it takes; a repeated value
// flag takes the last value; llama.cpp's aliases and --sampling-seq letters
// work; mistyped commands and options are named; a parse error is prefixed
// and, under --json, a JSON document too.
#include "chain_names.hpp"
#include "cli_fixture.hpp"
#include "reference/reference.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace {

using nlohmann::json;
using sieve_test::Proc;

using CliFlags = sieve_test::CliTest;

using sieve_test::kEight;

TEST_F(CliFlags, EmptyValuesAreUsageErrors) {
    const std::string f = write_npy("e.npy", 0, 8, kEight);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--temp", "a number"},        {"--top-p", "a number"},        {"--top-k", "an integer"},
        {"--min-p", "a number"},       {"--seed", "a seed is a 32-bit value"},  {"-s", "a seed is a 32-bit value"},
        {"--mirostat", "mirostat is 0 (off)"}, {"--vocab", "a vocabulary holds at least 1 token"},
        {"--rows", "a call samples at least 1 row"}, {"--samplers", "sampler names"},
        {"--sampling-seq", "sampler letters"}, {"--device", "N|NAME|cpu"}, {"--history", "comma-separated token ids"},
        {"--history-file", "a file"}, {"--logit-bias", "a value"}, {"--dry-sequence-breaker", "a value"},
        {"--repeat-last-n", "an integer"}, {"--xtc-probability", "a number"}, {"--draws", "a row is drawn at least once"},
    };
    for (const auto& [flag, takes] : cases) {
        Proc r = sieve("sample --logits '" + f + "' --device cpu " + flag + " ''");
        EXPECT_EQ(r.code, 2) << flag << ": " << describe(r);
        const std::string name = flag == "-s" ? "--seed" : flag;
        EXPECT_NE(r.err.find("sieve: error: " + name + ": an empty value; "), std::string::npos) << flag << ": " << r.err;
        EXPECT_NE(r.err.find(takes), std::string::npos) << flag << ": " << r.err;
    }
    Proc logits = sieve("sample --logits ''");
    EXPECT_EQ(logits.code, 2) << describe(logits);
    EXPECT_NE(logits.err.find("--logits: an empty value"), std::string::npos) << logits.err;
    Proc bench = sieve("bench --tokens ''");
    EXPECT_EQ(bench.code, 2) << describe(bench);
    EXPECT_NE(bench.err.find("--tokens: an empty value; a case measures at least 1 token"), std::string::npos) << bench.err;
    // With --json, the error is a JSON document as well.
    Proc j = sieve("sample --logits '" + f + "' --device cpu --temp '' --json");
    EXPECT_EQ(j.code, 2) << describe(j);
    EXPECT_EQ(parse(j)["exit_code"], 2);
    EXPECT_NE(parse(j)["message"].get<std::string>().find("--temp"), std::string::npos) << j.out;
    // --draft "" keeps its meaning: no drafts, the bonus token only.
    Proc draft = sieve("sample --logits '" + f + "' --device cpu --draft ''");
    EXPECT_EQ(draft.code, 0) << describe(draft);
}

TEST_F(CliFlags, MalformedValuesSayWhatTheFlagTakes) {
    const std::string f = write_npy("m.npy", 0, 8, kEight);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--temp abc", "--temp: 'abc' is not a number"},
        {"--top-p 0.9x", "--top-p: '0.9x' is not a number"},
        {"--top-k 1.5", "--top-k: '1.5' is not an integer"},
        {"--vocab eight", "--vocab: 'eight' is not an integer; a vocabulary holds at least 1 token"},
        {"--seed x", "--seed: 'x' is not an integer; a seed is a 32-bit value"},
    };
    for (const auto& [flags, words] : cases) {
        Proc r = sieve("sample --logits '" + f + "' --device cpu " + flags);
        EXPECT_EQ(r.code, 2) << flags << ": " << describe(r);
        EXPECT_NE(r.err.find("sieve: error: " + words), std::string::npos) << flags << ": " << r.err;
    }
}

TEST_F(CliFlags, BenchFlagsSayWhatTheyTake) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--tokens 0", "--tokens: 0: a case measures at least 1 token"},
        {"--tokens abc", "--tokens: 'abc' is not an integer; a case measures at least 1 token"},
        {"--warmup -1", "--warmup: -1: a case warms up with 0 or more tokens"},
        {"--twin-budget 0", "--twin-budget: 0: the twin's budget is a positive number of seconds"},
        {"--twin-budget x", "--twin-budget: 'x' is not a number; the twin's budget"},
        {"--calibration-iterations 0", "--calibration-iterations: 0: a calibration measures at least 1 submit"},
        {"--profile-tokens -1", "--profile-tokens: -1: a case profiles 0 or more tokens"},
        {"--vocab 0", "--vocab: 0: a vocabulary holds at least 1 token"},
        {"--rows 5000", "--rows: 5000: a bench call samples 1 to 4096 rows"},
    };
    for (const auto& [flags, words] : cases) {
        Proc r = sieve("bench --suite tiny " + flags);
        EXPECT_EQ(r.code, 2) << flags << ": " << describe(r);
        EXPECT_NE(r.err.find("sieve: error: " + words), std::string::npos) << flags << ": " << r.err;
        EXPECT_EQ(r.err.find("0.000000"), std::string::npos) << flags << ": " << r.err;
        EXPECT_EQ(r.err.find("not in range"), std::string::npos) << flags << ": " << r.err;
    }
    Proc peer = sieve("bench --suite tiny --peer bogus");
    EXPECT_EQ(peer.code, 2) << describe(peer);
    EXPECT_NE(peer.err.find("unknown peer 'bogus'"), std::string::npos) << peer.err;
}

TEST_F(CliFlags, RepeatedValueFlagsTakeTheLast) {
    const std::string f = write_npy("r.npy", 0, 8, kEight);
    Proc r = sieve("sample --logits '" + f + "' --device cpu --json --top-k 5 --top-k 6 --seed 1 --seed 2 --temp 0 "
                   "--temp 1.5 --samplers greedy --samplers 'top_k;dist'");
    ASSERT_EQ(r.code, 0) << describe(r);
    const json doc = parse(r);
    EXPECT_EQ(doc["top_k"], 6);
    EXPECT_EQ(doc["seed"], 2);
    EXPECT_EQ(doc["temp"], 1.5);
    EXPECT_EQ(doc["samplers"], "top_k;dist");
    // Repeatable flags keep every value.
    Proc bias = sieve("sample --logits '" + f + "' --device cpu --json --samplers greedy -l 4-inf -l 1-inf");
    ASSERT_EQ(bias.code, 0) << describe(bias);
    EXPECT_EQ(parse(bias)["rows"][0]["token"], 2);
    EXPECT_EQ(parse(bias)["logit_bias"].size(), 2u);
}

TEST_F(CliFlags, LlamaCppAliases) {
    const std::string f = write_npy("a.npy", 0, 8, kEight);
    const std::string base = "sample --logits '" + f + "' --device cpu --json ";
    Proc seed = sieve(base + "-s 7");
    ASSERT_EQ(seed.code, 0) << describe(seed);
    EXPECT_EQ(parse(seed)["seed"], 7);
    Proc sigma = sieve(base + "--top-nsigma 1.5");
    ASSERT_EQ(sigma.code, 0) << describe(sigma);
    EXPECT_EQ(parse(sigma)["top_n_sigma"], 1.5);
    Proc bias = sieve(base + "--samplers greedy -l 4-inf");
    ASSERT_EQ(bias.code, 0) << describe(bias);
    EXPECT_EQ(parse(bias)["rows"][0]["token"], 1);
    for (const std::string flag : {"--sampling-seq", "--sampler-seq"}) {
        Proc seq = sieve(base + flag + " edskypmxt");
        ASSERT_EQ(seq.code, 0) << flag << ": " << describe(seq);
        EXPECT_EQ(parse(seq)["samplers"], "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature;dist");
    }
    Proc kt = sieve(base + "--sampling-seq kt --dump-dist --top-k 2 --temp 1");
    ASSERT_EQ(kt.code, 0) << describe(kt);
    EXPECT_EQ(parse(kt)["samplers"], "top_k;temperature;dist");
    EXPECT_EQ(parse(kt)["rows"][0]["count"], 2);
    Proc unknown = sieve(base + "--sampling-seq kq");
    EXPECT_EQ(unknown.code, 2) << describe(unknown);
    EXPECT_NE(unknown.err.find("'q' is not a sampler letter"), std::string::npos) << unknown.err;
    Proc both = sieve(base + "--sampling-seq kt --samplers greedy");
    EXPECT_EQ(both.code, 2) << describe(both);
    EXPECT_NE(both.err.find("--samplers and --sampling-seq"), std::string::npos) << both.err;
    Proc mirostat = sieve(base + "--sampling-seq kt --mirostat 2");
    EXPECT_EQ(mirostat.code, 2) << describe(mirostat);
    EXPECT_NE(mirostat.err.find("--sampling-seq"), std::string::npos) << mirostat.err;
}

TEST_F(CliFlags, DrySequenceBreakerNoneDropsTheOnesBefore) {
    const std::string f = write_npy("d.npy", 0, 8, kEight);
    const std::string base = "sample --logits '" + f + "' --device cpu --json --dry-sequence-breaker 3 ";
    Proc none = sieve(base + "--dry-sequence-breaker none");
    ASSERT_EQ(none.code, 0) << describe(none);
    EXPECT_EQ(parse(none)["dry_sequence_breakers"], json::array());
    Proc after = sieve(base + "--dry-sequence-breaker none --dry-sequence-breaker 5,6");
    ASSERT_EQ(after.code, 0) << describe(after);
    EXPECT_EQ(parse(after)["dry_sequence_breakers"], json({{5, 6}}));
}

// llama.cpp's common_sampler_init takes adaptive_p out of the --samplers
// order and ends the chain with it (in place of dist).
TEST_F(CliFlags, AdaptivePRunsLastAsInLlamaCpp) {
    const std::string f = write_npy("p.npy", 0, 8, kEight);
    for (const std::string chain : {"--samplers 'top_k;adaptive_p;temperature'", "--samplers 'adaptive-p,top_k,temperature'",
                                    "--sampling-seq kat"}) {
        Proc r = sieve("sample --logits '" + f + "' --device cpu --json " + chain);
        ASSERT_EQ(r.code, 0) << chain << ": " << describe(r);
        EXPECT_EQ(parse(r)["samplers"], "top_k;temperature;adaptive_p") << chain;
    }
}

TEST_F(CliFlags, UnknownCommandsAndOptionsAreNamed) {
    Proc typo = sieve("sampel --logits x");
    EXPECT_EQ(typo.code, 2) << describe(typo);
    EXPECT_NE(typo.err.find("sieve: error: unknown command 'sampel' (did you mean 'sample'?)"), std::string::npos) << typo.err;
    Proc v = sieve("-v");
    EXPECT_EQ(v.code, 2) << describe(v);
    EXPECT_NE(v.err.find("unknown option '-v'"), std::string::npos) << v.err;
    EXPECT_NE(v.err.find("--version"), std::string::npos) << v.err;
    Proc help = sieve("help");
    EXPECT_EQ(help.code, 0) << describe(help);
    for (const char* c : {"devices", "sample", "bench"}) EXPECT_NE(help.out.find(c), std::string::npos) << help.out;
    for (const char* words : {"A subcommand is required"}) {
        EXPECT_EQ(typo.err.find(words), std::string::npos) << typo.err;
        EXPECT_EQ(v.err.find(words), std::string::npos) << v.err;
    }
}

TEST_F(CliFlags, ParseErrorsArePrefixedAndJson) {
    const std::string f = write_npy("j.npy", 0, 8, kEight);
    Proc r = sieve("sample --logits '" + f + "' --bogus-flag --json");
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_EQ(r.err.rfind("sieve: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("--bogus-flag"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("sieve sample --help"), std::string::npos) << r.err;
    const json doc = parse(r);
    EXPECT_EQ(doc["exit_code"], 2);
    EXPECT_EQ(doc["status"], "usage");
    Proc missing = sieve("sample --json");
    EXPECT_EQ(missing.code, 2) << describe(missing);
    EXPECT_EQ(missing.err.rfind("sieve: error: ", 0), 0u) << missing.err;
    EXPECT_EQ(parse(missing)["exit_code"], 2);
}

// A default window the user never set is not blamed for a small explicit
// capacity: the library's default (64) is held at most at the capacity.
TEST_F(CliFlags, HistoryCapacityDoesNotBlameAnUnsetWindow) {
    const std::string f = write_npy("c.npy", 0, 8, kEight);
    Proc r = sieve("sample --logits '" + f + "' --device cpu --json --history-capacity 2 --history 1,2,3");
    ASSERT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(parse(r)["history_capacity"], 2);
    EXPECT_EQ(parse(r)["repeat_last_n"], 2);
    Proc set = sieve("sample --logits '" + f + "' --device cpu --history-capacity 2 --repeat-last-n 3");
    EXPECT_EQ(set.code, 2) << describe(set);
    EXPECT_NE(set.err.find("--repeat-last-n"), std::string::npos) << set.err;
}

// The CLI's sampler names (for --json's "samplers" and the history check)
// are the library's: every alias and the default chain.
TEST(CliChainNames, MatchTheLibrarys) {
    for (const char* name : {"dry", "top_k", "top_p", "top_n_sigma", "typ_p", "min_p", "temperature", "xtc", "penalties",
                             "adaptive_p", "top-k", "top-p", "top-n-sigma", "nucleus", "typical-p", "typical", "typ-p",
                             "typ", "min-p", "temp", "adaptive-p", "typical_p", "greedy", "dist", "mirostat",
                             "mirostat_v2", "mirostat-v2"}) {
        std::vector<sieve::ref::SamplerKind> kinds;
        std::string message;
        ASSERT_EQ(sieve::ref::parse_chain(name, &kinds, &message), SIEVE_OK) << name << ": " << message;
        EXPECT_EQ(sieve_cli::canonical_sampler_name(name), sieve::ref::sampler_name(kinds.front())) << name;
    }
    EXPECT_STREQ(sieve_cli::kLlamaDefaultSamplers, sieve::ref::kDefaultChain);
    EXPECT_EQ(sieve_cli::samplers_from_letters("edskypmxtia"),
              "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature;infill;adaptive_p");
}

} // namespace
