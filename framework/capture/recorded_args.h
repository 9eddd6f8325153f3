#ifndef TVLAB_FRAMEWORK_CAPTURE_RECORDED_ARGS_H_
#define TVLAB_FRAMEWORK_CAPTURE_RECORDED_ARGS_H_

// The arguments of one recorded kernel call, kept by value (kernels.def's
// parameter types with references and const dropped), and the three things
// step capture asks of them:
//   Same(a, b)           equal, field by field (two recordings agree);
//   Rekey(x, from, to)   every random stream keyed by step `from` moved to
//                        step `to` (dropout at the replayed step);
//   Pointers(x, out)     every buffer pointer, for the liveness checks.
// A kernel whose parameters include a new type needs an overload of each
// here (the recording backend does not compile otherwise).

#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "framework/backend/backend.h"

namespace tvlab {
namespace capture {

// std::tuple of a kernel signature's parameters, by value.
template <typename Signature>
struct ArgsOf;
template <typename... Params>
struct ArgsOf<void(Params...)> {
  using type = std::tuple<std::decay_t<Params>...>;
};

// Same: scalars, enums, pointers and vectors of them compare with ==.
template <typename T>
bool Same(const T& a, const T& b) {
  return a == b;
}
bool Same(const GemmDesc& a, const GemmDesc& b);
bool Same(const AttentionMask& a, const AttentionMask& b);
bool Same(const FusedAttentionDesc& a, const FusedAttentionDesc& b);
bool Same(const GatedLinearScanDesc& a, const GatedLinearScanDesc& b);
bool Same(const AdamWHyper& a, const AdamWHyper& b);
bool Same(const SgdHyper& a, const SgdHyper& b);
bool Same(const LionHyper& a, const LionHyper& b);
bool Same(const std::vector<AdamWTensor>& a, const std::vector<AdamWTensor>& b);
bool Same(const std::vector<PointwiseStep>& a, const std::vector<PointwiseStep>& b);

template <typename... T, size_t... I>
bool SameTuple(const std::tuple<T...>& a, const std::tuple<T...>& b, std::index_sequence<I...>) {
  return (Same(std::get<I>(a), std::get<I>(b)) && ...);
}
template <typename... T>
bool Same(const std::tuple<T...>& a, const std::tuple<T...>& b) {
  return SameTuple(a, b, std::index_sequence_for<T...>{});
}

// Rekey: only random streams (and descs that hold one) change.
template <typename T>
void Rekey(T&, uint64_t, uint64_t) {}
void Rekey(RngStream& stream, uint64_t from, uint64_t to);
void Rekey(FusedAttentionDesc& d, uint64_t from, uint64_t to);
void Rekey(std::vector<PointwiseStep>& steps, uint64_t from, uint64_t to);
template <typename... T>
void Rekey(std::tuple<T...>& args, uint64_t from, uint64_t to) {
  std::apply([&](auto&... x) { (Rekey(x, from, to), ...); }, args);
}

// Pointers: raw pointers are buffers; descs carry host vectors (kept by
// value), so only the optimizers' tensor lists and pointwise chains add
// more.
template <typename T>
void Pointers(const T&, std::vector<const void*>*) {}
template <typename T>
void Pointers(T* p, std::vector<const void*>* out) {
  out->push_back(p);
}
void Pointers(const std::vector<AdamWTensor>& tensors, std::vector<const void*>* out);
void Pointers(const std::vector<PointwiseStep>& steps, std::vector<const void*>* out);
template <typename... T>
void Pointers(const std::tuple<T...>& args, std::vector<const void*>* out) {
  std::apply([&](const auto&... x) { (Pointers(x, out), ...); }, args);
}

}  // namespace capture
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CAPTURE_RECORDED_ARGS_H_
