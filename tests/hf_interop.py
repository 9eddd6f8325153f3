"""Loads a tvlab run exported by //experiments/hf:export --format hf with the
real `transformers` package and compares it with tvlab itself on the same
tokens: the logits (max |difference| <= 1e-4) and the greedy continuation
(equal token for token).

usage: bench/.venv/bin/python tests/hf_interop.py RUN_DIR HF_DIR DUMP_BINARY
  DUMP_BINARY: tests/hf_logits_dump (tvlab's logits and greedy tokens as JSON)
Exits non-zero on any mismatch.
"""
import json
import os
import random
import subprocess
import sys

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

EOS = 2  # framework/interfaces/task.h


def main(run_dir, hf_dir, dump):
    config = AutoConfig.from_pretrained(hf_dir)
    model, info = AutoModelForCausalLM.from_pretrained(
        hf_dir, dtype=torch.float32, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    model.eval()
    positions = getattr(config, "max_position_embeddings", None) or config.n_positions
    rng = random.Random(0)
    prompt = [rng.randrange(4, config.vocab_size) for _ in range(min(8, positions // 2))]
    new_tokens = positions - len(prompt)
    ours = json.loads(subprocess.run([dump, run_dir, ",".join(map(str, prompt)), str(new_tokens)],
                                     check=True, capture_output=True, text=True).stdout)
    with torch.no_grad():
        theirs = model(torch.tensor([prompt])).logits[0]
        generated = model.generate(torch.tensor([prompt]), max_new_tokens=new_tokens, do_sample=False,
                                   eos_token_id=EOS, pad_token_id=0)[0, len(prompt):].tolist()
    if EOS in generated:
        generated = generated[:generated.index(EOS)]
    diff = (theirs - torch.tensor(ours["logits"])).abs().max().item()
    assert diff <= 1e-4, f"logits differ by {diff}"
    assert generated == ours["greedy"], (generated, ours["greedy"])
    tokenizer_note = ""
    if os.path.exists(os.path.join(hf_dir, "tokenizer.json")):  # byte-level: token id = byte
        tokenizer = AutoTokenizer.from_pretrained(hf_dir)
        text = "Hello, world!\n  (GPL) \u00e9"
        ids = tokenizer(text)["input_ids"]
        assert ids == list(text.encode("utf-8")), ids
        assert tokenizer.decode(ids) == text
        tokenizer_note = "; byte-level tokenizer round-trips text"
    print(f"ok: {type(model).__name__} ({config.model_type}): max |logit difference| {diff:.2e} over "
          f"{len(prompt)} tokens x {config.vocab_size}; greedy {len(generated)} tokens equal{tokenizer_note}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
