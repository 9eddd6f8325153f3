// The census of plugins, from the folders: plugins/census.txt (//plugins:census)
// has a line per kind folder (plugins/plugin.bzl's PLUGIN_KINDS) and a record
// per plugin folder (written by its tvlab_plugin(); a folder without one
// breaks the build of //plugins:census, naming it). Against what //plugins:all
// registers, this test checks that the kind folders are the kind table's,
// every folder's plugin is registered under its folder's kind and name,
// nothing is registered without a folder, every plugin of a kind with
// PyTorch parity has a parity test, and the example config its source comment
// names ("Example config (path):" or "Example config: path") is a real spec
// that loads, validates and uses that plugin. No list of plugins is kept by
// hand anywhere: adding a folder is all it takes.

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/spec/spec_loader.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct KindFolder {  // kind <folder> <kind id> <default or -> <parity 1|0>
  std::string folder, id, default_plugin;
  bool parity_required = false;
};
struct PluginFolder {  // <kind id> <name> <folder> <conformance test> <parity test or ->
  std::string kind, name, folder, conformance_test, parity_test;
};
struct Census {
  std::vector<KindFolder> kinds;
  std::vector<PluginFolder> plugins;
};

Census ReadCensus() {
  Census census;
  const std::string text = ReadFile("plugins/census.txt");
  EXPECT_FALSE(text.empty()) << "no plugins/census.txt (data //plugins:census)";
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    EXPECT_EQ(f.size(), 5u) << "malformed census line: " << line;
    if (f.size() != 5) continue;
    if (f[0] == "kind")
      census.kinds.push_back({f[1], f[2], f[3] == "-" ? "" : f[3], f[4] == "1"});
    else
      census.plugins.push_back({f[0], f[1], f[2], f[3], f[4] == "-" ? "" : f[4]});
  }
  return census;
}

const PluginKind* KindWithId(const std::string& id) {
  for (const PluginKind& kind : PluginKinds())
    if (kind.id == id) return &kind;
  return nullptr;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(PluginCensus, KindFoldersAreTheKindTables) {
  const Census census = ReadCensus();
  std::set<std::string> listed;
  for (const KindFolder& k : census.kinds) {
    const PluginKind* kind = KindWithId(k.id);
    ASSERT_NE(kind, nullptr) << "plugins/plugin.bzl's PLUGIN_KINDS has kind '" << k.id
                             << "', which framework/interfaces/plugin_kinds.cc lacks";
    EXPECT_EQ(k.folder, kind->folder) << "the folder of " << kind->display
                                      << " in plugin.bzl vs the kind table";
    EXPECT_EQ(k.default_plugin, kind->default_plugin)
        << "the default " << kind->display << " in plugin.bzl vs the kind table";
    listed.insert(k.id);
  }
  for (const PluginKind& kind : PluginKinds())
    EXPECT_TRUE(listed.count(kind.id)) << "plugins/plugin.bzl's PLUGIN_KINDS lacks kind '"
                                       << kind.id << "' (folder " << kind.folder << ")";
}

TEST(PluginCensus, EveryFoldersPluginIsRegisteredUnderItsKindAndName) {
  const Census census = ReadCensus();
  EXPECT_FALSE(census.plugins.empty());
  for (const PluginFolder& p : census.plugins) {
    const PluginKind* kind = KindWithId(p.kind);
    ASSERT_NE(kind, nullptr) << p.folder << ": kind '" << p.kind << "'";
    EXPECT_EQ(p.folder, kind->folder + "/" + p.name) << "a plugin's folder is named as the plugin";
    EXPECT_TRUE(Contains(kind->names(), p.name))
        << p.folder << "/ is a plugin folder of kind " << kind->id << ", but no " << kind->display
        << " plugin '" << p.name << "' is registered in //plugins:all; registered: "
        << absl::StrJoin(kind->names(), ", ") << ". Its " << p.name
        << ".cc must register it under the folder's name (TVLAB_REGISTER_*(\"" << p.name
        << "\", ...)).";
  }
}

TEST(PluginCensus, EveryRegisteredPluginHasAFolder) {
  std::set<std::pair<std::string, std::string>> folders;  // (kind id, name)
  for (const PluginFolder& p : ReadCensus().plugins) folders.insert({p.kind, p.name});
  for (const PluginKind& kind : PluginKinds())
    for (const std::string& name : kind.names())
      EXPECT_TRUE(folders.count({kind.id, name}))
          << kind.display << " plugin '" << name << "' is registered, but " << kind.folder << "/"
          << name << "/ is not a plugin folder; a plugin registers under its folder's name";
}

TEST(PluginCensus, EveryPluginOfAKindWithParityHasAParityTest) {
  const Census census = ReadCensus();
  std::map<std::string, bool> required;  // kind id -> parity required
  for (const KindFolder& k : census.kinds) required[k.id] = k.parity_required;
  int parity_tests = 0;
  for (const PluginFolder& p : census.plugins) {
    parity_tests += !p.parity_test.empty();
    if (!required[p.kind]) continue;
    EXPECT_FALSE(p.parity_test.empty())
        << p.folder << "/ has no PyTorch parity test; every " << p.kind
        << " plugin needs one: write " << p.name << "_parity.py (the formula, from the paper) and "
        << "add parity = \"" << p.name << "_parity.py\" to its tvlab_plugin() "
        << "(docs/writing-a-plugin.md, step 7)";
  }
  EXPECT_GT(parity_tests, 0);
}

TEST(PluginCensus, EveryPluginsExampleConfigLoadsAndUsesThePlugin) {
  const std::regex example(R"(Example config(?: \((\S+\.pbtxt)\):|: (\S+\.pbtxt)))");
  for (const PluginFolder& p : ReadCensus().plugins) {
    const PluginKind* kind = KindWithId(p.kind);
    ASSERT_NE(kind, nullptr) << p.folder;
    const std::string source = p.folder + "/" + p.name + ".cc";
    const std::string text = ReadFile(source);
    ASSERT_FALSE(text.empty()) << p.name << ": no source " << source
                               << " (a plugin's source is named as its folder)";
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, example))
        << source << " has no 'Example config: <file>.pbtxt' comment";
    const std::string path = m[1].matched ? m[1].str() : m[2].str();
    auto spec = LoadExperiment(path, {});
    ASSERT_TRUE(spec.ok()) << source << "'s example " << path << ": " << spec.status();
    EXPECT_EQ(PluginNameIn(*spec, *kind), p.name)
        << path << " is the example of " << source << " but uses another " << kind->display;
  }
}

TEST(PluginCensus, EachKindsDefaultIsRegistered) {
  for (const PluginKind& kind : PluginKinds()) {
    if (kind.default_plugin.empty()) continue;
    EXPECT_TRUE(Contains(kind.names(), kind.default_plugin))
        << kind.display << "'s default '" << kind.default_plugin << "' is not registered";
  }
}

}  // namespace
}  // namespace tvlab
