#include "logits_source.hpp"

#include "exit_codes.hpp"
#include "input_stream.hpp"
#include "npy.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
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

std::string count_limit_text() {
    return std::to_string(kMaxInputValues) + " values (1 GiB of float32)";
}

// A .npy input: the preamble and header first, the limit and the size they
// imply checked, then exactly the data they declare.
FloatInput read_npy_input(InputStream& in, std::vector<uint8_t> head) {
    const std::string& name = in.name();
    try {
        const size_t preamble = npy_preamble_size(head.data(), head.size());
        if (preamble > 0) {
            in.read(head, preamble - head.size());
            const size_t header_len = npy_header_length(head.data(), head.size());
            if (header_len > kMaxNpyHeader)
                throw NpyError(name + ": malformed .npy header: it declares " + std::to_string(header_len) +
                               " bytes (a header holds at most " + std::to_string(kMaxNpyHeader) + ")");
            in.read(head, header_len);
        }
        const NpyHeader h = parse_npy_header(head.data(), head.size(), name);
        if (h.count > kMaxInputValues)
            throw CliError(kExitBadInput, name + ": shape of " + std::to_string(h.count) +
                                              " values is beyond the limit of " + count_limit_text());
        if (in.size()) check_npy_data_size(h, *in.size() - std::min<uint64_t>(*in.size(), h.data_offset), name);
        std::vector<uint8_t> data;
        in.read(data, h.data_bytes());
        uint64_t have = data.size();
        if (have == h.data_bytes() && !in.at_end()) {  // stdin: count what follows, up to a point
            std::vector<uint8_t> rest;
            have += in.read(rest, 1 << 20);
        }
        check_npy_data_size(h, have, name);
        FloatInput f;
        f.shape = h.shape;
        f.data = decode_npy_data(h, data.data());
        f.npy = true;
        return f;
    } catch (const NpyError& e) {
        throw CliError(kExitBadInput, e.what());
    }
}

// Raw little-endian float32: the size (known for a file, counted for stdin up
// to the limit) checked before the values are kept.
FloatInput read_raw_input(InputStream& in, std::vector<uint8_t> head, const std::function<void(uint64_t bytes)>& check_size) {
    const uint64_t max_bytes = 4 * kMaxInputValues;
    auto beyond = [&](const std::string& bytes) {
        return CliError(kExitBadInput, in.name() + ": " + bytes + " bytes of raw float32 is beyond the limit of " +
                                           count_limit_text());
    };
    if (in.size()) {
        check_size(*in.size());
        if (*in.size() > max_bytes) throw beyond(std::to_string(*in.size()));
        in.read(head, *in.size() - head.size());
    } else {
        while (head.size() <= max_bytes && in.read(head, std::min<uint64_t>(max_bytes + 1 - head.size(), 1 << 24)) > 0) {
        }
        if (head.size() > max_bytes) throw beyond("more than " + std::to_string(max_bytes));
        check_size(head.size());
    }
    FloatInput f;
    f.data = raw_f32(head);
    f.shape = {f.data.size()};
    return f;
}

FloatInput read_input(const std::string& path, const std::string& flag, const std::function<void(uint64_t bytes)>& check_raw_size) {
    InputStream in(path);
    std::vector<uint8_t> head;
    in.read(head, 8);
    if (head.size() >= 4 && std::memcmp(head.data(), "GGUF", 4) == 0)
        throw CliError(kExitBadInput, in.name() + ": a GGUF model file (magic 'GGUF'), not logits: " + flag +
                                          " takes a .npy file or raw little-endian float32 values");
    if (has_npy_magic(head.data(), head.size()) || ends_with(path, ".npy")) return read_npy_input(in, std::move(head));
    return read_raw_input(in, std::move(head), check_raw_size);
}

} // namespace

FloatInput load_floats(const std::string& path, const std::string& flag) {
    return read_input(path, flag, [&](uint64_t bytes) {
        if (bytes % 4 != 0)
            throw CliError(kExitBadInput, (path == "-" ? std::string("stdin") : path) + ": raw float32 file of " +
                                              std::to_string(bytes) + " bytes is not a multiple of 4");
    });
}

Logits load_logits(const std::string& path, int32_t vocab, int32_t rows) {
    if (vocab < 0) throw CliError(kExitUsage, "--vocab must be positive");
    if (rows < 0) throw CliError(kExitUsage, "--rows must be positive");
    const std::string name = path == "-" ? "stdin" : path;
    const size_t row_bytes = 4 * static_cast<size_t>(vocab);
    FloatInput f = read_input(path, "--logits", [&](uint64_t bytes) {
        if (vocab <= 0)
            throw CliError(kExitUsage, name + ": not a .npy file, so it is read as raw little-endian float32 and needs --vocab V");
        if (bytes == 0 || bytes % row_bytes != 0)
            throw CliError(kExitBadInput, name + ": raw float32 file of " + std::to_string(bytes) +
                                              " bytes is not a positive multiple of 4 * vocab = " + std::to_string(row_bytes));
        if (bytes / 4 > kMaxInputValues)
            throw CliError(kExitBadInput, name + ": " + std::to_string(bytes / row_bytes) + " rows x " +
                                              std::to_string(vocab) + " = " + std::to_string(bytes / 4) +
                                              " logits, beyond the limit of " + count_limit_text());
    });
    Logits l;
    l.source = name;
    if (f.npy) {
        const size_t v = f.shape.back();
        const size_t b = f.shape.size() == 2 ? f.shape[0] : 1;
        if (v > kMaxDim || b > kMaxDim) throw CliError(kExitBadInput, name + ": array too large");
        if (vocab > 0 && static_cast<size_t>(vocab) != v)
            throw CliError(kExitBadInput, name + ": --vocab " + std::to_string(vocab) + " but the file's vocabulary is " + std::to_string(v));
        l.vocab = static_cast<int32_t>(v);
        l.rows = static_cast<int32_t>(b);
    } else {
        const size_t b = f.data.size() / static_cast<size_t>(vocab);
        if (b > kMaxDim) throw CliError(kExitBadInput, name + ": too many rows");
        l.vocab = vocab;
        l.rows = static_cast<int32_t>(b);
    }
    l.data = std::move(f.data);
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
