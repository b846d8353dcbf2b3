// The CLI's .npy reader and logits loading (cli/npy.*, logits_source.*):
// good float32/float16 files of every supported layout, and each malformed file
// refused with a clear message.
#include "exit_codes.hpp"
#include "logits_source.hpp"
#include "npy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <stdlib.h>
#include <string>
#include <vector>

namespace {

using sieve_cli::NpyArray;
using sieve_cli::NpyError;

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> out;
    for (float f : v) {
        uint32_t b;
        std::memcpy(&b, &f, 4);
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(b >> (8 * i)));
    }
    return out;
}

std::vector<uint8_t> f16_bytes(const std::vector<uint16_t>& v) {
    std::vector<uint8_t> out;
    for (uint16_t h : v) {
        out.push_back(static_cast<uint8_t>(h & 0xFF));
        out.push_back(static_cast<uint8_t>(h >> 8));
    }
    return out;
}

// A .npy file: magic, version, header length (2 bytes for v1, 4 for v2/v3), the
// dict padded to a 64-byte boundary, then the payload.
std::vector<uint8_t> npy(int major, const std::string& dict, const std::vector<uint8_t>& payload) {
    std::string header = dict;
    const size_t len_size = major == 1 ? 2 : 4;
    const size_t total = 8 + len_size + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
    for (size_t i = 0; i < len_size; ++i) out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

std::string dict(const std::string& descr, const std::string& shape, bool fortran = false) {
    return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
}

NpyArray parse(const std::vector<uint8_t>& b) { return sieve_cli::parse_npy(b.data(), b.size(), "test.npy"); }

// Expects parse to fail with a message containing `needle` (and the file name).
void expect_error(const std::vector<uint8_t>& b, const std::string& needle) {
    try {
        parse(b);
        FAIL() << "parsed, expected an error containing '" << needle << "'";
    } catch (const NpyError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
        EXPECT_NE(msg.find("test.npy"), std::string::npos) << "message does not name the file: " << msg;
    }
}

TEST(Npy, Float32OneDimensionalVersion1) {
    const std::vector<float> v = {1.5f, -2.25f, 0.0f, -std::numeric_limits<float>::infinity(), 3e38f};
    NpyArray a = parse(npy(1, dict("<f4", "(5,)"), f32_bytes(v)));
    EXPECT_EQ(a.shape, (std::vector<size_t>{5}));
    EXPECT_EQ(a.descr, "<f4");
    EXPECT_EQ(a.major_version, 1);
    ASSERT_EQ(a.data.size(), v.size());
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(a.data[i], v[i]) << i;
}

TEST(Npy, Float32TwoDimensionalVersion2) {
    std::vector<float> v(3 * 4);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f - 2.0f;
    NpyArray a = parse(npy(2, dict("<f4", "(3, 4)"), f32_bytes(v)));
    EXPECT_EQ(a.shape, (std::vector<size_t>{3, 4}));
    EXPECT_EQ(a.major_version, 2);
    EXPECT_EQ(a.data, v);
}

TEST(Npy, Float32Version3) {
    const std::vector<float> v = {0.25f, 7.0f};
    NpyArray a = parse(npy(3, dict("<f4", "(1, 2)"), f32_bytes(v)));
    EXPECT_EQ(a.major_version, 3);
    EXPECT_EQ(a.data, v);
}

TEST(Npy, Float16OneDimensionalConverted) {
    // 1, -2, 0.5, 65504 (max half), 2^-24 (smallest subnormal), 2^-15 (subnormal), +inf, -0
    const std::vector<uint16_t> h = {0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001, 0x0200, 0x7C00, 0x8000};
    NpyArray a = parse(npy(1, dict("<f2", "(8,)"), f16_bytes(h)));
    EXPECT_EQ(a.descr, "<f2");
    ASSERT_EQ(a.data.size(), 8u);
    EXPECT_EQ(a.data[0], 1.0f);
    EXPECT_EQ(a.data[1], -2.0f);
    EXPECT_EQ(a.data[2], 0.5f);
    EXPECT_EQ(a.data[3], 65504.0f);
    EXPECT_EQ(a.data[4], std::ldexp(1.0f, -24));
    EXPECT_EQ(a.data[5], std::ldexp(1.0f, -15));
    EXPECT_TRUE(std::isinf(a.data[6]) && a.data[6] > 0);
    EXPECT_EQ(a.data[7], 0.0f);
    EXPECT_TRUE(std::signbit(a.data[7]));
}

TEST(Npy, Float16TwoDimensionalVersion2) {
    const std::vector<uint16_t> h = {0x3C00, 0x4000, 0x4200, 0xBC00, 0x0000, 0x3555};
    NpyArray a = parse(npy(2, dict("<f2", "(2, 3)"), f16_bytes(h)));
    EXPECT_EQ(a.shape, (std::vector<size_t>{2, 3}));
    EXPECT_EQ(a.data[1], 2.0f);
    EXPECT_EQ(a.data[2], 3.0f);
    EXPECT_EQ(a.data[3], -1.0f);
    EXPECT_NEAR(a.data[5], 1.0f / 3.0f, 1e-3f);
}

TEST(Npy, HalfNaNStaysNaN) {
    EXPECT_TRUE(std::isnan(sieve_cli::half_to_float(0x7E00)));
    EXPECT_TRUE(std::isinf(sieve_cli::half_to_float(0xFC00)));
    EXPECT_LT(sieve_cli::half_to_float(0xFC00), 0.0f);
}

TEST(Npy, DoubleQuotedKeysAndNoTrailingComma) {
    NpyArray a = parse(npy(1, "{\"descr\": \"<f4\", \"shape\": (2,), \"fortran_order\": False}", f32_bytes({1, 2})));
    EXPECT_EQ(a.data, (std::vector<float>{1, 2}));
}

TEST(Npy, TruncatedData) {
    std::vector<uint8_t> b = npy(1, dict("<f4", "(2, 4)"), f32_bytes(std::vector<float>(8, 1.0f)));
    b.resize(b.size() - 5);
    expect_error(b, "truncated .npy data");
    expect_error(b, "needs 32 bytes");
}

TEST(Npy, TruncatedHeader) {
    std::vector<uint8_t> b = npy(1, dict("<f4", "(4,)"), f32_bytes({1, 2, 3, 4}));
    b.resize(30); // inside the header dict
    expect_error(b, "truncated .npy header");
}

TEST(Npy, TruncatedPreamble) {
    std::vector<uint8_t> b = npy(2, dict("<f4", "(4,)"), {});
    b.resize(9); // magic + version + 1 of 4 length bytes
    expect_error(b, "truncated");
}

TEST(Npy, BadMagic) {
    std::vector<uint8_t> b = npy(1, dict("<f4", "(1,)"), f32_bytes({1}));
    b[1] = 'X';
    expect_error(b, "bad magic");
    const std::string text = "0.5 1.5 2.5\n";
    expect_error(std::vector<uint8_t>(text.begin(), text.end()), "bad magic");
    expect_error({}, "empty file");
}

TEST(Npy, UnsupportedVersion) {
    std::vector<uint8_t> b = npy(1, dict("<f4", "(1,)"), f32_bytes({1}));
    b[6] = 4;
    expect_error(b, "version 4.0");
}

TEST(Npy, WrongDtype) {
    expect_error(npy(1, dict("<f8", "(2,)"), std::vector<uint8_t>(16, 0)), "unsupported dtype '<f8'");
    expect_error(npy(1, dict("<f8", "(2,)"), std::vector<uint8_t>(16, 0)), "float32");
    expect_error(npy(1, dict(">f4", "(2,)"), std::vector<uint8_t>(8, 0)), "big-endian");
    expect_error(npy(1, dict("<i4", "(2,)"), std::vector<uint8_t>(8, 0)), "unsupported dtype '<i4'");
}

TEST(Npy, FortranOrderRefused) {
    expect_error(npy(1, dict("<f4", "(2, 3)", true), f32_bytes(std::vector<float>(6, 0.0f))), "Fortran");
}

TEST(Npy, ThreeDimensionalShapeRefused) {
    expect_error(npy(1, dict("<f4", "(2, 2, 2)"), f32_bytes(std::vector<float>(8, 0.0f))), "shape (2, 2, 2)");
    expect_error(npy(1, dict("<f4", "()"), f32_bytes({1})), "[V] or [B, V]");
}

TEST(Npy, EmptyDimensionRefused) {
    expect_error(npy(1, dict("<f4", "(0,)"), {}), "empty array");
}

TEST(Npy, MalformedHeaderRefused) {
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False}", f32_bytes({1})), "needs 'descr', 'fortran_order' and 'shape'");
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}", f32_bytes({1})), "fortran_order");
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (a,)}", f32_bytes({1})), "shape");
    expect_error(npy(1, "not a dict at all", f32_bytes({1})), "malformed .npy header");
}

