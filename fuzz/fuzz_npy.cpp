// The CLI's .npy reader on arbitrary bytes: it returns an array whose data
// matches its shape, or throws NpyError; anything else (another exception, a
// sanitizer report) is a finding.
#include "npy.hpp"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    (void)sieve_cli::has_npy_magic(data, size);
    try {
        const sieve_cli::NpyArray a = sieve_cli::parse_npy(data, size);
        size_t n = 1;
        for (size_t d : a.shape) n *= d;
        if (a.shape.empty() || a.shape.size() > 2 || n != a.data.size()) std::abort();
    } catch (const sieve_cli::NpyError&) {
    }
    return 0;
}
