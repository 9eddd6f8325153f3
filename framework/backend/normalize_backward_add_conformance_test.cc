// Backend::NormalizeBackwardAdd (kernels.def) on every registered backend
// but the reference: dx = addend + the norm's input gradient, with dgamma
// and dbeta accumulated, gives the bits of the backend's own
// NormalizeBackward followed by Binary's add (what autograd did before the
// kernel existed), and is close to the reference's. LayerNorm and RMSNorm,
// with and without gamma and beta, for sizes around cpu_onednn's thresholds
// (a tail of columns, eight-row groups with and without leftover rows, rows
// of a multiple of 8 but not 16 columns, rows past one thread's L2 share,
// rows split over threads). Part of :backend_conformance_suite, so the
// emulated gpu_cuda runs it too.

#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/backend_conformance_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using conformance::BackendsToCompare;
using conformance::Dev;
using conformance::ExpectClose;
using conformance::Random;
using conformance::SameBits;

// One norm's inputs on a device: x (rows, cols), its statistics from the
// reference's forward, dy, the addend, gamma.
struct Inputs {
  Inputs(Backend& ref, Device d, int64_t rows, int64_t cols, bool subtract_mean)
      : x_host(Random(rows * cols, 41)), mean_host(rows), rstd_host(rows), x(d, x_host),
        dy(d, Random(rows * cols, 42)), addend(d, Random(rows * cols, 43)), gamma(d, Random(cols, 44)),
        mean(d, std::vector<float>(rows)), rstd(d, std::vector<float>(rows)) {
    std::vector<float> y(rows * cols);
    ref.Normalize(x_host.data(), nullptr, nullptr, y.data(), mean_host.data(), rstd_host.data(), rows, cols, 1e-5f,
                  subtract_mean);
    mean = Dev(d, mean_host), rstd = Dev(d, rstd_host);
  }
  std::vector<float> x_host, mean_host, rstd_host;
  Dev x, dy, addend, gamma, mean, rstd;
};

// What one call writes: dx (starting as 7s) and dgamma, dbeta (starting as
// 0.5: they are accumulated).
struct Outputs {
  Outputs(Device d, int64_t rows, int64_t cols)
      : dx(d, std::vector<float>(rows * cols, 7.0f)), dgamma(d, std::vector<float>(cols, 0.5f)),
        dbeta(d, std::vector<float>(cols, 0.5f)) {}
  Dev dx, dgamma, dbeta;
};

class NormalizeBackwardAddConformance : public conformance::BackendBesideReference {};

TEST_P(NormalizeBackwardAddConformance, EqualsNormalizeBackwardThenAdd) {
  const int64_t sizes[][2] = {{5, 16}, {7, 37}, {19, 48}, {13, 40}, {64, 256}, {1100, 256}, {4100, 256}};
  for (const auto& [rows, cols] : sizes) {
    for (bool subtract_mean : {true, false}) {
      for (bool affine : {true, false}) {
        const std::string at = std::to_string(rows) + " x " + std::to_string(cols) +
                               (subtract_mean ? " LayerNorm" : " RMSNorm") + (affine ? " affine" : "");
        const Device d = be_->device();
        Inputs in(*ref_, d, rows, cols, subtract_mean);
        float* gamma = affine ? in.gamma.p() : nullptr;
        Outputs fused(d, rows, cols), separate(d, rows, cols);
        float* dbeta_fused = affine ? fused.dbeta.p() : nullptr;
        float* dbeta_separate = affine ? separate.dbeta.p() : nullptr;
        be_->NormalizeBackwardAdd(in.x.p(), gamma, in.mean.p(), in.rstd.p(), in.dy.p(), in.addend.p(), fused.dx.p(),
                                  fused.dgamma.p(), dbeta_fused, rows, cols, subtract_mean);
        be_->NormalizeBackward(in.x.p(), gamma, in.mean.p(), in.rstd.p(), in.dy.p(), separate.dx.p(),
                               separate.dgamma.p(), dbeta_separate, rows, cols, subtract_mean);
        const Shape s = {rows, cols};
        be_->Binary(BinaryOp::kAdd, in.addend.p(), s, separate.dx.p(), s, separate.dx.p(), s);
        EXPECT_TRUE(SameBits(fused.dx.host(), separate.dx.host())) << "dx, " << at;
        EXPECT_TRUE(SameBits(fused.dgamma.host(), separate.dgamma.host())) << "dgamma, " << at;
        EXPECT_TRUE(SameBits(fused.dbeta.host(), separate.dbeta.host())) << "dbeta, " << at;
        // The reference's composed body, from the same inputs on the host.
        std::vector<float> dx(rows * cols), dg(cols, 0.5f), db(cols, 0.5f), gamma_host = in.gamma.host();
        const std::vector<float> dy = in.dy.host(), addend = in.addend.host();
        ref_->NormalizeBackwardAdd(in.x_host.data(), affine ? gamma_host.data() : nullptr, in.mean_host.data(),
                                   in.rstd_host.data(), dy.data(), addend.data(), dx.data(), dg.data(),
                                   affine ? db.data() : nullptr, rows, cols, subtract_mean);
        ExpectClose(fused.dx.host(), dx, 1e-5f, "dx against the reference, " + at);
        ExpectClose(fused.dgamma.host(), dg, 1e-4f, "dgamma against the reference, " + at);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllBackends, NormalizeBackwardAddConformance, ::testing::ValuesIn(BackendsToCompare()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace tvlab
