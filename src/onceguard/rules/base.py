"""What a rule is: a small class with a code, a name, trigger words and a ``check`` over module facts."""
from __future__ import annotations

import ast
from typing import ClassVar, Iterable, Optional, Sequence, Tuple, Union

from ..analysis.facts import ModuleFacts
from ..model import Diagnostic, Fix, Related


#: A byte string that must occur in the file, or a tuple of byte strings that must all occur.
Trigger = Union[bytes, Tuple[bytes, ...]]


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    #: At least one of these must occur in a file for the rule to have anything to say; a file
    #: that matches no rule's triggers is never parsed, and only matching rules run on a tree.
    triggers: ClassVar[Tuple[Trigger, ...]]
    #: Which files a rule has nothing to say about, known from the path alone, so that a file no rule
    #: applies to is never read past its name: tests run once, in one process; migration code is where
    #: blocking locks and DDL belong; some rules speak only about migration code.
    skips_tests: ClassVar[bool] = False
    skips_migration_code: ClassVar[bool] = False
    only_in_migration_code: ClassVar[bool] = False

    @classmethod
    def applies_to(cls, context) -> bool:
        if cls.skips_tests and context.is_test:
            return False
        if context.is_migration:
            return not cls.skips_migration_code
        return not cls.only_in_migration_code

    @staticmethod
    def config_triggers(config) -> Tuple[Trigger, ...]:
        """Triggers that come from the configuration (e.g. claim functions named there)."""
        return ()

    @staticmethod
    def project_triggers(config) -> Tuple[Trigger, ...]:
        """Triggers the project itself gives (the names of its own registering decorators), asked only when
        the whole project is read: a file may hold a finding only another file's code explains."""
        return ()

    @staticmethod
    def project_files(config, path: str) -> bool:
        """Whether the project itself makes this file worth reading whatever its text (a program the deployment
        runs in every replica), asked only when the whole project is read."""
        return False

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        raise NotImplementedError

    def finding(
        self,
        node: ast.AST,
        message: str,
        suggestion: str,
        fix: Optional[Fix] = None,
        end_node: Optional[ast.AST] = None,
        related: Sequence[Related] = (),
    ) -> Diagnostic:
        end = end_node or node
        line = getattr(node, "lineno", 1)
        column = getattr(node, "col_offset", 0) + 1
        end_line = getattr(end, "end_lineno", None) or line
        end_column = (getattr(end, "end_col_offset", None) or column - 1) + 1
        return Diagnostic(self.code, self.name, line, column, end_line, end_column, message, suggestion, fix,
                          related=tuple(related))

    def at_def(self, function: ast.AST, message: str, suggestion: str, fix: Optional[Fix] = None,
               related: Sequence[Related] = ()) -> Diagnostic:
        """A finding on a ``def`` line, spanning the name only: editors underline the header, not the body."""
        keyword = "async def " if isinstance(function, ast.AsyncFunctionDef) else "def "
        start = function.col_offset + 1
        end = start + len(keyword) + len(getattr(function, "name", ""))
        return Diagnostic(self.code, self.name, function.lineno, start, function.lineno, end, message, suggestion, fix,
                          related=tuple(related))
