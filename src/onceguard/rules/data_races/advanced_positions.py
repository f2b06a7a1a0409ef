"""A position kept in a row (a sync cursor, a high-water mark) read without a lock, handed to the call that fetches
what comes after it, and moved past what came back, while the items fetched are copied in as rows.

The new position is no arithmetic on the old one (``cursor.position = page.next_position``), yet it is written from
a stale read all the same: two runners that read the same position fetch the same items and both copy them, and the
later write moves the mark over work done twice.  A copy that skips a row already there (``ignore_conflicts=True``,
``ON CONFLICT DO NOTHING``) is stored once however often it is made, and is left alone.
"""
from __future__ import annotations

import ast
from typing import Set

from ...analysis.facts import FunctionNode, ModuleFacts, walk
from .flow import _reads
from .loads import function_nodes, unwrap

#: Calls that copy rows in (Django's managers, SQLAlchemy's sessions, the DB-API), when handed fetched items.
_COPYING = frozenset({"bulk_create", "abulk_create", "add_all", "add", "create", "acreate", "bulk_save_objects",
                      "bulk_insert_mappings", "insert_many", "executemany", "execute"})
#: What makes an insert skip a row that is already there: copied twice, stored once.
_SKIPPING_KEYWORDS = frozenset({"ignore_conflicts", "update_conflicts"})
_SKIPPING_CALLS = frozenset({"on_conflict_do_nothing", "on_conflict_do_update", "on_conflict_ignore",
                             "on_duplicate_key_update"})


def advanced_past_fetch(value: ast.AST, statement: ast.AST, instance: str, field: str, function: FunctionNode,
                        facts: ModuleFacts) -> bool:
    """``instance.field = value`` sets the position from what a call handed ``instance.field`` returned (itself
    or through locals made of it), and the function copies those items in as rows."""
    fetched = _fetched_names(statement, instance, field, function, facts)
    if not fetched or not _reads_any(value, fetched):
        return False
    return any(isinstance(node, ast.Call) and _copies_in(node, fetched) for node in function_nodes(function, facts))


def _fetched_names(statement: ast.AST, instance: str, field: str, function: FunctionNode,
                   facts: ModuleFacts) -> Set[str]:
    """The local names bound, before ``statement``, to what a call handed ``instance.field`` returned, and to
    values made of those (``rows = [to_row(item) for item in items]``)."""
    names: Set[str] = set()
    for node in function_nodes(function, facts):
        if node is statement:
            break
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = unwrap(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            value, targets = unwrap(node.iter), [node.target]
        else:
            continue
        if _fetches_after(value, instance, field) or _reads_any(value, names):
            names.update(n.id for target in targets for n in walk(target) if isinstance(n, ast.Name))
    return names


def _fetches_after(value: ast.AST, instance: str, field: str) -> bool:
    """``fetch_changes(source, cursor.position)``, ``client.get(url, params={"after": mark.token}).json()``: a call
    handed the position (not the field read alone)."""
    return isinstance(unwrap(value), ast.Call) and any(
        isinstance(call, ast.Call) and any(_reads(argument, instance, field)
                                           for argument in [*call.args, *(k.value for k in call.keywords)])
        for call in walk(value))


def _copies_in(call: ast.Call, fetched: Set[str]) -> bool:
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _COPYING:
        return False
    arguments = [*call.args, *(k.value for k in call.keywords if k.arg not in _SKIPPING_KEYWORDS)]
    if not any(_reads_any(argument, fetched) for argument in arguments):
        return False
    skips = any(k.arg in _SKIPPING_KEYWORDS and not (isinstance(k.value, ast.Constant) and not k.value.value)
                for k in call.keywords)
    return not skips and not any(isinstance(n, ast.Attribute) and n.attr in _SKIPPING_CALLS for n in walk(call))


def _reads_any(node: ast.AST, names: Set[str]) -> bool:
    return bool(names) and any(isinstance(n, ast.Name) and n.id in names for n in walk(node))
