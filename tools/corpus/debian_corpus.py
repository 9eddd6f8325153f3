#!/usr/bin/env python3
"""Builds tvlab's offline text corpus from installed Debian documentation
packages: every source file of the packages below, cleaned to prose
(clean_rst, clean_pod, clean_html, prose), one document per source file,
exact duplicates removed, written as JSON Lines ({"source": ..., "text":
...} per line) with a manifest (package versions, licences, counts, the
sha256 of every output file).

Reproducible: packages in the table's order, each package's files in sorted
order, no timestamps anywhere (gzip output has mtime 0), so the same package
versions give byte-identical output. The manifest is removed first and
written last, so a directory with a manifest holds a complete corpus.

    python3 tools/corpus/debian_corpus.py OUT_DIR [--gzip] [--jobs N]

Standard library only. tools/corpus/build_debian_corpus.sh is the recipe
that runs it; docs/corpus.md describes the corpus.
"""

import argparse
import collections
import gzip
import hashlib
import json
import multiprocessing
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clean_html  # noqa: E402
import clean_pod  # noqa: E402
import clean_rst  # noqa: E402
import prose  # noqa: E402

CLEANERS = {"rst": clean_rst.paragraphs, "pod": clean_pod.paragraphs,
            "html": clean_html.paragraphs}

# One row per package: the files read (a regular expression on the paths
# `dpkg -L` lists, and one they must not match), their format, and the
# licence of those files (the copyright file's own words go in the
# manifest too).
Source = collections.namedtuple("Source", "package include exclude format licence")
SOURCES = [
    Source("linux-doc-6.1", r"/Documentation/.*\.(rst|txt)\.gz$",
           r"/Documentation/(translations|devicetree|ABI|sphinx)/", "rst",
           "GPL-2 (the Linux kernel's Documentation/)"),
    Source("python3.11-doc", r"/html/_sources/.*\.rst\.txt$", r"/whatsnew/changelog",
           "rst", "PSF-2.0 (Python Software Foundation License, version 2)"),
    Source("perl-doc", r"/pod/[^/]*\.pod$", None, "pod",
           "GPL-1+ or Artistic (Perl's)"),
    Source("postgresql-doc-15", r"/html/.*\.html$", r"/html/(bookindex|release-)", "html",
           "PostgreSQL (BSD-like)"),
    Source("python-django-doc", r"/html/.*\.html$",
           r"/html/(_modules|_static|genindex|py-modindex|search)", "html", "BSD-3-Clause"),
    Source("sqlite3-doc", r"/doc/sqlite3/.*\.html$", r"/releaselog/", "html",
           "public domain"),
    Source("apache2-doc", r"/manual/en/.*\.html$", None, "html", "Apache-2.0"),
    Source("erlang-doc", r"/erlang-doc/.*\.html$", r"/(jinterface-[^/]*/doc/html/java|wx-[^/]*)/",
           "html", "Apache-2.0"),
    Source("qtbase5-doc-html", r"/qt5/doc/.*\.html$", r"-(members|obsolete)\.html$", "html",
           "GFDL-NIV-1.3 (the Qt documentation, no invariant sections)"),
    Source("python-sqlalchemy-doc", r"/html/.*\.html$",
           r"/html/(_modules|_static|genindex|py-modindex|search)", "html", "Expat (MIT)"),
    Source("nodejs-doc", r"/doc/nodejs/api/.*\.html$", r"/api/all\.html$", "html",
           "Expat (MIT)"),
]


class DebianPackages:
    """The installed packages, through dpkg-query (tests pass a stand-in)."""

    def _query(self, *args):
        result = subprocess.run(["dpkg-query"] + list(args), capture_output=True, text=True)
        return result.stdout if result.returncode == 0 else None

    def missing(self, packages):
        """The packages of `packages` that are not installed."""
        return [p for p in packages
                if "install ok installed" not in (self._query("-W", "-f=${Status}", p) or "")]

    def version(self, package):
        return self._query("-W", "-f=${Version}", package)

    def files(self, package):
        """The regular files the package installed (symlinks left out), sorted."""
        paths = (self._query("-L", package) or "").splitlines()
        return sorted(p for p in paths if os.path.isfile(p) and not os.path.islink(p))

    def copyright_path(self, package):
        return "/usr/share/doc/%s/copyright" % package


