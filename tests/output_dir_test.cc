// Output locations through the run binary: a run directory that cannot be
// made, a file in the way, a directory held by another run, and a bad
// --init_from are each a clear error (exit 1 or 2, the path named), never an
// abort, and leave nothing that looks like a run.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::HasSubstr;

const char kSpec[] =
    "name: \"tiny\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }\n"
    "task { plugin: \"sort_digits\" }\ntrain { steps: 2 }\neval { examples: 10 }\n";

class OutputDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ + "/spec.pbtxt") << kSpec;
    std::ofstream(dir_ + "/plain_file") << "not a directory\n";
  }
  RunResult Run(const std::string& args) { return RunBinary(dir_ + "/spec.pbtxt " + args); }
  std::string dir_;
};

TEST_F(OutputDir, NamingARegularFileIsAnError) {
  RunResult r = Run("--output_dir " + dir_ + "/plain_file");
  EXPECT_THAT(r.exit_code, AnyOf(1, 2)) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: cannot create the run directory: cannot create directory '" + dir_ +
                                  "/plain_file': '" + dir_ + "/plain_file' exists and is not a directory"));
  EXPECT_EQ(ReadFile(dir_ + "/plain_file"), "not a directory\n");
}

TEST_F(OutputDir, BelowARegularFileIsAnError) {
  RunResult r = Run("--output_dir " + dir_ + "/plain_file/run/a");
  EXPECT_THAT(r.exit_code, AnyOf(1, 2)) << r.output;
  EXPECT_THAT(r.output, HasSubstr("'" + dir_ + "/plain_file' exists and is not a directory"));
}

// Tests run as root, so permissions do not stop writes; /proc does.
TEST_F(OutputDir, UncreatableLocationIsAnError) {
  RunResult r = Run("--output_dir /proc/tvlab_no_such_dir/run");
  EXPECT_THAT(r.exit_code, AnyOf(1, 2)) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: cannot create the run directory: "));
  EXPECT_THAT(r.output, HasSubstr("/proc/tvlab_no_such_dir"));
}

TEST_F(OutputDir, ResolvedSpecExistingAsADirectoryIsAnError) {
  const std::string out = dir_ + "/out";
  fs::create_directories(out + "/spec.resolved.pbtxt/inside");
  RunResult r = Run("--output_dir " + out);
  EXPECT_THAT(r.exit_code, AnyOf(1, 2)) << r.output;
  EXPECT_THAT(r.output, HasSubstr("'" + out + "/spec.resolved.pbtxt"));
  EXPECT_THAT(r.output, HasSubstr("Is a directory"));
  EXPECT_FALSE(fs::exists(out + "/metrics.json"));
}

// A second run into a directory that a run holds is refused with the
// holder's pid, and changes nothing there.
TEST_F(OutputDir, LockedRunDirectoryIsRefusedNamingThePid) {
  const std::string out = dir_ + "/held";
  fs::create_directories(out);
  std::ofstream(out + "/train_log.csv") << "the first run's rows\n";
  int fd = open((out + "/.run.lock").c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
  const std::string pid = std::to_string(getpid());
  ASSERT_EQ(write(fd, pid.data(), pid.size()), static_cast<ssize_t>(pid.size()));

  RunResult r = Run("--output_dir " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("another run is writing into " + out + " (" + out +
                                  "/.run.lock is held by process " + pid + ")"));
  EXPECT_EQ(ReadFile(out + "/train_log.csv"), "the first run's rows\n");
  EXPECT_FALSE(fs::exists(out + "/spec.resolved.pbtxt"));

  close(fd);  // released: the same command now trains
  RunResult again = Run("--output_dir " + out);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_TRUE(fs::exists(out + "/metrics.json"));
}

// Bad --init_from weights are refused before the run directory is made.
TEST_F(OutputDir, BadInitFromLeavesNoRunDirectory) {
  for (const std::string& weights : {dir_ + "/missing.safetensors", dir_ + "/plain_file"}) {
    const std::string out = dir_ + "/never";
    RunResult r = Run("--init_from " + weights + " --output_dir " + out);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr(weights));
    EXPECT_FALSE(fs::exists(out)) << weights;
  }
}

}  // namespace
}  // namespace tvlab
