// A strict reader (and a small writer) for NumPy .npy files holding logits:
// little-endian float32 ('<f4') or float16 ('<f2', converted to float32), C order,
// shape [V] or [B, V], format versions 1.0, 2.0 and 3.0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace sieve_cli {

// Every problem with a .npy file; the message names the file and what is wrong.
class NpyError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct NpyArray {
    std::vector<size_t> shape;  // as stored: {V} or {B, V}
    std::string descr;          // '<f4' or '<f2'
    int major_version = 0;
    int minor_version = 0;
    std::vector<float> data;    // row-major, converted to float32
};

// True when the bytes start with the .npy magic string.
bool has_npy_magic(const uint8_t* bytes, size_t size);

// Parses a whole .npy file held in memory; `name` is used in messages.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& name = "npy data");
NpyArray read_npy(const std::string& path);

// IEEE half -> float (subnormals, infinities and NaN included).
float half_to_float(uint16_t h);

// Writes float32 data as a version 1.0 '<f4' .npy (shape {V} or {B, V}).
void write_npy_f32(const std::string& path, const std::vector<size_t>& shape, const float* data);

// Reads a whole file (throws std::runtime_error naming the file on failure).
std::vector<uint8_t> read_file_bytes(const std::string& path);

} // namespace sieve_cli
