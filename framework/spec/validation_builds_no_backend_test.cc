// Validating a spec asks the backends' static descriptors (kernels,
// precisions, device) and constructs no backend: no oneDNN engine, no cuBLAS
// handle. Counted through the real loader (LoadExperiment: parse, --set,
// defaults, every subsystem's validation, the memory estimate) on every
// shipped config, and on every registered backend in every precision
// (accepted or refused).

#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/shipped_configs.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(Validation, EveryShippedConfigValidatesWithoutConstructingABackend) {
  const std::vector<std::string> configs = ShippedConfigs();
  ASSERT_GT(configs.size(), 10u) << ShippedConfigDir();
  for (const std::string& path : configs) {
    const int64_t before = BackendsConstructed();
    auto spec = LoadExperiment(path, {});
    EXPECT_TRUE(spec.ok()) << path << ": " << spec.status();
    EXPECT_EQ(BackendsConstructed(), before) << path;
  }
}

TEST(Validation, EveryBackendAndPrecisionIsJudgedWithoutConstructingABackend) {
  const std::string path = ShippedConfigDir() + "/sort_digits.pbtxt";
  int accepted = 0, refused = 0;
  for (const std::string& backend : RegisteredBackends()) {
    for (Precision precision : AllPrecisions()) {
      const int64_t before = BackendsConstructed();
      auto spec = LoadExperiment(path, {"runtime.backend=" + backend,
                                        std::string("runtime.precision=") + PrecisionName(precision)});
      (spec.ok() ? accepted : refused) += 1;
      EXPECT_EQ(BackendsConstructed(), before) << backend << " " << PrecisionName(precision);
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);  // cpu_onednn refuses tf32
}

// The count is real: making a backend is counted.
TEST(Validation, MakingABackendIsCounted) {
  const int64_t before = BackendsConstructed();
  ASSERT_TRUE(MakeBackend("reference").ok());
  EXPECT_EQ(BackendsConstructed(), before + 1);
}

}  // namespace
}  // namespace tvlab
