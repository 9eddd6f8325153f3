// Deterministic companion of the libFuzzer target (tools/fuzz.sh), built by
// Bazel with the normal toolchain so every test run (and --config=asan)
// replays the seed corpus: the real checkpoints parse, every malformed file
// is a Status naming the source, and a fixed-seed set of mutations of a real
// checkpoint never crashes.

#include <dirent.h>

#include <fstream>
#include <random>
#include <sstream>

#include "framework/train/safetensors_parse.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string CorpusDir() {
  return std::string(getenv("TEST_SRCDIR")) + "/tvlab/framework/train/fuzz/corpus";
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> names;
  DIR* dir = opendir(CorpusDir().c_str());
  if (dir == nullptr) return names;
  while (dirent* e = readdir(dir))
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  closedir(dir);
  return names;
}

TEST(SafetensorsCorpus, RealFilesParseAndMalformedOnesAreErrors) {
  std::vector<std::string> names = CorpusFiles();
  ASSERT_GE(names.size(), 20u);
  for (const std::string& name : names) {
    const std::string bytes = Read(CorpusDir() + "/" + name);
    auto r = ParseSafetensors(bytes.data(), bytes.size(), name);
    const bool valid = name.rfind("real_", 0) == 0 || name == "metadata_ok";
    EXPECT_EQ(r.ok(), valid) << name << ": " << r.status();
    if (!r.ok()) {
      EXPECT_EQ(std::string(r.status().message()).rfind(name + ": ", 0), 0u) << r.status();
    }
  }
}

TEST(SafetensorsCorpus, MutationsOfARealCheckpointNeverCrash) {
  const std::string seed = Read(CorpusDir() + "/real_model");
  ASSERT_GT(seed.size(), 100u);
  const uint64_t header_len = static_cast<unsigned char>(seed[0]) | static_cast<unsigned char>(seed[1]) << 8;
  std::mt19937_64 rng(20261130);
  const char* tokens[] = {"-1", "0", "1e300", "2.5", "NaN", "4294967296", "[", "]", "{", "}", ",", "\"", "F16"};
  int ok = 0, errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string m = seed;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 5) {
        case 0:  // flip a bit anywhere
          m[rng() % m.size()] ^= static_cast<char>(1 << (rng() % 8));
          break;
        case 1:  // truncate
          m.resize(rng() % m.size());
          break;
        case 2: {  // overwrite part of the header with a token
          const std::string t = tokens[rng() % (sizeof(tokens) / sizeof(tokens[0]))];
          const size_t at = 8 + rng() % std::max<uint64_t>(1, std::min<uint64_t>(header_len, m.size() - 8));
          if (at < m.size()) m.replace(at, std::min(t.size(), m.size() - at), t);
          break;
        }
        case 3:  // change a digit of the header (shapes, offsets)
          for (int tries = 0; tries < 50 && m.size() > 9; ++tries) {
            const size_t at = 8 + rng() % std::min<uint64_t>(header_len, m.size() - 8);
            if (at < m.size() && m[at] >= '0' && m[at] <= '9') {
              m[at] = static_cast<char>('0' + rng() % 10);
              break;
            }
          }
          break;
        default:  // corrupt the length prefix
          m[rng() % 8] = static_cast<char>(rng());
      }
      if (m.empty()) break;
    }
    auto r = ParseSafetensors(m.data(), m.size(), "mutant");
    (r.ok() ? ok : errors)++;
  }
  EXPECT_GT(errors, 1000);  // the mutations do reach the checks
  std::cout << ok << " mutants parsed, " << errors << " refused\n";
}

}  // namespace
}  // namespace tvlab
