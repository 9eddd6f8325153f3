#ifndef TVLAB_FRAMEWORK_CAPTURE_POINTWISE_FUSION_H_
#define TVLAB_FRAMEWORK_CAPTURE_POINTWISE_FUSION_H_

// The captured step's fusion of small elementwise chains. A run of two or
// more consecutive kernel calls that are each one elementwise pass over the
// same n floats (Binary on equal shapes, ReLU and its backward,
// DropoutMask) becomes one Backend::PointwiseChain call, which cpu_onednn
// runs a tile at a time through every step: a dropout mask, its multiply
// and the residual add that follows are done while the tile is in L1,
// instead of three passes over the tensors. Examples from a Transformer
// block: DropoutMask, mul, add (dropout into the residual stream); ReLU,
// DropoutMask, mul (the FFN's activation and its dropout); mul by the mask,
// ReLU backward; add, mul (gradients of the residual stream and dropout).
// What it saves is the re-read of a chain's intermediates and the calls:
// on the sort model at one thread that measured within the noise (those
// tensors were still in L2; the cost is the first touch of the step's
// buffers), at two threads about 4% (bench/README.md, "Fused elementwise
// chains"). What removes those first touches is chain_scratch.h, which
// runs after this: chain results nobody reads later stay out of memory.
//
// Every element goes through the same operations as before, so the replay
// stays bit for bit the eager step (StepCapture compares one replay with
// the eager step before going live, and the conformance suite compares
// PointwiseChain with the separate kernels on every backend).
//
// A call joins a run only when each buffer it uses is one of the run's
// buffers or overlaps none of them: running tile by tile then cannot read
// an element that a later step of the chain has already rewritten. Runs do
// not cross another operation (a fill, copy or upload) or the start of the
// backward pass (its time is reported separately).

#include <optional>

#include "framework/capture/step_recording.h"

namespace tvlab {
namespace capture {

// A recorded call as a step of a chain over n elements.
struct ChainStep {
  PointwiseStep step;
  int64_t n = 0;
};

// The call `op` as the chain step FusePointwiseChains would make of it (a
// ReLU backward's y replaced by x), when it is one: an elementwise pass
// whose buffers are each the same pointer or apart.
std::optional<ChainStep> AsChainStep(const RecordedOp& op);

struct FusionSummary {
  int chains = 0;  // PointwiseChain calls made
  int calls = 0;   // kernel calls they replaced
};

// Rewrites `recording`'s operations in place (before it is replayed: every
// call is still keyed at recording->step) and moves backward_begin and the
// pool events with them.
FusionSummary FusePointwiseChains(StepRecording* recording);

}  // namespace capture
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CAPTURE_POINTWISE_FUSION_H_
