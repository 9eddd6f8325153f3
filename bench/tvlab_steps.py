"""Reads a tvlab run directory trained with train.log_every 1 and prints one
JSON line in the peers' format: the median step time over the steps after
--warmup (from train_log.csv's elapsed_sec), tokens/s, and the peak RSS the
caller measured (/usr/bin/time -f %M, in KB)."""
import csv
import json
import statistics
import sys

run_dir, label, threads, tokens_per_step, rss_kb = sys.argv[1:6]
warmup = int(sys.argv[6]) if len(sys.argv) > 6 else 2
with open(f"{run_dir}/train_log.csv") as f:
    rows = [r for r in csv.DictReader(f) if r["elapsed_sec"]]
elapsed = [float(r["elapsed_sec"]) for r in rows]
steps = [e2 - e1 for e1, e2 in zip(elapsed, elapsed[1:])][warmup - 1:]
step_s = statistics.median(steps)
metrics = json.load(open(f"{run_dir}/metrics.json"))
print(json.dumps({
    "peer": label, "threads": int(threads), "step_seconds": step_s,
    "tokens_per_second": float(tokens_per_step) / step_s, "peak_rss_mb": int(rss_kb) / 1024,
    "parameters": metrics.get("parameters"), "final_loss": metrics.get("final_train_loss"),
}))
