// The CUDA kernels of gpu_cuda against the reference backend at sizes that
// cross their internal boundaries, which the small cases of
// backend_conformance_test.cc do not reach: rows wider than one warp and
// than 1024 threads, more than one reduction chunk, more than one launch
// chunk of key lengths and ALiBi slopes, rank-5 broadcasting and permutes;
// and run-to-run determinism of the reductions. Built only with
// --config=cuda; skips when the machine has no usable GPU.

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::vector<float> Random(int64_t n, uint64_t salt, float lo = -2.0f, float hi = 2.0f) {
  RngStream rng(11, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * rng.Uniform(i);
  return v;
}

Tensor OnGpu(const std::vector<float>& v) {
  return Tensor::FromVector({static_cast<int64_t>(v.size())}, v, Device::kCuda);
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, float tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      ASSERT_EQ(got[i], want[i]) << what << " at " << i;
      continue;
    }
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
  }
}

class GpuCudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU here: " << why;
    gpu_ = std::move(*MakeBackend("gpu_cuda"));
    ref_ = std::move(*MakeBackend("reference"));
  }
  std::unique_ptr<Backend> gpu_, ref_;
};

TEST_F(GpuCudaKernels, SoftmaxWideRowsAndMaskedRows) {
  for (int64_t cols : {33, 1000, 5000}) {  // 32, 256 and 1024 threads per row
    const int64_t rows = 7;
    auto x = Random(rows * cols, cols);
    for (int64_t c = 0; c < cols; ++c) x[3 * cols + c] = -std::numeric_limits<float>::infinity();
    std::vector<float> y(rows * cols);
    Tensor gy = OnGpu(y);
    gpu_->Softmax(OnGpu(x).ptr(), gy.ptr(), rows, cols);
    ref_->Softmax(x.data(), y.data(), rows, cols);
    ExpectClose(gy.ToVector(), y, 1e-5f, "softmax cols=" + std::to_string(cols));
  }
}

TEST_F(GpuCudaKernels, NormalizeBackwardAcrossChunksIsDeterministic) {
  const int64_t rows = 300, cols = 200;  // 5 row chunks, 7 column tiles
  auto x = Random(rows * cols, 1), gamma = Random(cols, 2), beta = Random(cols, 3);
  auto dy = Random(rows * cols, 4);
  std::vector<float> y(rows * cols), mean(rows), rstd(rows);
  ref_->Normalize(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows,
                  cols, 1e-5f, true);
  Tensor gx = OnGpu(x), gg = OnGpu(gamma), gb = OnGpu(beta), gdy = OnGpu(dy);
  Tensor gyt = OnGpu(y), gm = OnGpu(mean), gr = OnGpu(rstd);
  gpu_->Normalize(gx.ptr(), gg.ptr(), gb.ptr(), gyt.ptr(), gm.ptr(), gr.ptr(), rows, cols, 1e-5f,
                  true);
  ExpectClose(gyt.ToVector(), y, 1e-5f, "layernorm");
  std::vector<float> dx(rows * cols), dgamma(cols, 0.5f), dbeta(cols, -0.5f);
  ref_->NormalizeBackward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), dx.data(),
                          dgamma.data(), dbeta.data(), rows, cols, true);
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    Tensor gdx = OnGpu(std::vector<float>(rows * cols, 9.0f));
    Tensor gdg = OnGpu(std::vector<float>(cols, 0.5f)), gdb = OnGpu(std::vector<float>(cols, -0.5f));
    gpu_->NormalizeBackward(gx.ptr(), gg.ptr(), OnGpu(mean).ptr(), OnGpu(rstd).ptr(), gdy.ptr(),
                            gdx.ptr(), gdg.ptr(), gdb.ptr(), rows, cols, true);
    ExpectClose(gdx.ToVector(), dx, 1e-4f, "dx");
    ExpectClose(gdg.ToVector(), dgamma, 1e-4f, "dgamma (accumulated onto 0.5)");
    ExpectClose(gdb.ToVector(), dbeta, 1e-4f, "dbeta (accumulated onto -0.5)");
    if (run == 0) first = gdg.ToVector();
    else EXPECT_EQ(gdg.ToVector(), first) << "dgamma differs between two identical runs";
  }
}

