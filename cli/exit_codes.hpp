// Exit statuses of the `sieve` CLI (docs/contracts.md, "The CLI") and the one place
// that maps every sieve_status onto them.
#pragma once

#include <sieve/sieve.h>

#include <stdexcept>
#include <string>

namespace sieve_cli {

enum ExitCode : int {
    kExitOk = 0,
    kExitUsage = 2,     // bad flags, unknown/unsupported sampler, invalid chain or parameter
    kExitBadInput = 3,  // unreadable/malformed file, NaN/Inf logits, all -inf row, sizes
    kExitDevice = 4,    // no device, Vulkan error, device lost, device limit, engine failure
};

// The exit status for a library status (kExitOk for SIEVE_OK).
int exit_code_for(sieve_status status);

// An error raised by the CLI itself, carrying its exit status and, when it comes
// from the library, the library status (SIEVE_OK otherwise).
class CliError : public std::runtime_error {
public:
    CliError(int exit_code, const std::string& message, sieve_status status = SIEVE_OK)
        : std::runtime_error(message), exit_code_(exit_code), status_(status) {}
    int exit_code() const noexcept { return exit_code_; }
    sieve_status status() const noexcept { return status_; }

private:
    int exit_code_;
    sieve_status status_;
};

// Short name of an exit code's class for messages and JSON ("usage", "bad_input", ...).
const char* exit_class_name(int exit_code);

} // namespace sieve_cli
