#!/usr/bin/env bash
# Builds tvlab's offline text corpus: about 57 MB of English prose cleaned
# from the Debian documentation packages that tools/setup.sh installs (the
# Linux kernel's, Python's, Perl's, PostgreSQL's, Django's, SQLite's,
# Apache's, Erlang/OTP's, Qt's, SQLAlchemy's and Node.js's manuals), one JSON
# line {"source": ..., "text": ...} per document, and corpus_manifest.json
# (package versions and licences, counts, sha256 of the output).
# docs/corpus.md describes it.
#
#   bash tools/corpus/build_debian_corpus.sh [OUT_DIR] [--gzip] [--jobs N] [--force]
#
# OUT_DIR defaults to ${XDG_CACHE_HOME:-~/.cache}/tvlab/corpus (outside the
# repository). The same package versions give byte-identical output; a
# second run with nothing changed only checks the files and says so (--force
# rebuilds). A package that is not installed is an error naming it (exit 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="${XDG_CACHE_HOME:-$HOME/.cache}/tvlab/corpus"
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then out=$1; shift; fi
started=$SECONDS
python3 "$here/debian_corpus.py" "$out" "$@"
echo "build_debian_corpus: $((SECONDS - started)) s; manifest: $out/corpus_manifest.json"
