// Where the CLI's logits come from: a .npy file, a raw little-endian float32 file,
// or the built-in deterministic LM-like (Zipf) rows the benchmark uses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sieve_cli {

struct Logits {
    int32_t rows = 0;
    int32_t vocab = 0;
    std::vector<float> data;  // row-major [rows][vocab]
    std::string source;       // for messages: the file, or "built-in zipf"
    const float* row(int32_t r) const { return data.data() + static_cast<size_t>(r) * static_cast<size_t>(vocab); }
};

// What an input may hold: 2^28 values (1 GiB of float32), checked from the
// file's size or the .npy header before the data is read. A .npy header is
// at most 1 MiB (numpy's are under 100 bytes).
constexpr uint64_t kMaxInputValues = uint64_t(1) << 28;
constexpr size_t kMaxNpyHeader = size_t(1) << 20;

// Loads logits from a file, or stdin for "-". A file starting with the .npy magic (or named *.npy) is read as
// .npy; anything else as raw float32, which needs `vocab` > 0. A non-zero `vocab`
// must match a .npy's. `rows` > 0 asks for that many rows: it must match the
// file, or the file must hold one row, which is then repeated.
// A GGUF file (magic "GGUF") is named as such. Sizes and limits are checked
// from the file's size and the .npy header before the data is read.
// Throws CliError: exit 2 for a missing --vocab, exit 3 for any problem with the file.
Logits load_logits(const std::string& path, int32_t vocab, int32_t rows);

// Any float array in a file ("-" = stdin): a .npy (float32/float16, shape [N]
// or [N, M]) or raw little-endian float32 (shape [count]), within
// kMaxInputValues. Throws CliError (exit 3) for an unreadable, malformed or
// too large input; `flag` names it in messages.
struct FloatInput {
    std::vector<size_t> shape;
    std::vector<float> data;
    bool npy = false;
};
FloatInput load_floats(const std::string& path, const std::string& flag);

// Deterministic LM-like logits: logit_i = 12 - a*ln(rank_i + 1) + N(0, sigma), with
// the ranks a fixed random permutation of the ids. Portable: the same values on
// every platform (own RNG, shuffle and gaussian). Row r uses seed + r.
Logits zipf_logits(int32_t rows, int32_t vocab, uint64_t seed = 20240601u, double a = 1.1, double sigma = 0.1);

// Flat: every logit N(0, 1), no structure (top-p keeps most of the row).
Logits flat_logits(int32_t rows, int32_t vocab, uint64_t seed = 20240602u);

// Peaked: N(0, 1) logits and one token (a fixed random id per row) 20 above
// them: nearly all of the mass on one token, as after a confident prefix.
Logits peaked_logits(int32_t rows, int32_t vocab, uint64_t seed = 20240603u);

} // namespace sieve_cli
