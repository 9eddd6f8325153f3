#include "framework/distributed/nccl_reducer.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/core/status_macros.h"
#include "framework/tensor/tensor.h"

namespace tvlab {
namespace {

absl::Status NcclStatus(ncclResult_t result, const char* call) {
  if (result == ncclSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", ncclGetErrorString(result)));
}

absl::Status CudaStatus(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", cudaGetErrorString(err)));
}

class NcclReducer : public GradientReducer {
 public:
  NcclReducer(Communicator* world, std::unique_ptr<GradientReducer> host)
      : world_(world), host_(std::move(host)) {}
  ~NcclReducer() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  int rank() const override { return world_->rank(); }
  int world_size() const override { return world_->size(); }

  // Host numbers: the MPI reducer's combination, unchanged.
  absl::StatusOr<CombinedLoss> CombineLoss(double local_loss, int64_t local_tokens) override {
    return host_->CombineLoss(local_loss, local_tokens);
  }

  absl::Status ReduceGradients(const std::vector<std::pair<std::string, Var>>& params) override {
    const auto start = std::chrono::steady_clock::now();
    std::vector<Tensor*> grads;
    int64_t total = 0;
    for (const auto& [name, param] : params) {
      Tensor& grad = const_cast<Var&>(param).mutable_grad();
      if (!grad.defined()) continue;  // AdamW skips it on every rank alike
      if (grad.device() != Device::kCuda) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the NCCL gradient reducer sums GPU gradients, but the gradient of '", name,
            "' is on ", DeviceName(grad.device()), "; use runtime.backend \"gpu_cuda\" for every "
            "rank, or a CPU backend (then gradients are reduced over MPI)"));
      }
      total += grad.numel();
      grads.push_back(&grad);
    }
    // Same models give the same gradient sizes; anything else would pair up
    // unrelated numbers (or wait forever). The host all-reduce also marks
    // when every rank has arrived.
    int64_t extent[2] = {total, -total};
    TVLAB_RETURN_IF_ERROR(world_->AllReduceMax(extent, 2, "the gradient size check before the NCCL all-reduce"));
    const auto synchronized = std::chrono::steady_clock::now();
    wait_seconds_ += std::chrono::duration<double>(synchronized - start).count();
    if (extent[0] != total || -extent[1] != total) {
      return absl::InternalError(absl::StrCat("rank ", world_->rank(), " has ", total,
                                              " gradient values but another rank has ",
                                              extent[0] != total ? extent[0] : -extent[1],
                                              ": the ranks do not train the same model"));
    }
    TVLAB_RETURN_IF_ERROR(Connect());
    // One group: NCCL fuses the per-gradient all-reduces. In place, on the
    // default stream (the gpu_cuda backend's one stream).
    TVLAB_RETURN_IF_ERROR(NcclStatus(ncclGroupStart(), "ncclGroupStart"));
    for (Tensor* grad : grads) {
      float* values = grad->ptr();  // device memory, handed to NCCL only
      const ncclResult_t result = ncclAllReduce(values, values, static_cast<size_t>(grad->numel()),
                                                ncclFloat, ncclSum, comm_, /*stream=*/0);
      if (result != ncclSuccess) {
        ncclGroupEnd();
        return NcclStatus(result, "ncclAllReduce");
      }
    }
    TVLAB_RETURN_IF_ERROR(NcclStatus(ncclGroupEnd(), "ncclGroupEnd"));
    TVLAB_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(0), "waiting for the NCCL all-reduce"));
    ncclResult_t async = ncclSuccess;
    TVLAB_RETURN_IF_ERROR(NcclStatus(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError"));
    TVLAB_RETURN_IF_ERROR(NcclStatus(async, "NCCL all-reduce"));
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return absl::OkStatus();
  }

  double reduce_seconds() const override { return seconds_; }
  double wait_seconds() const override { return wait_seconds_; }

 private:
  // Creates the NCCL communicator on first use (collective).
  absl::Status Connect() {
    if (comm_ != nullptr) return absl::OkStatus();
    // Rank 0's id reaches every rank through the host communicator: each
    // rank contributes 128 bytes (zeros except on rank 0); rank 0's are kept.
    constexpr int64_t kWords = sizeof(ncclUniqueId) / sizeof(uint64_t);
    static_assert(sizeof(ncclUniqueId) % sizeof(uint64_t) == 0, "ncclUniqueId size");
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (world_->rank() == 0) TVLAB_RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    uint64_t mine[kWords];
    std::memcpy(mine, &id, sizeof(id));
    std::vector<uint64_t> all(static_cast<size_t>(kWords) * world_->size());
    TVLAB_RETURN_IF_ERROR(world_->AllGather(mine, kWords, all.data(), "the NCCL communicator id exchange"));  // host: id bytes
    std::memcpy(&id, all.data(), sizeof(id));  // host: rank 0's slot
    int device = -1;
    TVLAB_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
    const ncclResult_t result = ncclCommInitRank(&comm_, world_->size(), id, world_->rank());
    if (result != ncclSuccess) {
      comm_ = nullptr;
      return absl::InternalError(absl::StrCat(
          "ncclCommInitRank (rank ", world_->rank(), " of ", world_->size(), ", GPU ", device,
          "): ", ncclGetErrorString(result),
          "; each process needs its own GPU (one process per GPU, device = local rank)"));
    }
    return absl::OkStatus();
  }

  Communicator* world_;
  std::unique_ptr<GradientReducer> host_;  // CombineLoss over MPI
  ncclComm_t comm_ = nullptr;
  double seconds_ = 0, wait_seconds_ = 0;
};

}  // namespace

bool NcclAvailable() { return true; }

absl::StatusOr<std::unique_ptr<GradientReducer>> MakeNcclGradientReducer(
    Communicator* world, std::unique_ptr<GradientReducer> host) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return absl::FailedPreconditionError(
        "the NCCL gradient reducer needs a CUDA device, and none is usable here");
  }
  return std::unique_ptr<GradientReducer>(std::make_unique<NcclReducer>(world, std::move(host)));
}

}  // namespace tvlab
