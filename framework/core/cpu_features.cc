#include "framework/core/cpu_features.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace tvlab {
namespace {

std::string EnvText(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// The variable IsaCapText reads.
const char* IsaCapVariable() { return EnvText("ONEDNN_MAX_CPU_ISA").empty() ? "DNNL_MAX_CPU_ISA" : "ONEDNN_MAX_CPU_ISA"; }

}  // namespace

std::string IsaCapText() { return EnvText(IsaCapVariable()); }

IsaCap ParseIsaCap(const std::string& text) {
  const std::string v = absl::AsciiStrToUpper(text);
  for (const char* level :
       {"", "ALL", "AVX512_MIC", "AVX512_MIC_4OPS", "AVX512_CORE", "AVX512_CORE_VNNI", "AVX512_CORE_BF16",
        "AVX512_CORE_AMX"})
    if (v == level) return IsaCap::kAvx512;
  if (v == "AVX2" || v == "AVX2_VNNI") return IsaCap::kAvx2;
  if (v == "AVX") return IsaCap::kAvx;
  if (v == "SSE41") return IsaCap::kSse41;
  return IsaCap::kNone;
}

bool IsaCapAllowsBf16(const std::string& text) {
  const std::string v = absl::AsciiStrToUpper(text);
  return v.empty() || v == "ALL" || v == "AVX512_CORE_BF16" || v == "AVX512_CORE_AMX" ||
         ParseIsaCap(v) == IsaCap::kNone;
}

IsaCap HostIsaCap() {
  static const IsaCap cap = [] {
    const IsaCap parsed = ParseIsaCap(IsaCapText());
    return parsed == IsaCap::kNone ? IsaCap::kAvx512 : parsed;
  }();
  return cap;
}

std::string IsaCapProblem() {
  const std::string text = IsaCapText();
  if (ParseIsaCap(text) != IsaCap::kNone) return "";
  return absl::StrCat(IsaCapVariable(), "='", text,
                      "' is not an instruction set oneDNN 2.6 knows (oneDNN would ignore it): use SSE41, AVX, AVX2, "
                      "AVX2_VNNI, AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX or ALL, or unset it");
}

}  // namespace tvlab
