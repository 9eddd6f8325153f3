#ifndef TVLAB_FRAMEWORK_CAPTURE_CHAIN_SCRATCH_H_
#define TVLAB_FRAMEWORK_CAPTURE_CHAIN_SCRATCH_H_

// What a captured step need not write to memory. The eager step stores
// every dropout mask for its backward and writes every elementwise result,
// though some are read only by the next step of the same fused chain (the
// dropped output that the residual add consumes; the mask itself). On a
// small model those writes are much of the step's memory traffic: the sort
// model writes about 3.7 MB a step in its forward, 1.1 MB of it masks.
// After fusion (pointwise_fusion.h) two rewrites of the recording remove
// them, each keeping the replay bit for bit the eager step:
//
//  1. Redrawn or kept masks. A dropout mask drawn in a forward chain and
//     afterwards only read, by elementwise steps in the backward
//     (dy * mask), is drawn again at the start of each backward chain that
//     reads it: the same counter-based Philox draws (rng.h), so the same
//     bits, from the same stream rekeyed to the replayed step. Where the
//     backend keeps mask bits (Backend::KeepsMaskBits: cpu_onednn), the
//     forward's draw also writes one bit an element (kept or dropped) to a
//     buffer of the recording's own, and each backward chain turns them
//     back into the same factors (PointwiseStep::kKeptMask): 1/32 of the
//     mask's bytes instead of a second draw. Nothing reads the forward's
//     floats after its chain any more.
//  2. Scratch outputs. A chain step whose output no operation after the
//     chain reads before the tensor is freed or fully rewritten is marked
//     PointwiseStep::scratch: its chain's later steps still see it, but
//     cpu_onednn keeps it in one L1 tile instead of memory.
//
// Both decisions rest on the tensor lifetimes the recording kept
// (StepRecording::pool_events): while a pool block is held, every
// operation that names a pointer into it uses that tensor. A block given
// back and taken again inside one fused chain, or still held when the step
// ends (the kept gradients and loss), is left alone; so is every buffer
// outside the pool (parameters). StepCapture's check of one replay against
// the eager step (step_capture.h) covers the result.

#include <cstdint>

#include "framework/capture/step_recording.h"
#include "framework/tensor/device_memory.h"

namespace tvlab {
namespace capture {

struct ScratchSummary {
  int masks_kept = 0;               // forward masks the backward reads as bits
  int masks_redrawn = 0;            // forward masks drawn again in the backward
  int scratch_steps = 0;            // chain steps marked scratch
  int64_t bytes_not_written = 0;    // their outputs' bytes, each replay
};

// Rewrites `recording`'s chains in place (after FusePointwiseChains, before
// the first replay); `pool` holds the step's blocks; masks are kept as bits
// when `keep_mask_bits` (the backend's KeepsMaskBits()), else redrawn.
ScratchSummary KeepDeadOutputsInScratch(StepRecording* recording, const BufferPool& pool,
                                        bool keep_mask_bits = false);

}  // namespace capture
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CAPTURE_CHAIN_SCRATCH_H_
