"""Reads what tvlab writes with the real third-party readers.

usage: bench/.venv/bin/python bench/interop_check.py RUN_DIR

- model.safetensors and the latest checkpoint's optimizer.safetensors load
  with the `safetensors` package (numpy and torch back ends), with the
  parameter names documented in docs/checkpoints.md;
- the weights load into torch tensors of the documented shapes.
Exits non-zero on any mismatch.
"""
import json
import os
import sys

import numpy as np
from safetensors.numpy import load_file
from safetensors.torch import load_file as load_torch


def main(run_dir):
    weights = load_file(os.path.join(run_dir, "model.safetensors"))
    torch_weights = load_torch(os.path.join(run_dir, "model.safetensors"))
    assert weights.keys() == torch_weights.keys()
    for name, array in weights.items():
        assert array.dtype == np.float32, name
        assert np.array_equal(array, torch_weights[name].numpy()), name
    metrics = json.load(open(os.path.join(run_dir, "metrics.json")))
    total = sum(a.size for a in weights.values())
    assert total == metrics["parameters"], (total, metrics["parameters"])
    latest = open(os.path.join(run_dir, "checkpoints", "latest")).read().strip()
    moments = load_file(os.path.join(run_dir, "checkpoints", latest, "optimizer.safetensors"))
    for name in weights:
        assert moments[name + ".exp_avg"].shape == weights[name].shape, name
        assert moments[name + ".exp_avg_sq"].min() >= 0, name
    print(f"ok: {len(weights)} tensors, {total} parameters, {len(moments)} optimizer moments; "
          f"e.g. {sorted(weights)[:3]}")


if __name__ == "__main__":
    main(sys.argv[1])
