#include "framework/train/tensorboard_log.h"

#include <cmath>

#include "framework/core/check.h"
#include "google/protobuf/descriptor.h"

namespace tvlab {

std::vector<std::pair<std::string, double>> RowScalars(const TrainLogRow& row) {
  std::vector<std::pair<std::string, double>> scalars = {
      {"train/loss", row.loss},
      {"train/learning_rate", row.lr},
      {"train/grad_norm", row.grad_norm},
      {"train/tokens_per_sec", row.tokens_per_sec},
  };
  if (row.has_eval) {
    scalars.push_back({"eval/loss", row.eval_loss});
    scalars.push_back({"eval/token_accuracy", row.eval_token_accuracy});
  }
  for (const AuxiliaryMean& mean : row.auxiliary)
    if (!std::isnan(mean.value)) scalars.push_back({"auxiliary/" + mean.declaration.name, mean.value});
  for (const ProbeValue& probe : row.probes) scalars.push_back({"probes/" + probe.name, probe.value});
  return scalars;
}

std::vector<std::pair<std::string, double>> FinalMetricScalars(const RunMetrics& metrics,
                                                               const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, double>> scalars;
  for (const std::string& name : names) {
    const google::protobuf::FieldDescriptor* f = metrics.GetDescriptor()->FindFieldByName(name);
    TVLAB_CHECK(f != nullptr && f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE)
        << name << " is not a double field of RunMetrics";
    scalars.push_back({"eval/" + (name == "eval_loss" ? std::string("loss") : name),
                       metrics.GetReflection()->GetDouble(metrics, f)});
  }
  return scalars;
}

absl::StatusOr<TensorBoardLog> TensorBoardLog::Open(const std::string& run_dir, FileSystem* fs) {
  absl::StatusOr<std::unique_ptr<EventFileWriter>> writer = EventFileWriter::Open(run_dir, fs);
  if (!writer.ok()) return writer.status();
  return TensorBoardLog(std::move(*writer));
}

absl::Status TensorBoardLog::WriteRow(const TrainLogRow& row) {
  return writer_->WriteScalars(row.step, RowScalars(row));
}

absl::Status TensorBoardLog::WriteFinalMetrics(int64_t step, const RunMetrics& metrics,
                                               const std::vector<std::string>& names) {
  return writer_->WriteScalars(step, FinalMetricScalars(metrics, names));
}

}  // namespace tvlab
