"""The sort_digits experiment (configs/sort_digits.pbtxt) in plain PyTorch.

Same model as tvlab's: token embedding * sqrt(d) + sinusoidal positions,
2 Pre-LN encoder layers (d 64, 4 heads, FFN 128, ReLU, dropout 0.1) with a
final LayerNorm, linear head; AdamW lr 1e-3; 1001 steps of 64 fresh
sequences; evaluation on 1000 fresh sequences. Prints one JSON line.

usage: python torch_sort.py --threads N [--steps 1001] [--compile [--simdlen 256]] [--bf16]

--compile trains through torch.compile(model) (PyTorch 2.x, Inductor's C++
backend on the CPU): the first step, which compiles, is timed apart
(compile_seconds) and train_seconds is the other steps' time scaled to all
steps, as bench/jax_sort.py does for JAX's jitted step. --simdlen sets
Inductor's vector width in bits (256: AVX2 code, as sort_bench.sh's ISA=AVX2
asks; ATEN_CPU_CAPABILITY=avx2 made torch.compile crash with a segfault in
PyTorch 2.15 on an AVX-512 Xeon). --bf16 runs the forward and the loss
under torch.autocast("cpu", dtype=torch.bfloat16): the Linear products in
bf16 with fp32 weights, as tvlab's runtime.precision bf16 (sort_bench.sh's
PRECISION=bf16).
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoidal(length, d):
    pos = torch.arange(length).unsqueeze(1)
    i = torch.arange(0, d, 2).unsqueeze(0)
    angle = pos / (10000 ** (i / d))
    table = torch.zeros(length, d)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


class SortTransformer(nn.Module):
    def __init__(self, d=64, heads=4, layers=2, ffn=128, vocab=10, length=8):
        super().__init__()
        self.d = d
        self.embed = nn.Embedding(vocab, d)
        self.register_buffer("pe", sinusoidal(length, d))
        layer = nn.TransformerEncoderLayer(d_model=d, nhead=heads, dim_feedforward=ffn,
                                           dropout=0.1, norm_first=True, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers, norm=nn.LayerNorm(d),
                                             enable_nested_tensor=False)
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        return self.out(self.encoder(self.embed(x) * math.sqrt(self.d) + self.pe))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=1001)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--simdlen", type=int, default=None)
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()
    if args.simdlen is not None:
        import torch._inductor.config as inductor_config
        inductor_config.cpp.simdlen = args.simdlen
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = SortTransformer()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step_model = torch.compile(model) if args.compile else model
    compile_seconds = 0.0
    start = time.perf_counter()
    for step in range(args.steps):
        x = torch.randint(0, 10, (64, 8))
        y = torch.sort(x, dim=1).values
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss = F.cross_entropy(step_model(x).reshape(-1, 10).float(), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.compile and step == 0:  # compilation: timed apart
            compile_seconds = time.perf_counter() - start
            start = time.perf_counter()
    train_seconds = time.perf_counter() - start
    if args.compile:
        train_seconds *= args.steps / (args.steps - 1)  # scaled to all steps
    torch.manual_seed(42)
    x = torch.randint(0, 10, (1000, 8))
    y = torch.sort(x, dim=1).values
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(dim=-1)
    result = {
        "peer": f"pytorch {torch.__version__}" + (" compile" if args.compile else "") + (" bf16" if args.bf16 else ""),
        "threads": args.threads,
        "train_seconds": train_seconds,
        "tokens_per_second": args.steps * 64 * 8 / train_seconds,
        "final_train_loss": loss.item(),
        "token_accuracy": (pred == y).float().mean().item(),
        "sequence_accuracy": (pred == y).all(dim=1).float().mean().item(),
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    if args.compile:
        result["compile_seconds"] = compile_seconds
    print(json.dumps(result))


if __name__ == "__main__":
    main()
