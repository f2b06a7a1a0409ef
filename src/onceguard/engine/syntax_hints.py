"""Why a file that does not parse may still be fine: it needs a newer Python, or it is Python 2."""
from __future__ import annotations

import re
import sys
from typing import Optional

# (minimum version, pattern on the failing line, what the construct is)
_NEWER_SYNTAX = (
    ((3, 12), re.compile(r"^\s*type\s+\w+(\[.*\])?\s*="), "a `type` alias statement"),
    ((3, 12), re.compile(r"^\s*(async\s+)?def\s+\w+\s*\["), "generic function syntax"),
    ((3, 12), re.compile(r"^\s*class\s+\w+\s*\["), "generic class syntax"),
    # ``except A, B:`` (PEP 758) names classes; Python 2's ``except ValueError, e:`` binds a variable.
    ((3, 14), re.compile(r"^\s*except\*?\s+[\w.]+(\s*,\s*[A-Z][\w.]*)+\s*:"),
     "`except` with several types and no brackets"),
    ((3, 11), re.compile(r"^\s*except\s*\*"), "`except*`"),
    ((3, 10), re.compile(r"^\s*match\s+.+:\s*$"), "a `match` statement"),
)
_PYTHON2 = (
    re.compile(r"^\s*print\s+[^(=\s]"),
    re.compile(r"^\s*exec\s+[\"']"),
    re.compile(r"^\s*except\s+\w+\s*,\s*\w+\s*:"),
    re.compile(r"\b0[0-7]+L?\b|\b\d+L\b"),
    re.compile(r"^\s*raise\s+\w+\s*,"),
)


def explain_syntax_error(error: SyntaxError, text: Optional[str]) -> Optional[str]:
    line = error.text or ""
    if not line and text and error.lineno:
        lines = text.splitlines()
        if 0 < error.lineno <= len(lines):
            line = lines[error.lineno - 1]
    running = sys.version_info[:2]
    for version, pattern, what in _NEWER_SYNTAX:
        if running < version and pattern.search(line):
            return (f"{what} needs Python {version[0]}.{version[1]} or newer "
                    f"(running {running[0]}.{running[1]})")
    if running < (3, 12) and (error.msg or "").startswith("f-string"):
        return (f"an f-string that needs Python 3.12 or newer (running {running[0]}.{running[1]}) "
                "or one that no version reads")
    if "Missing parentheses in call to" in (error.msg or "") or any(p.search(line) for p in _PYTHON2):
        return "this looks like Python 2 code"
    return None
