// The `sieve` binary (SIEVE_CLI_PATH) and the minimal C example
// (SIEVE_MINIMAL_PATH), run as a user would: output parsed, exit statuses checked.
#include "cli_fixture.hpp"
#include "npy.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdlib.h>
#include <string>
#include <utility>
#include <vector>

namespace {

using nlohmann::json;

using sieve_test::Proc;

using Cli = sieve_test::CliTest;

// softmax(l / t)
std::vector<double> softmax(const std::vector<float>& l, double t) {
    double m = *std::max_element(l.begin(), l.end());
    std::vector<double> p(l.size());
    double s = 0;
    for (size_t i = 0; i < l.size(); ++i) s += p[i] = std::exp((l[i] - m) / t);
    for (double& x : p) x /= s;
    return p;
}

// Eight logits with a tie (ids 2 and 5) to check the canonical order.
using sieve_test::kEight;

TEST_F(Cli, DevicesJsonParses) {
    Proc r = sieve("devices --json");
    ASSERT_EQ(r.code, 0) << describe(r);
    json doc = parse(r);
    ASSERT_TRUE(doc.contains("devices") && doc["devices"].is_array());
    ASSERT_GE(doc["devices"].size(), 1u) << "no Vulkan device listed (lavapipe expected)";
    int defaults = 0;
    for (size_t i = 0; i < doc["devices"].size(); ++i) {
        const json& d = doc["devices"][i];
        EXPECT_EQ(d["index"].get<size_t>(), i);
        EXPECT_TRUE(d["name"].is_string() && !d["name"].get<std::string>().empty());
        EXPECT_TRUE(d["type"].is_string());
        EXPECT_GT(d["max_storage_buffer_range"].get<uint64_t>(), 0u);
        EXPECT_GT(d["max_workgroup_size"].get<uint32_t>(), 0u);
        EXPECT_TRUE(d["features"].is_array());
        if (d["default"].get<bool>()) {
            ++defaults;
            EXPECT_EQ(doc["default"].get<size_t>(), i);
        }
    }
    EXPECT_EQ(defaults, 1);
    Proc human = sieve("devices");
    ASSERT_EQ(human.code, 0) << describe(human);
    EXPECT_NE(human.out.find("(default)"), std::string::npos) << human.out;
}

TEST_F(Cli, SampleJsonGreedyOnNpy) {
    std::vector<float> l(2 * 16);
    for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>((i * 7) % 16) * 0.25f;
    l[0 * 16 + 9] = 10.0f;
    l[1 * 16 + 3] = 10.0f;
    const std::string f = write_npy("two.npy", 2, 16, l);
    Proc r = sieve("sample --logits '" + f + "' --samplers greedy --device cpu --json");
    ASSERT_EQ(r.code, 0) << describe(r);
    json doc = parse(r);
    EXPECT_TRUE(doc["device"].is_string());
    ASSERT_EQ(doc["rows"].size(), 2u);
    EXPECT_EQ(doc["rows"][0]["row"], 0);
    EXPECT_EQ(doc["rows"][0]["token"], 9);
    EXPECT_EQ(doc["rows"][1]["row"], 1);
    EXPECT_EQ(doc["rows"][1]["token"], 3);
    for (const json& row : doc["rows"]) {
        EXPECT_NEAR(row["p"].get<double>(), 1.0, 1e-6);  // greedy: the whole mass on one token
        EXPECT_NEAR(row["logprob"].get<double>(), 0.0, 1e-6);
    }
}

TEST_F(Cli, SampleReportsAndReproducesTheSeed) {
    std::vector<float> flat(64, 0.0f);  // uniform: the token depends on the seed only
    const std::string f = write_npy("flat.npy", 0, 64, flat);
    Proc a = sieve("sample --logits '" + f + "' --samplers 'temperature;dist' --device cpu --json");
    ASSERT_EQ(a.code, 0) << describe(a);
    json da = parse(a);
    ASSERT_TRUE(da.contains("seed")) << a.out;
    const uint32_t seed = da["seed"].get<uint32_t>();
    EXPECT_NE(seed, 0xFFFFFFFFu);  // the seed actually used, not the "random" marker
    Proc b = sieve("sample --logits '" + f + "' --samplers 'temperature;dist' --device cpu --json --seed " +
                  std::to_string(seed));
    ASSERT_EQ(b.code, 0) << describe(b);
    json db = parse(b);
    EXPECT_EQ(db["seed"], seed);
    EXPECT_EQ(db["rows"][0]["token"], da["rows"][0]["token"]);
    Proc human = sieve("sample --logits '" + f + "' --samplers 'temperature;dist' --device cpu --seed 5");
    ASSERT_EQ(human.code, 0) << describe(human);
    EXPECT_NE(human.out.find("seed 5"), std::string::npos) << human.out;
    EXPECT_NE(human.out.find("row 0: token "), std::string::npos) << human.out;
}

TEST_F(Cli, CpuTwinAndDefaultDeviceAgreeOnGreedy) {
    std::vector<float> l(3 * 1000);
    for (size_t i = 0; i < l.size(); ++i) l[i] = std::sin(static_cast<float>(i) * 0.37f) * 4.0f;
    const int expected[3] = {123, 456, 999};
    for (int r = 0; r < 3; ++r) l[r * 1000 + expected[r]] = 9.0f;
    const std::string f = write_npy("g.npy", 3, 1000, l);
    for (const std::string chain : {"greedy", "'temperature;dist' --temp 0"}) {
        Proc cpu = sieve("sample --logits '" + f + "' --samplers " + chain + " --device cpu --json");
        Proc dev = sieve("sample --logits '" + f + "' --samplers " + chain + " --json");
        ASSERT_EQ(cpu.code, 0) << describe(cpu);
        ASSERT_EQ(dev.code, 0) << describe(dev);
        json jc = parse(cpu), jd = parse(dev);
        EXPECT_NE(jc["device"], jd["device"]);
        for (int r = 0; r < 3; ++r) {
            EXPECT_EQ(jc["rows"][r]["token"], expected[r]) << chain;
            EXPECT_EQ(jd["rows"][r]["token"], expected[r]) << chain;
        }
    }
}

TEST_F(Cli, DumpDistIsNormalizedInCanonicalOrder) {
    const std::string f = write_npy("eight.npy", 0, 8, kEight);
    const std::vector<double> want = softmax(kEight, 0.8);
    for (const std::string device : {"--device cpu", ""}) {
        Proc r = sieve("sample --logits '" + f + "' --samplers 'temperature;dist' --temp 0.8 --dump-dist --json " + device);
        ASSERT_EQ(r.code, 0) << describe(r);
        json doc = parse(r);
        ASSERT_EQ(doc["rows"].size(), 1u);
        const json& c = doc["rows"][0]["candidates"];
        ASSERT_EQ(c.size(), 8u) << "temperature;dist keeps every token";
        double sum = 0;
        for (size_t i = 0; i < c.size(); ++i) {
            const int id = c[i]["id"];
            const double p = c[i]["p"];
            ASSERT_GE(id, 0);
            ASSERT_LT(id, 8);
            EXPECT_NEAR(p, want[id], 1e-5) << device << " id " << id;
            sum += p;
            if (i > 0) {
                const double prev = c[i - 1]["p"];
                const int prev_id = c[i - 1]["id"];
                EXPECT_TRUE(prev > p || (prev == p && prev_id < id)) << device << " order at " << i;
            }
        }
        EXPECT_NEAR(sum, 1.0, 1e-5) << device;
        EXPECT_EQ(c[0]["id"], 4);
        EXPECT_EQ(c[1]["id"], 1);
        EXPECT_EQ(c[2]["id"], 2);  // tied with 5: the lower id first
        EXPECT_EQ(c[3]["id"], 5);
    }
}

TEST_F(Cli, DrawCountsSumToNAndFollowTheDistribution) {
    std::vector<float> two(16);
    for (int i = 0; i < 8; ++i) two[i] = two[8 + i] = kEight[i];
    two[8 + 7] = 4.0f;  // row 1 differs: id 7 is its top token
    const std::string f = write_npy("draws.npy", 2, 8, two);
    const int n = 4000;
    Proc r = sieve("sample --logits '" + f + "' --samplers 'temperature;dist' --temp 1 --seed 7 --draws " +
                  std::to_string(n) + " --device cpu --json");
    ASSERT_EQ(r.code, 0) << describe(r);
    json doc = parse(r);
    ASSERT_EQ(doc["rows"].size(), 2u);
    for (int row = 0; row < 2; ++row) {
        const std::vector<float> l(two.begin() + row * 8, two.begin() + row * 8 + 8);
        const std::vector<double> p = softmax(l, 1.0);
        const json& counts = doc["rows"][row]["counts"];
        ASSERT_TRUE(counts.is_object());
        long total = 0;
        for (auto it = counts.begin(); it != counts.end(); ++it) {
            const int id = std::stoi(it.key());
            ASSERT_GE(id, 0);
            ASSERT_LT(id, 8);
            const long c = it.value().get<long>();
            total += c;
            const double sd = std::sqrt(n * p[id] * (1 - p[id]));
            EXPECT_NEAR(static_cast<double>(c), n * p[id], 5 * sd + 1) << "row " << row << " id " << id;
        }
        EXPECT_EQ(total, n) << "row " << row;
    }
    EXPECT_GT(doc["rows"][1]["counts"]["7"].get<long>(), doc["rows"][0]["counts"].value("7", 0L));
    // The same draws on the device sum to N as well.
    Proc d = sieve("sample --logits '" + f + "' --samplers 'temperature;dist' --seed 7 --draws 500 --json");
    ASSERT_EQ(d.code, 0) << describe(d);
    json dd = parse(d);
    for (const json& row : dd["rows"]) {
        long total = 0;
        for (auto it = row["counts"].begin(); it != row["counts"].end(); ++it) total += it.value().get<long>();
        EXPECT_EQ(total, 500);
    }
}

TEST_F(Cli, TruncatedNpyIsBadInput) {
    const std::string f = write_npy("t.npy", 2, 100, std::vector<float>(200, 1.0f));
    std::filesystem::resize_file(f, std::filesystem::file_size(f) - 10);
    Proc r = sieve("sample --logits '" + f + "' --samplers greedy --device cpu");
    EXPECT_EQ(r.code, 3) << describe(r);
    EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
    Proc j = sieve("sample --logits '" + f + "' --samplers greedy --device cpu --json");
    EXPECT_EQ(j.code, 3) << describe(j);
    EXPECT_EQ(parse(j)["exit_code"], 3);
    Proc missing = sieve("sample --logits '" + path("missing.npy") + "' --samplers greedy --device cpu");
    EXPECT_EQ(missing.code, 3) << describe(missing);
}

TEST_F(Cli, RawFloat32) {
    std::vector<float> l = {0.0f, 1.0f, 5.0f, 2.0f, 7.0f, 0.0f, 1.0f, 1.0f};  // 2 rows x 4
    const std::string f = path("l.f32");
    std::ofstream(f, std::ios::binary).write(reinterpret_cast<const char*>(l.data()), sizeof(float) * l.size());
    Proc r = sieve("sample --logits '" + f + "' --vocab 4 --samplers greedy --device cpu --json");
    ASSERT_EQ(r.code, 0) << describe(r);
    json doc = parse(r);
    ASSERT_EQ(doc["rows"].size(), 2u);
    EXPECT_EQ(doc["rows"][0]["token"], 2);
    EXPECT_EQ(doc["rows"][1]["token"], 0);
    Proc no_vocab = sieve("sample --logits '" + f + "' --samplers greedy --device cpu");
    EXPECT_EQ(no_vocab.code, 2) << describe(no_vocab);
    EXPECT_NE(no_vocab.err.find("--vocab"), std::string::npos) << no_vocab.err;
    Proc bad_size = sieve("sample --logits '" + f + "' --vocab 3 --samplers greedy --device cpu");
    EXPECT_EQ(bad_size.code, 3) << describe(bad_size);
}

// --logprobs N: the token's raw log-probability and the top N, by hand for
// logits {0, 1, 5, 2} (greedy picks 2), on the twin and the device.
TEST_F(Cli, LogprobsByHand) {
    std::vector<float> l = {0.0f, 1.0f, 5.0f, 2.0f};
    const std::string f = path("lp.f32");
    std::ofstream(f, std::ios::binary).write(reinterpret_cast<const char*>(l.data()), sizeof(float) * l.size());
    const double log_z = std::log(1.0 + std::exp(1.0) + std::exp(5.0) + std::exp(2.0));
    for (const char* device : {"cpu", "0"}) {
        SCOPED_TRACE(device);
        Proc r = sieve("sample --logits '" + f + "' --vocab 4 --samplers greedy --logprobs 3 --json --device " + device);
        ASSERT_EQ(r.code, 0) << describe(r);
        json row = parse(r)["rows"][0];
        EXPECT_EQ(row["token"], 2);
        EXPECT_NEAR(row["raw_logprob"].get<double>(), 5.0 - log_z, 1e-5);
        ASSERT_EQ(row["top_logprobs"].size(), 3u);
        const int ids[] = {2, 3, 1};
        for (size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(row["top_logprobs"][i]["id"], ids[i]);
            EXPECT_NEAR(row["top_logprobs"][i]["logprob"].get<double>(), l[static_cast<size_t>(ids[i])] - log_z, 1e-5);
        }
    }
    Proc bad = sieve("sample --logits '" + f + "' --vocab 4 --logprobs 21 --device cpu");
    EXPECT_EQ(bad.code, 2) << describe(bad);
}

TEST_F(Cli, NonFiniteAndMaskedRowsFailAlone) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> l = {1.0f, 4.0f, 2.0f, 0.0f,                  // fine: token 1
                            1.0f, std::nanf(""), 2.0f, 0.0f,         // NaN
                            -inf, -inf, -inf, -inf,                  // all masked
                            0.0f, inf, 1.0f, 2.0f};                  // +Inf
    const std::string f = write_npy("bad.npy", 4, 4, l);
    for (const std::string device : {"--device cpu", ""}) {
        Proc r = sieve("sample --logits '" + f + "' --samplers greedy --json " + device);
        EXPECT_EQ(r.code, 3) << describe(r);
        json doc = parse(r);
        ASSERT_EQ(doc["rows"].size(), 4u) << r.out;
        EXPECT_EQ(doc["rows"][0]["token"], 1) << device;
        EXPECT_FALSE(doc["rows"][0].contains("status"));
        const char* want[4] = {nullptr, "non_finite_logit", "all_masked", "non_finite_logit"};
        for (int row = 1; row < 4; ++row) {
            const json& j = doc["rows"][row];
            EXPECT_EQ(j["row"], row);
            EXPECT_EQ(j["status"], want[row]) << device << " row " << row;
            EXPECT_TRUE(j["message"].is_string() && !j["message"].get<std::string>().empty());
            EXPECT_FALSE(j.contains("token")) << "no token invented for a bad row";
        }
    }
}

