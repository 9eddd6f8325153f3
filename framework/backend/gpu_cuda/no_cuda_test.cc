// Stand-in for gpu_cuda_backend_test and gpu_cuda_kernels_test in builds
// without --config=cuda: says so and skips, so the test list is the same in
// both builds.

#include "gtest/gtest.h"

TEST(GpuCuda, BuiltWithoutCuda) {
  GTEST_SKIP() << "built without --config=cuda; run bazel test --config=cuda "
                  "//framework/backend/gpu_cuda/... on a machine with a GPU";
}
