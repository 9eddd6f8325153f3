#include "framework/train/safetensors.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/core/status_macros.h"
#include "framework/io/atomic_file.h"
#include "framework/train/safetensors_parse.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {

absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, Var>>& tensors,
                              FileSystem* fs) {
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
  TVLAB_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Open(fs, path));
  uint64_t n = header.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>(static_cast<unsigned char>(n >> (8 * i)));
  TVLAB_RETURN_IF_ERROR(out.Append(absl::string_view(len, 8)));
  TVLAB_RETURN_IF_ERROR(out.Append(header));
  for (const auto& [name, var] : tensors) {
    const Tensor t = var.value().ToHost();  // an edge: device weights to the file
    TVLAB_RETURN_IF_ERROR(out.Append(
        absl::string_view(reinterpret_cast<const char*>(t.data()), t.numel() * sizeof(float))));
  }
  return out.Commit();
}

using safetensors_internal::Bad;
using safetensors_internal::CheckFinite;
using safetensors_internal::CheckHeaderLength;
using safetensors_internal::Entry;
using safetensors_internal::HeaderLength;
using safetensors_internal::ParseHeader;

absl::StatusOr<std::map<std::string, Tensor>> ReadSafetensors(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return absl::NotFoundError(absl::StrCat("cannot read '", path, "': ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' is not a regular file", S_ISDIR(st.st_mode) ? " but a directory" : "",
        "; give a .safetensors file written by tvlab"));
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) return Bad(path, absl::StrCat("only ", size, " bytes"));
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  const uint64_t header_len = HeaderLength(len);
  TVLAB_RETURN_IF_ERROR(CheckHeaderLength(header_len, size, path));
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) return Bad(path, "short read of the header (did the file change while reading?)");
  TVLAB_ASSIGN_OR_RETURN(std::vector<Entry> entries, ParseHeader(header, size - 8 - header_len, path));
  std::map<std::string, Tensor> out;
  for (const Entry& e : entries) {
    Tensor t = Tensor::Empty(e.shape, Device::kCpu);  // read on the host, checked there
    in.seekg(static_cast<std::streamoff>(8 + header_len + e.begin));
    in.read(reinterpret_cast<char*>(t.data()), static_cast<std::streamsize>(e.end - e.begin));
    if (!in) return Bad(path, absl::StrCat("short read of tensor '", e.name, "' (did the file change?)"));
    TVLAB_RETURN_IF_ERROR(CheckFinite(t, e.name, path));
    out.emplace(e.name, std::move(t));
  }
  return out;
}

absl::Status CheckMatches(const std::map<std::string, Tensor>& tensors,
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
  return absl::OkStatus();
}

absl::Status AssignByName(const std::map<std::string, Tensor>& tensors,
                          const std::vector<std::pair<std::string, Var>>& params,
                          const std::string& source) {
  TVLAB_RETURN_IF_ERROR(CheckMatches(tensors, params, source));
  for (const auto& [name, var] : params) {
    const Tensor src = tensors.at(name).ToHost();
    Tensor& dst = const_cast<Var&>(var).mutable_value();
    // Into the parameter's own storage, wherever it lives (an edge).
    AllocatorFor(dst.device()).memory().CopyFromHost(src.data(), dst.ptr(),
                                                     src.numel() * sizeof(float));
  }
  return absl::OkStatus();
}

}  // namespace tvlab
