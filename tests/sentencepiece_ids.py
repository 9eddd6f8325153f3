"""The Python sentencepiece package against tvlab's tokenization.

usage: sentencepiece_ids.py RUN_DIR GENERATE_BINARY

RUN_DIR is a finished text_lm run with a SentencePiece tokenizer (its
tokenizer.model). Checks, with the real `sentencepiece` package:
  1. the saved model loads, and encodes sample texts (ASCII, multi-line,
     non-ASCII, characters never seen in training) to the ids tvlab's
     //experiments:generate --tokenize prints for them, and decodes them back;
  2. the run's perplexity_per_byte follows from its per-token perplexity and
     the bytes its evaluation targets stand for, counted here from the
     held-out split's pieces as the package encodes them.
Exits non-zero on any difference.
"""
import json
import math
import re
import struct
import subprocess
import sys

import sentencepiece as spm

run_dir, generate = sys.argv[1], sys.argv[2]
sp = spm.SentencePieceProcessor(model_file=run_dir + "/tokenizer.model")
spec = open(run_dir + "/spec.resolved.pbtxt").read()
print(f"sentencepiece {spm.__version__}: {run_dir}/tokenizer.model, {sp.get_piece_size()} pieces")

samples = [
    "This License",
    "the GNU General Public License, version 3 (\"GPLv3\") -- 29 June 2007.",
    "  two  spaces\tand a tab\nand a second line\n",
    "caf\u00e9 na\u00efve \u6f22\u5b57 \u2014 never seen in training",
]
failures = 0
for text in samples:
    out = subprocess.run([generate, "--run_dir", run_dir, "--prompt", text, "--tokenize"],
                         capture_output=True, text=True, check=True).stdout
    tvlab_ids = [int(t) for t in out.split()]
    py_ids = sp.encode(text)
    same = tvlab_ids == py_ids and sp.decode(py_ids) == text
    failures += not same
    print(f"{'ok  ' if same else 'DIFF'} {len(py_ids):3d} ids for {len(text.encode()):3d} bytes: {text!r}")
    if not same:
        print("  tvlab :", tvlab_ids, "\n  python:", py_ids, "\n  decoded:", repr(sp.decode(py_ids)))

# Perplexity per byte, recomputed.
path = re.search(r'path: "([^"]+)"', spec).group(1)
context = int(re.search(r"context_length: (\d+)", spec).group(1))
heldout_fraction = re.search(r"heldout_fraction: ([0-9.e-]+)", spec)
fraction = struct.unpack("f", struct.pack("f", float(heldout_fraction.group(1)) if heldout_fraction else 0.1))[0]
text = open(path, "rb").read()
split = int(len(text) * (1.0 - fraction))
heldout = text[split:].decode("utf-8")
# The bytes each piece stands for, from the piece itself: "\u2581" is a
# space, "<0xNN>" one byte (byte fallback), anything else its UTF-8.
def piece_bytes(i):
    piece = sp.id_to_piece(i)
    if sp.is_byte(i):
        return 1
    return len(piece.replace("\u2581", " ").encode("utf-8"))
ends = []
for i in sp.encode(heldout):
    ends.append((ends[-1] if ends else 0) + piece_bytes(i))
assert ends[-1] == len(heldout.encode("utf-8")), (ends[-1], len(heldout.encode("utf-8")))
metrics = json.load(open(run_dir + "/metrics.json"))
examples = metrics["eval_examples"]
target_bytes = sum(ends[i * context + context] - ends[i * context] for i in range(examples))
tokens = examples * context
expected = math.exp(math.log(metrics["perplexity"]) * tokens / target_bytes)
ok = abs(expected - metrics["perplexity_per_byte"]) <= 1e-9 * expected
failures += not ok
print(f"{'ok  ' if ok else 'DIFF'} perplexity_per_byte {metrics['perplexity_per_byte']:.9g} = "
      f"perplexity {metrics['perplexity']:.9g} ^ ({tokens} tokens / {target_bytes} bytes) = {expected:.9g}")
print("PASSED" if failures == 0 else f"FAILED: {failures} difference(s)")
sys.exit(1 if failures else 0)
