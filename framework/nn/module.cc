#include "framework/nn/module.h"

#include <algorithm>
#include <vector>

#include "framework/autograd/auxiliary_outputs.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {
std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}
}  // namespace

Var Module::AddParameter(const std::string& name, const Shape& shape, Init init) {
  for (const Param& p : params_) TVLAB_CHECK(p.name != name) << "duplicate parameter " << name;
  Var var(Tensor::Zeros(shape), /*requires_grad=*/true);
  params_.push_back({name, var, init});
  return var;
}

void Module::Adopt(const std::string& name, std::unique_ptr<Module> child) {
  for (const auto& [existing, unused] : children_)
    TVLAB_CHECK(existing != name) << "duplicate child " << name;
  child->SetPath(Join(path_, name));
  children_.emplace_back(name, std::move(child));
}

void Module::SetPath(const std::string& path) {
  path_ = path;
  for (auto& [name, child] : children_) child->SetPath(Join(path_, name));
}

void Module::Collect(std::vector<std::pair<std::string, Var>>* out) const {
  for (const Param& p : params_) out->emplace_back(Join(path_, p.name), p.var);
  for (const auto& [name, child] : children_) child->Collect(out);
}

std::vector<std::pair<std::string, Var>> Module::NamedParameters() const {
  std::vector<std::pair<std::string, Var>> out;
  Collect(&out);
  return out;
}

int64_t Module::NumParameters() const {
  int64_t n = 0;
  for (const auto& [name, var] : NamedParameters()) n += var.value().numel();
  return n;
}

int64_t Module::NumInactiveParameters() const {
  int64_t n = 0;
  for (const auto& [name, child] : children_) n += child->NumInactiveParameters();
  return n;
}

void Module::DeclareAuxiliaryLoss(const std::string& name, float coefficient) {
  for (const AuxiliaryDeclaration& d : auxiliary_) TVLAB_CHECK(d.name != name) << "duplicate auxiliary " << name;
  auxiliary_.push_back({name, true, coefficient});
}

void Module::DeclareAuxiliaryStatistic(const std::string& name) {
  for (const AuxiliaryDeclaration& d : auxiliary_) TVLAB_CHECK(d.name != name) << "duplicate auxiliary " << name;
  auxiliary_.push_back({name, false, 0.0f});
}

bool Module::CollectingAuxiliaryOutputs() { return AuxiliaryOutputs::Current() != nullptr; }

const AuxiliaryDeclaration& Module::Declared(const std::string& name, bool is_loss) const {
  for (const AuxiliaryDeclaration& d : auxiliary_) {
    if (d.name != name) continue;
    TVLAB_CHECK(d.is_loss == is_loss) << Join(path_, name) << " was declared as the other kind";
    return d;
  }
  TVLAB_CHECK(false) << Join(path_, name) << " was emitted but never declared (DeclareAuxiliary*)";
  return auxiliary_.front();  // not reached
}

void Module::EmitAuxiliaryLoss(const std::string& name, const Var& loss) const {
  AuxiliaryOutputs* outputs = AuxiliaryOutputs::Current();
  TVLAB_CHECK(outputs != nullptr) << "emit only while CollectingAuxiliaryOutputs()";
  outputs->AddLoss(Join(path_, name), Declared(name, true).coefficient, loss);
}

void Module::EmitAuxiliaryStatistic(const std::string& name, const Var& value) const {
  AuxiliaryOutputs* outputs = AuxiliaryOutputs::Current();
  TVLAB_CHECK(outputs != nullptr) << "emit only while CollectingAuxiliaryOutputs()";
  Declared(name, false);
  outputs->AddStatistic(Join(path_, name), value);
}

void Module::CollectAuxiliary(std::vector<AuxiliaryDeclaration>* out) const {
  for (const AuxiliaryDeclaration& d : auxiliary_) out->push_back({Join(path_, d.name), d.is_loss, d.coefficient});
  for (const auto& [name, child] : children_) child->CollectAuxiliary(out);
}

std::vector<AuxiliaryDeclaration> Module::DeclaredAuxiliaryOutputs() const {
  std::vector<AuxiliaryDeclaration> out;
  CollectAuxiliary(&out);
  return out;
}

RngStream Module::DropoutStream(const ForwardContext& ctx, const std::string& site) const {
  // Purpose stays kDropout; the site's name is folded into the seed so every
  // site draws an independent mask at every step.
  const RngStream stream(ctx.seed ^ HashName(Join(path_, site)), RngPurpose::kDropout,
                         static_cast<uint64_t>(ctx.step));
  return ctx.shard_rows > 0 ? stream.ForBatchRows(ctx.shard_first_row, ctx.shard_rows) : stream;
}

namespace {
// A parameter's n initial values under `init`: element i from the stream's
// word i (uniform) or words 2i and 2i + 1 (normal), drawn a run at a time.
std::vector<float> InitialValues(const Init& init, const RngStream& rng, int64_t n) {
  std::vector<float> values(n);
  switch (init.kind) {
    case Init::kZeros: std::fill(values.begin(), values.end(), 0.0f); break;
    case Init::kOnes: std::fill(values.begin(), values.end(), 1.0f); break;
    case Init::kConstant: std::fill(values.begin(), values.end(), init.scale); break;
    case Init::kUniform:
      rng.UniformFill(0, n, values.data());  // host: initial values, copied onto the device below
      for (float& v : values) v = init.scale * (2.0f * v - 1.0f);
      break;
    case Init::kNormal:
      rng.NormalFill(0, n, values.data());  // host: initial values, copied onto the device below
      for (float& v : values) v = init.scale * v;
      break;
  }
  return values;
}
}  // namespace

void InitializeParameters(Module& root, uint64_t seed) {
  InitializeParameters(root, seed, [](const std::string&, const Shape&, const Init& declared) { return declared; });
}

void InitializeParameters(Module& root, uint64_t seed, const InitPolicy& policy) {
  std::vector<Module*> stack = {&root};
  while (!stack.empty()) {
    Module* m = stack.back();
    stack.pop_back();
    for (Module::Param& p : m->params_) {
      // Drawn on the host (the same values on every backend) and copied onto
      // the parameter's device: one of the framework's explicit edges.
      Tensor& t = p.var.mutable_value();
      const std::string name = Join(m->path_, p.name);
      const Init init = policy(name, t.shape(), p.init);
      const RngStream rng(seed, RngPurpose::kInit, HashName(name));
      t = Tensor::FromVector(t.shape(), InitialValues(init, rng, t.numel()), t.device());
    }
    for (auto& [name, child] : m->children_) stack.push_back(child.get());
  }
  stack = {&root};  // every value is set: the modules' own adjustments
  while (!stack.empty()) {
    Module* m = stack.back();
    stack.pop_back();
    m->AfterInitialize();
    for (auto& [name, child] : m->children_) stack.push_back(child.get());
  }
}

}  // namespace tvlab
