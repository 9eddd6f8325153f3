# Shared by the tools/findings_*_test.sh scripts (sourced; they set FINDINGS).

# expect_error DIR EXPRESSION MESSAGE: a README in DIR stating one number
# from EXPRESSION must fail `findings.py --check` with MESSAGE in its output.
expect_error() {
  printf '1<!--= %s | .0f -->\n' "$2" > "$1/bad.md"
  local got
  got=$(python3 "$FINDINGS" --check "$1/bad.md" 2>&1)
  if [[ $? -eq 0 ]] || [[ "$got" != *"$3"* ]]; then
    echo "FAIL: $2 should fail with '$3':"; echo "$got"; exit 1
  fi
}
