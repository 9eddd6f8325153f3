// ParseFlags: absl flags with every mistake a Status, repeated flags kept in
// order, help recognised; PrintHelp lists this project's flags only.

#include "experiments/cli/command_line.h"

#include <sstream>

#include "absl/flags/flag.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::string, name, "", "NAME: a string flag");
ABSL_FLAG(int, count, 1, "N: an integer flag");
ABSL_FLAG(bool, verbose, false, "a bool flag");
ABSL_FLAG(std::string, set, "", "repeatable");

namespace tvlab {
namespace {

absl::StatusOr<CommandLine> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "program");
  static std::vector<std::vector<char>> storage;  // argv outlives the call (absl keeps pointers)
  std::vector<char*> argv;
  for (const std::string& a : args) {
    storage.emplace_back(a.begin(), a.end());
    storage.back().push_back('\0');
  }
  for (size_t i = storage.size() - args.size(); i < storage.size(); ++i)
    argv.push_back(storage[i].data());
  return ParseFlags(static_cast<int>(argv.size()), argv.data(), "usage: program\n");
}

TEST(CommandLine, SetsFlagsAndKeepsPositionalArguments) {
  auto line = Parse({"a.pbtxt", "--name", "x", "--count=3", "--verbose", "--", "--not_a_flag"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->positional, (std::vector<std::string>{"a.pbtxt", "--not_a_flag"}));
  EXPECT_EQ(absl::GetFlag(FLAGS_name), "x");
  EXPECT_EQ(absl::GetFlag(FLAGS_count), 3);
  EXPECT_TRUE(absl::GetFlag(FLAGS_verbose));
  EXPECT_EQ(line->Given(), (std::set<std::string>{"--count", "--name", "--verbose"}));
  ASSERT_TRUE(Parse({"--noverbose"}).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_verbose));
}

TEST(CommandLine, RepeatedFlagsKeepEveryValueInOrder) {
  auto line = Parse({"--set", "a=1", "--set=b=2,3", "-set", "a=4"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->values.at("set"), (std::vector<std::string>{"a=1", "b=2,3", "a=4"}));
  EXPECT_EQ(absl::GetFlag(FLAGS_set), "a=4");  // absl's own: the last one
}

TEST(CommandLine, MistakesNameTheFlag) {
  EXPECT_EQ(Parse({"--frobnicate"}).status().message(), "unknown flag '--frobnicate'");
  EXPECT_EQ(Parse({"--frobnicate=1"}).status().message(), "unknown flag '--frobnicate=1'");
  EXPECT_EQ(Parse({"--name"}).status().message(), "--name needs a value");
  EXPECT_EQ(Parse({"--count", "many"}).status().message(), "--count: 'many' is not an integer");
  EXPECT_EQ(Parse({"--verbose=maybe"}).status().message(), "--verbose: 'maybe' is not true or false");
  EXPECT_EQ(Parse({"--nocount"}).status().message(), "unknown flag '--nocount'");
  // absl's own flags are not offered.
  EXPECT_EQ(Parse({"--flagfile=x"}).status().message(), "unknown flag '--flagfile=x'");
}

TEST(CommandLine, HelpListsThisProjectsFlags) {
  for (const char* help : {"--help", "-h", "--helpfull", "--helpshort"}) {
    auto line = Parse({help});
    ASSERT_TRUE(line.ok()) << help;
    EXPECT_TRUE(line->help) << help;
  }
  std::ostringstream out;
  PrintHelp(out, "usage: program\n");
  EXPECT_EQ(out.str().rfind("usage: program\nFlags:\n", 0), 0u) << out.str();
  EXPECT_NE(out.str().find("  --count              N: an integer flag\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("  --verbose            a bool flag\n"), std::string::npos);
  EXPECT_EQ(out.str().find("flagfile"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace tvlab
