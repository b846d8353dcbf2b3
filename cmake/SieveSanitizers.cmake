# Instrumentation applied to every target of a build:
#   SIEVE_SANITIZE="address,undefined"  sanitizers only (scripts/sanitize.sh, build-asan);
#   SIEVE_BUILD_FUZZERS=ON              libFuzzer coverage plus ASan and UBSan (build-fuzz,
#                                       clang only); the harnesses add -fsanitize=fuzzer
#                                       at their own link.
# Any error a sanitizer finds aborts (-fno-sanitize-recover=all), so a test or a
# fuzz run fails on it instead of printing and going on.
set(SIEVE_SANITIZER_FLAGS "")
if(SIEVE_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SIEVE_BUILD_FUZZERS needs clang (libFuzzer): configure with "
                        "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ (Debian: clang, libclang-rt-14-dev)")
  endif()
  set(SIEVE_SANITIZER_FLAGS -fsanitize=fuzzer-no-link,address,undefined)
elseif(SIEVE_SANITIZE)
  set(SIEVE_SANITIZER_FLAGS -fsanitize=${SIEVE_SANITIZE})
endif()
if(SIEVE_SANITIZER_FLAGS)
  list(APPEND SIEVE_SANITIZER_FLAGS -fno-sanitize-recover=all -fno-omit-frame-pointer -g1)
  add_compile_options(${SIEVE_SANITIZER_FLAGS})
  # fuzzer-no-link at link time pulls in nothing; the sanitizer runtimes come from it.
  add_link_options(${SIEVE_SANITIZER_FLAGS})
endif()
# Under SIEVE_SANITIZE the CLI and the tests compile at -O0 (target options
# follow the build type's flags): CLI11's, nlohmann/json's and GoogleTest's
# templates were most of scripts/sanitize.sh's build at -O1 (about nine
# tenths; a file about twice as quick at -O0), while the library, whose
# loops are most of the tests' run time, keeps the build type's optimization
# (everything at -O0 ran the tests 3x slower). docs/perf-log.md, 2026-11-29.
set(SIEVE_SANITIZE_HARNESS_OPTIONS "")
if(SIEVE_SANITIZE)
  set(SIEVE_SANITIZE_HARNESS_OPTIONS -O0)
endif()
