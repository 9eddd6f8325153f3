"""What every format's cleaner shares: the test of whether a paragraph is
prose, and the assembly of kept paragraphs into one document.

A format cleaner (clean_rst, clean_pod, clean_html) turns a source file into
candidate paragraphs (markup gone, lines joined); this module decides which
of them are prose. Standard library only (Debian's python3).
"""

import re
import unicodedata

# A paragraph needs at least this many words (runs of letters) to be kept:
# headings, list labels, table cells and signatures are shorter.
MIN_WORDS = 6
# Share of letters and spaces among a paragraph's characters below which it
# is code, a table, a path list or ASCII art rather than prose.
MIN_LETTER_SHARE = 0.78
# A document shorter than this (characters) after cleaning is dropped.
MIN_DOCUMENT_CHARS = 200

# Licence and copyright boilerplate, matched case-insensitively anywhere in
# a paragraph: such a paragraph is dropped whole.
_BOILERPLATE = re.compile(
    r"spdx-license-identifier|copyright \(c\)|copyright ©|all rights reserved|"
    r"permission is hereby granted|this program is free software|"
    r"gnu (lesser |library )?general public license|without any warranty|"
    r"the software is provided \"as is\"|redistribution and use in source|"
    r"licensed under the apache license|permission to use, copy, modify",
    re.IGNORECASE)
# Prose ends its sentences: a paragraph must end in . ! ? or : (closing
# quotes or brackets may follow). Titles, signatures and list labels do not.
_SENTENCE_END = re.compile(r"[.!?:][\"'\u201d\u2019)\]]*$")
_WORD = re.compile(r"[^\W\d_]{2,}")
_SPACES = re.compile(r"\s+")


def normalize(text):
    """NFC-normalised text with every run of white space made one space."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()


def is_prose(paragraph):
    """Whether a normalised paragraph reads as natural-language prose."""
    if len(_WORD.findall(paragraph)) < MIN_WORDS or not _SENTENCE_END.search(paragraph):
        return False
    letters = sum(1 for c in paragraph if c.isalpha() or c == " ")
    if letters < MIN_LETTER_SHARE * len(paragraph):
        return False
    return not _BOILERPLATE.search(paragraph)


def document(paragraphs):
    """The prose paragraphs of one source joined by blank lines, or None
    when fewer than MIN_DOCUMENT_CHARS characters remain."""
    kept = [p for p in (normalize(p) for p in paragraphs) if is_prose(p)]
    text = "\n\n".join(kept)
    return text if len(text) >= MIN_DOCUMENT_CHARS else None
