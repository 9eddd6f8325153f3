// The census of plugins: what //plugins:all registers equals the checked-in
// list (plugins/registered_plugins.txt), every registered plugin lives in
// its kind's folder, and the example config its source comment names
// ("Example config (path):" or "Example config: path") is a real spec that
// loads, validates and uses that plugin.

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "experiments/spec/spec_loader.h"
#include "framework/interfaces/plugin_kinds.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PluginCensus, RegisteredPluginsEqualTheCheckedInList) {
  std::map<std::string, std::string> listed;  // kind id -> "a b c"
  for (absl::string_view line : absl::StrSplit(ReadFile("plugins/registered_plugins.txt"), '\n')) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> parts = absl::StrSplit(line, ": ");
    ASSERT_EQ(parts.size(), 2u) << line;
    listed[parts[0]] = parts[1];
  }
  for (const PluginKind& kind : PluginKinds()) {
    EXPECT_EQ(absl::StrJoin(kind.names(), " "), listed[kind.id])
        << "registered " << kind.display << " plugins differ from plugins/registered_plugins.txt";
    listed.erase(kind.id);
  }
  EXPECT_TRUE(listed.empty()) << "the list names a kind the kind table lacks: " << listed.begin()->first;
}

TEST(PluginCensus, EveryPluginsExampleConfigLoadsAndUsesThePlugin) {
  const std::regex example(R"(Example config(?: \((\S+\.pbtxt)\):|: (\S+\.pbtxt)))");
  for (const PluginKind& kind : PluginKinds()) {
    if (!kind.default_plugin.empty()) {
      auto names = kind.names();
      EXPECT_NE(std::find(names.begin(), names.end(), kind.default_plugin), names.end())
          << kind.display << "'s default '" << kind.default_plugin << "' is not registered";
    }
    for (const std::string& name : kind.names()) {
      const std::string source = kind.folder + "/" + name + "/" + name + ".cc";
      const std::string text = ReadFile(source);
      ASSERT_FALSE(text.empty()) << name << ": no source " << source
                                 << " (a plugin lives in its kind's folder)";
      std::smatch m;
      ASSERT_TRUE(std::regex_search(text, m, example))
          << source << " has no 'Example config: <file>.pbtxt' comment";
      const std::string path = m[1].matched ? m[1].str() : m[2].str();
      auto spec = LoadExperiment(path, {});
      ASSERT_TRUE(spec.ok()) << source << "'s example " << path << ": " << spec.status();
      EXPECT_EQ(PluginNameIn(*spec, kind), name)
          << path << " is the example of " << source << " but uses another " << kind.display;
    }
  }
}

}  // namespace
}  // namespace tvlab
