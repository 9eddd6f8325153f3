// Fused ops with hand-written backward (ops.h): softmax, fused attention,
// normalization, cross-entropy, and dropout. The other ops are in
// ops_elementwise.cc, ops_matmul.cc and ops_shape.cc.

#include "framework/autograd/ops.h"

#include <utility>

#include "framework/autograd/grad_accumulation.h"
#include "framework/autograd/ops_internal.h"
#include "framework/core/check.h"

namespace tvlab {

using ops_internal::B;
using ops_internal::BinaryValue;

Var Softmax(const Var& x) {
  Tensor y = Tensor::Empty(x.shape());
  const int64_t cols = x.dim(-1), rows = x.value().numel() / cols;
  B().Softmax(x.value().ptr(), y.ptr(), rows, cols);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, y, rows, cols](const Tensor& g) {
    Tensor dx = Tensor::Empty(g.shape());
    B().SoftmaxBackward(y.ptr(), g.ptr(), dx.ptr(), rows, cols);
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
}

Var FusedAttention(const Var& q, const Var& k, const Var& v, const FusedAttentionDesc& desc) {
  const FusedAttentionDesc d = desc;
  TVLAB_CHECK(q.shape() == Shape({d.batch, d.heads, d.queries, d.head_dim})) << ShapeToString(q.shape());
  TVLAB_CHECK(k.shape() == Shape({d.batch, d.kv_heads, d.keys, d.head_dim})) << ShapeToString(k.shape());
  TVLAB_CHECK(v.shape() == Shape({d.batch, d.kv_heads, d.keys, d.value_dim})) << ShapeToString(v.shape());
  Tensor out = Tensor::Empty({d.batch, d.heads, d.queries, d.value_dim});
  Tensor lse = Tensor::Empty({d.batch, d.heads, d.queries});
  B().FusedAttention(d, q.value().ptr(), k.value().ptr(), v.value().ptr(), out.ptr(), lse.ptr());
  auto qn = q.node(), kn = k.node(), vn = v.node();
  return MakeResult(out, {q, k, v}, [qn, kn, vn, d, out, lse](const Tensor& dout) {
    Tensor dq = Tensor::Empty(qn->value.shape());
    Tensor dk = Tensor::Empty(kn->value.shape());
    Tensor dv = Tensor::Empty(vn->value.shape());
    B().FusedAttentionBackward(d, qn->value.ptr(), kn->value.ptr(), vn->value.ptr(), out.ptr(),
                               lse.ptr(), dout.ptr(), dq.ptr(), dk.ptr(), dv.ptr());
    if (qn->requires_grad) AccumulateOwnedGrad(*qn, std::move(dq));
    if (kn->requires_grad) AccumulateOwnedGrad(*kn, std::move(dk));
    if (vn->requires_grad) AccumulateOwnedGrad(*vn, std::move(dv));
  });
}

Var Normalize(const Var& x, const Var& gamma, const Var& beta, float eps, bool subtract_mean) {
  const int64_t cols = x.dim(-1), rows = x.value().numel() / cols;
  Tensor y = Tensor::Empty(x.shape());
  Tensor mean = Tensor::Empty({rows}), rstd = Tensor::Empty({rows});
  const float* g = gamma.defined() ? gamma.value().ptr() : nullptr;
  const float* bt = beta.defined() ? beta.value().ptr() : nullptr;
  B().Normalize(x.value().ptr(), g, bt, y.ptr(), mean.ptr(), rstd.ptr(), rows, cols, eps,
                subtract_mean);
  std::vector<Var> inputs = {x};
  if (gamma.defined()) inputs.push_back(gamma);
  if (beta.defined()) inputs.push_back(beta);
  auto xn = x.node();
  auto gn = gamma.defined() ? gamma.node() : nullptr;
  auto bn = beta.defined() ? beta.node() : nullptr;
  return MakeResult(y, inputs, [=](const Tensor& dy) {
    Tensor dx = Tensor::Empty(dy.shape());
    Tensor dgamma = Tensor::Zeros({cols}), dbeta = Tensor::Zeros({cols});
    B().NormalizeBackward(xn->value.ptr(), gn ? gn->value.ptr() : nullptr, mean.ptr(),
                          rstd.ptr(), dy.ptr(), dx.ptr(), dgamma.ptr(), dbeta.ptr(), rows,
                          cols, subtract_mean);
    AccumulateOwnedGrad(*xn, std::move(dx));
    if (gn) AccumulateOwnedGrad(*gn, std::move(dgamma));
    if (bn) AccumulateOwnedGrad(*bn, std::move(dbeta));
  });
}

Var CrossEntropy(const Var& logits, const std::vector<int32_t>& targets, int32_t ignore_index,
                 float label_smoothing) {
  TVLAB_CHECK_EQ(logits.rank(), 2);
  const int64_t rows = logits.dim(0), cols = logits.dim(1);
  TVLAB_CHECK_EQ(rows, static_cast<int64_t>(targets.size()));
  for (int32_t t : targets) {
    if (t == ignore_index) continue;
    TVLAB_CHECK(t >= 0 && t < cols) << "target " << t << " with " << cols << " classes";
  }
  DeviceInts device_targets = DeviceInts::Upload(targets);
  Tensor loss_rows = Tensor::Empty({rows}), probs = Tensor::Empty({rows, cols});
  Tensor loss = Tensor::Empty({});
  B().CrossEntropy(logits.value().ptr(), device_targets.ptr(), rows, cols, ignore_index,
                   label_smoothing, loss_rows.ptr(), probs.ptr(), loss.ptr());
  auto ln = logits.node();
  return MakeResult(loss, {logits}, [=](const Tensor& g) {
    Tensor dl = Tensor::Empty({rows, cols});
    B().CrossEntropyBackward(probs.ptr(), device_targets.ptr(), rows, cols, ignore_index,
                             label_smoothing, g.ptr(), dl.ptr());
    AccumulateOwnedGrad(*ln, std::move(dl));
  });
}

Var Dropout(const Var& x, float p, const RngStream& stream) {
  if (p <= 0.0f) return x;
  Tensor mask = Tensor::Empty(x.shape());
  // A batch shard draws the global mask's elements [first, first + n):
  // DropoutMask uses 16 bits per element, so an even first element starts at
  // word first / 2; an odd one draws one element more and drops it.
  const int64_t n = mask.numel();
  const uint64_t first = stream.ShardFirstElement(n);
  if (first % 2 == 0) {
    B().DropoutMask(stream.SkipWords(first / 2), p, mask.ptr(), n);
  } else {
    Tensor wider = Tensor::Empty({n + 1});
    B().DropoutMask(stream.SkipWords(first / 2), p, wider.ptr(), n + 1);
    B().Copy2D(wider.ptr() + 1, n, mask.ptr(), n, 1, n);
  }
  Tensor y = BinaryValue(BinaryOp::kMul, x.value(), mask);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, mask](const Tensor& g) {
    AccumulateOwnedGrad(*xn, BinaryValue(BinaryOp::kMul, g, mask));
  });
}

}  // namespace tvlab
