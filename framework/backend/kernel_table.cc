// What kernels.def defines beyond declarations: kernel names and kinds, and
// the body of every Required and Optional kernel in Backend, which stops
// the process when a backend that does not implement the kernel is called.

#include <cstdlib>

#include "framework/backend/backend.h"
#include "framework/core/check.h"

namespace tvlab {

std::array<Kernel, kKernelCount> AllKernels() {
  return {{
#define TVLAB_KERNEL(name, kind, parameters, arguments) Kernel::k##name,
#include "framework/backend/kernels.def"
  }};
}

const char* KernelName(Kernel kernel) {
  switch (kernel) {
#define TVLAB_KERNEL(name, kind, parameters, arguments) \
  case Kernel::k##name:                                 \
    return #name;
#include "framework/backend/kernels.def"
  }
  return "?";
}

KernelKind KernelKindOf(Kernel kernel) {
  switch (kernel) {
#define TVLAB_KERNEL(name, kind, parameters, arguments) \
  case Kernel::k##name:                                 \
    return KernelKind::k##kind;
#include "framework/backend/kernels.def"
  }
  return KernelKind::kRequired;
}

void Backend::Missing(Kernel kernel) const {
  TVLAB_CHECK(false) << "backend " << name() << " does not implement kernel "
                     << KernelName(kernel) << " (validation should have refused it)";
  std::abort();
}

// Required and Optional kernels: Missing. Composed ones have their bodies
// in composed_kernels.cc.
#define TVLAB_MISSING_BODY_Required(name, parameters) \
  void Backend::name parameters { Missing(Kernel::k##name); }
#define TVLAB_MISSING_BODY_Optional TVLAB_MISSING_BODY_Required
#define TVLAB_MISSING_BODY_Composed(name, parameters)
#define TVLAB_KERNEL(name, kind, parameters, arguments) \
  TVLAB_MISSING_BODY_##kind(name, parameters)
#include "framework/backend/kernels.def"
#undef TVLAB_MISSING_BODY_Required
#undef TVLAB_MISSING_BODY_Optional
#undef TVLAB_MISSING_BODY_Composed

}  // namespace tvlab
