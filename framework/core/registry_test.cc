#include "framework/core/registry.h"

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
