#include "experiments/hf/hf_import.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "experiments/hf/hf_architecture.h"
#include "experiments/hf/hf_config_checks.h"
#include "experiments/hf/hf_export.h"
#include "experiments/hf/hf_tensors.h"
#include "framework/autograd/var.h"
#include "framework/core/status_macros.h"
#include "framework/train/safetensors.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;
using TensorMap = std::map<std::string, Tensor>;

// HF buffers that are not weights (older GPT-2 causal masks, rotary tables).
bool IsBuffer(const std::string& name) {
  auto ends = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".attn.bias") || ends(".attn.masked_bias") || ends("rotary_emb.inv_freq");
}

// The HF tensors of a directory, read by name.
class HfTensors {
 public:
  HfTensors(const std::string& hf_dir, TensorMap tensors) : dir_(hf_dir), tensors_(std::move(tensors)) {}
  absl::StatusOr<Tensor> Get(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end())
      return absl::NotFoundError(absl::StrCat(dir_, "/model.safetensors has no tensor '", name, "'"));
    return it->second;
  }
  TensorMap& all() { return tensors_; }
  const TensorMap& all() const { return tensors_; }

 private:
  std::string dir_;
  TensorMap tensors_;
};

// The tvlab tensor(s) an HF one holds: the inverse of export's layouts.
std::vector<Tensor> FromHfLayout(const HfTensor& t, const Tensor& hf, bool is_bias, const ModelSpec& m,
                                 const HfConfigValues& v) {
  switch (t.layout) {
    case HfLayout::kEmbedding:
      return {m.scale_embeddings() ? Scaled(hf, 1.0f / std::sqrt(static_cast<float>(v.d_model))) : hf};
    case HfLayout::kRopeRows:
      return {v.interleaved_rope ? HalvesToInterleaved(hf, v.head_dim) : hf};
    case HfLayout::kConv1d: {
      const int64_t parts = static_cast<int64_t>(t.tvlab.size()), width = hf.shape().back() / parts;
      std::vector<Tensor> out;
      for (int64_t i = 0; i < parts; ++i) {
        Tensor part = Columns(hf, i * width, width);  // (C, 3C) -> (C, C) for c_attn
        out.push_back(is_bias ? part : Transposed(part));
      }
      return out;
    }
    case HfLayout::kSame:
      break;
  }
  return {hf};
}

// Sets the tvlab tensors of HF tensor `t` (weight, and the bias when the
// spec's model has one), named under `to`, read under `from`.
absl::Status ImportTensor(const HfTensor& t, const std::string& from, const std::string& to, const ModelSpec& m,
                          const HfConfigValues& v, const HfTensors& hf, TensorMap* w) {
  TVLAB_ASSIGN_OR_RETURN(Tensor weight, hf.Get(absl::StrCat(from, t.hf, ".weight")));
  std::vector<Tensor> parts = FromHfLayout(t, weight, false, m, v);
  for (size_t i = 0; i < parts.size(); ++i) (*w)[absl::StrCat(to, t.tvlab[i], ".weight")] = parts[i];
  const bool has_bias = t.bias == HfBias::kModel ? m.bias() : t.bias == HfBias::kNorm && v.norm_bias;
  if (!has_bias) return absl::OkStatus();  // an HF bias left over is refused by CheckTensors
  TVLAB_ASSIGN_OR_RETURN(Tensor bias, hf.Get(absl::StrCat(from, t.hf, ".bias")));
  parts = FromHfLayout(t, bias, true, m, v);
  for (size_t i = 0; i < parts.size(); ++i) (*w)[absl::StrCat(to, t.tvlab[i], ".bias")] = parts[i];
  return absl::OkStatus();
}

absl::StatusOr<TensorMap> ImportTensors(const HfArchitecture& arch, const ModelSpec& m, const HfConfigValues& v,
                                        const HfTensors& hf) {
  TensorMap w;
  for (const HfTensor& t : arch.first) TVLAB_RETURN_IF_ERROR(ImportTensor(t, "", "", m, v, hf, &w));
  for (int64_t l = 0; l < m.num_layers(); ++l) {
    const std::string from = absl::StrCat(arch.hf_layer, l, "."), to = absl::StrCat(arch.tvlab_layer, l, ".");
    for (const HfTensor& t : arch.layer) TVLAB_RETURN_IF_ERROR(ImportTensor(t, from, to, m, v, hf, &w));
  }
  for (const HfTensor& t : arch.last) TVLAB_RETURN_IF_ERROR(ImportTensor(t, "", "", m, v, hf, &w));
  return w;
}

// Every HF tensor must come back from the re-export (to 1e-6; the embedding
// scale is a float division and product), and every one must have a place.
absl::Status CheckTensors(const std::string& hf_dir, const TensorMap& hf, const HfModel& again) {
  std::set<std::string> produced;
  for (const auto& [name, tensor] : again.tensors) {
    produced.insert(name);
    auto it = hf.find(name);
    if (it == hf.end()) continue;  // a bias the HF model lacks: AssignByName names it
    const std::vector<float> a = tensor.ToVector(), b = it->second.ToVector();
    float worst = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1.0f, std::abs(b[i])));
    if (a.size() != b.size() || worst > 1e-6f) {
      return absl::FailedPreconditionError(absl::StrCat(
          hf_dir, ": tensor '", name, "' does not come back unchanged through this spec (relative "
          "difference ", worst, "); e.g. nonzero biases with model.bias false"));
    }
  }
  for (const auto& [name, tensor] : hf) {
    if (!produced.count(name) && !IsBuffer(name)) {
      return absl::FailedPreconditionError(absl::StrCat(
          hf_dir, "/model.safetensors: tensor '", name, "' has no place in this spec's model "
          "(biases need model.bias true)"));
    }
  }
  return absl::OkStatus();
}

