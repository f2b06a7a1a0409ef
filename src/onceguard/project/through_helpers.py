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
from .forwarding import _bind, _returned_call, copy_tree, only_statement

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_MAX_HELPERS = 3


def through_helpers(facts: ModuleFacts) -> ModuleFacts:
    """``facts``, or facts of the same module with its calls of forwarding helpers replaced (built once)."""
    return facts.cached("through-helpers", _build)


def _helpers(body) -> Dict[str, ast.AST]:
    """name -> top-level def whose body only returns a call, or only makes one call as a statement (names
    defined once at the top level only)."""
    counts: Dict[str, int] = {}
    found: Dict[str, ast.AST] = {}
    for statement in body:
        if isinstance(statement, _FUNCTION_TYPES + (ast.ClassDef,)):
            counts[statement.name] = counts.get(statement.name, 0) + 1
            if isinstance(statement, _FUNCTION_TYPES) and _forwarded_call(statement) is not None:
                found[statement.name] = statement
    return {name: helper for name, helper in found.items() if counts[name] == 1}


def _statement_call(helper: ast.AST) -> Optional[ast.Call]:
    """The one call a helper makes as its whole body, its value dropped (``def every_week(job, **when):
    sched.add_job(job, "cron", **when)``): called as a statement, the helper is that call."""
    statement = only_statement(helper)
    value = statement.value if isinstance(statement, ast.Expr) else None
    return value if isinstance(value, ast.Call) else None


def _forwarded_call(helper: ast.AST) -> Optional[ast.Call]:
    return _returned_call(helper) or _statement_call(helper)


def _binding(helper: ast.AST, call: ast.Call) -> Optional[Dict[str, ast.AST]]:
    """``_bind``, and for a helper that only makes a call as a statement, its ``**options`` spread into that
    call too (the keywords the caller gave beyond the helper's own parameters)."""
    if helper.args.vararg is not None:
        return None  # (``*parts`` is spread only where forwarding reads a call)
    if _statement_call(helper) is None or helper.args.kwarg is None:
        return _bind(helper, call)
    own = {a.arg for a in helper.args.args + helper.args.kwonlyargs}
    extra = [k for k in call.keywords if k.arg is not None and k.arg not in own]
    if any(k.arg is None for k in call.keywords):
        return None
    inner = _statement_call(helper)
    if not any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == helper.args.kwarg.arg
               for k in inner.keywords):
        return None  # the options go somewhere else: not a plain pass-through
    trimmed = ast.Call(func=call.func, args=call.args, keywords=[k for k in call.keywords if k not in extra])
    stripped = _without_kwarg(helper)
    mapping = _bind(stripped, trimmed)
    if mapping is None:
        return None
    mapping[_SPREAD + helper.args.kwarg.arg] = extra  # type: ignore[assignment]
    return mapping


#: Key prefix in a binding for the keywords a ``**options`` parameter collects.
_SPREAD = "**"


def _without_kwarg(helper: ast.AST) -> ast.AST:
    arguments = helper.args
    copied = ast.arguments(posonlyargs=arguments.posonlyargs, args=arguments.args, vararg=arguments.vararg,
                           kwonlyargs=arguments.kwonlyargs, kw_defaults=arguments.kw_defaults, kwarg=None,
                           defaults=arguments.defaults)
    return ast.FunctionDef(name=helper.name, args=copied, body=helper.body, decorator_list=[], returns=None)


def _build(facts: ModuleFacts) -> ModuleFacts:
    helpers = _helpers(facts.tree.body)
    if not helpers:
        return facts
    if not any(isinstance(call.func, ast.Name) and _binding(helper, call) is not None
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
    visited = []
    for statement in tree.body:
        first, last = _lines(statement)
        if any(first <= line <= last for line in called):
            inliner.visit(statement)
            visited.append(statement)
    if not inliner.replaced:
        return facts
    # A private helper no longer named in its module is no caller of what it forwarded to.
    left = _names_left(tree, visited, facts)
    tree.body = [statement for statement in tree.body if not (
        isinstance(statement, _FUNCTION_TYPES) and statement.name in fresh and statement.name not in left
        and statement.name.startswith("_"))]
    derived = ModuleFacts(tree, facts.context, facts.lines)
    derived.origin = facts  # the module as written: a helper left out here is still defined there
    return derived


def _lines(statement: ast.AST):
    """(first, last) line of a top-level statement, its decorators included."""
    first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])
    return first, getattr(statement, "end_lineno", None) or statement.lineno


