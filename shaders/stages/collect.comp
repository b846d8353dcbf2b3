#version 450
#extension GL_GOOGLE_include_directive : require
// A truncating chain's chunks on a CPU device's plan (collect_chunk.glsl);
// collect_tail.comp follows as a dispatch of its own.
#include "collect_chunk.glsl"

void main() { collect_chunk(); }
