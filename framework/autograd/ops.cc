// Fused ops with hand-written backward (ops.h): softmax, fused attention,
// normalization, cross-entropy, and dropout. The other ops are in
// ops_elementwise.cc, ops_matmul.cc and ops_shape.cc.

#include "framework/autograd/ops.h"

#include <utility>

#include "framework/autograd/grad_accumulation.h"
#include "framework/autograd/kept_outputs.h"
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

namespace {

// The sink logits' gradient (H), from the fused forward's out (B, H, T, hs_v)
// and lse (B, H, T) and the output gradient dout (B, H, T, hs_v): the
// sink's weight exp(sink_h - lse) times minus dout . out per row, summed
// over b and i. Backend kernels only: the tensors stay on their device.
Tensor SinkLogitGradient(const FusedAttentionDesc& d, const Tensor& sink, const Tensor& out,
                         const Tensor& lse, const Tensor& dout) {
  const Shape rows = {d.batch, d.heads, d.queries}, per_head = {1, d.heads, 1};
  Tensor products = Tensor::Empty(out.shape());  // (B, H, T, hs_v)
  B().Binary(BinaryOp::kMul, dout.ptr(), dout.shape(), out.ptr(), out.shape(), products.ptr(),
             out.shape());
  Tensor row_dot = Tensor::Empty({d.batch, d.heads, d.queries, 1});
  B().ReduceSumTo(products.ptr(), products.shape(), row_dot.ptr(), row_dot.shape());
  Tensor sink_weight = Tensor::Empty(rows);  // (B, H, T): exp(sink_h - lse)
  B().Binary(BinaryOp::kSub, sink.ptr(), per_head, lse.ptr(), rows, sink_weight.ptr(), rows);
  B().Unary(UnaryOp::kExp, sink_weight.ptr(), sink_weight.ptr(), sink_weight.numel());
  Tensor terms = Tensor::Empty(rows);  // (B, H, T): exp(sink_h - lse) * (dout . out)
  B().Binary(BinaryOp::kMul, sink_weight.ptr(), rows, row_dot.ptr(), rows, terms.ptr(), rows);
  Tensor sum = Tensor::Empty(per_head);
  B().ReduceSumTo(terms.ptr(), rows, sum.ptr(), per_head);
  Tensor grad = Tensor::Empty({d.heads});
  Tensor zero = Tensor::Zeros({1});
  B().Binary(BinaryOp::kSub, zero.ptr(), {1}, sum.ptr(), {d.heads}, grad.ptr(), {d.heads});
  return grad;
}

}  // namespace

