#include "framework/train/safetensors.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

}  // namespace tvlab
