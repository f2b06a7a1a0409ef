"""Findings grouped under their file, as ruff's ``--output-format grouped`` prints them::

    app/jobs.py:
      4:11 OG101 `pool.execute(...)` takes `pg_advisory_lock` on a pooled connection ...
      9:5  OG201 [*] ...

``[*]`` marks a finding that ``--fix`` removes; a finding that depends on other files has a
``via path:line ... → path:line ...`` line under it.
"""
from __future__ import annotations

from itertools import groupby
from typing import List

from ...model import Diagnostic
from . import ReportOptions, via

FORMAT = "grouped"


def render(diagnostics: List[Diagnostic], options: ReportOptions) -> str:
    out: List[str] = []
    ordered = sorted(diagnostics, key=lambda d: (d.path, d.line, d.column, d.code))
    files = 0
    for path, group in groupby(ordered, key=lambda d: d.path):
        findings = list(group)
        files += 1
        out.append(f"{path}:")
        width = max(len(f"{d.line}:{d.column}") for d in findings)
        for d in findings:
            marker = " [*]" if d.fix is not None and d.fix.applicability == "safe" else ""
            out.append(f"  {f'{d.line}:{d.column}':<{width}} {d.code}{marker} {d.message}")
            if d.related:
                out.append(f"  {'':<{width}} via {via(d)}")
        out.append("")
    if diagnostics and options.summary:
        count = len(diagnostics)
        out.append(f"Found {count} finding{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}.")
    return "\n".join(out) + ("\n" if out else "")
