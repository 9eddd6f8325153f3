"""Helpers for a plugin's PyTorch parity script (<name>_parity.py).

The script runs the plugin through parity_dump (the C++ tool, whose path is
argv[1]) on seeded inputs, recomputes the same function in PyTorch from the
published formula (never from tvlab's code), in float64, and compares the
output and every gradient:

    from parity import dump, check, finish
    d = dump(kind="ffn", plugin="gelu", d_model=8, d_ff=16, shape="2,3,8")
    x = d["x"].requires_grad_()
    y = reference(x, d["param/w_1.weight"], ...)
    check("y", d["y"], y)
    check_grads(d, y, {"dx": x, "grad/w_1.weight": w1})
    finish()

Run by the sh_test that tvlab_plugin(parity = ...) makes. Scores and
layouts use attention_parity.py on top of this.
"""

import functools
import importlib.util
import os
import subprocess
import sys
import tempfile

import torch

torch.set_default_dtype(torch.float64)

_failures = []
_count = [0]


def dump(**args):
    """Runs parity_dump with key=value args; returns {name: float64 tensor}."""
    out = os.path.join(os.environ.get("TEST_TMPDIR", tempfile.gettempdir()), "parity_dump.txt")
    command = [sys.argv[1]] + [f"{k}={v}" for k, v in args.items()] + [f"out={out}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"parity_dump failed ({done.returncode}): {done.stderr}")
    tensors = {}
    with open(out) as f:
        for line in f:
            fields = line.split()
            name, rank = fields[0], int(fields[1])
            shape = [int(d) for d in fields[2:2 + rank]]
            values = [float(v) for v in fields[2 + rank:]]
            tensors[name] = torch.tensor(values, dtype=torch.float64).reshape(shape)
    return tensors


@functools.lru_cache(maxsize=None)
def registered(kind):
    """(folder, default plugin or None, [registered names]) of a kind id
    ("attention_score"), from the kind table of the dump tool's binary."""
    done = subprocess.run([sys.argv[1], f"list={kind}"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"parity_dump list={kind} failed ({done.returncode}): {done.stderr}")
    folder, default, *names = done.stdout.split()
    return folder, (None if default == "-" else default), names


@functools.lru_cache(maxsize=None)
def formula(kind, name):
    """The module of plugin `name`'s parity script, <folder>/<name>/<name>_parity.py
    (in the test's runfiles), imported without running its checks."""
    folder, _, _ = registered(kind)
    root = os.path.join(os.environ.get("TEST_SRCDIR", "."), os.environ.get("TEST_WORKSPACE", "tvlab"))
    path = os.path.join(root, folder, name, name + "_parity.py")
    if not os.path.exists(path):
        raise SystemExit(f"no PyTorch formula for {kind} plugin '{name}': {folder}/{name}/{name}_parity.py "
                         "is missing (every score and layout has one; docs/writing-a-plugin.md)")
    spec = importlib.util.spec_from_file_location(f"{name}_parity", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def options_of(text):
    """A plugin's options in text format ("base: 500 pairing: HALVES") as
    {field: value string}; fields left out are absent."""
    fields = text.replace(":", " ").split()
    return dict(zip(fields[0::2], fields[1::2]))


def leaf(t):
    """A float64 copy of `t` that collects a gradient."""
    return t.clone().requires_grad_(True)


def check(name, got, want, atol=2e-5, rtol=2e-5):
    """Records whether tvlab's `got` matches PyTorch's `want` elementwise."""
    _count[0] += 1
    want = want.detach().to(torch.float64)
    if got.shape != want.shape:
        _failures.append(f"{name}: shape {tuple(got.shape)} vs PyTorch {tuple(want.shape)}")
        return
    error = (got - want).abs().max().item() if got.numel() else 0.0
    ok = torch.allclose(got, want, atol=atol, rtol=rtol)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: max |tvlab - torch| = {error:.3g}")
    if not ok:
        _failures.append(f"{name}: max abs error {error:.3g} (atol {atol}, rtol {rtol})")


def check_grads(d, y, leaves):
    """Backpropagates sum(y * g) in PyTorch and checks each named gradient.

    `leaves` maps a dump name ("dx", "grad/<param>") to the tensor created
    with leaf() that it is the gradient of."""
    (y * d["g"]).sum().backward()
    for name, t in leaves.items():
        check(name, d[name], t.grad if t.grad is not None else torch.zeros_like(t))


def record(ok, line):
    """Counts one comparison the caller judged by its own rule; prints `line`
    and keeps it as a failure unless ok."""
    _count[0] += 1
    print(f"{'ok  ' if ok else 'FAIL'} {line}")
    if not ok:
        _failures.append(line)


def finish():
    """Exits non-zero if any check failed (the sh_test's verdict)."""
    if _count[0] == 0:
        _failures.append("no checks ran")
    if _failures:
        print("\n".join(["PARITY FAILED:"] + _failures))
        sys.exit(1)
    print(f"{_count[0]} parity checks passed")
