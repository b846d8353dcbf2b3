#include "logits_source.hpp"

#include "exit_codes.hpp"
#include "npy.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

namespace sieve_cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// --rows repeating a one-row file: bounded (exit 3), as the device's
// capacity would bound it; the twin has none and ran until killed.
constexpr int64_t kMaxRepeatedRows = 65536;
constexpr int64_t kMaxRepeatedLogits = int64_t(1) << 28;  // rows x vocab: 1 GiB of float32

void check_repeat(int32_t rows, int32_t vocab) {
    if (rows > kMaxRepeatedRows)
        throw CliError(kExitBadInput, "--rows " + std::to_string(rows) + " is beyond the limit of " +
                                          std::to_string(kMaxRepeatedRows) + " rows");
    if (int64_t(rows) * vocab > kMaxRepeatedLogits)
        throw CliError(kExitBadInput, "--rows " + std::to_string(rows) + " x vocab " + std::to_string(vocab) +
                                          " is beyond the limit of " + std::to_string(kMaxRepeatedLogits) +
                                          " logits (rows x vocab)");
}

void apply_rows(Logits& l, int32_t rows) {
    if (rows <= 0 || rows == l.rows) return;
    if (l.rows != 1)
        throw CliError(kExitBadInput, l.source + ": --rows " + std::to_string(rows) + " but the file holds " +
                                          std::to_string(l.rows) + " rows (a one-row file can be repeated)");
    check_repeat(rows, l.vocab);
    std::vector<float> out(static_cast<size_t>(rows) * static_cast<size_t>(l.vocab));
    for (int32_t r = 0; r < rows; ++r)
        std::memcpy(out.data() + static_cast<size_t>(r) * l.vocab, l.data.data(), sizeof(float) * l.vocab);
    l.data = std::move(out);
    l.rows = rows;
}

constexpr size_t kMaxDim = static_cast<size_t>(std::numeric_limits<int32_t>::max());

// Little-endian float32 values, whatever the host's byte order (a trailing
// partial value is ignored: the callers check the size).
std::vector<float> raw_f32(const std::vector<uint8_t>& bytes) {
    std::vector<float> out(bytes.size() / 4);
    for (size_t i = 0; i < out.size(); ++i) {
        const uint8_t* p = bytes.data() + 4 * i;
        uint32_t bits = uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
        std::memcpy(&out[i], &bits, 4);
    }
    return out;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
    try {
        return read_file_bytes(path);
    } catch (const std::runtime_error& e) {
        throw CliError(kExitBadInput, e.what());
    }
}

} // namespace

FloatFile load_floats(const std::string& path) {
    const std::vector<uint8_t> bytes = file_bytes(path);
    FloatFile f;
    if (has_npy_magic(bytes.data(), bytes.size()) || ends_with(path, ".npy")) {
        try {
            NpyArray a = parse_npy(bytes.data(), bytes.size(), path);
            f.shape = std::move(a.shape);
            f.data = std::move(a.data);
        } catch (const NpyError& e) {
            throw CliError(kExitBadInput, e.what());
        }
        f.npy = true;
        return f;
    }
    if (bytes.size() % 4 != 0)
        throw CliError(kExitBadInput, path + ": raw float32 file of " + std::to_string(bytes.size()) +
                                          " bytes is not a multiple of 4");
    f.data = raw_f32(bytes);
    f.shape = {f.data.size()};
    return f;
}