TEST_F(GpuCudaKernels, ReduceSumToManyChunksAndInnerAxis) {
  // (600, 3, 70) -> (3, 1): 600 * 70 values per output, several chunks,
  // reduced dims on both sides of the kept one.
  const Shape x_shape = {600, 3, 70};
  auto x = Random(NumElements(x_shape), 5);
  for (const Shape& out_shape : {Shape{3, 1}, Shape{70}, Shape{600, 1, 1}, Shape{}}) {
    std::vector<float> want(NumElements(out_shape));
    ref_->ReduceSumTo(x.data(), x_shape, want.data(), out_shape);
    Tensor got = OnGpu(std::vector<float>(want.size(), 0.0f));
    gpu_->ReduceSumTo(OnGpu(x).ptr(), x_shape, got.ptr(), out_shape);
    ExpectClose(got.ToVector(), want, 1e-5f, "reduce to " + ShapeToString(out_shape));
  }
}

TEST_F(GpuCudaKernels, BinaryRankFiveBroadcastAndPermute) {
  const Shape sa = {2, 1, 3, 1, 5}, sb = {4, 1, 6, 1}, out = {2, 4, 3, 6, 5};
  auto a = Random(NumElements(sa), 6), b = Random(NumElements(sb), 7, 0.5f, 2.0f);
  for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
    std::vector<float> want(NumElements(out));
    ref_->Binary(op, a.data(), sa, b.data(), sb, want.data(), out);
    Tensor got = OnGpu(want);
    gpu_->Binary(op, OnGpu(a).ptr(), sa, OnGpu(b).ptr(), sb, got.ptr(), out);
    ExpectClose(got.ToVector(), want, 1e-6f, "binary op " + std::to_string(static_cast<int>(op)));
  }
  auto x = Random(NumElements(out), 8);
  const std::vector<int> perm = {0, 3, 1, 4, 2};
  std::vector<float> want(x.size());
  ref_->Permute(x.data(), out, perm, want.data());
  Tensor got = OnGpu(want);
  gpu_->Permute(OnGpu(x).ptr(), out, perm, got.ptr());
  EXPECT_EQ(got.ToVector(), want);
}

TEST_F(GpuCudaKernels, CrossEntropyLargeVocabularyAndArgMaxTies) {
  const int64_t rows = 37, cols = 3001;
  auto logits = Random(rows * cols, 9, -4.0f, 4.0f);
  std::vector<int32_t> targets(rows);
  for (int64_t r = 0; r < rows; ++r) targets[r] = r % 5 == 0 ? -100 : static_cast<int32_t>((r * 97) % cols);
  DeviceInts gt = DeviceInts::Upload(targets, Device::kCuda);
  std::vector<float> loss(rows), probs(rows * cols), mean(1);
  ref_->CrossEntropy(logits.data(), targets.data(), rows, cols, -100, 0.1f, loss.data(),
                     probs.data(), mean.data());
  Tensor gl = OnGpu(loss), gp = OnGpu(probs), gmean = OnGpu(mean);
  gpu_->CrossEntropy(OnGpu(logits).ptr(), gt.ptr(), rows, cols, -100, 0.1f, gl.ptr(), gp.ptr(),
                     gmean.ptr());
  ExpectClose(gl.ToVector(), loss, 1e-5f, "loss");
  ExpectClose(gp.ToVector(), probs, 1e-5f, "probs");
  ExpectClose(gmean.ToVector(), mean, 1e-5f, "mean loss");
  std::vector<float> d(rows * cols), dloss = {2.0f};
  ref_->CrossEntropyBackward(probs.data(), targets.data(), rows, cols, -100, 0.1f, dloss.data(),
                             d.data());
  Tensor gd = OnGpu(d);
  gpu_->CrossEntropyBackward(OnGpu(probs).ptr(), gt.ptr(), rows, cols, -100, 0.1f,
                             OnGpu(dloss).ptr(), gd.ptr());
  ExpectClose(gd.ToVector(), d, 1e-5f, "dlogits");
  // Ties of the maximum in different warps of a 1024-thread block: the first wins.
  std::vector<float> x(2 * cols, 0.0f);
  x[2999] = x[1500] = x[40] = 5.0f;
  x[cols + 3000] = x[cols + 2047] = 1.0f;
  DeviceInts best = DeviceInts::Empty(2, Device::kCuda);
  gpu_->ArgMaxRows(OnGpu(x).ptr(), 2, cols, best.ptr());
  EXPECT_EQ(best.ToVector(), (std::vector<int32_t>{40, 2047}));
}

