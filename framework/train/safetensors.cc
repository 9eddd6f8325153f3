#include "framework/train/safetensors.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {

absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, Var>>& tensors) {
  std::string header = "{";
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i].second.value();
    uint64_t bytes = static_cast<uint64_t>(t.numel()) * sizeof(float);
    absl::StrAppend(&header, i ? "," : "", "\"", tensors[i].first,
                    "\":{\"dtype\":\"F32\",\"shape\":[", absl::StrJoin(t.shape(), ","),
                    "],\"data_offsets\":[", offset, ",", offset + bytes, "]}");
    offset += bytes;
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';  // align data to 8 bytes
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write '", tmp, "'"));
    uint64_t n = header.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(header.data(), header.size());
    for (const auto& [name, var] : tensors) {
      const Tensor& t = var.value();
      out.write(reinterpret_cast<const char*>(t.data()), t.numel() * sizeof(float));
    }
    out.flush();
    if (!out) return absl::DataLossError(absl::StrCat("short write to '", tmp, "'"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return absl::InternalError(absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, Tensor>> ReadSafetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  const int64_t size = in.tellg();
  in.seekg(0);
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(path, ": not a valid safetensors file: ", what));
  };
  if (size < 8) return bad(absl::StrCat("only ", size, " bytes"));
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(len[i]) << (8 * i);
  if (header_len > static_cast<uint64_t>(size - 8))
    return bad(absl::StrCat("header of ", header_len, " bytes in a file of ", size, " (truncated?)"));
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  google::protobuf::Struct json;
  if (!google::protobuf::util::JsonStringToMessage(header, &json).ok())
    return bad("the JSON header does not parse");
  const int64_t data_size = size - 8 - static_cast<int64_t>(header_len);
  std::map<std::string, Tensor> out;
  for (const auto& [name, value] : json.fields()) {
    if (name == "__metadata__") continue;
    const auto& f = value.struct_value().fields();
    auto field = [&](const char* key) -> const google::protobuf::Value* {
      auto it = f.find(key);
      return it == f.end() ? nullptr : &it->second;
    };
    const auto* dtype = field("dtype");
    const auto* shape = field("shape");
    const auto* offsets = field("data_offsets");
    if (!dtype || !shape || !offsets || offsets->list_value().values_size() != 2)
      return bad(absl::StrCat("tensor '", name, "' lacks dtype, shape or data_offsets"));
    if (dtype->string_value() != "F32")
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor '", name, "' has dtype ",
                                                     dtype->string_value(), "; tvlab reads F32"));
    Shape dims;
    for (const auto& d : shape->list_value().values()) dims.push_back(static_cast<int64_t>(d.number_value()));
    const int64_t begin = static_cast<int64_t>(offsets->list_value().values(0).number_value());
    const int64_t end = static_cast<int64_t>(offsets->list_value().values(1).number_value());
    if (begin < 0 || end > data_size || end - begin != NumElements(dims) * 4)
      return bad(absl::StrCat("tensor '", name, "' has offsets [", begin, ", ", end,
                              ") that do not fit shape ", ShapeToString(dims), " in ", data_size,
                              " data bytes (truncated?)"));
    Tensor t = Tensor::Empty(dims);
    in.seekg(8 + static_cast<int64_t>(header_len) + begin);
    in.read(reinterpret_cast<char*>(t.data()), end - begin);
    if (!in) return bad(absl::StrCat("short read of tensor '", name, "'"));
    out.emplace(name, std::move(t));
  }
  return out;
}

absl::Status AssignByName(const std::map<std::string, Tensor>& tensors,
                          const std::vector<std::pair<std::string, Var>>& params,
                          const std::string& source) {
  for (const auto& [name, var] : params) {
    auto it = tensors.find(name);
    if (it == tensors.end())
      return absl::InvalidArgumentError(absl::StrCat(
          source, " has no tensor '", name, "', which the model needs; was it written for "
          "another spec?"));
    if (it->second.shape() != var.shape())
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": tensor '", name, "' has shape ", ShapeToString(it->second.shape()),
          " but the model expects ", ShapeToString(var.shape())));
  }
  if (tensors.size() != params.size()) {
    for (const auto& [name, t] : tensors) {
      bool known = false;
      for (const auto& p : params) known = known || p.first == name;
      if (!known)
        return absl::InvalidArgumentError(absl::StrCat(
            source, " has tensor '", name, "' that the model does not; was it written for "
            "another spec?"));
    }
  }
  for (const auto& [name, var] : params) {
    const Tensor& src = tensors.at(name);
    Tensor& dst = const_cast<Var&>(var).mutable_value();
    std::copy(src.data(), src.data() + src.numel(), dst.data());
  }
  return absl::OkStatus();
}

}  // namespace tvlab
