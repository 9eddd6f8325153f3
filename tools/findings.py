#!/usr/bin/env python3
r"""Generated findings: the numbers a study README states, recomputed from its
committed results (docs/grids.md, "Generated findings").

A number in a README is tied to its source by an HTML comment right after it
(invisible on GitHub):

    SwiGLU is −0.028<!--= sig("swiglu", "delta") | +.3f --> nats below ReLU

The comment holds an expression and a Python format spec. In a Markdown
table row write the separator `\|` (`<!--= expr \| format -->`): GitHub's
tables split a row at every unescaped pipe, inside a comment too. The expression may
use numbers, + - * / ( ), abs/min/max/round and these functions over the
README's folder's results/ directory:

    mean(cell, metric)        mean over the cell's finished seeds (results.csv)
    std(cell, metric)         their sample std (n - 1)
    n(cell, metric)           how many
    every(metric)             the metric over every finished run (for min/max)
    exp(x)
    seed(cell, metric, s)     one seed's value
    sig(cell, column)         significance.csv (cell against the baseline)
    hyp(name, column)         hypotheses.csv (pre-registered hypotheses)
    best_lr(variant, metric)  a learning-rate sweep's chosen rate for the variant
                              (its cells "<variant> lr=<value>", column `lr`), by
                              lr_sweep.md's rule: the best mean over seeds among
                              rates whose every seed finished without diverging,
                              a tie to the smaller rate
    log2(x)
    ladder(variant, rung, column)
                              a size ladder's ladder.csv: the row of `variant` at
                              rung `rung` (its depth, or its rung label), column
                              e.g. target_flops_mean, final_eval_loss_ci_low; an
                              empty value (a target not reached) is an error
                              that quotes the row's note
    welch(cell_a, cell_b, metric, column)
                              Welch's two-sided t-test of cell_a's mean minus
                              cell_b's over their finished seeds, computed from
                              results.csv (for pairs significance.csv does not
                              hold); column delta, t, df or p
    holm(p, [p1, p2, ...])    p adjusted by Holm's step-down over the family
                              (which includes p)
    probe(cell, name, stat)   training probes (probes.csv, written when runs set
                              train.probe_every): the mean over the cell's finished
                              seeds (diverged ones left out, as mean does) of one
                              statistic of the probe `name` ("grad_norm/decoder.layers.3");
                              stat is first (at the first probed step: step 0, the
                              initialisation), last, max, mean, first_step, last_step
                              or count
    probe_seed(cell, name, stat, s)
                              one seed's value (a diverged seed's too: its probes
                              up to the divergence)

A cell is its `cell` column in results.csv (the ablation row name, or
"label=value ..."). A study of several grids writes each grid's results to a
folder of its own under results/ (its `results_dir: "results/NAME"`); a cell
(probe and probe_seed's too) or hypothesis written
"NAME/cell" reads results/NAME/ (when results/NAME/ is a folder), so `mean("lm/gla", "eval_loss")` is cell "gla" of results/lm/;
"../STUDY/cell" reads the study beside this one (../STUDY/results/), for a
README that states another study's results, and
"experiments/studies/STUDY/cell" reads that study's results/ from a README at
the repository root (the top README's table of studies). Formatted values use the typographic minus (−), as the
READMEs do.

    tools/findings.py --check README.md ...   exit 1 listing every number that
                                              differs from what its results give
    tools/findings.py --write README.md ...   rewrite those numbers in place
"""
import argparse
import ast
import csv
import math
import os
import re
import statistics
import sys

STUDIES = "experiments/studies/"
MARKER = re.compile(r"(?P<value>[−+\-]?[0-9][0-9,]*(?:\.[0-9]+)?(?:e[−+\-]?[0-9]+)?)"
                    r"<!--=(?P<expr>[^|]*?)\\?\|(?P<spec>[^>]*?)-->")


