#!/usr/bin/env bash
# --init_from HF_DIR: tiny random Llama (GQA) and GPT-2 (tied embeddings)
# models created locally by transformers are imported into tvlab specs of the
# same shape (--eval_only, so the run's model.safetensors is the import), and
# tvlab's logits and greedy generations are compared with transformers'
# (tests/hf_interop.py). A spec that does not match is refused naming the
# config key. bench/.venv; skipped, saying so, without it. docs/interop.md.
set -euo pipefail
source "$TEST_SRCDIR/tvlab/tests/bench_venv.sh" transformers torch
RUN="$TEST_SRCDIR/tvlab/experiments/run"
DUMP="$TEST_SRCDIR/tvlab/tests/hf_logits_dump"
TASK='task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] { path: "/usr/share/common-licenses/GPL-3" context_length: 16 } } }
train { steps: 1 }
eval { examples: 8 }'
cat > "$TEST_TMPDIR/llama.pbtxt" <<SPEC
name: "llama"
model {
  family: DECODER_ONLY d_model: 32 num_layers: 2 num_heads: 4 d_ff: 48 dropout: 0 max_seq_len: 16
  bias: false head_bias: false scale_embeddings: false
  attention { layout: "gqa" layout_options { [type.googleapis.com/tvlab.GqaOptions] { num_kv_heads: 2 } } }
  position { plugin: "rope" options { [type.googleapis.com/tvlab.RopeOptions] { pairing: INTERLEAVED } } }
  norm { plugin: "rmsnorm" options { [type.googleapis.com/tvlab.RmsNormOptions] { eps: 1e-5 } } placement: "pre_ln" }
  ffn { plugin: "swiglu" }
}
$TASK
SPEC
cat > "$TEST_TMPDIR/gpt2.pbtxt" <<SPEC
name: "gpt2"
model {
  family: DECODER_ONLY d_model: 32 num_layers: 2 num_heads: 4 dropout: 0 max_seq_len: 16 head_bias: false
  position { plugin: "learned" }
  norm { plugin: "layernorm" placement: "pre_ln" }
  ffn { plugin: "gelu" options { [type.googleapis.com/tvlab.GeluFfnOptions] { tanh_approximation: true } } }
}
$TASK
SPEC
for arch in llama gpt2; do
  "$BENCH_PYTHON" "$TEST_SRCDIR/tvlab/tests/hf_make_random.py" $arch "$TEST_TMPDIR/hf_$arch" 2>/dev/null
  "$RUN" "$TEST_TMPDIR/$arch.pbtxt" --init_from "$TEST_TMPDIR/hf_$arch" --eval_only \
      --output_dir "$TEST_TMPDIR/run_$arch" >/dev/null 2>"$TEST_TMPDIR/$arch.log" || { cat "$TEST_TMPDIR/$arch.log"; exit 1; }
  "$BENCH_PYTHON" "$TEST_SRCDIR/tvlab/tests/hf_interop.py" "$TEST_TMPDIR/run_$arch" "$TEST_TMPDIR/hf_$arch" "$DUMP"
done
# A spec that does not match the HF model is refused, naming what differs:
# a config value (with the spec field to change) or a tensor shape.
refused() {  # EXPECTED_MESSAGE RUN_ARGS...
  local want="$1"; shift
  if "$RUN" "$TEST_TMPDIR/llama.pbtxt" "$@" --init_from "$TEST_TMPDIR/hf_llama" --eval_only \
      --output_dir "$TEST_TMPDIR/run_bad_$RANDOM" >/dev/null 2>"$TEST_TMPDIR/bad.log"; then
    echo "a mismatched spec was accepted: $*"; exit 1
  fi
  grep -qF "$want" "$TEST_TMPDIR/bad.log" || { echo "expected '$want' in:"; cat "$TEST_TMPDIR/bad.log"; exit 1; }
  echo "ok: refused: $(cat "$TEST_TMPDIR/bad.log")"
}
refused "rms_norm_eps = 1e-05 but the spec gives" --set model.norm.options.eps=0.001
refused "set model.norm.options eps to match" --set model.norm.options.eps=0.001
refused "has shape (48, 32) but the model expects (64, 32)" --set model.d_ff=64
refused "hf_llama (imported)" --set model.d_ff=64
