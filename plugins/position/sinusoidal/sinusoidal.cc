// Sinusoidal position encoding (Vaswani et al. 2017), added to embeddings:
//   P[pos, 2i]   = sin(pos / base^(2i / C))
//   P[pos, 2i+1] = cos(pos / base^(2i / C))
// Position 0 is (0, 1, 0, 1, ...). Needs an even d_model.
//
// Example config (configs/sort_digits.pbtxt):
//   position { plugin: "sinusoidal" }

#include <cmath>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/position_encoding.h"
#include "framework/tensor/device_memory.h"
#include "plugins/position/sinusoidal/sinusoidal.pb.h"

namespace tvlab {
namespace {

class Sinusoidal : public PositionEncoding {
 public:
  static constexpr uint32_t kCapabilities = kFusablePosition;
  static absl::Status Validate(const SinusoidalOptions& options, const ModelDims& dims) {
    if (dims.d_model % 2 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sinusoidal positions pair sin and cos columns, so model.d_model must be even (got ",
          dims.d_model, ")"));
    }
    if (!(options.base() > 1.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("options.base must be > 1 (got ", options.base(), ")"));
    }
    return absl::OkStatus();
  }
  static std::unique_ptr<PositionEncoding> Create(const SinusoidalOptions& options,
                                                  const ModelDims& dims) {
    return std::make_unique<Sinusoidal>(options.base(), dims.d_model);
  }

  Sinusoidal(float base, int64_t d_model) : base_(base), d_model_(d_model) {}

  // (T, C) table for positions [offset, offset + T).
  Tensor Table(int64_t offset, int64_t t) const {
    Tensor table = Tensor::Empty({t, d_model_});
    CurrentBackend().SinusoidalTable(offset, t, d_model_, static_cast<double>(base_), table.ptr());
    return table;
  }

  // Table(0, t), computed once per length and device: every training step
  // and evaluation batch reads the same table (so a captured step reads it
  // like a parameter instead of recomputing it each step). Tables from
  // another offset (decoding, one position at a time) are computed per call.
  Tensor TableFromZero(int64_t t) const {
    std::lock_guard<std::mutex> lock(mu_);
    const std::pair<int64_t, Device> key{t, CurrentDevice()};
    for (const auto& [k, table] : from_zero_)
      if (k == key) return table;
    if (from_zero_.size() == kTablesKept) return Table(0, t);
    Tensor table;
    {
      // Kept across steps, so never a block of a captured step's pool
      // (which would then stay held and turn the capture off).
      ScopedBufferPool outside_any_step(nullptr);
      table = Table(0, t);
    }
    from_zero_.emplace_back(key, table);
    return table;
  }

  Var AddToEmbeddings(const Var& x, int64_t offset) const override {
    const int64_t t = x.dim(1);
    return Add(x, Var(offset == 0 ? TableFromZero(t) : Table(offset, t)));  // (B, T, C) + (T, C)
  }

  // No logit bias: the fused attention kernel may run (attend.h).
  FusedLogitBias FusedLogitBiasFor(int64_t) const override { return {true, {}}; }
  bool LeavesQueriesAndKeysAlone() const override { return true; }

 private:
  // At most this many lengths' tables are kept (a run uses one or two).
  static constexpr size_t kTablesKept = 4;

  float base_;
  int64_t d_model_;
  mutable std::mutex mu_;
  mutable std::vector<std::pair<std::pair<int64_t, Device>, Tensor>> from_zero_;  // (T, C) each
};

TVLAB_REGISTER_POSITION_ENCODING("sinusoidal", Sinusoidal, SinusoidalOptions);

}  // namespace
}  // namespace tvlab
