#!/usr/bin/env python3
"""Tests of the Debian corpus cleaner (tools/corpus) on the fixtures in
testdata/: what each format's cleaner keeps and drops, the prose filter,
and the whole build on stand-in packages (exact deduplication and its count,
byte-identical output on a rebuild, with --gzip and with several processes,
the manifest's sha256, a missing package named, an up-to-date corpus left
alone). Standard library only."""

import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import clean_html  # noqa: E402
import clean_pod  # noqa: E402
import clean_rst  # noqa: E402
import debian_corpus  # noqa: E402
import prose  # noqa: E402


def fixture(name):
    with open(os.path.join(HERE, "testdata", name), encoding="utf-8") as f:
        return f.read()


def cleaned(module, name):
    return prose.document(module.paragraphs(fixture(name)))


class CleanerTest(unittest.TestCase):
    def test_rst_keeps_prose_and_drops_markup(self):
        text = cleaned(clean_rst, "sample.rst")
        self.assertIn("the frob_submit call hands it one request at a time. See the queue rules "
                      "and RFC 7159 before you change it.", text)
        self.assertIn("You enable it with the following command:", text)  # "::" made ":"
        self.assertIn("because their queues are drained by the block layer", text)  # note body
        self.assertIn("Waits until every pending request", text)  # a description's body
        self.assertIn("A list item about the frobnicator is kept", text)
        for dropped in ("echo 1", "static int", "SPDX", "frob_wait(", "idle and waits",
                        "Column two", "doctest", "free software", "short item", "**", ":c:func:",
                        "Frobnicator Subsystem", "=="):
            self.assertNotIn(dropped, text)

    def test_html_keeps_paragraphs_and_drops_code_tables_and_navigation(self):
        text = cleaned(clean_html, "sample.html")
        self.assertIn("frob_submit hands it one request at a time & never blocks.", text)
        self.assertIn("end at the next block \u2014 as browsers do.", text)
        self.assertIn("Each list item that is a whole sentence is kept", text)
        for dropped in ("script", "Previous chapter", "this line is code", "table cell",
                        "sidebar", "All rights reserved", "Manual"):
            self.assertNotIn(dropped, text)
        self.assertEqual(text.count("\n\n"), 2)  # three paragraphs

    def test_pod_reduces_codes_and_drops_verbatim_and_regions(self):
        text = cleaned(clean_pod, "sample.pod")
        self.assertIn("The frobnicator turns", text)  # X<frob> gone, B<> reduced
        self.assertIn("and $frob->submit($x) hands it", text)
        self.assertIn("(see the queue rules). It compares with <=>.", text)
        self.assertIn("Each list item that is a whole sentence is kept", text)
        for dropped in ("Frob->new", "HTML region", "after =cut", "NAME", "short name line"):
            self.assertNotIn(dropped, text)

    def test_prose_filter(self):
        self.assertTrue(prose.is_prose("This sentence has enough words to count as prose."))
        self.assertFalse(prose.is_prose("Too short to keep."))
        self.assertFalse(prose.is_prose("A heading with many words but no sentence end"))
        self.assertFalse(prose.is_prose("x = foo(a, b); y = bar(c, d); z = baz(e, f); q = 1."))
        self.assertFalse(prose.is_prose("Licensed under the Apache License, version two here."))
        self.assertIsNone(prose.document(["A single kept sentence is far too short a document."]))


class FakePackages:
    """Stand-in for dpkg-query: packages are folders under `root`."""

    def __init__(self, root, versions):
        self.root, self.versions = root, versions

    def missing(self, packages):
        return [p for p in packages if p not in self.versions]

    def version(self, package):
        return self.versions[package]

    def files(self, package):
        base = os.path.join(self.root, package)
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(base) for f in fs
                      if f != "copyright")

    def copyright_path(self, package):
        return os.path.join(self.root, package, "copyright")


SOURCES = [
    debian_corpus.Source("alpha-doc", r"\.(rst|txt\.gz)$", r"/skipped/", "rst", "GPL-2"),
    debian_corpus.Source("beta-doc", r"\.(html|pod)$", r"\.pod$", "html", "Expat"),
]


class BuildTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.root = os.path.join(self.dir, "packages")
        for package, licence in (("alpha-doc", "GPL-2"), ("beta-doc", "Expat")):
            os.makedirs(os.path.join(self.root, package, "skipped"))
            with open(os.path.join(self.root, package, "copyright"), "w") as f:
                f.write("Format: x\n\nFiles: *\nCopyright: someone\nLicense: %s\n" % licence)
        alpha = os.path.join(self.root, "alpha-doc")
        shutil.copy(os.path.join(HERE, "testdata", "sample.rst"), os.path.join(alpha, "a.rst"))
        with gzip.open(os.path.join(alpha, "b.txt.gz"), "wt") as f:  # the same text, gzipped
            f.write(fixture("sample.rst"))
        shutil.copy(os.path.join(HERE, "testdata", "sample.rst"),
                    os.path.join(alpha, "skipped", "c.rst"))
        beta = os.path.join(self.root, "beta-doc")
        shutil.copy(os.path.join(HERE, "testdata", "sample.html"), os.path.join(beta, "a.html"))
        shutil.copy(os.path.join(HERE, "testdata", "sample.pod"), os.path.join(beta, "a.pod"))
        self.system = FakePackages(self.root, {"alpha-doc": "1.0-1", "beta-doc": "2:3.4"})

    def tearDown(self):
        shutil.rmtree(self.dir)

    def build(self, name, **kwargs):
        out = os.path.join(self.dir, name)
        return out, debian_corpus.build(out, SOURCES, self.system, **kwargs)

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def test_documents_deduplication_and_manifest(self):
        out, manifest = self.build("out")
        lines = self.read(os.path.join(out, "corpus.jsonl")).decode("utf-8").splitlines()
        records = [json.loads(line) for line in lines]
        self.assertEqual([r["source"] for r in records],
                         ["alpha-doc:%s/alpha-doc/a.rst" % self.root,
                          "beta-doc:%s/beta-doc/a.html" % self.root])
        self.assertEqual(records[0]["text"], cleaned(clean_rst, "sample.rst"))
        alpha, beta = manifest["packages"]
        self.assertEqual((alpha["files_read"], alpha["duplicates_removed"], alpha["documents"]),
                         (2, 1, 1))
        self.assertEqual((beta["version"], beta["documents"], beta["duplicates_removed"]),
                         ("2:3.4", 1, 0))
        self.assertEqual(alpha["copyright_files_star_licence"], "GPL-2")
        self.assertEqual(alpha["text_bytes"], len(records[0]["text"].encode("utf-8")))
        self.assertEqual(manifest["totals"]["duplicates_removed"], 1)
        [entry] = manifest["files"]
        data = self.read(os.path.join(out, "corpus.jsonl"))
        self.assertEqual((entry["bytes"], entry["sha256"]),
                         (len(data), hashlib.sha256(data).hexdigest()))
        with open(os.path.join(out, "corpus_manifest.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["files"], manifest["files"])

    def test_rebuilds_are_byte_identical(self):
        first, _ = self.build("first")
        second, _ = self.build("second", processes=2)
        zipped, _ = self.build("zipped", use_gzip=True)
        zipped_again, _ = self.build("zipped_again", use_gzip=True)
        for name in ("corpus.jsonl", "corpus_manifest.json"):
            self.assertEqual(self.read(os.path.join(first, name)),
                             self.read(os.path.join(second, name)))
        self.assertEqual(self.read(os.path.join(zipped, "corpus.jsonl.gz")),
                         self.read(os.path.join(zipped_again, "corpus.jsonl.gz")))
        header = self.read(os.path.join(zipped, "corpus.jsonl.gz"))[:10]
        self.assertEqual(header[4:8], b"\0\0\0\0")  # no timestamp in the gzip header
        with gzip.open(os.path.join(zipped, "corpus.jsonl.gz"), "rb") as f:
            self.assertEqual(f.read(), self.read(os.path.join(first, "corpus.jsonl")))

    def test_up_to_date_corpus_is_kept_and_a_change_rebuilds(self):
        out, _ = self.build("out")
        _, again = self.build("out")
        self.assertTrue(again.get("up_to_date"))
        self.system.versions["beta-doc"] = "2:3.5"  # a package upgrade
        _, rebuilt = self.build("out")
        self.assertFalse(rebuilt.get("up_to_date"))
        with open(os.path.join(out, "corpus.jsonl"), "ab") as f:
            f.write(b"tampered\n")
        _, repaired = self.build("out")
        self.assertFalse(repaired.get("up_to_date"))
        self.assertEqual(hashlib.sha256(self.read(os.path.join(out, "corpus.jsonl"))).hexdigest(),
                         repaired["files"][0]["sha256"])

    def test_missing_package_is_named(self):
        del self.system.versions["beta-doc"]
        with self.assertRaisesRegex(RuntimeError, r"not installed: beta-doc; run .*setup\.sh"):
            self.build("out")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "out")))


if __name__ == "__main__":
    unittest.main()
