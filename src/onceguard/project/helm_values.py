"""A Helm chart's templates read with the chart's own ``values.yaml`` written in.

``value: {{ .Values.worker.database.host | default .Values.database.host | quote }}`` in a chart whose
``values.yaml`` gives ``database.host: fulfil-pgbouncer`` and leaves ``worker.database`` empty sets the variable
to ``fulfil-pgbouncer``: what ``helm template`` renders without overrides.  Only plain pipelines are read: a value
(``.Values.a.b`` or a quoted literal) through ``default``, ``quote``, ``toString``, ``int``, ``lower`` and
``upper``; anything else (a function of the chart, ``.Release``, ``include``, a value left unset) is not known and
stands as ``UNKNOWN`` (a word the readers of settings skip).  A whole line of template directives is dropped; line
numbers are kept.
"""
from __future__ import annotations

import os
import re
import shlex
from typing import Dict, Optional

from . import index as project
from .deployment_files import read_text

#: What an inline expression that cannot be read here stands as.
UNKNOWN = "TEMPLATE"
#: The file that marks a chart's directory, and the chart's default values beside it.
_CHART = "Chart.yaml"
_VALUES = "values.yaml"
#: How many directories up from a template its chart is looked for.
_MAX_UP = 3

_TEMPLATE_LINE = re.compile(r"^\s*\{\{-?.*-?\}\}\s*$")
_TEMPLATE = re.compile(r"\{\{-?(.*?)-?\}\}")
_MISSING = object()

_charts: Dict[str, Optional[dict]] = {}
project.on_clear(_charts.clear)


def yaml_documents(text: str, path: str = "") -> list:
    """The YAML documents of a deployment file (``path``, when given, places a Helm template in its chart, whose
    values are written in first); none when it does not parse."""
    import yaml  # (imported here: the plugin's import stays cheap)

    try:
        return list(yaml.compose_all(rendered(text, path) if path else text, Loader=yaml.SafeLoader))
    except (yaml.YAMLError, RecursionError):
        return []


def rendered(text: str, path: str) -> str:
    """``text`` (a YAML file at ``path``) with its template expressions read, line for line."""
    if "{{" not in text:
        return text
    values = _chart_values(path)
    lines = []
    for line in text.splitlines():
        if _TEMPLATE_LINE.match(line):
            lines.append("")
            continue
        lines.append(_TEMPLATE.sub(lambda m: _expression(m.group(1), values), line))
    return "\n".join(lines)


def _chart_values(path: str) -> Optional[dict]:
    """The ``values.yaml`` of the chart a template belongs to (its directory, or one a few levels up, holds
    ``Chart.yaml``); None outside a chart or when it cannot be read."""
    import yaml

    directory = os.path.dirname(os.path.abspath(path))
    for _ in range(_MAX_UP):
        if os.path.isfile(os.path.join(directory, _CHART)):
            break
        directory = os.path.dirname(directory)
    else:
        return None
    if directory not in _charts:
        values: Optional[dict] = None
        text = read_text(os.path.join(directory, _VALUES))
        try:
            loaded = yaml.safe_load(text) if text else {}
            values = loaded if isinstance(loaded, dict) else None
        except (yaml.YAMLError, RecursionError):
            values = None
        _charts[directory] = values
    return _charts[directory]


def _expression(source: str, values: Optional[dict]) -> str:
    value = _pipeline(source.strip(), values) if values is not None else _MISSING
    if value is _MISSING or isinstance(value, (dict, list)) or value is None:
        return UNKNOWN
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _pipeline(source: str, values: dict) -> object:
    try:
        stages = [shlex.split(stage, posix=False) for stage in source.split("|")]
    except ValueError:
        return _MISSING
    if not stages or not stages[0] or len(stages[0]) != 1:
        return _MISSING
    value = _operand(stages[0][0], values)
    for stage in stages[1:]:
        if value is _MISSING or not stage:
            return _MISSING
        name, arguments = stage[0], stage[1:]
        if name == "default" and len(arguments) == 1:
            if value is None or value in ("", 0, False) or value == {} or value == []:
                value = _operand(arguments[0], values)
        elif name == "quote" and not arguments:
            value = '"' + ("" if value is None else str(value)).replace("\\", "\\\\").replace('"', '\\"') + '"'
        elif name == "toString" and not arguments:
            value = "" if value is None else str(value)
        elif name == "int" and not arguments:
            try:
                value = int(value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return _MISSING
        elif name in ("lower", "upper") and not arguments and isinstance(value, str):
            value = getattr(value, name)()
        else:
            return _MISSING
    return value


def _operand(word: str, values: dict) -> object:
    """``.Values.a.b`` (None where the values leave it out), or a literal (a quoted text, a whole number)."""
    if word.startswith(".Values."):
        current: object = values
        for part in word[len(".Values."):].split("."):
            if not isinstance(current, dict):
                return None
            current = current.get(part)
        return current
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "\"`":
        return word[1:-1]
    if re.fullmatch(r"-?\d+", word):
        return int(word)
    return _MISSING
