#!/usr/bin/env python3
"""The prepare pipeline a researcher would write (nanoGPT style), the peer
that bench/prepare_bench.sh times //experiments:prepare against.

Reads JSON Lines (a "text" field per record, .gz allowed), splits the
documents train / validation / test by a hash of their text (as tvlab's
prepare does, so appended sources leave earlier splits alone), tokenizes
them with bytes (ids 0..255) or SentencePiece (trained on the first
--spm_sample_bytes of the training documents' lines, the way tvlab trains
one, or an existing .model), in --threads processes, and writes per split a
flat token file `<split>.bin` (np.memmap, uint16 when the vocabulary fits,
else uint32) and `<split>.idx` (int64 offsets of document starts, then the
total), with an end-of-document id (the vocabulary size) after each
document. It does less than tvlab's prepare: no deduplication, no overlap
count, no manifest, not atomic.

    bench/.venv/bin/python bench/prepare_peer.py --input CORPUS.jsonl --output DIR \\
        --tokenizer sentencepiece --spm_vocab_size 8000 --threads 2

Prints one JSON line: text MB, seconds per phase (read, train, encode,
write), total seconds and MB/s of text.
"""

import argparse
import gzip
import hashlib
import json
import multiprocessing
import os
import sys
import time

import numpy as np

SPLITS = ("train", "validation", "test")
_tokenizer = None  # the worker processes' SentencePiece model


def read_documents(path):
    """The "text" of every JSON line of `path` (gzip if it ends in .gz)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def split_of(text, validation, test):
    """A document's split from the first 8 bytes of its sha256."""
    u = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little") / 2.0**64
    return "validation" if u < validation else "test" if u < validation + test else "train"


def train_sentencepiece(documents, vocab_size, sample_bytes, threads, prefix):
    import sentencepiece as spm

    lines, size = [], 0
    for doc in documents:
        for line in doc.split("\n"):
            if line and size < sample_bytes:
                lines.append(line)
                size += len(line.encode("utf-8")) + 1
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=prefix, vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, byte_fallback=True,
        num_threads=threads, minloglevel=2)
    return prefix + ".model"


def _load_model(model_path):
    global _tokenizer
    import sentencepiece as spm
    _tokenizer = spm.SentencePieceProcessor(model_file=model_path)


def _encode_sentencepiece(batch):
    return [np.asarray(ids, dtype=np.int64) for ids in _tokenizer.encode(batch)]


def _encode_bytes(batch):
    return [np.frombuffer(doc.encode("utf-8"), dtype=np.uint8).astype(np.int64) for doc in batch]


def encode_all(documents, args, model_path):
    """Every document's ids, in order, tokenized in args.threads processes."""
    batches = [documents[i:i + 64] for i in range(0, len(documents), 64)]
    if args.tokenizer == "bytes":
        work, init, initargs = _encode_bytes, None, ()
    else:
        work, init, initargs = _encode_sentencepiece, _load_model, (model_path,)
    if args.threads == 1:
        if init:
            init(*initargs)
        return [ids for batch in map(work, batches) for ids in batch]
    with multiprocessing.Pool(args.threads, initializer=init, initargs=initargs) as pool:
        return [ids for batch in pool.imap(work, batches) for ids in batch]


def write_split(out_dir, split, token_lists, vocab_size):
    """<split>.bin (ids, an end-of-document id after each document) and
    <split>.idx (document start offsets, then the total)."""
    dtype = np.uint16 if vocab_size + 1 <= 1 << 16 else np.uint32
    lengths = np.array([len(t) + 1 for t in token_lists], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(offsets[-1])
    tokens = np.memmap(os.path.join(out_dir, split + ".bin"), dtype=dtype, mode="w+",
                       shape=(max(total, 1),))
    for start, ids in zip(offsets[:-1], token_lists):
        tokens[start:start + len(ids)] = ids
        tokens[start + len(ids)] = vocab_size  # end of document
    tokens.flush()
    offsets.tofile(os.path.join(out_dir, split + ".idx"))
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--input", required=True, help="JSON Lines with a text field (.gz allowed)")
    p.add_argument("--output", required=True, help="directory for the .bin and .idx files")
    p.add_argument("--tokenizer", choices=("bytes", "sentencepiece"), default="bytes")
    p.add_argument("--spm_vocab_size", type=int, default=8000)
    p.add_argument("--spm_sample_bytes", type=int, default=20 << 20)
    p.add_argument("--spm_model", default="", help="an existing .model (no training)")
    p.add_argument("--validation_fraction", type=float, default=0.01)
    p.add_argument("--test_fraction", type=float, default=0.01)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    if args.threads < 1:
        p.error("--threads must be >= 1")
    os.makedirs(args.output, exist_ok=True)
    times, started = {}, time.perf_counter()

    t = time.perf_counter()
    documents = read_documents(args.input)
    text_bytes = sum(len(d.encode("utf-8")) for d in documents)
    splits = {s: [] for s in SPLITS}
    for doc in documents:
        splits[split_of(doc, args.validation_fraction, args.test_fraction)].append(doc)
    times["read_s"] = time.perf_counter() - t

    t = time.perf_counter()
    model_path, vocab_size = None, 256
    if args.tokenizer == "sentencepiece":
        model_path = args.spm_model or train_sentencepiece(
            splits["train"], args.spm_vocab_size, args.spm_sample_bytes, args.threads,
            os.path.join(args.output, "tokenizer"))
        import sentencepiece as spm
        vocab_size = spm.SentencePieceProcessor(model_file=model_path).vocab_size()
    times["train_s"] = time.perf_counter() - t

    t = time.perf_counter()
    encoded = {s: encode_all(splits[s], args, model_path) for s in SPLITS}
    times["encode_s"] = time.perf_counter() - t

    t = time.perf_counter()
    tokens = {s: write_split(args.output, s, encoded[s], vocab_size) for s in SPLITS}
    times["write_s"] = time.perf_counter() - t

    total = time.perf_counter() - started
    print(json.dumps(dict(
        peer="python", tokenizer=args.tokenizer, threads=args.threads, vocab_size=vocab_size,
        documents=len(documents), text_mb=round(text_bytes / 1e6, 3), tokens=tokens,
        seconds=round(total, 3), mb_per_s=round(text_bytes / 1e6 / total, 3),
        **{k: round(v, 3) for k, v in times.items()})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
