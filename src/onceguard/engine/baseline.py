"""``--baseline FILE``: adopt onceguard on an existing code base and hold the line.

``--write-baseline`` records every current finding; later runs with ``--baseline`` report only the
findings that are not in it. A finding is recognised by its file, its code and the text of its line
(stripped), not by its line number, so edits elsewhere in the file do not bring it back; two equal
findings on equal lines are counted, so a copy of a recorded hazard is still reported.
Paths are stored relative to the baseline file, with ``/``, so the file works from any directory and
on any system. The engine's own OG000/OG001 are never recorded: they are about this run.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from typing import Dict, Iterable, List, Optional, Tuple

from ..config import ConfigError
from ..model import Diagnostic

FORMAT_VERSION = 1
_ENGINE = ("OG000", "OG001")

Key = Tuple[str, str, str]


class _Lines:
    """Each file's lines, read once, decoded as Python decodes source."""

    def __init__(self) -> None:
        self.files: Dict[str, List[str]] = {}

    def text(self, path: str, line: int) -> str:
        if path not in self.files:
            from .check import decode, read_source
            from ..noqa import source_lines

            try:
                self.files[path] = [line.rstrip("\r\n") for line in source_lines(decode(read_source(path)))]
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                self.files[path] = []
        lines = self.files[path]
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _relative(path: str, base: str) -> str:
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, base)
    except ValueError:  # another drive
        relative = absolute
    return relative.replace(os.sep, "/")


def _keys(diagnostics: Iterable[Diagnostic], base: str, lines: _Lines) -> List[Tuple[Key, Diagnostic]]:
    return [((_relative(d.path, base), d.code, lines.text(d.path, d.line)), d)
            for d in diagnostics if d.code not in _ENGINE]


def write(path: str, diagnostics: Iterable[Diagnostic]) -> int:
    """Record the findings in ``path`` (atomically); returns how many."""
    from .fixes import write_atomically

    base = os.path.dirname(os.path.abspath(path))
    entries = [
        {"path": key[0], "code": key[1], "source": key[2], "line": d.line, "message": d.message}
        for key, d in sorted(_keys(diagnostics, base, _Lines()), key=lambda kd: (kd[0], kd[1].line))
    ]
    data = json.dumps({"onceguard-baseline": FORMAT_VERSION, "findings": entries}, indent=2) + "\n"
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
        if os.path.exists(path):
            write_atomically(path, data.encode("utf-8"))
        else:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(data)
    except OSError as error:
        raise ConfigError(f"--baseline {path}: cannot write: {error.strerror or error}") from None
    return len(entries)


def load(path: str) -> "Counter[Key]":
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"--baseline {path}: no such file (create it with --write-baseline)") from None
    except (OSError, ValueError) as error:
        raise ConfigError(f"--baseline {path}: cannot read: {getattr(error, 'strerror', None) or error}") from None
    entries = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(entries, list) or data.get("onceguard-baseline") != FORMAT_VERSION:
        raise ConfigError(f"--baseline {path}: not an onceguard baseline (write one with --write-baseline)")
    counts: "Counter[Key]" = Counter()
    for entry in entries:
        if isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("path", "code", "source")):
            counts[(entry["path"], entry["code"], entry["source"])] += 1
    return counts


def subtract(diagnostics: List[Diagnostic], path: str, known: Optional["Counter[Key]"] = None) -> List[Diagnostic]:
    """The findings that are not in the baseline at ``path``."""
    budget = Counter(load(path) if known is None else known)
    base = os.path.dirname(os.path.abspath(path))
    keyed = dict((id(d), key) for key, d in _keys(diagnostics, base, _Lines()))
    kept = []
    for diagnostic in diagnostics:
        key = keyed.get(id(diagnostic))
        if key is not None and budget[key] > 0:
            budget[key] -= 1
            continue
        kept.append(diagnostic)
    return kept
