#!/usr/bin/env bash
# //experiments:prepare end to end: a small corpus (two licence texts, a
# gzip'd JSON Lines file with a duplicate record, paragraphs as documents) is
# prepared with the bytes tokenizer and with a trained SentencePiece model,
# and token_store_check.py recounts each store independently: sizes, counts,
# no document in two splits, splits by hash, and the 13-gram overlap figures.
# Then the refusals: an existing store without --overwrite, a device input.
set -euo pipefail
PREPARE="$TEST_SRCDIR/tvlab/experiments/prepare"
CHECK="$TEST_SRCDIR/tvlab/experiments/prepare_store/token_store_check.py"
CORPUS="$TEST_TMPDIR/corpus"
mkdir -p "$CORPUS/nested"
cp /usr/share/common-licenses/GPL-3 "$CORPUS/gpl.txt"
cp /usr/share/common-licenses/Apache-2.0 "$CORPUS/nested/apache.txt"
printf '%s\n' '{"text": "A record of its own, long enough for a few thirteen-grams of bytes."}' \
  '{"text": "A record of its own, long enough for a few thirteen-grams of bytes."}' \
  '{"text": "Another record.\n\nWith a blank line inside, which stays inside."}' \
  | gzip > "$CORPUS/records.jsonl.gz"
echo "not read: wrong extension" > "$CORPUS/notes.md"

"$PREPARE" --input "$CORPUS" --output "$TEST_TMPDIR/bytes" --document paragraph \
  --train_fraction 0.8 --validation_fraction 0.1 --test_fraction 0.1 --progress=false
/usr/bin/python3 "$CHECK" "$TEST_TMPDIR/bytes" --bytes_tokenizer
grep -q '"duplicates_removed": "1"' "$TEST_TMPDIR/bytes/manifest.json"
grep -q '"documents_read": "' "$TEST_TMPDIR/bytes/manifest.json"
if grep -q "notes.md" "$TEST_TMPDIR/bytes/manifest.json"; then echo "notes.md was read"; exit 1; fi

"$PREPARE" --input "$CORPUS" --output "$TEST_TMPDIR/spm" --document paragraph \
  --tokenizer sentencepiece --spm_vocab_size 600 \
  --train_fraction 0.8 --validation_fraction 0.1 --test_fraction 0.1 --progress=false
/usr/bin/python3 "$CHECK" "$TEST_TMPDIR/spm"
test -s "$TEST_TMPDIR/spm/tokenizer.model"

set +e
"$PREPARE" --input "$CORPUS" --output "$TEST_TMPDIR/bytes" --progress=false 2> "$TEST_TMPDIR/again.err"
again=$?
"$PREPARE" --input /dev/zero --output "$TEST_TMPDIR/zero" --progress=false 2> "$TEST_TMPDIR/zero.err"
zero=$?
set -e
test "$again" = 2 && grep -q -- "--overwrite" "$TEST_TMPDIR/again.err"
test "$zero" = 2 && grep -q "/dev/zero" "$TEST_TMPDIR/zero.err"
test ! -e "$TEST_TMPDIR/zero" && test ! -e "$TEST_TMPDIR/zero.partial"
echo "prepare check: OK"
