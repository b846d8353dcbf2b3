// The C API's boundary, shared by its entry points (api*.cpp): exceptions
// turned into statuses and the thread's last-error message, and the rows a
// call-level failure writes into a caller's output.
#pragma once

#include "api/error.hpp"
#include "chain/context.hpp"

#include <sieve/sieve.h>
#include <volk.h>  // before sieve_vulkan.h: its Vulkan types

#include <sieve/sieve_vulkan.h>

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <utility>

namespace sieve::api {

template <typename F>
sieve_status guarded(F&& f) {
    try {
        clear_last_error();
        return f();
    } catch (const Failure& e) {
        set_last_error(e.what());
        return e.status();
    } catch (const std::bad_alloc&) {
        set_last_error("out of host memory");
        return SIEVE_ERROR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        set_last_error(std::string("internal error: ") + e.what());
        return SIEVE_ERROR_INTERNAL;
    } catch (...) {
        set_last_error("internal error");
        return SIEVE_ERROR_INTERNAL;
    }
}

inline sieve_status null_handle(const char* what) {
    set_last_error(std::string(what) + " handle is NULL");
    return SIEVE_ERROR_NULL_HANDLE;
}

// A sampling or verifying call whose failure is call-level (it throws:
// nothing was sampled) writes failed(status) into the rows of `out` the caller
// passed, at most the chain's max_rows, so no row reads as a stale result. A
// call that returns ran: its rows carry their own statuses.
template <typename Out, typename Failed, typename F>
sieve_status guarded_rows(sieve_chain* chain, Out* out, int32_t rows, Failed failed, F&& f) {
    bool ran = false;
    const sieve_status s = guarded([&] {
        const sieve_status r = f();
        ran = true;
        return r;
    });
    if (s == SIEVE_OK || ran || !out || rows <= 0) return s;
    const int32_t n = std::min(rows, chain->impl->config().max_rows);
    for (int32_t i = 0; i < n; ++i) out[i] = failed(s);
    return s;
}

template <typename F>
sieve_status guarded_sample(sieve_chain* chain, sieve_token* out, int32_t rows, F&& f) {
    return guarded_rows(
        chain, out, rows,
        [](sieve_status s) {
            sieve_token failed{};
            failed.token = -1;
            failed.status = s;
            return failed;
        },
        std::forward<F>(f));
}

inline int32_t rows_of(const sieve_logits* l) { return l && l->struct_size >= sizeof(sieve_logits) ? l->rows : 0; }
inline int32_t rows_of(const sieve_vulkan_logits* l) {
    return l && l->struct_size >= sizeof(sieve_vulkan_logits) ? l->rows : 0;
}

} // namespace sieve::api