def read_source(path):
    """A file's text: gunzipped if it ends in .gz, UTF-8 (Latin-1 where the
    bytes are not UTF-8, which is deterministic too). Returns (text, was_latin1)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("latin-1"), True


def clean_file(job):
    """(package, path, format) -> (package, path, document or None, was_latin1)."""
    package, path, fmt = job
    text, latin1 = read_source(path)
    return package, path, prose.document(CLEANERS[fmt](text)), latin1


def licence_fields(copyright_path):
    """The licence of `Files: *` in a machine-readable copyright file, and
    every short `License:` name it gives (None and [] for free-form files)."""
    with open(copyright_path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    star = None
    for stanza in re.split(r"\n\s*\n", text):
        if re.match(r"Files:\s*\*\s*$", stanza.split("\n")[0]):
            found = re.search(r"^License:\s*(.+)$", stanza, re.MULTILINE)
            star = found.group(1).strip() if found else None
    names = set(re.findall(r"^License:\s*([\w.+-]+(?: (?:or|and) [\w.+-]+)*)\s*$",
                           text, re.MULTILINE))
    return star, sorted(names)


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def jobs_of(sources, system):
    """Every (package, path, format) to clean, in output order."""
    jobs = []
    for s in sources:
        for path in system.files(s.package):
            if re.search(s.include, path) and not (s.exclude and re.search(s.exclude, path)):
                jobs.append((s.package, path, s.format))
    return jobs


def write_documents(jobs, out, processes):
    """Cleans `jobs` (in order, `processes` at a time), drops exact
    duplicates and writes one JSON line per document to the binary file
    `out`. Returns per-package counts."""
    counts = collections.defaultdict(collections.Counter)
    seen = set()
    pool = multiprocessing.Pool(processes) if processes > 1 else None
    results = pool.imap(clean_file, jobs, chunksize=8) if pool else map(clean_file, jobs)
    try:
        for package, path, text, latin1 in results:
            c = counts[package]
            c["files_read"] += 1
            c["latin1_files"] += latin1
            if text is None:
                c["files_without_prose"] += 1
                continue
            key = hashlib.sha256(text.encode("utf-8")).digest()
            if key in seen:
                c["duplicates_removed"] += 1
                continue
            seen.add(key)
            line = json.dumps({"source": "%s:%s" % (package, path), "text": text},
                              ensure_ascii=False, sort_keys=True) + "\n"
            out.write(line.encode("utf-8"))
            c["documents"] += 1
            c["text_bytes"] += len(text.encode("utf-8"))
    finally:
        if pool:
            pool.close()
            pool.join()
    return counts


def package_entry(source, system, counts):
    star, names = licence_fields(system.copyright_path(source.package))
    entry = {
        "package": source.package,
        "version": system.version(source.package),
        "format": source.format,
        "include": source.include,
        "exclude": source.exclude,
        "licence": source.licence,
        "copyright_file": system.copyright_path(source.package),
        "copyright_sha256": sha256_of(system.copyright_path(source.package)),
        "copyright_files_star_licence": star,
        "copyright_licence_names": names,
    }
    for key in ("files_read", "files_without_prose", "latin1_files",
                "duplicates_removed", "documents", "text_bytes"):
        entry[key] = counts[source.package][key]
    return entry


def cleaner_sha256():
    """One hash of the cleaner's sources: the manifest says which code made it."""
    here = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    for name in sorted(("debian_corpus.py", "prose.py", "clean_rst.py", "clean_pod.py",
                        "clean_html.py")):
        with open(os.path.join(here, name), "rb") as f:
            digest.update(name.encode() + b"\0" + f.read())
    return digest.hexdigest()


