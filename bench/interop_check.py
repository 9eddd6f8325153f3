"""Reads what tvlab writes with the real third-party readers (docs/interop.md).

usage: bench/.venv/bin/python bench/interop_check.py RUN_DIR [--bin BAZEL_BIN]

  bazel build //experiments:bleu //experiments/hf:export //tests:hf_logits_dump
  bench/.venv/bin/python bench/interop_check.py runs/NAME/TIMESTAMP

- safetensors: model.safetensors and the latest checkpoint's
  optimizer.safetensors load with the `safetensors` package (numpy and torch
  back ends), with the parameter names documented in docs/checkpoints.md and
  the parameter count of metrics.json;
- tensorboard: the run's events.out.tfevents.* file read by tensorboard's
  EventAccumulator gives back every scalar of train_log.csv and metrics.json
  at its step (tests/tensorboard_reader.py);
- sacrebleu: tvlab's corpus BLEU (//experiments:bleu) equals
  sacrebleu.corpus_bleu to 0.01 BLEU, and its 13a tokenization is
  sacrebleu's, line for line (tests/sacrebleu_parity.py);
- transformers: when the run is Llama- or GPT-2-shaped, its export
  (//experiments/hf:export --format hf) loads with transformers, and logits on
  the same tokens agree to 1e-4 and greedy generations are equal
  (tests/hf_interop.py); otherwise the export's refusal is printed.
Exits non-zero on any mismatch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors.numpy import load_file
from safetensors.torch import load_file as load_torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))


def check_safetensors(run_dir):
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
    print(f"ok: safetensors: {len(weights)} tensors, {total} parameters, {len(moments)} optimizer "
          f"moments; e.g. {sorted(weights)[:3]}")


def check_hf(run_dir, bin_dir):
    import hf_interop
    with tempfile.TemporaryDirectory() as out:
        export = subprocess.run([os.path.join(bin_dir, "experiments", "hf", "export"), "--run_dir", run_dir,
                                 "--format", "hf", "--out", out], capture_output=True, text=True)
        if export.returncode != 0:
            print(f"skipped: transformers: this run has no HF export: {export.stderr.strip()}")
            return
        hf_interop.main(run_dir, out, os.path.join(bin_dir, "tests", "hf_logits_dump"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--bin", default=os.path.join(ROOT, "bazel-bin"),
                        help="bazel-bin with //experiments:bleu, //experiments/hf:export and //tests:hf_logits_dump")
    args = parser.parse_args()
    check_safetensors(args.run_dir)
    import tensorboard_reader
    tensorboard_reader.main(args.run_dir)
    import sacrebleu_parity
    sacrebleu_parity.main(os.path.join(args.bin, "experiments", "bleu"))
    check_hf(args.run_dir, args.bin)


if __name__ == "__main__":
    main()
