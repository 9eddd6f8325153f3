#ifndef TVLAB_FRAMEWORK_NN_MODULE_H_
#define TVLAB_FRAMEWORK_NN_MODULE_H_

// Modules own parameters under stable hierarchical names
// ("encoder.layers.0.attention.w_q.weight"); these names are the checkpoint
// tensor names. Parameters are declared with an initializer and filled by
// InitializeParameters(), whose random draws are keyed by (seed, name): the
// value of a parameter does not depend on construction order.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/autograd/var.h"
#include "framework/core/rng.h"

namespace tvlab {

struct Init {
  enum Kind { kZeros, kOnes, kUniform, kNormal, kConstant } kind = kZeros;
  float scale = 0.0f;  // bound for kUniform, std for kNormal, the value for kConstant

  static Init Zeros() { return {kZeros, 0.0f}; }
  static Init Ones() { return {kOnes, 0.0f}; }
  static Init Uniform(float bound) { return {kUniform, bound}; }
  static Init Normal(float std) { return {kNormal, std}; }
  static Init Constant(float value) { return {kConstant, value}; }
};

// An auxiliary output a module declares (framework/autograd/auxiliary_outputs.h).
struct AuxiliaryDeclaration {
  std::string name;  // full: "<module path>.<declared name>" ("<declared name>" at the root)
  bool is_loss = false;
  float coefficient = 0.0f;  // losses only: the weight in the training loss
};

// Forward-pass context: training mode and the keys for dropout masks.
struct ForwardContext {
  bool training = false;
  uint64_t seed = 0;
  int64_t step = 0;
  // Data parallelism: the batch is rows [shard_first_row, shard_first_row +
  // shard_rows) of the global batch, and dropout draws exactly the global
  // batch's masks for those rows (0 rows: the batch is the whole batch).
  int64_t shard_first_row = 0;
  int64_t shard_rows = 0;
};

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Parameters of this module and its children, depth-first, with full names.
  std::vector<std::pair<std::string, Var>> NamedParameters() const;
  int64_t NumParameters() const;
  // Parameters a token's forward does not use: a mixture of experts' routed
  // experts a token is not sent to ((E - k) of E). 0 for a dense module;
  // by default the sum over the children. Cost accounting (active
  // parameters, training FLOPs per token) subtracts them.
  virtual int64_t NumInactiveParameters() const;
  int64_t NumActiveParameters() const { return NumParameters() - NumInactiveParameters(); }

  // The auxiliary losses and statistics this module and its children may
  // emit, depth-first, with full names: train_log.csv's extra columns.
  std::vector<AuxiliaryDeclaration> DeclaredAuxiliaryOutputs() const;

  // Called by InitializeParameters on every module once all parameters of
  // the tree hold their initial values (depth-first, parents first); a
  // module may rescale its own or its children's values here. Default: none.
  // (Only TransformerBlock overrides it, for DeepNorm's init gain: see
  // NormPlacement::SublayerInitGain, which stays with the placement; the
  // init plugin `deepnorm` is DeepNet's full init.)
  virtual void AfterInitialize() {}

  // This module's path from the root ("" for the root).
  const std::string& path() const { return path_; }

  // The RNG stream for a dropout site of this module at this step (a batch
  // shard's view of it under data parallelism: RngStream::ForBatchRows).
  RngStream DropoutStream(const ForwardContext& ctx, const std::string& site) const;

 protected:
  // Declares a parameter. Returns the Var (values are set by
  // InitializeParameters).
  Var AddParameter(const std::string& name, const Shape& shape, Init init);

  // The auxiliary-output channel (framework/autograd/auxiliary_outputs.h).
  // Declare in the constructor (a name unique within this module, e.g.
  // "load_balancing_loss", "expert_load.3"); during a forward, emit only
  // when CollectingAuxiliaryOutputs() (a training forward whose loop
  // collects: otherwise skip the computation). An emitted name must have
  // been declared, with the same kind (a programmer error otherwise).
  // A loss is a scalar Var on the tape (its gradient reaches the
  // parameters); `coefficient` is its weight in the training loss. A
  // statistic is a scalar whose gradient is never taken.
  void DeclareAuxiliaryLoss(const std::string& name, float coefficient);
  void DeclareAuxiliaryStatistic(const std::string& name);
  static bool CollectingAuxiliaryOutputs();
  void EmitAuxiliaryLoss(const std::string& name, const Var& loss) const;
  void EmitAuxiliaryStatistic(const std::string& name, const Var& value) const;

  // Takes ownership of a child and names it; returns a raw pointer to it.
  template <typename M>
  M* AddChild(const std::string& name, std::unique_ptr<M> child) {
    M* raw = child.get();
    Adopt(name, std::unique_ptr<Module>(std::move(child)));
    return raw;
  }

 private:
  void Adopt(const std::string& name, std::unique_ptr<Module> child);
  void SetPath(const std::string& path);
  void Collect(std::vector<std::pair<std::string, Var>>* out) const;
  void CollectAuxiliary(std::vector<AuxiliaryDeclaration>* out) const;
  const AuxiliaryDeclaration& Declared(const std::string& name, bool is_loss) const;

  friend void InitializeParameters(Module& root, uint64_t seed,
                                   const std::function<Init(const std::string&, const Shape&,
                                                            const Init&)>& policy);
  friend struct ModuleTestPeer;

  struct Param {
    std::string name;
    Var var;
    Init init;
  };
  std::string path_;
  std::vector<Param> params_;
  std::vector<AuxiliaryDeclaration> auxiliary_;  // names local to this module
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
};

// Fills every parameter of `root` from its initializer, keyed by (seed, name).
void InitializeParameters(Module& root, uint64_t seed);

// The initializer drawn for a parameter: (full name, shape, the module's
// declared initializer) -> Init (an init plugin's choice, init.h).
using InitPolicy = std::function<Init(const std::string& name, const Shape& shape, const Init& declared)>;
// As above, each parameter drawn from policy(name, shape, declared) instead
// of its declaration; the draws are keyed by (seed, name) all the same.
void InitializeParameters(Module& root, uint64_t seed, const InitPolicy& policy);

// A container that only names its children ("layers.0", "layers.1", ...).
class ModuleList : public Module {
 public:
  template <typename M>
  M* Append(std::unique_ptr<M> child) {
    return AddChild(std::to_string(size_++), std::move(child));
  }
  int size() const { return size_; }

 private:
  int size_ = 0;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_NN_MODULE_H_
