"""The small frozen values that the engine, the fixer and every surface exchange."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class Fix:
    """A rewrite of the source that removes a finding.

    ``applicability`` is ``"safe"`` (keeps behaviour; applied by ``--fix``) or
    ``"unsafe"`` (needs ``--unsafe-fixes``).  ``kind`` names the libcst
    transform in ``onceguard.fixes`` that performs it; the fixer locates the
    node again by the finding's range, so a fix carries no text offsets that
    could go stale.
    """

    kind: str
    description: str
    applicability: str = "safe"

    def to_json(self) -> dict:
        return {"kind": self.kind, "description": self.description, "applicability": self.applicability}


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

    def with_path(self, path: str) -> "Diagnostic":
        return Diagnostic(
            self.code, self.name, self.line, self.column, self.end_line, self.end_column,
            self.message, self.suggestion, self.fix, path,
        )

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
        }

    @classmethod
    def from_json(cls, data: dict) -> "Diagnostic":
        fix = data.get("fix")
        return cls(
            data["code"], data["name"], data["line"], data["column"], data["end_line"],
            data["end_column"], data["message"], data.get("suggestion", ""),
            Fix(**fix) if fix else None, data.get("path", ""),
        )
