// The mixture-of-experts routing kernels (kernels.def, "Mixture-of-experts
// routing") of every registered backend but the reference against the
// reference, on awkward sizes with ties and full experts; and the reference
// against hand-worked cases of the written contracts. Part of
// :backend_conformance_suite, so the emulated gpu_cuda runs it too.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::vector<float> Random(int64_t n, uint64_t salt, bool quarters = false) {
  RngStream rng(4321, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = -2.0f + 4.0f * rng.Uniform(i);
    if (quarters) v[i] = std::round(v[i] * 2.0f) / 2.0f;  // many ties
  }
  return v;
}

// Every token's k distinct experts, drawn with a skew (expert 0 popular) so
// that small capacities overflow.
std::vector<int32_t> Assignments(int64_t tokens, int64_t k, int64_t experts, uint64_t salt) {
  RngStream rng(99, RngPurpose::kInit, salt);
  std::vector<int32_t> out;
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<int32_t> chosen;
    for (int64_t i = 0; static_cast<int64_t>(chosen.size()) < k; ++i) {
      const float u = rng.Uniform(t * 64 + i);
      const int32_t e = static_cast<int32_t>(u * u * experts);
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
    }
    out.insert(out.end(), chosen.begin(), chosen.end());
  }
  return out;
}

Tensor F(Device d, const std::vector<float>& v) {
  return Tensor::FromVector({static_cast<int64_t>(v.size())}, v, d);
}
Tensor Stale(Device d, int64_t n) { return F(d, std::vector<float>(n, 7.0f)); }
DeviceInts StaleInts(Device d, int64_t n) { return DeviceInts::Upload(std::vector<int32_t>(n, 7), d); }

class RoutingConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto made = MakeBackend(GetParam());
    if (made.status().code() == absl::StatusCode::kFailedPrecondition)
      GTEST_SKIP() << made.status().message();
    ASSERT_TRUE(made.ok()) << made.status();
    be_ = std::move(*made);
    ref_ = std::move(*MakeBackend("reference"));
  }
  Device dev() const { return be_->device(); }
  std::unique_ptr<Backend> be_, ref_;
};

// Selection and copies: exact equality.
TEST_P(RoutingConformance, TopKAndItsBackwardEqualTheReference) {
  const int64_t rows = 13, cols = 7;
  for (int64_t k : {1, 2, 3, 7}) {
    auto x = Random(rows * cols, 1, /*quarters=*/true), dv = Random(rows * k, 2);
    std::vector<float> values(rows * k), dx(rows * cols, 7.0f);
    std::vector<int32_t> indices(rows * k);
    ref_->TopKRows(x.data(), rows, cols, k, values.data(), indices.data());
    ref_->TopKRowsBackward(dv.data(), indices.data(), rows, cols, k, dx.data());
    Tensor bv = Stale(dev(), rows * k), bdx = Stale(dev(), rows * cols);
    DeviceInts bi = StaleInts(dev(), rows * k);
    be_->TopKRows(F(dev(), x).ptr(), rows, cols, k, bv.ptr(), bi.ptr());
    be_->TopKRowsBackward(F(dev(), dv).ptr(), bi.ptr(), rows, cols, k, bdx.ptr());
    EXPECT_EQ(bv.ToVector(), values) << "k=" << k;
    EXPECT_EQ(bi.ToVector(), indices) << "k=" << k;
    EXPECT_EQ(bdx.ToVector(), dx) << "k=" << k;
  }
}