TEST_F(GpuCudaKernels, MaskAndAlibiTablesBeyondOneLaunchChunk) {
  std::vector<int64_t> lengths(70);
  for (size_t r = 0; r < lengths.size(); ++r) lengths[r] = static_cast<int64_t>(r % 9);
  AttentionMask mask = KeyPaddingMask(lengths);
  mask.causal = true, mask.causal_offset = 2;
  const int64_t t = 4, s = 8;
  std::vector<float> want(70 * t * s);
  ref_->AttentionMaskBias(mask, t, s, want.data());
  Tensor got = OnGpu(want);
  gpu_->AttentionMaskBias(mask, t, s, got.ptr());
  EXPECT_EQ(got.ToVector(), want);
  std::vector<double> slopes(80);
  for (size_t h = 0; h < slopes.size(); ++h) slopes[h] = std::pow(2.0, -0.1 * h);
  std::vector<float> bias(80 * t * s);
  ref_->AlibiBias(slopes, 5, t, s, bias.data());
  Tensor gbias = OnGpu(bias);
  gpu_->AlibiBias(slopes, 5, t, s, gbias.ptr());
  EXPECT_EQ(gbias.ToVector(), bias);
}

TEST_F(GpuCudaKernels, SumSquaresIsDeterministicAndAccumulates) {
  const int64_t n = 3000001;  // more than the 1024 partial blocks cover in one pass
  auto x = Random(n, 10);
  double want = 1.0;
  for (float v : x) want += static_cast<double>(v) * v;
  Tensor gx = OnGpu(x);
  double results[2];
  for (double& result : results) {
    DeviceInts acc = DeviceInts::Empty(2, Device::kCuda);  // 8 bytes: one double
    const double start = 1.0;
    AllocatorFor(Device::kCuda).memory().CopyFromHost(&start, acc.ptr(), sizeof(double));
    gpu_->SumSquares(gx.ptr(), n, reinterpret_cast<double*>(acc.ptr()));
    AllocatorFor(Device::kCuda).memory().CopyToHost(acc.ptr(), &result, sizeof(double));
  }
  EXPECT_NEAR(results[0], want, 1e-10 * want);
  EXPECT_EQ(results[0], results[1]) << "two identical runs differ";
}

TEST_F(GpuCudaKernels, ScatterAddRepeatedIdsAndStridedCopy) {
  const int64_t cols = 300, n = 500;
  auto d_out = Random(n * cols, 11);
  std::vector<int32_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 7) % 13);  // many repeats
  std::vector<float> table(13 * cols, 0.25f);
  Tensor gtable = OnGpu(table);
  DeviceInts gids = DeviceInts::Upload(ids, Device::kCuda);
  ref_->ScatterAdd(d_out.data(), cols, ids.data(), n, table.data());
  gpu_->ScatterAdd(OnGpu(d_out).ptr(), cols, gids.ptr(), n, gtable.ptr());
  ExpectClose(gtable.ToVector(), table, 1e-5f, "scatter add");
  // Overlapping-stride copy (stride smaller than the width) takes the kernel path.
  auto src = Random(64, 12);
  std::vector<float> dst(64, -1.0f);
  Tensor gdst = OnGpu(dst);
  ref_->Copy2D(src.data(), 3, dst.data(), 8, 5, 4);
  gpu_->Copy2D(OnGpu(src).ptr(), 3, gdst.ptr(), 8, 5, 4);
  EXPECT_EQ(gdst.ToVector(), dst);
}

}  // namespace
}  // namespace tvlab
