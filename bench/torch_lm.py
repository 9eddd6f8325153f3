"""A GPT-style byte-level decoder trained in PyTorch 2.x, the peer of tvlab's
bench/configs/*.pbtxt: token embedding (+ learned positions unless
--positions none), pre-LN blocks (LayerNorm, causal multi-head attention
through torch's fused scaled_dot_product_attention, GELU FFN), final
LayerNorm, linear head; AdamW; no dropout. One step = forward, backward and
AdamW on one batch of random bytes. Prints one JSON line: the median step
time over the timed steps (after --warmup untimed ones), tokens/s and the
process's peak RSS.

usage: python torch_lm.py --d 256 --layers 4 --heads 8 --ff 1024 --context 256 --batch 16
           [--positions learned|none] [--steps 10] [--warmup 2] [--threads 1]
"""
import argparse
import json
import resource
import statistics
import time

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.f1, self.f2 = torch.nn.Linear(d, ff), torch.nn.Linear(ff, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).split(d, dim=-1)
        split = lambda z: z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        return x + self.f2(F.gelu(self.f1(self.n2(x))))


class Lm(torch.nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed = torch.nn.Embedding(256, a.d)
        self.pos = torch.nn.Embedding(a.context, a.d) if a.positions == "learned" else None
        self.blocks = torch.nn.ModuleList(Block(a.d, a.heads, a.ff) for _ in range(a.layers))
        self.norm, self.head = torch.nn.LayerNorm(a.d), torch.nn.Linear(a.d, 256)

    def forward(self, x):
        h = self.embed(x)
        if self.pos is not None:
            h = h + self.pos(torch.arange(x.shape[1]))
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))


def main():
    p = argparse.ArgumentParser()
    for name, default in [("d", 256), ("layers", 4), ("heads", 8), ("ff", 1024), ("context", 256),
                          ("batch", 16), ("steps", 10), ("warmup", 2), ("threads", 1)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--positions", default="learned", choices=["learned", "none"])
    p.add_argument("--bf16", action="store_true",
                   help="mixed precision: torch.autocast('cpu', bfloat16) around the forward "
                        "(bf16 matmuls, fp32 weights and optimizer), as tvlab's runtime.precision bf16")
    p.add_argument("--compile", action="store_true",
                   help="train through torch.compile(model) (Inductor); the warm-up steps, the first "
                        "of which compiles, are not timed (compile_seconds reports the first)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Lm(a)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(0, 256, (a.batch, a.context + 1))
    step_model = torch.compile(model) if a.compile else model
    times = []
    for step in range(a.warmup + a.steps):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            logits = step_model(data[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, 256), data[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step == 0:
            first_step_s = time.perf_counter() - start
        if step >= a.warmup:
            times.append(time.perf_counter() - start)
    step_s = statistics.median(times)
    print(json.dumps({
        "peer": f"torch {torch.__version__} (SDPA{', bf16 autocast' if a.bf16 else ''}"
                f"{', compile' if a.compile else ''})",
        "compile_seconds": first_step_s if a.compile else 0.0,
        "threads": a.threads,
        "step_seconds": step_s,
        "tokens_per_second": a.batch * a.context / step_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "parameters": sum(t.numel() for t in model.parameters()),
        "final_loss": float(loss),
    }))


if __name__ == "__main__":
    main()
