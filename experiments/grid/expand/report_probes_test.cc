// report_probes (grid.proto) checked when the grid is expanded: empty and
// repeated entries, and a selection in a grid where no cell records probes,
// are errors naming the field and the fix; probe_every set by an axis counts.

#include "experiments/grid/expand/report_probes.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<ExpandedGrid> Expand(const std::string& grid_text) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/report_probes";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/base.pbtxt") << R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "sort_digits" } train { steps: 3 })pb";
  std::ofstream(dir + "/g.pbtxt") << "base_spec: \"base.pbtxt\"\noutput_dir: \"out\"\n" << grid_text;
  auto spec = ParseGridFile(dir + "/g.pbtxt");
  if (!spec.ok()) return spec.status();
  return ExpandGrid(*spec, dir + "/g.pbtxt", dir);
}

TEST(ReportProbes, AcceptedWhenSomeCellRecordsProbes) {
  auto grid = Expand("set: \"train.probe_every=5\"\nreport_probes: [\"grad_norm/\", \"logits/max\"]\n");
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ(grid->spec.report_probes_size(), 2);
  // Set by an axis in one cell only: that cell records them.
  auto axis = Expand("axis { field: \"train.probe_every\" values: [\"0\", \"2\"] }\nreport_probes: \"logits/\"\n");
  EXPECT_TRUE(axis.ok()) << axis.status();
  // No selection: nothing to check, probes or not.
  EXPECT_TRUE(Expand("").ok());
}

TEST(ReportProbes, EmptyOrRepeatedEntriesAreErrors) {
  auto empty = Expand("set: \"train.probe_every=5\"\nreport_probes: [\"grad_norm/\", \"\"]\n");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(std::string(empty.status().message()),
              HasSubstr("report_probes[1] is empty; give a probe name or the start of one, such as \"grad_norm/\""));
  auto twice = Expand("set: \"train.probe_every=5\"\nreport_probes: [\"logits/\", \"grad_norm/\", \"logits/\"]\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(std::string(twice.status().message()),
              HasSubstr("report_probes[2] \"logits/\" is listed twice; list each prefix once"));
}

TEST(ReportProbes, NoCellRecordingProbesIsAnError) {
  auto off = Expand("report_probes: \"grad_norm/\"\n");
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(off.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(off.status().message()),
              HasSubstr("report_probes: no cell records probes (train.probe_every is 0 in every valid cell); "
                        "set it, e.g. set: \"train.probe_every=50\", or drop report_probes"));
}

}  // namespace
}  // namespace tvlab