Var FusedAttention(const Var& q, const Var& k, const Var& v, const FusedAttentionDesc& desc,
                   const Var& sink_logits, const Var& bucket_table) {
  FusedAttentionDesc d = desc;
  // (B, H, T, width), or (B, T, H, width) token-major (fused_attention.h).
  const auto layout = [&d](int64_t heads, int64_t tokens, int64_t width) {
    return d.token_major ? Shape({d.batch, tokens, heads, width}) : Shape({d.batch, heads, tokens, width});
  };
  TVLAB_CHECK(q.shape() == layout(d.heads, d.queries, d.head_dim)) << ShapeToString(q.shape());
  TVLAB_CHECK(k.shape() == layout(d.kv_heads, d.keys, d.head_dim)) << ShapeToString(k.shape());
  TVLAB_CHECK(v.shape() == layout(d.kv_heads, d.keys, d.value_dim)) << ShapeToString(v.shape());
  // The sink's gradient below reads out and dout head-major.
  TVLAB_CHECK(!d.token_major || !sink_logits.defined()) << "token-major fused attention takes no sink";
  std::vector<Var> inputs = {q, k, v};
  if (sink_logits.defined()) {
    TVLAB_CHECK(sink_logits.shape() == Shape({d.heads})) << ShapeToString(sink_logits.shape());
    d.sink_logits = sink_logits.value().ToVector();  // H numbers read by the host-side desc
    inputs.push_back(sink_logits);
  }
  if (bucket_table.defined()) {
    TVLAB_CHECK(bucket_table.shape() == Shape({d.bucket_bias.rule.num_buckets, d.heads}))
        << ShapeToString(bucket_table.shape());
    d.bucket_bias.table = bucket_table.value().ToVector();  // read by the host-side desc
    inputs.push_back(bucket_table);
  }
  // Selective checkpointing keeps both (kept_outputs.h): the rerun takes them.
  Tensor out, lse;  // (B, H, T, hs_v) or token-major (B, T, H, hs_v), and (B, H, T)
  const Shape out_shape = layout(d.heads, d.queries, d.value_dim), lse_shape = {d.batch, d.heads, d.queries};
  if (!kept_outputs::Take(out_shape, &out)) {
    out = Tensor::Empty(out_shape);
    lse = Tensor::Empty(lse_shape);
    B().FusedAttention(d, q.value().ptr(), k.value().ptr(), v.value().ptr(), out.ptr(), lse.ptr());
    kept_outputs::Keep(out);
    kept_outputs::Keep(lse);
  } else {
    TVLAB_CHECK(kept_outputs::Take(lse_shape, &lse));
  }
  auto qn = q.node(), kn = k.node(), vn = v.node();
  auto sn = sink_logits.defined() ? sink_logits.node() : nullptr;
  auto tn = bucket_table.defined() ? bucket_table.node() : nullptr;
  return MakeResult(out, inputs, [qn, kn, vn, sn, tn, d, out, lse](const Tensor& dout) {
    Tensor dq = Tensor::Empty(qn->value.shape());
    Tensor dk = Tensor::Empty(kn->value.shape());
    Tensor dv = Tensor::Empty(vn->value.shape());
    Tensor dtable = tn != nullptr ? Tensor::Empty(tn->value.shape()) : Tensor();
    B().FusedAttentionBackward(d, qn->value.ptr(), kn->value.ptr(), vn->value.ptr(), out.ptr(),
                               lse.ptr(), dout.ptr(), dq.ptr(), dk.ptr(), dv.ptr(),
                               tn != nullptr ? dtable.ptr() : nullptr);
    if (qn->requires_grad) AccumulateOwnedGrad(*qn, std::move(dq));
    if (kn->requires_grad) AccumulateOwnedGrad(*kn, std::move(dk));
    if (vn->requires_grad) AccumulateOwnedGrad(*vn, std::move(dv));
    if (sn != nullptr && sn->requires_grad)
      AccumulateOwnedGrad(*sn, SinkLogitGradient(d, sn->value, out, lse, dout));
    if (tn != nullptr && tn->requires_grad) AccumulateOwnedGrad(*tn, std::move(dtable));
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
    Tensor dx = Tensor::Empty(dy.shape());  // (rows, cols)
    Tensor dgamma = Tensor::Zeros({cols}), dbeta = Tensor::Zeros({cols});
    const float* gp = gn ? gn->value.ptr() : nullptr;
    // x's gradient so far (in a pre-norm block, the residual stream's) is
    // added as dx is written: no separate add pass.
    if (const float* so_far = GradSoFar(*xn)) {
      B().NormalizeBackwardAdd(xn->value.ptr(), gp, mean.ptr(), rstd.ptr(), dy.ptr(), so_far, dx.ptr(),
                               dgamma.ptr(), dbeta.ptr(), rows, cols, subtract_mean);
      SetSummedGrad(*xn, std::move(dx));
    } else {
      B().NormalizeBackward(xn->value.ptr(), gp, mean.ptr(), rstd.ptr(), dy.ptr(), dx.ptr(), dgamma.ptr(),
                            dbeta.ptr(), rows, cols, subtract_mean);
      AccumulateOwnedGrad(*xn, std::move(dx));
    }
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
