"""``--statistics``: how many findings of each code, most frequent first."""
from __future__ import annotations

from collections import Counter
from typing import List

from ..model import Diagnostic
from ..registry import rule_name


def render_statistics(diagnostics: List[Diagnostic]) -> str:
    counts = Counter(d.code for d in diagnostics)
    lines = [f"{count:>5}  {code}  {rule_name(code)}" for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join(lines) + ("\n" if lines else "")
