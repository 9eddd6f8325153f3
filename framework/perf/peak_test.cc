// The peak cache (one measurement per machine, remeasured for another CPU
// model or ISA and for a file that does not parse, raised by a higher
// measurement and never lowered), the environment's
// override, the GPU table, and MFU = achieved / peak. No timing: the
// measurement is a counted stand-in.

#include "framework/perf/peak.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

class PeakCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(getenv("TEST_TMPDIR")) + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
  }
  CachedFmaPeak Get(const std::string& model, const std::string& isa, double rate) {
    return ReadOrMeasureFmaPeak(dir_, model, isa, [&] {
      ++measurements_;
      return FmaPeak{rate, isa};
    });
  }
  void Write(const std::string& text) {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/fma_peak.txt") << text;
  }
  std::string dir_;
  int measurements_ = 0;
};

TEST_F(PeakCache, MeasuresOnceThenReadsTheCache) {
  CachedFmaPeak first = Get("CPU A", "avx512f", 1.25e11);
  EXPECT_TRUE(first.measured);
  EXPECT_TRUE(first.note.empty()) << first.note;
  CachedFmaPeak second = Get("CPU A", "avx512f", 9e9);  // would measure 9e9
  EXPECT_FALSE(second.measured);
  EXPECT_EQ(measurements_, 1);
  EXPECT_DOUBLE_EQ(second.peak.flops_per_second, 1.25e11);
  EXPECT_EQ(second.peak.isa, "avx512f");
}

TEST_F(PeakCache, AnotherCpuModelOrIsaIsMeasuredAgain) {
  Get("CPU A", "avx512f", 1.25e11);
  CachedFmaPeak other_model = Get("CPU B", "avx512f", 7e10);
  EXPECT_TRUE(other_model.measured);
  EXPECT_DOUBLE_EQ(other_model.peak.flops_per_second, 7e10);
  EXPECT_NE(other_model.note.find("is for 'CPU A'"), std::string::npos) << other_model.note;
  CachedFmaPeak other_isa = Get("CPU B", "avx2+fma", 3e10);
  EXPECT_TRUE(other_isa.measured);
  EXPECT_EQ(measurements_, 3);
  // The rewritten file serves the machine it now describes.
  EXPECT_FALSE(Get("CPU B", "avx2+fma", 1).measured);
}

TEST_F(PeakCache, AFileThatDoesNotParseIsMeasuredAgainAndSaid) {
  for (const std::string& bad : {std::string("garbage"), std::string("cpu_model: CPU A\nisa: avx512f\n"),
                                 std::string("cpu_model: CPU A\nisa: avx512f\nflops_per_second: -3\n")}) {
    Write(bad);
    CachedFmaPeak got = Get("CPU A", "avx512f", 1e11);
    EXPECT_TRUE(got.measured) << bad;
    EXPECT_NE(got.note.find("does not parse"), std::string::npos) << got.note;
    EXPECT_FALSE(Get("CPU A", "avx512f", 1).measured) << "rewritten whole";
  }
}

TEST_F(PeakCache, AnUnwritableDirectoryStillGivesThePeakAndSaysSo) {
  Write("");
  std::ofstream(dir_ + "/file") << "x";
  const std::string inside_a_file = dir_ + "/file/sub";
  CachedFmaPeak got = ReadOrMeasureFmaPeak(inside_a_file, "CPU A", "avx512f", [] { return FmaPeak{1e11, "avx512f"}; });
  EXPECT_DOUBLE_EQ(got.peak.flops_per_second, 1e11);
  EXPECT_NE(got.note.find("could not cache"), std::string::npos) << got.note;
}

TEST_F(PeakCache, ALaterMeasurementRaisesTheCacheButNeverLowersIt) {
  Get("CPU A", "avx512f", 1.25e11);
  CachedFmaPeak lower = RecordFmaPeak(dir_, "CPU A", FmaPeak{9e10, "avx512f"});  // a neighbour slowed it
  EXPECT_FALSE(lower.measured);
  EXPECT_DOUBLE_EQ(lower.peak.flops_per_second, 1.25e11);
  CachedFmaPeak higher = RecordFmaPeak(dir_, "CPU A", FmaPeak{2.1e11, "avx512f"});
  EXPECT_TRUE(higher.measured);
  EXPECT_DOUBLE_EQ(higher.peak.flops_per_second, 2.1e11);
  // What a run reads next is the best.
  EXPECT_DOUBLE_EQ(Get("CPU A", "avx512f", 1).peak.flops_per_second, 2.1e11);
  EXPECT_EQ(measurements_, 1);
}

