#version 450
#extension GL_GOOGLE_include_directive : require
// A truncating chain on a GPU's plan, in one dispatch: the chunks
// (collect_chunk.glsl), and the row's tail (collect_tail.glsl) in the last
// chunk workgroup of the row to finish (arrive.glsl). A dispatch of its own
// cost the tail a launch and a barrier after the slowest chunk of any row;
// here each row's tail starts when its own chunks are done.
#include "collect_chunk.glsl"
#include "collect_tail.glsl"
#include "arrive.glsl"

void main() {
    phase_start();
    collect_chunk();
    phase_chunk_mark(PH_CHUNK);
    // The chunks' lists, statistics and aggregates are in device memory; the
    // last to arrive reads the others' (arrive.glsl orders it). Its shared
    // memory is free again: last_to_arrive_of ends with a barrier.
    uint row = pc.row_base + gl_WorkGroupID.y;
    if (last_to_arrive_of(row, gl_NumWorkGroups.x)) collect_tail(row, gl_NumWorkGroups.x);
}
