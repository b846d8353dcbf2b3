// Issue 35: what `sieve sample` reads and writes. Inputs are checked from
// their size and .npy header before their data is read (a too large file or a
// GGUF model is refused at once); stdin (--logits -) and --history-file;
// output that cannot be written and rows that fail are said on stderr; long
// --draws show progress on a terminal only.
#include "cli_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <fstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
using sieve_test::Proc;

using CliInput = sieve_test::CliTest;

using sieve_test::kEight;

// A sparse file of `size` bytes starting with `head`: large on paper, nothing on disk.
std::string sparse_file(const std::string& path, const std::string& head, off_t size) {
    {
        std::ofstream f(path, std::ios::binary);
        f << head;
    }
    EXPECT_EQ(truncate(path.c_str(), size), 0);
    return path;
}

void write_raw(const std::string& path, const std::vector<float>& v) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), sizeof(float) * v.size());
}

// Refused without reading the data: reading 8 GB would take seconds and 8 GB
// of memory; 5 s is far above the stat and header a refusal takes.
double seconds(const std::function<void()>& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_F(CliInput, TooLargeRawFileIsRefusedFromItsSize) {
    const std::string f = sparse_file(path("big.f32"), "", 8000000000);  // 62500 rows x 32000
    Proc r;
    const double s = seconds([&] { r = sieve("sample --logits '" + f + "' --vocab 32000 --device cpu"); });
    EXPECT_EQ(r.code, 3) << describe(r);
    EXPECT_NE(r.err.find("62500 rows x 32000"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("beyond the limit of 268435456"), std::string::npos) << r.err;
    EXPECT_LT(s, 5.0) << "the data was read";
    // A size that is no whole number of rows: refused from the size too.
    const std::string odd = sparse_file(path("odd.f32"), "", 8589934592);
    Proc o;
    const double so = seconds([&] { o = sieve("sample --logits '" + odd + "' --vocab 32000 --device cpu"); });
    EXPECT_EQ(o.code, 3) << describe(o);
    EXPECT_NE(o.err.find("not a positive multiple of 4 * vocab = 128000"), std::string::npos) << o.err;
    EXPECT_LT(so, 5.0) << "the data was read";
}

TEST_F(CliInput, GgufFileIsNamedAsSuch) {
    const std::string f = sparse_file(path("model.gguf"), std::string("GGUF\x03\0\0\0", 8), 2000000000);
    for (const std::string vocab : {"", "--vocab 32000"}) {
        Proc r;
        const double s = seconds([&] { r = sieve("sample --logits '" + f + "' --device cpu " + vocab); });
        EXPECT_EQ(r.code, 3) << describe(r);
        EXPECT_NE(r.err.find("a GGUF model file"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("not logits"), std::string::npos) << r.err;
        EXPECT_LT(s, 5.0) << "the data was read";
    }
    Proc draft = sieve("sample --logits '" + write_npy("two.npy", 2, 8, std::vector<float>(16, 0.0f)) +
                       "' --draft 1 --draft-probs '" + f + "' --device cpu");
    EXPECT_EQ(draft.code, 3) << describe(draft);
    EXPECT_NE(draft.err.find("--draft-probs takes"), std::string::npos) << draft.err;
}

TEST_F(CliInput, NpyShapeBeyondTheLimitIsRefusedFromItsHeader) {
    // The header alone: (70000, 262144) float32 would be 73 GB.
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (70000, 262144), }";
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header += '\n';
    const std::string f = path("huge.npy");
    {
        std::ofstream out(f, std::ios::binary);
        out << std::string("\x93NUMPY\x01\x00", 8) << static_cast<char>(header.size() & 0xFF)
            << static_cast<char>(header.size() >> 8) << header;
    }
    Proc r = sieve("sample --logits '" + f + "' --device cpu");
    EXPECT_EQ(r.code, 3) << describe(r);
    EXPECT_NE(r.err.find("18350080000 values is beyond the limit"), std::string::npos) << r.err;
    // A header longer than any numpy writes (2.0 format, 4-byte length): refused before it is read.
    const std::string long_header = sparse_file(path("long_header.npy"), std::string("\x93NUMPY\x02\x00\x00\x00\x00\x40", 12), 100);
    Proc lh = sieve("sample --logits '" + long_header + "' --device cpu");
    EXPECT_EQ(lh.code, 3) << describe(lh);
    EXPECT_NE(lh.err.find("malformed .npy header: it declares 1073741824 bytes"), std::string::npos) << lh.err;
    // Within the limit, a header whose data is missing is named truncated, before any read.
    const std::string t = path("short.npy");
    {
        std::ofstream out(t, std::ios::binary);
        std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 1000), }";
        h.append(64 - (10 + h.size() + 1) % 64, ' ');
        h += '\n';
        out << std::string("\x93NUMPY\x01\x00", 8) << static_cast<char>(h.size()) << '\0' << h << "abcd";
    }
    Proc s = sieve("sample --logits '" + t + "' --device cpu");
    EXPECT_EQ(s.code, 3) << describe(s);
    EXPECT_NE(s.err.find("truncated .npy data"), std::string::npos) << s.err;
}