TEST_F(Cli, UsageErrorsExit2) {
    const std::string f = write_npy("u.npy", 0, 8, kEight);
    Proc unknown_flag = sieve("sample --logits '" + f + "' --bogus-flag 3");
    EXPECT_EQ(unknown_flag.code, 2) << describe(unknown_flag);
    Proc unknown_sampler = sieve("sample --logits '" + f + "' --samplers 'temperature;no_such_sampler' --device cpu");
    EXPECT_EQ(unknown_sampler.code, 2) << describe(unknown_sampler);
    EXPECT_NE(unknown_sampler.err.find("unknown_sampler"), std::string::npos) << unknown_sampler.err;
    Proc unknown_sampler_json = sieve("sample --logits '" + f + "' --samplers bogus --device cpu --json");
    EXPECT_EQ(unknown_sampler_json.code, 2);
    EXPECT_EQ(parse(unknown_sampler_json)["status"], "unknown_sampler");
    Proc missing_logits = sieve("sample --samplers greedy");
    EXPECT_EQ(missing_logits.code, 2) << describe(missing_logits);
    Proc no_command = sieve("");
    EXPECT_EQ(no_command.code, 2) << describe(no_command);
    Proc bad_seed = sieve("sample --logits '" + f + "' --seed 99999999999");
    EXPECT_EQ(bad_seed.code, 2) << describe(bad_seed);
    Proc help = sieve("sample --help");
    EXPECT_EQ(help.code, 0) << describe(help);
    EXPECT_NE(help.out.find("--dump-dist"), std::string::npos);
}

