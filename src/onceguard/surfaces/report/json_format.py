"""A JSON list of findings; keys: path, line, column, end_line, end_column, code, name, message,
suggestion, fix (null or {kind, description, applicability}), related (the other places the finding
depends on, entry point first: [{path, line, column, message}]). Lines and columns are 1-based.

With ``--statistics`` the output is one object, ``{"findings": [...], "statistics": [...]}``, so that it
still parses as JSON."""
from __future__ import annotations

import json
from typing import List

from ...model import Diagnostic
from . import ReportOptions

FORMAT = "json"


def render(diagnostics: List[Diagnostic], options: ReportOptions) -> str:
    findings = [d.to_json() for d in diagnostics]
    if options.statistics is not None:
        return json.dumps({"findings": findings, "statistics": options.statistics}, indent=2) + "\n"
    return json.dumps(findings, indent=2) + "\n"
