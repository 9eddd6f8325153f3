#ifndef TVLAB_FRAMEWORK_DISTRIBUTED_REPLICA_CHECK_H_
#define TVLAB_FRAMEWORK_DISTRIBUTED_REPLICA_CHECK_H_

// Proof at start-up that every rank runs the same thing: each rank hashes
// (FNV-1a, 64 bit) its program file (/proc/self/exe: a different commit or
// build), its resolved spec text (different specs or --set flags) and its
// parameters after initialisation or restore (names and values), the hashes
// are gathered, and every rank compares them with rank 0's. Collective.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "framework/autograd/var.h"
#include "framework/distributed/communicator.h"

namespace tvlab {

// FNV-1a over `bytes`, continuing from `hash`.
uint64_t Fnv1a(const void* bytes, size_t n, uint64_t hash = 0xcbf29ce484222325ull);

// OK when every rank's three hashes equal rank 0's; otherwise (on every
// rank) FailedPrecondition naming the ranks and what differs. With one
// process: OK without hashing.
absl::Status CheckReplicasAgree(Communicator& world, const std::string& resolved_spec,
                                const std::vector<std::pair<std::string, Var>>& params);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DISTRIBUTED_REPLICA_CHECK_H_
