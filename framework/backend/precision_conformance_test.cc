// Every registered backend's GEMM (but the reference's) in every precision
// it declares against the reference GEMM in that precision (which rounds the
// operands, then multiplies in fp32: precision.h), for every transpose,
// batched and with a broadcast operand, alpha and beta. A backend that does
// not declare a precision is skipped for it, saying so; gpu_cuda skips
// without a GPU.
//
// Tolerance: both sides multiply the same rounded operands, and the product
// of two bf16 (or TF32) values is exact in fp32, so they differ only in the
// order and width of the summation (the reference sums in double). Summing k
// products in fp32 in any order errs by at most (k - 1) u sum|a_i b_i| with
// u = 2^-24; we allow (k + 2) u (|alpha| sum|a_i b_i| + |beta c|). cuBLAS
// does not document how tensor cores round fp32 operands to TF32 (nearest
// even, away, or truncation), so gpu_cuda's tf32 may also differ by one TF32
// ulp per operand (2 * 2^-10 |alpha| sum|a_i b_i|). A second test checks
// that the precision is honoured, not ignored: operands 1 + 2^-12 multiply
// as 1 in bf16 and TF32.

#include <cmath>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::vector<float> Random(int64_t n, uint64_t salt) {
  RngStream rng(4321, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = -2.0f + 4.0f * rng.Uniform(i);
  return v;
}

// sum_q |op(A)[i, q]| |op(B)[q, j]| for every (p, i, j), in double.
std::vector<double> AbsProducts(const GemmDesc& d, const std::vector<float>& a,
                                const std::vector<float>& b) {
  std::vector<double> out(d.batch * d.m * d.n);
  for (int64_t p = 0; p < d.batch; ++p)
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < d.k; ++q) {
          const float av = a[p * d.stride_a + (d.trans_a ? q * d.m + i : i * d.k + q)];
          const float bv = b[p * d.stride_b + (d.trans_b ? j * d.k + q : q * d.n + j)];
          s += std::fabs(static_cast<double>(av) * bv);
        }
        out[(p * d.m + i) * d.n + j] = s;
      }
  return out;
}

class PrecisionConformance
    : public ::testing::TestWithParam<std::tuple<std::string, Precision>> {
 protected:
  void SetUp() override {
    auto made = MakeBackend(std::get<0>(GetParam()));
    if (made.status().code() == absl::StatusCode::kFailedPrecondition)
      GTEST_SKIP() << made.status().message();  // gpu_cuda without a GPU
    ASSERT_TRUE(made.ok()) << made.status();
    be_ = std::move(*made);
    ref_ = std::move(*MakeBackend("reference"));
    const PrecisionSupport support = (*FindBackend(be_->name()))->precision(precision());
    if (!support.supported)
      GTEST_SKIP() << be_->name() << " does not declare " << PrecisionName(precision()) << " ("
                   << support.why_not << "); validation refuses it";
  }
  Precision precision() const { return std::get<1>(GetParam()); }
  std::unique_ptr<Backend> be_, ref_;
};

TEST_P(PrecisionConformance, GemmMatchesReferenceInTheSamePrecision) {
  const double u = std::ldexp(1.0, -24);
  const double conversion = precision() == Precision::kTf32 && be_->name() == "gpu_cuda"
                                ? 2 * std::ldexp(1.0, -10)
                                : 0.0;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool broadcast_b : {false, true}) {
        GemmDesc d;
        d.batch = 3, d.m = 9, d.n = 11, d.k = 300, d.trans_a = ta, d.trans_b = tb;
        d.stride_a = d.m * d.k, d.stride_b = broadcast_b ? 0 : d.k * d.n, d.stride_c = d.m * d.n;
        d.alpha = 0.5f, d.beta = broadcast_b ? 1.0f : 0.0f;
        d.precision = precision();
        const auto a = Random(d.batch * d.m * d.k, 1), b = Random(d.batch * d.k * d.n, 2);
        const auto c0 = Random(d.batch * d.m * d.n, 3);
        std::vector<float> want = c0;
        Tensor c = Tensor::FromVector({static_cast<int64_t>(c0.size())}, c0, be_->device());
        Tensor da = Tensor::FromVector({static_cast<int64_t>(a.size())}, a, be_->device());
        Tensor db = Tensor::FromVector({static_cast<int64_t>(b.size())}, b, be_->device());
        be_->Gemm(d, da.ptr(), db.ptr(), c.ptr());
        ref_->Gemm(d, a.data(), b.data(), want.data());
        const std::vector<float> got = c.ToVector();
        const std::vector<double> abs_products = AbsProducts(d, a, b);
        const std::string what = be_->name() + " " + PrecisionName(d.precision) +
                                 " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
                                 " broadcast_b=" + std::to_string(broadcast_b);
        for (size_t i = 0; i < got.size(); ++i) {
          const double s = std::fabs(d.alpha) * abs_products[i];
          const double tol = (d.k + 2) * u * (s + std::fabs(d.beta * c0[i])) + conversion * s;
          ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
        }
      }
    }
  }
}

// 1 + 2^-12 is a float32 but rounds to 1 in bf16 (7 stored bits) and TF32
// (10): four such products sum to 4 + 2^-10 in fp32 and to 4 here.
TEST_P(PrecisionConformance, OperandsAreRoundedNotKeptInFp32) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      GemmDesc d;
      d.batch = 2, d.m = 2, d.n = 3, d.k = 4, d.trans_a = ta, d.trans_b = tb;
      d.stride_a = d.m * d.k, d.stride_b = d.k * d.n, d.stride_c = d.m * d.n;
      d.precision = precision();
      // n copies of `value` on the backend's device.
      auto filled = [&](int64_t n, float value) {
        return Tensor::FromVector({n}, std::vector<float>(n, value), be_->device());
      };
      Tensor a = filled(d.batch * d.m * d.k, 1.0f + std::ldexp(1.0f, -12));
      Tensor b = filled(d.batch * d.k * d.n, 1.0f);
      Tensor c = filled(d.batch * d.m * d.n, 7.0f);  // overwritten: beta = 0
      be_->Gemm(d, a.ptr(), b.ptr(), c.ptr());
      for (float v : c.ToVector())
        EXPECT_EQ(v, 4.0f) << be_->name() << " ta=" << ta << " tb=" << tb;
    }
  }
}

// Every registered backend but the reference (its own rounding is checked
// against the definition in reference/reference_backend_test.cc).
std::vector<std::tuple<std::string, Precision>> Cases() {
  std::vector<std::tuple<std::string, Precision>> cases;
  for (const std::string& name : RegisteredBackends())
    if (name != "reference")
      for (Precision p : {Precision::kTf32, Precision::kBf16}) cases.emplace_back(name, p);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, PrecisionConformance, ::testing::ValuesIn(Cases()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  PrecisionName(std::get<1>(info.param));
                         });

// Declarations: every backend runs fp32; the reference runs everything (it
// is the oracle).
TEST(PrecisionDeclarations, EveryBackendRunsFp32AndTheReferenceRunsAll) {
  for (const std::string& name : RegisteredBackends()) {
    const BackendDescriptor& backend = **FindBackend(name);
    EXPECT_TRUE(backend.Supports(Precision::kFp32)) << name;
    EXPECT_EQ(backend.PrecisionNames().front(), "fp32") << name;
  }
  EXPECT_EQ((*FindBackend("reference"))->PrecisionNames(),
            (std::vector<std::string>{"fp32", "tf32", "bf16"}));
}

}  // namespace
}  // namespace tvlab
