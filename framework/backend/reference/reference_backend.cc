// The reference backend's registration. Its kernels are in the other
// reference_*.cc files of this folder, by what they do.

#include "framework/backend/reference/reference_backend.h"

#include "framework/backend/describe_backend.h"

namespace tvlab {

PrecisionSupport EveryPrecision(Precision) { return {true, ""}; }

namespace {
const bool kRegistered =
    RegisterBackend(DescribeBackend<ReferenceBackend>("reference").WithPrecisions(&EveryPrecision));
}  // namespace

}  // namespace tvlab
