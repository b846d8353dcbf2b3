# Cross build for 64-bit ARM Linux with Debian's cross toolchain and multiarch
# :arm64 libraries (scripts/cross_arm64.sh installs them and uses this file).
# The shader tools (glslangValidator, spirv-val) are the host's: SPIR-V is the
# same on every architecture. Tests run under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch: the :arm64 packages' libraries and CMake packages lie in
# /usr/lib/aarch64-linux-gnu, their headers in /usr/include with the host's.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
find_program(SIEVE_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(SIEVE_QEMU_AARCH64)
  # ctest and gtest_discover_tests run the aarch64 binaries through it; the
  # :arm64 libc (libc6:arm64) provides the loader at its usual path.
  set(CMAKE_CROSSCOMPILING_EMULATOR ${SIEVE_QEMU_AARCH64})
endif()
