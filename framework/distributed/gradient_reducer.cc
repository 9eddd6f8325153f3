#include "framework/distributed/gradient_reducer.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "framework/core/check.h"
#include "framework/core/status_macros.h"
#include "framework/distributed/nccl_reducer.h"
#include "framework/tensor/tensor.h"

namespace tvlab {
namespace {

class OneProcess : public GradientReducer {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  absl::StatusOr<CombinedLoss> CombineLoss(double local_loss, int64_t) override {
    return CombinedLoss{local_loss, 1.0};
  }
  absl::Status ReduceGradients(const std::vector<std::pair<std::string, Var>>&) override {
    return absl::OkStatus();
  }
  double reduce_seconds() const override { return 0; }
  double wait_seconds() const override { return 0; }
};

// One gradient's host view: its memory when it lives on the host, else a
// copy (ToVector) written back with FromVector after the reduction.
struct HostGradient {
  Tensor* grad = nullptr;
  float* values = nullptr;
  std::vector<float> staged;  // only for gradients on a device
};

class AllReduce : public GradientReducer {
 public:
  AllReduce(Communicator* world, int64_t bucket_bytes)
      : world_(world), bucket_(std::max<int64_t>(1, bucket_bytes / static_cast<int64_t>(sizeof(float)))) {}
  int rank() const override { return world_->rank(); }
  int world_size() const override { return world_->size(); }

  absl::StatusOr<CombinedLoss> CombineLoss(double local_loss, int64_t local_tokens) override {
    // {sum of n_r L_r, N, ranks without target tokens}
    double sums[3] = {local_tokens > 0 ? local_loss * static_cast<double>(local_tokens) : 0.0,
                      static_cast<double>(local_tokens), local_tokens > 0 ? 0.0 : 1.0};
    TVLAB_RETURN_IF_ERROR(world_->AllReduceSum(sums, 3, "the loss all-reduce"));
    // Every rank sees the same sums, so every rank stops here alike.
    if (sums[2] > 0) {
      return OnEveryRank(absl::InvalidArgumentError(absl::StrCat(
          sums[2], " rank(s) got a shard of the global batch without target tokens (their mean loss "
          "is undefined); use a larger train.batch_size or fewer ranks")));
    }
    return CombinedLoss{sums[0] / sums[1], static_cast<double>(local_tokens) / sums[1]};
  }

  absl::Status ReduceGradients(const std::vector<std::pair<std::string, Var>>& params) override {
    const auto start = std::chrono::steady_clock::now();
    std::vector<HostGradient> grads;
    int64_t total = 0;
    for (const auto& [name, param] : params) {
      Tensor& grad = const_cast<Var&>(param).mutable_grad();
      if (!grad.defined()) continue;  // AdamW skips it on every rank alike
      HostGradient host;
      host.grad = &grad;
      if (grad.device() == Device::kCpu) {
        host.values = grad.ptr();  // host memory: read and written in place
      } else {
        host.staged = grad.ToVector();
        host.values = host.staged.data();  // host: the gradient's host copy
      }
      total += grad.numel();
      grads.push_back(std::move(host));
    }
    // Same models give the same gradient sizes; anything else would make
    // the all-reduces below pair up unrelated numbers (or wait forever).
    int64_t extent[2] = {total, -total};
    TVLAB_RETURN_IF_ERROR(world_->AllReduceMax(extent, 2, "the gradient size check before the gradient all-reduce"));
    // That tiny all-reduce returns once every rank has reached it: the time
    // so far is mostly waiting for the slowest rank, the rest is the reduction.
    const auto synchronized = std::chrono::steady_clock::now();
    wait_seconds_ += std::chrono::duration<double>(synchronized - start).count();
    if (extent[0] != total || -extent[1] != total) {
      return absl::InternalError(absl::StrCat("rank ", world_->rank(), " has ", total,
                                              " gradient values but another rank has ",
                                              extent[0] != total ? extent[0] : -extent[1],
                                              ": the ranks do not train the same model"));
    }
    buffer_.resize(static_cast<size_t>(std::min<int64_t>(bucket_, std::max<int64_t>(total, 1))));
    const int64_t capacity = static_cast<int64_t>(buffer_.size());
    // Pack gradients into the flat buffer in parameter order, reduce each
    // full bucket, unpack; a gradient larger than a bucket spans several.
    struct Piece {
      size_t g;
      int64_t offset, count;
    };
    std::vector<Piece> pieces;
    size_t g = 0;
    int64_t offset = 0;  // into grads[g]
    while (g < grads.size()) {
      pieces.clear();
      int64_t used = 0;
      while (g < grads.size() && used < capacity) {
        const int64_t count = std::min<int64_t>(grads[g].grad->numel() - offset, capacity - used);
        std::memcpy(buffer_.data() + used, grads[g].values + offset, count * sizeof(float));  // host: bucket buffer
        pieces.push_back({g, offset, count});
        used += count;
        offset += count;
        if (offset == grads[g].grad->numel()) {
          ++g;
          offset = 0;
        }
      }
      TVLAB_RETURN_IF_ERROR(world_->AllReduceSum(buffer_.data(), used, "the gradient all-reduce"));  // host: the bucket buffer
      int64_t at = 0;
      for (const Piece& piece : pieces) {
        const float* reduced = buffer_.data() + at;  // host: the bucket buffer
        std::memcpy(grads[piece.g].values + piece.offset, reduced, piece.count * sizeof(float));
        at += piece.count;
      }
    }
    for (HostGradient& host : grads) {
      if (!host.staged.empty())
        *host.grad = Tensor::FromVector(host.grad->shape(), host.staged, host.grad->device());
    }
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return absl::OkStatus();
  }
  void SetPhase(std::string phase) override { world_->SetPhase(std::move(phase)); }
  double reduce_seconds() const override { return seconds_; }
  double wait_seconds() const override { return wait_seconds_; }

 private:
  Communicator* world_;
  int64_t bucket_;  // floats per bucket
  std::vector<float> buffer_;
  double seconds_ = 0, wait_seconds_ = 0;
};

}  // namespace

std::unique_ptr<GradientReducer> MakeGradientReducer(Communicator* world, int64_t bucket_bytes) {
  if (world->size() == 1) return std::make_unique<OneProcess>();
  auto host = std::make_unique<AllReduce>(world, bucket_bytes);
  if (CurrentDevice() == Device::kCuda && NcclAvailable()) {  // GPU gradients: NCCL
    auto nccl = MakeNcclGradientReducer(world, std::move(host));
    TVLAB_CHECK(nccl.ok()) << nccl.status();  // a GPU is current, so NCCL has one
    return std::move(*nccl);
  }
  return host;
}

}  // namespace tvlab
