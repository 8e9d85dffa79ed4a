/* How far each program runs (read-only data `depth`, set before load).
 * Shared by path.bpf.c, profile.bpf.c and crates/probe/src/depth.rs. Only
 * DEPTH_FULL records anything; the others measure what probing costs:
 * attaching (empty programs) and finding the experiment's packets. The
 * verifier knows the value, so in full mode the checks cost nothing. */
#ifndef TCPLAB_DEPTH_H
#define TCPLAB_DEPTH_H

#define DEPTH_FULL 0
#define DEPTH_FILTER 1
#define DEPTH_EMPTY 2

#endif
