// The gradient norm is computed only on steps that clip or write a log row
// (train_loop.cc); a run that logs every 5 steps, evaluates every 4 and
// does not clip must still log, on each of its rows (log_every's, the
// evaluations', the last), the norm a run logging every step logs there,
// to the printed digit, and train the same losses.

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "framework/train/train_in_tmpdir.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// Trains a tiny sort model for 12 steps with `train_extra` inside train { };
// returns train_log.csv's rows by step: "loss,lr,grad_norm".
std::map<int, std::string> TrainAndLog(const std::string& name, const std::string& train_extra) {
  const std::string run_dir = TrainInTmpDir(name, R"(name: "grad_norm"
seed: 3
model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 dropout: 0.1 }
task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 6 vocab_size: 10 } } }
train { steps: 12 batch_size: 8 optimizer { adamw { lr: 1e-2 } } )" + train_extra + R"( }
eval { examples: 20 seed: 42 }
runtime { backend: "reference" threads: 1 }
)");
  std::istringstream log(ReadWholeFile(run_dir + "/train_log.csv"));
  std::string line;
  std::getline(log, line);  // header: step,loss,lr,grad_norm,...
  std::map<int, std::string> rows;
  while (std::getline(log, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    if (f.size() >= 4) rows[std::stoi(f[0])] = f[1] + "," + f[2] + "," + f[3];
  }
  return rows;
}

TEST(GradNormLogging, SkippedStepsChangeNoLoggedNorm) {
  const std::map<int, std::string> every = TrainAndLog("every", "log_every: 1");
  const std::map<int, std::string> sparse = TrainAndLog("sparse", "log_every: 5 eval_every: 4");
  ASSERT_EQ(every.size(), 12u);
  std::vector<int> steps;
  for (const auto& [step, row] : sparse) {
    steps.push_back(step);
    ASSERT_TRUE(every.count(step)) << step;
    EXPECT_EQ(row, every.at(step)) << "step " << step << ": loss,lr,grad_norm";
    EXPECT_NE(row.substr(row.rfind(',') + 1), "0.000000") << "step " << step << "'s norm was not computed";
  }
  EXPECT_EQ(steps, (std::vector<int>{0, 3, 5, 7, 10, 11}));  // log_every, eval_every (steps 4, 8 end), last
}

}  // namespace
}  // namespace tvlab
