#!/usr/bin/env python3
"""Grep-level check that the framework reads tensor data on the host only at
its edges (docs/architecture.md, "Devices and host access"), run by
tools/test.sh beside the layering check.

Tensor::data() is the host accessor (it stops the process for a tensor on a
device; tests/simulated_device_test.cc exercises every model path on such a
device). This check keeps new host reads from creeping in where no test runs
on a device: in production sources (not tests, not framework/testing) any
`.data()` / `->data()` call is allowed only

  * in the files of the edges listed in ALLOWED (backends, data loading,
    checkpoints, reporting, command-line tools), or
  * on a line that says why with a `// host:` comment (for example a
    std::vector's data()).

Prints every violation and exits 1, or prints one summary line and exits 0.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ALLOWED = (
    "framework/backend/",          # kernels and device memory
    "framework/tensor/",           # the copies between host and device
    "framework/data/",             # loading batches
    "framework/io/",               # files (no tensors there)
    "framework/tensorboard/",      # reporting: event files (no tensors there)
    "plugins/task/",               # tasks build host batches (data loading)
    "framework/train/safetensors", # checkpoints and weights files
    "framework/train/checkpoint",
    "framework/train/fuzz/",       # fuzz targets of the weights reader
    "framework/testing/",          # test support
    "framework/autograd/gradcheck", # test support: finite differences on host tensors
    "experiments/",                # command-line tools, grids and reports
)
CALL = re.compile(r"(\.|->)data\(\)")


def is_test(path):
    return path.endswith("_test.cc") or path.startswith("tests/")


def main():
    checked, violations = 0, []
    for top in ("framework", "plugins", "experiments"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), ROOT)
                if is_test(path) or path.startswith(ALLOWED):
                    continue
                checked += 1
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if CALL.search(line) and "// host:" not in line:
                            violations.append(f"{path}:{number}: {line.strip()}")
    for v in violations:
        print("host access outside the framework's edges (use a kernel or an explicit copy, "
              "or mark a non-tensor .data() with '// host: why'):", v)
    if violations:
        return 1
    print(f"host access check: {checked} production files outside the edges, "
          "no tensor data read on the host")
    return 0


if __name__ == "__main__":
    sys.exit(main())