// An integer flag out of range says what the value may be, not CLI11's range
// of doubles ("not in range 0.000000 to 179769...").
TEST_F(Cli, IntegerFlagsSayWhatTheyTake) {
    const std::string f = write_npy("n.npy", 0, 8, kEight);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--vocab -4", "a vocabulary holds at least 1 token"},
        {"--vocab 0", "a vocabulary holds at least 1 token"},
        {"--rows 0", "a call samples at least 1 row"},
        {"--draws -1", "a row is drawn at least once"},
        {"--min-keep -2", "a sampler keeps 0 or more candidates"},
        {"--history-capacity -1", "a slot keeps 0 or more tokens of history"},
        {"--logprobs 21", "the top log-probabilities are 0 to 20 tokens"},
        {"--mirostat 3", "mirostat is 0 (off), 1 (Mirostat) or 2 (Mirostat 2.0)"},
        {"--seed 99999999999", "a seed is a 32-bit value"},
    };
    for (const auto& [flags, words] : cases) {
        Proc r = sieve("sample --logits '" + f + "' --device cpu " + flags);
        EXPECT_EQ(r.code, 2) << flags << ": " << describe(r);
        EXPECT_NE(r.err.find(flags.substr(0, flags.find(' ')) + ": " + flags.substr(flags.find(' ') + 1) + ": " + words),
                  std::string::npos)
            << flags << ": " << r.err;
        EXPECT_EQ(r.err.find("0.000000"), std::string::npos) << flags << ": " << r.err;
    }
    // In range, the same flags run.
    for (const std::string flags : {"--vocab 8 --rows 1 --draws 2 --min-keep 0 --mirostat 2", "--logprobs 20 --seed 7"}) {
        Proc ok = sieve("sample --logits '" + f + "' --device cpu " + flags);
        EXPECT_EQ(ok.code, 0) << flags << ": " << describe(ok);
    }
}

