#include "framework/distributed/replica_check.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/core/status_macros.h"

namespace tvlab {
namespace {

enum Hashed { kProgram, kSpec, kParameters, kHashes };

uint64_t HashProgram() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  if (!in) return 0;  // no /proc: the program is not compared (still the same on every rank)
  std::vector<char> chunk(1 << 20);
  uint64_t hash = Fnv1a(nullptr, 0);
  char* bytes = chunk.data();  // host: a file buffer
  while (in.read(bytes, chunk.size()) || in.gcount() > 0) hash = Fnv1a(bytes, in.gcount(), hash);
  return hash;
}

uint64_t HashParameters(const std::vector<std::pair<std::string, Var>>& params) {
  uint64_t hash = Fnv1a(nullptr, 0);
  for (const auto& [name, param] : params) {
    hash = Fnv1a(name.data(), name.size(), hash);  // host: a string
    const std::vector<float> values = param.value().ToVector();
    hash = Fnv1a(values.data(), values.size() * sizeof(float), hash);  // host: ToVector's copy
  }
  return hash;
}

const char* const kWhat[kHashes] = {
    "program (/proc/self/exe)", "resolved spec", "initial parameters"};
const char* const kFix[kHashes] = {
    "every rank must run the same build of the same commit: rebuild, then launch the same "
    "bazel-bin/experiments/run on every node",
    "every rank must get the same spec file and the same --set flags (and the same data files)",
    "the same spec and seed must give the same parameters on every rank; a --resume or "
    "--init_from path must name the same files on every node"};

}  // namespace

uint64_t Fnv1a(const void* bytes, size_t n, uint64_t hash) {
  const unsigned char* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < n; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

absl::Status CheckReplicasAgree(Communicator& world, const std::string& resolved_spec,
                                const std::vector<std::pair<std::string, Var>>& params) {
  if (world.size() == 1) return absl::OkStatus();
  uint64_t mine[kHashes];
  mine[kProgram] = HashProgram();
  mine[kSpec] = Fnv1a(resolved_spec.data(), resolved_spec.size());  // host: a string
  mine[kParameters] = HashParameters(params);
  std::vector<uint64_t> all(static_cast<size_t>(world.size()) * kHashes);
  TVLAB_RETURN_IF_ERROR(world.AllGather(mine, kHashes, all.data(), "the start-up replica check"));  // host: hashes
  std::vector<std::string> problems;
  for (int what = 0; what < kHashes; ++what) {
    std::vector<int> differ;
    for (int r = 1; r < world.size(); ++r)
      if (all[r * kHashes + what] != all[what]) differ.push_back(r);
    if (differ.empty()) continue;
    problems.push_back(absl::StrFormat("the %s of rank(s) %s differs from rank 0's (hash %016x vs %016x): %s",
                                       kWhat[what], absl::StrJoin(differ, ", "),
                                       all[differ[0] * kHashes + what], all[what], kFix[what]));
  }
  if (problems.empty()) return absl::OkStatus();
  return OnEveryRank(absl::FailedPreconditionError(
      absl::StrCat("the ", world.size(), " ranks do not run the same experiment: ", absl::StrJoin(problems, "; "))));
}

}  // namespace tvlab
