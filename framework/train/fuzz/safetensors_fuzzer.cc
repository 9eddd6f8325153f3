// libFuzzer target for the safetensors reader's checks (ParseSafetensors, the
// same code ReadSafetensors runs on a file). Any input must give a tensor map
// or a Status: a crash, a sanitizer report, a leak or an abort is a bug.
// Built and run by tools/fuzz.sh; the seed corpus is corpus/ next to this file.

#include <cstddef>
#include <cstdint>

#include "framework/train/safetensors_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto result = tvlab::ParseSafetensors(reinterpret_cast<const char*>(data), size, "fuzz");
  if (result.ok()) {
    // Touch every element: a wrong size would show up under ASan.
    volatile float sum = 0;
    for (const auto& [name, t] : *result)
      for (int64_t i = 0; i < t.numel(); ++i) sum = sum + t.data()[i];
  }
  return 0;
}