Logits load_logits(const std::string& path, int32_t vocab, int32_t rows) {
    if (vocab < 0) throw CliError(kExitUsage, "--vocab must be positive");
    if (rows < 0) throw CliError(kExitUsage, "--rows must be positive");
    const std::vector<uint8_t> bytes = file_bytes(path);
    Logits l;
    l.source = path;
    if (has_npy_magic(bytes.data(), bytes.size()) || ends_with(path, ".npy")) {
        NpyArray a;
        try {
            a = parse_npy(bytes.data(), bytes.size(), path);
        } catch (const NpyError& e) {
            throw CliError(kExitBadInput, e.what());
        }
        const size_t v = a.shape.back();
        const size_t b = a.shape.size() == 2 ? a.shape[0] : 1;
        if (v > kMaxDim || b > kMaxDim) throw CliError(kExitBadInput, path + ": array too large");
        if (vocab > 0 && static_cast<size_t>(vocab) != v)
            throw CliError(kExitBadInput, path + ": --vocab " + std::to_string(vocab) + " but the file's vocabulary is " + std::to_string(v));
        l.vocab = static_cast<int32_t>(v);
        l.rows = static_cast<int32_t>(b);
        l.data = std::move(a.data);
    } else {
        if (vocab <= 0)
            throw CliError(kExitUsage, path + ": not a .npy file, so it is read as raw little-endian float32 and needs --vocab V");
        const size_t row_bytes = 4 * static_cast<size_t>(vocab);
        if (bytes.empty() || bytes.size() % row_bytes != 0)
            throw CliError(kExitBadInput, path + ": raw float32 file of " + std::to_string(bytes.size()) +
                                              " bytes is not a positive multiple of 4 * vocab = " + std::to_string(row_bytes));
        const size_t b = bytes.size() / row_bytes;
        if (b > kMaxDim) throw CliError(kExitBadInput, path + ": too many rows");
        l.vocab = vocab;
        l.rows = static_cast<int32_t>(b);
        l.data = raw_f32(bytes);
    }
    apply_rows(l, rows);
    return l;
}

Logits zipf_logits(int32_t rows, int32_t vocab, uint64_t seed, double a, double sigma) {
    Logits l;
    l.rows = rows;
    l.vocab = vocab;
    l.source = "built-in zipf";
    l.data.resize(static_cast<size_t>(rows) * static_cast<size_t>(vocab));
    std::vector<uint32_t> rank(static_cast<size_t>(vocab));
    for (int32_t r = 0; r < rows; ++r) {
        std::mt19937_64 rng(seed + static_cast<uint64_t>(r)); // mt19937_64's output is fully specified
        auto uniform = [&rng]() { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; }; // (0,1)
        std::iota(rank.begin(), rank.end(), 0u);
        for (size_t i = rank.size(); i > 1; --i) { // Fisher-Yates with our own index draw
            size_t j = static_cast<size_t>(rng() % i);
            std::swap(rank[i - 1], rank[j]);
        }
        float* out = l.data.data() + static_cast<size_t>(r) * vocab;
        for (int32_t i = 0; i < vocab; ++i) {
            const double u1 = uniform(); // two statements: evaluation order must be fixed
            const double u2 = uniform();
            const double g = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2); // Box-Muller
            out[i] = static_cast<float>(12.0 - a * std::log(static_cast<double>(rank[i]) + 1.0) + sigma * g);
        }
    }
    return l;
}

namespace {

// Gaussian N(0, 1) rows, portable (own Box-Muller over mt19937_64), row r seeded seed + r.
Logits gaussian_rows(int32_t rows, int32_t vocab, uint64_t seed, const char* source, double peak) {
    Logits l;
    l.rows = rows;
    l.vocab = vocab;
    l.source = source;
    l.data.resize(static_cast<size_t>(rows) * static_cast<size_t>(vocab));
    for (int32_t r = 0; r < rows; ++r) {
        std::mt19937_64 rng(seed + static_cast<uint64_t>(r));
        auto uniform = [&rng]() { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };
        float* out = l.data.data() + static_cast<size_t>(r) * vocab;
        for (int32_t i = 0; i < vocab; ++i) {
            const double u1 = uniform();
            const double u2 = uniform();
            out[i] = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
        }
        if (peak != 0.0) out[rng() % static_cast<uint64_t>(vocab)] += static_cast<float>(peak);
    }
    return l;
}

} // namespace

Logits flat_logits(int32_t rows, int32_t vocab, uint64_t seed) {
    return gaussian_rows(rows, vocab, seed, "built-in flat gaussian", 0.0);
}

Logits peaked_logits(int32_t rows, int32_t vocab, uint64_t seed) {
    return gaussian_rows(rows, vocab, seed, "built-in peaked", 20.0);
}

} // namespace sieve_cli
