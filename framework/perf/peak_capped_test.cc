// The FMA peak under an instruction-set cap below the CPU's (this test's
// environment: ONEDNN_MAX_CPU_ISA=AVX2, framework/core/cpu_features.h): the
// capped ISA is the one measured, and its peak is cached in a file of its
// own, so the uncapped peak is neither read nor rewritten.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "framework/core/cpu_features.h"
#include "framework/perf/peak.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(CappedPeak, IsTheCappedIsasAndCachedApart) {
  if (!IsaCapLowersCpu()) GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA hides no instruction set of this CPU";
  EXPECT_EQ(FmaIsa(), CpuHasAvx2Fma() ? "avx2+fma" : "");
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/capped";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string uncapped = "cpu_model: CPU A\nisa: avx512f\nflops_per_second: 2.000000e+11\n";
  std::ofstream(dir + "/fma_peak.txt") << uncapped;
  int measurements = 0;
  auto get = [&](double rate) {
    return ReadOrMeasureFmaPeak(dir, "CPU A", "avx2+fma", [&] {
      ++measurements;
      return FmaPeak{rate, "avx2+fma"};
    });
  };
  const CachedFmaPeak capped = get(1e11);
  EXPECT_TRUE(capped.measured);
  EXPECT_EQ(capped.path, dir + "/fma_peak.avx2+fma.txt");
  EXPECT_TRUE(capped.note.empty()) << capped.note;  // the uncapped file was not read as a mismatch
  EXPECT_DOUBLE_EQ(get(5e10).peak.flops_per_second, 1e11);
  EXPECT_EQ(measurements, 1);
  EXPECT_EQ(ReadAll(dir + "/fma_peak.txt"), uncapped);
  EXPECT_DOUBLE_EQ(RecordFmaPeak(dir, "CPU A", FmaPeak{1.5e11, "avx2+fma"}).peak.flops_per_second, 1.5e11);
  EXPECT_EQ(ReadAll(dir + "/fma_peak.txt"), uncapped);
}

}  // namespace
}  // namespace tvlab
