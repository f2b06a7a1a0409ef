"""``# noqa``, ``# noqa: OG101`` on a line, and ``# onceguard: noqa[: OG101]`` (or flake8's and ruff's
``# flake8: noqa[: OG101]``) for a whole file; and the edits that add such comments (``--add-noqa``,
the language server's code actions)."""
from __future__ import annotations

import io
import re
import tokenize
from typing import Callable, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from .model import Diagnostic

# Same grammar as flake8: codes separated by commas and/or spaces after "noqa:".
LINE_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
FILE_NOQA = re.compile(
    r"#\s*onceguard:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$", re.IGNORECASE
)
# flake8 skips a file with a bare ``# flake8: noqa`` line; ruff also reads codes after it as file-wide.
FLAKE8_FILE_NOQA = re.compile(
    r"#\s*flake8[:=]\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$", re.IGNORECASE
)
_SPLIT = re.compile(r"[,\s]+")

ALL = frozenset({"*"})


def line_codes(line: str) -> Optional[FrozenSet[str]]:
    """None: no noqa; ALL: a bare noqa; else the codes named."""
    if "noqa" not in line.lower():
        return None
    match = LINE_NOQA.search(line)
    if not match:
        return None
    codes = match.group("codes")
    if not codes:
        return ALL
    return frozenset(c.upper() for c in _SPLIT.split(codes) if c)


def file_codes(lines: Sequence[str]) -> Optional[FrozenSet[str]]:
    found: set = set()
    for line in lines:
        if "onceguard" in line:
            match = FILE_NOQA.search(line.strip())
        elif "flake8" in line:
            match = FLAKE8_FILE_NOQA.match(line.strip())
        else:
            continue
        if match:
            codes = match.group("codes")
            if not codes:
                return ALL
            found.update(c.upper() for c in _SPLIT.split(codes) if c)
    return frozenset(found) if found else None


def _suppressed(code: str, codes: Optional[FrozenSet[str]]) -> bool:
    if codes is None:
        return False
    return codes is ALL or "*" in codes or any(code.startswith(c) for c in codes)


def _line_suppresses(code: str, lines: Optional[Sequence[str]], number: int) -> bool:
    if not lines or not 0 < number <= len(lines):
        return False
    return _suppressed(code, line_codes(lines[number - 1]))


def filter_suppressed(diagnostics: Iterable[Diagnostic], lines: Sequence[str],
                      lines_of: Optional[Callable[[str], Optional[Sequence[str]]]] = None) -> List[Diagnostic]:
    """The findings no ``noqa`` answers: a file-wide one in this file, one on the finding's own line, or
    (with ``lines_of``, which gives a related place's file's lines, this file's own for a place here) one
    on the line of any of its related places: a finding that spans two places is answered at either."""
    whole_file = file_codes(lines)
    kept = []
    for diagnostic in diagnostics:
        if diagnostic.code in ("OG000",):
            kept.append(diagnostic)
            continue
        if _suppressed(diagnostic.code, whole_file):
            continue
        if _line_suppresses(diagnostic.code, lines, diagnostic.line):
            continue
        if lines_of is not None and any(_line_suppresses(diagnostic.code, lines_of(place.path), place.line)
                                        for place in diagnostic.related):
            continue
        kept.append(diagnostic)
    return kept


# --- adding comments ---------------------------------------------------------------------------

def lines_ending_inside_strings(text: str) -> Optional[Set[int]]:
    """0-based lines whose end lies inside a multi-line string (a comment there would be string text),
    or None when the text does not tokenize."""
    inside: Set[int] = set()
    starts: List[Tuple[int, int]] = []
    fstring_start = getattr(tokenize, "FSTRING_START", None)
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if fstring_start is not None and token.type == fstring_start:
                starts.append(token.start)
                continue
            if fstring_end is not None and token.type == fstring_end and starts:
                first_row = starts.pop()[0]
            elif token.type == tokenize.STRING:
                first_row = token.start[0]
            else:
                continue
            inside.update(range(first_row - 1, token.end[0] - 1))
    except (tokenize.TokenError, SyntaxError, IndentationError, ValueError):
        return None
    return inside


def line_edit(text: str, line_index: int, code: str,
              inside: Optional[Set[int]] = None) -> Optional[Tuple[int, int, int, str]]:
    """(line, start, end, new text) in characters that makes the line carry ``# noqa: code``; None when
    the line is already suppressed or a comment cannot go there. ``inside``: the lines ending inside
    strings, when the caller has them already."""
    lines = source_lines(text)
    if not 0 <= line_index < len(lines):
        return None
    line = lines[line_index].rstrip("\r\n")
    existing = line_codes(line)
    if _suppressed(code, existing):
        return None
    if existing is not None:
        match = LINE_NOQA.search(line)
        if match is None:
            return None
        end = match.end("codes")
        return line_index, end, end, f", {code}"
    if line.rstrip().endswith("\\"):
        return None  # a comment after a line continuation is a syntax error
    if inside is None:
        inside = lines_ending_inside_strings(text)
    if inside is None or line_index in inside:
        return None
    content = line.rstrip()
    separator = "  " if content else ""
    return line_index, len(content), len(line), f"{separator}# noqa: {code}"


def add_noqa(text: str, wanted: Iterable[Tuple[int, str]]) -> Tuple[str, int, List[Tuple[int, str]]]:
    """``# noqa: CODE`` on each (1-based line, code): the new text, how many codes were added, and the
    (line, code) pairs no comment could be put on (a line ending inside a string or a continuation)."""
    inside = lines_ending_inside_strings(text)
    added = 0
    skipped: List[Tuple[int, str]] = []
    for line, code in sorted(set(wanted)):
        edit = line_edit(text, line - 1, code, inside)
        if edit is None:
            if not _suppressed(code, line_codes(_line(text, line - 1))):
                skipped.append((line, code))
            continue
        index, start, end, new = edit
        lines = source_lines(text)
        body = lines[index].rstrip("\r\n")
        lines[index] = body[:start] + new + body[end:] + lines[index][len(body):]
        text = "".join(lines)
        added += 1
    return text, added, skipped


def _line(text: str, index: int) -> str:
    lines = source_lines(text)
    return lines[index].rstrip("\r\n") if 0 <= index < len(lines) else ""


_LINE_END = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> List[str]:
    """Lines with their ends, split only where Python ends a line (str.splitlines also splits at form feeds)."""
    parts = []
    start = 0
    for match in _LINE_END.finditer(text):
        parts.append(text[start:match.end()])
        start = match.end()
    if start < len(text):
        parts.append(text[start:])
    return parts