def _names_left(tree: ast.Module, visited, facts: ModuleFacts):
    """The names read anywhere in ``tree`` after the inlining. Only the statements the inliner visited changed:
    they (and any statement sharing a line with one) are walked; every other statement is the same text as in
    ``facts``, whose names are read off its list of nodes instead of walking the tree again."""
    if len(tree.body) != len(facts.tree.body):  # (facts of a window of a large file: walk it all)
        return {node.id for node in walk(tree) if isinstance(node, ast.Name)}
    spans = [_lines(statement) for statement in visited]
    walked = {id(statement) for statement in visited}
    grown = True
    while grown:  # (``x = 1; y = helper()`` shares its line with the next statement, and so on)
        grown = False
        for statement in tree.body:
            if id(statement) not in walked:
                first, last = _lines(statement)
                if any(first <= end and start <= last for start, end in spans):
                    walked.add(id(statement))
                    spans.append((first, last))
                    grown = True
    left = {node.id for statement in tree.body if id(statement) in walked
            for node in walk(statement) if isinstance(node, ast.Name)}
    Name = ast.Name
    lines = {line for start, end in spans for line in range(start, end + 1)}
    left.update(node.id for node in facts.nodes if type(node) is Name and node.lineno not in lines)
    return left


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
        #: the call an expression statement makes (its value dropped): a statement-only helper may stand there
        self.statement_call: Optional[ast.Call] = None

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        outer, self.statement_call = self.statement_call, node.value if isinstance(node.value, ast.Call) else None
        self.generic_visit(node)
        self.statement_call = outer
        return node

    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        outer, self.inside = self.inside, node.name if node.name in self.helpers else self.inside
        self.generic_visit(node)
        self.inside = outer
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        made: ast.AST = node
        # A call whose value its statement drops: a helper that only makes a call may stand there, also at the
        # end of a chain of helpers that return one another's calls.
        dropped = node is self.statement_call
        declared = None  # the return annotation of the helper the caller named: what the call gives there
        for _ in range(_MAX_HELPERS):
            if not (isinstance(made, ast.Call) and isinstance(made.func, ast.Name) and made.func.id in self.helpers
                    and made.func.id != self.inside):
                break
            helper = self.helpers[made.func.id]
            forwarded = _returned_call(helper) or (_statement_call(helper) if dropped else None)
            mapping = _binding(helper, made) if forwarded is not None else None
            if mapping is None:
                break
            cost = _size(forwarded) + sum(_size(value) for value in mapping.values() if isinstance(value, ast.AST))
            if cost > self.budget:
                break
            self.budget -= cost
            template = copy_tree(forwarded)
            for inner in walk(template):  # the helper's own code is placed at the call; arguments keep theirs
                ast.copy_location(inner, node)
                inner.end_lineno = getattr(node, "end_lineno", None)
                inner.end_col_offset = getattr(node, "end_col_offset", None)
            made = _Substitute(mapping).visit(template)
            declared = declared if declared is not None else helper.returns
        if made is node:
            return node
        made._og_helper = node.func.id  # the helper the caller named: the job a loop's pass runs, for one
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

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        keywords = []
        for keyword in node.keywords:
            spread = self.mapping.get(_SPREAD + keyword.value.id) if (
                keyword.arg is None and isinstance(keyword.value, ast.Name)) else None
            keywords.extend(copy_tree(k) for k in spread) if spread is not None else keywords.append(keyword)
        node.keywords = keywords
        return node
