"""A module read with its small forwarding helpers looked through.

``def _lock_via(key, timeout): return r.lock(key, timeout=timeout)`` called as ``_lock_via("job", timeout=60)``
is, to Python, ``r.lock("job", timeout=60)`` run from the call site.  ``through_helpers(facts)`` gives the
module's facts with every call of such a helper of this module (a top-level function whose whole body
returns one call, as in ``forwarding``) replaced by the call it forwards to, its parameters replaced by the
arguments given, placed where the helper was called.  A rule that reasons about what a call does then reads
the same hazard however many such helpers stand in between.  A helper no longer called by anything is left
out when private (it is no caller of what it forwarded to).  A module without such helpers is given back unchanged.

The module is parsed afresh for this (its facts' nodes carry parent links, so they are never copied).
"""
from __future__ import annotations

import ast
from typing import Dict, Optional

from ..analysis.facts import ModuleFacts, walk
from .forwarding import _bind, _returned_call, copy_tree

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_MAX_HELPERS = 3


def through_helpers(facts: ModuleFacts) -> ModuleFacts:
    """``facts``, or facts of the same module with its calls of forwarding helpers replaced (built once)."""
    return facts.cached("through-helpers", _build)


def _helpers(body) -> Dict[str, ast.AST]:
    """name -> top-level def whose body only returns a call (names defined once at the top level only)."""
    counts: Dict[str, int] = {}
    found: Dict[str, ast.AST] = {}
    for statement in body:
        if isinstance(statement, _FUNCTION_TYPES + (ast.ClassDef,)):
            counts[statement.name] = counts.get(statement.name, 0) + 1
            if isinstance(statement, _FUNCTION_TYPES) and _returned_call(statement) is not None:
                found[statement.name] = statement
    return {name: helper for name, helper in found.items() if counts[name] == 1}


def _build(facts: ModuleFacts) -> ModuleFacts:
    helpers = _helpers(facts.tree.body)
    if not helpers:
        return facts
    if not any(isinstance(call.func, ast.Name) and _bind(helper, call) is not None
               and facts.enclosing_function(call) is not helper
               for name, helper in helpers.items() for call in facts.calls_by_name.get(name, ())):
        return facts
    try:
        tree = ast.parse("\n".join(line.rstrip("\r\n") for line in facts.lines) + "\n")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return facts
    fresh = _helpers(tree.body)
    inliner = _Inline(fresh)
    # Only the top-level statements that hold a call of a helper are visited: the others have nothing to
    # replace, and a visit of a whole module is the most of what this costs.
    called = {call.lineno for name in helpers for call in facts.calls_by_name.get(name, ())}
    for statement in tree.body:
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])
        last = getattr(statement, "end_lineno", None) or statement.lineno
        if any(first <= line <= last for line in called):
            inliner.visit(statement)
    if not inliner.replaced:
        return facts
    # A private helper no longer named in its module is no caller of what it forwarded to.
    left = {node.id for node in walk(tree) if isinstance(node, ast.Name)}
    tree.body = [statement for statement in tree.body if not (
        isinstance(statement, _FUNCTION_TYPES) and statement.name in fresh and statement.name not in left
        and statement.name.startswith("_"))]
    return ModuleFacts(tree, facts.context, facts.lines)


_COPY_BUDGET = 20_000


def _size(node: ast.AST) -> int:
    return sum(1 for _ in walk(node)) if isinstance(node, ast.AST) else 0


class _Inline(ast.NodeTransformer):
    """Replaces each call of a helper (outside the helper itself) by the call it returns."""

    def __init__(self, helpers: Dict[str, ast.AST]) -> None:
        self.helpers = helpers
        self.replaced = 0
        self.inside: Optional[str] = None
        #: Nodes a module's inlining may still copy: an argument named several times in a helper, inside a
        #: call of another helper, grows the tree with each level; past this, calls are left as they are
        #: (the cost of a file stays bounded; what is left is read as an ordinary call).
        self.budget = _COPY_BUDGET

    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        outer, self.inside = self.inside, node.name if node.name in self.helpers else self.inside
        self.generic_visit(node)
        self.inside = outer
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        made: ast.AST = node
        declared = None  # the return annotation of the helper the caller named: what the call gives there
        for _ in range(_MAX_HELPERS):
            if not (isinstance(made, ast.Call) and isinstance(made.func, ast.Name) and made.func.id in self.helpers
                    and made.func.id != self.inside):
                break
            helper = self.helpers[made.func.id]
            mapping = _bind(helper, made)
            if mapping is None:
                break
            cost = _size(_returned_call(helper)) + sum(_size(value) for value in mapping.values())
            if cost > self.budget:
                break
            self.budget -= cost
            template = copy_tree(_returned_call(helper))
            for inner in walk(template):  # the helper's own code is placed at the call; arguments keep theirs
                ast.copy_location(inner, node)
                inner.end_lineno = getattr(node, "end_lineno", None)
                inner.end_col_offset = getattr(node, "end_col_offset", None)
            made = _Substitute(mapping).visit(template)
            declared = declared if declared is not None else helper.returns
        if made is node:
            return node
        if declared is not None:
            made._og_returns = declared  # read by ``declared_types``: the caller still gets what the helper declared
        self.replaced += 1
        return made


class _Substitute(ast.NodeTransformer):
    def __init__(self, mapping: Dict[str, ast.AST]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.mapping:
            return copy_tree(self.mapping[node.id])
        return node
