#ifndef TVLAB_FRAMEWORK_BACKEND_BACKEND_CONFORMANCE_UTIL_H_
#define TVLAB_FRAMEWORK_BACKEND_BACKEND_CONFORMANCE_UTIL_H_

// What the backend conformance suites share (backend_conformance_test.cc,
// fused_attention_conformance_test.cc, ...): seeded inputs, a relative
// comparison and a bitwise one, device buffers, the backends to compare
// and a fixture holding one of them beside the reference.

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace conformance {

inline std::vector<float> Random(int64_t n, uint64_t salt, float lo = -2.0f, float hi = 2.0f) {
  RngStream rng(1234, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * rng.Uniform(i);
  return v;
}

inline void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, float tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
  }
}

// A buffer on a device, filled from host values.
class Dev {
 public:
  Dev(Device device, const std::vector<float>& values)
      : t_(Tensor::FromVector({static_cast<int64_t>(values.size())}, values, device)) {}
  float* p() const { return t_.ptr(); }
  std::vector<float> host() const { return t_.ToVector(); }

 private:
  Tensor t_;
};

// Every registered backend but the reference (compared with itself, a case
// could not fail).
inline std::vector<std::string> BackendsToCompare() {
  std::vector<std::string> names;
  for (const std::string& name : RegisteredBackends())
    if (name != "reference") names.push_back(name);
  return names;
}

// Whether a and b hold the same floats bit for bit.
inline bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A test of one registered backend (the parameter: a BackendsToCompare
// name) beside the reference; skipped where the backend cannot run here
// (a GPU backend without a GPU).
class BackendBesideReference : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto made = MakeBackend(GetParam());
    if (made.status().code() == absl::StatusCode::kFailedPrecondition) GTEST_SKIP() << made.status().message();
    ASSERT_TRUE(made.ok()) << made.status();
    be_ = std::move(*made);
    ref_ = std::move(*MakeBackend("reference"));
  }
  std::unique_ptr<Backend> be_, ref_;
};

}  // namespace conformance
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_BACKEND_CONFORMANCE_UTIL_H_
