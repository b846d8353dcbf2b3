# The real llama.cpp the parity tests and the drop-in sample run against
# (issue 24): scripts/fetch_llama.sh fetches release v0.4.0, pinned, from the
# npm registry into the build tree at configure time (kept there: a complete
# copy is not fetched again). A failed fetch stops the configure, naming what
# is missing; nothing is skipped silently. libsieve never links libllama: only
# the targets that link sieve::llama (tests/llama, samples/llama_dropin.c).
set(SIEVE_LLAMA_DIR ${PROJECT_BINARY_DIR}/_deps/llama)
execute_process(
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/fetch_llama.sh ${SIEVE_LLAMA_DIR}
  RESULT_VARIABLE sieve_llama_fetch_result
  ERROR_VARIABLE sieve_llama_fetch_error
  OUTPUT_QUIET)
if(NOT sieve_llama_fetch_result EQUAL 0)
  message(FATAL_ERROR
    "sieve: the llama.cpp parity tests (SIEVE_LLAMA_TESTS) need the real llama.cpp, and fetching it failed:\n"
    "${sieve_llama_fetch_error}"
    "Run scripts/setup.sh test (it installs npm and git), or configure with -DSIEVE_LLAMA_TESTS=OFF to build without them.")
endif()

add_library(sieve_llama_imported SHARED IMPORTED GLOBAL)
set_target_properties(sieve_llama_imported PROPERTIES
  IMPORTED_LOCATION ${SIEVE_LLAMA_DIR}/lib/libllama.so
  INTERFACE_LINK_OPTIONS "-Wl,-rpath-link,${SIEVE_LLAMA_DIR}/lib"
  INTERFACE_INCLUDE_DIRECTORIES "${SIEVE_LLAMA_DIR}/src/include;${SIEVE_LLAMA_DIR}/src/ggml/include")
add_library(sieve::llama ALIAS sieve_llama_imported)
