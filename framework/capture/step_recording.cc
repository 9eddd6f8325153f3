#include "framework/capture/step_recording.h"

#include <chrono>
#include <cstring>
#include <unordered_set>

#include "absl/strings/str_format.h"
#include "framework/capture/step_profile.h"

namespace tvlab {
namespace capture {
namespace {

// The batch's int32 arrays an upload may come from, by UploadSource.
const std::vector<int32_t>* BatchArray(const Batch& batch, UploadSource source) {
  switch (source) {
    case UploadSource::kInputs: return &batch.inputs;
    case UploadSource::kTargets: return &batch.targets;
    case UploadSource::kDocuments: return &batch.documents;
    case UploadSource::kSource: return &batch.source;
    case UploadSource::kSnapshot: return nullptr;
  }
  return nullptr;
}

constexpr UploadSource kBatchArrays[] = {UploadSource::kInputs, UploadSource::kTargets, UploadSource::kDocuments,
                                         UploadSource::kSource};

// Where in `batch`'s arrays the upload's bytes sit: the array its host
// pointer was in, else the first array holding the same bytes.
bool FindInBatch(const Batch& batch, const RecordedOp& op, UploadSource* source, size_t* offset) {
  for (UploadSource s : kBatchArrays) {
    const std::vector<int32_t>& array = *BatchArray(batch, s);
    const char* begin = reinterpret_cast<const char*>(array.data());  // host: the batch's std::vector
    const char* src = static_cast<const char*>(op.src);
    const size_t size = array.size() * sizeof(int32_t);
    if (src >= begin && src + op.bytes <= begin + size && !array.empty()) {
      *source = s, *offset = static_cast<size_t>(src - begin);
      return true;
    }
  }
  for (UploadSource s : kBatchArrays) {
    const std::vector<int32_t>& array = *BatchArray(batch, s);
    const size_t size = array.size() * sizeof(int32_t);
    for (size_t at = 0; at + op.bytes <= size && op.bytes > 0; at += sizeof(int32_t)) {
      const char* at_bytes = reinterpret_cast<const char*>(array.data()) + at;  // host: the batch's std::vector
      if (std::memcmp(at_bytes, op.snapshot.data(), op.bytes) == 0) {  // host: the recorded host bytes
        *source = s, *offset = at;
        return true;
      }
    }
  }
  return false;
}

absl::Status Differs(size_t index, const RecordedOp& op, uint64_t a, uint64_t b, const std::string& what) {
  return absl::FailedPreconditionError(
      absl::StrFormat("steps %d and %d differ at operation %d (%s): %s", a, b, index, DescribeOp(op), what));
}

// Whether an upload agrees; marks `later`'s source when it is the batch's.
absl::Status AgreeUpload(size_t i, const StepRecording& earlier, const RecordedOp& a, StepRecording* later,
                         RecordedOp& b) {
  if (a.bytes != b.bytes)
    return Differs(i, a, earlier.step, later->step,
                   absl::StrFormat("%d bytes the second time; the batch's shape changes from step to step", b.bytes));
  if (a.dst != b.dst) return Differs(i, a, earlier.step, later->step, "it writes to another buffer");
  if (a.snapshot == b.snapshot) return absl::OkStatus();  // the same bytes every step
  UploadSource sa, sb;
  size_t oa = 0, ob = 0;
  if (!FindInBatch(earlier.batch, a, &sa, &oa) || !FindInBatch(later->batch, b, &sb, &ob) || sa != sb || oa != ob)
    return Differs(i, a, earlier.step, later->step,
                   "it uploads different host data that is not one of the batch's token arrays");
  b.source = sb, b.source_offset = ob;
  return absl::OkStatus();
}

}  // namespace

std::string DescribeOp(const RecordedOp& op) {
  switch (op.kind) {
    case RecordedOp::Kind::kKernel: return absl::StrFormat("kernel %s", KernelName(op.call->kernel()));
    case RecordedOp::Kind::kFill: return absl::StrFormat("fill of %d floats", op.fill_n);
    case RecordedOp::Kind::kCopy: return absl::StrFormat("device copy of %d bytes", op.bytes);
    case RecordedOp::Kind::kUpload: return absl::StrFormat("upload of %d bytes", op.bytes);
  }
  return "?";
}

absl::Status Agree(const StepRecording& earlier, StepRecording* later) {
  if (earlier.ops.size() != later->ops.size())
    return absl::FailedPreconditionError(absl::StrFormat("steps %d and %d ran %d and %d operations", earlier.step,
                                                         later->step, earlier.ops.size(), later->ops.size()));
  for (size_t i = 0; i < earlier.ops.size(); ++i) {
    const RecordedOp& a = earlier.ops[i];
    RecordedOp& b = later->ops[i];
    if (a.kind != b.kind) return Differs(i, a, earlier.step, later->step, "another operation runs there");
    switch (a.kind) {
      case RecordedOp::Kind::kKernel:
        if (a.call->kernel() != b.call->kernel() || !a.call->Agrees(*b.call, later->step))
          return Differs(i, a, earlier.step, later->step,
                         "its arguments differ (a shape, a mask or a value computed on the host changes "
                         "from step to step)");
        break;
      case RecordedOp::Kind::kFill:
        if (a.fill_dst != b.fill_dst || a.fill_n != b.fill_n || a.fill_value != b.fill_value)
          return Differs(i, a, earlier.step, later->step, "its arguments differ");
        break;
      case RecordedOp::Kind::kCopy:
        if (a.src != b.src || a.dst != b.dst || a.bytes != b.bytes)
          return Differs(i, a, earlier.step, later->step, "its arguments differ");
        break;
      case RecordedOp::Kind::kUpload:
        if (absl::Status s = AgreeUpload(i, earlier, a, later, b); !s.ok()) return s;
        break;
    }
  }
  if (!SameBatchLayout(*later, earlier.batch))
    return absl::FailedPreconditionError(absl::StrFormat(
        "the batches of steps %d and %d differ in shape, lengths or an array the step reads on the host",
        earlier.step, later->step));
  return absl::OkStatus();
}

absl::Status PinOutsideBuffers(const BufferPool& pool, Device device, StepRecording* recording) {
  CachingAllocator& allocator = AllocatorFor(device);
  std::unordered_set<const void*> seen, blocks;
  for (size_t i = 0; i < recording->ops.size(); ++i) {
    const RecordedOp& op = recording->ops[i];
    std::vector<const void*> pointers;
    if (op.kind == RecordedOp::Kind::kKernel) op.call->Pointers(&pointers);
    if (op.kind == RecordedOp::Kind::kFill) pointers.push_back(op.fill_dst);
    if (op.kind == RecordedOp::Kind::kCopy) pointers.push_back(op.src);
    if (op.kind != RecordedOp::Kind::kKernel) pointers.push_back(op.dst);
    for (const void* p : pointers) {
      if (p == nullptr || !seen.insert(p).second || pool.Holds(p)) continue;
      CachingAllocator::LiveBlock block;
      if (!allocator.FindLiveBlock(p, &block))
        return absl::FailedPreconditionError(absl::StrFormat(
            "operation %d (%s) uses memory outside every tensor; replay could not trust it", i, DescribeOp(op)));
      if (blocks.insert(block.begin).second) recording->outside_blocks.push_back(block);
    }
  }
  return absl::OkStatus();
}

bool SameBatchLayout(const StepRecording& recording, const Batch& batch) {
  const Batch& c = recording.batch;
  if (batch.batch != c.batch || batch.length != c.length || batch.source_length != c.source_length ||
      batch.lengths != c.lengths || batch.source_lengths != c.source_lengths)
    return false;
  for (UploadSource s : kBatchArrays) {
    const std::vector<int32_t>& now = *BatchArray(batch, s);
    const std::vector<int32_t>& then = *BatchArray(c, s);
    if (now.size() != then.size()) return false;
    bool uploaded = false;  // replay copies it from the new batch
    for (const RecordedOp& op : recording.ops) uploaded = uploaded || (op.kind == RecordedOp::Kind::kUpload && op.source == s);
    if (!uploaded && now != then) return false;
  }
  return true;
}

absl::Status Replay(StepRecording& recording, const Batch& batch, uint64_t step, Backend& backend,
                    DeviceMemory& memory, double* backward_seconds, StepProfile* profile) {
  CachingAllocator& allocator = AllocatorFor(memory.device());
  for (const CachingAllocator::LiveBlock& block : recording.outside_blocks)
    if (!allocator.StillLive(block))
      return absl::FailedPreconditionError(
          "a buffer the captured step reads (a parameter or a table) was released since it was captured");
  std::chrono::steady_clock::time_point backward_start;
  for (size_t i = 0; i < recording.ops.size(); ++i) {
    if (i == recording.backward_begin) backward_start = std::chrono::steady_clock::now();
    RecordedOp& op = recording.ops[i];
    const auto op_start = profile != nullptr ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    switch (op.kind) {
      case RecordedOp::Kind::kKernel: op.call->Run(backend, step); break;
      case RecordedOp::Kind::kFill: memory.Fill(op.fill_dst, op.fill_n, op.fill_value); break;
      case RecordedOp::Kind::kCopy: memory.CopyOnDevice(op.src, op.dst, op.bytes); break;
      case RecordedOp::Kind::kUpload: {
        const std::vector<int32_t>* array = BatchArray(batch, op.source);
        // host: the recorded host bytes, or the new batch's std::vector
        const void* from = array == nullptr ? static_cast<const void*>(op.snapshot.data())  // host: recorded bytes
                                            : reinterpret_cast<const char*>(array->data()) + op.source_offset;  // host: batch
        memory.CopyFromHost(from, op.dst, op.bytes);
        break;
      }
    }
    if (profile != nullptr)
      profile->Add(i, recording.ops.size(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - op_start).count());
  }
  if (profile != nullptr) profile->StepDone();
  if (recording.backward_begin < recording.ops.size())
    *backward_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - backward_start).count();
  return absl::OkStatus();
}

}  // namespace capture
}  // namespace tvlab
