"""The sort_digits experiment in JAX (CPU), as a researcher would write it:
one jitted training step (forward, backward and AdamW) of the same model as
tvlab's configs/sort_digits.pbtxt: embedding * sqrt(d) + sinusoidal
positions, 2 Pre-LN encoder layers (d 64, 4 heads, FFN 128, ReLU, dropout
0.1) with a final LayerNorm, linear head; AdamW(lr 1e-3, wd 0.01); 1001 steps
of 64 fresh sequences. Prints one JSON line. Training time excludes the
first step's compilation, which is reported separately.

usage: python jax_sort.py [--steps 1001]   (threads: XLA_FLAGS, see sort_bench.sh)
"""
import argparse
import json
import math
import time

import jax
import jax.numpy as jnp

D, H, F, L, V, T, B = 64, 4, 128, 2, 10, 8, 64


def sinusoidal():
    pos = jnp.arange(T)[:, None]
    i = jnp.arange(0, D, 2)[None, :]
    angle = pos / (10000 ** (i / D))
    table = jnp.zeros((T, D))
    return table.at[:, 0::2].set(jnp.sin(angle)).at[:, 1::2].set(jnp.cos(angle))


def init(key):
    keys = iter(jax.random.split(key, 64))

    def linear(n_in, n_out):
        bound = 1 / math.sqrt(n_in)
        return {"w": jax.random.uniform(next(keys), (n_in, n_out), minval=-bound, maxval=bound),
                "b": jax.random.uniform(next(keys), (n_out,), minval=-bound, maxval=bound)}

    def norm():
        return {"g": jnp.ones(D), "b": jnp.zeros(D)}

    layers = [{"n1": norm(), "qkv": linear(D, 3 * D), "o": linear(D, D), "n2": norm(),
               "f1": linear(D, F), "f2": linear(F, D)} for _ in range(L)]
    return {"embed": jax.random.normal(next(keys), (V, D)), "layers": layers,
            "final": norm(), "head": linear(D, V)}


def layer_norm(p, x):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + 1e-5) * p["g"] + p["b"]


def dropout(key, x, rate=0.1):
    keep = jax.random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), 0.0)


def forward(params, x, key, train):
    h = params["embed"][x] * math.sqrt(D) + sinusoidal()  # (B, T, D)
    keys = jax.random.split(key, 4 * L)
    for i, p in enumerate(params["layers"]):
        a = layer_norm(p["n1"], h)
        q, k, v = jnp.split(a @ p["qkv"]["w"] + p["qkv"]["b"], 3, axis=-1)
        split = lambda t: t.reshape(B if train else x.shape[0], T, H, D // H).transpose(0, 2, 1, 3)
        q, k, v = split(q), split(k), split(v)
        w = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(D // H), axis=-1)
        if train:
            w = dropout(keys[4 * i], w)
        o = (w @ v).transpose(0, 2, 1, 3).reshape(h.shape)
        o = o @ p["o"]["w"] + p["o"]["b"]
        h = h + (dropout(keys[4 * i + 1], o) if train else o)
        f = jax.nn.relu(layer_norm(p["n2"], h) @ p["f1"]["w"] + p["f1"]["b"])
        if train:
            f = dropout(keys[4 * i + 2], f)
        f = f @ p["f2"]["w"] + p["f2"]["b"]
        h = h + (dropout(keys[4 * i + 3], f) if train else f)
    h = layer_norm(params["final"], h)
    return h @ params["head"]["w"] + params["head"]["b"]


def loss_fn(params, x, y, key):
    logits = forward(params, x, key, True)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[..., None], -1))


@jax.jit
def train_step(params, m, v, step, key):
    data_key, drop_key = jax.random.split(key)
    x = jax.random.randint(data_key, (B, T), 0, V)
    y = jnp.sort(x, axis=1)
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y, drop_key)
    b1, b2, lr, wd, eps = 0.9, 0.999, 1e-3, 0.01, 1e-8
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    t = step + 1
    update = lambda p, m, v: p * (1 - lr * wd) - lr * (m / (1 - b1 ** t)) / (jnp.sqrt(v / (1 - b2 ** t)) + eps)
    return jax.tree_util.tree_map(update, params, m, v), m, v, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1001)
    parser.add_argument("--threads", type=int, default=1, help="recorded; set XLA_FLAGS")
    args = parser.parse_args()
    key = jax.random.PRNGKey(0)
    params = init(key)
    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)
    start = time.perf_counter()
    params, m, v, loss = train_step(params, m, v, 0, jax.random.fold_in(key, 0))
    loss.block_until_ready()
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for step in range(1, args.steps):
        params, m, v, loss = train_step(params, m, v, step, jax.random.fold_in(key, step))
    loss.block_until_ready()
    train_seconds = time.perf_counter() - start
    x = jax.random.randint(jax.random.PRNGKey(42), (1000, T), 0, V)
    y = jnp.sort(x, axis=1)
    pred = forward(params, x, key, False).argmax(-1)
    steps = args.steps - 1
    print(json.dumps({
        "peer": f"jax {jax.__version__}",
        "threads": args.threads,
        "train_seconds": train_seconds * args.steps / steps,  # scaled to all steps
        "compile_seconds": compile_seconds,
        "tokens_per_second": steps * B * T / train_seconds,
        "final_train_loss": float(loss),
        "token_accuracy": float((pred == y).mean()),
        "sequence_accuracy": float((pred == y).all(axis=1).mean()),
        "parameters": sum(p.size for p in jax.tree_util.tree_leaves(params)),
    }))


if __name__ == "__main__":
    main()
