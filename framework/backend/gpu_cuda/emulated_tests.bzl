"""gpu_cuda's tests on the CPU emulator of CUDA (emulator/cuda_emulator.h).

emulated_gpu_test declares a suite once and gets it in both schedules: NAME_emulated_test
runs every launch in CUDA's forward order, NAME_emulated_reversed_test (with reversed = True)
runs blocks, and a block's threads between barriers, last to first (emulator/reversed_schedule.cc).
Passing in both orders shows the kernels free of the races the order of threads exposes. Every
target is tagged "emulated" (tools/test.sh's CUDA leg leaves them to the main leg); the reversed
one, and a forward one with asan = False, also "noasan" (the ASan leg runs the forward
conformance suite, which reaches every kernel).
"""

def emulated_gpu_test(name, srcs = [], deps = [], args = [], asan = True, reversed = False, size = None, shard_count = None):
    schedules = [("_emulated_test", [], asan)]
    if reversed:
        schedules.append(("_emulated_reversed_test", ["//framework/backend/gpu_cuda/emulator:reversed_schedule"], False))
    for suffix, schedule_deps, under_asan in schedules:
        native.cc_test(
            name = name + suffix,
            srcs = srcs,
            args = args,
            linkstatic = 1,
            size = size if under_asan else None,
            shard_count = shard_count,
            tags = ["emulated"] + ([] if under_asan else ["noasan"]),
            deps = deps + schedule_deps + [
                "//framework/backend:all_with_emulated_gpu",
                "//framework/backend/gpu_cuda/emulator:cuda_emulator",
                "//framework/core",
                "//third_party/system:gtest_main",
            ],
        )
