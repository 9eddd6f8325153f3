#include "framework/train/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "framework/core/status_macros.h"
#include "framework/io/atomic_file.h"
#include "framework/train/safetensors.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {
namespace {

namespace stdfs = std::filesystem;

// Error-code forms: an odd path (a file in the middle, no permission) is
// "no", never an exception.
bool Exists(const std::string& path) {
  std::error_code ignored;
  return stdfs::exists(path, ignored);
}
bool IsDirectory(const std::string& path) {
  std::error_code ignored;
  return stdfs::is_directory(path, ignored);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// state.json's next_step must be the step its directory is named for
// (SaveCheckpoint writes both): an edited or damaged next_step (-5, 0,
// 2000000000) would otherwise retrain on trained weights or skip training.
absl::Status CheckNextStep(const TrainState& state, const std::string& checkpoint_dir,
                           const std::string& state_path) {
  const std::string name = std::filesystem::path(checkpoint_dir).filename().string();
  int64_t step = -1;
  const bool named = absl::StartsWith(name, "step_") && absl::SimpleAtoi(name.substr(5), &step);
  if (state.next_step() >= 1 && (!named || state.next_step() == step)) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      state_path, ": next_step is ", state.next_step(), ", but ",
      named ? absl::StrCat("the checkpoint is ", name, " (next_step ", step, ")") : std::string("it must be >= 1"),
      "; the file was edited or damaged: restore next_step, or resume from another checkpoint (checkpoints/latest)"));
}

}  // namespace

absl::Status SaveCheckpoint(const std::string& run_dir, const TrainState& state,
                            const NamedVars& params, const Optimizer& optimizer,
                            const std::string& spec_text, FileSystem* fs) {
  const std::string root = run_dir + "/checkpoints";
  const std::string name = absl::StrFormat("step_%07d", state.next_step());
  const std::string final_dir = root + "/" + name;
  const std::string tmp_dir = root + "/." + name + ".partial";
  TVLAB_RETURN_IF_ERROR(fs->RemoveAll(tmp_dir));
  TVLAB_RETURN_IF_ERROR(fs->CreateDirs(tmp_dir));
  TVLAB_RETURN_IF_ERROR(WriteSafetensors(tmp_dir + "/model.safetensors", params, fs));
  TVLAB_RETURN_IF_ERROR(WriteSafetensors(tmp_dir + "/optimizer.safetensors", optimizer.StateTensors(), fs));
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(state, &json, options).ok())
    return absl::InternalError("cannot encode the training state");
  TVLAB_RETURN_IF_ERROR(WriteFileAtomically(fs, tmp_dir + "/state.json", json));
  TVLAB_RETURN_IF_ERROR(WriteFileAtomically(fs, tmp_dir + "/spec.resolved.pbtxt", spec_text));
  // A checkpoint of this step exists only if a run resumed from an earlier
  // one redoes it; `latest` never names it while it is replaced.
  TVLAB_RETURN_IF_ERROR(fs->RemoveAll(final_dir));
  TVLAB_RETURN_IF_ERROR(fs->RenameFile(tmp_dir, final_dir));
  TVLAB_RETURN_IF_ERROR(fs->SyncDir(root));
  return WriteFileAtomically(fs, root + "/latest", name + "\n");
}

absl::StatusOr<std::string> LatestCheckpoint(const std::string& run_dir) {
  const std::string latest = run_dir + "/checkpoints/latest";
  if (!Exists(latest))
    return absl::NotFoundError(absl::StrCat(run_dir, " has no checkpoint (", latest, " is missing)"));
  std::string name(absl::StripAsciiWhitespace(ReadText(latest)));
  std::string dir = run_dir + "/checkpoints/" + name;
  if (name.empty() || !IsDirectory(dir))
    return absl::DataLossError(absl::StrCat(latest, " names '", name, "', which does not exist"));
  return dir;
}

absl::StatusOr<TrainState> ReadTrainState(const std::string& checkpoint_dir) {
  TrainState state;
  const std::string state_path = checkpoint_dir + "/state.json";
  if (!Exists(state_path))
    return absl::DataLossError(absl::StrCat(state_path, " is missing: incomplete checkpoint"));
  if (!google::protobuf::util::JsonStringToMessage(ReadText(state_path), &state).ok())
    return absl::DataLossError(absl::StrCat(state_path, " does not parse"));
  TVLAB_RETURN_IF_ERROR(CheckNextStep(state, checkpoint_dir, state_path));
  return state;
}

absl::StatusOr<TrainState> LoadCheckpoint(const std::string& checkpoint_dir,
                                          const NamedVars& params, Optimizer* optimizer) {
  TVLAB_ASSIGN_OR_RETURN(TrainState state, ReadTrainState(checkpoint_dir));
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
  if (IsDirectory(path)) {
    if (Exists(path + "/model.safetensors")) {
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
