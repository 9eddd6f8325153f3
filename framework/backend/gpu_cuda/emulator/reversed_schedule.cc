// Linked into a test binary, runs every emulated launch in the reversed
// schedule (cuda_emulator.h, SetReversedSchedule): the same tests, passing
// in both orders, show the kernels free of the races an order exposes.

#include "framework/backend/gpu_cuda/emulator/cuda_emulator.h"

namespace {
const bool kReversed = (cuda_emulator::SetReversedSchedule(true), true);
}  // namespace
