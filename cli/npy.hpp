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

// What a .npy file's preamble and header say, read before its data.
struct NpyHeader {
    std::vector<size_t> shape;
    std::string descr;
    int major_version = 0;
    int minor_version = 0;
    size_t data_offset = 0;  // preamble + header
    size_t item_size = 0;    // 4 ('<f4') or 2 ('<f2')
    size_t count = 0;        // values in the array
    size_t data_bytes() const { return count * item_size; }
};

// Bytes of the preamble (magic, version, header length) once the first 8 are
// known: 10 for version 1.0, 12 for 2.0 and 3.0 (0 for a bad version).
size_t npy_preamble_size(const uint8_t* bytes, size_t size);
// The header length the preamble declares (`size` >= npy_preamble_size).
size_t npy_header_length(const uint8_t* bytes, size_t size);

// Parses the preamble and header from the file's first bytes (at least the
// preamble and the header it declares). Throws NpyError as parse_npy does.
NpyHeader parse_npy_header(const uint8_t* bytes, size_t size, const std::string& name);
// Throws NpyError unless exactly the header's data follows it: `have` is the
// number of bytes after the header.
void check_npy_data_size(const NpyHeader& header, uint64_t have, const std::string& name);
// The data (header.data_bytes() bytes) converted to float32.
std::vector<float> decode_npy_data(const NpyHeader& header, const uint8_t* data);

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
