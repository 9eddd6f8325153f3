#include "framework/core/registry.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(Registry, UnknownNameListsKnownNamesAndClosestMatch) {
  Registry<int> registry("attention layout");
  registry.Register("mha", 1);
  registry.Register("gqa", 2);
  auto hit = registry.Get("gqa");
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(**hit, 2);
  auto miss = registry.Get("mhaa");
  ASSERT_FALSE(miss.ok());
  EXPECT_EQ(miss.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(miss.status().message(),
            "unknown attention layout plugin 'mhaa'; registered: gqa, mha (did you mean 'mha'?)");
}

// A workspace with plugin folders plugins/score/built/ (with a BUILD.bazel)
// and plugins/score/empty/ (without), as $BUILD_WORKSPACE_DIRECTORY.
class RegistryWithFolders : public ::testing::Test {
 protected:
  void SetUp() override {
    workspace_ = std::filesystem::path(::testing::TempDir()) / "registry_workspace";
    std::filesystem::create_directories(workspace_ / "plugins/score/built");
    std::filesystem::create_directories(workspace_ / "plugins/score/empty");
    std::ofstream(workspace_ / "plugins/score/built/BUILD.bazel") << "tvlab_plugin()\n";
    setenv("BUILD_WORKSPACE_DIRECTORY", workspace_.c_str(), 1);
    registry_.Register("built_in", 1);
  }
  void TearDown() override { unsetenv("BUILD_WORKSPACE_DIRECTORY"); }

  std::string Miss(const std::string& name) {
    auto miss = registry_.Get(name);
    EXPECT_EQ(miss.status().code(), absl::StatusCode::kNotFound);
    return std::string(miss.status().message());
  }

  std::filesystem::path workspace_;
  Registry<int> registry_{"attention score", "plugins/score"};
};

TEST_F(RegistryWithFolders, AFolderNotLinkedInSaysHowToRebuildNotDidYouMean) {
  const std::string message = Miss("built");
  EXPECT_EQ(message.find("did you mean"), std::string::npos) << message;
  for (const char* part : {"unknown attention score plugin 'built': plugins/score/built/ exists but "
                           "its plugin is not in this binary",
                           "tools/bazel", "`bazel shutdown`",
                           "plugins/score/built/BUILD.bazel must call tvlab_plugin(name = \"built\"",
                           "; registered: built_in"})
    EXPECT_NE(message.find(part), std::string::npos) << part << " in " << message;
}

TEST_F(RegistryWithFolders, AFolderWithoutBuildFileSaysToAddOne) {
  const std::string message = Miss("empty");
  EXPECT_NE(message.find("plugins/score/empty/ exists but has no BUILD.bazel"), std::string::npos)
      << message;
}

TEST_F(RegistryWithFolders, ATypoWithoutAFolderStillGetsDidYouMean) {
  EXPECT_EQ(Miss("built_im"),
            "unknown attention score plugin 'built_im'; registered: built_in (did you mean "
            "'built_in'?)");
  // A name that is a path is never looked up as a folder.
  EXPECT_EQ(Miss("../score/built").find("exists"), std::string::npos);
}

TEST(Registry, DuplicateRegistrationAborts) {
  Registry<int> registry("ffn");
  registry.Register("relu", 1);
  EXPECT_DEATH(registry.Register("relu", 2), "two ffn plugins registered as 'relu'");
}

TEST(EditDistance, Basics) {
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("same", "same"), 0);
}

}  // namespace
}  // namespace tvlab
