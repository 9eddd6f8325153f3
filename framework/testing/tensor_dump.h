#ifndef TVLAB_FRAMEWORK_TESTING_TENSOR_DUMP_H_
#define TVLAB_FRAMEWORK_TESTING_TENSOR_DUMP_H_

// The line format every parity dump writes and framework/testing/parity.py
// reads: one tensor a line.

#include <ostream>
#include <string>

#include "framework/tensor/tensor.h"

namespace tvlab {

// One line `name rank d0 .. dn v0 v1 ...` (values as %.9g: exact for float).
void WriteTensor(std::ostream& out, const std::string& name, const Tensor& t);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TESTING_TENSOR_DUMP_H_
