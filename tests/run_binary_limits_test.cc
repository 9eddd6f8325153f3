// Through the run binary: huge sizes and malformed weight files end in a
// clear message and exit code 1 or 2, never a signal, and no run directory
// is left behind for a rejected spec.

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

std::string Spec() {
  std::string path = TempDir() + "/tiny.pbtxt";
  std::ofstream(path) << "name: \"tiny\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }\n"
                         "task { plugin: \"sort_digits\" }\ntrain { steps: 2 }\neval { examples: 10 }\n";
  return path;
}

TEST(RunBinaryLimits, HugeSizesAreRejectedBeforeAnythingIsAllocated) {
  const std::string out = TempDir() + "/never";
  RunResult r = RunBinary(Spec() + " --set model.d_model=1000000000 --output_dir " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("model.d_model (1000000000) is above 1048576"), std::string::npos) << r.output;
  r = RunBinary(Spec() + " --set runtime.threads=100000 --output_dir " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("runtime.threads (100000) is above"), std::string::npos) << r.output;
  r = RunBinary(Spec() + " --set model.d_model=65536 --set model.num_layers=1000 --output_dir " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("of memory to train"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(RunBinaryLimits, MalformedWeightsAreAClearErrorNotASignal) {
  // Shape [-2, -2] over 16 bytes: the product matches, the dimensions do not.
  const std::string bad = TempDir() + "/neg.safetensors";
  {
    const std::string header =
        "{\"embedding.weight\":{\"dtype\":\"F32\",\"shape\":[-2,-2],\"data_offsets\":[0,16]}}";
    std::ofstream f(bad, std::ios::binary);
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>(n >> (8 * i)));
    f << header << std::string(16, '\0');
  }
  for (const std::string& flags : {std::string(" --init_from ") + bad,
                                   std::string(" --eval_only --init_from ") + bad}) {
    RunResult r = RunBinary(Spec() + flags + " --output_dir " + TempDir() + "/neg_run");
    EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 2) << r.exit_code << ": " << r.output;
    EXPECT_NE(r.output.find("neg.safetensors: not a valid safetensors file: tensor 'embedding.weight' "
                            "has dimension -2"),
              std::string::npos)
        << r.output;
  }
  RunResult r = RunBinary(Spec() + " --init_from /dev/zero --output_dir " + TempDir() + "/zero_run");
  EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 2) << r.exit_code << ": " << r.output;
  EXPECT_NE(r.output.find("'/dev/zero' is not a regular file"), std::string::npos) << r.output;
  // As the spec itself: also refused, not read without end.
  r = RunBinary("/dev/zero");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("spec file '/dev/zero' is not a regular text file"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tvlab
