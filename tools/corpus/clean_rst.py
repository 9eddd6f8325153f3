"""reStructuredText (and plain text) to candidate prose paragraphs.

Dropped: section adornments, comments and link targets, directives other
than admonitions and object descriptions (code, tables, images, toctrees,
kernel-doc, includes...), literal blocks (after "::"), doctest blocks, grid
and simple tables, line blocks and field-list lines. Kept: paragraphs, list
items (marker removed), the bodies of notes, warnings and object
descriptions, with inline markup reduced to its text. prose.document
decides which paragraphs are prose.
"""

import re

# Directives whose body is prose: admonitions, whose body may follow the
# directive line at once (their option lines are dropped), and object
# descriptions, whose signature may go on over several lines up to the blank
# line before the body.
_ADMONITIONS = {
    "note", "warning", "tip", "hint", "important", "attention", "caution",
    "danger", "error", "admonition", "seealso", "deprecated", "versionadded",
    "versionchanged", "topic", "sidebar",
}
_DESCRIPTIONS = {
    "function", "method", "class", "attribute", "data", "exception",
    "describe", "option", "cmdoption", "envvar", "decorator",
    "coroutinefunction", "abstractmethod", "staticmethod", "classmethod",
    "opcode", "pdbcommand", "c:function", "c:macro", "c:type", "c:member",
    "c:var", "c:struct", "c:enum", "c:union",
}
_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([\w:.-]+)::(.*)$")
_EXPLICIT = re.compile(r"^(\s*)\.\.(\s|$)")
_ADORNMENT = re.compile(r"^\s*([=\-~^\"'`#*+_:.<>])\1{2,}\s*$")
_TABLE_BORDER = re.compile(r"^\s*=+(\s+=+)+\s*$")
_GRID = re.compile(r"^\s*(\+[-=+]|\|)")
_BULLET = re.compile(r"^\s*([-*+\u2022]|#\.|\d+[.)]|\(\d+\)|[a-zA-Z][.)])\s+")
_FIELD = re.compile(r"^\s*:[\w .()/-]+:(\s|$)")
_OPTION_LINE = re.compile(r"^\s*:[\w-]+:")

_INLINE = [
    (re.compile(r":([\w:.+-]+):`([^`]*)`"), lambda m: _role_text(m.group(1), m.group(2))),
    (re.compile(r"`([^`<]*?)\s*<[^`>]*>`__?"), r"\1"),
    (re.compile(r"``([^`]+)``"), r"\1"),
    (re.compile(r"`([^`]+)`_{0,2}"), r"\1"),
    (re.compile(r"\*\*(\S[^*]*?)\*\*"), r"\1"),
    (re.compile(r"\*(\S[^*]*?)\*"), r"\1"),
    (re.compile(r"\|(\w[\w -]*)\|_{0,2}"), r"\1"),
    (re.compile(r"\s?\[(#[\w-]*|\d+|\*)\]_"), ""),
    (re.compile(r"\\ "), ""),
]


def _role_text(role, inner):
    """The text a role such as :func:`~json.dumps` or :ref:`t <x>` shows."""
    if role in ("rfc", "pep"):
        return "%s %s" % (role.upper(), inner)
    target = re.match(r"(.+?)\s+<[^<>]+>$", inner)
    if target:
        return target.group(1)
    if inner.startswith("~"):
        return inner[1:].split(".")[-1]
    return inner.lstrip("!")


def inline_text(paragraph):
    """A paragraph with reStructuredText inline markup reduced to text."""
    for pattern, replacement in _INLINE:
        paragraph = pattern.sub(replacement, paragraph)
    return paragraph


def _indent(line):
    return len(line) - len(line.lstrip(" "))


class _Reader:
    """Walks the lines once, collecting paragraphs and skipping blocks."""

    def __init__(self):
        self.paragraphs = []
        self.current = []         # lines of the paragraph being read
        self.current_indent = 0   # indent of its first line
        self.skip_deeper_than = None  # skip blank lines and lines indented more
        self.skip_to_blank = False    # skip until the next blank line
        self.in_table = False
        self.after_directive = False  # dropping a prose directive's options

    def flush(self):
        if not self.current:
            return
        last = self.current[-1]
        if last.endswith("::"):  # a literal block follows
            self.skip_deeper_than = self.current_indent
            self.current[-1] = last[:-2].rstrip() + (":" if not last.endswith(" ::") else "")
        self.paragraphs.append(inline_text(" ".join(self.current)))
        self.current = []

    def skipping(self, line):
        if self.skip_to_blank:
            self.skip_to_blank = bool(line.strip())
            return self.skip_to_blank
        if self.skip_deeper_than is not None:
            if not line.strip() or _indent(line) > self.skip_deeper_than:
                return True
            self.skip_deeper_than = None
        if self.after_directive:
            if _OPTION_LINE.match(line):
                return True
            self.after_directive = False
        return False

    def table(self, line, next_line):
        """Whether `line` is part of a simple table (borders start and end it)."""
        if _TABLE_BORDER.match(line):
            self.flush()
            if self.in_table and not next_line.strip():
                self.in_table = False
            else:
                self.in_table = True
            return True
        return self.in_table

    def markup(self, line):
        """Handles a line that starts explicit markup; whether it did."""
        directive = _DIRECTIVE.match(line)
        if directive or _EXPLICIT.match(line):
            self.flush()
            indent = _indent(line)
            name = directive.group(2) if directive else ""
            if name in _ADMONITIONS:
                self.after_directive = True
            elif name in _DESCRIPTIONS:
                self.skip_to_blank = True
            else:
                self.skip_deeper_than = indent
            return True
        if _ADORNMENT.match(line) or _GRID.match(line) or _FIELD.match(line):
            self.flush()
            return True
        if line.lstrip().startswith(">>>"):
            self.flush()
            self.skip_to_blank = True
            return True
        return False

    def text(self, line):
        bullet = _BULLET.match(line)
        if bullet:
            self.flush()
            line = line[bullet.end():]
        if not self.current:
            self.current_indent = _indent(line) if not bullet else _indent(bullet.group(0))
        self.current.append(line.strip())

    def read(self, lines):
        for i, line in enumerate(lines):
            if self.skipping(line):
                continue
            if not line.strip():
                self.flush()
                continue
            next_line = lines[i + 1] if i + 1 < len(lines) else ""
            if self.table(line, next_line) or self.markup(line):
                continue
            self.text(line)
        self.flush()
        return self.paragraphs


def paragraphs(text):
    """The candidate prose paragraphs of a reStructuredText source."""
    lines = text.expandtabs(8).splitlines()
    return _Reader().read(lines)
