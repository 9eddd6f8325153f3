"""An independent reading of a token store: recounts what manifest.json says.

usage: python3 token_store_check.py STORE [--bytes_tokenizer]

Reads the files with numpy alone (none of tvlab's code) and checks: file
sizes, per-split token, document and byte counts, the counts files, the
13-gram overlap figures (exact n-gram tuples here, where tvlab hashes them),
that no document is in two splits, and, for a bytes store (whose ids are
the text's bytes), that every document sits in the split its FNV-1a hash
picks. Prints "token store check: OK" or fails with an assertion.
"""

import json
import os
import sys

import numpy as np

SPLITS = ["train", "validation", "test"]


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def load_split(store, entry, dtype):
    tokens = np.fromfile(os.path.join(store, entry["tokens_file"]), dtype="<" + dtype)
    index = np.fromfile(os.path.join(store, entry["index_file"]), dtype="<u8")
    token_bytes = np.fromfile(os.path.join(store, entry["token_bytes_file"]), dtype=np.uint8)
    counts = np.fromfile(os.path.join(store, entry["counts_file"]), dtype="<u8")
    return tokens, index, token_bytes, counts


def documents(tokens, index):
    return [tuple(tokens[index[d]:index[d + 1]].tolist()) for d in range(len(index) - 1)]


def ngrams(docs, n):
    out = set()
    for doc in docs:
        for i in range(len(doc) - n + 1):
            out.add(doc[i:i + n])
    return out


def main():
    store = sys.argv[1]
    bytes_tokenizer = "--bytes_tokenizer" in sys.argv
    manifest = json.load(open(os.path.join(store, "manifest.json")))
    vocab = int(manifest["vocab_size"])
    dtype = {"uint16": "u2", "uint32": "u4"}[manifest["token_dtype"]]
    assert (vocab <= 65536) == (dtype == "u2"), manifest["token_dtype"]
    docs = {}
    for entry in manifest["splits"]:
        name = entry["name"]
        tokens, index, token_bytes, counts = load_split(store, entry, dtype)
        assert len(tokens) == int(entry["tokens"]), name
        assert len(index) == int(entry["documents"]) + 1, name
        assert index[0] == 0 and index[-1] == len(tokens), name
        assert len(token_bytes) == len(tokens), name
        assert int(token_bytes.sum()) == int(entry["bytes"]), name
        assert np.array_equal(counts, np.bincount(tokens, minlength=vocab)), name
        docs[name] = documents(tokens, index)
    seen = {}
    for name in SPLITS:
        for doc in docs[name]:
            assert doc not in seen, "a document is in %s and %s" % (seen[doc], name)
            seen[doc] = name
    if bytes_tokenizer:
        rule = manifest["split_rule"]
        for name in SPLITS:
            for doc in docs[name]:
                u = fnv1a64(bytes(doc)) / 2.0**64
                want = "train" if u < rule["train"] else (
                    "validation" if u < rule["train"] + rule["validation"] else "test")
                assert want == name, (bytes(doc)[:40], want, name)
    for overlap in manifest["overlaps"]:
        n = overlap["n"]
        of = ngrams(docs[overlap["of_split"]], n)
        shared = of & ngrams(docs[overlap["in_split"]], n)
        got = (int(overlap["of_distinct"]), int(overlap["shared"]))
        assert got == (len(of), len(shared)), (overlap, len(of), len(shared))
        print("%d-grams of %s in %s: %d of %d (independent count agrees)"
              % (n, overlap["of_split"], overlap["in_split"], len(shared), len(of)))
    print("token store check: OK")


if __name__ == "__main__":
    main()
