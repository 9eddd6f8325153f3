// The chunked gated-linear scan (kernels.def GatedLinearScan and its
// backward; gated_linear_scan.h) of every registered backend but the
// reference against the reference, on awkward sizes (T not a multiple of
// the chunk, dk != dv, every gate kind, with and without the states); and
// the reference against the written recurrence S_t = diag(exp(g_t)) S_{t-1}
// + k_t^T v_t, o_t = q_t S_t, evaluated token by token in double, with its
// gradients by central differences of that recurrence. Part of
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

std::vector<float> Random(int64_t n, uint64_t salt, float lo = -1.0f, float hi = 1.0f) {
  RngStream rng(2468, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * rng.Uniform(i);
  return v;
}

// Inputs, output gradients and, per kernel, its results in one order:
// out, final_state, dq, dk, dv, dlog_gate, dstate.
struct Case {
  GatedLinearScanDesc d;
  bool with_state = false, with_dfinal = false;
  std::vector<float> q, k, v, g, s0, dout, dfinal;
};

Case Make(int64_t gate_dim, int64_t chunk, bool with_state, bool with_dfinal) {
  Case c;
  c.d = {2, 3, 13, 3, 5, gate_dim, chunk};
  const int64_t p = 6, t = 13;
  c.q = Random(p * t * 3, 1), c.k = Random(p * t * 3, 2), c.v = Random(p * t * 5, 3);
  if (gate_dim > 0) c.g = Random(p * t * gate_dim, 4, -2.5f, -0.01f);
  c.with_state = with_state, c.with_dfinal = with_dfinal;
  if (with_state) c.s0 = Random(p * 15, 5);
  c.dout = Random(p * t * 5, 6);
  if (with_dfinal) c.dfinal = Random(p * 15, 7);
  return c;
}

Tensor Up(Device dev, const std::vector<float>& v) {
  return Tensor::FromVector({static_cast<int64_t>(v.size())}, v, dev);
}
const float* P(const Tensor& t) { return t.defined() ? t.ptr() : nullptr; }

std::vector<std::vector<float>> RunKernels(Backend& be, const Case& c) {
  const Device dev = be.device();
  const GatedLinearScanDesc& d = c.d;
  const int64_t p = d.batch * d.heads, t = d.tokens, kd = d.key_dim, vd = d.value_dim;
  Tensor q = Up(dev, c.q), k = Up(dev, c.k), v = Up(dev, c.v), dout = Up(dev, c.dout);
  Tensor g = d.gate_dim > 0 ? Up(dev, c.g) : Tensor();
  Tensor s0 = c.with_state ? Up(dev, c.s0) : Tensor();
  Tensor dfinal = c.with_dfinal ? Up(dev, c.dfinal) : Tensor();
  auto stale = [&](int64_t n) { return Up(dev, std::vector<float>(n, 7.0f)); };
  Tensor out = stale(p * t * vd), fin = stale(p * kd * vd), dq = stale(p * t * kd);
  Tensor dk = stale(p * t * kd), dv = stale(p * t * vd), ds = stale(p * kd * vd);
  Tensor dg = d.gate_dim > 0 ? stale(p * t * d.gate_dim) : Tensor();
  be.GatedLinearScan(d, q.ptr(), k.ptr(), v.ptr(), P(g), P(s0), out.ptr(), fin.ptr());
  be.GatedLinearScanBackward(d, q.ptr(), k.ptr(), v.ptr(), P(g), P(s0), dout.ptr(), P(dfinal),
                             dq.ptr(), dk.ptr(), dv.ptr(), dg.defined() ? dg.ptr() : nullptr,
                             ds.ptr());
  std::vector<std::vector<float>> r = {out.ToVector(), fin.ToVector(), dq.ToVector(),
                                       dk.ToVector(), dv.ToVector(), ds.ToVector()};
  if (dg.defined()) r.push_back(dg.ToVector());
  return r;
}

void ExpectClose(const std::vector<std::vector<float>>& got,
                 const std::vector<std::vector<float>>& want, double relative,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << what << ", result " << i;
    double scale = 1e-3;
    for (float w : want[i]) scale = std::max(scale, static_cast<double>(std::fabs(w)));
    for (size_t j = 0; j < got[i].size(); ++j)
      ASSERT_NEAR(got[i][j], want[i][j], relative * scale) << what << ", result " << i << ", " << j;
  }
}

class GatedLinearConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(GatedLinearConformance, ScanAndBackwardEqualTheReference) {
  auto made = MakeBackend(GetParam());
  if (made.status().code() == absl::StatusCode::kFailedPrecondition)
    GTEST_SKIP() << made.status().message();
  ASSERT_TRUE(made.ok()) << made.status();
  auto ref = std::move(*MakeBackend("reference"));
  for (int64_t gate_dim : {0, 1, 3})
    for (int64_t chunk : {1, 4, 13, 16})
      for (bool with_state : {false, true}) {
        const Case c = Make(gate_dim, chunk, with_state, with_state);
        const std::string what = GetParam() + ", gate " + std::to_string(gate_dim) + ", chunk " +
                                 std::to_string(chunk) + (with_state ? ", states" : "");
        ExpectClose(RunKernels(**made, c), RunKernels(*ref, c), 1e-5, what);
      }
}

std::vector<std::string> BackendsToCompare() {
  std::vector<std::string> names;
  for (const std::string& name : RegisteredBackends())
    if (name != "reference") names.push_back(name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, GatedLinearConformance,
                         ::testing::ValuesIn(BackendsToCompare()),
                         [](const auto& info) { return info.param; });

// The written recurrence in double over one (b, h) pair: a loss that weighs
// every output and final state entry by w_out and w_state.
double RecurrenceLoss(const Case& c, const std::vector<double>& w_out,
                      const std::vector<double>& w_state) {
  const GatedLinearScanDesc& d = c.d;
  const int64_t kd = d.key_dim, vd = d.value_dim;
  std::vector<double> s(kd * vd, 0.0);
  if (c.with_state) std::copy(c.s0.begin(), c.s0.begin() + kd * vd, s.begin());
  double loss = 0.0;
  for (int64_t t = 0; t < d.tokens; ++t) {
    for (int64_t x = 0; x < kd; ++x) {
      const double decay = d.gate_dim == 0 ? 1.0 : std::exp(static_cast<double>(
                                                       c.g[t * d.gate_dim + (d.gate_dim == 1 ? 0 : x)]));
      for (int64_t e = 0; e < vd; ++e)
        s[x * vd + e] = decay * s[x * vd + e] + static_cast<double>(c.k[t * kd + x]) * c.v[t * vd + e];
    }
    for (int64_t e = 0; e < vd; ++e) {
      double o = 0.0;
      for (int64_t x = 0; x < kd; ++x) o += static_cast<double>(c.q[t * kd + x]) * s[x * vd + e];
      loss += w_out[t * vd + e] * o;
    }
  }
  for (int64_t i = 0; i < kd * vd; ++i) loss += w_state[i] * s[i];
  return loss;
}

TEST(GatedLinearReference, MatchesTheRecurrenceAndItsCentralDifferences) {
  for (int64_t gate_dim : {0, 1, 3}) {
    Case c = Make(gate_dim, 3, true, true);
    c.d.batch = 1, c.d.heads = 1, c.d.tokens = 7;  // the first pair, 7 tokens: chunks 3, 3, 1
    auto ref = std::move(*MakeBackend("reference"));
    const std::vector<std::vector<float>> got = RunKernels(*ref, c);
    const int64_t t = 7, kd = 3, vd = 5;
    // Outputs and final state: the recurrence's, read off with one-hot weights.
    for (int64_t i = 0; i < t * vd + kd * vd; ++i) {
      std::vector<double> wo(t * vd, 0.0), ws(kd * vd, 0.0);
      (i < t * vd ? wo[i] : ws[i - t * vd]) = 1.0;
      const double want = RecurrenceLoss(c, wo, ws);
      const float have = i < t * vd ? got[0][i] : got[1][i - t * vd];
      ASSERT_NEAR(have, want, 1e-5 * (1.0 + std::fabs(want))) << "gate " << gate_dim << ", " << i;
    }
    // Gradients of sum(dout * out) + sum(dfinal * final) by central differences.
    std::vector<double> wo(c.dout.begin(), c.dout.begin() + t * vd);
    std::vector<double> ws(c.dfinal.begin(), c.dfinal.begin() + kd * vd);
    std::vector<std::pair<std::vector<float>*, const std::vector<float>*>> inputs = {
        {&c.q, &got[2]}, {&c.k, &got[3]}, {&c.v, &got[4]}, {&c.s0, &got[5]}};
    if (gate_dim > 0) inputs.push_back({&c.g, &got[6]});
    for (auto& [x, grad] : inputs) {
      for (size_t i = 0; i < grad->size() && i < x->size(); ++i) {
        const float keep = (*x)[i], h = 1e-3f;
        (*x)[i] = keep + h;
        const double up = RecurrenceLoss(c, wo, ws);
        (*x)[i] = keep - h;
        const double down = RecurrenceLoss(c, wo, ws);
        (*x)[i] = keep;
        const double want = (up - down) / (2.0 * h);
        ASSERT_NEAR((*grad)[i], want, 2e-3 * (1.0 + std::fabs(want))) << "gate " << gate_dim << ", " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tvlab
