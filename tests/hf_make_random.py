"""Creates a tiny random Hugging Face model locally with `transformers` (no
hub download), for tests/hf_import_test.sh.

usage: bench/.venv/bin/python tests/hf_make_random.py llama|gpt2 OUT_DIR
Both: vocabulary 256 (tvlab's byte-level text_lm), width 32, 2 layers, 4
heads, 16 positions, weights N(0, 0.2^2) from seed 0 (wide enough that greedy
choices are not near ties); Llama with 2 key/value heads (GQA) and untied
embeddings, GPT-2 with tied ones (its default) and gelu_new.
"""
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM


def main(arch, out):
    torch.manual_seed(0)
    common = dict(vocab_size=256, initializer_range=0.2, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    if arch == "llama":
        config = LlamaConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, max_position_embeddings=16, rms_norm_eps=1e-5,
                             rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                             tie_word_embeddings=False, **common)
        model = LlamaForCausalLM(config)
    else:
        config = GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=16, activation_function="gelu_new",
                            layer_norm_epsilon=1e-5, **common)
        model = GPT2LMHeadModel(config)
    with torch.no_grad():  # norms and biases start at 1 and 0: make them random too
        for name, p in model.named_parameters():
            if "norm" in name or "ln_" in name or name.endswith(".bias"):
                p.add_(0.1 * torch.randn_like(p))
    model.save_pretrained(out)
    print(f"wrote {out}: {type(model).__name__}, {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main(*sys.argv[1:3])
