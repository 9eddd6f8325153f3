#include "experiments/hf/hf_config_checks.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

std::string Show(const Value& v) {
  std::string s;
  (void)google::protobuf::util::MessageToJsonString(v, &s);
  return s;
}

const char* KindName(const Value& v) {
  switch (v.kind_case()) {
    case Value::kNumberValue: return "number";
    case Value::kStringValue: return "string";
    case Value::kBoolValue: return "boolean";
    case Value::kListValue: return "list";
    case Value::kStructValue: return "object";
    default: return "null";
  }
}

bool Same(const Value& a, const Value& b) {
  if (a.kind_case() == Value::kNumberValue && b.kind_case() == Value::kNumberValue)
    return std::abs(a.number_value() - b.number_value()) <= 1e-6 * std::max(1.0, std::abs(b.number_value()));
  return Show(a) == Show(b);
}

}  // namespace

absl::StatusOr<Struct> ParseJson(const std::string& text, const std::string& what) {
  Struct json;
  auto parsed = google::protobuf::util::JsonStringToMessage(text, &json);
  if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": not JSON: ", parsed.message().ToString()));
  return json;
}

absl::StatusOr<Struct> ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return ParseJson(text.str(), path);
}

// Every config.json value the export writes and compares must equal the HF
// directory's: a spec that does not match the HF model is an error naming
// the key, both values, and the spec field to change.
absl::Status CheckConfig(const std::string& hf_dir, const Struct& config, const Struct& ours,
                         const HfArchitecture& arch, int64_t d_model) {
  auto mismatch = [&](const HfConfigKey& key, const Value& theirs, const Value& mine) {
    return absl::FailedPreconditionError(absl::StrCat(hf_dir, "/config.json has ", key.key, " = ", Show(theirs),
                                                      " but the spec gives ", Show(mine), ": set ", key.spec_field,
                                                      " to match"));
  };
  for (const HfConfigKey& key : arch.config) {
    if (!key.compared || !config.fields().count(key.key)) continue;
    Value theirs = config.fields().at(key.key);
    if (key.null_is_times_hidden > 0 && theirs.kind_case() == Value::kNullValue)
      theirs.set_number_value(static_cast<double>(key.null_is_times_hidden) * d_model);
    const Value& mine = ours.fields().at(key.key);
    if (theirs.kind_case() != mine.kind_case() && theirs.kind_case() != Value::kNullValue) {
      return absl::FailedPreconditionError(absl::StrCat(hf_dir, "/config.json: ", key.key, " is ", Show(theirs),
                                                        ", a ", KindName(theirs), " where a ", KindName(mine),
                                                        " is expected (the spec gives ", Show(mine),
                                                        "); write it as a ", KindName(mine)));
    }
    if (!Same(theirs, mine)) return mismatch(key, theirs, mine);
  }
  const auto rope_key = std::find_if(arch.config.begin(), arch.config.end(),
                                     [](const HfConfigKey& k) { return k.key == "rope_theta"; });
  if (rope_key == arch.config.end()) return absl::OkStatus();
  // rope_theta at the top (transformers 4) or in rope_parameters (5).
  Value theirs;
  if (config.fields().count("rope_theta")) theirs = config.fields().at("rope_theta");
  if (config.fields().count("rope_parameters")) {
    const Struct& p = config.fields().at("rope_parameters").struct_value();
    if (p.fields().count("rope_type") && p.fields().at("rope_type").string_value() != "default") {
      return absl::FailedPreconditionError(absl::StrCat(
          hf_dir, "/config.json: rope_type '", p.fields().at("rope_type").string_value(),
          "' (scaled RoPE) has no tvlab equivalent; only \"default\" RoPE imports"));
    }
    if (p.fields().count("rope_theta")) theirs = p.fields().at("rope_theta");
  }
  if (theirs.kind_case() == Value::kNumberValue && !Same(theirs, ours.fields().at("rope_theta")))
    return mismatch(*rope_key, theirs, ours.fields().at("rope_theta"));
  return absl::OkStatus();
}

// config.json's `architectures` (when present) must name the class the
// import reads: a BertModel directory with model_type "llama" is refused.
absl::Status CheckArchitectures(const std::string& hf_dir, const Struct& config, const HfArchitecture& arch) {
  if (!config.fields().count("architectures")) return absl::OkStatus();
  const Value& listed = config.fields().at("architectures");
  std::vector<std::string> names;
  if (listed.kind_case() == Value::kListValue)
    for (const Value& v : listed.list_value().values()) names.push_back(v.string_value());
  if (std::find(names.begin(), names.end(), arch.class_name) != names.end()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      hf_dir, "/config.json: architectures is ", Show(listed), ", but this spec imports a ", arch.class_name,
      " (model_type '", arch.model_type, "'); --init_from takes a causal language model of that class"));
}

}  // namespace tvlab