// ---- the history flags: penalties, DRY, mirostat, --history ---------------------

// llama.cpp's tests/test-sampling.cpp feed probabilities: the logits are their logs.
std::vector<float> log_probs(size_t n, float p) { return std::vector<float>(n, std::log(p)); }

// The distribution of --dump-dist's first row, by id (0 for an id not listed).
std::vector<double> dist_by_id(const json& doc, size_t vocab) {
    std::vector<double> p(vocab, 0.0);
    for (const json& c : doc["rows"][0]["candidates"]) p.at(c["id"].get<size_t>()) = c["p"].get<double>();
    return p;
}

void expect_dist(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " id " << i;
}

// llama.cpp's test_penalties vectors through the flags: the history reaches the
// slot (--history), the penalties read it (--repeat-penalty, --frequency-penalty,
// --presence-penalty), --dump-dist shows the result.
void check_penalties(const std::function<Proc(const std::string&)>& sieve, const std::string& file,
                     const std::string& device) {
    const std::string base = "sample --logits '" + file + "' --vocab 5 --samplers 'penalties;dist' --dump-dist --json " + device;
    {
        Proc r = sieve(base + " --history 0 --repeat-penalty 50");
        ASSERT_EQ(r.code, 0) << describe(r);
        const json doc = json::parse(r.out);
        expect_dist(dist_by_id(doc, 5), {0.0, 0.25, 0.25, 0.25, 0.25}, 1e-5, "repeat 50, history 0 " + device);
        EXPECT_LT(dist_by_id(doc, 5)[0], 1e-6);
        // The flags are echoed where temp and seed are.
        EXPECT_EQ(doc["repeat_penalty"], 50.0);
        EXPECT_EQ(doc["repeat_last_n"], 64);
        EXPECT_EQ(doc["history"], json({0}));
    }
    {
        Proc r = sieve(base + " --history 0,1,2 --repeat-penalty 50");
        ASSERT_EQ(r.code, 0) << describe(r);
        expect_dist(dist_by_id(json::parse(r.out), 5), {0.0, 0.0, 0.0, 0.5, 0.5}, 1e-5, "repeat 50, history 0,1,2 " + device);
    }
    {
        // Frequency and presence: logit - count x 5 - 5 for every token seen.
        Proc r = sieve(base + " --history 0,1,2,0,0 --frequency-penalty 5 --presence-penalty 5");
        ASSERT_EQ(r.code, 0) << describe(r);
        const std::vector<float> l = {-3 * 5.0f - 5, -1 * 5.0f - 5, -1 * 5.0f - 5, 0, 0};
        expect_dist(dist_by_id(json::parse(r.out), 5), softmax(l, 1.0), 1e-6, "frequency/presence 5 " + device);
    }
    {
        // The window: --repeat-last-n 2 sees only the last two tokens (1, 2).
        Proc r = sieve(base + " --history 0,1,2 --repeat-penalty 50 --repeat-last-n 2");
        ASSERT_EQ(r.code, 0) << describe(r);
        expect_dist(dist_by_id(json::parse(r.out), 5), {1.0 / 3, 0.0, 0.0, 1.0 / 3, 1.0 / 3}, 1e-5, "last_n 2 " + device);
    }
}

