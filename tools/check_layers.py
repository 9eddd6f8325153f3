#!/usr/bin/env python3
"""Checks tvlab's layering (docs/architecture.md), run by tools/test.sh:

  * the Bazel package graph of //... has no cycle (test and testonly targets left out: a
    plugin's conformance test links the default plugins of every kind, its
    own package's among them; and a package's edges to the packages inside
    its own folder, which it aggregates: //framework/backend:all links the
    backends under framework/backend/, each of which implements
    //framework/backend's interface);
  * nothing under framework/ depends on plugins/, experiments/ or tests/,
    except that tests (test targets and testonly code, *_test.cc files)
    beside the framework code they test may link and include plugins/: a
    model or task cannot be exercised without some plugin;
  * nothing under plugins/ depends on experiments/, tests/ or framework/model;
  * the same holds for #include lines (no file under plugins/ includes
    framework/model/, no file under framework/ includes plugins/ or
    experiments/).

Prints every violation and exits 1, or prints one summary line and exits 0.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Dependencies allowed to tests only: (package prefix, dependency prefixes).
TEST_ONLY_ALLOWED = [("framework/", ("plugins",))]

FORBIDDEN = [  # (package prefix, forbidden dependency prefixes)
    ("framework/", ("plugins", "experiments", "tests")),
    ("plugins/", ("experiments", "tests", "framework/model")),
    # Data parallelism sits below the trainer that calls it.
    ("framework/distributed", ("framework/train", "framework/model", "framework/data")),
]


def package(label):
    return label.split(":")[0].lstrip("/")


def query_edges(expression):
    out = subprocess.run(
        ["bazel", "query", expression, "--output=graph", "--noimplicit_deps", "--notool_deps"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout
    edges = set()
    for a, b in re.findall(r'"(//[^"]*)"\s*->\s*"([^"]*)"', out):
        for src in a.split("\\n"):  # graph output may merge equivalent nodes
            for dst in b.split("\\n"):
                if dst.startswith("//"):
                    pa, pb = package(src), package(dst)
                    if pa != pb:
                        edges.add((pa, pb))
    return edges


def find_cycle(edges):
    graph = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, []):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def under(path, prefix):
    return path == prefix.rstrip("/") or path.startswith(prefix.rstrip("/") + "/")


def test_only_allowed(source, dependency):
    return any(under(source, prefix) and any(under(dependency, x) for x in allowed)
               for prefix, allowed in TEST_ONLY_ALLOWED)


def main():
    problems = []
    edges = query_edges("deps(//...)")
    production = query_edges("deps(//... except tests(//...) except attr(testonly, 1, //...))")
    cycle = find_cycle({(a, b) for a, b in production if not b.startswith(a + "/")})
    if cycle:
        problems.append("package cycle: " + " -> ".join(cycle))
    for a, b in sorted(edges):
        for prefix, bad in FORBIDDEN:
            if under(a, prefix) and any(under(b, x) for x in bad):
                if (a, b) not in production and test_only_allowed(a, b):
                    continue
                problems.append(f"{a} depends on {b}")
    include = re.compile(r'#include "([^"]+)"')
    for top, bad in FORBIDDEN:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith((".cc", ".h", ".cu")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT)
                for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                    m = include.search(line)
                    if m and any(under(m.group(1), x) for x in bad):
                        if f.endswith("_test.cc") and test_only_allowed(rel, m.group(1)):
                            continue
                        problems.append(f"{os.path.relpath(path, ROOT)}:{n}: includes {m.group(1)}")
    for p in problems:
        print("layering: " + p)
    if problems:
        return 1
    packages = {a for a, _ in edges} | {b for _, b in edges}
    print(f"layering: {len(packages)} packages, {len(edges)} package edges, no cycle, no upward dependency")
    return 0


if __name__ == "__main__":
    sys.exit(main())
