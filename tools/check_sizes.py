#!/usr/bin/env python3
"""Holds C++ sources to the size rules of docs/architecture.md: no file over
MAX_FILE_LINES lines and no function body over MAX_FUNCTION_LINES lines,
in framework/, experiments/ and plugins/, tests aside (files named *_test.cc,
test-only helpers under testing/ folders and the CUDA emulator's sources
count as tests here).

  python3 tools/check_sizes.py            check; exit 1 naming each offender
  python3 tools/check_sizes.py --report   also list the 15 longest functions

A function is a brace block opened at namespace or class level after a
parameter list (`) {`, `) const {`, `) override {`, `-> T {`, an
initializer list); lambdas and local classes count toward the function that
holds them. Comments, strings and preprocessor lines are ignored when
braces are matched. The line count is from the line of the opening brace
to that of the closing one.
"""
import os
import re
import sys

MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80
ROOTS = ["framework", "experiments", "plugins"]
SOURCE_EXTENSIONS = (".cc", ".h", ".cu", ".cuh")


def is_test_source(path):
    name = os.path.basename(path)
    parts = path.split(os.sep)
    return (name.endswith("_test.cc") or "testing" in parts or "emulator" in parts
            or "fuzz" in parts)


def strip_code(text):
    """Comments, string and character literals and preprocessor lines
    replaced by spaces (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c == "R" and text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if m:
                close = ")" + m.group(1) + '"'
                end = text.find(close, i + len(m.group(0)))
                end = n if end < 0 else end + len(close)
                out.append(re.sub(r"[^\n]", " ", text[i:end]))
                i = end
                continue
        if c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
            continue
        out.append(c)
        at_line_start = c == "\n" or (at_line_start and c in " \t")
        i += 1
    return "".join(out)


FUNCTION_TAIL = re.compile(
    r"(\)\s*(const|override|final|noexcept|mutable|volatile|&|&&|\s)*"
    r"|->\s*[\w:<>,\s\*&]+"
    r"|\)\s*:\s*[^;{}]*\([^;{}]*\)"   # constructor initializer list
    r"|\)\s*:\s*[^;{}]*\}"             # ... ending in a braced initializer
    r")\s*$")


def functions(code):
    """(first line, last line, header text) of every function body."""
    found = []
    stack = []  # for each open brace: "function", "scope" (namespace, class, ...), "inner"
    line = 1
    last_stop = 0  # where the text before a brace starts (after ; { or })
    starts = []
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            inside_function = any(kind in ("function", "inner") for kind, _, _ in stack)
            head = code[last_stop:i]
            if inside_function:
                stack.append(("inner", line, head))
            elif FUNCTION_TAIL.search(head) and not re.search(
                    r"\b(class|struct|union|enum|namespace)\b[^()]*$", head):
                stack.append(("function", line, head))
            else:
                stack.append(("scope", line, head))
            last_stop = i + 1
        elif c == "}":
            if stack:
                kind, first, head = stack.pop()
                if kind == "function":
                    found.append((first, line, " ".join(head.split())[-70:]))
            last_stop = i + 1
        elif c == ";":
            last_stop = i + 1
    return found


def main(argv):
    report = "--report" in argv
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = []
    lengths = []
    for root in ROOTS:
        for folder, _, names in os.walk(os.path.join(top, root)):
            for name in sorted(names):
                if not name.endswith(SOURCE_EXTENSIONS):
                    continue
                path = os.path.relpath(os.path.join(folder, name), top)
                if is_test_source(path):
                    continue
                text = open(os.path.join(top, path), encoding="utf-8").read()
                n_lines = text.count("\n")
                if n_lines > MAX_FILE_LINES:
                    problems.append(f"{path}: {n_lines} lines (at most {MAX_FILE_LINES}): "
                                    "split it by what its parts do")
                for first, last, head in functions(strip_code(text)):
                    length = last - first + 1
                    lengths.append((length, f"{path}:{first}", head))
                    if length > MAX_FUNCTION_LINES:
                        problems.append(f"{path}:{first}: a function of {length} lines (at most "
                                        f"{MAX_FUNCTION_LINES}): {head!r}; name its steps as "
                                        "functions of their own")
    if report:
        for length, where, head in sorted(lengths, reverse=True)[:15]:
            print(f"{length:5d}  {where}  {head}")
    for p in problems:
        print(p)
    print(f"check_sizes: {len(problems)} problem(s) in {', '.join(ROOTS)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