// llama.cpp's test_dry vectors through the flags.
void check_dry(const std::function<Proc(const std::string&)>& sieve, const std::string& four, const std::string& five,
               const std::string& device) {
    const std::string flags = " --samplers 'dry;dist' --dry-multiplier 1 --dry-base 1.1 --dry-allowed-length 2 --dump-dist --json " + device;
    {
        Proc r = sieve("sample --logits '" + four + "' --vocab 4 --history 0,1,2,0,1 --dry-penalty-last-n 5" + flags);
        ASSERT_EQ(r.code, 0) << describe(r);
        const json doc = json::parse(r.out);
        expect_dist(dist_by_id(doc, 4), {0.296923, 0.296923, 0.109232, 0.296923}, 1e-5, "dry " + device);
        EXPECT_EQ(doc["dry_multiplier"], 1.0);
        EXPECT_EQ(doc["dry_penalty_last_n"], 5);
    }
    {
        // The same repeat across a breaker (token 3) is not penalized...
        Proc r = sieve("sample --logits '" + five + "' --vocab 5 --history 0,1,3,4,0,1 --dry-penalty-last-n 6 "
                       "--dry-sequence-breaker 3" + flags);
        ASSERT_EQ(r.code, 0) << describe(r);
        const json doc = json::parse(r.out);
        expect_dist(dist_by_id(doc, 5), {0.2, 0.2, 0.2, 0.2, 0.2}, 1e-5, "dry breaker " + device);
        EXPECT_EQ(doc["dry_sequence_breakers"], json({{3}}));
        // ...and is without it.
        Proc without = sieve("sample --logits '" + five + "' --vocab 5 --history 0,1,3,4,0,1 --dry-penalty-last-n 6" + flags);
        ASSERT_EQ(without.code, 0) << describe(without);
        EXPECT_LT(dist_by_id(json::parse(without.out), 5)[3], 0.15) << "dry without the breaker " << device;
    }
}

TEST_F(Cli, PenaltiesOverTheHistoryOnTheTwin) {
    const std::string f = path("five.f32");
    const std::vector<float> l = log_probs(5, 0.2f);
    std::ofstream(f, std::ios::binary).write(reinterpret_cast<const char*>(l.data()), sizeof(float) * l.size());
    check_penalties([&](const std::string& a) { return sieve(a); }, f, "--device cpu");
}

TEST_F(Cli, PenaltiesOverTheHistoryOnTheDevice) {
    const std::string f = path("five.f32");
    const std::vector<float> l = log_probs(5, 0.2f);
    std::ofstream(f, std::ios::binary).write(reinterpret_cast<const char*>(l.data()), sizeof(float) * l.size());
    check_penalties([&](const std::string& a) { return sieve(a); }, f, "");
}

TEST_F(Cli, DryOverTheHistoryOnTheTwin) {
    const std::string four = write_npy("four.npy", 0, 4, log_probs(4, 0.25f));
    const std::string five = write_npy("five.npy", 0, 5, log_probs(5, 0.2f));
    check_dry([&](const std::string& a) { return sieve(a); }, four, five, "--device cpu");
}

TEST_F(Cli, DryOverTheHistoryOnTheDevice) {
    const std::string four = write_npy("four.npy", 0, 4, log_probs(4, 0.25f));
    const std::string five = write_npy("five.npy", 0, 5, log_probs(5, 0.2f));
    check_dry([&](const std::string& a) { return sieve(a); }, four, five, "");
}

TEST_F(Cli, HistoryWorksWithEveryRowAndDraws) {
    // Every row gets the history; --dump-dist and --draws read it, neither changes it.
    const std::string f = write_npy("rows.npy", 3, 5, [] {
        std::vector<float> v;
        for (int r = 0; r < 3; ++r)
            for (float x : log_probs(5, 0.2f)) v.push_back(x);
        return v;
    }());
    Proc r = sieve("sample --logits '" + f + "' --samplers 'penalties;dist' --history 0 --repeat-penalty 50 "
                   "--dump-dist --draws 200 --seed 3 --json");
    ASSERT_EQ(r.code, 0) << describe(r);
    const json doc = parse(r);
    ASSERT_EQ(doc["rows"].size(), 3u);
    for (const json& row : doc["rows"]) {
        EXPECT_EQ(row["count"], 5);
        EXPECT_FALSE(row["counts"].contains("0")) << "token 0 is penalized away in every row: " << row.dump();
    }
    Proc human = sieve("sample --logits '" + f + "' --samplers 'penalties;dist' --history 4,0 --repeat-penalty 50");
    ASSERT_EQ(human.code, 0) << describe(human);
    EXPECT_NE(human.out.find("history: 2 token(s)"), std::string::npos) << human.out;
}

TEST_F(Cli, DrySequenceBreakerParsingErrors) {
    const std::string f = write_npy("b.npy", 0, 8, kEight);
    const std::string base = "sample --logits '" + f + "' --device cpu --dry-sequence-breaker ";
    for (const char* bad : {"''", "' '", "1,,2", "2,", "abc", "12x", "-3", "1,-3", "99999999999"}) {
        Proc r = sieve(base + bad);
        EXPECT_EQ(r.code, 2) << bad << "\n" << describe(r);
        EXPECT_NE(r.err.find("--dry-sequence-breaker"), std::string::npos) << bad << ": " << r.err;
    }
    Proc negative = sieve(base + "-3");
    EXPECT_NE(negative.err.find("negative"), std::string::npos) << negative.err;
    Proc word = sieve(base + "abc --json");
    EXPECT_EQ(word.code, 2);
    EXPECT_NE(parse(word)["message"].get<std::string>().find("not a token id"), std::string::npos);
    // An id the vocabulary does not have: the library's refusal, as a usage error.
    Proc outside = sieve(base + "3,8 --json");
    EXPECT_EQ(outside.code, 2) << describe(outside);
    EXPECT_EQ(parse(outside)["status"], "invalid_argument");
    EXPECT_NE(outside.err.find("outside the chain's vocab"), std::string::npos) << outside.err;
    // Good ones, one sequence per flag, echoed.
    Proc good = sieve(base + "3 --dry-sequence-breaker ' 5, 6' --json");
    ASSERT_EQ(good.code, 0) << describe(good);
    EXPECT_EQ(parse(good)["dry_sequence_breakers"], json({{3}, {5, 6}}));
}

