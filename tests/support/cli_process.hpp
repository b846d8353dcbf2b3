// Running one of the project's programs from a test as a user would: through
// the shell, stdout captured by popen, stderr through a file in `dir`. The
// suite runs with SIEVE_VALIDATION=1, which the program inherits: the library
// prints every validation message with the "sieve: validation:" prefix, and
// one fails the calling test.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sieve_test {

struct Proc {
    int code = -1;
    std::string out;
    std::string err;
};

inline std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

inline Proc run_program(const std::string& program, const std::string& args, const std::filesystem::path& dir) {
    const std::string err_path = (dir / "stderr.txt").string();
    const std::string cmd = "'" + program + "' " + args + " 2>'" + err_path + "'";
    Proc r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = read_text(err_path);
    EXPECT_EQ(r.err.find("sieve: validation:"), std::string::npos) << "validation message from " << args << ":\n" << r.err;
    return r;
}

} // namespace sieve_test
