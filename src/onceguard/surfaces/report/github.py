"""GitHub Actions workflow commands: one ``::warning`` (or ``::error``) annotation per finding.

``::warning file=app/jobs.py,line=4,col=11,endLine=4,endColumn=53,title=OG101 session-lock-on-pool::message``
GitHub shows them on the pull request's diff. Codes configured with ``error = [...]`` and the
engine's own OG000/OG001 become ``::error``. An annotation has one place: the other places a finding
depends on are appended to its message as ``(via path:line ... → ...)``.
"""
from __future__ import annotations

from typing import List

from ...model import Diagnostic
from . import ReportOptions, is_error, via

FORMAT = "github"


def escape_data(value: str) -> str:
    """The message part: GitHub's toolkit escapes %, CR and LF."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A ``key=value`` property: the data escapes plus ``:`` and ``,``, which delimit properties."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(diagnostic: Diagnostic, options: ReportOptions) -> str:
    command = "error" if is_error(diagnostic, options) else "warning"
    properties = (
        ("file", diagnostic.path),
        ("line", str(diagnostic.line)),
        ("col", str(diagnostic.column)),
        ("endLine", str(diagnostic.end_line)),
        ("endColumn", str(diagnostic.end_column)),
        ("title", f"{diagnostic.code} {diagnostic.name}"),
    )
    header = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    text = diagnostic.message
    if diagnostic.related:
        # An annotation has one place; the others it depends on go into its text.
        text = f"{text} (via {via(diagnostic)})"
    if diagnostic.suggestion:
        text = f"{text}\n{diagnostic.suggestion}"
    return f"::{command} {header}::{escape_data(text)}"


def render(diagnostics: List[Diagnostic], options: ReportOptions) -> str:
    return "".join(annotation(d, options) + "\n" for d in diagnostics)