class Results:
    def __init__(self, folder, sub="results"):
        self.folder = os.path.join(folder, sub)
        self._tables = {}
        self._subs = {}

    def table(self, name):
        if name not in self._tables:
            path = os.path.join(self.folder, name)
            if not os.path.exists(path):
                raise ValueError("%s does not exist" % path)
            with open(path, newline="") as f:
                self._tables[name] = list(csv.DictReader(f))
        return self._tables[name]

    def values(self, cell, metric):
        rows = [r for r in self.table("results.csv") if r["cell"] == cell]
        if not rows:
            cells = sorted({r["cell"] for r in self.table("results.csv")})
            raise ValueError("no cell %r in %s; cells: %s" % (
                cell, os.path.join(self.folder, "results.csv"), ", ".join(cells)))
        out = [(int(r["seed"]), float(r[metric])) for r in rows
               if r["state"] == "finished" and not r.get("diverged_at_step") and r.get(metric, "") != ""]
        return sorted(out)

    def row(self, table, key, name):
        for r in self.table(table):
            if r[key] == name:
                return r
        raise ValueError("no row %r in %s" % (name, os.path.join(self.folder, table)))

    def best_lr(self, variant, metric):
        prefix = variant + " lr="
        rows = [r for r in self.table("results.csv") if r["cell"].startswith(prefix)]
        if not rows:
            raise ValueError("no cell %r... in results.csv" % prefix)
        by_lr = {}
        for r in rows:
            by_lr.setdefault(float(r["lr"]), []).append(r)
        sign = 1 if metric in LOWER_IS_BETTER or metric.split("@")[0] in LOWER_IS_BETTER else -1
        best = None
        for lr in sorted(by_lr):  # ascending: a tie keeps the smaller rate
            runs = by_lr[lr]
            if any(r["state"] != "finished" or r.get("diverged_at_step") or r.get(metric, "") == "" for r in runs):
                continue
            score = sign * statistics.mean(float(r[metric]) for r in runs)
            if best is None or score < best[0]:
                best = (score, lr)
        if best is None:
            raise ValueError("variant %r has no rate whose every seed finished" % variant)
        return best[1]

    def probe_values(self, cell, name, stat):
        """[(seed, state, value)] of one probe statistic of a cell, from probes.csv."""
        if stat not in PROBE_STATS:
            raise ValueError("probe statistic %r is not one of %s" % (stat, ", ".join(PROBE_STATS)))
        table = self.table("probes.csv")
        rows = [r for r in table if r["cell"] == cell]
        if not rows:
            cells = sorted({r["cell"] for r in table})
            raise ValueError("no cell %r in %s; cells with probes: %s" % (
                cell, os.path.join(self.folder, "probes.csv"), ", ".join(cells)))
        named = [r for r in rows if r["probe"] == name]
        if not named:
            names = list(dict.fromkeys(r["probe"] for r in rows))
            raise ValueError("cell %r has no probe %r; its probes: %s" % (cell, name, ", ".join(names)))
        return [(int(r["seed"]), r["state"], float(r[stat])) for r in named if r[stat] != ""]

    def probe(self, cell, name, stat):
        values = [v for _, state, v in self.probe_values(cell, name, stat) if state == "finished"]
        if not values:
            raise ValueError("cell %r has no finished (not diverged) seed with probe %r" % (cell, name))
        return statistics.mean(values)

    def probe_seed(self, cell, name, stat, s):
        for k, _, v in self.probe_values(cell, name, stat):
            if k == s:
                return v
        raise ValueError("cell %r has no seed %d with probe %r %s" % (cell, s, name, stat))

    def sub(self, name):
        """(the Results a name reads, the name within them): "NAME/cell" reads
        results/NAME/ when that is a folder (a study of several grids);
        "../STUDY/cell" reads the sibling study STUDY's results/, and
        "experiments/studies/STUDY/cell" that study's from the repository
        root (the top README)."""
        if name.startswith("../") or name.startswith(STUDIES):
            prefix = "../" if name.startswith("../") else STUDIES
            study, sep, rest = name[len(prefix):].partition("/")
            up = ".." if prefix == "../" else STUDIES.rstrip("/")
            folder = os.path.join(os.path.dirname(self.folder), up, study)
            if not (sep and rest and study and os.path.isdir(os.path.join(folder, "results"))):
                where = "beside this one" if prefix == "../" else "under " + STUDIES.rstrip("/")
                raise ValueError("%r: no study %r %s with a results/ folder (%s)" % (
                    name, study, where, os.path.normpath(os.path.join(folder, "results"))))
            key = prefix + study
            if key not in self._subs:
                self._subs[key] = Results(folder)
            return self._subs[key].sub(rest)
        head, sep, rest = name.partition("/")
        if sep and rest and os.path.isdir(os.path.join(self.folder, head)):
            if head not in self._subs:
                self._subs[head] = Results(self.folder, head)
            return self._subs[head], rest
        return self, name

    def functions(self):
        def vals(cell, metric):
            results, cell = self.sub(cell)
            return [v for _, v in results.values(cell, metric)]

        def seed(cell, metric, s):
            results, name = self.sub(cell)
            for k, v in results.values(name, metric):
                if k == s:
                    return v
            raise ValueError("cell %r has no finished seed %d" % (cell, s))

        def row(table, key, name, col):
            results, name = self.sub(name)
            return float(results.row(table, key, name)[col])

        def welch_test(a, b, metric, column):
            xa, xb = vals(a, metric), vals(b, metric)
            if len(xa) < 2 or len(xb) < 2:
                raise ValueError("welch(%r, %r): each cell needs 2 or more finished seeds (%d, %d)" % (
                    a, b, len(xa), len(xb)))
            return welch(xa, xb, column)

        def probe(cell, name, stat, s=None, one_seed=False):
            results, cell = self.sub(cell)
            return results.probe_seed(cell, name, stat, s) if one_seed else results.probe(cell, name, stat)

        def ladder(variant, rung, column):
            results, name = self.sub(variant)
            for r in results.table("ladder.csv"):
                if r["variant"] == name and str(rung) in (r.get("depth"), r.get("rung")):
                    if column not in r:
                        raise ValueError("ladder.csv has no column %r; columns: %s" % (column, ", ".join(r)))
                    if r[column] == "":
                        raise ValueError("ladder(%r, %r): no %s (%s)" % (variant, rung, column, r["note"] or "empty"))
                    return float(r[column])
            raise ValueError("ladder.csv has no variant %r at rung %r" % (variant, rung))

        return {
            "mean": lambda c, m: statistics.mean(vals(c, m)),
            "std": lambda c, m: statistics.stdev(vals(c, m)),
            "n": lambda c, m: len(vals(c, m)),
            "seed": seed,
            "sig": lambda c, col: row("significance.csv", "cell", c, col),
            "hyp": lambda h, col: row("hypotheses.csv", "hypothesis", h, col),
            "every": lambda m: [float(r[m]) for r in self.table("results.csv")
                                if r["state"] == "finished" and not r.get("diverged_at_step") and r.get(m, "") != ""],
            "probe": lambda c, name, stat: probe(c, name, stat),
            "probe_seed": lambda c, name, stat, s: probe(c, name, stat, s, one_seed=True),
            "welch": welch_test, "holm": holm, "ladder": ladder,
            "best_lr": lambda v, m: (lambda results, name: results.best_lr(name, m))(*self.sub(v)),
            "log2": math.log2,
            "exp": math.exp, "abs": abs, "min": min, "max": max, "round": round,
        }


