"""Rows a function claims by locking them and moving them out of the condition that selected them.

``for hb in Beat.objects.filter(alerted=False).select_for_update(): ...`` followed, in the same function,
by ``....update(alerted=True)`` on the same rows: a second run (another replica) waits on the row locks,
then finds the rows no longer match its condition and skips them.  What the loop does for each row happens
once per row, however many replicas run the function; the update that moves the rows is a flag flip.
"""
from __future__ import annotations

import ast
from typing import Dict, Optional, Set, Tuple

from ..analysis.facts import FunctionNode, walk, walk_no_nested_functions
from ..analysis.names import dotted
from ..knowledge import claims as known


def _chain_head(expr: ast.AST) -> Optional[str]:
    """``Beat.objects`` of ``Beat.objects.filter(...).select_for_update()``, ``rows`` of ``rows.update()``."""
    while isinstance(expr, ast.Call) or (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Call)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, (ast.Name, ast.Attribute)):
        inner = expr.value
        # ``Beat.objects.filter`` -> the manager; ``rows.select_for_update`` -> the queryset name
        return dotted(inner) if isinstance(inner, (ast.Name, ast.Attribute)) else None
    return dotted(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None


def _conditions(expr: ast.AST) -> Dict[str, ast.AST]:
    """Field -> value of the ``filter``/``exclude`` keywords in a query chain (lookups cut off)."""
    found: Dict[str, ast.AST] = {}
    for node in walk(expr):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in known.ORM_FILTER_METHODS:
            for keyword in node.keywords:
                if keyword.arg:
                    found.setdefault(keyword.arg.split("__", 1)[0], keyword.value)
    return found


def _locks_rows(expr: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr in known.ROW_LOCK_METHODS for n in walk(expr))


def _same_constant(a: ast.AST, b: ast.AST) -> bool:
    return isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and a.value == b.value


def claimed_row_calls(function: FunctionNode) -> Tuple[Set[int], Set[int]]:
    """(ids of the calls made for each claimed row, ids of the updates that claim them)."""
    bound: Dict[str, ast.AST] = {}
    loops = []
    updates = []
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound[node.targets[0].id] = node.value
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            loops.append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == known.ORM_UPDATE_METHOD and node.keywords:
            updates.append(node)
    per_row: Set[int] = set()
    claiming: Set[int] = set()
    for loop in loops:
        source = loop.iter
        name = source.id if isinstance(source, ast.Name) else None
        query = bound.get(name, source) if name else source
        if not _locks_rows(query):
            continue
        conditions = _conditions(query)
        head = _chain_head(query)
        for update in updates:
            receiver = update.func.value
            same_rows = (name is not None and isinstance(receiver, ast.Name) and receiver.id == name) or (
                head is not None and _chain_head(receiver) == head)
            if not same_rows:
                continue
            moved = [k for k in update.keywords if k.arg in conditions
                     and not _same_constant(k.value, conditions[k.arg])]
            if moved:
                claiming.add(id(update))
                for statement in loop.body:
                    per_row.update(id(n) for n in walk_no_nested_functions(statement) if isinstance(n, ast.Call))
                    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
                        per_row.add(id(statement.value))
                break
    return per_row, claiming
