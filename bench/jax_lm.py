"""The model of bench/torch_lm.py in JAX (CPU), as a researcher would write
it: one jitted training step (forward, backward, AdamW), attention through
jax.nn.dot_product_attention(is_causal=True). Compilation is excluded from
the step time and reported separately. Prints one JSON line.

usage: python jax_lm.py (same flags as torch_lm.py; threads: XLA_FLAGS)
"""
import argparse
import json
import math
import resource
import statistics
import time

import jax
import jax.numpy as jnp


def init(key, a):
    keys = iter(jax.random.split(key, 16 * a.layers + 8))

    def linear(n_in, n_out):
        bound = 1 / math.sqrt(n_in)
        return {"w": jax.random.uniform(next(keys), (n_in, n_out), minval=-bound, maxval=bound),
                "b": jnp.zeros(n_out)}

    norm = lambda: {"g": jnp.ones(a.d), "b": jnp.zeros(a.d)}
    layers = [{"n1": norm(), "qkv": linear(a.d, 3 * a.d), "o": linear(a.d, a.d), "n2": norm(),
               "f1": linear(a.d, a.ff), "f2": linear(a.ff, a.d)} for _ in range(a.layers)]
    params = {"embed": jax.random.normal(next(keys), (256, a.d)), "layers": layers,
              "final": norm(), "head": linear(a.d, 256)}
    if a.positions == "learned":
        params["pos"] = 0.02 * jax.random.normal(next(keys), (a.context, a.d))
    return params


def layer_norm(p, x):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + 1e-5) * p["g"] + p["b"]


def make_step(a):
    def forward(params, x):
        h = params["embed"][x]
        if "pos" in params:
            h = h + params["pos"][None, : x.shape[1]]
        b, t, d = h.shape
        for p in params["layers"]:
            q, k, v = jnp.split(layer_norm(p["n1"], h) @ p["qkv"]["w"] + p["qkv"]["b"], 3, axis=-1)
            split = lambda z: z.reshape(b, t, a.heads, d // a.heads)  # (B, T, N, hs)
            o = jax.nn.dot_product_attention(split(q), split(k), split(v), is_causal=True)
            h = h + o.reshape(b, t, d) @ p["o"]["w"] + p["o"]["b"]
            f = jax.nn.gelu(layer_norm(p["n2"], h) @ p["f1"]["w"] + p["f1"]["b"], approximate=False)
            h = h + f @ p["f2"]["w"] + p["f2"]["b"]
        return layer_norm(params["final"], h) @ params["head"]["w"] + params["head"]["b"]

    def loss_fn(params, data):
        logits = forward(params, data[:, :-1])
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), data[:, 1:, None], -1))

    @jax.jit
    def step(params, m, v, t, data):
        loss, grads = jax.value_and_grad(loss_fn)(params, data)
        b1, b2, lr, wd, eps = 0.9, 0.999, 1e-3, 0.01, 1e-8
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        update = lambda p, m, v: p * (1 - lr * wd) - lr * (m / (1 - b1 ** t)) / (
            jnp.sqrt(v / (1 - b2 ** t)) + eps)
        return jax.tree_util.tree_map(update, params, m, v), m, v, loss

    return step


def main():
    p = argparse.ArgumentParser()
    for name, default in [("d", 256), ("layers", 4), ("heads", 8), ("ff", 1024), ("context", 256),
                          ("batch", 16), ("steps", 10), ("warmup", 2), ("threads", 1)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--positions", default="learned", choices=["learned", "none"])
    a = p.parse_args()
    key = jax.random.PRNGKey(0)
    params = init(key, a)
    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)
    data = jax.random.randint(key, (a.batch, a.context + 1), 0, 256)
    step = make_step(a)
    start = time.perf_counter()
    params, m, v, loss = step(params, m, v, 1, data)
    loss.block_until_ready()
    compile_s = time.perf_counter() - start
    times = []
    for i in range(a.warmup + a.steps):
        start = time.perf_counter()
        params, m, v, loss = step(params, m, v, i + 2, data)
        loss.block_until_ready()
        if i >= a.warmup:
            times.append(time.perf_counter() - start)
    step_s = statistics.median(times)
    print(json.dumps({
        "peer": f"jax {jax.__version__} (jit)",
        "threads": a.threads,
        "step_seconds": step_s,
        "compile_seconds": compile_s,
        "tokens_per_second": a.batch * a.context / step_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "parameters": sum(x.size for x in jax.tree_util.tree_leaves(params)),
        "final_loss": float(loss),
    }))


if __name__ == "__main__":
    main()
