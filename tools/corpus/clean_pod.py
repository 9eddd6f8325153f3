"""Perl's POD to candidate prose paragraphs.

Dropped: verbatim paragraphs (indented: code), command paragraphs other than
headings and items, =begin/=end and =for regions, index entries (X<>).
Kept: ordinary paragraphs, headings and item labels (prose.document drops
the short ones), with formatting codes reduced to their text.
"""

import re

# "<" and ">" that a code produced stand as \0 and \1 until every code is
# reduced, so they cannot open or close one.
_ENTITIES = {"lt": "\0", "gt": "\1", "verbar": "|", "sol": "/", "quot": '"',
             "amp": "&", "apos": "'", "nbsp": " "}
# A formatting code with doubled (or more) angle brackets: C<< $a <=> $b >>.
_WIDE_CODES = [re.compile(r"([A-Z])%s\s+(.*?)\s+%s" % ("<" * n, ">" * n), re.DOTALL)
               for n in (4, 3, 2)]
# An innermost formatting code: B<bold>, L<text|target>, E<gt>.
_CODE = re.compile(r"([A-Z])<([^<>]*)>")


def _code_text(letter, inner):
    """The text one formatting code stands for."""
    if letter in ("X", "Z"):
        return ""
    if letter == "E":
        number = re.fullmatch(r"(\d+)|0[xX]([0-9a-fA-F]+)", inner)
        if number:
            code = int(number.group(1)) if number.group(1) else int(number.group(2), 16)
            return chr(code) if code < 0x110000 else ""
        return _ENTITIES.get(inner, "")
    if letter == "L":
        if "|" in inner:
            return inner.split("|", 1)[0]
        return inner.replace('/"', " ").replace('"', "")
    return inner


def inline_text(paragraph):
    """A POD paragraph with its formatting codes reduced to text."""
    for wide in _WIDE_CODES:
        paragraph = wide.sub(
            lambda m: _code_text(m.group(1), m.group(2).replace("<", "\0").replace(">", "\1")),
            paragraph)
    while True:
        reduced = _CODE.sub(lambda m: _code_text(m.group(1), m.group(2)), paragraph)
        if reduced == paragraph:
            break
        paragraph = reduced
    return paragraph.replace("\0", "<").replace("\1", ">")


def _blocks(text):
    """The file's paragraphs (runs of non-blank lines)."""
    return [b for b in re.split(r"\n[ \t]*\n", text.expandtabs(8)) if b.strip()]


def paragraphs(text):
    """The candidate prose paragraphs of a POD source."""
    out = []
    region = None  # the format of an open =begin region, whose text is dropped
    in_pod = not text.lstrip().startswith(("#", "use ", "package "))
    for block in _blocks(text):
        if block.startswith("="):
            command, _, rest = block[1:].partition(" ")
            command = command.split("\n")[0]
            in_pod = command != "cut"
            if command == "begin":
                region = rest.split()[0] if rest.split() else ""
            elif command == "end":
                region = None
            elif command.startswith("head") or command == "item":
                label = rest.strip().lstrip("*").strip()
                if label and not label.isdigit():
                    out.append(inline_text(label))
            continue
        if not in_pod or region is not None or block[0] in " \t":
            continue
        out.append(inline_text(block))
    return out
