// tools/torch_peer/torch_peer.py, where it cannot measure: without torch (made
// unimportable here, whatever the machine has) it says so on stderr, writes
// one "skipped" line and exits 0; bad arguments exit 2. Its timings need
// torch with CUDA (scripts/gpu_check.sh runs it there). And torch_table.py,
// which puts its figures beside `sieve bench --input device`'s.
#include "cli_process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

const std::string kPeer = std::string(SIEVE_SOURCE_DIR) + "/tools/torch_peer/torch_peer.py";

class TorchPeer : public ::testing::Test {
protected:
    void SetUp() override {
        if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 on this machine";
        std::string tmpl = (std::filesystem::temp_directory_path() / "sieve_torch_peer_XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override {
        if (!dir_.empty()) std::filesystem::remove_all(dir_);
    }
    // The peer with `import torch` failing (sys.modules['torch'] = None).
    sieve_test::Proc run_without_torch(const std::string& args) const {
        const std::string code = "import runpy, sys; sys.modules['torch'] = None; sys.argv = ['torch_peer.py'" + args +
                                 "]; runpy.run_path('" + kPeer + "', run_name='__main__')";
        return sieve_test::run_program("python3", "-c \"" + code + "\"", dir_);
    }
    std::filesystem::path dir_;
};

TEST_F(TorchPeer, WithoutTorchItWritesASkippedLineSaysWhyAndExitsZero) {
    const sieve_test::Proc r = run_without_torch(", '--tokens', '3'");
    EXPECT_EQ(r.code, 0) << r.err;
    const nlohmann::json line = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(line.is_discarded()) << "not one JSON line: " << r.out;
    EXPECT_EQ(line.value("peer", ""), "torch");
    EXPECT_EQ(line.value("status", ""), "skipped");
    EXPECT_NE(line.value("reason", "").find("torch is not importable"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("torch_peer: skipped: torch is not importable"), std::string::npos) << r.err;
}

TEST_F(TorchPeer, WithoutTorchTheSkippedLineGoesToTheOutFile) {
    const std::string out = (dir_ / "torch.jsonl").string();
    const sieve_test::Proc r = run_without_torch(", '--out', '" + out + "'");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    const nlohmann::json line = nlohmann::json::parse(sieve_test::read_text(out), nullptr, false);
    ASSERT_FALSE(line.is_discarded());
    EXPECT_EQ(line.value("status", ""), "skipped");
}

TEST_F(TorchPeer, BadArgumentsExitTwo) {
    EXPECT_EQ(run_without_torch(", '--tokens', '0'").code, 2);
    EXPECT_EQ(run_without_torch(", '--no-such-flag'").code, 2);
}

TEST_F(TorchPeer, TheTableMatchesCasesByNameAndDividesThePeersMedianBySieves) {
    const std::string bench = (dir_ / "bench.json").string(), torch = (dir_ / "torch.jsonl").string();
    {
        std::ofstream b(bench);
        b << R"({"input": "device", "cases": [
              {"name": "greedy/zipf/v151936/b1", "input": "device", "status": "ok", "median_us": 40.0, "gpu_us": 10.0, "submit_us": 30.0,
               "call_timing": {"wall_us": 70.0, "gpu_span_us": 45.0, "submit_to_gpu_us": 6.0, "gpu_to_host_us": 19.0, "deviation_us": 0.1, "host_us": 2.5}},
              {"name": "dist/zipf/v151936/b1", "input": "host", "status": "ok", "median_us": 90.0},
              {"name": "top_p/zipf/v151936/b1", "input": "device", "status": "unsupported", "message": "no"}]})";
        std::ofstream t(torch);
        t << R"({"peer": "torch", "status": "ok", "torch": "2.11"})" << "\n"
          << R"({"case": "greedy/zipf/v151936/b1", "mode": "eager", "status": "ok", "median_us": 60.0})" << "\n"
          << R"({"case": "greedy/zipf/v151936/b1", "mode": "cuda_graph", "status": "ok", "median_us": 20.0})" << "\n"
          << R"({"case": "dist/zipf/v151936/b1", "mode": "cuda_graph", "status": "ok", "median_us": 80.0})" << "\n";
    }
    const std::string table = (std::string(SIEVE_SOURCE_DIR) + "/tools/torch_peer/torch_table.py");
    sieve_test::Proc r = sieve_test::run_program("python3", "'" + table + "' --json --torch '" + torch + "' '" + bench + "'", dir_);
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.out;
    ASSERT_EQ(doc["cases"].size(), 1u);  // host input and unsupported cases are not Sieve's device figures
    EXPECT_EQ(doc["cases"][0]["case"], "greedy/zipf/v151936/b1");
    EXPECT_DOUBLE_EQ(doc["cases"][0]["torch_eager_per_dev"].get<double>(), 1.5);
    EXPECT_DOUBLE_EQ(doc["cases"][0]["torch_cuda_graph_per_dev"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(doc["cases"][0]["to_gpu_us"].get<double>(), 6.0);  // the profiled calls' call_timing
    EXPECT_DOUBLE_EQ(doc["cases"][0]["to_host_us"].get<double>(), 19.0);
    EXPECT_DOUBLE_EQ(doc["cases"][0]["library_host_us"].get<double>(), 2.5);
    r = sieve_test::run_program("python3", "'" + table + "' --torch '" + torch + "' '" + bench + "'", dir_);
    EXPECT_NE(r.out.find("| greedy/zipf/v151936/b1 | 40.0 | 10.0 | 6.0 | 19.0 | 2.5 | 30.0 | 60.0 | 20.0 | 0.5 |"), std::string::npos) << r.out;
    EXPECT_EQ(sieve_test::run_program("python3", "'" + table + "' --torch '" + (dir_ / "none").string() + "' '" + bench + "'", dir_).code, 3);
}

} // namespace
