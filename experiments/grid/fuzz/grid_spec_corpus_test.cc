// Replays the grid spec fuzzer's seed corpus with the normal toolchain on
// every test run (tools/fuzz.sh builds the libFuzzer binary with clang), and
// checks what the seeds stand for: the valid ones expand, the broken ones are
// refused by the check they were written for.

#include <string>

#include "experiments/grid/expand/grid_axes.h"
#include "experiments/grid/expand/ladder_rungs.h"
#include "experiments/grid/expand/report_probes.h"
#include "framework/testing/fuzz_corpus.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tvlab {
namespace {

const std::string kCorpus = "experiments/grid/fuzz/corpus";

TEST(GridSpecCorpus, EverySeedRunsThroughTheFuzzTarget) {
  const int n = ReplayFuzzCorpus(kCorpus, LLVMFuzzerTestOneInput);
  EXPECT_GE(n, 8);
}

absl::Status Expand(const std::string& seed, ExpandedGrid* grid) {
  GridSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(ReadCorpusFile(kCorpus + "/" + seed), &spec)) << seed;
  absl::Status size = CheckGridSize(spec);
  return size.ok() ? AxisCells(spec, grid) : size;
}

TEST(GridSpecCorpus, SeedsMeanWhatTheyAreNamedFor) {
  ExpandedGrid two_axes, zip, other;
  ASSERT_TRUE(Expand("two_axes", &two_axes).ok());
  EXPECT_EQ(two_axes.cells.size(), 4u);
  EXPECT_EQ(two_axes.baseline, 0);
  ASSERT_TRUE(Expand("zip", &zip).ok());
  EXPECT_EQ(zip.cells.size(), 2u);
  EXPECT_EQ(zip.baseline, 1);
  EXPECT_NE(std::string(Expand("same_label", &other).message()).find("the same label 'a'"), std::string::npos);
  EXPECT_NE(std::string(Expand("duplicate_value", &other).message()).find("listed twice"), std::string::npos);
  EXPECT_NE(std::string(Expand("max_runs", &other).message()).find("more than max_runs 2"), std::string::npos);
  EXPECT_NE(std::string(Expand("empty_zip", &other).message()).find("has no axis"), std::string::npos);
}

TEST(GridSpecCorpus, LadderSeeds) {
  GridSpec dial, shrink;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(ReadCorpusFile(kCorpus + "/ladder_dial"), &dial));
  ASSERT_TRUE(CheckLadder(dial.ladder()).ok());
  EXPECT_EQ(LadderRungCount(dial.ladder()), 3);
  ExpandedGrid grid;
  ASSERT_TRUE(Expand("ladder_dial", &grid).ok());
  EXPECT_EQ(grid.cells.size(), 2u);  // the variants; the ladder crosses them in ExpandGrid
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(ReadCorpusFile(kCorpus + "/ladder_rungs_shrink"), &shrink));
  EXPECT_NE(std::string(CheckLadder(shrink.ladder()).message()).find("rungs must be increasing"), std::string::npos);
}

TEST(GridSpecCorpus, ReportProbesSeed) {
  ExpandedGrid grid;
  ASSERT_TRUE(Expand("report_probes", &grid).ok());
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(ReadCorpusFile(kCorpus + "/report_probes"), &grid.spec));
  EXPECT_NE(std::string(CheckReportProbes(grid).message()).find("report_probes[1] is empty"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