def write_atomically(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def up_to_date(out_dir, sources, system):
    """The manifest in out_dir if it was made by this cleaner from the
    installed versions of `sources` and its files are intact, else None."""
    try:
        with open(os.path.join(out_dir, "corpus_manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return None
    made_from = [(p["package"], p["version"]) for p in manifest.get("packages", [])]
    if (manifest.get("cleaner_sha256") != cleaner_sha256()
            or made_from != [(s.package, system.version(s.package)) for s in sources]):
        return None
    for entry in manifest.get("files", []):
        path = os.path.join(out_dir, entry["name"])
        if not os.path.isfile(path) or sha256_of(path) != entry["sha256"]:
            return None
    return manifest


def build(out_dir, sources=SOURCES, system=None, use_gzip=False, processes=1, force=False):
    """Builds the corpus into out_dir; returns the manifest (a dict). Does
    nothing but return the manifest when out_dir already holds this corpus
    (same cleaner, package versions and compression) unless `force`.
    Raises RuntimeError naming the missing packages if any is not installed."""
    system = system or DebianPackages()
    missing = system.missing([s.package for s in sources])
    if missing:
        raise RuntimeError("not installed: %s; run `bash tools/setup.sh` (it installs them)"
                           % " ".join(missing))
    name = "corpus.jsonl.gz" if use_gzip else "corpus.jsonl"
    current = None if force else up_to_date(out_dir, sources, system)
    if current and [f["name"] for f in current["files"]] == [name]:
        current["up_to_date"] = True
        return current
    os.makedirs(out_dir, exist_ok=True)
    manifest_path = os.path.join(out_dir, "corpus_manifest.json")
    if os.path.exists(manifest_path):
        os.remove(manifest_path)  # the corpus is incomplete until the new one is written
    other = "corpus.jsonl" if use_gzip else "corpus.jsonl.gz"
    if os.path.exists(os.path.join(out_dir, other)):
        os.remove(os.path.join(out_dir, other))
    path = os.path.join(out_dir, name)
    with open(path + ".tmp", "wb") as raw:
        out = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if use_gzip else raw
        counts = write_documents(jobs_of(sources, system), out, processes)
        if use_gzip:
            out.close()
    os.replace(path + ".tmp", path)
    packages = [package_entry(s, system, counts) for s in sources]
    manifest = {
        "format": "tvlab-debian-corpus-1",
        "record": {"source": "package:path of the file the document comes from",
                   "text": "the file's prose paragraphs, separated by blank lines"},
        "cleaner_sha256": cleaner_sha256(),
        "cleaning": {"min_words_per_paragraph": prose.MIN_WORDS,
                     "min_letter_share": prose.MIN_LETTER_SHARE,
                     "min_document_chars": prose.MIN_DOCUMENT_CHARS,
                     "deduplication": "exact documents (sha256 of the text), first kept"},
        "packages": packages,
        "totals": {k: sum(p[k] for p in packages)
                   for k in ("files_read", "duplicates_removed", "documents", "text_bytes")},
        "files": [{"name": name, "bytes": os.path.getsize(path), "sha256": sha256_of(path)}],
    }
    write_atomically(manifest_path, (json.dumps(manifest, indent=2, sort_keys=True) + "\n")
                     .encode("utf-8"))
    return manifest


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", help="directory to write corpus.jsonl and its manifest into")
    parser.add_argument("--gzip", action="store_true", help="write corpus.jsonl.gz")
    parser.add_argument("--force", action="store_true",
                        help="rebuild even when OUT_DIR already holds this corpus")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="files cleaned in parallel (output is the same for any value)")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error("--jobs must be >= 1 (got %d)" % args.jobs)
    try:
        manifest = build(args.out_dir, use_gzip=args.gzip, processes=args.jobs, force=args.force)
    except RuntimeError as e:
        print("debian_corpus: %s" % e, file=sys.stderr)
        return 2
    t = manifest["totals"]
    print("debian_corpus: %s%d documents, %.1f MB of text from %d files (%d exact duplicates "
          "removed) in %s" % ("up to date: " if manifest.get("up_to_date") else "",
                              t["documents"], t["text_bytes"] / 1e6, t["files_read"],
                              t["duplicates_removed"], args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
