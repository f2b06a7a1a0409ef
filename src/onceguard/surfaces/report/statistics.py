"""``--statistics``: how many findings of each code, most frequent first."""
from __future__ import annotations

from collections import Counter
from typing import List

from ...model import Diagnostic
from ...rules.registry import rule_name


def statistics(diagnostics: List[Diagnostic]) -> List[dict]:
    """One entry per code: ``{code, name, count, fixable}`` (``fixable``: how many ``--fix`` removes)."""
    counts = Counter(d.code for d in diagnostics)
    fixable = Counter(d.code for d in diagnostics if d.fix is not None and d.fix.applicability == "safe")
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [{"code": code, "name": rule_name(code), "count": count, "fixable": fixable[code]} for code, count in ordered]


def render_statistics(diagnostics: List[Diagnostic]) -> str:
    lines = [f"{entry['count']:>5}  {entry['code']}  {entry['name']}" for entry in statistics(diagnostics)]
    return "\n".join(lines) + ("\n" if lines else "")
