"""tvlab's corpus BLEU (//experiments:bleu, framework/data/bleu.h) against
sacrebleu.corpus_bleu with its defaults, on the same hypotheses and
references: English sentences from /usr/share/common-licenses/GPL-3 (every
Debian has it: punctuation, numbers, hyphens, quotes) as references, and
seeded perturbations of them as hypotheses (dropped, swapped and replaced
words, lost punctuation, truncation, empty lines), plus small corpora where
some n-gram order has no match (the 'exp' smoothing path). Checks the 13a
tokenization line by line and every corpus score to 0.01 BLEU.

usage: bench/.venv/bin/python tests/sacrebleu_parity.py BLEU_BINARY
"""
import os
import random
import subprocess
import sys
import tempfile

import sacrebleu
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

EXTRA = ['He said "a &amp; b" &lt;c&gt; -- 3.14, 1,000 and 5-3.', "well-known <skipped> co-op",
         "caf\u00e9 na\u00efve, r\u00e9sum\u00e9.", "(x) [y] {z} $5 @home #tag 50% a/b a;b a:b?!"]


def perturb(line, rng):
    words = line.split()
    kind = rng.randrange(7)
    if kind == 0 or not words:
        return line
    if kind == 1:
        del words[rng.randrange(len(words))]
    elif kind == 2 and len(words) > 1:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif kind == 3:
        words[rng.randrange(len(words))] = rng.choice(["the", "program", "license", "of", "Foo,"])
    elif kind == 4:
        return "".join(c for c in line if c not in ".,;:()\"")
    elif kind == 5:
        words = words[: max(1, len(words) // 2)]
    else:
        return ""
    return " ".join(words)


def ours(binary, hyps, refs, *flags):
    with tempfile.TemporaryDirectory() as d:
        h, r = os.path.join(d, "h"), os.path.join(d, "r")
        open(h, "w").write("".join(x + "\n" for x in hyps))
        open(r, "w").write("".join(x + "\n" for x in refs))
        return subprocess.run([binary, "--hypotheses", h, "--references", r, *flags], check=True,
                              capture_output=True, text=True).stdout


def main(binary):
    lines = [l.strip() for l in open("/usr/share/common-licenses/GPL-3") if l.strip()][:400] + EXTRA
    rng = random.Random(13)
    corpora = {"GPL-3, mixed perturbations": ([perturb(l, rng) for l in lines], lines)}
    short = lines[20:23]
    corpora["no 4-gram match (exp smoothing)"] = ([" ".join(l.split()[::2]) for l in short], short)
    corpora["no 3- or 4-gram match"] = ([" ".join(l.split()[::-1]) for l in short], short)
    corpora["identical"] = (lines[:50], lines[:50])
    tokenizer = Tokenizer13a()
    metric = sacrebleu.BLEU()  # the defaults of sacrebleu.corpus_bleu, for the signature
    hyps = corpora["GPL-3, mixed perturbations"][0]
    our_tokens = ours(binary, hyps, hyps, "--tokens").split("\n")[:-1]
    for h, t in zip(hyps, our_tokens):
        assert t == tokenizer(h.rstrip()), (h, t, tokenizer(h.rstrip()))
    assert len(our_tokens) == len(hyps)
    for name, (h, r) in corpora.items():
        score = float(ours(binary, h, r))
        reference = sacrebleu.corpus_bleu(h, [r])
        assert abs(score - reference.score) <= 0.01, (name, score, str(reference))
        print(f"ok: {name}: {len(h)} sentences, tvlab {score:.4f} sacrebleu {reference.score:.4f}")
    metric.corpus_score(hyps, [corpora["GPL-3, mixed perturbations"][1]])
    print(f"ok: 13a tokenization equal on {len(hyps)} lines; sacrebleu {sacrebleu.__version__} "
          f"signature {metric.get_signature()}")


if __name__ == "__main__":
    main(sys.argv[1])
