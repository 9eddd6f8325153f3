#include "framework/train/run_directory.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/core/status_macros.h"
#include "framework/io/atomic_file.h"
#include "framework/schema/spec_text.h"
#include "framework/train/safetensors.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {
namespace {

constexpr char kLogColumns[] = "step,loss,lr,grad_norm,tokens_per_sec,elapsed_sec,eval_loss,eval_token_accuracy";

}  // namespace

absl::Status RunDirectory::Create() {
  absl::Status created = fs_->CreateDirs(path_);
  if (!created.ok()) {
    return absl::Status(created.code(), absl::StrCat("cannot create the run directory: ", created.message(),
                                                     " (--output_dir chooses it)"));
  }
  return absl::OkStatus();
}

absl::Status RunDirectory::WriteResolvedSpec(const Experiment& spec) {
  return WriteFileAtomically(fs_, path_ + "/spec.resolved.pbtxt", SpecToText(spec));
}

void RunDirectory::SetAuxiliaryColumns(const std::vector<AuxiliaryDeclaration>& declared) {
  auxiliary_columns_.clear();
  for (const AuxiliaryDeclaration& d : declared) auxiliary_columns_.push_back(d.name);
}

std::string RunDirectory::LogHeader() const {
  std::string header = kLogColumns;
  for (const std::string& name : auxiliary_columns_) absl::StrAppend(&header, ",", name);
  for (const std::string& name : probe_columns_) absl::StrAppend(&header, ",", name);
  return header + "\n";
}

absl::Status RunDirectory::StartLog() {
  if (absl::Status s = WriteFileAtomically(fs_, LogPath(), LogHeader()); !s.ok()) return s;
  return OpenLogForAppend();
}

absl::Status RunDirectory::ContinueLog(int64_t next_step) {
  std::string kept = LogHeader();
  {
    std::ifstream in(LogPath());
    std::string line;
    std::getline(in, line);  // header
    for (int line_number = 2; std::getline(in, line); ++line_number) {
      if (line.empty()) continue;
      int64_t step;
      if (!absl::SimpleAtoi(line.substr(0, line.find(',')), &step))
        return absl::DataLossError(absl::StrCat(
            LogPath(), ":", line_number, ": the row does not start with a step number ('",
            line.substr(0, 40), "'); the log is damaged. Delete that row and the ones after it "
            "(steps from the last checkpoint on are redone) and resume again"));
      if (step < next_step) kept += line + "\n";
    }
  }
  if (absl::Status s = WriteFileAtomically(fs_, LogPath(), kept); !s.ok()) return s;
  return OpenLogForAppend();
}

absl::Status RunDirectory::OpenLogForAppend() {
  TVLAB_ASSIGN_OR_RETURN(log_, fs_->NewAppendableFile(LogPath()));
  return absl::OkStatus();
}

absl::Status RunDirectory::AppendLogRow(const TrainLogRow& row) {
  const std::string eval_columns =
      row.has_eval ? absl::StrFormat("%.6f,%.6f", row.eval_loss, row.eval_token_accuracy) : ",";
  std::string auxiliary_columns;
  for (const AuxiliaryMean& mean : row.auxiliary)
    absl::StrAppend(&auxiliary_columns, ",", std::isnan(mean.value) ? "" : absl::StrFormat("%.6g", mean.value));
  for (const std::string& name : probe_columns_) {  // empty cells on rows without probes
    auto it = std::find_if(row.probes.begin(), row.probes.end(), [&](const ProbeValue& p) { return p.name == name; });
    absl::StrAppend(&auxiliary_columns, ",", it == row.probes.end() ? "" : absl::StrFormat("%.6g", it->value));
  }
  return log_->Append(absl::StrFormat("%d,%.6f,%g,%.6f,%.1f,%.3f,%s%s\n", row.step, row.loss, row.lr,
                                      row.grad_norm, row.tokens_per_sec, row.elapsed_sec, eval_columns,
                                      auxiliary_columns));
}

absl::Status RunDirectory::WriteWeights(const NamedVars& params) const {
  return WriteSafetensors(path_ + "/model.safetensors", params, fs_);
}

absl::Status RunDirectory::WriteTokenizerModel(const std::string& serialized) const {
  return WriteFileAtomically(fs_, path_ + "/" + kTokenizerModel, serialized);
}

absl::Status RunDirectory::WriteMetrics(const RunMetrics& metrics) const {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  auto printed = google::protobuf::util::MessageToJsonString(metrics, &json, options);
  if (!printed.ok()) return absl::InternalError(std::string(printed.message()));
  return WriteFileAtomically(fs_, path_ + "/metrics.json", json);
}

absl::Status RunDirectory::WriteStepProfile(const std::string& table) const {
  return WriteFileAtomically(fs_, path_ + "/step_profile.tsv", table);
}

}  // namespace tvlab
