"""Reads a run's TensorBoard event file with the real tensorboard package and
compares every scalar with what the run wrote elsewhere: each train_log.csv
row (train/loss, train/learning_rate, train/grad_norm, train/tokens_per_sec,
and eval/loss, eval/token_accuracy on rows with an evaluation) at its step,
and the final evaluation's metrics (those that apply to the task) equal to
metrics.json's at step train.steps.

usage: bench/.venv/bin/python tests/tensorboard_reader.py RUN_DIR [METRICS]
  METRICS: comma-separated metrics the final evaluation must also have
Exits non-zero on any mismatch.
"""
import csv
import glob
import json
import math
import os
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

def close(a, b, rel, abs_):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def main(run_dir, required=""):
    files = glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))
    assert len(files) == 1, files
    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})  # 0: keep every point
    acc.Reload()
    got = {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}
    expected = {}  # tag -> step -> (value, rel, abs): the CSV has rounded text

    def expect(tag, step, value, rel=1e-6, abs_=0.0):
        expected.setdefault(tag, {})[step] = (value, rel, abs_)

    with open(os.path.join(run_dir, "train_log.csv")) as f:
        for row in csv.DictReader(f):
            step = int(row["step"])
            expect("train/loss", step, float(row["loss"]), abs_=1e-6)
            expect("train/learning_rate", step, float(row["lr"]), rel=1e-5)
            expect("train/grad_norm", step, float(row["grad_norm"]), abs_=1e-6)
            expect("train/tokens_per_sec", step, float(row["tokens_per_sec"]), abs_=0.06)
            if row["eval_loss"]:
                expect("eval/loss", step, float(row["eval_loss"]), abs_=1e-6)
                expect("eval/token_accuracy", step, float(row["eval_token_accuracy"]), abs_=1e-6)
    metrics = json.load(open(os.path.join(run_dir, "metrics.json")))
    last = int(metrics["steps"])
    # The final evaluation at step train.steps: the metrics that apply to the
    # task (at least these three), each equal to metrics.json's (as float32).
    final = {tag[len("eval/"):]: points[last] for tag, points in got.items()
             if tag.startswith("eval/") and last in points}
    needed = {"loss", "token_accuracy", "sequence_accuracy"} | set(filter(None, required.split(",")))
    assert needed <= set(final), (sorted(final), sorted(needed))
    for name in final:
        expect("eval/" + name, last, float(metrics["eval_loss" if name == "loss" else name]))

    assert sorted(got) == sorted(expected), (sorted(got), sorted(expected))
    count = 0
    for tag, points in expected.items():
        assert sorted(got[tag]) == sorted(points), (tag, sorted(got[tag]), sorted(points))
        for step, (value, rel, abs_) in points.items():
            assert close(got[tag][step], value, rel, abs_), (tag, step, got[tag][step], value)
            count += 1
    print(f"ok: {count} scalars in {len(expected)} tags match train_log.csv and metrics.json "
          f"(final: {', '.join(sorted(final))}) "
          f"({os.path.basename(files[0])})")


if __name__ == "__main__":
    main(*sys.argv[1:3])
