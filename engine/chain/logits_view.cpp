#include "chain/logits_view.hpp"

#include <cstring>

namespace sieve {

size_t dtype_bytes(sieve_dtype dtype) { return dtype == SIEVE_DTYPE_F32 ? 4 : 2; }

const char* dtype_name(sieve_dtype dtype) {
    switch (dtype) {
    case SIEVE_DTYPE_F32: return "f32";
    case SIEVE_DTYPE_F16: return "f16";
    case SIEVE_DTYPE_BF16: return "bf16";
    }
    return "unknown";
}

// IEEE 754 binary16 -> binary32, exact for every value: subnormals are
// normalized, Inf stays Inf and NaN stays NaN (the row check rejects both).
float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0x1Fu) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;  // +-0
    } else {
        // Subnormal: shift the mantissa up until its leading 1 is implicit.
        exp = 113u;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((mant & 0x3FFu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// bfloat16 is the top half of a binary32.
float bfloat_to_float(uint16_t b) {
    const uint32_t bits = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

namespace {

void convert(const void* src, sieve_dtype dtype, int32_t n, float* dst) {
    if (dtype == SIEVE_DTYPE_F32) {
        std::memcpy(dst, src, static_cast<size_t>(n) * 4);
        return;
    }
    const auto* h = static_cast<const uint16_t*>(src);
    if (dtype == SIEVE_DTYPE_F16)
        for (int32_t i = 0; i < n; ++i) dst[i] = half_to_float(h[i]);
    else
        for (int32_t i = 0; i < n; ++i) dst[i] = bfloat_to_float(h[i]);
}

} // namespace

const float* LogitsView::row_f32(int32_t r, std::vector<float>* scratch) const {
    const auto* base = static_cast<const unsigned char*>(data) + static_cast<size_t>(r) * stride * dtype_bytes(dtype);
    if (dtype == SIEVE_DTYPE_F32) return reinterpret_cast<const float*>(base);
    scratch->resize(static_cast<size_t>(vocab));
    convert(base, dtype, vocab, scratch->data());
    return scratch->data();
}

void LogitsView::copy_row_f32(int32_t r, float* dst) const {
    convert(static_cast<const unsigned char*>(data) + static_cast<size_t>(r) * stride * dtype_bytes(dtype), dtype,
            vocab, dst);
}

void LogitsView::pack_f32(float* dst) const {
    const size_t row_bytes = static_cast<size_t>(stride) * dtype_bytes(dtype);
    if (dtype == SIEVE_DTYPE_F32 && stride == vocab) {
        std::memcpy(dst, data, static_cast<size_t>(rows) * vocab * 4);
        return;
    }
    for (int32_t r = 0; r < rows; ++r)
        convert(static_cast<const unsigned char*>(data) + r * row_bytes, dtype, vocab,
                dst + static_cast<size_t>(r) * vocab);
}

} // namespace sieve
