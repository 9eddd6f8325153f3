#include "framework/train/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "framework/core/status_macros.h"
#include "framework/train/safetensors.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;

absl::Status WriteAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return absl::DataLossError(absl::StrCat("cannot write '", tmp, "'"));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot rename '", tmp, "': ", ec.message()));
  return absl::OkStatus();
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

absl::Status SaveCheckpoint(const std::string& run_dir, const TrainState& state,
                            const NamedVars& params, const AdamW& optimizer,
                            const std::string& spec_text) {
  const std::string root = run_dir + "/checkpoints";
  const std::string name = absl::StrFormat("step_%07d", state.next_step());
  const std::string final_dir = root + "/" + name;
  const std::string tmp_dir = root + "/." + name + ".partial";
  std::error_code ec;
  fs::remove_all(tmp_dir, ec);
  fs::create_directories(tmp_dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create '", tmp_dir, "': ", ec.message()));
  TVLAB_RETURN_IF_ERROR(WriteSafetensors(tmp_dir + "/model.safetensors", params));
  TVLAB_RETURN_IF_ERROR(WriteSafetensors(tmp_dir + "/optimizer.safetensors", optimizer.StateTensors()));
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(state, &json, options).ok())
    return absl::InternalError("cannot encode the training state");
  TVLAB_RETURN_IF_ERROR(WriteAtomically(tmp_dir + "/state.json", json));
  TVLAB_RETURN_IF_ERROR(WriteAtomically(tmp_dir + "/spec.resolved.pbtxt", spec_text));
  fs::remove_all(final_dir, ec);
  fs::rename(tmp_dir, final_dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot rename '", tmp_dir, "': ", ec.message()));
  return WriteAtomically(root + "/latest", name + "\n");
}

absl::StatusOr<std::string> LatestCheckpoint(const std::string& run_dir) {
  const std::string latest = run_dir + "/checkpoints/latest";
  if (!fs::exists(latest))
    return absl::NotFoundError(absl::StrCat(run_dir, " has no checkpoint (", latest, " is missing)"));
  std::string name(absl::StripAsciiWhitespace(ReadText(latest)));
  std::string dir = run_dir + "/checkpoints/" + name;
  if (name.empty() || !fs::is_directory(dir))
    return absl::DataLossError(absl::StrCat(latest, " names '", name, "', which does not exist"));
  return dir;
}

absl::StatusOr<TrainState> LoadCheckpoint(const std::string& checkpoint_dir,
                                          const NamedVars& params, AdamW* optimizer) {
  TrainState state;
  const std::string state_path = checkpoint_dir + "/state.json";
  if (!fs::exists(state_path))
    return absl::DataLossError(absl::StrCat(state_path, " is missing: incomplete checkpoint"));
  if (!google::protobuf::util::JsonStringToMessage(ReadText(state_path), &state).ok())
    return absl::DataLossError(absl::StrCat(state_path, " does not parse"));
  // Read and check both files before modifying anything, so a corrupt
  // optimizer file cannot leave the model half-loaded.
  const std::string model_path = checkpoint_dir + "/model.safetensors";
  const std::string opt_path = checkpoint_dir + "/optimizer.safetensors";
  TVLAB_ASSIGN_OR_RETURN(auto weights, ReadSafetensors(model_path));
  TVLAB_ASSIGN_OR_RETURN(auto moments, ReadSafetensors(opt_path));
  TVLAB_RETURN_IF_ERROR(CheckMatches(weights, params, model_path));
  TVLAB_RETURN_IF_ERROR(CheckMatches(moments, optimizer->StateTensors(), opt_path));
  TVLAB_RETURN_IF_ERROR(AssignByName(weights, params, model_path));
  TVLAB_RETURN_IF_ERROR(AssignByName(moments, optimizer->StateTensors(), opt_path));
  optimizer->set_steps_taken(state.next_step());
  return state;
}

absl::Status LoadWeights(const std::string& path, const NamedVars& params) {
  std::string file = path;
  if (fs::is_directory(path)) {
    if (fs::exists(path + "/model.safetensors")) {
      file = path + "/model.safetensors";
    } else {
      TVLAB_ASSIGN_OR_RETURN(std::string dir, LatestCheckpoint(path));
      file = dir + "/model.safetensors";
    }
  }
  TVLAB_ASSIGN_OR_RETURN(auto tensors, ReadSafetensors(file));
  return AssignByName(tensors, params, file);
}

}  // namespace tvlab
