#include "npy.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace sieve_cli {
namespace {

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

[[noreturn]] void fail(const std::string& name, const std::string& what) {
    throw NpyError(name + ": " + what);
}

// The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 32000), }
// This parses exactly that subset: string keys; string, bool and int-tuple values.
class HeaderParser {
public:
    HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

    void parse(std::string& descr, bool& fortran, std::vector<size_t>& shape) {
        bool have_descr = false, have_fortran = false, have_shape = false;
        expect('{');
        while (true) {
            skip_ws();
            if (peek() == '}') { ++i_; break; }
            std::string key = string_literal();
            expect(':');
            skip_ws();
            if (key == "descr") {
                descr = string_literal();
                have_descr = true;
            } else if (key == "fortran_order") {
                fortran = boolean();
                have_fortran = true;
            } else if (key == "shape") {
                shape = tuple();
                have_shape = true;
            } else {
                fail(name_, "malformed .npy header: unexpected key '" + key + "'");
            }
            skip_ws();
            if (peek() == ',') { ++i_; continue; }
            expect('}');
            break;
        }
        skip_ws();
        if (i_ != s_.size()) fail(name_, "malformed .npy header: text after the dictionary");
        if (!have_descr || !have_fortran || !have_shape)
            fail(name_, "malformed .npy header: it needs 'descr', 'fortran_order' and 'shape'");
    }

private:
    char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    void skip_ws() { while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_; }
    void expect(char c) {
        skip_ws();
        if (peek() != c) fail(name_, std::string("malformed .npy header: expected '") + c + "' at offset " + std::to_string(i_));
        ++i_;
    }
    std::string string_literal() {
        skip_ws();
        char q = peek();
        if (q != '\'' && q != '"') fail(name_, "malformed .npy header: expected a quoted string at offset " + std::to_string(i_));
        size_t end = s_.find(q, i_ + 1);
        if (end == std::string::npos) fail(name_, "malformed .npy header: unterminated string");
        std::string out = s_.substr(i_ + 1, end - i_ - 1);
        i_ = end + 1;
        return out;
    }
    bool boolean() {
        if (s_.compare(i_, 4, "True") == 0) { i_ += 4; return true; }
        if (s_.compare(i_, 5, "False") == 0) { i_ += 5; return false; }
        fail(name_, "malformed .npy header: 'fortran_order' must be True or False");
    }
    std::vector<size_t> tuple() {
        std::vector<size_t> out;
        expect('(');
        while (true) {
            skip_ws();
            if (peek() == ')') { ++i_; break; }
            if (!std::isdigit(static_cast<unsigned char>(peek())))
                fail(name_, "malformed .npy header: 'shape' must be a tuple of non-negative integers");
            size_t v = 0;
            while (std::isdigit(static_cast<unsigned char>(peek()))) {
                size_t d = static_cast<size_t>(peek() - '0');
                if (v > (std::numeric_limits<size_t>::max() - d) / 10) fail(name_, "malformed .npy header: dimension too large");
                v = v * 10 + d;
                ++i_;
            }
            if (peek() == 'L') ++i_; // Python 2 long suffix
            out.push_back(v);
            skip_ws();
            if (peek() == ',') { ++i_; continue; }
            expect(')');
            break;
        }
        return out;
    }

    const std::string& s_;
    const std::string& name_;
    size_t i_ = 0;
};

uint32_t load_le32(const uint8_t* p) {
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

std::string dtype_hint(const std::string& descr) {
    if (descr == ">f4" || descr == ">f2") return " (big-endian; convert with arr.astype('<" + descr.substr(1) + "'))";
    if (descr.size() >= 2 && descr.substr(1) == "f8") return " (float64; convert with arr.astype(np.float32))";
    if (descr.size() >= 2 && descr.substr(1) == "V2") return " (bfloat16 is not supported yet; convert to float32)";
    return "";
}

std::string shape_text(const std::vector<size_t>& shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) s += ",";
    return s + ")";
}

} // namespace

bool has_npy_magic(const uint8_t* bytes, size_t size) {
    return size >= sizeof kMagic && std::memcmp(bytes, kMagic, sizeof kMagic) == 0;
}

float half_to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { // subnormal: renormalize
            int e = -1;
            do { mant <<= 1; ++e; } while ((mant & 0x400u) == 0);
            bits = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3FFu) << 13);
        }
    } else if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13); // inf / NaN (payload kept)
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

size_t npy_preamble_size(const uint8_t* bytes, size_t size) {
    if (size < 8 || !has_npy_magic(bytes, size)) return 0;
    if (bytes[6] < 1 || bytes[6] > 3 || bytes[7] != 0) return 0;
    return bytes[6] == 1 ? 10 : 12;
}

size_t npy_header_length(const uint8_t* bytes, size_t size) {
    const size_t preamble = npy_preamble_size(bytes, size);
    if (preamble == 0 || size < preamble) return 0;
    return preamble == 10 ? (size_t(bytes[8]) | (size_t(bytes[9]) << 8)) : load_le32(bytes + 8);
}

