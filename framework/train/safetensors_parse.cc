#include "framework/train/safetensors_parse.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "framework/core/status_macros.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {
namespace safetensors_internal {
namespace {

constexpr int kMaxRank = 16;
constexpr uint64_t kMaxDim = uint64_t{1} << 40;

// A JSON number that is a non-negative integer no larger than `max`.
bool AsInteger(const google::protobuf::Value& v, uint64_t max, uint64_t* out) {
  if (v.kind_case() != google::protobuf::Value::kNumberValue) return false;
  const double d = v.number_value();
  if (!std::isfinite(d) || d < 0 || d != std::floor(d) || d > static_cast<double>(max)) return false;
  *out = static_cast<uint64_t>(d);
  return true;
}

std::string JsonText(const google::protobuf::Value& v) {
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(v, &text).ok()) text = "?";
  if (text.size() > 40) text = text.substr(0, 40) + "...";
  return text;
}

}  // namespace

absl::Status Bad(const std::string& source, const std::string& what) {
  return absl::DataLossError(absl::StrCat(source, ": not a valid safetensors file: ", what,
                                          "; re-create it with tvlab or the `safetensors` package"));
}

namespace {

// One tensor's header entry `value` checked against the `data_size` data
// bytes: dtype F32, a shape of bounded rank and dimensions that the data can
// hold, and data_offsets that cover exactly the tensor's bytes.
absl::StatusOr<Entry> ParseEntry(const std::string& name, const google::protobuf::Value& value, uint64_t data_size,
                                 const std::string& source) {
  const std::string tensor = absl::StrCat("tensor '", name, "'");
  if (value.kind_case() != google::protobuf::Value::kStructValue)
    return Bad(source, absl::StrCat(tensor, " is not a JSON object"));
  const auto& f = value.struct_value().fields();
  auto field = [&](const char* key) -> const google::protobuf::Value* {
    auto it = f.find(key);
    return it == f.end() ? nullptr : &it->second;
  };
  const auto* dtype = field("dtype");
  const auto* shape = field("shape");
  const auto* offsets = field("data_offsets");
  if (!dtype || !shape || !offsets || dtype->kind_case() != google::protobuf::Value::kStringValue ||
      shape->kind_case() != google::protobuf::Value::kListValue ||
      offsets->kind_case() != google::protobuf::Value::kListValue || offsets->list_value().values_size() != 2)
    return Bad(source, absl::StrCat(tensor, " lacks dtype (a string), shape (a list) or "
                                    "data_offsets (a list of two)"));
  if (dtype->string_value() != "F32")
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": ", tensor, " has dtype ", dtype->string_value(),
        "; tvlab reads F32 only (convert the file, e.g. tensor.float() in PyTorch)"));
  const auto& dims = shape->list_value().values();
  if (dims.size() > kMaxRank)
    return Bad(source, absl::StrCat(tensor, " has rank ", dims.size(), " (at most ", kMaxRank, ")"));
  Entry e;
  e.name = name;
  // The product of the non-zero dimensions, saturating above 2^62: bounded
  // even for an empty tensor, whose strides still multiply them.
  constexpr uint64_t kCap = uint64_t{1} << 62;
  uint64_t product = 1;
  bool empty = false;
  for (const auto& d : dims) {
    uint64_t n = 0;
    if (!AsInteger(d, kMaxDim, &n))
      return Bad(source, absl::StrCat(tensor, " has dimension ", JsonText(d), "; dimensions are integers in [0, 2^40]"));
    e.shape.push_back(static_cast<int64_t>(n));
    if (n == 0) {
      empty = true;
    } else {
      product = n > kCap / product ? kCap + 1 : product * n;
    }
  }
  if (empty ? product > kMaxDim : product > data_size / sizeof(float))
    return Bad(source, absl::StrCat(tensor, " has shape ", ShapeToString(e.shape), ", more than the ", data_size,
                                    " data bytes hold (truncated?)"));
  const uint64_t numel = empty ? 0 : product;
  const auto& o = offsets->list_value().values();
  if (!AsInteger(o[0], data_size, &e.begin) || !AsInteger(o[1], data_size, &e.end) || e.end < e.begin)
    return Bad(source, absl::StrCat(tensor, " has data_offsets [", JsonText(o[0]), ", ", JsonText(o[1]),
                                    "] outside the ", data_size, " data bytes (truncated?)"));
  if (e.end - e.begin != numel * sizeof(float))
    return Bad(source, absl::StrCat(tensor, " has data_offsets [", e.begin, ", ", e.end, ") (", e.end - e.begin,
                                    " bytes) but shape ", ShapeToString(e.shape), " needs ", numel * sizeof(float)));
  return e;
}

