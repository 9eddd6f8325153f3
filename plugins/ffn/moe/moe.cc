// Mixture-of-experts FFN (Shazeer et al. 2017; GShard, Lepikhin et al.
// 2020; Switch, Fedus et al. 2021; Mixtral, Jiang et al. 2024; DeepSeek-MoE,
// Dai et al. 2024): a router picks k of E expert FFNs per token.
//   logits = x W_r                                  W_r (E, C), no bias
//   SOFTMAX_THEN_TOP_K:  (g, e) = top-k(softmax(logits))
//   TOP_K_THEN_SOFTMAX:  (l, e) = top-k(logits), g = softmax(l)
//   y_t = sum_j g_tj * FFN_{e_tj}(x_t) [+ sum_s Shared_s(x_t)]
// Experts are any FFN plugin (options.expert; SwiGLU by default) and run
// only on the tokens routed to them: the Backend's routing kernels
// (kernels.def, "Mixture-of-experts routing") place assignments in E
// fixed-size slot blocks, each expert runs on its block, and the combine
// adds them back weighted by the gates; nothing is read back to the host.
// With dropless: false each expert has ceil(capacity_factor * N * k / E)
// slots and assignments past them are dropped (first choices first, in
// token order), so the expert compute scales with k, not E. Dropless gives
// each expert as many slots as the most-loaded expert's assignments
// (nothing dropped; compute follows the load, N k / E per expert when
// balanced): the E counts are read to the host once per MoE layer and
// forward, the one host read of this FFN (on a GPU a synchronisation, as
// Megatron-LM's grouped GEMM sizes); capacity mode reads nothing.
// Auxiliary losses: Switch load balancing E * sum_e f_e P_e and the router
// z-loss mean(logsumexp(logits)^2) (ST-MoE); statistics: expert_load.<e>
// (f_e, the fraction of assignments routed to expert e) and
// dropped_fraction (assignments past capacity / N k).
//
// Example config (configs/sort_digits_moe.pbtxt):
//   ffn { plugin: "moe" options { [type.googleapis.com/tvlab.MoeFfnOptions] { num_experts: 4 top_k: 2 ... } } }

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"
#include "framework/autograd/routing_ops.h"
#include "framework/interfaces/ffn.h"
#include "framework/nn/layers.h"
#include "google/protobuf/text_format.h"
#include "plugins/ffn/moe/moe.pb.h"

namespace tvlab {
namespace {

// The expert plugin's options parsed from options.expert_options.
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> ExpertOptions(
    const MoeFfnOptions& options, const FfnEntry& entry) {
  std::unique_ptr<google::protobuf::Message> parsed(entry.default_options->New());
  if (!google::protobuf::TextFormat::ParseFromString(options.expert_options(), parsed.get())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.expert_options '", options.expert_options(), "' is not a text-format ",
        parsed->GetTypeName(), " (the options of expert plugin '", options.expert(),
        "'), e.g. \"\" for its defaults"));
  }
  return parsed;
}

// The expert's dims: options.expert_d_ff when set, else the model's.
ModelDims ExpertDims(const MoeFfnOptions& options, const ModelDims& dims) {
  ModelDims expert = dims;
  if (options.expert_d_ff() > 0) expert.d_ff = options.expert_d_ff();
  return expert;
}

absl::Status ValidateSizes(const MoeFfnOptions& o) {
  if (o.num_experts() < 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "options.num_experts must be >= 1 (got ", o.num_experts(), "), e.g. 8"));
  if (o.top_k() < 1 || o.top_k() > o.num_experts())
    return absl::InvalidArgumentError(absl::StrCat(
        "options.top_k must be in [1, options.num_experts = ", o.num_experts(), "] (got ",
        o.top_k(), "), e.g. 2"));
  if (!o.dropless() && !(o.capacity_factor() > 0.0f))
    return absl::InvalidArgumentError(absl::StrCat(
        "options.capacity_factor must be > 0 when options.dropless is false (got ",
        o.capacity_factor(), "), e.g. 1.25 (Switch)"));
  if (o.num_shared_experts() < 0 || o.expert_d_ff() < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "options.num_shared_experts and options.expert_d_ff must be >= 0 (got ",
        o.num_shared_experts(), ", ", o.expert_d_ff(), ")"));
  if (!(o.load_balancing_coefficient() >= 0.0f) || !(o.z_loss_coefficient() >= 0.0f))
    return absl::InvalidArgumentError(absl::StrCat(
        "options.load_balancing_coefficient and options.z_loss_coefficient must be >= 0 (got ",
        o.load_balancing_coefficient(), ", ", o.z_loss_coefficient(), "), e.g. 0.01 and 0.001"));
  return absl::OkStatus();
}

