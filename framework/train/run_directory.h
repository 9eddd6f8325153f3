#ifndef TVLAB_FRAMEWORK_TRAIN_RUN_DIRECTORY_H_
#define TVLAB_FRAMEWORK_TRAIN_RUN_DIRECTORY_H_

// The files of one run directory (checkpoints/ is framework/train/checkpoint.h's):
//   spec.resolved.pbtxt  the spec with every default written out
//   train_log.csv        step, loss, lr, grad_norm, tokens_per_sec, elapsed_sec,
//                        eval_loss, eval_token_accuracy (the eval columns are
//                        empty on rows without a periodic evaluation), then
//                        one column per auxiliary output the model declares
//                        (SetAuxiliaryColumns; empty where none was emitted),
//                        then train.probe_every's columns (SetProbeColumns;
//                        empty on rows that were not probed)
//   metrics.json         RunMetrics (framework/train/metrics.proto)
//   step_profile.tsv     train.step_profile's time per operation of the
//                        captured step (capture/step_profile.h)
//   model.safetensors    final weights under their parameter names
//   tokenizer.model      the task's SentencePiece model (text tasks with
//                        tokenizer kind SENTENCEPIECE), which the
//                        resolved spec's tokenizer.model_path names
// Whole files go through the atomic writer (framework/io/atomic_file.h), so a
// crash or a full disk never leaves half a file; every log row appended is
// checked. A run is finished only when metrics.json is complete and parses
// (framework/report/run_dir.h's ReadRunState).
//
// Not thread-safe: one writer per run directory.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/io/file_system.h"
#include "framework/schema/experiment.pb.h"
#include "framework/train/checkpoint.h"
#include "framework/train/metrics.pb.h"
#include "framework/train/train_log_row.h"

namespace tvlab {

class RunDirectory {
 public:
  // `fs` must outlive the RunDirectory.
  explicit RunDirectory(std::string path, FileSystem* fs = DefaultFileSystem())
      : path_(std::move(path)), fs_(fs) {}

  const std::string& path() const { return path_; }

  // Creates the directory (and its parents) if missing; an error names the
  // part of the path that is in the way (a regular file, /proc, ...).
  absl::Status Create();
  absl::Status WriteResolvedSpec(const Experiment& spec);

  // The auxiliary outputs' columns (full names, declaration order) after
  // the fixed ones; call before StartLog or ContinueLog. None by default.
  void SetAuxiliaryColumns(const std::vector<AuxiliaryDeclaration>& declared);
  // train.probe_every's columns (probes.h), after the auxiliary ones; a row
  // without a probe value leaves its cell empty.
  void SetProbeColumns(std::vector<std::string> names) { probe_columns_ = std::move(names); }

  // A new run: train_log.csv holds the header only.
  absl::Status StartLog();
  // A resumed run: keeps the rows of steps before `next_step` (the resumed
  // run redoes the rest, bit for bit) and appends after them.
  absl::Status ContinueLog(int64_t next_step);
  // REQUIRES: StartLog or ContinueLog succeeded.
  absl::Status AppendLogRow(const TrainLogRow& row);

  absl::Status WriteWeights(const NamedVars& params) const;
  absl::Status WriteMetrics(const RunMetrics& metrics) const;
  // step_profile.tsv: `table` (capture::StepProfile::Table).
  absl::Status WriteStepProfile(const std::string& table) const;
  // tokenizer.model: `serialized` (GenerativeTask::TokenizerModel).
  absl::Status WriteTokenizerModel(const std::string& serialized) const;
  static constexpr char kTokenizerModel[] = "tokenizer.model";

 private:
  std::string LogPath() const { return path_ + "/train_log.csv"; }
  absl::Status OpenLogForAppend();
  std::string LogHeader() const;

  std::string path_;
  FileSystem* fs_;
  std::unique_ptr<WritableFile> log_;
  std::vector<std::string> auxiliary_columns_;
  std::vector<std::string> probe_columns_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_RUN_DIRECTORY_H_
