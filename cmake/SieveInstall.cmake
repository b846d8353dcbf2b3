# cmake --install: libsieve (shared or static), the public headers, the `sieve`
# CLI, the CMake package (find_package(Sieve CONFIG) -> Sieve::sieve, with its
# version file) and sieve.pc. Every installed file is relocatable: the package
# and sieve.pc find the prefix from where they lie, so `--prefix P` anywhere works.
include(CMakePackageConfigHelpers)

set(SIEVE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Sieve)

install(TARGETS sieve EXPORT SieveTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES
  ${PROJECT_SOURCE_DIR}/include/sieve/sieve.h
  ${PROJECT_SOURCE_DIR}/include/sieve/sieve.hpp
  ${PROJECT_SOURCE_DIR}/include/sieve/sieve_vulkan.h
  ${PROJECT_BINARY_DIR}/include/sieve/sieve_version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sieve)

if(TARGET sieve_cli_main)
  if(SIEVE_SHARED)
    # The installed CLI finds the libsieve installed beside it.
    file(RELATIVE_PATH bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
    set_target_properties(sieve_cli_main PROPERTIES INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
  endif()
  install(TARGETS sieve_cli_main RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# What a static libsieve.a needs from its consumer's link: threads, libdl, and
# the C++ runtime (the libraries the C++ compiler links that the C compiler
# does not, e.g. stdc++ on GCC). A shared libsieve carries them itself.
set(SIEVE_CXX_RUNTIME_LIBS ${CMAKE_CXX_IMPLICIT_LINK_LIBRARIES})
list(REMOVE_ITEM SIEVE_CXX_RUNTIME_LIBS ${CMAKE_C_IMPLICIT_LINK_LIBRARIES})
set(SIEVE_PC_LIBS_PRIVATE "${CMAKE_THREAD_LIBS_INIT}")
foreach(lib ${CMAKE_DL_LIBS} ${SIEVE_CXX_RUNTIME_LIBS})
  string(APPEND SIEVE_PC_LIBS_PRIVATE " -l${lib}")
endforeach()
string(STRIP "${SIEVE_PC_LIBS_PRIVATE}" SIEVE_PC_LIBS_PRIVATE)
if(NOT SIEVE_SHARED)
  # A C consumer's link (CMake links it with the C driver) gets the C++ runtime too.
  foreach(lib ${SIEVE_CXX_RUNTIME_LIBS})
    target_link_libraries(sieve INTERFACE $<INSTALL_INTERFACE:${lib}>)
  endforeach()
endif()

install(EXPORT SieveTargets NAMESPACE Sieve:: FILE SieveTargets.cmake DESTINATION ${SIEVE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/SieveConfig.cmake.in
  ${PROJECT_BINARY_DIR}/SieveConfig.cmake INSTALL_DESTINATION ${SIEVE_CMAKE_DIR})
# The ABI rules in sieve.h: while the major is 0 each minor is its own ABI.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(SIEVE_PACKAGE_COMPATIBILITY SameMinorVersion)
else()
  set(SIEVE_PACKAGE_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SieveConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${SIEVE_PACKAGE_COMPATIBILITY})
install(FILES ${PROJECT_BINARY_DIR}/SieveConfig.cmake ${PROJECT_BINARY_DIR}/SieveConfigVersion.cmake
  DESTINATION ${SIEVE_CMAKE_DIR})

file(RELATIVE_PATH SIEVE_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" SIEVE_PC_TO_PREFIX "${SIEVE_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/sieve.pc.in ${PROJECT_BINARY_DIR}/sieve.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/sieve.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
