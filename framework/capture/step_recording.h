#ifndef TVLAB_FRAMEWORK_CAPTURE_STEP_RECORDING_H_
#define TVLAB_FRAMEWORK_CAPTURE_STEP_RECORDING_H_

// One training step's device work as a list of operations, recorded while
// the step ran eagerly (recording_backend.h), and replayed later without the
// model, autograd or the allocator: every kernel call with its arguments by
// value (buffer pointers included), and the memory operations between them
// (fills, device copies, uploads of host data).
//
// A recording is replayable only when two recordings of consecutive steps
// agree (Agree): the same operations on the same buffers with the same
// arguments, except random streams keyed by the step (dropout: rekeyed on
// replay) and uploads of the batch's own token arrays (copied from the new
// batch on replay). Everything else that differs is named in the refusal.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/task.h"
#include "framework/tensor/device_memory.h"
#include "framework/tensor/tensor.h"

namespace tvlab {
namespace capture {

// A recorded kernel call: its arguments by value and how to call it again.
class KernelCall {
 public:
  virtual ~KernelCall() = default;
  virtual Kernel kernel() const = 0;
  // Calls the kernel on `backend`, with every random stream keyed by the
  // step the call was recorded at (or last replayed at) moved to `step`.
  virtual void Run(Backend& backend, uint64_t step) = 0;
  // Whether `other` (recorded at `step`, this one at key()) is the same
  // call once this one's streams are moved to `step`.
  virtual bool Agrees(const KernelCall& other, uint64_t step) const = 0;
  virtual void Pointers(std::vector<const void*>* out) const = 0;
  // The step its random streams are keyed at now.
  virtual uint64_t key() const = 0;
};

// Where an upload's bytes come from on replay.
enum class UploadSource { kSnapshot, kInputs, kTargets, kDocuments, kSource };

struct RecordedOp {
  enum class Kind { kKernel, kFill, kCopy, kUpload };
  Kind kind = Kind::kKernel;
  std::shared_ptr<KernelCall> call;  // kKernel
  float* fill_dst = nullptr;         // kFill: n floats set to value
  int64_t fill_n = 0;
  float fill_value = 0;
  const void* src = nullptr;  // kCopy (device) or kUpload (host, at recording)
  void* dst = nullptr;        // kCopy, kUpload
  size_t bytes = 0;
  std::string snapshot;                                // kUpload: the bytes uploaded
  UploadSource source = UploadSource::kSnapshot;       // kUpload, set by Agree
  size_t source_offset = 0;                            // bytes into the batch array
};

// A capture pool block taken or given back while the step was recorded,
// between operations: before ops[op] (op == ops.size(): after the last).
// Between its taking and its giving back a block holds one tensor's
// storage; chain_scratch.h reads the step's tensor lifetimes from these.
// After fusion (pointwise_fusion.h) `op` indexes the fused operations, and
// `inside` says the event fell between two calls now fused into ops[op].
struct PoolEvent {
  const void* block = nullptr;
  bool taken = false;
  size_t op = 0;
  bool inside = false;
};

struct StepRecording {
  uint64_t step = 0;  // the step (dropout key) it was recorded at
  Batch batch;        // the batch it ran on
  std::vector<RecordedOp> ops;
  size_t backward_begin = 0;  // ops before this index are the forward pass
  int64_t readbacks = 0;      // device-to-host copies during the step
  std::vector<PoolEvent> pool_events;  // in the order they happened
  // Blocks outside the capture pool the operations use (parameters,
  // optimizer-independent tables): each must still be live on replay.
  std::vector<CachingAllocator::LiveBlock> outside_blocks;
  // Bits of forward dropout masks the backward reads instead of drawing
  // them again (chain_scratch.h), outside the pool: the recording's own.
  std::vector<Tensor> kept_masks;
};

// "kernel Gemm", "upload of 2048 bytes", ...: for refusal messages.
std::string DescribeOp(const RecordedOp& op);

// Whether `later` (the next step's recording) agrees with `earlier`; on
// success marks `later`'s uploads of batch arrays with their source.
absl::Status Agree(const StepRecording& earlier, StepRecording* later);

// Finds the live block of every buffer the operations use outside `pool`
// (kept in outside_blocks); an error names an operation whose pointer is in
// no live tensor (host memory that replay could not trust).
absl::Status PinOutsideBuffers(const BufferPool& pool, Device device, StepRecording* recording);

// Whether `batch` has the captured batch's shapes and, for every array not
// uploaded from the batch on replay, its values (host code may read them).
bool SameBatchLayout(const StepRecording& recording, const Batch& batch);

class StepProfile;  // step_profile.h

// Runs the operations again for `batch` at `step` (dropout key). An error,
// before any operation runs, when a buffer outside the pool was released.
// With a profile (train.step_profile), each operation is timed into it.
absl::Status Replay(StepRecording& recording, const Batch& batch, uint64_t step, Backend& backend,
                    DeviceMemory& memory, double* backward_seconds, StepProfile* profile = nullptr);

}  // namespace capture
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CAPTURE_STEP_RECORDING_H_
