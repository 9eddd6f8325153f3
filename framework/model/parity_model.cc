#include "framework/model/parity_model.h"

#include <fstream>

#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "framework/testing/tensor_dump.h"

namespace tvlab {

absl::StatusOr<std::unique_ptr<Model>> RandomParityModel(const std::string& spec_text,
                                                         const std::string& out_path, int64_t vocab) {
  const std::string spec_path = out_path + ".spec.pbtxt";
  std::ofstream(spec_path) << spec_text;
  auto spec = LoadExperiment(spec_path, {});
  if (!spec.ok()) return spec.status();
  auto model = BuildModel(*spec, vocab);
  if (!model.ok()) return model.status();
  uint64_t salt = 100;
  for (auto& [name, var] : (*model)->NamedParameters()) {
    Tensor values = RandomTensor(var.shape(), salt++);
    var.mutable_value() = values;  // host-made values, as parity_dump_attention.cc sets them
  }
  return model;
}

void WriteParametersAndGradients(std::ostream& out, const Model& model) {
  for (auto& [name, var] : model.NamedParameters()) {
    WriteTensor(out, "param/" + name, var.value());
    WriteTensor(out, "grad/" + name, var.grad().defined() ? var.grad() : Tensor::Zeros(var.shape()));
  }
}

}  // namespace tvlab