// The architecture config.json's model_type names, which must be the spec's.
absl::StatusOr<const HfArchitecture*> ArchitectureOf(const std::string& hf_dir, const Struct& config,
                                                     const ModelSpec& m) {
  const std::string type =
      config.fields().count("model_type") ? config.fields().at("model_type").string_value() : "";
  TVLAB_RETURN_IF_ERROR(CheckLayersAlike(m, "--init_from"));
  const HfArchitecture* arch = HfArchitectureFor(m.position().plugin());
  if (arch != nullptr && arch->model_type == type) return arch;
  const HfArchitecture& first = HfArchitectures()[0];
  const HfArchitecture& second = HfArchitectures()[1];
  return absl::FailedPreconditionError(absl::StrCat(
      hf_dir, "/config.json: model_type '", type, "', but the spec's model has position '", m.position().plugin(),
      "'; --init_from takes a ", first.name, " directory for ", first.spec_words, " and a ", second.name,
      " one for ", second.spec_words));
}

const HfTensor* TensorOf(const HfArchitecture& arch, const std::string& tvlab) {
  for (const std::vector<HfTensor>* list : {&arch.first, &arch.last})
    for (const HfTensor& t : *list)
      if (t.tvlab == std::vector<std::string>{tvlab}) return &t;
  return nullptr;
}

// A spec with model.tie_embeddings has no head of its own: the HF model's
// lm_head must be its embedding (tied, or equal), and is dropped.
absl::Status DropTiedHead(const std::string& hf_dir, TensorMap* w) {
  auto head = w->find("head.weight"), embedding = w->find("embedding.weight");
  if (head == w->end() || embedding == w->end()) return absl::OkStatus();
  if (head->second.ToVector() != embedding->second.ToVector()) {
    return absl::FailedPreconditionError(absl::StrCat(
        hf_dir, ": the spec ties the output head to the embedding (model.tie_embeddings true), but this model's "
        "lm_head differs from its embedding; import it with tie_embeddings: false"));
  }
  w->erase(head);
  return absl::OkStatus();
}

}  // namespace

bool IsHuggingFaceDirectory(const std::string& path) {
  return std::filesystem::is_directory(path) && std::filesystem::exists(path + "/config.json");
}

absl::Status CheckInitFromDirectory(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(path, error) || fs::exists(path + "/config.json", error)) return absl::OkStatus();
  for (const char* tvlab : {"spec.resolved.pbtxt", "state.json", "checkpoints"})
    if (fs::exists(path + "/" + tvlab, error)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      path, " is neither a Hugging Face directory (it has no config.json) nor a tvlab run or checkpoint "
      "directory (no spec.resolved.pbtxt, state.json or checkpoints/): for an HF model add its config.json; "
      "for tvlab weights name the .safetensors file itself"));
}

absl::StatusOr<TensorMap> FromHuggingFace(const ModelSpec& m, const std::string& hf_dir) {
  TVLAB_ASSIGN_OR_RETURN(Struct config, ReadJson(hf_dir + "/config.json"));
  TVLAB_ASSIGN_OR_RETURN(TensorMap tensors, ReadSafetensors(hf_dir + "/model.safetensors"));
  HfTensors hf(hf_dir, std::move(tensors));
  TVLAB_ASSIGN_OR_RETURN(const HfArchitecture* arch, ArchitectureOf(hf_dir, config, m));
  TVLAB_RETURN_IF_ERROR(CheckArchitectures(hf_dir, config, *arch));
  // Tied embeddings: the head is the embedding.
  const std::string embedding = TensorOf(*arch, "embedding")->hf + ".weight";
  const std::string head = TensorOf(*arch, "head")->hf + ".weight";
  const bool tied = config.fields().count("tie_word_embeddings") &&
                    config.fields().at("tie_word_embeddings").bool_value();
  if (tied && !hf.all().count(head)) hf.all()[head] = hf.all()[embedding];
  HfConfigValues values;
  values.d_model = m.d_model();
  values.heads = m.num_heads();
  values.head_dim = values.d_model / std::max(values.heads, int64_t{1});
  TVLAB_RETURN_IF_ERROR(arch->read_options(m, &values));
  TVLAB_ASSIGN_OR_RETURN(TensorMap w, ImportTensors(*arch, m, values, hf));
  if (m.tie_embeddings()) TVLAB_RETURN_IF_ERROR(DropTiedHead(hf_dir, &w));
  // Check by exporting again: the spec's shape must be the HF model's.
  TVLAB_ASSIGN_OR_RETURN(HfModel again, ModelToHuggingFace(m, w));
  TVLAB_ASSIGN_OR_RETURN(Struct ours, ParseJson(again.config_json, "the export's config"));
  TVLAB_RETURN_IF_ERROR(CheckConfig(hf_dir, config, ours, *arch, values.d_model));
  TVLAB_RETURN_IF_ERROR(CheckTensors(hf_dir, hf.all(), again));
  return w;
}

absl::Status WriteImportedWeights(const ModelSpec& model, const std::string& hf_dir, const std::string& out_file) {
  TVLAB_ASSIGN_OR_RETURN(auto weights, FromHuggingFace(model, hf_dir));
  std::vector<std::pair<std::string, Var>> vars;
  for (const auto& [name, tensor] : weights) vars.push_back({name, Var(tensor)});
  return WriteSafetensors(out_file, vars);
}

}  // namespace tvlab
