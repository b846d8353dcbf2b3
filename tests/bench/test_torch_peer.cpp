// tools/torch_peer/torch_peer.py, where it cannot measure: without torch (made
// unimportable here, whatever the machine has) it says so on stderr, writes
// one "skipped" line and exits 0; bad arguments exit 2. Its timings need
// torch with CUDA (scripts/gpu_check.sh runs it there).
#include "cli_process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
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

} // namespace