TEST_P(RoutingConformance, SlotsDispatchAndCombineEqualTheReference) {
  const int64_t tokens = 13, experts = 5, cols = 6;
  for (int64_t k : {1, 2}) {
    for (int64_t capacity : {int64_t{1}, int64_t{3}, tokens}) {
      const std::string what = "k=" + std::to_string(k) + " capacity=" + std::to_string(capacity);
      const int64_t n_slots = experts * capacity, n = tokens * k;
      auto assigned = Assignments(tokens, k, experts, 3 + k);
      auto x = Random(tokens * cols, 4), gates = Random(n, 5), dy = Random(tokens * cols, 6);
      auto eo = Random(n_slots * cols, 7), dslots = Random(n_slots * cols, 8);
      std::vector<int32_t> slots(n), slot_a(n_slots);
      std::vector<float> demand(experts), disp(n_slots * cols), dx(tokens * cols),
          y(tokens * cols), deo(n_slots * cols), dg(n);
      ref_->RouteToExpertSlots(assigned.data(), tokens, k, experts, capacity, slots.data(),
                               slot_a.data(), demand.data());
      ref_->DispatchToSlots(x.data(), cols, slot_a.data(), n_slots, k, disp.data());
      ref_->DispatchToSlotsBackward(dslots.data(), cols, slots.data(), tokens, k, dx.data());
      ref_->CombineFromSlots(eo.data(), cols, slots.data(), gates.data(), tokens, k, y.data());
      ref_->CombineFromSlotsBackward(eo.data(), cols, slots.data(), slot_a.data(), n_slots,
                                     gates.data(), tokens, k, dy.data(), deo.data(), dg.data());

      DeviceInts b_slots = StaleInts(dev(), n), b_slot_a = StaleInts(dev(), n_slots);
      Tensor b_demand = Stale(dev(), experts), b_disp = Stale(dev(), n_slots * cols);
      Tensor b_dx = Stale(dev(), tokens * cols), b_y = Stale(dev(), tokens * cols);
      Tensor b_deo = Stale(dev(), n_slots * cols), b_dg = Stale(dev(), n);
      Tensor b_eo = F(dev(), eo), b_gates = F(dev(), gates);
      be_->RouteToExpertSlots(DeviceInts::Upload(assigned, dev()).ptr(), tokens, k, experts,
                              capacity, b_slots.ptr(), b_slot_a.ptr(), b_demand.ptr());
      be_->DispatchToSlots(F(dev(), x).ptr(), cols, b_slot_a.ptr(), n_slots, k, b_disp.ptr());
      be_->DispatchToSlotsBackward(F(dev(), dslots).ptr(), cols, b_slots.ptr(), tokens, k,
                                   b_dx.ptr());
      be_->CombineFromSlots(b_eo.ptr(), cols, b_slots.ptr(), b_gates.ptr(), tokens, k, b_y.ptr());
      be_->CombineFromSlotsBackward(b_eo.ptr(), cols, b_slots.ptr(), b_slot_a.ptr(), n_slots,
                                    b_gates.ptr(), tokens, k, F(dev(), dy).ptr(), b_deo.ptr(),
                                    b_dg.ptr());
      EXPECT_EQ(b_slots.ToVector(), slots) << what;
      EXPECT_EQ(b_slot_a.ToVector(), slot_a) << what;
      EXPECT_EQ(b_demand.ToVector(), demand) << what;
      EXPECT_EQ(b_disp.ToVector(), disp) << what;
      // Sums in the reference's order: equal up to contraction (FMA) on a GPU.
      auto close = [&](const std::vector<float>& got, const std::vector<float>& want,
                       const char* name) {
        ASSERT_EQ(got.size(), want.size()) << name;
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << what << " " << name << " " << i;
      };
      close(b_dx.ToVector(), dx, "dispatch backward");
      close(b_y.ToVector(), y, "combine");
      close(b_deo.ToVector(), deo, "d_expert_out");
      close(b_dg.ToVector(), dg, "d_gates");
    }
  }
}

std::vector<std::string> BackendsToCompare() {
  std::vector<std::string> names;
  for (const std::string& name : RegisteredBackends())
    if (name != "reference") names.push_back(name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, RoutingConformance, ::testing::ValuesIn(BackendsToCompare()),
                         [](const auto& info) { return info.param; });

// The reference against the contracts, worked by hand.
TEST(ReferenceRouting, TopKBreaksTiesByTheSmallerIndex) {
  auto ref = std::move(*MakeBackend("reference"));
  const std::vector<float> x = {1, 3, 3, 2, 0.5f, 0.5f, 0.5f, 0.5f};  // (2, 4)
  std::vector<float> values(4);
  std::vector<int32_t> indices(4);
  ref->TopKRows(x.data(), 2, 4, 2, values.data(), indices.data());
  EXPECT_EQ(indices, (std::vector<int32_t>{1, 2, 0, 1}));
  EXPECT_EQ(values, (std::vector<float>{3, 3, 0.5f, 0.5f}));
}

TEST(ReferenceRouting, SlotsGoFirstChoicesFirstAndDropOverCapacity) {
  auto ref = std::move(*MakeBackend("reference"));
  // 3 tokens, k 2, 2 experts of capacity 2: first choices 0, 0, 1; second 1, 1, 0.
  const std::vector<int32_t> experts = {0, 1, 0, 1, 1, 0};
  std::vector<int32_t> slots(6), slot_a(4);
  std::vector<float> demand(2);
  ref->RouteToExpertSlots(experts.data(), 3, 2, 2, 2, slots.data(), slot_a.data(), demand.data());
  // Expert 0: a0 (t0 j0), a2 (t1 j0); a5 (t2 j1) dropped. Expert 1: a4 (t2 j0), a1 (t0 j1); a3 dropped.
  EXPECT_EQ(slots, (std::vector<int32_t>{0, 3, 1, -1, 2, -1}));
  EXPECT_EQ(slot_a, (std::vector<int32_t>{0, 2, 4, 1}));
  EXPECT_EQ(demand, (std::vector<float>{3, 3}));
  const std::vector<float> x = {1, 2, 3}, gates = {0.5f, 0.25f, 1, 1, 2, 4};  // cols 1
  std::vector<float> disp(4), y(3);
  ref->DispatchToSlots(x.data(), 1, slot_a.data(), 4, 2, disp.data());
  EXPECT_EQ(disp, (std::vector<float>{1, 2, 3, 1}));
  const std::vector<float> eo = {10, 20, 30, 40};
  ref->CombineFromSlots(eo.data(), 1, slots.data(), gates.data(), 3, 2, y.data());
  EXPECT_EQ(y, (std::vector<float>{0.5f * 10 + 0.25f * 40, 20, 2 * 30}));
}

}  // namespace
}  // namespace tvlab
