#ifndef TVLAB_FRAMEWORK_LIMITS_SIZE_LIMITS_H_
#define TVLAB_FRAMEWORK_LIMITS_SIZE_LIMITS_H_

// Upper bounds on the sizes a spec may ask for, checked by validation before
// anything is built: a hard cap per size field (so products of sizes stay far
// inside 64-bit integers, and int32 fields cannot overflow when combined),
// runtime.threads at most 4x the hardware threads, and the memory estimate
// of memory_estimate.h against the memory available.

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "framework/limits/memory_estimate.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// The cap on every integer under task.* and inside plugin options.
constexpr int64_t kMaxTaskOrPluginInteger = int64_t{1} << 24;

// All problems at once, one per line, each naming the field, its value and
// the bound. The memory estimate runs only when the caps hold and `task`
// (the sizes of the task validation built; nullopt when it did not build)
// is given.
absl::Status CheckSizeLimits(const Experiment& spec, const std::optional<TaskSizes>& task,
                             int64_t available_bytes, int64_t hardware_threads);

// The same against this machine: AvailableMemoryBytes() and
// std::thread::hardware_concurrency().
absl::Status CheckSizeLimits(const Experiment& spec, const std::optional<TaskSizes>& task);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_LIMITS_SIZE_LIMITS_H_
