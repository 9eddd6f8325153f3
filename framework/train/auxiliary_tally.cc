#include "framework/train/auxiliary_tally.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

double MeanOrNan(double sum, int64_t count) { return count > 0 ? sum / count : std::nan(""); }

}  // namespace

AuxiliaryTally::AuxiliaryTally(std::vector<AuxiliaryDeclaration> declared) {
  for (AuxiliaryDeclaration& d : declared) entries_.push_back(Entry{std::move(d)});
}

AuxiliaryTally::Entry& AuxiliaryTally::Find(const std::string& name) {
  for (Entry& e : entries_)
    if (e.declaration.name == name) return e;
  TVLAB_CHECK(false) << "auxiliary output " << name << " is not among the model's declared outputs";
  return entries_.front();  // not reached
}

void AuxiliaryTally::Accumulate(const std::string& name, double value) {
  Entry& e = Find(name);
  e.interval_sum += value, e.run_sum += value;
  ++e.interval_count, ++e.run_count;
}

double AuxiliaryTally::Add(const AuxiliaryOutputs& outputs) {
  double weighted = 0;
  for (const AuxiliaryLoss& loss : outputs.losses()) {
    const double value = loss.loss.value().item();
    Accumulate(loss.name, value);
    weighted += loss.coefficient * value;
  }
  for (const AuxiliaryStatistic& s : outputs.statistics()) Accumulate(s.name, s.value.value().item());
  return weighted;
}

std::vector<AuxiliaryMean> AuxiliaryTally::TakeIntervalMeans() {
  for (Entry& e : entries_) {
    e.last_interval_mean = MeanOrNan(e.interval_sum, e.interval_count);
    e.has_last_interval = true;
    e.interval_sum = 0, e.interval_count = 0;
  }
  return LastIntervalMeans();
}

std::vector<AuxiliaryMean> AuxiliaryTally::LastIntervalMeans() const {
  std::vector<AuxiliaryMean> means;
  for (const Entry& e : entries_)
    means.push_back({e.declaration, e.has_last_interval ? e.last_interval_mean : std::nan("")});
  return means;
}

std::vector<AuxiliaryMean> AuxiliaryTally::RunMeans() const {
  std::vector<AuxiliaryMean> means;
  for (const Entry& e : entries_) means.push_back({e.declaration, MeanOrNan(e.run_sum, e.run_count)});
  return means;
}

void AuxiliaryTally::SaveTo(TrainState* state) const {
  state->clear_auxiliary_sums();
  for (const Entry& e : entries_) {
    TrainState::AuxiliarySums* sums = state->add_auxiliary_sums();
    sums->set_name(e.declaration.name);
    sums->set_interval_sum(e.interval_sum);
    sums->set_interval_count(e.interval_count);
    sums->set_run_sum(e.run_sum);
    sums->set_run_count(e.run_count);
    sums->set_has_last_interval(e.has_last_interval);
    sums->set_last_interval_mean(e.has_last_interval ? e.last_interval_mean : 0);
  }
}

absl::Status AuxiliaryTally::RestoreFrom(const TrainState& state) {
  for (const TrainState::AuxiliarySums& sums : state.auxiliary_sums()) {
    Entry* entry = nullptr;
    for (Entry& e : entries_)
      if (e.declaration.name == sums.name()) entry = &e;
    if (entry == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the checkpoint has sums of the auxiliary output ", sums.name(),
          ", which this model does not declare: it was written by a run of another spec; resume with that "
          "run's spec.resolved.pbtxt"));
    }
    entry->interval_sum = sums.interval_sum(), entry->interval_count = sums.interval_count();
    entry->run_sum = sums.run_sum(), entry->run_count = sums.run_count();
    entry->has_last_interval = sums.has_last_interval();
    entry->last_interval_mean = sums.last_interval_mean();
  }
  return absl::OkStatus();
}

}  // namespace tvlab
