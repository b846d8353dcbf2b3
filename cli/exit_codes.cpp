#include "exit_codes.hpp"

namespace sieve_cli {

int exit_code_for(sieve_status status) {
    switch (status) {
    case SIEVE_OK:
        return kExitOk;
    // What the user asked for cannot be built: a usage error.
    case SIEVE_ERROR_UNKNOWN_SAMPLER:
    case SIEVE_ERROR_UNSUPPORTED_SAMPLER:
    case SIEVE_ERROR_INVALID_CHAIN:
    case SIEVE_ERROR_INVALID_PARAMETER:
        return kExitUsage;
    // The data does not fit what it must be: bad input.
    case SIEVE_ERROR_INVALID_ARGUMENT:   // sizes that disagree
    case SIEVE_ERROR_CAPACITY:           // vocab/rows 0 or beyond capacity
    case SIEVE_ERROR_NON_FINITE_LOGIT:
    case SIEVE_ERROR_ALL_MASKED:
        return kExitBadInput;
    // The device or the engine failed. NULL_HANDLE, PENDING and INTERNAL cannot
    // come from anything the user typed: they are engine failures and reported as such.
    case SIEVE_ERROR_DEVICE_LIMIT:
    case SIEVE_ERROR_NO_DEVICE:
    case SIEVE_ERROR_VULKAN:
    case SIEVE_ERROR_DEVICE_LOST:
    case SIEVE_ERROR_TIMEOUT:
    case SIEVE_ERROR_OUT_OF_MEMORY:
    case SIEVE_ERROR_NULL_HANDLE:
    case SIEVE_ERROR_PENDING:
    case SIEVE_ERROR_INTERNAL:
        return kExitDevice;
    }
    return kExitDevice; // a status this CLI does not know (newer library)
}

const char* exit_class_name(int exit_code) {
    switch (exit_code) {
    case kExitOk: return "ok";
    case kExitUsage: return "usage";
    case kExitBadInput: return "bad_input";
    case kExitDevice: return "device";
    default: return "error";
    }
}

} // namespace sieve_cli