TEST_F(Cli, MirostatWithSamplersIsAUsageError) {
    const std::string f = write_npy("m.npy", 0, 8, kEight);
    Proc r = sieve("sample --logits '" + f + "' --device cpu --mirostat 2 --samplers 'top_k;dist'");
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_NE(r.err.find("--mirostat"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--samplers"), std::string::npos) << r.err;
    Proc j = sieve("sample --logits '" + f + "' --device cpu --mirostat 1 --samplers greedy --json");
    EXPECT_EQ(j.code, 2);
    EXPECT_EQ(parse(j)["exit_code"], 2);
    Proc out_of_range = sieve("sample --logits '" + f + "' --device cpu --mirostat 3");
    EXPECT_EQ(out_of_range.code, 2) << describe(out_of_range);
}

// --mirostat makes llama.cpp's chain; the GPU and the twin draw the same token.
TEST_F(Cli, MirostatMakesLlamaCppsChainOnBothDevices) {
    const std::string f = write_npy("m.npy", 0, 8, kEight);
    for (int version : {1, 2}) {
        int tokens[2] = {-1, -2};
        for (int device = 0; device < 2; ++device) {
            Proc r = sieve("sample --logits '" + f + "'" + (device == 0 ? " --device cpu" : "") + " --mirostat " +
                           std::to_string(version) + " --mirostat-lr 0.2 --mirostat-ent 3 --seed 1 --json");
            ASSERT_EQ(r.code, 0) << describe(r);
            const json doc = parse(r);
            EXPECT_EQ(doc["samplers"], version == 1 ? "temperature;mirostat" : "temperature;mirostat_v2");
            EXPECT_EQ(doc["mirostat"], version);
            EXPECT_EQ(doc["mirostat_lr"], 0.2);
            EXPECT_EQ(doc["mirostat_ent"], 3.0);
            tokens[device] = doc["rows"][0]["token"].get<int>();
            EXPECT_GE(tokens[device], 0);
        }
        EXPECT_EQ(tokens[0], tokens[1]) << "mirostat " << version << ": the twin and the GPU";
    }
}

TEST_F(Cli, HistoryIdOutsideTheVocabIsTheLibrarysError) {
    const std::string f = write_npy("h.npy", 0, 8, kEight);
    for (const std::string device : {"--device cpu", ""}) {
        Proc r = sieve("sample --logits '" + f + "' --history 1,2,8 " + device);
        EXPECT_EQ(r.code, 2) << describe(r);
        EXPECT_NE(r.err.find("--history"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("token 2 (8) is outside the chain's vocab 0..7"), std::string::npos) << r.err;
        Proc j = sieve("sample --logits '" + f + "' --history 8 --json " + device);
        EXPECT_EQ(j.code, 2);
        EXPECT_EQ(parse(j)["status"], "invalid_argument");
    }
    Proc parse_error = sieve("sample --logits '" + f + "' --device cpu --history 1,x");
    EXPECT_EQ(parse_error.code, 2) << describe(parse_error);
    EXPECT_NE(parse_error.err.find("not a token id"), std::string::npos) << parse_error.err;
}

TEST_F(Cli, MinusOneWindowsAreRefusedByTheLibrary) {
    const std::string f = write_npy("w.npy", 0, 8, kEight);
    for (const std::string flag : {"--repeat-last-n", "--dry-penalty-last-n"}) {
        Proc r = sieve("sample --logits '" + f + "' --device cpu " + flag + " -1");
        EXPECT_EQ(r.code, 2) << describe(r);
        EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("window"), std::string::npos) << "the message says how to give the window: " << r.err;
        Proc j = sieve("sample --logits '" + f + "' --device cpu --json " + flag + " -1");
        EXPECT_EQ(parse(j)["status"], "invalid_parameter");
    }
    Proc bad_penalty = sieve("sample --logits '" + f + "' --device cpu --repeat-penalty 0");
    EXPECT_EQ(bad_penalty.code, 2) << describe(bad_penalty);
    EXPECT_NE(bad_penalty.err.find("repeat_penalty"), std::string::npos) << bad_penalty.err;
}

// Issue 23: values that would make a slot's learnt state infinite are refused
// by the library, on both devices, as usage errors naming the flag and range.
TEST_F(Cli, LearntStateFlagsAreBounded) {
    const std::string f = write_npy("m.npy", 0, 8, kEight);
    for (const std::string device : {"--device cpu", ""})
        for (const std::string flags : {"--mirostat 1 --mirostat-ent 2e38", "--mirostat 1 --mirostat-lr 3e38",
                                        "--mirostat 2 --mirostat-lr -3e38", "--adaptive-target 3e38"}) {
            Proc r = sieve("sample --logits '" + f + "' " + flags + " " + device);
            EXPECT_EQ(r.code, 2) << flags << " " << device << ": " << describe(r);
            EXPECT_NE(r.err.find(flags.substr(flags.rfind("--"), flags.rfind(' ') - flags.rfind("--"))),
                      std::string::npos) << r.err;
            EXPECT_NE(r.err.find("[-1e6, 1e6]"), std::string::npos) << r.err;
        }
}

// Issue 23: work a flag could make unbounded is refused with exit 3, naming
// the limit (the twin used to run until killed).
TEST_F(Cli, UnboundedWorkIsRefused) {
    const std::string f = write_npy("b.npy", 0, 8, kEight);
    Proc draws = sieve("sample --logits '" + f + "' --device cpu --draws 2147483647");
    EXPECT_EQ(draws.code, 3) << describe(draws);
    EXPECT_NE(draws.err.find("1000000"), std::string::npos) << draws.err;
    Proc rows = sieve("sample --logits '" + f + "' --device cpu --rows 300000000");
    EXPECT_EQ(rows.code, 3) << describe(rows);
    EXPECT_NE(rows.err.find("65536"), std::string::npos) << rows.err;
    Proc both = sieve("sample --logits '" + f + "' --device cpu --rows 4096 --draws 10000");
    EXPECT_EQ(both.code, 3) << describe(both);
    EXPECT_NE(both.err.find("16777216"), std::string::npos) << both.err;
    Proc json_out = sieve("sample --logits '" + f + "' --device cpu --draws 2147483647 --json");
    EXPECT_EQ(json_out.code, 3) << describe(json_out);
    EXPECT_EQ(parse(json_out)["exit_code"], 3) << json_out.out;
    // At the limits the work is done.
    Proc ok = sieve("sample --logits '" + f + "' --device cpu --rows 16 --draws 1000 --json");
    EXPECT_EQ(ok.code, 0) << describe(ok);
}

// Issue 23: malformed bench files, a directory given as logits, a bias past
// float range and --logprobs with --dump-dist get their own exit status and
// message.
TEST_F(Cli, BenchCompareRejectsMalformedCasesAsBadInput) {
    const std::string good = path("good.json");
    std::ofstream(good) << R"({"cases":[{"name":"x","median_us":10}]})";
    for (const std::string bad : {R"({"cases":[{"name":"x","median_us":1e400}]})",
                                  R"({"cases":[{"name":"x","median_us":10,"status":3}]})",
                                  R"({"cases":[{"name":"x","median_us":10,"status":null}]})"}) {
        const std::string b = path("bad.json");
        std::ofstream(b) << bad;
        for (const std::string& args : {"'" + good + "' '" + b + "'", "'" + b + "' '" + good + "'"}) {
            Proc r = sieve("bench --compare " + args);
            EXPECT_EQ(r.code, 3) << bad << ": " << describe(r);
            EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
        }
    }
}

TEST_F(Cli, DirectoryAsLogitsIsBadInput) {
    for (const std::string device : {"--device cpu", ""}) {
        Proc r = sieve("sample --logits '" + dir_.string() + "' --vocab 4 " + device);
        EXPECT_EQ(r.code, 3) << describe(r);
        EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("memory"), std::string::npos) << r.err;
    }
}

TEST_F(Cli, LogitBiasBeyondFloatRangeIsRefusedEitherSign) {
    const std::string f = write_npy("lb.npy", 0, 8, kEight);
    for (const std::string bias : {"1-1e39", "1+1e39", "1-3.5e38"}) {
        Proc r = sieve("sample --logits '" + f + "' --device cpu --logit-bias " + bias);
        EXPECT_EQ(r.code, 2) << bias << ": " << describe(r);
        EXPECT_NE(r.err.find("float range"), std::string::npos) << r.err;
    }
    // -inf written out still bans the token; the largest finite bias is taken.
    Proc ban = sieve("sample --logits '" + f + "' --device cpu --samplers greedy --logit-bias 4-inf --json");
    ASSERT_EQ(ban.code, 0) << describe(ban);
    EXPECT_EQ(parse(ban)["rows"][0]["token"], 1);
    Proc big = sieve("sample --logits '" + f + "' --device cpu --samplers greedy --logit-bias 7+3e38 --json");
    ASSERT_EQ(big.code, 0) << describe(big);
    EXPECT_EQ(parse(big)["rows"][0]["token"], 7);
}

TEST_F(Cli, LogprobsWithDumpDistOrDrawsIsAUsageError) {
    const std::string f = write_npy("lp.npy", 0, 8, kEight);
    for (const std::string mode : {"--dump-dist", "--draws 10"}) {
        Proc r = sieve("sample --logits '" + f + "' --device cpu --logprobs 2 " + mode);
        EXPECT_EQ(r.code, 2) << mode << ": " << describe(r);
        EXPECT_NE(r.err.find("--logprobs"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(mode.substr(0, mode.find(' '))), std::string::npos) << r.err;
    }
}

TEST_F(Cli, HistoryCapacityIsRaisedToWhatTheFlagsNeed) {
    const std::string f = write_npy("c.npy", 0, 8, kEight);
    const std::string base = "sample --logits '" + f + "' --device cpu --samplers 'penalties;dry;dist' --json ";
    // The library's defaults: DRY's window is the history capacity; adaptive-p's
    // parameters are whatever the library holds (read back, not restated).
    Proc d = sieve(base);
    ASSERT_EQ(d.code, 0) << describe(d);
    const json def = parse(d);
    const int capacity = def["history_capacity"];
    EXPECT_GE(capacity, 64);
    EXPECT_EQ(def["dry_penalty_last_n"], capacity);
    EXPECT_TRUE(def["adaptive_target"].is_number());
    EXPECT_TRUE(def["adaptive_decay"].is_number());
    EXPECT_EQ(def["history"], json::array());
    EXPECT_EQ(def["mirostat"], 0);
    Proc adaptive = sieve(base + "--adaptive-target 0.5 --adaptive-decay 0.75");
    ASSERT_EQ(adaptive.code, 0) << describe(adaptive);
    EXPECT_EQ(parse(adaptive)["adaptive_target"], 0.5);
    EXPECT_EQ(parse(adaptive)["adaptive_decay"], 0.75);
    // A window beyond the default: the capacity follows it.
    const std::string big = std::to_string(capacity + 100);
    Proc window = sieve(base + "--repeat-last-n " + big);
    ASSERT_EQ(window.code, 0) << describe(window);
    EXPECT_EQ(parse(window)["history_capacity"], capacity + 100);
    EXPECT_EQ(parse(window)["repeat_last_n"], capacity + 100);
    Proc dry_window = sieve(base + "--dry-penalty-last-n " + big);
    ASSERT_EQ(dry_window.code, 0) << describe(dry_window);
    EXPECT_EQ(parse(dry_window)["history_capacity"], capacity + 100);
    // A history longer than the default: all of it is kept.
    std::string ids;
    for (int i = 0; i < capacity + 10; ++i) ids += (i ? "," : "") + std::to_string(i % 8);
    Proc history = sieve(base + "--history " + ids);
    ASSERT_EQ(history.code, 0) << describe(history);
    const json h = parse(history);
    EXPECT_EQ(h["history_capacity"], capacity + 10);
    EXPECT_EQ(h["dry_penalty_last_n"], capacity + 10);
    EXPECT_EQ(h["history"].size(), static_cast<size_t>(capacity + 10));
    // An explicit capacity is kept: a longer history keeps its newest tokens, a
    // larger window is the library's error.
    Proc small = sieve(base + "--history-capacity 100 --history " + ids);
    ASSERT_EQ(small.code, 0) << describe(small);
    EXPECT_EQ(parse(small)["history_capacity"], 100);
    Proc beyond = sieve(base + "--history-capacity 100 --repeat-last-n 101");
    EXPECT_EQ(beyond.code, 2) << describe(beyond);
    EXPECT_NE(beyond.err.find("history capacity 100"), std::string::npos) << beyond.err;
    Proc too_big = sieve(base + "--history-capacity 100000000");
    EXPECT_EQ(too_big.code, 2) << describe(too_big);
    EXPECT_NE(too_big.err.find("history_capacity"), std::string::npos) << too_big.err;
}

TEST_F(Cli, UnknownDeviceIsADeviceError) {
    const std::string f = write_npy("d.npy", 0, 8, kEight);
    Proc r = sieve("sample --logits '" + f + "' --samplers greedy --device no-such-device-name-xyz");
    EXPECT_EQ(r.code, 4) << describe(r);
}

TEST_F(Cli, TinyBenchJson) {
    Proc r = sieve("bench --json --tokens 3 --warmup 1 --suite full --case greedy/zipf/v32000/b1");
    ASSERT_EQ(r.code, 0) << describe(r);
    json doc = parse(r);
    ASSERT_TRUE(doc["device"].is_string());
    ASSERT_EQ(doc["cases"].size(), 1u) << r.out;
    const json& c = doc["cases"][0];
    EXPECT_EQ(c["name"], "greedy/zipf/v32000/b1");
    EXPECT_EQ(c["vocab"], 32000);
    EXPECT_EQ(c["rows"], 1);
    EXPECT_EQ(c["tokens"], 3);
    EXPECT_GT(c["median_us"].get<double>(), 0.0);
    EXPECT_LE(c["p10_us"].get<double>(), c["median_us"].get<double>());
    EXPECT_LE(c["median_us"].get<double>(), c["p90_us"].get<double>());
    EXPECT_GT(c["twin_median_us"].get<double>(), 0.0);
    const double ratio = c["twin_median_us"].get<double>() / c["median_us"].get<double>();
    EXPECT_NEAR(c["ratio"].get<double>(), ratio, 1e-3 * ratio + 1e-4);
    ASSERT_TRUE(c["dispatches"].is_number_unsigned()) << c;
    ASSERT_TRUE(c["row_passes"].is_number_unsigned()) << c;
    EXPECT_GE(c["dispatches"].get<unsigned>(), 1u);
    EXPECT_GE(c["row_passes"].get<unsigned>(), 1u);
    EXPECT_EQ(c["steady_recordings"], 0) << "steady-state sampling must record nothing";
    EXPECT_EQ(c["steady_allocations"], 0) << "steady-state sampling must allocate nothing";
}

TEST_F(Cli, BenchListsTheSuiteAndRunsAFile) {
    Proc list = sieve("bench --list");
    ASSERT_EQ(list.code, 0) << describe(list);
    for (const char* name : {"greedy/zipf/v151936/b1", "dist/zipf/v151936/b1", "default/zipf/v32000/b1",
                             "default/zipf/v151936/b1", "default/zipf/v262144/b1", "default/zipf/v32000/b256"})
        EXPECT_NE(list.out.find(name), std::string::npos) << name;
    Proc none = sieve("bench --case no-such-case");
    EXPECT_EQ(none.code, 2) << describe(none);

    const std::string f = write_npy("b.npy", 0, 8, kEight);
    Proc r = sieve("bench --json --tokens 4 --warmup 0 --rows 2 --device cpu --logits '" + f +
                  "' --samplers 'temperature;dist' --temp 0.7");
    ASSERT_EQ(r.code, 0) << describe(r);
    json doc = parse(r);
    ASSERT_EQ(doc["cases"].size(), 1u);
    EXPECT_EQ(doc["cases"][0]["vocab"], 8);
    EXPECT_EQ(doc["cases"][0]["rows"], 2);
    EXPECT_EQ(doc["cases"][0]["samplers"], "temperature;dist");
}

TEST_F(Cli, MinimalCExampleSucceeds) {
    Proc r = run_program(SIEVE_MINIMAL_PATH, "");
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_NE(r.out.find("token "), std::string::npos) << r.out;
}

// The batched example checks every row of its 64-row batch against the row
// sampled alone; it fails on any difference.
TEST_F(Cli, BatchedExampleSucceeds) {
    Proc r = run_program(SIEVE_BATCHED_PATH, "");
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_NE(r.out.find("batched: ok"), std::string::npos) << r.out;
}

// The zero-copy example is an app with its own device (validation on when the
// suite's SIEVE_VALIDATION=1 is, any message fails it) that samples from its
// own buffer and checks the tokens against host memory.
TEST_F(Cli, ZeroCopyExampleSucceeds) {
    Proc r = run_program(SIEVE_ZERO_COPY_PATH, "");
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_NE(r.out.find("zero_copy: ok"), std::string::npos) << r.out;
}

} // namespace