class MoeFfn : public Ffn {
 public:
  static absl::Status Validate(const MoeFfnOptions& options, const ModelDims& dims) {
    if (absl::Status sizes = ValidateSizes(options); !sizes.ok()) return sizes;
    if (options.expert() == "moe")
      return absl::InvalidArgumentError(
          "options.expert must be a dense FFN plugin, not 'moe' (e.g. \"swiglu\", \"gelu\")");
    auto entry = FfnRegistry().Get(options.expert());
    if (!entry.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("options.expert: ", entry.status().message()));
    auto expert_options = ExpertOptions(options, **entry);
    if (!expert_options.ok()) return expert_options.status();
    absl::Status expert = (*entry)->validate(**expert_options, ExpertDims(options, dims));
    if (!expert.ok())
      return absl::InvalidArgumentError(absl::StrCat("options.expert_options (",
                                                     options.expert(), "): ", expert.message()));
    return absl::OkStatus();
  }
  // model.d_ff 0 resolves to the width the experts use.
  static void Resolve(MoeFfnOptions* options, ModelDims* dims) {
    const FfnEntry& entry = **FfnRegistry().Get(options->expert());
    auto expert_options = ExpertOptions(*options, entry);
    ModelDims expert = ExpertDims(*options, *dims);
    entry.resolve(expert_options->get(), &expert);
    if (options->expert_d_ff() == 0) dims->d_ff = expert.d_ff;
  }
  static std::unique_ptr<Ffn> Create(const MoeFfnOptions& options, const ModelDims& dims) {
    return std::make_unique<MoeFfn>(options, dims);
  }

  MoeFfn(const MoeFfnOptions& options, const ModelDims& dims)
      : options_(options), num_experts_(options.num_experts()), k_(options.top_k()) {
    router_ = AddChild("router", std::make_unique<nn::Linear>(dims.d_model, num_experts_, false));
    const FfnEntry& entry = **FfnRegistry().Get(options.expert());
    auto expert_options = ExpertOptions(options, entry);
    const ModelDims expert_dims = ExpertDims(options, dims);
    for (int e = 0; e < num_experts_; ++e)
      experts_.push_back(AddChild(absl::StrCat("experts.", e),
                                  entry.create(**expert_options, expert_dims)));
    for (int s = 0; s < options.num_shared_experts(); ++s)
      shared_.push_back(AddChild(absl::StrCat("shared_experts.", s),
                                 entry.create(**expert_options, expert_dims)));
    DeclareAuxiliaryLoss("load_balancing_loss", options.load_balancing_coefficient());
    DeclareAuxiliaryLoss("router_z_loss", options.z_loss_coefficient());
    for (int e = 0; e < num_experts_; ++e) DeclareAuxiliaryStatistic(absl::StrCat("expert_load.", e));
    DeclareAuxiliaryStatistic("dropped_fraction");
  }

  // A token uses k of the E routed experts (all of the same size).
  int64_t NumInactiveParameters() const override {
    return (num_experts_ - k_) * experts_[0]->NumParameters();
  }

  // Slots per expert for N tokens: dropless, the most assignments any
  // expert got (at most N: an expert gets each token at most once), read
  // from the routing's counts; else ceil(capacity_factor * N * k / E)
  // within [1, N].
  int64_t Capacity(const DeviceInts& chosen, int64_t n) const {
    if (options_.dropless()) {
      const ExpertSlots counted = RouteToExpertSlots(chosen, n, k_, num_experts_, n);
      float most = 1.0f;
      for (float d : counted.demand.ToVector()) most = std::max(most, d);  // E counts to the host
      return static_cast<int64_t>(most);
    }
    const double wanted = std::ceil(static_cast<double>(options_.capacity_factor()) * n * k_ /
                                    num_experts_);
    return std::max<int64_t>(1, std::min<int64_t>(n, static_cast<int64_t>(wanted)));
  }

