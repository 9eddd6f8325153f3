#include "framework/tensor/tensor.h"

#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(Tensor, ShapeStridesAndReshapeShareStorage) {
  Tensor t = Tensor::FromVector({2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  EXPECT_EQ(t.dim(-1), 3);
  Tensor r = t.Reshape({3, -1});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  r.data()[5] = 50;
  EXPECT_EQ(t.data()[5], 50);  // a view, not a copy
  Tensor c = t.Clone();
  c.data()[0] = 9;
  EXPECT_EQ(t.data()[0], 0);  // a copy
  EXPECT_EQ(ShapeToString(t.shape()), "(2, 3)");
}

TEST(Tensor, BadReshapeIsAnInvariantViolation) {
  Tensor t = Tensor::Zeros({2, 3});
  EXPECT_DEATH(t.Reshape({4, 2}), "internal invariant violated");
}

}  // namespace
}  // namespace tvlab
