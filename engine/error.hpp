// Internal error handling: engine code throws sieve::Failure; the C API catches it
// at the boundary, stores the message for sieve_last_error() and returns the status.
#pragma once

#include <sieve/sieve.h>

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

// Thread-local last error (sieve_last_error).
void set_last_error(const std::string& message);
void clear_last_error();
const char* last_error();

} // namespace sieve
