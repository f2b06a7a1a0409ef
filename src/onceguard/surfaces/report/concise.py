"""One line per finding, no suggestion: ``path:line:col: OG101 message``."""
from __future__ import annotations

from typing import List

from ...model import Diagnostic
from . import ReportOptions

FORMAT = "concise"


def render(diagnostics: List[Diagnostic], options: ReportOptions) -> str:
    return "".join(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}\n" for d in diagnostics)
