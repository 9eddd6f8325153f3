#ifndef TVLAB_FRAMEWORK_DISTRIBUTED_NCCL_REDUCER_H_
#define TVLAB_FRAMEWORK_DISTRIBUTED_NCCL_REDUCER_H_

// Data-parallel gradient reduction for gradients in GPU memory: one process
// per GPU (mpirun -np N, device = the process's local rank, chosen by the
// gpu_cuda backend), gradients summed in place with NCCL all-reduces on the
// backend's stream, never copied to the host. The loss combination and the
// start-up checks stay on the host communicator (MPI), exactly as the MPI
// reducer (gradient_reducer.h) does them.
//
// The NCCL communicator is created on the first ReduceGradients call (a
// collective, so every rank is there): rank 0 draws the ncclUniqueId and the
// communicator shares it with every rank (an all-gather of its 128 bytes over
// MPI, rank 0's copy taken), then ncclCommInitRank(world size, rank).
//
// Built only under --config=cuda (nccl_reducer.cc needs NCCL); without it
// NcclAvailable() is false and MakeNcclGradientReducer fails with
// FailedPrecondition.

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "framework/distributed/gradient_reducer.h"

namespace tvlab {

// Whether this build has NCCL (--config=cuda).
bool NcclAvailable();

// A reducer over `world` (which must outlive it) for gradients on
// Device::kCuda; a gradient elsewhere makes ReduceGradients fail, naming it.
// CombineLoss is `host`'s (the MPI reducer over the same world).
// ReduceGradients waits for the all-reduces to finish (its timings are wall
// time) and reports NCCL errors as Internal statuses. MakeGradientReducer
// picks this reducer for world size > 1 when tensors live on the GPU.
absl::StatusOr<std::unique_ptr<GradientReducer>> MakeNcclGradientReducer(
    Communicator* world, std::unique_ptr<GradientReducer> host);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DISTRIBUTED_NCCL_REDUCER_H_
