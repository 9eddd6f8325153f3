// train.z_loss end to end (z_loss.h) on a tiny sort run, reference backend,
// with the training probes on at steps 0 and the last (they change nothing
// in training: probes_test):
//   - z_loss: 0 trains bit for bit like a spec without the field: the same
//     train_log.csv (losses, header: no z_loss column) and final weights;
//   - z_loss > 0 appends the `z_loss` column; at step 0 it logs the mean
//     squared log-sum-exp of the output logits that the probes compute on
//     their own (logits/lse_sq_mean; every sort target counts), while the
//     logged loss stays the task's (equal to the plain run's); metrics.json
//     lists it with its coefficient; and the penalty works: the last
//     step's lse^2 ends far below the plain run's.

#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "framework/train/train_in_tmpdir.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// Trains the tiny sort model with `train_extra` inside train { }; returns
// the run directory.
std::string Train(const std::string& name, const std::string& train_extra) {
  return TrainInTmpDir(name, R"(name: "z_loss"
seed: 1
model { family: ENCODER_ONLY d_model: 16 num_layers: 2 num_heads: 2 dropout: 0 }
task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 6 vocab_size: 10 } } }
train { steps: 30 batch_size: 16 optimizer { adamw { lr: 1e-2 } } log_every: 10 probe_every: 1000 )" +
                                train_extra + R"( }
eval { examples: 50 seed: 42 }
runtime { backend: "reference" threads: 1 }
)");
}

struct Log {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // The cell of `column` in row `r` as a number (NaN when absent or empty).
  double At(size_t r, const std::string& column) const {
    for (size_t c = 0; c < header.size(); ++c)
      if (header[c] == column && c < rows[r].size() && !rows[r][c].empty()) return std::stod(rows[r][c]);
    return std::nan("");
  }
};

Log ReadLog(const std::string& run_dir) {
  Log log;
  std::istringstream in(ReadWholeFile(run_dir + "/train_log.csv"));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    if (log.header.empty()) {
      log.header = cells;
    } else {
      log.rows.push_back(cells);
    }
  }
  return log;
}

TEST(ZLossTraining, ZeroTrainsBitForBitLikeNoField) {
  const std::string plain = Train("plain", ""), zero = Train("zero", "z_loss: 0");
  EXPECT_EQ(ReadWholeFile(plain + "/model.safetensors"), ReadWholeFile(zero + "/model.safetensors"));
  const Log a = ReadLog(plain), b = ReadLog(zero);
  EXPECT_EQ(a.header, b.header);
  for (const std::string& column : a.header) EXPECT_NE(column, "z_loss");
  ASSERT_EQ(a.rows.size(), b.rows.size());
  ASSERT_EQ(a.rows.size(), 4u);  // steps 0, 10, 20, 29
  for (size_t r = 0; r < a.rows.size(); ++r) EXPECT_EQ(a.rows[r][1], b.rows[r][1]) << "row " << r;
  EXPECT_EQ(ReadWholeFile(plain + "/metrics.json").find("\"z_loss\""), std::string::npos);
}

TEST(ZLossTraining, OnLogsTheLseSquaredMeanAndPushesItDown) {
  const std::string plain = Train("plain_for_on", ""), on = Train("on", "z_loss: 0.05");
  const Log off_log = ReadLog(plain), on_log = ReadLog(on);
  ASSERT_EQ(on_log.header.size(), off_log.header.size() + 1);
  // The one new column, before the probes'.
  size_t z_column = 0, first_probe = 0;
  for (size_t c = 0; c < on_log.header.size(); ++c) {
    if (on_log.header[c] == "z_loss") z_column = c;
    if (first_probe == 0 && on_log.header[c].find('/') != std::string::npos) first_probe = c;
  }
  ASSERT_GT(z_column, 0u);
  EXPECT_LT(z_column, first_probe);
  std::vector<std::string> without = on_log.header;
  without.erase(without.begin() + z_column);
  EXPECT_EQ(without, off_log.header);
  // Step 0: the same weights; the logged loss is the task's alone.
  EXPECT_EQ(on_log.rows[0][1], off_log.rows[0][1]);
  // Both columns are written with 6 significant digits.
  const double z0 = on_log.At(0, "z_loss"), probe0 = on_log.At(0, "logits/lse_sq_mean");
  ASSERT_FALSE(std::isnan(probe0)) << "no lse_sq_mean probe column";
  EXPECT_GT(z0, 1.0);
  EXPECT_NEAR(z0, probe0, 2e-5 * probe0);
  EXPECT_EQ(on_log.At(0, "logits/lse_sq_mean"), off_log.At(0, "logits/lse_sq_mean"));
  for (size_t r = 0; r < on_log.rows.size(); ++r) EXPECT_FALSE(std::isnan(on_log.At(r, "z_loss"))) << r;
  // The penalty works: lse^2 at the last step, with and without.
  const double last_on = on_log.At(on_log.rows.size() - 1, "logits/lse_sq_mean");
  const double last_off = off_log.At(off_log.rows.size() - 1, "logits/lse_sq_mean");
  EXPECT_LT(last_on, 0.5 * last_off) << "z_loss did not pull log Z towards 0";
  std::cout << "lse^2 at step 0: " << z0 << "; at the last step: " << last_on << " with z_loss 0.05, " << last_off
            << " without\n";
  const std::string metrics = ReadWholeFile(on + "/metrics.json");
  EXPECT_NE(metrics.find("\"name\": \"z_loss\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"coefficient\": 0.05"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace tvlab
