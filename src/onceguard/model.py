"""The small frozen values that the engine, the fixer and every surface exchange."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Tuple


@dataclass(frozen=True)
class Fix:
    """A rewrite of the source that removes a finding.

    ``applicability`` is ``"safe"`` (keeps behaviour; applied by ``--fix``) or
    ``"unsafe"`` (needs ``--unsafe-fixes``).  ``kind`` names the libcst
    transform in ``onceguard.engine.fixes`` that performs it; the fixer locates the
    node again by the finding's range, so a fix carries no text offsets that
    could go stale.
    """

    kind: str
    description: str
    applicability: str = "safe"

    def to_json(self) -> dict:
        return {"kind": self.kind, "description": self.description, "applicability": self.applicability}


@dataclass(frozen=True)
class Related:
    """Another place a finding depends on: the start-up code that reaches it, the registration of a
    job defined elsewhere, the helper that takes the lock.  ``path`` is absolute as the engine returns
    it and shown as the finding's path is (relative to where the check ran); ``message`` says what
    happens there, in a few words.  The order of a
    finding's ``related`` is the order of the path from the entry point to the finding; a place that shows
    why it matters (the call that acts outside the process) comes after that path."""

    path: str
    line: int
    column: int
    message: str

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "column": self.column, "message": self.message}


@dataclass(frozen=True)
class Diagnostic:
    """One finding. Lines are 1-based; columns are 1-based, as flake8 and ruff print them."""

    code: str
    name: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    suggestion: str = ""
    fix: Optional[Fix] = None
    path: str = field(default="", compare=False)
    #: other files' (or this file's) places the finding depends on, entry point first
    related: Tuple[Related, ...] = field(default=(), compare=False)

    def with_path(self, path: str) -> "Diagnostic":
        return replace(self, path=path)

    def with_related_paths(self, convert: Callable[[str], str]) -> "Diagnostic":
        """The finding with each related place's path passed through ``convert`` (made absolute, made
        relative for display), as its own path is."""
        if not self.related:
            return self
        return replace(self, related=tuple(replace(place, path=convert(place.path)) for place in self.related))

    def with_paths(self, convert: Callable[[str], str]) -> "Diagnostic":
        """The finding's path and its related places' paths, all passed through ``convert``."""
        return replace(self.with_related_paths(convert), path=convert(self.path))

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "suggestion": self.suggestion,
            "fix": self.fix.to_json() if self.fix else None,
            "related": [place.to_json() for place in self.related],
        }

    @classmethod
    def from_json(cls, data: dict) -> "Diagnostic":
        fix = data.get("fix")
        return cls(
            data["code"], data["name"], data["line"], data["column"], data["end_line"],
            data["end_column"], data["message"], data.get("suggestion", ""),
            Fix(**fix) if fix else None, data.get("path", ""),
            tuple(Related(**place) for place in data.get("related", ())),
        )
