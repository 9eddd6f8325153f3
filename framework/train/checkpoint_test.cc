// Checkpoints round-trip exactly, and every way a checkpoint can disagree
// with the model is an error that names the tensor or the file.

#include "framework/train/checkpoint.h"

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "framework/io/testing/fault_injection_file_system.h"
#include "framework/train/safetensors.h"
#include "framework/train/test_optimizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

NamedVars Params(float base) {
  NamedVars p;
  p.emplace_back("a.weight", Var(Tensor::FromVector({2, 3}, {base, 1, 2, 3, 4, 5}), true));
  p.emplace_back("a.bias", Var(Tensor::FromVector({3}, {base, -1, -2}), true));
  return p;
}

std::string Dir(const std::string& name) {
  std::string d = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

TEST(Checkpoint, RoundTripsWeightsMomentsAndState) {
  std::string run = Dir("rt");
  NamedVars p = Params(7);
  auto opt = MakeAdamW(p);
  for (auto& [n, v] : p) v.mutable_grad() = Tensor::Full(v.shape(), 0.5f);
  opt->Step(0.1f);
  TrainState state;
  state.set_next_step(5);
  state.set_last_loss(1.25);
  ASSERT_TRUE(SaveCheckpoint(run, state, p, *opt, "name: \"x\"\n").ok());
  auto dir = LatestCheckpoint(run);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, run + "/checkpoints/step_0000005");
  EXPECT_TRUE(std::filesystem::exists(*dir + "/spec.resolved.pbtxt"));
  EXPECT_FALSE(std::filesystem::exists(run + "/checkpoints/.step_0000005.partial"));

  NamedVars q = Params(0);
  auto opt2 = MakeAdamW(q);
  auto loaded = LoadCheckpoint(*dir, q, opt2.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->next_step(), 5);
  EXPECT_EQ(loaded->last_loss(), 1.25);
  EXPECT_EQ(opt2->steps_taken(), 5);
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_EQ(p[i].second.value().ToVector(), q[i].second.value().ToVector());
  auto m1 = opt->StateTensors(), m2 = opt2->StateTensors();
  for (size_t i = 0; i < m1.size(); ++i)
    EXPECT_EQ(m1[i].second.value().ToVector(), m2[i].second.value().ToVector()) << m1[i].first;
}

TEST(Checkpoint, NoCheckpointAndDanglingLatestAreClearErrors) {
  std::string run = Dir("none");
  EXPECT_THAT(Msg(LatestCheckpoint(run).status()), HasSubstr("has no checkpoint"));
  std::filesystem::create_directories(run + "/checkpoints/.step_0000003.partial");
  std::ofstream(run + "/checkpoints/latest") << "step_0000003\n";  // never completed
  EXPECT_THAT(Msg(LatestCheckpoint(run).status()), HasSubstr("names 'step_0000003', which does not exist"));
}

TEST(Safetensors, MismatchesNameTheTensor) {
  std::string d = Dir("mm");
  ASSERT_TRUE(WriteSafetensors(d + "/w.safetensors", Params(1)).ok());
  NamedVars missing = Params(1);
  missing.emplace_back("b.weight", Var(Tensor::Zeros({1}), true));
  EXPECT_THAT(Msg(LoadWeights(d + "/w.safetensors", missing)), HasSubstr("has no tensor 'b.weight'"));
  NamedVars shaped;
  shaped.emplace_back("a.weight", Var(Tensor::Zeros({3, 2}), true));
  shaped.emplace_back("a.bias", Var(Tensor::Zeros({3}), true));
  EXPECT_THAT(Msg(LoadWeights(d + "/w.safetensors", shaped)),
              HasSubstr("tensor 'a.weight' has shape (2, 3) but the model expects (3, 2)"));
  NamedVars fewer = {Params(1)[0]};
  EXPECT_THAT(Msg(LoadWeights(d + "/w.safetensors", fewer)),
              HasSubstr("has tensor 'a.bias' that the model does not"));
}

TEST(Safetensors, TruncatedAndForeignFilesAreRejected) {
  std::string d = Dir("bad");
  ASSERT_TRUE(WriteSafetensors(d + "/w.safetensors", Params(1)).ok());
  auto size = std::filesystem::file_size(d + "/w.safetensors");
  std::filesystem::resize_file(d + "/w.safetensors", size - 4);
  EXPECT_THAT(Msg(ReadSafetensors(d + "/w.safetensors").status()), HasSubstr("truncated"));
  std::ofstream(d + "/tiny.safetensors") << "abc";
  EXPECT_THAT(Msg(ReadSafetensors(d + "/tiny.safetensors").status()), HasSubstr("only 3 bytes"));
  // An F16 tensor, as another tool might write.
  std::string header = R"({"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})";
  std::ofstream out(d + "/f16.safetensors", std::ios::binary);
  uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << "abcd";
  out.close();
  EXPECT_THAT(Msg(ReadSafetensors(d + "/f16.safetensors").status()),
              HasSubstr("tensor 'x' has dtype F16; tvlab reads F32"));
  EXPECT_THAT(Msg(ReadSafetensors(d + "/missing.safetensors").status()), HasSubstr("cannot read"));
}

}  // namespace
}  // namespace tvlab

namespace tvlab {
namespace {

// A failing write at any point of a checkpoint (a full disk, EIO, on any of
// its files, on the rename into place or on `latest`) leaves the previous
// checkpoint the latest one, and loadable.
TEST(Checkpoint, FailedWriteKeepsThePreviousCheckpoint) {
  struct Case {
    FaultOp op;
    const char* path;
  };
  for (const Case& c : {Case{FaultOp::kAppend, "model.safetensors"}, Case{FaultOp::kAppend, "optimizer"},
                        Case{FaultOp::kSync, "state.json"}, Case{FaultOp::kClose, "spec.resolved"},
                        Case{FaultOp::kRename, "step_0000009"}, Case{FaultOp::kRename, "latest"}}) {
    std::string run = Dir("faults");
    NamedVars p = Params(3);
    auto opt = MakeAdamW(p);
    TrainState state;
    state.set_next_step(4);
    ASSERT_TRUE(SaveCheckpoint(run, state, p, *opt, "name: \"x\"\n").ok());
    state.set_next_step(9);
    FaultInjectionFileSystem faulty(DefaultFileSystem(), {c.op, c.path, 1, ENOSPC});
    absl::Status s = SaveCheckpoint(run, state, Params(100), *opt, "name: \"x\"\n", &faulty);
    EXPECT_TRUE(faulty.fired()) << c.path;
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << c.path << ": " << s;
    auto latest = LatestCheckpoint(run);
    ASSERT_TRUE(latest.ok()) << latest.status();
    EXPECT_EQ(*latest, run + "/checkpoints/step_0000004") << c.path;
    NamedVars q = Params(0);
    auto opt2 = MakeAdamW(q);
    auto loaded = LoadCheckpoint(*latest, q, opt2.get());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(q[0].second.value().ToVector()[0], 3) << c.path;
  }
}

}  // namespace
}  // namespace tvlab
