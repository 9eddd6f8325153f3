#include "framework/testing/census.h"

#include "framework/interfaces/plugin_kinds.h"
#include "gtest/gtest.h"

namespace tvlab {

std::vector<std::string> PluginsUnderTest(absl::string_view kind) {
  if (kind == kKindUnderTest && kPluginUnderTest[0] != '\0') return {kPluginUnderTest};
  return PluginKindById(kind).names();
}

namespace {

TEST(Census, ThePluginUnderTestIsRegisteredInItsKind) {
  if (kPluginUnderTest[0] == '\0') GTEST_SKIP() << "a suite over every linked plugin";
  const PluginKind& kind = PluginKindById(kKindUnderTest);
  std::vector<std::string> names = kind.names();
  EXPECT_NE(std::find(names.begin(), names.end(), kPluginUnderTest), names.end())
      << "'" << kPluginUnderTest << "' is not registered as a " << kind.display
      << " plugin; registered: " << ::testing::PrintToString(names)
      << ". Is its TVLAB_REGISTER_* line missing or its library not alwayslink?";
}

}  // namespace
}  // namespace tvlab
