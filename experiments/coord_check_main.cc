// bazel run //experiments:coord_check -- --output_dir DIR [--widths 64,128,256,512,1024]
//     [--steps 4] [--seeds 3] [--spec FILE] [--set field=value ...]
//
// The µP coordinate check (experiments/mup_coord/coord_check.h) as a
// tool: trains the spec (default experiments/mup_coord/coord_check_base.pbtxt)
// a few steps at each width under the standard parametrisation
// (model.init "default") and under µP (model.init "mup", base_width = the
// first width), and writes DIR/coord_check.csv (one row per
// parametrisation, width and activation) and DIR/coord_check.svg (the
// plot). Prints, per activation, the RMS at the largest width over the RMS
// at the smallest: flat (near 1) under µP, growing under SP. docs/init.md
// shows a run. Exit codes: 0 ok, 1 a run failed, 2 bad input.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "experiments/cli/command_line.h"
#include "experiments/mup_coord/coord_check.h"
#include "framework/spec/spec_loader.h"

ABSL_FLAG(std::string, output_dir, "", "DIR: where coord_check.csv and coord_check.svg go (required)");
ABSL_FLAG(std::string, widths, "64,128,256,512,1024", "model.d_model values, ascending; µP's base is the first");
ABSL_FLAG(int64_t, steps, 4, "AdamW steps before the activations are measured");
ABSL_FLAG(int64_t, seeds, 3, "each RMS is the mean over seeds 0 .. seeds - 1");
ABSL_FLAG(std::string, spec, "experiments/mup_coord/coord_check_base.pbtxt", "FILE: the model and data");
ABSL_FLAG(std::vector<std::string>, set, {},
          "field=value: overrides the spec (repeatable), e.g. --set train.optimizer.options.lr=0.03");

namespace {

constexpr char kUsage[] =
    "usage: bazel run //experiments:coord_check -- --output_dir DIR [--widths 64,128,256,512,1024] [--steps 4] "
    "[--seeds 3] [--spec FILE] [--set field=value ...]\n";

absl::StatusOr<std::vector<int64_t>> ParseWidths(const std::string& text) {
  std::vector<int64_t> widths;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t w = 0;
    if (!absl::SimpleAtoi(part, &w) || w <= 0 || (!widths.empty() && w <= widths.back()))
      return absl::InvalidArgumentError(absl::StrCat("--widths must be ascending positive integers (got '", text,
                                                     "'), e.g. 64,128,256,512,1024"));
    widths.push_back(w);
  }
  return widths;
}

}  // namespace

int main(int argc, char** argv) {
  tvlab::CommandLine line;
  if (auto exit = tvlab::ParseFlagsOnlyOrExit(argc, argv, kUsage, &line)) return *exit;
  // Every --set given (absl keeps the last occurrence of a flag only).
  const std::vector<std::string> overrides = line.Has("set") ? line.values.at("set") : std::vector<std::string>{};
  const std::string dir = tvlab::UserPath(absl::GetFlag(FLAGS_output_dir));
  auto widths = ParseWidths(absl::GetFlag(FLAGS_widths));
  if (dir.empty() || !widths.ok() || absl::GetFlag(FLAGS_steps) < 0) {
    tvlab::PrintUsageError(std::cerr, !widths.ok() ? widths.status()
                                      : absl::InvalidArgumentError("--output_dir is required and --steps >= 0"),
                           kUsage);
    return 2;
  }
  const std::string spec_path = absl::GetFlag(FLAGS_spec) == "experiments/mup_coord/coord_check_base.pbtxt"
                                    ? absl::GetFlag(FLAGS_spec)
                                    : tvlab::UserPath(absl::GetFlag(FLAGS_spec));
  auto base = tvlab::ParseSpecFile(spec_path);
  if (!base.ok()) {
    std::cerr << "error: " << base.status().message() << "\n";
    return 2;
  }
  const int64_t steps = absl::GetFlag(FLAGS_steps);
  std::vector<tvlab::CoordPoint> points;
  for (const char* init : {"default", "mup"}) {
    auto got = tvlab::RunCoordCheck(*base, init, *widths, steps, absl::GetFlag(FLAGS_seeds), overrides);
    if (!got.ok()) {
      std::cerr << "error: " << got.status().message() << "\n";
      return 1;
    }
    points.insert(points.end(), got->begin(), got->end());
  }
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/coord_check.csv") << tvlab::CoordCheckCsv(points);
  std::ofstream(dir + "/coord_check.svg") << tvlab::CoordCheckSvg(points, steps);
  std::cout << absl::StrFormat("RMS at width %d / RMS at width %d after %d steps\n", widths->back(),
                               widths->front(), steps);
  std::cout << absl::StrFormat("%-22s %10s %10s\n", "activation", "default", "mup");
  for (const tvlab::CoordPoint& p : points) {
    if (p.parametrisation != "default" || p.width != widths->front()) continue;
    auto ratio = [&](const char* init) {
      return tvlab::RmsAt(points, init, widths->back(), p.activation) /
             tvlab::RmsAt(points, init, widths->front(), p.activation);
    };
    std::cout << absl::StrFormat("%-22s %10.3f %10.3f\n", p.activation, ratio("default"), ratio("mup"));
  }
  std::cout << "wrote " << dir << "/coord_check.csv and coord_check.svg\n";
  return 0;
}
