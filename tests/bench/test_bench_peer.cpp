// `sieve bench --peer llama[=PATH]`: the real llama.cpp timed beside Sieve.
// An unknown peer is a usage error (exit 2); bad input (a file that is no
// library, a library that is no libllama, a libllama missing a function) is
// exit 3; both before anything is measured; the fetched libllama (scripts/fetch_llama.sh, which scripts/test.sh
// runs) runs every case of the tiny suite; the ABI mirror matches its llama.h.
#include "bench_schema_validator.hpp"
#include "cli_process.hpp"
#include "llama_abi.hpp"
#include "llama_peer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <stdlib.h>
#include <string>

namespace {

using nlohmann::json;
using sieve_test::Proc;
using sieve_test::read_text;

const std::string kFetched = std::string(SIEVE_BUILD_DIR) + "/_deps/llama";
const std::string kTiny = "bench --suite tiny --tokens 4 --warmup 1 --profile-tokens 0 --calibration-iterations 3 --twin-budget 0.2";

class BenchPeer : public ::testing::Test {
protected:
    void SetUp() override {
        std::string tmpl = (std::filesystem::temp_directory_path() / "sieve_peer_XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    Proc sieve(const std::string& args) const { return sieve_test::run_program(SIEVE_CLI_PATH, args, dir_); }
    std::filesystem::path dir_;

    // A bad --peer: exit 3 (2 for a name that is no peer), the message names
    // `what`, and nothing was measured.
    void expect_refused(const std::string& peer, const std::string& what, int code = 3) {
        const Proc r = sieve(kTiny + " --case greedy --peer '" + peer + "'");
        EXPECT_EQ(r.code, code) << r.err;
        EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
        EXPECT_EQ(r.out, "") << "measured despite a bad --peer";
    }
};

bool fetched() { return std::filesystem::exists(kFetched + "/lib/libllama.so"); }
const char* kMissing = "the fetched llama.cpp is missing from build/_deps/llama: run scripts/fetch_llama.sh "
                       "(scripts/test.sh does; it needs npm and the npm registry)";

// Issue 35: a peer name the CLI does not know is a usage error, as any bad flag value.
TEST_F(BenchPeer, UnknownPeerNameIsAUsageError) { expect_refused("vllm", "unknown peer 'vllm'", 2); }

TEST_F(BenchPeer, FileThatIsNoLibraryIsBadInput) {
    const std::string path = (dir_ / "libllama.so").string();
    { std::ofstream(path) << "not an ELF file\n"; }
    expect_refused("llama=" + path, "cannot load it as a shared library");
    expect_refused("llama=" + (dir_ / "absent.so").string(), "cannot load it as a shared library");
}

TEST_F(BenchPeer, LibraryThatIsNoLibllamaIsBadInput) {
    expect_refused(std::string("llama=") + SIEVE_LIBSIEVE_PATH, "not a libllama (it has no llama_version");
}

TEST_F(BenchPeer, LibllamaMissingAFunctionIsBadInput) {
    expect_refused(std::string("llama=") + SIEVE_FAKE_LIBLLAMA_PATH, "lacks llama_sampler_init_top_n_sigma");
}

TEST(BenchPeerNames, ChainsGetLlamaCppsNamesAndFinalSampler) {
    sieve_cli::SamplingOptions o;
    EXPECT_EQ(sieve_cli::peer_sampler_names(o),
              (std::vector<std::string>{"penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc",
                                        "temperature", "dist"}));
    o.samplers = "top-k, temp";
    EXPECT_EQ(sieve_cli::peer_sampler_names(o), (std::vector<std::string>{"top_k", "temperature", "dist"}));
    o.samplers = "min_p;greedy";
    EXPECT_EQ(sieve_cli::peer_sampler_names(o), (std::vector<std::string>{"min_p", "greedy"}));
    o.samplers = "";
    o.mirostat = 2;
    EXPECT_EQ(sieve_cli::peer_sampler_names(o), (std::vector<std::string>{"temperature", "mirostat_v2"}));
}

// A chain llama.cpp cannot run without a model is n/a with the reason, not an
// error: the peer's chains are built from a Sieve chain's parameters and the
// run's sampler list.
TEST(BenchPeerChains, InfillIsNotApplicableAndPlainChainsBuild) {
    ASSERT_TRUE(fetched()) << kMissing;
    const auto lib = sieve_cli::LlamaLibrary::open(sieve_cli::default_llama_library());
    EXPECT_TRUE(lib->has_dry_breakers) << "the fetched libllama lacks llama_sampler_init_dry_testing";
    const sieve_cli::Device twin = sieve_cli::open_cpu_twin();
    sieve_cli::SamplingOptions o;
    o.samplers = "top_k;temperature";
    const sieve::Chain chain = sieve_cli::make_chain(twin, o, 2, 64);
    std::string why;
    auto chains = sieve_cli::PeerChains::build(*lib, chain, o, 2, 64, {}, &why);
    ASSERT_NE(chains, nullptr) << why;
    std::vector<float> logits(128);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 64) * 0.1f;
    EXPECT_NO_THROW(chains->token(logits.data()));
    o.samplers = "top_k;infill";
    EXPECT_EQ(sieve_cli::PeerChains::build(*lib, chain, o, 2, 64, {}, &why), nullptr);
    EXPECT_NE(why.find("infill"), std::string::npos) << why;
}

TEST_F(BenchPeer, RunsTheFetchedLlamaCppOnEveryCase) {
    ASSERT_TRUE(fetched()) << kMissing;
    const Proc r = sieve(kTiny + " --peer llama --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const json doc = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.out.substr(0, 400);
    const json schema = json::parse(read_text(std::string(SIEVE_SOURCE_DIR) + "/docs/bench-schema.json"), nullptr, false);
    for (const auto& e : sieve_test::SchemaValidator(schema).validate(doc)) ADD_FAILURE() << "schema: " << e;
    ASSERT_TRUE(doc["peer"].is_object());
    EXPECT_EQ(doc["peer"]["version"].get<std::string>().rfind(sieve_cli::llama_abi::kVersionPrefix, 0), 0u) << doc["peer"];
    EXPECT_EQ(doc["peer"]["library"], sieve_cli::default_llama_library());
    int measured = 0;
    for (const json& c : doc["cases"]) {
        if (c["status"] != "ok") {
            EXPECT_FALSE(c.contains("peer_status")) << c["name"];
            continue;
        }
        // Every chain of the tiny suite (greedy, dist, the default chain,
        // penalties and DRY with token breakers) is one llama.cpp runs.
        EXPECT_EQ(c["peer_status"], "ok") << c["name"] << ": " << c.value("peer_message", "");
        EXPECT_EQ(c["peer_tokens"], c["tokens"]) << c["name"];  // one of llama.cpp's per token of Sieve's
        ASSERT_TRUE(c["peer_median_us"].is_number()) << c["name"];
        EXPECT_GT(c["peer_median_us"].get<double>(), 0.0) << c["name"];
        EXPECT_NEAR(c["peer_ratio"].get<double>(), c["peer_median_us"].get<double>() / c["median_us"].get<double>(), 1e-3)
            << c["name"];
        ++measured;
    }
    EXPECT_GE(measured, 3) << "too few cases ran on the device to compare";
}

TEST_F(BenchPeer, TableReportAndCompareShowThePeer) {
    ASSERT_TRUE(fetched()) << kMissing;
    const std::string a = (dir_ / "a.json").string(), html = (dir_ / "r.html").string();
    const Proc r = sieve(kTiny + " --case greedy --peer llama=" + kFetched + "/lib/libllama.so --json-out '" + a +
                         "' --report '" + html + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("peer: llama.cpp 0.4."), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("llama/dev"), std::string::npos) << r.out;
    EXPECT_NE(read_text(html).find("<th>llama/dev</th>"), std::string::npos);
    const Proc c = sieve("bench --compare '" + a + "' '" + a + "' --json");
    ASSERT_EQ(c.code, 0) << c.err;
    const json cmp = json::parse(c.out, nullptr, false);
    ASSERT_FALSE(cmp.is_discarded()) << c.out;
    ASSERT_EQ(cmp["cases"].size(), 1u);
    EXPECT_TRUE(cmp["cases"][0]["a_peer_median_us"].is_number()) << cmp;
    EXPECT_TRUE(cmp["cases"][0]["b_peer_ratio"].is_number()) << cmp;
}

// The mirror's types and signatures against the fetched llama.h: the check
// file compiles only if every one matches, and its reference to DRY's C++
// entry point has the mangled name the peer looks up.
TEST(LlamaAbi, MirrorMatchesTheFetchedHeaders) {
    ASSERT_TRUE(std::filesystem::exists(kFetched + "/src/include/llama.h")) << kMissing;
    std::string tmpl = (std::filesystem::temp_directory_path() / "sieve_abi_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    const std::filesystem::path dir = tmpl;
    const std::string obj = (dir / "check.o").string();
    const std::string src = std::string(SIEVE_SOURCE_DIR);
    const std::string cmd = std::string("'") + SIEVE_CXX_COMPILER + "' -std=c++17 -c -o '" + obj + "' -I'" + kFetched +
                            "/src/include' -I'" + kFetched + "/src/ggml/include' -I'" + src + "/cli' '" + src +
                            "/tests/peer/llama_abi_check.cpp' 2>&1";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << "the mirror differs from llama.h:\n" << out;
    const std::string nm = "nm '" + obj + "'";
    std::string symbols;
    p = popen(nm.c_str(), "r");
    ASSERT_NE(p, nullptr);
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) symbols.append(buf, n);
    pclose(p);
    EXPECT_NE(symbols.find(sieve_cli::llama_abi::kDryTestingSymbol), std::string::npos) << symbols;
    std::filesystem::remove_all(dir);
}

} // namespace
