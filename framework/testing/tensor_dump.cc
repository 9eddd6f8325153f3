#include "framework/testing/tensor_dump.h"

#include <cstdio>

namespace tvlab {

void WriteTensor(std::ostream& out, const std::string& name, const Tensor& t) {
  out << name << " " << t.rank();
  for (int64_t d : t.shape()) out << " " << d;
  char buffer[32];
  for (float v : t.ToVector()) {
    std::snprintf(buffer, sizeof(buffer), " %.9g", v);
    out << buffer;
  }
  out << "\n";
}

}  // namespace tvlab
