#include "framework/capture/recorded_args.h"

namespace tvlab {
namespace capture {

bool Same(const GemmDesc& a, const GemmDesc& b) {
  return std::tie(a.batch, a.m, a.n, a.k, a.trans_a, a.trans_b, a.stride_a, a.stride_b, a.stride_c, a.alpha,
                  a.beta, a.precision) == std::tie(b.batch, b.m, b.n, b.k, b.trans_a, b.trans_b, b.stride_a,
                                                   b.stride_b, b.stride_c, b.alpha, b.beta, b.precision);
}

bool Same(const AttentionMask& a, const AttentionMask& b) {
  return std::tie(a.causal, a.causal_offset, a.key_lengths, a.window, a.document_positions, a.document_begin,
                  a.document_end) == std::tie(b.causal, b.causal_offset, b.key_lengths, b.window,
                                              b.document_positions, b.document_begin, b.document_end);
}

bool Same(const FusedAttentionDesc& a, const FusedAttentionDesc& b) {
  const RelativeBucketRule &ra = a.bucket_bias.rule, &rb = b.bucket_bias.rule;
  return std::tie(a.batch, a.heads, a.kv_heads, a.queries, a.keys, a.head_dim, a.value_dim, a.scale,
                  a.alibi_slopes, a.alibi_offset, a.logit_softcap, a.sink_logits, a.bucket_bias.table,
                  a.bucket_bias.query_offset, ra.causal, ra.num_buckets, ra.max_distance, a.dropout,
                  a.dropout_stream, a.precision, a.token_major) ==
             std::tie(b.batch, b.heads, b.kv_heads, b.queries, b.keys, b.head_dim, b.value_dim, b.scale,
                      b.alibi_slopes, b.alibi_offset, b.logit_softcap, b.sink_logits, b.bucket_bias.table,
                      b.bucket_bias.query_offset, rb.causal, rb.num_buckets, rb.max_distance, b.dropout,
                      b.dropout_stream, b.precision, b.token_major) &&
         Same(a.mask, b.mask);
}

bool Same(const GatedLinearScanDesc& a, const GatedLinearScanDesc& b) {
  return std::tie(a.batch, a.heads, a.tokens, a.key_dim, a.value_dim, a.gate_dim, a.chunk) ==
         std::tie(b.batch, b.heads, b.tokens, b.key_dim, b.value_dim, b.gate_dim, b.chunk);
}

bool Same(const AdamWHyper& a, const AdamWHyper& b) {
  return std::tie(a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.step) ==
         std::tie(b.lr, b.beta1, b.beta2, b.eps, b.weight_decay, b.step);
}

bool Same(const SgdHyper& a, const SgdHyper& b) {
  return std::tie(a.lr, a.momentum, a.nesterov) == std::tie(b.lr, b.momentum, b.nesterov);
}

bool Same(const LionHyper& a, const LionHyper& b) {
  return std::tie(a.lr, a.beta1, a.beta2) == std::tie(b.lr, b.beta1, b.beta2);
}

bool Same(const std::vector<AdamWTensor>& a, const std::vector<AdamWTensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tie(a[i].param, a[i].grad, a[i].m, a[i].v, a[i].n, a[i].weight_decay) !=
        std::tie(b[i].param, b[i].grad, b[i].m, b[i].v, b[i].n, b[i].weight_decay))
      return false;
  }
  return true;
}

bool Same(const std::vector<PointwiseStep>& a, const std::vector<PointwiseStep>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tie(a[i].kind, a[i].op, a[i].a, a[i].b, a[i].c, a[i].out, a[i].stream, a[i].p, a[i].kept, a[i].scratch) !=
        std::tie(b[i].kind, b[i].op, b[i].a, b[i].b, b[i].c, b[i].out, b[i].stream, b[i].p, b[i].kept, b[i].scratch))
      return false;
  }
  return true;
}

void Rekey(RngStream& stream, uint64_t from, uint64_t to) {
  if (stream.step() == from) stream = stream.WithStep(to);
}

void Rekey(FusedAttentionDesc& d, uint64_t from, uint64_t to) {
  if (d.dropout_stream.has_value()) Rekey(*d.dropout_stream, from, to);
}

void Rekey(std::vector<PointwiseStep>& steps, uint64_t from, uint64_t to) {
  for (PointwiseStep& s : steps)
    if (s.stream.has_value()) Rekey(*s.stream, from, to);
}

void Pointers(const std::vector<PointwiseStep>& steps, std::vector<const void*>* out) {
  for (const PointwiseStep& s : steps) {
    for (const void* p : {static_cast<const void*>(s.a), static_cast<const void*>(s.b),
                          static_cast<const void*>(s.c), static_cast<const void*>(s.out),
                          static_cast<const void*>(s.kept)})
      if (p != nullptr) out->push_back(p);
  }
}

void Pointers(const std::vector<AdamWTensor>& tensors, std::vector<const void*>* out) {
  for (const AdamWTensor& t : tensors) {
    out->push_back(t.param);
    out->push_back(t.grad);
    out->push_back(t.m);
    out->push_back(t.v);
  }
}

}  // namespace capture
}  // namespace tvlab
