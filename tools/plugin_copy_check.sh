#!/usr/bin/env bash
# Proves that a plugin is one folder: copies the tracked tree (git ls-files)
# into a scratch folder, copies one plugin folder there under a new name
# (renaming inside the copy only: the name, also as the start of a longer
# name such as <name>_parity.py, and its CamelCase form, in file names and
# contents: so the registration name, the options message and the files),
# builds in the scratch tree with no other edit, and checks that the copy is
#   registered         `run --list_plugins` shows it; //plugins:plugin_census_test passes
#   conformance-tested its <name>_conformance_test passes
#   parity-tested      its <name>_parity_test passes (and, for a score, the
#                      default layout's parity test checks it too)
#
#   bash tools/plugin_copy_check.sh [--break] [plugins/<kind>/<name> <new name>]
#
# Default: plugins/score/additive as additive_copy. --break also mistypes the
# registration name in the copy, and the check must then fail (tools/test.sh
# runs both). Extra Bazel flags (e.g. --disk_cache=DIR) come from
# $TVLAB_BAZEL_FLAGS; with a disk cache shared with the main build only the
# copy's own actions run. The scratch tree is $TVLAB_SCRATCH (default
# ${TMPDIR:-/tmp}/tvlab-plugin-copy-check), reused between runs, and its Bazel
# server is shut down at the end. Exit status 0 when every check passed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

break_it=0
if [ "${1:-}" = "--break" ]; then break_it=1; shift; fi
source_folder="${1:-plugins/score/additive}"
new_name="${2:-additive_copy}"
old_name="$(basename "$source_folder")"
kind_folder="$(dirname "$source_folder")"
new_folder="$kind_folder/$new_name"
scratch="${TVLAB_SCRATCH:-${TMPDIR:-/tmp}/tvlab-plugin-copy-check}"
read -r -a flags <<< "${TVLAB_BAZEL_FLAGS:-}"
started=$SECONDS

fail() { echo "plugin_copy_check: FAILED: $*" >&2; exit 1; }
camel() { echo "$1" | sed -E 's/(^|_)([a-z0-9])/\U\2/g'; }  # additive_copy -> AdditiveCopy
[ -f "$root/$source_folder/BUILD.bazel" ] || fail "$source_folder/BUILD.bazel does not exist"
[[ "$new_name" =~ ^[a-z][a-z0-9_]*$ ]] || fail "new name '$new_name' is not a plugin name"

# 1. The tracked tree, as it is in the working copy.
mkdir -p "$scratch"
find "$scratch" -mindepth 1 -maxdepth 1 ! -name 'bazel-*' -exec rm -rf {} +
(cd "$root" && git ls-files -z | xargs -0 cp --parents -P -t "$scratch")

# 2. The plugin folder under the new name: file names and contents.
cp -r "$scratch/$source_folder" "$scratch/$new_folder"
for f in "$scratch/$new_folder"/*"$old_name"*; do
  mv "$f" "$(dirname "$f")/$(basename "$f" | sed "s/$old_name/$new_name/")"
done
sed -i -E -e "s/\\b$old_name(\\b|_)/$new_name\\1/g" \
  -e "s/\\b$(camel "$old_name")/$(camel "$new_name")/g" "$scratch/$new_folder"/*
if [ $break_it -eq 1 ]; then  # a registration under the wrong name
  sed -i -E "s/(TVLAB_REGISTER_[A-Z_]+\\(\")$new_name\"/\\1${new_name}_typo\"/" \
    "$scratch/$new_folder/$new_name.cc"
  grep -q "${new_name}_typo" "$scratch/$new_folder/$new_name.cc" || fail "--break changed nothing"
fi
echo "plugin_copy_check: $source_folder copied as $new_folder in $scratch"

# 3. Build and check in the scratch tree (its tools/bazel lists the folders):
# every check runs, and each failure is reported.
cd "$scratch"
trap 'bazel shutdown >/dev/null 2>&1 || true' EXIT
package="//$new_folder"
tests=(//plugins:plugin_census_test "$package:${new_name}_conformance_test")
if [ -f "$new_folder/${new_name}_parity.py" ]; then
  tests+=("$package:${new_name}_parity_test")
  # A score is also checked by every layout's parity test: the default's.
  [ "$kind_folder" = plugins/score ] && tests+=(//plugins/attention/mha:mha_parity_test)
fi
failures=()
bazel test ${flags[@]+"${flags[@]}"} --keep_going //experiments:run "${tests[@]}" ||
  failures+=("bazel test of ${tests[*]} (see above)")
# The listing is captured before grep reads it: under pipefail, `run | grep -q`
# fails whenever grep stops reading before run has written everything (SIGPIPE).
listing="$(bazel-bin/experiments/run --list_plugins 2>&1 || true)"
if ! grep -Eq "(: |, )$new_name(,|$)" <<< "$listing"; then
  failures+=("run --list_plugins does not show '$new_name'")
fi
if [ "$kind_folder" = plugins/score ] &&
  ! grep -q "_${new_name}_self" bazel-testlogs/plugins/attention/mha/mha_parity_test/test.log; then
  failures+=("mha's parity test did not check '$new_name'")
fi
[ ${#failures[@]} -eq 0 ] || fail "$(printf '\n  %s' "${failures[@]}")"
echo "plugin_copy_check: $new_name is registered (run --list_plugins), and passed" \
  "${tests[*]} in $((SECONDS - started)) s"