NpyHeader parse_npy_header(const uint8_t* bytes, size_t size, const std::string& name) {
    if (size < 8) {
        if (size == 0) fail(name, "empty file, not a .npy file");
        if (!has_npy_magic(bytes, size)) fail(name, "not a .npy file (bad magic: it must start with \\x93NUMPY)");
        fail(name, "truncated .npy file: " + std::to_string(size) + " bytes, the preamble alone needs 10");
    }
    if (!has_npy_magic(bytes, size)) fail(name, "not a .npy file (bad magic: it must start with \\x93NUMPY)");
    NpyHeader a;
    a.major_version = bytes[6];
    a.minor_version = bytes[7];
    if (a.major_version < 1 || a.major_version > 3 || a.minor_version != 0)
        fail(name, "unsupported .npy format version " + std::to_string(a.major_version) + "." +
                       std::to_string(a.minor_version) + " (1.0, 2.0 and 3.0 are supported)");
    const size_t len_size = a.major_version == 1 ? 2 : 4;
    const size_t preamble = 8 + len_size;
    if (size < preamble)
        fail(name, "truncated .npy file: " + std::to_string(size) + " bytes, the preamble needs " + std::to_string(preamble));
    const size_t header_len = npy_header_length(bytes, size);
    if (size - preamble < header_len)
        fail(name, "truncated .npy header: it declares " + std::to_string(header_len) + " bytes, the file has " +
                       std::to_string(size - preamble) + " after the preamble");
    std::string header(reinterpret_cast<const char*>(bytes + preamble), header_len);

    bool fortran = false;
    HeaderParser(header, name).parse(a.descr, fortran, a.shape);

    if (a.descr == "<f4") a.item_size = 4;
    else if (a.descr == "<f2") a.item_size = 2;
    else fail(name, "unsupported dtype '" + a.descr + "'" + dtype_hint(a.descr) + ": logits must be little-endian float32 '<f4' or float16 '<f2'");

    if (a.shape.empty() || a.shape.size() > 2)
        fail(name, "unsupported shape " + shape_text(a.shape) + ": logits must have shape [V] or [B, V]");
    if (fortran && a.shape.size() > 1)
        fail(name, "Fortran-order arrays are not supported: save a C-order array (np.ascontiguousarray)");
    size_t count = 1;
    for (size_t d : a.shape) {
        if (d == 0) fail(name, "empty array, shape " + shape_text(a.shape));
        if (count > std::numeric_limits<size_t>::max() / a.item_size / d) fail(name, "array too large, shape " + shape_text(a.shape));
        count *= d;
    }
    a.count = count;
    a.data_offset = preamble + header_len;
    return a;
}

void check_npy_data_size(const NpyHeader& h, uint64_t have, const std::string& name) {
    const uint64_t need = h.data_bytes();
    if (have < need)
        fail(name, "truncated .npy data: shape " + shape_text(h.shape) + " of '" + h.descr + "' needs " + std::to_string(need) +
                       " bytes, the file has " + std::to_string(have));
    if (have > need)
        fail(name, "malformed .npy file: " + std::to_string(have - need) + " bytes after the data of shape " + shape_text(h.shape));
}

std::vector<float> decode_npy_data(const NpyHeader& h, const uint8_t* p) {
    std::vector<float> out(h.count);
    if (h.item_size == 4) {
        for (size_t i = 0; i < h.count; ++i) {
            uint32_t bits = load_le32(p + 4 * i);
            std::memcpy(&out[i], &bits, 4);
        }
    } else {
        for (size_t i = 0; i < h.count; ++i) out[i] = half_to_float(uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
    }
    return out;
}

NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& name) {
    const NpyHeader h = parse_npy_header(bytes, size, name);
    check_npy_data_size(h, size - h.data_offset, name);
    NpyArray a;
    a.shape = h.shape;
    a.descr = h.descr;
    a.major_version = h.major_version;
    a.minor_version = h.minor_version;
    a.data = decode_npy_data(h, bytes + h.data_offset);
    return a;
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
    // A directory opens as a stream on Linux and reports a size of 2^63 - 1.
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!ec && std::filesystem::is_directory(status)) throw std::runtime_error(path + ": is a directory, not a file");
    if (!ec && !std::filesystem::is_regular_file(status)) throw std::runtime_error(path + ": is not a regular file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    in.seekg(0, std::ios::end);
    std::streamoff n = in.tellg();
    if (n < 0) throw std::runtime_error(path + ": cannot read (not a regular file?)");
    in.seekg(0, std::ios::beg);
    std::vector<uint8_t> bytes(static_cast<size_t>(n));
    if (n > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), n)) throw std::runtime_error(path + ": read error");
    return bytes;
}

NpyArray read_npy(const std::string& path) {
    std::vector<uint8_t> bytes;
    try {
        bytes = read_file_bytes(path);
    } catch (const std::runtime_error& e) {
        throw NpyError(e.what());
    }
    return parse_npy(bytes.data(), bytes.size(), path);
}

void write_npy_f32(const std::string& path, const std::vector<size_t>& shape, const float* data) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
    // Pad so that magic + version + length + header is a multiple of 64, ending in '\n'.
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    size_t count = 1;
    for (size_t d : shape) count *= d;
    std::ofstream out(path, std::ios::binary);
    if (!out) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
    out.write(reinterpret_cast<const char*>(kMagic), sizeof kMagic);
    const char version[2] = {1, 0};
    out.write(version, 2);
    const char len[2] = {char(header.size() & 0xFF), char(header.size() >> 8)};
    out.write(len, 2);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (size_t i = 0; i < count; ++i) {
        uint32_t bits;
        std::memcpy(&bits, &data[i], 4);
        const char b[4] = {char(bits & 0xFF), char((bits >> 8) & 0xFF), char((bits >> 16) & 0xFF), char(bits >> 24)};
        out.write(b, 4);
    }
    if (!out) throw std::runtime_error(path + ": write error");
}

} // namespace sieve_cli