TEST_F(PeakCache, ARecordForAnotherMachineOrABadFileReplacesItAndSaysSo) {
  Get("CPU A", "avx512f", 2e11);
  CachedFmaPeak other = RecordFmaPeak(dir_, "CPU B", FmaPeak{5e10, "avx2+fma"});
  EXPECT_TRUE(other.measured);
  EXPECT_DOUBLE_EQ(other.peak.flops_per_second, 5e10);
  EXPECT_NE(other.note.find("is for 'CPU A'"), std::string::npos) << other.note;
  Write("flops_per_second: fast\n");
  CachedFmaPeak repaired = RecordFmaPeak(dir_, "CPU B", FmaPeak{4e10, "avx2+fma"});
  EXPECT_TRUE(repaired.measured);
  EXPECT_NE(repaired.note.find("does not parse"), std::string::npos) << repaired.note;
  EXPECT_DOUBLE_EQ(Get("CPU B", "avx2+fma", 1).peak.flops_per_second, 4e10);
  // No FMA ISA: nothing to keep.
  std::filesystem::remove_all(dir_);
  EXPECT_DOUBLE_EQ(RecordFmaPeak(dir_, "CPU C", FmaPeak{0, ""}).peak.flops_per_second, 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/fma_peak.txt"));
}

TEST(HostPeak, TheEnvironmentOverridesOrSkipsIt) {
  setenv("TVLAB_PEAK_FLOPS", "1.5e11", 1);
  auto two = HostPeak(2);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_DOUBLE_EQ(two->flops_per_second, 3e11);  // per core x threads
  EXPECT_EQ(two->source, "TVLAB_PEAK_FLOPS");
  EXPECT_FALSE(two->device.empty());
  setenv("TVLAB_PEAK_FLOPS", "off", 1);
  auto off = HostPeak(1);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->flops_per_second, 0);
  EXPECT_FALSE(off->unknown_why.empty());
  setenv("TVLAB_PEAK_FLOPS", "fast", 1);
  auto bad = HostPeak(1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("TVLAB_PEAK_FLOPS='fast'"), std::string::npos);
  unsetenv("TVLAB_PEAK_FLOPS");
}

// A bf16 run's peak: on a CPU with AVX512_BF16 the measured bf16
// dot-product peak, cached in its own file beside the FMA peak's (no rate
// is compared: timings belong in benchmarks); elsewhere the FMA peak.
TEST(HostPeak, Bf16RunsAreMeasuredAgainstTheBf16DotProductPeakWhereTheCpuHasOne) {
  const std::string dir = ::testing::TempDir() + "/bf16_peak";
  std::filesystem::remove_all(dir);
  setenv("TVLAB_CACHE_DIR", dir.c_str(), 1);
  auto fp32 = HostPeak(1, "fp32");
  auto bf16 = HostPeak(1, "bf16");
  unsetenv("TVLAB_CACHE_DIR");
  ASSERT_TRUE(fp32.ok() && bf16.ok());
  if (FmaIsa().empty()) GTEST_SKIP() << "no FMA ISA: no peak to compare";
  EXPECT_TRUE(std::filesystem::exists(dir + "/fma_peak.txt") ||
              std::filesystem::exists(dir + "/fma_peak.avx2+fma.txt"));
  if (Bf16DotIsa().empty()) {
    EXPECT_EQ(bf16->basis, fp32->basis);
    EXPECT_FALSE(std::filesystem::exists(dir + "/bf16_dot_peak.txt"));
    GTEST_SKIP() << "no AVX512_BF16: a bf16 run's peak is the FMA peak (checked)";
  }
  EXPECT_EQ(bf16->basis, "bf16 dot products avx512bf16 x 1 thread(s)");
  std::ifstream cached(dir + "/bf16_dot_peak.txt");
  std::stringstream text;
  text << cached.rdbuf();
  EXPECT_NE(text.str().find("isa: avx512bf16"), std::string::npos) << text.str();
  EXPECT_GT(bf16->flops_per_second, 0);
  EXPECT_NE(bf16->source.find("bf16_dot_peak.txt"), std::string::npos) << bf16->source;
}

TEST(GpuPeak, TheTableKnowsSomeDevicesAndSaysWhenItDoesNot) {
  EXPECT_DOUBLE_EQ(GpuPeak("NVIDIA H200", "bf16").flops_per_second, 989.4e12);
  EXPECT_DOUBLE_EQ(GpuPeak("NVIDIA H100 PCIe", "fp32").flops_per_second, 51.2e12);
  EXPECT_DOUBLE_EQ(GpuPeak("NVIDIA H100 80GB HBM3", "tf32").flops_per_second, 494.7e12);
  EXPECT_DOUBLE_EQ(GpuPeak("NVIDIA A100-SXM4-80GB", "fp32").flops_per_second, 19.5e12);
  const DevicePeak unknown = GpuPeak("Tesla T4", "fp32");
  EXPECT_EQ(unknown.flops_per_second, 0);
  EXPECT_NE(unknown.unknown_why.find("unknown peak"), std::string::npos);
  EXPECT_EQ(GpuPeak("NVIDIA H200", "fp8").flops_per_second, 0);
}

TEST(ModelFlopsUtilisation, IsAchievedOverPeak) {
  DevicePeak peak;
  peak.flops_per_second = 2e11;
  EXPECT_DOUBLE_EQ(ModelFlopsUtilisation(5e10, peak), 0.25);
  peak.flops_per_second = 0;  // unknown
  EXPECT_EQ(ModelFlopsUtilisation(5e10, peak), 0);
}

}  // namespace
}  // namespace tvlab
