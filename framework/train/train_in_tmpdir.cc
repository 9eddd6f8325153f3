#include "framework/train/train_in_tmpdir.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "framework/data/load_task.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/run_experiment.h"
#include "gtest/gtest.h"

namespace tvlab {

std::string TrainInTmpDir(const std::string& name, const std::string& spec_text) {
  const char* tmp = std::getenv("TEST_TMPDIR");  // set by bazel test
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  const std::string path = dir + "/" + name + ".pbtxt", run_dir = dir + "/" + name;
  std::ofstream(path) << spec_text;
  auto spec = LoadExperiment(path, {});
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return run_dir;
  auto task = LoadTask(*spec);
  EXPECT_TRUE(task.ok()) << task.status();
  if (!task.ok()) return run_dir;
  std::ostringstream progress;
  auto run = RunExperiment(*spec, **task, run_dir, progress);
  EXPECT_TRUE(run.ok()) << run.status();
  return run_dir;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tvlab
