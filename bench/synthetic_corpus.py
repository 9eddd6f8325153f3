#!/usr/bin/env python3
"""Synthetic JSON Lines text of a given size, for benchmarks that need a
large corpus fast (bench/store_bench.sh): documents of about 4 KB, each a
slice of a fixed 1 MB pool of pseudo-words at a random offset, headed by
its number so that no two documents are equal (prepare removes exact
duplicates). Deterministic (seeded); the text means nothing.

    python3 bench/synthetic_corpus.py --megabytes 2048 --output big.jsonl
"""

import argparse
import json
import random


def word_pool(rng, size):
    """About `size` bytes of lowercase pseudo-words separated by spaces."""
    syllables = ["ka", "to", "ri", "men", "sa", "lo", "vir", "de", "nu", "pha", "ste", "qui", "or", "an", "el"]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(5000)]
    out, length = [], 0
    while length < size:
        w = rng.choice(words)
        out.append(w)
        length += len(w) + 1
    return " ".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, required=True, help="text to write, in 10^6 bytes")
    parser.add_argument("--output", required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pool = word_pool(rng, 1 << 20)
    target, written, number = int(args.megabytes * 1e6), 0, 0
    with open(args.output, "w", encoding="ascii") as f:
        while written < target:
            start = rng.randrange(len(pool) - 8192)
            text = f"document {number}. " + pool[start:start + rng.randint(2048, 6144)]
            f.write(json.dumps({"text": text}) + "\n")
            written += len(text)
            number += 1
    print(json.dumps({"documents": number, "text_bytes": written, "output": args.output}))


if __name__ == "__main__":
    main()
