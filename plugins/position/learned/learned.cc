// Learned absolute positions (Gehring et al. 2017; BERT, GPT-2): a trained
// table P (max_seq_len, C) whose row p is added to the embedding of the token
// at position p:  x[b, t] += P[offset + t].
// The table has model.max_seq_len rows; when that is 0 the loader sets it to
// the task's longest sequence, and validation rejects a max_seq_len shorter
// than the task, so a position past the table never reaches Forward.
//
// Example config (configs/sort_digits_learned.pbtxt):
//   position { plugin: "learned" options { [type.googleapis.com/tvlab.LearnedPositionOptions] { init_std: 0.02 } } }

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/core/check.h"
#include "framework/interfaces/position_encoding.h"
#include "plugins/position/learned/learned.pb.h"

namespace tvlab {
namespace {

class LearnedPosition : public PositionEncoding {
 public:
  // Fusable: adds no logit bias. Bounded: no rows past model.max_seq_len.
  static constexpr uint32_t kCapabilities = kFusablePosition | kBoundedPositions;
  static absl::Status Validate(const LearnedPositionOptions& options, const ModelDims& dims) {
    if (dims.max_seq_len < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the learned table has model.max_seq_len rows, which must be >= 0 (got ",
          dims.max_seq_len, "); 0 sizes it to the task's sequences"));
    }
    if (!(options.init_std() > 0.0f)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.init_std must be > 0 (got ", options.init_std(), "), e.g. 0.02"));
    }
    return absl::OkStatus();
  }
  static std::unique_ptr<PositionEncoding> Create(const LearnedPositionOptions& options,
                                                  const ModelDims& dims) {
    // 0 is resolved from the task by LoadExperiment before any model is built.
    TVLAB_CHECK(dims.max_seq_len > 0)
        << "learned positions need dims.max_seq_len > 0; build from a loaded spec";
    return std::make_unique<LearnedPosition>(dims.max_seq_len, dims.d_model, options.init_std());
  }

  LearnedPosition(int64_t rows, int64_t width, float init_std) : rows_(rows) {
    table_ = AddParameter("weight", {rows, width}, Init::Normal(init_std));  // (max_seq_len, C)
  }

  Var AddToEmbeddings(const Var& x, int64_t offset) const override {
    const int64_t t = x.dim(1);
    TVLAB_CHECK(offset >= 0 && offset + t <= rows_)
        << "positions [" << offset << ", " << offset + t << ") are past the learned table of "
        << rows_ << " rows (model.max_seq_len); validation should have caught this";
    Var rows = Slice(table_, 0, offset, t);  // (T, C)
    return Add(x, rows);                     // (B, T, C) + (T, C)
  }

  // No logit bias: the fused attention kernel may run (attend.h).
  FusedLogitBias FusedLogitBiasFor(int64_t) const override { return {true, {}}; }
  bool LeavesQueriesAndKeysAlone() const override { return true; }

 private:
  int64_t rows_;
  Var table_;
};

TVLAB_REGISTER_POSITION_ENCODING("learned", LearnedPosition, LearnedPositionOptions);

}  // namespace
}  // namespace tvlab
