// Ops that move elements without arithmetic (ops.h): reshape, permute,
// slice, concatenation, repeated heads, row gathers and embedding lookups.

#include "framework/autograd/ops.h"

#include <algorithm>
#include <utility>

#include "framework/autograd/grad_accumulation.h"
#include "framework/autograd/ops_internal.h"
#include "framework/core/check.h"

namespace tvlab {

using ops_internal::B;

Var Reshape(const Var& x, Shape shape) {
  auto xn = x.node();
  return MakeResult(x.value().Reshape(std::move(shape)), {x},
                    [xn](const Tensor& g) { AccumulateGrad(*xn, g.Reshape(xn->value.shape())); });
}

Var Permute(const Var& x, const std::vector<int>& perm) {
  const Shape& s = x.shape();
  TVLAB_CHECK_EQ(perm.size(), s.size());
  Shape out_shape(s.size());
  for (size_t i = 0; i < s.size(); ++i) out_shape[i] = s[perm[i]];
  Tensor y = Tensor::Empty(out_shape);
  B().Permute(x.value().ptr(), s, perm, y.ptr());
  std::vector<int> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int>(i);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, inverse](const Tensor& g) {
    Tensor dx = Tensor::Empty(xn->value.shape());
    B().Permute(g.ptr(), g.shape(), inverse, dx.ptr());
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
}

namespace {
// Views x as (outer, dim_size, inner) around `dim`.
void SplitAround(const Shape& s, int dim, int64_t* outer, int64_t* inner) {
  *outer = 1, *inner = 1;
  for (int i = 0; i < dim; ++i) *outer *= s[i];
  for (size_t i = dim + 1; i < s.size(); ++i) *inner *= s[i];
}
}  // namespace

Var Slice(const Var& x, int dim, int64_t start, int64_t length) {
  if (dim < 0) dim += static_cast<int>(x.rank());
  const Shape& s = x.shape();
  TVLAB_CHECK(start >= 0 && length >= 0 && start + length <= s[dim])
      << "slice [" << start << ", " << start + length << ") of dim " << dim << " in "
      << ShapeToString(s);
  int64_t outer, inner;
  SplitAround(s, dim, &outer, &inner);
  Shape out_shape = s;
  out_shape[dim] = length;
  Tensor y = Tensor::Empty(out_shape);  // (outer, length, inner) of x's (outer, full, inner)
  const int64_t full = s[dim];
  B().Copy2D(x.value().ptr() + start * inner, full * inner, y.ptr(), length * inner, outer,
             length * inner);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, outer, inner, full, start, length](const Tensor& g) {
    Tensor dx = Tensor::Zeros(xn->value.shape());
    B().Copy2D(g.ptr(), length * inner, dx.ptr() + start * inner, full * inner, outer,
               length * inner);
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
}

Var Concat(const std::vector<Var>& parts, int dim) {
  TVLAB_CHECK(!parts.empty());
  if (dim < 0) dim += static_cast<int>(parts[0].rank());
  Shape out_shape = parts[0].shape();
  out_shape[dim] = 0;
  std::vector<int64_t> sizes;
  for (const Var& p : parts) {
    sizes.push_back(p.shape()[dim]);
    out_shape[dim] += p.shape()[dim];
  }
  int64_t outer, inner;
  SplitAround(out_shape, dim, &outer, &inner);
  Tensor y = Tensor::Empty(out_shape);  // every element is written by one part
  const int64_t full = out_shape[dim];
  int64_t offset = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    B().Copy2D(parts[i].value().ptr(), sizes[i] * inner, y.ptr() + offset * inner, full * inner,
               outer, sizes[i] * inner);
    offset += sizes[i];
  }
  std::vector<std::shared_ptr<Node>> nodes;
  for (const Var& p : parts) nodes.push_back(p.node());
  return MakeResult(y, parts, [nodes, sizes, outer, inner, full](const Tensor& g) {
    int64_t offset = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i]->requires_grad) {
        Tensor dx = Tensor::Empty(nodes[i]->value.shape());
        B().Copy2D(g.ptr() + offset * inner, full * inner, dx.ptr(), sizes[i] * inner, outer,
                   sizes[i] * inner);
        AccumulateOwnedGrad(*nodes[i], std::move(dx));
      }
      offset += sizes[i];
    }
  });
}

Var RepeatHeads(const Var& x, int64_t r) {
  if (r == 1) return x;
  const Shape& s = x.shape();  // (B, G, S, hs)
  TVLAB_CHECK_EQ(s.size(), 4u);
  // Broadcast (B, G, 1, S*hs) against (r, 1) zeros -> (B, G, r, S*hs): the
  // backward (ReduceSumTo through Add) sums the r copies.
  Var zeros(Tensor::Zeros({r, 1}));
  Var repeated = Add(Reshape(x, {s[0], s[1], 1, s[2] * s[3]}), zeros);
  return Reshape(repeated, {s[0], s[1] * r, s[2], s[3]});  // (B, G*r, S, hs)
}

Tensor GatherRows(const Tensor& x, const std::vector<int64_t>& rows) {
  const int64_t n_rows = x.dim(0), row = x.numel() / std::max<int64_t>(n_rows, 1);
  std::vector<int32_t> ids;
  for (int64_t r : rows) {
    TVLAB_CHECK(r >= 0 && r < n_rows) << "row " << r << " of " << ShapeToString(x.shape());
    ids.push_back(static_cast<int32_t>(r));
  }
  Shape shape = x.shape();
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out = Tensor::Empty(shape);  // (rows, ...)
  B().Gather(x.ptr(), row, DeviceInts::Upload(ids).ptr(), shape[0], out.ptr());
  return out;
}

Var Embedding(const Var& table, const std::vector<int32_t>& ids) {
  const int64_t vocab = table.dim(0), cols = table.dim(1), n = static_cast<int64_t>(ids.size());
  for (int32_t id : ids) TVLAB_CHECK(id >= 0 && id < vocab) << "token id " << id << " vocab " << vocab;
  DeviceInts device_ids = DeviceInts::Upload(ids);  // the batch's edge: host ids to the device
  Tensor out = Tensor::Empty({n, cols});
  B().Gather(table.value().ptr(), cols, device_ids.ptr(), n, out.ptr());
  auto tn = table.node();
  return MakeResult(out, {table}, [tn, device_ids, cols, n](const Tensor& g) {
    Tensor dt = Tensor::Zeros(tn->value.shape());
    B().ScatterAdd(g.ptr(), cols, device_ids.ptr(), n, dt.ptr());
    AccumulateOwnedGrad(*tn, std::move(dt));
  });
}

}  // namespace tvlab