TEST_F(CliInput, LogitsFromStdin) {
    const std::string npy = write_npy("eight.npy", 0, 8, kEight);
    Proc a = sieve("sample --logits - --samplers greedy --device cpu --json < '" + npy + "'");
    ASSERT_EQ(a.code, 0) << describe(a);
    EXPECT_EQ(parse(a)["rows"][0]["token"], 4);
    EXPECT_EQ(parse(a)["vocab"], 8);
    // Through a pipe (no size known in advance).
    Proc piped = run_program("cat", "'" + npy + "' | '" + std::string(SIEVE_CLI_PATH) +
                                        "' sample --logits - --samplers greedy --device cpu --json");
    ASSERT_EQ(piped.code, 0) << describe(piped);
    EXPECT_EQ(parse(piped)["rows"][0]["token"], 4);
    const std::string raw = path("eight.f32");
    write_raw(raw, kEight);
    Proc b = sieve("sample --logits - --vocab 8 --samplers greedy --device cpu --json --logit-bias 4-inf < '" + raw + "'");
    ASSERT_EQ(b.code, 0) << describe(b);
    EXPECT_EQ(parse(b)["rows"][0]["token"], 1);
    // Raw without --vocab, a truncated .npy, bytes after the data: refused, naming stdin.
    Proc no_vocab = sieve("sample --logits - --device cpu < '" + raw + "'");
    EXPECT_EQ(no_vocab.code, 2) << describe(no_vocab);
    EXPECT_NE(no_vocab.err.find("stdin: not a .npy file"), std::string::npos) << no_vocab.err;
    Proc cut = sieve("sample --logits - --device cpu --vocab 8 < /dev/null");
    EXPECT_EQ(cut.code, 3) << describe(cut);
    EXPECT_NE(cut.err.find("stdin: raw float32 file of 0 bytes"), std::string::npos) << cut.err;
    const std::string partial = path("partial.npy");
    {
        std::ifstream in(npy, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::ofstream(partial, std::ios::binary) << bytes.substr(0, bytes.size() - 4);
        std::ofstream(path("longer.npy"), std::ios::binary) << bytes << "xyz";
    }
    Proc short_npy = sieve("sample --logits - --device cpu < '" + partial + "'");
    EXPECT_EQ(short_npy.code, 3) << describe(short_npy);
    EXPECT_NE(short_npy.err.find("stdin: truncated .npy data"), std::string::npos) << short_npy.err;
    Proc long_npy = sieve("sample --logits - --device cpu < '" + path("longer.npy") + "'");
    EXPECT_EQ(long_npy.code, 3) << describe(long_npy);
    EXPECT_NE(long_npy.err.find("3 bytes after the data"), std::string::npos) << long_npy.err;
}

TEST_F(CliInput, HistoryFromAFile) {
    const std::string f = write_npy("h.npy", 0, 8, kEight);
    std::ofstream(path("ids.txt")) << "0 1\n2,3 ,\n\n4\n";
    const std::string base = "sample --logits '" + f + "' --device cpu --samplers 'penalties;dist' --json ";
    Proc r = sieve(base + "--history-file '" + path("ids.txt") + "'");
    ASSERT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(parse(r)["history"], json({0, 1, 2, 3, 4}));
    // 30000 ids: beyond what a command line takes comfortably, within the capacity.
    {
        std::ofstream ids(path("long.txt"));
        for (int i = 0; i < 30000; ++i) ids << (i % 8) << "\n";
    }
    Proc longer = sieve(base + "--history-file '" + path("long.txt") + "'");
    ASSERT_EQ(longer.code, 0) << describe(longer);
    EXPECT_EQ(parse(longer)["history"].size(), 30000u);
    EXPECT_GE(parse(longer)["history_capacity"].get<int>(), 30000);
    // From stdin.
    Proc piped = sieve(base + "--history-file - < '" + path("ids.txt") + "'");
    ASSERT_EQ(piped.code, 0) << describe(piped);
    EXPECT_EQ(parse(piped)["history"], json({0, 1, 2, 3, 4}));
    // Refused: an id that is none, a missing file, both --history and --history-file.
    std::ofstream(path("bad.txt")) << "1 x 2";
    Proc bad = sieve(base + "--history-file '" + path("bad.txt") + "'");
    EXPECT_EQ(bad.code, 2) << describe(bad);
    EXPECT_NE(bad.err.find("--history-file"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("not a token id"), std::string::npos) << bad.err;
    Proc missing = sieve(base + "--history-file '" + path("none.txt") + "'");
    EXPECT_EQ(missing.code, 3) << describe(missing);
    EXPECT_NE(missing.err.find("none.txt: cannot open"), std::string::npos) << missing.err;
    const std::string huge = sparse_file(path("huge.txt"), "1 2 3", 17 << 20);
    Proc too_large = sieve(base + "--history-file '" + huge + "'");
    EXPECT_EQ(too_large.code, 3) << describe(too_large);
    EXPECT_NE(too_large.err.find("beyond the limit of 16777216"), std::string::npos) << too_large.err;
    Proc both = sieve(base + "--history 1 --history-file '" + path("ids.txt") + "'");
    EXPECT_EQ(both.code, 2) << describe(both);
    EXPECT_NE(both.err.find("--history and --history-file"), std::string::npos) << both.err;
}

TEST_F(CliInput, FailedWritesToStdoutAreExit3) {
    const std::string f = write_npy("w.npy", 0, 8, kEight);
    std::ofstream(path("run.json")) << R"({"cases":[{"name":"x","median_us":10}]})";
    for (const std::string& args : std::vector<std::string>{"sample --logits '" + f + "' --device cpu", "sample --logits '" + f + "' --device cpu --json",
          "sample --logits '" + f + "' --device cpu --dump-dist", "devices", "devices --json",
          "bench --compare '" + path("run.json") + "' '" + path("run.json") + "'"}) {
        Proc r = sieve(args + " > /dev/full");
        EXPECT_EQ(r.code, 3) << args << ": " << describe(r);
        EXPECT_NE(r.err.find("sieve: error: cannot write the output to stdout"), std::string::npos) << args << ": " << r.err;
    }
    Proc ok = sieve("sample --logits '" + f + "' --device cpu > /dev/null");
    EXPECT_EQ(ok.code, 0) << describe(ok);
}

TEST_F(CliInput, RowErrorsAlsoGoToStderr) {
    std::vector<float> l = {1.0f, 4.0f, 2.0f, 0.0f, 1.0f, std::nanf(""), 2.0f, 0.0f};
    const std::string f = write_npy("nan.npy", 2, 4, l);
    for (const std::string json_flag : {"", "--json"}) {
        Proc r = sieve("sample --logits '" + f + "' --samplers greedy --device cpu " + json_flag);
        EXPECT_EQ(r.code, 3) << describe(r);
        EXPECT_NE(r.err.find("sieve: error: row 1: non_finite_logit"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("row 0"), std::string::npos) << r.err;
    }
    // A verification whose positions hold NaN: its status on stderr as well.
    Proc draft = sieve("sample --logits '" + f + "' --draft 1 --samplers greedy --device cpu");
    EXPECT_EQ(draft.code, 3) << describe(draft);
    EXPECT_NE(draft.err.find("sieve: error: non_finite_logit"), std::string::npos) << draft.err;
}

TEST_F(CliInput, LongDrawsShowProgressOnATerminalOnly) {
    const std::string f = write_npy("d.npy", 0, 8, kEight);
    const std::string args = "sample --logits '" + f + "' --device cpu --samplers 'temperature;dist' --draws 200000 --seed 3";
    Proc plain = sieve(args);
    ASSERT_EQ(plain.code, 0) << describe(plain);
    EXPECT_EQ(plain.err, "") << "progress written where stderr is no terminal";
    EXPECT_NE(plain.out.find("200000 draws"), std::string::npos) << plain.out;
    if (system("command -v script > /dev/null 2>&1") != 0) GTEST_SKIP() << "no `script` to give the run a terminal";
    // `script` gives the run a terminal: stderr shows the progress, stdout (a file) the results.
    const std::string inner = "'" + std::string(SIEVE_CLI_PATH) + "' " + args + " > '" + path("out.txt") + "'";
    Proc tty = run_program("script", "-qec \"" + inner + "\" /dev/null");
    EXPECT_EQ(tty.code, 0) << describe(tty);
    EXPECT_NE(tty.out.find("drawing 200000 tokens"), std::string::npos) << tty.out;
    EXPECT_EQ(sieve_test::read_text(path("out.txt")), plain.out) << "the results do not depend on the terminal";
    // A short run shows none.
    const std::string short_inner = "'" + std::string(SIEVE_CLI_PATH) + "' sample --logits '" + f +
                                    "' --device cpu --draws 10 > /dev/null";
    Proc quick = run_program("script", "-qec \"" + short_inner + "\" /dev/null");
    EXPECT_EQ(quick.out.find("drawing"), std::string::npos) << quick.out;
}

} // namespace