  Var Forward(const Var& x, const ForwardContext& ctx) const override {
    const int64_t c = x.dim(-1), n = x.value().numel() / c;
    Var flat = Reshape(x, {n, c});         // (N, C)
    Var logits = router_->Forward(flat);  // (N, E)
    Var gates;                            // (N, k)
    DeviceInts chosen;                    // (N * k) expert of each assignment
    if (options_.routing() == MoeFfnOptions::SOFTMAX_THEN_TOP_K) {
      TopKResult top = TopK(Softmax(logits), k_);
      gates = top.values, chosen = top.indices;
    } else {
      TopKResult top = TopK(logits, k_);
      gates = Softmax(top.values), chosen = top.indices;
    }
    const int64_t capacity = Capacity(chosen, n);
    ExpertSlots slots = RouteToExpertSlots(chosen, n, k_, num_experts_, capacity);
    Var dispatched = DispatchToSlots(flat, slots);  // (E * capacity, C)
    std::vector<Var> outputs;
    for (int e = 0; e < num_experts_; ++e) {
      Var rows = Reshape(Slice(dispatched, 0, e * capacity, capacity), {1, capacity, c});
      outputs.push_back(Reshape(experts_[e]->Forward(rows, ctx), {capacity, c}));  // (cap, C)
    }
    Var y = CombineFromSlots(Concat(outputs, 0), gates, slots);  // (N, C)
    for (const Ffn* shared : shared_)
      y = Add(y, Reshape(shared->Forward(Reshape(flat, {1, n, c}), ctx), {n, c}));
    if (CollectingAuxiliaryOutputs()) EmitAuxiliary(logits, slots);
    return Reshape(y, x.shape());  // (..., C)
  }

 private:
  // Load balancing, z-loss, per-expert load and the dropped fraction.
  void EmitAuxiliary(const Var& logits, const ExpertSlots& slots) const {
    const int64_t n = slots.tokens, assignments = n * k_;
    Var load = Scale(Var(slots.demand), 1.0f / assignments);  // (E) f_e, no gradient
    Var mean_prob = Scale(MatMul(Var(Tensor::Full({1, n}, 1.0f)), Softmax(logits)),
                          1.0f / n);  // (1, N) x (N, E) -> (1, E) P_e
    EmitAuxiliaryLoss("load_balancing_loss",
                      Scale(Sum(Mul(Reshape(load, {1, num_experts_}), mean_prob)),
                            static_cast<float>(num_experts_)));
    // logsumexp with the row maximum (no gradient: the value does not depend on it).
    Var row_max(TopK(Var(logits.value()), 1).values.value());  // (N, 1)
    Var sum_exp = MatMul(Exp(Sub(logits, row_max)),
                         Var(Tensor::Full({num_experts_, 1}, 1.0f)));  // (N, E) x (E, 1)
    Var lse = Add(Log(sum_exp), row_max);                              // (N, 1)
    EmitAuxiliaryLoss("router_z_loss", Mean(Square(lse)));
    for (int e = 0; e < num_experts_; ++e)
      EmitAuxiliaryStatistic(absl::StrCat("expert_load.", e), Sum(Slice(load, 0, e, 1)));
    Var over = Relu(AddScalar(Var(slots.demand), -static_cast<float>(slots.capacity)));  // (E)
    EmitAuxiliaryStatistic("dropped_fraction", Scale(Sum(over), 1.0f / assignments));
  }

  MoeFfnOptions options_;
  int num_experts_, k_;
  nn::Linear* router_;
  std::vector<Ffn*> experts_, shared_;
};

TVLAB_REGISTER_FFN("moe", MoeFfn, MoeFfnOptions);

}  // namespace
}  // namespace tvlab
