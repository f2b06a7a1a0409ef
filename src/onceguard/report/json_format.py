"""A JSON list of findings; keys: path, line, column, end_line, end_column, code, name, message,
suggestion, fix (null or {kind, description, applicability}). Lines and columns are 1-based."""
from __future__ import annotations

import json
from typing import List

from ..model import Diagnostic
from . import ReportOptions

FORMAT = "json"


def render(diagnostics: List[Diagnostic], options: ReportOptions) -> str:
    return json.dumps([d.to_json() for d in diagnostics], indent=2) + "\n"
