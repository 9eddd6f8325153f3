"""An independent safetensors reader written from the format's published
description (8-byte little-endian header size N, N bytes of JSON, then the
raw data; every tensor's data_offsets are relative to the data start, and
together they tile it without holes). Used by safetensors_interop_test.sh on
files tvlab wrote; loads each tensor into PyTorch."""
import json
import struct
import sys

import numpy as np
import torch


def read(path):
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    tensors, spans = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        spans.append((begin, end))
        count = int(np.prod(info["shape"])) if info["shape"] else 1
        assert end - begin == 4 * count, name
        array = np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"])
        tensors[name] = torch.from_numpy(array.copy())
    spans.sort()
    assert spans[0][0] == 0 and spans[-1][1] == len(data), "data not fully covered"
    for (_, e), (b, _) in zip(spans, spans[1:]):
        assert e == b, "hole or overlap between tensors"
    return tensors


if __name__ == "__main__":
    run_dir = sys.argv[1]
    weights = read(run_dir + "/model.safetensors")
    metrics = json.load(open(run_dir + "/metrics.json"))
    total = sum(t.numel() for t in weights.values())
    assert total == metrics["parameters"], (total, metrics["parameters"])
    expected = {"embedding.weight", "head.weight", "encoder.layers.0.attention.w_q.weight",
                "decoder.layers.0.cross_attention.w_k.weight", "decoder.final_norm.weight"}
    missing = expected - weights.keys()
    assert not missing, missing
    assert all(torch.isfinite(t).all() for t in weights.values())
    print(f"read {len(weights)} tensors, {total} parameters")