// The tensors must tile the data exactly: no overlap, no unclaimed bytes.
absl::Status CheckTiling(const std::vector<Entry>& entries, uint64_t data_size, const std::string& source) {
  std::vector<const Entry*> order;
  for (const Entry& e : entries) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  uint64_t covered = 0;
  std::string previous = "the start of the data";
  for (const Entry* e : order) {
    if (e->begin < covered)
      return Bad(source, absl::StrCat("tensor '", e->name, "' (bytes [", e->begin, ", ", e->end, ")) overlaps ",
                                      previous));
    if (e->begin > covered)
      return Bad(source, absl::StrCat("bytes [", covered, ", ", e->begin, ") between ", previous, " and tensor '",
                                      e->name, "' belong to no tensor"));
    covered = e->end;
    previous = absl::StrCat("tensor '", e->name, "'");
  }
  if (covered != data_size)
    return Bad(source, absl::StrCat("bytes [", covered, ", ", data_size, ") after ", previous, " belong to no tensor"));
  return absl::OkStatus();
}

}  // namespace

// Parses and checks the JSON header of a file with `data_size` bytes after it.
absl::StatusOr<std::vector<Entry>> ParseHeader(const std::string& header, uint64_t data_size,
                                               const std::string& source) {
  google::protobuf::Struct json;
  if (!google::protobuf::util::JsonStringToMessage(header, &json).ok())
    return Bad(source, "the header is not a JSON object");
  std::vector<Entry> entries;
  for (const auto& [name, value] : json.fields()) {
    if (name == "__metadata__") continue;
    TVLAB_ASSIGN_OR_RETURN(Entry e, ParseEntry(name, value, data_size, source));
    entries.push_back(std::move(e));
  }
  TVLAB_RETURN_IF_ERROR(CheckTiling(entries, data_size, source));
  return entries;
}

// Refuses NaN and infinite values, which would silently poison training.
absl::Status CheckFinite(const Tensor& t, const std::string& name, const std::string& source) {
  const float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(p[i]))
      return absl::DataLossError(absl::StrCat(
          source, ": tensor '", name, "' holds ", std::isnan(p[i]) ? "NaN" : "an infinite value",
          " at element ", i, " of ", t.numel(),
          "; the weights are corrupt or were saved after training diverged: use an earlier checkpoint"));
  }
  return absl::OkStatus();
}

uint64_t HeaderLength(const unsigned char* len) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(len[i]) << (8 * i);
  return n;
}

absl::Status CheckHeaderLength(uint64_t header_len, uint64_t size, const std::string& source) {
  if (header_len > size - 8)
    return Bad(source, absl::StrCat("header of ", header_len, " bytes in a file of ", size, " (truncated?)"));
  if (header_len > kMaxSafetensorsHeaderBytes)
    return Bad(source, absl::StrCat("header of ", header_len, " bytes (at most ",
                                    kMaxSafetensorsHeaderBytes, ")"));
  return absl::OkStatus();
}

}  // namespace safetensors_internal



absl::StatusOr<std::map<std::string, Tensor>> ParseSafetensors(const char* data, size_t size,
                                                               const std::string& source) {
  using namespace safetensors_internal;  // NOLINT: this file's own helpers
  if (size < 8) return Bad(source, absl::StrCat("only ", size, " bytes"));
  const uint64_t header_len = HeaderLength(reinterpret_cast<const unsigned char*>(data));
  TVLAB_RETURN_IF_ERROR(CheckHeaderLength(header_len, size, source));
  const char* body = data + 8 + header_len;
  TVLAB_ASSIGN_OR_RETURN(std::vector<Entry> entries,
                         ParseHeader(std::string(data + 8, header_len), size - 8 - header_len, source));
  std::map<std::string, Tensor> out;
  for (const Entry& e : entries) {
    Tensor t = Tensor::Empty(e.shape, Device::kCpu);  // parsed and checked on the host
    if (e.end > e.begin) std::memcpy(t.data(), body + e.begin, e.end - e.begin);
    TVLAB_RETURN_IF_ERROR(CheckFinite(t, e.name, source));
    out.emplace(e.name, std::move(t));
  }
  return out;
}

}  // namespace tvlab
