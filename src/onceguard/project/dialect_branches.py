"""Branches no database the project can connect with takes.

``if dialect in ("sqlite", "postgresql"): <atomic upsert> else: <portable read-then-write>``: when the
project's dependency files name drivers of those two dialects only, the ``else`` is code it cannot run, and
what it would race cannot happen.  A branch is judged by every dialect test around it (an ``elif`` chain
excludes what the tests before it took); the tests are comparisons with dialect names.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import FrozenSet, List, Optional, Sequence, Tuple

from ..analysis.facts import ModuleFacts
from ..knowledge import databases as known
from .dependencies import possible_dialects


@dataclass(frozen=True)
class _Admitted:
    """The dialects a branch runs under: only those of ``only`` (None: any), never those of ``never``."""

    only: Optional[FrozenSet[str]] = None
    never: FrozenSet[str] = frozenset()

    def and_(self, other: "_Admitted") -> "_Admitted":
        only = other.only if self.only is None else self.only if other.only is None else self.only & other.only
        return _Admitted(only, self.never | other.never)

    def reaches(self, possible: FrozenSet[str]) -> bool:
        candidates = possible if self.only is None else possible & self.only
        return bool(candidates - self.never)


_ANY = _Admitted()


def lines_no_dialect_reaches(facts: ModuleFacts) -> Tuple[Tuple[int, int], ...]:
    """(first, last) line of each branch that no dialect the project can connect with takes; none when the
    project's dependencies do not say which dialects it can use."""
    return facts.cached("project:dialect-dead-branches", _dead_ranges)


def _dead_ranges(facts: ModuleFacts) -> Tuple[Tuple[int, int], ...]:
    if not any(_dialect_test(branch.test) is not None for branch in facts.ifs):
        return ()
    possible = possible_dialects(facts)
    if possible is None:
        return ()
    found: List[Tuple[int, int]] = []
    _visit(facts.tree.body, _ANY, possible, found)
    return tuple(found)


def _visit(statements: Sequence[ast.stmt], admitted: _Admitted, possible: FrozenSet[str],
           found: List[Tuple[int, int]]) -> None:
    for statement in statements:
        if isinstance(statement, ast.If):
            test = _dialect_test(statement.test)
            if test is not None:
                taken, not_taken = test
                _branch(statement.body, admitted.and_(taken), possible, found)
                _branch(statement.orelse, admitted.and_(not_taken), possible, found)
                continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(statement, field, None)
            if not block:
                continue
            for item in block:
                inner = item.body if isinstance(item, (ast.ExceptHandler, ast.match_case)) else [item]
                _visit(inner, admitted, possible, found)


def _branch(block: Sequence[ast.stmt], admitted: _Admitted, possible: FrozenSet[str],
            found: List[Tuple[int, int]]) -> None:
    if not block:
        return
    if not admitted.reaches(possible):
        found.append((block[0].lineno, max(getattr(s, "end_lineno", s.lineno) or s.lineno for s in block)))
        return
    _visit(block, admitted, possible, found)


def _dialect_test(test: ast.AST) -> Optional[Tuple[_Admitted, _Admitted]]:
    """What the two branches of ``if <test>`` admit, when the test compares a value with dialect names."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _dialect_test(test.operand)
        return (inner[1], inner[0]) if inner is not None else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, (ast.Eq, ast.NotEq)):
        name = _dialect_name(right) or _dialect_name(left)
        if name is None:
            return None
        names = frozenset({name})
    elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) and right.elts:
        found = [_dialect_name(element) for element in right.elts]
        if any(item is None for item in found):
            return None
        names = frozenset(item for item in found if item is not None)
    else:
        return None
    equal, different = _Admitted(only=names), _Admitted(never=names)
    return (equal, different) if isinstance(op, (ast.Eq, ast.In)) else (different, equal)


def _dialect_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in known.DIALECT_NAMES:
        return node.value
    return None
