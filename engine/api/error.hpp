// Internal error handling: engine code throws sieve::Failure; the C API catches it
// at the boundary, stores the message for sieve_last_error() and returns the status.
#pragma once

#include <sieve/sieve.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sieve {

class Failure : public std::runtime_error {
public:
    Failure(sieve_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
    sieve_status status() const noexcept { return status_; }

private:
    sieve_status status_;
};

[[noreturn]] inline void fail(sieve_status status, const std::string& message) { throw Failure(status, message); }

// A C caller may pass any int where the header says an enum; in C++ reading an
// enum object outside its enumerators' range is undefined (UBSan: "load of
// value 7, which is not a valid value for type 'sieve_dtype'"), so look at its
// bytes and check them before the value is read as the enum.
template <typename Enum>
int32_t raw_enum(const Enum& e) {
    static_assert(sizeof(Enum) == sizeof(int32_t), "C enums are int-sized here");
    int32_t raw = 0;
    std::memcpy(&raw, &e, sizeof raw);
    return raw;
}

// Thread-local last error (sieve_last_error).
void set_last_error(const std::string& message);
void clear_last_error();
const char* last_error();

} // namespace sieve
