"""``# noqa``, ``# noqa: OG101`` on a line, and ``# onceguard: noqa[: OG101]`` for a whole file."""
from __future__ import annotations

import re
from typing import FrozenSet, Iterable, List, Optional, Sequence

from .model import Diagnostic

# Same grammar as flake8: codes separated by commas and/or spaces after "noqa:".
LINE_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
FILE_NOQA = re.compile(
    r"#\s*onceguard:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$", re.IGNORECASE
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
        if "onceguard" not in line:
            continue
        match = FILE_NOQA.search(line.strip())
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


def filter_suppressed(diagnostics: Iterable[Diagnostic], lines: Sequence[str]) -> List[Diagnostic]:
    whole_file = file_codes(lines)
    kept = []
    for diagnostic in diagnostics:
        if diagnostic.code in ("OG000",):
            kept.append(diagnostic)
            continue
        if _suppressed(diagnostic.code, whole_file):
            continue
        line = lines[diagnostic.line - 1] if 0 < diagnostic.line <= len(lines) else ""
        if _suppressed(diagnostic.code, line_codes(line)):
            continue
        kept.append(diagnostic)
    return kept
