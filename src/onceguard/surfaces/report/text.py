"""``path:line:col: OG101 message`` and, indented under it, the places in other files it depends on
(``via ...``), the suggestion (``help: ...``) and the fix."""
from __future__ import annotations

from typing import List

from ...model import Diagnostic
from . import ReportOptions, via

FORMAT = "text"


def render(diagnostics: List[Diagnostic], options: ReportOptions) -> str:
    out = []
    for d in diagnostics:
        out.append(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}")
        if d.related:
            out.append(f"  via {via(d)}")
        if d.suggestion:
            out.append(f"  help: {d.suggestion}")
        if d.fix is not None:
            marker = {"safe": "fixable with --fix", "unsafe": "fixable with --fix --unsafe-fixes"}.get(
                d.fix.applicability, "to apply by hand")  # display-only: nothing here can write it
            out.append(f"  fix: {d.fix.description} ({marker})")
    if diagnostics and options.summary:
        count = len(diagnostics)
        out.append(f"Found {count} finding{'s' if count != 1 else ''}.")
    return "\n".join(out) + ("\n" if out else "")
