// A call's logits as the caller holds them: rows of f32, f16 or bf16 values,
// row r starting `stride` elements after row r-1 (ggml's output tensor keeps
// rows inside a larger buffer). The engine reads them only through this view.
#pragma once

#include <sieve/sieve.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sieve {

struct LogitsView {
    const void* data = nullptr;
    sieve_dtype dtype = SIEVE_DTYPE_F32;
    int32_t rows = 0;
    int32_t vocab = 0;
    int64_t stride = 0;  // elements between row starts (>= vocab)

    static LogitsView f32(const float* data, int32_t rows, int32_t vocab) {
        return {data, SIEVE_DTYPE_F32, rows, vocab, vocab};
    }

    // Row r as f32 without a copy when the values already are f32, else
    // converted into *scratch (exactly: every f16 and bf16 value is an f32).
    const float* row_f32(int32_t r, std::vector<float>* scratch) const;
    // Rows [0, rows) converted and packed as [rows][vocab] f32 into dst.
    void pack_f32(float* dst) const;
    // Row r converted to f32 into dst (vocab values).
    void copy_row_f32(int32_t r, float* dst) const;
};

size_t dtype_bytes(sieve_dtype dtype);
const char* dtype_name(sieve_dtype dtype);
float half_to_float(uint16_t h);
float bfloat_to_float(uint16_t b);

} // namespace sieve