TEST(Npy, TrailingBytesRefused) {
    std::vector<uint8_t> b = npy(1, dict("<f4", "(2,)"), f32_bytes({1, 2}));
    b.push_back(0);
    expect_error(b, "after the data");
}

class NpyFiles : public ::testing::Test {
protected:
    void SetUp() override {
        std::string tmpl = (std::filesystem::temp_directory_path() / "sieve_npy_XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    void write(const std::string& name, const std::vector<uint8_t>& bytes) const {
        std::ofstream(path(name), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                          static_cast<std::streamsize>(bytes.size()));
    }
    std::filesystem::path dir_;
};

TEST_F(NpyFiles, WriterRoundTrip) {
    std::vector<float> v = {0.5f, -1.0f, 2.0f, 8.0f, -0.125f, 3.0f};
    sieve_cli::write_npy_f32(path("a.npy"), {2, 3}, v.data());
    NpyArray a = sieve_cli::read_npy(path("a.npy"));
    EXPECT_EQ(a.shape, (std::vector<size_t>{2, 3}));
    EXPECT_EQ(a.data, v);
    EXPECT_EQ(std::filesystem::file_size(path("a.npy")) % 16, 8u); // 64-aligned header + 24 data bytes
}

TEST_F(NpyFiles, MissingFileIsAClearError) {
    try {
        sieve_cli::read_npy(path("nope.npy"));
        FAIL();
    } catch (const NpyError& e) {
        EXPECT_NE(std::string(e.what()).find("nope.npy"), std::string::npos);
    }
}

int exit_code_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const sieve_cli::CliError& e) {
        return e.exit_code();
    }
    return 0;
}