WELCH_COLUMNS = ("delta", "t", "df", "p")


def welch(xa, xb, column):
    """Welch's two-sided t-test of mean(xa) - mean(xb) (sample variances, the
    Welch-Satterthwaite df), as significance.csv's delta, t, df and p."""
    if column not in WELCH_COLUMNS:
        raise ValueError("welch column %r is not one of %s" % (column, ", ".join(WELCH_COLUMNS)))
    va, vb = statistics.variance(xa) / len(xa), statistics.variance(xb) / len(xb)
    delta = statistics.mean(xa) - statistics.mean(xb)
    t = delta / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(xa) - 1) + vb ** 2 / (len(xb) - 1))
    if column == "p":  # P(|T| >= |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2)
        return incomplete_beta(df / 2, 0.5, df / (df + t * t))
    return {"delta": delta, "t": t, "df": df}[column]


def incomplete_beta(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (Lentz's continued
    fraction, Numerical Recipes' betacf)."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    if x > (a + 1) / (a + b + 2):
        return 1 - incomplete_beta(b, a, 1 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log(1 - x)) / a
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return front * f


def holm(p, family):
    """Holm's step-down adjustment of p within family (a list of p-values that
    includes p): sorted ascending, (m - i) * p_(i), running maximum, at most 1."""
    ps = sorted(family)
    if p not in ps:
        raise ValueError("holm: %r is not in the family %r" % (p, family))
    adjusted, running = {}, 0.0
    for i, q in enumerate(ps):
        running = max(running, min(1.0, (len(ps) - i) * q))
        adjusted.setdefault(q, running)
    return adjusted[p]


# probes.csv's statistics per run and probe (metrics.json's `probes`).
PROBE_STATS = ("first", "last", "max", "mean", "first_step", "last_step", "count")

# lr_sweep.md's metrics where lower is better (the rest: higher).
LOWER_IS_BETTER = ("eval_loss", "perplexity", "perplexity_per_byte", "bits_per_byte")

ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Load, ast.Constant, ast.List,
           ast.Add, ast.Sub, ast.Mult, ast.Div, ast.USub, ast.UAdd)


def evaluate(expr, results):
    tree = ast.parse(expr.strip(), mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, ALLOWED):
            raise ValueError("%s is not allowed in a findings expression" % type(node).__name__)
    return eval(compile(tree, "<findings>", "eval"), {"__builtins__": {}}, results.functions())


def render(value, spec):
    return format(value, spec.strip()).replace("-", "−")


def process(path, write):
    """Returns the list of problems (check) or rewrites the file (write)."""
    results = Results(os.path.dirname(os.path.abspath(path)))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    problems, errors, count = [], [], [0]

    def replace(m):
        count[0] += 1
        line = text.count("\n", 0, m.start()) + 1
        try:
            want = render(evaluate(m.group("expr"), results), m.group("spec"))
        except Exception as e:  # a bad expression is a failure, never a silent skip
            errors.append("%s:%d: <!--=%s|%s-->: %s" % (path, line, m.group("expr"), m.group("spec"), e))
            return m.group(0)
        if want != m.group("value"):
            problems.append("%s:%d: states %s, its results give %s (%s)" % (
                path, line, m.group("value"), want, m.group("expr").strip()))
        return want + m.group(0)[len(m.group("value")):]

    new_text = MARKER.sub(replace, text)
    if "<!--=" in text and count[0] != text.count("<!--="):
        errors.append("%s: %d findings comments, %d of them after a number; put the number right before "
                        "each <!--= ... -->" % (path, text.count("<!--="), count[0]))
    if write and new_text != text and not errors:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new_text)
    return problems, errors, count[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    parser.add_argument("readmes", nargs="+")
    args = parser.parse_args()
    all_problems, all_errors, total = [], [], 0
    for path in args.readmes:
        problems, errors, count = process(path, args.write)
        all_problems += problems
        all_errors += errors
        total += count
    for p in all_problems + all_errors:
        print(p, file=sys.stderr)
    if all_errors:
        print("findings: %d expression error(s); nothing written" % len(all_errors), file=sys.stderr)
        return 1
    if args.check and all_problems:
        print("findings: %d problem(s); `tools/findings.py --write` regenerates the numbers" % len(all_problems),
              file=sys.stderr)
        return 1
    print("findings: %d number(s) in %d README(s) %s" % (
        total, len(args.readmes), "written" if args.write else "match their results"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
