# cmake -DSPV=file.spv -DOUT=file.cpp -DNAME=stem -P EmbedSpirv.cmake
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" len)
math(EXPR rem "${len} % 8")
if(NOT rem EQUAL 0)
  message(FATAL_ERROR "${SPV} is not a whole number of 32-bit words")
endif()
# SPIR-V is little-endian words; regroup bytes b0b1b2b3 into 0xb3b2b1b0.
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])" "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "(0x[0-9a-f]+u,0x[0-9a-f]+u,0x[0-9a-f]+u,0x[0-9a-f]+u,0x[0-9a-f]+u,0x[0-9a-f]+u,0x[0-9a-f]+u,0x[0-9a-f]+u,)" "\\1\n" words "${words}")
file(WRITE ${OUT} "// Generated from ${NAME}.comp; do not edit.\n#include \"sieve_shaders.hpp\"\nnamespace sieve::shaders {\nstatic const uint32_t ${NAME}_words[] = {\n${words}\n};\nconst Spirv ${NAME} = {${NAME}_words, sizeof(${NAME}_words), \"${NAME}\"};\n}\n")