TEST_F(NpyFiles, LoadNpyRowsAndVocab) {
    write("l.npy", npy(1, dict("<f4", "(2, 3)"), f32_bytes({1, 2, 3, 4, 5, 6})));
    sieve_cli::Logits l = sieve_cli::load_logits(path("l.npy"), 0, 0);
    EXPECT_EQ(l.rows, 2);
    EXPECT_EQ(l.vocab, 3);
    EXPECT_EQ(l.row(1)[0], 4.0f);
    EXPECT_EQ(sieve_cli::load_logits(path("l.npy"), 3, 2).rows, 2);
    EXPECT_EQ(exit_code_of([&] { sieve_cli::load_logits(path("l.npy"), 4, 0); }), 3);  // vocab disagrees
    EXPECT_EQ(exit_code_of([&] { sieve_cli::load_logits(path("l.npy"), 0, 3); }), 3);  // rows disagree
    write("t.npy", {0x93, 'N', 'U', 'M'});
    EXPECT_EQ(exit_code_of([&] { sieve_cli::load_logits(path("t.npy"), 0, 0); }), 3);
}

TEST_F(NpyFiles, OneRowRepeatedForRows) {
    write("one.npy", npy(1, dict("<f2", "(2,)"), f16_bytes({0x3C00, 0x4000})));
    sieve_cli::Logits l = sieve_cli::load_logits(path("one.npy"), 0, 3);
    EXPECT_EQ(l.rows, 3);
    EXPECT_EQ(l.data, (std::vector<float>{1, 2, 1, 2, 1, 2}));
}

TEST_F(NpyFiles, RawFloat32) {
    write("raw.f32", f32_bytes({1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(exit_code_of([&] { sieve_cli::load_logits(path("raw.f32"), 0, 0); }), 2);  // --vocab required
    EXPECT_EQ(exit_code_of([&] { sieve_cli::load_logits(path("raw.f32"), 4, 0); }), 3);  // 24 bytes % 16
    sieve_cli::Logits l = sieve_cli::load_logits(path("raw.f32"), 3, 0);
    EXPECT_EQ(l.rows, 2);
    EXPECT_EQ(l.vocab, 3);
    EXPECT_EQ(l.data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
    write("empty.f32", {});
    EXPECT_EQ(exit_code_of([&] { sieve_cli::load_logits(path("empty.f32"), 3, 0); }), 3);
    EXPECT_EQ(exit_code_of([&] { sieve_cli::load_logits(path("missing.f32"), 3, 0); }), 3);
}

TEST(ZipfLogits, DeterministicAndLmLike) {
    sieve_cli::Logits a = sieve_cli::zipf_logits(2, 1000);
    sieve_cli::Logits b = sieve_cli::zipf_logits(2, 1000);
    EXPECT_EQ(a.data, b.data);
    EXPECT_NE(std::vector<float>(a.row(0), a.row(0) + 1000), std::vector<float>(a.row(1), a.row(1) + 1000));
    for (float f : a.data) ASSERT_TRUE(std::isfinite(f));
    // Zipf: the top logit is about 12, the median about 12 - 1.1 ln(500).
    std::vector<float> r(a.row(0), a.row(0) + 1000);
    std::sort(r.begin(), r.end());
    EXPECT_NEAR(r.back(), 12.0f, 0.5f);
    EXPECT_NEAR(r[500], 12.0f - 1.1f * std::log(500.0f), 0.5f);
}

} // namespace
