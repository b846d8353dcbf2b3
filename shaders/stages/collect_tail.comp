#version 450
#extension GL_GOOGLE_include_directive : require
// A truncating chain's tail on a CPU device's plan, one workgroup per row
// after collect.comp (collect_tail.glsl).
#include "collect_tail.glsl"

void main() {
    phase_start();
    // The chunks the row group's collect pass split each row into (the
    // indirect x of the variant that ran).
    collect_tail(pc.row_base + gl_WorkGroupID.y, collect_chunks());
}
