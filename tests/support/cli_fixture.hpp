// A test that runs the `sieve` binary (SIEVE_CLI_PATH) and the samples in a
// temporary folder of its own, where it writes their input files.
#pragma once

#include "cli_process.hpp"
#include "npy.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

namespace sieve_test {

// A run's exit status and output, for failure messages.
inline std::string describe(const Proc& r) {
    return "exit " + std::to_string(r.code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

// Eight logits the CLI tests sample: a tie (1.25 twice), negatives, a clear top.
inline const std::vector<float> kEight = {0.5f, 2.0f, 1.25f, -1.0f, 3.0f, 1.25f, 0.0f, -3.5f};

class CliTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string tmpl = (std::filesystem::temp_directory_path() / "sieve_cli_XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    Proc run_program(const std::string& program, const std::string& args) const {
        return sieve_test::run_program(program, args, dir_);
    }
    Proc sieve(const std::string& args) const { return run_program(SIEVE_CLI_PATH, args); }

    // Parses stdout as exactly one JSON document.
    static nlohmann::json parse(const Proc& r) {
        nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
        EXPECT_FALSE(doc.is_discarded()) << "stdout is not JSON: " << r.out << "\nstderr: " << r.err;
        return doc;
    }

    // float32 .npy of shape [vocab] (rows 0) or [rows, vocab].
    std::string write_npy(const std::string& name, size_t rows, size_t vocab, const std::vector<float>& data) const {
        const std::string p = path(name);
        std::vector<size_t> shape = rows == 0 ? std::vector<size_t>{vocab} : std::vector<size_t>{rows, vocab};
        sieve_cli::write_npy_f32(p, shape, data.data());
        return p;
    }

    std::filesystem::path dir_;
};

} // namespace sieve_test
